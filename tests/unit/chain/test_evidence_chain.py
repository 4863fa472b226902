"""The evidence log's root on chain (issue 38, item 2), on a real anvil: ``commitEvidence`` sent with
the last chunk of roots or alone, refused when the anchored log is not a prefix of the local one,
reported by ``ledger chain status``, and audited by ``chain.evidence``.

Honest outcomes are signed and appended by the public writer API (``brain.evidence``); a log the
writer would never make (trimmed, rewritten) by :func:`write_log`: a real git snapshot whose top
tree holds ``evidence/`` with exactly the given entries beside the head's bundle, operation
``outcome``, the head's root unchanged."""

from __future__ import annotations

import itertools
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from ledger.anchoring.commits import chain_status, commit_pending
from ledger.audit.lineage import audit_repo
from ledger.brain import Brain
from ledger.bundle.merkle import format_root
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME
from ledger.chain.receipts import read_receipts
from ledger.chain.registry import Registry
from ledger.errors import ChainError
from ledger.protocol import tlog
from ledger.protocol.evidencelog import EvidenceLog, prefix_problem
from ledger.store.evidence import read_entries
from ledger.store.objectdb import MODE_DIR, MODE_FILE
from tests.harness.cli import run_ledger

pytestmark = pytest.mark.chain


def write_log(brain: Brain, entries: list[bytes]) -> bytes:
    """A new head snapshot recording exactly ``entries`` as its evidence log (bundle unchanged)."""
    store = brain.store
    head = store.head()
    assert head is not None
    snap = store.snapshot(head)
    top = [e for e in store.read_tree(bytes.fromhex(snap.tree)) if e[2] != "evidence"]
    chunks = [entries[i : i + 256] for i in range(0, len(entries), 256)]
    blobs = [(store.write_blob(b"".join(e + b"\n" for e in c)), MODE_FILE, f"{k:08d}") for k, c in enumerate(chunks)]
    if blobs:
        top.append((store.write_tree(blobs), MODE_DIR, "evidence"))
    root = format_root(snap.root)
    message = (
        f"outcome: {len(entries)} evidence entries\n\nLedger-Root: {root}\nLedger-Parent-Root: {root}\n"
        f"Ledger-Operation: outcome\nLedger-Nonce: {secrets.token_hex(16)}\n"
    )
    commit = store.write_commit(store.write_tree(top), [head], message)
    store.move_head(commit, head)
    assert read_entries(store, store.commit_info(commit)[0]) == entries
    return commit


def outcomes(n: int, start: int = 0) -> list[bytes]:
    """Stand-in entries for logs the writer would never make (their layout is real, their content not)."""
    return [b'{"forged":%d}' % i for i in range(start, start + n)]


def record(brain: Brain, n: int, skill: str = "a") -> list[bytes]:
    """Append ``n`` signed outcomes of ``skill`` (one ``outcome`` snapshot) and return the whole log."""
    rows = [
        json.dumps({"skill": skill, "task": f"task {secrets.token_hex(4)}", "success": i % 3 != 0}).encode()
        for i in range(n)
    ]
    brain.evidence.import_lines(rows)
    assert brain.store.snapshot(brain.store.head()).operation == "outcome"
    return brain.evidence.entries()


def tree_root(entries: list[bytes]) -> bytes:
    return tlog.root_of([tlog.leaf_hash(e) for e in entries])


def registry(brain: Brain) -> tuple[Registry, int]:
    cfg = ChainConfig.of(brain)
    assert cfg.agent_id is not None
    return Registry(cfg.rpc, cfg.registry), cfg.agent_id


def audit(brain: Brain) -> Any:
    cfg = ChainConfig.of(brain)
    return audit_repo(
        brain.root, rpc=cfg.rpc, registry=cfg.registry, agent=cfg.agent_id, from_block=cfg.deploy_block or 0
    )


