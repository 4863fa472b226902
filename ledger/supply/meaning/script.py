"""The other languages a skill ships: JavaScript (``node -e``), PowerShell (``-enc``), Ruby, Perl, PHP (skeleton)."""

from __future__ import annotations

from ledger.supply.meaning.units import Unit
from ledger.supply.scanrules import Finding

__all__ = ["LANGS", "analyse"]

LANGS = ("js", "powershell", "ruby", "perl", "php")


def analyse(unit: Unit) -> list[Finding]:
    return []
