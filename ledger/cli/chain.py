"""Keys, the local anvil, the registry, and ``ledger commit``: everything that talks to a chain."""

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
)
from ledger.errors import ChainError


def _prompt_password(confirm: bool) -> str:
    return str(click.prompt("keystore password", hide_input=True, confirmation_prompt=confirm, err=True))


def _configured(brain: Any, *fields: str) -> Any:
    """Refuse, before the chain client is imported, a chain command this brain's config cannot serve."""
    from ledger.chain.config import ChainConfig

    cfg = ChainConfig.of(brain)
    cfg.require(*fields)
    return cfg


# --------------------------------------------------------------------------- chain


@main.group()
def chain() -> None:
    """A local anvil testnet and the on-chain registry."""


def _anvil_dir(brain: Any) -> Path:
    return Path(brain.control) / "anvil"


@chain.command("up")
@click.option("--port", type=click.IntRange(1, 65535), help="Port on 127.0.0.1 (default: a free one).")
@click.option("--chain-id", type=int, default=31337, show_default=True)
@click.pass_context
def chain_up(ctx: click.Context, port: int | None, chain_id: int) -> None:
    """Start a local anvil in the background; its state and port persist in .ledger/anvil/.

    Idempotent: when this brain's node is already running, it prints its URL and exits 0.
    """
    from ledger.chain import anvil

    with open_brain(ctx) as brain:
        node = anvil.status(_anvil_dir(brain))
        if node is not None:
            if port is not None and port != node.port:
                raise ChainError(f"this brain's anvil is running on port {node.port}", hint="ledger chain down first")
            click.echo(f"anvil is already running (pid {node.pid})", err=True)
        else:
            node = anvil.start(_anvil_dir(brain), port=port, chain_id=chain_id)
        chain_cfg = dict(brain.config.get("chain") or {})
        if chain_cfg.get("rpc") != node.url:
            chain_cfg["rpc"] = node.url
            brain.update_config(chain=chain_cfg)
    click.echo(node.url)


@chain.command("down")
@click.pass_context
def chain_down(ctx: click.Context) -> None:
    """Stop the local anvil (its state is kept for the next 'chain up')."""
    from ledger.chain import anvil

    with open_brain(ctx) as brain:
        node = anvil.stop(_anvil_dir(brain))
    click.echo(f"stopped anvil (pid {node.pid})" if node else "anvil was not running")


@chain.command("use")
@click.argument("rpc")
@click.option("--registry", metavar="ADDR",
              help="Also use the BrainRegistry already deployed at ADDR (checked for code on that chain); "
                   "then 'ledger chain register' registers this brain's agent on it.")  # fmt: skip
@click.pass_context
def chain_use(ctx: click.Context, rpc: str, registry: str | None) -> None:
    """Point the brain at an existing RPC endpoint (http, https, ws or wss URL), and with --registry ADDR at
    a registry deployed there (by another brain's 'ledger chain deploy', say) instead of deploying one."""
    from urllib.parse import urlsplit

    from ledger.errors import UsageError

    parts = urlsplit(rpc)
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
        raise UsageError(f"{rpc!r} is not an RPC URL", hint="for example http://127.0.0.1:8545")
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        raise UsageError(f"{rpc!r} has a malformed port") from exc
    if registry is not None and not (len(registry) == 42 and registry[:2] in ("0x", "0X")
                                     and all(c in "0123456789abcdefABCDEF" for c in registry[2:])):  # fmt: skip
        raise UsageError(f"{registry!r} is not a contract address", hint="0x followed by 40 hex digits")
    with open_brain(ctx) as brain:
        chain_cfg = dict(brain.config.get("chain") or {})
        chain_cfg["rpc"] = rpc
        if registry is not None:
            chain_cfg.update(_existing_registry(brain.root, chain_cfg, rpc, registry))
        brain.update_config(chain=chain_cfg)
    click.echo(rpc + (f" registry {chain_cfg['registry']} on chain {chain_cfg['chain_id']}" if registry else ""))


def _existing_registry(root: Path, cfg: dict[str, Any], rpc: str, address: str) -> dict[str, Any]:
    """The config fields naming the registry at ``address`` on ``rpc``, refused when no code is there, or
    when this brain's agent is registered on another registry (switching would orphan its lineage)."""
    from ledger.chain.registry import Registry

    reg = Registry(rpc, address)  # refuses an address with no code on that chain
    same = str(cfg.get("registry") or "").lower() == str(reg.address).lower() and cfg.get("chain_id") == reg.chain_id
    if cfg.get("agent_id") and not same:
        raise ChainError(f"the brain at {root} has its agent registered on registry {cfg.get('registry')} "
                         f"(chain {cfg.get('chain_id')}); using {reg.address} would orphan its committed lineage",
                         hint="use --registry in a brain not yet registered, or keep the registry it has")  # fmt: skip
    if same:
        return {}
    return {"registry": reg.address, "chain_id": reg.chain_id, "deploy_block": 0}


