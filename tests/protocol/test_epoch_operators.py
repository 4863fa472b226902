"""Every operator that may anchor an agent is replayed (docs/lineage/epochs.md §7; outside review 2, findings 1, 6).

The epoch operators of an agent are every address that was ever its owner or a committer and has an
epoch on chain, not only those named by the receipts a copy happens to hold: otherwise a fork anchored
by a second committer, or a copy that dropped its receipts, audits OK.  Real brains, a real anvil,
real operator logs fetched by path; nothing of ours is mocked.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ledger.anchoring.epochs import anchor_epoch
from ledger.brain import Brain
from ledger.chain import epochlog
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME, dev_account
from ledger.protocol import tlog
from ledger.protocol.refs import EPOCH_NOTES_REF
from tests.harness.cli import run_ledger
from tests.harness.tamper import anchor_raw, fork_two_operators
from tests.unit.chain.test_epochs import epochlog_receipts, member

pytestmark = pytest.mark.chain

X = dev_account(0).address.lower()  # the owner of every member agent, and the first operator
Y = dev_account(1).address.lower()  # the second operator, once the owner authorizes it


@pytest.fixture
def keystore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A keystore for operator Y's key (the audit itself, a subprocess, sees none of it)."""
    monkeypatch.setenv("LEDGER_KEYSTORE", str(tmp_path / "ks"))
    monkeypatch.setenv("LEDGER_KEY_PASSWORD", "pw")


def audit(b: Brain, *extra: str) -> tuple[int, dict[str, Any]]:
    """``ledger audit --rpc … --json`` of ``b``, with ``extra`` options; (exit code, chain.epochs)."""
    cfg = ChainConfig.of(b)
    assert cfg.agent_id is not None
    proc = run_ledger(
        "audit",
        str(b.root),
        "--rpc",
        cfg.rpc,
        "--registry",
        str(cfg.registry),
        "--agent",
        hex(cfg.agent_id),
        "--json",
        *extra,
    )
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["checks"]["chain.epochs"]


def log_of(operator: Brain, address: str) -> str:
    return f"--epoch-log={address}={Path(operator.root).resolve()}"


def drop_receipts(b: Brain) -> None:
    subprocess.run(["git", f"--git-dir={b.store.git_dir}", "update-ref", "-d", EPOCH_NOTES_REF], check=True)


