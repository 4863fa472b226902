"""Anchoring a brain on chain: deploy the registry, register the agent, commit snapshot roots.

A service that takes a brain (it reads the lineage and records receipts under the
writer lock); the chain client underneath, :mod:`ledger.chain.registry`, knows no brain.
Imported only by chain commands; deploy and register load web3, a commit never does.  ``commit_pending`` is
idempotent: it first replays the registry's events for the agent and records any
receipt a crashed run did not, so a root is never sent twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger.brain import Brain, Receipt
from ledger.bundle.merkle import format_root
from ledger.chain.abi import (
    EVIDENCE_COMMITTED,
    ROOT_COMMITTED,
    call_data,
    checksum,
    decode_evidence_committed,
    decode_root_committed,
    decode_string,
    hexbytes,
    sequenced,
)
from ledger.chain.config import ChainConfig
from ledger.chain.identity import check_registry_code
from ledger.chain.keys import PasswordSource, load_account
from ledger.chain.receipts import read_receipts, write_receipts
from ledger.chain.registry import ZERO, Registry
from ledger.chain.shares import check_location, read_shares, unavailable
from ledger.errors import ChainError, LedgerError
from ledger.protocol.evidencelog import EvidenceLog, prefix_problem
from ledger.protocol.receipts import anchored
from ledger.store.evidence import log_of
from ledger.store.gitstore import Snapshot
from ledger.store.treehash import recompute_roots

if TYPE_CHECKING:
    from ledger.chain.keys import Signer

__all__ = [
    "CommitResult",
    "EvidenceNotPrefixError",
    "as_json",
    "authorize",
    "chain_status",
    "commit_pending",
    "deploy",
    "location",
    "register",
    "set_location",
    "shares_of",
]

DEFAULT_BATCH = 32


@dataclass(frozen=True)
class CommitResult:
    committed: int  # roots sent in this run
    transactions: list[str]
    reconciled: int  # receipts recovered from chain events
    head: str | None
    seq: int
    evidence: dict[str, Any] | None = None  # the evidence log sent in this run: size, root, tx


def _account(brain_cfg: ChainConfig, key: str | None, chain_id: int, password: PasswordSource | None) -> Signer:
    # On a local anvil (31337) the dev key is the default, as Foundry users expect.
    from ledger.chain.keys import DEV_KEY_NAME

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
    if base.registry and not force and base.chain_id == reg.chain_id and reg.has_code(base.registry):
        raise ChainError(
            f"this brain already uses the registry {base.registry} on chain {reg.chain_id}",
            hint="pass --force to deploy a new one (the agent must then register again)",
        )
    account = _account(base, key, reg.chain_id, password)
    factory = reg.w3.eth.contract(abi=reg.abi, bytecode=reg.bytecode)
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
    receipt = reg.send(account, reg.bound().functions.register(salt, shares), what="registering the agent")
    from web3.logs import DISCARD

    (event,) = reg.bound().events.AgentRegistered().process_receipt(receipt, errors=DISCARD)
    cfg = dataclasses.replace(cfg, agent_id=int(event["args"]["agentId"]), key=key or cfg.key)
    cfg.save(brain)
    # The brain's agent keys sign the agent's snapshots; the audit checks that they may also commit
    # for the agent (docs/lineage.md §8.5), so registering authorizes them.
    trust = brain.store.trust_at(brain.head().snap.tree)[1]
    for address in sorted(a for a, role in trust.active.items() if role == "agent"):
        call = reg.bound().functions.setCommitter(cfg.agent_id, checksum(address), True)
        reg.send(account, call, what=f"authorizing the brain's agent key {address}")
    return cfg


def _lineage(brain: Brain) -> list[Snapshot]:
    """The snapshots the chain records, oldest first: every one but those whose root equals the one
    before (the anchoring rule, :func:`ledger.chain.receipts.anchored`)."""
    return anchored(list(reversed(list(brain.store.lineage()))))


def commit_pending(
    brain: Brain,
    *,
    key: str | None = None,
    batch: int = DEFAULT_BATCH,
    password: PasswordSource | None = None,
    attach_to: Receipt | None = None,
    progress: Callable[[int, int], None] | None = None,
    upto: bytes | None = None,
) -> Any:
    """Commit every snapshot not yet on chain, oldest first, in batches; record receipts as notes.

    ``upto`` (a snapshot of the lineage) stops there: a machine of a fleet commits only what it
    has published to the shared remote, so every anchored root is a snapshot an auditor can
    fetch.  Returns a :class:`CommitResult`, or ``attach_to`` with its chain receipt filled in.

    The evidence log of the newest snapshot considered (the head, or ``upto``) goes on chain when
    it is longer than the one anchored: with the last chunk of roots, in the same transaction
    (``commitEvidence``), or alone, bound to the chain's head, when no root is pending.  An anchored
    log that is not a prefix of the local one is refused before anything is sent.
    """
    cfg = ChainConfig.of(brain)
    cfg.require("registry", "agent_id")
    assert cfg.agent_id is not None
    with brain.writing():
        reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
        lineage = _lineage(brain)
        events = reg.lineage(cfg.agent_id, cfg.deploy_block)
        for i, ev in enumerate(events):
            if i >= len(lineage) or lineage[i].root != ev["root"]:
                local = format_root(lineage[i].root) if i < len(lineage) else "nothing"
                raise ChainError(
                    f"the on-chain lineage diverges from this brain at chain sequence {i + 1}: chain has "
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
        if upto is not None:  # those at or before it on its first-parent line
            published = {snap.commit for snap in brain.store.lineage(upto)}
            pending = [snap for snap in pending if snap.commit in published]
        _check_roots(brain, pending)
        parent = events[-1]["root"] if events else ZERO
        target = brain.store.snapshot(upto if upto is not None else brain.head().commit)
        evidence, anchored_size = _evidence_to_send(brain, reg, cfg.agent_id, target, pending, parent)
        txs: list[str] = []
        done = 0
        sent: dict[str, Any] | None = None
        if pending or evidence is not None:
            account = _account(cfg, key, reg.chain_id, password)
            chunks = [pending[i : i + max(1, batch)] for i in range(0, len(pending), max(1, batch))] or [[]]
            for n, chunk in enumerate(chunks):
                roots = [s.root for s in chunk]
                if evidence is not None and n == len(chunks) - 1:
                    data = call_data(
                        "commitEvidence(uint256,bytes32,bytes32[],uint64,bytes32,bytes32[])",
                        cfg.agent_id,
                        parent,
                        roots,
                        evidence.size,
                        evidence.root,
                        evidence.consistency(anchored_size),
                    )
                    what = f"committing {len(roots)} root(s) and {evidence.size} evidence entries"
                elif len(roots) == 1:
                    data = call_data("commit(uint256,bytes32,bytes32)", cfg.agent_id, parent, roots[0])
                    what = "committing 1 root(s)"
                else:
                    data = call_data("commitBatch(uint256,bytes32,bytes32[])", cfg.agent_id, parent, roots)
                    what = f"committing {len(roots)} root(s)"
                receipt = reg.transact(account, data, what=what)
                if evidence is not None and n == len(chunks) - 1:
                    sent = _evidence_receipt(reg, cfg.agent_id, receipt, evidence, roots[-1] if roots else parent)
                if not chunk:
                    txs.append(sent["tx"] if sent else receipt["transactionHash"])
                    break
                logs = _receipt_events(reg, cfg.agent_id, receipt, len(events) + done, parent)
                if len(logs) != len(chunk):
                    raise ChainError(
                        f"the receipt of tx {logs[0]['tx'] if logs else '?'} holds {len(logs)} "
                        f"RootCommitted event(s) of this agent for {len(chunk)} root(s) sent"
                    )
                notes = {}
                for snap, log in zip(chunk, logs, strict=True):
                    ev = {**log, "gas_used": int(receipt["gasUsed"])}
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
    return CommitResult(done, txs, len(recovered), format_root(head) if head != ZERO else None, seq, sent)


def _evidence_to_send(
    brain: Brain, reg: Registry, agent: int, target: Snapshot, pending: list[Snapshot], head: bytes
) -> tuple[EvidenceLog | None, int]:
    """The target snapshot's evidence log when it is longer than the one anchored, and the anchored
    size; (None, size) when there is nothing new, or no head to bind it to: the evidence is bound to
    the head its transaction leaves, which must be the target's root (evidence-only, the chain's
    head must already be it).  Refuses an anchored log that is not a prefix of the brain's (its
    head's), or of the target's when the target's is to be sent."""
    size, root = reg.evidence(agent)
    current = brain.store.snapshot(brain.head().commit)
    log = local = log_of(brain.store, current)
    _refuse_unless_prefix(current, local, size, root)
    if target.commit != current.commit:
        log = log_of(brain.store, target)
        if log.size <= size:
            return None, size  # a target behind the chain's log (another machine anchored more): nothing to add
        _refuse_unless_prefix(target, log, size, root)
    if log.size <= size:
        return None, size
    bound = pending[-1].root if pending else head
    if bound != target.root:
        return None, size  # the chain's head is past the target (``upto``): a later commit carries it
    return log, size