key_flag = click.option("--key", help="Signing key: a keystore name, or 'anvil-dev' on chain id 31337.")


@chain.command("status")
@json_flag
@get_flag
@click.pass_context
def chain_status(ctx: click.Context, as_json: bool) -> None:
    """Compare the on-chain head of this brain's agent with the local head."""
    with open_brain(ctx) as brain:
        _configured(brain, "registry", "agent_id")  # before the chain client is loaded
        from ledger.anchoring.commits import chain_status as status_of

        st = status_of(brain)
    if as_json:
        emit(st)
        return
    from ledger.chain.networks import network

    rows = [("rpc", st["rpc"]), ("chain", f"{st['chain_id']} ({network(st['chain_id']).name})"),
            ("registry", st["registry"]), ("agent", st["agent"]),
            ("on-chain head", st["onchain_head"] or "none yet (nothing committed)"),
            ("chain sequence", st["onchain_seq"]), ("local head", st["local_head"]),
            ("pending", f"{st['pending']} root(s) to commit" if st["pending"] is not None
             else "unknown: the on-chain head is not on this brain's lineage")]  # fmt: skip
    for label, value in rows:
        click.echo(f"{label:15} {value}")
    if st["stale_receipts"]:
        click.echo(f"warning: {st['stale_receipts']} local receipt(s) are beyond the chain's sequence (reset or reorg)")
    if st["diverged"]:
        click.echo("the on-chain head is not this brain's snapshot at that sequence; run 'ledger verify --chain'")
    else:
        click.echo("in sync" if st["in_sync"] else f"{st['pending']} snapshot(s) to commit ('ledger commit')")
    ev = st["evidence"]
    if ev["local"]["size"] or ev["chain"]["size"]:
        click.echo(f"evidence        {ev['local']['size']} local, {ev['chain']['size']} on chain, " + (
            f"{ev['pending']} to commit" if ev["pending"] is not None
            else "the anchored log is not a prefix of the local one ('ledger verify --chain')"))  # fmt: skip
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
    click.echo(f"supply          {supply:,} shares; the owner {shares['owner']} holds {held:,}"
               + (f" ({100 * held / supply:.4g}%)" if supply else ""))  # fmt: skip
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


@chain.command("deploy")
@key_flag
@click.option("--force", is_flag=True, help="Replace a registry this brain already uses.")
@json_flag
@click.pass_context
def chain_deploy(ctx: click.Context, key: str | None, force: bool, as_json: bool) -> None:
    """Deploy the registry (and its share token) and record the address in the brain's config."""
    with open_brain(ctx) as brain:
        _configured(brain)
        from ledger.anchoring.commits import deploy

        cfg = deploy(brain, key=key, password=_prompt_password, force=force)
    emit({"registry": cfg.registry, "chain_id": cfg.chain_id, "block": cfg.deploy_block}) if as_json else click.echo(
        f"registry {cfg.registry} on chain {cfg.chain_id} (block {cfg.deploy_block})"
    )


@chain.command("register")
@click.option("--shares", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@key_flag
@json_flag
@click.pass_context
def chain_register(ctx: click.Context, shares: int, key: str | None, as_json: bool) -> None:
    """Register this brain's agent and mint its shares to the signing key."""
    with open_brain(ctx) as brain:
        _configured(brain, "registry")
        from ledger.anchoring.commits import register

        cfg = register(brain, shares=shares, key=key, password=_prompt_password)
        from ledger.anchoring.commits import shares_of
        from ledger.chain.registry import Registry

        token, why = shares_of(Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id), cfg)
    agent = f"0x{cfg.agent_id:064x}"
    if as_json:
        emit({"agent": agent, "registry": cfg.registry, "shares": token})
        return
    click.echo(f"agent {agent}")
    if token is not None:
        click.echo(f"share token {token['token']} (ERC-1155), token id {token['id']}: {token['total_supply']:,} "
                   f"shares, {token['owner_balance']:,} held by the owner {token['owner']}")  # fmt: skip
    else:
        click.echo(f"shares not shown: {why}")


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
    from ledger.errors import UsageError

    if url is not None and clear:
        raise UsageError("give a URL to set, or --clear, not both")
    if url is not None:
        from ledger.chain.shares import check_location

        if url == "":
            raise UsageError("the location is empty", hint="use --clear to remove it")
        try:
            check_location(url)
        except ChainError as exc:
            raise UsageError(exc.message, hint=exc.hint) from exc
    with open_brain(ctx) as brain:
        cfg = _configured(brain, "registry", "agent_id")
        from ledger.anchoring.commits import location, set_location

        tx = None
        if url is not None or clear:
            tx = set_location(brain, url or "", key=key, password=_prompt_password)
        where = location(brain)
    if as_json:
        emit({"agent": f"0x{cfg.agent_id:064x}", "registry": cfg.registry, "location": where, "tx": tx})
    elif tx is None:
        click.echo(where or "no location published ('ledger chain location URL' publishes one)")
    else:
        click.echo(f"location {'set to ' + where if where else 'cleared'} in tx {tx}")


