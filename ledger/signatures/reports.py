"""What ``ledger keys`` returns for signing keys and the trust set (ADR 73): the typed ``--json`` documents.

A command that records a snapshot (trust, revoke, rotate, policy, sign) prints its
receipt (:class:`ledger.write.records.Receipt`); these are the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ledger.reports import OMIT, Report

Role = Literal["user", "agent", "curator", "verifier"]


@dataclass(frozen=True)
class TrustedKey(Report):
    """A key the head's trust set trusts, and as what."""

    address: str
    role: Role


@dataclass(frozen=True)
class LocalKey(Report):
    """This machine's ROLE key: the one the brain signs with when it trusts it (address None: there is none)."""

    role: Role
    address: str | None
    path: str
    trusted: bool


@dataclass(frozen=True)
class KeysReport(Report):
    """This machine's signing keys and the keys this brain trusts, revoked and its signature policy."""

    signing: bool
    policy: Literal["signed", "open"]
    keys_dir: str
    trusted: tuple[TrustedKey, ...]
    revoked: tuple[str, ...]
    local: tuple[LocalKey, ...]

    @classmethod
    def of(cls, doc: dict[str, Any]) -> KeysReport:
        return cls(
            doc["signing"],
            doc["policy"],
            doc["keys_dir"],
            tuple(TrustedKey(**k) for k in doc["trusted"]),
            tuple(doc["revoked"]),
            tuple(LocalKey(**k) for k in doc["local"]),
        )


@dataclass(frozen=True)
class KeyReport(Report):
    """This machine's ROLE key: made now (``created``), or found and left as it was."""

    role: Role
    address: str | None
    path: str
    created: bool


@dataclass(frozen=True)
class TrustUnchanged(Report):
    """Trusting a key already trusted as that role: nothing changed (exit 0), as a re-run expects."""

    changed: Literal[False]
    address: str
    role: Role


@dataclass(frozen=True)
class KeyExportReport(Report):
    """Public keys exported for tools outside the ledger (no secret is read): where they went.

    ``output`` is the file written; when it is None the exported text is ``text`` (what the command
    prints to stdout without --json).  ``--public``: the ROLE key's address and the sibling's scheme;
    ``--allowed-signers``: how many signers; ``notes``: what the command says on stderr."""

    exported: Literal["public", "allowed-signers"]
    output: str | None
    text: str = field(default=OMIT)
    role: Role = field(default=OMIT)
    address: str = field(default=OMIT)
    scheme: Literal["p256", "ed25519"] = field(default=OMIT)
    signers: int = field(default=OMIT)
    notes: tuple[str, ...] = ()