class EvidenceNotPrefixError(ChainError):
    """The chain's anchored evidence log is not a prefix of this snapshot's: trimmed or rewritten here, or,
    on a machine of a fleet, another machine anchored outcomes this copy has not merged yet (a fleet sync
    merges the remote and tries again, as for ``StaleParent``)."""


def _refuse_unless_prefix(snap: Snapshot, log: EvidenceLog, size: int, root: bytes) -> None:
    problem = prefix_problem(log, size, root)
    if problem is not None:
        raise EvidenceNotPrefixError(
            f"refusing to anchor snapshot {snap.commit[:12]}'s evidence: {problem}",
            hint="the anchored outcomes cannot be removed or changed; restore the evidence log from a copy "
            "that has them (pull the snapshots that anchored it, or a clone), then commit again; "
            "'ledger verify --chain' shows where it diverged",
        )


def _evidence_receipt(reg: Registry, agent: int, receipt: Any, log: EvidenceLog, head: bytes) -> dict[str, Any]:
    """The one EvidenceCommitted log of a ``commitEvidence`` receipt, checked against what was sent."""
    logs = [
        decode_evidence_committed(lg)
        for lg in receipt["logs"]
        if lg["topics"] and hexbytes(lg["topics"][0]) == EVIDENCE_COMMITTED
    ]
    want = (reg.address, agent, head, log.size, log.root)
    if len(logs) != 1 or tuple(logs[0][k] for k in ("registry", "agent", "head", "size", "root")) != want:
        raise ChainError(
            f"the receipt of tx {receipt['transactionHash']} does not hold the one EvidenceCommitted "
            f"event sent (size {log.size}, root 0x{log.root.hex()})"
        )
    return {
        "size": log.size,
        "root": "0x" + log.root.hex(),
        "head": format_root(head),
        "tx": logs[0]["tx"],
        "block": logs[0]["block"],
        "gas_used": int(receipt["gasUsed"]),
    }