def test_worked_example_vector() -> None:
    """docs/lineage/evidence.md §7.4, byte for byte; refused shapes of the event too."""
    from ledger.chain import abi

    log = EvidenceLog([b"outcome %d" % i for i in range(5)])
    assert tlog.leaf_hash(b"outcome 0").hex() == "510c44e612c3cd31c06ad55f3e97c803dcf1b81bc79a5e7951fc8b886176e8bc"
    assert log.prefix_root(3).hex() == "bf03ec14fde275a37f45d340d8d1672953f3d1624fea042dfe623f1ad6df4787"
    assert log.root.hex() == "74e09f02e6ded28ea319a97f5e8087fb627fb07df33cf03019b2db327e814ef9"
    proof = [
        "2005797e227ec8d0e6d855051037d80fa4dd544e3807def6c5944d3799f4f524",
        "3897644bbacfae0a2641741fb6439769b766ceba5882bbbfa8c7892c1db6d065",
        "17df51f0f52d628eb30c44fc8e8baa15fab1a888a3d9487fbbbcd7988428dd98",
        "860a42254245db5071bd97b952d8491beff6375ddbf068479397e8f66716ff5a",
    ]
    assert [p.hex() for p in log.consistency(3)] == proof
    tlog.verify_consistency(3, 5, log.prefix_root(3), log.root, log.consistency(3))
    data = abi.call_data(
        "commitEvidence(uint256,bytes32,bytes32[],uint64,bytes32,bytes32[])",
        1,
        b"\x11" * 32,
        [],
        5,
        log.root,
        log.consistency(3),
    )
    words = [
        (1).to_bytes(32, "big"),
        b"\x11" * 32,
        (0xC0).to_bytes(32, "big"),
        (5).to_bytes(32, "big"),
        log.root,
        (0xE0).to_bytes(32, "big"),
        bytes(32),
        (4).to_bytes(32, "big"),
        *map(bytes.fromhex, proof),
    ]
    assert data == bytes.fromhex("ff9140b8") + b"".join(words)
    assert abi.selector("evidenceOf(uint256)").hex() == "e26fea1d"
    assert abi.EVIDENCE_COMMITTED.hex() == "cbee226895ad31a85a5e8a5a983f8877abfe061cf6f9daa7bcf1524c5dc9f0a7"
    assert abi.selector("InvalidEvidence(uint256,uint64,uint64,bytes32)").hex() == "c588ca9d"
    assert abi.selector("InconsistentEvidence(uint256,uint64)").hex() == "d8737c6e"
    assert log.prefix_root(5) == log.root and EvidenceLog().as_json() == {"size": 0, "root": None}
    with pytest.raises(ChainError, match="no prefix of 6"):
        log.prefix_root(6)
    assert prefix_problem(log, 0, bytes(32)) is None and prefix_problem(log, 3, log.prefix_root(3)) is None
    assert "has only 5: it was trimmed" in str(prefix_problem(log, 6, log.root))
    assert "was rewritten" in str(prefix_problem(log, 4, log.prefix_root(3)))


def test_evidence_goes_with_the_last_chunk_of_roots(chained: Brain) -> None:
    for i in range(4):
        chained.create(f"s{i}", "S", f"body {i}\n")
    entries = record(chained, 3, "s0")
    result = commit_pending(chained, key=DEV_KEY_NAME, batch=2)  # 5 roots: chunks of 2, 2, 1
    reg, agent = registry(chained)
    assert result.committed == 5 and len(result.transactions) == 3
    assert reg.evidence(agent) == (3, tree_root(entries))
    assert result.evidence is not None and result.evidence["tx"] == result.transactions[-1]
    (ev,) = reg.evidence_events(agent)
    assert (ev["head"], ev["size"], ev["root"]) == (chained.head().snap.root, 3, tree_root(entries))
    assert ev["head"] == reg.head(agent)
    # the last root's receipt and the evidence are one transaction; the earlier chunks are not
    receipts = read_receipts(chained.store)
    last = [s for s in chained.store.lineage()][1]  # the upsert before the outcome snapshot
    assert receipts[last.commit]["tx"] == ev["tx"]
    assert sorted({r["tx"] for r in receipts.values()}) == sorted(result.transactions)
    # idempotent: nothing new, nothing sent
    again = commit_pending(chained, key=DEV_KEY_NAME)
    assert (again.committed, again.transactions, again.evidence) == (0, [], None)
    report = audit(chained)
    chk = report.checks["chain.evidence"]
    assert chk.ok and not chk.skipped and chk.summary.startswith("1 evidence root(s)"), chk.summary
    assert [n for n, c in report.checks.items() if not c.ok] == []


