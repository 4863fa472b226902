"""Chain integration on a real anvil: batches, idempotence, crash recovery, refusals, keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.anchoring.commits import commit_pending
from ledger.brain import Brain
from ledger.chain import anvil
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME
from ledger.chain.receipts import read_receipts
from ledger.chain.registry import Registry
from ledger.errors import ChainError
from tests.harness.brains import fingerprint
from tests.harness.cli import run_ledger
from tests.harness.localhttp import refused_url

pytestmark = pytest.mark.chain


def _env(brain: Brain, **extra: str) -> dict[str, str]:
    return {"LEDGER_BRAIN": str(brain.root), **extra}


def _nonce(brain: Brain, address: str) -> int:
    cfg = ChainConfig.of(brain)
    return Registry(cfg.rpc).w3.eth.get_transaction_count(address)


def _dev_address() -> str:
    from ledger.chain.keys import dev_account

    return dev_account(0).address


def test_twenty_upserts_committed_in_batches_match_git_lineage(chained: Brain) -> None:
    for i in range(20):
        chained.upsert(f"---\nname: skill-{i % 4}\ndescription: d\n---\nrevision {i}\n")
    proc = run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, "--batch", "6", "--json", env=_env(chained), check=True)
    result = json.loads(proc.stdout)
    lineage = list(reversed(list(chained.store.lineage())))
    assert result["committed"] == len(lineage) == 21
    assert len(result["transactions"]) == 4  # 6 + 6 + 6 + 3
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    assert reg.sequence(cfg.agent_id) == 21
    assert reg.head(cfg.agent_id) == chained.head().snap.root
    assert [e["root"] for e in reg.events(cfg.agent_id)] == [s.root for s in lineage]
    receipts = read_receipts(chained.store)
    assert [receipts[s.commit]["seq"] for s in lineage] == list(range(1, 22))
    log = json.loads(run_ledger("log", "--json", env=_env(chained), check=True).stdout)
    assert all(entry["chain"]["block_hash"].startswith("0x") for entry in log)


def test_second_commit_sends_no_transaction(chained: Brain) -> None:
    chained.create("a", "A", "x\n")
    commit_pending(chained, key=DEV_KEY_NAME)
    before = _nonce(chained, _dev_address())
    proc = run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, env=_env(chained), check=True)
    assert "nothing to commit" in proc.stdout
    assert _nonce(chained, _dev_address()) == before


def test_crash_between_send_and_record_recovers_without_duplicates(chained: Brain) -> None:
    for i in range(5):
        chained.create(f"s{i}", "S", "x\n")
    proc = run_ledger(
        "chain",
        "anchor",
        "--key",
        DEV_KEY_NAME,
        "--batch",
        "2",
        env=_env(chained, LEDGER_CRASHPOINT="chain-after-send"),
    )
    assert proc.returncode == 86
    assert read_receipts(chained.store) == {}  # sent, but nothing recorded
    nonce_after_crash = _nonce(chained, _dev_address())
    again = json.loads(
        run_ledger(
            "chain", "anchor", "--key", DEV_KEY_NAME, "--batch", "2", "--json", env=_env(chained), check=True
        ).stdout
    )
    assert again["reconciled"] == 2  # the crashed batch, recovered from events
    assert again["committed"] == 4  # the rest: 6 snapshots in all
    assert _nonce(chained, _dev_address()) == nonce_after_crash + 2
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    roots = [e["root"] for e in reg.events(cfg.agent_id)]
    assert len(roots) == len(set(roots)) == 6 and reg.sequence(cfg.agent_id) == 6
    receipts = read_receipts(chained.store)
    assert {s.commit for s in chained.store.lineage()} == set(receipts)


def test_stale_parent_reverts_and_the_client_says_why(chained: Brain, tmp_path: Path) -> None:
    chained.create("a", "A", "x\n")
    commit_pending(chained, key=DEV_KEY_NAME)
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    from ledger.chain.keys import dev_account

    stale = list(chained.store.lineage())[1].root
    with pytest.raises(ChainError, match=r"StaleParent\(agentId=0x[0-9a-f]+, head=0x[0-9a-f]{64}, parent=0x") as info:
        reg.send(dev_account(0), reg.bound().functions.commit(cfg.agent_id, stale, b"\x11" * 32), what="a stale commit")
    assert "head moved" in (info.value.hint or "")
    # Another brain pointed at this agent is refused, naming where the lineages part
    # (seq 1 is the empty genesis root, which every brain shares).
    fork = Brain.init(tmp_path / "fork")
    fork.update_config(chain=chained.config["chain"])
    proc = run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, env=_env(fork))
    assert proc.returncode == 1 and "diverges from this brain at chain sequence 2" in proc.stderr
    fork.close()


def test_refusals_lose_nothing(chained: Brain, node: anvil.Node, tmp_path: Path) -> None:
    chained.create("a", "A", "x\n")
    before = fingerprint(chained.root)
    cfg = chained.config["chain"]
    env = _env(chained, LEDGER_KEYSTORE=str(tmp_path / "ks"), LEDGER_KEY_PASSWORD="pw")
    # an unfunded key
    address = run_ledger("keys", "new", "poor", env=env, check=True).stdout.strip()
    proc = run_ledger("chain", "authorize", address, "--key", DEV_KEY_NAME, env=env, check=True)
    proc = run_ledger("chain", "anchor", "--key", "poor", env=env)
    assert proc.returncode == 1 and "insufficient funds" in proc.stderr, proc.stderr
    # an unreachable RPC
    chained.update_config(chain={**cfg, "rpc": refused_url()})
    proc = run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, env=env)
    assert proc.returncode == 1 and "cannot reach the RPC endpoint" in proc.stderr
    # a wrong chain id
    chained.update_config(chain={**cfg, "chain_id": 1})
    proc = run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, env=env)
    assert proc.returncode == 1 and "wrong chain" in proc.stderr
    chained.update_config(chain=cfg)
    after = {k: v for k, v in fingerprint(chained.root).items() if k != ".ledger/config.json"}
    assert after == {k: v for k, v in before.items() if k != ".ledger/config.json"}
    assert commit_pending(chained, key=DEV_KEY_NAME).committed == 2  # nothing was lost


def test_auto_commit_flag_and_config(chained: Brain) -> None:
    env = _env(chained)
    chained.update_config(chain={**chained.config["chain"], "key": DEV_KEY_NAME})
    proc = run_ledger("skill", "create", "a", "--description", "A", "--anchor", "--json", env=env, check=True)
    receipt = json.loads(proc.stdout)
    assert receipt["chain"]["seq"] == 2 and receipt["chain"]["root"] == receipt["root"]
    chained.update_config(auto_commit=True)
    proc = run_ledger(
        "skill", "patch", "a", "--old", "description: A", "--new", "description: B", "--json", env=env, check=True
    )
    assert json.loads(proc.stdout)["chain"]["seq"] == 3
    chained.update_config(auto_commit=False)
    run_ledger("skill", "delete", "a", env=env, check=True)
    st = json.loads(run_ledger("status", "--json", env=env, check=True).stdout)
    assert st["pending_chain"] == 1


def test_gas_figures(chained: Brain) -> None:
    """Receipts on anvil (intrinsic 21,000 included). Targets: batch +root <= 8,000; register <= 150,000."""
    for i in range(12):
        chained.create(f"g{i}", "G", "x\n")
    commit_pending(chained, key=DEV_KEY_NAME, batch=1)  # 13 single commits, all past the first: steady state
    receipts = read_receipts(chained.store)
    singles = sorted({r["gas_used"] for r in receipts.values() if r["seq"] > 1})
    assert singles[-1] - singles[0] < 200, singles  # only calldata zero bytes differ
    for i in range(10):
        chained.patch(f"g{i}", "x", "y")
    commit_pending(chained, key=DEV_KEY_NAME, batch=10)
    batch = {r["gas_used"] for r in read_receipts(chained.store).values() if r["seq"] > 13}
    (batch_gas,) = batch
    per_extra = (batch_gas - singles[-1]) / 9
    assert per_extra <= 8_000, per_extra
    # the budget: a steady-state commit within 35,000 gas a transaction (docs/BENCHMARKS.md), the share
    # token's metadata included (a view: `uri` builds it at call time, `commit` writes nothing for it)
    assert singles[-1] <= 35_000, singles
    print(f"\nGAS single-commit={singles[-1]} batch10={batch_gas} per-extra-root={per_extra:.0f}")


def test_dev_key_refused_off_31337(tmp_path: Path) -> None:
    state = tmp_path / "anvil1337"
    other = anvil.start(state, chain_id=1337, persist=False, lifetime=300)
    try:
        brain = Brain.init(tmp_path / "b")
        brain.update_config(chain={"rpc": other.url})
        brain.close()
        proc = run_ledger("chain", "deploy", "--key", DEV_KEY_NAME, env={"LEDGER_BRAIN": str(tmp_path / "b")})
        assert proc.returncode == 1 and "well-known anvil development key" in proc.stderr
        assert "chain id 1337" in proc.stderr
    finally:
        anvil.stop(state)


def test_keys_never_take_secrets_from_argv(tmp_path: Path) -> None:
    env = {"LEDGER_KEYSTORE": str(tmp_path / "ks"), "LEDGER_KEY_PASSWORD": "s3cret-pass"}
    secret = "0x" + "7" * 64
    proc = run_ledger("keys", "import", "ops", env=env, input=secret + "\n", check=True)
    from eth_account import Account

    assert proc.stdout.strip() == Account.from_key(secret).address
    stored = (tmp_path / "ks" / "ops.json").read_text()
    assert "7777777777" not in stored and "s3cret-pass" not in stored
    assert oct((tmp_path / "ks" / "ops.json").stat().st_mode & 0o777) == "0o600"
    listed = json.loads(run_ledger("keys", "list", "--json", env=env, check=True).stdout)
    stored_keys = [k["address"].lower() for k in listed if k["name"] != "anvil-dev"]
    assert stored_keys == [Account.from_key(secret).address.lower()]
    wrong = run_ledger("keys", "import", "ops", env=env, input=secret + "\n")
    assert wrong.returncode == 1 and "already exists" in wrong.stderr
    # the import subcommand has no option that could carry a key
    help_text = run_ledger("keys", "import", "--help", check=True).stdout
    assert "--key" not in help_text and "--private" not in help_text


def test_chain_up_and_down_persist_state(tmp_path: Path) -> None:
    brain_dir = tmp_path / "b"
    run_ledger("init", str(brain_dir), check=True)
    env = {"LEDGER_BRAIN": str(brain_dir)}
    url = run_ledger("chain", "up", env=env, check=True).stdout.strip()
    try:
        assert url.startswith("http://127.0.0.1:")
        run_ledger("chain", "deploy", "--key", DEV_KEY_NAME, env=env, check=True)
        registry = json.loads((brain_dir / ".ledger" / "config.json").read_text())["chain"]["registry"]
    finally:
        run_ledger("chain", "down", env=env, check=True)
    run_ledger("chain", "up", env=env, check=True)
    try:
        reg = Registry(json.loads((brain_dir / ".ledger" / "config.json").read_text())["chain"]["rpc"])
        assert len(reg.w3.eth.get_code(registry)) > 0, "state did not survive down/up"
    finally:
        run_ledger("chain", "down", env=env, check=True)
    assert not (brain_dir / ".ledger" / "anvil" / "node.json").exists()


def test_web3_only_loads_for_chain_commands() -> None:
    code = "import sys, ledger.cli, ledger.brain; assert 'web3' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert os.environ.get("LEDGER_CRASHPOINT") is None


def test_the_head_of_selector_is_keccak_of_its_signature() -> None:
    from eth_utils import keccak

    from ledger.chain.config import HEAD_OF_SELECTOR

    assert keccak(text="headOf(uint256)")[:4].hex() == HEAD_OF_SELECTOR


def test_status_and_an_idle_commit_never_load_web3(chained: Brain) -> None:
    chained.create("a", "A", "x\n")
    commit_pending(chained, key=DEV_KEY_NAME)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    for args in (["status"], ["commit"], ["log", "-n", "1"], ["verify"]):
        proc = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-c",
                "from ledger._entry import main; main()",
                "--brain",
                str(chained.root),
                *args,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 0, (args, proc.stderr[-2000:])
        imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
        assert not {m for m in imported if m == "web3" or m.startswith("web3.")}, args
    assert "nothing to commit" in run_ledger("--brain", str(chained.root), "chain", "anchor").stdout
