"""Epoch receipts and the operator's log travel with push, pull and clone (docs/lineage/epochs.md §6, §8).

Two refs go beside ``main`` and ``refs/notes/ledger-chain``:

- ``refs/notes/ledger-epochs`` (each brain's epoch receipts).  An epoch receipt carries its own
  evidence (the operator's certified checkpoint key, a signed checkpoint, an inclusion proof), so
  one arriving from another copy is taken once it verifies offline and sits on the snapshot of the
  fetched lineage its seq names (root, parent, agent), and, when this brain's chain answers, the chain
  confirms what no signature covers (``epoch``, ``tx``, ``block``); one that fails is refused and named.
  Nothing but ``chain.epochs`` counts an epoch receipt as anchored, and it checks all again.  Notes are joined as
  the direct receipts are: ours kept, a commit with both heads as parents, a tree of checked ones.
- ``refs/notes/ledger-epoch-evidence`` (each brain's evidence epoch receipts): the same, save that a
  receipt sits on a mainline snapshot whose root is its entry's head and whose evidence log is exactly
  the entry's (size, root).
- ``refs/ledger/epochs`` (an operator's log).  A log only grows: a copy is taken when it is a
  fast-forward of ours that keeps every anchored epoch and its entries byte for byte, and a copy
  that rewrites one, in git or in content, is refused before anything moves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.audit.epochs import anchored_event
from ledger.audit.refs import epoch_receipt, evidence_receipt, log_keeps
from ledger.chain import epochlog
from ledger.chain.config import ChainConfig
from ledger.chain.receipts import join_receipts, notes_of, read_notes
from ledger.chain.registry import Registry
from ledger.errors import ChainError, LedgerError, StoreError
from ledger.protocol.receipts import anchored
from ledger.protocol.refs import BRANCH, EPOCH_NOTES_REF, EPOCHS_REF, EVIDENCE_NOTES_REF
from ledger.protocol.refs import INCOMING_EPOCH_EVIDENCE as _INCOMING_EVIDENCE
from ledger.protocol.refs import INCOMING_EPOCH_NOTES as _INCOMING_NOTES
from ledger.protocol.refs import INCOMING_EPOCHS as _INCOMING_LOG
from ledger.store import gitstore as gs
from ledger.store.git import WHOLE, Git

__all__ = ["check_log", "differs", "on_chain", "push_specs", "receipt_problems", "take_log", "take_receipts"]


def _ref(git_dir: Path, ref: str) -> bytes | None:
    with gs.GitStore(git_dir) as store:
        return store.read_ref(ref)


# ------------------------------------------------------------------ the operator's log


def check_log(store: gs.GitStore, q: Path, remote: str) -> bytes | None:
    """The fetched copy ``q``'s log commit when it should replace ours (a fast-forward that keeps what ours
    anchored), None when there is nothing to take; raises when either side rewrites the other.

    Run before anything moves, on push and pull alike, so a rewritten log is refused from a peer and never
    offered to one; the caller leaves the log where it is on both sides and takes the rest (docs/adr/0027).
    ``q`` borrows ``store``'s objects, so both logs are readable there."""
    theirs = _ref(q, EPOCHS_REF)
    if theirs is None:
        return None
    ours = store.read_ref(EPOCHS_REF)
    if ours == theirs:
        return None
    try:
        with gs.GitStore(q) as qs:
            new = epochlog.read_local(qs)
        old = epochlog.read_local(store) if ours is not None else None
    except LedgerError as exc:
        raise StoreError(
            f"the operator's epoch log ({EPOCHS_REF}) of {remote!r} or of this brain is malformed, so "
            f"the log was neither taken nor published: {exc.message}",
            hint=f"'ledger audit {remote}' "
            "names what is wrong; the owner of the bad copy restores it from one that is whole",
        ) from exc
    if old is None:
        return theirs
    if Git(q).is_ancestor(ours, theirs):  # type: ignore[arg-type]
        why, grown, base, taker = log_keeps(old, new), theirs, "this brain's", "the remote"
    elif Git(q).is_ancestor(theirs, ours):  # type: ignore[arg-type]
        why, grown, base, taker = log_keeps(new, old), None, "the remote's", "this brain"
    else:
        why, grown, base, taker = "neither log extends the other (a non-fast-forward)", None, "", ""
    if why is None:
        return grown
    side = f"{taker}'s log rewrites {base}" if taker else "the two logs have diverged"
    raise StoreError(
        f"refusing the epoch log of {remote!r}: an operator's epoch log ({EPOCHS_REF}) only grows, but {side}: "
        f"{why}; the log was neither taken nor published",
        hint="keep the copy whose log the chain holds ('ledger audit --rpc' replays it); the other copy's owner "
        f"restores {EPOCHS_REF} from it (git fetch REMOTE +{EPOCHS_REF}:{EPOCHS_REF}) before anchoring again",
    )


