"""Keys, the local anvil, the registry, and ``ledger chain anchor``: everything that talks to a chain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ledger.cli.common import (
    emit,
    get_flag,
    json_flag,
    main,
    open_brain,
    progress_bar,
    returns,
)


def _prompt_password(confirm: bool) -> str:
    return str(click.prompt("keystore password", hide_input=True, confirmation_prompt=confirm, err=True))


# --------------------------------------------------------------------------- chain


@main.group()
def chain() -> None:
    """A local anvil testnet and the on-chain registry."""


def _anvil_dir(brain: Any) -> Path:
    """This brain's anvil directory (:func:`ledger.anchoring.run.anvil_dir`)."""
    from ledger.anchoring.run import anvil_dir

    return anvil_dir(brain)


@returns("ledger.anchoring.reports:ChainUpReport")
@chain.command("up")
@click.option("--port", type=click.IntRange(1, 65535), help="Port on 127.0.0.1 (default: a free one).")
@click.option("--chain-id", type=int, default=31337, show_default=True)
@json_flag
@click.pass_context
def chain_up(ctx: click.Context, port: int | None, chain_id: int, as_json: bool) -> None:
    """Start a local anvil in the background; its state and port persist in .ledger/anvil/.

    Idempotent: when this brain's node is already running, it prints its URL and exits 0.
    """
    from ledger.anchoring.run import chain_up as up

    with open_brain(ctx) as brain:
        report = up(brain, port=port, chain_id=chain_id)
    if as_json:
        emit(report)
        return
    if not report.started:
        click.echo(f"anvil is already running (pid {report.pid})", err=True)
    click.echo(report.rpc)


@returns("ledger.anchoring.reports:ChainDownReport")
@chain.command("down")
@json_flag
@click.pass_context
def chain_down(ctx: click.Context, as_json: bool) -> None:
    """Stop the local anvil (its state is kept for the next 'chain up')."""
    from ledger.anchoring.run import chain_down as down

    with open_brain(ctx) as brain:
        report = down(brain)
    if as_json:
        emit(report)
    else:
        click.echo(f"stopped anvil (pid {report.pid})" if report.stopped else "anvil was not running")


@returns("ledger.anchoring.reports:ChainUseReport")
@chain.command("use")
@click.argument("rpc")
@click.option(
    "--registry",
    metavar="ADDR",
    help="Also use the BrainRegistry already deployed at ADDR (checked for code on that chain); "
    "then 'ledger chain register' registers this brain's agent on it.",
)
@json_flag
@click.pass_context
def chain_use(ctx: click.Context, rpc: str, registry: str | None, as_json: bool) -> None:
    """Point the brain at an existing RPC endpoint (http, https, ws or wss URL), and with --registry ADDR at
    a registry deployed there (by another brain's 'ledger chain deploy', say) instead of deploying one."""
    from ledger.anchoring.run import chain_use as use
    from ledger.anchoring.run import check_rpc

    check_rpc(rpc, registry)  # a usage error before any brain is opened
    with open_brain(ctx) as brain:
        report = use(brain, rpc, registry)
    if as_json:
        emit(report)
    else:
        click.echo(rpc + (f" registry {report.registry} on chain {report.chain_id}" if registry else ""))


key_flag = click.option("--key", help="Signing key: a keystore name, or 'anvil-dev' on chain id 31337.")


@returns("ledger.anchoring.reports:ChainStatusReport")
@chain.command("status")
@json_flag
@get_flag
@click.pass_context
def chain_status(ctx: click.Context, as_json: bool) -> None:
    """Compare the on-chain head of this brain's agent with the local head."""
    from ledger.anchoring.run import chain_status as status_of

    with open_brain(ctx) as brain:
        report = status_of(brain)
    if as_json:
        emit(report)
        return
    st = report.to_json()
    from ledger.chain.networks import network

    rows = [
        ("rpc", st["rpc"]),
        ("chain", f"{st['chain_id']} ({network(st['chain_id']).name})"),
        ("registry", st["registry"]),
        ("agent", st["agent"]),
        ("on-chain head", st["onchain_head"] or "none yet (nothing committed)"),
        ("chain sequence", st["onchain_seq"]),
        ("local head", st["local_head"]),
        (
            "pending",
            f"{st['pending']} root(s) to commit"
            if st["pending"] is not None
            else "unknown: the on-chain head is not on this brain's lineage",
        ),
    ]
    for label, value in rows:
        click.echo(f"{label:15} {value}")
    if st["stale_receipts"]:
        click.echo(f"warning: {st['stale_receipts']} local receipt(s) are beyond the chain's sequence (reset or reorg)")
    if st["diverged"]:
        click.echo("the on-chain head is not this brain's snapshot at that sequence; run 'ledger verify --chain'")
    else:
        click.echo("in sync" if st["in_sync"] else f"{st['pending']} snapshot(s) to commit ('ledger chain anchor')")
    ev = st["evidence"]
    if ev["local"]["size"] or ev["chain"]["size"]:
        click.echo(
            f"evidence        {ev['local']['size']} local, {ev['chain']['size']} on chain, "
            + (
                f"{ev['pending']} to commit"
                if ev["pending"] is not None
                else "the anchored log is not a prefix of the local one ('ledger verify --chain')"
            )
        )
    _echo_shares(st["shares"], st["onchain_head"], st["shares_unavailable"])


