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
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ledger._faults import crashpoint, pausepoint
from ledger.bundle.collection import Collection, Found
from ledger.bundle.lint import HERMES_FILE, HERMES_SKILL_MD
from ledger.bundle.skill import SKILL_MD, check_name
from ledger.errors import LedgerError
from ledger.exchange.ignoring import IGNORE_FILE, Ignore
from ledger.exchange.merging import merge
from ledger.exchange.settling import Pass, Settler, binmap, digest, hexmap, state_of
from ledger.exchange.targetfs import TargetError, TargetFS
from ledger.exchange.targets import Target, Targets
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.skilltree import skills_of
from ledger.write.importer import CATEGORY_INDEX

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["WIPED_MIN", "Projection"]

WIPED_MIN = 4  # a target managing fewer skills than this is never judged wiped
_ROUNDS = 3  # passes per sync while a target keeps changing under it


class Projection:
    """Keeps one brain and its targets in step; a brain's ``ledger sync``, ``import`` and ``export``."""

    def __init__(self, brain: Brain, targets: Targets | None = None) -> None:
        self.brain = brain
        self.targets = targets or Targets(brain.control)
        self.settler = Settler(self.targets, lambda key: self.brain.head().skills.get(key),
                               lambda tree: self._norm(self._data(self.brain.snapshots.files(tree))))

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
        restore: Sequence[str] = (),
    ) -> dict[str, Any]:
        """One sync of ``names`` (default: every target); ``take=(side, skill)`` settles a conflict with
        ``side`` = ``ledger`` or a target's name; ``committed`` is the commit that committed targets show;
        a target in ``restore`` lost its files: the brain's skills are put back, no deletion recorded."""
        targets = [self.targets.get(n) for n in names] if names else self.targets.all()
        with self._sync_lock():
            reports: dict[str, dict[str, Any]] = {}
            for _ in range(_ROUNDS):
                passes, again = [], False
                try:
                    for target in targets:  # every target's changes are recorded before any is projected
                        wiped = "confirm" if target.name in confirm_deletions else \
                            "restore" if target.name in restore else None  # fmt: skip
                        result = self._guarded(target, lambda t=target, w=wiped: self._open(t, w, committed))
                        if isinstance(result, Pass):
                            passes.append(result)
                            failed = self._guarded(target, lambda p=result, k=take: self._record(p, k))
                            if failed is not None:
                                passes.remove(result)
                                result.fs.close()
                                result = failed
                        report = result.report if isinstance(result, Pass) else result
                        if target.name in reports:
                            _merge_reports(reports[target.name], report)
                        else:
                            reports[target.name] = report
                    for p in passes:
                        failed = self._guarded(p.target, lambda p=p: self._finish(p, committed))
                        if failed is not None:  # its journal stays: the next pass settles what was under way
                            reports[p.target.name].update(status="refused", reason=failed["reason"],
                                                          hint=failed["hint"])  # fmt: skip
                        else:
                            reports[p.target.name]["conflicts"] = p.report["conflicts"]
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

    @staticmethod
    def _guarded(target: Target, step: Any) -> Any:
        """Run one target's step; a failure fails that target alone, reported with its reason."""
        try:
            return step()
        except (LedgerError, OSError) as exc:
            why = exc.message if isinstance(exc, LedgerError) else f"{exc.strerror}: {exc.filename}"
            hint = (exc.hint if isinstance(exc, LedgerError) else None) or "run 'ledger sync' again once it is fixed"
            report: dict[str, Any] = {"name": target.name, "path": target.path, "status": "refused", "reason": why,
                                      "hint": hint}  # fmt: skip
            report.update({k: [] for k in ("recorded", "projected", "removed", "conflicts", "left_alone", "rescued")})
            return report

    def _finish(self, p: Pass, committed: bytes | None) -> None:
        """Phase 2 for one target, then its manifest saved and its journal cleared."""
        self._project(p, committed)
        p.fs.tidy()
        self.targets.save_manifest(p.target.name, p.manifest)
        if p.manifest.pending:
            self.settler.journal(p, dict.fromkeys(list(p.manifest.pending)))  # all settled and saved
        p.report["conflicts"] = [{"skill": k, **v} for k, v in sorted(p.manifest.conflicts.items())]

    def _open(self, target: Target, wiped: str | None, committed: bytes | None) -> Pass | dict[str, Any]:
        """The target opened and read, its killed exchanges settled; or a report of why it is refused."""
        report: dict[str, Any] = {"name": target.name, "path": target.path, "status": "ok"}
        report.update({k: [] for k in ("recorded", "projected", "removed", "conflicts", "left_alone", "rescued")})
        if target.committed and committed is None:
            report.update(status="refused", reason="it shows the root committed on chain, and the chain could not "
                          "be read", hint="start the chain (or check --rpc), then run 'ledger sync' again")  # fmt: skip
            return report
        try:
            if wiped == "restore":
                os.makedirs(target.path, exist_ok=True)  # a folder that went away entirely is made again
            work = str(self.targets.work(target.name))
            fs = TargetFS(target.path, target.layout, self.brain.limits["file"], work=work)
        except (TargetError, OSError) as exc:
            why = exc.message if isinstance(exc, LedgerError) else f"cannot open it: {exc.strerror}"
            report.update(status="refused", reason=why,
                          hint=f"mount it, or put the brain's skills back: ledger sync --restore {target.name} "
                               "(a missing target is never read as deletions)")  # fmt: skip
            return report
        fs.ignore = self._ignore().then((fs.read_top(IGNORE_FILE) or b"").decode("utf-8", "replace"))
        p = Pass(target, fs, self.targets.manifest(target.name), report=report)
        try:
            self.settler.settle_all(p)
            if self._read(p, wiped):
                return p
        except BaseException:
            fs.close()
            raise
        fs.close()
        return report

    def _ignore(self) -> Ignore:
        """The default rules, then the brain's own (``.ledger/syncignore``)."""
        try:
            return Ignore([(self.brain.control / "syncignore").read_text(encoding="utf-8", errors="replace")])
        except FileNotFoundError:
            return Ignore()

    def _read(self, p: Pass, wiped: str | None) -> bool:
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
            cache = p.manifest.stats.get(key) if p.manifest.skills.get(key, {}).get("dir") == rel else None
            try:
                p.state[key] = p.fs.state(rel, cache)
                p.dirs[key] = rel
                self._within_caps(p, key, rel)
            except (TargetError, OSError) as exc:
                p.state.pop(key, None)
                why = exc.message if isinstance(exc, LedgerError) else str(exc)
                p.report["left_alone"].append({"dir": rel, "reason": why})
                p.dirs[key] = rel  # present, but not recordable: never replaced or deleted
        managed = set(p.manifest.skills)
        missing = sorted(k for k in managed if k not in p.dirs)
        if not missing or wiped == "confirm":
            return True
        if wiped == "restore":
            for key in missing:  # projected again as new skills; nothing is recorded as deleted
                p.manifest.skills.pop(key)
            p.manifest.dirty = True
            return True
        if len(missing) < len(managed) and (len(managed) < WIPED_MIN or 2 * len(missing) <= len(managed)):
            return True  # some skills deleted there, most still in place: read as deletions
        p.report.update(status="refused",
                        reason=f"{len(missing)} of the {len(managed)} skill(s) the ledger manages there are gone "
                               "(an unmounted disk or a wiped folder is not read as deletions)",
                        hint=f"put the brain's skills back: ledger sync --restore {p.target.name}; or, if they were "
                             f"deleted on purpose: ledger sync --confirm-deletions {p.target.name}")  # fmt: skip
        return False

    @staticmethod
    def _within_caps(p: Pass, key: str, rel: str) -> None:
        """A runtime's file is held to what an agent may write (Hermes's caps, :class:`Policy`); what
        the ledger itself put there (the base) may be larger, since the brain records skills as they are."""
        files, stats = p.state[key]
        base = p.manifest.files(key) or {}
        for path, (_, blob) in files.items():
            if path in base and base[path][1] == blob:
                continue
            size = stats[path][2]
            if path == SKILL_MD and size > HERMES_SKILL_MD:  # characters: only a file this large can be over
                chars = len(p.fs.read(rel)[SKILL_MD][0].decode("utf-8", "replace"))
                if chars > HERMES_SKILL_MD:
                    raise TargetError(f"{rel}/{SKILL_MD} is {chars} characters, over the {HERMES_SKILL_MD} an "
                                      "agent may write; the skill is left as it is",
                                      hint="move detail into references/ files")  # fmt: skip
            elif path != SKILL_MD and size > HERMES_FILE:
                raise TargetError(f"{rel}/{path} is {size} bytes, over the {HERMES_FILE} an agent may write; "
                                  "the skill is left as it is", hint="keep large files out of skills, or import "
                                  "the skill with 'ledger import' (the brain's own limits)")  # fmt: skip

    def _source(self, committed: bytes | None, p: Pass) -> dict[str, bytes]:
        if p.target.committed and committed is not None:
            return dict(skills_of(self.brain.store, self.brain.store.commit_info(committed)[0])[1])
        return dict(self.brain.head().skills)

    def _ledger_files(self, sha: bytes | None) -> gs.FileMap | None:
        return self.brain.snapshots.files(sha) if sha is not None else None

    def _data(self, files: gs.FileMap) -> dict[str, tuple[bytes, bool]]:
        read = self.brain.snapshots.read_blob
        return {rel: (read(blob), mode == gs.MODE_EXEC) for rel, (mode, blob) in files.items()}

    # ------------------------------------------------------------------ phase 1: record

    def _record(self, p: Pass, take: tuple[str, str] | None) -> None:
        """Everything the recording decides on (the head, the base, the last projection) is read
        under the writer lock, and written in the same hold: a brain write can land only before
        (then this pass merges with it three ways) or after (then it builds on what was recorded)."""
        with self.brain.lock.locked():
            self._record_locked(p, take)

    def _record_locked(self, p: Pass, take: tuple[str, str] | None) -> None:
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
                p.manifest.dirty = True
                m.conflicts.pop(key)
                if take[0] == "ledger":
                    p.may_replace.add(key)
                    p.keep_displaced.add(key)  # the target's side is chosen away, never deleted: kept aside
                    continue
                if take[0] != p.target.name:
                    continue
                ledger_same, conflict = True, None
            if conflict is not None:
                t_moved = digest(t) != conflict["target_state"]
                l_moved = (lt.hex() if lt else None) != conflict["ledger_tree"]
                if not t_moved and not l_moved:
                    continue  # still in conflict: nothing is written on either side
                # A side moved: merge again from the same base.  A clean merge settles the conflict;
                # otherwise it stays, whatever either side wrote since.  Only --take or 'ledger
                # resolve' chooses a side: a later write on one side never silently discards the other.
                p.manifest.dirty = True
                since = m.conflicts.pop(key).get("since")
                p.conflict_since[key] = since
                ledger_same = False
            if entry is None and t is None:
                continue
            if (entry is None and lt is None) or ledger_same:
                if t is None:
                    deletions.append(key)
                else:
                    data = p.fs.read(p.dirs[key])
                    found.append(self._found(p, key, data, state=state_of(data)))
                continue
            l_files = self._ledger_files(lt)
            if t == l_files:
                continue  # both sides made the same change: phase 2 notes it in the manifest
            # The merge base is the ledger tree the target was last in step with: always in the store.
            base_tree = entry.get("tree") if entry is not None else None
            self._merge(p, key, self._ledger_files(bytes.fromhex(base_tree)) if base_tree else None, l_files, t,
                        found, deletions)  # fmt: skip
        if found or deletions:
            pausepoint("sync.record")  # tests race a brain write here: it must wait for the lock, then survive
            self._commit(p, found, deletions, expect={f.key: head.get(f.key) for f in found}
                         | {k: head.get(k) for k in deletions})  # fmt: skip

    def _merge(self, p: Pass, key: str, base: gs.FileMap | None, ours: gs.FileMap | None, theirs: gs.FileMap | None,
               found: list[Found], deletions: list[str]) -> None:  # fmt: skip
        """Both sides changed ``key`` since the last sync: merge them, or keep both as a conflict."""
        head = self.brain.head()
        lt = head.skills.get(key)
        if base is None or ours is None or theirs is None:
            self._conflict(p, key, theirs, lt, ["(whole skill)"] if base is not None or theirs is None else
                           sorted(set(ours or {}) | set(theirs or {})))  # fmt: skip
            return
        t_data = p.fs.read(p.dirs[key])
        if state_of(t_data) != theirs:
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
        found.append(self._found(p, key, result.files, state=theirs, note="merged with the ledger's changes"))

    def _conflict(self, p: Pass, key: str, theirs: gs.FileMap | None, lt: bytes | None, files: list[str]) -> None:
        p.manifest.dirty = True
        p.manifest.conflicts[key] = {
            "target_state": digest(theirs), "ledger_tree": lt.hex() if lt else None, "files": files,
            "since": p.conflict_since.get(key) or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "hint": f"ledger resolve {key} --take ledger|{p.target.name} (or ledger sync --take ledger {key}); "
                    "both copies stay until then",
        }  # fmt: skip

    def _found(self, p: Pass, key: str, files: dict[str, tuple[bytes, bool]], *, state: gs.FileMap,
               note: str = "") -> Found:  # fmt: skip
        """A skill to record; ``state`` is the target's own, which the record brings the ledger in step with."""
        p.recording[key] = {"state": hexmap(state), "norm": self._norm(files)}
        rel = p.dirs[key]
        category = rel.rpartition("/")[0] or None if p.target.layout == "hermes" else None
        found = Found(key, key, f"{p.target.path}/{rel}", dict(files), category=category)
        if note:
            found.notes.append(note)
        p.may_replace.add(key)
        return found

    def _norm(self, files: Mapping[str, tuple[bytes, bool]]) -> str | None:
        """A digest of a skill's content with the ledger's version value set aside."""
        def one(rel: str, data: bytes) -> bytes:
            if rel == SKILL_MD:
                with contextlib.suppress(LedgerError, UnicodeDecodeError):
                    return self.brain.versions.doc(self.brain.head(), data.decode()).with_counter(1).encode()
            return data

        return digest({r: (gs.MODE_EXEC if x else gs.MODE_FILE, gs.blob_id(one(r, d))) for r, (d, x) in files.items()})

    def _commit(self, p: Pass, found: list[Found], deletions: list[str], expect: Mapping[str, bytes | None]) -> None:
        # Durable first: if this process is killed after the snapshot lands and before the manifest
        # is saved, the next pass still knows which target state the ledger is now in step with.
        self.settler.journal(p, {f"@record/{key}": rec for key, rec in p.recording.items()})
        coll = Collection(p.target.layout if p.target.layout == "hermes" else "agentskills", found)
        evidence = p.target.path if len(p.target.path) <= 200 else "…" + p.target.path[-199:]
        with self.brain.acting(p.target.actor, runtime=p.target.runtime, target=evidence):
            result = self.brain.importer.import_collection(coll, operation="sync", deletions=deletions, expect=expect,
                                                           note=f"recorded from target {p.target.name}")  # fmt: skip
        for row in result["skills"]:
            if row["status"] == "refused":
                p.may_replace.discard(row["skill"])
                p.report["left_alone"].append({"dir": p.dirs.get(row["skill"], row["skill"]),
                                               "reason": row["reason"]})  # fmt: skip
            elif row["status"] != "unchanged":
                p.recorded.add(row["skill"])
                p.report["recorded"].append({"skill": row["skill"], "version": row["version"],
                                             "action": row["status"]})  # fmt: skip
        for key in deletions:
            p.manifest.dirty = True
            p.manifest.skills.pop(key, None)

    # ------------------------------------------------------------------ phase 2: project

    def _project(self, p: Pass, committed: bytes | None) -> None:
        m, source = p.manifest, self._source(committed, p)
        index = self._category_index() if p.target.layout == "hermes" else {}
        steps: dict[str, dict[str, Any]] = {}
        for key in sorted({k for k in source if p.target.includes(k)} | set(m.skills)):
            if key in m.conflicts or (key in p.dirs and key not in p.state):
                continue  # in conflict, or unreadable (a link inside): never replaced
            lt, entry = source.get(key), m.skills.get(key)
            t = p.state[key][0] if key in p.state else None
            may = key in p.may_replace or (entry is not None and t == m.files(key))
            if entry is not None and lt is not None and entry.get("tree") == lt.hex() and t == m.files(key):
                if key in p.state and p.state[key][1] != m.stats.get(key):
                    m.stats_dirty = True
                    m.stats[key] = p.state[key][1]  # re-hashed this pass: keep the fresher stat entries
                continue
            if lt is None:
                if entry is not None and t is not None and may:
                    steps[p.fs.new_name()] = {"key": key, "dir": p.dirs[key], "old": hexmap(t), "new": None,
                                              "tree": None}  # fmt: skip
                elif entry is not None and t is None:
                    p.manifest.dirty = True
                    m.skills.pop(key)
                continue
            l_files = self.brain.snapshots.files(lt)
            rel = p.dirs.get(key) or (f"{index[key]}/{key}" if key in index else key)
            if t == l_files:
                p.manifest.dirty = True
                m.skills[key] = {"dir": rel, "tree": lt.hex(), "files": hexmap(t)}
                m.stats[key], m.stats_dirty = p.state[key][1], True
            elif t is None or may:  # else an edit not recorded (refused, or unmanaged): left as it is
                steps[p.fs.new_name()] = {"key": key, "dir": rel, "old": hexmap(t) if t is not None else None,
                                          "new": hexmap(l_files), "tree": lt.hex(),
                                          **({"keep": True} if key in p.keep_displaced else {})}  # fmt: skip
        if not steps:
            return
        self.settler.journal(p, steps)  # one durable write names every step before any is taken
        order = list(steps.items())
        for i in range(0, len(order), 128):  # blobs read 128 skills at a time, in one pipelined request
            chunk = order[i : i + 128]
            shas = sorted({bytes.fromhex(b) for _, info in chunk for _, b in (info["new"] or {}).values()})
            blobs = dict(zip(shas, self.brain.store.read_blobs(shas), strict=True))
            for staged, info in chunk:
                self._step(p, staged, info, blobs)

    def _category_index(self) -> dict[str, str]:
        cats = self.brain.snapshots.categories_tree(self.brain.head())
        if not cats:
            return {}
        files = th.files_of(self.brain.store, cats)
        if CATEGORY_INDEX not in files:
            return {}
        return json.loads(self.brain.store.read(files[CATEGORY_INDEX][1], b"blob"))["skills"]

    def _step(self, p: Pass, staged: str, info: dict[str, Any], blobs: Mapping[bytes, bytes]) -> None:
        """Write one skill whole and rename it into place, or take one out; then settle what moved."""
        key, rel = info["key"], info["dir"]
        stats: dict[str, list] = {}
        if info["new"] is None:
            p.fs.take_out(rel, staged)
        else:
            data = {path: (blobs[blob], mode == gs.MODE_EXEC) for path, (mode, blob) in binmap(info["new"]).items()}
            if info["old"] is not None:
                with contextlib.suppress(OSError, LedgerError):  # an editor's swap file goes across, never deleted
                    data = {**p.fs.read(rel, ignored=True), **data}
            stats = p.fs.stage(data, staged)
            if info["old"] is None:
                if p.fs.place_new(staged, rel):  # renamed whole, replacing nothing: done, nothing to settle
                    p.manifest.skills[key], p.manifest.dirty = {"dir": rel, "tree": info["tree"],
                                                                "files": info["new"]}, True  # fmt: skip
                    p.manifest.stats[key], p.manifest.stats_dirty = stats, True
                    p.report["projected"].append(key)
                    return
                p.changed = True  # a skill appeared there meanwhile: the next pass reads it
            else:
                pausepoint("sync.exchange")  # tests edit the target here: the edit must survive
                p.fs.exchange(staged, rel)
                crashpoint("sync.exchanged")
        outcome = self.settler.settle(p, staged, info)
        if outcome == "done" and info["new"] is not None:
            p.manifest.dirty = True
            p.manifest.stats[key], p.manifest.stats_dirty = stats, True
            p.report["projected"].append(key)
        elif outcome == "done":
            p.report["removed"].append(key)
        elif key in p.recorded and info["old"] is not None and info["new"] is not None:
            # Edited again meanwhile: the base is the state just recorded, which the ledger now holds.
            p.manifest.dirty = True
            p.manifest.skills[key] = {"dir": rel, "tree": info["tree"], "files": info["old"]}


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
