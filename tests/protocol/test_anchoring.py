"""The anchoring rule: a snapshot whose root equals its parent's is never anchored separately,
so `ledger commit` can never get stuck on one (issue 18, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.anchoring.commits import commit_pending
from ledger.brain import Brain
from ledger.chain import anvil
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME
from ledger.remotes import sharing
from tests.harness.cli import run_ledger


def _hermes(root: Path, category: str) -> Path:
    """A Hermes tree holding one skill, in ``category``."""
    skill = root / category / "arxiv"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: arxiv\ndescription: Search arXiv\n---\nsearch\n")
    return root


@pytest.mark.chain
def test_a_category_move_never_leaves_commit_stuck(tmp_path: Path, chained: Brain) -> None:
    b = chained
    run_ledger(
        "--brain", str(b.root), "import", str(_hermes(tmp_path / "one", "research")), "--layout", "hermes", check=True
    )
    commit_pending(b, key=DEV_KEY_NAME)
    # The same skill, moved to another category: categories are outside the bundle, so the root stays.
    moved = run_ledger(
        "--brain",
        str(b.root),
        "import",
        str(_hermes(tmp_path / "two", "papers")),
        "--layout",
        "hermes",
        "--json",
        check=True,
    )
    assert json.loads(moved.stdout)["snapshot"] is not None
    head = b.head().snap
    assert head.root == head.parent_root  # a snapshot whose root equals its parent's
    idle = run_ledger("--brain", str(b.root), "chain", "anchor", "--key", DEV_KEY_NAME)
    assert idle.returncode == 0, idle.stderr  # nothing to anchor: the root is on chain already
    status = json.loads(run_ledger("--brain", str(b.root), "status", "--json", check=True).stdout)
    assert status["pending_chain"] == 0
    b.create("t", "T", "a real change\n")
    assert json.loads(run_ledger("--brain", str(b.root), "status", "--json", check=True).stdout)["pending_chain"] == 1
    done = run_ledger("--brain", str(b.root), "chain", "anchor", "--key", DEV_KEY_NAME)
    assert done.returncode == 0, done.stderr
    cfg = ChainConfig.of(b)
    args = ["--rpc", cfg.rpc, "--registry", cfg.registry, "--agent", hex(cfg.agent_id), "--json"]
    audit = run_ledger("audit", str(b.root), *args)
    report = json.loads(audit.stdout)
    assert audit.returncode == 0 and report["pending"] == [], (audit.stderr, report["checks"])
    assert all(c["ok"] for c in report["checks"].values())


@pytest.mark.chain
def test_every_refusal_of_the_registry_has_a_way_back(tmp_path: Path, node: anvil.Node, chained: Brain) -> None:
    """Issue 18, item 1: after a commit from another copy (the chain moved under us), and with a key the
    agent never authorized, the message names the way back, and following it makes the brain committable."""
    from ledger.remotes.sharing import clone

    a = chained
    a.create("s", "S", "one\n")
    remote = tmp_path / "remote.git"
    sharing.push(a, str(remote))
    # Another copy of the same lineage commits it first.
    b = clone(str(remote), tmp_path / "b")
    b.update_config(chain=dict(a.config["chain"]))
    assert commit_pending(b, key=DEV_KEY_NAME).committed == 2
    b.close()
    env = {"LEDGER_BRAIN": str(a.root)}
    caught_up = run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, env=env)
    assert caught_up.returncode == 0, caught_up.stderr  # the chain already holds a's lineage: receipts recovered
    assert json.loads(run_ledger("status", "--json", env=env, check=True).stdout)["pending_chain"] == 0
    # A key the agent never authorized: refused, and the message says how to authorize it.
    keys = {**env, "LEDGER_KEYSTORE": str(tmp_path / "ks"), "LEDGER_KEY_PASSWORD": "pw"}
    address = run_ledger("keys", "new", "stranger", env=keys, check=True).stdout.strip()
    from ledger.chain.registry import Registry

    Registry(node.url).w3.provider.make_request("anvil_setBalance", [address, hex(10**18)])  # funded, not authorized
    a.create("t", "T", "two\n")
    refused = run_ledger("chain", "anchor", "--key", "stranger", env=keys)
    assert refused.returncode == 1 and "ledger chain authorize" in refused.stderr, refused.stderr
    run_ledger("chain", "authorize", address, "--key", DEV_KEY_NAME, env=keys, check=True)
    retried = run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, env=keys)
    assert retried.returncode == 0, retried.stderr
    assert json.loads(run_ledger("status", "--json", env=env, check=True).stdout)["pending_chain"] == 0


@pytest.mark.chain
def test_a_new_brain_joins_an_existing_registry_and_anchor_names_each_brain(
    tmp_path: Path, node: anvil.Node, chained: Brain
) -> None:
    """'ledger chain use RPC --registry ADDR && ledger chain register' (real anvil); anchor's refusals name
    the brain and the cause."""
    registry = ChainConfig.of(chained).registry
    assert registry is not None
    new, plain = tmp_path / "new", tmp_path / "plain"
    for path in (new, plain):
        run_ledger("init", str(path), check=True)
    nowhere = run_ledger("--brain", str(new), "chain", "use", node.url, "--registry", "0x" + "12" * 20)
    assert nowhere.returncode == 1 and "no contract at" in nowhere.stderr, nowhere.stderr
    assert "registry" not in json.loads((new / ".ledger" / "config.json").read_text()).get("chain", {})
    bad = run_ledger("--brain", str(new), "chain", "use", node.url, "--registry", "0x12")
    assert bad.returncode == 2 and "not a contract address" in bad.stderr, bad.stderr
    used = run_ledger("--brain", str(new), "chain", "use", node.url, "--registry", registry, check=True)
    assert f"registry {registry} on chain 31337" in used.stdout
    run_ledger("--brain", str(new), "chain", "register", "--key", DEV_KEY_NAME, check=True)
    with Brain.open(new) as b:
        cfg = ChainConfig.of(b)
    assert cfg.registry == registry and cfg.agent_id is not None and cfg.agent_id != ChainConfig.of(chained).agent_id
    again = run_ledger("--brain", str(new), "chain", "use", node.url, "--registry", str(chained.root.parent / "x"))
    assert again.returncode == 2, again.stderr
    op = ("--brain", str(chained.root), "anchor")
    proc = run_ledger(*op, str(plain), "--key", DEV_KEY_NAME)
    assert proc.returncode == 1 and f"the brain at {plain} has no chain configured" in proc.stderr, proc.stderr
    assert f"ledger --brain {plain} chain up" in proc.stderr
    proc = run_ledger(*op, str(new), str(new), "--key", DEV_KEY_NAME)
    assert proc.returncode == 1 and f"the brain at {new} (agent 0x" in proc.stderr and "named twice" in proc.stderr
    run_ledger("--brain", str(plain), "chain", "use", node.url, check=True)
    run_ledger("--brain", str(plain), "chain", "deploy", "--key", DEV_KEY_NAME, check=True)
    proc = run_ledger(*op, str(plain), "--key", DEV_KEY_NAME)
    assert proc.returncode == 1 and f"the chain config of the brain at {plain} has no agent_id" in proc.stderr
    run_ledger("--brain", str(plain), "chain", "register", "--key", DEV_KEY_NAME, check=True)
    with Brain.open(plain) as b:
        other = ChainConfig.of(b).registry
    proc = run_ledger(*op, str(plain), "--key", DEV_KEY_NAME)
    assert (
        proc.returncode == 1
        and f"is registered on registry {other}, not on this operator's registry {registry}" in proc.stderr
    ), proc.stderr
    switch = run_ledger("--brain", str(plain), "chain", "use", node.url, "--registry", registry)
    assert switch.returncode == 1 and "would orphan its committed lineage" in switch.stderr, switch.stderr
    anchored = run_ledger(*op, str(new), "--key", DEV_KEY_NAME)
    assert anchored.returncode == 0 and "as epoch" in anchored.stdout, anchored.stderr