def _echo_shares(shares: dict[str, Any] | None, onchain_head: str | None, why: str | None) -> None:
    """The share token in plain lines: what a holder's wallet would show, and whether its metadata
    names the chain's head."""
    if shares is None:
        click.echo(f"shares          not shown: {why}")
        return
    supply, held = shares["total_supply"], shares["owner_balance"]
    holders = shares["holders"]
    click.echo(f"share token     {shares['token']} (ERC-1155), token id {shares['id']}")
    click.echo(
        f"supply          {supply:,} shares; the owner {shares['owner']} holds {held:,}"
        + (f" ({100 * held / supply:.4g}%)" if supply else "")
    )
    click.echo(f"holders         {len(holders)}")
    for h in holders[:10]:
        click.echo(f"  {h['address']}  {h['balance']:,}")
    if len(holders) > 10:
        click.echo(f"  … and {len(holders) - 10} more ('ledger chain status --json' lists them all)")
    meta = shares["metadata"]
    if meta["head"] is None:
        click.echo("metadata        no head yet (nothing committed); it follows every commit")
    else:
        same = "= on-chain head" if meta["head"] == onchain_head else "differs from the on-chain head"
        click.echo(f"metadata        head {meta['head']} {same} (chain sequence {meta['sequence']})")
    if meta["location"]:
        click.echo(f"location        {meta['location']}")


@returns("ledger.anchoring.reports:DeployReport")
@chain.command("deploy")
@key_flag
@click.option("--force", is_flag=True, help="Replace a registry this brain already uses.")
@json_flag
@click.pass_context
def chain_deploy(ctx: click.Context, key: str | None, force: bool, as_json: bool) -> None:
    """Deploy the registry (and its share token) and record the address in the brain's config."""
    from ledger.anchoring.run import deploy

    with open_brain(ctx) as brain:
        report = deploy(brain, key=key, password=_prompt_password, force=force)
    emit(report) if as_json else click.echo(
        f"registry {report.registry} on chain {report.chain_id} (block {report.block})"
    )


