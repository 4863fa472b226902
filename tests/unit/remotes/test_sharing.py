"""push, pull, clone and audit-by-URL: snapshots and receipts travel, and nothing unchecked is taken."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ledger.anchoring.commits import commit_pending, deploy, register
from ledger.brain import Brain
from ledger.chain import anvil
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME
from ledger.chain.receipts import read_receipts
from ledger.errors import StoreError
from ledger.protocol.refs import UNVERIFIED_REF
from ledger.remotes import sharing
from ledger.remotes.sharing import clone
from tests.harness.brains import fingerprint, two_copies
from tests.harness.cli import run_ledger


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def pair(tmp_path: Path):
    """A brain with two snapshots pushed to a bare remote, and a clone of that remote."""
    with two_copies(tmp_path, {"s": "one\n"}) as copies:
        yield copies


def test_clone_then_pull_brings_the_same_lineage_and_files(pair) -> None:
    a, remote, b = pair
    assert b.head().commit == a.head().commit
    assert (b.skills_dir / "s" / "SKILL.md").read_bytes() == (a.skills_dir / "s" / "SKILL.md").read_bytes()
    a.patch("s", "one", "two")
    a.write_file("s", "references/r.md", b"ref\n")
    sharing.push(a, str(remote))
    out = sharing.pull(b, str(remote))
    assert out["moved"] and b.head().commit == a.head().commit
    assert (b.skills_dir / "s" / "references" / "r.md").read_bytes() == b"ref\n"
    assert b.status().clean
    assert sharing.pull(b, str(remote))["moved"] is False  # again: nothing to do


def test_pull_refuses_what_fails_the_audit(pair, tmp_path: Path) -> None:
    a, remote, b = pair
    a.patch("s", "one", "two")
    sharing.push(a, str(remote))
    work = tmp_path / "forger"
    _git(tmp_path, "clone", "-q", str(remote), str(work))
    _git(
        work,
        "-c",
        "user.name=x",
        "-c",
        "user.email=x@x",
        "filter-branch",
        "-f",
        "--tree-filter",
        "if [ -f skills/s/SKILL.md ]; then sed -i s/two/FORGED/ skills/s/SKILL.md; fi",
        "--",
        "main",
    )
    _git(remote, "config", "receive.denyNonFastForwards", "false")  # an attacker with the server's files
    guarded = subprocess.run(
        ["git", "-C", str(work), "push", "-q", "-f", str(remote), "main:main"], capture_output=True, text=True
    )
    assert guarded.returncode != 0 and "brain-ledger guard: refused main" in guarded.stderr  # ADR 27
    (remote / "hooks" / "pre-receive").unlink()  # ... who also removes the remote's guard
    _git(work, "push", "-q", "-f", str(remote), "main:main")
    before = fingerprint(b.root)
    with pytest.raises(StoreError, match="fails the audit"):
        sharing.pull(b, str(remote))
    assert fingerprint(b.root) == before
    assert not (b.root / ".ledger" / "tmp").exists() or not any((b.root / ".ledger" / "tmp").iterdir())


def test_pull_refuses_over_unrecorded_hand_edits(pair) -> None:
    a, remote, b = pair
    a.patch("s", "one", "two")
    sharing.push(a, str(remote))
    (b.skills_dir / "s" / "SKILL.md").write_text("hand edit\n")
    before = fingerprint(b.root)
    with pytest.raises(StoreError, match="not in a snapshot"):
        sharing.pull(b, str(remote))
    assert fingerprint(b.root) == before and not (b.root / ".ledger" / "journal.json").exists()


def test_clone_refuses_a_forged_remote_and_leaves_nothing(tmp_path: Path) -> None:
    a = Brain.init(tmp_path / "a")
    a.create("s", "S", "one\n")
    remote = tmp_path / "r.git"
    sharing.push(a, str(remote))
    a.close()
    head = _git(remote, "rev-parse", "main").strip()
    tree = _git(remote, "rev-parse", f"{head}^{{tree}}").strip()
    forged = _git(remote, "commit-tree", tree, "-p", head, "-m", "not a ledger snapshot").strip()
    _git(remote, "update-ref", "refs/heads/main", forged)
    with pytest.raises(StoreError, match="fails the audit"):
        clone(str(remote), tmp_path / "c")
    assert not (tmp_path / "c").exists()


@pytest.mark.chain
def test_receipts_travel_with_push_and_clone_and_audit_fetches_them_by_url(tmp_path: Path, node: anvil.Node) -> None:
    a = Brain.init(tmp_path / "a")
    a.update_config(chain={"rpc": node.url})
    deploy(a, key=DEV_KEY_NAME)
    register(a, shares=10, key=DEV_KEY_NAME)
    a.create("s", "S", "one\n")
    commit_pending(a, key=DEV_KEY_NAME)
    remote = tmp_path / "r.git"
    run_ledger("--brain", str(a.root), "push", str(remote), check=True)
    cfg = ChainConfig.of(a)
    args = ["--rpc", cfg.rpc, "--registry", cfg.registry, "--agent", hex(cfg.agent_id), "--json"]
    # A plain git clone leaves the receipts behind; 'ledger audit URL' fetches them.
    plain = tmp_path / "plain"
    _git(tmp_path, "clone", "-q", "--bare", str(remote), str(plain))
    skipped = json.loads(run_ledger("audit", str(plain), *args).stdout)["checks"]["chain.receipts"]
    by_url = run_ledger("audit", f"file://{remote}", *args)
    checks = json.loads(by_url.stdout)["checks"]
    assert skipped["skipped"] and by_url.returncode == 0
    assert not checks["chain.receipts"]["skipped"] and checks["chain.receipts"]["ok"]
    b = clone(str(remote), tmp_path / "b")
    # A clone has no chain to check them against: kept apart, unverified, and not counted as anchored.
    assert read_receipts(b.store, UNVERIFIED_REF) == read_receipts(a.store) != {}
    assert read_receipts(b.store) == {}
    # Receipts made on one copy and on the other are joined, not replaced.
    b.update_config(chain=dict(a.config["chain"]))
    b.create("t", "T", "b's\n")
    commit_pending(b, key=DEV_KEY_NAME)
    sharing.push(b, str(remote))
    sharing.pull(a, str(remote))
    assert set(read_receipts(a.store)) == set(read_receipts(b.store)) and len(read_receipts(a.store)) == 3
    a.close()
    b.close()
