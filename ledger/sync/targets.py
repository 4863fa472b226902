"""Where runtimes keep skills on this machine, and the targets a brain projects into.

A target is machine-local state, never part of the lineage: ``.ledger/targets.json``
lists them, and ``.ledger/sync/<name>.json`` is each one's **manifest**: for every skill
the ledger manages there, the files it last wrote or recorded (blob ids, with the stat
entries that make a no-op sync cheap), the ledger tree they match, and any conflict.
The manifest is the merge base of the next sync (docs/layouts.md, "Projection").

The runtimes' folders come from their own documentation (cited in docs/layouts.md).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ledger._fs import atomic_write, sync_stats
from ledger.errors import LedgerError, UsageError
from ledger.folders.ignoring import IGNORE_FILE, brain_rules, hidden
from ledger.folders.instant import read_ignore, record_file
from ledger.store.state import State
from ledger.write.journal import write_json

__all__ = ["Manifest", "Runtime", "Target", "Targets", "runtimes"]

_FORMAT = 1
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Runtime:
    """A runtime's skills folder: ``name`` is what ``ledger target add`` takes."""

    name: str
    runtime: str  # recorded as the Ledger-Runtime evidence of what it writes back
    scope: str  # user, project or system
    path: str
    layout: str
    installed: bool  # the runtime's own home or command exists here
    source: str  # where the path is documented


def _project_root(cwd: Path) -> Path:
    """The repository a project-scoped folder belongs to: the nearest ancestor with ``.git`` (or ``cwd``)."""
    for cand in [cwd, *cwd.parents]:
        if (cand / ".git").exists():
            return cand
    return cwd


def runtimes(home: Path | None = None, cwd: Path | None = None) -> list[Runtime]:
    """The skills folders of the runtimes this project knows, for this user and this project."""
    home = home or Path.home()
    cwd = cwd or Path.cwd()
    project = _project_root(cwd)
    hermes_home = Path(os.environ.get("HERMES_HOME") or home / ".hermes")
    codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")

    def has(cmd: str, *dirs: Path) -> bool:
        return shutil.which(cmd) is not None or any(d.is_dir() for d in dirs)

    claude = has("claude", home / ".claude")
    codex = has("codex", codex_home)
    return [
        Runtime(
            "claude",
            "claude-code",
            "user",
            str(home / ".claude/skills"),
            "claude",
            claude,
            "code.claude.com/docs/en/skills",
        ),
        Runtime(
            "claude-project",
            "claude-code",
            "project",
            str(project / ".claude/skills"),
            "claude",
            claude,
            "code.claude.com/docs/en/skills",
        ),
        Runtime(
            "agents",
            "agents",
            "user",
            str(home / ".agents/skills"),
            "agentskills",
            codex or (home / ".agents").is_dir(),
            "developers.openai.com/codex/skills; agentskills.io",
        ),
        Runtime(
            "agents-project",
            "agents",
            "project",
            str(project / ".agents/skills"),
            "agentskills",
            codex or (project / ".agents").is_dir(),
            "developers.openai.com/codex/skills",
        ),
        Runtime(
            "codex-legacy",
            "codex",
            "user",
            str(codex_home / "skills"),
            "agentskills",
            (codex_home / "skills").is_dir(),
            "developers.openai.com/codex/skills (older releases)",
        ),
        Runtime(
            "hermes",
            "hermes",
            "user",
            str(hermes_home / "skills"),
            "hermes",
            has("hermes", hermes_home),
            "NousResearch/hermes-agent tools/skills_tool.py (HERMES_HOME/skills)",
        ),
    ]


@dataclass
class Target:
    """A folder the brain is projected into and recorded back from."""

    name: str
    path: str  # absolute, with no symbolic link in it (resolved when linked)
    layout: str  # agentskills, claude or hermes
    runtime: str  # Ledger-Runtime of what is recorded back
    actor: str = "agent"  # Ledger-Actor of what is recorded back (agent, curator or user)
    skills: str | None = None  # a glob over skill keys: the rest are left alone
    committed: bool = False  # project the root last committed on chain, not the head
    best_verified: bool = False  # project each skill's best verified version, not the head's (lineage/evidence.md §6)

    def includes(self, key: str) -> bool:
        return self.skills is None or fnmatch.fnmatchcase(key, self.skills)


