"""The contract at a brain's registry address must be a BrainRegistry built from this repository
(docs/lineage.md, 'The registry's code'; ADR 54).

A look-alike (tests/fixtures/lookalike/LookAlikeRegistry.sol, compiled here with the repo's forge) answers
every view and emits every event as the real registry does, plus a door its deployer keeps.  Every check
that only asks the contract questions passes it; ``verify --chain``, ``chain status`` and ``report --rpc``
must refuse it by its code.  Real anvil, real forge, the real CLI.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from ledger.brain import Brain
from ledger.chain.abi import hexbytes
from ledger.chain.config import ChainConfig
from ledger.chain.identity import check_registry_code, expected_immutables, known_builds
from ledger.chain.keys import dev_account
from ledger.chain.registry import Registry
from ledger.errors import ChainError
from ledger.protocol.signing import keccak
from tests.harness.cli import run_ledger

ROOT = Path(__file__).resolve().parents[2]
NOT_KNOWN = re.compile(
    r"the contract at 0x[0-9a-fA-F]{40} is not a BrainRegistry this ledger knows: "
    r"code hash 0x[0-9a-f]{64}"
)


@pytest.fixture(scope="module")
def lookalike_bytecode(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("forge")
    subprocess.run(
        [
            str(ROOT / "scripts" / "forge"),
            "build",
            "tests/fixtures/lookalike/LookAlikeRegistry.sol",
            "-q",
            "--out",
            str(out / "out"),
            "--cache-path",
            str(out / "cache"),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    built = json.loads((out / "out" / "LookAlikeRegistry.sol" / "LookAlikeRegistry.json").read_text())
    return str(built["bytecode"]["object"])


def _deploy(rpc: str, bytecode: str) -> Registry:
    reg = Registry(rpc)
    receipt = reg.send(
        dev_account(0), reg.w3.eth.contract(abi=reg.abi, bytecode=bytecode).constructor(), what="deploying a registry"
    )
    return Registry(rpc, receipt["contractAddress"])


@pytest.fixture
def on_lookalike(chained: Brain, lookalike_bytecode: str) -> Brain:
    """The brain moved to a look-alike registry, registered there with 1,000 shares and one root anchored."""
    cfg = ChainConfig.of(chained)
    fake = _deploy(str(cfg.rpc), lookalike_bytecode)
    fake.send(dev_account(0), fake.bound().functions.register(b"\x02" * 32, 1000), what="registering")
    agent = fake.bound().functions.agentIdOf(dev_account(0).address, b"\x02" * 32).call()
    chained.update_config(
        chain={**chained.config["chain"], "registry": fake.address, "agent_id": f"0x{agent:064x}", "deploy_block": 0}
    )
    b = ("--brain", str(chained.root))
    run_ledger(*b, "skill", "create", "s", "--description", "S skill", check=True)
    run_ledger(*b, "chain", "anchor", check=True)  # anchored on the look-alike, which records it as the real one would
    assert fake.sequence(agent) >= 1
    return chained


def test_verify_chain_fails_a_lookalike_registry(on_lookalike: Brain) -> None:
    proc = run_ledger("--brain", str(on_lookalike.root), "verify", "--chain", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1, "the audit passed a look-alike registry"
    code = doc["checks"]["chain.code"]
    assert code["ok"] is False and not code["skipped"] and NOT_KNOWN.search(code["summary"]), code
    assert all(doc["checks"][n]["skipped"] for n in ("chain.events", "chain.roots", "chain.head"))  # its word: none
    human = run_ledger("--brain", str(on_lookalike.root), "verify", "--chain")
    assert human.returncode == 1 and NOT_KNOWN.search(human.stdout), human.stdout


def test_chain_status_refuses_a_lookalike_registry(on_lookalike: Brain) -> None:
    for args in (("chain", "status"), ("chain", "status", "--json")):
        proc = run_ledger("--brain", str(on_lookalike.root), *args)
        assert proc.returncode == 1, proc.stdout
        assert NOT_KNOWN.search(proc.stderr) and "mistyped" in proc.stderr, proc.stderr
        assert "1000" not in proc.stdout  # no share figure from the look-alike


def test_the_page_ticks_nothing_a_lookalike_registry_reports(on_lookalike: Brain, tmp_path: Path) -> None:
    cfg = ChainConfig.of(on_lookalike)
    out = tmp_path / "page"
    proc = run_ledger("--brain", str(on_lookalike.root), "report", "-o", str(out), "--rpc", str(cfg.rpc))
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the audit behind the page fails
    page = (out / "index.html").read_text()
    assert re.search(r'<section id="summary" data-verdict="failing"', page), "the verdict leads with FAILING"
    for box in ("shares", "anchored"):  # no chain figure ticked
        tag = re.search(rf'<div id="{box}"[^>]*>', page)
        assert tag is not None and 'data-checked="true"' not in tag.group(0), tag
    assert NOT_KNOWN.search(page), "the page says why the chain's figures are not checked"


def test_the_known_builds_pass_and_a_moved_copy_does_not(chained: Brain) -> None:
    """This release's registry and v1.8's pass, each immutable holding its one value; the same runtime
    code put at another address (its immutables name the first) fails on them, by name."""
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    assert check_registry_code(reg, str(cfg.registry), reg.chain_id).name == "BrainRegistry of this release"
    old = json.loads((ROOT / "tests" / "fixtures" / "BrainRegistry-v1.8.json").read_text())["bytecode"]
    legacy = _deploy(str(cfg.rpc), old)
    assert check_registry_code(reg, str(legacy.address), reg.chain_id).name == "BrainRegistry of lineage v1.8"
    code = reg.node.call("eth_getCode", cfg.registry, "latest")
    elsewhere = "0x" + "42" * 20
    reg.node.call("anvil_setCode", elsewhere, code)
    with pytest.raises(ChainError, match=r"immutable _cachedDomainSeparator is 0x[0-9a-f]{64}, not"):
        check_registry_code(reg, elsewhere, reg.chain_id)
    with pytest.raises(ChainError, match=r"has the code of the BrainRegistry of this release, but"):
        check_registry_code(reg, str(cfg.registry), reg.chain_id + 1)  # another chain's id
    # One byte changed outside the immutables: not a known build, named by its code hash.
    raw = bytearray(hexbytes(code))
    raw[100] ^= 1
    reg.node.call("anvil_setCode", elsewhere, "0x" + raw.hex())
    with pytest.raises(ChainError, match=f"code hash 0x{keccak(bytes(raw)).hex()}"):
        check_registry_code(reg, elsewhere, reg.chain_id)


def test_the_pinned_immutables_are_the_compilers() -> None:
    """The shipped artifact's immutables are the seven EIP712 names, one 32-byte slot each, after PUSH32."""
    (current, v18) = known_builds()
    for build in (current, v18):
        assert set(build.immutables) == set(expected_immutables(1, "0x" + "00" * 20))
    code = hexbytes(json.loads((ROOT / "ledger" / "artifacts" / "BrainRegistry.json").read_text())["deployedBytecode"])
    slots = [at for offsets in current.immutables.values() for at in offsets]
    assert all(code[at - 1] == 0x7F and code[at : at + 32] == bytes(32) for at in slots)  # PUSH32, left zero
