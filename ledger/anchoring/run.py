"""The chain commands' use cases: the local node, the endpoint, the registry, the agent, anchors, epochs.

Each takes an open brain (and a ``password`` source for a keystore, which the CLI makes a
prompt) and returns a report (:mod:`ledger.anchoring.reports`); refusals raise
:class:`~ledger.errors.LedgerError` subclasses.  No printing, no exit codes: the CLI renders.

The committing half (:mod:`ledger.anchoring.commits`, :mod:`~ledger.anchoring.epochs`, the registry
client, the node, the keys) loads inside the use case that needs it: :func:`up_to_date`, the whole of a
'nothing to commit', reads the config, the receipts and one raw call, and loads none of it
(tests/cli/test_startup_imports.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ledger.anchoring.reports import (
    AnchorReport,
    AuthorizeReport,
    ChainDownReport,
    ChainStatusReport,
    ChainUpReport,
    ChainUseReport,
    DeployReport,
    EpochReport,
    EvidenceSent,
    LocationReport,
    RegisterReport,
    ShareToken,
)
from ledger.chain.config import ChainConfig, onchain_head
from ledger.chain.receipts import local_pending, receipt_of
from ledger.errors import ChainError, UsageError
from ledger.store.evidence import has_evidence

if TYPE_CHECKING:
    from ledger.brain import Brain
    from ledger.chain.keys import PasswordSource

__all__ = [
    "anchor",
    "anvil_dir",
    "authorize",
    "chain_down",
    "chain_status",
    "chain_up",
    "chain_use",
    "check_location_arg",
    "check_rpc",
    "configured",
    "deploy",
    "epoch",
    "location",
    "register",
    "up_to_date",
]


def configured(brain: Brain, *fields: str) -> ChainConfig:
    """This brain's chain config, refused when it lacks ``fields`` (before any node is asked)."""
    cfg = ChainConfig.of(brain)
    cfg.require(*fields)
    return cfg


def anvil_dir(brain: Brain) -> Path:
    return Path(brain.control) / "anvil"


def _agent(cfg: ChainConfig) -> str:
    return f"0x{cfg.agent_id:064x}"


# --------------------------------------------------------------------------- the local node, the endpoint


def chain_up(brain: Brain, *, port: int | None = None, chain_id: int = 31337) -> ChainUpReport:
    """Start this brain's local anvil (or find it running) and make its URL the brain's rpc."""
    from ledger.chain import anvil

    node = anvil.status(anvil_dir(brain))
    started = node is None
    if node is not None:
        if port is not None and port != node.port:
            raise ChainError(f"this brain's anvil is running on port {node.port}", hint="ledger chain down first")
    else:
        node = anvil.start(anvil_dir(brain), port=port, chain_id=chain_id)
    chain_cfg = dict(brain.config.get("chain") or {})
    if chain_cfg.get("rpc") != node.url:
        chain_cfg["rpc"] = node.url
        brain.update_config(chain=chain_cfg)
    return ChainUpReport(rpc=node.url, pid=node.pid, port=node.port, started=started)


def chain_down(brain: Brain) -> ChainDownReport:
    """Stop this brain's local anvil; its state is kept for the next :func:`chain_up`."""
    from ledger.chain import anvil

    node = anvil.stop(anvil_dir(brain))
    return ChainDownReport(stopped=node is not None, pid=node.pid if node else None)


def check_rpc(rpc: str, registry: str | None = None) -> None:
    """Refuse (a usage error) an RPC URL that is not http(s)/ws(s) with a host, or a malformed address."""
    parts = urlsplit(rpc)
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
        raise UsageError(f"{rpc!r} is not an RPC URL", hint="for example http://127.0.0.1:8545")
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        raise UsageError(f"{rpc!r} has a malformed port") from exc
    if registry is not None and not (
        len(registry) == 42
        and registry[:2] in ("0x", "0X")
        and all(c in "0123456789abcdefABCDEF" for c in registry[2:])
    ):
        raise UsageError(f"{registry!r} is not a contract address", hint="0x followed by 40 hex digits")


