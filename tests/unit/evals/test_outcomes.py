"""Outcome evidence (issue 38): recorded by CLI, bulk import and MCP; tiers apart; regressions; fleets; races."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.brain import Brain
from ledger.errors import LedgerError
from ledger.remotes import sharing
from ledger.signatures.identity import KeyDir
from ledger.store import outcomes as oc
from tests.harness.brains import make_brain
from tests.harness.cli import LEDGER, run_ledger

SKILL = "---\nname: {n}\ndescription: The {n} skill\n---\n{body}\n"


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own key directory, with a verifier key beside the user's and agent's."""
    home = tmp_path / "keys"
    monkeypatch.setenv("LEDGER_KEYS", str(home))
    return home


def _brain(tmp_path: Path, keys: Path, *, verifier: bool = True) -> Path:
    path = make_brain(tmp_path / "brain", {"s": "The s skill"}, via="cli")
    if verifier:
        address = json.loads(
            run_ledger("--brain", str(path), "keys", "generate", "verifier", "--json", check=True).stdout
        )["address"]
        run_ledger("--brain", str(path), "keys", "trust", "verifier", address, check=True)
    return path


def _import(path: Path, rows: list[dict], actor: str = "verifier") -> subprocess.CompletedProcess[str]:
    data = "".join(json.dumps(r) + "\n" for r in rows)
    return run_ledger("--brain", str(path), "outcome", "import", "-", "--actor", actor, "--json", input=data)


def _rows(prefix: str, passed: int, failed: int, **extra: object) -> list[dict]:
    return [{"skill": "s", "task": f"{prefix}{i}", "success": i < passed, **extra} for i in range(passed + failed)]


def test_tiers_stay_apart_and_a_verified_regression_names_its_revert(tmp_path: Path, keys: Path) -> None:
    b = _brain(tmp_path, keys)
    B = ("--brain", str(b))
    assert json.loads(_import(b, _rows("a", 18, 2)).stdout)["added"] == 20
    (tmp_path / "v2.md").write_text(SKILL.format(n="s", body="a worse body"))
    run_ledger(*B, "skill", "edit", "s", "--file", str(tmp_path / "v2.md"), check=True)
    _import(b, _rows("b", 3, 17))
    _import(b, _rows("c", 20, 0), actor="agent")  # the agent thinks v2 is perfect: self-reported, never summed
    shown = json.loads(run_ledger(*B, "skill", "show", "s", "--stats", "--json", check=True).stdout)
    v1, v2 = shown["versions"]
    assert (v1["version"], v1["verified"]["successes"], v1["verified"]["failures"]) == (1, 18, 2)
    assert (v2["verified"]["successes"], v2["verified"]["failures"]) == (3, 17)
    assert (v2["self"]["successes"], v2["self"]["failures"], v2["self"]["rate"]) == (20, 0, 1.0)
    lo, hi = v2["verified"]["interval"]
    assert 0 < lo < v2["verified"]["rate"] == 0.15 < hi < 1
    assert set(v1) >= {"version", "verified", "self"} and set(v1["verified"]) >= {
        "successes",
        "failures",
        "rate",
        "interval",
    }
    status = json.loads(run_ledger(*B, "status", "--json", check=True).stdout)
    assert [(r["skill"], r["version"], r["from"], r["revert"]) for r in status["regressions"]] == [
        ("s", 2, 1, "ledger revert s --to 1")
    ]
    text = run_ledger(*B, "status", check=True).stdout
    assert "regressed s v2" in text and "ledger revert s --to 1" in text
    logged = json.loads(run_ledger(*B, "log", "--stats", "--json", check=True).stdout)
    assert logged[0]["regression"]["revert"] == "ledger revert s --to 1"
    run_ledger(*B, "skill", "revert", "s", "--to", "1", check=True)  # v3: v1's content, no verified outcome yet
    assert json.loads(run_ledger(*B, "status", "--json", check=True).stdout)["regressions"] == []
    audit = json.loads(run_ledger(*B, "verify", "--json").stdout)
    assert audit["ok"] and "20 verified" not in audit["checks"]["evidence"]["summary"]
    assert "40 verified, 20 self-reported" in audit["checks"]["evidence"]["summary"]


