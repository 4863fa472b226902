"""Phase 1 of a ``ledger sync`` pass: what changed in a target, recorded back into the brain.

Each skill is compared three ways: the target (``t``), the manifest of the last sync
(``base``) and the ledger (``l``).  A skill only the target changed, or one created there, is
recorded as a new version through the importer, attributed to the target (actor,
``Ledger-Runtime``, ``Ledger-Target``).  A skill both sides changed is merged
(:mod:`ledger.sync.filemerge`); a conflict writes nothing on either side and stays until
someone chooses a side (``ledger skill resolve``, ``ledger sync --take``).

Everything a recording decides on is read under the writer lock, and the snapshot is written
in the same hold, with a compare-and-swap on the head it read (docs/layouts.md, "Projection").
Nothing is recorded of a skill the supply record withholds (quarantined or revoked): not an
edit, not a deletion (:mod:`ledger.sync.reading` leaves its folders alone).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ledger._faults import pausepoint
from ledger.bundle.collection import Collection, Found
from ledger.bundle.skill import SKILL_MD
from ledger.errors import LedgerError
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.gitstore import blob_id
from ledger.store.skilltree import skills_of
from ledger.sync import categoryfiles
from ledger.sync.filemerge import merge
from ledger.sync.settling import Pass, digest, hexmap, state_of
from ledger.write.importer import CATEGORY_INDEX

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["Recorder"]

_LOOKBACK = 100_000  # snapshots walked back from the head to find a killed sync's record


class Recorder:
    """Records a target's changes into one brain; ``journal`` makes a record durable before it lands."""

    def __init__(self, brain: Brain, journal: Callable[[Pass, dict[str, Any]], None]) -> None:
        self.brain, self.journal = brain, journal
        self._cats: tuple[bytes, dict[str, bytes]] | None = None  # the last categories/ tree read, and its files
        self._paths: dict[bytes, frozenset[str]] = {}  # a skill tree's file paths (ignoring.Held asks them)

    def files(self, sha: bytes | None) -> gs.FileMap | None:
        return self.brain.files(sha) if sha is not None else None

    def paths(self, key: str) -> frozenset[str] | None:
        """The file paths of the head's version of skill ``key`` (None if the head holds no such skill)."""
        tree = self.brain.head().skills.get(key)
        if tree is None:
            return None
        if tree not in self._paths:
            self._paths[tree] = frozenset(self.brain.files(tree))
        return self._paths[tree]

    def data(self, files: gs.FileMap) -> dict[str, tuple[bytes, bool]]:
        read = self.brain.read_blob
        return {rel: (read(blob), mode == gs.MODE_EXEC) for rel, (mode, blob) in files.items()}

    def record(self, p: Pass, take: tuple[str, str] | None) -> None:
        """Everything the recording decides on (the head, the base, the last projection) is read
        under the writer lock, and written in the same hold: a brain write can land only before
        (then this pass merges with it three ways) or after (then it builds on what was recorded)."""
        if take is None and self._quiet(p):  # nothing to record: a no-op sync never waits on writers
            p.category_plan = categoryfiles.plan(p, self._category_files() if p.target.layout == "hermes" else {}, None)
            return
        with self.brain.writing():
            self._record_locked(p, take)

    @staticmethod
    def _quiet(p: Pass) -> bool:
        """Whether the target holds exactly what the manifest says it was last in step with (every skill,
        folder and category file) and nothing is in conflict: then no decision depends on the head."""
        m = p.manifest
        if p.dupes or m.conflicts:
            return False
        for key in set(p.state) | set(m.skills):
            if not p.target.includes(key) or (key in p.dirs and key not in p.state):
                continue
            entry = m.skills.get(key)
            if entry is None or key not in p.state or p.state[key][0] != m.files(key) or entry["dir"] != p.dirs[key]:
                return False
        if p.target.layout == "hermes":
            found = {rel: blob_id(data).hex() for rel, data in p.categories.items()}
            if found != {rel: b for rel, b in m.categories.items() if b is not None}:
                return False
        return True

    def _record_locked(self, p: Pass, take: tuple[str, str] | None) -> None:
        m, head = p.manifest, self.brain.head().skills
        held = set(p.withheld) | self.brain.supply().withheld()  # as the pass began, and as it is now
        found: list[Found] = []
        deletions: list[str] = []
        self._duplicates(p)
        moves = self._moves(p)
        p.category_plan = categoryfiles.plan(p, self._category_files() if p.target.layout == "hermes" else {}, take)
        for key in sorted(set(p.state) | set(m.skills)):
            if not p.target.includes(key) or (key in p.dirs and key not in p.state) or key in held:
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
            l_files = self.files(lt)
            if t == l_files:
                continue  # both sides made the same change: phase 2 notes it in the manifest
            # The merge base is the ledger tree the target was last in step with: always in the store.
            base_tree = entry.get("tree") if entry is not None else None
            self._merge(
                p, key, self.files(bytes.fromhex(base_tree)) if base_tree else None, l_files, t, found, deletions
            )
        recorded = p.category_plan.record
        if found or deletions or moves or recorded:
            pausepoint("sync.record")  # tests race a brain write here: it must wait for the lock, then survive
            coll = Collection(
                p.target.layout if p.target.layout == "hermes" else "agentskills",
                found,
                categories={r: d for r, d in recorded.items() if d is not None},
            )
            self._commit(
                p,
                coll,
                deletions,
                expect={f.key: head.get(f.key) for f in found} | {k: head.get(k) for k in deletions},
                moves=moves,
                removals=[r for r, d in recorded.items() if d is None],
            )
        for key, category in moves.items():  # the folder's new place is where the ledger now finds and writes it
            m.skills[key]["dir"], m.dirty = p.dirs[key], True
            if key not in {f.key for f in found}:
                p.report["recorded"].append(
                    {"skill": key, "version": None, "action": f"moved to {category or 'the top level'}"}
                )
        for rel, data in recorded.items():
            m.categories[rel], m.dirty = p.category_plan.in_step[rel], True
            p.report["recorded"].append(
                {
                    "skill": rel,
                    "version": None,
                    "action": "category file " + ("removed" if data is None else "recorded"),
                }
            )

    def _duplicates(self, p: Pass) -> None:
        """Two folders claiming one skill (the same name in two Hermes categories, or two names with
        one slug): a conflict, until all but one are gone; nothing is recorded or projected for it."""
        m = p.manifest
        for key, c in list(m.conflicts.items()):
            if c.get("kind") == "duplicate" and key not in p.dupes:
                m.conflicts.pop(key)
                m.dirty = True
        for key, dirs in p.dupes.items():
            if m.conflicts.get(key, {}).get("dirs") == dirs:
                continue
            m.dirty = True
            m.conflicts[key] = {
                "kind": "duplicate",
                "dirs": dirs,
                "files": dirs,
                "target_state": None,
                "ledger_tree": None,
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "hint": f"Hermes shows one of them and hides the rest: rename or remove all but one of "
                f"{', '.join(dirs)} in {p.target.path}",
            }

    def _moves(self, p: Pass) -> dict[str, str | None]:
        """Skills a Hermes home moved to another category folder (``mv skills/a/x skills/b/x``): each
        is recorded as a change of membership, never as a deletion and a creation."""
        if p.target.layout != "hermes":
            return {}
        out: dict[str, str | None] = {}
        for key, rel in p.dirs.items():
            entry = p.manifest.skills.get(key)
            if key in p.state and entry is not None and entry.get("dir") != rel and key not in p.manifest.conflicts:
                out[key] = rel.rpartition("/")[0] or None
        return out

    def _category_files(self) -> dict[str, bytes]:
        """The brain's Hermes category files (``categories/`` without its membership index), kept per tree id."""
        tree = self.brain.categories_tree(self.brain.head())
        if tree is None:
            return {}
        if self._cats is None or self._cats[0] != tree:
            files = th.files_of(self.brain.store, tree)
            self._cats = (
                tree,
                {rel: self.brain.read_blob(blob) for rel, (_, blob) in files.items() if rel != CATEGORY_INDEX},
            )
        return self._cats[1]

    def _merge(
        self,
        p: Pass,
        key: str,
        base: gs.FileMap | None,
        ours: gs.FileMap | None,
        theirs: gs.FileMap | None,
        found: list[Found],
        deletions: list[str],
    ) -> None:
        """Both sides changed ``key`` since the last sync: merge them, or keep both as a conflict."""
        head = self.brain.head()
        lt = head.skills.get(key)
        if base is None or ours is None or theirs is None:
            self._conflict(
                p,
                key,
                theirs,
                lt,
                ["(whole skill)"]
                if base is not None or theirs is None
                else sorted(set(ours or {}) | set(theirs or {})),
            )
            return
        t_data = p.fs.read(p.dirs[key])
        if state_of(t_data) != theirs:
            p.changed = True  # changed again while read: the next pass looks again
            return
        version = self.brain.committed(key)[1].version

        def counter(rel: str, data: bytes) -> bytes:
            if rel != SKILL_MD:
                return data
            with contextlib.suppress(LedgerError, UnicodeDecodeError):
                return self.brain.version_doc(head, data.decode()).with_counter(version).encode()
            return data

        result = merge(self.data(base), self.data(ours), t_data, normalize=counter)
        if not result.clean:
            self._conflict(p, key, theirs, lt, result.conflicts)
            return
        if result.files == {r: (counter(r, d), x) for r, (d, x) in self.data(ours).items()}:
            p.may_replace.add(key)  # the merge is the ledger's copy: phase 2 writes it over the target's
            return
        found.append(self._found(p, key, result.files, state=theirs, note="merged with the ledger's changes"))
        # The record holds more than the target did.  The base from now on is what both hold: the
        # target's state as recorded, kept as a tree of its own (the store never prunes, so it stays).
        blobs = {
            rel: (gs.MODE_EXEC if x else gs.MODE_FILE, self.brain.store.write_blob(d)) for rel, (d, x) in t_data.items()
        }
        with self.brain.writing() as w:  # held already (record): the tree is written in the same hold
            p.recording[key]["base_tree"] = w.write_tree(blobs, key)[0].hex()

    def _conflict(self, p: Pass, key: str, theirs: gs.FileMap | None, lt: bytes | None, files: list[str]) -> None:
        p.manifest.dirty = True
        p.manifest.conflicts[key] = {
            "target_state": digest(theirs),
            "ledger_tree": lt.hex() if lt else None,
            "files": files,
            "since": p.conflict_since.get(key) or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "hint": f"ledger resolve {key} --take ledger|{p.target.name} (or ledger sync --take ledger {key}); "
            "both copies stay until then",
        }

    def _found(
        self, p: Pass, key: str, files: dict[str, tuple[bytes, bool]], *, state: gs.FileMap, note: str = ""
    ) -> Found:
        """A skill to record; ``state`` is the target's own, which the record brings the ledger in step with."""
        p.recording[key] = {"state": hexmap(state), "norm": self.norm(files), **({"merged": True} if note else {})}
        if key in p.state and p.state[key][0] != state:
            p.state[key] = (state, {})  # read again since the scan: what phase 2 replaces is what was recorded
        rel = p.dirs[key]
        category = rel.rpartition("/")[0] or None if p.target.layout == "hermes" else None
        found = Found(key, key, f"{p.target.path}/{rel}", dict(files), category=category)
        if note:
            found.notes.append(note)
        p.may_replace.add(key)
        return found

    def landed(self, key: str, rec: Mapping[str, Any]) -> bytes | None:
        """The tree of ``key`` that a journaled record wrote, or None if the record never landed.

        The record is the snapshot right after the head it was made on (``on``: the writer lock was
        held from that head to its own), found on the head's first-parent line, so that a brain
        write landed since is never taken for the record (a killed or failed sync is settled against
        what its record wrote, never against a head that moved since)."""
        head = self.brain.head()
        if "on" not in rec:  # journaled by an older ledger: only the head can say
            lt = head.skills.get(key)
            return lt if lt is not None and self.norm(self.data(self.brain.files(lt))) == rec["norm"] else None
        store, on, commit, child = self.brain.store, bytes.fromhex(rec["on"]), head.commit, None
        for _ in range(_LOOKBACK):
            if commit == on:
                break
            parents = store.commit_info(commit)[1]
            if not parents:
                return None
            child, commit = commit, bytes.fromhex(parents[0])
        else:
            return None  # too far back, or not on this line: never landed, as far as anything can tell
        if child is None:
            return None  # the head is still the one it was made on
        tree = skills_of(store, store.commit_info(child)[0])[1].get(key)
        if tree is None or self.norm(self.data(self.brain.files(tree))) != rec["norm"]:
            return None
        return tree

    def norm(self, files: Mapping[str, tuple[bytes, bool]]) -> str | None:
        """A digest of a skill's content with the ledger's version value set aside."""

        def one(rel: str, data: bytes) -> bytes:
            if rel == SKILL_MD:
                with contextlib.suppress(LedgerError, UnicodeDecodeError):
                    return self.brain.version_doc(self.brain.head(), data.decode()).with_counter(1).encode()
            return data

        return digest({r: (gs.MODE_EXEC if x else gs.MODE_FILE, gs.blob_id(one(r, d))) for r, (d, x) in files.items()})

    def _commit(
        self,
        p: Pass,
        coll: Collection,
        deletions: list[str],
        expect: Mapping[str, bytes | None],
        moves: Mapping[str, str | None],
        removals: list[str],
    ) -> None:
        # Durable first: if this process is killed after the snapshot lands and before the manifest
        # is saved, the next pass still knows which target state the ledger is now in step with, and
        # (by the head it lands on, read under the lock) which snapshot is the record's own.
        on = self.brain.head().commit.hex()
        for rec in p.recording.values():
            rec["on"] = on
        self.journal(p, {f"@record/{key}": rec for key, rec in p.recording.items()})
        evidence = p.target.path if len(p.target.path) <= 200 else "…" + p.target.path[-199:]
        with self.brain.writing(p.target.actor, runtime=p.target.runtime, target=evidence) as w:
            result = w.import_collection(
                coll,
                operation="sync",
                deletions=deletions,
                expect=expect,
                moves=moves,
                category_removals=removals,
                note=f"recorded from target {p.target.name}",
            )
        for row in result["skills"]:
            if row["status"] == "refused":
                p.may_replace.discard(row["skill"])
                p.report["left_alone"].append({"dir": p.dirs.get(row["skill"], row["skill"]), "reason": row["reason"]})
            elif row["status"] != "unchanged":
                p.recorded.add(row["skill"])
                tree = self.brain.head().skills.get(row["skill"])  # still under the lock: this record's own tree
                if tree is not None and row["skill"] in p.recording:
                    p.recording[row["skill"]]["tree"] = tree.hex()
                p.report["recorded"].append({"skill": row["skill"], "version": row["version"], "action": row["status"]})
        for key in deletions:
            p.manifest.dirty = True
            p.manifest.skills.pop(key, None)
