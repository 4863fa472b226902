"""The state of one pass of ``ledger sync`` over a target, its journal, and the settling of what a
killed pass, or a runtime racing one, left behind (docs/layouts.md, "Kills"; ADR 23).

Before a pass writes, one fsync'd journal (``.ledger/sync/<target>.pending.json``) names every
step (its staged folder, what it replaces, what it writes) and every target state being
recorded.  :meth:`Settler.settle` looks at a step's staged folder and at what is in place,
deletes only the ledger's own copy or what the base holds, puts an edit made meanwhile back
where it was made, keeps anything unexplained in ``.ledger-rescued/``, and brings the
manifest up to what the target holds.  The same function settles a step just taken and one a
kill interrupted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger._fs import atomic_write
from ledger.errors import LedgerError
from ledger.folders.folder import STAGING, TargetFS
from ledger.folders.ignoring import DEFAULT_SOURCE, IN_FLIGHT
from ledger.folders.instant import Group
from ledger.store import gitstore as gs
from ledger.sync.keeping import UNPLACED, Files, keep
from ledger.sync.targets import Manifest, Target, Targets

__all__ = ["Pass", "Settler", "binmap", "digest", "hexmap", "state_of"]


def digest(files: gs.FileMap | None) -> str | None:
    """One value for a skill's file map, to notice that a side changed since a conflict."""
    if files is None:
        return None
    h = hashlib.sha256()
    for rel in sorted(files):
        mode, blob = files[rel]
        h.update(f"{rel}\0{mode:o}\0".encode() + blob)
    return h.hexdigest()


@dataclass
class Pass:
    """One target during one pass."""

    target: Target
    fs: TargetFS
    manifest: Manifest
    dirs: dict[str, str] = field(default_factory=dict)  # key → its folder in the target
    dupes: dict[str, list[str]] = field(default_factory=dict)  # key → every folder claiming it (hermes)
    categories: dict[str, bytes] = field(default_factory=dict)  # hermes: category files found there
    category_plan: Any = None  # what phase 2 projects of them (ledger.sync.categoryfiles.CategoryPlan)
    state: dict[str, tuple[gs.FileMap, dict[str, list]]] = field(default_factory=dict)
    may_replace: set[str] = field(default_factory=set)  # target states the ledger may overwrite
    recorded: set[str] = field(default_factory=set)  # recorded from this target in this pass
    recording: dict[str, dict[str, Any]] = field(default_factory=dict)  # key → the target state being recorded
    report: dict[str, Any] = field(default_factory=dict)
    changed: bool = False  # something moved under the pass: run another
    conflict_since: dict[str, str | None] = field(default_factory=dict)  # a conflict merged again keeps its date
    keep_displaced: set[str] = field(default_factory=set)  # a side chosen away (--take): kept aside, not deleted
    full: bool = False  # read every file (ledger sync --full): no stat entry is trusted
    scan: Group | None = None  # what the scan listed and looked into, for the instant record
    groups: dict[str, Group] = field(default_factory=dict)  # key → its folders and files as read
    controls: str | None = None  # what the pass depends on besides the target (instant.controls), at its start
    commit: bytes | None = None  # the head when the pass began
    withheld: dict[str, str] = field(default_factory=dict)  # skills its supply record withholds → their state