def test_no_regression_without_significance(tmp_path: Path, keys: Path) -> None:
    b = _brain(tmp_path, keys)
    _import(b, _rows("a", 3, 1))
    (tmp_path / "v2.md").write_text(SKILL.format(n="s", body="v2"))
    run_ledger("--brain", str(b), "skill", "edit", "s", "--file", str(tmp_path / "v2.md"), check=True)
    _import(b, _rows("b", 1, 2))  # worse, but on so few tasks that the intervals overlap
    assert json.loads(run_ledger("--brain", str(b), "status", "--json", check=True).stdout)["regressions"] == []


def test_bulk_import_takes_rows_and_entries_signed_elsewhere_and_refuses_a_bad_file_whole(
    tmp_path: Path, keys: Path
) -> None:
    b = _brain(tmp_path, keys, verifier=False)
    # An independent verifier on another machine: its key never touches this brain's key directory.
    elsewhere = KeyDir(tmp_path / "verifier-machine").generate("verifier")
    run_ledger("--brain", str(b), "keys", "trust", "verifier", elsewhere.address, check=True)
    brain = Brain.open(b)
    try:
        served = brain.evidence.served("s")
        record = oc.make_record(
            brain=brain.evidence.genesis,
            agent=None,
            skill="s",
            version=served.version,
            digest=served.digest,
            receipt={"commit": served.commit, "root": served.root},
            task_id="swe-1",
            task_digest=None,
            result="score",
            score=0.8,
            scale=(0, 1),
            threshold=0.5,
            evidence_uri="https://ci.example/run/1",
            evidence_digest="sha256:" + "ab" * 32,
            verifier="held-out-suite",
            signer=elsewhere.address,
        )
        signed = oc.sign_batch([record], elsewhere.secret, prev=None)[0].data  # a batch of one, signed elsewhere
        head = brain.head().commit
    finally:
        brain.close()
    # SkillEvolBench-style verifier feedback: a task, pass/fail or a reward, the verifier and its log.
    rows = [
        {
            "skill": "s",
            "task": "swe-2",
            "success": False,
            "verifier": "held-out-suite",
            "evidence": "https://ci.example/run/2",
        },
        {
            "skill": "s",
            "version": 1,
            "task": {"id": "swe-3", "digest": "sha256:" + "cd" * 32},
            "score": 7,
            "scale": [0, 10],
            "threshold": 5,
        },
    ]
    bad = signed.decode() + "\n" + "".join(json.dumps(r) + "\n" for r in rows) + '{"skill": "s", "task": "x"}\n'
    proc = run_ledger("--brain", str(b), "outcome", "import", "-", "--actor", "agent", input=bad)
    assert proc.returncode == 1 and "line 4" in proc.stderr and "exactly one of 'success'" in proc.stderr
    brain = Brain.open(b)
    assert brain.head().commit == head and brain.evidence.size() == 0  # nothing written
    brain.close()
    good = bad.rsplit('{"skill": "s", "task": "x"}', 1)[0]
    done = run_ledger("--brain", str(b), "outcome", "import", "-", "--actor", "agent", "--json", input=good)
    assert done.returncode == 0 and json.loads(done.stdout)["added"] == 3, done.stderr
    again = run_ledger("--brain", str(b), "outcome", "import", "-", "--actor", "agent", input=signed.decode())
    assert again.returncode == 1 and "already in the log" in again.stderr
    listed = json.loads(run_ledger("--brain", str(b), "outcome", "list", "--json", check=True).stdout)
    assert [o["tier"] for o in listed] == ["verified", "self", "self"]
    assert listed[0]["record"]["outcome"] == {"result": "score", "score": 0.8, "scale": [0, 1], "threshold": 0.5}
    assert run_ledger("--brain", str(b), "verify").returncode == 0


