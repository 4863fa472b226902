"""Issue 34, paper cuts: honest verdicts without a chain, bare ``show NAME``, ``log -n``/``-N`` and
its pager, ``remote set`` paths (resolved against the brain, never created unasked), the anvil's path."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import time
from pathlib import Path

import pytest

from ledger.brain import Brain
from tests.harness.brains import make_brain
from tests.harness.cli import LEDGER, run_in_process

REPO = Path(__file__).resolve().parents[2]
CHAIN_CHECKS = ("chain.events", "chain.roots", "chain.head", "chain.receipts", "chain.committers", "chain.signers")


@pytest.fixture
def brain(tmp_path: Path) -> Path:
    b = make_brain(tmp_path / "brain", {"s": ("d", "body-one")}, via="cli")
    run_in_process("--brain", str(b), "skill", "patch", "s", "--old", "body-one", "--new", "body-two", check=True)
    return b


# --------------------------------------------------------------------------- 1. SKIP, never OK, without a chain


@pytest.mark.parametrize("command", ["audit", "verify"])
def test_without_a_chain_every_chain_check_is_a_skip_and_the_verdict_says_so(brain: Path, command: str) -> None:
    args = ["audit", str(brain)] if command == "audit" else ["--brain", str(brain), "verify"]
    why, how = (
        ("no --rpc", "--rpc URL --registry ADDR --agent ID")
        if command == "audit"
        else ("no --chain", "ledger verify --chain")
    )
    proc = run_in_process(*args)
    assert proc.returncode == 0, proc.stderr
    for name in CHAIN_CHECKS:  # one SKIP line each, saying why and how to run it
        line = re.search(rf"^SKIP {re.escape(name)} +(.*)$", proc.stdout, re.M)
        assert line and why in line.group(1) and how in line.group(1), (name, proc.stdout)
        assert not re.search(rf"^OK +{re.escape(name)}\b", proc.stdout, re.M)
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(f"Verified OK (chain checks skipped: {why}"), last  # OK never means "not checked"
    assert "Verified" not in proc.stderr  # the verdict is a result: stdout, as git prints its own

    doc = json.loads(run_in_process(*args, "--json", check=True).stdout)
    assert set(CHAIN_CHECKS) <= set(doc["skipped"]) and doc["verdict"] == last
    assert all(doc["checks"][n]["skipped"] and doc["checks"][n]["ok"] for n in CHAIN_CHECKS)
    assert not any(doc["checks"][n]["skipped"] for n in ("snapshots", "lineage", "fsck"))


def test_the_html_report_and_a_failure_carry_the_same_verdict(brain: Path, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    run_in_process("audit", str(brain), "--html", str(html), check=True)
    assert "chain checks skipped: no --rpc" in html.read_text()
    (brain / "skills" / "s" / "SKILL.md").write_text("edited by hand\n")
    proc = run_in_process("--brain", str(brain), "verify")
    assert proc.returncode == 1 and proc.stdout.strip().splitlines()[-1] == "Verification FAILED"


# --------------------------------------------------------------------------- 2. show NAME


def test_show_a_bare_name_prints_the_head_version(brain: Path) -> None:
    b = ["--brain", str(brain)]
    head = run_in_process(*b, "skill", "show", "s", check=True).stdout
    assert "body-two" in head and "version: '2'" in head
    assert head == (brain / "skills" / "s" / "SKILL.md").read_text()
    assert "body-one" in run_in_process(*b, "skill", "show", "s@1", check=True).stdout
    missing = run_in_process(*b, "skill", "show", "nosuch")
    assert missing.returncode == 1 and "no skill named 'nosuch'" in missing.stderr
    assert run_in_process(*b, "skill", "show", "s@x").returncode == 2
    run_in_process(*b, "skill", "delete", "s", check=True)
    gone = run_in_process(*b, "skill", "show", "s")
    assert gone.returncode == 1 and "ledger show s@N" in gone.stderr  # the hint names the way to its versions
    assert "body-two" in run_in_process(*b, "skill", "show", "s@2", check=True).stdout


# --------------------------------------------------------------------------- 3. log -n, -N, the pager


def test_log_takes_n_max_count_and_git_s_minus_n(brain: Path) -> None:
    b = ["--brain", str(brain), "log", "--oneline"]
    for args, count in ((["-n", "1"], 1), (["-n2"], 2), (["--max-count", "2"], 2), (["-1"], 1), (["-2"], 2), ([], 3)):
        lines = run_in_process(*b, *args, check=True).stdout.splitlines()
        assert len(lines) == count, (args, lines)
    assert "patch" in run_in_process(*b, "-1", check=True).stdout
    full = run_in_process("--brain", str(brain), "log", "-1", check=True).stdout
    assert full.count("snapshot ") == 1
    assert run_in_process(*b, "-0").returncode == 2


def _on_a_tty(args: list[str], env: dict[str, str]) -> str:
    """Run ledger with stdout and stderr on a pseudo-terminal; what the terminal showed."""
    master, slave = pty.openpty()
    full = {k: v for k, v in os.environ.items() if not k.startswith(("LEDGER_", "GIT_PAGER", "PAGER"))}
    full.update(LEDGER_KEYS=os.environ["LEDGER_KEYS"], **env)
    proc = subprocess.Popen([LEDGER, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=full)
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        shown += chunk
    proc.wait(timeout=60)
    os.close(master)
    assert proc.returncode == 0, shown
    return shown.decode(errors="replace")


@pytest.mark.parametrize("oneline", [True, False])
@pytest.mark.parametrize("var", ["LEDGER_PAGER", "GIT_PAGER", "PAGER"])
def test_log_pages_on_a_terminal_and_never_when_piped(brain: Path, tmp_path: Path, oneline: bool, var: str) -> None:
    paged = tmp_path / "paged.txt"
    pager = {var: f"cat > {paged}"}
    args = ["--brain", str(brain), "log", *(["--oneline"] if oneline else [])]
    shown = _on_a_tty(args, pager)
    text = paged.read_text()
    assert "update s v2" in text and "create s v1" in text and "update s v2" not in shown
    paged.unlink()
    piped = run_in_process(*args, env=pager, check=True)  # not a terminal: never paged
    assert "update s v2" in piped.stdout and not paged.exists()
    assert "\x1b[" not in piped.stdout  # no colour codes into a pipe
    assert "update s v2" in _on_a_tty([*args, "--no-pager"], pager) and not paged.exists()
    assert "update s v2" in _on_a_tty(args, {var: "cat"}) and not paged.exists()  # cat: no pager, as git


def test_log_json_is_never_paged(brain: Path, tmp_path: Path) -> None:
    paged = tmp_path / "paged.txt"
    shown = _on_a_tty(["--brain", str(brain), "log", "--json"], {"LEDGER_PAGER": f"cat > {paged}"})
    assert not paged.exists() and '"commit"' in shown


# --------------------------------------------------------------------------- 4. remote set


def _config_remote(brain: Path) -> dict | None:
    return json.loads((brain / ".ledger" / "config.json").read_text()).get("remote")


def test_remote_set_resolves_a_relative_path_against_the_brain_and_sync_finds_it(brain: Path, tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    proc = run_in_process("--brain", "../../brain", "remote", "set", "--create", "../shared.git", cwd=deep, check=True)
    shared = tmp_path / "shared.git"  # the brain's ../shared.git, not the working directory's
    assert shared.is_dir() and not (tmp_path / "a" / "shared.git").exists()
    assert f"remote set: {shared}" in proc.stdout and "(a new bare repository)" in proc.stdout
    assert _config_remote(brain)["url"] == str(shared)
    assert run_in_process("--brain", str(brain), "remote", cwd=deep, check=True).stdout.strip() == str(shared)
    sync = run_in_process("--brain", str(brain), "sync", cwd=tmp_path / "a")  # from elsewhere again
    assert sync.returncode == 0 and "pushed" in sync.stdout, sync.stdout + sync.stderr
    head = subprocess.run(["git", f"--git-dir={shared}", "rev-parse", "main"], capture_output=True, text=True)
    mine = subprocess.run(["git", "-C", str(brain), "rev-parse", "main"], capture_output=True, text=True)
    assert head.stdout == mine.stdout and head.stdout.strip()
    again = run_in_process("--brain", str(brain), "remote", "set", "--create", str(shared), check=True)
    assert "new bare repository" not in again.stdout  # --create on a repository that exists: just set


def test_remote_set_never_creates_a_repository_unasked(brain: Path, tmp_path: Path) -> None:
    for url in (str(tmp_path / "nowhere.git"), "../nowhere.git", f"file://{tmp_path}/nowhere.git"):
        proc = run_in_process("--brain", str(brain), "remote", "set", url)
        assert proc.returncode == 1 and "error: no repository at" in proc.stderr, (url, proc.stderr)
        assert "--create" in proc.stderr  # the hint names the flag that makes one
    assert not (tmp_path / "nowhere.git").exists() and _config_remote(brain) is None


@pytest.mark.parametrize(
    "url",
    [
        "ssh://git@host/brains/shared.git",
        "https://git.example.com/o/shared.git",
        "git@host:brains/shared.git",
        "host:shared.git",
    ],
)
def test_remote_set_keeps_urls_as_given(brain: Path, tmp_path: Path, url: str) -> None:
    proc = run_in_process("--brain", str(brain), "remote", "set", url, cwd=tmp_path, check=True)
    assert proc.stdout.strip() == f"remote set: {url}" and _config_remote(brain)["url"] == url
    refused = run_in_process("--brain", str(brain), "remote", "set", "--create", url)  # a network repository: not ours
    assert refused.returncode == 2 and "--create" in refused.stderr


def test_remote_set_keeps_a_file_url_that_exists(brain: Path, tmp_path: Path) -> None:
    url = f"file://{tmp_path}/shared.git"
    run_in_process("--brain", str(brain), "remote", "set", "--create", url, check=True)
    assert (tmp_path / "shared.git" / "HEAD").is_file() and _config_remote(brain)["url"] == url


def test_a_relative_remote_recorded_earlier_is_the_brain_s(brain: Path, tmp_path: Path) -> None:
    from ledger.remotes.fleet import remote_of

    with Brain.open(brain) as b:
        b.update_config(remote={"url": "../shared.git", "commit": False})
        assert remote_of(b)["url"] == str(tmp_path / "shared.git")


# --------------------------------------------------------------------------- 5. the anvil's directory


def test_docs_name_the_anvil_directory_the_code_uses(brain: Path) -> None:
    from ledger.cli.chain import _anvil_dir

    with Brain.open(brain) as b:
        assert _anvil_dir(b) == brain / ".ledger" / "anvil"
    stale = []
    for top in ("README.md", "docs", "ledger", "scripts"):
        base = REPO / top
        for path in [base] if base.is_file() else base.rglob("*"):
            text = path.is_file() and path.suffix not in (".so", ".pyc", ".png") and "__pycache__" not in path.parts
            if text and ".ledger/chain/anvil" in path.read_text(errors="ignore"):
                stale.append(str(path.relative_to(REPO)))
    assert not stale, stale
    assert ".ledger/anvil/" in run_in_process("chain", "up", "--help", check=True).stdout
