"""The registry's ABI by hand, for the static types its hot paths use, and its RootCommitted log.

A chain command reads a head, a sequence, an owner and the agent's logs, and sends one
``commit``: every argument and result is a single 32-byte word (``uint256``, ``uint64``,
``bytes32``, ``address``, ``bool``) or, for ``commitBatch``, one ``bytes32[]``.  Encoding
those takes a few lines; importing eth-abi and web3 for them takes about a second.  As with
the EIP-712 digest (:mod:`ledger.protocol.signing`, ADR 18), the tests check every encoding
and decoding here against eth-abi's and web3's own, so the two can never disagree unseen.
Custom-error revert data stays on eth-abi (:meth:`ledger.chain.registry.Registry.explain`):
it is decoded only when a refusal needs explaining.
"""

from __future__ import annotations

from typing import Any

from ledger.errors import ChainError
from ledger.protocol.signing import keccak

__all__ = [
    "AGENT_REGISTERED",
    "COMMITTER_SET",
    "EPOCH_ANCHORED",
    "EVIDENCE_COMMITTED",
    "ROOT_COMMITTED",
    "TRANSFER_BATCH",
    "TRANSFER_SINGLE",
    "ZERO",
    "call_data",
    "checksum",
    "decode_committer_log",
    "decode_evidence_committed",
    "decode_root_committed",
    "decode_string",
    "decode_transfer",
    "decode_uint_array",
    "hexbytes",
    "selector",
    "sequenced",
    "word",
]

ZERO = b"\x00" * 32


def selector(signature: str) -> bytes:
    """A function's (or custom error's) 4-byte selector, from its canonical signature."""
    return keccak(signature.encode())[:4]


# topic 0 of `RootCommitted(uint256 indexed agentId, bytes32 indexed root, address committer)`
ROOT_COMMITTED = keccak(b"RootCommitted(uint256,bytes32,address)")
# `AgentRegistered(uint256 indexed agentId, address indexed owner, bytes32 salt, uint256 shares)`
AGENT_REGISTERED = keccak(b"AgentRegistered(uint256,address,bytes32,uint256)")
# `CommitterSet(uint256 indexed agentId, address indexed committer, bool authorized)`
COMMITTER_SET = keccak(b"CommitterSet(uint256,address,bool)")
# `EpochAnchored(address indexed operator, uint64 indexed epoch, uint64 size, bytes32 root)`
EPOCH_ANCHORED = keccak(b"EpochAnchored(address,uint64,uint64,bytes32)")
# `EvidenceCommitted(uint256 indexed agentId, bytes32 indexed head, uint64 size, bytes32 root)`
EVIDENCE_COMMITTED = keccak(b"EvidenceCommitted(uint256,bytes32,uint64,bytes32)")
# ERC-1155 `TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id,
# uint256 value)` and `TransferBatch(…, uint256[] ids, uint256[] values)`: who holds an agent's shares
TRANSFER_SINGLE = keccak(b"TransferSingle(address,address,address,uint256,uint256)")
TRANSFER_BATCH = keccak(b"TransferBatch(address,address,address,uint256[],uint256[])")


def hexbytes(value: Any) -> bytes:
    """Bytes from a JSON-RPC hex string (``0x…``) or from bytes (web3's HexBytes included)."""
    if isinstance(value, str):
        text = value[2:] if value[:2] in ("0x", "0X") else value
        try:
            return bytes.fromhex(text)
        except ValueError as exc:
            raise ChainError(f"the node answered {value[:80]!r} where hex data was expected") from exc
    return bytes(value)


def checksum(address: bytes | str) -> str:
    """The EIP-55 mixed-case form of a 20-byte address (what web3 and eth-utils print)."""
    raw = hexbytes(address)
    if len(raw) != 20:
        raise ChainError(f"an address is 20 bytes, got {len(raw)}")
    text = raw.hex()
    digest = keccak(text.encode()).hex()
    return "0x" + "".join(c.upper() if int(d, 16) >= 8 else c for c, d in zip(text, digest[:40], strict=True))


def word(value: Any, kind: str) -> bytes:
    """One ABI head word of a static type: ``uint256``/``uint64`` (int), ``bytes32`` (32 bytes),
    ``address`` (20 bytes or hex), ``bool``."""
    if kind in ("uint256", "uint64"):
        bits = 256 if kind == "uint256" else 64
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << bits:
            raise ChainError(f"{value!r} is not a {kind}")
        return value.to_bytes(32, "big")
    if kind == "bytes32":
        raw = bytes(value)
        if len(raw) != 32:
            raise ChainError(f"a bytes32 is 32 bytes, got {len(raw)}")
        return raw
    if kind == "address":
        raw = hexbytes(value)
        if len(raw) != 20:
            raise ChainError(f"an address is 20 bytes, got {len(raw)}")
        return raw.rjust(32, b"\x00")
    if kind == "bool":
        return int(bool(value)).to_bytes(32, "big")
    raise ChainError(f"the light ABI codec has no {kind}")