def test_an_untrusted_or_foreign_signer_is_refused_at_the_door(tmp_path: Path, keys: Path) -> None:
    b = _brain(tmp_path, keys, verifier=False)
    stranger = KeyDir(tmp_path / "stranger").generate("verifier")
    brain = Brain.open(b)
    try:
        served = brain.evidence.served("s")
        record = oc.make_record(
            brain=brain.evidence.genesis,
            agent=None,
            skill="s",
            version=1,
            digest=served.digest,
            receipt={"commit": served.commit, "root": served.root},
            task_id="t",
            task_digest=None,
            result="success",
            signer=stranger.address,
        )
        with pytest.raises(LedgerError, match="does not trust"):
            brain.evidence.append([oc.sign_batch([record], stranger.secret, prev=None)[0].data], "x")
        forged = json.loads(oc.sign_batch([record], stranger.secret, prev=None)[0].data)
        forged["record"]["outcome"]["result"] = "failure"
        with pytest.raises(LedgerError, match="altered or forged"):
            brain.evidence.append([oc.canonical(forged)], "x")
        assert brain.evidence.size() == 0
    finally:
        brain.close()


def test_skill_outcome_over_mcp_with_the_official_client(tmp_path: Path, keys: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    b = _brain(tmp_path, keys, verifier=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    params = StdioServerParameters(command=LEDGER, args=["--brain", str(b), "mcp"], env=env)
    seen: dict[str, object] = {}

    async def session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert "skill_outcome" in tools and tools["skill_outcome"].annotations.read_only_hint is False
            view = json.loads((await s.call_tool("skill_view", {"name": "s"})).content[0].text)
            receipt = view["receipt"]
            done = await s.call_tool(
                "skill_outcome",
                {
                    "name": "s",
                    "receipt": receipt,
                    "task": "ticket-42",
                    "outcome": "success",
                    "evidence": "file:///run/42.log",
                },
            )
            assert not done.is_error, done.content[0].text
            seen["done"] = json.loads(done.content[0].text)
            scored = await s.call_tool(
                "skill_outcome",
                {"name": "s", "receipt": receipt, "task": "ticket-43", "outcome": "score", "score": 0.25},
            )
            assert not scored.is_error, scored.content[0].text
            wrong = await s.call_tool(
                "skill_outcome",
                {"name": "s", "receipt": {**receipt, "commit": "0" * 40}, "task": "t", "outcome": "success"},
            )
            assert wrong.is_error and "not a snapshot of this brain" in wrong.content[0].text
            older = await s.call_tool(
                "skill_outcome", {"name": "s", "receipt": {**receipt, "version": 7}, "task": "t", "outcome": "failure"}
            )
            assert older.is_error and "not v7" in older.content[0].text
            seen["receipt"] = receipt

    asyncio.run(asyncio.wait_for(session(), 120))
    done, receipt = seen["done"], seen["receipt"]
    assert done["tier"] == "self" and done["version"] == 1 and done["log_size"] == 1
    listed = json.loads(run_ledger("--brain", str(b), "outcome", "list", "--json", check=True).stdout)
    assert [o["record"]["receipt"]["commit"] for o in listed] == [receipt["commit"]] * 2
    assert listed[0]["record"]["task"]["id"] == "ticket-42" and listed[0]["tier"] == "self"
    log = json.loads(run_ledger("--brain", str(b), "log", "-n", "1", "--json", check=True).stdout)[0]
    assert log["operation"] == "outcome" and log["attribution"]["actor"] == "agent" and log["changes"] == []
    assert run_ledger("--brain", str(b), "verify").returncode == 0


@contextlib.contextmanager
def copies_with_outcomes(tmp_path: Path) -> Iterator[tuple[Brain, Brain, Path]]:
    """Two copies of one brain through a bare remote: ``a`` records three successes and publishes them,
    ``b`` records two failures and pulls (its merge: a's log first, the remote's, then b's two)."""
    a = make_brain(tmp_path / "a", {"s": ("S", "one\n")})
    remote = tmp_path / "remote.git"
    sharing.push(a, str(remote))
    b = sharing.clone(str(remote), tmp_path / "b")
    try:
        with a.acting("agent"):
            for i in range(3):
                a.evidence.record("s", result="success", task=f"a{i}")
        with b.acting("agent"):
            for i in range(2):
                b.evidence.record("s", result="failure", task=f"b{i}")
        sharing.push(a, str(remote))
        sharing.pull(b, str(remote))
        yield a, b, remote
    finally:
        a.close()
        b.close()


def test_two_fleet_copies_merge_their_logs_without_conflict(tmp_path: Path) -> None:
    with copies_with_outcomes(tmp_path) as (a, b, remote):
        sharing.push(b, str(remote))
        sharing.pull(a, str(remote))
        logs = [[json.loads(e)["record"]["task"]["id"] for e in x.evidence.entries()] for x in (a, b)]
        assert logs[0] == logs[1] == ["a0", "a1", "a2", "b0", "b1"]
        for x in (a, b):
            assert run_ledger("--brain", str(x.root), "verify").returncode == 0


def test_copies_appending_one_verifiers_outcomes_merge_whole_and_audit_ok(tmp_path: Path, keys: Path) -> None:
    """Lineage v1.7 (lineage/evidence.md §9) in a fleet: two copies record outcomes with one shared verifier key at once
    (each
    batch follows the newest one its copy holds: the chains fork), and an independent verifier's two batches
    reach the two copies one each.  Merged either way, every batch is whole, the audit passes, and
    `outcome batches` names each chain's newest batch."""
    a = tmp_path / "a"
    run_ledger("init", str(a), check=True)
    run_ledger("--brain", str(a), "skill", "create", "s", "--description", "The s skill", check=True)
    shared = json.loads(run_ledger("--brain", str(a), "keys", "generate", "verifier", "--json", check=True).stdout)[
        "address"
    ]
    elsewhere = KeyDir(tmp_path / "verifier-machine").generate("verifier")
    for address in (shared, elsewhere.address):
        run_ledger("--brain", str(a), "keys", "trust", "verifier", address, check=True)
    with contextlib.closing(Brain.open(a)) as brain:
        served = brain.evidence.served("s")
        rows = [
            oc.make_record(
                brain=brain.evidence.genesis,
                agent=None,
                skill="s",
                version=1,
                digest=served.digest,
                receipt={"commit": served.commit, "root": served.root},
                task_id=f"held-out-{i}",
                task_digest=None,
                result="failure" if i % 2 else "success",
                signer=elsewhere.address,
            )
            for i in range(4)
        ]
    remote = str(tmp_path / "remote.git")
    run_ledger("--brain", str(a), "push", remote, check=True)
    b = tmp_path / "b"
    run_ledger("clone", remote, str(b), check=True)
    for copy in (a, b):  # the same verifier key on both machines, each after the other's last pull
        for i, result in enumerate(("--success", "--failure")):
            run_ledger(
                "--brain",
                str(copy),
                "outcome",
                "record",
                "s",
                "--task",
                f"{copy.name}{i}",
                result,
                "--actor",
                "verifier",
                check=True,
            )
    first = oc.sign_batch(rows[:3], elsewhere.secret, prev=None)
    second = oc.sign_batch(rows[3:], elsewhere.secret, prev=first[0].batch["id"])

    def lines(entries: list[oc.Entry]) -> str:
        return "".join(e.data.decode() + "\n" for e in entries)

    run_ledger("--brain", str(a), "outcome", "import", "-", input=lines(first), check=True)
    early = run_ledger("--brain", str(b), "outcome", "import", "-", input=lines(second))  # b lacks the first batch
    assert early.returncode == 1 and "which is not in the log before it" in early.stderr, early.stderr
    part = run_ledger("--brain", str(b), "outcome", "import", "-", input=lines(first[:2]))  # the failure left out
    assert part.returncode == 1 and "holds 2 of its 3 outcomes (index 2 missing)" in part.stderr, part.stderr
    run_ledger("--brain", str(a), "push", remote, check=True)
    run_ledger("--brain", str(b), "pull", remote, check=True)
    run_ledger("--brain", str(b), "outcome", "import", "-", input=lines(second), check=True)
    run_ledger("--brain", str(b), "push", remote, check=True)
    run_ledger("--brain", str(a), "pull", remote, check=True)
    logs = [
        [
            o["record"]["task"]["id"]
            for o in json.loads(run_ledger("--brain", str(c), "outcome", "list", "--json", check=True).stdout)
        ]
        for c in (a, b)
    ]
    assert logs[0] == logs[1] and sorted(logs[0]) == sorted(
        ["a0", "a1", "b0", "b1", *(f"held-out-{i}" for i in range(4))]
    )
    for copy in (a, b):
        assert run_ledger("--brain", str(copy), "verify").returncode == 0
    found = {
        s["signer"]: s
        for s in json.loads(run_ledger("--brain", str(a), "outcome", "batches", "--json", check=True).stdout)
    }
    forked = found[shared]["batches"]  # a0, a1 chained on a; b0, b1 chained on b after b0's prev (none): two chains
    assert len(forked) == 4 and sum(x["head"] for x in forked) == 2, forked
    outside = found[elsewhere.address]["batches"]
    assert [(x["count"], x["head"]) for x in outside] == [(3, False), (1, True)], outside


_WRITER = """
import sys
from pathlib import Path
from ledger.brain import Brain
b = Brain.open(Path(sys.argv[1]))
with b.acting("agent"):
    for i in range(int(sys.argv[3])):
        b.evidence.record("s", result="success", task=f"{sys.argv[2]}-{i}")
b.close()
"""


def test_concurrent_writers_lose_no_outcome(tmp_path: Path, keys: Path) -> None:
    b = _brain(tmp_path, keys, verifier=False)
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(b), f"w{w}", "6"], stderr=subprocess.PIPE)
        for w in range(4)
    ]
    (tmp_path / "v2.md").write_text(SKILL.format(n="s", body="edited beside them"))
    run_ledger("--brain", str(b), "skill", "edit", "s", "--file", str(tmp_path / "v2.md"), check=True)
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    brain = Brain.open(b)
    try:
        tasks = sorted(json.loads(e)["record"]["task"]["id"] for e in brain.evidence.entries())
    finally:
        brain.close()
    assert tasks == sorted(f"w{w}-{i}" for w in range(4) for i in range(6))
    assert run_ledger("--brain", str(b), "verify").returncode == 0


