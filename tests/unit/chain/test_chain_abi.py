"""The light ABI codec (ledger/chain/abi.py) against eth-abi's and web3's own, as ADR 18 does for
EIP-712: every encoding the chain's hot paths send and every decoding they trust, byte for byte."""

from __future__ import annotations

import random

import pytest
from eth_abi import decode as abi_decode
from eth_abi import encode as abi_encode
from eth_utils import event_abi_to_log_topic, function_abi_to_4byte_selector, to_checksum_address
from web3 import Web3
from web3._utils.events import get_event_data

from ledger.chain import abi
from ledger.chain.registry import artifact
from ledger.errors import ChainError
from ledger.protocol.signing import keccak

RNG = random.Random(35)
ABI = artifact()["abi"]
FUNCTIONS = {e["name"]: e for e in ABI if e["type"] == "function"}
CONTRACT = Web3().eth.contract(address="0x" + "11" * 20, abi=ABI)


def _signature(name: str) -> str:
    return f"{name}({','.join(i['type'] for i in FUNCTIONS[name]['inputs'])})"


def _words(n: int) -> list[bytes]:
    return [RNG.randbytes(32) for _ in range(n)]


def test_selectors_and_the_event_topic_are_the_abis() -> None:
    for name in (
        "commit",
        "commitBatch",
        "commitEvidence",
        "evidenceOf",
        "headOf",
        "sequenceOf",
        "ownerOf",
        "isCommitter",
    ):
        assert abi.selector(_signature(name)) == function_abi_to_4byte_selector(FUNCTIONS[name]), name
    (event,) = (e for e in ABI if e.get("name") == "RootCommitted")
    assert event_abi_to_log_topic(event) == abi.ROOT_COMMITTED


@pytest.mark.parametrize("trial", range(8))
def test_call_data_is_web3s(trial: int) -> None:
    agent = RNG.getrandbits(256) if trial else 0
    parent, root = _words(2)
    address = to_checksum_address(RNG.randbytes(20))
    cases = [
        ("commit", (agent, parent, root)),
        ("commitBatch", (agent, parent, _words(trial))),  # 0 … 7 roots: an empty batch too
        ("commitEvidence", (agent, parent, _words(trial), RNG.getrandbits(64), root, _words(7 - trial))),
        ("commitEvidence", (agent, parent, [], trial + 1, root, [])),
        ("evidenceOf", (agent,)),
        ("headOf", (agent,)),
        ("sequenceOf", (agent,)),
        ("ownerOf", (agent,)),
        ("isCommitter", (agent, address)),
    ]
    for name, args in cases:
        expected = bytes.fromhex(CONTRACT.encode_abi(name, args)[2:])
        assert abi.call_data(_signature(name), *args) == expected, name


@pytest.mark.parametrize("kind", ["uint256", "uint64", "bytes32", "address", "bool"])
def test_words_and_results_are_eth_abis(kind: str) -> None:
    values = {
        "uint256": [0, 1, 2**256 - 1, *(RNG.getrandbits(256) for _ in range(20))],
        "uint64": [0, 1, 2**64 - 1, *(RNG.getrandbits(64) for _ in range(20))],
        "bytes32": [b"\x00" * 32, *_words(20)],
        "address": [to_checksum_address(RNG.randbytes(20)) for _ in range(20)] + ["0x" + "00" * 20],
        "bool": [True, False],
    }[kind]
    for value in values:
        encoded = abi_encode([kind], [value])
        assert abi.word(value, kind) == encoded
        theirs = abi_decode([kind], encoded)[0]  # web3 checksums the addresses eth-abi returns
        assert abi.decode_word(encoded, kind) == (to_checksum_address(theirs) if kind == "address" else theirs)


def test_malformed_words_are_refused_not_truncated() -> None:
    for value, kind in ((2**64, "uint64"), (-1, "uint256"), (b"\x01" * 31, "bytes32"), ("0x" + "11" * 19, "address")):
        with pytest.raises(ChainError):
            abi.word(value, kind)
    for data, kind in (
        (b"\x00" * 31, "uint256"),
        ((2**64).to_bytes(32, "big"), "uint64"),
        ((2**160).to_bytes(32, "big"), "address"),
        ((2).to_bytes(32, "big"), "bool"),
    ):
        with pytest.raises(ChainError):
            abi.decode_word(data, kind)


def test_checksums_are_eth_utils() -> None:
    for _ in range(200):
        raw = RNG.randbytes(20)
        assert abi.checksum(raw) == to_checksum_address(raw) == abi.checksum("0x" + raw.hex())


