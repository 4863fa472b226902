"""The share token: its metadata follows the head (docs/lineage/shares.md), its holders, and the CLI.

Real anvil, real registry, real ``cast`` and web3; the metadata is checked against the committed
vectors (tests/vectors/token/metadata.json) and against EIP-1155's metadata JSON schema.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ledger.brain import Brain
from ledger.chain import anvil
from ledger.chain.abi import call_data, decode_string
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME, dev_account
from ledger.chain.registry import Registry
from ledger.chain.shares import (
    DATA_URI_PREFIX,
    check_location,
    decode_uri,
    metadata_json,
    read_metadata,
    read_shares,
    token_uri,
)
from ledger.errors import ChainError
from ledger.protocol.signing import keccak
from tests.harness.cli import run_ledger

ROOT = Path(__file__).resolve().parents[3]
CAST = ROOT / "node_modules" / ".bin" / "cast"
VECTORS = json.loads((ROOT / "tests" / "vectors" / "token" / "metadata.json").read_text())["cases"]
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "erc1155-metadata.schema.json").read_text())
AGENTS_SLOT, EVIDENCE_SLOT, LOCATIONS_SLOT = 6, 11, 12  # `forge inspect BrainRegistry storageLayout`


def _env(brain: Brain) -> dict[str, str]:
    return {"LEDGER_BRAIN": str(brain.root)}


def use_a_v18_registry(chained: Brain) -> ChainConfig:
    """Deploy the previous release's registry (lineage v1.8: its ``uri`` is empty), register an agent on
    it with 10 shares, and point ``chained`` at it; returns the brain's chain config before the switch."""
    old = json.loads((ROOT / "tests" / "fixtures" / "BrainRegistry-v1.8.json").read_text())["bytecode"]
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc)
    receipt = reg.send(
        dev_account(0), reg.w3.eth.contract(abi=reg.abi, bytecode=old).constructor(), what="deploying a v1.8 registry"
    )
    legacy = Registry(cfg.rpc, receipt["contractAddress"])
    reg.send(dev_account(0), legacy.bound().functions.register(b"\x01" * 32, 10), what="registering")
    agent = legacy.bound().functions.agentIdOf(dev_account(0).address, b"\x01" * 32).call()
    chained.update_config(
        chain={**chained.config["chain"], "registry": legacy.address, "agent_id": f"0x{agent:064x}", "deploy_block": 0}
    )
    return cfg


def _status(brain: Brain) -> dict[str, Any]:
    return json.loads(run_ledger("chain", "status", "--json", env=_env(brain), check=True).stdout)


def _inputs(case: dict[str, Any]) -> dict[str, Any]:
    ev = case["evidence"]
    return {
        "agent_id": int(case["agent_id"], 16),
        "chain_id": case["chain_id"],
        "registry": case["registry"],
        "owner": case["owner"],
        "head": case["head"],
        "sequence": case["sequence"],
        "evidence": None if ev is None else (ev["size"], ev["root"]),
        "location": case["location"],
    }


def _valid_metadata(doc: dict[str, Any]) -> None:
    """EIP-1155's schema, and the members a wallet shows: the schema itself requires none."""
    jsonschema.validate(doc, SCHEMA)
    assert set(doc) == {"name", "description", "decimals", "properties"} and doc["decimals"] == 0


# --------------------------------------------------------------------------- the exact bytes


@pytest.mark.parametrize("case", VECTORS, ids=[c["inputs"]["name"] for c in VECTORS])
def test_the_builder_gives_the_vectors_bytes(case: dict[str, Any]) -> None:
    raw = metadata_json(**_inputs(case["inputs"]))
    assert raw == case["json"].encode("ascii")
    assert token_uri(raw) == case["uri"] and case["uri"].startswith(DATA_URI_PREFIX)
    meta = decode_uri(case["uri"])
    assert (meta.head, meta.sequence, meta.location) == (
        case["inputs"]["head"],
        case["inputs"]["sequence"],
        case["inputs"]["location"],
    )
    _valid_metadata(meta.json)