def test_the_committed_record_vector_signs_and_reads_back_byte_for_byte() -> None:
    """docs/lineage/evidence.md §1, pinned: a second implementation must produce these exact bytes."""
    import hashlib

    vec = json.loads((Path(__file__).parents[2] / "vectors" / "outcomes" / "record.json").read_text())
    secret = bytes.fromhex(vec["secret"][2:])
    record = vec["record"]
    assert oc.canonical(record).decode() == vec["record_jcs"]
    assert hashlib.sha256(vec["record_jcs"].encode()).hexdigest() == vec["id"]
    assert oc.signed_text(bytes.fromhex(vec["id"])) == vec["signed_text"]
    entry = oc.sign_entry(record, secret)  # RFC 6979: deterministic
    assert entry.decode() == vec["entry"] and hashlib.sha256(b"\0" + entry).hexdigest() == vec["leaf_hash"]
    parsed = oc.parse_entry(vec["entry"].encode())
    assert parsed.signer == vec["signer"] and parsed.id.hex() == vec["id"] and parsed.success is True
    assert oc.outcome_id_of(entry) == parsed.id
    # What a reader MUST refuse: other bytes for the same object, an extra member, a high-s twin, a key named twice.
    doc = json.loads(vec["entry"])
    spaced = json.dumps(doc).encode()
    extra = oc.canonical({**doc, "record": {**record, "note": "x"}})
    r, s, v = int(doc["signature"][2:66], 16), int(doc["signature"][66:130], 16), int(doc["signature"][130:], 16)
    n = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
    twin = oc.canonical({**doc, "signature": f"0x{r:064x}{n - s:064x}{55 - v:02x}"})
    twice = vec["entry"].encode().replace(b'{"record":', b'{"signature":"0x00","record":', 1)
    for bad, why in ((spaced, "canonical"), (extra, "exactly"), (twin, "lower half"), (twice, "twice")):
        with pytest.raises(LedgerError, match=why):
            oc.parse_entry(bad)


