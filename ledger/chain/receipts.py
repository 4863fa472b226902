"""On-chain receipts, attached to snapshots as git notes (``refs/notes/ledger-chain``).

Notes leave snapshot ids unchanged, travel with ``git fetch refs/notes/*``, and
are written through the same object writer and compare-and-swap ref update as
snapshots.  One note per snapshot commit, a JSON document::

    {"chain_id", "registry", "agent", "seq", "root", "tx", "block", "block_hash", "log_index", "committer"}

A receipt is a claim about the chain, so none is believed on arrival (docs/lineage.md,
"Receipts"). :func:`ledger.protocol.receipts.note_problems` checks what needs no chain: the fields, that the note
sits on a snapshot of the lineage, that its root is that snapshot's root, and that its
seq is the snapshot's position. Receipts that arrive from another copy and cannot be
checked against the chain are kept apart under :data:`UNVERIFIED_REF`, and never count
as anchored; ``ledger chain anchor`` rebuilds receipts from the chain's own events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledger._fs import PENDING
from ledger.protocol.receipts import parse_note
from ledger.protocol.refs import NOTES_REF
from ledger.store.git import WHOLE, Git
from ledger.store.gitstore import MODE_DIR, MODE_FILE, GitStore
from ledger.store.refs import pending_key
from ledger.store.state import State

__all__ = [
    "join_receipts",
    "local_pending",
    "notes_of",
    "pending_key",
    "read_notes",
    "read_receipts",
    "receipt_of",
    "remembered_pending",
    "write_receipts",
]


def _notes_tree(store: GitStore, tree: bytes, prefix: str = "") -> dict[str, bytes]:
    """commit hex → note blob id, following git's fan-out directories (``ab/cdef…``)."""
    out: dict[str, bytes] = {}
    for sha, mode, name in store.read_tree(tree):
        if mode == MODE_DIR:
            out.update(_notes_tree(store, sha, prefix + name))
        else:
            out[prefix + name] = sha
    return out


def _current(store: GitStore, ref: str = NOTES_REF) -> tuple[bytes | None, dict[str, bytes]]:
    head = store.read_ref(ref)
    if head is None:
        return None, {}
    tree = store.read(head, b"commit").split(b"\n", 1)[0].split(b" ")[1]
    return head, _notes_tree(store, bytes.fromhex(tree.decode()))


def read_notes(store: GitStore, ref: str = NOTES_REF) -> dict[str, bytes]:
    """Every note under ``ref`` as raw bytes, keyed by snapshot commit id (hex): for checking."""
    _, notes = _current(store, ref)
    return {commit: store.read(blob, b"blob") for commit, blob in notes.items()}


def read_receipts(store: GitStore, ref: str = NOTES_REF) -> dict[str, dict[str, Any]]:
    """Every well-formed receipt, keyed by snapshot commit id (hex); a malformed note is left out
    (``ledger audit`` names it)."""
    out = {}
    for commit, data in read_notes(store, ref).items():
        doc, _ = parse_note(data)
        if doc is not None:
            out[commit] = doc
    return out


def write_receipts(store: GitStore, receipts: Mapping[str, Mapping[str, Any]], ref: str = NOTES_REF) -> None:
    """Add or replace receipts in one notes commit."""
    if not receipts:
        return
    head, notes = _current(store, ref)
    for commit, doc in receipts.items():
        notes[commit] = store.write_blob(json.dumps(doc, sort_keys=True).encode() + b"\n")
    tree = store.write_tree([(blob, MODE_FILE, commit) for commit, blob in notes.items()])
    message = f"ledger: {len(receipts)} chain receipt(s)\n"
    new = store.write_commit(tree, [head] if head else [], message)
    store.move_ref(ref, new, head)


def join_receipts(store: GitStore, theirs: bytes, taken: Mapping[str, bytes], ref: str = NOTES_REF) -> None:
    """Record ``taken`` (commit hex → note blob id, checked by the caller) from another copy's notes
    commit ``theirs`` (already in ``store``) under ``ref`` (the direct receipts, or the epoch receipts).

    Ours are kept where both hold one. The new notes commit has both heads as parents, so
    a later push of ours is a fast-forward for the remote; its tree holds only what was
    checked, so a receipt that was not is never passed on as ours.
    """
    head, ours = _current(store, ref)
    if head == theirs:
        return
    joined = {**taken, **ours}
    if head is None and set(joined) == set(notes_of(store, theirs)):
        store.move_ref(ref, theirs, None)
        return
    if joined == ours and head is not None and _reaches(store, head, theirs):
        return
    new_tree = store.write_tree([(blob, MODE_FILE, commit) for commit, blob in joined.items()])
    new = store.write_commit(new_tree, [p for p in (head, theirs) if p], "ledger: join chain receipts\n")
    store.move_ref(ref, new, head)