class Settler:
    """The journal of each pass and the settling of its steps, for one brain's targets."""

    def __init__(self, targets: Targets, landed: Callable[[str, dict[str, Any]], bytes | None]) -> None:
        self.targets = targets
        self.landed = landed  # the tree a journaled record wrote for a skill, or None (Recorder.landed)

    def journal_file(self, p: Pass) -> Path:
        return self.targets.dir / f"{p.target.name}.pending.json"

    def journal(self, p: Pass, entries: dict[str, dict[str, Any] | None]) -> None:
        """Steps and records under way in a target, durable before they start (a kill is settled next pass)."""
        for name, info in entries.items():
            if info is None:
                p.manifest.pending.pop(name, None)
            else:
                p.manifest.pending[name] = info
        path = self.journal_file(p)
        if not p.manifest.pending:
            path.unlink(missing_ok=True)
            return
        self.targets.dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(p.manifest.pending, separators=(",", ":")).encode())

    def settle(self, p: Pass, staged: str, info: dict[str, Any], race: tuple[Files, Files] | None = None) -> str:
        """Look at what a step left staged and in place; delete only what is known to be the ledger's
        or what the manifest's base holds, and bring the manifest up to what the target now holds.

        ``race`` is given for an exchange this process just made: the files it found in place just
        before (what the step expected to displace) and the ledger's copy it put in.  A runtime edit
        that landed in between is then merged back into the live folder (:mod:`ledger.sync.keeping`).

        ``done``: the step took effect (whole) and nothing was lost; ``undone``: it did not, or an
        edit made meanwhile was put back where it was made (the next pass records it); ``rescued``:
        a copy is kept in ``.ledger-rescued/``, with the reason, rather than deleted: a true conflict
        (the runtime and the ledger changed the same lines), or what a killed sync cannot explain."""
        old = binmap(info["old"]) if info["old"] is not None else None
        new = binmap(info["new"]) if info["new"] is not None else None
        held = p.fs.staged_state(staged, info["dir"])
        here = _Lazy(lambda: p.fs.state(info["dir"])[0])  # read only where the answer depends on it
        outcome = "undone"
        if held is None:  # never staged, placed as a new skill, or already discarded
            outcome = "done" if here() == new else "undone"
        elif held == new or (old is None and new is not None):
            p.fs.discard(staged)  # the ledger's own copy (whole or partly written), never placed
        elif held == old and info.get("keep"):
            # a side chosen away with --take: kept aside and named, since no version holds it
            _rescue(
                p,
                staged,
                info["key"],
                "chosen away",
                f"the target's copy of {info['key']}, chosen away with --take ledger (or 'ledger resolve "
                f"{info['key']} --take ledger'); no version holds it; take what you need, then remove it",
            )
            outcome = "done"
        elif held == old:
            # taken out: what the target's rules keep out of the ledger stays there (or is kept aside)
            if new is not None or not _leave_kept_out(p, staged, info):
                p.fs.discard(staged)  # exchanged or taken out: what the base holds, and the ledger too
            outcome = "done"
        elif race is not None and new is not None and not (conflicts := keep(p.fs, info["dir"], staged, *race)):
            # Exchanged just now over a folder the runtime edited after the pass read it: its edit went
            # back into the live folder, merged three ways with the ledger's copy (and with what the
            # runtime wrote there since); the next pass records it.
            p.fs.discard(staged)
            p.changed, outcome = True, "done"
        elif new is not None and here() == new:
            p.fs.exchange(staged, info["dir"])  # exchanged over an edit made meanwhile: it goes back
            if p.fs.staged_state(staged, info["dir"]) == new:
                p.fs.discard(staged)
            else:  # the ledger's copy was edited in the instant before it went back: keep that too
                why = (
                    "a sync was stopped while replacing"
                    if race is None
                    else "a true conflict: the runtime and the brain's new version changed the same lines of"
                )
                _rescue(
                    p,
                    staged,
                    info["key"],
                    "interrupted" if race is None else "conflict",
                    f"{why} {info['key']}; the runtime's edit is back in its folder, and this is the brain's "
                    "copy as the runtime edited it in the instant it was in place; merge it by hand, then "
                    "remove it",
                )
            p.changed = True
        elif race is not None and new is not None:  # a true conflict, or a folder that could not take the merge
            if conflicts == [UNPLACED]:
                _rescue(
                    p,
                    staged,
                    info["key"],
                    "not placed",
                    f"the runtime edited {info['key']} while a sync replaced it, and the folder was gone or "
                    "changed in a way the edit could not be merged into; compare this copy with the skill, "
                    "merge what is missing by hand, then remove it",
                )
            else:
                _rescue(
                    p,
                    staged,
                    info["key"],
                    "conflict",
                    f"a true conflict: the runtime edited {', '.join(conflicts)} of {info['key']} while a sync "
                    "put in the brain's new version, which changed the same lines; the folder holds the "
                    "brain's version (with the runtime's later edits); merge this copy in by hand, then "
                    "remove it",
                )
            p.changed, outcome = True, "rescued"
        elif new is not None and here() == old:
            p.fs.discard(staged)  # never exchanged: the staged copy is the ledger's, partly written
        elif new is None and here() is None and p.fs.put_back(staged, info["dir"]):
            p.changed = True  # taken out just after an edit: put back, recorded next pass
        else:
            _rescue(
                p,
                staged,
                info["key"],
                "interrupted",
                f"a sync replacing or removing {info['key']} was stopped (or raced by the runtime), and both "
                "this copy and the one in the folder were edited since; neither can be put in place without "
                "losing the other; merge it by hand, then remove it",
            )
            p.changed, outcome = True, "rescued"
        if outcome == "done" and new is not None:
            p.manifest.dirty = True
            p.manifest.skills[info["key"]] = {"dir": info["dir"], "tree": info["tree"], "files": info["new"]}
        elif outcome == "done":
            p.manifest.dirty = True
            p.manifest.skills.pop(info["key"], None)
        return outcome

    def settle_record(self, p: Pass, key: str, rec: dict[str, Any]) -> None:
        """A record a kill (or a failed phase 2) interrupted: if it landed, the target's state then is
        the base from now on, with the tree that record wrote, whatever the head holds since (a brain
        write landed meanwhile is then the ledger's change, merged as any other); else nothing changes."""
        lt = self.landed(key, rec)
        if lt is not None:
            entry = p.manifest.skills.get(key, {})
            p.manifest.dirty = True
            # A merged record holds more than the target did: the base is the target's state, kept as a tree.
            tree = rec["base_tree"] if rec.get("merged") else lt.hex()
            p.manifest.skills[key] = {"dir": entry.get("dir", key), "tree": tree, "files": rec["state"]}

    def settle_all(self, p: Pass) -> None:
        """Finish what a killed sync left in this target: its journal, then stray staging."""
        path = self.journal_file(p)
        if path.exists():
            with contextlib.suppress(ValueError, OSError):
                p.manifest.pending = json.loads(path.read_text())
        for name, info in list(p.manifest.pending.items()):
            if name.startswith("@record/"):
                self.settle_record(p, name.removeprefix("@record/"), info)
            else:
                self.settle(p, name, info)
        for staged in p.fs.staged():
            p.fs.discard(staged)  # not in the journal: never placed, the ledger's own copy
        if p.manifest.pending:
            self.targets.save_manifest(p.target.name, p.manifest)  # settled: the journal can go
            self.journal(p, dict.fromkeys(list(p.manifest.pending)))


