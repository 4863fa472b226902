"""Runtimes' folders as targets: ``ledger target list``, ``link``, ``unlink`` and ``sync`` (with ``--watch``),
and the shared remote (``ledger remote``).

Each command parses, calls its use case (:mod:`ledger.sync.run`, :mod:`ledger.sync.links`,
:mod:`ledger.remotes.fleet`), prints the typed report it returns (``--json``: its document) and
picks the exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ledger.cli.common import emit, json_flag, main, open_brain, renamed_option, returns, say_refused_refs
from ledger.errors import LedgerError, UsageError

if TYPE_CHECKING:
    from ledger.sync.reports import RemoteSyncReport, SyncReport

if TYPE_CHECKING:
    from ledger.sync.reports import RuntimeRow

_LAYOUTS = ("agentskills", "claude", "hermes")


@returns("ledger.sync.reports:RuntimesReport")
@main.command()
@json_flag
@click.pass_context
def runtimes(ctx: click.Context, as_json: bool) -> None:
    """The runtimes' skills folders on this machine, and which are linked to the brain."""
    from ledger._paths import find_brain
    from ledger.sync.links import runtimes as listed

    try:
        root = find_brain(ctx.obj["brain"], search_up=ctx.obj["brain"] is None)
    except LedgerError:
        root = None  # outside a brain: the runtimes alone
    report = listed(root)
    if as_json:
        emit(report)
        return
    for r in report.runtimes:
        click.echo(_runtime_line(r))


def _runtime_line(r: RuntimeRow) -> str:
    state = f"{r.skills} skill(s)" if r.exists else "absent"
    flags = ("installed" if r.installed else "not installed") + (f", linked as {r.linked}" if r.linked else "")
    return f"{r.name:15} {r.path:44} {r.layout:12} {state:14} {flags}"


@returns("ledger.sync.reports:LinkReport")
@main.command()
@click.argument("where")
@click.option(
    "--layout", type=click.Choice(_LAYOUTS), help="The folder's layout (default: the runtime's, or agentskills)."
)
@click.option("--skills", "pattern", help="Only skills whose key matches this glob (the rest are left alone).")
@renamed_option(
    "--anchored",
    "--committed",
    "committed",
    is_flag=True,
    help="Project the root last anchored on chain, not the head.",
)
@click.option(
    "--best-verified",
    is_flag=True,
    help="Project each skill's version with the best verified outcomes "
    "(highest lower Wilson bound), not the head's; skills with none verified: the head's.",
)
@click.option("--name", help="The target's name (default: the runtime's, or the folder's).")
@click.option(
    "--actor",
    type=click.Choice(["agent", "curator", "user"]),
    default="agent",
    show_default=True,
    help="Who is recorded as making the changes found there.",
)
@click.option("--runtime", "runtime_name", help="Recorded as Ledger-Runtime (default: the runtime, or the name).")
@json_flag
@click.pass_context
def link(
    ctx: click.Context,
    where: str,
    layout: str | None,
    pattern: str | None,
    committed: bool,
    best_verified: bool,
    name: str | None,
    actor: str,
    runtime_name: str | None,
    as_json: bool,
) -> None:
    """Add a target: WHERE is a runtime from 'ledger target list' (claude, hermes, agents, …) or a folder.

    The folder is made if missing.  Nothing is written until 'ledger sync', which adopts the
    skills already there and projects the brain's.
    """
    from ledger.sync import links

    target = links.plan(
        where,
        layout=layout,
        skills=pattern,
        committed=committed,
        best_verified=best_verified,
        name=name,
        actor=actor,
        runtime=runtime_name,
    )
    with open_brain(ctx) as brain:
        report = links.add(brain, target)
    if as_json:
        emit(report)
    else:
        click.echo(f"linked {report.name}: {report.path} ({report.layout}); run 'ledger sync' to project the brain")


