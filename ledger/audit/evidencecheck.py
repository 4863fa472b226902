"""The ``evidence`` check: every snapshot's evidence log against its parents' (docs/lineage/evidence.md §5).

The log is append-only: an ``outcome`` snapshot extends its parent's log by at least one entry
and changes nothing else; a merge appends the second parent's entries its first parent lacks,
in order; every other snapshot keeps its parent's log as it is.  Each entry a snapshot adds is
held to the record's rules: canonical bytes, a signature by the record's signer, a signer the
brain trusted at that snapshot, this brain, a receipt naming a snapshot before it that held
exactly that skill version and digest, and a time neither before that snapshot nor after the
one that records it.  So a forged, altered, dropped, duplicated or back-dated outcome fails.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ledger.audit.verdicts import Report
from ledger.audit.walk import Walked
from ledger.bundle.merkle import format_root
from ledger.bundle.skill import SKILL_MD, parse_skill_md
from ledger.errors import LedgerError
from ledger.store import evidence as ev
from ledger.store import gitstore as gs
from ledger.store import outcomes as oc
from ledger.store import treehash as th
from ledger.store.git import Git
from ledger.store.skilltree import skills_of

__all__ = ["MAX_SKEW", "Plans", "Receipts", "Tally", "batch_problem", "check_evidence", "entry_problem"]

_HEX40 = re.compile(r"[0-9a-f]{40}")
MAX_SKEW = 300  # seconds an outcome's time may run ahead of the snapshot that records it (clock skew)


@dataclass
class Tally:
    """What the check found, for stats and the report: each entry's tier by outcome id."""

    size: int = 0
    tiers: dict[bytes, str] = field(default_factory=dict)  # outcome id → "verified" | "self"
    agent: str | None = None  # the one registry agent id the records name, once one names it
    failed: bool = False
    kinds: Counter[str] = field(default_factory=Counter)  # eval plans and approvals checked as added


class Plans:
    """The eval plans in the log before an entry (docs/lineage/evaluations.md): ``before(id)`` answers for the log
    before the snapshot (or the writer's head), and the plans appended earlier in the same snapshot are
    added as they pass (:func:`entry_problem` adds them)."""

    def __init__(self, before: Callable[[str], oc.Entry | None] = lambda _: None) -> None:
        self.before = before
        self.local: dict[str, oc.Entry] = {}

    def __call__(self, pid: str) -> oc.Entry | None:
        return self.local.get(pid) or self.before(pid)

    def add(self, entry: oc.Entry) -> None:
        if entry.kind == "plan":
            self.local[entry.id.hex()] = entry


class Receipts:
    """Each receipt's snapshot read once: its time, root, and each skill's version and digest there.
    ``walked``: the audit's walk (None: a writer, which asks git whether a receipt is before its head)."""

    def __init__(self, store: gs.GitStore, walked: Walked | None, cache: th.DigestCache) -> None:
        self.store, self.walked, self.cache = store, walked, cache
        self.snaps = {s.commit: s for s in walked.order} if walked is not None else {}
        self.skills: dict[tuple[str, str], tuple[int, str] | None] = {}
        self.trees: dict[str, dict[str, bytes]] = {}
        self.records: dict[str, tuple[bytes | None, dict[str, int]]] = {}
        self.ancestry: dict[tuple[str, str], bool] = {}
        self.eval_sets: dict[tuple[str, str], str | None] = {}

    def skill(self, commit: str, name: str) -> tuple[int, str] | None:
        key = (commit, name)
        if key not in self.skills:
            snap = self.snaps[commit]
            top = bytes.fromhex(snap.tree)
            if commit not in self.trees:  # one snapshot serves many outcomes: its skills tree is read once
                if len(self.trees) > 64:
                    self.trees.clear()
                self.trees[commit] = skills_of(self.store, top)[1]
                self.records[commit] = self.store.versions(top)
            tree = self.trees[commit].get(name)
            if tree is None:
                self.skills[key] = None
            else:
                vsha, record = self.records[commit]
                if vsha is not None:
                    version = record[name]
                else:
                    blob = th.files_of(self.store, tree)[SKILL_MD][1]
                    version = parse_skill_md(self.store.read(blob, b"blob").decode("utf-8"), limit=1 << 31).version
                self.skills[key] = (version, format_root(th.tree_digest(self.store, tree, self.cache, name)))
        return self.skills[key]

    def evals(self, commit: str, name: str) -> str | None:
        """The digest of the ``evals`` directory of ``name`` in snapshot ``commit`` (None: it has none), the
        eval set a run of that version names (docs/lineage/evaluations.md)."""
        key = (commit, name)
        if key not in self.eval_sets:
            if commit not in self.trees:
                if len(self.trees) > 64:
                    self.trees.clear()
                top = bytes.fromhex(self.snaps[commit].tree)
                self.trees[commit] = skills_of(self.store, top)[1]
                self.records[commit] = self.store.versions(top)
            tree = self.trees[commit].get(name)
            self.eval_sets[key] = th.evals_digest(self.store, tree, self.cache) if tree is not None else None
        return self.eval_sets[key]

    def before(self, commit: str, at: str, *, inclusive: bool = False) -> bool:
        """Whether ``commit`` is an ancestor of ``at`` (``inclusive``: or ``at`` itself; a writer's new
        snapshot comes after its head), by mainline indices, else git itself (an incremental audit's
        receipts may name snapshots before what it walks)."""
        w = self.walked
        if inclusive and commit == at:
            if commit not in self.snaps:
                self.snaps[commit] = self.store.snapshot(bytes.fromhex(commit))
            return True
        if w is not None and commit in w.index and at in w.index and commit not in w.side and at not in w.side:
            return w.index[commit] < w.index[at]
        key = (commit, at)
        if key not in self.ancestry:
            if not _HEX40.fullmatch(commit):
                return False
            self.ancestry[key] = Git(self.store.git_dir).is_ancestor(commit, at) and commit != at
            if self.ancestry[key] and commit not in self.snaps:
                self.snaps[commit] = self.store.snapshot(bytes.fromhex(commit))
        return self.ancestry[key]


