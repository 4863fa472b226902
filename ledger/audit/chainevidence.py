"""The ``chain.evidence`` check: the agent's anchored evidence logs against the snapshots.

Each ``EvidenceCommitted`` event says: when the agent's head was ``head``, its evidence log had
``size`` entries with RFC 9162 root ``root``.  The audit holds the registry to that against the
clone: sizes only grow; each event names the head the registry had then, a root of the anchored
mainline, and some mainline snapshot with that root records exactly that log; the last event is
what ``evidenceOf`` answers at the audit's block; and the head snapshot's log still starts with
the last anchored one (a log trimmed or rewritten after anchoring fails here).
"""

from __future__ import annotations

from typing import Any

from ledger.audit.verdicts import Report
from ledger.bundle.merkle import format_root
from ledger.errors import LedgerError
from ledger.protocol.evidencelog import EvidenceLog, prefix_problem
from ledger.store import gitstore as gs
from ledger.store import outcomes as oc
from ledger.store.evidence import entries_of, evidence_tree, size_of

__all__ = ["check_chain_evidence"]


def check_chain_evidence(
    store: gs.GitStore,
    mainline: list[gs.Snapshot],
    report: Report,
    reg: Any,
    agent: int,
    height: int,
    from_block: int,
    root_events: list[dict[str, Any]],
) -> None:
    """``mainline``: every mainline snapshot, oldest first; ``root_events``: the agent's
    RootCommitted events (sequenced) read at ``height``, as ``chain.events`` checked them."""
    chk = report.check("chain.evidence")
    events = reg.evidence_events(agent, from_block, height)
    onchain_size, root = reg.evidence(agent, height)
    if not events:
        if onchain_size:
            chk.fail(
                f"the registry's evidenceOf is size {onchain_size} at block {height}, but the node returned no "
                f"EvidenceCommitted event from block {from_block} (pruned logs?)",
                expected=str(onchain_size),
                computed="0",
            )
        else:
            chk.summary = "no evidence anchored"
        return
    trees: dict[str, bytes | None] = {}  # snapshot's top tree → its evidence/ tree
    sizes: dict[bytes | None, int | None] = {}  # evidence/ tree → its size (None: unreadable)
    logs: dict[bytes | None, EvidenceLog | None] = {}  # evidence/ tree → its log (None: unreadable)

    def evidence_of(snap: gs.Snapshot) -> bytes | None:
        if snap.tree not in trees:
            trees[snap.tree] = evidence_tree(store, bytes.fromhex(snap.tree)) if snap.tree else None
        return trees[snap.tree]

    def size(snap: gs.Snapshot) -> int | None:
        """Read from the last chunk alone: most snapshots of a head are ruled out by size."""
        try:
            tree = evidence_of(snap)
            if tree not in sizes:
                sizes[tree] = size_of(store, tree)
        except LedgerError:
            return None
        return sizes[tree]

    def log(snap: gs.Snapshot) -> EvidenceLog | None:
        try:
            tree = evidence_of(snap)
            if tree not in logs:
                logs[tree] = EvidenceLog(entries_of(store, tree) if tree is not None else [])
        except LedgerError:
            return None
        return logs[tree]

    anchored = {ev["root"] for ev in root_events}
    by_root: dict[bytes, list[int]] = {}
    for i, snap in enumerate(mainline):
        by_root.setdefault(snap.root, []).append(i)
    last_size = 0
    for n, ev in enumerate(events):
        label = f"EvidenceCommitted #{n + 1} (tx {ev['tx'][:12]}…, block {ev['block']})"
        if ev["size"] <= last_size:
            chk.fail(
                f"{label}: size {ev['size']} does not grow the log of {last_size}",
                index=n,
                expected=f"> {last_size}",
                computed=str(ev["size"]),
            )
        last_size = max(last_size, ev["size"])
        bound = _head_at(root_events, (ev["block"], ev["log_index"]))
        if ev["head"] != bound:
            chk.fail(
                f"{label}: binds the evidence to {format_root(ev['head'])}, but the registry's head then was "
                f"{format_root(bound) if bound else 'none'}",
                index=n,
                expected=format_root(bound) if bound else "none",
                computed=format_root(ev["head"]),
            )
            continue
        if ev["head"] not in anchored or ev["head"] not in by_root:
            chk.fail(
                f"{label}: its head {format_root(ev['head'])} is not a root of the anchored mainline",
                index=n,
                computed=format_root(ev["head"]),
            )
            continue
        candidates = [mainline[i] for i in by_root[ev["head"]]]
        same = [snap for snap in candidates if size(snap) == ev["size"]]
        if not any((lg := log(snap)) is not None and lg.root == ev["root"] for snap in same):
            have = sorted({n for n in (size(snap) for snap in candidates) if n is not None})
            where = mainline[by_root[ev["head"]][-1]].commit
            chk.fail(
                f"{label}: no snapshot with root {format_root(ev['head'])[:27]}… records {ev['size']} evidence "
                f"entries with root 0x{ev['root'].hex()} (their logs have {have or 'no readable'} entries)",
                snapshot=where,
                index=n,
                expected=f"0x{ev['root'].hex()}",
            )
    final = events[-1]
    if (final["size"], final["root"]) != (onchain_size, root):
        chk.fail(
            f"the last EvidenceCommitted event says size {final['size']}, but evidenceOf answers size "
            f"{onchain_size} at block {height}",
            expected=f"{final['size']} 0x{final['root'].hex()}",
            computed=f"{onchain_size} 0x{root.hex()}",
        )
    head = mainline[-1] if mainline else None
    head_log = log(head) if head is not None else None
    if head is None or head_log is None:
        chk.fail("the head snapshot's evidence log cannot be read", snapshot=head.commit if head else None)
    else:
        problem = prefix_problem(head_log, final["size"], final["root"])
        if problem is not None:
            chk.fail(
                f"head snapshot {head.commit[:12]}: {problem} (on chain {final['size']}, in this clone "
                f"{head_log.size})",
                snapshot=head.commit,
                expected=str(final["size"]),
                computed=str(head_log.size),
            )
    if head_log is not None:
        wanted = f"0x{agent:064x}"
        for i, entry in enumerate(head_log.entries):
            try:
                named = oc.loads(entry)["record"]["agent"]
            except (LedgerError, KeyError, TypeError):
                continue  # not a record at all: the store-side 'evidence' check fails it
            if named is not None and named != wanted:
                chk.fail(
                    f"head snapshot's outcome {i} names agent {named}, not the audited agent {wanted} "
                    "(see docs/lineage.md, 'Audit rules (check evidence)')",
                    snapshot=head.commit if head else None,
                )
                break
    if chk.ok:
        chk.summary = (
            f"{len(events)} evidence root(s), each bound to a snapshot that records it; the head's log "
            f"({head_log.size if head_log else 0} entries) extends the last ({final['size']})"
        )


def _head_at(root_events: list[dict[str, Any]], at: tuple[int, int]) -> bytes | None:
    """The registry's head at a log position: the root of the last RootCommitted event before it."""
    head = None
    for ev in root_events:
        if (ev["block"], ev["log_index"]) > at:
            break
        head = ev["root"]
    return head
