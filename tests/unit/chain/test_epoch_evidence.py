"""Evidence roots through epochs (issue 38, item 2): evidence entries in an operator's log, evidence receipts,
the audit and the transport (docs/lineage/epochs.md §10).

The formats against their committed bytes; the flow on real brains, a real anvil, the real CLI: two brains'
outcomes anchored in one ``anchorEpoch`` transaction, each receipt checked offline and against the chain,
a log trimmed after anchoring and a forged evidence entry failing the audit, receipts surviving a clone.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ledger.brain import Brain
from ledger.chain import epochlog
from ledger.chain.config import ChainConfig
from ledger.chain.receipts import read_notes, write_receipts
from ledger.chain.registry import Registry
from ledger.errors import ChainError, StoreError
from ledger.protocol import epochevidence, epochproof, tlog
from ledger.protocol.epochlog import decode_entries, encode_entries
from ledger.protocol.evidencelog import EvidenceLog
from ledger.protocol.refs import EPOCHS_REF, EVIDENCE_NOTES_REF
from tests.harness.cli import run_ledger
from tests.harness.tamper import anchor_raw
from tests.unit.chain.test_epochs import anchor, audit, member
from tests.unit.chain.test_evidence_chain import write_log

VECTORS = Path(__file__).parents[2] / "vectors" / "tlog"
ZERO = b"\x00" * 32


# ------------------------------------------------------------------ the bytes


def test_worked_example_vector() -> None:
    """The draft's worked example, byte for byte: the entry, the tree, the entries-v2 file, the receipt."""
    from ledger.signatures.siblings import ed25519_key

    v = json.loads((VECTORS / "epoch-evidence-receipt.json").read_text())
    r5 = EvidenceLog([b"outcome %d" % i for i in range(5)]).root  # lineage/evidence.md §7.4's log of 5
    item = epochevidence.evidence_entry(0xA1, b"\x03" * 32, 5, r5)
    assert item.hex() == (
        "02"
        + "00" * 31
        + "a1"
        + "03" * 32
        + "0000000000000005"
        + "74e09f02e6ded28ea319a97f5e8087fb627fb07df33cf03019b2db327e814ef9"
    )
    entries = [bytes.fromhex(e) for e in v["entries"]]
    assert entries[3] == item and entries[:3] == [
        bytes.fromhex(e) for e in json.loads((VECTORS / "epoch-receipt.json").read_text())["entries"]
    ]
    tree = tlog.Tree([tlog.leaf_hash(e) for e in entries])
    assert tlog.leaf_hash(item).hex() == "70177e01e883d134ea18768100a7f93a38340e67b008430c38a6e60ea2b9af4a"
    assert tree.root().hex() == v["root"] == "58e0698ecee9c1838fc4ad68fdb50c3e05cb93936dda3c3b4562c27e6820113b"
    name, data = encode_entries(entries)
    assert (name, len(data), hashlib.sha256(data).hexdigest()) == (
        "entries-v2",
        421,
        "7c6c7477d0de6b0cc9a850feebf52d738475624870c2416f3bdcbc450a9621f6",
    )
    assert data[:1] == b"\x68" and data[3 * 105 : 3 * 105 + 2] == b"\x69\x02"
    assert decode_entries(name, data) == entries
    checkpoint = notes_sign(v, tree.root(), ed25519_key(bytes.fromhex(v["secret"])))
    assert checkpoint == v["checkpoint"]
    header = {k: v[k] for k in ("chain_id", "registry", "operator")}
    base = json.loads((VECTORS / "epoch-receipt.json").read_text())
    header |= {"vkey": base["verifier_key"], "key_signature": base["key_signature"]}
    epoch = {"epoch": 2, "tx": "0x" + "ab" * 32, "block": 9, "checkpoint": checkpoint}
    receipt = epochevidence.build(header, epoch, 3, tree.inclusion(3), item, base["receipt"]["log"])
    assert receipt == v["receipt"]
    facts = epochevidence.verify_offline(receipt)
    assert (facts["size"], facts["tree_root"], facts["index"], facts["agent"]) == (4, tree.root(), 3, 0xA1)
    assert (facts["head"], facts["evidence_size"], facts["evidence_root"]) == (b"\x03" * 32, 5, r5)