def check_evidence(store: gs.GitStore, walked: Walked, report: Report) -> Tally:
    chk = report.check("evidence")
    tally = Tally()
    if not walked.order:
        chk.summary = "no snapshot"
        return tally
    genesis = walked.mainline[0].commit if not walked.mainline[0].parents else None
    logs: dict[bytes | None, list[bytes]] = {None: []}
    receipts = Receipts(store, walked, th.DigestCache(None))
    trusts: dict[str, Any] = {}
    incremental = bool(walked.mainline and walked.mainline[0].parents)
    adders: dict[bytes, list[str]] = {}  # outcome id → the snapshots that appended it (a merge may bring it twice)
    # (signer, batch id) → the snapshots that appended it (lineage/evidence.md §9)
    batches: dict[tuple[str, str], list[str]] = {}
    v2_adders: list[str] = []  # the snapshots that appended a v2 or v3 record, oldest first
    # the snapshots that appended a v3 record, oldest first (lineage/evaluations.md: no downgrade)
    v3_adders: list[str] = []
    plan_adders: dict[str, tuple[oc.Entry, list[str]]] = {}  # plan id → the plan and the snapshots that appended it
    added = 0
    for snap in walked.order:
        label = f"snapshot #{walked.index[snap.commit]} ({snap.commit[:12]}, {snap.operation})"
        where = {"snapshot": snap.commit, "index": walked.index[snap.commit], "path": ev.EVIDENCE}
        tops = report.tops.get(snap.commit, {})
        mine = tops.get(ev.EVIDENCE)
        parents = [_top(store, report, p).get(ev.EVIDENCE) for p in snap.parents]
        first = parents[0] if parents else None
        try:
            if snap.operation not in ("outcome", "merge"):
                if mine != first:
                    chk.fail(
                        f"{label}: changes the evidence log, which only an 'outcome' snapshot or a merge "
                        "may (see docs/lineage.md, 'How the log changes')",
                        **where,
                    )
                continue
            size, new, cut = _appended(store, first, mine)
            if cut is not None:
                chk.fail(
                    f"{label}: the evidence log is not its first parent's with entries appended: entry {cut} "
                    f"of {size} was dropped or rewritten"
                    " (see docs/lineage.md, 'How the log changes')",
                    **where,
                )
                continue
            if snap.operation == "merge":
                before = _log(store, first, logs)
                expected = _merged(before, _log(store, parents[1], logs) if len(parents) > 1 else [])
                if new != expected:
                    chk.fail(
                        f"{label}: the merge's evidence log is not its first parent's followed by the second "
                        "parent's entries it lacks, in order"
                        " (see docs/lineage.md, 'How the log changes')",
                        **where,
                    )
                continue
            if not new:
                chk.fail(
                    f"{label}: an 'outcome' snapshot appends no entry (see docs/lineage.md, 'How the log changes')",
                    **where,
                )
                continue
            if _others(tops, _top(store, report, snap.parents[0]) if snap.parents else {}):
                chk.fail(
                    f"{label}: an 'outcome' snapshot changes more than evidence/"
                    " (see docs/lineage.md, 'How the log changes')",
                    **where,
                )
                continue
            trust = _trust(store, snap, trusts)
            # An incremental audit did not walk who appended the parent's entries: it reads the parent's ids.
            seen: set[bytes] = {_id(e) for e in _log(store, first, logs)} if incremental else set()
            before_batches, before_level = _batches_of(_log(store, first, logs)) if incremental else (set(), 0)
            before_plans = _plans_of(_log(store, first, logs)) if incremental else {}
            plans = Plans(_plans_before(before_plans, plan_adders, receipts, snap.commit))
            parsed: list[tuple[int, oc.Entry]] = []
            for i, data in enumerate(new, size):
                oid = _id(data)
                if any(receipts.before(by, snap.commit) for by in adders.get(oid, ())):
                    chk.fail(
                        f"{label}: outcome {i}: {oid.hex()[:12]} is already in the log (an entry appears once)", **where
                    )
                    break
                problem, entry = _entry(data, snap, genesis, trust, seen, receipts, tally, plans)
                if problem or entry is None:
                    chk.fail(f"{label}: outcome {i}: {problem}", **where)
                    break
                parsed.append((i, entry))
                adders.setdefault(oid, []).append(snap.commit)
            else:
                # lineage/evidence.md §9: the log before is the first parent's, whose batches the snapshots before
                # appended.
                known = _known(before_batches, batches, receipts, snap.commit)
                v2_before = before_level >= 2 or any(receipts.before(by, snap.commit) for by in v2_adders)
                v3_before = before_level >= 3 or any(receipts.before(by, snap.commit) for by in v3_adders)
                problem = batch_problem(parsed, v2_before=v2_before, v3_before=v3_before, known=known, plans=plans)
                if problem:
                    chk.fail(f"{label}: {problem}", **where)
                for _, entry in parsed:
                    if entry.batch is not None:
                        by = batches.setdefault((entry.signer, entry.batch["id"]), [])
                        if not by or by[-1] != snap.commit:
                            by.append(snap.commit)
                if any(e.batch is not None for _, e in parsed):
                    v2_adders.append(snap.commit)
                if any(e.level == 3 for _, e in parsed):
                    v3_adders.append(snap.commit)
                for _, entry in parsed:
                    if entry.kind == "plan":
                        plan_adders.setdefault(entry.id.hex(), (entry, []))[1].append(snap.commit)
            added += len(new)
        except LedgerError as exc:
            chk.fail(f"{label}: {exc.message}", **where)
    head = walked.mainline[-1].commit if walked.mainline else walked.order[-1].commit
    tip = report.tops.get(head, {}).get(ev.EVIDENCE)
    try:
        tally.size = ev.size_of(store, tip)
    except LedgerError:
        tally.size = 0
    tally.failed = not chk.ok
    if chk.ok:
        verified = sum(1 for t in tally.tiers.values() if t == "verified")
        others = "".join(
            f", {n} {what}"
            for what, n in (("eval plan(s)", tally.kinds["plan"]), ("approval(s)", tally.kinds["approval"]))
            if n
        )
        chk.summary = (
            f"{tally.size} outcome(s), append-only; {added} checked as added: {verified} verified, "
            f"{len(tally.tiers) - verified} self-reported{others}"
            if tally.size or added
            else "no outcome recorded"
        )
    return tally