def call_data(signature: str, *args: Any) -> bytes:
    """A call's data: selector, then the head words; an array of a static type (``bytes32[]``:
    ``commitBatch``'s roots, ``commitEvidence``'s roots and proof; ``address[]`` and ``uint256[]``:
    ``balanceOfBatch``'s) is its offset in the head and its length and items in the tail, in
    argument order."""
    kinds = signature[signature.index("(") + 1 : -1].split(",") if not signature.endswith("()") else []
    if len(kinds) != len(args):
        raise ChainError(f"{signature} takes {len(kinds)} argument(s), got {len(args)}")
    head, tail = b"", b""
    for kind, value in zip(kinds, args, strict=True):
        if kind.endswith("[]"):
            head += word(32 * len(kinds) + len(tail), "uint256")
            tail += word(len(value), "uint256") + b"".join(word(v, kind[:-2]) for v in value)
        else:
            head += word(value, kind)
    return selector(signature) + head + tail


def decode_word(data: bytes, kind: str) -> Any:
    """The one static value a view returns (its whole return data is one 32-byte word)."""
    if len(data) != 32:
        raise ChainError(f"a {kind} result is one 32-byte word, got {len(data)} byte(s)")
    n = int.from_bytes(data, "big")
    if kind == "bytes32":
        return data
    if kind in ("uint256", "uint64"):
        if kind == "uint64" and n >> 64:
            raise ChainError(f"a uint64 result has high bits set: 0x{data.hex()}")
        return n
    if kind == "address":
        if n >> 160:
            raise ChainError(f"an address result has high bits set: 0x{data.hex()}")
        return checksum(data[12:])
    if kind == "bool":
        if n > 1:
            raise ChainError(f"a bool result is 0 or 1, got 0x{data.hex()}")
        return n == 1
    raise ChainError(f"the light ABI codec has no {kind}")


def _tail(data: bytes, at: int, what: str) -> tuple[int, int]:
    """The (start, length) of a dynamic value whose offset word is at ``at``: strict, so a reply
    that is not exactly one ABI encoding is refused (no overlap, no words past the end)."""
    if len(data) < at + 32:
        raise ChainError(f"{what}: the reply is {len(data)} bytes, too short for its offset")
    offset = int.from_bytes(data[at : at + 32], "big")
    if offset % 32 or len(data) < offset + 32:
        raise ChainError(f"{what}: the reply's offset {offset} is not a word inside its {len(data)} bytes")
    return offset + 32, int.from_bytes(data[offset : offset + 32], "big")