def test_a_fork_anchored_by_two_operators_fails_both_copies(tmp_path: Path, chained: Brain, keystore: None) -> None:
    a, b, y = fork_two_operators(tmp_path, chained, member)
    ra, rb = epochlog_receipts(a), epochlog_receipts(b)
    assert {r["operator"].lower() for r in ra.values()} == {X} and {r["operator"].lower() for r in rb.values()} == {Y}
    fork_seq = len(ra)  # each copy's last anchored snapshot: one seq, two roots
    assert {(r["seq"], r["root"]) for r in ra.values()} != {(r["seq"], r["root"]) for r in rb.values()}
    # each copy names only its own operator; the other one, a committer with an epoch, is unknown
    for copy, other in ((a, Y), (b, X)):
        code, chk = audit(copy)
        assert code == 1 and f"operator {other} has 1 epoch(s)" in chk["summary"], chk
        assert f"--epoch-log {other}=LOCATION" in chk["summary"], chk
    # given where the other operator publishes, its log anchors another root for this copy's seq
    for copy, other, at in ((a, Y, y), (b, X, chained)):
        code, chk = audit(copy, log_of(at, other))
        assert code == 1 and f"anchors chain sequence {fork_seq} of this agent as" in chk["summary"], chk
        assert "but this brain's snapshot there is" in chk["summary"], chk
    # a copy from before the fork agrees with both logs, which disagree with each other on the next seq
    subprocess.run(["git", "clone", "-q", "--mirror", str(a.store.git_dir), str(tmp_path / "old")], check=True)
    git = ["git", f"--git-dir={tmp_path / 'old'}"]
    parent = subprocess.run([*git, "rev-parse", "main~1"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([*git, "update-ref", "refs/heads/main", parent], check=True)
    subprocess.run([*git, "update-ref", "-d", EPOCH_NOTES_REF], check=True)
    cfg = ChainConfig.of(a)
    proc = run_ledger(
        "audit",
        str(tmp_path / "old"),
        "--rpc",
        cfg.rpc,
        "--registry",
        str(cfg.registry),
        "--agent",
        hex(cfg.agent_id or 0),
        "--json",
        log_of(chained, X),
        log_of(y, Y),
    )
    chk = json.loads(proc.stdout)["checks"]["chain.epochs"]
    assert proc.returncode == 1 and chk["summary"].startswith("forked agent: operator "), chk
    assert f"anchors chain sequence {fork_seq} of agent" in chk["summary"], chk
    assert X in chk["summary"] and Y in chk["summary"], chk


def test_a_copy_without_receipts_is_checked_not_skipped(tmp_path: Path, chained: Brain) -> None:
    a = member(tmp_path, chained, "a")
    a.close()
    shutil.copytree(a.root, tmp_path / "b", symlinks=True)
    a, b = Brain.open(tmp_path / "a"), Brain.open(tmp_path / "b")
    a.create("second", "fork A", "A's seq 2\n")
    b.create("second", "fork B", "B's seq 2\n")  # b: a fork, never anchored, no receipts
    anchor_epoch(chained, [a], key=DEV_KEY_NAME)
    code, chk = audit(b)
    assert code == 1 and not chk["skipped"], chk
    assert f"operator {X} has 1 epoch(s)" in chk["summary"] and f"--epoch-log {X}=LOCATION" in chk["summary"], chk
    code, chk = audit(b, log_of(chained, X))
    assert code == 1 and "but this brain's snapshot there is" in chk["summary"], chk
    # an honest copy of a that lost its receipts: the same replay passes it, an OK that is not a SKIP
    a.close()
    shutil.copytree(a.root, tmp_path / "c", symlinks=True)
    c = Brain.open(tmp_path / "c")
    drop_receipts(c)
    assert audit(c)[0] == 1
    code, chk = audit(c, log_of(chained, X))
    assert code == 0 and chk["ok"] and not chk["skipped"] and "0 epoch receipt(s)" in chk["summary"], chk
    # the operator's own brain publishes its log: its own audit finds it without an option
    code, chk = audit(chained)
    assert code == 0 and not chk["skipped"] and "hold no entry of this agent" in chk["summary"], chk


def test_an_agent_no_committer_anchored_is_skipped(tmp_path: Path, chained: Brain) -> None:
    a = member(tmp_path, chained, "a")
    code, chk = audit(a)
    assert code == 0 and chk["skipped"] and "no owner or committer" in chk["summary"], chk


def test_an_honest_agent_with_two_operators_passes(tmp_path: Path, chained: Brain, keystore: None) -> None:
    from ledger.anchoring.commits import authorize
    from ledger.chain import keys

    keys.import_key("opy", "0x" + bytes(dev_account(1).key).hex())
    a = member(tmp_path, chained, "a")
    anchor_epoch(chained, [a], key=DEV_KEY_NAME)  # X first
    authorize(a, Y, True, key=DEV_KEY_NAME)
    a.create("second", "The second skill", "more\n")
    y = Brain.init(tmp_path / "opy")
    cfg = ChainConfig.of(chained)
    y.update_config(
        chain={"rpc": cfg.rpc, "chain_id": cfg.chain_id, "registry": cfg.registry, "deploy_block": cfg.deploy_block}
    )
    anchor_epoch(y, [a], key="opy")  # then Y, from seq 1: its log holds the agent's whole lineage
    agent = ChainConfig.of(a).agent_id
    seqs = [tlog.parse_entry(e)[1] for e in epochlog.read_local(y.store).entries if tlog.parse_entry(e)[0] == agent]
    receipts = sorted((r["seq"], r["operator"].lower()) for r in epochlog_receipts(a).values())
    assert seqs == [1, 2, 3] and receipts == [(1, X), (2, X), (3, Y)], (seqs, receipts)
    code, chk = audit(a)
    assert code == 0 and chk["ok"] and not chk["skipped"] and "2 operator log(s)" in chk["summary"], chk
    # the same brain, with Y's log out of reach, is not passed
    shutil.move(tmp_path / "opy", tmp_path / "opy-gone")
    code, chk = audit(a)
    assert code == 1 and "the operator's log cannot be replayed" in chk["summary"], chk


@pytest.mark.parametrize("case", ["zero", "equal"])
def test_replay_refuses_a_zero_root_and_a_root_equal_to_its_parent(tmp_path: Path, chained: Brain, case: str) -> None:
    """lineage/epochs.md §1: each root non-zero and not its parent, for every agent of the log, not only the audited
    one."""
    a = member(tmp_path, chained, "a")
    anchor_epoch(chained, [a], key=DEV_KEY_NAME)
    assert audit(a)[0] == 0
    other, zero, root = 0xB2, b"\x00" * 32, b"\x11" * 32
    entries = (
        [tlog.entry(other, 1, zero, zero)]
        if case == "zero"
        else [tlog.entry(other, 1, zero, root), tlog.entry(other, 2, root, root)]
    )
    anchor_raw(chained, entries, f"a {case} root\n")
    code, chk = audit(a)
    seq = 1 if case == "zero" else 2
    assert code == 1 and f"agent {other:#x} chain sequence {seq} with root" in chk["summary"], chk
    assert "zero or repeats its parent" in chk["summary"], chk


@pytest.mark.parametrize("bad", ["0x12=/x", "nope", f"{'0x' + 'ab' * 20}=", f"{'0x' + 'ab' * 20}"])
def test_a_malformed_epoch_log_option_is_usage(tmp_path: Path, bad: str) -> None:
    proc = run_ledger(
        "audit",
        str(tmp_path),
        "--rpc",
        "http://127.0.0.1:1",
        "--registry",
        "0x" + "00" * 20,
        "--agent",
        "1",
        "--epoch-log",
        bad,
    )
    assert proc.returncode == 2 and "ADDRESS=LOCATION" in proc.stderr, proc.stderr
    proc = run_ledger("audit", str(tmp_path), "--epoch-log", f"{'0x' + 'ab' * 20}=/x")
    assert proc.returncode == 2 and "--epoch-log goes with --rpc" in proc.stderr, proc.stderr
