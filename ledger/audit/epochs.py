"""``chain.epochs``: a brain's epoch receipts, and every log that may anchor its agent, against the chain.

Each receipt (``refs/notes/ledger-epochs``) is checked offline (:mod:`ledger.protocol.epochproof`),
sits on the anchored snapshot its seq names, and names an epoch the registry holds with the
checkpoint's size and root, by an operator that may commit for this agent.  Then the log of every
*operator of the agent* (every address ever its owner or a committer, and every receipt's operator,
with an epoch on chain) is replayed whole, from where its receipts, the audited repository itself or
``--epoch-log`` say it is published; one with epochs and no known location fails, since receipts are
only what this copy happens to hold.  Each log must hold every epoch the chain holds for the operator,
each epoch's root recomputed from the entries must be the chain's, and every agent's entries must form
one chain (seq 1, 2, …, each parent the root before it, each root non-zero and new), this agent's being
this brain's lineage; across operators, one root per seq of this agent.  An operator that anchored two
roots for one (agent, seq), a *forked operator*, fails here; so do two operators that anchored two forks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ledger.audit.epochevidence import EvidenceRule, check_agent_evidence, check_evidence_receipt
from ledger.audit.verdicts import Check, Report
from ledger.bundle.merkle import format_root
from ledger.chain import epochlog
from ledger.chain.abi import EPOCH_ANCHORED, hexbytes, word
from ledger.chain.receipts import read_notes
from ledger.errors import LedgerError
from ledger.protocol import epochevidence, epochproof, tlog
from ledger.protocol.evidencelog import EvidenceLog
from ledger.protocol.refs import EPOCH_NOTES_REF, EPOCHS_REF, EVIDENCE_NOTES_REF
from ledger.store import gitstore as gs

__all__ = ["anchored_event", "check_epochs", "replay"]

ZERO = b"\x00" * 32


def check_epochs(
    store: gs.GitStore,
    snaps: list[gs.Snapshot],
    report: Report,
    reg: Any,
    agent: int,
    height: int,
    from_block: int = 0,
    operators: Iterable[str] = (),
    epoch_logs: Mapping[str, str] | None = None,
    mainline: list[gs.Snapshot] | None = None,
) -> None:
    """``snaps`` are the anchored snapshots, oldest first (seq k is ``snaps[k - 1]``); ``mainline`` every
    mainline snapshot, oldest first (evidence receipts sit on outcome snapshots, which share a root).

    ``operators`` are every address that was ever the agent's owner or committer: each one with an
    epoch on chain may have anchored this agent, so its log is replayed whether or not this copy holds
    a receipt of it (a copy that dropped its receipts, or a fork anchored by a second committer, would
    otherwise go unseen).  ``epoch_logs`` maps an operator to where its log is published, for an
    operator no receipt names.
    """
    chk = report.check("chain.epochs")
    notes = read_notes(store, EPOCH_NOTES_REF)
    position = {s.commit: i for i, s in enumerate(snaps)}
    located: dict[str, set[str]] = {}  # operator → where its receipts (or --epoch-log) say its log is
    named: set[str] = set()  # the operators of receipts that verify offline
    for commit, data in sorted(notes.items()):
        try:
            doc = epochproof.parse_receipt(data)
            facts = epochproof.verify_offline(doc)
        except LedgerError as exc:
            chk.fail(
                f"the epoch receipt on {commit[:12]} does not verify: {getattr(exc, 'message', exc)}", snapshot=commit
            )
            continue
        named.add(facts["operator"].lower())
        located.setdefault(facts["operator"].lower(), set()).add(doc["log"])
        _check_receipt(chk, reg, agent, height, from_block, snaps, position.get(commit), commit, doc, facts)
    mainline = snaps if mainline is None else mainline
    cache: dict[str, EvidenceLog | None] = {}
    ev_notes = read_notes(store, EVIDENCE_NOTES_REF)
    for commit, data in sorted(ev_notes.items()):
        try:
            doc = epochproof.parse_receipt(data)
            facts = epochevidence.verify_offline(doc)
        except LedgerError as exc:
            chk.fail(
                f"the evidence receipt on {commit[:12]} does not verify: {getattr(exc, 'message', exc)}",
                snapshot=commit,
            )
            continue
        named.add(facts["operator"].lower())
        located.setdefault(facts["operator"].lower(), set()).add(doc["log"])
        if check_evidence_receipt(chk, store, mainline, agent, commit, facts, cache):
            _check_on_chain(chk, reg, agent, height, from_block, commit, doc, facts)
    for operator, location in (epoch_logs or {}).items():
        located.setdefault(operator.lower(), set()).add(location)
    own = _own_log_operator(store)
    if own is not None:  # an operator's own brain publishes its log: no receipt or option needed to find it
        located.setdefault(own, set()).add(str(store.git_dir))
    # the receipts' operators (they fail step 5 unless committers), and the agent's owner and committers;
    # an --epoch-log alone names a location, not an operator of this agent
    candidates = sorted({o.lower() for o in operators} | named)
    anchored: dict[int, tuple[bytes, str]] = {}  # seq → (root, operator): one root per seq across operators
    replayed, silent = 0, 0
    for operator in candidates:
        count = reg.latest_epoch(operator, height)[0]
        if count == 0:
            continue
        if operator not in located:
            chk.fail(
                f"operator {operator} has {count} epoch(s) on chain and could commit for agent {agent:#x}, but "
                "no log location is known (no epoch receipt of it here): its epochs may anchor this agent and "
                f"cannot be checked; pass --epoch-log {operator}=LOCATION (where it publishes "
                f"{EPOCHS_REF})",
                expected=f"{count} epoch(s) replayed",
                computed="no log",
            )
            continue
        for location in sorted(located[operator]):
            mine = replay(
                chk, reg, operator, location, agent, snaps, height, store=store, mainline=mainline, cache=cache
            )
            if mine is None:
                continue
            replayed += 1
            silent += not mine
            for seq, root in sorted(mine.items()):
                root0, by = anchored.setdefault(seq, (root, operator))
                if root0 != root:
                    chk.fail(
                        f"forked agent: operator {operator} anchors chain sequence {seq} of agent {agent:#x} as "
                        f"{format_root(root)}, operator {by} as {format_root(root0)}",
                        expected=format_root(root0),
                        computed=format_root(root),
                    )
    if chk.ok and not notes and not ev_notes and not replayed:
        chk.skip(
            "no epoch receipts (refs/notes/ledger-epochs), and no owner or committer of the agent has "
            "anchored an epoch: this agent was not anchored through an operator"
        )
    elif chk.ok:
        chk.summary = (
            f"{len(notes)} epoch receipt(s)"
            + (f" and {len(ev_notes)} evidence receipt(s)" if ev_notes else "")
            + f" verify against the chain, and each of {replayed} operator "
            "log(s) of the agent's owner and committers replays to every on-chain epoch root, one chain "
            "per agent" + (f" ({silent} hold no entry of this agent)" if silent else "")
        )


def _own_log_operator(store: gs.GitStore) -> str | None:
    """The operator whose log the audited repository itself holds (``refs/ledger/epochs``), if any."""
    if store.read_ref(EPOCHS_REF) is None:
        return None
    try:
        operator = epochlog.read_local(store).header.get("operator")
    except LedgerError:
        return None  # unreadable here: found, if it matters, from a receipt or --epoch-log, and replayed there
    return str(operator).lower() if operator else None


def _check_receipt(
    chk: Check,
    reg: Any,
    agent: int,
    height: int,
    from_block: int,
    snaps: list[gs.Snapshot],
    i: int | None,
    commit: str,
    doc: dict[str, Any],
    facts: dict[str, Any],
) -> None:
    """lineage/epochs.md §7 steps 2 to 5 for one receipt that verified offline."""
    if facts["agent"] != agent or i is None or facts["seq"] != i + 1 or facts["root"] != snaps[i].root:
        chk.fail(
            f"the epoch receipt on {commit[:12]} names agent {facts['agent']:#x} chain sequence {facts['seq']}, "
            "which is not that snapshot of this agent's anchored lineage",
            snapshot=commit,
        )
        return
    if facts["parent"] != (snaps[i - 1].root if i else ZERO):
        chk.fail(f"the epoch receipt on {commit[:12]} gives a parent that is not the snapshot before", snapshot=commit)
    _check_on_chain(chk, reg, agent, height, from_block, commit, doc, facts)


def _check_on_chain(
    chk: Check,
    reg: Any,
    agent: int,
    height: int,
    from_block: int,
    commit: str,
    doc: dict[str, Any],
    facts: dict[str, Any],
) -> None:
    """lineage/epochs.md §7 steps 3 to 5, for a head or an evidence receipt: the epoch, its event, the operator a
    committer."""
    size, root = reg.epoch(facts["operator"], facts["epoch"], height)
    if (size, root) != (facts["size"], facts["tree_root"]):
        chk.fail(
            f"epoch {facts['epoch']} of operator {facts['operator']} on chain is size {size}, root "
            f"0x{root.hex()}, not the receipt's checkpoint",
            snapshot=commit,
            expected=f"{facts['size']} 0x{facts['tree_root'].hex()}",
            computed=f"{size} 0x{root.hex()}",
        )
        return
    event = anchored_event(reg, facts["operator"], facts["epoch"], from_block, height)
    if event is None or (event["tx"], event["block"]) != (doc["tx"].lower(), doc["block"]):
        chk.fail(
            f"the epoch receipt on {commit[:12]} names tx {doc['tx'][:12]}… block {doc['block']}, but the "
            f"chain's EpochAnchored event of epoch {facts['epoch']} is "
            f"{'missing' if event is None else event['tx'][:12] + '… block ' + str(event['block'])}",
            snapshot=commit,
        )
        return
    if not reg.is_committer(agent, facts["operator"], event["block"]):
        chk.fail(
            f"the operator {facts['operator']} could not commit for agent {agent:#x} when it anchored "
            f"epoch {facts['epoch']} (block {event['block']})",
            snapshot=commit,
        )


def anchored_event(reg: Any, operator: str, epoch: int, from_block: int, height: int | str) -> dict[str, Any] | None:
    """The one ``EpochAnchored`` event of ``operator``'s ``epoch``: its tx and block (None if absent)."""
    logs = reg.logs([EPOCH_ANCHORED, word(operator, "address"), word(epoch, "uint64")], from_block, height)
    if len(logs) != 1:
        return None
    return {"tx": "0x" + hexbytes(logs[0]["transactionHash"]).hex(), "block": int(logs[0]["blockNumber"], 16)}


