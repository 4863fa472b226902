"""Joining two lineages that diverged, skill by skill, into one merge snapshot (docs/lineage.md §9).

Two machines that each record a change from the same snapshot hold two lineages. The
merge snapshot has the **remote's** head as its first parent and this brain's as its
second, so the first-parent history of the shared branch only ever grows: what the
chain anchored stays anchored (lineage.md §7).  Per skill, against the merge base:

- changed on one side only: that side's skill, at its own version;
- changed on both, identically: either;
- changed on both: each file merged three ways (:mod:`ledger.sync.filemerge`, ``git
  merge-file``); clean, it becomes one new version, after both sides' versions;
- a conflict keeps the first parent's skill; the second parent's stays in the lineage (it
  is a parent), and is recorded in the merge's note and in this brain's conflict record,
  to be settled by ``ledger skill resolve``;
- deleted on one side and edited on the other: the edit is kept;
- a version the first parent already used (a deleted name, or a concurrent write) is
  never reused: the skill is renumbered after both.

Categories (outside the bundle) are merged per file and per membership, the first
parent winning where both changed one.  A side that changed the trust set since the
base is refused: key changes travel by fast-forward (pull, then rotate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ledger.brain import Brain
from ledger.brain.writing import Writing
from ledger.bundle.merkle import RootIndex
from ledger.bundle.skill import SKILL_MD, counter_zeroed, parse_skill_md
from ledger.errors import LedgerError, StoreError
from ledger.remotes.reports import ResolveReport
from ledger.store import gitstore as gs
from ledger.store import skilltree
from ledger.store import supply as sp
from ledger.store import treehash as th
from ledger.store.evidence import append, entries_of, evidence_tree
from ledger.store.git import Git
from ledger.store.outcomes import outcome_id_of
from ledger.sync.filemerge import merge as merge_files
from ledger.write.head import tree_entry
from ledger.write.importer import CATEGORY_INDEX
from ledger.write.journal import write_json

__all__ = ["CONFLICTS", "Side", "conflicts", "describe", "merge_into", "resolve", "settle"]

CONFLICTS = "fleet/conflicts.json"  # under .ledger/: merge conflicts this brain has to settle


@dataclass
class Side:
    """One snapshot as a merge reads it: its skills, versions, records and categories."""

    commit: bytes
    snap: gs.Snapshot
    skills: dict[str, bytes]
    retired: dict[str, int]
    record: dict[str, int] | None  # the versions record (a brain counting in the store), else None
    keys: bytes | None
    categories: bytes | None
    store: gs.GitStore
    supply: bytes | None = None  # the supply record's blob id
    evidence: bytes | None = None  # the evidence/ tree id (ledger.store.evidence)
    _versions: dict[str, int] = field(default_factory=dict)

    @classmethod
    def read(cls, store: gs.GitStore, commit: bytes) -> Side:
        snap = store.snapshot(commit)
        top = bytes.fromhex(snap.tree)
        vsha, record = store.versions(top)
        return cls(
            commit,
            snap,
            skilltree.skills_of(store, top)[1],
            store.retired(top)[1],
            record if vsha is not None else None,
            store.trust_record(top)[0],
            store.categories_tree(top),
            store,
            store.supply_record(top)[0],
            evidence_tree(store, top),
        )

    def version(self, name: str) -> int:
        """The live version of ``name`` here (0 when it is not live)."""
        if name not in self.skills:
            return 0
        if self.record is not None:
            return self.record.get(name, 0)
        if name not in self._versions:
            files = th.files_of(self.store, self.skills[name])
            text = self.store.read(files[SKILL_MD][1], b"blob").decode("utf-8")
            self._versions[name] = parse_skill_md(text, limit=1 << 31).version
        return self._versions[name]

    def known(self, name: str) -> int:
        """The highest version ``name`` has had on this side: live or retired."""
        return max(self.version(name), self.retired.get(name, 0))


@dataclass
class _Plan:
    changes: list[gs.Change] = field(default_factory=list)
    trees: dict[str, bytes | None] = field(default_factory=dict)  # name → its skill tree in the merge (None: gone)
    conflicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)  # skills merged file by file


class _Planner:
    def __init__(self, brain: Brain, w: Writing, base: Side, ours: Side, theirs: Side) -> None:
        self.w, self.base, self.ours, self.theirs = w, base, ours, theirs
        self.store = brain.store
        self.plan = _Plan()

    def run(self) -> _Plan:
        b, o, t = self.base.skills, self.ours.skills, self.theirs.skills
        for name in sorted(set(b) | set(o) | set(t)):
            bt, ot, tt = b.get(name), o.get(name), t.get(name)
            if ot in (tt, bt):
                continue  # the first parent's skill stands
            if tt == bt:
                self._take(name)
            elif ot is None:
                self.plan.notes.append(f"{name}: deleted on the second parent, edited on the first; the edit is kept")
            elif tt is None:
                self.plan.notes.append(f"{name}: deleted on the first parent, edited on the second; the edit is kept")
                self._take(name)
            else:
                self._merge(name)
        return self.plan

    def _next(self, name: str) -> int:
        return max(self.ours.known(name), self.theirs.known(name)) + 1

    def _take(self, name: str) -> None:
        """The second parent's skill (or its deletion), at its own version when the first parent never used it."""
        tree, plan = self.ours.skills.get(name), self.plan
        if tree is None:
            plan.changes.append(gs.Change("delete", name, self.theirs.version(name)))
            plan.trees[name] = None
            return
        version = self.ours.version(name)
        if version <= self.theirs.known(name):
            version = self._next(name)  # renumbered: versions never repeat along the lineage
            tree = self._write(name, self._files(tree), version)
        action = "update" if name in self.theirs.skills else "create"
        plan.changes.append(gs.Change(action, name, version))
        plan.trees[name] = tree

    def _merge(self, name: str) -> None:
        sides = [self._files(s.skills.get(name)) for s in (self.base, self.ours, self.theirs)]
        counted = self.theirs.record is None

        zero = counter_zeroed(counted)  # the counter is the ledger's: it never conflicts
        result = merge_files(*sides, normalize=zero)
        if not result.clean:
            self.plan.conflicts[name] = {
                "kept_version": self.theirs.version(name),
                "other_version": self.ours.version(name),
                "other_tree": self.ours.skills[name].hex(),
                "other_commit": self.ours.commit.hex(),
                "files": result.conflicts,
            }
            return
        version = self._next(name)
        self.plan.changes.append(gs.Change("update", name, version))
        self.plan.trees[name] = self._write(name, result.files, version)
        self.plan.merged.append(name)

    def _files(self, tree: bytes | None) -> dict[str, tuple[bytes, bool]]:
        files = th.files_of(self.store, tree)
        return {rel: (self.store.read(sha, b"blob"), mode == gs.MODE_EXEC) for rel, (mode, sha) in files.items()}

    def _write(self, name: str, files: Mapping[str, tuple[bytes, bool]], version: int) -> bytes:
        out = dict(files)
        if self.theirs.record is None:  # versions live in SKILL.md: the new one goes there
            text = out[SKILL_MD][0].decode("utf-8")
            out[SKILL_MD] = (parse_skill_md(text, limit=1 << 31).with_counter(version).encode(), out[SKILL_MD][1])
        fm = {rel: (gs.MODE_EXEC if x else gs.MODE_FILE, self.store.write_blob(d)) for rel, (d, x) in out.items()}
        return self.w.write_tree(fm, name)[0]


