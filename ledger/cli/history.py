"""Verification and history: verify, audit, diff, show, revert."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ledger.cli._common import (
    emit,
    json_flag,
    main,
    mutate,
    mutation,
    open_brain,
    progress_bar,
)
from ledger.errors import UsageError


def _print_report(report: Any, as_json: bool, html_file: Path | None) -> None:
    if html_file is not None:
        from ledger.report import render_html

        html_file.write_text(render_html(report), encoding="utf-8")
    if as_json:
        emit(report.to_json())
    else:
        for chk in report.checks.values():
            tag = {
                "OK": click.style("OK  ", fg="green"),
                "SKIP": click.style("SKIP", fg="yellow"),
                "FAIL": click.style("FAIL", fg="red", bold=True),
            }[chk.status]
            click.echo(f"{tag} {chk.name:17} {chk.summary}")
            if not chk.ok:
                for label, value in (
                    ("snapshot", chk.snapshot),
                    ("path", chk.path),
                    ("expected", chk.expected),
                    ("computed", chk.computed),
                ):
                    if value is not None:
                        click.echo(f"     {label:9} {value}")
                if chk.failures > 1:
                    click.echo(f"     (+{chk.failures - 1} more failure(s) of this check)")
        if report.pending:
            click.echo(f"PEND {'chain':17} {len(report.pending)} snapshot(s) newer than the on-chain head")
        if html_file is not None:
            click.echo(f"report written to {html_file}")
        click.echo("Verified OK" if report.ok else "Verification FAILED", err=True)
    if not report.ok:
        sys.exit(1)


def _audit_errors(fn: Callable[[], Any]) -> Any:
    from ledger.errors import AuditError, RpcUnreachableError

    try:
        return fn()
    except (RpcUnreachableError, AuditError) as exc:
        raise UsageError(exc.message, hint=exc.hint) from exc


@main.command()
@click.option("--chain", "with_chain", is_flag=True, help="Also check the registry (from the brain's config).")
@json_flag
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path), help="Write an HTML report.")
@click.pass_context
def verify(ctx: click.Context, with_chain: bool, as_json: bool, html_file: Path | None) -> None:
    """Verify this brain: snapshots, lineage, versions, skills, working tree, fsck (and --chain)."""
    from ledger.audit import audit_repo

    with open_brain(ctx) as brain:
        root, cfg = brain.root, brain.config.get("chain") or {}
    kwargs: dict[str, Any] = {}
    if with_chain:
        if not (cfg.get("rpc") and cfg.get("registry") and cfg.get("agent_id")):
            raise UsageError("this brain has no registered agent to check", hint="ledger chain deploy / register")
        kwargs = {
            "rpc": cfg["rpc"],
            "registry": cfg["registry"],
            "agent": int(cfg["agent_id"], 16),
            "from_block": int(cfg.get("deploy_block", 0)),
        }
    report = _audit_errors(lambda: audit_repo(root, worktree=True, progress=progress_bar("verifying"), **kwargs))
    _print_report(report, as_json, html_file)


@main.command()
@click.argument("repo", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--rpc", help="RPC endpoint of the chain holding the registry.")
@click.option("--registry", help="Registry contract address.")
@click.option("--agent", help="Agent id (0x… or decimal).")
@click.option("--from-block", type=click.IntRange(min=0), default=0, help="Registry deployment block (faster scans).")
@json_flag
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path), help="Write an HTML report.")
def audit(
    repo: Path,
    rpc: str | None,
    registry: str | None,
    agent: str | None,
    from_block: int,
    as_json: bool,
    html_file: Path | None,
) -> None:
    """Audit any clone or path of a brain's store; needs no keys and no brain config."""
    from ledger.audit import audit_repo

    given = [v is not None for v in (rpc, registry, agent)]
    if any(given) and not all(given):
        raise UsageError("--rpc, --registry and --agent go together")
    agent_id = int(agent, 0) if agent else None
    report = _audit_errors(
        lambda: audit_repo(
            repo, rpc=rpc, registry=registry, agent=agent_id, from_block=from_block, progress=progress_bar("auditing")
        )
    )
    _print_report(report, as_json, html_file)


@main.command()
@click.argument("rev1")
@click.argument("rev2")
@json_flag
@click.pass_context
def diff(ctx: click.Context, rev1: str, rev2: str, as_json: bool) -> None:
    """List the skills and files changed between two snapshots."""
    with open_brain(ctx) as brain:
        d = brain.diff(rev1, rev2)
    if as_json:
        emit(d)
        return
    for name, what in d["skills"].items():
        click.echo(f"skill {what:9} {name}")
    for path, what in d["files"].items():
        click.echo(f"  {what:9} skills/{path}")


@main.command()
@click.argument("ref", metavar="NAME@VERSION")
@click.pass_context
def show(ctx: click.Context, ref: str) -> None:
    """Print a skill's SKILL.md as it was at a version."""
    name, sep, version = ref.rpartition("@")
    if not sep or not version.isdigit():
        raise UsageError(f"expected NAME@VERSION, got {ref!r}")
    with open_brain(ctx) as brain:
        click.echo(brain.show(name, int(version)), nl=False)


@main.command()
@click.argument("name")
@click.option("--to", "version", type=click.IntRange(min=1), required=True, help="The version to restore.")
@mutation
@click.pass_context
def revert(ctx: click.Context, name: str, version: int, **kw: Any) -> None:
    """Restore a skill as it was at --to VERSION, as a new upsert (history is never rewritten)."""
    mutate(ctx, kw, lambda brain: brain.revert(name, version, note=kw["note"]))