def test_the_committed_batch_vector_signs_and_its_logs_are_judged_as_the_spec_says() -> None:
    """docs/lineage/evidence.md §9, pinned: two batches of v2 records, every byte reproduced from the key and the
    records, and the logs a verifier MUST accept and MUST refuse (a failure dropped, a batch dropped whole
    while the batch after it is kept, a batch before the one it follows)."""
    import hashlib

    from ledger.audit.evidencecheck import batch_problem

    vec = json.loads((Path(__file__).parents[2] / "vectors" / "outcomes" / "batch.json").read_text())
    secret = bytes.fromhex(vec["secret"][2:])
    ids = vec["batches"]
    rows = [e["record"] for e in vec["entries"]]
    signed = [
        *oc.sign_batch(rows[:3], secret, prev=None, bid=ids["A"]),
        *oc.sign_batch(rows[3:], secret, prev=ids["A"], bid=ids["B"]),
    ]
    for entry, want in zip(signed, vec["entries"], strict=True):
        assert entry.record == want["record"] and oc.canonical(entry.record).decode() == want["record_jcs"]
        assert entry.record["format"] == "brain-ledger/outcome/v2" and entry.signer == vec["signer"]
        assert hashlib.sha256(want["record_jcs"].encode()).hexdigest() == want["id"] == entry.id.hex()
        assert (
            entry.data.decode() == want["entry"] and hashlib.sha256(b"\0" + entry.data).hexdigest() == want["leaf_hash"]
        )
        assert oc.parse_entry(want["entry"].encode()) == entry
    assert [e.record["batch"] for e in signed] == [
        {"count": 3, "id": ids["A"], "index": 0, "prev": None},
        {"count": 3, "id": ids["A"], "index": 1, "prev": None},
        {"count": 3, "id": ids["A"], "index": 2, "prev": None},
        {"count": 1, "id": ids["B"], "index": 0, "prev": ids["A"]},
    ]

    def judge(log: list[int]) -> str | None:
        return batch_problem([(n, signed[k]) for n, k in enumerate(log)], v2_before=False, known=lambda s, b: False)

    for log in vec["accepted"]:
        assert judge(log) is None, log
    reasons = {2: "holds 2 of its 3 outcomes (index 1 missing)", 3: "which is not in the log before it"}
    for case in vec["refused"]:
        assert reasons[case["rule"]] in (judge(case["log"]) or ""), case
    # A batch member's fields are signed: its count lowered to hide the failure no longer recovers the signer.
    lowered = vec["entries"][0]["entry"].replace('"count":3', '"count":1')
    with pytest.raises(LedgerError, match="altered or forged"):
        oc.parse_entry(lowered.encode())
    # v1 after v2 (rule 1), and what a v2 record MUST hold.
    v1 = json.loads((Path(__file__).parents[2] / "vectors" / "outcomes" / "record.json").read_text())["entry"]
    assert "v1 record" in (
        batch_problem([(4, oc.parse_entry(v1.encode()))], v2_before=True, known=lambda s, b: False) or ""
    )
    for bad, why in (
        ({"count": 0}, "batch.count"),
        ({"index": 3}, "batch.index"),
        ({"id": "AB" * 32}, "batch.id"),
        ({"prev": ids["A"]}, "batch.prev"),
    ):
        with pytest.raises(LedgerError, match=why):
            oc.check_record({**rows[0], "batch": {**rows[0]["batch"], **bad}})
    with pytest.raises(LedgerError, match="exactly"):
        oc.check_record({k: v for k, v in rows[0].items() if k != "batch"})


