"""``ledger skill …``: create, improve and read skills; every write is one snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ledger.bundle.render import list_line
from ledger.cli.common import (
    TEXT_LIMIT,
    allow_invalid_flag,
    emit,
    json_flag,
    main,
    mutate,
    mutation,
    open_brain,
    read_input,
    read_text,
    returns,
)
from ledger.errors import LedgerError, UsageError, printable
from ledger.reports import NoChange


@main.group()
def skill() -> None:
    """Create, improve and read skills; every write is one snapshot."""


@returns("ledger.write.records:Receipt", NoChange)
@skill.command("create")
@click.argument("name")
@click.option("--description", required=True, help="The one line an agent sees in the index (≤ 1024 chars).")
@click.option("--body", help="Markdown body.")
@click.option("--body-file", help="Read the body from a file ('-' for stdin).")
@click.option("--category", help="A Hermes category to create it in, e.g. research or mlops/inference.")
@allow_invalid_flag
@mutation
@click.pass_context
def skill_create(
    ctx: click.Context, name: str, description: str, body: str | None, body_file: Any, category: str | None, **kw: Any
) -> None:
    """Create skill NAME at version 1, or one above a deleted NAME's last (refuses an existing name)."""
    if body is not None and body_file is not None:
        raise UsageError("give --body or --body-file, not both")
    text = read_text(body_file, TEXT_LIMIT, "--body-file") if body_file is not None else (body or "")
    mutate(ctx, kw, lambda brain: brain.create(name, description, text, note=kw["note"], category=category))


@returns("ledger.write.records:Receipt", NoChange)
@skill.command("upsert")
@click.option("--name", help="Key to write under (slugified); default: the name the frontmatter declares.")
@click.option("--file", "src", required=True, help="SKILL.md text ('-' = stdin).")
@allow_invalid_flag
@mutation
@click.pass_context
def skill_upsert(ctx: click.Context, name: str | None, src: Any, **kw: Any) -> None:
    """Write a whole SKILL.md by slug: create it, or bump the existing skill in place."""
    text = read_text(src, TEXT_LIMIT, "--file")
    mutate(ctx, kw, lambda brain: brain.upsert(text, name=name, note=kw["note"]))


@returns("ledger.write.records:Receipt", NoChange)
@skill.command("edit")
@click.argument("name")
@click.option("--file", "src", required=True, help="New SKILL.md ('-' = stdin).")
@allow_invalid_flag
@mutation
@click.pass_context
def skill_edit(ctx: click.Context, name: str, src: Any, **kw: Any) -> None:
    """Rewrite NAME's SKILL.md in full (the version is bumped by the ledger)."""
    text = read_text(src, TEXT_LIMIT, "--file")
    mutate(ctx, kw, lambda brain: brain.edit(name, text, note=kw["note"]))


@returns("ledger.write.records:Receipt", NoChange)
@skill.command("patch")
@click.argument("name")
@click.option("--old", required=True, help="Exact text to replace; must occur exactly once.")
@click.option("--new", required=True, help="Replacement text.")
@click.option("--file", "rel", help="A supporting file (e.g. references/x.md) instead of SKILL.md.")
@click.option("--replace-all", is_flag=True, help="Replace every occurrence of --old (at least one).")
@allow_invalid_flag
@mutation
@click.pass_context
def skill_patch(
    ctx: click.Context, name: str, old: str, new: str, rel: str | None, replace_all: bool, **kw: Any
) -> None:
    """Replace one exact occurrence of --old with --new (every one with --replace-all)."""
    mutate(ctx, kw, lambda brain: brain.patch(name, old, new, file=rel, replace_all=replace_all, note=kw["note"]))


@returns("ledger.write.records:Receipt", NoChange)
@skill.command("delete")
@click.argument("name")
@mutation
@click.pass_context
def skill_delete(ctx: click.Context, name: str, **kw: Any) -> None:
    """Delete skill NAME (its history stays in the ledger)."""
    mutate(ctx, kw, lambda brain: brain.delete(name, note=kw["note"]))


