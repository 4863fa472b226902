"""Chain client: deploy the registry, register the agent, commit snapshot roots.

Imported only by chain commands (web3 takes ~1 s to import).  ``commit_pending``
is idempotent: it first replays the registry's events for the agent and records
any receipt a crashed run did not, so a root is never sent twice.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from eth_abi import decode as abi_decode
from eth_account.signers.local import LocalAccount
from eth_utils import keccak, to_checksum_address
from web3 import Web3
from web3.exceptions import ContractCustomError, ContractLogicError, TimeExhausted, Web3RPCError
from web3.logs import DISCARD

from ledger._faults import crashpoint
from ledger.brain import Brain, Receipt
from ledger.chain_config import ChainConfig
from ledger.errors import ChainError, RpcUnreachableError
from ledger.gitstore import Snapshot
from ledger.keys import PasswordSource, load_account
from ledger.merkle import format_root
from ledger.receipts import anchored, read_receipts, write_receipts
from ledger.sealing import Sealer
from ledger.treehash import recompute_roots

__all__ = [
    "ChainConfig",
    "CommitResult",
    "Registry",
    "commit_pending",
    "deploy",
    "onchain_events",
    "register",
]

ZERO = b"\x00" * 32
DEFAULT_BATCH = 32


def artifact() -> dict[str, Any]:
    """The registry's ABI and bytecode, shipped inside the package (no compiler at runtime)."""
    return json.loads(resources.files("ledger").joinpath("artifacts/BrainRegistry.json").read_text())


@dataclass(frozen=True)
class CommitResult:
    committed: int  # roots sent in this run
    transactions: list[str]
    reconciled: int  # receipts recovered from chain events
    head: str | None
    seq: int


class Registry:
    """A web3 handle on one BrainRegistry, with custom errors decoded into sentences."""

    def __init__(self, rpc: str, address: str | None = None, *, expected_chain_id: int | None = None) -> None:
        self.rpc = rpc
        self.w3 = Web3(Web3.HTTPProvider(rpc, request_kwargs={"timeout": 15}))
        try:
            self.chain_id = int(self.w3.eth.chain_id)
        except Exception as exc:  # requests / connection errors of every kind
            raise RpcUnreachableError(
                f"cannot reach the RPC endpoint {rpc}: {type(exc).__name__}",
                hint="is the node running? ('ledger chain up')",
            ) from exc
        if expected_chain_id is not None and self.chain_id != expected_chain_id:
            raise ChainError(
                f"wrong chain: {rpc} serves chain id {self.chain_id}, but this brain is configured for "
                f"{expected_chain_id}",
                hint="point the brain at the right RPC, or re-deploy for this chain",
            )
        art = artifact()
        self.abi = art["abi"]
        self._bytecode = art["bytecode"]
        self.address = to_checksum_address(address) if address else None
        self.contract = self.w3.eth.contract(address=self.address, abi=self.abi) if address else None
        if self.address is not None and not self._has_code(self.address):
            raise ChainError(
                f"there is no contract at {self.address} on chain {self.chain_id}: nothing would answer calls "
                "or receive transactions",
                hint="check the registry address; after a chain reset run 'ledger chain deploy' and 'register' again",
            )
        self._errors = {
            keccak(text=f"{e['name']}({','.join(i['type'] for i in e['inputs'])})")[:4]: e
            for e in self.abi
            if e["type"] == "error"
        }

    def _has_code(self, address: str) -> bool:
        try:
            return len(self.w3.eth.get_code(address)) > 0
        except Exception as exc:  # connection errors of every kind
            raise RpcUnreachableError(f"cannot read code at {address} from {self.rpc}: {type(exc).__name__}") from exc

    # ------------------------------------------------------------------ transactions

    def explain(self, data: Any) -> str:
        """Decode revert data into ``Name(arg=value, …)`` using the registry ABI."""
        raw = bytes.fromhex(data[2:]) if isinstance(data, str) and data.startswith("0x") else bytes(data or b"")
        err = self._errors.get(raw[:4])
        if err is None:
            return f"reverted with unknown data 0x{raw.hex()}"
        values = abi_decode([i["type"] for i in err["inputs"]], raw[4:])
        args = ", ".join(f"{i['name']}={_shown(i['name'], v)}" for i, v in zip(err["inputs"], values, strict=True))
        return f"{err['name']}({args})"

    def send(self, account: LocalAccount, call: Any, *, what: str) -> dict[str, Any]:
        """Build, sign, send and await one transaction; raise ChainError saying why it failed."""
        try:
            tx = call.build_transaction(
                {
                    "from": account.address,
                    "nonce": self.w3.eth.get_transaction_count(account.address, "pending"),
                    "chainId": self.chain_id,
                }
            )
            signed = account.sign_transaction(tx)
            tx_hash = self.w3.eth.send_raw_transaction(signed.raw_transaction)
            crashpoint("chain-after-send")
            receipt = self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=120)
        except ContractCustomError as exc:
            reason = self.explain(exc.data)
            raise ChainError(f"the registry refused {what}: {reason}", hint=_hint(reason)) from exc
        except ContractLogicError as exc:
            raise ChainError(f"the registry refused {what}: {exc}") from exc
        except TimeExhausted as exc:
            raise ChainError(
                f"{what}: no receipt within 120 s", hint="re-run; the commit reconciles from events"
            ) from exc
        except Web3RPCError as exc:
            text = str(exc)
            if "insufficient funds" in text.lower():
                raise ChainError(
                    f"{what}: the key {account.address} cannot pay for gas (insufficient funds)",
                    hint="fund the committer address, or use a funded key with --key",
                ) from exc
            raise ChainError(f"{what}: the node rejected the transaction: {text}") from exc
        except (OSError, ConnectionError) as exc:
            raise RpcUnreachableError(f"{what}: lost the RPC endpoint {self.rpc}: {exc}") from exc
        if receipt["status"] != 1:
            raise ChainError(f"{what}: transaction {receipt['transactionHash'].hex()} reverted")
        return dict(receipt)

    # ------------------------------------------------------------------ reads

    def _c(self) -> Any:
        if self.contract is None:
            raise ChainError("no registry address configured", hint="run 'ledger chain deploy'")
        return self.contract

    def head(self, agent: int, block: Any = "latest") -> bytes:
        return bytes(self._c().functions.headOf(agent).call(block_identifier=block))

    def sequence(self, agent: int, block: Any = "latest") -> int:
        return int(self._c().functions.sequenceOf(agent).call(block_identifier=block))

    def owner(self, agent: int, block: Any = "latest") -> str:
        return str(self._c().functions.ownerOf(agent).call(block_identifier=block))

    def is_committer(self, agent: int, committer: str, block: Any = "latest") -> bool:
        return bool(self._c().functions.isCommitter(agent, committer).call(block_identifier=block))

    def events(self, agent: int, from_block: int = 0) -> list[dict[str, Any]]:
        """The agent's RootCommitted events in order: the on-chain lineage."""
        try:
            logs = self._c().events.RootCommitted.get_logs(argument_filters={"agentId": agent}, from_block=from_block)
        except Exception as exc:
            raise RpcUnreachableError(f"cannot read events from {self.rpc}: {exc}") from exc
        out = [_event(log) for log in logs]
        out.sort(key=lambda e: (e["block"], e["log_index"]))
        return out

    def block_hash(self, number: int) -> str | None:
        try:
            block = self.w3.eth.get_block(number)
        except Exception:  # a block past the tip after a reorg
            return None
        return "0x" + bytes(block["hash"]).hex()


