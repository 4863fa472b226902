"""The one write path of a brain: objects, checks, journal, working tree, branch.

A mutation builds its git objects first, then checks every path and every file it will
touch on disk, then writes a journal, materialises the working tree through
:mod:`ledger.write.writepath`, moves ``main`` by compare-and-swap and drops the journal.  A crash
before the journal leaves the old state; after it, the next writer rolls forward, unless
a file changed since, which it refuses to overwrite (``ledger recover``); that roll-forward
is :mod:`ledger.write.journal`.

Over 400 lines: the pipeline of :meth:`Writer.apply` (trees, records, the signed commit,
the journal, the working tree, the branch) reads as one sequence, and the crash points the
kill harness aims at sit along it.
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ledger._faults import crashpoint
from ledger.bundle.merkle import (
    KIND_EXEC,
    Digest,
    DirNode,
    file_digest,
    format_root,
    iter_files,
)
from ledger.bundle.skill import (
    SKILL_MD,
    SkillDoc,
    check_bundle_path,
    check_name,
    check_support_path,
)
from ledger.errors import (
    SkillError,
    SkillExistsError,
    SkillNotFoundError,
    StoreError,
    SupplyError,
    TreeError,
)
from ledger.signatures.trust import KeyChange, Trust
from ledger.store import gitstore as gs
from ledger.store import packing, skilltree
from ledger.store.supply import WITHHELD, Supply
from ledger.write import writepath as wp
from ledger.write.head import KEEP, Head, head_evidence, head_supply, next_supply, tree_entry
from ledger.write.joins import Joins
from ledger.write.journal import JOURNAL, Journal, write_json
from ledger.write.lock import WriterLock
from ledger.write.records import NoChangeError, Receipt
from ledger.write.sealing import Sealer
from ledger.write.snapshots import Snapshots
from ledger.write.trees import SkillTrees
from ledger.write.versioning import Versions

__all__ = ["Writer", "check_support_size"]


def _file_changes(old: gs.FileMap | None, new: gs.FileMap | None) -> dict[str, str]:
    """``rel → added|deleted|modified`` between two versions of a skill's files."""
    a, b = old or {}, new or {}
    return {
        rel: "added" if rel not in a else "deleted" if rel not in b else "modified"
        for rel in sorted(set(a) | set(b))
        if a.get(rel) != b.get(rel)
    }