def notes_sign(v: dict[str, Any], root: bytes, key: Any) -> str:
    from ledger.protocol import notes

    origin = notes.origin_of(v["chain_id"], v["registry"], v["operator"])
    return notes.sign_note(notes.checkpoint_text(origin, 4, root), origin, key)


def test_malformed_entries_and_files_are_refused() -> None:
    good = epochevidence.evidence_entry(7, b"\x03" * 32, 2, b"\x04" * 32)
    head = tlog.entry(7, 1, ZERO, b"\x03" * 32)
    assert epochevidence.parse_item(good) == ("evidence", (7, b"\x03" * 32, 2, b"\x04" * 32))
    assert epochevidence.parse_item(head) == ("head", (7, 1, ZERO, b"\x03" * 32))
    # length alone tells the kinds apart: 104 bytes are a head whatever they hold; 105 must be a well-formed
    # evidence entry; any other length is refused
    assert epochevidence.parse_item(good[:-1])[0] == "head"
    for bad in (
        good[:-2],
        good + b"\x00",
        b"\x01" + good[1:],
        good[:65] + bytes(8) + good[73:],
        good[:33] + ZERO + good[65:],
        good[:73] + ZERO,
        b"",
    ):
        with pytest.raises(ChainError):
            epochevidence.parse_item(bad)
    for args in (
        (7, b"\x03" * 32, 0, b"\x04" * 32),
        (7, ZERO, 1, b"\x04" * 32),
        (7, b"\x03" * 32, 1, ZERO),
        (7, b"\x03" * 31, 1, b"\x04" * 32),
        (1 << 256, b"\x03" * 32, 1, b"\x04" * 32),
    ):
        with pytest.raises(ChainError):
            epochevidence.evidence_entry(*args)
    # one log, one encoding: heads only stay 'entries'; a log with evidence is entries-v2, and nothing else parses
    assert encode_entries([head]) == ("entries", head)
    name, data = encode_entries([head, good])
    assert name == "entries-v2" and data == b"\x68" + head + b"\x69" + good
    for bad_name, bad in (
        ("entries-v2", b"\x68" + head),  # heads only: must be 'entries'
        ("entries-v2", data[:-1]),  # cut
        ("entries-v2", data + b"\x67" + bytes(103)),  # a length byte not 104 or 105
        ("entries-v2", b"\x69" + good + b"\x68" + head[:32] + bytes(8) + head[40:]),  # seq 0
        ("entries", head + good),  # evidence in a v1 file
        ("entries-v3", data),
    ):
        with pytest.raises(ChainError):
            for item in decode_entries(bad_name, bad):
                epochevidence.parse_item(item)


def test_every_tampered_evidence_receipt_is_refused_offline() -> None:
    receipt = json.loads((VECTORS / "epoch-evidence-receipt.json").read_text())["receipt"]
    head_receipt = json.loads((VECTORS / "epoch-receipt.json").read_text())["receipt"]
    proof = receipt["proof"]
    for i, bad in enumerate(
        [
            dict(receipt, size=4),  # the receipt names another size than its proof's entry
            dict(receipt, head="0x" + "01" * 32),
            dict(receipt, evidence_root="0x" + "05" * 32),
            dict(receipt, agent=receipt["agent"].upper().replace("0X", "0x")),  # one spelling only
            dict(receipt, proof=proof.replace("index 3", "index 2")),
            dict(receipt, proof=proof.replace("\n4\n", "\n5\n")),  # the checkpoint's size, under its signature
            dict(receipt, kind=epochproof.KIND),
            {**receipt, "seq": 1},  # a field of the head receipt
            head_receipt,  # a head receipt is not an evidence receipt
        ]
    ):
        with pytest.raises(ChainError):
            epochevidence.verify_offline(bad)
            pytest.fail(f"tampered evidence receipt {i} verified")
    with pytest.raises(ChainError):  # nor the other way round
        epochproof.verify_offline(receipt)


