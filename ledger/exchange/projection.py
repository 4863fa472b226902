"""``ledger sync``: the brain projected into every target, and what changed there recorded back.

A pass over a target has two phases (docs/layouts.md, "Projection"):

1. **Record.** Each skill is compared three ways: the target (``t``), the manifest of the
   last sync (``base``) and the ledger (``l``).  A skill only the target changed, or
   one created there, is recorded as a new version through the importer, attributed to
   the target (actor, ``Ledger-Runtime``, ``Ledger-Target``).  A skill both sides changed
   is merged (:mod:`ledger.exchange.merging`); a conflict writes nothing on either side.
2. **Project.** Each skill the ledger changed is written whole and renamed into place
   (:mod:`ledger.exchange.targetfs`); a skill the ledger deleted is taken out.  Nothing is
   replaced unless it is what the manifest says the ledger last wrote, or what was just
   recorded, so an edit is never overwritten unread.

A target that lacks most of its managed skills is refused, not read as deletions.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger._faults import crashpoint, pausepoint
from ledger.bundle.collection import Collection, Found
from ledger.bundle.skill import SKILL_MD, check_name
from ledger.errors import LedgerError
from ledger.exchange.merging import merge
from ledger.exchange.targetfs import TargetError, TargetFS
from ledger.exchange.targets import Manifest, Target, Targets
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.skilltree import skills_of
from ledger.write.importer import CATEGORY_INDEX

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["WIPED_MIN", "Projection"]

WIPED_MIN = 4  # a target managing fewer skills than this is never judged wiped
_ROUNDS = 3  # passes per sync while a target keeps changing under it


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
class _Pass:
    """One target during one pass."""

    target: Target
    fs: TargetFS
    manifest: Manifest
    dirs: dict[str, str] = field(default_factory=dict)  # key → its folder in the target
    state: dict[str, tuple[gs.FileMap, dict[str, list]]] = field(default_factory=dict)
    may_replace: set[str] = field(default_factory=set)  # target states the ledger may overwrite
    report: dict[str, Any] = field(default_factory=dict)
    changed: bool = False  # something moved under the pass: run another


class Projection:
    """Keeps one brain and its targets in step; a brain's ``ledger sync``, ``import`` and ``export``."""

    def __init__(self, brain: Brain, targets: Targets | None = None) -> None:
        self.brain = brain
        self.targets = targets or Targets(brain.control)

    @contextlib.contextmanager
    def _sync_lock(self) -> Iterator[None]:
        """One sync at a time per brain (a watcher and a manual run take turns)."""
        self.brain.control.mkdir(exist_ok=True)
        fd = os.open(self.brain.control / "sync.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def sync(
        self,
        names: Sequence[str] = (),
        *,
        take: tuple[str, str] | None = None,
        confirm_deletions: Sequence[str] = (),
        committed: bytes | None = None,
    ) -> dict[str, Any]:
        """One sync of ``names`` (default: every target); ``take=(side, skill)`` settles a conflict with
        ``side`` = ``ledger`` or a target's name; ``committed`` is the commit that committed targets show."""
        targets = [self.targets.get(n) for n in names] if names else self.targets.all()
        with self._sync_lock():
            reports: dict[str, dict[str, Any]] = {}
            for _ in range(_ROUNDS):
                passes, again = [], False
                try:
                    for target in targets:  # every target's changes are recorded before any is projected
                        p = self._open(target, target.name in confirm_deletions)
                        if isinstance(p, _Pass):
                            passes.append(p)
                            self._record(p, take)
                        result = p.report if isinstance(p, _Pass) else p
                        if target.name in reports:
                            _merge_reports(reports[target.name], result)
                        else:
                            reports[target.name] = result
                    for p in passes:
                        self._project(p, committed)
                        p.fs.tidy()
                        self.targets.save_manifest(p.target.name, p.manifest)
                        reports[p.target.name]["conflicts"] = [{"skill": k, **v}
                                                               for k, v in sorted(p.manifest.conflicts.items())]
                        again |= p.changed
                finally:
                    for p in passes:
                        p.fs.close()
                take = None
                if not again:
                    break
        out = list(reports.values())
        return {"targets": out, "conflicts": sum(len(r["conflicts"]) for r in out),
                "refused": sum(r["status"] != "ok" for r in out)}  # fmt: skip

    # ------------------------------------------------------------------ one target

    def _open(self, target: Target, confirmed: bool) -> _Pass | dict[str, Any]:
        """The target opened and read, its killed exchanges settled; or a report of why it is refused."""
        report: dict[str, Any] = {"name": target.name, "path": target.path, "status": "ok"}
        report.update({k: [] for k in ("recorded", "projected", "removed", "conflicts", "left_alone", "rescued")})
        try:
            fs = TargetFS(target.path, target.layout, self.brain.limits["file"])
        except (TargetError, OSError) as exc:
            why = exc.message if isinstance(exc, LedgerError) else f"cannot open it: {exc.strerror}"
            report.update(status="refused", reason=why,
                          hint="mount or recreate the folder; a missing target is never read as deletions")  # fmt: skip
            return report
        p = _Pass(target, fs, self.targets.manifest(target.name), report=report)
        try:
            self._settle_all(p)
            if self._read(p, confirmed):
                return p
        except BaseException:
            fs.close()
            raise
        fs.close()
        return report

    def _read(self, p: _Pass, confirmed: bool) -> bool:
        scan = p.fs.scan()
        for rel, why in scan.refused.items():
            p.report["left_alone"].append({"dir": rel, "reason": why})
        for key, rel in scan.skills.items():
            try:
                check_name(key)
            except LedgerError:
                p.report["left_alone"].append({"dir": rel, "reason": "its folder name is not a skill key"})
                continue
            if not p.target.includes(key):
                continue
            cache = p.manifest.skills.get(key, {}).get("stats") if p.manifest.skills.get(key, {}).get("dir") == rel \
                else None  # fmt: skip
            try:
                p.state[key] = p.fs.state(rel, cache)
                p.dirs[key] = rel
            except (TargetError, OSError) as exc:
                why = exc.message if isinstance(exc, LedgerError) else str(exc)
                p.report["left_alone"].append({"dir": rel, "reason": why})
                p.dirs[key] = rel  # present, but not recordable: never replaced or deleted
        managed = set(p.manifest.skills)
        missing = sorted(k for k in managed if k not in p.dirs)
        if len(managed) >= WIPED_MIN and 2 * len(missing) > len(managed) and not confirmed:
            p.report.update(status="refused",
                            reason=f"{len(missing)} of the {len(managed)} skills the ledger manages there are gone "
                                   "(an unmounted disk or a wiped folder is not read as deletions)",
                            hint=f"restore the folder, or record the deletions: ledger sync --confirm-deletions "
                                 f"{p.target.name}")  # fmt: skip
            return False
        return True

    def _source(self, committed: bytes | None, p: _Pass) -> dict[str, bytes]:
        if p.target.committed and committed is not None:
            return dict(skills_of(self.brain.store, self.brain.store.commit_info(committed)[0])[1])
        return dict(self.brain.head().skills)

    def _ledger_files(self, sha: bytes | None) -> gs.FileMap | None:
        return self.brain.snapshots.files(sha) if sha is not None else None

    def _data(self, files: gs.FileMap) -> dict[str, tuple[bytes, bool]]:
        read = self.brain.snapshots.read_blob
        return {rel: (read(blob), mode == gs.MODE_EXEC) for rel, (mode, blob) in files.items()}

    # ------------------------------------------------------------------ phase 1: record

    def _record(self, p: _Pass, take: tuple[str, str] | None) -> None:
        m, head = p.manifest, self.brain.head().skills
        found: list[Found] = []
        deletions: list[str] = []
        for key in sorted(set(p.state) | set(m.skills)):
            if not p.target.includes(key) or (key in p.dirs and key not in p.state):
                continue
            t = p.state[key][0] if key in p.state else None
            base, entry = m.files(key), m.skills.get(key)
            lt = head.get(key)
            ledger_same = entry is not None and entry.get("tree") == (lt.hex() if lt else None)
            if t == base and entry is not None and key not in m.conflicts:
                continue  # the target did not change: phase 2 projects whatever the ledger did
            conflict = m.conflicts.get(key)
            if take and take[1] == key and conflict is not None:
                m.conflicts.pop(key)
                if take[0] == "ledger":
                    p.may_replace.add(key)
                    continue
                if take[0] != p.target.name:
                    continue
                ledger_same, conflict = True, None
            if conflict is not None:
                t_moved = digest(t) != conflict["target_state"]
                l_moved = (lt.hex() if lt else None) != conflict["ledger_tree"]
                if not t_moved and not l_moved:
                    continue  # still in conflict: nothing is written on either side
                m.conflicts.pop(key)
                if not l_moved:
                    ledger_same = True  # the target's copy was edited to settle it
                elif not t_moved:
                    p.may_replace.add(key)  # the ledger's copy was edited to settle it
                    continue
            if entry is None and t is None:
                continue
            if (entry is None and lt is None) or ledger_same:
                if t is None:
                    deletions.append(key)
                else:
                    found.append(self._found(p, key, p.fs.read(p.dirs[key])))
                continue
            l_files = self._ledger_files(lt)
            if t == l_files:
                continue  # both sides made the same change: phase 2 notes it in the manifest
            self._merge(p, key, base, l_files, t, found, deletions)
        if found or deletions:
            self._commit(p, found, deletions)

    def _merge(self, p: _Pass, key: str, base: gs.FileMap | None, ours: gs.FileMap | None, theirs: gs.FileMap | None,
               found: list[Found], deletions: list[str]) -> None:  # fmt: skip
        """Both sides changed ``key`` since the last sync: merge them, or keep both as a conflict."""
        head = self.brain.head()
        lt = head.skills.get(key)
        if base is None or ours is None or theirs is None:
            self._conflict(p, key, theirs, lt, ["(whole skill)"] if base is not None or theirs is None else
                           sorted(set(ours or {}) | set(theirs or {})))  # fmt: skip
            return
        t_data = p.fs.read(p.dirs[key])
        if digest({r: (gs.MODE_EXEC if x else gs.MODE_FILE, gs.blob_id(d)) for r, (d, x) in t_data.items()}) \
                != digest(theirs):  # fmt: skip
            p.changed = True  # changed again while read: the next pass looks again
            return
        version = self.brain.snapshots.committed(key)[1].version

        def counter(rel: str, data: bytes) -> bytes:
            if rel != SKILL_MD:
                return data
            with contextlib.suppress(LedgerError, UnicodeDecodeError):
                return self.brain.versions.doc(head, data.decode()).with_counter(version).encode()
            return data

        result = merge(self._data(base), self._data(ours), t_data, normalize=counter)
        if not result.clean:
            self._conflict(p, key, theirs, lt, result.conflicts)
            return
        if result.files == {r: (counter(r, d), x) for r, (d, x) in self._data(ours).items()}:
            p.may_replace.add(key)  # the merge is the ledger's copy: phase 2 writes it over the target's
            return
        found.append(self._found(p, key, result.files, note="merged with the ledger's changes"))

    def _conflict(self, p: _Pass, key: str, theirs: gs.FileMap | None, lt: bytes | None, files: list[str]) -> None:
        p.manifest.conflicts[key] = {
            "target_state": digest(theirs), "ledger_tree": lt.hex() if lt else None, "files": files,
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "hint": f"ledger sync --take ledger {key}, or --take {p.target.name} {key}, or edit one side",
        }  # fmt: skip

    def _found(self, p: _Pass, key: str, files: dict[str, tuple[bytes, bool]], note: str = "") -> Found:
        rel = p.dirs[key]
        category = rel.rpartition("/")[0] or None if p.target.layout == "hermes" else None
        found = Found(key, key, f"{p.target.path}/{rel}", dict(files), category=category)
        if note:
            found.notes.append(note)
        p.may_replace.add(key)
        return found

    def _commit(self, p: _Pass, found: list[Found], deletions: list[str]) -> None:
        coll = Collection(p.target.layout if p.target.layout == "hermes" else "agentskills", found)
        evidence = p.target.path if len(p.target.path) <= 200 else "…" + p.target.path[-199:]
        with self.brain.acting(p.target.actor, runtime=p.target.runtime, target=evidence):
            result = self.brain.importer.import_collection(coll, operation="sync", deletions=deletions,
                                                           note=f"recorded from target {p.target.name}")  # fmt: skip
        for row in result["skills"]:
            if row["status"] == "refused":
                p.may_replace.discard(row["skill"])
                p.report["left_alone"].append({"dir": p.dirs.get(row["skill"], row["skill"]),
                                               "reason": row["reason"]})  # fmt: skip
            elif row["status"] != "unchanged":
                p.report["recorded"].append({"skill": row["skill"], "version": row["version"],
                                             "action": row["status"]})  # fmt: skip
        for key in deletions:
            p.manifest.skills.pop(key, None)

    # ------------------------------------------------------------------ phase 2: project

    def _project(self, p: _Pass, committed: bytes | None) -> None:
        m, source = p.manifest, self._source(committed, p)
        index = self._category_index() if p.target.layout == "hermes" else {}
        for key in sorted({k for k in source if p.target.includes(k)} | set(m.skills)):
            if key in m.conflicts:
                continue
            lt, entry = source.get(key), m.skills.get(key)
            t = p.state[key][0] if key in p.state else None
            unreadable = key in p.dirs and key not in p.state
            if unreadable:
                continue
            may = key in p.may_replace or (entry is not None and t == m.files(key))
            if entry is not None and lt is not None and entry.get("tree") == lt.hex() and t == m.files(key):
                if key in p.state and p.state[key][1] != entry.get("stats"):
                    entry["stats"] = p.state[key][1]  # re-hashed this pass: keep the fresher stat entries
                continue
            if lt is None:
                if entry is not None and t is not None and may:
                    self._remove(p, key, t)
                elif entry is not None and t is None:
                    m.skills.pop(key)
                continue
            l_files = self.brain.snapshots.files(lt)
            rel = p.dirs.get(key) or (f"{index[key]}/{key}" if key in index else key)
            if t == l_files:
                m.skills[key] = {"dir": rel, "tree": lt.hex(), "files": _hexmap(t), "stats": p.state[key][1]}
                continue
            if t is not None and not may:
                continue  # an edit the ledger has not recorded (refused, or unmanaged): left as it is
            self._place(p, key, rel, lt, l_files, t)

    def _category_index(self) -> dict[str, str]:
        cats = self.brain.snapshots.categories_tree(self.brain.head())
        if not cats:
            return {}
        files = th.files_of(self.brain.store, cats)
        if CATEGORY_INDEX not in files:
            return {}
        return json.loads(self.brain.store.read(files[CATEGORY_INDEX][1], b"blob"))["skills"]

    def _place(self, p: _Pass, key: str, rel: str, lt: bytes, new: gs.FileMap, old: gs.FileMap | None) -> None:
        staged, stats = p.fs.stage(self._data(new))
        if old is None:
            if not p.fs.place_new(staged, rel):
                p.fs.discard(staged)
                p.changed = True  # a skill appeared there meanwhile: the next pass reads it
                return
        else:
            info = {"key": key, "dir": rel, "old": _hexmap(old), "new": _hexmap(new)}
            self._pending(p, staged, info)
            pausepoint("sync.exchange")  # tests edit the target here: the edit must survive
            p.fs.exchange(staged, rel)
            crashpoint("sync.exchanged")
            if self._settle(p, staged, info) != "done":
                return
        p.manifest.skills[key] = {"dir": rel, "tree": lt.hex(), "files": _hexmap(new), "stats": stats}
        p.report["projected"].append(key)

    def _remove(self, p: _Pass, key: str, old: gs.FileMap) -> None:
        rel = p.dirs[key]
        staged = p.fs.take_out(rel)  # already moved: record it, then look at what was moved
        info = {"key": key, "dir": rel, "old": _hexmap(old), "new": None}
        self._pending(p, staged, info)
        if self._settle(p, staged, info) == "done":
            p.manifest.skills.pop(key, None)
            p.report["removed"].append(key)

    # ------------------------------------------------------------------ interrupted exchanges

    def _pending_file(self, p: _Pass) -> Path:
        return self.targets.dir / f"{p.target.name}.pending.json"

    def _pending(self, p: _Pass, staged: str, info: dict[str, Any] | None) -> None:
        """The exchanges under way in a target, durable before each one starts (a kill mid-way is settled)."""
        if info is None:
            p.manifest.pending.pop(staged, None)
        else:
            p.manifest.pending[staged] = info
        path = self._pending_file(p)
        if not p.manifest.pending:
            path.unlink(missing_ok=True)
            return
        self.targets.dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(p.manifest.pending, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    def _settle(self, p: _Pass, staged: str, info: dict[str, Any]) -> str:
        """Look at what an exchange left staged; delete it only if it is what was expected there.

        ``done``: the new skill is in place (or the old one removed) and nothing was lost;
        ``undone``: an edit made meanwhile was put back in place, and the next pass records it;
        ``rescued``: it could not be put back, and is kept in ``.ledger-rescued/``."""
        old, new = _binmap(info["old"]), _binmap(info["new"]) if info["new"] is not None else None
        held = p.fs.staged_state(staged)
        outcome = "done"
        if held is None:
            outcome = "done" if new is None else "undone"
        elif held in (new, old):
            p.fs.discard(staged)
            outcome = "done" if held == old else "undone"
        else:
            p.changed = True
            try:
                here = p.fs.state(info["dir"])[0]
            except (OSError, LedgerError):
                here = None
            if here is not None and here == new:
                p.fs.exchange(staged, info["dir"])  # the edit goes back where it was made
                p.fs.discard(staged)
                outcome = "undone"
            elif here is None and new is None and p.fs.put_back(staged, info["dir"]):
                outcome = "undone"
            else:
                p.report["rescued"].append({"skill": info["key"], "kept": p.fs.rescue(staged, info["key"])})
                outcome = "rescued"
        self._pending(p, staged, None)
        return outcome

    def _settle_all(self, p: _Pass) -> None:
        """Finish what a killed sync left in this target: its pending exchanges, then stray staging."""
        path = self._pending_file(p)
        if path.exists():
            with contextlib.suppress(ValueError, OSError):
                p.manifest.pending = json.loads(path.read_text())
        for staged, info in list(p.manifest.pending.items()):
            self._settle(p, staged, info)
        for staged in p.fs.staged():
            p.fs.discard(staged)  # never exchanged (each exchange is pending first): the ledger's own copy


def _hexmap(files: gs.FileMap) -> dict[str, list]:
    return {rel: [mode, blob.hex()] for rel, (mode, blob) in files.items()}


def _binmap(files: dict[str, list]) -> gs.FileMap:
    return {rel: (int(mode), bytes.fromhex(blob)) for rel, (mode, blob) in files.items()}


def _merge_reports(into: dict[str, Any], more: dict[str, Any]) -> None:
    """A later round's report of a target into the first round's (``more`` may still be filled in)."""
    for key in ("recorded", "projected", "removed", "rescued"):
        into[key] += more[key]
        more[key] = into[key]
    into["left_alone"] = more["left_alone"]
    into["status"] = more["status"]
    for key in ("reason", "hint"):
        if key in more:
            into[key] = more[key]