def notes_of(store: GitStore, notes_commit: bytes) -> dict[str, bytes]:
    """The notes of one notes commit: snapshot commit hex → note blob id."""
    tree = store.read(notes_commit, b"commit").split(b"\n", 1)[0].split(b" ")[1]
    return _notes_tree(store, bytes.fromhex(tree.decode()))


def _reaches(store: GitStore, head: bytes, target: bytes) -> bool:
    """Whether ``target`` is ``head`` or one of its ancestors in the notes history."""
    seen, stack = set(), [head]
    while stack:
        commit = stack.pop()
        if commit == target:
            return True
        if commit in seen:
            continue
        seen.add(commit)
        header = store.read(commit, b"commit").split(b"\n\n", 1)[0]
        stack.extend(bytes.fromhex(ln[7:].decode()) for ln in header.split(b"\n") if ln.startswith(b"parent "))
    return False


def receipt_of(store: GitStore, commit: str) -> dict[str, Any] | None:
    """One snapshot's receipt (``commit`` in hex), reading only its note."""
    _, notes = _current(store)
    blob = notes.get(commit)
    return parse_note(store.read(blob, b"blob"))[0] if blob is not None else None


def remembered_pending(store: GitStore, control: Path, chain: Mapping[str, Any]) -> int:
    """:func:`local_pending` for the brain's chain settings, remembered until the head, the notes
    or the settings change, so ``ledger status`` on a committed brain spawns no git process."""
    head, notes = store.head(), store.read_ref(NOTES_REF)
    key = pending_key(head.hex() if head else "", notes.hex() if notes else "", chain)
    state = State(control)
    kept = state.read_json(
        PENDING, lambda doc: doc["pending"] if doc.get("key") == key and type(doc.get("pending")) is int else None
    )
    if kept is not None:
        return kept
    agent = chain.get("agent_id")
    count = local_pending(store, chain.get("registry"), int(agent, 16) if agent else None)
    state.write_json(PENDING, {"key": key, "pending": count})
    return count


def local_pending(store: GitStore, registry: str | None = None, agent: int | None = None) -> int:
    """Snapshots newer than the newest one with a chain receipt: what ``ledger chain anchor`` would send,
    as far as this copy knows (``ledger chain status`` asks the chain).

    With ``registry`` and ``agent``, only receipts from that registry and agent count, so
    receipts of a registry replaced by ``chain deploy --force`` are not taken for this one's.
    Notes are read lazily, newest snapshot first: a brain whose head has its receipt
    reads one.
    """
    head = store.head()
    if head is None:
        return 0
    _, notes = _current(store)
    want = (registry.lower(), f"0x{agent or 0:064x}") if registry is not None else None

    def counts(commit: str) -> bool:
        if commit not in notes:
            return False
        if want is None:
            return parse_note(store.read(notes[commit], b"blob"))[0] is not None
        doc, _ = parse_note(store.read(notes[commit], b"blob"))
        return doc is not None and (doc["registry"].lower(), doc["agent"]) == want

    if counts(head.hex()):
        return 0
    # First-parent commits with their root trailers from git itself: parsing every snapshot in
    # Python costs ~0.2 ms each. A snapshot whose root equals its parent's is never anchored.
    trailers = ("Ledger-Root", "Ledger-Parent-Root")
    fmt = "%H " + " ".join(f"%(trailers:key={k},valueonly,separator=%x20)" for k in trailers)
    proc = Git(store.git_dir).call("log", "--first-parent", f"--format={fmt}", head.hex(), timeout=WHOLE)
    count = 0
    for line in proc.stdout.decode().splitlines():
        commit, _, roots = line.partition(" ")
        if counts(commit):
            break
        root, _, parent = roots.partition(" ")
        count += root.strip() != parent.strip()
    return count
