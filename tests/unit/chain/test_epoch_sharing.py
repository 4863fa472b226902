"""Epoch receipts and the operator's log travel with push, pull and clone (docs/lineage/epochs.md §6, §8).

Real brains, real bare git remotes in temporary directories, a real anvil, and the real CLI:
a clone of an epoch-anchored brain passes ``ledger audit --rpc`` with ``chain.epochs``; pulls
join both sides' epoch notes; a receipt tampered on the remote is refused; an operator's log
is pushed and fetched, and a rewritten one is refused both ways.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ledger.brain import Brain
from ledger.chain import epochlog
from ledger.chain.config import ChainConfig
from ledger.chain.receipts import read_notes, write_receipts
from ledger.errors import StoreError
from ledger.protocol.refs import EPOCH_NOTES_REF, EPOCHS_REF
from ledger.remotes.sharing import clone
from ledger.store import gitstore as gs
from tests.harness.brains import fingerprint
from tests.harness.cli import run_ledger
from tests.unit.chain.test_epochs import anchor, epochlog_receipts, member


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _ref(git_dir: Path, ref: str) -> bytes | None:
    with gs.GitStore(git_dir) as store:
        return store.read_ref(ref)


def _audit(repo: Path | str, like: Brain) -> tuple[int, dict[str, Any]]:
    """``ledger audit --rpc`` of ``repo`` as the agent of ``like`` (a clone has no chain settings of its own)."""
    cfg = ChainConfig.of(like)
    assert cfg.agent_id is not None
    proc = run_ledger(
        "audit", str(repo), "--rpc", cfg.rpc, "--registry", str(cfg.registry), "--agent", hex(cfg.agent_id), "--json"
    )
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _cli(brain: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ledger("--brain", str(brain), *args)


def _tamper(doc: dict[str, Any]) -> dict[str, Any]:
    """The receipt with one base64 character of the checkpoint's signature changed."""
    lines = doc["proof"].split("\n")
    n = max(i for i, ln in enumerate(lines) if ln.startswith("\u2014 "))
    sig = lines[n]
    k = len(sig) - 6
    lines[n] = sig[:k] + ("A" if sig[k] != "A" else "B") + sig[k + 1 :]
    return dict(doc, proof="\n".join(lines))


