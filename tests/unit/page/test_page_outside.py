"""The report page and ``ledger chain location`` against a hostile brain or registry: what they
show must be what the chain they read says, never the brain's config's word for it."""

from __future__ import annotations

import re
from pathlib import Path

from ledger.brain import Brain
from ledger.chain.config import ChainConfig
from ledger.chain.keys import dev_account
from ledger.chain.registry import Registry
from tests.harness.cli import run_ledger
from tests.harness.wait import until
from tests.unit.page.test_shares import _plant


def test_the_page_does_not_name_a_chain_the_rpc_does_not_serve(chained: Brain, tmp_path: Path) -> None:
    """A brain whose config says chain 1 (Ethereum mainnet), checked against an RPC that serves a
    local anvil: the page must not show "Ethereum mainnet" with etherscan links as checked."""
    cfg = ChainConfig.of(chained)
    chained.update_config(chain={**chained.config["chain"], "chain_id": 1})
    out = tmp_path / "page"
    proc = run_ledger("--brain", str(chained.root), "report", "-o", str(out), "--rpc", str(cfg.rpc))
    page = (out / "index.html").read_text() if (out / "index.html").is_file() else ""
    assert "Ethereum mainnet" not in page and "etherscan.io" not in page
    assert proc.returncode == 1 and "wrong chain" in proc.stderr and "31337" in proc.stderr, proc.stderr


def test_a_location_that_is_not_in_the_charset_is_refused_not_printed(chained: Brain) -> None:
    """``ledger chain location`` shows what ``locationOf`` answers: a registry that answers terminal
    escapes (planted past setLocation's checks) must be refused, not written to the terminal."""
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    status = {
        "agent_id": f"0x{cfg.agent_id:064x}",
        "owner": dev_account(0).address,
        "sequence": 0,
        "head": None,
        "evidence": None,
        "location": "https://ok.example/\x1b]0;pwned\x07\x1b[2J\u202egnp.exe",
    }
    _plant(reg, reg.address, status)
    for args in (("chain", "location"), ("chain", "location", "--json")):
        proc = run_ledger("--brain", str(chained.root), *args)
        assert "\x1b" not in proc.stdout + proc.stderr and "\u202e" not in proc.stdout + proc.stderr
        assert proc.returncode == 1 and re.search(r"location.*not", proc.stderr), proc.stderr


def test_a_chain_ahead_of_the_brain_shows_its_sequence_and_status_is_plain(chained: Brain, tmp_path: Path) -> None:
    """The owner commits a root this copy lacks: the page's "chain sequence" is the chain's (the token
    metadata's sequence beside it says so), and ``chain status`` says pending is unknown in words."""
    b = ("--brain", str(chained.root))
    run_ledger(*b, "skill", "create", "s", "--description", "S skill", check=True)
    run_ledger(*b, "chain", "anchor", check=True)
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    reg.send(
        dev_account(0),
        reg.bound().functions.commit(cfg.agent_id, reg.head(cfg.agent_id), b"\x33" * 32),
        what="a root this copy lacks",
    )
    out = tmp_path / "page"
    proc = run_ledger(*b, "report", "-o", str(out), "--rpc", str(cfg.rpc))
    assert proc.returncode == 1 and (out / "index.html").is_file(), proc.stdout + proc.stderr  # the audit fails
    page = (out / "index.html").read_text()
    assert 'data-seq="3"' in page and 'data-seq="2"' not in page
    status = run_ledger(*b, "chain", "status")
    assert "None" not in status.stdout and "pending         unknown" in status.stdout, status.stdout


def test_check_yourself_commands_quote_what_the_config_holds(chained: Brain, tmp_path: Path) -> None:
    """The page's commands are pasted into a shell: a registry address from a tampered config must not
    run anything there."""
    from ledger.page.collect import collect

    bad = "0x5FbDB2315678afecb367f032d93F642f64180aa3;touch${IFS}pwned"
    chained.update_config(chain={**chained.config["chain"], "registry": bad})
    commands = [item["command"] for item in collect(chained)["verify"]]
    assert any(f" '{bad}' " in c for c in commands)  # shell-quoted where it is named
    assert not any(f" {bad}" in c for c in commands), commands


