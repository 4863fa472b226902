"""The audit's typed result: what ``ledger verify``/``ledger audit`` print with ``--json`` (ADR 73).

:class:`ledger.audit.verdicts.Report` is the audit's working state, filled in check by check;
:class:`AuditReport` is the frozen verdict made of it at the end, the one document the CLI,
the HTML page and the Python API share.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from ledger.audit.verdicts import Report as Working
from ledger.reports import Report, key

__all__ = ["AuditCheck", "AuditReport", "DiffReport", "FileChange", "FrozenFailure", "PageReport", "SkillStatsReport"]


@dataclass(frozen=True)
class AuditCheck(Report):
    """One rule's verdict (docs/lineage.md §10); a failure pinpoints its first divergence."""

    name: str
    ok: bool
    summary: str
    snapshot: str | None
    index: int | None
    path: str | None
    expected: str | None
    computed: str | None
    failures: int
    skipped: bool  # could not run: never reported as OK
    warned: bool  # passed, with something a reader must know

    @property
    def status(self) -> str:
        return "FAIL" if not self.ok else "SKIP" if self.skipped else "WARN" if self.warned else "OK"


@dataclass(frozen=True)
class AuditReport(Report):
    """An audit of a brain's lineage: every check, the verdict, and what it read to reach it."""

    repo: str
    ok: bool
    verdict: str  # the last line of the text: OK never hides a check that was not made
    skipped: list[str]  # the checks that did not run
    checks: dict[str, AuditCheck]
    pending: list[str]  # snapshots newer than the on-chain head
    # Open shapes: the chain's answers, the run's context, the timeline's and the skills' rows and the
    # supply rows are the audit's own records (docs/lineage.md §10), each a JSON object of its own.
    chain: dict[str, Any] | None
    context: dict[str, Any]
    timeline: list[dict[str, Any]]
    skills: dict[str, list[dict[str, Any]]]
    supply: list[dict[str, Any]]

    @classmethod
    def of(cls, report: Working, repo: str | None = None) -> AuditReport:
        """The verdict of a finished audit (``repo``: the name to print instead of its path)."""
        doc = report.to_json()
        return cls(
            repo=repo if repo is not None else doc["repo"],
            ok=doc["ok"],
            verdict=doc["verdict"],
            skipped=doc["skipped"],
            checks={k: AuditCheck(**asdict(v)) for k, v in report.checks.items()},
            pending=doc["pending"],
            chain=doc["chain"],
            context=doc["context"],
            timeline=doc["timeline"],
            skills=doc["skills"],
            supply=doc["supply"],
        )


@dataclass(frozen=True)
class FrozenFailure(Report):
    """``verify --frozen --json`` when an installed skill differs from its pin (exit 1)."""

    # Installer.verify_frozen()'s document ({"ok", "skills": [...]}), ledger.supply's to type.
    frozen: dict[str, Any]


@dataclass(frozen=True)
class FileChange(Report):
    """One changed file of a diff."""

    path: str  # skills/NAME/REL
    status: Literal["added", "deleted", "modified", "mode"]
    binary: bool
    insertions: int
    deletions: int

    def counts(self) -> tuple[int, int]:
        """(insertions, deletions), as :func:`ledger.store.diffs.render_stat` reads a file's."""
        return self.insertions, self.deletions


@dataclass(frozen=True)
class DiffReport(Report):
    """What differs between two states, as ``git diff`` says it (``ledger diff --json``)."""

    old: str = key("from")  # a commit id, or "working tree"
    new: str = key("to")
    skills: dict[str, Literal["added", "deleted", "modified"]]  # each changed skill
    files: list[FileChange]
    patch: str  # the unified diff, as the text output prints it

    @classmethod
    def of(cls, diff: Any) -> DiffReport:
        """From a :class:`ledger.store.diffs.Diff`."""
        doc = diff.to_json()
        return cls(
            old=doc["from"],
            new=doc["to"],
            skills=doc["skills"],
            files=[FileChange(**f) for f in doc["files"]],
            patch=doc["patch"],
        )


@dataclass(frozen=True)
class SkillStatsReport(Report):
    """A skill's outcomes and lift per version (``ledger skill show NAME --stats --json``).

    docs/lineage.md, 'Competence'."""

    skill: str
    live: int | None  # the head's version (None: the skill is deleted)
    # Each version's outcomes by tier and lift by tier, the regression and the flagged lifts: the
    # competence records' own objects (ledger.brain.competence, ledger.evals.lift), typed there.
    versions: list[dict[str, Any]]
    regression: dict[str, Any] | None
    lift_regressions: list[dict[str, Any]]


@dataclass(frozen=True)
class PageReport(Report):
    """The audited page written (``ledger report --json``): where, its verdict, and the figures the text line gives."""

    output: str  # the index.html written
    ok: bool  # the audit passed; false: the page shows the brain as FAILING (exit 1, the page still written)
    verdict: Literal["verified OK", "verification FAILED"]
    chain_checked: bool  # --rpc: the chain was checked too
    commit: str  # the head snapshot the page shows
    root: str
    skills: int
    snapshots: int
    outcomes: int
