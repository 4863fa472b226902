"""Export: a snapshot's skills written once into a new folder in a runtime's layout, byte for byte.

The one-shot form of ``ledger sync`` (:mod:`ledger.sync.projection`): each skill is
written whole by the same :class:`~ledger.folders.folder.TargetFS` (staged, then
renamed into place without replacing anything), into a directory that must be new or
empty.  Files come from the git objects of the chosen snapshot (default: head), so any
past state can be exported.  Slopstock's flat ``<name>.md`` files are written here.

Every destination path is planned before anything is written, and a plan that cannot be
written, or would not read back as the brain, is refused while ``DEST`` is untouched.  In
Hermes's layout a skill folder may hold a category (``dogfood/SKILL.md`` beside
``dogfood/wrap-up/``), as Hermes's own ``skills/`` does and Hermes lists; what the brain
cannot be laid out as is named (:func:`~ledger.bundle.collection.hermes_conflicts`).  The
tree is built in a fresh folder beside ``DEST`` and renamed to it at the end, so ``DEST`` is
either absent (or as empty as it was) or whole: a failure removes what was built, and no
``.ledger-staging/`` is ever left in it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ledger._faults import crashpoint, pausepoint
from ledger.bundle.collection import hermes_conflicts
from ledger.bundle.skill import SKILL_MD
from ledger.errors import LedgerError, UsageError
from ledger.folders.descriptors import EXCHANGE, renameat2
from ledger.folders.folder import STAGING, TargetFS
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.skilltree import skills_of
from ledger.store.supply import parse_record
from ledger.write.importer import CATEGORY_INDEX

__all__ = ["EXPORT_LAYOUTS", "export", "write_tree"]

EXPORT_LAYOUTS = ("agentskills", "claude", "hermes", "slopstock")
_ASIDE = ".ledger-export-"  # the folder an export is built in, beside DEST: .DEST.ledger-export-PID-RANDOM


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
    """Write the skills of snapshot ``commit`` under ``dest`` in ``layout``; return counts. A skill that
    snapshot's supply record withholds (quarantined or revoked) is left out, and named in ``withheld``."""
    if layout not in EXPORT_LAYOUTS:
        raise UsageError(f"unknown layout {layout!r}", hint="one of " + ", ".join(EXPORT_LAYOUTS))
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise LedgerError(f"{dest} exists and is not an empty directory", hint="export into a new directory")
    top = store.commit_info(commit)[0]
    skills = skills_of(store, top)[1]
    blob, record = store.supply_record(top)
    held = sorted(parse_record(record).withheld() & set(skills)) if blob is not None else []
    skills = {n: t for n, t in skills.items() if n not in held}
    cats = store.categories_tree(top)
    cat_files = th.files_of(store, cats) if cats else {}
    index: dict[str, str] = {}
    if CATEGORY_INDEX in cat_files:
        index = json.loads(store.read(cat_files.pop(CATEGORY_INDEX)[1], b"blob"))["skills"]
    files = {name: th.files_of(store, sha) for name, sha in skills.items()}
    if layout == "slopstock":
        extra = sorted(n for n, f in files.items() if set(f) != {SKILL_MD})
        if extra:
            raise LedgerError(
                f"{len(extra)} skill(s) hold more than SKILL.md, which flat Slopstock files cannot: "
                + ", ".join(extra[:10]),
                hint="export them with --layout agentskills",
            )
    if layout != "hermes":
        index, cat_files = {}, {}
    placed = {name: f"{index[name]}/{name}" if name in index else name for name in files}
    if layout == "hermes":
        _refuse_unwritable(files, index, cat_files, dest)

    def write(root: Path) -> int:
        count = 0
        with TargetFS(os.path.realpath(root), "hermes" if layout == "hermes" else "agentskills", 1 << 62) as fs:
            try:
                for name in sorted(files, key=placed.__getitem__):  # a skill folder before the skills inside it
                    if layout == "slopstock":
                        _write(root / f"{name}.md", store.read(files[name][SKILL_MD][1], b"blob"), False)
                        count += 1
                        continue
                    data = {
                        p: (store.read(blob, b"blob"), mode == gs.MODE_EXEC) for p, (mode, blob) in files[name].items()
                    }
                    staged = fs.new_name()
                    fs.stage(data, staged)
                    if not fs.place_new(staged, placed[name]):
                        raise LedgerError(
                            f"{dest}/{placed[name]} appeared while exporting", hint="export into a new directory"
                        )
                    count += len(data)
                    crashpoint("export-placed")
                    pausepoint("export-placed")
                for rel, (_, blob) in sorted(cat_files.items()):
                    fs.write_missing(rel, store.read(blob, b"blob"))
                    count += 1
            finally:
                fs.tidy()
        return count

    tops = {
        STAGING,
        *(f"{n}.md" if layout == "slopstock" else placed[n].split("/")[0] for n in files),
        *(rel.split("/")[0] for rel in cat_files),
    }
    count = _build(dest, write, tops)
    return {
        "layout": layout,
        "commit": commit.hex(),
        "skills": len(skills),
        "files": count,
        "dest": str(dest),
        "withheld": held,
    }


