"""Evidence entries in an operator's epoch log, and the evidence epoch receipt (issue 38, item 2).

A brain anchored through epochs (no transaction of its own) anchors its evidence root the same
way: the operator appends an **evidence entry** after the brain's head entries, and the brain
gets a receipt whose tlog-proof covers that entry.  An evidence entry is 105 bytes,

    0x02 ‖ agent (uint256 BE) ‖ head (32) ‖ size (uint64 BE) ‖ evidence root (32)

so its length alone tells it from a 104-byte head entry (:mod:`ledger.protocol.tlog`), and the
leading tag is checked as well.  ``head`` names the bundle root the evidence is bound to, as
``EvidenceCommitted``'s ``head`` does on the direct path (docs/lineage/evidence.md §7.1): the receipt
then proves the binding offline, and the log replay checks it is the agent's last head entry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ledger.errors import ChainError
from ledger.protocol import epochproof, tlog

__all__ = [
    "EVIDENCE_ENTRY_SIZE",
    "KIND",
    "TAG",
    "build",
    "evidence_entry",
    "is_evidence",
    "parse_evidence_entry",
    "parse_item",
    "verify_offline",
]

TAG = 0x02
EVIDENCE_ENTRY_SIZE = 105  # tag (1) ‖ agent (32) ‖ head (32) ‖ size (8) ‖ evidence root (32)
KIND = "ledger-epoch-evidence-receipt/v1"
_ZERO = b"\x00" * 32
_HEX32 = re.compile(r"0x[0-9a-f]{64}")
_FIELDS: dict[str, type] = {
    "kind": str,
    "chain_id": int,
    "registry": str,
    "operator": str,
    "agent": str,
    "head": str,
    "size": int,
    "evidence_root": str,
    "epoch": int,
    "tx": str,
    "block": int,
    "log": str,
    "checkpoint_key": str,
    "key_signature": str,
    "proof": str,
}


def evidence_entry(agent: int, head: bytes, size: int, root: bytes) -> bytes:
    """The entry anchoring agent ``agent``'s evidence log (``size`` entries, tree hash ``root``) bound to ``head``."""
    if (
        not 0 <= agent < 1 << 256
        or not 1 <= size < 1 << 64
        or len(head) != 32
        or len(root) != 32
        or _ZERO in (head, root)
    ):
        raise ChainError(
            f"not an evidence entry: agent {agent:#x}, size {size}, a {len(head)}-byte head, "
            f"a {len(root)}-byte root (size ≥ 1, head and root non-zero)"
        )
    return bytes([TAG]) + agent.to_bytes(32, "big") + head + size.to_bytes(8, "big") + root


def is_evidence(data: bytes) -> bool:
    return len(data) == EVIDENCE_ENTRY_SIZE


def parse_evidence_entry(data: bytes) -> tuple[int, bytes, int, bytes]:
    """(agent, head, size, root) of an evidence entry; refused unless exactly 105 bytes, tag 0x02, size ≥ 1,
    head and root non-zero."""
    if len(data) != EVIDENCE_ENTRY_SIZE or data[0] != TAG:
        raise ChainError(
            f"an evidence entry is {EVIDENCE_ENTRY_SIZE} bytes starting with 0x02, got {len(data)} "
            f"bytes starting with 0x{data[:1].hex() or '(none)'}"
        )
    agent, head, root = int.from_bytes(data[1:33], "big"), data[33:65], data[73:]
    size = int.from_bytes(data[65:73], "big")
    if size == 0 or _ZERO in (head, root):
        raise ChainError("an evidence entry's size is 0, or its head or root is zero")
    return agent, head, size, root


def parse_item(data: bytes) -> tuple[str, tuple[Any, ...]]:
    """Any entry of the log by its length: ``("head", (agent, seq, parent, root))`` for 104 bytes,
    ``("evidence", (agent, head, size, root))`` for 105; any other length is refused."""
    if len(data) == tlog.ENTRY_SIZE:
        return "head", tlog.parse_entry(data)
    if len(data) == EVIDENCE_ENTRY_SIZE:
        return "evidence", parse_evidence_entry(data)
    raise ChainError(
        f"a log entry is {tlog.ENTRY_SIZE} bytes (a head) or {EVIDENCE_ENTRY_SIZE} (evidence), got {len(data)}"
    )


def build(
    header: Mapping[str, Any], epoch: Mapping[str, Any], index: int, path: list[bytes], item: bytes, location: str
) -> dict[str, Any]:
    """The evidence receipt of entry ``index`` (bytes ``item``) in ``epoch`` of the log with ``header``."""
    agent, head, size, root = parse_evidence_entry(item)
    return epochproof.receipt_fields(
        KIND,
        header,
        epoch,
        index,
        path,
        item,
        location,
        agent,
        {"head": "0x" + head.hex(), "size": size, "evidence_root": "0x" + root.hex()},
    )


def verify_offline(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Check an evidence receipt without a chain (the head receipt's steps, then the entry's); return what
    the chain and the snapshot must confirm: operator, epoch, size and root of the checkpoint, the index,
    and the entry (agent, head, evidence size and root)."""
    extra, index, path, size, tree_root = epochproof.verify_signed(doc, _FIELDS, KIND)
    agent, head, ev_size, ev_root = parse_evidence_entry(extra)
    if not all(_HEX32.fullmatch(doc[k]) for k in ("agent", "head", "evidence_root")):
        raise ChainError("the evidence receipt's agent, head and evidence_root are 0x and 64 lower-case hex digits")
    if (doc["agent"], doc["head"], doc["size"], doc["evidence_root"]) != (
        f"0x{agent:064x}",
        "0x" + head.hex(),
        ev_size,
        "0x" + ev_root.hex(),
    ):
        raise ChainError("the proof's entry is not the receipt's agent, head, size and evidence root")
    epochproof.included(index, size, extra, path, tree_root)
    return {
        "operator": doc["operator"],
        "epoch": doc["epoch"],
        "size": size,
        "tree_root": tree_root,
        "index": index,
        "agent": agent,
        "head": head,
        "evidence_size": ev_size,
        "evidence_root": ev_root,
    }
