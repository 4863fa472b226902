"""Export: a snapshot's skills written once into a new folder in a runtime's layout, byte for byte.

The one-shot form of ``ledger sync`` (:mod:`ledger.exchange.projection`): each skill is
written whole by the same :class:`~ledger.exchange.targetfs.TargetFS` (staged, then
renamed into place without replacing anything), into a directory that must be new or
empty.  Files come from the git objects of the chosen snapshot (default: head), so any
past state can be exported.  Slopstock's flat ``<name>.md`` files are written here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ledger.bundle.skill import SKILL_MD
from ledger.errors import LedgerError, UsageError
from ledger.exchange.targetfs import TargetFS
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.skilltree import skills_of
from ledger.write.importer import CATEGORY_INDEX

__all__ = ["EXPORT_LAYOUTS", "export"]

EXPORT_LAYOUTS = ("agentskills", "claude", "hermes", "slopstock")


def _write(path: Path, data: bytes, executable: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o755 if executable else 0o644
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def export(store: gs.GitStore, commit: bytes, dest: Path, layout: str) -> dict[str, Any]:
    """Write the skills of snapshot ``commit`` under ``dest`` in ``layout``; return counts."""
    if layout not in EXPORT_LAYOUTS:
        raise UsageError(f"unknown layout {layout!r}", hint="one of " + ", ".join(EXPORT_LAYOUTS))
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise LedgerError(f"{dest} exists and is not an empty directory", hint="export into a new directory")
    top = store.commit_info(commit)[0]
    skills = skills_of(store, top)[1]
    cats = store.categories_tree(top)
    cat_files = th.files_of(store, cats) if cats else {}
    index: dict[str, str] = {}
    if CATEGORY_INDEX in cat_files:
        index = json.loads(store.read(cat_files.pop(CATEGORY_INDEX)[1], b"blob"))["skills"]
    if layout == "slopstock":
        extra = sorted(n for n, sha in skills.items() if set(th.files_of(store, sha)) != {SKILL_MD})
        if extra:
            raise LedgerError(
                f"{len(extra)} skill(s) hold more than SKILL.md, which flat Slopstock files cannot: "
                + ", ".join(extra[:10]),
                hint="export them with --layout agentskills",
            )
    dest.mkdir(parents=True, exist_ok=True)
    count = 0
    with TargetFS(os.path.realpath(dest), "hermes" if layout == "hermes" else "agentskills", 1 << 62) as fs:
        for name, sha in sorted(skills.items()):
            files = th.files_of(store, sha)
            if layout == "slopstock":
                _write(dest / f"{name}.md", store.read(files[SKILL_MD][1], b"blob"), False)
                count += 1
                continue
            rel = f"{index[name]}/{name}" if layout == "hermes" and name in index else name
            data = {p: (store.read(blob, b"blob"), mode == gs.MODE_EXEC) for p, (mode, blob) in files.items()}
            staged = fs.new_name()
            fs.stage(data, staged)
            if not fs.place_new(staged, rel):
                raise LedgerError(f"{dest}/{rel} appeared while exporting", hint="export into a new directory")
            count += len(files)
        if layout == "hermes":
            for rel, (_, blob) in cat_files.items():
                fs.write_missing(rel, store.read(blob, b"blob"))
                count += 1
        fs.tidy()
    return {"layout": layout, "commit": commit.hex(), "skills": len(skills), "files": count, "dest": str(dest)}
