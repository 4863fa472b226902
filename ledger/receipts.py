"""On-chain receipts, attached to snapshots as git notes (``refs/notes/ledger-chain``).

Notes leave snapshot ids unchanged, travel with ``git fetch refs/notes/*``, and
are written through the same object writer and compare-and-swap ref update as
snapshots.  One note per snapshot commit, a JSON document::

    {"chain_id", "registry", "agent", "seq", "tx", "block", "block_hash", "log_index", "committer"}
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledger._env import child_env
from ledger._quick import NOTES_REF, PENDING_CACHE, pending_key
from ledger.gitstore import MODE_DIR, MODE_FILE, GitStore

__all__ = ["NOTES_REF", "local_pending", "merge_receipts", "pending_key", "read_receipts", "receipt_of",
           "remembered_pending", "write_receipts"]



def _notes_tree(store: GitStore, tree: bytes, prefix: str = "") -> dict[str, bytes]:
    """commit hex → note blob id, following git's fan-out directories (``ab/cdef…``)."""
    out: dict[str, bytes] = {}
    for sha, mode, name in store.read_tree(tree):
        if mode == MODE_DIR:
            out.update(_notes_tree(store, sha, prefix + name))
        else:
            out[prefix + name] = sha
    return out


def _current(store: GitStore) -> tuple[bytes | None, dict[str, bytes]]:
    head = store.read_ref(NOTES_REF)
    if head is None:
        return None, {}
    tree = store.read(head, b"commit").split(b"\n", 1)[0].split(b" ")[1]
    return head, _notes_tree(store, bytes.fromhex(tree.decode()))


def read_receipts(store: GitStore) -> dict[str, dict[str, Any]]:
    """Every recorded receipt, keyed by snapshot commit id (hex)."""
    _, notes = _current(store)
    return {commit: json.loads(store.read(blob, b"blob")) for commit, blob in notes.items()}


def write_receipts(store: GitStore, receipts: Mapping[str, Mapping[str, Any]]) -> None:
    """Add or replace receipts in one notes commit."""
    if not receipts:
        return
    head, notes = _current(store)
    for commit, doc in receipts.items():
        notes[commit] = store.write_blob(json.dumps(doc, sort_keys=True).encode() + b"\n")
    tree = store.write_tree([(blob, MODE_FILE, commit) for commit, blob in notes.items()])
    message = f"ledger: {len(receipts)} chain receipt(s)\n"
    new = store.write_commit(tree, [head] if head else [], message)
    store.move_ref(NOTES_REF, new, head)


def merge_receipts(store: GitStore, theirs: bytes) -> None:
    """Join another copy's receipts notes (commit ``theirs``, already in ``store``) into ours.

    Receipts are facts about the chain, so copies are joined, never replaced: the merge
    commit holds every receipt of both, ours where both hold one for the same snapshot
    (either can be checked against the chain).  It has both heads as parents, so a later
    push of ours is a fast-forward for the remote.
    """
    head, ours = _current(store)
    if head == theirs:
        return
    tree = store.read(theirs, b"commit").split(b"\n", 1)[0].split(b" ")[1]
    joined = {**_notes_tree(store, bytes.fromhex(tree.decode())), **ours}
    if head is None:
        store.move_ref(NOTES_REF, theirs, None)
        return
    if joined == ours and _reaches(store, head, theirs):
        return
    new_tree = store.write_tree([(blob, MODE_FILE, commit) for commit, blob in joined.items()])
    new = store.write_commit(new_tree, [head, theirs], "ledger: join chain receipts\n")
    store.move_ref(NOTES_REF, new, head)


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
    return json.loads(store.read(blob, b"blob")) if blob is not None else None


def remembered_pending(store: GitStore, control: Path, chain: Mapping[str, Any]) -> int:
    """:func:`local_pending` for the brain's chain settings, remembered until the head, the notes
    or the settings change, so ``ledger status`` on a committed brain spawns no git process."""
    head, notes = store.head(), store.read_ref(NOTES_REF)
    key = pending_key(head.hex() if head else "", notes.hex() if notes else "", chain)
    path = control / "cache" / PENDING_CACHE
    try:
        doc = json.loads(path.read_text())
        if doc.get("key") == key and isinstance(doc.get("pending"), int):
            return doc["pending"]
    except (OSError, ValueError, AttributeError):
        pass
    agent = chain.get("agent_id")
    count = local_pending(store, chain.get("registry"), int(agent, 16) if agent else None)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "pending": count}))
        os.replace(tmp, path)
    return count


def local_pending(store: GitStore, registry: str | None = None, agent: int | None = None) -> int:
    """Snapshots newer than the newest one with a chain receipt: what ``ledger commit`` would send,
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
            return True
        doc = json.loads(store.read(notes[commit], b"blob"))
        return (str(doc.get("registry", "")).lower(), doc.get("agent")) == want

    if counts(head.hex()):
        return 0
    # First-parent commit ids from git itself: parsing every snapshot in Python costs ~0.2 ms each.
    proc = subprocess.run(["git", f"--git-dir={store.git_dir}", "rev-list", "--first-parent", head.hex()],
                          capture_output=True, text=True, env=child_env())  # fmt: skip
    count = 0
    for commit in proc.stdout.split():
        if counts(commit):
            break
        count += 1
    return count