def test_a_root_committed_log_decodes_as_web3_decodes_it() -> None:
    (event,) = (e for e in ABI if e.get("name") == "RootCommitted")
    for hexed in (False, True):  # web3's HexBytes and a raw JSON-RPC answer
        agent, root, committer = RNG.getrandbits(256), RNG.randbytes(32), to_checksum_address(RNG.randbytes(20))
        raw = {
            "address": CONTRACT.address,
            "topics": [abi.ROOT_COMMITTED, agent.to_bytes(32, "big"), root],
            "data": abi_encode(["address"], [committer]),
            "transactionHash": RNG.randbytes(32),
            "blockHash": RNG.randbytes(32),
            "blockNumber": 12,
            "logIndex": 3,
            "transactionIndex": 0,
        }
        theirs = get_event_data(Web3().codec, event, raw)
        if hexed:
            raw = {
                k: ("0x" + v.hex() if isinstance(v, bytes) else hex(v) if isinstance(v, int) else v)
                for k, v in raw.items()
            }
            raw["topics"] = ["0x" + t.hex() for t in (abi.ROOT_COMMITTED, agent.to_bytes(32, "big"), root)]
        ours = abi.decode_root_committed(raw)
        assert ours["agent"] == theirs["args"]["agentId"] and ours["root"] == theirs["args"]["root"]
        assert ours["committer"] == theirs["args"]["committer"] and ours["registry"] == theirs["address"]
        assert (ours["block"], ours["log_index"]) == (12, 3)
        assert ours["tx"] == "0x" + bytes(theirs["transactionHash"]).hex()
        assert ours["block_hash"] == "0x" + bytes(theirs["blockHash"]).hex()


def test_an_evidence_committed_log_decodes_as_web3_decodes_it() -> None:
    (event,) = (e for e in ABI if e.get("name") == "EvidenceCommitted")
    assert event_abi_to_log_topic(event) == abi.EVIDENCE_COMMITTED
    for size in (1, 2**64 - 1, RNG.getrandbits(64)):
        agent, head, root = RNG.getrandbits(256), RNG.randbytes(32), RNG.randbytes(32)
        raw = {
            "address": CONTRACT.address,
            "topics": ["0x" + t.hex() for t in (abi.EVIDENCE_COMMITTED, agent.to_bytes(32, "big"), head)],
            "data": "0x" + abi_encode(["uint64", "bytes32"], [size, root]).hex(),
            "transactionHash": "0x" + RNG.randbytes(32).hex(),
            "blockHash": "0x" + RNG.randbytes(32).hex(),
            "blockNumber": "0x9",
            "logIndex": "0x4",
            "transactionIndex": "0x0",
        }
        args = get_event_data(Web3().codec, event, raw)["args"]
        ours = abi.decode_evidence_committed(raw)
        assert (ours["agent"], ours["head"], ours["size"], ours["root"]) == (
            args["agentId"],
            args["head"],
            args["size"],
            args["root"],
        )
        assert (ours["block"], ours["log_index"], ours["registry"]) == (9, 4, CONTRACT.address)
    for bad in ("0x" + "00" * 63, "0x" + "00" * 23 + "01" + "00" * 40):  # short, or a size above uint64
        with pytest.raises(ChainError, match="not an EvidenceCommitted"):
            abi.decode_evidence_committed({**raw, "data": bad})
    with pytest.raises(ChainError, match="not an EvidenceCommitted"):
        abi.decode_evidence_committed({**raw, "topics": raw["topics"][:2]})


def test_another_events_log_is_refused() -> None:
    log = {
        "address": "0x" + "11" * 20,
        "topics": [keccak(b"Other(uint256)"), b"\x00" * 32, b"\x00" * 32],
        "data": b"\x00" * 32,
        "transactionHash": b"\x00" * 32,
        "blockHash": b"\x00" * 32,
        "blockNumber": 1,
        "logIndex": 0,
    }
    with pytest.raises(ChainError, match="not a RootCommitted event"):
        abi.decode_root_committed(log)


def test_sequenced_numbers_events_by_their_order_and_chains_parents() -> None:
    roots = _words(4)
    places = ((5, 1), (5, 0), (9, 0), (2, 7))
    events = [{"root": r, "block": b, "log_index": i} for r, (b, i) in zip(roots, places, strict=True)]
    out = abi.sequenced(events, 10, b"\x01" * 32)
    assert [e["seq"] for e in out] == [11, 12, 13, 14]
    assert [e["root"] for e in out] == [roots[3], roots[1], roots[0], roots[2]]
    assert [e["parent"] for e in out] == [b"\x01" * 32, roots[3], roots[1], roots[0]]


