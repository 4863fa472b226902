"""The evidence log's tree: outcome entries, append-only, in chunks beside the bundle.

A snapshot's top tree holds ``evidence/`` (docs/lineage/evidence.md §2) from its first outcome on:
files named by their chunk number in eight decimal digits (``00000000``, ``00000001``, …),
each holding :data:`CHUNK` entries, one per line (the entry's bytes and a line feed), the last
chunk from one to :data:`CHUNK`.  Appending rewrites the last chunk and adds new ones, so an
outcome costs one blob of at most a chunk, never the whole log.  Anything else under
``evidence/`` is refused: one log has one tree.

The log's root is the RFC 9162 tree hash of its entries (:mod:`ledger.protocol.tlog`); this
module only reads and writes the bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.errors import StoreError
from ledger.protocol.evidencelog import EvidenceLog
from ledger.store import gitstore as gs
from ledger.store.objectdb import MODE_DIR, MODE_FILE

__all__ = [
    "CHUNK",
    "EVIDENCE",
    "append",
    "chunk_ids",
    "evidence_tree",
    "has_evidence",
    "lines_of",
    "log_of",
    "read_entries",
    "size_of",
]

EVIDENCE = "evidence"  # the top-tree entry's name
CHUNK = 256  # entries per chunk file
MAX_CHUNKS = 10**8  # eight digits


def evidence_tree(store: gs.GitStore, top: bytes) -> bytes | None:
    """The ``evidence/`` tree id of a snapshot's top tree, or None when it has no outcome."""
    for sha, mode, name in store.read_tree(top):
        if name == EVIDENCE:
            if mode != MODE_DIR:
                raise StoreError(
                    "'evidence' in the snapshot is not a directory (see docs/lineage.md, 'The evidence log')"
                )
            return sha
    return None


def chunk_ids(store: gs.GitStore, tree: bytes) -> list[bytes]:
    """The blob ids of an ``evidence/`` tree's chunks, in order, its layout checked."""
    return _chunks(store, tree)


def lines_of(data: bytes, last: bool, index: int) -> list[bytes]:
    """The entries of chunk ``index``'s bytes (``last``: the log's last chunk, which may be short)."""
    return _lines(data, last, index)


def _chunks(store: gs.GitStore, tree: bytes) -> list[bytes]:
    listing = store.read_tree(tree)
    if not listing:
        raise StoreError("the evidence/ tree is empty; a log without entries has no tree")
    out = []
    for i, (sha, mode, name) in enumerate(sorted(listing, key=lambda e: e[2])):
        if name != f"{i:08d}" or mode != MODE_FILE:
            raise StoreError(
                f"evidence/{name} is not chunk {i:08d} (a regular file): the log's tree is "
                "chunks 00000000, 00000001, … and nothing else"
            )
        out.append(sha)
    return out


def _lines(data: bytes, last: bool, index: int) -> list[bytes]:
    if not data.endswith(b"\n"):
        raise StoreError(f"evidence chunk {index:08d} does not end with a line feed")
    lines = data[:-1].split(b"\n")
    if any(not line for line in lines):
        raise StoreError(f"evidence chunk {index:08d} holds an empty line")
    if len(lines) > CHUNK or (not last and len(lines) != CHUNK):
        raise StoreError(
            f"evidence chunk {index:08d} holds {len(lines)} entries; every chunk but the last "
            f"holds {CHUNK}, the last 1 to {CHUNK}"
        )
    return lines


def read_entries(store: gs.GitStore, top: bytes) -> list[bytes]:
    """Every entry of a snapshot's log, in order (empty when it has none), its layout checked."""
    tree = evidence_tree(store, top)
    if tree is None:
        return []
    return entries_of(store, tree)


def entries_of(store: gs.GitStore, tree: bytes) -> list[bytes]:
    """The entries of an ``evidence/`` tree."""
    shas = _chunks(store, tree)
    out: list[bytes] = []
    for i, data in enumerate(store.read_blobs(shas)):
        out.extend(_lines(data, i == len(shas) - 1, i))
    return out


def size_of(store: gs.GitStore, tree: bytes | None) -> int:
    """How many entries an ``evidence/`` tree holds, reading only its last chunk."""
    if tree is None:
        return 0
    shas = _chunks(store, tree)
    last = _lines(store.read(shas[-1], b"blob"), True, len(shas) - 1)
    return (len(shas) - 1) * CHUNK + len(last)


def append(store: gs.GitStore, tree: bytes | None, entries: Sequence[bytes]) -> bytes | None:
    """The ``evidence/`` tree after ``entries`` are appended to ``tree`` (None: an empty log)."""
    if not entries:
        return tree
    for entry in entries:
        if not entry or b"\n" in entry:
            raise StoreError("an evidence entry is one non-empty line")
    if tree is None:
        shas: list[bytes] = []
        tail: list[bytes] = []
    else:
        shas = _chunks(store, tree)
        tail = _lines(store.read(shas[-1], b"blob"), True, len(shas) - 1)
        shas.pop()
        if len(tail) == CHUNK:
            shas.append(store.write_blob(b"".join(line + b"\n" for line in tail)))
            tail = []
    pending = [*tail, *entries]
    for start in range(0, len(pending), CHUNK):
        shas.append(store.write_blob(b"".join(line + b"\n" for line in pending[start : start + CHUNK])))
    if len(shas) > MAX_CHUNKS:
        raise StoreError(f"an evidence log holds at most {MAX_CHUNKS * CHUNK} entries")
    return store.write_tree([(sha, MODE_FILE, f"{i:08d}") for i, sha in enumerate(shas)])


def has_evidence(store: gs.GitStore, tree: str) -> bool:
    """Whether a snapshot's top tree (hex) has ``evidence/``: one tree read, no entry read (``ledger
    commit`` says "nothing to commit" from the chain's head only for a head without one)."""
    return bool(tree) and any(name == EVIDENCE for _sha, _mode, name in store.read_tree(bytes.fromhex(tree)))


def log_of(store: gs.GitStore, snap: gs.Snapshot) -> EvidenceLog:
    """The evidence log a snapshot records (empty for one without ``evidence/``)."""
    return EvidenceLog(read_entries(store, bytes.fromhex(snap.tree)) if snap.tree else [])
