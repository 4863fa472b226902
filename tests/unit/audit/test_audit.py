"""Auditor scenarios on real git and a real anvil: each tamper is caught, naming the right snapshot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.anchoring.commits import commit_pending, deploy, register
from ledger.brain import Brain
from ledger.chain import anvil
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME, dev_account
from ledger.chain.registry import Registry
from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger
from tests.harness.localhttp import refused_url

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "mallory",
    "GIT_AUTHOR_EMAIL": "m@x",
    "GIT_COMMITTER_NAME": "mallory",
    "GIT_COMMITTER_EMAIL": "m@x",
    "FILTER_BRANCH_SQUELCH_WARNING": "1",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=GIT_ENV
    ).stdout


def audit(repo: Path, *extra: str) -> tuple[int, dict]:
    proc = run_ledger("audit", str(repo), "--json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def seven_snapshots(root: Path) -> tuple[Brain, list[str]]:
    """Seven snapshots touching three skills; returns the brain and its commits, oldest first."""
    b = make_brain(root, {"alpha": ("Alpha", "one\n"), "beta": ("Beta", "two\n")})
    b.patch("alpha", "one", "uno")
    b.write_file("beta", "references/notes.md", b"notes\n")
    b.create("gamma", "Gamma", "three\n")
    b.patch("gamma", "three", "tres")
    commits = [s.commit for s in reversed(list(b.store.lineage()))]
    return b, commits


@pytest.fixture
def brain(tmp_path: Path) -> Iterator[tuple[Brain, list[str]]]:
    b, commits = seven_snapshots(tmp_path / "brain")
    try:
        yield b, commits
    finally:
        b.close()


def clone(src: Path, dst: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(src), str(dst)], check=True)
    return dst


def test_clean_brain_verifies_and_clone_audits(brain, tmp_path: Path) -> None:
    b, commits = brain
    proc = run_ledger("--brain", str(b.root), "verify")
    assert proc.returncode == 0 and "Verified OK" in proc.stdout and "Verified" not in proc.stderr
    code, rep = audit(clone(b.root, tmp_path / "c"))
    assert code == 0 and rep["ok"] and len(rep["timeline"]) == len(commits) == 7
    assert rep["skills"]["alpha"] == [
        {"version": 1, "action": "create", "commit": commits[1], "index": 1},
        {"version": 2, "action": "update", "commit": commits[3], "index": 3},
    ]


def test_working_tree_edit_is_caught(brain) -> None:
    b, _ = brain
    (b.skills_dir / "beta" / "references" / "notes.md").write_text("edited by hand\n")
    proc = run_ledger("--brain", str(b.root), "verify", "--json")
    rep = json.loads(proc.stdout)
    assert proc.returncode == 1
    wt = rep["checks"]["worktree"]
    assert not wt["ok"] and wt["path"] == "beta/references/notes.md" and "modified" in wt["summary"]
    assert all(c["ok"] for k, c in rep["checks"].items() if k != "worktree")


def test_rewritten_blob_via_filter_branch_is_caught(brain, tmp_path: Path) -> None:
    b, _commits = brain
    c = clone(b.root, tmp_path / "c")
    # Change "uno" (introduced by snapshot #3) to "UNO" in every snapshot, keeping the messages.
    git(
        c,
        "filter-branch",
        "-f",
        "--tree-filter",
        "if [ -f skills/alpha/SKILL.md ]; then sed -i s/uno/UNO/ skills/alpha/SKILL.md; fi",
        "--",
        "main",
    )
    code, rep = audit(c)
    snaps = rep["checks"]["snapshots"]
    assert code == 1 and not snaps["ok"]
    assert snaps["index"] == 3 and snaps["path"] == "alpha/SKILL.md"
    assert snaps["expected"] == rep["timeline"][3]["root"] and snaps["computed"] != snaps["expected"]
    assert snaps["failures"] == 4  # snapshots #3..#6 all carry the rewritten file


def test_replaced_blob_via_replace_refs_is_caught(brain) -> None:
    b, commits = brain
    tree = git(b.root, "rev-parse", f"{commits[4]}:skills/beta/references/notes.md").strip()
    fake = subprocess.run(
        ["git", "-C", str(b.root), "hash-object", "-w", "--stdin"],
        input="forged\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(b.root, "replace", tree, fake)
    code, rep = audit(b.root)
    snaps = rep["checks"]["snapshots"]
    assert code == 1 and snaps["index"] == 4 and snaps["path"] == "beta/references/notes.md"
    assert not rep["checks"]["fsck"]["ok"] and "replace ref" in rep["checks"]["fsck"]["summary"]


def test_edited_trailer_root_is_caught(brain, tmp_path: Path) -> None:
    b, commits = brain
    c = clone(b.root, tmp_path / "c")
    root = git(c, "log", "-1", "--format=%(trailers:key=Ledger-Root,valueonly)", commits[5]).strip()
    fake = "blake3-tree-v1:" + "ab" * 32
    git(c, "filter-branch", "-f", "--msg-filter", f"sed 's/^Ledger-Root: {root}$/Ledger-Root: {fake}/'", "--", "main")
    code, rep = audit(c)
    assert code == 1
    snaps, lineage = rep["checks"]["snapshots"], rep["checks"]["lineage"]
    assert snaps["index"] == 5 and snaps["expected"] == fake and snaps["computed"] == root
    assert lineage["index"] == 6 and lineage["expected"] == fake and lineage["computed"] == root


def test_snapshot_dropped_from_the_middle_is_caught(brain, tmp_path: Path) -> None:
    b, commits = brain
    c = clone(b.root, tmp_path / "c")
    git(c, "rebase", "-q", "--onto", commits[3], commits[4], "main")  # drop #4 (beta's notes file)
    code, rep = audit(c)
    lineage = rep["checks"]["lineage"]
    assert code == 1 and not lineage["ok"] and lineage["index"] == 4
    assert len(rep["timeline"]) == 6


def test_audit_refuses_what_is_not_a_store(tmp_path: Path) -> None:
    proc = run_ledger("audit", str(tmp_path))
    assert proc.returncode == 1 and "not a git repository" in proc.stderr


# --------------------------------------------------------------------------- chain


@pytest.fixture
def chained(tmp_path: Path, node: anvil.Node) -> Iterator[tuple[Brain, list[str]]]:
    b, commits = seven_snapshots(tmp_path / "brain")
    b.update_config(chain={"rpc": node.url})
    deploy(b, key=DEV_KEY_NAME)
    register(b, key=DEV_KEY_NAME)
    try:
        yield b, commits
    finally:
        b.close()


def chain_args(b: Brain) -> list[str]:
    cfg = ChainConfig.of(b)
    return ["--rpc", cfg.rpc, "--registry", cfg.registry, "--agent", hex(cfg.agent_id)]


def test_clean_clone_audit_with_chain_passes_then_fails_after_tamper(chained, tmp_path: Path) -> None:
    b, _commits = chained
    commit_pending(b, key=DEV_KEY_NAME, batch=3)
    b.create("delta", "Delta", "pending\n")  # one snapshot newer than the on-chain head
    c = clone(b.root, tmp_path / "c")
    code, rep = audit(c, *chain_args(b))
    assert code == 0, rep["checks"]
    assert rep["pending"] == [b.head().snap.commit] and rep["chain"]["onchain_seq"] == 7
    assert rep["checks"]["chain.receipts"]["summary"].startswith("no receipts")  # notes are not cloned by default
    git(c, "fetch", "-q", "origin", "refs/notes/*:refs/notes/*")
    code, rep = audit(c, *chain_args(b), "--html", str(tmp_path / "r.html"))
    assert code == 0 and "7 receipt(s)" in rep["checks"]["chain.receipts"]["summary"]
    git(
        c,
        "filter-branch",
        "-f",
        "--tree-filter",
        "if [ -f skills/beta/SKILL.md ]; then sed -i s/two/TWO/ skills/beta/SKILL.md; fi",
        "--",
        "main",
    )
    code, rep = audit(c, *chain_args(b))
    assert code == 1 and rep["checks"]["snapshots"]["index"] == 2
    assert not rep["checks"]["chain.receipts"]["ok"] or not rep["checks"]["snapshots"]["ok"]


def test_bogus_root_committed_by_authorized_key_is_caught(chained) -> None:
    b, _commits = chained
    commit_pending(b, key=DEV_KEY_NAME)
    b.patch("alpha", "uno", "eins")  # snapshot #7, not yet on chain
    cfg = ChainConfig.of(b)
    reg = Registry(cfg.rpc, cfg.registry)
    bogus = b"\x42" * 32
    reg.send(dev_account(0), reg.bound().functions.commit(cfg.agent_id, reg.head(cfg.agent_id), bogus), what="bogus")
    code, rep = audit(b.root, *chain_args(b))
    roots = rep["checks"]["chain.roots"]
    assert code == 1 and roots["index"] == 7 and roots["snapshot"] == b.head().snap.commit
    assert roots["computed"] == "blake3-tree-v1:" + "42" * 32
    assert not rep["checks"]["chain.head"]["ok"]
    assert rep["checks"]["chain.committers"]["ok"]  # the key was authorized: the lie is in the root


def test_receipt_reorganized_away_is_caught(chained) -> None:
    b, _commits = chained
    commit_pending(b, key=DEV_KEY_NAME, batch=4)  # seq 1-4 in one block, 5-7 in the next
    cfg = ChainConfig.of(b)
    reg = Registry(cfg.rpc, cfg.registry)
    snap_id = reg.w3.provider.make_request("evm_snapshot", [])["result"]
    b.patch("gamma", "tres", "drei")
    commit_pending(b, key=DEV_KEY_NAME)
    reg.w3.provider.make_request("evm_revert", [snap_id])  # the last block is orphaned …
    reg.w3.provider.make_request("evm_mine", [])  # … and another takes its height
    code, rep = audit(b.root, *chain_args(b))
    receipts = rep["checks"]["chain.receipts"]
    assert code == 1 and not receipts["ok"]
    assert receipts["snapshot"] == b.head().snap.commit and "reorganized away" in receipts["summary"]
    assert rep["pending"] == [b.head().snap.commit]  # the snapshot itself is merely pending again
    assert rep["checks"]["chain.roots"]["ok"]


def test_verify_proof_against_the_chain(chained, tmp_path: Path) -> None:
    b, commits = chained
    commit_pending(b, key=DEV_KEY_NAME)
    proof = tmp_path / "p.json"
    proof.write_text(
        run_ledger("--brain", str(b.root), "proof", "make", "alpha/SKILL.md", "--at", commits[3], check=True).stdout
    )
    ok = run_ledger("proof", "check", str(proof), "--chain", *chain_args(b))
    assert ok.returncode == 0 and ok.stdout.startswith("OK: alpha/SKILL.md")
    doc = json.loads(proof.read_text())
    doc["root"] = "blake3-tree-v1:" + "00" * 31 + "01"
    proof.write_text(json.dumps(doc))
    bad = run_ledger("proof", "check", str(proof), "--chain", *chain_args(b))
    assert bad.returncode == 1 and "never committed on chain" in bad.stderr


def test_unreachable_rpc_is_exit_1(brain) -> None:
    b, _ = brain
    proc = run_ledger(
        "audit",
        str(b.root),
        "--rpc",
        refused_url(),
        "--registry",
        "0x" + "11" * 20,
        "--agent",
        "0x1",
    )
    assert proc.returncode == 1 and "cannot reach" in proc.stderr  # a failure, not a usage error


# --------------------------------------------------------------------------- history tools


def test_diff_show_revert(brain) -> None:
    b, commits = brain
    d = b.diff(commits[2], commits[4])
    assert d.skills == {"alpha": "modified", "beta": "modified"}
    assert {f.path: f.status for f in d.files} == {
        "skills/alpha/SKILL.md": "modified",
        "skills/beta/SKILL.md": "modified",
        "skills/beta/references/notes.md": "added",
    }
    assert "one" in b.show("alpha", 1) and "uno" in b.show("alpha", 2)
    before = len(list(b.store.lineage()))
    r = b.revert("beta", 1)
    assert (r.operation, r.version) == ("revert", 3)
    assert not (b.skills_dir / "beta" / "references").exists()
    assert b.view("beta")["body"] == "two\n"
    assert len(list(b.store.lineage())) == before + 1  # history grew; nothing was rewritten
    assert run_ledger("--brain", str(b.root), "verify").returncode == 0


# --------------------------------------------------------------------------- HTML in a real browser


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
def test_html_report_renders_in_headless_chromium(brain, tmp_path: Path) -> None:
    if _chromium() is None:
        if os.environ.get("LEDGER_REQUIRE_BROWSER"):
            pytest.fail("chromium is required here (scripts/test installs Debian's chromium) but is missing")
        pytest.skip("chromium not installed (scripts/test installs Debian's chromium)")
    b, _commits = brain
    (b.skills_dir / "alpha" / "SKILL.md").write_text("tampered\n")
    html = tmp_path / "report.html"
    proc = run_ledger("--brain", str(b.root), "verify", "--html", str(html))
    assert proc.returncode == 1
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [_chromium(), *flags, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    assert 'id="verdict" class="verdict fail"' in dom and "FAILED" in dom
    assert 'data-check="worktree"' in dom and dom.count("data-index=") == 7
    assert "alpha</b>: v1 → v2" in dom
    png = tmp_path / "report.png"
    subprocess.run(
        [_chromium(), *flags, f"--screenshot={png}", "--window-size=1200,900", html.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert png.exists() and png.stat().st_size > 10_000


def test_a_merge_anywhere_in_the_lineage_fails_the_audit(tmp_path: Path) -> None:
    """Issue 18, item 4: a tip replaced by a merge whose second parent is a forged, never-hashed commit."""
    b = Brain.init(tmp_path / "b")
    b.create("s", "S", "one\n")
    b.close()
    git = ["git", "--git-dir", str(tmp_path / "b" / ".git")]
    head = subprocess.run([*git, "rev-parse", "main"], capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(
        [*git, "rev-parse", f"{head}^{{tree}}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    forged = subprocess.run(
        [*git, "commit-tree", tree, "-m", "never hashed"], capture_output=True, text=True, check=True
    ).stdout.strip()
    message = subprocess.run(
        [*git, "log", "-1", "--format=%B", head], capture_output=True, text=True, check=True
    ).stdout
    parent = subprocess.run([*git, "rev-parse", f"{head}^"], capture_output=True, text=True, check=True).stdout.strip()
    merge = subprocess.run(
        [*git, "commit-tree", tree, "-p", parent, "-p", forged],
        input=message,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run([*git, "update-ref", "refs/heads/main", merge, head], check=True)
    code, rep = audit(tmp_path / "b")
    lineage = rep["checks"]["lineage"]
    assert code == 1 and not lineage["ok"] and lineage["snapshot"] == merge and "2 parent" in lineage["summary"]