def test_committer_logs_decode_as_web3_decodes_them() -> None:
    events = {e["name"]: e for e in ABI if e["type"] == "event"}
    agent = RNG.getrandbits(256)
    cases = [
        ("AgentRegistered", ["bytes32", "uint256"], [RNG.randbytes(32), 10**6]),
        ("CommitterSet", ["bool"], [True]),
        ("CommitterSet", ["bool"], [False]),
    ]
    for name, data_types, data in cases:
        address = to_checksum_address(RNG.randbytes(20))
        raw = {
            "address": CONTRACT.address,
            "topics": [event_abi_to_log_topic(events[name]), agent.to_bytes(32, "big"), abi.word(address, "address")],
            "data": abi_encode(data_types, data),
            "transactionHash": RNG.randbytes(32),
            "blockHash": RNG.randbytes(32),
            "blockNumber": 7,
            "logIndex": 2,
            "transactionIndex": 0,
        }
        args = get_event_data(Web3().codec, events[name], raw)["args"]
        who = args["owner"] if name == "AgentRegistered" else args["committer"]
        allowed = True if name == "AgentRegistered" else args["authorized"]
        assert abi.decode_committer_log(raw) == (7, 2, who, allowed)
        assert args["agentId"] == agent
    assert event_abi_to_log_topic(events["AgentRegistered"]) == abi.AGENT_REGISTERED
    assert event_abi_to_log_topic(events["CommitterSet"]) == abi.COMMITTER_SET
    assert event_abi_to_log_topic(events["EpochAnchored"]) == abi.EPOCH_ANCHORED


# --------------------------------------------------------------------------- the share token's reads


def test_the_share_tokens_calls_and_topics_are_web3s() -> None:
    for name in ("uri", "locationOf", "balanceOfBatch", "setLocation"):
        assert abi.selector(_signature(name)) == function_abi_to_4byte_selector(FUNCTIONS[name]), name
    for name, topic in (("TransferSingle", abi.TRANSFER_SINGLE), ("TransferBatch", abi.TRANSFER_BATCH)):
        (event,) = (e for e in ABI if e.get("name") == name)
        assert event_abi_to_log_topic(event) == topic, name
    for n in (0, 1, 5):
        accounts = [to_checksum_address(RNG.randbytes(20)) for _ in range(n)]
        ids = [RNG.getrandbits(256) for _ in range(n)]
        expected = bytes.fromhex(CONTRACT.encode_abi("balanceOfBatch", (accounts, ids))[2:])
        assert abi.call_data(_signature("balanceOfBatch"), accounts, ids) == expected


@pytest.mark.parametrize("length", [0, 1, 31, 32, 33, 1065])
def test_strings_and_uint_arrays_decode_as_eth_abi_does(length: int) -> None:
    text = "".join(RNG.choice("abcdefXYZ:/;,=+0123456789") for _ in range(length))
    encoded = abi_encode(["string"], [text])
    assert abi.decode_string(encoded) == abi_decode(["string"], encoded)[0] == text
    values = [RNG.getrandbits(256) for _ in range(length % 7)]
    encoded = abi_encode(["uint256[]"], [values])
    assert abi.decode_uint_array(encoded) == list(abi_decode(["uint256[]"], encoded)[0]) == values


def test_a_string_reply_of_another_shape_is_refused() -> None:
    good = abi_encode(["string"], ["data:x"])
    for bad in (
        good[:-1],
        good + b"\0" * 32,
        good[:-1] + b"\1",
        (64).to_bytes(32, "big") + good[32:],
        good[:32] + (10**6).to_bytes(32, "big") + good[64:],
    ):
        with pytest.raises(ChainError):
            abi.decode_string(bad)


def test_transfer_logs_decode_as_web3_decodes_them() -> None:
    single, batch = (next(e for e in ABI if e.get("name") == n) for n in ("TransferSingle", "TransferBatch"))
    operator, sender, receiver = (RNG.randbytes(20) for _ in range(3))
    ids, values = [RNG.getrandbits(256) for _ in range(3)], [RNG.getrandbits(128) for _ in range(3)]
    topics = [b"\0" * 12 + a for a in (operator, sender, receiver)]
    where = {
        "logIndex": 0,
        "transactionIndex": 0,
        "transactionHash": b"\1" * 32,
        "blockHash": b"\2" * 32,
        "blockNumber": 1,
        "address": "0x" + "11" * 20,
    }
    for event, data in (
        (single, abi_encode(["uint256", "uint256"], [ids[0], values[0]])),
        (batch, abi_encode(["uint256[]", "uint256[]"], [ids, values])),
    ):
        log = {**where, "topics": [event_abi_to_log_topic(event), *topics], "data": data}
        args = get_event_data(Web3().codec, event, log)["args"]
        rows = abi.decode_transfer(log)
        if event is single:
            assert rows == [(args["from"], args["to"], args["id"], args["value"])]
        else:
            assert rows == [(args["from"], args["to"], i, v) for i, v in zip(args["ids"], args["values"], strict=True)]
    with pytest.raises(ChainError):
        abi.decode_transfer({**where, "topics": [abi.TRANSFER_SINGLE, *topics], "data": b"\0" * 32})