def _top(store: gs.GitStore, report: Report, commit: str) -> dict[str, bytes]:
    """A snapshot's top entries: the walk's, or read here for a parent an incremental audit did not walk."""
    if commit not in report.tops:
        report.tops[commit] = {
            name: sha for sha, _mode, name in store.read_tree(store.commit_info(bytes.fromhex(commit))[0])
        }
    return report.tops[commit]


def _appended(store: gs.GitStore, before: bytes | None, after: bytes | None) -> tuple[int, list[bytes], int | None]:
    """``(size of before, the entries after appends, None)`` when ``after``'s log is ``before``'s with entries
    appended, else ``(size of before, [], the first entry dropped or rewritten)``.  Full chunks are compared
    by blob id, so a snapshot costs the chunks it wrote, not the whole log (an audit stays linear)."""
    old = ev.chunk_ids(store, before) if before is not None else []
    new = ev.chunk_ids(store, after) if after is not None else []
    keep = max(0, len(old) - 1)
    tail_old = ev.lines_of(store.read(old[-1], b"blob"), True, len(old) - 1) if old else []
    size = keep * ev.CHUNK + len(tail_old)
    for k in range(keep):
        if k >= len(new) or new[k] != old[k]:
            return size, [], k * ev.CHUNK
    rest = new[keep:]
    lines: list[bytes] = []
    for k, data in enumerate(store.read_blobs(rest)):
        lines.extend(ev.lines_of(data, keep + k == len(new) - 1, keep + k))
    if lines[: len(tail_old)] != tail_old:
        cut = next((i for i, (a, b) in enumerate(zip(tail_old, lines, strict=False)) if a != b), len(lines))
        return size, [], keep * ev.CHUNK + cut
    return size, lines[len(tail_old) :], None