def take_log(store: gs.GitStore, q: Path, theirs: bytes) -> None:
    """Bring the log commit ``theirs`` (checked by :func:`check_log`) from ``q`` into ``store``, by
    compare-and-swap on the log as it was checked."""
    ours = store.read_ref(EPOCHS_REF)
    Git(store.git_dir).fetch(str(q), f"+{EPOCHS_REF}:{_INCOMING_LOG}", what="taking the fetched epoch log")
    try:
        store.move_ref(EPOCHS_REF, theirs, ours)
    finally:
        Git(store.git_dir).run("update-ref", "-d", _INCOMING_LOG, what="cleaning up")


# ------------------------------------------------------------------ epoch receipts


def _lineage(store: gs.GitStore, q: Path, everything: bool = False) -> list[gs.Snapshot]:
    """The fetched lineage's anchored snapshots, oldest first (seq k is item k - 1), or with ``everything`` its
    whole mainline; read from ``store``, which holds the fetched ``main`` already."""
    head = _ref(q, BRANCH)
    if head is None:
        return []
    commits = Git(q).run(
        "rev-list", "--first-parent", "--reverse", head.hex(), timeout=WHOLE, what="reading the fetched lineage"
    )
    snaps = []
    for commit in commits.decode().split():
        try:
            snaps.append(store.snapshot(bytes.fromhex(commit)))
        except (StoreError, ValueError):
            continue  # not a snapshot: the audit names it; no receipt can sit on it
    return snaps if everything else anchored(snaps)


def receipt_problems(data: bytes, commit: str, snaps: list[gs.Snapshot], agent: int | None) -> str | None:
    """Why the epoch receipt ``data`` on snapshot ``commit`` is refused, checked without a chain; None if not."""
    return epoch_receipt(data, commit, snaps, agent)[1]


def on_chain(cfg: ChainConfig | None, checked: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, str]:
    """Each offline-checked receipt → "ok" when this brain's chain confirms what the operator did not sign (the
    epoch's size and root, its ``EpochAnchored`` event's ``tx`` and ``block``, the operator a committer then),
    "unknown" when it cannot be asked (no chain configured, the RPC down), else why
    not.  Only refusals come of it: an unknown receipt is taken on its offline check (E.6)."""
    if not checked or cfg is None or not cfg.registry:
        return dict.fromkeys(checked, "unknown")
    out = dict.fromkeys(checked, "unknown")
    try:
        reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
        for commit, (doc, facts) in checked.items():
            if doc["registry"].lower() != str(reg.address).lower() or doc["chain_id"] != reg.chain_id:
                out[commit] = (
                    f"names registry {doc['registry']} on chain {doc['chain_id']}, not this brain's "
                    f"{reg.address} on chain {reg.chain_id}"
                )
                continue
            operator, n = facts["operator"], facts["epoch"]
            if reg.epoch(operator, n) != (facts["size"], facts["tree_root"]):
                out[commit] = f"names epoch {n} of {operator}, which the chain does not hold with its checkpoint"
                continue
            event = anchored_event(reg, operator, n, cfg.deploy_block or 0, "latest")
            if event is None or (event["tx"], event["block"]) != (doc["tx"].lower(), doc["block"]):
                out[commit] = f"names tx {doc['tx'][:12]}… block {doc['block']}, not epoch {n}'s EpochAnchored event"
            elif not reg.is_committer(facts["agent"], operator, event["block"]):
                out[commit] = f"{operator} could not commit for agent {facts['agent']:#x} when it anchored epoch {n}"
            else:
                out[commit] = "ok"
    except ChainError:
        pass  # what is left unknown is taken on its offline check; 'ledger audit --rpc' asks again
    return out