def chain_use(brain: Brain, rpc: str, registry: str | None = None) -> ChainUseReport:
    """Point the brain at ``rpc``, and with ``registry`` at a BrainRegistry already deployed there."""
    check_rpc(rpc, registry)
    chain_cfg = dict(brain.config.get("chain") or {})
    chain_cfg["rpc"] = rpc
    if registry is not None:
        chain_cfg.update(_existing_registry(brain.root, chain_cfg, rpc, registry))
    brain.update_config(chain=chain_cfg)
    if registry is None:
        return ChainUseReport(rpc=rpc, registry=None, chain_id=None)
    return ChainUseReport(rpc=rpc, registry=chain_cfg["registry"], chain_id=chain_cfg["chain_id"])


def _existing_registry(root: Path, cfg: dict[str, Any], rpc: str, address: str) -> dict[str, Any]:
    """The config fields naming the registry at ``address`` on ``rpc``, refused when no code is there, or
    when this brain's agent is registered on another registry (switching would orphan its lineage)."""
    from ledger.chain.registry import Registry

    reg = Registry(rpc, address)  # refuses an address with no code on that chain
    same = str(cfg.get("registry") or "").lower() == str(reg.address).lower() and cfg.get("chain_id") == reg.chain_id
    if cfg.get("agent_id") and not same:
        raise ChainError(
            f"the brain at {root} has its agent registered on registry {cfg.get('registry')} "
            f"(chain {cfg.get('chain_id')}); using {reg.address} would orphan its committed lineage",
            hint="use --registry in a brain not yet registered, or keep the registry it has",
        )
    if same:
        return {}
    return {"registry": reg.address, "chain_id": reg.chain_id, "deploy_block": 0}


# --------------------------------------------------------------------------- the registry and the agent


def chain_status(brain: Brain) -> ChainStatusReport:
    """The agent's on-chain head and sequence beside the local head, its evidence and shares, at one block."""
    from ledger.anchoring import commits

    configured(brain, "registry", "agent_id")
    return ChainStatusReport.of(commits.chain_status(brain))


def deploy(
    brain: Brain, *, key: str | None = None, password: PasswordSource | None = None, force: bool = False
) -> DeployReport:
    """Deploy the registry and its share token; record the address in the brain's config."""
    from ledger.anchoring import commits

    configured(brain)
    cfg = commits.deploy(brain, key=key, password=password, force=force)
    assert cfg.registry is not None and cfg.chain_id is not None
    return DeployReport(registry=cfg.registry, chain_id=cfg.chain_id, block=cfg.deploy_block)


def register(
    brain: Brain, *, shares: int = 1_000_000, key: str | None = None, password: PasswordSource | None = None
) -> RegisterReport:
    """Register this brain's agent and mint its shares to the signing key."""
    from ledger.anchoring import commits
    from ledger.chain.registry import Registry

    configured(brain, "registry")
    cfg = commits.register(brain, shares=shares, key=key, password=password)
    assert cfg.registry is not None
    token, why = commits.shares_of(Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id), cfg)
    return RegisterReport(agent=_agent(cfg), registry=cfg.registry, shares=ShareToken.of(token), shares_unavailable=why)


def check_location_arg(url: str | None, clear: bool) -> None:
    """Refuse (a usage error) both a URL and ``clear``, an empty URL, or one the registry would not take."""
    if url is not None and clear:
        raise UsageError("give a URL to set, or --clear, not both")
    if url is not None:
        if url == "":
            raise UsageError("the location is empty", hint="use --clear to remove it")
        from ledger.chain.shares import check_location

        try:
            check_location(url)
        except ChainError as exc:
            raise UsageError(exc.message, hint=exc.hint) from exc