def write_tree(dest: Path, files: Mapping[str, bytes], replaceable: Callable[[Path], bool], what: str) -> int:
    """Write ``files`` ({path relative to ``dest``: bytes}) as the whole of ``dest``, atomically: the tree is
    built beside ``dest`` and renamed to it (:func:`_build`), so ``dest`` is absent, as it was, or whole.

    A ``dest`` that is not empty is replaced only when ``replaceable(dest)`` says it is a previous export
    of ``what``: the new tree is exchanged with it in one ``renameat2(RENAME_EXCHANGE)`` and the old one
    removed; anything else is refused, naming it, and nothing is written.  No path leaves ``dest``."""
    for rel in files:
        if rel.startswith("/") or not rel or any(p in ("", ".", "..") for p in rel.split("/")):
            raise LedgerError(f"refusing to write {rel!r}: it is not a path inside {dest}")

    def write(root: Path) -> int:
        for rel, data in files.items():
            _write(root / rel, data, False)
        return len(files)

    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise LedgerError(
            f"{dest} exists and is not a directory; nothing was written", hint="export into a new directory"
        )
    if not (dest.is_dir() and any(dest.iterdir())):
        return _build(dest, write, {rel.split("/")[0] for rel in files})
    if not replaceable(dest):
        raise LedgerError(
            f"{dest} is not empty and is not a previous {what}; nothing was written",
            hint=f"export into a new or empty directory, or into a previous {what}",
        )
    dest = Path(os.path.abspath(dest))
    root = dest.parent / f".{dest.name}{_ASIDE}{os.getpid()}-{secrets.token_hex(4)}"
    os.mkdir(root, 0o777)
    try:
        count = write(root)
        os.chmod(root, stat.S_IMODE(os.stat(dest).st_mode))
        parent = os.open(dest.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            renameat2(parent, root.name, parent, dest.name, EXCHANGE)  # root now holds the old tree
        finally:
            os.close(parent)
    except OSError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise LedgerError(f"cannot export to {dest}: {exc.strerror or exc}; nothing was written") from None
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    shutil.rmtree(root, ignore_errors=True)
    return count


def _refuse_unwritable(
    files: dict[str, gs.FileMap], index: dict[str, str], cat_files: dict[str, Any], dest: Path
) -> None:
    """Refuse, before ``dest`` is touched, a brain Hermes's layout cannot hold so that it reads back the same."""
    problems = hermes_conflicts({n: (index.get(n), list(f)) for n, f in files.items()}, list(cat_files))
    if problems:
        raise LedgerError(
            f"cannot export to {dest} in Hermes's layout; nothing was written: {len(problems)} conflict(s):"
            + "".join(f"\n  {p}" for p in problems[:20]),
            hint="move one of each pair with 'ledger skill move NAME [CATEGORY]' (a skill folder may hold a "
            "category, but not where a file of the skill is), or export with --layout agentskills",
        )


def _build(dest: Path, write: Callable[[Path], int], tops: set[str]) -> int:
    """Run ``write`` on a fresh folder beside ``dest`` and rename it to ``dest``, which is then absent or
    still empty; on any failure the folder is removed, so ``dest`` is never half written and never holds
    staging.  A ``dest`` that is a mount point, or in a folder the user cannot write, is written in
    place instead, and what was made in it (the entries named ``tops``) is removed on failure."""
    dest = Path(os.path.abspath(dest))
    made = _make_parents(dest.parent)
    try:
        existed = dest.is_dir()
        if existed and (
            os.stat(dest).st_dev != os.stat(dest.parent).st_dev or not os.access(dest.parent, os.W_OK | os.X_OK)
        ):
            return _in_place(dest, write, tops)
        _sweep(dest)
        root = dest.parent / f".{dest.name}{_ASIDE}{os.getpid()}-{secrets.token_hex(4)}"
        os.mkdir(root, 0o777)
        try:
            count = write(root)
            if existed:
                os.chmod(root, stat.S_IMODE(os.stat(dest).st_mode))
            try:
                os.rename(root, dest)  # replaces dest only while it is an empty folder
            except OSError as exc:
                if existed and exc.errno in (errno.EXDEV, errno.EBUSY):  # a mount point os.stat did not show
                    shutil.rmtree(root, ignore_errors=True)
                    return _in_place(dest, write, tops)
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                    raise LedgerError(
                        f"{dest} appeared while exporting; nothing was written", hint="export into a new directory"
                    ) from None
                raise
            return count
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
    except OSError as exc:
        _remove(made)
        raise LedgerError(f"cannot export to {dest}: {exc.strerror or exc}; nothing was written") from None
    except BaseException:
        _remove(made)
        raise


def _sweep(dest: Path) -> None:
    """Remove what an export to ``dest`` that was killed left beside it: a folder named for a process
    that is gone (a live one is another export under way, and is left alone)."""
    prefix = f".{dest.name}{_ASIDE}"
    try:
        with os.scandir(dest.parent) as it:
            names = [e.name for e in it if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix) :].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(dest.parent / name, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _in_place(dest: Path, write: Callable[[Path], int], tops: set[str]) -> int:
    """Write into ``dest`` itself (empty when the export began); on failure remove what the export makes
    at its top (``tops``), and nothing that someone else put there meanwhile under another name."""
    try:
        return write(dest)
    except BaseException:
        for name in sorted(tops):
            with contextlib.suppress(OSError):
                if (dest / name).is_dir() and not (dest / name).is_symlink():
                    shutil.rmtree(dest / name)
                else:
                    os.unlink(dest / name)
        raise


def _make_parents(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing parents; the ones made, outermost first, to remove on failure."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for part in reversed(missing):
        os.makedirs(part, exist_ok=True)
    return list(reversed(missing))


def _remove(made: list[Path]) -> None:
    """The parent folders an export made, innermost first, each only if still empty."""
    for folder in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(folder)
