"""What ``ledger attest`` and ``ledger verify --attestation`` print with ``--json`` (ADR 73)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ledger.errors import LedgerError
from ledger.reports import Report, optional

__all__ = ["AttestReport", "AttestationFailed", "AttestationVerified"]

Format = Literal["oms", "intoto"]


@dataclass(frozen=True)
class AttestReport(Report):
    """An attestation made: of which snapshot and skill, signed by whose P-256 sibling, written where."""

    format: Format
    commit: str
    skill: str | None  # one skill, or None for every exported skill
    files: int
    signer: str  # the actor key's address
    role: Literal["user", "agent", "curator"]
    keyid: str
    certified_by: str  # the signed snapshot that certifies the sibling key
    withheld: list[str]  # quarantined or revoked skills left out, as 'ledger export' leaves them
    output: str = optional()  # the file written (-o); absent when the attestation went to stdout

    @classmethod
    def of(cls, summary: dict[str, Any]) -> AttestReport:
        return cls(**summary)


@dataclass(frozen=True)
class AttestationVerified(Report):
    """An attestation that verifies: its key, its signature and every subject against the brain."""

    ok: Literal[True]
    format: Format
    commit: str
    skill: str | None
    files: int
    signer: str
    role: Literal["user", "agent", "curator", "verifier"]
    keyid: str
    certified_by: str

    @classmethod
    def of(cls, summary: dict[str, Any]) -> AttestationVerified:
        return cls(**summary)


@dataclass(frozen=True)
class AttestationFailed(Report):
    """An attestation that does not verify: every failure alone (exit 1)."""

    ok: Literal[False]
    format: Format | None  # None: the document is of no known format
    problems: list[str]

    @classmethod
    def of(cls, exc: LedgerError) -> AttestationFailed:
        return cls(
            ok=False,
            format=exc.detail.get("format"),  # type: ignore[arg-type]
            problems=list(exc.detail.get("problems") or [exc.message]),
        )  # type: ignore[call-overload]