@pytest.mark.chain
def test_epoch_receipts_travel_verify_on_a_clone_join_and_refuse_tampering(tmp_path: Path, chained: Brain) -> None:
    operator = chained
    a = member(tmp_path, operator, "a")
    a.create("second", "The second skill", "a two\n")
    remote = tmp_path / "r.git"
    pushed = _cli(a.root, "push", str(remote))
    assert pushed.returncode == 0 and "pushed the whole lineage, " in pushed.stdout, pushed.stderr
    assert _ref(remote, EPOCH_NOTES_REF) is None
    b = clone(str(remote), tmp_path / "b")  # before the operator anchors: b holds no epoch receipt
    assert anchor(operator, a)[0] == 0
    mine = epochlog_receipts(a)
    assert len(mine) >= 2
    pushed = _cli(a.root, "push", str(remote))
    assert pushed.returncode == 0 and "pushed receipts to" in pushed.stdout, pushed.stderr
    assert _ref(remote, EPOCH_NOTES_REF) == a.store.read_ref(EPOCH_NOTES_REF)
    again = _cli(a.root, "push", str(remote))
    assert again.returncode == 0 and "is up to date" in again.stdout, again.stderr
    code, report = _audit(f"file://{remote}", a)  # an audit by URL fetches them too
    chk = report["checks"]["chain.epochs"]
    assert code == 0 and chk["ok"] and not chk["skipped"], chk

    # A clone elsewhere holds them, and the audit with the chain accepts it.
    cloned = run_ledger("clone", str(remote), str(tmp_path / "c"))
    assert cloned.returncode == 0, cloned.stderr
    with Brain.open(tmp_path / "c") as c:
        assert epochlog_receipts(c) == mine
    code, report = _audit(tmp_path / "c", a)
    chk = report["checks"]["chain.epochs"]
    assert code == 0 and chk["ok"] and not chk["skipped"] and "replays" in chk["summary"], chk

    # Both sides hold receipts the other lacks: b continues the lineage and is anchored on its own
    # (receipts for every snapshot, against epoch 2); its pull keeps its notes and joins the remote's.
    b.update_config(chain=dict(a.config["chain"]))
    b.create("third", "The third skill", "b three\n")
    assert anchor(operator, b)[0] == 0
    b_before, a_notes = b.store.read_ref(EPOCH_NOTES_REF), _ref(remote, EPOCH_NOTES_REF)
    b_receipts = epochlog_receipts(b)
    assert b_before is not None and a_notes is not None and set(b_receipts) > set(mine)
    pulled = _cli(b.root, "pull", str(remote), "--json")
    assert pulled.returncode == 0 and json.loads(pulled.stdout)["action"] == "nothing", pulled.stderr
    joined = b.store.read_ref(EPOCH_NOTES_REF)
    parents = _git(b.store.git_dir, "rev-list", "--parents", "-n", "1", joined.hex()).split()[1:]  # type: ignore[union-attr]
    assert set(parents) == {b_before.hex(), a_notes.hex()}  # both heads, so either side's next push fast-forwards
    assert epochlog_receipts(b) == b_receipts  # ours kept where both hold one
    assert _cli(b.root, "push", str(remote)).returncode == 0
    assert _ref(remote, EPOCH_NOTES_REF) == joined

    # A receipt tampered on the remote: a takes the snapshot, refuses the receipt, and names it.
    third = b.head().commit.hex()
    write_receipts(gs.GitStore(remote), {third: _tamper(b_receipts[third])}, ref=EPOCH_NOTES_REF)
    before = a.store.read_ref(EPOCH_NOTES_REF)
    pulled = _cli(a.root, "pull", str(remote), "--json")
    assert pulled.returncode == 0, pulled.stderr
    out = json.loads(pulled.stdout)
    assert out["to"] == third and out["incoming_receipts"]["epochs"]["taken"] == 0
    assert "refused an epoch receipt that does not hold up" in pulled.stderr and third[:12] in pulled.stderr
    assert "does not verify offline" in pulled.stderr
    assert third not in epochlog_receipts(a) and epochlog_receipts(a) == mine
    after = a.store.read_ref(EPOCH_NOTES_REF)
    assert third not in read_notes(a.store, EPOCH_NOTES_REF)
    again = _cli(a.root, "pull", str(remote))
    assert again.returncode == 0 and third[:12] in again.stderr
    assert a.store.read_ref(EPOCH_NOTES_REF) == after  # refused again: nothing changes
    assert before is not None
    code, report = _audit(a.root, a)
    assert code == 0 and report["checks"]["chain.epochs"]["ok"], report["checks"]["chain.epochs"]
    # The tampered receipt reaches no clone either: one that does not hold up refuses the whole clone.
    with pytest.raises(StoreError, match="epoch receipts that do not hold up"):
        clone(str(remote), tmp_path / "d")
    assert not (tmp_path / "d").exists()

    # What the operator did not sign (tx, block) a brain with its chain checks on arrival: refused too.
    write_receipts(gs.GitStore(remote), {third: dict(b_receipts[third], tx="0x" + "ee" * 32)}, ref=EPOCH_NOTES_REF)
    pulled = _cli(a.root, "pull", str(remote))
    assert pulled.returncode == 0 and "EpochAnchored event" in pulled.stderr and third[:12] in pulled.stderr
    assert epochlog_receipts(a) == mine  # joined with the remote's head (so a push fast-forwards), not its receipt
    # The real receipt back on the remote: it verifies offline and on the chain, and is taken.
    write_receipts(gs.GitStore(remote), {third: b_receipts[third]}, ref=EPOCH_NOTES_REF)
    pulled = _cli(a.root, "pull", str(remote), "--json")
    assert pulled.returncode == 0 and json.loads(pulled.stdout)["incoming_receipts"]["epochs"] == {
        "taken": 1,
        "refused": [],
    }, pulled.stderr
    assert epochlog_receipts(a) == {**mine, third: b_receipts[third]}
    code, report = _audit(a.root, a)
    assert code == 0 and report["checks"]["chain.epochs"]["ok"], report["checks"]["chain.epochs"]
    b.close()


def _rewrite(store: gs.GitStore, change: str) -> None:
    """The operator's log rewritten: ``"content"`` a fast-forward commit changing epoch 1's root,
    ``"history"`` the same log as a parentless commit (a non-fast-forward)."""
    log = epochlog.read_local(store)
    if change == "content":
        log.epochs[0]["root"] = "00" * 32
        epochlog.save(store, log, "rewritten\n")
        return
    tree = _git(store.git_dir, "rev-parse", f"{EPOCHS_REF}^{{tree}}")
    orphan = _git(store.git_dir, "commit-tree", tree, "-m", "history rewritten")
    _git(store.git_dir, "update-ref", EPOCHS_REF, orphan)


