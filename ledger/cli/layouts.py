"""Collections in and out: ``ledger import``, ``ledger export``, and ``ledger skill lint`` (verdicts, not gates)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ledger.cli.common import (
    acting,
    actor_flag,
    emit,
    evidence_flag,
    json_flag,
    main,
    open_brain,
    progress_bar,
    returns,
)
from ledger.reports import OMIT

_STATUS = {"imported": "green", "updated": "green", "unchanged": None, "refused": "red"}


@returns("ledger.write.transfers:ImportReport")
@main.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--layout",
    type=click.Choice(["auto", "agentskills", "claude", "hermes", "slopstock"]),
    default="auto",
    show_default=True,
    help="How SOURCES are laid out (auto: detect).",
)
@click.option("--dry-run", is_flag=True, help="Report what would happen; write nothing.")
@click.option("--all-or-nothing", is_flag=True, help="Import nothing if any skill is refused.")
@click.option("-m", "--message", "note", default="", help="A note for the snapshot's commit message.")
@click.option(
    "--versions",
    type=click.Choice(["frontmatter", "store"]),
    help="Where versions live, chosen on an empty brain: 'store' keeps every SKILL.md byte for byte "
    "(default: the brain's setting, see 'ledger init --versions').",
)
@actor_flag
@evidence_flag
@json_flag
@click.pass_context
def import_cmd(
    ctx: click.Context,
    sources: tuple[Path, ...],
    layout: str,
    dry_run: bool,
    all_or_nothing: bool,
    note: str,
    versions: str | None,
    as_json: bool,
    **kw: Any,
) -> None:
    """Import skill collections as ONE snapshot: one version bump per changed skill, bytes kept."""
    from ledger.folders.collections import import_collections

    with open_brain(ctx) as brain, acting(brain, kw):
        report = import_collections(
            brain,
            sources,
            layout,
            note=note,
            dry_run=dry_run,
            all_or_nothing=all_or_nothing,
            versions=versions,
            progress=progress_bar("importing"),
        )
    if as_json:
        emit(report)
        return
    for line in report.found:
        click.echo(f"{'':15} {line}")
    for line in report.skipped:
        click.echo(f"{'skipped':14} {line}")
    for row in report.skills:
        what = row.status + (f" v{row.version}" if row.version is not OMIT else "")
        click.echo(click.style(f"{what:14}", fg=_STATUS[row.status]) + f" {row.skill:32} {row.source}")
        for note_text in row.notes:
            click.echo(f"{'':15} note: {note_text}")
        if row.status == "refused":
            click.echo(f"{'':15} why:  {row.reason}" + (f"\n{'':15} hint: {row.hint}" if row.hint else ""))
        elif row.lint is not OMIT and not row.lint.valid:
            click.echo(f"{'':15} lint: {row.lint.errors[0]} (kept as is; see 'ledger skill lint')")
    counts: dict[str, int] = {}
    for row in report.skills:
        counts[row.status] = counts.get(row.status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no skills found"
    snap = report.snapshot
    if dry_run:
        click.echo(f"dry run: {summary}; nothing written")
    elif snap:
        click.echo(f"{summary}\nroot   {snap['root']}\ncommit {snap['commit']}")
    else:
        click.echo(f"{summary}; nothing changed, no snapshot")


@returns(
    "ledger.write.transfers:ExportReport",
    "ledger.write.transfers:LockExportReport",
    "ledger.publish.reports:DiscoveryReport",
)
@main.command("export")
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option(
    "--layout",
    type=click.Choice(["agentskills", "claude", "hermes", "slopstock"]),
    default="agentskills",
    show_default=True,
)
@click.option("--at", "rev", help="A past snapshot: commit id, main~N or a root (default: head).")
@click.option(
    "--lock",
    "lock",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the installed skills' pins as the skills CLI's skills-lock.json instead.",
)
@click.option(
    "--discovery",
    "site",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the served skills as a static Agent Skills Discovery v0.2.0 site into this folder "
    "instead, each with its anchor (docs/lineage.md section 16.5).",
)
@json_flag
@click.pass_context
def export_cmd(
    ctx: click.Context,
    dest: Path | None,
    layout: str,
    rev: str | None,
    lock: Path | None,
    site: Path | None,
    as_json: bool,
) -> None:
    """Write the brain (or any past snapshot) into DEST in a runtime's layout, byte for byte."""
    from ledger.folders.collections import export_snapshot
    from ledger.write.transfers import LockExportReport

    if [dest, lock, site].count(None) != 2 or (site is not None and rev is not None):
        from ledger.errors import UsageError

        raise UsageError("give DEST, or --lock FILE, or --discovery DIR (which publishes the head: no --at)")
    if site is not None:
        _discovery(ctx, site, as_json)
        return
    if lock is not None:
        from ledger.supply.installer import Installer

        with open_brain(ctx) as brain:
            pins = LockExportReport(**Installer(brain).export_lock(lock))
        emit(pins) if as_json else click.echo(f"wrote {len(pins.skills)} pin(s) to {lock}")
        return

    with open_brain(ctx) as brain:
        result = export_snapshot(brain, dest, layout, rev)  # type: ignore[arg-type]
    if as_json:
        emit(result)
    else:
        click.echo(f"exported {result.skills} skill(s), {result.files} file(s) to {dest} ({layout})")
        if result.withheld:
            click.echo(
                f"left out {len(result.withheld)} quarantined or revoked skill(s): " + ", ".join(result.withheld)
            )


