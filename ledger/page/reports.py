"""What ``ledger report --json`` prints (ADR 73): light, so the command line loads it at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ledger.reports import Report

__all__ = ["PageReport"]


@dataclass(frozen=True)
class PageReport(Report):
    """The page written (``ledger report --json``): where, its verdict, and the figures the text line gives."""

    output: str  # the index.html written
    ok: bool  # the audit passed; false: the page shows the brain as FAILING (exit 1, the page still written)
    verdict: Literal["verified OK", "verification FAILED"]
    chain_checked: bool  # --rpc: the chain was checked too
    commit: str  # the head snapshot the page shows
    root: str
    skills: int
    snapshots: int
    outcomes: int