def test_the_fast_canonical_form_is_the_rfc8785_librarys_on_random_records() -> None:
    """ledger.store.outcomes.canonical writes a record with json.dumps where that is RFC 8785: the
    reference library must agree byte for byte on every record, hostile strings and odd floats included."""
    import random

    import rfc8785

    rng = random.Random(38)
    alphabet = ["a", "é", "\u2028", "\x00", "\x1f", "\x7f", '"', "\\", "/", "\t", "\n", "😀", "\ufeff", "z"]
    floats = [0.5, 0.1, 1 / 3, 2.5e-4, 123456.789, 9.999999999999999e15, 1e-4, 0.30000000000000004]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        number = rng.choice(
            [
                rng.choice(floats),
                rng.uniform(1e-4, 1e6),
                rng.randint(-(2**53), 2**53),
                rng.random() * 10 ** rng.randint(-3, 15),
            ]
        )
        doc = {"t": text, "n": number, "l": [number, text, None, True], "o": {"b": -number, "a": [text]}}
        assert oc.canonical(doc) == rfc8785.dumps(doc), doc
    for odd in (1.0, 0.0, -0.0, 1e21, 1e-7, 5e-324, 2.0**60, 1e16):  # left to the library: json.dumps differs
        assert oc.canonical({"x": odd}) == rfc8785.dumps({"x": odd}), odd