@returns("ledger.sync.reports:UnlinkReport")
@main.command()
@click.argument("name")
@json_flag
@click.pass_context
def unlink(ctx: click.Context, name: str, as_json: bool) -> None:
    """Remove a target; its files are left as they are."""
    from ledger.sync.links import unlink as remove

    with open_brain(ctx) as brain:
        report = remove(brain, name)
    if as_json:
        emit(report)
    else:
        click.echo(f"unlinked {report.unlinked}; {report.path} is left as it is")


@returns("ledger.sync.reports:SyncReport", "ledger.sync.reports:RemoteTick")
@main.command()
@click.argument("names", nargs=-1)
@click.option(
    "--take", nargs=2, metavar="SIDE SKILL", help="Settle a conflict: SIDE is 'ledger' or the target whose copy wins."
)
@click.option(
    "--confirm-deletions",
    "confirm",
    multiple=True,
    metavar="TARGET",
    help="Record the skills gone from TARGET as deletions, however many.",
)
@click.option(
    "--restore",
    multiple=True,
    metavar="TARGET",
    help="TARGET lost its files (wiped, or a new disk): put the brain's skills back, recording no deletion.",
)
@click.option("--watch", is_flag=True, help="Keep syncing as files change (Ctrl-C stops).")
@click.option("--debounce", type=float, default=0.2, show_default=True, help="Seconds of quiet before a watch sync.")
@click.option(
    "--poll",
    type=float,
    default=2.0,
    show_default=True,
    help="With --watch and a remote: seconds between looks at the remote.",
)
@click.option("--no-remote", is_flag=True, help="Leave the shared remote ('ledger remote set') out of this sync.")
@click.option(
    "--full",
    is_flag=True,
    help="Read every file of every target: trust no record or stat entry (docs/layouts.md, No-op syncs).",
)
@json_flag
@click.pass_context
def sync(
    ctx: click.Context,
    names: tuple[str, ...],
    take: tuple[str, str] | None,
    confirm: tuple[str, ...],
    restore: tuple[str, ...],
    watch: bool,
    debounce: float,
    poll: float,
    no_remote: bool,
    full: bool,
    as_json: bool,
) -> None:
    """Project the brain into every linked target and record what changed there; then publish it to
    the shared remote (merging what other machines published) and anchor it, when one is set.

    Exit 1 while a conflict or a refused target remains, or the remote cannot be reached (with
    --json, after printing the report).  A target found in step by its last pass is checked by
    its files' metadata alone (lstat); --full reads every file.
    """
    from ledger.sync import run

    with open_brain(ctx) as brain:
        if watch:
            if take or confirm or restore or full:
                run.plan(brain, names, not no_remote)  # nothing to sync is said first
                raise UsageError(
                    "--watch does not take --take, --confirm-deletions, --restore or --full", hint="run them once first"
                )
            run.watch(
                brain,
                names,
                remote=not no_remote,
                debounce=debounce,
                poll=poll,
                on_report=lambda r: _say(r, as_json, quiet=True),
                on_remote=lambda out: _say_tick(out, poll, as_json),
            )
            return
        report = run.sync(brain, names, take=take, confirm=confirm, restore=restore, remote=not no_remote, full=full)
    _say(report, as_json)
    fleet = report.remote or None
    merged = len(report.merge_conflicts or ())
    alone = report.left_alone
    if report.conflicts or report.refused or merged:
        click.echo(
            f"error: {report.conflicts + merged} conflict(s) and {report.refused} refused target(s) "
            "remain (see above and 'ledger status'); nothing was overwritten",
            err=True,
        )
    if alone:
        click.echo(
            f"error: {alone} entr{'y was' if alone == 1 else 'ies were'} left alone (see above): "
            "everything else is in step",
            err=True,
        )
    if fleet is not None and fleet.status != "ok":
        click.echo(
            f"error: the remote is {fleet.status}; this brain keeps every write and the next sync publishes it",
            err=True,
        )
    if fleet is not None and fleet.refused_refs:
        click.echo(
            f"error: {len(fleet.refused_refs)} ref(s) of the remote refused (see above); main is in step", err=True
        )
    if not report.ok:
        sys.exit(1)


