"""What ``ledger keys new|import|list`` return for committer keystores (ADR 73).

A committer keystore pays for chain transactions; its secret never leaves it: these
documents carry a name, an address and where the keystore is, never the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledger.reports import OMIT, Report


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
class CommitterKeysReport(Report):
    """Every committer keystore, then anvil's dev key; the document is the list itself."""

    keys: tuple[CommitterKey, ...]

    def to_json(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [k.to_json() for k in self.keys]

    @classmethod
    def schema(cls) -> dict[str, Any]:
        item = CommitterKey.schema()
        item.pop("$schema")
        item.pop("title")
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": cls.__name__,
                "description": " ".join((cls.__doc__ or "").split()), "type": "array", "items": item}  # fmt: skip
