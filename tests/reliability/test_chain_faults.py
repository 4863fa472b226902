"""Chain faults on a real anvil: a codeless registry, a reorg, a killed node, forged roots, leaked secrets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ledger.anchoring.commits import deploy, register
from ledger.brain import Brain
from ledger.bundle.merkle import KIND_DIR, KIND_FILE, Digest, DirNode, file_digest
from ledger.chain import anvil
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME
from ledger.chain.registry import Registry
from ledger.store import gitstore as gs
from tests.harness.cli import run_ledger
from tests.harness.wait import until

pytestmark = [pytest.mark.chain, pytest.mark.slow]


def _ledger(brain: Brain, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ledger("--brain", str(brain.root), *args)


def _rpc(url: str, method: str, *params: object) -> object:
    import urllib.request

    req = urllib.request.Request(
        url,
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["result"]


def _nonce(brain: Brain) -> int:
    from ledger.chain.keys import dev_account

    return Registry(ChainConfig.of(brain).rpc).w3.eth.get_transaction_count(dev_account(0).address)


def test_codeless_registry_is_refused_before_anything_is_sent(chained: Brain) -> None:
    from ledger.chain.keys import dev_account

    chained.create("s", "d", "x\n")
    cfg = chained.config["chain"]
    chained.update_config(chain={**cfg, "registry": dev_account(1).address})  # an account, not a contract
    before = _nonce(chained)
    for args in (["commit", "--key", DEV_KEY_NAME], ["chain", "status"], ["verify", "--chain"]):
        proc = _ledger(chained, *args)
        assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr, (args, proc.stderr[-500:])
        assert "no contract" in proc.stderr, (args, proc.stderr[-300:])
    assert _nonce(chained) == before


def test_reorg_that_drops_commits_is_seen_from_the_chain_and_recommitted(chained: Brain, node: anvil.Node) -> None:
    chained.create("s", "d", "x\n")
    chained.patch("s", "x", "y")
    snap = _rpc(node.url, "evm_snapshot")
    assert _ledger(chained, "commit", "--key", DEV_KEY_NAME).returncode == 0
    local = json.loads(_ledger(chained, "status", "--json").stdout)
    assert local["pending_chain"] == 0
    assert _rpc(node.url, "evm_revert", snap) is True  # the blocks holding our commits are gone
    status = _ledger(chained, "chain", "status", "--json")
    st = json.loads(status.stdout)
    lineage = len(list(chained.store.lineage()))
    assert st["onchain_seq"] == 0 and st["pending"] == lineage and st["stale_receipts"] == lineage
    again = _ledger(chained, "commit", "--key", DEV_KEY_NAME, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["seq"] == lineage
    verify = _ledger(chained, "verify", "--chain")
    assert verify.returncode == 0, verify.stdout


def _dumped_since(state: Path, since: float, timeout: float = 120) -> None:
    """Wait until anvil has written its state (every second, --state-interval 1) twice after ``since``: the
    second write began after the first ended, so after ``since``, and holds every block mined before it.
    (A fixed 1.5 s wait raced on a loaded machine, where a dump can come late.)"""
    seen: set[int] = set()

    def twice() -> bool:
        try:
            mtime = state.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = 0
        if mtime > since * 1e9:
            seen.add(mtime)
        return len(seen) >= 2

    until(twice, timeout, f"anvil to save its state to {state} twice", interval=0.05)


def test_killed_node_gives_clean_errors_and_resumes_from_its_state(tmp_path: Path) -> None:
    brain_dir = tmp_path / "b"
    run_ledger("init", str(brain_dir), check=True)
    env = {"LEDGER_BRAIN": str(brain_dir)}
    run_ledger("chain", "up", env=env, check=True)
    try:
        for args in (
            ["chain", "deploy", "--key", DEV_KEY_NAME],
            ["chain", "register", "--key", DEV_KEY_NAME],
            ["skill", "create", "s", "--description", "d"],
            ["commit", "--key", DEV_KEY_NAME],
        ):
            run_ledger(*args, env=env, check=True)
        _dumped_since(brain_dir / ".ledger" / "anvil" / "state.json", time.time())  # what was committed is saved
        node = json.loads((brain_dir / ".ledger" / "anvil" / "node.json").read_text())
        os.killpg(node["pid"], signal.SIGKILL)
        # gone when its port no longer answers (0.3 s was a guess)
        until(lambda: not anvil.rpc_ready(node["url"]), timeout=60, what="anvil to stop answering after SIGKILL")
        run_ledger("skill", "create", "t", "--description", "d", env=env, check=True)
        for args in (["commit", "--key", DEV_KEY_NAME], ["chain", "status"], ["verify", "--chain"]):
            proc = run_ledger(*args, env=env)
            assert proc.returncode in (1, 2) and "cannot reach" in proc.stderr and "Traceback" not in proc.stderr
        assert run_ledger("status", env=env).returncode == 0
        run_ledger("chain", "up", env=env, check=True)
        done = run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert run_ledger("verify", "--chain", env=env).returncode == 0
    finally:
        run_ledger("chain", "down", env=env)


def test_two_brains_made_in_the_same_second_both_register(tmp_path: Path, node: anvil.Node) -> None:
    a, b = Brain.init(tmp_path / "a"), Brain.init(tmp_path / "b")
    try:
        a.update_config(chain={"rpc": node.url})
        cfg = deploy(a, key=DEV_KEY_NAME)
        b.update_config(chain={"rpc": node.url, "registry": cfg.registry, "chain_id": cfg.chain_id})
        ids = {register(x, shares=1, key=DEV_KEY_NAME).agent_id for x in (a, b)}
        assert len(ids) == 2
    finally:
        a.close()
        b.close()


def test_a_snapshot_whose_root_does_not_match_its_objects_is_never_anchored(chained: Brain) -> None:
    """A forged snapshot below a valid head (as a poisoned digest cache could have written it)."""
    chained.create("s", "d", "x\n")
    head = chained.store.snapshot(chained.store.head())
    store = chained.store
    blob = store.write_blob(b"---\nname: s\ndescription: d\nmetadata:\n  version: '2'\n---\ny\n")
    tree = store.root_tree(store.write_tree([(store.write_tree([(blob, gs.MODE_FILE, "SKILL.md")]), gs.MODE_DIR, "s")]))
    true_root = DirNode(
        {"s": Digest(KIND_DIR, DirNode({"SKILL.md": Digest(KIND_FILE, file_digest(store.read(blob, b"blob")))}).digest)}
    ).digest
    forged_root = b"\x42" * 32
    bad = store.write_commit(
        tree,
        [bytes.fromhex(head.commit)],
        gs.format_message("patch", forged_root, head.root, [gs.Change("update", "s", 2)]),
    )
    good = store.write_commit(
        tree, [bad], gs.format_message("edit", true_root, forged_root, [gs.Change("update", "s", 3)])
    )
    store.move_head(good, bytes.fromhex(head.commit))
    before = _nonce(chained)
    proc = _ledger(chained, "commit", "--key", DEV_KEY_NAME)
    assert proc.returncode == 1 and "refusing to anchor" in proc.stderr, proc.stderr[-400:]
    assert _nonce(chained) == before


def test_key_password_never_reaches_a_child_process(tmp_path: Path) -> None:
    brain_dir = tmp_path / "b"
    run_ledger("init", str(brain_dir), check=True)
    token = "pw-" + os.urandom(8).hex()
    env = {"LEDGER_BRAIN": str(brain_dir), "LEDGER_KEY_PASSWORD": token}
    run_ledger("chain", "up", env=env, check=True)
    try:
        leaked = []
        for proc_dir in Path("/proc").iterdir():
            if not proc_dir.name.isdigit():
                continue
            try:
                if token.encode() in (proc_dir / "environ").read_bytes():
                    leaked.append((proc_dir / "cmdline").read_bytes().replace(b"\0", b" ")[:80])
            except OSError:
                continue
        assert leaked == []
    finally:
        run_ledger("chain", "down", env={"LEDGER_BRAIN": str(brain_dir)})