def test_evidence_only_binds_the_chain_head_and_grows_by_proof(chained: Brain) -> None:
    chained.create("a", "A", "x\n")
    commit_pending(chained, key=DEV_KEY_NAME)
    reg, agent = registry(chained)
    seq, head = reg.sequence(agent), reg.head(agent)
    record(chained, 2)
    first = commit_pending(chained, key=DEV_KEY_NAME)
    entries = record(chained, 3)
    second = commit_pending(chained, key=DEV_KEY_NAME)
    assert (first.committed, second.committed) == (0, 0)
    assert first.evidence and second.evidence and first.evidence["tx"] != second.evidence["tx"]
    assert second.transactions == [second.evidence["tx"]]
    assert (reg.sequence(agent), reg.head(agent)) == (seq, head)
    assert reg.evidence(agent) == (5, tree_root(entries))
    events = reg.evidence_events(agent)
    assert [(e["head"], e["size"]) for e in events] == [(head, 2), (head, 5)]
    status = chain_status(chained)["evidence"]
    assert status == {
        "local": {"size": 5, "root": "0x" + tree_root(entries).hex()},
        "chain": {"size": 5, "root": "0x" + tree_root(entries).hex()},
        "pending": 0,
    }
    record(chained, 2)
    proc = run_ledger("chain", "status", "--json", env={"LEDGER_BRAIN": str(chained.root)}, check=True)
    assert json.loads(proc.stdout)["evidence"]["pending"] == 2
    report = audit(chained)
    assert report.checks["chain.evidence"].ok and report.checks["chain.evidence"].summary.startswith("2 evidence")
    assert [n for n, c in report.checks.items() if not c.ok] == []


def test_upto_anchors_that_snapshots_log_and_never_one_behind_the_chain(chained: Brain) -> None:
    """A fleet machine commits only what it published (``upto``): that snapshot's log goes with its
    root; a ``upto`` behind the chain's head or the chain's log sends no evidence and is no refusal."""
    chained.create("a", "A", "x\n")
    two = record(chained, 2)
    published = chained.store.head()
    assert published is not None
    chained.create("b", "B", "x\n")
    four = record(chained, 2)
    reg, agent = registry(chained)
    first = commit_pending(chained, key=DEV_KEY_NAME, upto=published)
    assert first.evidence is not None and first.evidence["size"] == 2 and first.committed == 2  # genesis, a
    (ev,) = reg.evidence_events(agent)
    assert (ev["head"], ev["size"], ev["root"]) == (chained.store.snapshot(published).root, 2, tree_root(two))
    rest = commit_pending(chained, key=DEV_KEY_NAME)
    assert rest.committed == 1 and rest.evidence is not None and rest.evidence["tx"] == rest.transactions[-1]
    assert reg.evidence(agent) == (4, tree_root(four))
    behind = commit_pending(chained, key=DEV_KEY_NAME, upto=published)
    assert (behind.committed, behind.transactions, behind.evidence) == (0, [], None)
    assert audit(chained).checks["chain.evidence"].summary.startswith("2 evidence root(s)")


def test_ledger_commit_sends_evidence_of_an_anchored_head(chained: Brain) -> None:
    """An outcome snapshot keeps its parent's root: ``ledger commit``'s "nothing to commit" shortcut
    (the chain's head is the local head) must not skip its evidence."""
    chained.create("a", "A", "x\n")
    commit_pending(chained, key=DEV_KEY_NAME)
    entries = record(chained, 2)
    env = {"LEDGER_BRAIN": str(chained.root)}
    text = run_ledger("chain", "status", env=env, check=True).stdout
    assert "evidence        2 local, 0 on chain, 2 to commit" in text
    doc = json.loads(run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, "--json", env=env, check=True).stdout)
    assert doc["committed"] == 0 and doc["evidence"]["size"] == 2 and doc["transactions"] == [doc["evidence"]["tx"]]
    reg, agent = registry(chained)
    assert reg.evidence(agent) == (2, tree_root(entries))
    again = run_ledger("chain", "anchor", "--key", DEV_KEY_NAME, "--json", env=env, check=True).stdout
    assert json.loads(again)["transactions"] == []