def _leave_kept_out(p: Pass, staged: str, info: dict[str, Any]) -> bool:
    """A skill the brain deleted was taken out of its folder: the files in it that a rule of the brain's or
    the target's own (not the ledger's debris defaults) keeps out of the ledger are the runtime's, which no
    version holds, so they are put back where they were; if the folder was taken meanwhile, the copy is
    kept aside and named instead of discarded (True then: ``staged`` is no longer there to discard)."""
    rules = getattr(p.fs.ignore, "rule", None)
    if rules is None:
        return False
    try:
        kept = p.fs.read(f"{STAGING}/{staged}", ignored=True, work=True)
    except (OSError, LedgerError):
        kept = {}

    def ours(path: str) -> bool:  # the runtime's: kept out by a rule that is not the ledger's default
        parts = path.split("/")
        for inner in ["/".join(parts[:i]) + "/" for i in range(1, len(parts))] + [path]:
            found = rules(inner)
            if found is not None:
                return found[1] != DEFAULT_SOURCE
        return False

    mine = {r: d for r, d in kept.items() if not IN_FLIGHT.search(r) and ours(r)}
    if not mine:
        return False
    back = p.fs.new_name()
    p.fs.stage(mine, back)
    if p.fs.place_new(back, info["dir"]):
        return False
    p.fs.discard(back)
    _rescue(
        p,
        staged,
        info["key"],
        "kept out",
        f"{info['key']} was deleted in the brain and taken out of this target; its folder held "
        f"{', '.join(sorted(mine))}, which this target's ignore rules keep out of the ledger (no version "
        "holds them), and the folder could not take them back; take what you need, then remove it",
    )
    return True


def _rescue(p: Pass, staged: str, key: str, kind: str, why: str) -> None:
    """Keep a staged copy aside, with what it is and why, for ``ledger status``."""
    p.report["rescued"].append(
        {"skill": key, "kept": p.fs.rescue(staged, key, {"kind": kind, "why": why}), "kind": kind, "why": why}
    )


class _Lazy:
    """A skill's state in place, read on first use (``None`` if absent or unreadable)."""

    def __init__(self, read: Callable[[], gs.FileMap]) -> None:
        self._read, self._done, self._value = read, False, None

    def __call__(self) -> gs.FileMap | None:
        if not self._done:
            try:
                self._value = self._read()
            except (OSError, LedgerError):
                self._value = None
            self._done = True
        return self._value


def state_of(data: Mapping[str, tuple[bytes, bool]]) -> gs.FileMap:
    return {rel: (gs.MODE_EXEC if x else gs.MODE_FILE, gs.blob_id(d)) for rel, (d, x) in data.items()}


def hexmap(files: gs.FileMap) -> dict[str, list]:
    return {rel: [mode, blob.hex()] for rel, (mode, blob) in files.items()}


def binmap(files: dict[str, list]) -> gs.FileMap:
    return {rel: (int(mode), bytes.fromhex(blob)) for rel, (mode, blob) in files.items()}