def _take_evidence(store: gs.GitStore, q: Path, agent: int | None, cfg: ChainConfig | None) -> dict[str, Any] | None:
    """:func:`take_receipts` for ``refs/notes/ledger-epoch-evidence``."""
    notes = _ref(q, EVIDENCE_NOTES_REF)
    if notes is None:
        return None
    Git(store.git_dir).fetch(
        str(q), f"+{EVIDENCE_NOTES_REF}:{_INCOMING_EVIDENCE}", what="taking the fetched evidence receipts"
    )
    try:
        ours = read_notes(store, EVIDENCE_NOTES_REF)
        incoming = {c: blob for c, blob in notes_of(store, notes).items() if c not in ours}
        mainline = _lineage(store, q, everything=True) if incoming else []
        checked: dict[str, Any] = {}
        refused: list[str] = []
        for commit, blob in sorted(incoming.items()):
            held, why = evidence_receipt(store.read(blob, b"blob"), commit, mainline, store, agent)
            if why is None:
                checked[commit] = held
            else:
                refused.append(f"{commit[:12]}: evidence receipt {why}")
        verdicts = on_chain(cfg, checked)
        refused += [
            f"{c[:12]}: evidence receipt {why}" for c, why in sorted(verdicts.items()) if why not in ("ok", "unknown")
        ]
        taken = {c: incoming[c] for c, why in verdicts.items() if why in ("ok", "unknown")}
        join_receipts(store, notes, taken, ref=EVIDENCE_NOTES_REF)
    finally:
        Git(store.git_dir).run("update-ref", "-d", _INCOMING_EVIDENCE, what="cleaning up")
    return {"taken": len(taken), "refused": refused}


def take_receipts(
    store: gs.GitStore, q: Path, agent: int | None, cfg: ChainConfig | None = None
) -> dict[str, Any] | None:
    """Take the epoch receipts (head and evidence) of the fetched copy ``q`` that hold up; None when it holds none.

    ``store`` must hold the fetched ``main`` already; ``cfg`` is this brain's chain, asked when it answers
    (:func:`on_chain`).  Returns ``{"taken": n, "refused": ["commit: why", …]}``; a refused receipt changes
    nothing, and ours are kept where both copies hold one."""
    heads = _take_heads(store, q, agent, cfg)
    evidence = _take_evidence(store, q, agent, cfg)
    if heads is None or evidence is None:
        return heads or evidence
    return {"taken": heads["taken"] + evidence["taken"], "refused": heads["refused"] + evidence["refused"]}


def _take_heads(store: gs.GitStore, q: Path, agent: int | None, cfg: ChainConfig | None) -> dict[str, Any] | None:
    notes = _ref(q, EPOCH_NOTES_REF)
    if notes is None:
        return None
    Git(store.git_dir).fetch(str(q), f"+{EPOCH_NOTES_REF}:{_INCOMING_NOTES}", what="taking the fetched epoch receipts")
    try:
        ours = read_notes(store, EPOCH_NOTES_REF)
        incoming = {c: blob for c, blob in notes_of(store, notes).items() if c not in ours}
        snaps = _lineage(store, q) if incoming else []
        checked: dict[str, Any] = {}
        refused: list[str] = []
        for commit, blob in sorted(incoming.items()):
            held, why = epoch_receipt(store.read(blob, b"blob"), commit, snaps, agent)
            if why is None:
                checked[commit] = held
            else:
                refused.append(f"{commit[:12]}: {why}")
        verdicts = on_chain(cfg, checked)
        refused += [f"{c[:12]}: {why}" for c, why in sorted(verdicts.items()) if why not in ("ok", "unknown")]
        taken = {c: incoming[c] for c, why in verdicts.items() if why in ("ok", "unknown")}
        join_receipts(store, notes, taken, ref=EPOCH_NOTES_REF)
    finally:
        Git(store.git_dir).run("update-ref", "-d", _INCOMING_NOTES, what="cleaning up")
    return {"taken": len(taken), "refused": refused}


def differs(local: gs.GitStore, remote_refs: dict[str, str]) -> bool:
    """Whether the remote's epoch receipts or log are not this brain's (a push then fetches them first)."""
    for ref in (EPOCH_NOTES_REF, EVIDENCE_NOTES_REF, EPOCHS_REF):
        mine = local.read_ref(ref)
        if ref in remote_refs and remote_refs[ref] != (mine.hex() if mine else None):
            return True
    return False


def push_specs(local: gs.GitStore) -> dict[str, str]:
    """ref → commit hex of what a push publishes beside ``main`` and the chain receipts, when present."""
    out = {}
    for ref in (EPOCH_NOTES_REF, EVIDENCE_NOTES_REF, EPOCHS_REF):
        mine = local.read_ref(ref)
        if mine is not None:
            out[ref] = mine.hex()
    return out
