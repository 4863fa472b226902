"""What is unsettled between the brain and its targets, from ``.ledger/`` alone: the use case of the MCP
tool ``skills_sync_status`` (``ledger status`` shows the same). It reads no target and writes nothing.
It sits in the remotes' layer (tests/unit/test_layers.py): the merge conflicts are the fleet's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.remotes.lineagemerge import conflicts, describe
from ledger.sync.reports import HiddenHeld, KeptCopy, LinkedTarget, SyncStatusReport
from ledger.sync.targets import Targets

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["status"]


def status(brain: Brain) -> SyncStatusReport:
    """The targets, their unsettled conflicts, the copies kept aside, the held files an ignore rule
    names (the rule is not obeyed for them), and the merge conflicts of lineages joined from other
    machines (``ledger sync`` with a remote)."""
    targets = Targets(brain.control)
    return SyncStatusReport(
        targets=tuple(LinkedTarget(t.name, t.path, t.layout) for t in targets.all()),
        conflicts=tuple(targets.conflicts()),
        rescued=tuple(KeptCopy(**r) for r in targets.rescued()),
        ignored_held=tuple(HiddenHeld(**h) for h in targets.ignored_held()),
        merge_conflicts=tuple(describe(conflicts(brain))),
    )
