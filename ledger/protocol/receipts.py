"""A chain receipt, checked offline (docs/lineage.md, "Receipts"): one note per anchored snapshot,
a JSON document::

    {"chain_id", "registry", "agent", "seq", "root", "tx", "block", "block_hash", "log_index", "committer"}

:func:`parse_note` reads one strictly; :func:`anchored` is the anchoring rule (which snapshots the
chain records, in order); :func:`note_problems` checks what needs no chain: that the note sits on an
anchored snapshot of the lineage, that its root is that snapshot's root, and that its seq is the
snapshot's position.  The notes themselves are kept by :mod:`ledger.chain.receipts`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["anchored", "note_problems", "parse_note", "positions"]


_HEX = re.compile(r"0x[0-9a-f]+")
_FIELDS: dict[str, Any] = {  # field → (type, hex length without 0x, or None)
    "chain_id": (int, None),
    "registry": (str, 40),
    "agent": (str, 64),
    "seq": (int, None),
    "root": (str, None),
    "committer": (str, 40),
    "tx": (str, 64),
    "block": (int, None),
    "block_hash": (str, 64),
    "log_index": (int, None),
}


def parse_note(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """``(note, None)``, or ``(None, why)`` for a note that is not one well-formed receipt."""
    try:
        doc = json.loads(data)
    except ValueError as exc:
        return None, f"is not JSON ({exc})"
    if not isinstance(doc, dict):
        return None, "is not a JSON object"
    for key, (kind, hex_len) in _FIELDS.items():
        value = doc.get(key)
        if key not in doc:
            return None, f"has no {key!r}"
        if kind is int and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            return None, f"{key!r} is {value!r}, not a whole number"
        if kind is str and not isinstance(value, str):
            return None, f"{key!r} is {value!r}, not text"
        if hex_len and (not _HEX.fullmatch(value.lower()) or len(value) != hex_len + 2):
            return None, f"{key!r} is {value!r}, not 0x and {hex_len} hex digits"
    if doc["seq"] < 1:
        return None, "'seq' is 0; on-chain sequences start at 1"
    return doc, None


def anchored(snaps: Sequence[Any]) -> list[Any]:
    """The snapshots the chain records, oldest first (docs/lineage.md, "The anchoring rule").

    Every snapshot is anchored, in order, except one whose root equals the root of the
    snapshot before it (a change outside the bundle, such as a skill moved to another
    Hermes category): the registry refuses a root equal to its head, and the snapshot
    before it already anchors that root. Event seq *k* records ``anchored(...)[k - 1]``.
    """
    out = []
    for i, snap in enumerate(snaps):
        if i == 0 or snap.root != snaps[i - 1].root:
            out.append(snap)
    return out


def positions(snaps: Sequence[Any]) -> dict[str, tuple[int, bytes]]:
    """Each anchored snapshot's commit (hex) → its position among the anchored ones, and its root."""
    return {s.commit: (i, s.root) for i, s in enumerate(anchored(snaps))}


def note_problems(note: Mapping[str, Any], commit: str, position: Mapping[str, tuple[int, bytes]]) -> list[str]:
    """What is wrong with a well-formed receipt on snapshot ``commit``, checked without a chain.

    ``position`` is :func:`positions` of the lineage.
    """
    from ledger.protocol.bundlehash import format_root  # a quick count reads no hash; a full check does

    if commit not in position:
        return [
            "sits on a commit that is not an anchored snapshot of the lineage (not a snapshot, or one "
            "whose root equals its parent's, which is never anchored separately)"
        ]
    index, root = position[commit]
    problems = []
    if note["root"] != format_root(root):
        problems.append(f"records root {note['root']}, but the snapshot's root is {format_root(root)}")
    if note["seq"] != index + 1:
        problems.append(f"records seq {note['seq']}, but that snapshot is anchored as seq {index + 1}")
    return problems
