"""Evaluations: ``ledger eval plan|run|import`` (docs/reference.md, "Eval runner contract"; lineage/evaluations.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ledger.cli.common import (
    commit_flag,
    emit,
    json_flag,
    main,
    note_flag,
    open_brain,
    print_receipt,
    progress_bar,
    returns,
    want_commit,
)
from ledger.cli.outcomes import receipt_of, split_ref
from ledger.errors import UsageError

_ACTORS = click.Choice(["verifier", "agent", "user", "curator"])


@main.group("eval")
def eval_group() -> None:
    """Paired, pre-registered evaluations of skill versions (the agentskills evals/evals.json).

    'ledger eval plan NAME' registers, in a signed entry of the evidence log, how NAME's versions
    are evaluated: its eval set's digest and cases, the baseline, the run count, the runner and
    grader.  'ledger eval run NAME[@V]' runs every case with the skill and without it (or with the
    previous version), in a fresh sandbox per run, writes the agentskills workspace and records
    every run as a signed outcome, as one batch.  'ledger eval import' records a workspace made
    elsewhere (under no plan: not pre-registered).
    """


def _evaluations(brain: Any) -> Any:
    from ledger.brain.evaluations import Evaluations

    return Evaluations(brain)


@returns("ledger.evals.reports:EvalPlanReport", "ledger.evals.reports:EvalPlanUnchanged")
@eval_group.command("plan")
@click.argument("name")
@click.option("--runner", metavar="CMD", help="The runner's shell command [default: the reference runner].")
@click.option("--grader", metavar="CMD", help="The grader's shell command [default: the reference grader].")
@click.option("--runner-id", metavar="TEXT", help="The runner's declared identity: runtime, model, versions.")
@click.option("--grader-id", metavar="TEXT", help="The grader's declared identity.")
@click.option(
    "--baseline",
    type=click.Choice(["none", "previous"]),
    default="none",
    show_default=True,
    help="Compare with the skill absent (none) or with the version before (previous).",
)
@click.option(
    "--runs", type=click.IntRange(1, 100), default=1, show_default=True, help="Runs of each case under each condition."
)
@click.option(
    "--min-lift",
    type=click.FloatRange(-1, 1),
    default=0.0,
    show_default=True,
    help="The decision rule's least pass-rate lift (with − baseline).",
)
@click.option("--actor", type=_ACTORS, default="user", show_default=True, help="Whose key signs the plan.")
@note_flag
@commit_flag
@json_flag
@click.pass_context
def eval_plan(
    ctx: click.Context,
    name: str,
    runner: str | None,
    grader: str | None,
    runner_id: str | None,
    grader_id: str | None,
    baseline: str,
    runs: int,
    min_lift: float,
    actor: str,
    note: str,
    chain_commit: bool | None,
    as_json: bool,
) -> None:
    """Register how NAME is evaluated, before any result (pre-registration): one signed plan entry.

    The plan binds the head version's eval set (the digest of its evals/ folder) and cases; one plan
    serves every version while the set, runner and grader stay.  The same parameters as the current
    plan print it and write nothing.
    """
    from ledger.evals import runs as uc
    from ledger.evals.reports import EvalPlanUnchanged

    want_commit(ctx, chain_commit)
    with open_brain(ctx) as brain, brain.acting(actor):
        done = uc.plan(
            _evaluations(brain),
            name,
            runner=runner,
            grader=grader,
            runner_id=runner_id,
            grader_id=grader_id,
            baseline=baseline,
            runs=runs,
            min_lift=min_lift,
        )
    plan = done.plan.to_json()
    if isinstance(done, EvalPlanUnchanged):
        if as_json:
            emit(done)
        else:
            click.echo(
                f"plan {plan['id'][:12]} already registers these parameters for {plan['skill']}; nothing was written"
            )
        return
    if not as_json:
        click.echo(
            f"plan {plan['id'][:12]}  {plan['skill']}: {len(plan['cases'])} case(s) × {plan['runs']} run(s), "
            f"baseline {plan['baseline']}, eval set {plan['set']}"
        )
        click.echo(f"  runner {plan['runner']['id']}: {plan['runner']['command']}")
        click.echo(f"  grader {plan['grader']['id']}: {plan['grader']['command']}")
    print_receipt(ctx, receipt_of(done), as_json, done.extra_json())


@returns("ledger.evals.reports:EvalRunReport", "ledger.evals.reports:EvalStaleReport")
@eval_group.command("run")
@click.argument("ref", metavar="NAME[@VERSION]")
@click.option("--runner", metavar="CMD", help="Must be the plan's runner [default: the plan's].")
@click.option("--grader", metavar="CMD", help="Must be the plan's grader [default: the plan's].")
@click.option(
    "--baseline",
    metavar="none|VERSION",
    help="The baseline: the plan's [default], or the VERSION of a 'previous' plan to compare with.",
)
@click.option("--runs", type=click.IntRange(1, 100), help="Must be the plan's run count [default: the plan's].")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where iteration-K/ goes [default: .ledger/evals/NAME-workspace].",
)
@click.option(
    "--actor",
    type=_ACTORS,
    default="verifier",
    show_default=True,
    help="Whose key signs the runs: 'verifier' makes them verified, the agent's self-reported.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 86400),
    default=600,
    show_default=True,
    help="Seconds each run (and each grading) may take; then its process group is stopped.",
)
@click.option(
    "--stale",
    is_flag=True,
    help="Re-run every version of NAME whose evaluations declare another runner "
    "or grader identity than the current plan's.",
)
@note_flag
@commit_flag
@json_flag
@click.pass_context
def eval_run(
    ctx: click.Context,
    ref: str,
    runner: str | None,
    grader: str | None,
    baseline: str | None,
    runs: int | None,
    workspace: Path | None,
    actor: str,
    timeout: float,
    stale: bool,
    note: str,
    chain_commit: bool | None,
    as_json: bool,
) -> None:
    """Run NAME's plan on NAME at VERSION (default: the head's) and record every run, as one batch.

    Each case runs with the skill and under the plan's baseline, --runs times each, in a fresh
    sandbox with a per-run timeout; a runner that fails or times out is a failed run (score 0),
    recorded like any other.  The workspace gets iteration-K/ in the agentskills layout and
    benchmark.json.
    """
    name, version = split_ref(ref)
    want_commit(ctx, chain_commit)
    if stale:
        if version is not None:
            raise UsageError("--stale re-runs the stale versions of NAME: give NAME alone")
        _run_stale(
            ctx,
            name,
            actor,
            as_json,
            runner=runner,
            grader=grader,
            baseline=baseline,
            runs=runs,
            workspace=workspace,
            timeout=timeout,
            note=note,
        )
        return
    from ledger.evals import runs as uc

    with open_brain(ctx) as brain, brain.acting(actor):
        done = uc.run(
            _evaluations(brain),
            name,
            version,
            runner=runner,
            grader=grader,
            baseline=baseline,
            runs=runs,
            workspace=workspace,
            timeout=timeout,
            note=note,
            progress=None if as_json else progress_bar("eval runs"),
        )
    extra = done.extra_json()
    if not as_json:
        _say(done.to_json())
    print_receipt(ctx, receipt_of(done), as_json, extra)


def _run_stale(ctx: click.Context, name: str, actor: str, as_json: bool, **options: Any) -> None:
    from ledger.evals import runs as uc

    with open_brain(ctx) as brain, brain.acting(actor):
        report = uc.rerun_stale(_evaluations(brain), name, **options)
    if as_json:
        emit(report)
        return
    done = report.to_json()
    if not done["rerun"] and not done["skipped"]:
        click.echo(
            f"nothing stale: every evaluated version of {done['skill']} ran under plan {done['plan'][:12]}'s "
            "runner and grader"
        )
    for run in report.rerun:
        _say(run.to_json())
        print_receipt(ctx, receipt_of(run), False)
    for s in done["skipped"]:
        click.echo(f"skipped v{s['version']}: {s['reason']}", err=True)


@returns("ledger.evals.reports:EvalImportReport")
@eval_group.command("import")
@click.argument("workspace", type=click.Path(file_okay=False, path_type=Path))
@click.option("--skill", "ref", required=True, metavar="NAME[@VERSION]", help="The skill version it evaluated.")
@click.option("--iteration", type=click.IntRange(1), help="The iteration to import [default: the newest].")
@click.option("--runner-id", default="undeclared", show_default=True, help="The runner's declared identity.")
@click.option("--grader-id", default="undeclared", show_default=True, help="The grader's declared identity.")
@click.option("--baseline", type=click.IntRange(1), help="The version old_skill/ ran [default: the previous].")
@click.option(
    "--set",
    "set_digest",
    metavar="blake3-tree-v1:HEX",
    help="The eval set's digest the workspace ran; refused unless it is the version's.",
)
@click.option(
    "--actor",
    type=_ACTORS,
    default=None,
    help="Whose key signs the runs (required: verifier makes them verified, agent self-reported).",
)
@note_flag
@commit_flag
@json_flag
@click.pass_context
def eval_import(
    ctx: click.Context,
    workspace: Path,
    ref: str,
    iteration: int | None,
    runner_id: str,
    grader_id: str,
    baseline: int | None,
    set_digest: str | None,
    actor: str | None,
    note: str,
    chain_commit: bool | None,
    as_json: bool,
) -> None:
    """Record every run of an agentskills WORKSPACE (skill-creator's, or written by hand) as one batch.

    Each run must hold outputs/, timing.json and grading.json in the guide's shapes, grading the
    case's assertions of NAME's evals/evals.json at VERSION; grading.json is hashed into its record.
    The runs name no plan: they are not pre-registered.
    """
    if not workspace.is_dir():
        raise UsageError(f"no such folder: {workspace}")
    if actor is None:  # its grading.json is whoever wrote it's word: never verified by a default (ADR 0053)
        raise UsageError(
            f"{workspace}'s runs were graded elsewhere, and no --actor says whose word they are",
            hint="add --actor verifier (verified runs, signed by the verifier key) or --actor agent "
            "(the agent's own word: self-reported)",
        )
    name, version = split_ref(ref)
    want_commit(ctx, chain_commit)
    from ledger.evals import runs as uc

    with open_brain(ctx) as brain, brain.acting(actor):
        done = uc.import_workspace(
            _evaluations(brain),
            workspace,
            name,
            version,
            iteration=iteration,
            runner_id=runner_id,
            grader_id=grader_id,
            baseline=baseline,
            set_digest=set_digest,
            note=note,
        )
    extra = done.extra_json()
    if not as_json:
        _say(done.to_json())
    print_receipt(ctx, receipt_of(done), as_json, extra)


def _say(done: dict[str, Any]) -> None:
    rs = done["benchmark"]["run_summary"]
    base = done["baseline"]
    plan = f"plan {done['plan'][:12]}" if done["plan"] else "no plan (not pre-registered)"
    click.echo(
        f"{done['skill']} v{done['version']}: {len(done['runs'])} run(s) under {plan}; "
        f"iteration-{done['iteration']} in {done['workspace']}"
    )
    for cond in ("with_skill", base):
        passed = sum(1 for r in done["runs"] if r["condition"] == cond and r["pass"])
        total = sum(1 for r in done["runs"] if r["condition"] == cond)
        click.echo(
            f"  {cond:<14} {passed}/{total} runs pass  pass_rate {rs[cond]['pass_rate']['mean']:.2f}  "
            f"time {rs[cond]['time_seconds']['mean']:.2f} s"
        )
    click.echo(
        f"  delta          pass_rate {rs['delta']['pass_rate']:+.2f}  time {rs['delta']['time_seconds']:+.2f} s"
        f"  tokens {rs['delta']['tokens']:+g}"
    )
    for r in done["runs"]:
        if r.get("failure"):
            click.secho(
                f"  failed run: eval {r['case']} {r['condition']} run {r['run'] + 1}: {r['failure']}", fg="yellow"
            )
