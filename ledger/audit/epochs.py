"""``chain.epochs``: a brain's epoch receipts against the chain and the operator's published log.

Each receipt (``refs/notes/ledger-epochs``) is checked offline (:mod:`ledger.chain.epochproof`),
sits on the anchored snapshot its seq names, and names an epoch the registry holds with the
checkpoint's size and root, by an operator that may commit for this agent.  Then the
operator's log, fetched from where the receipt says it is published, is replayed whole: it
must hold every epoch the chain holds for the operator, each epoch's root recomputed from
the entries must be the chain's, and every agent's entries must form one chain (seq 1, 2, …,
each parent the root before it), this agent's being this brain's lineage.  An operator that
anchored two roots for one (agent, seq), a *forked operator*, fails here.
"""

from __future__ import annotations

import json
from typing import Any

from ledger.audit.verdicts import Check, Report
from ledger.bundle.merkle import format_root
from ledger.chain import epochlog, epochproof, tlog
from ledger.chain.abi import EPOCH_ANCHORED, hexbytes, word
from ledger.chain.receipts import read_notes
from ledger.errors import LedgerError
from ledger.store import gitstore as gs

__all__ = ["anchored_event", "check_epochs", "replay"]

ZERO = b"\x00" * 32


def check_epochs(
    store: gs.GitStore, snaps: list[gs.Snapshot], report: Report, reg: Any, agent: int, height: int, from_block: int = 0
) -> None:
    """``snaps`` are the anchored snapshots, oldest first (seq k is ``snaps[k - 1]``)."""
    chk = report.check("chain.epochs")
    notes = read_notes(store, epochlog.EPOCH_NOTES_REF)
    if not notes:
        chk.skip("no epoch receipts (refs/notes/ledger-epochs): this brain was not anchored through an operator")
        return
    position = {s.commit: i for i, s in enumerate(snaps)}
    logs: dict[tuple[str, str], list[int]] = {}  # (operator, location) → epochs named
    for commit, data in sorted(notes.items()):
        try:
            doc = json.loads(data)
            facts = epochproof.verify_offline(doc)
        except (ValueError, LedgerError) as exc:
            chk.fail(
                f"the epoch receipt on {commit[:12]} does not verify: {getattr(exc, 'message', exc)}", snapshot=commit
            )
            continue
        i = position.get(commit)
        if facts["agent"] != agent or i is None or facts["seq"] != i + 1 or facts["root"] != snaps[i].root:
            chk.fail(f"the epoch receipt on {commit[:12]} names agent {facts['agent']:#x} seq {facts['seq']}, which is "
                     "not that snapshot of this agent's anchored lineage", snapshot=commit)  # fmt: skip
            continue
        if facts["parent"] != (snaps[i - 1].root if i else ZERO):
            chk.fail(f"the epoch receipt on {commit[:12]} gives a parent that is not the snapshot before",
                     snapshot=commit)  # fmt: skip
        size, root = reg.epoch(facts["operator"], facts["epoch"], height)
        if (size, root) != (facts["size"], facts["tree_root"]):
            chk.fail(f"epoch {facts['epoch']} of operator {facts['operator']} on chain is size {size}, root "
                     f"0x{root.hex()}, not the receipt's checkpoint", snapshot=commit,
                     expected=f"{facts['size']} 0x{facts['tree_root'].hex()}",
                     computed=f"{size} 0x{root.hex()}")  # fmt: skip
            continue
        event = anchored_event(reg, facts["operator"], facts["epoch"], from_block, height)
        if event is None or (event["tx"], event["block"]) != (doc["tx"].lower(), doc["block"]):
            chk.fail(f"the epoch receipt on {commit[:12]} names tx {doc['tx'][:12]}… block {doc['block']}, but the "
                     f"chain's EpochAnchored event of epoch {facts['epoch']} is "
                     f"{'missing' if event is None else event['tx'][:12] + '… block ' + str(event['block'])}",
                     snapshot=commit)  # fmt: skip
            continue
        if not reg.is_committer(agent, facts["operator"], event["block"]):
            chk.fail(f"the operator {facts['operator']} could not commit for agent {agent:#x} when it anchored "
                     f"epoch {facts['epoch']} (block {event['block']})", snapshot=commit)  # fmt: skip
            continue
        logs.setdefault((facts["operator"], doc["log"]), []).append(facts["epoch"])
    for (operator, location), _ in sorted(logs.items()):
        replay(chk, reg, operator, location, agent, snaps, height)
    if chk.ok:
        chk.summary = (f"{len(notes)} epoch receipt(s) verify against the chain, and the operator's published log "
                       f"replays to every on-chain epoch root, one chain per agent")  # fmt: skip


