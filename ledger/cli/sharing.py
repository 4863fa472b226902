"""Sharing a brain: push, pull and clone, each carrying the snapshots and the chain receipts."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ledger.cli.common import emit, json_flag, main, open_brain, returns, say_refused_refs


def _say_receipts(counts: dict) -> None:
    """What became of the other copy's receipts (an :class:`IncomingReceipts` document): none is believed
    unchecked."""
    if counts.get("unverified"):
        click.echo(
            f"kept {counts['unverified']} receipt(s) apart as unverified: no chain to check them against "
            "(they do not count as anchored; 'ledger chain anchor' rebuilds receipts from the chain)",
            err=True,
        )
    for why in counts.get("refused", []):
        click.echo(f"warning: refused a receipt that does not hold up: {why}", err=True)
    for why in (counts.get("epochs") or {}).get("refused", []):
        click.echo(f"warning: refused an epoch receipt that does not hold up: {why}", err=True)


@returns("ledger.remotes.reports:PushReport")
@main.command()
@click.argument("remote")
@json_flag
@click.pass_context
def push(ctx: click.Context, remote: str, as_json: bool) -> None:
    """Publish the snapshots and chain receipts to REMOTE (a path or git URL).

    A path that does not exist becomes a bare repository an auditor can clone.  The
    remote's branch moves only by compare-and-swap, never by force: when REMOTE holds
    snapshots this brain lacks, they are fetched, audited and merged, and the push tried
    again (see docs/lineage.md, 'Merges').
    """
    from ledger.remotes.run import push as push_to

    with open_brain(ctx) as brain:
        report = push_to(brain, remote)
    out = report.to_json()
    _say_receipts(out["incoming_receipts"])
    refused = out["incoming_receipts"].get("refused_refs") or {}
    if as_json:
        emit(report)
        _exit_if(refused)
        return
    for merged in out["merges"]:
        _say_merge(merged)
    if not out["pushed"]:
        click.echo(f"{remote} is up to date at {out['head'][:12]}")
    elif out["was"] == out["head"]:
        click.echo(f"pushed receipts to {remote} (its snapshots were up to date at {out['head'][:12]})")
    elif not out["was"]:
        click.echo(
            f"pushed the whole lineage, {out['snapshots']} snapshot(s) up to {out['head'][:12]}, to {remote} "
            "(it held none)"
        )
    else:
        click.echo(f"pushed {out['was'][:12]} → {out['head'][:12]} to {remote}")
    _exit_if(say_refused_refs(remote, refused))


def _exit_if(refused: object) -> None:
    if refused:
        sys.exit(1)


def _say_merge(merged: dict) -> None:  # a MergeReport document
    if merged["action"] == "fast-forward":
        click.echo(f"took {len(merged['skills'])} changed skill(s) from the remote (fast-forward)")
    elif merged["action"] == "merge":
        click.echo(
            f"merged the remote's lineage: {merged['head'][:12]} "
            f"({len(merged['changes'])} change(s), {len(merged['merged'])} skill(s) merged file by file)"
        )
        for note in merged["notes"]:
            click.echo(f"  {note}")
        for name in merged["conflicts"]:
            click.echo(
                f"conflict: {name}: both sides changed it; the remote's version was kept and yours stays in "
                f"the lineage (settle with 'ledger skill resolve {name} --take kept|other')",
                err=True,
            )


@returns("ledger.remotes.reports:PullReport")
@main.command()
@click.argument("remote")
@json_flag
@click.pass_context
def pull(ctx: click.Context, remote: str, as_json: bool) -> None:
    """Take REMOTE's snapshots and receipts once they pass the audit; merge where the lineages diverged."""
    from ledger.remotes.run import pull as pull_from

    with open_brain(ctx) as brain:
        report = pull_from(brain, remote)
    out = report.to_json()
    _say_receipts(out["incoming_receipts"])
    refused = out["incoming_receipts"].get("refused_refs") or {}
    if as_json:
        emit(report)
    elif out["moved"]:
        if out["merge"]:
            _say_merge(out["merge"])
        click.echo(f"pulled {out['from'][:12]} → {out['to'][:12]} from {remote} (audited)")
    else:
        click.echo(f"already up to date with {remote} (receipts joined)")
    _exit_if(say_refused_refs(remote, refused) if not as_json else refused)


@returns("ledger.remotes.reports:CloneReport")
@main.command("clone")
@click.argument("remote")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@json_flag
def clone_cmd(remote: str, directory: Path, as_json: bool) -> None:
    """Make a new brain in DIRECTORY from REMOTE: snapshots and receipts, audited before use."""
    from ledger.remotes.run import clone

    report = clone(remote, directory)
    if as_json:
        emit(report)
        _exit_if(report.refused_refs)
        return
    click.echo(f"cloned {remote} into {report.path} ({report.skills} skill(s), audited)")
    click.echo(f"root   {report.root}")
    _exit_if(say_refused_refs(remote, report.refused_refs))


@returns("ledger.remotes.reports:ResolveReport")
@main.command()
@click.argument("name")
@click.option(
    "--take",
    required=True,
    metavar="SIDE",
    help="A merge conflict: 'kept' (the head as the merge left it) or 'other' (the other side's skill as a "
    "new version).  A runtime conflict: 'ledger' or the target whose copy wins.",
)
@json_flag
@click.pass_context
def resolve(ctx: click.Context, name: str, take: str, as_json: bool) -> None:
    """Settle the conflict on skill NAME, a fleet merge's or a runtime target's (see 'ledger status').

    Nothing is lost either way: the side not taken stays in the lineage (a merge's second
    parent), or is kept aside and named (a target's copy taken away by 'ledger')."""
    from ledger.remotes.run import resolve as settle

    if take in ("kept", "other"):
        with open_brain(ctx) as brain:
            report = settle(brain, name, take)
        if as_json:
            emit(report)
        elif report.snapshot:
            click.echo(f"took the other side of {name}: v{report.snapshot.version}, root {report.snapshot.root}")
        else:
            click.echo(f"kept {name} as the merge left it; the conflict is settled")
        return
    from ledger.cli.runtimes import settle_runtime_conflict

    settle_runtime_conflict(ctx, name, take, as_json)
