"""Configuration a skill writes or ships: agent settings and hooks, crontabs, shell rc files,
systemd units, launchd plists (skeleton)."""

from __future__ import annotations

from ledger.supply.meaning.units import Unit
from ledger.supply.scanrules import Finding

__all__ = ["analyse"]


def analyse(unit: Unit) -> list[Finding]:
    return []