def _event(log: Any) -> dict[str, Any]:
    """A decoded RootCommitted log as plain values (from get_logs or from a receipt)."""
    return {
        "seq": int(log["args"]["seq"]),
        "root": bytes(log["args"]["root"]),
        "parent": bytes(log["args"]["parent"]),
        "committer": str(log["args"]["committer"]),
        "tx": "0x" + bytes(log["transactionHash"]).hex(),
        "block": int(log["blockNumber"]),
        "block_hash": "0x" + bytes(log["blockHash"]).hex(),
        "log_index": int(log["logIndex"]),
    }


def _shown(name: str, value: Any) -> str:
    """An error argument as a user will paste it: ids and hashes in hex (as the CLI prints them)."""
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, int) and name.endswith("Id"):
        return hex(value)
    return str(value)


def _hint(reason: str) -> str | None:
    if reason.startswith("AgentAlreadyRegistered"):
        return "this brain's agent is registered already ('ledger chain status'); a new agent needs a new brain"
    if reason.startswith("StaleParent"):
        return "the on-chain head moved (another writer, or a fork); run 'ledger commit' again to reconcile"
    if reason.startswith("UnauthorizedCommitter"):
        return "ask the agent owner to authorize this key ('ledger chain authorize')"
    return None


# --------------------------------------------------------------------------- operations


def _account(brain_cfg: ChainConfig, key: str | None, chain_id: int, password: PasswordSource | None) -> LocalAccount:
    # On a local anvil (31337) the dev key is the default, as Foundry users expect.
    from ledger.keys import DEV_KEY_NAME

    name = key or brain_cfg.key or (DEV_KEY_NAME if chain_id == 31337 else None)
    if not name:
        raise ChainError(
            "no signing key chosen", hint="pass --key NAME (see 'ledger keys list'; anvil-dev works on chain 31337)"
        )
    return load_account(name, chain_id, password)


