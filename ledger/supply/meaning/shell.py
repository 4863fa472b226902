"""Shell commands parsed with bashlex, normalised, and judged by behaviour (skeleton)."""

from __future__ import annotations

from ledger.supply.meaning.units import Unit
from ledger.supply.scanrules import Finding

__all__ = ["analyse"]


def analyse(unit: Unit) -> list[Finding]:
    return []