def decode_string(data: bytes, what: str = "a string result") -> str:
    """The one ``string`` a view returns (offset, length, bytes zero-padded to a word), as ASCII-or-UTF-8
    text; any other shape is refused."""
    start, length = _tail(data, 0, what)
    padded = -(-length // 32) * 32
    if start != 64 or len(data) != start + padded or any(data[start + length :]):
        raise ChainError(f"{what}: {len(data)} bytes are not one ABI-encoded string of {length} bytes")
    try:
        return data[start : start + length].decode()
    except UnicodeDecodeError as exc:
        raise ChainError(f"{what}: the string is not UTF-8") from exc


def decode_uint_array(data: bytes, at: int = 0, what: str = "a uint256[] result") -> list[int]:
    """A ``uint256[]`` whose offset word is at ``at`` (a view's whole reply: 0)."""
    start, length = _tail(data, at, what)
    if len(data) < start + 32 * length:
        raise ChainError(f"{what}: {length} items do not fit in {len(data)} bytes")
    return [int.from_bytes(data[i : i + 32], "big") for i in range(start, start + 32 * length, 32)]


def decode_transfer(log: Any) -> list[tuple[str, str, int, int]]:
    """An ERC-1155 ``TransferSingle`` or ``TransferBatch`` log as (from, to, id, value) rows, in order."""
    topics = [hexbytes(t) for t in log["topics"]]
    data = hexbytes(log["data"])
    if (
        len(topics) != 4
        or topics[0] not in (TRANSFER_SINGLE, TRANSFER_BATCH)
        or any(t[:12] != b"\x00" * 12 for t in topics[1:])
    ):
        raise ChainError(
            f"log {_int(log['logIndex'])} of tx 0x{hexbytes(log['transactionHash']).hex()} is not "
            "an ERC-1155 TransferSingle or TransferBatch event"
        )
    sender, receiver = checksum(topics[2][12:]), checksum(topics[3][12:])
    if topics[0] == TRANSFER_SINGLE:
        if len(data) != 64:
            raise ChainError("a TransferSingle log holds two words of data (id, value)")
        return [(sender, receiver, int.from_bytes(data[:32], "big"), int.from_bytes(data[32:], "big"))]
    ids = decode_uint_array(data, 0, "a TransferBatch log's ids")
    values = decode_uint_array(data, 32, "a TransferBatch log's values")
    if len(ids) != len(values):
        raise ChainError(f"a TransferBatch log has {len(ids)} ids and {len(values)} values")
    return [(sender, receiver, i, v) for i, v in zip(ids, values, strict=True)]


def decode_root_committed(log: Any) -> dict[str, Any]:
    """One RootCommitted log (from ``eth_getLogs`` or a receipt, as JSON-RPC hex or web3 values) as
    plain values: the agent, its root and committer, and where the log is.  ``seq`` and ``parent``
    are not in the log (ADR 29): :func:`sequenced` derives them from the order of the agent's logs."""
    topics = [hexbytes(t) for t in log["topics"]]
    data = hexbytes(log["data"])
    if len(topics) != 3 or topics[0] != ROOT_COMMITTED or len(data) != 32 or data[:12] != b"\x00" * 12:
        raise ChainError(
            f"log {_int(log['logIndex'])} of tx 0x{hexbytes(log['transactionHash']).hex()} is not "
            "a RootCommitted event of this registry's ABI"
        )
    return {
        "agent": int.from_bytes(topics[1], "big"),
        "root": topics[2],
        "committer": checksum(data[12:]),
        "registry": checksum(log["address"]),
        "tx": "0x" + hexbytes(log["transactionHash"]).hex(),
        "block": _int(log["blockNumber"]),
        "block_hash": "0x" + hexbytes(log["blockHash"]).hex(),
        "log_index": _int(log["logIndex"]),
    }


def decode_evidence_committed(log: Any) -> dict[str, Any]:
    """One EvidenceCommitted log as plain values: the agent, the head the evidence is bound to, the
    log's size and root, and where the log is.  Anything but this event's exact shape is refused."""
    topics = [hexbytes(t) for t in log["topics"]]
    data = hexbytes(log["data"])
    if len(topics) != 3 or topics[0] != EVIDENCE_COMMITTED or len(data) != 64 or data[:24] != b"\x00" * 24:
        raise ChainError(
            f"log {_int(log['logIndex'])} of tx 0x{hexbytes(log['transactionHash']).hex()} is not "
            "an EvidenceCommitted event of this registry's ABI"
        )
    return {
        "agent": int.from_bytes(topics[1], "big"),
        "head": topics[2],
        "size": int.from_bytes(data[:32], "big"),
        "root": data[32:],
        "registry": checksum(log["address"]),
        "tx": "0x" + hexbytes(log["transactionHash"]).hex(),
        "block": _int(log["blockNumber"]),
        "block_hash": "0x" + hexbytes(log["blockHash"]).hex(),
        "log_index": _int(log["logIndex"]),
    }


def decode_committer_log(log: Any) -> tuple[int, int, str, bool]:
    """An ``AgentRegistered`` (the owner, allowed) or ``CommitterSet`` log as (block, log index,
    address, allowed): what the audit replays to know who could commit when."""
    topics = [hexbytes(t) for t in log["topics"]]
    data = hexbytes(log["data"])
    if len(topics) != 3 or topics[0] not in (AGENT_REGISTERED, COMMITTER_SET) or topics[2][:12] != b"\x00" * 12:
        raise ChainError(
            f"log {_int(log['logIndex'])} of tx 0x{hexbytes(log['transactionHash']).hex()} is neither "
            "AgentRegistered nor CommitterSet of this registry's ABI"
        )
    if topics[0] == AGENT_REGISTERED:
        if len(data) != 64:
            raise ChainError("an AgentRegistered log holds two words of data (salt, shares)")
        allowed = True
    else:
        allowed = decode_word(data, "bool")
    return _int(log["blockNumber"]), _int(log["logIndex"]), checksum(topics[2][12:]), allowed


def sequenced(events: list[dict[str, Any]], seq: int = 0, parent: bytes = ZERO) -> list[dict[str, Any]]:
    """The agent's events, in (block, log index) order, numbered: the k-th after ``seq`` is
    ``seq + k`` and its parent the root before it (``parent`` for the first).  Correct only for a
    run of *consecutive* events of one agent starting right after sequence ``seq`` (ADR 29): the
    callers check the count against ``sequenceOf`` (an audit) or read a receipt's logs whole."""
    out = []
    for ev in sorted(events, key=lambda e: (e["block"], e["log_index"])):
        seq += 1
        out.append({**ev, "seq": seq, "parent": parent})
        parent = ev["root"]
    return out


def _int(value: Any) -> int:
    return int(value, 16) if isinstance(value, str) else int(value)
