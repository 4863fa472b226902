"""The typed results of moving skill collections in and out (ADR 73): what ``ledger import``,
``export``, ``lint`` and ``apply`` print with ``--json``.

Light (the standard library and :mod:`ledger.reports`), so the command line loads them at start-up;
below the brain and the folders, so every surface that imports or lints can return them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ledger.reports import OMIT, Listing, Report, optional

__all__ = [
    "ApplyReport",
    "ExportReport",
    "ImportLint",
    "ImportReport",
    "ImportRow",
    "LintReport",
    "LockExportReport",
    "SkillVerdict",
]


@dataclass(frozen=True)
class ImportLint(Report):
    """An imported skill's spec verdict, kept as it is (see ``ledger skill lint``)."""

    valid: bool
    strict_valid: bool
    errors: list[str]
    extra: list[str]


@dataclass(frozen=True)
class ImportRow(Report):
    """One skill of an import: what happened to it and why."""

    skill: str
    source: str  # where it was read ('' for a skill the import deletes)
    notes: list[str]
    lint: ImportLint = field(default=OMIT)  # a skill read and planned (not refused, not deleted)
    status: Literal["imported", "updated", "unchanged", "refused", "deleted"] = "imported"
    version: int = optional()  # the version it has now (not for a refused skill)
    reason: str = optional()  # refused: why
    hint: str | None = optional()  # refused: how to fix it

    @classmethod
    def of(cls, row: dict[str, Any]) -> ImportRow:
        lint = row.get("lint")
        return cls(**{**row, **({"lint": ImportLint(**lint)} if lint is not None else {})})


# A snapshot's receipt (ledger.write.records.Receipt.to_json()): an object whose shape the receipt's own type says.
Receipt = dict[str, Any]


@dataclass(frozen=True)
class ImportReport(Report):
    """An import of skill collections as one snapshot (``ledger import``)."""

    layout: str
    dry_run: bool
    skills: list[ImportRow]
    snapshot: Receipt | None  # None: a dry run, or nothing changed
    found: list[str] = field(default=OMIT)  # what the layout reader noticed (the CLI's import only)
    skipped: list[str] = field(default=OMIT)  # entries of the sources that are no skill, and why

    @classmethod
    def of(
        cls, report: dict[str, Any], found: list[str] | None = None, skipped: list[str] | None = None
    ) -> ImportReport:
        """From the importer's document (:meth:`ledger.write.importer.Importer.import_collection`)."""
        extra: dict[str, Any] = {} if found is None else {"found": list(found), "skipped": list(skipped or [])}
        rows = [ImportRow.of(r) for r in report["skills"]]
        return cls(
            layout=report["layout"], dry_run=report["dry_run"], skills=rows, snapshot=report["snapshot"], **extra
        )


@dataclass(frozen=True)
class ApplyReport(Report):
    """A skill-evolution payload applied as one snapshot (``ledger skill apply``, the agent's apply tool)."""

    operation_type: str
    summary: str
    snapshot: Receipt | None  # None: the payload matches the brain
    skills: list[ImportRow]

    @classmethod
    def of(cls, result: dict[str, Any]) -> ApplyReport:
        """From :func:`ledger.agent.evolution.apply_payload`'s document."""
        return cls(
            operation_type=result["operation_type"],
            summary=result["summary"],
            snapshot=result["snapshot"],
            skills=[ImportRow.of(r) for r in result["skills"]],
        )


@dataclass(frozen=True)
class SkillVerdict(Report):
    """One skill's verdict against the agentskills spec and Hermes's limits."""

    skill: str
    valid: bool  # no spec error
    strict_valid: bool  # no extra field either
    errors: list[str]
    extra: list[str]  # top-level keys outside the spec: warnings, errors with --strict
    hermes: list[str]  # Hermes's tool limits (advisory)
    warnings: list[str]

    @classmethod
    def of(cls, verdict: Any) -> SkillVerdict:
        """From a :class:`ledger.bundle.lint.Verdict`."""
        return cls(**verdict.to_json())


@dataclass(frozen=True)
class LintReport(Listing):
    """``ledger skill lint``: each skill's verdict, in order.  Its document is the LIST of verdicts."""

    verdicts: list[SkillVerdict]
    strict: bool = False  # --strict: extra fields fail too

    @property
    def failed(self) -> list[str]:
        """The skills that fail (exit 1)."""
        return [v.skill for v in self.verdicts if not (v.strict_valid if self.strict else v.valid)]


@dataclass(frozen=True)
class ExportReport(Report):
    """A snapshot written into a folder in a runtime's layout (``ledger export DEST``)."""

    layout: str
    commit: str
    skills: int
    files: int
    dest: str
    withheld: list[str]  # quarantined or revoked skills left out


@dataclass(frozen=True)
class LockExportReport(Report):
    """The installed skills' pins written as the skills CLI's skills-lock.json (``ledger export --lock``)."""

    path: str
    skills: list[str]
