"""``ledger manifest``'s use case: a skill version's ERC-8239 manifest as a typed report (ADR 73)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.errors import LedgerError
from ledger.publish.reports import ManifestReport
from ledger.supply.manifest import build

__all__ = ["ManifestReport", "manifest"]


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