def _log(store: gs.GitStore, tree: bytes | None, logs: dict[bytes | None, list[bytes]]) -> list[bytes]:
    if tree not in logs:
        assert tree is not None
        logs[tree] = ev.entries_of(store, tree)
        if len(logs) > 64:  # a long lineage of outcomes: keep memory bounded
            logs.pop(next(k for k in logs if k is not None and k != tree))
    return logs[tree]


def _id(entry: bytes) -> bytes:
    try:
        return oc.outcome_id_of(entry)
    except LedgerError:
        return b""


def _merged(first: list[bytes], second: list[bytes]) -> list[bytes]:
    seen = {_id(e) for e in first}
    out = []
    for entry in second:
        oid = _id(entry)
        if oid not in seen:
            seen.add(oid)
            out.append(entry)
    return out


def _others(tops: dict[str, bytes], parent: dict[str, bytes]) -> bool:
    strip = lambda t: {k: v for k, v in t.items() if k != ev.EVIDENCE}  # noqa: E731
    return strip(tops) != strip(parent)


def _trust(store: gs.GitStore, snap: gs.Snapshot, cache: dict[str, Any]) -> Any:
    if snap.tree not in cache:
        cache[snap.tree] = store.trust_at(snap.tree)[1]
    return cache[snap.tree]


def _entry(
    data: bytes,
    snap: gs.Snapshot,
    genesis: str | None,
    trust: Any,
    seen: set[bytes],
    receipts: Receipts,
    tally: Tally,
    plans: Plans,
) -> tuple[str | None, oc.Entry | None]:
    """Why an appended entry is refused (docs/lineage/evidence.md §5), or None; and the entry, parsed."""
    try:
        entry = oc.parse_entry(data)
    except LedgerError as exc:
        return f"{exc.message} (altered or forged)", None
    return entry_problem(
        entry,
        at=snap.commit,
        stamp=snap.timestamp,
        genesis=genesis,
        trust=trust,
        seen=seen,
        receipts=receipts,
        tally=tally,
        plans=plans,
    ), entry


def _known(
    before: set[tuple[str, str]], batches: dict[tuple[str, str], list[str]], receipts: Receipts, at: str
) -> Callable[[str, str], bool]:
    """Whether the log before snapshot ``at`` holds a signer's batch: read from it (``before``), or appended by
    a snapshot that is an ancestor of ``at``."""
    return lambda signer, bid: (
        (signer, bid) in before or any(receipts.before(by, at) for by in batches.get((signer, bid), ()))
    )


def _plans_before(
    before: dict[str, oc.Entry], adders: dict[str, tuple[oc.Entry, list[str]]], receipts: Receipts, at: str
) -> Callable[[str], oc.Entry | None]:
    """The plan of an id in the log before snapshot ``at``: read from it (``before``), or appended by a
    snapshot that is an ancestor of ``at``."""

    def plan(pid: str) -> oc.Entry | None:
        if pid in before:
            return before[pid]
        found = adders.get(pid)
        return found[0] if found and any(receipts.before(by, at) for by in found[1]) else None

    return plan