def _merge_categories(
    store: gs.GitStore, base: Side, ours: Side, theirs: Side, live: set[str], write_tree: Any
) -> bytes | None:
    """Category files and memberships, three ways; the first parent wins where both changed one."""
    if ours.categories in (theirs.categories, base.categories):
        if theirs.categories is None:
            return None
        files = th.files_of(store, theirs.categories)
    else:
        b, o, t = (th.files_of(store, s.categories) for s in (base, ours, theirs))
        files = dict(t)
        _take_changed(files, b, o, t, skip=CATEGORY_INDEX)
        bi, oi, ti = (_members(store, side) for side in (b, o, t))
        members = dict(ti)
        _take_changed(members, bi, oi, ti)
        files[CATEGORY_INDEX] = (gs.MODE_FILE, _index_blob(store, members))
    if CATEGORY_INDEX in files:  # a skill not live after the merge leaves its category
        members = _members(store, files)
        kept = {k: v for k, v in members.items() if k in live}
        if kept != members:
            files[CATEGORY_INDEX] = (gs.MODE_FILE, _index_blob(store, kept))
    return write_tree(files, "categories")[0]


def _merge_supply(store: gs.GitStore, base: Side, ours: Side, theirs: Side, live: Mapping[str, bytes]) -> bytes | None:
    """The supply record derived from the parents' (docs/lineage/supply.md §1 rule 4): entries as categories are
    merged (the first parent wins where both changed one), each exactly as one parent holds it; every
    revocation of either side kept as it was written; an entry whose digest either side revoked left
    revoked; and a skill the merge keeps live keeps its entry.  Nothing new: no approval, state or pin."""
    if ours.supply is None and theirs.supply is None:
        return None
    b, o, t = (
        sp.parse_record(store.read(x.supply, b"blob")) if x.supply else sp.Supply() for x in (base, ours, theirs)
    )
    skills = dict(t.skills)
    _take_changed(skills, b.skills, o.skills, t.skills)
    # a skill kept live keeps an entry unless it is a side's own (lineage/supply.md §1 rule 4c)
    for name in set(live) - set(skills):
        own = [x for x, rec in ((theirs, t), (ours, o)) if name not in rec.skills and x.skills.get(name) == live[name]]
        held = [rec.skills[name] for rec in (t, o) if name in rec.skills]
        if held and not own:
            skills[name] = held[0]
    revoked = {**o.revoked, **t.revoked}  # each revocation as a parent holds it: the first parent's where both do
    skills = {
        n: replace(e, state=sp.REVOKED) if any(d in revoked for d in e.digests()) else e
        for n, e in skills.items()
        if n in live
    }
    return store.write_blob(sp.format_record(sp.Supply(skills, revoked)))