# ------------------------------------------------------------------ the flow on a real anvil


def record(brain: Brain, n: int) -> list[bytes]:
    rows = [
        json.dumps({"skill": "first", "task": f"t {secrets.token_hex(4)}", "success": i % 2 == 0}).encode()
        for i in range(n)
    ]
    with brain.acting("agent"):
        brain.evidence.import_lines(rows)
    return brain.evidence.entries()


def evidence_receipts(b: Brain) -> dict[str, dict[str, Any]]:
    return {c: json.loads(d) for c, d in read_notes(b.store, EVIDENCE_NOTES_REF).items()}


def epochs_check(b: Brain) -> tuple[int, dict[str, Any]]:
    code, report = audit(b)
    return code, report["checks"]["chain.epochs"]


@pytest.mark.chain
def test_two_brains_outcomes_in_one_epoch(tmp_path: Path, chained: Brain) -> None:
    operator = chained
    a, b = member(tmp_path, operator, "a"), member(tmp_path, operator, "b")
    logs = {"a": record(a, 3), "b": record(b, 2)}
    code, out, err = anchor(operator, a, b)
    assert code == 0, err
    assert (out["epoch"], out["evidence"], out["brains"]) == (1, 2, 2) and out["tx"].startswith("0x")
    log = epochlog.read_local(operator.store)
    assert out["size"] == len(log.entries) == out["heads"] + 2
    cfg = ChainConfig.of(operator)
    reg = Registry(cfg.rpc, cfg.registry)
    assert reg.latest_epoch(log.header["operator"])[0] == 1  # one transaction, both brains' heads and evidence
    for name, brain in (("a", a), ("b", b)):
        agent = ChainConfig.of(brain).agent_id
        ((commit, receipt),) = evidence_receipts(brain).items()
        assert commit == brain.store.head().hex()  # on the snapshot whose log it anchors
        facts = epochevidence.verify_offline(receipt)
        assert (facts["agent"], facts["evidence_size"]) == (agent, len(logs[name]))
        assert facts["evidence_root"] == EvidenceLog(logs[name]).root
        assert facts["head"] == brain.store.snapshot(brain.store.head()).root
        assert reg.epoch(receipt["operator"], receipt["epoch"]) == (facts["size"], facts["tree_root"])
        # in the log, right after the brain's last head entry, bound to it
        kind, prev = epochevidence.parse_item(log.entries[facts["index"] - 1])
        assert kind == "head" and prev[0] == agent and prev[3] == facts["head"]
        code, chk = epochs_check(brain)
        assert code == 0 and chk["ok"] and "1 evidence receipt(s)" in chk["summary"], chk
    # the log is stored as entries-v2 and read back the same
    git = ["git", f"--git-dir={operator.store.git_dir}"]
    files = subprocess.run(
        [*git, "ls-tree", "--name-only", EPOCHS_REF], capture_output=True, text=True, check=True
    ).stdout.split()
    assert files == ["entries-v2", "log.json"]
    assert epochlog.read_remote(str(operator.root)).entries == log.entries
    # more outcomes, no new head: an epoch of one evidence entry, a second receipt for a; b untouched
    record(a, 2)
    code, out, err = anchor(operator, a, b)
    assert code == 0 and (out["epoch"], out["heads"], out["evidence"]) == (2, 0, 1), (out, err)
    assert len(evidence_receipts(a)) == 2 and len(evidence_receipts(b)) == 1
    code, idle, err = anchor(operator, a, b)
    assert code == 0 and idle["tx"] is None and idle["evidence"] == 0, err
    assert epochs_check(a)[0] == 0 and epochs_check(b)[0] == 0


