"""Evidence through epochs, in ``chain.epochs``: evidence receipts and the evidence entries of an operator's log.

An evidence entry (:mod:`ledger.protocol.epochevidence`) says "when agent A's last head entry in this
log was ``head``, its evidence log had ``size`` entries with tree hash ``root``".  The replay holds
every agent's evidence entries to the log's rule (each bound to the agent's last head entry before
it, sizes strictly growing) and this agent's to the clone (some mainline snapshot with root ``head``
records exactly that log; the head's log starts with the largest one, so a log trimmed or rewritten
after it was anchored fails, naming both sizes).  Each evidence receipt
(``refs/notes/ledger-epoch-evidence``) is checked offline, on the snapshot it sits on, and against
the chain as a head receipt is (docs/lineage/epochs.md §7 steps 3 to 5).
"""

from __future__ import annotations

from typing import Any

from ledger.audit.verdicts import Check
from ledger.bundle.merkle import format_root
from ledger.errors import LedgerError
from ledger.protocol import epochevidence
from ledger.protocol.evidencelog import EvidenceLog, prefix_problem
from ledger.store import gitstore as gs
from ledger.store.evidence import log_of

__all__ = ["EvidenceRule", "check_agent_evidence", "check_evidence_receipt", "snapshot_log"]


class EvidenceRule:
    """The log's rule for evidence entries, entry by entry in log order (one instance per replayed log)."""

    def __init__(self, operator: str) -> None:
        self.operator = operator
        self.last: dict[int, int] = {}  # agent → its last evidence size in this log

    def step(self, chk: Check, n: int, item: bytes, heads: dict[int, tuple[int, bytes]]) -> tuple[Any, ...] | None:
        """Entry ``n`` (an evidence entry), given each agent's last head entry before it (agent → (seq, root));
        fail ``chk`` and return None when it breaks the rule, else its (agent, head, size, root)."""
        agent, head, size, root = epochevidence.parse_evidence_entry(item)
        seq, last_head = heads.get(agent, (0, b""))
        if last_head != head:
            chk.fail(
                f"forked operator: entry {n} of {self.operator}'s log anchors evidence of agent {agent:#x} bound "
                f"to head {format_root(head)}, but the agent's last head entry before it is "
                f"{'seq ' + str(seq) + ' ' + format_root(last_head) if seq else 'none'}",
                index=n,
                expected=format_root(last_head) if seq else "a head entry first",
                computed=format_root(head),
            )
            return None
        if size <= self.last.get(agent, 0):
            chk.fail(
                f"forked operator: entry {n} of {self.operator}'s log anchors {size} evidence entries of agent "
                f"{agent:#x}, not more than the {self.last[agent]} it anchored before",
                index=n,
                expected=f"> {self.last[agent]}",
                computed=str(size),
            )
            return None
        self.last[agent] = size
        return agent, head, size, root


def snapshot_log(store: gs.GitStore, snap: gs.Snapshot, cache: dict[str, EvidenceLog | None]) -> EvidenceLog | None:
    """A snapshot's evidence log, cached by its top tree; None when it cannot be read (the evidence check names why)."""
    if snap.tree not in cache:
        try:
            cache[snap.tree] = log_of(store, snap)
        except LedgerError:
            cache[snap.tree] = None
    return cache[snap.tree]


def _recorded(
    store: gs.GitStore,
    mainline: list[gs.Snapshot],
    head: bytes,
    size: int,
    root: bytes,
    cache: dict[str, EvidenceLog | None],
) -> gs.Snapshot | None:
    """The newest mainline snapshot with bundle root ``head`` whose evidence log is exactly (size, root)."""
    for snap in reversed(mainline):
        if snap.root == head:
            log = snapshot_log(store, snap, cache)
            if log is not None and (log.size, log.root) == (size, root):
                return snap
    return None


def check_agent_evidence(
    chk: Check,
    store: gs.GitStore,
    mainline: list[gs.Snapshot],
    operator: str,
    mine: list[tuple[int, bytes, int, bytes]],
    cache: dict[str, EvidenceLog | None],
) -> None:
    """This agent's evidence entries of one operator's log, (index, head, size, root) in log order, against the
    clone.  An entry bound to a head this clone does not have yet is not compared (the copy may be behind)."""
    roots = {s.root for s in mainline}
    last = None
    for n, head, size, root in mine:
        if head not in roots:
            continue
        if _recorded(store, mainline, head, size, root, cache) is None:
            chk.fail(
                f"entry {n} of {operator}'s log anchors {size} evidence entries of this agent with root "
                f"0x{root.hex()} bound to head {format_root(head)}, but no mainline snapshot with that root "
                "records that log",
                index=n,
                expected=f"{size} 0x{root.hex()}",
            )
        last = (n, size, root)
    if last is None or not mainline:
        return
    n, size, root = last
    head_snap = mainline[-1]
    head_log = snapshot_log(store, head_snap, cache)
    if head_log is None:
        chk.fail("the head snapshot's evidence log cannot be read", snapshot=head_snap.commit)
        return
    problem = prefix_problem(head_log, size, root)
    if problem is not None:
        problem = problem.replace("the chain anchored", "the operator's log anchored")
        chk.fail(
            f"head snapshot {head_snap.commit[:12]}: {problem} (entry {n} of {operator}'s log: anchored "
            f"{size}, in this clone {head_log.size})",
            snapshot=head_snap.commit,
            index=n,
            expected=str(size),
            computed=str(head_log.size),
        )


def check_evidence_receipt(
    chk: Check,
    store: gs.GitStore,
    mainline: list[gs.Snapshot],
    agent: int,
    commit: str,
    facts: dict[str, Any],
    cache: dict[str, EvidenceLog | None],
) -> bool:
    """The receipt on ``commit`` (verified offline) sits on a mainline snapshot of this agent whose root is its head
    and whose log is exactly its (size, root); the chain's steps are the caller's.  Whether it holds."""
    snap = next((s for s in mainline if s.commit == commit), None)
    if facts["agent"] != agent or snap is None or snap.root != facts["head"]:
        chk.fail(
            f"the evidence receipt on {commit[:12]} names agent {facts['agent']:#x} and head "
            f"{format_root(facts['head'])}, which is not that mainline snapshot of this agent",
            snapshot=commit,
        )
        return False
    log = snapshot_log(store, snap, cache)
    if log is None or (log.size, log.root) != (facts["evidence_size"], facts["evidence_root"]):
        chk.fail(
            f"the evidence receipt on {commit[:12]} anchors {facts['evidence_size']} evidence entries with root "
            f"0x{facts['evidence_root'].hex()}, but that snapshot records "
            f"{'an unreadable log' if log is None else str(log.size) + ' with root 0x' + log.root.hex()}",
            snapshot=commit,
            expected=str(facts["evidence_size"]),
            computed=str(log.size if log else None),
        )
        return False
    return True
