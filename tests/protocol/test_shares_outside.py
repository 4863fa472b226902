"""An outside verifier of the share token's metadata, written from docs/lineage/shares.md alone (it
imports nothing of ``ledger.chain.shares``), run against the registry's bytes on a real anvil at the
edges: every allowed location character, a location of exactly 256 bytes set by a real transaction
(and 257 refused), evidence null and not, ids and addresses with leading zero bytes, and the
sequence at its largest and after it wraps."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from ledger.brain import Brain
from ledger.chain.abi import call_data, decode_string
from ledger.chain.config import ChainConfig
from ledger.chain.keys import dev_account
from ledger.chain.registry import Registry
from ledger.errors import ChainError
from tests.unit.page.test_shares import _plant

# lineage/shares.md §3's fixed sentence, copied from the spec's text.
SENTENCE = (
    "One share of this AI agent. A share is a claim on the agent's brain lineage: the head below is the lineage's "
    "current root (exactly which skills) and the evidence root commits to its recorded outcomes. It is not a claim "
    "on money, revenue, keys or control."
)
ALLOWED = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in '"\\{}')


def spec_uri(
    *, agent: int, chain: int, registry: str, owner: str, head: bytes, seq: int, size: int, root: bytes, location: str
) -> str:
    """lineage/shares.md §2 and §3 as an outsider reads them."""
    h = "null" if seq == 0 else f'"blake3-tree-v1:{head.hex()}"'
    e = "null" if size == 0 else f'{{"size":{size},"root":"0x{root.hex()}"}}'
    loc = "null" if location == "" else f'"{location}"'
    j = (
        f'{{"name":"Brain 0x{f"{agent:064x}"[:8]}","description":"{SENTENCE}","decimals":0,"properties":{{'
        f'"agent_id":"0x{agent:064x}","chain_id":{chain},"registry":"0x{registry[2:].lower()}",'
        f'"owner":"0x{owner[2:].lower()}","head":{h},"sequence":{seq},"evidence":{e},"location":{loc}}}}}'
    )
    return "data:application/json;base64," + base64.b64encode(j.encode("ascii")).decode("ascii")


def _view(reg: Registry, at: str, signature: str, agent: int) -> bytes:
    data = "0x" + call_data(signature, agent).hex()
    return bytes.fromhex(reg.node.call("eth_call", {"to": at, "data": data}, "latest")[2:])


def _verify(reg: Registry, at: str, agent: int) -> str:
    """lineage/shares.md §4: the views at one block, J rebuilt, ``uri`` compared byte for byte; the URI."""
    owner = "0x" + _view(reg, at, "ownerOf(uint256)", agent)[12:].hex()
    head = _view(reg, at, "headOf(uint256)", agent)
    seq = int.from_bytes(_view(reg, at, "sequenceOf(uint256)", agent), "big")
    ev = _view(reg, at, "evidenceOf(uint256)", agent)
    location = decode_string(_view(reg, at, "locationOf(uint256)", agent))
    chain = int(reg.node.call("eth_chainId"), 16)
    got = decode_string(_view(reg, at, "uri(uint256)", agent))
    want = spec_uri(
        agent=agent,
        chain=chain,
        registry=at,
        owner=owner,
        head=head,
        seq=seq,
        size=int.from_bytes(ev[:32], "big"),
        root=ev[32:],
        location=location,
    )
    assert got == want
    return got


def _case(agent: int, owner: str, seq: int, head: str | None, evidence: Any, location: str | None) -> dict[str, Any]:
    return {
        "agent_id": f"0x{agent:064x}",
        "owner": owner,
        "sequence": seq,
        "head": head,
        "evidence": evidence,
        "location": location,
    }


EDGES = [
    # (agent id, owner, sequence, head, evidence, location)
    (1, "0x" + "00" * 19 + "01", 1, "blake3-tree-v1:" + "00" * 31 + "01", None, ALLOWED),
    (
        (1 << 256) - 1,
        "0x" + "ff" * 20,
        (1 << 64) - 1,
        "blake3-tree-v1:" + "ff" * 32,
        {"size": (1 << 64) - 1, "root": "0x" + "00" * 32},
        (ALLOWED * 3)[:256],
    ),  # a zero root with a size: not null
    (
        0xABCDEF << 200,
        "0x00000000000000000000000000000000000000aB",
        10,
        "blake3-tree-v1:" + "ab" * 32,
        {"size": 1, "root": "0x" + "01" * 32},
        "~",
    ),
    (7 << 224, "0x" + "12" * 20, 0, None, None, None),
]


@pytest.mark.parametrize("edge", EDGES, ids=["every-char", "largest", "leading-zero-id", "nothing-yet"])
def test_an_outside_verifier_rebuilds_the_registrys_bytes(chained: Brain, edge: tuple[Any, ...]) -> None:
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    agent, *rest = edge
    _plant(reg, reg.address, _case(agent, *rest))
    _verify(reg, str(reg.address), agent)


def test_size_zero_is_null_whatever_the_root(chained: Brain) -> None:
    """Evidence is null when its size is 0 (lineage/shares.md §3), even with a root left in storage."""
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    _plant(
        reg,
        reg.address,
        _case(cfg.agent_id, dev_account(0).address, 0, None, {"size": 0, "root": "0x" + "aa" * 32}, None),
    )
    assert '"evidence":null' in base64.b64decode(_verify(reg, str(reg.address), cfg.agent_id)[29:]).decode()


def test_a_256_byte_location_by_transaction_and_257_refused(chained: Brain) -> None:
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    fns = reg.bound().functions
    full = (ALLOWED * 3)[:256]
    reg.send(dev_account(0), fns.setLocation(cfg.agent_id, full), what="a 256-byte location")
    assert full in base64.b64decode(_verify(reg, str(reg.address), cfg.agent_id)[29:]).decode()
    with pytest.raises(ChainError, match="InvalidLocation"):
        reg.send(dev_account(0), fns.setLocation(cfg.agent_id, full + "a"), what="a 257-byte location")
    for bad in (" ", "\x7f", "\x20", "é", '"', "\\", "{", "}", "a\x00"):
        with pytest.raises(ChainError, match="InvalidLocation"):
            reg.send(dev_account(0), fns.setLocation(cfg.agent_id, bad), what="a location outside the charset")


def test_after_the_sequence_wraps_the_metadata_is_still_the_specs_bytes(chained: Brain) -> None:
    """The sequence is a uint64 that wraps (contracts/BrainRegistry.sol `commit`; docs/lineage/shares.md §3):
    at 2^64 - 1 one more commit makes it 0, and J then says head null although headOf holds the new
    root.  The verifier of lineage/shares.md §4 still rebuilds the registry's bytes exactly."""
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    head = bytes.fromhex("11" * 32)
    _plant(
        reg,
        reg.address,
        _case(cfg.agent_id, dev_account(0).address, (1 << 64) - 1, "blake3-tree-v1:" + head.hex(), None, None),
    )
    reg.send(dev_account(0), reg.bound().functions.commit(cfg.agent_id, head, b"\x22" * 32), what="the 2^64th")
    uri = _verify(reg, str(reg.address), cfg.agent_id)
    assert reg.head(cfg.agent_id) == b"\x22" * 32 and reg.sequence(cfg.agent_id) == 0
    assert '"head":null,"sequence":0,' in base64.b64decode(uri[29:]).decode()


def test_holders_from_an_incomplete_log_are_refused_not_shown_as_the_supply(chained: Brain) -> None:
    """Holders come from transfer logs since the config's deploy block: a deploy block after the
    registration (or a node that lost logs) misses holders, and the supply would be understated.
    The mint in the logs must account for every share the named addresses hold."""
    from tests.harness.cli import run_ledger

    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    owner, one = dev_account(0), dev_account(1)
    reg.send(
        owner,
        reg.bound().functions.safeTransferFrom(owner.address, one.address, cfg.agent_id, 250, b""),
        what="a transfer",
    )
    reg.node.call("anvil_mine", "0x1")
    chained.update_config(chain={**chained.config["chain"], "deploy_block": reg.block_number()})  # after both
    proc = run_ledger("--brain", str(chained.root), "chain", "status", "--json")  # before: supply 750, one unseen
    assert proc.returncode == 1 and "some logs are missing" in proc.stderr, proc.stdout + proc.stderr