def _plans_of(log: Sequence[bytes]) -> dict[str, oc.Entry]:
    """The plan entries of a log by id (an incremental audit's first parent, which it did not walk)."""
    out = {}
    for data in log:
        if oc.kind_of(data) == "plan":
            with contextlib.suppress(LedgerError):
                entry = oc.parse_entry(data)
                out[entry.id.hex()] = entry
    return out


def _batches_of(log: Sequence[bytes]) -> tuple[set[tuple[str, str]], int]:
    """The (signer, batch id) pairs a log holds, and the newest record format it holds (0 none, 1, 2, 3; an
    incremental audit's first parent, which it did not walk)."""
    out: set[tuple[str, str]] = set()
    level = 0
    for data in log:
        with contextlib.suppress(LedgerError, KeyError, TypeError, AttributeError):
            record = oc.loads(data)["record"]
            level = max(level, 3 if "eval" in record else 2 if "batch" in record else 1)
            if record.get("batch") is not None:
                out.add((record["signer"], record["batch"]["id"]))
    return out, level


def entry_problem(
    entry: oc.Entry,
    *,
    at: str,
    stamp: int,
    genesis: str | None,
    trust: Any,
    seen: set[bytes],
    receipts: Receipts,
    tally: Tally,
    inclusive: bool = False,
    plans: Plans | None = None,
) -> str | None:
    """Why a parsed entry may not be appended by the snapshot ``at`` made at ``stamp`` (lineage/evidence.md §5 rules
    2-7),
    or None (and its tier recorded in ``tally``).  The audit asks it of each entry a snapshot added; the
    writer of each entry it is about to append (``at`` its head, ``inclusive``), so that it never
    acknowledges an outcome the audit would refuse."""
    rec, short = entry.body, entry.id.hex()[:12]
    if entry.kind != "record":
        short = f"{entry.kind} {short}"
    if entry.id in seen:
        return f"{short} is already in the log (an entry appears once)"
    seen.add(entry.id)
    role = trust.active.get(entry.signer)
    if role is None:
        return f"{short} is signed by {entry.signer}, a key the brain did not trust at this snapshot (forged)"
    if genesis is not None and rec["brain"] != genesis:
        return f"{short} is an outcome of brain {rec['brain'][:12]}, not this one ({genesis[:12]})"
    if entry.kind != "record":
        problem = _item_problem(entry, short, role, stamp)
        if problem is None:
            tally.kinds[entry.kind] += 1
            if plans is not None:
                plans.add(entry)
        return problem
    if rec["agent"] is not None:
        if tally.agent is not None and rec["agent"] != tally.agent:
            return f"{short} names agent {rec['agent']}, where the lineage's outcomes name {tally.agent}"
        tally.agent = rec["agent"]
    commit = rec["receipt"]["commit"]
    if not receipts.before(commit, at, inclusive=inclusive):
        return f"{short}'s receipt names {commit[:12]}, which is not a snapshot before this one"
    served = receipts.snaps[commit]
    if format_root(served.root) != rec["receipt"]["root"]:
        return f"{short}'s receipt root is not snapshot {commit[:12]}'s root"
    held = receipts.skill(commit, rec["skill"])
    if held is None or held[0] != rec["version"]:
        return (
            f"{short} is an outcome of {rec['skill']} v{rec['version']}, which snapshot {commit[:12]} does not "
            f"hold ({'no such skill' if held is None else f'it holds v{held[0]}'})"
        )
    if held[1] != rec["digest"]:
        return f"{short}'s digest is not {rec['skill']} v{rec['version']}'s digest at {commit[:12]}"
    when = oc.parse_time(rec["time"])
    if when < served.timestamp:
        return (
            f"{short} is dated {rec['time']}, before snapshot {commit[:12]} served {rec['skill']} "
            f"v{rec['version']} ({oc.format_time(served.timestamp)}): back-dated"
        )
    if when > stamp + MAX_SKEW:
        return f"{short} is dated {rec['time']}, after the snapshot that records it ({oc.format_time(stamp)})"
    if entry.eval is not None:
        problem = _run_problem(entry, short, commit, receipts, plans or Plans())
        if problem is not None:
            return problem
    tally.tiers[entry.id] = "verified" if role == "verifier" else "self"
    return None


