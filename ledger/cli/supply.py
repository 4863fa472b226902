"""Skills from elsewhere: install, approve, revoke, outdated, update and the supply record (docs/supply-chain.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ledger.cli.common import emit, json_flag, main, note_flag, open_brain, print_receipt, returns
from ledger.errors import UsageError, printable

CISCO = "cisco-ai-skill-scanner"  # ledger.scanner.cisco.NAME, named here so that --help loads no scanner

actor_option = click.option(
    "--actor",
    type=click.Choice(["user", "curator", "agent"]),
    default="user",
    show_default=True,
    help="Who acts (recorded and signed in the snapshot).",
)


@returns("ledger.supply.reports:InstallReport")
@main.command()
@click.argument("source", required=False)
@click.argument("names", nargs=-1)
@click.option("--pin", metavar="REF", help="Install at this commit (or ref, resolved to its commit) of the source.")
@click.option("--rpc", help="Check a brain source's root against its registry on this chain too.")
@click.option(
    "--frozen",
    "frozen",
    metavar="LOCK",
    default=None,
    help="Install exactly what LOCK pins (a skills-lock.json or another brain), digests checked, or fail.",
)
@click.option(
    "--strip-credentials",
    "strip",
    is_flag=True,
    help="Remove a token from SOURCE (user:token@, access_token=, a presigned URL's signature) before "
    "anything is fetched or written, instead of refusing it.",
)
@actor_option
@note_flag
@json_flag
@click.pass_context
def install(
    ctx: click.Context,
    source: str | None,
    names: tuple[str, ...],
    pin: str | None,
    rpc: str | None,
    frozen: str | None,
    strip: bool,
    actor: str,
    note: str,
    as_json: bool,
) -> None:
    """Install skills from SOURCE (all of them, or NAMES): pinned, scanned, and held in quarantine.

    SOURCE is another brain (path or git URL), a git repository of skills, a Claude Code
    marketplace.json, a skills-lock.json, or an https index.  Nothing is projected to a
    runtime, listed by 'ledger index' or served to an agent until 'ledger supply approve NAME'.
    A skill that is refused (an external scanner failed on it, its digest is revoked, the brain
    has a skill of its name) is named with the reason and the others are installed; the exit
    status is then 1.  --frozen installs all of the lock or nothing.
    """
    from ledger.supply import usecases as uc

    if (source is None) == (frozen is None):
        raise UsageError("give a SOURCE, or --frozen LOCK (not both)")
    with open_brain(ctx) as brain, brain.acting(actor):
        report = uc.install(brain, source, names, pin=pin, rpc=rpc, frozen=frozen, note=note, strip_credentials=strip)
    out = report.to_json()
    if out.get("stripped"):
        click.echo(
            "removed from the source URL before anything was fetched or written: " + ", ".join(out["stripped"]),
            err=True,
        )
    if as_json:
        emit(report)
        _refused(out)
        return
    for row in out["skills"]:
        if row["status"] == "unchanged":
            click.echo(f"unchanged  {row['skill']} ({row['state']})")
            continue
        if row["status"] == "refused":
            click.echo(f"refused    {row['skill']}: {printable(row['error'])}")
            continue
        pin_text = row["pin"].get("commit") or row["pin"].get("sha256") or ""
        click.echo(
            f"installed  {row['skill']} v{row['version']} @ {pin_text[:12]}  {row['state']}  "
            f"scan: {row['verdict']} ({row['findings']} finding(s))"
        )
        if row.get("held"):
            click.echo(f"  {row['skill']}: not auto-approved: {row['held']}", err=True)
    if out.get("commit"):
        click.echo(f"commit {out['commit']}" + (f"\nsigned {out['signer']}" if out.get("signer") else ""))
    if any(r.get("state") == "quarantined" for r in out["skills"]):
        click.echo(
            "quarantined skills reach no runtime until approved: 'ledger supply show NAME', then "
            "'ledger supply approve NAME'",
            err=True,
        )
    _refused(out)


def _refused(out: dict[str, Any]) -> None:
    """Each refused skill and why on stderr, and exit 1 when any was refused (the rest were installed)."""
    rows = [r for r in out["skills"] if r["status"] == "refused"]
    if not rows:
        return
    for row in rows:
        click.secho(f"error: {row['skill']} was refused: {printable(row['error'])}", fg="red", err=True)
        if row.get("hint"):
            click.echo(f"  hint: {printable(row['hint'])}", err=True)
    done = f"the other {len(out['installed'])} were installed" if out["installed"] else "nothing was installed"
    click.secho(f"error: {len(rows)} skill(s) refused; {done}", fg="red", err=True)
    sys.exit(1)


@returns("ledger.supply.reports:ApproveReport")
@main.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--override", metavar="REASON", help="Approve despite critical findings; the reason is signed.")
@actor_option
@note_flag
@json_flag
@click.pass_context
def approve(
    ctx: click.Context, names: tuple[str, ...], override: str | None, actor: str, note: str, as_json: bool
) -> None:
    """Approve installed skills out of quarantine: a signed curator decision."""
    from ledger.cli.outcomes import receipt_of
    from ledger.supply import usecases as uc

    ctx.obj["commit"] = False
    with open_brain(ctx) as brain, brain.acting(actor):
        report = uc.approve(brain, names, override=override, note=note)
    print_receipt(ctx, receipt_of(report), as_json)


@returns("ledger.supply.reports:RevokeReport")
@main.command()
@click.argument("target")
@click.option("--reason", required=True, help="Why (signed into the lineage, shown to every installer).")
@actor_option
@note_flag
@json_flag
@click.pass_context
def revoke(ctx: click.Context, target: str, reason: str, actor: str, note: str, as_json: bool) -> None:
    """Revoke SOURCE@PIN or a DIGEST: its skills leave every runtime on the next sync and never come back."""
    from ledger.supply import usecases as uc

    with open_brain(ctx) as brain, brain.acting(actor):
        report = uc.revoke(brain, target, reason, note=note)
    if as_json:
        emit(report)
        return
    out = report.to_json()
    click.echo(f"revoked {', '.join(out['revoked'])}")
    for name in out["skills"]:
        click.echo(f"  {name}: revoked; 'ledger sync' removes it from every runtime")
    click.echo(f"commit {out['commit']}")


@returns("ledger.supply.reports:OutdatedReport")
@main.command()
@json_flag
@click.pass_context
def outdated(ctx: click.Context, as_json: bool) -> None:
    """Installed skills whose source now serves a newer version."""
    from ledger.supply import usecases as uc

    with open_brain(ctx) as brain:
        report = uc.outdated(brain)
    if as_json:
        emit(report)
        return
    rows = report.to_json()
    if not rows:
        click.echo("every installed skill is at its source's version")
    for row in rows:
        have = row["pin"].get("commit") or row["pin"].get("sha256") or ""
        if "error" in row:
            click.echo(f"{row['skill']:30} {have[:12]}  cannot read its source: {printable(row['error'])}")
        else:
            new = row["latest"].get("commit") or row["latest"].get("sha256") or ""
            click.echo(f"{row['skill']:30} {have[:12]} → {new[:12]}  ({row['state']})")


@returns("ledger.supply.reports:UpdateReport")
@main.command()
@click.argument("name")
@click.option("--pin", metavar="REF", help="Update to this commit of the source, not its newest.")
@click.option("--yes", is_flag=True, help="Install the update into quarantine without asking.")
@actor_option
@json_flag
@click.pass_context
def update(ctx: click.Context, name: str, pin: str | None, yes: bool, actor: str, as_json: bool) -> None:
    """Review NAME's newer upstream version against the vetted one, then install it into quarantine."""
    from ledger.supply import usecases as uc

    with open_brain(ctx) as brain, brain.acting(actor):
        checked = uc.update(brain, name, pin=pin, apply=False)
        review = checked.to_json()
        if review.get("unchanged"):
            emit(checked) if as_json else click.echo(f"{name} is at its source's version")
            return
        if not as_json:
            _say_review(review)
        go = yes or (sys.stdin.isatty() and not as_json and click.confirm("install this update into quarantine?"))
        if not go:
            if as_json:
                emit(checked)
            click.echo("nothing changed; run again with --yes to install it into quarantine", err=True)
            sys.exit(1)
        done = uc.update(brain, name, pin=pin, apply=True)
    out = done.to_json()
    if as_json:
        emit(done)
    else:
        click.echo(f"updated {name} to v{out['version']}: quarantined until 'ledger supply approve {name}'")
        click.echo(f"commit {out['commit']}")


