"""What push, pull, clone and resolve return (ADR 73): the typed documents of their ``--json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ledger.reports import OMIT, Report
from ledger.write.records import Receipt


@dataclass(frozen=True)
class EpochReceiptsTaken(Report):
    """The other copy's epoch receipts (heads and evidence): how many were taken, each refused one and why."""

    taken: int
    refused: tuple[str, ...]


@dataclass(frozen=True)
class IncomingReceipts(Report):
    """What became of the other copy's receipts; empty when nothing was fetched (the remote held no news).

    ``refused`` names each chain receipt that did not hold up; ``unverified`` counts the ones kept apart
    (no chain to check them against); ``refused_refs`` each ref beside ``main`` refused whole → why."""

    taken: int = field(default=OMIT)
    unverified: int = field(default=OMIT)
    refused: tuple[str, ...] = field(default=OMIT)
    epochs: EpochReceiptsTaken = field(default=OMIT)
    refused_refs: dict[str, str] = field(default=OMIT)

    @classmethod
    def of(cls, doc: dict[str, Any]) -> IncomingReceipts:
        epochs = doc.get("epochs")
        return cls(**{**doc, **({"epochs": EpochReceiptsTaken(**epochs)} if epochs is not None else {})})


@dataclass(frozen=True)
class MergeReport(Report):
    """How the other lineage came in: ``nothing``, a ``fast-forward`` (the skills it changed), or a ``merge``
    snapshot (the skills it changed, those merged file by file, its change trailers, conflicts and notes)."""

    action: Literal["nothing", "fast-forward", "merge"]
    head: str
    skills: tuple[str, ...] = field(default=OMIT)
    merged: tuple[str, ...] = field(default=OMIT)
    changes: tuple[str, ...] = field(default=OMIT)
    conflicts: tuple[str, ...] = field(default=OMIT)
    notes: tuple[str, ...] = field(default=OMIT)

    @classmethod
    def of(cls, doc: dict[str, Any] | None) -> MergeReport | None:
        return None if doc is None else cls(**doc)


@dataclass(frozen=True)
class PushReport(Report):
    """The snapshots and receipts published to a remote; ``snapshots`` only when the remote held none before."""

    remote: str
    head: str
    was: str | None
    pushed: bool
    incoming_receipts: IncomingReceipts
    merges: tuple[MergeReport, ...]
    snapshots: int = field(default=OMIT)

    @classmethod
    def of(cls, doc: dict[str, Any]) -> PushReport:
        return cls(
            **{
                **doc,
                "incoming_receipts": IncomingReceipts.of(doc["incoming_receipts"]),
                "merges": tuple(MergeReport(**m) for m in doc["merges"]),
            }
        )


@dataclass(frozen=True)
class PullReport(Report):
    """A remote's snapshots and receipts taken once they passed the audit; ``merge`` when lineages diverged."""

    remote: str
    source: str = field(metadata={"key": "from"})
    to: str
    moved: bool
    action: Literal["nothing", "fast-forward", "merge"]
    merge: MergeReport | None
    incoming_receipts: IncomingReceipts

    @classmethod
    def of(cls, doc: dict[str, Any]) -> PullReport:
        return cls(
            doc["remote"],
            doc["from"],
            doc["to"],
            doc["moved"],
            doc["action"],
            MergeReport.of(doc["merge"]),
            IncomingReceipts.of(doc["incoming_receipts"]),
        )


@dataclass(frozen=True)
class CloneReport(Report):
    """A new brain made from a remote, audited before use; ``refused_refs``: each ref beside ``main`` left
    behind → why (the command then exits 1)."""

    remote: str
    path: str
    skills: int
    root: str
    refused_refs: dict[str, str]


@dataclass(frozen=True)
class ResolveReport(Report):
    """A fleet merge's conflict settled: ``kept`` (no snapshot) or ``other`` (a resolve snapshot's receipt)."""

    skill: str
    took: Literal["kept", "other"]
    snapshot: Receipt | None