def _merge_evidence(store: gs.GitStore, ours: Side, theirs: Side) -> bytes | None:
    """The evidence log of a merge (docs/lineage/evidence.md §4): the first parent's, then every entry of the
    second parent's that it lacks (by outcome id), in the second parent's order.  Append-only on both
    sides, so it never conflicts."""
    if ours.evidence is None or ours.evidence == theirs.evidence:
        return theirs.evidence
    first = entries_of(store, theirs.evidence) if theirs.evidence is not None else []
    seen = {outcome_id_of(e) for e in first}
    extra = []
    for entry in entries_of(store, ours.evidence):
        oid = outcome_id_of(entry)
        if oid not in seen:
            seen.add(oid)
            extra.append(entry)
    return append(store, theirs.evidence, extra)


def _take_changed(
    out: dict[str, Any],
    base: Mapping[str, Any],
    ours: Mapping[str, Any],
    theirs: Mapping[str, Any],
    skip: str | None = None,
) -> None:
    """Into ``out`` (the first parent's), each key only the second parent changed since the base."""
    for key in set(base) | set(ours):
        if key != skip and ours.get(key) != base.get(key) and theirs.get(key) == base.get(key):
            if key in ours:
                out[key] = ours[key]
            else:
                out.pop(key, None)


def _members(store: gs.GitStore, files: Mapping[str, tuple[int, bytes]]) -> dict[str, str]:
    if CATEGORY_INDEX not in files:
        return {}
    return dict(json.loads(store.read(files[CATEGORY_INDEX][1], b"blob"))["skills"])


