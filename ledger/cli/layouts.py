"""Collections in and out: ``ledger import``, ``ledger export``, and ``ledger lint`` (verdicts, not gates)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ledger.cli.common import acting, actor_flag, emit, evidence_flag, json_flag, main, open_brain, progress_bar

_STATUS = {"imported": "green", "updated": "green", "unchanged": None, "refused": "red"}


@main.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--layout", type=click.Choice(["auto", "agentskills", "claude", "hermes", "slopstock"]), default="auto",
              show_default=True, help="How SOURCES are laid out (auto: detect).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Report what would happen; write nothing.")
@click.option("--all-or-nothing", is_flag=True, help="Import nothing if any skill is refused.")
@click.option("-m", "--message", "note", default="", help="A note for the snapshot's commit message.")
@click.option("--versions", type=click.Choice(["frontmatter", "store"]),
              help="Where versions live, chosen on an empty brain: 'store' keeps every SKILL.md byte for byte "
                   "(default: the brain's setting, see 'ledger init --versions').")  # fmt: skip
@actor_flag
@evidence_flag
@json_flag
@click.pass_context
def import_cmd(
    ctx: click.Context, sources: tuple[Path, ...], layout: str, dry_run: bool, all_or_nothing: bool, note: str,
    versions: str | None, as_json: bool, **kw: Any,
) -> None:  # fmt: skip
    """Import skill collections as ONE snapshot: one version bump per changed skill, bytes kept."""
    from ledger.folders.layouts import Collection, read

    with open_brain(ctx) as brain, acting(brain, kw):
        parts = [read(src, layout, brain.limits["file"]) for src in sources]
        coll = Collection(parts[0].layout, [])
        for src, part in zip(sources, parts, strict=True):
            coll.add(part, str(src))  # a category file two roots disagree on is refused, not overwritten
        report = brain.import_collection(
            coll, note=note, dry_run=dry_run, all_or_nothing=all_or_nothing, progress=progress_bar("importing"),
            versions=versions,
        )
    report["found"], report["skipped"] = coll.notes, coll.skipped
    if as_json:
        emit(report)
        return
    for line in report["found"]:
        click.echo(f"{'':15} {line}")
    for line in report["skipped"]:
        click.echo(f"{'skipped':14} {line}")
    for row in report["skills"]:
        what = row["status"] + (f" v{row['version']}" if "version" in row else "")
        click.echo(click.style(f"{what:14}", fg=_STATUS[row["status"]]) + f" {row['skill']:32} {row['source']}")
        for note_text in row["notes"]:
            click.echo(f"{'':15} note: {note_text}")
        if row["status"] == "refused":
            click.echo(f"{'':15} why:  {row['reason']}" + (f"\n{'':15} hint: {row['hint']}" if row["hint"] else ""))
        elif not row["lint"]["valid"]:
            click.echo(f"{'':15} lint: {row['lint']['errors'][0]} (kept as is; see 'ledger lint')")
    counts: dict[str, int] = {}
    for row in report["skills"]:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no skills found"
    snap = report["snapshot"]
    if dry_run:
        click.echo(f"dry run: {summary}; nothing written")
    elif snap:
        click.echo(f"{summary}\nroot   {snap['root']}\ncommit {snap['commit']}")
    else:
        click.echo(f"{summary}; nothing changed, no snapshot")


@main.command("export")
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option("--layout", type=click.Choice(["agentskills", "claude", "hermes", "slopstock"]), default="agentskills",
              show_default=True)  # fmt: skip
@click.option("--at", "rev", help="A past snapshot: commit id, main~N or a root (default: head).")
@click.option("--lock", "lock", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the installed skills' pins as the skills CLI's skills-lock.json instead.")
@click.option("--discovery", "site", type=click.Path(file_okay=False, path_type=Path),
              help="Write the served skills as a static Agent Skills Discovery v0.2.0 site into this folder "
                   "instead, each with its anchor (docs/lineage.md section 16.5).")  # fmt: skip
@json_flag
@click.pass_context
def export_cmd(ctx: click.Context, dest: Path | None, layout: str, rev: str | None, lock: Path | None,
               site: Path | None, as_json: bool) -> None:  # fmt: skip
    """Write the brain (or any past snapshot) into DEST in a runtime's layout, byte for byte."""
    from ledger.folders.export import export

    if [dest, lock, site].count(None) != 2 or (site is not None and rev is not None):
        from ledger.errors import UsageError

        raise UsageError("give DEST, or --lock FILE, or --discovery DIR (which publishes the head: no --at)")
    if site is not None:
        _discovery(ctx, site, as_json)
        return
    if lock is not None:
        from ledger.supply.installer import Installer

        with open_brain(ctx) as brain:
            out = Installer(brain).export_lock(lock)
        emit(out) if as_json else click.echo(f"wrote {len(out['skills'])} pin(s) to {lock}")
        return

    with open_brain(ctx) as brain:
        commit = brain.store.resolve(rev) if rev else brain.head().commit
        result = export(brain.store, commit, dest, layout)
    if as_json:
        emit(result)
    else:
        click.echo(f"exported {result['skills']} skill(s), {result['files']} file(s) to {dest} ({layout})")
        if result["withheld"]:
            click.echo(f"left out {len(result['withheld'])} quarantined or revoked skill(s): "
                       + ", ".join(result["withheld"]))


