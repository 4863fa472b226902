"""An operator's epoch log in bytes: its entries file and ``log.json``, read strictly (docs/lineage.md "Epochs").

``entries`` holds every entry so far, 104 bytes each (:func:`ledger.protocol.tlog.entry`), in log
order; once the log holds an evidence entry (105 bytes, :mod:`ledger.protocol.epochevidence`),
``entries-v2`` instead: each entry preceded by its length as one byte (104 or 105), so a reader that
knows only heads refuses the log rather than misreading it.  ``log.json`` holds the origin, the chain
and operator, the checkpoint key and its certification, and each epoch's ``size``, ``root`` (hex),
checkpoint (a signed note), ``tx`` and ``block``.  :mod:`ledger.chain.epochlog` keeps the log under
``refs/ledger/epochs`` and fetches an operator's copy; this module is what both read and write.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ledger.errors import ChainError
from ledger.protocol.epochevidence import EVIDENCE_ENTRY_SIZE, parse_item
from ledger.protocol.tlog import ENTRY_SIZE, leaf_hash

__all__ = ["ENTRIES_V2", "EpochLog", "decode_entries", "encode_entries", "parse"]

_MAX_ENTRIES = 1 << 24
ENTRIES_V2 = "entries-v2"  # the file's name once the log holds an evidence entry


@dataclass
class EpochLog:
    """The log in memory: its header, its entries, and each epoch."""

    header: dict[str, Any] = field(default_factory=dict)  # origin, chain_id, registry, operator, vkey, key_signature
    entries: list[bytes] = field(default_factory=list)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    commit: bytes | None = None  # the ref's commit this was read from

    def leaves(self) -> list[bytes]:
        return [leaf_hash(e) for e in self.entries]

    def heads(self) -> dict[int, tuple[int, bytes]]:
        """Each agent's last entry: agent → (seq, root)."""
        out: dict[int, tuple[int, bytes]] = {}
        for e in self.entries:
            if len(e) == ENTRY_SIZE:
                _, (agent, seq, _, root) = parse_item(e)
                out[agent] = (seq, root)
        return out

    def evidence(self) -> dict[int, tuple[int, bytes]]:
        """Each agent's last evidence entry: agent → (size, evidence root)."""
        out: dict[int, tuple[int, bytes]] = {}
        for e in self.entries:
            if len(e) == EVIDENCE_ENTRY_SIZE:
                _, (agent, _head, size, root) = parse_item(e)
                out[agent] = (size, root)
        return out

    def size(self) -> int:
        return int(self.epochs[-1]["size"]) if self.epochs else 0


def encode_entries(entries: list[bytes]) -> tuple[str, bytes]:
    """(file name, bytes) of the entries: ``entries`` concatenated while every entry is a head, else
    ``entries-v2``, each entry after its one-byte length.  One log has one encoding."""
    if all(len(e) == ENTRY_SIZE for e in entries):
        return "entries", b"".join(entries)
    return ENTRIES_V2, b"".join(bytes([len(e)]) + e for e in entries)


def decode_entries(name: str, data: bytes) -> list[bytes]:
    """The entries of a file :func:`encode_entries` wrote; anything else (a length byte that is not 104
    or 105, a cut entry, an ``entries-v2`` holding heads only) is refused."""
    if name == "entries":
        if len(data) % ENTRY_SIZE or len(data) // ENTRY_SIZE > _MAX_ENTRIES:
            raise ChainError(
                f"the epoch log's entries are {len(data)} bytes, not a whole number of {ENTRY_SIZE}-byte entries"
            )
        return [data[i : i + ENTRY_SIZE] for i in range(0, len(data), ENTRY_SIZE)]
    if name != ENTRIES_V2:
        raise ChainError(f"the epoch log's entries file is {name!r}, not 'entries' or {ENTRIES_V2!r}")
    items, i = [], 0
    while i < len(data):
        n = data[i]
        if n not in (ENTRY_SIZE, EVIDENCE_ENTRY_SIZE) or i + 1 + n > len(data) or len(items) >= _MAX_ENTRIES:
            raise ChainError(
                f"the epoch log's {ENTRIES_V2} has a length byte {n} at offset {i}: not 104 or 105, or past its end"
            )
        items.append(data[i + 1 : i + 1 + n])
        i += 1 + n
    if all(len(e) == ENTRY_SIZE for e in items):
        raise ChainError(f"the epoch log's {ENTRIES_V2} holds no evidence entry: a log of heads is 'entries'")
    return items


def parse(name: str, entries: bytes, doc_bytes: bytes, commit: bytes | None) -> EpochLog:
    try:
        doc = json.loads(doc_bytes)
    except ValueError as exc:
        raise ChainError(f"the epoch log's log.json is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("epochs"), list) or not isinstance(doc.get("header"), dict):
        raise ChainError("the epoch log's log.json is not an object with a header and a list of epochs")
    items = decode_entries(name, entries)
    for item in items:
        parse_item(item)
    last = 0
    for n, ep in enumerate(doc["epochs"], 1):
        if not isinstance(ep, dict) or ep.get("epoch") != n or not isinstance(ep.get("size"), int):
            raise ChainError(f"the epoch log's epoch #{n} is not numbered {n} with a size")
        if not last < ep["size"] <= len(items):
            raise ChainError(
                f"the epoch log's epoch {n} has size {ep['size']}: not above {last}, or beyond its entries"
            )
        last = ep["size"]
    return EpochLog(doc["header"], items, doc["epochs"], commit)
