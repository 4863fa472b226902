"""A brain's epoch receipt: its head is entry ``index`` of an operator's log, whose epoch the chain holds.

The receipt is a JSON note on the snapshot (``refs/notes/ledger-epochs``), distinguishable
from a direct commit's receipt by its ``kind``.  :func:`verify_offline` checks everything that
needs no chain, in well under a millisecond: the checkpoint key's certification by the
operator's address, the checkpoint's signature and origin, the entry (from the proof's
``extra`` line) against the snapshot, and the inclusion proof against the checkpoint's root.
What is left for a chain is returned: that the operator's epoch ``epoch`` on the registry has
this size and root, and that the operator may commit for the agent (:mod:`ledger.audit.epochs`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ledger._json import unique_keys
from ledger.errors import ChainError, ProofError
from ledger.protocol import notes, tlog

__all__ = ["KIND", "MAX_RECEIPT", "build", "included", "parse_receipt", "verify_offline", "verify_signed"]

KIND = "ledger-epoch-receipt/v1"
_FIELDS: dict[str, type] = {
    "kind": str,
    "chain_id": int,
    "registry": str,
    "operator": str,
    "agent": str,
    "seq": int,
    "root": str,
    "epoch": int,
    "tx": str,
    "block": int,
    "log": str,
    "checkpoint_key": str,
    "key_signature": str,
    "proof": str,
}
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
MAX_RECEIPT = 64 << 10  # bytes: a receipt is about 1 KiB; its proof is at most 64 hashes


def parse_receipt(data: bytes) -> dict[str, Any]:
    """An epoch receipt from its note's bytes (lineage/epochs.md §6): at most :data:`MAX_RECEIPT` bytes of UTF-8
    JSON, one object with exactly the receipt's fields, none twice; any other document is refused, so no
    two readers take one receipt two ways."""
    import json

    if len(data) > MAX_RECEIPT:
        raise ChainError(f"the epoch receipt is {len(data):,} bytes; at most {MAX_RECEIPT:,} are read")
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=unique_keys)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ChainError(f"the epoch receipt is not valid UTF-8 JSON with each key once: {exc}") from exc
    if not isinstance(doc, dict):
        raise ChainError("the epoch receipt is not a JSON object")
    return doc


def build(
    header: Mapping[str, Any], epoch: Mapping[str, Any], index: int, path: list[bytes], item: bytes, location: str
) -> dict[str, Any]:
    """The receipt of entry ``index`` (bytes ``item``) in ``epoch`` of the log with ``header``."""
    agent, seq, _, root = tlog.parse_entry(item)
    return receipt_fields(
        KIND, header, epoch, index, path, item, location, agent, {"seq": seq, "root": "0x" + root.hex()}
    )


def receipt_fields(
    kind: str,
    header: Mapping[str, Any],
    epoch: Mapping[str, Any],
    index: int,
    path: list[bytes],
    item: bytes,
    location: str,
    agent: int,
    own: Mapping[str, Any],
) -> dict[str, Any]:
    """A receipt of either kind (a head's, an evidence entry's): the operator's header, the epoch and the
    proof, around ``own`` (the entry's fields), in the order receipts are written."""
    return {
        "kind": kind,
        "chain_id": header["chain_id"],
        "registry": header["registry"],
        "operator": header["operator"],
        "agent": f"0x{agent:064x}",
        **own,
        "epoch": epoch["epoch"],
        "tx": epoch["tx"],
        "block": epoch["block"],
        "log": location,
        "checkpoint_key": header["vkey"],
        "key_signature": header["key_signature"],
        "proof": notes.format_proof(index, path, epoch["checkpoint"], extra=item),
    }


def verify_signed(
    doc: Mapping[str, Any], fields: Mapping[str, type], kind: str
) -> tuple[bytes, int, list[bytes], int, bytes]:
    """The checks every epoch receipt shares (lineage/epochs.md §6, in order): the fields and their types, ``kind``, the
    origin, the key's certification by the operator, the proof's shape and the checkpoint's signature.
    Returns the proof's (extra, index, path) and the checkpoint's (size, root), for the entry's own checks."""
    if set(doc) != set(fields):
        extra, missing = sorted(set(doc) - set(fields)), sorted(set(fields) - set(doc))
        raise ChainError(f"the epoch receipt's fields are not those of {kind} (extra {extra}, missing {missing})")
    for key, want in fields.items():
        value = doc.get(key)
        if not isinstance(value, want) or isinstance(value, bool):
            raise ChainError(f"the epoch receipt's {key!r} is {str(value)[:60]!r}, not {want.__name__}")
    if doc["kind"] != kind:
        raise ChainError(f"the receipt is of kind {doc['kind']!r}, not {kind!r}")
    if not _ADDRESS.fullmatch(doc["operator"]) or not _ADDRESS.fullmatch(doc["registry"]):
        raise ChainError("the epoch receipt's operator and registry are 0x and 40 hex digits")
    origin = notes.origin_of(doc["chain_id"], doc["registry"], doc["operator"])
    name, public = notes.parse_vkey(doc["checkpoint_key"])
    if name != origin:
        raise ChainError(f"the checkpoint key is named {name!r}, not the log's origin {origin!r}")
    if notes.recover_key_signer(doc["checkpoint_key"], doc["key_signature"]) != doc["operator"].lower():
        raise ChainError(
            f"the checkpoint key is not certified by the operator {doc['operator']}",
            hint="the key_signature must be the operator's EIP-191 signature of the key",
        )
    extra, index, path, signed = notes.parse_proof(doc["proof"])
    cp_origin, size, root = notes.parse_checkpoint(notes.open_note(signed, origin, public))
    if cp_origin != origin:
        raise ChainError(f"the checkpoint is of log {cp_origin!r}, not {origin!r}")
    if extra is None:
        raise ChainError("the tlog-proof carries no entry on its extra line")
    return extra, index, path, size, root


def included(index: int, size: int, extra: bytes, path: list[bytes], root: bytes) -> None:
    """Raise :class:`ChainError` unless the entry ``extra`` is leaf ``index`` of the log ``root`` of ``size``: a
    receipt that does not hold up is refused as a chain record is, with the proof's own words."""
    try:
        tlog.verify_inclusion(index, size, tlog.leaf_hash(extra), path, root)
    except ProofError as exc:
        raise ChainError(exc.message, hint=exc.hint) from exc


def verify_offline(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Check a receipt without a chain; return what the chain must confirm: operator, epoch, size, root,
    and the entry (agent, seq, parent, root, index).  Raises :class:`ChainError` saying what is wrong."""
    extra, index, path, size, root = verify_signed(doc, _FIELDS, KIND)
    agent, seq, parent, head = tlog.parse_entry(extra)
    if (f"0x{agent:064x}", seq, "0x" + head.hex()) != (doc["agent"].lower(), doc["seq"], doc["root"].lower()):
        raise ChainError("the proof's entry is not the receipt's agent, seq and root")
    included(index, size, extra, path, root)
    return {
        "operator": doc["operator"],
        "epoch": doc["epoch"],
        "size": size,
        "tree_root": root,
        "index": index,
        "agent": agent,
        "seq": seq,
        "parent": parent,
        "root": head,
    }
