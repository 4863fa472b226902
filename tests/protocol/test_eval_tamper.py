"""Evaluations tampered with (docs/lineage/evaluations.md): each class a real signed lineage, re-signed by an attacker
who holds every key of the brain, failing `ledger audit` and `ledger verify` for the reason lineage/evaluations.md
names; and the
brain's writer refusing each before it appends anything.

The honest brain (``build_honest_evals``) has skill ``s`` at v2 with an ``evals`` directory, a plan (signed by the
user key), the plan's evaluation of v2 as one verifier batch (2 cases × 1 run × with/without skill, one with-skill
run failing), then v3 with a changed eval set, its own plan and evaluation, and an approval of v3.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.brain import Brain
from ledger.errors import LedgerError
from ledger.store import outcomes as oc
from ledger.store.treehash import evals_digest
from tests.harness import tamper_outcomes
from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger
from tests.harness.spec import spec_text
from tests.harness.tamper import git, lineage

RUNNER, GRADER = "brain-ledger reference-runner 1", "brain-ledger reference-grader 1"
CASES = [
    {"id": 1, "prompt": "sum the column", "expected_output": "6", "assertions": ["`test -s out`"]},
    {"id": "two", "prompt": "sum again", "expected_output": "9", "assertions": ["`test -s out`"]},
]
LABELS = ["init", "create-s", "trust-verifier", "evals-v2", "plan", "runs", "evals-v3", "plan-v3", "runs-v3", "approve"]
KEYS: dict[str, bytes] = {}

# The reason each class's failure names (lineage/evaluations.md §5), the audit's and the writer's.
REASONS = {
    "eval-run-under-a-later-plan": r"names plan [0-9a-f]{12}, which is not a plan entry earlier in the log",
    "eval-run-dated-before-its-plan": r"is dated \S+, before its plan [0-9a-f]{12} \(\S+\): a run under a plan made "
    r"after it",
    "eval-failed-run-dropped": r"holds 3 runs of plan [0-9a-f]{12}, whose grid is 4 \(case 'two' run 0 with_skill "
    r"missing\): an evaluation is recorded whole",
    "eval-set-changed-since-its-plan": r"is a run over eval set blake3-tree-v1:[0-9a-f]{64}, not its plan "
    r"[0-9a-f]{12}'s \(blake3-tree-v1:[0-9a-f]{64}\): the eval set changed since "
    r"the plan",
    "eval-set-not-the-versions": r"is a run over eval set blake3-tree-v1:[0-9a-f]{64}, which is not the digest of "
    r"s v2's evals directory at [0-9a-f]{12}",
    "eval-approval-by-an-agent": r"a agent key: an approval is signed by a user or curator key",
    "eval-v2-record-after-v3": r"is a v2 record \(brain-ledger/outcome/v2\), appended after the log's first v3 record",
}


def _evals(cases: list[dict[str, Any]]) -> bytes:
    return json.dumps({"skill_name": "s", "evals": cases}, indent=2).encode()


def _rows(
    brain: Brain,
    version: int,
    plan: str | None,
    cases: list[dict[str, Any]],
    *,
    failing: tuple[str, ...] = (),
    evals_set: str | None = None,
    when: str | None = None,
) -> list[dict]:
    """Unsigned v3 records of every case × {with_skill, without_skill} of ``s`` at ``version`` (one run each),
    graded out of 1; the with-skill runs of ``failing`` cases fail, as every without-skill run does."""
    served = brain.evidence.served("s", version)
    tree = brain.store.commit_info(bytes.fromhex(served.commit))[0]
    from ledger.store.skilltree import skills_of

    have = evals_digest(brain.store, skills_of(brain.store, tree)[1]["s"])
    rows = []
    for case in cases:
        cid = str(case["id"])
        for cond in ("with_skill", "without_skill"):
            passed = int(cond == "with_skill" and cid not in failing)
            rows.append(
                brain.evidence.unsigned(
                    served,
                    {
                        "task": {"id": cid, "digest": "sha256:" + hashlib.sha256(oc.canonical(case)).hexdigest()},
                        "score": passed,
                        "scale": (0, 1),
                        "threshold": 1,
                        "verifier": GRADER,
                        "time": when,
                        "evidence": f"iteration-1/eval-{cid}/{cond}/grading.json",
                        "evidence_digest": "sha256:" + hashlib.sha256(f"{cid}{cond}{passed}".encode()).hexdigest(),
                        "eval": {
                            "plan": plan,
                            "set": evals_set or have,
                            "case": cid,
                            "run": 0,
                            "condition": cond,
                            "arm": version if cond == "with_skill" else None,
                            "runner": RUNNER,
                            "grader": GRADER,
                            "tokens": 1000 + passed,
                            "ms": 2000,
                        },
                    },
                    "score",
                )
            )
    return rows


def _plan_fields(brain: Brain, cases: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {
        "skill": "s",
        "set": evals_digest(brain.store, brain.head().skills["s"]),
        "cases": [str(c["id"]) for c in cases],
        "baseline": "none",
        "runs": 1,
        "runner": {"command": "python -m ledger.evals.refrunner", "id": RUNNER},
        "grader": {"command": "python -m ledger.evals.refgrader", "id": GRADER},
        "min_lift": 0,
        **kw,
    }


def build_honest_evals(root: Path) -> tuple[Path, dict[str, int]]:
    brain = root / "honest-evals"
    keys = root / "keys"
    env = {"LEDGER_KEYS": str(keys)}
    make_brain(brain, {"s": ("S", "step one\n")}, via="cli", env=env)
    run_ledger("--brain", str(brain), "keys", "generate", "verifier", check=True, env=env)
    run_ledger("--brain", str(brain), "keys", "trust", "verifier", check=True, env=env)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEDGER_KEYS", str(keys))
        b = Brain.open(brain)
        try:
            b.write_file("s", "evals/evals.json", _evals(CASES))
            plan = b.evidence.add_plan(_plan_fields(b, CASES))[1].id.hex()
            with b.acting("verifier"):
                b.evidence.record_runs(_rows(b, 2, plan, CASES, failing=("two",)), "outcome: eval of s v2")
            b.write_file("s", "evals/evals.json", _evals([{**c, "expected_output": "other"} for c in CASES]))
            plan3 = b.evidence.add_plan(_plan_fields(b, CASES))[1].id.hex()
            with b.acting("verifier"):
                b.evidence.record_runs(_rows(b, 3, plan3, CASES), "outcome: eval of s v3")
            b.evidence.approve("s", 3, "reviewed by hand")
        finally:
            b.close()
    KEYS.update(
        {
            role: bytes.fromhex(json.loads((keys / f"{role}.key").read_text())["private_key"][2:])
            for role in ("user", "agent", "verifier")
        }
    )
    assert len(lineage(brain / ".git")) == len(LABELS)
    return brain, {label: i for i, label in enumerate(LABELS)}


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    return build_honest_evals(tmp_path_factory.mktemp("tamper-evals"))


# ------------------------------------------------------------------ the attacker's tools


def _log(repo: Path, commit: str) -> list[bytes]:
    return tamper_outcomes._log(repo, commit)


def _rewrite(repo: Path, start: int, change: Callable[[list[bytes]], list[bytes]]) -> str:
    tamper_outcomes.KEYS.update(KEYS)  # the re-signing keys: this brain's
    return tamper_outcomes.rewrite_logs(repo, start, change)


def _resign(entries: list[bytes], edit: Callable[[dict], None] = lambda r: None) -> list[bytes]:
    """A verifier batch's records, each changed by ``edit``, re-signed as one batch under the same id and prev
    (whatever batches follow it still name it)."""
    records = [json.loads(e)["record"] for e in entries]
    first = records[0]["batch"]
    for r in records:
        edit(r)
    return [e.data for e in oc.sign_batch(records, KEYS["verifier"], prev=first["prev"], bid=first["id"])]


def _plan_like(entry: bytes, **changes: Any) -> bytes:
    plan = {**json.loads(entry)["plan"], **changes}
    return oc.sign_body("plan", plan, KEYS["user"]).data


def _time(repo: Path, commit: str) -> int:
    return int(git(repo, "show", "-s", "--format=%ct", commit).strip())


def _runs(log: list[bytes]) -> list[bytes]:
    return [e for e in log if b'"eval":{' in e]


def _appended(repo: Path, idx: dict[str, int], label: str) -> list[bytes]:
    """The runs snapshot ``label`` appended (its log less its parent's)."""
    commits = lineage(repo)
    before = set(_log(repo, commits[idx[label] - 1]))
    return [e for e in _runs(_log(repo, commits[idx[label]])) if e not in before]


def _later_plan(repo: Path, idx: dict[str, int]) -> str:
    """The v2 runs re-signed to name a new plan P', which the snapshot appends after them."""
    commits = lineage(repo)
    plan = _log(repo, commits[idx["plan"]])[-1]
    later = _plan_like(
        plan,
        time=oc.format_time(_time(repo, commits[idx["runs"]])),
        rule={"interval": "newcombe-paired-95", "min_lift": 0.05},
    )  # another plan than the honest one
    pid = hashlib.sha256(oc.canonical(json.loads(later)["plan"])).hexdigest()
    old = _runs(_log(repo, commits[idx["runs"]]))
    new = _resign(old, lambda r: r["eval"].update(plan=pid))
    return _rewrite(
        repo, idx["runs"], lambda log: [*[e for e in log if e not in old], *new, later] if old[0] in log else log
    )


def _dated_plan(repo: Path, idx: dict[str, int]) -> str:
    """A new plan P' appended before the v2 runs (re-signed to name it), but dated 200 s after them."""
    commits = lineage(repo)
    plan = _log(repo, commits[idx["plan"]])[-1]
    when = _time(repo, commits[idx["runs"]])
    later = _plan_like(plan, time=oc.format_time(when + 200))
    pid = hashlib.sha256(oc.canonical(json.loads(later)["plan"])).hexdigest()
    old = _runs(_log(repo, commits[idx["runs"]]))
    new = _resign(old, lambda r: (r["eval"].update(plan=pid), r.update(time=oc.format_time(when))))
    return _rewrite(
        repo, idx["runs"], lambda log: [*[e for e in log if e not in old], later, *new] if old[0] in log else log
    )


def _failed_dropped(repo: Path, idx: dict[str, int]) -> str:
    """The failed with-skill run of case 'two' left out, and the batch re-signed with a count of 3."""
    commits = lineage(repo)
    old = _runs(_log(repo, commits[idx["runs"]]))
    kept = [e for e in old if not (b'"case":"two"' in e and b'"condition":"with_skill"' in e)]
    assert len(kept) == 3 and b'"score":0' in next(e for e in old if e not in kept)
    new = _resign(kept)
    return _rewrite(repo, idx["runs"], lambda log: [*[e for e in log if e not in old], *new] if old[0] in log else log)


def _set_changed(repo: Path, idx: dict[str, int]) -> str:
    """v3's runs (over v3's changed eval set, true at their receipt) re-signed to name v2's plan: a lift over
    an eval set other than the one pre-registered."""
    commits = lineage(repo)
    plan = json.loads(_log(repo, commits[idx["plan"]])[-1])["plan"]
    pid = hashlib.sha256(oc.canonical(plan)).hexdigest()
    old = _appended(repo, idx, "runs-v3")
    new = _resign(old, lambda r: r["eval"].update(plan=pid))
    return _rewrite(
        repo, idx["runs-v3"], lambda log: [*[e for e in log if e not in old], *new] if old[0] in log else log
    )


def _set_not_the_versions(repo: Path, idx: dict[str, int]) -> str:
    """v2's runs re-signed naming v3's eval set (and a plan P' of that set appended before them): the set is not
    the digest of s v2's evals directory."""
    commits = lineage(repo)
    v3 = json.loads(_log(repo, commits[idx["plan-v3"]])[-1])["plan"]["set"]
    plan = _log(repo, commits[idx["plan"]])[-1]
    other = _plan_like(plan, set=v3)
    pid = hashlib.sha256(oc.canonical(json.loads(other)["plan"])).hexdigest()
    old = _runs(_log(repo, commits[idx["runs"]]))
    new = _resign(old, lambda r: r["eval"].update(plan=pid, set=v3))
    return _rewrite(
        repo, idx["runs"], lambda log: [*[e for e in log if e not in old], other, *new] if old[0] in log else log
    )


def _agent_approval(repo: Path, idx: dict[str, int]) -> str:
    """An approval of v3 signed by the agent key, slipped into the approval's snapshot."""
    commits = lineage(repo)
    honest = json.loads(_log(repo, commits[idx["approve"]])[-1])["approval"]
    from eth_account import Account

    forged = oc.sign_body(
        "approval",
        {**honest, "reason": "the agent says so", "signer": Account.from_key(KEYS["agent"]).address.lower()},
        KEYS["agent"],
    ).data
    return _rewrite(repo, idx["approve"], lambda log: [*log, forged])


def _v2_after_v3(repo: Path, idx: dict[str, int]) -> str:
    """A plain v2 record by the verifier (a new batch following its last) slipped in after the v3 records."""
    last = json.loads(_appended(repo, idx, "runs-v3")[-1])["record"]
    record = {k: v for k, v in last.items() if k != "eval"}
    record.update(
        format=oc.FORMAT_V2,
        task={"id": "T-1", "digest": None},
        verifier=None,
        outcome={"result": "success", "score": None, "scale": None, "threshold": None},
        evidence={"uri": None, "digest": None},
    )
    extra = oc.sign_batch([record], KEYS["verifier"], prev=last["batch"]["id"])[0].data
    assert b'"format":"brain-ledger/outcome/v2"' in extra
    return _rewrite(repo, idx["approve"], lambda log: [*log, extra])


CASES_TAMPER: dict[str, Callable[[Path, dict[str, int]], str]] = {
    "eval-run-under-a-later-plan": _later_plan,
    "eval-run-dated-before-its-plan": _dated_plan,
    "eval-failed-run-dropped": _failed_dropped,
    "eval-set-changed-since-its-plan": _set_changed,
    "eval-set-not-the-versions": _set_not_the_versions,
    "eval-approval-by-an-agent": _agent_approval,
    "eval-v2-record-after-v3": _v2_after_v3,
}


def _audit(repo: Path, *args: str) -> tuple[int, dict]:
    proc = run_ledger("audit", str(repo), "--json", *args)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_the_honest_evals_brain_passes(honest) -> None:
    brain, _ = honest
    code, report = _audit(brain, "--require-signatures")
    assert code == 0 and report["ok"], {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}
    # 8 runs, 2 plans, 1 approval; the tiers count the runs only.
    assert report["checks"]["evidence"]["summary"] == (
        "11 outcome(s), append-only; 11 checked as added: 8 verified, 0 self-reported, 2 eval plan(s), 1 approval(s)"
    ), report["checks"]["evidence"]
    assert run_ledger("--brain", str(brain), "verify").returncode == 0


@pytest.mark.parametrize("name", sorted(CASES_TAMPER))
def test_every_eval_tamper_class_fails_the_audit_and_verify(honest, name: str, tmp_path: Path) -> None:
    """An attacker holding every key rewrites the evidence log and re-signs each snapshot: only the 'evidence'
    check fails, on the snapshot altered, for the reason of its class; `ledger verify` on a working copy too."""
    brain, idx = honest
    work = tmp_path / "work"
    shutil.copytree(brain, work, symlinks=True)
    repo = work / ".git"
    named = CASES_TAMPER[name](repo, idx)
    for args in ((), ("--require-signatures",)):
        code, report = _audit(repo, *args)
        failed = sorted(k for k, v in report["checks"].items() if not v["ok"])
        chk = report["checks"]["evidence"]
        assert code == 1 and failed == ["evidence"], (name, {k: report["checks"][k]["summary"] for k in failed})
        assert chk["snapshot"] == named, (name, chk)
        assert re.search(REASONS[name], chk["summary"]), (name, chk["summary"])
    proc = run_ledger("--brain", str(work), "verify")
    assert proc.returncode == 1 and re.search(REASONS[name], proc.stdout + proc.stderr), (name, proc.stdout)
    assert f"`{name}`" in spec_text()


# ------------------------------------------------------------------ the writer refuses each


@pytest.fixture
def work(honest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Brain]:
    brain, _ = honest
    copy = tmp_path / "brain"
    shutil.copytree(brain, copy, symlinks=True)
    monkeypatch.setenv("LEDGER_KEYS", str(brain.parent / "keys"))
    b = Brain.open(copy)
    try:
        yield b
    finally:
        b.close()


def _refused(b: Brain, name: str, write: Callable[[], Any]) -> None:
    head, size = b.head().commit, b.evidence.size()
    with pytest.raises(LedgerError) as exc:
        write()
    assert re.search(REASONS[name], exc.value.message), (name, exc.value.message)
    assert "nothing was written" in exc.value.message
    assert b.head().commit == head and b.evidence.size() == size


def test_the_writer_refuses_a_run_under_a_later_plan(work: Brain) -> None:
    b = work
    b.write_file("s", "evals/evals.json", _evals([{**c, "prompt": "p2"} for c in CASES]))  # v4
    plan = oc.sign_body(
        "plan",
        oc.make_plan(brain=b.evidence.genesis, signer=b.evidence._key().address, **_plan_fields(b, CASES)),
        b.evidence._key().secret,
    )
    with b.acting("verifier"):
        rows = _rows(b, 4, plan.id.hex(), CASES)
        key = b.evidence._key()
        runs = oc.sign_batch(rows, key.secret, prev=b.evidence.batches(key.address)[0]["batches"][-1]["id"])
        _refused(b, "eval-run-under-a-later-plan", lambda: b.evidence.record_runs(rows, "x"))  # no plan at all
        _refused(b, "eval-run-under-a-later-plan", lambda: b.evidence.append([*runs, plan], "x"))  # plan after


def test_the_writer_refuses_a_run_dated_before_its_plan(work: Brain) -> None:
    b = work
    b.write_file("s", "evals/evals.json", _evals([{**c, "prompt": "p2"} for c in CASES]))  # v4
    now = oc.parse_time(oc.format_time())
    plan = b.evidence.add_plan(_plan_fields(b, CASES, time=oc.format_time(now + 200)))[1]
    with b.acting("verifier"):
        rows = _rows(b, 4, plan.id.hex(), CASES, when=oc.format_time(now))
        _refused(b, "eval-run-dated-before-its-plan", lambda: b.evidence.record_runs(rows, "x"))


def test_the_writer_refuses_a_plans_evaluation_with_a_failed_run_left_out(work: Brain) -> None:
    b = work
    b.write_file("s", "evals/evals.json", _evals([{**c, "prompt": "p2"} for c in CASES]))  # v4
    plan = b.evidence.add_plan(_plan_fields(b, CASES))[1]
    with b.acting("verifier"):
        rows = _rows(b, 4, plan.id.hex(), CASES, failing=("two",))
        kept = [r for r in rows if not (r["eval"]["case"] == "two" and r["eval"]["condition"] == "with_skill")]
        _refused(b, "eval-failed-run-dropped", lambda: b.evidence.record_runs(kept, "x"))
        b.evidence.record_runs(rows, "outcome: the whole evaluation")  # the control: all four runs are taken
    assert len([e for e in b.evidence.checked() if b'"eval":{' in e]) == 12


def test_the_writer_refuses_runs_over_an_eval_set_other_than_the_plans(work: Brain) -> None:
    b = work
    v2_plan = b.evidence.plans("s")[0].id.hex()
    with b.acting("verifier"):
        rows = _rows(b, 3, v2_plan, CASES)  # v3's set, true at v3's receipt, under v2's plan
        _refused(b, "eval-set-changed-since-its-plan", lambda: b.evidence.record_runs(rows, "x"))


def test_the_writer_refuses_a_run_whose_set_is_not_its_versions(work: Brain) -> None:
    b = work
    v3_set = b.evidence.plans("s")[1].body["set"]
    with b.acting("verifier"):
        rows = _rows(b, 2, None, CASES, evals_set=v3_set)  # an imported run (no plan) of v2, naming v3's set
        _refused(b, "eval-set-not-the-versions", lambda: b.evidence.record_runs(rows, "x"))


def test_the_writer_refuses_an_agents_approval_and_a_v2_record_after_v3(work: Brain) -> None:
    b = work
    with b.acting("agent"):
        _refused(b, "eval-approval-by-an-agent", lambda: b.evidence.approve("s", 3, "the agent says so"))
    with b.acting("verifier"):
        key = b.evidence._key()
        served = b.evidence.served("s")
        record = oc.make_record(
            brain=b.evidence.genesis,
            agent=None,
            skill="s",
            version=served.version,
            digest=served.digest,
            receipt={"commit": served.commit, "root": served.root},
            task_id="T-1",
            task_digest=None,
            result="success",
            signer=key.address,
        )
        record["format"] = oc.FORMAT_V2
        prev = b.evidence.batches(key.address)[0]["batches"][-1]["id"]
        old = oc.sign_batch([record], key.secret, prev=prev)
        _refused(b, "eval-v2-record-after-v3", lambda: b.evidence.append(old, "x"))


def test_plans_and_approvals_count_in_no_figure_and_baseline_runs_neither(honest) -> None:
    """competence(): v2 had 2 with-skill runs (1 failed) and 2 without-skill runs; only the with-skill ones count."""
    brain, _ = honest
    stats = json.loads(run_ledger("--brain", str(brain), "skill", "show", "s", "--stats", "--json", check=True).stdout)
    by = {v["version"]: v["verified"] for v in stats["versions"]}
    assert (by[2]["successes"], by[2]["failures"]) == (1, 1), by
    assert (by[3]["successes"], by[3]["failures"]) == (2, 0), by
    listed = run_ledger("--brain", str(brain), "outcome", "list", check=True).stdout
    assert "eval plan (2 case(s) x 1 run(s))" in listed and "approval v3" in listed
    batches = json.loads(run_ledger("--brain", str(brain), "outcome", "batches", "--json", check=True).stdout)
    assert [b["outcomes"] for b in batches] == [8]


def test_a_plan_signed_elsewhere_is_imported_byte_for_byte(honest, tmp_path: Path) -> None:
    """`ledger outcome import` takes a plan entry signed on another machine (by a trusted key) as it is."""
    brain, _ = honest
    copy = tmp_path / "brain"
    shutil.copytree(brain, copy, symlinks=True)
    plan = json.loads(run_ledger("--brain", str(copy), "outcome", "list", "s", "--json", check=True).stdout)[0]
    assert set(plan) == {"index", "tier", "plan", "signature"}
    other = oc.sign_body("plan", {**plan["plan"], "runs": 3}, KEYS["user"])
    env = {"LEDGER_KEYS": str(brain.parent / "keys")}
    done = run_ledger("--brain", str(copy), "outcome", "import", "-", "--json", input=other.data.decode(), env=env)
    assert done.returncode == 0, done.stderr
    listed = json.loads(run_ledger("--brain", str(copy), "outcome", "list", "--json", check=True).stdout)
    assert listed[-1]["plan"]["runs"] == 3
    assert oc.canonical({"plan": listed[-1]["plan"], "signature": listed[-1]["signature"]}) == other.data
    assert run_ledger("--brain", str(copy), "verify").returncode == 0


def test_a_pull_of_runs_under_a_plan_the_copy_holds_audits_ok(
    honest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fleet: copy a records a second evaluation of v3 under the plan both copies hold; copy b's pull audits
    the new snapshots alone (incremental), finding the plan in the log it already had."""
    brain, _ = honest
    a, b, remote = tmp_path / "a", tmp_path / "b", str(tmp_path / "remote.git")
    shutil.copytree(brain, a, symlinks=True)
    env = {"LEDGER_KEYS": str(brain.parent / "keys")}
    run_ledger("--brain", str(a), "push", remote, check=True, env=env)
    run_ledger("clone", remote, str(b), check=True, env=env)
    monkeypatch.setenv("LEDGER_KEYS", str(brain.parent / "keys"))
    with contextlib.closing(Brain.open(a)) as copy, copy.acting("verifier"):
        plan3 = copy.evidence.plans("s")[1].id.hex()
        rows = _rows(copy, 3, plan3, CASES, failing=("1",))
        copy.evidence.record_runs(rows, "outcome: a second evaluation of s v3")
    run_ledger("--brain", str(a), "push", remote, check=True, env=env)
    pulled = run_ledger("--brain", str(b), "pull", remote, env=env)
    assert pulled.returncode == 0, pulled.stderr
    listed = json.loads(run_ledger("--brain", str(b), "outcome", "list", "--json", check=True).stdout)
    assert len(listed) == 15 and listed[-1]["record"]["eval"]["plan"] == plan3
    assert run_ledger("--brain", str(b), "verify").returncode == 0
