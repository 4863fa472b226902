"""The chain half of an audit: the registry's events against the git lineage, receipts, committers.

Loaded only when an audit is given an RPC endpoint; it reads over the light JSON-RPC client
(:mod:`ledger.chain.registry`), so an audit imports no web3.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from math import inf
from typing import Any

from ledger.audit.chainevidence import check_chain_evidence
from ledger.audit.epochs import check_epochs
from ledger.audit.signatures import Signed
from ledger.audit.verdicts import Report
from ledger.bundle.merkle import format_root
from ledger.chain.abi import AGENT_REGISTERED, COMMITTER_SET, decode_committer_log, word
from ledger.chain.identity import check_registry_code
from ledger.chain.receipts import read_receipts
from ledger.errors import ChainError
from ledger.protocol.receipts import anchored
from ledger.protocol.refs import UNVERIFIED_REF
from ledger.store import gitstore as gs

__all__ = ["check_chain"]


def _redacted(rpc: str) -> str:
    """The endpoint without credentials: reports are shared, and providers put API keys in the
    user part, the path or the query of a URL."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(rpc)
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    path = parts.path if parts.path in ("", "/") else "/<redacted>"
    return urlunsplit((parts.scheme, netloc, path, "", ""))


def check_chain(
    store: gs.GitStore,
    snaps: list[gs.Snapshot],
    report: Report,
    rpc: str,
    registry: str,
    agent: int,
    from_block: int,
    signed: Sequence[Signed] = (),
    epoch_logs: Mapping[str, str] | None = None,
) -> bool:
    """Every ``chain.*`` check; False (``chain.code`` failed, nothing else read) when the contract at
    ``registry`` is not a BrainRegistry this ledger knows: its answers would prove nothing."""
    from ledger.chain.registry import ZERO, Registry

    timeline_at = {s.commit: i for i, s in enumerate(snaps)}
    mainline = snaps
    snaps = anchored(snaps)  # what the chain records: each event seq k is snaps[k - 1] (docs/lineage.md)
    reg = Registry(rpc, registry)  # raises RpcUnreachableError (exit 1)
    tip = reg.block("latest")  # read first: every read below is pinned to this height
    assert tip is not None
    height = tip["number"]
    events = reg.events(agent, from_block, height)  # seq and parent from their order (ADR 29)
    onchain_seq = reg.sequence(agent, height)
    report.chain = {
        "rpc": _redacted(rpc),
        "block_height": height,
        "block_hash": "0x" + tip["hash"].hex(),
        "block_time": tip["timestamp"],
        "registry": reg.address,
        "agent": f"0x{agent:064x}",
        "chain_id": reg.chain_id,
        "onchain_seq": onchain_seq,
    }
    code_chk = report.check("chain.code")
    try:
        build = check_registry_code(reg, reg.address, reg.chain_id, height)
    except ChainError as exc:
        code_chk.fail(exc.message + (f" ({exc.hint})" if exc.hint else ""))
        return False
    code_chk.summary = (
        f"the code at {reg.address} is the {build.name}, each of its immutables the value a "
        f"deployment there on chain {reg.chain_id} gives it"
    )
    ev_chk, roots_chk, head_chk = report.check("chain.events"), report.check("chain.roots"), report.check("chain.head")
    # The k-th event is sequence k only if none is missing: the registry's own count says so.
    if len(events) != onchain_seq:
        ev_chk.fail(
            f"the registry counts {onchain_seq} root(s) for the agent at block {height}, but the node returned "
            f"{len(events)} RootCommitted event(s) from block {from_block} (pruned logs, or a deploy block after "
            "the first commit): no event can be given its sequence",
            expected=str(onchain_seq),
            computed=str(len(events)),
        )
    for i, ev in enumerate(events):  # what commit refuses: a zero root, or the head committed again
        if ev["root"] == ZERO or ev["root"] == ev["parent"]:
            ev_chk.fail(
                f"chain sequence {ev['seq']}: its root {format_root(ev['root'])} is zero or repeats its parent",
                index=timeline_at.get(snaps[i].commit) if i < len(snaps) else None,
                computed=format_root(ev["root"]),
            )
    if ev_chk.ok:
        ev_chk.summary = (
            f"{len(events)} RootCommitted event(s), as many as the registry's sequence at block "
            f"{height}, form an unbroken chain"
        )
    for i, ev in enumerate(events):
        if i >= len(snaps):
            roots_chk.fail(
                f"chain sequence {ev['seq']} commits {format_root(ev['root'])}, beyond the last snapshot",
                computed=format_root(ev["root"]),
            )
            break
        if ev["root"] != snaps[i].root:
            roots_chk.fail(
                f"chain sequence {ev['seq']} (tx {ev['tx'][:12]}…) commits a root that is not snapshot "
                f"#{timeline_at[snaps[i].commit]}'s",
                snapshot=snaps[i].commit,
                index=timeline_at[snaps[i].commit],
                expected=format_root(snaps[i].root),
                computed=format_root(ev["root"]),
            )
    for i, ev in enumerate(events[: len(snaps)]):
        t = timeline_at.get(snaps[i].commit, len(report.timeline))
        if t < len(report.timeline):
            report.timeline[t]["chain"] = {
                "seq": ev["seq"],
                "tx": ev["tx"],
                "block": ev["block"],
                "ok": ev["root"] == snaps[i].root,
            }
    if roots_chk.ok and not events:
        roots_chk.skip(f"agent 0x{agent:064x} has committed no roots on this registry, so none were compared")
    elif roots_chk.ok:
        roots_chk.summary = f"on-chain roots 1..{len(events)} are the snapshots, in order"
    head = reg.head(agent, height)
    snap_roots = {s.root for s in snaps}
    if events and head != events[-1]["root"]:
        head_chk.fail(
            "the registry's head is not its last committed root",
            expected=format_root(events[-1]["root"]),
            computed=format_root(head),
        )
    elif head != ZERO and head not in snap_roots:
        head_chk.fail("the on-chain head is not a snapshot root", computed=format_root(head))
    elif events:
        at = timeline_at.get(snaps[len(events) - 1].commit) if len(events) <= len(snaps) else None
        which = f"snapshot #{at}'s" if at is not None else "a snapshot's"
        head_chk.summary = f"the on-chain head {format_root(head)[:27]}… is {which} root (chain sequence {len(events)})"
    else:
        head_chk.skip("no root committed yet, so there is no on-chain head to compare")
    report.pending = [s.commit for s in snaps[len(events) :]]
    _check_receipts(store, snaps, report, reg, events, timeline_at)
    history = _committer_history(reg, agent, from_block)
    everyone = [history[0]] if history[0] else []  # every address that ever could commit: each may anchor epochs
    check_epochs(
        store,
        snaps,
        report,
        reg,
        agent,
        height,
        from_block,
        everyone + [c for _, _, c, _ in history[1]],
        epoch_logs,
        mainline,
    )
    _check_committers(report, history, events, [timeline_at[s.commit] for s in snaps])
    check_chain_evidence(store, mainline, report, reg, agent, height, from_block, events)
    _check_signers(report, history, events, [timeline_at[s.commit] for s in snaps], signed)
    return True