def _index_blob(store: gs.GitStore, members: Mapping[str, str]) -> bytes:
    doc = json.dumps({"format": 1, "skills": dict(sorted(members.items()))}, indent=2) + "\n"
    return store.write_blob(doc.encode())


def _skills_tree(store: gs.GitStore, trees: Mapping[str, bytes]) -> tuple[bytes | None, bytes | None]:
    """The ``skills/`` tree (flat or fanned out, as the writer would) and the layout record."""
    entries = {name + "/": tree_entry(name, tree) for name, tree in trees.items()}
    if not entries:
        return None, None
    if len(entries) > skilltree.FANOUT_AT:
        fan = skilltree.Fanout(entries)
        return fan.write(store, entries, ()), store.write_blob(skilltree.FANOUT)
    return store.write_raw_tree(b"".join(entries[k] for k in sorted(entries, key=str.encode))), None


def merge_into(brain: Brain, theirs: bytes) -> dict[str, Any]:
    """Bring ``theirs`` (a commit in this brain's store that passed the audit) into this brain.

    A fast-forward when this brain's head is its ancestor; else one merge snapshot with
    ``theirs`` as first parent.  The working tree follows by the writer's journaled
    roll-forward.  Returns what happened: ``nothing``, ``fast-forward`` or ``merge``.
    """
    store = brain.store
    with brain.writing() as w:
        head = brain.head()
        ours_c = head.commit
        if ours_c == theirs or Git(store.git_dir).is_ancestor(theirs, ours_c):
            return {"action": "nothing", "head": ours_c.hex()}
        if Git(store.git_dir).is_ancestor(ours_c, theirs):
            names = w.fast_forward(theirs)
            return {"action": "fast-forward", "head": theirs.hex(), "skills": names}
        base_c = Git(store.git_dir).merge_base(ours_c, theirs)
        if base_c is None:
            raise StoreError(
                "this brain and the remote share no snapshot: they are different brains",
                hint="clone the remote into a new directory instead",
            )
        base, ours, other = (Side.read(store, c) for c in (base_c, ours_c, theirs))
        if ours.keys != base.keys:
            raise StoreError(
                "this brain changed its trust set since it last matched the remote, and the remote moved too; "
                "a merge cannot carry key changes (see docs/lineage.md, 'Merges')",
                hint="key changes travel by fast-forward: pull on a machine with no unshared snapshots, then rotate",
            )
        if (ours.record is None) != (other.record is None):
            raise StoreError(
                "the two lineages keep their versions in different places (see docs/lineage.md, 'Where versions live')"
            )
        plan = _Planner(brain, w, base, ours, other).run()
        commit, names = _write_merge(brain, w, base, ours, other, plan)
        _record_conflicts(brain, plan.conflicts, commit)
        return {
            "action": "merge",
            "head": commit.hex(),
            "skills": names,
            "merged": plan.merged,
            "changes": [c.trailer() for c in plan.changes],
            "conflicts": sorted(plan.conflicts),
            "notes": plan.notes,
        }


