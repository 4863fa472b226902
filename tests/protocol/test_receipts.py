"""Receipts are claims about the chain: checked before they are believed, wherever they come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.anchoring.commits import commit_pending
from ledger.brain import Brain
from ledger.bundle.merkle import format_root
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME
from ledger.chain.receipts import read_receipts, write_receipts
from ledger.errors import StoreError
from ledger.protocol.refs import NOTES_REF
from ledger.remotes import sharing
from ledger.remotes.sharing import clone
from ledger.store import gitstore as gs
from tests.harness.cli import run_ledger


def _note(snap: gs.Snapshot, seq: int, **over: object) -> dict:
    doc = {
        "chain_id": 31337,
        "registry": "0x" + "ab" * 20,
        "agent": "0x" + "01" * 32,
        "seq": seq,
        "root": format_root(snap.root),
        "committer": "0x" + "cd" * 20,
        "tx": "0x" + "ee" * 32,
        "block": 1,
        "block_hash": "0x" + "ff" * 32,
        "log_index": 0,
    }
    doc.update(over)
    return doc


def _raw_note(store: gs.GitStore, commit: str, data: bytes) -> None:
    """A note whose bytes are not a receipt at all, written as a hostile copy would."""
    head = store.read_ref(NOTES_REF)
    entries = []
    if head is not None:
        tree = bytes.fromhex(store.read(head, b"commit").split(b"\n", 1)[0].split(b" ")[1].decode())
        entries = [e for e in store.read_tree(tree) if e[2] != commit]
    entries.append((store.write_blob(data), gs.MODE_FILE, commit))
    new = store.write_commit(store.write_tree(entries), [head] if head else [], "forged\n")
    store.move_ref(NOTES_REF, new, head)


def _audit(repo: Path, *extra: str) -> tuple[int, dict, str]:
    proc = run_ledger("audit", str(repo), "--json", *extra)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def test_offline_audit_checks_each_receipt_against_its_snapshot(tmp_path: Path) -> None:
    """No chain is needed to see a receipt on the wrong snapshot, with the wrong root, or malformed."""
    b = Brain.init(tmp_path / "b")
    b.create("s", "S", "one\n")
    b.create("t", "T", "two\n")
    log = json.loads(run_ledger("--brain", str(b.root), "log", "--json", check=True).stdout)[::-1]
    snaps = [b.store.snapshot(bytes.fromhex(d["commit"])) for d in log]
    write_receipts(b.store, {snaps[0].commit: _note(snaps[0], 1), snaps[1].commit: _note(snaps[1], 2)})
    code, rep, _ = _audit(b.root)
    assert code == 0 and rep["checks"]["receipts"]["ok"], rep["checks"]["receipts"]
    cases = {
        "root": _note(snaps[2], 3, root=format_root(snaps[1].root)),  # the root of another snapshot
        "seq": _note(snaps[2], 2),  # the position of another snapshot
        "moved": _note(snaps[1], 2),  # a receipt moved onto another snapshot
    }
    for case, note in cases.items():
        write_receipts(b.store, {snaps[2].commit: note})
        code, rep, err = _audit(b.root)
        chk = rep["checks"]["receipts"]
        assert code == 1 and not chk["ok"] and chk["snapshot"] == snaps[2].commit, (case, chk, err)
    for data, why in (
        (b"not json", "is not JSON"),
        (b'{"seq": 3}', "has no 'chain_id'"),
        (json.dumps(_note(snaps[2], 3, block="1")).encode(), "'block' is '1'"),
    ):
        _raw_note(b.store, snaps[2].commit, data)
        code, rep, err = _audit(b.root)
        chk = rep["checks"]["receipts"]
        assert code == 1 and why in chk["summary"] and chk["snapshot"] == snaps[2].commit, (chk, err)
        assert "Traceback" not in err
        status = run_ledger("--brain", str(b.root), "status")
        assert status.returncode == 0 and "Traceback" not in status.stderr
    b.close()


@pytest.fixture
def anchored(tmp_path: Path, chained: Brain):
    """A brain with its chain, two snapshots anchored and a third not, pushed to a bare remote."""
    a = chained
    a.create("s", "S", "one\n")
    commit_pending(a, key=DEV_KEY_NAME)
    a.create("t", "T", "two\n")  # #2: not anchored
    remote = tmp_path / "remote.git"
    sharing.push(a, str(remote))
    return a, remote


def _forge_on_remote(a: Brain, remote: Path) -> str:
    """The remote claims the unanchored head is anchored: right root and seq, a transaction that never was."""
    head = a.head().snap
    real = read_receipts(a.store)
    template = next(iter(real.values()))
    forged = {**template, "seq": 3, "root": format_root(head.root), "tx": "0x" + "ab" * 32}
    write_receipts(gs.GitStore(remote), {head.commit: forged})
    return head.commit


def _pending(brain: Path) -> int:
    return json.loads(run_ledger("--brain", str(brain), "status", "--json", check=True).stdout)["pending_chain"]


@pytest.mark.chain
def test_pull_and_push_never_take_a_forged_receipt(anchored, tmp_path: Path) -> None:
    a, remote = anchored
    assert _pending(a.root) == 1
    forged = _forge_on_remote(a, remote)
    pulled = run_ledger("--brain", str(a.root), "pull", str(remote), "--json")
    assert pulled.returncode == 0, pulled.stderr
    assert "refused a receipt" in pulled.stderr and forged[:12] in pulled.stderr
    assert forged not in read_receipts(a.store) and _pending(a.root) == 1  # the head is still not anchored
    pushed = run_ledger("--brain", str(a.root), "push", str(remote), "--json")
    assert pushed.returncode == 0, pushed.stderr
    assert "refused a receipt" in pushed.stderr and forged not in read_receipts(a.store)
    # What the remote now holds is our notes, which never took the forged receipt.
    assert forged not in read_receipts(gs.GitStore(remote))
    cfg = ChainConfig.of(a)
    args = ["--rpc", cfg.rpc, "--registry", cfg.registry, "--agent", hex(cfg.agent_id)]
    code, rep, _ = _audit(a.root, *args)
    assert code == 0, rep


@pytest.mark.chain
def test_audit_with_the_chain_catches_what_offline_cannot(anchored, tmp_path: Path) -> None:
    a, remote = anchored
    forged = _forge_on_remote(a, remote)
    cfg = ChainConfig.of(a)
    args = ["--rpc", cfg.rpc, "--registry", cfg.registry, "--agent", hex(cfg.agent_id)]
    code, rep, _ = _audit(remote)
    assert code == 0 and rep["checks"]["receipts"]["ok"]  # right root and seq: only the chain can tell
    code, rep, err = _audit(remote, *args)
    chk = rep["checks"]["chain.receipts"]
    assert code == 1 and chk["snapshot"] == forged and "not among the registry's events" in chk["summary"], chk
    # A receipt whose committer (or root, or log index) is not its event's, in the same transaction.
    real = read_receipts(a.store)
    second = max(real, key=lambda c: real[c]["seq"])
    write_receipts(
        gs.GitStore(remote),
        {
            forged: {**real[second], "seq": 3, "root": format_root(a.head().snap.root)},
            second: {**real[second], "committer": "0x" + "12" * 20},
        },
    )
    code, rep, _ = _audit(remote, *args)
    chk = rep["checks"]["chain.receipts"]
    assert code == 1 and chk["snapshot"] == second and "its committer is not chain sequence 2's" in chk["summary"], chk
    # A malformed note with the chain: a named FAIL, never a traceback.
    _raw_note(gs.GitStore(remote), forged, b'{"seq": 3, "tx": "0x00"}')
    code, rep, err = _audit(remote, *args)
    assert code == 1 and "Traceback" not in err and not rep["checks"]["receipts"]["ok"]
    # A copy holding a malformed receipt fails the quarantine audit: nothing is cloned from it.
    with pytest.raises(StoreError, match="fails the audit"):
        clone(str(remote), tmp_path / "b")