def _check_receipts(
    store: gs.GitStore,
    snaps: list[gs.Snapshot],
    report: Report,
    reg: Any,
    events: list[dict[str, Any]],
    number: Mapping[str, int],
) -> None:
    """Each well-formed receipt against the registry: its event (by seq) holds exactly what the note
    claims, and its block is still canonical. Malformed notes are the offline ``receipts`` check's FAIL."""
    chk = report.check("chain.receipts")
    receipts = {**read_receipts(store, UNVERIFIED_REF), **read_receipts(store)}
    mine = (reg.address.lower(), report.chain["agent"] if report.chain else "")
    receipts = {c: n for c, n in receipts.items() if (n["registry"].lower(), n["agent"]) == mine}
    if not receipts:
        chk.skip(
            "no receipts for this registry and agent in this repository, so none were checked "
            "(fetch refs/notes/ledger-chain)"
        )
        return
    by_seq = {e["seq"]: e for e in events}
    hashes: dict[int, str | None] = {}
    for commit, note in sorted(receipts.items(), key=lambda kv: kv[1]["seq"]):
        i = number.get(commit)  # the snapshot's number, mainline or not anchored alike
        label = f"receipt of snapshot {commit[:12]}" + (f" (#{i})" if i is not None else " (not in the lineage)")
        where = {"snapshot": commit, "index": i}
        block = note["block"]
        if block not in hashes:
            hashes[block] = reg.block_hash(block)
        ev = by_seq.get(note["seq"])
        if hashes[block] != note["block_hash"]:
            chk.fail(
                f"{label}: block {block} is no longer canonical (reorganized away)",
                expected=note["block_hash"],
                computed=hashes[block] or "no such block",
                **where,
            )
            continue
        if ev is None:
            chk.fail(
                f"{label}: chain sequence {note['seq']} is not among the registry's events for this agent", **where
            )
            continue
        for key, theirs in (
            ("tx", ev["tx"]),
            ("block", ev["block"]),
            ("block_hash", ev["block_hash"]),
            ("log_index", ev["log_index"]),
            ("root", format_root(ev["root"])),
            ("committer", ev["committer"]),
            ("chain_id", reg.chain_id),
        ):
            ours = note[key].lower() if isinstance(note[key], str) else note[key]
            if ours != (theirs.lower() if isinstance(theirs, str) else theirs):
                chk.fail(
                    f"{label}: its {key} is not chain sequence {note['seq']}'s",
                    expected=str(theirs),
                    computed=str(note[key]),
                    **where,
                )
                break
    if chk.ok:
        chk.summary = f"{len(receipts)} receipt(s) match the registry's events, in canonical blocks"


