"""Sharing's use cases: push, pull, clone and resolve, each returning its report (:mod:`ledger.remotes.reports`).

The work is :mod:`ledger.remotes.sharing` and :mod:`ledger.remotes.lineagemerge`; these give
the CLI, the agent and the Python API the same typed result.  No printing, no exit codes.
"""

from __future__ import annotations

from pathlib import Path

from ledger.brain import Brain
from ledger.remotes import lineagemerge, sharing
from ledger.remotes.reports import CloneReport, PullReport, PushReport, ResolveReport

__all__ = ["clone", "pull", "push", "resolve"]


def push(brain: Brain, remote: str) -> PushReport:
    """Publish the snapshots and receipts to ``remote``, merging what it holds that this brain lacks."""
    return PushReport.of(sharing.push(brain, remote))


def pull(brain: Brain, remote: str) -> PullReport:
    """Take ``remote``'s snapshots and receipts once they pass the audit; merge where the lineages diverged."""
    return PullReport.of(sharing.pull(brain, remote))


def clone(remote: str, directory: str | Path) -> CloneReport:
    """Make a new brain in ``directory`` from ``remote``, audited before use; a ref beside ``main`` that does
    not hold up is left behind and named in the report's ``refused_refs``."""
    refused: dict[str, str] = {}
    with sharing.clone(remote, directory, refused) as brain:
        head = brain.head()
        return CloneReport(
            remote=remote,
            path=str(brain.root),
            skills=len(head.skills),
            root=head.snap.to_json()["root"],
            refused_refs=refused,
        )


def resolve(brain: Brain, name: str, take: str) -> ResolveReport:
    """Settle the fleet merge's conflict on skill ``name``: ``kept`` or ``other`` (a new version)."""
    return lineagemerge.settle(brain, name, take)