def anchored_event(reg: Any, operator: str, epoch: int, from_block: int, height: int | str) -> dict[str, Any] | None:
    """The one ``EpochAnchored`` event of ``operator``'s ``epoch``: its tx and block (None if absent)."""
    logs = reg.logs([EPOCH_ANCHORED, word(operator, "address"), word(epoch, "uint64")], from_block, height)
    if len(logs) != 1:
        return None
    return {"tx": "0x" + hexbytes(logs[0]["transactionHash"]).hex(), "block": int(logs[0]["blockNumber"], 16)}


def replay(chk: Check, reg: Any, operator: str, location: str, agent: int, snaps: list[gs.Snapshot],
           height: int | str = "latest") -> None:  # fmt: skip
    """Fail ``chk`` unless the log at ``location`` is the operator's whole on-chain log, unforked."""
    try:
        log = epochlog.read_remote(location)
    except LedgerError as exc:
        chk.fail(f"the operator's log cannot be replayed: {exc.message}")
        return
    if str(log.header.get("operator", "")).lower() != operator.lower():
        chk.fail(f"the log at {location} is operator {log.header.get('operator')}'s, not {operator}'s")
        return
    count = reg.latest_epoch(operator, height)[0]
    if len(log.epochs) < count:
        chk.fail(f"the log at {location} holds {len(log.epochs)} epoch(s) but the chain {count}: epochs it does not "
                 "publish cannot be checked for a fork",
                 expected=str(count), computed=str(len(log.epochs)))  # fmt: skip
        return
    tree = tlog.Tree(log.leaves())
    for ep in log.epochs[:count]:
        size, root = reg.epoch(operator, ep["epoch"], height)
        computed = tree.subroot(0, ep["size"])
        if (size, root) != (ep["size"], computed):
            chk.fail(f"epoch {ep['epoch']} recomputed from the log's entries is size {ep['size']}, root "
                     f"0x{computed.hex()}, but the chain holds size {size}, root 0x{root.hex()}",
                     expected=f"0x{root.hex()}", computed=f"0x{computed.hex()}")  # fmt: skip
            return
    entries = log.entries[: log.epochs[count - 1]["size"]] if count else []
    last: dict[int, tuple[int, bytes]] = {}
    for n, item in enumerate(entries):
        who, seq, parent, root = tlog.parse_entry(item)
        prev_seq, prev_root = last.get(who, (0, ZERO))
        if seq != prev_seq + 1 or parent != prev_root:
            what = "anchors a second root for" if seq <= prev_seq else "skips to"
            chk.fail(f"forked operator: entry {n} of {operator}'s log {what} agent {who:#x} seq {seq} "
                     f"(root {format_root(root)}); the agent's entries must be one chain, seq {prev_seq + 1} next "
                     f"with parent {format_root(prev_root)}", index=n,
                     expected=f"seq {prev_seq + 1}", computed=f"seq {seq}")  # fmt: skip
            return
        last[who] = (seq, root)
        if who == agent and seq <= len(snaps) and snaps[seq - 1].root != root:
            chk.fail(f"entry {n} of the log anchors seq {seq} of this agent as {format_root(root)}, but this brain's "
                     f"snapshot there is {format_root(snaps[seq - 1].root)}", index=n, snapshot=snaps[seq - 1].commit,
                     expected=format_root(snaps[seq - 1].root), computed=format_root(root))  # fmt: skip
            return