@dataclass
class Manifest:
    """What the ledger last wrote to (or recorded from) one target: the next sync's merge base."""

    skills: dict[str, dict[str, Any]] = field(default_factory=dict)  # key → {"dir", "tree", "files", "stats"}
    conflicts: dict[str, dict[str, Any]] = field(default_factory=dict)  # key → {"ledger_tree", "files", …}
    stats: dict[str, dict[str, list]] = field(default_factory=dict)  # key → stat entries (a cache, .ledger/cache/)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # the pass's journal (its own file)
    categories: dict[str, str | None] = field(default_factory=dict)  # hermes category file → blob last in step
    dirty: bool = False  # changed since read: a no-op sync writes nothing
    stats_dirty: bool = False

    def files(self, key: str) -> dict[str, tuple[int, bytes]] | None:
        entry = self.skills.get(key)
        if entry is None:
            return None
        return {rel: (int(mode), bytes.fromhex(blob)) for rel, (mode, blob) in entry["files"].items()}


class Targets:
    """The targets of one brain: ``.ledger/targets.json`` and the manifests in ``.ledger/sync/``."""

    def __init__(self, control: Path) -> None:
        self.control = control
        self.file = control / "targets.json"
        self.dir = control / "sync"

    def all(self) -> list[Target]:
        if not self.file.exists():
            return []
        try:
            doc = json.loads(self.file.read_text())
            return [Target(**t) for t in doc["targets"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise LedgerError(f"{self.file} is not a targets file: {exc}", hint="fix or remove it") from None

    def get(self, name: str) -> Target:
        for t in self.all():
            if t.name == name:
                return t
        raise LedgerError(
            f"no target named {name!r}", hint="'ledger target add' adds one; 'ledger target list' lists them"
        )

    def add(self, target: Target) -> None:
        if not _NAME.match(target.name):
            raise UsageError(f"target name {target.name!r} is not lowercase letters, digits, '.', '_' or '-'")
        current = self.all()
        for t in current:
            if t.name == target.name:
                raise LedgerError(f"a target named {t.name!r} exists ({t.path})", hint="unlink it first, or --name")
            a, b = target.path.rstrip("/") + "/", t.path.rstrip("/") + "/"
            inside = a.startswith(b) or b.startswith(a)
            if t.path == target.path or inside:
                raise LedgerError(
                    f"{target.path} overlaps target {t.name!r} ({t.path})", hint="two targets never share files"
                )
        self._save([*current, target])

    def remove(self, name: str) -> Target:
        current = self.all()
        gone = self.get(name)
        self._save([t for t in current if t.name != name])
        (self.dir / f"{name}.json").unlink(missing_ok=True)
        self._stats_file(name).unlink(missing_ok=True)
        Path(record_file(str(self.control), name)).unlink(missing_ok=True)
        return gone

    def _save(self, targets: list[Target]) -> None:
        self.control.mkdir(exist_ok=True)
        write_json(self.file, {"format": _FORMAT, "targets": [asdict(t) for t in targets]})

    def _stats_file(self, name: str) -> Path:
        return State(self.control).path(sync_stats(name))

    def manifest(self, name: str) -> Manifest:
        path = self.dir / f"{name}.json"
        if not path.exists():
            return Manifest()
        try:
            doc = json.loads(path.read_text())
            manifest = Manifest(doc["skills"], doc.get("conflicts", {}), categories=doc.get("categories", {}))
        except (ValueError, KeyError, TypeError) as exc:
            raise LedgerError(
                f"manifest {path} is unreadable: {exc}",
                hint="unlink and link the target again (its files are left alone)",
            ) from None
        # stat entries are a cache: lost or damaged, every file is read again
        manifest.stats = State(self.control).read_json(sync_stats(name), _stats_of) or {}
        return manifest

    def conflicts(self) -> list[dict[str, Any]]:
        """Every unsettled conflict, in every target: what ``ledger status`` and the agent tool show."""
        return [
            {"target": t.name, "path": t.path, "skill": key, **c}
            for t in self.all()
            for key, c in sorted(self.manifest(t.name).conflicts.items())
        ]

    def ignored_held(self) -> list[dict[str, str]]:
        """Each file the ledger holds in a target that an ignore rule would hide: the rule is never
        obeyed for it (docs/layouts.md), and ``ledger status`` says so, with the rule and its file."""
        rules, out = brain_rules(self.control), []
        for t in self.all():
            data = read_ignore(t.path)
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else ""
            out += [
                {"target": t.name, **h}
                for h in hidden(rules.then(text, f"{t.path}/{IGNORE_FILE}"), self.manifest(t.name).skills)
            ]
        return out

    def work(self, name: str) -> Path:
        """Where a target's skills are staged and unexplained copies kept: never where a runtime scans."""
        return self.dir / "work" / name

    def rescued(self) -> list[dict[str, str]]:
        """Copies a sync kept aside (a true conflict with the brain's new version, a side chosen away with
        --take, or what a stopped sync could not explain: docs/layouts.md "Kills"), each with ``kind`` and
        ``why`` in plain words: shown by ``ledger status`` until someone deals with them."""
        out = []
        for t in self.all():
            base = Path(t.path)
            for folder in (
                self.work(t.name) / ".ledger-rescued",
                base.parent / f".{base.name}.ledger-sync" / ".ledger-rescued",
                base / ".ledger-rescued",
            ):
                if folder.is_dir() and not folder.is_symlink():
                    out += [
                        {
                            "target": t.name,
                            "path": str(folder / n),
                            "skill": n.rpartition("-")[0],
                            **_rescue_note(folder / f"{n}.json"),
                        }
                        for n in sorted(os.listdir(folder))
                        if not n.endswith(".json")
                    ]  # its note: not a copy
        return out

    def save_manifest(self, name: str, manifest: Manifest) -> None:
        """Written whole and durable before it is renamed into place (a kill leaves the old one or this);
        nothing is written when nothing changed.  The stat cache needs no fsync: it is checked on use."""
        if manifest.dirty:
            doc = {
                "format": _FORMAT,
                "skills": manifest.skills,
                "conflicts": manifest.conflicts,
                **({"categories": manifest.categories} if manifest.categories else {}),
            }
            _write(self.dir / f"{name}.json", doc)
            manifest.dirty = False
        if manifest.stats_dirty:
            live = {k: v for k, v in manifest.stats.items() if k in manifest.skills}
            data = json.dumps(live, separators=(",", ":"), sort_keys=True).encode()
            State(self.control).write(sync_stats(name), data)
            manifest.stats_dirty = False


def _stats_of(doc: Any) -> dict[str, dict[str, list]] | None:
    """A target's stat entries (skill → path → [mode, blob hex, size, mtime, ctime, inode, hashed at]);
    ``None`` (a miss: every file is read again) for a document of any other shape."""
    if type(doc) is not dict:
        return None
    for files in doc.values():
        if type(files) is not dict:
            return None
        for e in files.values():
            if not (
                type(e) is list
                and len(e) == 7
                and type(e[1]) is str
                and len(e[1]) == 40
                and all(type(v) is int for i, v in enumerate(e) if i != 1)
            ):
                return None
            bytes.fromhex(e[1])  # ValueError: a miss
    return doc


def _rescue_note(path: Path) -> dict[str, str]:
    """What a kept copy is and why (written beside it when it was kept aside); said plainly if not known."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {
            "skill": str(doc["skill"]),
            "kind": str(doc["kind"]),
            "why": str(doc["why"]),
            "at": str(doc.get("at", "")),
        }
    except (OSError, ValueError, KeyError, TypeError):
        return {
            "kind": "unexplained",
            "why": "kept aside by a sync that wrote no reason (an older ledger); "
            "compare it with the skill, merge what is missing by hand, then remove it",
        }


def _write(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(doc, separators=(",", ":"), sort_keys=True).encode())  # the C encoder