def _committer_history(reg: Any, agent: int, from_block: int) -> tuple[str | None, list[tuple[int, int, str, bool]]]:
    """The agent's owner (``AgentRegistered``) and every ``CommitterSet`` change, by (block, log index)."""
    topic = word(agent, "uint256")
    registered = [decode_committer_log(lg) for lg in reg.logs([AGENT_REGISTERED, topic], from_block)]
    owner = min(registered)[2] if registered else None
    changes = sorted(decode_committer_log(lg) for lg in reg.logs([COMMITTER_SET, topic], from_block))
    return owner, changes


def _allowed(history: tuple[str | None, list[tuple[int, int, str, bool]]], who: str, at: tuple[float, float]) -> bool:
    owner, changes = history
    allowed = owner is not None and who.lower() == owner.lower()
    for block, index, committer, ok in changes:
        if (block, index) > at:
            break
        if committer.lower() == who.lower():
            allowed = ok
    return allowed


def _check_committers(
    report: Report,
    history: tuple[str | None, list[tuple[int, int, str, bool]]],
    events: list[dict[str, Any]],
    number: list[int],
) -> None:
    """Replay AgentRegistered/CommitterSet events to know who could commit at each root."""
    chk = report.check("chain.committers")
    if history[0] is None:
        chk.fail("the agent was never registered on this registry")
        return
    for ev in events:
        if not _allowed(history, ev["committer"], (ev["block"], ev["log_index"])):
            chk.fail(
                f"chain sequence {ev['seq']}: committer {ev['committer']} was not authorized at block {ev['block']}",
                index=number[ev["seq"] - 1] if ev["seq"] - 1 < len(number) else None,
            )
    if chk.ok:
        chk.summary = f"all {len(events)} root(s) were committed by the owner or an authorized key"


def _check_signers(
    report: Report,
    history: tuple[str | None, list[tuple[int, int, str, bool]]],
    events: list[dict[str, Any]],
    anchored_at: list[int],
    signed: Sequence[Signed],
) -> None:
    """docs/lineage.md §8.5: each agent key that signed a snapshot could commit for the agent when the
    chain first recorded it (the event anchoring it or, for a root equal to its parent's, the next
    one), or at the chain's head for a snapshot not yet anchored."""
    chk = report.check("chain.signers")
    agents = [s for s in signed if s.role == "agent"]
    if not agents:
        chk.skip("no snapshot is signed by an agent key, so no signer was compared with the committers")
        return
    for s in agents:
        k = bisect.bisect_left(anchored_at, s.index)  # the first anchored snapshot at or after this one
        at: tuple[float, float] = (events[k]["block"], events[k]["log_index"]) if k < len(events) else (inf, inf)
        if not _allowed(history, s.address, at):
            where = f"block {events[k]['block']} (chain sequence {events[k]['seq']})" if k < len(events) else "the head"
            chk.fail(
                f"snapshot #{s.index} ({s.commit[:12]}) is signed by agent key {s.address}, which was not a "
                f"committer of the agent at {where} (the owner runs 'ledger chain authorize {s.address}')",
                snapshot=s.commit,
                index=s.index,
            )
    if chk.ok:
        chk.summary = f"{len(agents)} agent-signed snapshot(s), each by a key that could commit for the agent"