def _reencoded(doc_text: str) -> str:
    return DATA_URI_PREFIX + base64.b64encode(doc_text.encode()).decode()


def test_decode_refuses_anything_but_the_exact_form() -> None:
    good = VECTORS[1]
    text, uri = good["json"], good["uri"]
    doc = json.loads(text)
    props = doc["properties"]
    bad = {
        "another media type": uri.replace("application/json", "text/plain", 1),
        "percent-encoded, not base64": "data:application/json," + text,
        "whitespace in the JSON": _reencoded(json.dumps(doc)),
        "keys sorted": _reencoded(json.dumps(doc, separators=(",", ":"), sort_keys=True)),
        "uppercase hex": _reencoded(text.replace(props["agent_id"], props["agent_id"].upper().replace("0X", "0x"))),
        "a key twice": _reencoded(text[:-2] + ',"location":null}}'),
        "a field added": _reencoded(text.replace('"decimals":0,', '"decimals":0,"image":"x",')),
        "head without a sequence": _reencoded(text.replace('"sequence":2', '"sequence":0')),
        "an escaped character": _reencoded(text.replace("example.org", "example\\u002eorg")),
        "base64 without its padding": uri.rstrip("="),
        "base64 with trailing bits set": uri[:-3] + ("B" if uri[-3] == "A" else "A") + uri[-2:]
        if uri.endswith("=")
        else uri + "=",
    }
    for what, candidate in bad.items():
        with pytest.raises(ChainError) as info:
            decode_uri(candidate)
        assert info.value.hint, what


@pytest.mark.parametrize(
    "location", ["a b", 'say"', "back\\slash", "x/{id}.json", "}", "tab\t", "é", "\x7f", "x" * 257]
)
def test_a_location_outside_the_charset_is_refused(location: str) -> None:
    with pytest.raises(ChainError):
        check_location(location)
    with pytest.raises(ChainError):
        metadata_json(**{**_inputs(VECTORS[1]["inputs"]), "location": location})


# --------------------------------------------------------------------------- the registry


def _slot(key: int, base: int) -> int:
    return int.from_bytes(keccak(key.to_bytes(32, "big") + base.to_bytes(32, "big")), "big")