def _run_problem(entry: oc.Entry, short: str, commit: str, receipts: Receipts, plans: Plans) -> str | None:
    """Why a run of an evaluation (a v3 record whose ``eval`` is not null) breaks docs/lineage/evaluations.md §5
    rules 2 and 3, or None."""
    rec, run = entry.body, entry.eval
    assert run is not None
    have = receipts.evals(commit, rec["skill"])
    if run["set"] != have:
        return (
            f"{short} is a run over eval set {run['set']}, which is not the digest of {rec['skill']} "
            f"v{rec['version']}'s evals directory at {commit[:12]} ({have or 'it has none'}): a run names the "
            "eval set of the version it tested"
        )
    pid = run["plan"]
    if pid is None:
        return None
    found = plans(pid)
    if found is None:
        return (
            f"{short} names plan {pid[:12]}, which is not a plan entry earlier in the log: a plan is "
            "appended before its runs"
        )
    plan = found.body
    if oc.parse_time(rec["time"]) < oc.parse_time(plan["time"]):
        return (
            f"{short} is dated {rec['time']}, before its plan {pid[:12]} ({plan['time']}): a run under a plan "
            "made after it"
        )
    if plan["skill"] != rec["skill"]:
        return f"{short} is a run of {rec['skill']}, but its plan {pid[:12]} is {plan['skill']}'s"
    if run["set"] != plan["set"]:
        return (
            f"{short} is a run over eval set {run['set']}, not its plan {pid[:12]}'s ({plan['set']}): the "
            "eval set changed since the plan"
        )
    if run["case"] not in plan["cases"]:
        return f"{short} is a run of case {run['case']!r}, which its plan {pid[:12]} does not name"
    if run["run"] >= plan["runs"]:
        return f"{short} is run {run['run']}, but its plan {pid[:12]} has {plan['runs']} run(s) of each case"
    allowed = ("with_skill", oc.BASELINES[plan["baseline"]])
    if run["condition"] not in allowed:
        return (
            f"{short} is a {run['condition']} run, but its plan {pid[:12]} (baseline {plan['baseline']}) "
            f"runs {' and '.join(allowed)}"
        )
    for role in ("runner", "grader"):
        if run[role] != plan[role]["id"]:
            return (
                f"{short}'s {role} is {run[role]!r}, not its plan {pid[:12]}'s ({plan[role]['id']!r}): a "
                f"different {role} than the plan declared"
            )
    return None


def _item_problem(entry: oc.Entry, short: str, role: str, stamp: int) -> str | None:
    """Why an eval plan or an approval (trusted, of this brain, not in the log before) may not be appended
    by a snapshot made at ``stamp`` (docs/lineage/evaluations.md), or None."""
    if entry.kind == "approval" and role not in ("user", "curator"):
        return f"{short} is signed by {entry.signer}, a {role} key: an approval is signed by a user or curator key"
    if oc.parse_time(entry.body["time"]) > stamp + MAX_SKEW:
        return f"{short} is dated {entry.body['time']}, after the snapshot that records it ({oc.format_time(stamp)})"
    return None


