"""Issue 11, first items: no-ops exit 0, history like git's, chain commands without footguns, honest audits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ledger import anvil
from tests.conftest import fingerprint, run_ledger


@pytest.fixture
def cli(tmp_path: Path) -> Path:
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    run_ledger("--brain", str(brain), "skill", "create", "s", "--description", "d", "--body", "b", check=True)
    return brain


def test_a_write_that_changes_nothing_exits_0_and_says_so(cli: Path, tmp_path: Path) -> None:
    same = tmp_path / "same.md"
    same.write_text((cli / "skills" / "s" / "SKILL.md").read_text())
    before = fingerprint(cli)
    for args in (["skill", "upsert", "--file", str(same)], ["skill", "edit", "s", "--file", str(same)],
                 ["revert", "s", "--to", "1"], ["snapshot"]):  # fmt: skip
        proc = run_ledger("--brain", str(cli), *args)
        assert proc.returncode == 0 and "nothing to do" in proc.stderr, (args, proc.stderr)
        js = run_ledger("--brain", str(cli), *args, "--json")
        assert js.returncode == 0 and json.loads(js.stdout)["changed"] is False
    assert fingerprint(cli) == before


def test_log_has_dates_full_roots_and_filters(cli: Path) -> None:
    b = ["--brain", str(cli)]
    run_ledger(*b, "skill", "create", "t", "--description", "d", "--actor", "agent", check=True)
    full = run_ledger(*b, "log", check=True).stdout
    assert re.search(r"^date     \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", full, re.M)
    assert re.search(r"^root     blake3-tree-v1:[0-9a-f]{64}$", full, re.M)
    oneline = run_ledger(*b, "log", "--oneline", "--skill", "s", check=True).stdout.splitlines()
    assert len(oneline) == 1 and re.search(r"create s v1 .* blake3-tree-v1:[0-9a-f]{64}$", oneline[0])
    agent = run_ledger(*b, "log", "--oneline", "--actor", "agent", check=True).stdout.splitlines()
    assert len(agent) == 1 and "create t v1" in agent[0]


@pytest.mark.parametrize("url", ["notaurl", "127.0.0.1:8545", "ftp://x", "http://", "http://host:notaport"])
def test_chain_use_validates_urls(cli: Path, url: str) -> None:
    before = fingerprint(cli)
    proc = run_ledger("--brain", str(cli), "chain", "use", url)
    assert (proc.returncode == 2 and "RPC URL" in proc.stderr) or "port" in proc.stderr
    assert fingerprint(cli) == before
    assert run_ledger("--brain", str(cli), "chain", "use", "http://127.0.0.1:8545").returncode == 0


def test_keys_list_shows_the_dev_key() -> None:
    out = run_ledger("keys", "list", check=True).stdout
    assert "anvil-dev" in out and "chain 31337 only" in out


@pytest.mark.chain
def test_deploy_defaults_to_the_dev_key_on_31337_and_refuses_to_replace(cli: Path, node: anvil.Node) -> None:
    b = ["--brain", str(cli)]
    run_ledger(*b, "chain", "use", node.url, check=True)
    first = run_ledger(*b, "chain", "deploy", "--json")
    assert first.returncode == 0, first.stderr  # no --key: anvil-dev on chain 31337
    registry = json.loads(first.stdout)["registry"]
    again = run_ledger(*b, "chain", "deploy")
    assert again.returncode == 1 and "--force" in again.stderr
    assert json.loads((cli / ".ledger" / "config.json").read_text())["chain"]["registry"] == registry
    forced = run_ledger(*b, "chain", "deploy", "--force", "--json")
    assert forced.returncode == 0 and json.loads(forced.stdout)["registry"] != registry


@pytest.mark.chain
def test_audit_says_skip_for_checks_it_could_not_make(cli: Path, node: anvil.Node) -> None:
    b = ["--brain", str(cli)]
    run_ledger(*b, "chain", "use", node.url, check=True)
    registry = json.loads(run_ledger(*b, "chain", "deploy", "--json", check=True).stdout)["registry"]
    proc = run_ledger("audit", str(cli), "--rpc", node.url, "--registry", registry, "--agent", "0x1234", "--json")
    checks = json.loads(proc.stdout)["checks"]
    assert checks["chain.roots"]["skipped"] and checks["chain.roots"]["ok"]
    assert checks["chain.receipts"]["skipped"]
    text = run_ledger("audit", str(cli), "--rpc", node.url, "--registry", registry, "--agent", "0x1234").stdout
    assert re.search(r"^SKIP chain\.roots", text, re.M) and not re.search(r"^OK   chain\.roots", text, re.M)


STRICT_CASES = {
    # what a user fed in → (command, words the error must hold)
    "unterminated": ("---\nname: s\ndescription: d\nno closing line\n", "never closed"),
    "no frontmatter": ("just a body\n", "must start with a '---' line"),
    "yaml error": ("---\nname: s\ndescription: [unclosed\n---\nbody\n", "YAML error"),
    "another skill's name": ("---\nname: other\ndescription: d\n---\nbody\n", "'other'"),
}


@pytest.mark.parametrize("case", sorted(STRICT_CASES))
@pytest.mark.parametrize("command", ["edit", "upsert"])
def test_edit_and_upsert_parse_strictly(cli: Path, tmp_path: Path, case: str, command: str) -> None:
    text, words = STRICT_CASES[case]
    src = tmp_path / "in.md"
    src.write_text(text)
    args = ["skill", "edit", "s", "--file", str(src)] if command == "edit" else ["skill", "upsert", "--file", str(src)]
    if command == "upsert":
        args += ["--name", "s"]  # the key is given: a file declaring another name is refused, never renamed
    before = fingerprint(cli)
    proc = run_ledger("--brain", str(cli), *args)
    assert proc.returncode == 1 and words in proc.stderr, (case, command, proc.stderr)
    assert fingerprint(cli) == before


def test_upsert_without_a_name_reports_the_yaml_error(cli: Path, tmp_path: Path) -> None:
    src = tmp_path / "in.md"
    src.write_text("---\nname: s\ndescription: [unclosed\n---\nbody\n")
    proc = run_ledger("--brain", str(cli), "skill", "upsert", "--file", str(src))
    assert proc.returncode == 1 and "YAML error" in proc.stderr and "cannot tell" not in proc.stderr