def _plant(reg: Registry, at: str, case: dict[str, Any]) -> None:
    """The case's state written into the registry's storage at ``at`` (layout of `forge inspect`)."""
    node = reg.node

    def put(slot: int, value: int) -> None:
        node.call("anvil_setStorageAt", at, hex(slot), "0x" + value.to_bytes(32, "big").hex())

    agent = int(case["agent_id"], 16)
    slot = _slot(agent, AGENTS_SLOT)
    put(slot, int(case["owner"], 16) | case["sequence"] << 160)
    put(slot + 1, int(case["head"].split(":")[1], 16) if case["head"] else 0)
    ev = case["evidence"] or {"size": 0, "root": "0x00"}
    put(_slot(agent, EVIDENCE_SLOT), ev["size"])
    put(_slot(agent, EVIDENCE_SLOT) + 1, int(ev["root"], 16))
    text = (case["location"] or "").encode()
    where = _slot(agent, LOCATIONS_SLOT)
    if len(text) < 32:  # a short string: bytes and 2 * length in the slot
        put(where, int.from_bytes(text.ljust(31, b"\0") + bytes([2 * len(text)]), "big"))
    else:  # a long one: 2 * length + 1 in the slot, the bytes from keccak(slot)
        put(where, 2 * len(text) + 1)
        data = int.from_bytes(keccak(where.to_bytes(32, "big")), "big")
        for i in range(0, len(text), 32):
            put(data + i // 32, int.from_bytes(text[i : i + 32].ljust(32, b"\0"), "big"))


def test_the_registry_gives_the_vectors_bytes(chained: Brain, node: anvil.Node) -> None:
    """Each vector's inputs planted in a registry's storage (code copied to the vector's address, the
    node's chain id set to the vector's): ``uri`` answers the vector's string byte for byte."""
    cfg = ChainConfig.of(chained)
    reg = Registry(node.url, cfg.registry)
    code = reg.node.call("eth_getCode", reg.address, "latest")
    try:
        for case in VECTORS:
            inputs = case["inputs"]
            reg.node.call("anvil_setChainId", inputs["chain_id"])
            reg.node.call("anvil_setCode", inputs["registry"], code)
            _plant(reg, inputs["registry"], inputs)
            data = "0x" + call_data("uri(uint256)", int(inputs["agent_id"], 16)).hex()
            answer = reg.node.call("eth_call", {"to": inputs["registry"], "data": data}, "latest")
            assert decode_string(bytes.fromhex(answer[2:])) == case["uri"], inputs["name"]
            planted = Registry(node.url, inputs["registry"])
            assert read_metadata(planted, int(inputs["agent_id"], 16)).uri == case["uri"]  # the views agree
    finally:
        reg.node.call("anvil_setChainId", 31337)


def _cast_uri(cfg: ChainConfig) -> dict[str, Any]:
    """``cast call … uri(uint256)(string)`` and a base64 decode, as a holder would read it by hand."""
    out = subprocess.run(
        [str(CAST), "call", cfg.registry, "uri(uint256)(string)", str(cfg.agent_id), "--rpc-url", cfg.rpc],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    uri = json.loads(out.stdout)  # cast prints the string quoted
    assert uri.startswith(DATA_URI_PREFIX)
    return json.loads(base64.b64decode(uri[len(DATA_URI_PREFIX) :], validate=True))


def test_uri_follows_the_head_across_two_commits(chained: Brain) -> None:
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    heads = []
    for name in ("first", "second"):
        chained.create(name, f"The {name} skill", "x\n")
        run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, env=_env(chained), check=True)
        status = _status(chained)
        by_cast = _cast_uri(cfg)
        by_web3 = decode_uri(reg.bound().functions.uri(cfg.agent_id).call()).json
        assert by_cast == by_web3
        _valid_metadata(by_cast)
        props = by_cast["properties"]
        assert props["head"] == status["onchain_head"] == status["local_head"]
        assert props["sequence"] == status["onchain_seq"]
        assert props["agent_id"] == status["agent"] and props["registry"] == status["registry"].lower()
        assert status["shares"]["metadata"]["head"] == props["head"]
        heads.append(props["head"])
    assert heads[0] != heads[1]
    assert reg.w3.eth.get_code(reg.address)  # and the code is under EIP-170's limit
    assert len(reg.w3.eth.get_code(reg.address)) <= 24_576


def test_holders_and_supply_follow_transfers(chained: Brain) -> None:
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    owner, one, two = dev_account(0), dev_account(1), dev_account(2)
    token = reg.bound().functions
    reg.send(owner, token.safeTransferFrom(owner.address, one.address, cfg.agent_id, 250, b""), what="a transfer")
    reg.send(
        owner,
        token.safeBatchTransferFrom(owner.address, two.address, [cfg.agent_id, cfg.agent_id], [100, 1], b""),
        what="a batch transfer",
    )
    reg.send(one, token.safeTransferFrom(one.address, two.address, cfg.agent_id, 250, b""), what="all of one's")
    # another agent's shares, held by the same addresses, are not this token's
    reg.send(one, token.register(b"\x07" * 32, 7), what="another agent")
    other = reg.bound().functions.agentIdOf(one.address, b"\x07" * 32).call()
    reg.send(one, token.safeTransferFrom(one.address, two.address, other, 3, b""), what="another token")
    shares = _status(chained)["shares"]
    assert shares["token"] == reg.address and shares["id"] == f"0x{cfg.agent_id:064x}"
    assert shares["total_supply"] == 1000 and shares["owner"] == owner.address and shares["owner_balance"] == 649
    assert shares["holders"] == [
        {"address": owner.address, "balance": 649},
        {"address": two.address, "balance": 351},
    ]  # one holds none now: not listed
    assert read_shares(cfg.rpc, cfg.registry, cfg.agent_id).to_json() == shares
    human = run_ledger("chain", "status", env=_env(chained), check=True).stdout
    assert "supply          1,000 shares" in human and f"{two.address}  351" in human and "holders         2" in human


def test_a_location_is_set_by_the_owner_only_and_shown_in_the_metadata(chained: Brain) -> None:
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    env = _env(chained)
    assert run_ledger("chain", "location", env=env, check=True).stdout.startswith("no location published")
    url = "https://example.org/brains/ours.git?ref=main#v1"
    run_ledger("chain", "location", url, "--key", DEV_KEY_NAME, env=env, check=True)
    assert json.loads(run_ledger("chain", "location", "--json", env=env, check=True).stdout)["location"] == url
    assert _cast_uri(cfg)["properties"]["location"] == url == _status(chained)["shares"]["metadata"]["location"]
    nonce = reg.w3.eth.get_transaction_count(dev_account(0).address)
    refused = run_ledger("chain", "location", "https://example.org/a b", "--key", DEV_KEY_NAME, env=env)
    assert refused.returncode == 2 and "character 22 is a space" in refused.stderr
    assert "percent-encode" in refused.stderr
    assert reg.w3.eth.get_transaction_count(dev_account(0).address) == nonce  # nothing was sent
    with pytest.raises(ChainError, match=r"NotAgentOwner\(agentId=0x"):
        reg.send(
            dev_account(1),
            reg.bound().functions.setLocation(cfg.agent_id, "https://evil.example"),
            what="setting another's location",
        )
    run_ledger("chain", "location", "--clear", "--key", DEV_KEY_NAME, env=env, check=True)
    assert _cast_uri(cfg)["properties"]["location"] is None


def test_metadata_the_registry_could_not_have_built_is_refused(chained: Brain) -> None:
    """A location planted past setLocation's checks (a quote) breaks the JSON: the reader says so."""
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    status = _status(chained)
    inputs = {
        "agent_id": status["agent"],
        "owner": dev_account(0).address,
        "sequence": status["onchain_seq"],
        "head": status["onchain_head"],
        "evidence": None,
        "location": 'x","image":"y',
    }
    _plant(reg, reg.address, inputs)
    with pytest.raises(ChainError, match="registry's JSON"):
        read_metadata(reg, cfg.agent_id)
    proc = run_ledger("chain", "status", env=_env(chained))
    assert proc.returncode == 1 and "token metadata" in proc.stderr


def test_register_shows_the_share_token(tmp_path: Path, node: anvil.Node) -> None:
    b = ("--brain", str(tmp_path / "b"))
    run_ledger("init", str(tmp_path / "b"), check=True)
    for step in (("chain", "use", node.url), ("chain", "deploy")):
        run_ledger(*b, *step, check=True)
    out = json.loads(run_ledger(*b, "chain", "register", "--shares", "5000", "--json", check=True).stdout)
    assert out["shares"]["total_supply"] == out["shares"]["owner_balance"] == 5000
    assert out["shares"]["id"] == out["agent"] and out["shares"]["token"] == out["registry"]
    assert out["shares"]["metadata"]["head"] is None and out["shares"]["metadata"]["sequence"] == 0


def test_a_registry_from_before_the_token_metadata_still_gives_a_status(chained: Brain) -> None:
    """A brain on a v1.8 registry (deployed before this version; its ``uri`` is empty): ``chain status``
    still answers, and says why it shows no shares instead of failing or guessing."""
    use_a_v18_registry(chained)
    status = _status(chained)
    assert status["shares"] is None and "deployed before share tokens had metadata" in status["shares_unavailable"]
    human = run_ledger("chain", "status", env=_env(chained), check=True).stdout
    assert "shares          not shown: the registry" in human
