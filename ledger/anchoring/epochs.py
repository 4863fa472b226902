"""Batched anchoring: many brains' heads in one ``anchorEpoch`` transaction of an operator's log.

A service that takes brains: the operator brain (its chain config and key send the
transaction; its store keeps the log, :mod:`ledger.chain.epochlog`) and the brains whose
heads it anchors (each gets epoch receipts, :mod:`ledger.protocol.epochproof`).  The log is
cumulative and append-only: each agent's entries are its anchored lineage from seq 1, in
order (the anchoring rule of :func:`ledger.chain.receipts.anchored`), so an entry's parent is
the agent's entry before it.  That compare-and-swap is checked here, off chain; the chain
checks that the new epoch extends the last (a consistency proof), and the audit replays the
log to catch an operator that broke the rule anyway (docs/lineage.md "Epochs").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger._faults import crashpoint
from ledger.anchoring.commits import _account, _check_roots
from ledger.audit.epochs import anchored_event
from ledger.brain import Brain
from ledger.bundle.merkle import format_root
from ledger.chain import epochlog
from ledger.chain.abi import EPOCH_ANCHORED, call_data, hexbytes, word
from ledger.chain.config import ChainConfig
from ledger.chain.keys import PasswordSource
from ledger.chain.receipts import read_notes, write_receipts
from ledger.chain.registry import ZERO, Registry
from ledger.errors import ChainError, LedgerError
from ledger.protocol import epochevidence, epochproof, notes, tlog
from ledger.protocol.epochlog import EpochLog
from ledger.protocol.evidencelog import EvidenceLog, prefix_problem
from ledger.protocol.receipts import anchored
from ledger.protocol.refs import EPOCH_NOTES_REF, EVIDENCE_NOTES_REF
from ledger.signatures.siblings import ed25519_key
from ledger.store.evidence import log_of

__all__ = ["EpochResult", "anchor_epoch"]


@dataclass(frozen=True)
class EpochResult:
    epoch: int
    tx: str | None
    gas_used: int
    heads: int  # entries added by this epoch
    size: int  # entries in the log
    root: str  # the tree's root, 0x hex
    brains: int  # brains given receipts
    gas_per_head: float = field(default=0.0)  # gas per entry added (heads and evidence)
    evidence: int = 0  # evidence entries added by this epoch

    def as_json(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "tx": self.tx,
            "gasUsed": self.gas_used,
            "heads": self.heads,
            "size": self.size,
            "root": self.root,
            "brains": self.brains,
            "gasPerHead": self.gas_per_head,
            "evidence": self.evidence,
        }


def _entries(brain: Brain, agent: int, last: tuple[int, bytes]) -> tuple[list[tuple[Any, bytes]], int]:
    """Every anchored snapshot of the brain with its entry, and how many of them the log holds already;
    refuses a brain whose lineage does not continue the agent's last entry (a fork, a rewrite, or another
    brain)."""
    lineage = anchored(list(reversed(list(brain.store.lineage()))))
    seq, root = last
    if seq > len(lineage) or (seq and lineage[seq - 1].root != root):
        local = format_root(lineage[seq - 1].root) if 0 < seq <= len(lineage) else "nothing"
        raise ChainError(
            f"agent {agent:#x}'s last entry in the operator's log is seq {seq}, root {format_root(root)}, but the "
            f"brain at {brain.root} has {local} there: its head does not continue what was anchored",
            hint="the brain was forked or rewritten after it was anchored; run 'ledger audit' on it",
        )
    out, parent = [], ZERO
    for i, snap in enumerate(lineage, 1):
        out.append((snap, tlog.entry(agent, i, parent, snap.root)))
        parent = snap.root
    _check_roots(brain, [s for s, _ in out[seq:]])
    return out, seq


def _evidence_item(brain: Brain, agent: int, last: tuple[int, bytes]) -> bytes | None:
    """The evidence entry of the brain's head log when it is longer than what the operator's log anchored for
    the agent (``last``: size, root), None when it is not; refuses a head log that does not extend it."""
    store = brain.store
    head = store.head()
    if head is None:
        return None
    snap = store.snapshot(head)
    evlog = log_of(store, snap)
    problem = prefix_problem(evlog, *last)
    if problem is not None:
        raise ChainError(
            f"agent {agent:#x} (the brain at {brain.root}): "
            f"{problem.replace('the chain anchored', 'the operator log anchored')} (anchored {last[0]}, "
            f"in the brain {evlog.size}); nothing was anchored",
            hint="an anchored outcome cannot be removed or changed: restore the brain's evidence/ from "
            "a copy that holds it, then anchor again",
        )
    if evlog.size <= last[0]:
        return None
    return epochevidence.evidence_entry(agent, snap.root, evlog.size, evlog.root)


def _evidence_receipts(
    log: EpochLog, brains: list[tuple[Brain, int]], location: str, reg: Registry, from_block: int
) -> set[str]:
    """Give each evidence entry of the brains' agents in the log's last anchored epoch a receipt (on the newest
    mainline snapshot whose root is the entry's head and whose log is exactly the entry's), unless one it vouches
    for (:func:`_vouched`) already covers it; the brains given any."""
    epoch = log.epochs[-1] if log.epochs else None
    if epoch is None or epoch["tx"] is None:
        return set()
    entries = log.entries[: epoch["size"]]
    tree = None
    given: set[str] = set()
    for brain, agent in brains:
        wanted = {
            e: i
            for i, e in enumerate(entries)
            if epochevidence.is_evidence(e) and epochevidence.parse_evidence_entry(e)[0] == agent
        }
        if not wanted:
            continue
        have = read_notes(brain.store, EVIDENCE_NOTES_REF)
        held = {}  # entry → commit, for receipts this log vouches for
        for commit, note in have.items():
            if _vouched(note, log, location, reg, from_block, epochevidence.verify_offline):
                held[notes.parse_proof(epochproof.parse_receipt(note)["proof"])[0]] = commit
        missing = {e: i for e, i in wanted.items() if e not in held}
        docs: dict[str, dict[str, Any]] = {}
        logs: dict[str, EvidenceLog] = {}
        for item, index in missing.items():
            _agent, head, size, root = epochevidence.parse_evidence_entry(item)
            for snap in brain.store.lineage():  # newest first: the head, for the entry just anchored
                if snap.root != head:
                    continue
                if snap.tree not in logs:
                    logs[snap.tree] = log_of(brain.store, snap)
                if (logs[snap.tree].size, logs[snap.tree].root) == (size, root):
                    tree = tree or tlog.Tree([tlog.leaf_hash(e) for e in entries])
                    docs[snap.commit] = epochevidence.build(
                        log.header, epoch, index, tree.inclusion(index), item, location
                    )
                    break
        if docs:
            with brain.writing():
                write_receipts(brain.store, docs, ref=EVIDENCE_NOTES_REF)
            given.add(str(brain.root))
    return given


def _receipts(
    log: EpochLog, brains: list[tuple[Brain, list[tuple[Any, bytes]]]], location: str, reg: Registry, from_block: int
) -> set[str]:
    """Give each snapshot in the log that has no epoch receipt yet (those of this epoch, and those a killed
    run left without one) its receipt against the log's last anchored epoch, and replace any receipt its
    log does not vouch for (:func:`_vouched`); the brains given any."""
    epoch = log.epochs[-1] if log.epochs else None
    if epoch is None or epoch["tx"] is None:
        return set()
    entries = log.entries[: epoch["size"]]
    tree, index = tlog.Tree([tlog.leaf_hash(e) for e in entries]), {e: i for i, e in enumerate(entries)}
    given: set[str] = set()
    for brain, items in brains:
        have = read_notes(brain.store, EPOCH_NOTES_REF)
        docs = {
            snap.commit: epochproof.build(log.header, epoch, index[item], tree.inclusion(index[item]), item, location)
            for snap, item in items
            if item in index and not _vouched(have.get(snap.commit), log, location, reg, from_block)
        }
        if docs:
            with brain.writing():
                write_receipts(brain.store, docs, ref=EPOCH_NOTES_REF)
            given.add(str(brain.root))
    return given


def _vouched(
    note: bytes | None,
    log: EpochLog,
    location: str,
    reg: Registry,
    from_block: int,
    verify: Any = epochproof.verify_offline,
) -> bool:
    """Whether a held epoch receipt stands: ours, spelled as the log writes it, verifying offline and naming
    an epoch of the log with its transaction and this log; or another operator's of this registry, verifying
    offline and naming an epoch and a transaction the chain holds (it is kept: it names where that operator's
    log is, which an audit of the agent needs).  Any other receipt on a snapshot this log anchors (a peer's
    planted or altered copy, taken where no chain could check it) is replaced by ours."""
    if note is None:
        return False
    try:
        doc = epochproof.parse_receipt(note)
        facts = verify(doc)
    except LedgerError:
        return False
    if (doc["registry"], doc["chain_id"]) != (log.header["registry"], log.header["chain_id"]):
        return False
    if doc["operator"].lower() != str(log.header["operator"]).lower():
        try:
            if reg.epoch(doc["operator"], doc["epoch"]) != (facts["size"], facts["tree_root"]):
                return False
            event = anchored_event(reg, doc["operator"], doc["epoch"], from_block, "latest")
        except LedgerError:
            return False
        return event is not None and (event["tx"], event["block"]) == (doc["tx"].lower(), doc["block"])
    if doc["operator"] != log.header["operator"]:
        return False  # ours, respelled (a peer lower-cased it): rewritten as the log writes it
    ours = next((e for e in log.epochs if e["epoch"] == doc["epoch"]), None)
    if ours is None or ours["tx"] is None:
        return False
    return (ours["tx"], ours["block"], location) == (doc["tx"], doc["block"], doc["log"])


def _settle(reg: Registry, log: EpochLog, operator: str, store: Any) -> None:
    """A pending last epoch (recorded, its transaction's outcome unknown): keep it if the chain holds
    it, with its transaction found from the event; drop it and its entries if not."""
    if not log.epochs or log.epochs[-1]["tx"] is not None:
        return
    ep = log.epochs[-1]
    size, root = reg.epoch(operator, ep["epoch"])
    if (size, root) == (ep["size"], bytes.fromhex(ep["root"])):
        logs = reg.logs([EPOCH_ANCHORED, word(operator, "address"), word(ep["epoch"], "uint64")])
        if len(logs) != 1:
            raise ChainError(f"the chain holds epoch {ep['epoch']} but {len(logs)} EpochAnchored event(s) for it")
        ep["tx"], ep["block"] = logs[0]["transactionHash"], int(logs[0]["blockNumber"], 16)
        epochlog.save(store, log, f"ledger: epoch {ep['epoch']} settled from the chain\n")
        return
    if size != 0:
        raise ChainError(f"the chain's epoch {ep['epoch']} of {operator} is not the one this log recorded")
    mined = int(reg.node.call("eth_getTransactionCount", operator, "latest"), 16)
    if int(reg.node.call("eth_getTransactionCount", operator, "pending"), 16) > mined:
        raise ChainError(
            f"epoch {ep['epoch']} is recorded but not on chain, and a transaction of {operator} "
            f"(nonce {mined}) is still pending: it may be that epoch's",
            hint="run 'ledger chain epoch' again once it is mined (or dropped); dropping the epoch now "
            "could leave the chain with an epoch this log no longer holds",
        )
    log.epochs.pop()
    del log.entries[log.size() :]
    epochlog.save(store, log, f"ledger: epoch {ep['epoch']} dropped: never anchored\n")


def anchor_epoch(
    operator: Brain,
    brains: Sequence[Brain],
    *,
    key: str | None = None,
    password: PasswordSource | None = None,
    location: str | None = None,
    extra: Sequence[bytes] = (),
) -> EpochResult:
    """Anchor every new head of ``brains`` (and ``extra`` entries, without receipts) as the next epoch.

    ``location`` is where auditors fetch the operator's log (default: the operator brain's path).
    """
    cfg = ChainConfig.of(operator)
    cfg.require("registry")
    location = location or str(Path(operator.root).resolve())
    with operator.writing():
        reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
        account = _account(cfg, key, reg.chain_id, password)
        sender = account.address
        log = epochlog.read_local(operator.store)
        origin = notes.origin_of(reg.chain_id, str(reg.address), sender)
        if log.header and log.header.get("origin") != origin:
            raise ChainError(
                f"this brain's epoch log is {log.header.get('origin')}, not {origin}",
                hint="anchor with the key and registry the log was started with",
            )
        _settle(reg, log, sender, operator.store)
        latest = reg.latest_epoch(sender)
        mine = (len(log.epochs), log.size(), bytes.fromhex(log.epochs[-1]["root"]) if log.epochs else ZERO)
        if latest != mine:
            raise ChainError(
                f"the chain's last epoch of {sender} is {latest[0]} (size {latest[1]}), but this "
                f"brain's log ends at epoch {mine[0]} (size {mine[1]})",
                hint="another copy of this operator anchored (anchor from that copy, or fetch its "
                "refs/ledger/epochs), or the chain was reset (a new operator key starts a new "
                "log)",
            )
        if not log.header:
            vkey = _vkey(origin, account.key)
            log.header = {
                "origin": origin,
                "chain_id": reg.chain_id,
                "registry": reg.address,
                "operator": sender,
                "vkey": vkey,
                "key_signature": notes.certify_key(account.key, vkey),
            }
        heads, evidence = log.heads(), log.evidence()
        new: list[bytes] = []
        n_evidence = 0
        members: list[tuple[Brain, int]] = []
        per_brain: list[tuple[Brain, list[tuple[Any, bytes]]]] = []
        seen: set[int] = set()
        for brain in brains:
            bcfg = ChainConfig.of(brain)
            bcfg.require("agent_id")
            assert bcfg.agent_id is not None
            agent = bcfg.agent_id
            if (bcfg.registry or "").lower() != str(reg.address).lower() or agent in seen:
                raise ChainError(
                    f"the brain at {brain.root} (agent {agent:#x}) is named twice"
                    if agent in seen
                    else f"the brain at {brain.root} is registered on registry {bcfg.registry}, not "
                    f"on this operator's registry {reg.address}",
                    hint="name each brain once"
                    if agent in seen
                    else f"anchor only brains registered on {reg.address}; that brain's own "
                    "operator (on its registry) anchors it",
                )
            seen.add(agent)
            if not reg.is_committer(agent, sender):
                raise ChainError(
                    f"{sender} may not commit for agent {agent:#x} (the brain at {brain.root})",
                    hint=f"the agent's owner runs 'ledger chain authorize {sender}' in that brain",
                )
            items, known = _entries(brain, agent, heads.get(agent, (0, ZERO)))
            per_brain.append((brain, items))
            members.append((brain, agent))
            new += [e for _, e in items[known:]]
            item = _evidence_item(brain, agent, evidence.get(agent, (0, ZERO)))
            if item is not None:  # after the brain's head entries: bound to its head, now the agent's last entry
                new.append(item)
                n_evidence += 1
        for item in extra:  # synthetic heads through the API: the same compare-and-swap, no receipt
            if epochevidence.is_evidence(item):
                agent, head, size, _root = epochevidence.parse_evidence_entry(item)
                if agent in seen or heads.get(agent, (0, ZERO))[1] != head or size <= evidence.get(agent, (0,))[0]:
                    raise ChainError(
                        f"evidence entry of agent {agent:#x} (size {size}) is not bound to its last "
                        "head entry, or does not grow its anchored evidence"
                    )
                evidence[agent] = (size, _root)
                new.append(item)
                n_evidence += 1
                continue
            agent, seq, parent, root = tlog.parse_entry(item)
            last = heads.get(agent, (0, ZERO))
            if (
                agent in seen
                or seq != last[0] + 1
                or parent != (last[1] if last[0] else ZERO)
                or root in (ZERO, parent)
            ):
                raise ChainError(
                    f"entry seq {seq} of agent {agent:#x} does not continue its last entry (seq {last[0]})"
                )
            heads[agent] = (seq, root)
            new.append(item)
        if not new:
            given = _receipts(log, per_brain, location, reg, cfg.deploy_block or 0)
            given |= _evidence_receipts(log, members, location, reg, cfg.deploy_block or 0)
            return EpochResult(len(log.epochs), None, 0, 0, log.size(), "0x" + mine[2].hex(), len(given))
        old_size = log.size()
        log.entries += new
        tree = tlog.Tree(log.leaves())
        root = tree.root()
        proof = tree.consistency(old_size) if old_size else []
        epoch = len(log.epochs) + 1
        checkpoint = notes.sign_note(notes.checkpoint_text(origin, tree.size, root), origin, ed25519_key(account.key))
        log.epochs.append(
            {"epoch": epoch, "size": tree.size, "root": root.hex(), "checkpoint": checkpoint, "tx": None, "block": None}
        )
        epochlog.save(operator.store, log, f"ledger: epoch {epoch} ({len(new)} heads), pending\n")
        crashpoint("epoch-before-send")
        data = call_data("anchorEpoch(uint64,bytes32,bytes32[])", tree.size, root, proof)
        receipt = reg.transact(account, data, what=f"anchoring epoch {epoch} ({len(new)} heads)")
        anchored_logs = [lg for lg in receipt["logs"] if lg["topics"] and hexbytes(lg["topics"][0]) == EPOCH_ANCHORED]
        if len(anchored_logs) != 1 or hexbytes(anchored_logs[0]["data"]) != word(tree.size, "uint64") + root:
            raise ChainError(f"the receipt of epoch {epoch} holds no EpochAnchored event of size {tree.size}")
        log.epochs[-1].update(tx=receipt["transactionHash"], block=int(receipt["blockNumber"]))
        epochlog.save(operator.store, log, f"ledger: epoch {epoch} anchored in {receipt['transactionHash']}\n")
    given = _receipts(log, per_brain, location, reg, cfg.deploy_block or 0)
    given |= _evidence_receipts(log, members, location, reg, cfg.deploy_block or 0)
    gas = int(receipt["gasUsed"])
    return EpochResult(
        epoch,
        receipt["transactionHash"],
        gas,
        len(new) - n_evidence,
        tree.size,
        "0x" + root.hex(),
        len(given),
        round(gas / len(new), 2),
        n_evidence,
    )


def _vkey(origin: str, secret: bytes) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return notes.vkey(origin, ed25519_key(secret).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