def location(
    brain: Brain,
    url: str | None = None,
    *,
    clear: bool = False,
    key: str | None = None,
    password: PasswordSource | None = None,
) -> LocationReport:
    """Where the brain is published; set it to ``url`` or ``clear`` it first (the owner's transaction)."""
    from ledger.anchoring import commits

    check_location_arg(url, clear)
    cfg = configured(brain, "registry", "agent_id")
    assert cfg.registry is not None
    tx = None
    if url is not None or clear:
        tx = commits.set_location(brain, url or "", key=key, password=password)
    return LocationReport(agent=_agent(cfg), registry=cfg.registry, location=commits.location(brain), tx=tx)


def authorize(
    brain: Brain, address: str, *, revoke: bool = False, key: str | None = None, password: PasswordSource | None = None
) -> AuthorizeReport:
    """Let ``address`` commit roots for this brain's agent, or with ``revoke`` stop it (owner only)."""
    from ledger.anchoring import commits

    cfg = configured(brain, "registry", "agent_id")
    assert cfg.registry is not None
    tx = commits.authorize(brain, address, not revoke, key=key, password=password)
    return AuthorizeReport(address=address, authorized=not revoke, agent=_agent(cfg), registry=cfg.registry, tx=tx)


# --------------------------------------------------------------------------- anchoring roots, epochs


def up_to_date(brain: Brain) -> AnchorReport | None:
    """The report of an anchor with nothing to do, when one raw call shows the chain's head is the local
    head and no receipt or evidence is missing here; else None (:func:`anchor` has work to do)."""
    cfg = configured(brain, "registry", "agent_id")
    assert cfg.registry is not None and cfg.agent_id is not None
    head = brain.store.snapshot(brain.store.head())  # the commit alone: no skills tree, no index
    if (
        cfg.rpc.startswith(("http://", "https://"))
        and local_pending(brain.store, cfg.registry, cfg.agent_id) == 0  # receipts to keep: none missing
        and onchain_head(cfg.rpc, cfg.registry, cfg.agent_id) == head.root  # the chain agrees (reorgs too)
        and not has_evidence(brain.store, head.tree)  # an evidence log: evidenceOf is asked by commit_pending
    ):
        seq = (receipt_of(brain.store, head.commit) or {}).get("seq")
        return AnchorReport(committed=0, transactions=(), reconciled=0, head=head.to_json()["root"], seq=seq)
    return None


def anchor(
    brain: Brain,
    *,
    key: str | None = None,
    batch: int | None = None,
    password: PasswordSource | None = None,
    progress: Callable[[int, int], None] | None = None,
    quick: bool = True,
) -> AnchorReport:
    """Commit every snapshot not yet on chain, in order and batched, recording each receipt.

    With ``quick`` it first asks :func:`up_to_date` (one raw call); the CLI asks it itself
    and passes ``quick=False``.  ``batch``: roots per transaction (None: ``commits.DEFAULT_BATCH``, 32)."""
    from ledger.anchoring import commits

    if quick:
        done = up_to_date(brain)
        if done is not None:
            return done
    else:
        configured(brain, "registry", "agent_id")
    batch = commits.DEFAULT_BATCH if batch is None else batch
    result = commits.commit_pending(brain, key=key, batch=batch, password=password, progress=progress)
    assert isinstance(result, commits.CommitResult)
    return AnchorReport(
        committed=result.committed,
        transactions=tuple(result.transactions),
        reconciled=result.reconciled,
        head=result.head,
        seq=result.seq,
        evidence=None if result.evidence is None else EvidenceSent(**result.evidence),
    )


def epoch(
    operator: Brain,
    brains: Sequence[Brain],
    *,
    key: str | None = None,
    password: PasswordSource | None = None,
    log_url: str | None = None,
) -> EpochReport:
    """Anchor every new head of ``brains`` in one epoch of ``operator``'s log: one transaction."""
    from ledger.anchoring.epochs import anchor_epoch

    configured(operator, "registry")
    r = anchor_epoch(operator, list(brains), key=key, password=password, location=log_url)
    return EpochReport(
        epoch=r.epoch,
        tx=r.tx,
        gas_used=r.gas_used,
        heads=r.heads,
        size=r.size,
        root=r.root,
        brains=r.brains,
        gas_per_head=r.gas_per_head,
        evidence=r.evidence,
    )