def _write_merge(
    brain: Brain, w: Writing, base: Side, ours: Side, theirs: Side, plan: _Plan
) -> tuple[bytes, list[str]]:
    store = brain.store
    trees = dict(theirs.skills)
    for name, tree in plan.trees.items():
        if tree is None:
            trees.pop(name, None)
        else:
            trees[name] = tree
    digests = {n: brain.tree_digest(t, n) for n, t in trees.items()}
    root = RootIndex(digests).root
    skills_tree, layout = _skills_tree(store, trees)
    retired = dict(theirs.retired)
    for name, version in ours.retired.items():
        retired[name] = max(retired.get(name, 0), version)
    for change in plan.changes:
        if change.action == "delete":
            retired[change.skill] = max(retired.get(change.skill, 0), change.version)
    retired_blob = store.write_blob(gs.format_record(retired)) if retired else None
    versions_blob = None
    if theirs.record is not None:
        live = dict(theirs.record)
        for change in plan.changes:
            if change.action == "delete":
                live.pop(change.skill, None)
            else:
                live[change.skill] = change.version
        versions_blob = store.write_blob(gs.format_record(live))
    cats = _merge_categories(store, base, ours, theirs, set(trees), w.write_tree)
    supply = _merge_supply(store, base, ours, theirs, trees)
    evidence = _merge_evidence(store, ours, theirs)
    top = store.root_tree(skills_tree, cats, retired_blob, layout, theirs.keys, versions_blob, supply, evidence)
    note = "\n".join(
        plan.notes
        + [
            f"conflict: {n}: kept v{c['kept_version']} of the first parent; v{c['other_version']} of the second "
            f"parent (tree {c['other_tree']}) stays in its history"
            for n, c in sorted(plan.conflicts.items())
        ]
    )
    return w.merge(
        top, root, (theirs.commit, theirs.snap), (ours.commit, ours.snap.root), plan.changes, note
    )  # sealed, published and moved by the write layer


# --------------------------------------------------------------------------- conflicts


def conflicts(brain: Brain) -> dict[str, dict[str, Any]]:
    """This brain's unsettled merge conflicts: skill → what was kept and where the other side is."""
    path = brain.control / CONFLICTS
    try:
        return json.loads(path.read_text())["conflicts"]
    except FileNotFoundError:
        return {}


def _record_conflicts(brain: Brain, found: Mapping[str, dict[str, Any]], merge: bytes) -> None:
    if not found:
        return
    known = conflicts(brain)
    for name, c in found.items():
        known[name] = {**c, "merge": merge.hex()}
    path = brain.control / CONFLICTS
    path.parent.mkdir(exist_ok=True)
    write_json(path, {"format": 1, "conflicts": known})


def resolve(brain: Brain, name: str, take: str) -> dict[str, Any]:
    """:func:`settle`'s report as its document: ``{"skill", "took", "snapshot": receipt or None}``."""
    return settle(brain, name, take).to_json()


def settle(brain: Brain, name: str, take: str) -> ResolveReport:
    """Settle a merge conflict: ``kept`` leaves the head as it is; ``other`` records the other side's
    skill as a ``resolve`` snapshot, after every version either side used."""
    if take not in ("kept", "other"):
        raise LedgerError(f"--take must be 'kept' or 'other', not {take!r}")
    with brain.writing() as w:
        known = conflicts(brain)
        if name not in known:
            raise LedgerError(f"no merge conflict on {name!r}", hint="see 'ledger status'")
        c = known[name]
        receipt = None
        if take == "other":
            tree = bytes.fromhex(c["other_tree"])
            files = {
                rel: (brain.store.read(sha, b"blob"), mode == gs.MODE_EXEC)
                for rel, (mode, sha) in th.files_of(brain.store, tree).items()
            }
            head = brain.head()
            if name not in head.skills:
                raise LedgerError(
                    f"{name!r} was deleted since the merge", hint="recreate it with 'ledger skill revert'"
                )
            current = brain.committed(name)[1].version
            version = max(current, int(c["other_version"])) + 1  # after every version either side used
            if brain.version_record(head) is None:
                text = parse_skill_md(files[SKILL_MD][0].decode(), limit=1 << 31).with_counter(version)
                files[SKILL_MD] = (text.encode(), files[SKILL_MD][1])
            writes = {**dict.fromkeys(brain.files(head.skills[name])), **files}
            receipt = w.write_skill(
                "resolve",
                name,
                writes,
                base=brain.files(head.skills[name]),
                note=f"took the other side of the merge conflict ({c['merge'][:12]})",
                version=version,
            )
        del known[name]
        write_json(brain.control / CONFLICTS, {"format": 1, "conflicts": known})
        return ResolveReport(skill=name, took=take, snapshot=receipt)  # type: ignore[arg-type]


def describe(found: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"skill": k, **v} for k, v in sorted(found.items())]