def _say_review(review: dict[str, Any]) -> None:
    diff = review["diff"]
    click.echo(f"{review['skill']}: {_pin(review['from'])} → {_pin(review['to'])}")
    if review.get("signer"):
        was, now = review["signer"]["from"], review["signer"]["to"]
        click.secho(
            f"  ! signer changes: {printable(str(was or 'none'))} → {printable(str(now or 'none'))}", fg="yellow"
        )
    for item in diff["safety"]:
        click.secho(f"  ! {item['kind']:13} {printable(item['file'])}: {printable(item['what'])}", fg="yellow")
    for key in ("added", "removed", "changed"):
        for rel in diff[key]:
            click.echo(f"  {key:8} {printable(rel)}")
    verdict = review["verdict"]
    click.echo(f"  scan: {verdict['worst']} ({len(verdict['findings'])} finding(s))")
    for f in verdict["findings"]:
        click.echo("  " + _finding(f))
    if review["forked"]:
        click.echo(f"  local edits kept (a fork): {', '.join(diff['fork']['edited_here'])}; merged three ways")
    for rel, text in diff["text"].items():
        click.echo(printable(text) if text else f"  ({rel})")


def _finding(f: dict[str, Any]) -> str:
    return f"  {f['severity']:8} {f['rule']} {printable(f['file'])}:{f['line'] or '-'} {printable(f['detail'])}"


def _words(value: Any) -> str:
    """A member of the record as a user reads it: ``key value`` pairs, comma-separated lists, "none"."""
    if value is None or value == "" or value == [] or value == {}:
        return "none"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_words(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_words(v) for v in value)
    return printable(str(value))