def test_a_target_linked_best_verified_shows_the_version_the_evidence_backs(tmp_path: Path, keys: Path) -> None:
    """The optional pin-by-evidence policy: a runtime's folder holds each skill's best verified version, the
    head's when none is verified, and follows the evidence as it changes."""
    b = _brain(tmp_path, keys)
    B = ("--brain", str(b))
    run_ledger(*B, "skill", "create", "other", "--description", "No outcomes at all", check=True)
    target = tmp_path / "runtime"
    run_ledger(*B, "target", "add", str(target), "--best-verified", "--name", "prod", check=True)
    run_ledger(*B, "target", "add", str(tmp_path / "canary"), "--name", "canary", check=True)  # follows the head
    _import(b, _rows("a", 18, 2))
    (tmp_path / "v2.md").write_text(SKILL.format(n="s", body="v2: a worse body"))
    run_ledger(*B, "skill", "edit", "s", "--file", str(tmp_path / "v2.md"), check=True)
    _import(b, _rows("b", 4, 16))
    run_ledger(*B, "sync", check=True)
    assert "v2: a worse body" not in (target / "s" / "SKILL.md").read_text()  # v1: its evidence is better
    assert "v2: a worse body" in (tmp_path / "canary" / "s" / "SKILL.md").read_text()
    assert (target / "other" / "SKILL.md").exists()  # no verified outcome: the head's
    (tmp_path / "v3.md").write_text(SKILL.format(n="s", body="v3: the fix"))
    run_ledger(*B, "skill", "edit", "s", "--file", str(tmp_path / "v3.md"), check=True)
    run_ledger(*B, "sync", check=True)
    assert "v3: the fix" not in (target / "s" / "SKILL.md").read_text()  # unverified yet: v1 stays
    _import(b, _rows("c", 40, 0))
    run_ledger(*B, "sync", check=True)
    assert "v3: the fix" in (target / "s" / "SKILL.md").read_text()  # better evidence now: v3
    both = run_ledger(*B, "target", "add", str(tmp_path / "x"), "--best-verified", "--anchored")
    assert both.returncode == 2 and "choose one" in both.stderr
    assert run_ledger(*B, "verify").returncode == 0