def settle_runtime_conflict(ctx: click.Context, name: str, side: str, as_json: bool) -> None:
    """``ledger skill resolve NAME --take ledger|TARGET``: one sync of the targets in conflict on NAME
    (:func:`ledger.sync.run.settle`)."""
    from ledger.sync.run import settle

    with open_brain(ctx) as brain:
        report = settle(brain, name, side)
    _say(report, as_json)
    left = [c for t in report.targets for c in t.conflicts if c["skill"] == name]
    if left or report.refused:
        click.echo(f"error: {name} is still in conflict or a target was refused (see above)", err=True)
        sys.exit(1)


def _say_tick(out: RemoteSyncReport, poll: float, as_json: bool) -> None:
    """One look at the remote while watching: every one with --json, else what changed or failed."""
    from ledger.sync.reports import RemoteTick

    if as_json:
        emit(RemoteTick(out))
    elif out.status != "ok":
        click.echo(f"remote {out.status}: {out.reason or ''} (retrying every {poll:g} s)", err=True)
    elif out.merges or out.committed or out.refused_refs:
        _say_remote(out)


def _say_remote(out: RemoteSyncReport) -> None:
    for m in out.merges:
        if m["action"] == "merge":
            also = f"; conflict(s): {', '.join(m['conflicts'])} (see 'ledger status')" if m["conflicts"] else ""
            click.echo(f"merged    {len(m['changes'])} change(s) from {out.remote}{also}")
        elif m["action"] == "fast-forward":
            click.echo(f"took      {len(m['skills'])} skill(s) from {out.remote}")
    if out.status != "ok":
        click.echo(click.style("remote   ", fg="red") + f" {out.status}: {out.reason or ''}")
    elif out.pushed:
        click.echo(f"pushed    {out.head[:12]} to {out.remote}")
    if out.committed:
        click.echo(f"anchored  {out.committed} root(s) in {len(out.transactions)} transaction(s)")
    if out.refused_refs:
        say_refused_refs(out.remote, out.refused_refs)


@returns("ledger.sync.reports:RemoteReport")
@main.group(invoke_without_command=True)
@json_flag
@click.pass_context
def remote(ctx: click.Context, as_json: bool) -> None:
    """The shared git remote this brain syncs with (one per brain); shows it."""
    if ctx.invoked_subcommand is not None:
        return
    from ledger.remotes.fleet import show_remote

    with open_brain(ctx) as brain:
        report = show_remote(brain)
    if as_json:
        emit(report)
    else:
        doc = report.remote
        click.echo(f"{doc['url']}" + (" (anchors on chain)" if doc.get("commit") else "") if doc else "no remote set")


@returns("ledger.sync.reports:RemoteSetReport")
@remote.command("set")
@click.argument("url")
@click.option("--create", is_flag=True, help="Make URL a new bare repository when it is a path that does not exist.")
@renamed_option(
    "--anchor", "--commit", "commit", is_flag=True, help="Anchor on chain after each push (any authorized machine may)."
)
@click.option("--key", help="The keystore key that commits (see 'ledger keys list').")
@json_flag
@click.pass_context
def remote_set(ctx: click.Context, url: str, create: bool, commit: bool, key: str | None, as_json: bool) -> None:
    """Sync with URL (a bare git repository over ssh, a git host, or a path) on every 'ledger sync'.

    A relative path is the brain directory's (as git reads one against its repository) and is
    recorded absolute, so a sync from anywhere finds it; URLs (ssh://, https://, host:path,
    file://) are kept as given.  A path that does not exist is refused: --create makes it a new
    bare repository.  Later a missing remote is an unreachable one, never made again."""
    from ledger.remotes.fleet import set_remote

    with open_brain(ctx) as brain:
        report = set_remote(brain, url, create=create, commit=commit, key=key)
    if as_json:
        emit(report)
        return
    click.echo(
        f"remote set: {report.url}"
        + (" (a new bare repository)" if report.created else "")
        + (" (anchors on chain)" if report.commit else "")
    )


