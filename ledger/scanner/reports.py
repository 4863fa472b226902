"""The typed results of a scan (``ledger supply scan --json``; docs/scanner.md): each skill folder's verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ledger.reports import Report

Severity = Literal["critical", "high", "medium", "low"]


@dataclass(frozen=True)
class FindingReport(Report):
    """One finding: the rule, its severity, the file and line (null: the file as a whole), what it saw."""

    rule: str
    severity: Severity
    file: str
    line: int | None
    detail: str


@dataclass(frozen=True)
class VerdictReport(Report):
    """One skill's verdict: the scanner(s) that made it, the worst severity found, every finding."""

    scanner: str
    worst: Literal["critical", "high", "medium", "low", "clean"]
    findings: tuple[FindingReport, ...]

    @classmethod
    def of(cls, verdict: Any) -> VerdictReport:
        """The report of a :class:`ledger.scanner.static.Verdict` (its ``to_json()``, finding for finding)."""
        doc = verdict.to_json()
        return cls(doc["scanner"], doc["worst"], tuple(FindingReport(**f) for f in doc["findings"]))


@dataclass(frozen=True)
class ScanReport(Report):
    """Each scanned skill folder (as named on the command line, under PATHS) and its verdict: a JSON object
    keyed by the folder."""

    verdicts: dict[str, VerdictReport]

    def to_json(self) -> dict[str, Any]:
        return {path: v.to_json() for path, v in self.verdicts.items()}

    @classmethod
    def schema(cls) -> dict[str, Any]:
        item = VerdictReport.schema()
        del item["$schema"]
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": cls.__name__,
            "description": " ".join((cls.__doc__ or "").split()),
            "type": "object",
            "additionalProperties": item,
        }

    @property
    def blocked(self) -> list[str]:
        """The folders with a critical finding."""
        return [k for k, v in self.verdicts.items() if v.worst == "critical"]