@chain.command("authorize")
@click.argument("address")
@click.option("--revoke", is_flag=True, help="Revoke instead of grant.")
@key_flag
@click.pass_context
def chain_authorize(ctx: click.Context, address: str, revoke: bool, key: str | None) -> None:
    """Let ADDRESS commit roots for this agent (owner only)."""
    with open_brain(ctx) as brain:
        _configured(brain, "registry", "agent_id")
        from ledger.anchoring.commits import authorize

        authorize(brain, address, not revoke, key=key, password=_prompt_password)
    click.echo(f"{'revoked' if revoke else 'authorized'} {address}")


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
    from ledger.chain.config import onchain_head
    from ledger.chain.receipts import local_pending, receipt_of
    from ledger.store.evidence import has_evidence

    with open_brain(ctx) as brain:
        cfg = _configured(brain, "registry", "agent_id")
        head = brain.store.snapshot(brain.store.head())  # the commit alone: no skills tree, no index
        if (
            cfg.rpc.startswith(("http://", "https://"))
            and local_pending(brain.store, cfg.registry, cfg.agent_id) == 0  # receipts to keep: none missing
            and onchain_head(cfg.rpc, cfg.registry, cfg.agent_id) == head.root  # the chain agrees (reorgs too)
            and not has_evidence(brain.store, head.tree)  # an evidence log: evidenceOf is asked by commit_pending
        ):
            root = head.to_json()["root"]
            seq = (receipt_of(brain.store, head.commit) or {}).get("seq")
            if as_json:
                emit({"committed": 0, "transactions": [], "reconciled": 0, "head": root, "seq": seq})
            else:
                click.echo(f"nothing to commit: the on-chain head is the local head ({root})")
            return
        from ledger.anchoring.commits import as_json as result_json
        from ledger.anchoring.commits import commit_pending

        result = commit_pending(
            brain, key=key, batch=batch, password=_prompt_password, progress=progress_bar("committing")
        )
    if as_json:
        emit(result_json(result))
        return
    if not result.committed:
        click.echo("nothing to commit: the on-chain head equals the local head")
    else:
        click.echo(f"committed {result.committed} root(s) in {len(result.transactions)} transaction(s)")
    if result.evidence:
        click.echo(f"committed the evidence log ({result.evidence['size']} entries, root {result.evidence['root']}) "
                   f"in tx {result.evidence['tx']}")
    if result.reconciled:
        click.echo(f"recovered {result.reconciled} receipt(s) from chain events")
    click.echo(f"on-chain head {result.head} (chain sequence {result.seq})")


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

    from ledger.brain import Brain

    with open_brain(ctx) as operator, ExitStack() as stack:
        _configured(operator, "registry")
        from ledger.anchoring.epochs import anchor_epoch

        opened = [stack.enter_context(Brain.open(path)) for path in brains]
        result = anchor_epoch(operator, opened, key=key, password=_prompt_password, location=log_url)
    if as_json:
        emit(result.as_json())
    elif result.tx is None:
        click.echo(f"nothing to anchor: every head is in epoch {result.epoch} or before")
        if result.brains:
            click.echo(f"recorded the missing epoch receipts of {result.brains} brain(s)")
    else:
        click.echo(f"anchored {result.heads} head(s) and {result.evidence} evidence root(s) of {result.brains} "
                   f"brain(s) as epoch {result.epoch} (log size {result.size}) in {result.tx}: {result.gas_used} gas, "
                   f"{result.gas_per_head} an entry")  # fmt: skip