def _pin(pin: dict[str, Any]) -> str:
    return str(pin.get("commit") or pin.get("sha256") or "")[:12]


@main.group()
def supply() -> None:
    """The supply record: where each installed skill came from and who vetted it."""


@returns("ledger.supply.reports:SupplyListReport")
@supply.command("list")
@json_flag
@click.pass_context
def supply_list(ctx: click.Context, as_json: bool) -> None:
    """Every installed skill with its source, pin, state and verdict; every revoked digest."""
    from ledger.supply import usecases as uc

    with open_brain(ctx) as brain:
        report = uc.record(brain)
    if as_json:
        emit(report)
        return
    for name, e in sorted(report.skills.items()):
        click.echo(
            f"{name:30} {e.state:11} {e.verdict.get('worst'):8} {e.source['type']:11} "
            f"{printable(e.source['url'])} @ {_pin(e.pin)}"
        )
    for digest, why in sorted(report.revoked.items()):
        click.echo(f"revoked {digest}: {printable(why.reason)}")


@returns("ledger.supply.reports:SupplyEntryReport")
@supply.command("show")
@click.argument("name")
@json_flag
@click.pass_context
def supply_show(ctx: click.Context, name: str, as_json: bool) -> None:
    """One installed skill's pin, digests, upstream signer, credit, verdict and approval."""
    from ledger.supply import usecases as uc

    with open_brain(ctx) as brain:
        report = uc.entry(brain, name)
    if as_json:
        emit(report)
        return
    doc = report.to_json()
    for key in ("state", "version", "blake3", "sha256", "signer"):
        click.echo(f"{key:12} {_words(doc[key])}")
    click.echo(f"{'source':12} {doc['source']['type']} {printable(doc['source']['url'])} {doc['source']['path']}")
    click.echo(f"{'pin':12} {_words(doc['pin'])}")
    if doc["derived_from"]:
        click.echo(f"{'derived from':12} {_words(doc['derived_from'])}")
    if doc["approval"]:
        click.echo(f"{'approval':12} {_words(doc['approval'])}")
    click.echo(f"{'scan':12} {doc['verdict']['worst']} ({printable(doc['verdict']['scanner'])})")
    for f in doc["verdict"].get("findings", []):
        click.echo(_finding(f))
    _calibration(doc["verdict"])


def _calibration(verdict: dict[str, Any]) -> None:
    """The error rates recorded for each scanner of a verdict (format 3), or that none were recorded."""
    from ledger.scanner.calibration import describe

    if "calibration" not in verdict:
        click.echo(f"{'calibration':12} none recorded (a supply record of format 1 or 2)")
        return
    for name, cal in verdict["calibration"].items():
        click.echo(f"{'calibration':12} {printable(describe(name, cal))}")


@returns("ledger.scanner.reports:ScanReport")
@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--vetted",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The approved version of the (one) skill scanned: report what the update widens.",
)
@click.option(
    "--run",
    "run",
    is_flag=True,
    help="Also run each script and Markdown command block in a bubblewrap sandbox (no network, canary "
    "credentials, strace) and report what it did (ledger-run/1); exit 1 if the sandbox cannot be built.",
)
@click.option(
    "--run-timeout",
    type=click.FloatRange(0, 600, min_open=True),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="With --run: the time cap per script or block.",
)
@click.option(
    "--with",
    "also",
    multiple=True,
    type=click.Choice([CISCO]),
    metavar="SCANNER",
    help=f"Also run this supported external scanner for this run ({CISCO}); the verdict is the worse of "
    "the two, both named.",
)
@json_flag
def scan(
    paths: tuple[Path, ...], vetted: Path | None, run: bool, run_timeout: float, also: tuple[str, ...], as_json: bool
) -> None:
    """Scan skill folders (every folder holding a SKILL.md under PATHS) as an install would; exit 1 on a
    critical finding.  Nothing is installed or written (docs/scanner.md).

    \b
    A second opinion: --with cisco-ai-skill-scanner adds Cisco's scanner (its static analyzers only: no
    LLM, no network service), installed on first use into a venv of its own from a hash-pinned lock
    (under $XDG_CACHE_HOME/brain-ledger/scanners, or $LEDGER_SCANNERS_DIR).  For every install, set
    "supply": {"scanners": ["cisco-ai-skill-scanner"]} in .ledger/config.json.  It is off by default:
    on a held-out corpus it flagged 4 of 10 tricky benign skills (high or above) where the built-in
    rules refused 1, and it takes seconds per skill (docs/scanner.md, "A second opinion").
    """
    from ledger.supply import usecases as uc

    report = uc.scan(paths, vetted=vetted, run=run, run_timeout=run_timeout, also=also)
    verdicts = report.to_json()
    if as_json:
        emit(report)
    else:
        for skill, v in verdicts.items():
            click.echo(f"{v['worst']:8} {printable(skill)}")
            for f in v["findings"]:
                click.echo(_finding(f))
    blocked = report.blocked
    if blocked:
        click.secho(
            f"error: {len(blocked)} skill(s) with a critical finding; an install of them could not be "
            "approved without --override",
            fg="red",
            err=True,
        )
        sys.exit(1)
