"""The audit's walk through every snapshot of a lineage, merges and their parents included.

docs/lineage.md §1.1 and §9: the **mainline** is the first-parent history of ``main``
(what the chain anchors, what receipts and ``#i`` indices count); a merge's second parent
brings a **side branch**, whose snapshots are checked by the same rules, each against
the state its own parents leave.  Commits are visited parents first (``git rev-list
--topo-order``); a commit's state (live versions, deleted names, skill trees, root
index) is handed to its only child, or copied where history forks, so a long line costs
what it did before merges existed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ledger.audit import rules
from ledger.audit.verdicts import Report
from ledger.bundle.merkle import RootIndex, format_root
from ledger.bundle.skill import SKILL_MD, parse_skill_md
from ledger.errors import AuditError, LedgerError, StoreError
from ledger.protocol.refs import ORIGIN_BRANCH
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.git import WHOLE, Git
from ledger.store.skilltree import skills_of

__all__ = ["Walked", "walk"]


@dataclass
class _State:
    """What the lineage says after one snapshot: the rules of the next are checked against it."""

    live: dict[str, int] = field(default_factory=dict)
    retired: dict[str, int] = field(default_factory=dict)
    entries: dict[str, bytes] = field(default_factory=dict)
    index: RootIndex = field(default_factory=lambda: RootIndex({}))
    root: bytes | None = None
    in_store: bool | None = None
    attributed: bool = False
    categories: bytes | None = None  # the categories/ tree id (a sync of no change must change it, §3)

    @classmethod
    def known(cls, store: gs.GitStore, commit: str, cache: th.DigestCache) -> _State:
        """The state a snapshot already trusted leaves (an incremental audit starts from it): read from
        its tree and trailers, not replayed from genesis."""
        snap = store.snapshot(bytes.fromhex(commit))
        top = bytes.fromhex(snap.tree)
        entries = skills_of(store, top)[1]
        vsha, record = store.versions(top)
        if vsha is not None:
            live = dict(record)
        else:
            live = {}
            for name, tree in entries.items():
                blob = th.files_of(store, tree)[SKILL_MD][1]
                live[name] = parse_skill_md(store.read(blob, b"blob").decode("utf-8"), limit=1 << 31).version
        index = RootIndex({n: th.tree_digest(store, t, cache, n) for n, t in entries.items()})
        return cls(
            live,
            store.retired(top)[1],
            entries,
            index,
            snap.root,
            vsha is not None,
            "actor" in snap.attribution,
            store.categories_tree(top),
        )

    def copy(self, store: gs.GitStore, cache: th.DigestCache) -> _State:
        index = RootIndex({n: th.tree_digest(store, t, cache, n) for n, t in self.entries.items()})
        return _State(
            dict(self.live),
            dict(self.retired),
            dict(self.entries),
            index,
            self.root,
            self.in_store,
            self.attributed,
            self.categories,
        )


@dataclass
class Walked:
    """The snapshots walked: ``mainline`` oldest first; ``order`` every snapshot, parents first."""

    mainline: list[gs.Snapshot]
    order: list[gs.Snapshot]
    index: dict[str, int]  # commit → its mainline index, or that of the merge that brought it in
    side: set[str]  # commits reached only through a merge's second parent


def _head(store: gs.GitStore) -> bytes:
    head = store.head() or store.read_ref(ORIGIN_BRANCH)
    if head is None:
        raise AuditError("the repository has no 'main' branch of snapshots")
    return head


def _graph(store: gs.GitStore, head: bytes, since: tuple[bytes, ...] = ()) -> tuple[list[str], dict[str, list[str]]]:
    exclude = [f"^{c.hex()}" for c in since]
    out = Git(store.git_dir, error=AuditError).run(
        "rev-list",
        "--topo-order",
        "--reverse",
        "--parents",
        head.hex(),
        *exclude,
        timeout=WHOLE,
        what="git rev-list cannot walk the history",
    )
    parents = {}
    order = []
    for line in out.decode().splitlines():
        commit, *ps = line.split()
        order.append(commit)
        parents[commit] = ps
    return order, parents


def _placed(head: str, parents: dict[str, list[str]]) -> tuple[list[str], dict[str, int]]:
    """The mainline, oldest first, and each commit's index: its own, or its merge's on the mainline."""
    mainline = []
    commit: str | None = head
    while commit is not None and commit in parents:  # an incremental walk stops at what is known
        mainline.append(commit)
        commit = parents[commit][0] if parents[commit] else None
    mainline.reverse()
    index = {c: i for i, c in enumerate(mainline)}
    for i, c in enumerate(mainline):
        stack = list(parents[c][1:])
        while stack:
            p = stack.pop()
            if p not in index and p in parents:
                index[p] = i
                stack.extend(parents[p])
    return mainline, index


def walk(
    store: gs.GitStore,
    report: Report,
    progress: Callable[[int, int], None] | None,
    since: tuple[bytes, ...] = (),
    tip: bytes | None = None,
) -> Walked:
    """Every snapshot from ``main`` (or ``tip``: a push not yet taken) back; with ``since`` (commits
    already trusted, such as this brain's head before a pull), only those not reachable from them,
    each parent outside read as it stands."""
    top = tip or _head(store)
    order, parents = _graph(store, top, since)
    head = top.hex()
    mainline, index = _placed(head, parents)
    on_main = set(mainline)
    children: dict[str, int] = {}
    for ps in parents.values():
        for p in ps:
            children[p] = children.get(p, 0) + 1
    cache = th.DigestCache(None)
    memo: dict[bytes, dict[str, bytes]] = {}
    states: dict[str, _State] = {}
    checks = {n: report.check(n) for n in ("snapshots", "lineage", "versions", "skills", "trailers")}
    out = Walked([], [], index, {c for c in order if c not in on_main})
    genesis_seen = bool(since)

    def state_of(parent: str) -> _State:
        if parent not in parents:  # known already: its state is read, not replayed
            return _State.known(store, parent, cache)
        children[parent] -= 1
        st = states[parent]
        if children[parent] == 0:
            del states[parent]
            return st  # its only (or last) child takes it over
        return st.copy(store, cache)

    for n, commit in enumerate(order):
        i = index[commit]
        ps = parents[commit]
        where = {"snapshot": commit, "index": i}
        second = (states.get(ps[1]) if ps[1] in parents else _State.known(store, ps[1], cache)) if len(ps) > 1 else None
        st = state_of(ps[0]) if ps else _State()
        for p in ps[1:]:
            if p in parents:
                children[p] -= 1
        try:
            snap = store.snapshot(bytes.fromhex(commit))
        except StoreError as exc:
            checks["snapshots"].fail(
                f"{_name(commit, i, commit not in on_main)} is not a ledger snapshot: {exc.message}", **where
            )
            states[commit] = st  # passed through: its children are checked against what came before
            _release(states, children, ps)
            continue
        genesis = not ps and not genesis_seen
        genesis_seen = genesis_seen or not ps
        _step(store, report, snap, st, second, genesis, i, commit not in on_main, memo, cache, checks, where)
        states[commit] = st
        _release(states, children, ps)
        out.order.append(snap)
        if commit in on_main:
            out.mainline.append(snap)
        if progress is not None and (n % 50 == 0 or n == len(order) - 1):
            progress(n + 1, len(order))
    _summaries(report, checks, len(order), len(mainline))
    return out


def _release(states: dict[str, _State], children: dict[str, int], ps: list[str]) -> None:
    for p in ps[1:]:
        if children.get(p) == 0:
            states.pop(p, None)


def _name(commit: str, i: int, side: bool) -> str:
    return f"snapshot {commit[:12]} (merged at #{i})" if side else f"snapshot #{i} ({commit[:12]})"


def _step(
    store: gs.GitStore,
    report: Report,
    snap: gs.Snapshot,
    st: _State,
    second: _State | None,
    genesis: bool,
    i: int,
    side: bool,
    memo: dict[bytes, dict[str, bytes]],
    cache: th.DigestCache,
    checks: dict[str, Any],
    where: dict[str, Any],
) -> None:
    """One snapshot's rules, against ``st`` (its first parent's state, updated in place to its own)."""
    snaps_chk, lineage_chk, versions_chk, skills_chk = (
        checks[k] for k in ("snapshots", "lineage", "versions", "skills")
    )
    label = f"{_name(snap.commit, i, side)[:-1]}, {rules.describe(snap)})"
    stray = rules.stray_entries(store, snap, report.tops)
    if stray:
        snaps_chk.fail(
            f"{label}: its tree holds {stray}, which a snapshot may not (see docs/lineage.md, 'A snapshot's tree')",
            path=stray,
            **where,
        )
    prev_entries, computed = st.entries, None
    entries: dict[str, bytes] = {}
    try:
        entries = skills_of(store, bytes.fromhex(snap.tree), memo)[1]
        changed = sorted(n for n in set(entries) | set(prev_entries) if entries.get(n) != prev_entries.get(n))
        # Only what changed since the parent is hashed: subtree digests are cached by git tree id.
        st.index.update({n: th.tree_digest(store, entries[n], cache, n) if n in entries else None for n in changed})
        computed = st.index.root
        st.entries = entries
    except LedgerError as exc:
        snaps_chk.fail(f"{label}: its tree cannot be hashed: {exc.message}", **where)
        st.index = RootIndex({})
        changed = sorted(n for n in set(entries) | set(prev_entries) if entries.get(n) != prev_entries.get(n))
        st.entries = {}
    declared = {c.skill for c in snap.changes}
    if computed is not None and computed != snap.root:
        path = rules.divergent_path(store, entries, prev_entries, changed, declared)
        snaps_chk.fail(
            f"{label}: the tree hashes to {format_root(computed)}, not the recorded root",
            path=path,
            expected=format_root(snap.root),
            computed=format_root(computed),
            **where,
        )
    _check_parents(snap, st, second, genesis, label, lineage_chk, where)
    rules.check_trailers(snap, genesis, label, checks["trailers"], where)
    categories = store.categories_tree(bytes.fromhex(snap.tree))
    if snap.operation == "sync" and not snap.changes and categories == st.categories and not genesis:
        checks["trailers"].fail(
            f"{label}: a sync that records no change must change categories/ "
            "(see docs/lineage.md, 'Operations'); this one changes nothing",
            path="categories",
            **where,
        )
    st.categories = categories
    if "actor" in snap.attribution:
        st.attributed = True
    elif st.attributed:
        checks["trailers"].fail(f"{label}: no Ledger-Actor trailer after snapshots that record one", **where)
    in_store = "versions" in report.tops.get(snap.commit, {})
    if st.in_store is not None and in_store != st.in_store and (not in_store or st.live or st.retired):
        versions_chk.fail(
            f"{label}: its tree {'adds' if in_store else 'drops'} the 'versions' record "
            "(where versions live is fixed once a brain holds skills,"
            " see docs/lineage.md, 'Where versions live')",
            path="versions",
            **where,
        )
    st.in_store = in_store
    if snap.operation == "merge" and second is not None:
        for name in changed:
            if name not in declared:
                versions_chk.fail(f"{label}: skill {name!r} changed without a declared change", path=name, **where)
        rules.check_merge_versions(
            store, snap, label, entries, st, second, versions_chk, skills_chk, where, report, in_store
        )
        st.retired = rules.merged_retired(st.retired, second.retired)
    else:
        rules.check_versions(
            store, snap, label, entries, changed, declared, st.live, versions_chk, skills_chk, where, report, in_store
        )
    rules.check_retired(store, snap, label, st.live, st.retired, versions_chk, where)
    if in_store:
        rules.check_versions_record(store, report.tops[snap.commit]["versions"], label, st.live, versions_chk, where)
    if not side:
        report.timeline.append(
            {
                "index": i,
                "commit": snap.commit,
                "operation": snap.operation,
                "changes": [asdict(c) for c in snap.changes],
                "root": format_root(snap.root),
                "timestamp": snap.timestamp,
                "ok": computed == snap.root and snap.parent_root == st.root,
                "chain": None,
                "actor": snap.shown_actor,  # the signatures check puts the verified role, or "bad signature"
                "signer": None,  # the signatures check puts the address a signature recovers
            }
        )
    st.root = snap.root


def _check_parents(
    snap: gs.Snapshot, st: _State, second: _State | None, genesis: bool, label: str, chk: Any, where: dict[str, Any]
) -> None:
    """§1.1 and §9.1: one parent (two for a merge, none for snapshot 0), and trailers naming each parent's root."""
    n = len(snap.parents)
    merge = snap.operation == "merge"
    if (genesis and n) or (not genesis and n != (2 if merge else 1)):
        why = (
            "a merge snapshot has exactly two parents"
            if merge
            else "snapshot 0 alone has no parent; a merge (operation 'merge') two; every other snapshot one"
        )
        chk.fail(
            f"{label}: has {n} parent commit(s); {why} (see docs/lineage.md, 'The lineage' and 'Merges')",
            computed=" ".join(snap.parents) or "none",
            **where,
        )
    if snap.parent_root != st.root:
        chk.fail(
            f"{label}: parent root is not the previous snapshot's root (a snapshot was dropped, reordered or inserted)",
            expected=format_root(st.root) if st.root else "none",
            computed=format_root(snap.parent_root) if snap.parent_root else "none",
            **where,
        )
    if merge and n == 2:
        named = snap.merged()
        actual = (snap.parents[1], second.root if second is not None else None)
        if second is None or second.root is None:
            chk.fail(f"{label}: its second parent {snap.parents[1][:12]} is not a snapshot of this lineage", **where)
        elif named is None or named != actual:
            chk.fail(
                f"{label}: Ledger-Merge-Parent/Ledger-Merge-Root do not name its second parent and that "
                "parent's root (see docs/lineage.md, 'Merges', 'Form')",
                expected=f"{actual[0]} {format_root(actual[1]) if actual[1] else 'none'}",
                computed=f"{named[0]} {format_root(named[1])}" if named else "none",
                **where,
            )


def _summaries(report: Report, checks: dict[str, Any], n: int, main: int) -> None:
    merged = f" ({n - main} on merged branches)" if n != main else ""
    if checks["snapshots"].ok:
        checks["snapshots"].summary = f"{n} snapshot(s) recompute to their recorded roots{merged}"
    if checks["lineage"].ok:
        checks["lineage"].summary = f"{n} parent root(s) chain back to genesis{merged}"
    if checks["versions"].ok:
        checks["versions"].summary = f"{len(report.skills)} skill(s), versions consecutive, every change declared"
    if checks["skills"].ok:
        checks["skills"].summary = "every written skill is valid"
