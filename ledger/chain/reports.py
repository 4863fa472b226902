"""What ``ledger keys new|import|list`` return for committer keystores (ADR 73).

A committer keystore pays for chain transactions; its secret never leaves it: these
documents carry a name, an address and where the keystore is, never the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger.reports import OMIT, Listing, Report


@dataclass(frozen=True)
class CommitterKeyReport(Report):
    """A committer keystore made (``keys new``) or imported (``keys import``): its name, address and file."""

    name: str
    address: str
    path: str


@dataclass(frozen=True)
class CommitterKey(Report):
    """One committer key: a keystore's name, address (None: its file does not name one) and file, or the dev
    key with its note."""

    name: str
    address: str | None
    path: str = field(default=OMIT)
    note: str = field(default=OMIT)


@dataclass(frozen=True)
class CommitterKeysReport(Listing):
    """Every committer keystore, then anvil's dev key; the document is the list itself."""

    keys: tuple[CommitterKey, ...]