@pytest.mark.chain
def test_a_log_trimmed_after_epoch_anchoring_fails_and_is_refused(tmp_path: Path, chained: Brain) -> None:
    operator = chained
    a = member(tmp_path, operator, "a")
    entries = record(a, 3)
    assert anchor(operator, a)[0] == 0
    before = epochlog.read_local(operator.store).commit
    write_log(a, entries[:2])  # a new head snapshot whose log dropped an anchored outcome
    code, chk = epochs_check(a)
    assert code == 1 and not chk["ok"]
    assert "anchored 3, in this clone 2" in chk["summary"] and "trimmed" in chk["summary"], chk
    code, _, err = anchor(operator, a)  # the operator refuses to anchor on it, and records nothing
    assert code == 1 and "(anchored 3, in the brain 2)" in err and "trimmed" in err, err
    assert epochlog.read_local(operator.store).commit == before


@pytest.mark.chain
def test_a_forged_evidence_entry_in_the_operator_log_fails(tmp_path: Path, chained: Brain) -> None:
    """What the chain cannot see (it checks only that the log grew): an operator appending evidence no snapshot
    records, or evidence bound to a head that is not the agent's last, fails ``chain.epochs``."""
    operator = chained
    a = member(tmp_path, operator, "a")
    record(a, 2)
    assert anchor(operator, a)[0] == 0
    agent = ChainConfig.of(a).agent_id
    assert agent is not None
    head = a.store.snapshot(a.store.head()).root
    anchor_raw(operator, [epochevidence.evidence_entry(agent, head, 7, b"\x77" * 32)], "ledger: a forged entry\n")
    code, chk = epochs_check(a)
    assert code == 1 and "records that log" in chk["summary"] and "7 evidence entries" in chk["summary"], chk


@pytest.mark.chain
def test_evidence_bound_to_another_head_is_a_forked_operator(tmp_path: Path, chained: Brain) -> None:
    operator = chained
    a = member(tmp_path, operator, "a")
    entries = record(a, 2)
    assert anchor(operator, a)[0] == 0
    agent = ChainConfig.of(a).agent_id
    assert agent is not None
    first = list(a.store.lineage())[-1].root  # seq 1's root: not the agent's last head entry
    anchor_raw(
        operator,
        [epochevidence.evidence_entry(agent, first, 3, EvidenceLog(entries).root)],
        "ledger: an unbound entry\n",
    )
    code, chk = epochs_check(a)
    assert code == 1 and "forked operator" in chk["summary"] and "bound to head" in chk["summary"], chk
    # and the writer's own API refuses both shapes before anything is sent
    from ledger.anchoring.epochs import anchor_epoch
    from ledger.chain.keys import DEV_KEY_NAME

    with pytest.raises(ChainError, match="not bound to its last head entry"):
        anchor_epoch(
            operator, [], key=DEV_KEY_NAME, extra=[epochevidence.evidence_entry(99, b"\x01" * 32, 1, b"\x02" * 32)]
        )


@pytest.mark.chain
def test_evidence_receipts_survive_a_clone_and_a_tampered_one_refuses_it(tmp_path: Path, chained: Brain) -> None:
    from ledger.remotes.sharing import clone

    operator = chained
    a = member(tmp_path, operator, "a")
    record(a, 2)
    assert anchor(operator, a)[0] == 0
    mine = evidence_receipts(a)
    assert len(mine) == 1
    remote = tmp_path / "r.git"
    pushed = run_ledger("--brain", str(a.root), "push", str(remote))
    assert pushed.returncode == 0, pushed.stderr
    cloned = run_ledger("clone", str(remote), str(tmp_path / "c"))
    assert cloned.returncode == 0, cloned.stderr
    with Brain.open(tmp_path / "c") as c:
        assert evidence_receipts(c) == mine
    cfg = ChainConfig.of(a)
    proc = run_ledger(
        "audit",
        str(tmp_path / "c"),
        "--rpc",
        cfg.rpc,
        "--registry",
        str(cfg.registry),
        "--agent",
        hex(cfg.agent_id or 0),
        "--json",
    )
    chk = json.loads(proc.stdout)["checks"]["chain.epochs"]
    assert proc.returncode == 0 and chk["ok"] and "1 evidence receipt(s)" in chk["summary"], chk
    # a receipt altered on the remote (another evidence size) holds up nowhere: the clone is refused whole
    from ledger.store import gitstore as gs

    ((commit, receipt),) = mine.items()
    write_receipts(gs.GitStore(remote), {commit: dict(receipt, size=receipt["size"] + 1)}, ref=EVIDENCE_NOTES_REF)
    with pytest.raises(StoreError, match="evidence receipt does not verify offline"):
        clone(str(remote), tmp_path / "d")
    assert not (tmp_path / "d").exists()