@returns("ledger.write.records:Receipt", NoChange)
@skill.command("write-file")
@click.argument("name")
@click.argument("rel")
@click.option("--from", "src", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--executable/--no-executable", default=None, help="Mode bit (default: as the source file).")
@mutation
@click.pass_context
def skill_write_file(ctx: click.Context, name: str, rel: str, src: Path, executable: bool | None, **kw: Any) -> None:
    """Add or replace supporting file REL, any portable path in the skill (the agent tools, like
    Hermes, keep to references/ templates/ scripts/ assets/)."""
    from ledger.bundle.skill import MAX_SUPPORT_FILE

    if src.is_symlink():
        raise LedgerError(f"{src} is a symbolic link", hint="pass the file it points to")
    if executable is None:
        executable = bool(src.stat().st_mode & 0o100)
    data = read_input(str(src), MAX_SUPPORT_FILE, "--from")
    mutate(ctx, kw, lambda brain: brain.write_file(name, rel, data, executable=executable, note=kw["note"]))


@returns("ledger.write.records:Receipt", NoChange)
@skill.command("remove-file")
@click.argument("name")
@click.argument("rel")
@mutation
@click.pass_context
def skill_remove_file(ctx: click.Context, name: str, rel: str, **kw: Any) -> None:
    """Remove supporting file REL from skill NAME."""
    mutate(ctx, kw, lambda brain: brain.remove_file(name, rel, note=kw["note"]))


@returns("ledger.brain.reports:SkillListReport")
@skill.command("list")
@click.option("--category", help="Only skills in this Hermes category (or under it).")
@json_flag
@click.pass_context
def skill_list(ctx: click.Context, category: str | None, as_json: bool) -> None:
    """List skills (name, version, description) without reading bodies."""
    from ledger.brain import usecases

    with open_brain(ctx) as brain:
        report = usecases.skill_list(brain, category)
    if as_json:
        emit(report)
        return
    # quarantined or revoked: listed here, marked; no runtime or index sees them
    lines = (list_line(s.name, s.version, printable(s.description), s.supply or None) for s in report.entries)
    click.echo("".join(lines), nl=False)


@returns("ledger.write.records:Receipt", NoChange)
@skill.command("move")
@click.argument("name")
@click.argument("category", required=False)
@mutation
@click.pass_context
def skill_move(ctx: click.Context, name: str, category: str | None, **kw: Any) -> None:
    """Move NAME into Hermes CATEGORY (omit it for the top level); the bundle and its root are unchanged."""
    mutate(ctx, kw, lambda brain: brain.categories.move(name, category, note=kw["note"]))


@returns("ledger.brain.reports:SkillViewReport", "ledger.brain.reports:SkillFileReport")
@skill.command("view")
@click.argument("name")
@click.option("--file", "rel", help="Show a supporting file instead of the body.")
@json_flag
@click.pass_context
def skill_view(ctx: click.Context, name: str, rel: str | None, as_json: bool) -> None:
    """Show a skill's body and linked files, or one supporting file."""
    from ledger.brain import usecases
    from ledger.brain.reports import SkillFileReport

    with open_brain(ctx) as brain:
        report = usecases.skill_view(brain, name, rel)
    state = report.supply or None
    if state is not None:  # the user curates it, so it is shown; no runtime or agent sees it
        click.echo(
            f"note: skill {report.name!r} is {state}: no runtime, index or agent sees it"
            + (f" (review it, then 'ledger approve {report.name}')" if state == "quarantined" else ""),
            err=True,
        )
    if as_json:
        emit(report)
    elif isinstance(report, SkillFileReport):
        if report.binary:
            raise LedgerError(f"{rel} is binary ({report.size} bytes)", hint="use --json, or read the file directly")
        click.echo(report.content, nl=False)
    else:
        marker = f" [{state}]" if state else ""
        click.echo(f"# {report.name} (v{report.version}){marker}: {printable(report.description)}\n")
        click.echo(report.body, nl=False)
        for sub, files in report.files.items():
            click.echo(f"\n[{sub}] " + ", ".join(files))