def _receipt_events(reg: Registry, agent: int, receipt: Any, seq: int, parent: bytes) -> list[dict[str, Any]]:
    """A commit's RootCommitted logs from its receipt, numbered after ``seq``: every one is this
    registry's, of this agent, and they are consecutive (one transaction, nothing between)."""
    events = [
        decode_root_committed(log)
        for log in receipt["logs"]
        if log["topics"] and hexbytes(log["topics"][0]) == ROOT_COMMITTED
    ]
    for ev in events:
        if ev["registry"] != reg.address or ev["agent"] != agent:
            raise ChainError(
                f"the receipt of tx {ev['tx']} holds a RootCommitted event of agent {ev['agent']:#x} "
                f"at {ev['registry']}, not this agent's"
            )
    indexes = [ev["log_index"] for ev in events]
    if indexes and indexes != list(range(indexes[0], indexes[0] + len(indexes))):
        raise ChainError(f"the receipt of tx {events[0]['tx']} holds RootCommitted events out of order: {indexes}")
    return sequenced(events, seq, parent)


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


def as_json(result: CommitResult) -> dict[str, Any]:
    return dataclasses.asdict(result)


def authorize(
    brain: Brain, committer: str, allowed: bool, *, key: str | None = None, password: PasswordSource | None = None
) -> str:
    """Grant or revoke a committer key for this brain's agent (sent by the owner); the transaction's hash."""
    cfg = ChainConfig.of(brain)
    cfg.require("registry", "agent_id")
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    account = _account(cfg, key, reg.chain_id, password)
    call = reg.bound().functions.setCommitter(cfg.agent_id, checksum(committer), allowed)
    receipt = reg.send(account, call, what="setting a committer")
    return "0x" + hexbytes(receipt["transactionHash"]).hex()


def shares_of(reg: Registry, cfg: ChainConfig, block: Any = None) -> tuple[dict[str, Any] | None, str | None]:
    """The agent's shares (:meth:`ledger.chain.shares.Shares.to_json`) and None; or None and why there
    are none to show (the agent is not registered on this registry, or the registry predates them)."""
    assert cfg.agent_id is not None and reg.address is not None
    at = reg.block_number() if block is None else block
    why = unavailable(reg, cfg.agent_id, block=at)
    if why is not None:
        return None, why
    return read_shares(reg, reg.address, cfg.agent_id, from_block=cfg.deploy_block, block=at).to_json(), None