def test_a_page_for_a_brain_on_a_registry_from_before_the_token_metadata(chained: Brain, tmp_path: Path) -> None:
    """``chain status`` answers for a v1.8 registry (its ``uri`` is empty: no shares shown, and why);
    ``ledger report --rpc`` must too, not fail on the token it cannot read."""

    from tests.unit.page.test_shares import use_a_v18_registry

    cfg = use_a_v18_registry(chained)
    out = tmp_path / "page"
    proc = run_ledger("--brain", str(chained.root), "report", "-o", str(out), "--rpc", str(cfg.rpc))
    assert proc.returncode == 0, proc.stderr
    page = (out / "index.html").read_text()
    import re as _re

    box = _re.search(r'<div id="shares".*?</div>', page, _re.S).group(0)
    assert 'data-shares="unread"' in box and "deployed before it had any" in box, box


def test_the_page_reads_the_chain_at_the_block_the_audit_checked(chained: Brain, tmp_path: Path) -> None:
    """A root committed on chain after the audit read it (and before the page read the token) is not
    what the audit checked: the page must not show it as the head on chain, ticked."""
    import os
    import subprocess

    from tests.harness.cli import LEDGER

    b = ("--brain", str(chained.root))
    run_ledger(*b, "skill", "create", "s", "--description", "S skill", check=True)
    run_ledger(*b, "chain", "anchor", check=True)
    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry)
    head = reg.head(cfg.agent_id)
    gate, out = tmp_path / "gate", tmp_path / "page"
    env = {**os.environ, "LEDGER_PAUSEPOINT": "report.chain", "LEDGER_PAUSE_FILE": str(gate)}
    proc = subprocess.Popen(
        [str(LEDGER), *b, "report", "-o", str(out), "--rpc", str(cfg.rpc)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        until(Path(str(gate) + ".ready").exists, timeout=60, what="the pause at report.chain", alive=proc)
        reg.send(dev_account(0), reg.bound().functions.commit(cfg.agent_id, head, b"\x44" * 32), what="a late root")
    finally:
        gate.unlink(missing_ok=True)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stdout + stderr
    page = (out / "index.html").read_text()
    assert "44" * 32 not in page  # the late root is not on the page, ticked or not
    assert f'data-metadata-head="blake3-tree-v1:{head.hex()}"' in page and 'data-head-match="true"' in page


def test_the_cast_commands_of_check_yourself_run_as_pasted(chained: Brain, tmp_path: Path) -> None:
    """Each plain-cast command the page gives, run by bash as pasted: the head, the evidence, the
    owner's balance and the token metadata it prints are the page's figures."""
    import json
    import os
    import subprocess

    from ledger.page.collect import collect
    from tests.unit.page.test_shares import CAST

    b = ("--brain", str(chained.root))
    run_ledger(*b, "skill", "create", "s", "--description", "S skill", check=True)
    run_ledger(*b, "chain", "anchor", check=True)
    data = collect(chained, rpc=str(ChainConfig.of(chained).rpc))
    env = {**os.environ, "PATH": f"{CAST.parent}:{os.environ['PATH']}"}
    said = {}
    for item in data["verify"]:
        if item["command"].startswith("cast "):
            run = subprocess.run(
                ["bash", "-c", item["command"]], env=env, capture_output=True, text=True, cwd=chained.root, timeout=60
            )
            assert run.returncode == 0, (item, run.stderr)
            said[item["what"]] = run.stdout
    head = data["brain"]["head"]["root"].split(":")[1]
    assert any(f"0x{head}" in out for out in said.values())
    shares = data["chain"]["shares"]
    meta = next(out for what, out in said.items() if "metadata" in what)
    assert json.loads(meta)["properties"]["head"] == data["brain"]["head"]["root"]
    balance = next(out for what, out in said.items() if "balance" in what)
    assert balance.split()[0] == str(shares["owner_balance"])