@pytest.mark.chain
def test_the_operators_log_is_pushed_and_fetched_and_a_rewritten_one_refused(tmp_path: Path, chained: Brain) -> None:
    operator = chained
    x = member(tmp_path, operator, "x")
    assert anchor(operator, x)[0] == 0
    remote = tmp_path / "op.git"
    assert _cli(operator.root, "push", str(remote)).returncode == 0
    assert _ref(remote, EPOCHS_REF) == operator.store.read_ref(EPOCHS_REF) is not None
    op2 = clone(str(remote), tmp_path / "op2")  # the log is fetched with the brain
    assert op2.store.read_ref(EPOCHS_REF) == operator.store.read_ref(EPOCHS_REF)
    x.create("second", "The second skill", "x two\n")
    assert anchor(operator, x)[0] == 0
    assert _cli(operator.root, "push", str(remote)).returncode == 0
    pulled = _cli(op2.root, "pull", str(remote))
    assert pulled.returncode == 0, pulled.stderr
    assert op2.store.read_ref(EPOCHS_REF) == operator.store.read_ref(EPOCHS_REF)  # fast-forwarded
    assert len(epochlog.read_local(op2.store).epochs) == 2

    # A copy whose log rewrites an anchored epoch (a git fast-forward) may not publish it.
    _rewrite(op2.store, "content")
    published = _ref(remote, EPOCHS_REF)
    refused = _cli(op2.root, "push", str(remote))
    assert refused.returncode == 1 and "only grows" in refused.stderr and "epoch 1" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and _ref(remote, EPOCHS_REF) == published

    # The same rewrite published with plain git (a fast-forward) is refused by the remote's guard, which
    # holds the log to the rule a peer applies (ADR 27); an unguarded remote (a git host) takes it, and a pull
    # refuses it there, and so one that rewrites history (a non-fast-forward, by someone with the server's
    # files); nothing of the operator changes either time.
    raw = subprocess.run(
        ["git", f"--git-dir={op2.store.git_dir}", "push", "-q", str(remote), EPOCHS_REF], capture_output=True, text=True
    )
    assert raw.returncode != 0 and f"brain-ledger guard: refused {EPOCHS_REF}" in raw.stderr, raw.stderr
    assert "epoch 1" in raw.stderr and _ref(remote, EPOCHS_REF) == published
    (remote / "hooks" / "pre-receive").unlink()
    _git(op2.store.git_dir, "push", "-q", str(remote), EPOCHS_REF)
    before = fingerprint(operator.root)
    refused = _cli(operator.root, "pull", str(remote))
    assert refused.returncode == 1 and "the remote's log rewrites this brain's" in refused.stderr, refused.stderr
    assert fingerprint(operator.root) == before
    _rewrite(gs.GitStore(remote), "history")
    refused = _cli(operator.root, "pull", str(remote))
    assert refused.returncode == 1 and "non-fast-forward" in refused.stderr, refused.stderr
    assert fingerprint(operator.root) == before
    op2.close()


@pytest.mark.chain
def test_a_planted_receipt_of_another_registry_is_refused_on_pull(tmp_path: Path, chained: Brain) -> None:
    """A hostile peer plants, on its new snapshot, an epoch receipt of another registry signed by a key of its
    own (it verifies offline); a pull whose chain is up refuses it, and the operator's next anchor writes the
    snapshot's real receipt (review of issue 37, finding 3)."""
    from ledger.chain import keys
    from ledger.chain.receipts import write_receipts
    from ledger.protocol import epochproof, notes, tlog
    from ledger.protocol.receipts import anchored
    from ledger.signatures.siblings import ed25519_key
    from tests.unit.chain.test_epochs import anchor, audit, epochlog_receipts, member

    def _forged(agent: int, seq: int, parent: bytes, root: bytes) -> dict:
        z = keys.dev_account(3)  # the attacker: any key, not a committer
        reg, cid = "0x" + "de" * 20, 31337  # another registry
        origin = notes.origin_of(cid, reg, z.address)
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        ed = ed25519_key(z.key)
        vk = notes.vkey(origin, ed.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
        item = tlog.entry(agent, seq, parent, root)
        tree = tlog.Tree([tlog.leaf_hash(item)])
        cp = notes.sign_note(notes.checkpoint_text(origin, 1, tree.root()), origin, ed)
        header = {
            "chain_id": cid,
            "registry": reg,
            "operator": z.address.lower(),
            "vkey": vk,
            "key_signature": notes.certify_key(z.key, vk),
        }
        epoch = {"epoch": 1, "tx": "0x" + "00" * 32, "block": 1, "checkpoint": cp}
        return epochproof.build(header, epoch, 0, [], item, "/nowhere")

    operator = chained
    a = member(tmp_path, operator, "a")
    assert anchor(operator, a)[0] == 0
    remote = tmp_path / "r.git"
    assert run_ledger("--brain", str(a.root), "push", str(remote)).returncode == 0
    assert run_ledger("clone", str(remote), str(tmp_path / "p")).returncode == 0
    p = Brain.open(tmp_path / "p")
    p.create("second", "peer's new skill", "peer two\n")  # the peer's new snapshot S
    snaps = anchored(list(reversed(list(p.store.lineage()))))
    agent = ChainConfig.of(a).agent_id
    s = snaps[-1]
    planted = _forged(agent, len(snaps), snaps[-2].root, s.root)
    assert epochproof.verify_offline(planted)
    write_receipts(p.store, {s.commit: planted}, ref=EPOCH_NOTES_REF)
    assert run_ledger("--brain", str(p.root), "push", str(remote)).returncode == 0
    pulled = run_ledger("--brain", str(a.root), "pull", str(remote))
    assert pulled.returncode == 0 and "refused an epoch receipt" in pulled.stderr, pulled.stderr
    a.close()
    a = Brain.open(tmp_path / "a")
    assert s.commit not in epochlog_receipts(a)  # refused: the chain is up and it names another registry
    code, out, _ = anchor(operator, a)
    assert code == 0 and out["heads"] == 1  # S is now in the operator's log...
    assert epochlog_receipts(a)[s.commit]["registry"] == ChainConfig.of(a).registry  # its real receipt
    assert audit(a)[0] == 0
