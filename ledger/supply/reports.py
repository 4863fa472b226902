"""The typed results of the supply use cases (``ledger supply install|approve|revoke|outdated|update|supply …``,
docs/supply-chain.md): what each prints with ``--json`` (:mod:`ledger.reports`, ADR 73)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ledger.evals.reports import ReceiptReport
from ledger.reports import OMIT, Listing, Report
from ledger.scanner.reports import VerdictReport

State = Literal["quarantined", "approved", "revoked"]
# A source's pin: {"commit"} | {"commit", "root", "seq"} | {"sha256"} (docs/supply-chain.md §2); its keys are the
# source type's, so the type names them as an open object.
Pin = dict[str, Any]


@dataclass(frozen=True)
class InstallRow(Report):
    """One skill of an install: installed (its version, state, scan and pin), unchanged, or refused (why)."""

    skill: str
    status: Literal["installed", "unchanged", "refused"]
    version: int = field(default=OMIT)
    state: State = field(default=OMIT)
    verdict: str = field(default=OMIT)
    scanner: str = field(default=OMIT)
    findings: int = field(default=OMIT)
    pin: Pin = field(default=OMIT)
    blake3: str = field(default=OMIT)
    sha256: str = field(default=OMIT)
    held: str = field(default=OMIT)  # why a listed signer's skill was not auto-approved
    error: str = field(default=OMIT)
    hint: str = field(default=OMIT)


@dataclass(frozen=True)
class InstallReport(Report):
    """An install: the skills installed, each skill's row, whether it was --frozen, the skills refused, and
    (when anything was written) the snapshot; from a source, what was stripped from its URL."""

    installed: list[str]
    skills: tuple[InstallRow, ...]
    frozen: bool
    refused: list[str]
    commit: str = field(default=OMIT)
    root: str = field(default=OMIT)
    signer: str | None = field(default=OMIT)
    stripped: list[str] = field(default=OMIT)  # the kinds of credential removed (never a value)


@dataclass(frozen=True)
class ApproveReport(ReceiptReport):
    """Skills approved out of quarantine: the receipt of the 'approve' snapshot."""


@dataclass(frozen=True)
class RevokeReport(Report):
    """A revocation: the digests revoked, the installed skills it revoked, the snapshot and its signer."""

    revoked: list[str]
    skills: list[str]
    commit: str
    signer: str | None


@dataclass(frozen=True)
class OutdatedRow(Report):
    """An installed skill whose source serves other bytes (latest, its pin there), or whose source cannot be
    read (error)."""

    skill: str
    pin: Pin
    error: str = field(default=OMIT)
    latest: Pin = field(default=OMIT)
    state: State = field(default=OMIT)


@dataclass(frozen=True)
class OutdatedReport(Listing):
    """Every installed skill whose source now serves a newer version (a JSON array)."""

    rows: tuple[OutdatedRow, ...] = ()


@dataclass(frozen=True)
class SignerChange(Report):
    """The upstream signer before and after an update."""

    from_: str | None = field(default=None, metadata={"key": "from"})
    to: str | None = None


@dataclass(frozen=True)
class UpdateReport(Report):
    """An update of one installed skill: the review (pins, the diff against the vetted version, the scan) and,
    when applied, the new version in quarantine and its snapshot."""

    skill: str
    from_: Pin = field(default_factory=dict, metadata={"key": "from"})
    to: Pin = field(default_factory=dict)
    # The review's diff: added/removed/changed paths, safety items, texts, the fork (ledger.supply.review).
    diff: dict[str, Any] = field(default_factory=dict)
    forked: bool = False
    verdict: VerdictReport | None = None
    applied: bool = False
    signer: SignerChange = field(default=OMIT)
    unchanged: Literal[True] = field(default=OMIT)
    version: int = field(default=OMIT)
    commit: str = field(default=OMIT)
    state: State = field(default=OMIT)


@dataclass(frozen=True)
class Approval(Report):
    """Whether an installed skill was approved automatically, who approved it, and the override's reason.

    The members are in the canonical record's order (sorted: the record is JCS-like, docs/supply-chain.md §3),
    as every record read back holds them."""

    auto: bool
    by: str | None
    override: str | None


@dataclass(frozen=True)
class SupplyEntryReport(Report):
    """One installed skill's supply record entry (docs/supply-chain.md §3): its source, pin, digests, upstream
    signer, credit, state, verdict, approval and (format 2 on) SKILL.md's counter line as served."""

    source: dict[str, Any]  # {"type", "url", "path", "ref"}: the source type's members
    pin: Pin
    version: int
    blake3: str
    sha256: str
    files: dict[str, str]
    signer: str | None
    derived_from: dict[str, Any] | None  # the upstream agent and root (ERC-8239's vocabulary)
    state: State
    # The verdict as recorded: scanner, worst, findings and (format 3) each scanner's calibration.
    verdict: dict[str, Any]
    approval: Approval | None
    counter: str | None = field(default=OMIT)

    @classmethod
    def of(cls, entry: Any) -> SupplyEntryReport:
        doc = entry.to_json()
        if doc["approval"] is not None:
            doc["approval"] = Approval(**doc["approval"])
        return cls(**doc)


@dataclass(frozen=True)
class Revocation(Report):
    """A revoked digest: the pin and source it was revoked as (null: revoked by digest), and why.

    The members are in the canonical record's order (sorted), as every record read back holds them."""

    pin: str | None
    reason: str
    source: str | None


@dataclass(frozen=True)
class SupplyListReport(Report):
    """The supply record: its format, every revoked digest and every installed skill."""

    format: int
    revoked: dict[str, Revocation]
    skills: dict[str, SupplyEntryReport]

    @classmethod
    def of(cls, record: Any) -> SupplyListReport:
        return cls(
            record.format,
            {d: Revocation(**why) for d, why in record.revoked.items()},
            {n: SupplyEntryReport.of(e) for n, e in record.skills.items()},
        )