def replay(
    chk: Check,
    reg: Any,
    operator: str,
    location: str,
    agent: int,
    snaps: list[gs.Snapshot],
    height: int | str = "latest",
    *,
    store: gs.GitStore | None = None,
    mainline: list[gs.Snapshot] | None = None,
    cache: dict[str, EvidenceLog | None] | None = None,
) -> dict[int, bytes] | None:
    """Fail ``chk`` unless the log at ``location`` is the operator's whole on-chain log, unforked; with ``store``,
    this agent's evidence entries are also checked against the clone (:func:`check_agent_evidence`).

    Returns this agent's anchored entries (seq → root), for the check across operators; None on a failure.
    """
    try:
        log = epochlog.read_remote(location)
    except LedgerError as exc:
        chk.fail(f"the operator's log cannot be replayed: {exc.message}")
        return None
    if str(log.header.get("operator", "")).lower() != operator.lower():
        chk.fail(f"the log at {location} is operator {log.header.get('operator')}'s, not {operator}'s")
        return None
    count = reg.latest_epoch(operator, height)[0]
    if len(log.epochs) < count:
        chk.fail(
            f"the log at {location} holds {len(log.epochs)} epoch(s) but the chain {count}: epochs it does not "
            "publish cannot be checked for a fork",
            expected=str(count),
            computed=str(len(log.epochs)),
        )
        return None
    tree = tlog.Tree(log.leaves())
    for ep in log.epochs[:count]:
        size, root = reg.epoch(operator, ep["epoch"], height)
        computed = tree.subroot(0, ep["size"])
        if (size, root) != (ep["size"], computed):
            chk.fail(
                f"epoch {ep['epoch']} recomputed from the log's entries is size {ep['size']}, root "
                f"0x{computed.hex()}, but the chain holds size {size}, root 0x{root.hex()}",
                expected=f"0x{root.hex()}",
                computed=f"0x{computed.hex()}",
            )
            return None
    entries = log.entries[: log.epochs[count - 1]["size"]] if count else []
    last: dict[int, tuple[int, bytes]] = {}
    mine: dict[int, bytes] = {}
    rule, evidence = EvidenceRule(operator), []
    for n, item in enumerate(entries):
        if epochevidence.is_evidence(item):
            got = rule.step(chk, n, item, last)
            if got is None:
                return None
            if got[0] == agent:
                evidence.append((n, *got[1:]))
            continue
        who, seq, parent, root = tlog.parse_entry(item)
        prev_seq, prev_root = last.get(who, (0, ZERO))
        if seq != prev_seq + 1 or parent != prev_root:
            what = "anchors a second root for" if seq <= prev_seq else "skips to"
            chk.fail(
                f"forked operator: entry {n} of {operator}'s log {what} agent {who:#x} chain sequence {seq} "
                f"(root {format_root(root)}); the agent's entries must be one chain, chain sequence "
                f"{prev_seq + 1} next with parent {format_root(prev_root)}",
                index=n,
                expected=f"chain sequence {prev_seq + 1}",
                computed=f"chain sequence {seq}",
            )
            return None
        if root in (ZERO, parent):  # lineage/epochs.md §1: what anchor refuses, whoever the agent
            chk.fail(
                f"forked operator: entry {n} of {operator}'s log anchors agent {who:#x} chain sequence {seq} "
                f"with root {format_root(root)}, which is zero or repeats its parent",
                index=n,
                computed=format_root(root),
            )
            return None
        last[who] = (seq, root)
        if who == agent:
            mine[seq] = root
        if who == agent and seq <= len(snaps) and snaps[seq - 1].root != root:
            chk.fail(
                f"entry {n} of the log anchors chain sequence {seq} of this agent as {format_root(root)}, "
                f"but this brain's snapshot there is {format_root(snaps[seq - 1].root)}",
                index=n,
                snapshot=snaps[seq - 1].commit,
                expected=format_root(snaps[seq - 1].root),
                computed=format_root(root),
            )
            return None
    if store is not None and evidence:
        check_agent_evidence(
            chk, store, snaps if mainline is None else mainline, operator, evidence, {} if cache is None else cache
        )
        if not chk.ok:
            return None
    return mine