def test_a_trimmed_or_rewritten_log_is_refused_before_sending(chained: Brain) -> None:
    chained.create("a", "A", "x\n")
    entries = record(chained, 4)
    commit_pending(chained, key=DEV_KEY_NAME)
    reg, agent = registry(chained)
    nonce = reg.node.call("eth_getTransactionCount", reg.w3.eth.accounts[0], "latest")
    chained.create("b", "B", "y\n")  # a pending root too: nothing may go out
    assert chained.evidence.entries() == entries  # the writer keeps the log
    write_log(chained, entries[:3])  # the last anchored outcome dropped
    with pytest.raises(ChainError, match="has only 3: it was trimmed") as err:
        commit_pending(chained, key=DEV_KEY_NAME)
    assert err.value.hint and "cannot be removed or changed" in err.value.hint
    write_log(chained, [entries[0], b"forged", *entries[2:], *outcomes(2, 10)])
    with pytest.raises(ChainError, match="an anchored outcome was rewritten"):
        commit_pending(chained, key=DEV_KEY_NAME)
    assert reg.node.call("eth_getTransactionCount", reg.w3.eth.accounts[0], "latest") == nonce
    assert reg.evidence(agent) == (4, tree_root(entries))
    assert chain_status(chained)["evidence"]["pending"] is None
    chk = audit(chained).checks["chain.evidence"]
    assert not chk.ok and "an anchored outcome was rewritten" in chk.summary, chk.summary


def test_the_audit_fails_a_head_log_trimmed_after_anchoring(chained: Brain) -> None:
    chained.create("a", "A", "x\n")
    entries = record(chained, 6)
    commit_pending(chained, key=DEV_KEY_NAME)
    assert audit(chained).checks["chain.evidence"].ok
    write_log(chained, entries[:5])  # a new snapshot with a shorter log
    chk = audit(chained).checks["chain.evidence"]
    assert not chk.ok
    assert "(on chain 6, in this clone 5)" in chk.summary and "trimmed" in chk.summary, chk.summary
    assert chk.snapshot == chained.store.head().hex()


def test_the_audit_fails_an_event_whose_head_is_no_snapshot(chained: Brain, tmp_path: Path) -> None:
    """The registry's owner commits a root that no snapshot has, with evidence bound to it: the lineage
    checks fail on the root, and ``chain.evidence`` on the binding, naming the event."""
    chained.create("a", "A", "x\n")
    entries = [*record(chained, 2), *outcomes(1)]
    commit_pending(chained, key=DEV_KEY_NAME)
    reg, agent = registry(chained)
    from ledger.chain.abi import call_data
    from ledger.chain.keys import dev_account

    stray = b"\x5a" * 32
    tree = EvidenceLog(entries)
    data = call_data(
        "commitEvidence(uint256,bytes32,bytes32[],uint64,bytes32,bytes32[])",
        agent,
        reg.head(agent),
        [stray],
        3,
        tree.root,
        tree.consistency(2),
    )
    reg.transact(dev_account(0), data, what="a stray root with evidence")
    report = audit(chained)
    chk = report.checks["chain.evidence"]
    assert not chk.ok and "EvidenceCommitted #2" in chk.summary, chk.summary
    assert "is not a root of the anchored mainline" in chk.summary
    assert not report.checks["chain.roots"].ok