def deploy(
    brain: Brain,
    *,
    key: str | None = None,
    rpc: str | None = None,
    password: PasswordSource | None = None,
    force: bool = False,
) -> ChainConfig:
    """Deploy a BrainRegistry and record its address (and chain id) in the brain's config.

    Refuses to replace a registry that still answers on this chain unless ``force``:
    replacing it silently would orphan the agent and its committed lineage.
    """
    base = ChainConfig.of(brain) if rpc is None else ChainConfig(rpc=rpc)
    reg = Registry(base.rpc)
    if base.registry and not force and base.chain_id == reg.chain_id and reg._has_code(base.registry):
        raise ChainError(
            f"this brain already uses the registry {base.registry} on chain {reg.chain_id}",
            hint="pass --force to deploy a new one (the agent must then register again)",
        )
    account = _account(base, key, reg.chain_id, password)
    factory = reg.w3.eth.contract(abi=reg.abi, bytecode=reg._bytecode)
    receipt = reg.send(account, factory.constructor(), what="deploying the registry")
    cfg = ChainConfig(
        rpc=base.rpc,
        chain_id=reg.chain_id,
        registry=receipt["contractAddress"],
        deploy_block=int(receipt["blockNumber"]),
        key=key or base.key,
    )
    cfg.save(brain)
    return cfg


def register(
    brain: Brain, *, shares: int = 1_000_000, key: str | None = None, password: PasswordSource | None = None
) -> ChainConfig:
    """Register this brain's agent; the salt is the brain's genesis commit, so it is unique per brain."""
    cfg = ChainConfig.of(brain)
    cfg.require("registry")
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    account = _account(cfg, key, reg.chain_id, password)
    genesis = list(brain.store.lineage())[-1].commit
    salt = bytes.fromhex(genesis).rjust(32, b"\x00")
    receipt = reg.send(account, reg._c().functions.register(salt, shares), what="registering the agent")
    (event,) = reg._c().events.AgentRegistered().process_receipt(receipt, errors=DISCARD)
    cfg = dataclasses.replace(cfg, agent_id=int(event["args"]["agentId"]), key=key or cfg.key)
    cfg.save(brain)
    # The brain's agent keys sign the agent's snapshots; the audit checks that they may also commit
    # for the agent (docs/lineage.md §8.5), so registering authorizes them.
    trust = Sealer.trust_of(brain.store, brain.head().snap.tree)[1]
    for address in sorted(a for a, role in trust.active.items() if role == "agent"):
        call = reg._c().functions.setCommitter(cfg.agent_id, to_checksum_address(address), True)
        reg.send(account, call, what=f"authorizing the brain's agent key {address}")
    return cfg


def _lineage(brain: Brain) -> list[Snapshot]:
    """The snapshots the chain records, oldest first: every one but those whose root equals the one
    before (the anchoring rule, :func:`ledger.receipts.anchored`)."""
    return anchored(list(reversed(list(brain.store.lineage()))))