def set_location(brain: Brain, where: str, *, key: str | None = None, password: PasswordSource | None = None) -> str:
    """Publish (``where`` non-empty) or clear (``""``) the brain's location in the share token's
    metadata (owner only); the transaction's hash."""
    check_location(where)
    cfg = ChainConfig.of(brain)
    cfg.require("registry", "agent_id")
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    account = _account(cfg, key, reg.chain_id, password)
    call = reg.bound().functions.setLocation(cfg.agent_id, where)
    receipt = reg.send(account, call, what="setting the location")
    return "0x" + hexbytes(receipt["transactionHash"]).hex()


def location(brain: Brain) -> str | None:
    """The location the owner published for this brain's agent (None: none)."""
    cfg = ChainConfig.of(brain)
    cfg.require("registry", "agent_id")
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    check_registry_code(reg, str(reg.address), reg.chain_id)
    data = "0x" + call_data("locationOf(uint256)", cfg.agent_id).hex()
    text = decode_string(hexbytes(reg.node.call("eth_call", {"to": reg.address, "data": data}, "latest")))
    try:  # what setLocation lets through, and nothing else reaches a terminal (escapes, bidi controls)
        check_location(text)
    except ChainError as exc:
        raise ChainError(
            f"the registry {reg.address} answers a location that is not one setLocation accepts ({exc.message})",
            hint="this is not the BrainRegistry of docs/lineage.md; check its address",
        ) from exc
    return text or None


def chain_status(brain: Brain) -> dict[str, Any]:
    """The agent's on-chain head and sequence next to the local head, and its shares: all read at one block."""
    cfg = ChainConfig.of(brain)
    cfg.require("registry", "agent_id")
    assert cfg.agent_id is not None
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    tip = reg.block_number()
    # Refused, not warned: every figure below (head, sequence, evidence, shares) is that contract's word.
    check_registry_code(reg, str(reg.address), reg.chain_id, tip)
    head = reg.head(cfg.agent_id, tip)
    seq = reg.sequence(cfg.agent_id, tip)
    local = brain.head().snap.root
    lineage = _lineage(brain)
    # Pending is counted from the chain's own sequence: local receipts can outlive a chain
    # reset or a reorg, and would then claim everything was committed.
    on_lineage = 0 < seq <= len(lineage) and lineage[seq - 1].root == head
    pending = len(lineage) - seq if on_lineage or seq == 0 else None
    stale = [c for c, r in read_receipts(brain.store).items() if r.get("seq", 0) > seq]
    evidence = log_of(brain.store, brain.store.snapshot(brain.head().commit))
    ev_size, ev_root = reg.evidence(cfg.agent_id, tip)
    shares, why = shares_of(reg, cfg, tip)
    on_log = prefix_problem(evidence, ev_size, ev_root) is None
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
        "in_sync": head == local and pending == 0,  # the same root again (a revert) is not anchored yet
        "evidence": {
            "local": evidence.as_json(),
            "chain": {"size": ev_size, "root": "0x" + ev_root.hex() if ev_size else None},
            "pending": evidence.size - ev_size if on_log else None,  # None: the anchored log is not a prefix
        },
        "block": tip,
        "shares": shares,
        "shares_unavailable": why,  # None when "shares" is there
    }


def committed_snapshot(brain: Brain) -> bytes:
    """The commit of the root last committed on chain: what ``--committed`` targets show.

    The chain's head and sequence name a snapshot of this lineage (its ``seq``-th anchored
    one); a head that is not on the local lineage is refused, never guessed at."""
    cfg = ChainConfig.of(brain)
    cfg.require("registry", "agent_id")
    assert cfg.agent_id is not None
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    head, seq = reg.head(cfg.agent_id), reg.sequence(cfg.agent_id)
    lineage = _lineage(brain)
    if seq == 0 or head == ZERO:
        raise LedgerError("nothing is committed on chain yet", hint="run 'ledger commit' first")
    if not (seq <= len(lineage) and lineage[seq - 1].root == head):
        raise LedgerError(
            f"the chain's head {format_root(head)} is not on this brain's lineage",
            hint="pull the snapshots it was committed from ('ledger pull')",
        )
    return bytes.fromhex(lineage[seq - 1].commit)
