"""``ledger report``: the brain as one self-contained page a shareholder can check (ledger.page)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ledger.cli.common import emit, json_flag, main, open_brain, returns


@returns("ledger.audit.reports:PageReport")
@main.command()
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The directory to write index.html into (made if missing).",
)
@click.option(
    "--rpc",
    metavar="URL",
    help="Check the chain too: anchors, pending roots, the evidence root on chain, "
    "the shares.  Without it the page says the chain was not checked.",
)
@json_flag
@click.pass_context
def report(ctx: click.Context, out: Path, rpc: str | None, as_json: bool) -> None:
    """Write OUTPUT/index.html: first a summary a shareholder can read (what the agent can do, what
    changed and when, how well it works, the shares, where it is anchored) and the commands to check
    it yourself; then the audit in detail: the lineage as a timeline, competence per skill version
    as plots, who signed what, what is anchored and pending, skills from elsewhere.

    One static page, no network when viewed.  Everything on it is audited first: a checked
    figure is drawn solid with a tick, a figure the audit could not check is marked 'claimed',
    and a brain that fails its audit is shown as FAILING (exit 1, the page still written).
    --json prints what was written, where, and the figures (the same exit codes).
    """
    from ledger.page.run import write_page

    with open_brain(ctx) as brain:
        page = write_page(brain, out, rpc=rpc)
    if as_json:
        emit(page)
    else:
        click.echo(
            f"report written to {page.output} ({page.verdict}; {page.skills} skill(s), "
            f"{page.snapshots} snapshot(s), {page.outcomes} outcome(s))"
        )
    if not page.ok:
        sys.exit(1)
