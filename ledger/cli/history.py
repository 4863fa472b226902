"""Verification and history: verify, audit, diff, show, revert."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ledger.audit.reports import AuditReport
from ledger.cli.common import (
    emit,
    json_flag,
    main,
    mutate,
    mutation,
    open_brain,
    progress_bar,
    returns,
)
from ledger.errors import LedgerError, UsageError, printable
from ledger.reports import NoChange


def _print_report(report: AuditReport, as_json: bool, html_file: Path | None) -> None:
    if html_file is not None:
        from ledger.page.audit import write_audit

        write_audit(html_file, report)
    if as_json:
        emit(report)
    else:
        for chk in report.checks.values():
            tag = {
                "OK": click.style("OK  ", fg="green"),
                "SKIP": click.style("SKIP", fg="yellow"),
                "WARN": click.style("WARN", fg="yellow", bold=True),
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
        verdict = report.verdict  # a result, on stdout as git prints its own; OK never hides a SKIP
        click.secho(verdict, fg="red" if not report.ok else "yellow" if report.skipped else "green", bold=not report.ok)
    if not report.ok:
        sys.exit(1)


def _verify_frozen(ctx: click.Context, as_json: bool) -> None:
    """``verify --frozen``: each installed skill against its pin; exit 1 naming what drifted."""
    from ledger.audit.reports import FrozenFailure
    from ledger.supply.installer import Installer

    with open_brain(ctx) as brain:
        out = Installer(brain).verify_frozen()
    if as_json and not out["ok"]:
        emit(FrozenFailure(frozen=out))
        sys.exit(1)
    for row in out["skills"]:
        if row["ok"]:
            if not as_json:
                click.echo(f"frozen  {row['skill']}: as pinned, and its source serves the pin")
            continue
        for rel in row["drift"]:
            click.secho(
                f"drift   {row['skill']}/{printable(rel)}: differs from the pinned version here", fg="red", err=True
            )
        if row["source"] != "serves the pin":
            what = printable(row.get("source_error") or ", ".join(row.get("source_drift", [])))
            click.secho(f"source  {row['skill']}: {row['source']} ({what})", fg="red", err=True)
        if row.get("problem"):
            click.secho(f"revoked {row['skill']}", fg="red", err=True)
    if not out["ok"]:
        click.secho("FROZEN FAILED: installed skills differ from their pins", fg="red", bold=True, err=True)
        sys.exit(1)


require_flag = click.option(
    "--require-signatures",
    "require",
    is_flag=True,
    help="Fail unsigned snapshots (by default a warning); snapshots attested by 'sign --adopt' pass.",
)


epoch_log_option = click.option(
    "--epoch-log",
    "epoch_logs",
    multiple=True,
    metavar="ADDRESS=LOCATION",
    help="Where operator ADDRESS publishes its epoch log (a path or git URL), for an owner or committer of the "
    "agent with epochs on chain that no epoch receipt names (repeatable; with the chain).",
)


def _epoch_logs(given: tuple[str, ...]) -> dict[str, str]:
    """``--epoch-log ADDRESS=LOCATION`` values as {address: location}; malformed or repeated is usage (2)."""
    from ledger.signatures.trust import check_address

    out: dict[str, str] = {}
    for item in given:
        address, sep, location = item.partition("=")
        try:
            address = check_address(address.strip())
        except LedgerError:
            address = ""
        if not sep or not address or not location:
            raise UsageError(
                f"--epoch-log {item!r} is not ADDRESS=LOCATION", hint="0x and 40 hex digits, =, then a path or git URL"
            )
        if address in out and out[address] != location:
            raise UsageError(f"--epoch-log names operator {address} twice", hint="give one location per operator")
        out[address] = location
    return out


@returns(
    "ledger.audit.reports:AuditReport",
    "ledger.attestations.reports:AttestationVerified",
    "ledger.attestations.reports:AttestationFailed",
    "ledger.audit.reports:FrozenFailure",
)
@main.command()
@click.option("--chain", "with_chain", is_flag=True, help="Also check the registry (from the brain's config).")
@epoch_log_option
@require_flag
@json_flag
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path), help="Write an HTML report.")
@click.option(
    "--frozen",
    is_flag=True,
    help="Also hold every installed skill to its pin: no local drift, and its source still serves it.",
)
@click.option(
    "--attestation",
    "attestation",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Instead, check FILE ('ledger attest': OMS or in-toto) against the brain at REV or the snapshot it names.",
)
@click.argument("rev", required=False)
@click.pass_context
def verify(
    ctx: click.Context,
    with_chain: bool,
    epoch_logs: tuple[str, ...],
    require: bool,
    as_json: bool,
    html_file: Path | None,
    frozen: bool,
    attestation: Path | None,
    rev: str | None,
) -> None:
    """Verify this brain: snapshots, lineage, versions, skills, working tree, fsck (and --chain, --frozen).

    With --attestation FILE [REV]: verify an attestation instead (its key, signature and every subject).
    Its --json prints one object on stdout, exit 0 or 1:

    \b
    verified: {"ok": true, "format": "oms"|"intoto", "commit": HEX40, "skill": NAME|null, "files": N,
               "signer": ADDRESS, "role": "user"|"agent"|"curator"|"verifier", "keyid": HEX64,
               "certified_by": HEX40}
    failed:   {"ok": false, "format": "oms"|"intoto"|null, "problems": [TEXT, ...]}
    """
    from ledger.audit.run import verify as run_verify

    logs = _epoch_logs(epoch_logs)
    if logs and not with_chain:
        raise UsageError("--epoch-log goes with --chain")
    if attestation is not None:
        if with_chain or require or html_file or frozen:
            raise UsageError("--attestation goes with REV and --json only")
        _verify_attestation(ctx, attestation, rev, as_json)
        return
    if rev is not None:
        raise UsageError(f"unexpected argument {rev!r}", hint="REV goes with --attestation FILE")
    if frozen:
        _verify_frozen(ctx, as_json)
    with open_brain(ctx) as brain:
        report = run_verify(
            brain,
            with_chain=with_chain,
            epoch_logs=logs,
            require_signatures=require,
            progress=progress_bar("verifying"),
        )
    _print_report(report, as_json, html_file)


def _verify_attestation(ctx: click.Context, path: Path, rev: str | None, as_json: bool) -> None:
    from ledger.attestations.reports import AttestationFailed
    from ledger.attestations.run import check_attestation, read_attestation
    from ledger.attestations.subjects import AttestationError

    try:
        data = read_attestation(path)
        with open_brain(ctx) as brain:
            out = check_attestation(brain, data, rev)
    except AttestationError as exc:
        if not as_json:
            raise
        emit(AttestationFailed.of(exc))
        click.echo(exc.report(), err=True)
        sys.exit(1)
    if as_json:
        emit(out)
        return
    what = f"skill {out.skill}" if out.skill else f"{out.files} file(s)"
    click.echo(
        f"Verified OK: {out.format} attestation of {what} at {out.commit[:12]}, signed by {out.role} "
        f"{out.signer} (P-256 sibling {out.keyid[:16]}…, certified in {out.certified_by[:12]})"
    )


@returns("ledger.audit.reports:AuditReport")
@main.command()
@click.argument("repo")
@click.option("--rpc", help="RPC endpoint of the chain holding the registry.")
@click.option("--registry", help="Registry contract address.")
@click.option("--agent", help="Agent id (0x… or decimal).")
@click.option("--from-block", type=click.IntRange(min=0), default=0, help="Registry deployment block (faster scans).")
@epoch_log_option
@require_flag
@click.option(
    "--founder",
    metavar="ADDRESS",
    help="The user key that must have founded the trust set (otherwise trusted on first use).",
)
@json_flag
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path), help="Write an HTML report.")
def audit(
    repo: str,
    rpc: str | None,
    registry: str | None,
    agent: str | None,
    from_block: int,
    epoch_logs: tuple[str, ...],
    require: bool,
    founder: str | None,
    as_json: bool,
    html_file: Path | None,
) -> None:
    """Audit a brain, a clone of one, or its URL (fetched with its receipts); needs no keys and no config."""
    from ledger.audit.run import audit as run_audit
    from ledger.remotes.sharing import audit_target

    given = [v is not None for v in (rpc, registry, agent)]
    if any(given) and not all(given):
        raise UsageError("--rpc, --registry and --agent go together")
    logs = _epoch_logs(epoch_logs)
    if logs and rpc is None:
        raise UsageError("--epoch-log goes with --rpc", hint="the epoch logs are replayed against the chain")
    agent_id = int(agent, 0) if agent else None
    with audit_target(repo) as path:
        report = run_audit(
            path,
            name=repo if not Path(repo).is_dir() else None,
            rpc=rpc,
            registry=registry,
            agent=agent_id,
            from_block=from_block,
            epoch_logs=logs,
            require_signatures=require,
            founder=founder,
            progress=progress_bar("auditing"),
        )
    _print_report(report, as_json, html_file)


@returns("ledger.audit.reports:DiffReport")
@main.command()
@click.argument("args", nargs=-1, metavar="[REV [REV]] [NAME] | NAME@A [NAME@B]")
@click.option("--skill", "skill_name", metavar="NAME", help="Limit the diff to one skill (never read as a revision).")
@click.option("--stat", "as_stat", is_flag=True, help="Files changed and lines added and removed, not the content.")
@click.option("--name-status", "name_status", is_flag=True, help="Each changed file with its status only.")
@json_flag
@click.pass_context
def diff(
    ctx: click.Context, args: tuple[str, ...], skill_name: str | None, as_stat: bool, name_status: bool, as_json: bool
) -> None:
    """Show changes as git does: head → working tree, REV → working tree, or REV → REV.

    A last argument that is not a revision is a skill name, and limits the diff to that
    skill; --skill NAME says so explicitly. NAME@A NAME@B compares two versions of a skill
    (NAME@A alone: that version → the working tree).
    """
    from ledger.audit.history import diff as run_diff
    from ledger.store.diffs import render_stat

    with open_brain(ctx) as brain:
        d = run_diff(brain, args, skill_name)
    if as_json:
        emit(d)
    elif as_stat:
        click.echo(render_stat(d.files), nl=False)  # type: ignore[arg-type]
    elif name_status:
        for f in d.files:
            click.echo(f"{f.status[0].upper() if f.status != 'mode' else 'M'}\t{f.path}")
    else:
        click.echo(d.patch, nl=False)


@returns("ledger.audit.reports:SkillStatsReport")
@main.command()
@click.argument("ref", metavar="NAME[@VERSION]")
@click.option(
    "--stats",
    is_flag=True,
    help="Outcomes per version instead: verified and self-reported, each with "
    "its success rate and 95% Wilson interval, never summed; and each version's lift from paired "
    "evaluation runs with its 95% Newcombe interval (see docs/lineage.md, 'Competence').",
)
@json_flag
@click.pass_context
def show(ctx: click.Context, ref: str, stats: bool, as_json: bool) -> None:
    """Print a skill's SKILL.md as it was at a version (NAME alone: as the head snapshot holds it)."""
    name, sep, version = ref.rpartition("@")
    if sep and (not name or not version.isdigit()):
        raise UsageError(f"expected NAME or NAME@VERSION, got {ref!r}")
    if as_json and not stats:
        raise UsageError("--json goes with --stats (SKILL.md is printed as it is)")
    if stats:
        from ledger.audit.history import skill_stats
        from ledger.cli.outcomes import print_stats

        with open_brain(ctx) as brain:
            stats = skill_stats(brain, name if sep else ref, int(version) if sep else None)
        emit(stats) if as_json else print_stats(stats.to_json())
        return
    with open_brain(ctx) as brain:
        text = brain.show(name, int(version)) if sep else brain.show(ref)
        state = brain.withheld().get(brain.resolve(name if sep else ref))
    if state is not None:  # the user curates it, so it is shown; no runtime or agent sees it
        click.echo(f"note: skill {name if sep else ref!r} is {state}: no runtime, index or agent sees it", err=True)
    click.echo(text, nl=False)


@returns("ledger.write.records:Receipt", NoChange)
@main.command()
@click.argument("name")
@click.option("--to", "version", type=click.IntRange(min=1), required=True, help="The version to restore.")
@mutation
@click.pass_context
def revert(ctx: click.Context, name: str, version: int, **kw: Any) -> None:
    """Restore a skill as it was at --to VERSION, as a new upsert (history is never rewritten)."""
    mutate(ctx, kw, lambda brain: brain.revert(name, version, note=kw["note"]))
