"""``ledger manifest``'s use case: a skill version's ERC-8239 manifest as a typed report (ADR 73)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.errors import LedgerError
from ledger.reports import Report, key
from ledger.supply.manifest import build, canonical_json

__all__ = ["ManifestReport", "manifest"]


@dataclass(frozen=True)
class ManifestReport(Report):
    """A skill version's ERC-8239 manifest and its manifestHash (docs/interop.md)."""

    skill: str
    version: int
    commit: str  # the snapshot that wrote this version
    manifest_hash: str = key("manifestHash")  # keccak256 of the manifest's bytes, 0x and 64 hex
    # The manifest object: the ERC's keys and a publisher's own (docs/interop.md §2.2), open by the ERC.
    manifest: dict[str, Any]

    def data(self) -> bytes:
        """The manifest's exact bytes (RFC 8785): what ``manifestHash`` is keccak256 of."""
        return canonical_json(self.manifest)


def manifest(brain: Any, name: str, version: int | None = None, out: Path | None = None) -> ManifestReport:
    """The manifest of skill ``name`` at ``version`` (None: the head snapshot's version); with ``out``,
    its exact bytes are written there."""
    m = build(brain, name, version)
    if out is not None:
        try:
            out.write_bytes(m.data)
        except OSError as exc:
            raise LedgerError(f"cannot write {out}: {exc.strerror}", hint="choose a writable path") from exc
    return ManifestReport(skill=m.name, version=m.version, commit=m.commit, manifest_hash=m.hash, manifest=m.doc)