class Writer:
    """The one write path of a brain, under its writer lock: a brain *has* one (``brain._writer``).

    Every mutation ends in :meth:`apply`; the journal it writes is rolled forward by
    :meth:`settle` when the lock is next taken, or by :meth:`recover`.
    """

    def __init__(
        self,
        root: Path,
        control: Path,
        store: gs.GitStore,
        snapshots: Snapshots,
        lock: WriterLock,
        *,
        sealer: Sealer,
        versions: Versions,
        limits: dict[str, int],
        gc: tuple[int, int],
    ) -> None:
        self.root, self.control, self.skills_dir = root, control, root / "skills"
        self.store, self.snapshots, self.lock, self.cache = store, snapshots, lock, snapshots.cache
        self.sealer, self.versions, self.limits = sealer, versions, limits
        self.gc_every, self.gc_bytes = gc
        self.attribution = gs.attribution("user")  # recorded in every snapshot's trailers (Brain.acting)
        self.allow_invalid = False  # record what a command authors even if lint calls it invalid
        self.pending_recovery: StoreError | None = None  # a journal that could not be rolled forward
        self.base: bytes | None = None  # the head a running mutation read under the lock
        self.journal = Journal(root, control, store, snapshots)  # the roll-forward of an interrupted write
        self.joins = Joins(self)  # the commits with other parents than the head: a merge's, snapshot 0
        self.trees = SkillTrees(store, self.cache)  # a skill's blobs and trees, each digest from its bytes
        self._gc_mark = 0

    def bump(
        self,
        operation: str,
        name: str,
        files: gs.FileMap,
        old: SkillDoc,
        new: SkillDoc,
        writes: Mapping[str, tuple[bytes, bool] | None],
        *,
        note: str,
    ) -> Receipt:
        changed = new.with_counter(old.version) != old.text
        for path, spec in writes.items():
            if spec is None:
                changed = changed or path in files
            else:
                changed = changed or files.get(path) != (gs.MODE_EXEC if spec[1] else gs.MODE_FILE, gs.blob_id(spec[0]))
        if not changed:
            raise NoChangeError(f"{operation} leaves skill {name!r} unchanged")
        if operation != "revert":  # a revert restores what was recorded; it authors nothing
            self.check_authored(name, old.text, new.with_counter(old.version + 1))
        payload: dict[str, tuple[bytes, bool] | None] = dict(writes)
        payload[SKILL_MD] = (new.with_counter(old.version + 1).encode(), False)
        return self.write_skill(operation, name, payload, base=files, note=note, version=old.version + 1)

    def check_authored(self, name: str, old: str | None, new: str) -> None:
        """What the ledger writes from a command passes the agentskills spec, or breaks no rule the
        skill kept before (ADR 19); ``allow_invalid`` records it anyway.  Import and snapshot record
        as they are and never come here."""
        if self.allow_invalid or (old is not None and new == old):
            return
        from ledger.bundle.lint import introduced_errors

        errors = introduced_errors(name, old, new)
        if errors:
            raise SkillError(
                f"the result is not a valid skill ({name}/SKILL.md): " + "; ".join(errors),
                hint="fix it, or pass --allow-invalid to record it anyway (see 'ledger skill lint')",
            )

    def write_skill(
        self,
        operation: str,
        name: str,
        writes: Mapping[str, tuple[bytes, bool] | None],
        *,
        base: gs.FileMap | None = None,
        note: str = "",
        version: int = 1,
        categories: bytes | object | None = KEEP,
    ) -> Receipt:
        with self.lock.locked():
            if base is not None:
                self.require_clean(name)
                if self.snapshots.head().skills.get(name) is None:
                    raise SkillNotFoundError(f"skill {name!r} was deleted concurrently")
            elif name in self.snapshots.head().skills:
                raise SkillExistsError(f"skill {name!r} already exists")
            elif self.on_disk(name):
                raise SkillExistsError(
                    f"skills/{name} exists in the working tree but not in a snapshot",
                    hint="run 'ledger status' and 'ledger snapshot' to record it first",
                )
            for rel in writes:
                check_bundle_path(name, rel)  # before any object is written
            files = self.trees.blobs(writes, dict(base or {}), self.snapshots.held)  # materialize() needs no read back
            action = "create" if base is None else "update"
            return self.apply(operation, {name: files}, [gs.Change(action, name, version)], note, categories=categories)

    def apply(
        self,
        operation: str,
        updates: Mapping[str, gs.FileMap | None],
        changes: list[gs.Change],
        note: str,
        disk: Mapping[str, gs.FileMap] | None = None,
        categories: bytes | object | None = KEEP,
        key_changes: Sequence[KeyChange] = (),
        supply: Supply | None = None,
        evidence: bytes | object | None = KEEP,
    ) -> Receipt:
        """The one write path: objects → checks → journal → working tree → branch → done.

        ``disk`` is what a snapshot read from the working tree, where that differs from
        the last snapshot (it re-renders SKILL.md with the new version).  ``supply`` is the
        supply record after this write (:mod:`ledger.supply`); by default the head's is kept,
        less the entries of the skills this write deletes.  ``evidence`` is the ``evidence/`` tree
        after it (:mod:`ledger.store.evidence`); by default the head's is kept.
        """
        with self.lock.locked():
            head = self.snapshots.head()
            try:
                cats = self.snapshots.categories_tree(head) if categories is KEEP else categories
                receipt = self._apply_locked(
                    head, operation, updates, changes, note, disk or {}, cats, key_changes, supply, evidence
                )
            except OSError as exc:  # a file changed or vanished beside the write: a refusal, not a traceback
                self.snapshots.current = None
                journaled = (self.control / JOURNAL).exists()
                raise StoreError(
                    f"{exc.strerror or exc} ({exc.filename or 'skills/'}): "
                    "the working tree changed while this write ran",
                    hint="the next ledger command completes it from the journal; run 'ledger status'"
                    if journaled
                    else "nothing was written; run 'ledger status', then the command again",
                ) from exc
            except BaseException:
                self.snapshots.current = None  # the in-memory head may be half-updated; reload it from git
                raise
            finally:
                self.snapshots.held.clear()
            objects = self.store.objects  # what this process wrote: loose bytes, and packs not yet deltified
            written, self._gc_mark = objects.loose_written - self._gc_mark, objects.loose_written
            bulk, objects.bulk_written = objects.bulk_written, 0
            packing.note_write(self.store.git_dir, self.control, self.gc_every, written, self.gc_bytes, bulk)
            return receipt

    def _withheld(self, head: Head, operation: str, changes: list[gs.Change]) -> set[str]:
        """The deleted skills whose supply entry this write keeps (docs/lineage/supply.md §1 rule 5, v1.7).

        A withheld entry (``quarantined`` or ``revoked``) stays when its skill is deleted, whoever
        deletes it; and a skill whose entry the record holds comes back live only by ``install``:
        anything else is refused here, before an object is written."""
        if operation in ("install", "merge"):
            return set()
        entries = head_supply(self.store, head)[1].skills
        for c in changes:
            if c.action == "create" and c.skill in entries:
                entry = entries[c.skill]
                raise SupplyError(
                    f"skill {c.skill!r} was installed from elsewhere and deleted, and its supply entry "
                    f"({entry.state}) is still in the record: it comes back only by 'ledger install', "
                    f"not by {operation!r} (see docs/lineage.md, 'The supply record', rule 5)",
                    hint=f"run 'ledger install {entry.source['url']} {c.skill}': an install checks it again against "
                    "its pin, the scan and the revocations",
                )
        return {
            c.skill
            for c in changes
            if c.action == "delete" and c.skill in entries and entries[c.skill].state in WITHHELD
        }

    def _apply_locked(
        self,
        head: Head,
        operation: str,
        updates: Mapping[str, gs.FileMap | None],
        changes: list[gs.Change],
        note: str,
        disk: Mapping[str, gs.FileMap],
        categories: bytes | None,
        key_changes: Sequence[KeyChange] = (),
        supply: Supply | None = None,
        evidence: bytes | object | None = KEEP,
    ) -> Receipt:
        if self.base is not None and head.commit != self.base:
            raise StoreError(
                f"the branch moved from {self.base.hex()[:12]} to {head.commit.hex()[:12]} while this write ran "
                "(a git command outside the ledger?); nothing was written",
                hint="run the command again",
            )
        kept = self._withheld(head, operation, changes)  # before any object is written
        # Git orders tree entries by name + "/" for directories; all of skills/ are directories.
        same_names = head.fanout is None and all(
            files is not None and name in head.skills for name, files in updates.items()
        )
        old_trees = {name: head.skills.get(name) for name in updates}
        # Updated in place, like the bundle below: O(changes), not O(skills) (see Head).
        skills, entries = head.skills, head.entries
        digests: dict[str, bytes | None] = {}
        for name, files in updates.items():
            if files is None:
                skills.pop(name, None)
                entries.pop(name + "/", None)
                digests[name] = None
            else:
                tree, digests[name] = self.trees.write(files, name)
                skills[name] = tree
                entries[name + "/"] = tree_entry(name, tree)
        bundle = head.bundle  # updated in place: a failure below drops the cached head (see _apply)
        bundle.update(digests)
        keys: list[str] | None = None
        ordered: list[bytes] | None = None
        fanout, layout = None, None
        if len(skills) > skilltree.FANOUT_AT:  # fanned out: rewrite the touched buckets and the top
            fanout = head.fanout or skilltree.Fanout(entries)  # crossing the threshold: every bucket, once
            skills_tree = fanout.write(self.store, entries, updates if head.fanout else ())
            layout = self.store.write_blob(skilltree.FANOUT)
        else:
            if same_names:
                keys, ordered = head.keys, head.ordered
                raw, offsets = head.serialised()
                for name in updates:
                    i = bisect.bisect_left(keys, (name + "/").encode(), key=str.encode)
                    entry = ordered[i] = entries[name + "/"]
                    if len(entry) != offsets[i + 1] - offsets[i]:
                        raise StoreError(f"internal: the skills/ tree entry of {name} changed length")
                    raw[offsets[i] : offsets[i + 1]] = entry
            else:
                keys = sorted(entries, key=str.encode)
                ordered = [entries[k] for k in keys]
                raw = bytearray(b"".join(ordered))
            skills_tree = self.store.write_raw_tree(raw) if keys else None
            if skills_tree is not None:
                self.cache.put(skills_tree, bundle.root)  # flat: the git tree mirrors the bundle
        root = bundle.root
        message = gs.format_message(
            operation,
            root,
            head.snap.root,
            changes,
            note,
            attribution=self.attribution,
            keys=[k.trailer() for k in key_changes],
        )
        retired = self._next_retired(head, changes)
        versions = self.versions.next_record(head, changes)  # None: versions live in SKILL.md
        trust = new_trust = self._trust(head)
        if key_changes:  # the set after them, and its record (refused here if a change breaks a rule)
            after = trust[1].apply(key_changes)
            new_trust = (self.store.write_trust(after), after)
        deleted = [c.skill for c in changes if c.action == "delete" and c.skill not in kept]
        new_supply = next_supply(self.store, head, deleted, supply)
        new_evidence = head_evidence(self.store, head) if evidence is KEEP else evidence
        assert new_evidence is None or isinstance(new_evidence, bytes)
        root_tree = self.store.root_tree(
            skills_tree,
            categories,
            retired[0],
            layout,
            new_trust[0],
            versions[0] if versions else None,
            new_supply[0],
            new_evidence,
        )
        sealed = self.sealer.seal(
            message,
            trust=trust[1],
            operation=operation,
            key_changes=key_changes,
            root=root,
            parent_root=head.snap.root,
            parent=head.commit,
            tree=root_tree,
            actor=self.attribution["actor"],
        )
        message = sealed.message
        commit = self.store.write_commit(root_tree, [head.commit], message, sealed.git_signer())
        self.store.publish()  # a bulk write's pack: every object exists before the journal names it
        with wp.WorkTree(self.root, self.control) as tree:
            olds = {n: self.snapshots.files(t) if t is not None else None for n, t in old_trees.items()}
            seen: dict[str, gs.FileMap] = {}  # what each check found, so each skill is scanned once
            for name, files in updates.items():
                for rel in files or ():
                    check_bundle_path(name, rel)
                problems = tree.check(name, [disk[name] if name in disk else olds[name], files], seen)
                if problems:
                    raise StoreError(
                        f"skills/{name} on disk is neither its last snapshot nor this write:"
                        + "".join(f"\n  {p}" for p in problems[:20]),
                        hint="run 'ledger status'; record hand edits with 'ledger snapshot' or move them away",
                    )
            crashpoint("after-objects")
            journal = {
                "commit": commit.hex(),
                "expected": head.commit.hex(),
                "skills": sorted(updates),
                "disk": {n: {r: [m, sha.hex()] for r, (m, sha) in fm.items()} for n, fm in disk.items()},
            }
            write_json(self.control / JOURNAL, journal)
            crashpoint("after-journal")
            self.snapshots.current = None
            for name in sorted(updates):
                tree.materialize(name, updates[name], self.snapshots.read_blob, seen.get(name))
            crashpoint("after-worktree")
            self.store.move_head(commit, head.commit)
            crashpoint("after-ref")
            (self.control / JOURNAL).unlink()
        snap = gs.Snapshot.made(commit, root_tree, operation, root, head.snap.root, changes, message, head.commit)
        self.snapshots.current = Head(commit, snap, skills, bundle, entries, keys, ordered, fanout)
        self.snapshots.current.retired = retired
        self.snapshots.current.versions = versions or (None, {})
        self.snapshots.current.categories = categories
        self.snapshots.current.trust = new_trust
        self.snapshots.current.supply = new_supply
        self.snapshots.current.evidence = new_evidence
        if same_names:
            self.snapshots.current.raw, self.snapshots.current.offsets = raw, head.offsets
        single = changes[0] if len(changes) == 1 else None
        touched = [
            {
                "skill": c.skill,
                "action": c.action,
                "version": c.version,
                "files": _file_changes(olds.get(c.skill), updates.get(c.skill)),
            }
            for c in changes
        ]
        return Receipt(
            skill=single.skill if single else None,
            version=single.version if single else None,
            root=format_root(root),
            commit=commit.hex(),
            operation=operation,
            changes=touched,
            signer=sealed.signer,
            keys=[k.trailer() for k in key_changes],
        )

    def _retired(self, head: Head) -> dict[str, int]:
        """Each deleted name's last version (the snapshot's ``retired`` record)."""
        if head.retired is None:
            head.retired = self.store.retired(bytes.fromhex(head.snap.tree)) if head.snap.tree else (None, {})
        return head.retired[1]

    def first_version(self, name: str, head: Head | None = None) -> int:
        """The lowest version a new skill ``name`` may take: one past any it ever had, so versions never repeat.

        Bulk paths pass the ``head`` they hold under the lock (each :meth:`head` call reads the ref).
        """
        return self._retired(head or self.snapshots.head()).get(name, 0) + 1

    def _next_retired(self, head: Head, changes: list[gs.Change]) -> tuple[bytes | None, dict[str, int]]:
        retired = dict(self._retired(head))
        for change in changes:
            if change.action == "delete":
                retired[change.skill] = max(retired.get(change.skill, 0), change.version)
            elif change.action == "create" and change.version <= retired.get(change.skill, 0):
                raise SkillError(
                    f"{change.skill} v{change.version} would repeat a version the deleted skill had",
                    hint=f"a new {change.skill!r} starts at v{retired[change.skill] + 1}",
                )
        if retired == self._retired(head):
            assert head.retired is not None
            return head.retired
        return self.store.write_blob(gs.format_record(retired)), retired

    def supply(self, head: Head | None = None) -> Supply:
        """The head's supply record (:mod:`ledger.store.supply`), read once per head."""
        return head_supply(self.store, head or self.snapshots.head())[1]

    def _trust(self, head: Head) -> tuple[bytes | None, Trust]:
        """The head's trust set (its ``keys`` record), read once per head."""
        if head.trust is None:
            head.trust = self.store.trust_at(head.snap.tree)
        return head.trust

    @contextlib.contextmanager
    def acting(self, actor: str = "user", **evidence: object) -> Iterator[None]:
        """Attribute the snapshots written inside the block (see :meth:`ledger.brain.Brain.acting`)."""
        previous = self.attribution
        self.attribution = gs.attribution(actor, **evidence)
        try:
            yield
        finally:
            self.attribution = previous

    def settle(self, recover: bool) -> None:
        """Run when the writer lock is taken: clear a killed writer's leftovers, roll its journal forward."""
        self.journal.clear_leftovers()
        if recover:
            self.journal.roll_forward()

    def on_disk(self, name: str) -> bool:
        """Whether anything, a dangling link included, sits at ``skills/<name>``."""
        with wp.WorkTree(self.root, self.control) as tree:
            return tree.exists(name)

    def require_unchanged(self, names: list[str], refused: str, retry: str) -> None:
        """Refuse (saying ``refused``, then ``retry``) if any of ``names`` has working-tree changes not in
        a snapshot."""
        head = self.snapshots.head()
        with wp.WorkTree(self.root, self.control) as tree:
            for name in names:
                sha = head.skills.get(name)
                problems = tree.check(name, [self.snapshots.files(sha) if sha else None])
                if problems:
                    raise StoreError(
                        f"skills/{name} has changes that are not in a snapshot; {refused}:"
                        + "".join(f"\n  {p}" for p in problems[:10]),
                        hint=f"move them away (or record them, and keep this lineage instead), then {retry}",
                    )

    def recover(self, *, move_aside: bool = False) -> dict[str, Any]:
        """Finish (or report) an interrupted write: the one command that settles a pending journal."""
        with self.lock.locked(recover=False):
            pending = self.journal.read()
            if pending is None:
                self.pending_recovery = None
                return {"pending": False, "moved": []}
            moved = self.journal.roll_forward(move_aside=move_aside)
            self.pending_recovery = None
            return {"pending": True, "commit": pending[0].hex(), "skills": pending[2], "moved": moved}

    def require_clean(self, name: str) -> None:
        head = self.snapshots.head()
        want = self.snapshots.files(head.skills[name]) if name in head.skills else {}
        with wp.WorkTree(self.root, self.control) as tree:
            have, problems = tree.scan(name)
        if problems:
            raise TreeError(problems[0], hint="replace it with a regular file or directory, then 'ledger snapshot'")
        if have != want:
            raise StoreError(
                f"skills/{name} has changes that are not in a snapshot",
                hint="run 'ledger status' to see them and 'ledger snapshot' to record them",
            )

    def read_disk_skill(self, tree: wp.WorkTree, name: str, node: Digest | DirNode) -> dict[str, tuple[bytes, bool]]:
        """Validate a skill directory from the working tree and return its files."""
        if not isinstance(node, DirNode):
            raise SkillError(f"skills/{name} is a file; every entry in skills/ must be a skill directory")
        check_name(name)
        out: dict[str, tuple[bytes, bool]] = {}
        for rel, leaf in iter_files(node):
            if rel != SKILL_MD:
                check_support_path(rel)
            check_bundle_path(name, rel)
            limit = self.limits["file"] if rel != SKILL_MD else 4 * self.limits["skill_md"]
            data = tree.read((name, *rel.split("/")), limit)
            if data is None or file_digest(data) != leaf.digest:
                raise StoreError(f"skills/{name}/{rel} changed while it was being read; try again")
            if rel != SKILL_MD:
                check_support_size(rel, data, self.limits["file"])
            out[rel] = (data, leaf.kind == KIND_EXEC)
        if SKILL_MD not in out:
            raise SkillError(f"skills/{name} has no {SKILL_MD}")
        try:
            out[SKILL_MD][0].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillError(f"skills/{name}/{SKILL_MD} is not valid UTF-8") from exc
        return out


def check_support_size(rel: str, data: bytes, limit: int) -> None:
    if len(data) > limit:
        raise SkillError(
            f"{rel} is {len(data)} bytes; this brain's limit for a file is {limit} bytes",
            hint="raise limits.file in .ledger/config.json",
        )
