"""``ledger status`` as a use case: the brain at a glance, returned as a :class:`StatusReport`.

What differs between the working tree and the head snapshot (the brain's reads), and what needs
a hand: snapshots without a chain receipt, regressions, versions the eval gate holds, sync
conflicts and rescued files (:mod:`ledger.sync.targets`), unsettled merges from a fleet
(:mod:`ledger.remotes.lineagemerge`). Since it reads sync targets and merges, it sits above them
(one layer below the agent tools and the CLI, which both call it).
"""

from __future__ import annotations

from typing import Any

from ledger.brain import Brain
from ledger.brain.reports import GateState, StatusReport
from ledger.chain.receipts import remembered_pending
from ledger.evals import gate
from ledger.reports import OMIT

__all__ = ["StatusReport", "status"]


def status(brain: Brain) -> StatusReport:
    """What differs between the working tree and the head snapshot, and what needs a hand."""
    st = brain.status()
    cfg = brain.config.get("chain")
    pending = remembered_pending(brain.store, brain.control, cfg) if cfg else None  # the notes alone: no RPC
    sync: dict[str, Any] = {}
    if (brain.control / "targets.json").exists():
        from ledger.sync.targets import Targets

        targets = Targets(brain.control)
        sync = {
            "sync_conflicts": tuple(targets.conflicts()),
            "sync_rescued": tuple(targets.rescued()),
            "sync_ignored_held": tuple(targets.ignored_held()),
        }
    regressions = st.regressions if st.regressions is not None else brain.evidence.regressions()
    merged: Any = OMIT
    if (brain.control / "fleet").is_dir():
        from ledger.remotes.lineagemerge import conflicts, describe

        merged = tuple(describe(conflicts(brain)))
    held = [g.to_json() for g in gate.read(brain).values() if g.held()]
    doc = st.to_json()
    return StatusReport(
        head=doc["head"],
        root=doc["root"],
        tree_root=doc["tree_root"],
        clean=doc["clean"],
        changes=doc["changes"],
        pending_chain=pending,
        **sync,
        merge_conflicts=merged,
        gate=GateState(on=True, held=held) if gate.enabled(brain.config) else OMIT,
        regressions=regressions,
    )