@pytest.mark.chain
def test_a_pull_takes_evidence_receipts(tmp_path: Path, chained: Brain) -> None:
    """A copy that has the outcome snapshot but not its receipts (cloned before the operator anchored) pulls them.

    The outcomes are recorded before the first push: pushing an outcome snapshot over an earlier push trips
    a KeyError in ledger/audit/evidencecheck.py's incremental audit today (reported, not ours to fix)."""
    operator = chained
    a = member(tmp_path, operator, "a")
    record(a, 2)
    remote = tmp_path / "r.git"
    assert run_ledger("--brain", str(a.root), "push", str(remote)).returncode == 0
    assert run_ledger("clone", str(remote), str(tmp_path / "b")).returncode == 0
    assert anchor(operator, a)[0] == 0
    pushed = run_ledger("--brain", str(a.root), "push", str(remote))
    assert pushed.returncode == 0, pushed.stderr
    pulled = run_ledger("--brain", str(tmp_path / "b"), "pull", str(remote), "--json")
    assert pulled.returncode == 0, pulled.stderr
    assert json.loads(pulled.stdout)["incoming_receipts"]["epochs"]["taken"] >= 2  # heads and the evidence
    with Brain.open(tmp_path / "b") as b:
        assert evidence_receipts(b) == evidence_receipts(a) and len(evidence_receipts(b)) == 1


@pytest.mark.chain
@pytest.mark.parametrize("point", ["epoch-before-send", "chain-after-send"])
def test_a_killed_anchor_gives_the_evidence_receipt_on_the_next_run(tmp_path: Path, chained: Brain, point: str) -> None:
    operator = chained
    a = member(tmp_path, operator, "a")
    record(a, 3)
    code, _, err = anchor(operator, a, crash=point)
    assert code == 86 and not evidence_receipts(a), err
    code, out, err = anchor(operator, a)
    assert code == 0 and out["epoch"] == 1, err
    assert out["evidence"] == (0 if point == "chain-after-send" else 1)
    (receipt,) = evidence_receipts(a).values()
    assert receipt["size"] == 3 and epochevidence.verify_offline(receipt)["evidence_size"] == 3
    log = epochlog.read_local(operator.store)
    assert sum(epochevidence.is_evidence(e) for e in log.entries) == 1  # anchored once, not twice
    assert epochs_check(a)[0] == 0


@pytest.mark.chain
def test_an_altered_or_misplaced_evidence_receipt_fails(tmp_path: Path, chained: Brain) -> None:
    """What no signature covers (tx, block) is the chain's to check; where a receipt sits is the clone's."""
    operator = chained
    a = member(tmp_path, operator, "a")
    record(a, 2)
    assert anchor(operator, a)[0] == 0
    ((commit, receipt),) = evidence_receipts(a).items()
    write_receipts(a.store, {commit: dict(receipt, tx="0x" + "ee" * 32)}, ref=EVIDENCE_NOTES_REF)
    code, chk = epochs_check(a)
    assert code == 1 and chk["snapshot"] == commit and "EpochAnchored event" in chk["summary"], chk
    assert anchor(operator, a)[0] == 0  # the operator's next run puts its own receipt back
    assert evidence_receipts(a)[commit] == receipt and epochs_check(a)[0] == 0
    # the same, valid receipt moved to the snapshot before (same root, no evidence): it does not sit there
    parent = a.store.snapshot(bytes.fromhex(commit)).parents[0]
    write_receipts(a.store, {parent: receipt}, ref=EVIDENCE_NOTES_REF)
    code, chk = epochs_check(a)
    assert code == 1 and chk["snapshot"] == parent and "that snapshot records 0" in chk["summary"], chk