def _discovery(ctx: click.Context, site: Path, as_json: bool) -> None:
    """``ledger export --discovery DIR``: the site's bytes from the served entries, written as one tree."""
    from ledger.folders.collections import export_discovery

    with open_brain(ctx) as brain:
        out = export_discovery(brain, site)
    if as_json:
        emit(out)
        return
    for s in out.skills:
        click.echo(f"{s.type:9} {s.name:32} {s.url}")
    for r in out.refused:  # never silent: what a host will not find, and why
        click.echo(f"not published: {r.uri}: {r.reason}")
    click.echo(
        f"published {len(out.skills)} skill(s) with their anchors: {out.index}"
        + (f"; {len(out.refused)} not published (above)" if out.refused else "")
    )


@returns("ledger.write.transfers:LintReport")
@main.command()
@click.argument("names", nargs=-1)
@click.option("--strict", is_flag=True, help="Extra frontmatter fields are errors too, as skills-ref has them.")
@json_flag
@click.pass_context
def lint(ctx: click.Context, names: tuple[str, ...], strict: bool, as_json: bool) -> None:
    """Each skill's verdict against the agentskills spec (skills-ref's rules) and Hermes's limits.

    Fields outside the spec (Hermes's author, platforms, version…) are warnings: the skill is
    "valid (extra fields)". Exits 1 only when a skill is INVALID; --strict counts extra fields too.
    """
    from ledger.folders.collections import lint_skills

    with open_brain(ctx) as brain:
        report = lint_skills(brain, names, strict)
    failed = set(report.failed)
    if as_json:
        emit(report)
    else:
        for v in report.verdicts:
            if v.skill in failed:
                tag = click.style("INVALID", fg="red")
            elif v.extra:
                tag = click.style("valid (extra fields)", fg="yellow")
            else:
                tag = click.style("valid", fg="green")
            click.echo(f"{tag} {v.skill}")
            for err in v.errors + (v.extra if strict else []):
                click.echo(f"        spec:    {err}")
            for note in ([] if strict else v.extra) + v.warnings:
                click.echo(f"        warning: {note}")
            for note in v.hermes:
                click.echo(f"        hermes:  {note}")
    if failed:
        sys.exit(1)


@returns("ledger.write.transfers:ApplyReport")
@main.command("apply")
@click.argument("payload")
@click.option("--allow-invalid", is_flag=True, help="Record skills even if 'ledger skill lint' calls them invalid.")
@click.option(
    "--actor",
    type=click.Choice(["user", "agent", "curator"]),
    default="agent",
    show_default=True,
    help="Who makes this change (recorded in the snapshot's trailers).",
)
@evidence_flag
@json_flag
@click.pass_context
def apply_cmd(ctx: click.Context, payload: str, allow_invalid: bool, actor: str, as_json: bool, **kw: Any) -> None:
    """Apply a skill-evolution update payload (SkillEvolBench JSON; '-' = stdin) as one snapshot."""
    import json

    from ledger.agent.evolution import apply_payload
    from ledger.cli.common import evidence_of, read_text
    from ledger.errors import LedgerError
    from ledger.write.transfers import ApplyReport

    try:
        doc = json.loads(read_text(payload, 64 << 20, "payload"))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise LedgerError(f"{payload} is not a JSON payload: {type(exc).__name__}") from exc
    with open_brain(ctx) as brain:
        brain.allow_invalid = allow_invalid
        result = ApplyReport.of(apply_payload(brain, doc, actor=actor, evidence=evidence_of(kw)))
    if as_json:
        emit(result)
    elif result.snapshot is None:
        click.echo("nothing to apply: the payload matches the brain (no snapshot)")
    else:
        skills = ", ".join(f"{r.skill} v{r.version}" for r in result.skills if r.status != "unchanged")
        click.echo(f"{result.operation_type}: {skills}\nroot   {result.snapshot['root']}")
