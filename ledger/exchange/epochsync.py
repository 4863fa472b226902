"""Epoch receipts and the operator's log travel with push, pull and clone (docs/_draft-epochs.md E.11).

Two refs go beside ``main`` and ``refs/notes/ledger-chain``:

- ``refs/notes/ledger-epochs`` (each brain's epoch receipts).  An epoch receipt carries its own
  evidence (the operator's certified checkpoint key, a signed checkpoint, an inclusion proof), so
  one arriving from another copy is taken once it verifies offline and sits on the snapshot of the
  fetched lineage its seq names (root, parent, agent); one that fails is refused and named.  Its
  unsigned fields (``epoch``, ``tx``, ``block``, ``log``) are claims that only ``chain.epochs``
  confirms, and nothing but that audit counts an epoch receipt as anchored.  Notes are joined as
  the direct receipts are: ours kept, a commit with both heads as parents, a tree of checked ones.
- ``refs/ledger/epochs`` (an operator's log).  A log only grows: a copy is taken when it is a
  fast-forward of ours that keeps every anchored epoch and its entries byte for byte, and a copy
  that rewrites one, in git or in content, is refused before anything moves.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from ledger._env import child_env
from ledger.chain import epochlog, epochproof
from ledger.chain.epochlog import EPOCH_NOTES_REF, EPOCHS_REF
from ledger.chain.receipts import anchored, join_receipts, notes_of, read_notes
from ledger.errors import LedgerError, StoreError
from ledger.store import gitstore as gs

__all__ = ["EPOCHS_REF", "EPOCH_NOTES_REF", "check_log", "differs", "push_specs", "receipt_problems", "take_log",
           "take_receipts"]  # fmt: skip
_INCOMING_NOTES = "refs/ledger/incoming-epoch-notes"
_INCOMING_LOG = "refs/ledger/incoming-epochs"
ZERO = b"\x00" * 32


def _git(git_dir: Path, *args: str, what: str) -> str:
    proc = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, env=child_env(),
                          timeout=600)  # fmt: skip
    if proc.returncode != 0:
        raise StoreError(f"{what}: {(proc.stderr.strip().splitlines() or ['git failed'])[-1]}")
    return proc.stdout


def _ref(git_dir: Path, ref: str) -> bytes | None:
    with gs.GitStore(git_dir) as store:
        return store.read_ref(ref)


# ------------------------------------------------------------------ the operator's log


def _is_ancestor(git_dir: Path, old: bytes, new: bytes) -> bool:
    proc = subprocess.run(["git", f"--git-dir={git_dir}", "merge-base", "--is-ancestor", old.hex(), new.hex()],
                          capture_output=True, env=child_env(), timeout=120)  # fmt: skip
    return proc.returncode == 0


def _keeps(old: epochlog.EpochLog, new: epochlog.EpochLog) -> str | None:
    """Why ``new`` is not ``old`` grown (None when it is): every anchored epoch of ``old`` (``tx`` set) must be in
    ``new`` unchanged, with the entries it covers.  A pending last epoch may be settled or dropped (E.8)."""
    if old.header and new.header != old.header:
        return "its header (origin, operator, checkpoint key) is not the one before"
    done = [ep for ep in old.epochs if ep.get("tx") is not None]
    for ep in done:
        n = ep["epoch"]
        if len(new.epochs) < n or new.epochs[n - 1] != ep:
            return f"its epoch {n} is not the anchored epoch {n} it had"
    size = done[-1]["size"] if done else 0
    if new.entries[:size] != old.entries[:size]:
        return f"its first {size} entries, which anchored epochs cover, are not the ones it had"
    return None


def check_log(store: gs.GitStore, q: Path, remote: str) -> bytes | None:
    """The fetched copy ``q``'s log commit when it should replace ours (a fast-forward that keeps what ours
    anchored), None when there is nothing to take; raises when either side rewrites the other.

    Run before anything moves, on push and pull alike, so a rewritten log is refused from a peer and never
    offered to one.  ``q`` borrows ``store``'s objects, so both logs are readable there."""
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
        raise StoreError(f"the operator's epoch log ({EPOCHS_REF}) of {remote!r} or of this brain is malformed, so "
                         f"nothing was taken: {exc.message}", hint=f"'ledger audit {remote}' with --rpc names what "
                         "is wrong; the owner of the bad copy restores it from one that is whole") from exc  # fmt: skip
    if old is None:
        return theirs
    if _is_ancestor(q, ours, theirs):  # type: ignore[arg-type]
        why, grown, base, taker = _keeps(old, new), theirs, "this brain's", "the remote"
    elif _is_ancestor(q, theirs, ours):  # type: ignore[arg-type]
        why, grown, base, taker = _keeps(new, old), None, "the remote's", "this brain"
    else:
        why, grown, base, taker = "neither log extends the other (a non-fast-forward)", None, "", ""
    if why is None:
        return grown
    side = f"{taker}'s log rewrites {base}" if taker else "the two logs have diverged"
    raise StoreError(
        f"refusing {remote!r}: an operator's epoch log ({EPOCHS_REF}) only grows, but {side}: {why}; nothing was "
        "taken or published",
        hint="keep the copy whose log the chain holds ('ledger audit --rpc' replays it); the other copy's owner "
             f"restores {EPOCHS_REF} from it (git fetch REMOTE +{EPOCHS_REF}:{EPOCHS_REF}) before anchoring again",
    )  # fmt: skip


