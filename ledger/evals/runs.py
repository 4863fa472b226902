"""The evaluation use cases: register a plan, run it, re-run the stale versions, import a workspace
(``ledger eval plan|run|import``; docs/reference.md, "Eval runner contract"; docs/lineage/evaluations.md).

Each takes the brain's evaluations (``ledger.brain.evaluations.Evaluations(brain)``: this package sits below
the brain, so it is handed in, not built here) and returns a report of :mod:`ledger.evals.reports`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ledger.evals.reports import (
    EvalImportReport,
    EvalPlanReport,
    EvalPlanUnchanged,
    EvalRun,
    EvalRunReport,
    EvalStaleReport,
    Party,
    Plan,
    PlanRule,
)

__all__ = ["import_workspace", "plan", "rerun_stale", "run"]


def _plan(entry: Any) -> Plan:
    body = dict(entry.body)
    body["runner"], body["grader"] = Party(**body["runner"]), Party(**body["grader"])
    body["rule"] = PlanRule(**body["rule"])
    return Plan(id=entry.id.hex(), **body, order=tuple(entry.body))


def plan(
    evals: Any,
    name: str,
    *,
    runner: str | None = None,
    grader: str | None = None,
    runner_id: str | None = None,
    grader_id: str | None = None,
    baseline: str = "none",
    runs: int = 1,
    min_lift: float = 0.0,
) -> EvalPlanReport | EvalPlanUnchanged:
    """Register how ``name`` is evaluated (one signed plan entry), or, given the current plan's parameters,
    say so and write nothing."""
    receipt, entry, written = evals.plan(
        name,
        runner=runner,
        grader=grader,
        runner_id=runner_id,
        grader_id=grader_id,
        baseline=baseline,
        runs=runs,
        min_lift=min_lift,
    )
    if not written:
        return EvalPlanUnchanged(plan=_plan(entry))
    return EvalPlanReport.from_receipt(receipt, changed=True, plan=_plan(entry))


def _runs(rows: list[dict[str, Any]]) -> tuple[EvalRun, ...]:
    return tuple(EvalRun(**{("pass_" if k == "pass" else k): v for k, v in row.items()}) for row in rows)


def _report(cls: type, done: dict[str, Any]) -> Any:
    done = dict(done)
    receipt = done.pop("receipt")
    done["runs"] = _runs(done["runs"])
    return cls.from_receipt(receipt, **done)


def run(
    evals: Any,
    name: str,
    version: int | None = None,
    *,
    runner: str | None = None,
    grader: str | None = None,
    baseline: str | None = None,
    runs: int | None = None,
    workspace: Path | None = None,
    timeout: float = 600,
    note: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> EvalRunReport:
    """Run ``name``'s plan on ``name`` at ``version`` (None: the head's) and record every run as one batch."""
    return _report(
        EvalRunReport,
        evals.run(
            name,
            version,
            runner=runner,
            grader=grader,
            baseline=baseline,
            runs=runs,
            workspace=workspace,
            timeout=timeout,
            note=note,
            progress=progress,
        ),
    )


def rerun_stale(evals: Any, name: str, **options: Any) -> EvalStaleReport:
    """Re-run each version of ``name`` whose evaluations declare another runner or grader than the plan's."""
    done = evals.rerun_stale(name, **options)
    return EvalStaleReport(
        done["skill"], done["plan"], tuple(_report(EvalRunReport, r) for r in done["rerun"]), done["skipped"]
    )


def import_workspace(
    evals: Any,
    workspace: Path,
    name: str,
    version: int | None = None,
    *,
    iteration: int | None = None,
    runner_id: str = "undeclared",
    grader_id: str = "undeclared",
    baseline: int | None = None,
    set_digest: str | None = None,
    note: str = "",
) -> EvalImportReport:
    """Record every run of an agentskills workspace as one batch (under no plan: not pre-registered)."""
    return _report(
        EvalImportReport,
        evals.import_workspace(
            workspace,
            name,
            version,
            iteration=iteration,
            runner_id=runner_id,
            grader_id=grader_id,
            baseline=baseline,
            set_digest=set_digest,
            note=note,
        ),
    )