def commit_pending(
    brain: Brain,
    *,
    key: str | None = None,
    batch: int = DEFAULT_BATCH,
    password: PasswordSource | None = None,
    attach_to: Receipt | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Any:
    """Commit every snapshot not yet on chain, oldest first, in batches; record receipts as notes.

    Returns a :class:`CommitResult`, or ``attach_to`` with its chain receipt filled in.
    """
    cfg = ChainConfig.of(brain)
    cfg.require("registry", "agent_id")
    assert cfg.agent_id is not None
    with brain.locked():
        reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
        lineage = _lineage(brain)
        events = reg.events(cfg.agent_id, cfg.deploy_block)
        for i, ev in enumerate(events):
            if ev["seq"] != i + 1:
                raise ChainError(f"the registry's events for agent skip from seq {i} to {ev['seq']}")
            if i >= len(lineage) or lineage[i].root != ev["root"]:
                local = format_root(lineage[i].root) if i < len(lineage) else "nothing"
                raise ChainError(
                    f"the on-chain lineage diverges from this brain at seq {i + 1}: chain has "
                    f"{format_root(ev['root'])}, the brain has {local}",
                    hint="this brain was forked or rewritten after it was committed; run 'ledger verify --chain'",
                )
        known = read_receipts(brain.store)
        recovered = {
            lineage[i].commit: _note(cfg, reg, ev)
            for i, ev in enumerate(events)
            if known.get(lineage[i].commit, {}).get("tx") != ev["tx"]
        }
        write_receipts(brain.store, recovered)
        pending = lineage[len(events) :]
        _check_roots(brain, pending)
        parent = events[-1]["root"] if events else ZERO
        txs: list[str] = []
        done = 0
        if pending:
            account = _account(cfg, key, reg.chain_id, password)
            for start in range(0, len(pending), max(1, batch)):
                chunk = pending[start : start + max(1, batch)]
                roots = [s.root for s in chunk]
                fns = reg._c().functions
                call = (
                    fns.commit(cfg.agent_id, parent, roots[0])
                    if len(roots) == 1
                    else fns.commitBatch(cfg.agent_id, parent, roots)
                )
                receipt = reg.send(account, call, what=f"committing {len(roots)} root(s)")
                logs = reg._c().events.RootCommitted().process_receipt(receipt, errors=DISCARD)
                notes = {}
                for snap, log in zip(chunk, logs, strict=True):
                    ev = {**_event(log), "gas_used": int(receipt["gasUsed"])}
                    if ev["root"] != snap.root:
                        raise ChainError(
                            f"receipt root {format_root(ev['root'])} does not match snapshot {snap.commit}"
                        )
                    notes[snap.commit] = _note(cfg, reg, ev)
                write_receipts(brain.store, notes)
                txs.append(notes[chunk[0].commit]["tx"])
                done += len(chunk)
                parent = roots[-1]
                if progress is not None:
                    progress(done, len(pending))
        head = reg.head(cfg.agent_id)
        seq = reg.sequence(cfg.agent_id)
    if attach_to is not None:
        note = read_receipts(brain.store).get(attach_to.commit)
        return dataclasses.replace(attach_to, chain=note)
    return CommitResult(done, txs, len(recovered), format_root(head) if head != ZERO else None, seq)


def _check_roots(brain: Brain, pending: list[Snapshot]) -> None:
    """Recompute every root about to be anchored from the git objects alone.

    The digest cache and the saved root index speed up local writes; what goes on
    chain must not rest on them, so a forged cache record can never be anchored.
    """
    commits = [bytes.fromhex(s.commit) for s in pending]
    for snap, actual in zip(pending, recompute_roots(brain.store, commits), strict=True):
        if actual != snap.root:
            raise ChainError(
                f"snapshot {snap.commit[:12]} records root {format_root(snap.root)} but its objects hash to "
                f"{format_root(actual)}; refusing to anchor it",
                hint="run 'ledger verify' to find the divergence",
            )


def _note(cfg: ChainConfig, reg: Registry, ev: dict[str, Any]) -> dict[str, Any]:
    note = {
        "chain_id": reg.chain_id,
        "registry": reg.address,
        "agent": f"0x{cfg.agent_id:064x}",
        "seq": ev["seq"],
        "root": format_root(ev["root"]),
        "committer": ev["committer"],
        "tx": ev["tx"],
        "block": ev["block"],
        "block_hash": ev["block_hash"],
        "log_index": ev["log_index"],
    }
    if "gas_used" in ev:
        note["gas_used"] = ev["gas_used"]
    return note


def onchain_events(rpc: str, registry: str, agent: str | int) -> list[dict[str, Any]]:
    """Every root the agent ever committed, oldest first, with its sequence, block and tx."""
    agent_id = int(agent, 0) if isinstance(agent, str) else agent
    reg = Registry(rpc, registry)
    return reg.events(agent_id)


def as_json(result: CommitResult) -> dict[str, Any]:
    return dataclasses.asdict(result)


def authorize(
    brain: Brain, committer: str, allowed: bool, *, key: str | None = None, password: PasswordSource | None = None
) -> None:
    """Grant or revoke a committer key for this brain's agent (sent by the owner)."""
    cfg = ChainConfig.of(brain)
    cfg.require("registry", "agent_id")
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    account = _account(cfg, key, reg.chain_id, password)
    call = reg._c().functions.setCommitter(cfg.agent_id, to_checksum_address(committer), allowed)
    reg.send(account, call, what="setting a committer")


def chain_status(brain: Brain) -> dict[str, Any]:
    """The agent's on-chain head and sequence next to the local head."""
    cfg = ChainConfig.of(brain)
    cfg.require("registry", "agent_id")
    assert cfg.agent_id is not None
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    head = reg.head(cfg.agent_id)
    seq = reg.sequence(cfg.agent_id)
    local = brain.head().snap.root
    lineage = _lineage(brain)
    # Pending is counted from the chain's own sequence: local receipts can outlive a chain
    # reset or a reorg, and would then claim everything was committed.
    on_lineage = 0 < seq <= len(lineage) and lineage[seq - 1].root == head
    pending = len(lineage) - seq if on_lineage or seq == 0 else None
    stale = [c for c, r in read_receipts(brain.store).items() if r.get("seq", 0) > seq]
    return {
        "rpc": cfg.rpc,
        "chain_id": reg.chain_id,
        "registry": reg.address,
        "agent": f"0x{cfg.agent_id:064x}",
        "onchain_head": format_root(head) if head != ZERO else None,
        "onchain_seq": seq,
        "local_head": format_root(local),
        "pending": pending,
        "diverged": pending is None,
        "stale_receipts": len(stale),
        "in_sync": head == local,
    }
