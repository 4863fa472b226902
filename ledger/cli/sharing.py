"""Sharing a brain: push, pull and clone, each carrying the snapshots and the chain receipts."""

from __future__ import annotations

from pathlib import Path

import click

from ledger.cli.common import emit, json_flag, main, open_brain


def _say_receipts(counts: dict) -> None:
    """What became of the other copy's receipts: none is believed unchecked."""
    if counts.get("unverified"):
        click.echo(
            f"kept {counts['unverified']} receipt(s) apart as unverified: no chain to check them against "
            "(they do not count as anchored; 'ledger commit' rebuilds receipts from the chain)",
            err=True,
        )
    for why in counts.get("refused", []):
        click.echo(f"warning: refused a receipt that does not hold up: {why}", err=True)


@main.command()
@click.argument("remote")
@json_flag
@click.pass_context
def push(ctx: click.Context, remote: str, as_json: bool) -> None:
    """Publish the snapshots and chain receipts to REMOTE (a path or git URL).

    A path that does not exist becomes a bare repository an auditor can clone.  Refused
    when REMOTE holds snapshots this brain lacks: a push never rewrites a lineage.
    """
    from ledger.exchange import sharing

    with open_brain(ctx) as brain:
        out = sharing.push(brain, remote)
    _say_receipts(out["incoming_receipts"])
    if as_json:
        emit(out)
    elif out["was"] == out["head"]:
        click.echo(f"{remote} is up to date at {out['head'][:12]}")
    else:
        was = out["was"][:12] if out["was"] else "(nothing)"
        click.echo(f"pushed {was} → {out['head'][:12]} to {remote}" + (" with receipts" if out["receipts"] else ""))


@main.command()
@click.argument("remote")
@json_flag
@click.pass_context
def pull(ctx: click.Context, remote: str, as_json: bool) -> None:
    """Take REMOTE's snapshots and receipts, once they pass the audit and extend this lineage."""
    from ledger.exchange import sharing

    with open_brain(ctx) as brain:
        out = sharing.pull(brain, remote)
    _say_receipts(out["incoming_receipts"])
    if as_json:
        emit(out)
    elif out["moved"]:
        click.echo(f"pulled {out['from'][:12]} → {out['to'][:12]} from {remote} (audited)")
    else:
        click.echo(f"already up to date with {remote} (receipts joined)")


@main.command("clone")
@click.argument("remote")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def clone_cmd(remote: str, directory: Path) -> None:
    """Make a new brain in DIRECTORY from REMOTE: snapshots and receipts, audited before use."""
    from ledger.exchange.sharing import clone

    with clone(remote, directory) as brain:
        head = brain.head()
        click.echo(f"cloned {remote} into {brain.root} ({len(head.skills)} skill(s), audited)")
        click.echo(f"root   {head.snap.to_json()['root']}")