@returns("ledger.sync.reports:RemoteUnsetReport")
@remote.command("unset")
@json_flag
@click.pass_context
def remote_unset(ctx: click.Context, as_json: bool) -> None:
    """Stop syncing with the remote; nothing on it changes."""
    from ledger.remotes.fleet import unset_remote

    with open_brain(ctx) as brain:
        report = unset_remote(brain)
    if as_json:
        emit(report)
    else:
        click.echo("remote unset")


@returns("ledger.sync.reports:GuardReport")
@remote.command("guard")
@click.argument("path", type=click.Path(file_okay=False, exists=True, path_type=Path))
@json_flag
def remote_guard(path: Path, as_json: bool) -> None:
    """Guard the bare repository PATH: git's pre-receive hook audits every update of main before
    git takes it, so a plain 'git push' of snapshots the brain would refuse is refused there (ADR 27).
    A remote the ledger creates is guarded already."""
    from ledger.remotes.guard import install
    from ledger.store.gitstore import GitStore
    from ledger.sync.reports import GuardReport

    GitStore(path).close()  # refuses what is not a git repository
    report = GuardReport(guarded=str(install(path.absolute())))
    if as_json:
        emit(report)
    else:
        click.echo(f"guarded: {report.guarded}")


def _say(report: SyncReport, as_json: bool, quiet: bool = False) -> None:
    if as_json:
        emit(report)
        return
    for t in report.targets:
        if t.status != "ok":
            click.echo(click.style("refused ", fg="red") + f"{t.name}: {t.reason}\n        hint: {t.hint}")
            continue
        for r in t.recorded:
            version = f" v{r.version}" if r.version is not None else ""
            click.echo(f"recorded  {r.skill}{version} ({r.action}) from {t.name}")
        for key in t.projected:
            click.echo(f"projected {key} → {t.name}")
        for key in t.removed:
            click.echo(f"removed   {key} from {t.name}")
        for r in t.rescued:
            click.echo(click.style("rescued  ", fg="yellow") + f" {r.skill}: kept in {r.kept}")
        for c in t.conflicts:
            click.echo(
                click.style("CONFLICT ", fg="red") + f" {c['skill']} in {t.name} ({', '.join(c['files'])})"
                f"\n          settle: {c['hint']}"
            )
        for h in t.held or ():
            shows = (
                f"it keeps v{h.shows}" if h.shows is not None else "it keeps what it has" if h.kept else "not projected"
            )
            click.echo(
                click.style("held     ", fg="yellow") + f" {h.skill} v{h.version} from {t.name} ({shows}): {h.why}"
            )
        if not quiet:
            for a in t.left_alone:
                click.echo(f"left alone {t.name}/{a.dir}: {a.reason}")
            for h in t.ignored_held:
                click.echo(
                    click.style("not ignored", fg="yellow") + f" {t.name}/{h.path}: the brain holds it, "
                    f"so the rule {h.rule!r} in {h.source} does not hide it (it syncs as any "
                    "file: remove the rule, or delete the file to record its deletion)"
                )
        if not t.busy and not quiet:
            alone = len(t.left_alone)
            click.echo(
                f"{t.name}: in step"
                if not alone
                else f"{t.name}: in step but for {alone} entr{'y' if alone == 1 else 'ies'} left alone"
            )
    if report.remote:
        _say_remote(report.remote)
        if report.remote.status == "ok" and not (report.remote.pushed or report.remote.merges):
            click.echo(f"{report.remote.remote}: in step")