def take_log(store: gs.GitStore, q: Path, theirs: bytes) -> None:
    """Bring the log commit ``theirs`` (checked by :func:`check_log`) from ``q`` into ``store``, by
    compare-and-swap on the log as it was checked."""
    ours = store.read_ref(EPOCHS_REF)
    _git(store.git_dir, "fetch", "-q", "--no-write-fetch-head", "--", str(q), f"+{EPOCHS_REF}:{_INCOMING_LOG}",
         what="taking the fetched epoch log")  # fmt: skip
    try:
        store.move_ref(EPOCHS_REF, theirs, ours)
    finally:
        _git(store.git_dir, "update-ref", "-d", _INCOMING_LOG, what="cleaning up")


# ------------------------------------------------------------------ epoch receipts


def _lineage(store: gs.GitStore, q: Path) -> list[gs.Snapshot]:
    """The fetched lineage's anchored snapshots, oldest first (seq k is item k - 1); read from ``store``,
    which holds the fetched ``main`` already."""
    head = _ref(q, "refs/heads/main")
    if head is None:
        return []
    commits = _git(q, "rev-list", "--first-parent", "--reverse", head.hex(), what="reading the fetched lineage")
    snaps = []
    for commit in commits.split():
        try:
            snaps.append(store.snapshot(bytes.fromhex(commit)))
        except (StoreError, ValueError):
            continue  # not a snapshot: the audit names it; no receipt can sit on it
    return anchored(snaps)


def receipt_problems(data: bytes, commit: str, snaps: list[gs.Snapshot], agent: int | None) -> str | None:
    """Why the epoch receipt ``data`` on snapshot ``commit`` is refused, checked without a chain; None if not.

    It must verify offline (E.6) and name the snapshot it sits on: its agent (when this brain knows its own),
    its seq (the snapshot's position among the anchored ones), its root, and as parent the root before."""
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict):
            return "is not a JSON object"
        facts = epochproof.verify_offline(doc)
    except ValueError as exc:
        return f"is not JSON ({exc})"
    except LedgerError as exc:
        return f"does not verify offline: {exc.message}"
    position = {s.commit: i for i, s in enumerate(snaps)}
    i = position.get(commit)
    if i is None:
        return "sits on a commit that is not an anchored snapshot of the lineage"
    if agent is not None and facts["agent"] != agent:
        return f"names agent {facts['agent']:#x}, not this brain's {agent:#x}"
    if facts["seq"] != i + 1 or facts["root"] != snaps[i].root:
        return f"names seq {facts['seq']} and its root, but that snapshot is anchored as seq {i + 1}"
    if facts["parent"] != (snaps[i - 1].root if i else ZERO):
        return "names a parent that is not the root of the snapshot before"
    return None


def take_receipts(store: gs.GitStore, q: Path, agent: int | None) -> dict[str, Any] | None:
    """Take the epoch receipts of the fetched copy ``q`` that verify; None when it holds none.

    ``store`` must hold the fetched ``main`` already.  Returns ``{"taken": n, "refused": ["commit: why", …]}``;
    a refused receipt changes nothing, and ours are kept where both copies hold one."""
    notes = _ref(q, EPOCH_NOTES_REF)
    if notes is None:
        return None
    _git(store.git_dir, "fetch", "-q", "--no-write-fetch-head", "--", str(q), f"+{EPOCH_NOTES_REF}:{_INCOMING_NOTES}",
         what="taking the fetched epoch receipts")  # fmt: skip
    try:
        ours = read_notes(store, EPOCH_NOTES_REF)
        incoming = {c: blob for c, blob in notes_of(store, notes).items() if c not in ours}
        snaps = _lineage(store, q) if incoming else []
        taken: dict[str, bytes] = {}
        refused: list[str] = []
        for commit, blob in sorted(incoming.items()):
            why = receipt_problems(store.read(blob, b"blob"), commit, snaps, agent)
            if why is None:
                taken[commit] = blob
            else:
                refused.append(f"{commit[:12]}: {why}")
        join_receipts(store, notes, taken, ref=EPOCH_NOTES_REF)
    finally:
        _git(store.git_dir, "update-ref", "-d", _INCOMING_NOTES, what="cleaning up")
    return {"taken": len(taken), "refused": refused}


def differs(local: gs.GitStore, remote_refs: dict[str, str]) -> bool:
    """Whether the remote's epoch receipts or log are not this brain's (a push then fetches them first)."""
    for ref in (EPOCH_NOTES_REF, EPOCHS_REF):
        mine = local.read_ref(ref)
        if ref in remote_refs and remote_refs[ref] != (mine.hex() if mine else None):
            return True
    return False


def push_specs(local: gs.GitStore) -> dict[str, str]:
    """ref → commit hex of what a push publishes beside ``main`` and the chain receipts, when present."""
    out = {}
    for ref in (EPOCH_NOTES_REF, EPOCHS_REF):
        mine = local.read_ref(ref)
        if mine is not None:
            out[ref] = mine.hex()
    return out