def batch_problem(
    appended: Sequence[tuple[int, oc.Entry]],
    *,
    v2_before: bool,
    known: Callable[[str, str], bool],
    v3_before: bool = False,
    plans: Callable[[str], oc.Entry | None] | None = None,
) -> str | None:
    """Why the entries one ``outcome`` snapshot appends (``(index in the log, entry)``, in log order) break
    docs/lineage/evidence.md §9, or None: with ``v2_before`` (the log before holds a v2 record) every one is v2;
    each batch they name is new (``known(signer, id)``: the log before holds that batch) and appended whole,
    indices 0 to count - 1 once each, one count and one ``prev`` throughout; and each ``prev`` is a batch
    of the same signer in the log before, or earlier among these.  The writer asks it before it appends,
    the audit of each snapshot, so a verifier's batch is in a log all of it or none of it."""
    groups: dict[tuple[str, str], list[tuple[int, oc.Entry]]] = {}
    for i, entry in appended:
        if entry.kind != "record":  # an eval plan or an approval belongs to no batch (lineage/evaluations.md)
            continue
        batch, short = entry.batch, entry.id.hex()[:12]
        if batch is None:
            if v2_before:
                return (
                    f"outcome {i}: {short} is a v1 record ({oc.FORMAT_V1}), appended after the log's first "
                    f"v2 record: from then on every record is {oc.FORMAT_V2} or {oc.FORMAT}, whole in its "
                    "batch"
                )
            continue
        if entry.level == 2 and v3_before:
            return (
                f"outcome {i}: {short} is a v2 record ({oc.FORMAT_V2}), appended after the log's first v3 "
                f"record: from then on every record is {oc.FORMAT}"
                " (see docs/lineage.md, 'Evaluations')"
            )
        v2_before = True  # a v1 record after a v2 one in the same snapshot is after the log's first v2 record
        v3_before = v3_before or entry.level == 3
        key = (entry.signer, batch["id"])
        if key not in groups:
            if known(*key):
                return (
                    f"outcome {i}: {short} is of batch {batch['id'][:12]} of {entry.signer}, which the log "
                    "already holds: a batch is appended whole, once"
                )
            prev = batch["prev"]
            if prev is not None and not (known(entry.signer, prev) or (entry.signer, prev) in groups):
                return (
                    f"outcome {i}: {short}'s batch {batch['id'][:12]} follows batch {prev[:12]} of "
                    f"{entry.signer}, which is not in the log before it: a batch of the signer's was "
                    "dropped"
                )
            groups[key] = []
        groups[key].append((i, entry))
    for (signer, bid), members in groups.items():
        first = members[0][1].batch
        assert first is not None
        count, prev = first["count"], first["prev"]
        indices = sorted(e.batch["index"] for _, e in members if e.batch is not None)
        if any(e.batch != {**first, "index": e.batch["index"]} for _, e in members if e.batch is not None):
            return (
                f"outcome {members[0][0]}: batch {bid[:12]} of {signer} names more than one count or prev "
                "among its outcomes"
            )
        if indices != list(range(count)):
            missing = sorted(set(range(count)) - set(indices))
            twice = sorted(k for k, n in Counter(indices).items() if n > 1)
            what = (
                f"index {', '.join(map(str, missing[:5]))} missing"
                if missing
                else f"index {', '.join(map(str, twice[:5]))} twice"
            )
            return (
                f"outcome {members[0][0]}: batch {bid[:12]} of {signer} holds {len(members)} of its {count} "
                f"outcomes ({what}): a verifier's batch is appended whole"
                " (see docs/lineage.md, 'A signer's record is complete: batches')"
            )
        if any(e.eval is not None for _, e in members):
            problem = _grid_problem(members, f"outcome {members[0][0]}: batch {bid[:12]} of {signer}", plans)
            if problem is not None:
                return problem
    return None


def _grid_problem(
    members: Sequence[tuple[int, oc.Entry]], label: str, plans: Callable[[str], oc.Entry | None] | None
) -> str | None:
    """Why a whole batch holding a run of an evaluation breaks docs/lineage/evaluations.md §5 rule 4, or None: it
    holds only runs, of one plan, one skill and one version; and, under a plan, exactly the plan's grid
    (every case × run × condition once), so a failed run cannot be left out of a re-signed batch."""
    runs = [e for _, e in members if e.eval is not None]
    if len(runs) != len(members):
        return (
            f"{label} mixes runs of an evaluation with other outcomes: a batch that holds a run holds only "
            "the runs of one evaluation"
        )
    which = {(e.eval["plan"], e.body["skill"], e.body["version"]) for e in runs if e.eval is not None}
    if len(which) != 1:
        return f"{label} holds runs of more than one plan, skill or version: a batch is one evaluation"
    pid = next(iter(which))[0]
    found = plans(pid) if pid is not None and plans is not None else None
    if pid is None:
        return None
    if found is None:
        return f"{label} holds runs of plan {pid[:12]}, which is not a plan entry earlier in the log"
    plan = found.body
    conditions = ("with_skill", oc.BASELINES[plan["baseline"]])
    want = Counter((c, r, k) for c in plan["cases"] for r in range(plan["runs"]) for k in conditions)
    got = Counter((e.eval["case"], e.eval["run"], e.eval["condition"]) for e in runs if e.eval is not None)
    if got == want:
        return None
    missing, twice = sorted(want - got), sorted(k for k, n in got.items() if n > 1 or k not in want)
    cell = missing[0] if missing else twice[0]
    what = f"case {cell[0]!r} run {cell[1]} {cell[2]} {'missing' if missing else 'twice or not in the plan'}"
    return (
        f"{label} holds {len(runs)} runs of plan {pid[:12]}, whose grid is {sum(want.values())} ({what}): "
        "an evaluation is recorded whole, every case × run × condition of its plan once "
        "(see docs/lineage.md, 'Evaluations')"
    )