def test_the_audit_fails_evidence_no_snapshot_of_its_head_records(chained: Brain) -> None:
    """A committer anchors a log the brain never held, bound to a real head: the chain accepts it (it
    extends the anchored prefix), the audit does not."""
    chained.create("a", "A", "x\n")
    honest = record(chained, 2)
    commit_pending(chained, key=DEV_KEY_NAME)
    reg, agent = registry(chained)
    from ledger.chain.abi import call_data
    from ledger.chain.keys import dev_account

    tree = EvidenceLog([*honest, *outcomes(1)])
    data = call_data(
        "commitEvidence(uint256,bytes32,bytes32[],uint64,bytes32,bytes32[])",
        agent,
        reg.head(agent),
        [],
        3,
        tree.root,
        tree.consistency(2),
    )
    reg.transact(dev_account(0), data, what="evidence no snapshot records")
    report = audit(chained)
    chk = report.checks["chain.evidence"]
    assert not chk.ok and chk.summary.startswith("EvidenceCommitted #2"), chk.summary
    assert "records 3 evidence entries" in chk.summary and "their logs have [0, 2] entries" in chk.summary
    assert chk.failures == 2  # and the head's log (2) does not extend the anchored one (3)
    assert report.checks["chain.roots"].ok and report.checks["chain.head"].ok


def test_a_second_brain_is_unaffected(chained: Brain, tmp_path: Path) -> None:
    from ledger.anchoring.commits import register

    other = Brain.init(tmp_path / "other")
    try:
        cfg = ChainConfig.of(chained)
        other.update_config(
            chain={"rpc": cfg.rpc, "chain_id": cfg.chain_id, "registry": cfg.registry, "deploy_block": cfg.deploy_block}
        )
        register(other, shares=1, key=DEV_KEY_NAME)
        other.create("o", "O", "other\n")
        commit_pending(other, key=DEV_KEY_NAME)
        before = read_receipts(other.store)
        chained.create("a", "A", "x\n")
        record(chained, 3)
        result = commit_pending(chained, key=DEV_KEY_NAME)
        assert result.evidence is not None
        reg, agent = registry(other)
        assert reg.evidence(agent) == (0, b"\x00" * 32) and reg.evidence_events(agent) == []
        assert read_receipts(other.store) == before
        again = commit_pending(other, key=DEV_KEY_NAME)
        assert (again.committed, again.evidence) == (0, None)
        assert chain_status(other)["evidence"] == {
            "local": {"size": 0, "root": None},
            "chain": {"size": 0, "root": None},
            "pending": 0,
        }
        assert audit(other).checks["chain.evidence"].summary == "no evidence anchored"
    finally:
        other.close()


def test_chain_evidence_is_a_skip_without_rpc(brain: Brain) -> None:
    brain.create("a", "A", "x\n")
    record(brain, 1)
    chk = audit_repo(brain.root).checks["chain.evidence"]
    assert chk.ok and chk.skipped and "anchored evidence logs vs the snapshots'" in chk.summary


def test_gas_of_commit_evidence(chained: Brain) -> None:
    """Receipts on anvil (intrinsic 21,000 and calldata included), a 100-entry log growing by one."""
    chained.create("a", "A", "x\n")
    record(chained, 100)
    commit_pending(chained, key=DEV_KEY_NAME)
    chained.create("b", "B", "x\n")  # the writer carries the log: nothing new in it
    single = commit_pending(chained, key=DEV_KEY_NAME)
    assert single.committed == 1 and single.evidence is None
    commit_gas = read_receipts(chained.store)[single_commit(chained)]["gas_used"]
    record(chained, 1)
    only = commit_pending(chained, key=DEV_KEY_NAME)
    chained.create("c", "C", "x\n")
    record(chained, 1)
    both = commit_pending(chained, key=DEV_KEY_NAME)
    assert only.evidence and both.evidence and both.committed == 1
    assert (only.evidence["size"], both.evidence["size"]) == (101, 102)
    print(
        f"\nGAS commit={commit_gas} commitEvidence-only={only.evidence['gas_used']} "
        f"commitEvidence-1-root={both.evidence['gas_used']}"
    )
    assert only.evidence["gas_used"] < 60_000 and both.evidence["gas_used"] - only.evidence["gas_used"] < 12_000


def single_commit(brain: Brain) -> str:
    """The newest snapshot that changed the bundle (the one a root receipt sits on)."""
    lineage = list(brain.store.lineage())
    return next(s.commit for s, before in itertools.pairwise(lineage) if s.root != before.root)