def _discovery(ctx: click.Context, site: Path, as_json: bool) -> None:
    """``ledger export --discovery DIR``: the site's bytes from the served entries, written as one tree."""
    import json

    from ledger.folders.export import write_tree
    from ledger.publish.entries import Entries
    from ledger.publish.site import INDEX, is_site, site_files

    with open_brain(ctx) as brain:
        entries = Entries(brain)
        files = site_files(entries)
        refused = entries.refused()
        head = brain.head()
    count = write_tree(site, files, is_site, "discovery export")
    skills = json.loads(files[INDEX])["skills"]
    out = {"dest": str(site), "index": str(site / INDEX), "commit": head.commit.hex(), "files": count,
           "skills": [{k: s[k] for k in ("name", "type", "url", "digest")} for s in skills],
           "refused": [{"uri": uri, "reason": why} for uri, why in refused.items()]}  # fmt: skip
    if as_json:
        emit(out)
        return
    for s in out["skills"]:
        click.echo(f"{s['type']:9} {s['name']:32} {s['url']}")
    for r in out["refused"]:  # never silent: what a host will not find, and why
        click.echo(f"not published: {r['uri']}: {r['reason']}")
    click.echo(f"published {len(skills)} skill(s) with their anchors: {out['index']}"
               + (f"; {len(refused)} not published (above)" if refused else ""))


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
    with open_brain(ctx) as brain:
        verdicts = brain.lint(list(names) or None)
    failed = [not (v.strict_valid if strict else v.valid) for v in verdicts]
    if as_json:
        emit([v.to_json() for v in verdicts])
    else:
        for v, bad in zip(verdicts, failed, strict=True):
            if bad:
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
    if any(failed):
        sys.exit(1)


@main.command("apply")
@click.argument("payload")
@click.option("--allow-invalid", is_flag=True, help="Record skills even if 'ledger lint' calls them invalid.")
@click.option("--actor", type=click.Choice(["user", "agent", "curator"]), default="agent", show_default=True,
              help="Who makes this change (recorded in the snapshot's trailers).")  # fmt: skip
@evidence_flag
@json_flag
@click.pass_context
def apply_cmd(ctx: click.Context, payload: str, allow_invalid: bool, actor: str, as_json: bool, **kw: Any) -> None:
    """Apply a skill-evolution update payload (SkillEvolBench JSON; '-' = stdin) as one snapshot."""
    import json

    from ledger.agent.evolution import apply_payload
    from ledger.cli.common import evidence_of, read_text
    from ledger.errors import LedgerError

    try:
        doc = json.loads(read_text(payload, 64 << 20, "payload"))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise LedgerError(f"{payload} is not a JSON payload: {type(exc).__name__}") from exc
    with open_brain(ctx) as brain:
        brain.allow_invalid = allow_invalid
        result = apply_payload(brain, doc, actor=actor, evidence=evidence_of(kw))
    if as_json:
        emit(result)
    elif result["snapshot"] is None:
        click.echo("nothing to apply: the payload matches the brain (no snapshot)")
    else:
        skills = ", ".join(f"{r['skill']} v{r['version']}" for r in result["skills"] if r["status"] != "unchanged")
        click.echo(f"{result['operation_type']}: {skills}\nroot   {result['snapshot']['root']}")