def test_the_committed_eval_vector_signs_and_reads_back_byte_for_byte() -> None:
    """docs/lineage/evaluations.md, pinned: a plan, the two v3 records of its one pair (one batch) and an approval,
    every byte reproduced from the key and the members; the plan's grid judged whole, and half of it refused;
    and the entries a reader MUST refuse."""
    import hashlib

    from ledger.audit.evidencecheck import Plans, batch_problem

    vec = json.loads((Path(__file__).parents[2] / "vectors" / "outcomes" / "eval.json").read_text())
    secret = bytes.fromhex(vec["secret"][2:])

    def same(entry: oc.Entry, want: dict, kind: str) -> None:
        assert entry.kind == kind and entry.body == want[kind]
        assert oc.canonical(entry.body).decode() == want[f"{kind}_jcs"]
        assert hashlib.sha256(want[f"{kind}_jcs"].encode()).hexdigest() == want["id"] == entry.id.hex()
        assert oc.signed_text(entry.id, kind) == want["signed_text"]
        assert (
            entry.data.decode() == want["entry"] and hashlib.sha256(b"\0" + entry.data).hexdigest() == want["leaf_hash"]
        )
        assert oc.parse_entry(want["entry"].encode()) == entry and oc.outcome_id_of(entry.data) == entry.id

    p = vec["plan"]["plan"]
    plan = oc.sign_body(
        "plan",
        oc.make_plan(
            brain=p["brain"],
            skill=p["skill"],
            set=p["set"],
            cases=p["cases"],
            baseline=p["baseline"],
            runs=p["runs"],
            runner=p["runner"],
            grader=p["grader"],
            min_lift=p["rule"]["min_lift"],
            signer=p["signer"],
            when=p["time"],
        ),
        secret,
    )
    same(plan, vec["plan"], "plan")
    assert vec["plan"]["signed_text"].startswith("brain-ledger eval-plan v1\n")
    rows = [{k: v for k, v in r["record"].items() if k != "batch"} for r in vec["records"]]
    signed = oc.sign_batch(rows, secret, prev=None, bid=vec["batch"])
    for entry, want in zip(signed, vec["records"], strict=True):
        same(entry, want, "record")
        assert entry.record["format"] == oc.FORMAT and entry.eval is not None and entry.eval["plan"] == plan.id.hex()
        assert entry.record["task"]["digest"] == "sha256:" + hashlib.sha256(oc.canonical(vec["case"])).hexdigest()
    for entry, grading in zip(signed, vec["grading"], strict=True):
        assert entry.record["evidence"]["digest"] == "sha256:" + hashlib.sha256(grading.encode()).hexdigest()
    assert [e.counts for e in signed] == [True, False]  # the without-skill arm counts in no competence figure
    a = vec["approval"]["approval"]
    approval = oc.sign_body(
        "approval",
        oc.make_approval(
            brain=a["brain"],
            skill=a["skill"],
            version=a["version"],
            digest=a["digest"],
            reason=a["reason"],
            signer=a["signer"],
            when=a["time"],
        ),
        secret,
    )
    same(approval, vec["approval"], "approval")
    # The plan's grid (1 case × 1 run × with/without) is whole in the batch; a batch of the with-skill run alone
    # (re-signed, count 1) is refused, as is the batch when its plan is not before it in the log.
    plans = Plans()
    plans.add(plan)
    assert (
        batch_problem([(1, signed[0]), (2, signed[1])], v2_before=False, known=lambda s, b: False, plans=plans) is None
    )
    alone = oc.sign_batch(rows[:1], secret, prev=None, bid=vec["batch"])
    assert "holds 1 runs of plan" in (
        batch_problem([(1, alone[0])], v2_before=False, known=lambda s, b: False, plans=plans) or ""
    )
    assert "not a plan entry earlier in the log" in (
        batch_problem(list(enumerate(signed)), v2_before=False, known=lambda s, b: False, plans=Plans()) or ""
    )
    # No downgrade: a v2 record after a v3 one.
    v2 = oc.sign_batch(
        [{**{k: v for k, v in rows[0].items() if k != "eval"}, "format": oc.FORMAT_V2}], secret, prev=vec["batch"]
    )
    assert v2[0].record["format"] == oc.FORMAT_V2
    assert "v2 record" in (batch_problem([(3, v2[0])], v2_before=True, v3_before=True, known=lambda s, b: True) or "")
    for case in vec["refused"]:
        with pytest.raises(LedgerError, match=case["why"]):
            oc.parse_entry(case["entry"].encode())


def test_a_best_verified_version_whose_digest_is_revoked_is_not_projected(tmp_path: Path, keys: Path) -> None:
    """A target linked ``--best-verified`` never gets a version the head's supply record revokes: with v1
    (the best verified) revoked, it gets the head's version, as a skill with no verified version does."""
    from ledger.brain import Brain
    from ledger.evals import gate
    from ledger.protocol.bundlehash import format_root

    b = _brain(tmp_path, keys)
    B = ("--brain", str(b))
    target = tmp_path / "runtime"
    run_ledger(*B, "target", "add", str(target), "--best-verified", "--name", "prod", check=True)
    _import(b, _rows("a", 18, 2))
    (tmp_path / "v2.md").write_text(SKILL.format(n="s", body="v2: a worse body"))
    run_ledger(*B, "skill", "edit", "s", "--file", str(tmp_path / "v2.md"), check=True)
    _import(b, _rows("b", 4, 16))
    run_ledger(*B, "sync", check=True)
    assert "v2: a worse body" not in (target / "s" / "SKILL.md").read_text()  # v1: its evidence is better
    with Brain.open(b) as brain:
        v1 = gate.versions_of(brain, ["s"])["s"][1].tree
        digest = format_root(brain.tree_digest(v1, "s"))
    run_ledger(*B, "supply", "revoke", digest, "--reason", "v1 leaks the data", check=True)
    run_ledger(*B, "sync", check=True)
    assert "v2: a worse body" in (target / "s" / "SKILL.md").read_text()  # not the revoked v1