@returns("ledger.anchoring.reports:RegisterReport")
@chain.command("register")
@click.option("--shares", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@key_flag
@json_flag
@click.pass_context
def chain_register(ctx: click.Context, shares: int, key: str | None, as_json: bool) -> None:
    """Register this brain's agent and mint its shares to the signing key."""
    from ledger.anchoring.run import register

    with open_brain(ctx) as brain:
        report = register(brain, shares=shares, key=key, password=_prompt_password)
    if as_json:
        emit(report)
        return
    click.echo(f"agent {report.agent}")
    token = report.to_json()["shares"]
    if token is not None:
        click.echo(
            f"share token {token['token']} (ERC-1155), token id {token['id']}: {token['total_supply']:,} "
            f"shares, {token['owner_balance']:,} held by the owner {token['owner']}"
        )
    else:
        click.echo(f"shares not shown: {report.shares_unavailable}")


@returns("ledger.anchoring.reports:LocationReport")
@chain.command("location")
@click.argument("url", required=False)
@click.option("--clear", is_flag=True, help="Remove the published location.")
@key_flag
@json_flag
@click.pass_context
def chain_location(ctx: click.Context, url: str | None, clear: bool, key: str | None, as_json: bool) -> None:
    """Show, set (URL) or --clear where this brain is published, as the share token's metadata shows it.

    URL is up to 256 printable ASCII characters, without spaces, quotes or backslashes
    (percent-encode them). Setting or clearing is the agent owner's transaction.
    """
    from ledger.anchoring.run import check_location_arg
    from ledger.anchoring.run import location as location_of

    check_location_arg(url, clear)  # a usage error before any brain is opened
    with open_brain(ctx) as brain:
        report = location_of(brain, url, clear=clear, key=key, password=_prompt_password)
    if as_json:
        emit(report)
    elif report.tx is None:
        click.echo(report.location or "no location published ('ledger chain location URL' publishes one)")
    else:
        click.echo(f"location {'set to ' + report.location if report.location else 'cleared'} in tx {report.tx}")


@returns("ledger.anchoring.reports:AuthorizeReport")
@chain.command("authorize")
@click.argument("address")
@click.option("--revoke", is_flag=True, help="Revoke instead of grant.")
@key_flag
@json_flag
@click.pass_context
def chain_authorize(ctx: click.Context, address: str, revoke: bool, key: str | None, as_json: bool) -> None:
    """Let ADDRESS commit roots for this agent (owner only)."""
    from ledger.anchoring.run import authorize

    with open_brain(ctx) as brain:
        report = authorize(brain, address, revoke=revoke, key=key, password=_prompt_password)
    if as_json:
        emit(report)
    else:
        click.echo(f"{'revoked' if revoke else 'authorized'} {address}")


@returns("ledger.anchoring.reports:AnchorReport")
@main.command("commit")
@key_flag
@click.option("--batch", type=click.IntRange(1, 500), default=32, show_default=True, help="Roots per transaction.")
@json_flag
@click.pass_context
def commit_cmd(ctx: click.Context, key: str | None, batch: int, as_json: bool) -> None:
    """Commit every snapshot not yet on chain, in order and batched; record each receipt.

    It first asks the registry for the agent's head with one raw call; when that is the
    local head there is nothing to commit, and the registry client is never loaded.
    """
    from ledger.anchoring.run import anchor, up_to_date

    with open_brain(ctx) as brain:
        done = up_to_date(brain)
        if done is not None:
            if as_json:
                emit(done)
            else:
                click.echo(f"nothing to commit: the on-chain head is the local head ({done.head})")
            return
        result = anchor(
            brain, key=key, batch=batch, password=_prompt_password, progress=progress_bar("committing"), quick=False
        )
    if as_json:
        emit(result)
        return
    if not result.committed:
        click.echo("nothing to commit: the on-chain head equals the local head")
    else:
        click.echo(f"committed {result.committed} root(s) in {len(result.transactions)} transaction(s)")
    if result.evidence:
        click.echo(
            f"committed the evidence log ({result.evidence.size} entries, root {result.evidence.root}) "
            f"in tx {result.evidence.tx}"
        )
    if result.reconciled:
        click.echo(f"recovered {result.reconciled} receipt(s) from chain events")
    click.echo(f"on-chain head {result.head} (chain sequence {result.seq})")


@returns("ledger.anchoring.reports:EpochReport")
@main.command("anchor")
@click.argument("brains", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@key_flag
@click.option("--log-url", help="Where auditors fetch this operator's refs/ledger/epochs (default: this brain's path).")
@json_flag
@click.pass_context
def anchor_cmd(
    ctx: click.Context, brains: tuple[str, ...], key: str | None, log_url: str | None, as_json: bool
) -> None:
    """Anchor every new head of BRAINS in one epoch of this (operator) brain's log: one transaction.

    Each brain's agent must be registered on this brain's registry and authorize this key
    ('ledger chain authorize' in that brain); each gets epoch receipts (refs/notes/ledger-epochs).
    A brain whose evidence log grew gets an evidence entry after its heads, and an evidence
    receipt (refs/notes/ledger-epoch-evidence).
    Its --json prints one object (camelCase, as the registry's event names its fields):

    \b
    {"epoch": N, "tx": "0x…"|null (null: nothing to anchor), "gasUsed": N, "heads": N (heads added),
     "size": N (log entries), "root": "0x…" (the log's root), "brains": N (brains given receipts),
     "gasPerHead": NUMBER (gas per entry), "evidence": N (evidence entries added)}
    """
    from contextlib import ExitStack

    from ledger.anchoring.run import configured, epoch
    from ledger.brain import Brain

    with open_brain(ctx) as operator, ExitStack() as stack:
        configured(operator, "registry")
        opened = [stack.enter_context(Brain.open(path)) for path in brains]
        result = epoch(operator, opened, key=key, password=_prompt_password, log_url=log_url)
    if as_json:
        emit(result)
    elif result.tx is None:
        click.echo(f"nothing to anchor: every head is in epoch {result.epoch} or before")
        if result.brains:
            click.echo(f"recorded the missing epoch receipts of {result.brains} brain(s)")
    else:
        click.echo(
            f"anchored {result.heads} head(s) and {result.evidence} evidence root(s) of {result.brains} "
            f"brain(s) as epoch {result.epoch} (log size {result.size}) in {result.tx}: {result.gas_used} gas, "
            f"{result.gas_per_head} an entry"
        )
