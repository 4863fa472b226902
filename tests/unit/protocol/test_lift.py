"""Lift (issue 47, docs/lineage/evidence.md §6, ADR 48): Newcombe's paired interval against published worked
examples, and the pairing, tiers, staleness and regression rules over records in the v3 shape."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

from ledger.evals.lift import lift_regressions, lifts, newcombe_paired, version_json
from tests.harness.cli import run_ledger

VERIFIER, AGENT, REVOKED = "0x" + "11" * 20, "0x" + "22" * 20, "0x" + "33" * 20
ROLES = {VERIFIER: "verifier", AGENT: "agent"}
PLAN = "ab" * 32


# ---------------------------------------------------------------- the interval, against published figures


@pytest.mark.parametrize(
    ("table", "published"),
    [
        # Newcombe RG (1998), "Improved confidence intervals for the difference between binomial proportions based
        # on paired data", Statistics in Medicine 17:2635-2650, Table II, method 10 ("score-based hybrid, no CC"):
        ((36, 12, 2, 0), (0.0569, 0.3404)),  # example (a)
        ((20, 12, 2, 16), (0.0562, 0.3292)),  # example (b): Armitage & Berry's fifty sputum specimens, two media
        # Fagerland, Lydersen & Laake (2014), Statistics in Medicine 33:2850-2875, the Newcombe square-and-add
        # interval (his method 10) of their worked example: airway hyper-responsiveness before and after stem cell
        # transplantation (Bentur et al. 2009).
        ((1, 1, 7, 12), (-0.507, -0.026)),
    ],
)
def test_newcombe_method_10_matches_the_published_examples(table, published):
    low, high = newcombe_paired(*table)
    places = len(str(published[0]).split(".")[1])
    assert (round(low, places), round(high, places)) == published


def test_newcombe_edges():
    assert newcombe_paired(0, 0, 0, 0) is None
    low, high = newcombe_paired(10, 0, 0, 0)  # every pair passes both ways: no difference seen, some room left
    assert low < 0 < high and low == pytest.approx(-high)
    low, high = newcombe_paired(0, 0, 10, 0)  # the skill fails every case the baseline passes
    assert -1 <= low < high < 0
    low, high = newcombe_paired(0, 10, 0, 0)
    assert 0 < low < high <= 1


# ---------------------------------------------------------------- records in the design's v3 shape


def rec(
    case: str,
    run: int,
    cond: str,
    ok: bool,
    *,
    skill: str = "s",
    version: int = 2,
    signer: str = VERIFIER,
    plan: str | None = PLAN,
    batch: str = "b1",
    arm: int | None = None,
    ms: int = 100,
    tokens: int | None = 10,
    runner: str = "ref-runner 1",
    grader: str = "ref-grader 1",
) -> dict[str, Any]:
    """An eval record as lineage/evaluations.md lays it out (only the members lift reads are filled in faithfully)."""
    if cond == "with_skill":
        arm = version
    return {
        "format": "brain-ledger/outcome/v3",
        "skill": skill,
        "version": version,
        "signer": signer,
        "batch": {"id": batch, "prev": None, "count": 1, "index": 0},
        "outcome": {"result": "score", "score": 3 if ok else 2, "scale": [0, 3], "threshold": 3},
        "eval": {
            "plan": plan,
            "set": "blake3-tree-v1:" + "0" * 64,
            "case": case,
            "run": run,
            "condition": cond,
            "arm": arm,
            "runner": runner,
            "grader": grader,
            "tokens": tokens,
            "ms": ms,
        },
    }


def grid(with_: dict[str, list[bool]], base: dict[str, list[bool]], **kw: Any) -> list[dict[str, Any]]:
    out = []
    for case, oks in with_.items():
        for run, ok in enumerate(oks):
            out.append(rec(case, run, "with_skill", ok, **kw))
            out.append(rec(case, run, "without_skill", base[case][run], **{**kw, "ms": 40, "tokens": 4}))
    return out


def test_pairs_by_case_and_run_and_counts_the_table():
    records = grid(
        {"1": [True, True], "2": [True, False], "3": [False, False]},
        {"1": [False, True], "2": [True, True], "3": [False, True]},
    )
    lift = lifts(records, ROLES)["s"][2]["verified"][0]
    assert lift.table == [2, 1, 2, 1]  # (1,1) both; (1,0) with only; (2,1) and (3,1) baseline only; (3,0) neither
    doc = lift.to_json()
    assert doc["pairs"] == 6 and doc["delta"] == round((1 - 2) / 6, 6)
    assert doc["with_rate"] == round(3 / 6, 6) and doc["baseline_rate"] == round(4 / 6, 6)
    assert doc["interval"] == [round(x, 6) for x in newcombe_paired(2, 1, 2, 1)]
    assert doc["preregistered"] is True and doc["stale"] is False
    assert doc["regressed"] == ["2"]  # passed in every baseline run, failed in one with run
    assert doc["time_delta_ms"] == 60 and doc["tokens_delta"] == 6


def test_unpaired_runs_and_other_keys_never_pair():
    records = [
        rec("1", 0, "with_skill", True),
        rec("1", 1, "without_skill", False),  # other run index
        rec("2", 0, "with_skill", True),
        rec("2", 0, "without_skill", False, batch="b2"),  # other evaluation
        rec("3", 0, "with_skill", True),
        rec("3", 0, "without_skill", False, version=3),
    ]  # other version
    assert lifts(records, ROLES) == {}


def test_tiers_never_summed_and_revoked_keys_withdrawn():
    records = (
        grid({"1": [True]}, {"1": [False]})
        + grid({"1": [False]}, {"1": [False]}, signer=AGENT, batch="b2")
        + grid({"1": [True]}, {"1": [True]}, signer=REVOKED, batch="b3")
    )
    per = lifts(records, ROLES)["s"][2]
    assert per["verified"][0].table == [0, 1, 0, 0]
    assert per["self"][0].table == [0, 0, 0, 1]
    doc = version_json(per)
    assert doc["verified"]["delta"] == 1 and doc["self"]["delta"] == 0
    assert version_json(None) == {"verified": None, "self": None}


def test_two_evaluations_under_one_plan_pool_their_pairs():
    records = grid({"1": [True]}, {"1": [False]}) + grid({"1": [True]}, {"1": [True]}, batch="b2")
    (lift,) = lifts(records, ROLES)["s"][2]["verified"]
    assert lift.table == [1, 1, 0, 0]


def test_stale_when_the_newest_plan_declares_another_identity():
    old = grid({"1": [True]}, {"1": [False]}, runner="claude-code 2.0 / model-a")
    new_plan = {
        "skill": "s",
        "runner": {"command": "x", "id": "claude-code 2.1 / model-b"},
        "grader": {"command": "g", "id": "ref-grader 1"},
        "signer": VERIFIER,
    }
    (lift,) = lifts(old, ROLES, [new_plan])["s"][2]["verified"]
    assert lift.stale is True
    # the new runner's evaluation of the same version is shown first; the old one is kept under `earlier`
    new = grid({"1": [False]}, {"1": [False]}, runner="claude-code 2.1 / model-b", plan="cd" * 32, batch="b2")
    doc = version_json(lifts(old + new, ROLES, [new_plan])["s"][2])["verified"]
    assert (doc["runner"], doc["stale"], doc["delta"]) == ("claude-code 2.1 / model-b", False, 0)
    assert [(e["runner"], e["stale"], e["delta"]) for e in doc["earlier"]] == [("claude-code 2.0 / model-a", True, 1)]


def test_not_preregistered_without_a_plan_and_never_summed_with_a_planned_run():
    records = grid({"1": [True]}, {"1": [False]}) + grid({"1": [False]}, {"1": [False]}, plan=None, batch="b2")
    doc = version_json(lifts(records, ROLES)["s"][2])["verified"]
    assert doc["preregistered"] is True and doc["pairs"] == 1
    assert [(e["preregistered"], e["pairs"]) for e in doc["earlier"]] == [(False, 1)]


def test_old_skill_baseline_names_its_version():
    records = []
    for run in range(3):
        records += [rec("1", run, "with_skill", False, version=3), rec("1", run, "old_skill", True, version=3, arm=2)]
    doc = version_json(lifts(records, ROLES)["s"][3])["verified"]
    assert (doc["baseline"], doc["arm"], doc["delta"], doc["regressed"]) == ("old_skill", 2, -1, ["1"])


def test_regression_below_zero_and_below_the_predecessor():
    cases = {str(i): [True] for i in range(12)}
    none = {str(i): [False] for i in range(12)}
    helps = grid(cases, none, version=1, batch="v1")  # v1: +1
    flat = grid(cases, cases, version=2, batch="v2")  # v2: 0, not below zero, but below v1's lift on the plan
    harms = grid(none, cases, version=3, batch="v3")  # v3: -1
    per = lifts(helps + flat, ROLES)["s"]
    (flag,) = lift_regressions("s", 2, per)
    assert (flag["kind"], flag["version"], flag["from"], flag["why"]) == ("lift", 2, 1, "below its predecessor's")
    assert flag["revert"] == "ledger revert s --to 1"
    per = lifts(helps + flat + harms, ROLES)["s"]
    (flag,) = lift_regressions("s", 3, per)
    assert (flag["version"], flag["why"], flag["tier"]) == (3, "below zero", "verified")
    assert lift_regressions("s", 1, per) == []  # the live version is v1: nothing to flag
    assert lift_regressions("s", 3, lifts(helps, ROLES)["s"]) == []  # v1 is the newest with a lift


# ---------------------------------------------------------------- end to end: a real brain, signed v3 records, the CLI

SKILL_MD = "---\nname: s\ndescription: The s skill\n---\n{body}\n"
CASES = [str(i) for i in range(1, 9)]
REF_RUNNER, REF_GRADER = "brain-ledger reference-runner 1", "brain-ledger reference-grader 1"


@pytest.fixture
def keys(tmp_path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "keys"
    monkeypatch.setenv("LEDGER_KEYS", str(home))
    return home


def _skill(path, body: str) -> None:
    d = path / "skills" / "s"
    (d / "evals").mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(SKILL_MD.format(body=body))
    cases = [
        {"id": int(c), "prompt": f"sum file {c}", "expected_output": c, "assertions": [f"`test -s out{c}`"]}
        for c in CASES
    ]
    (d / "evals" / "evals.json").write_text(json.dumps({"skill_name": "s", "evals": cases}, indent=2))


def _evaluate(
    brain, *, passes_with, passes_base, plan: str | None, runner: str = REF_RUNNER, actor: str = "verifier"
) -> None:
    """Record one evaluation of the head's s: every case once with the skill and once without, as one batch."""
    from ledger.store.treehash import evals_digest

    with brain.acting(actor):
        served = brain.evidence.served("s")
        tree = brain.head().skills["s"]
        digest = evals_digest(brain.store, tree)
        rows = []
        for case in CASES:
            for cond, ok in (("with_skill", case in passes_with), ("without_skill", case in passes_base)):
                grading = json.dumps({"case": case, "cond": cond, "ok": ok}).encode()
                run = {
                    "plan": plan,
                    "set": digest,
                    "case": case,
                    "run": 0,
                    "condition": cond,
                    "arm": served.version if cond == "with_skill" else None,
                    "runner": runner,
                    "grader": REF_GRADER,
                    "tokens": 300 if cond == "with_skill" else 100,
                    "ms": 900 if cond == "with_skill" else 400,
                }
                rows.append(
                    brain.evidence.unsigned(
                        served,
                        {
                            "task": {"id": case, "digest": "sha256:" + hashlib.sha256(case.encode()).hexdigest()},
                            "score": 1 if ok else 0,
                            "scale": (0, 1),
                            "threshold": 1,
                            "verifier": REF_GRADER,
                            "evidence": f"iteration-1/eval-{case}/{cond}/grading.json",
                            "evidence_digest": "sha256:" + hashlib.sha256(grading).hexdigest(),
                            "eval": run,
                        },
                        "score",
                    )
                )
        brain.evidence.record_runs(rows, f"eval: s v{served.version}")


def _plan(brain, runner: str = REF_RUNNER) -> str:
    from ledger.store.treehash import evals_digest

    digest = evals_digest(brain.store, brain.head().skills["s"])
    _receipt, entry = brain.evidence.add_plan(
        {
            "skill": "s",
            "set": digest,
            "cases": CASES,
            "baseline": "none",
            "runs": 1,
            "runner": {"command": "python -m ledger.evals.refrunner", "id": runner},
            "grader": {"command": "python -m ledger.evals.refgrader", "id": REF_GRADER},
            "min_lift": 0,
        }
    )
    return entry.id.hex()


def test_lift_end_to_end_show_log_status_and_stale(tmp_path, keys) -> None:
    from ledger.brain import Brain

    path = tmp_path / "brain"
    brain = Brain.init(path)
    try:
        _skill(path, "v1: sum the column")
        brain.snapshot(note="s v1")
        address = json.loads(
            run_ledger("--brain", str(path), "keys", "generate", "verifier", "--json", check=True).stdout
        )["address"]
        run_ledger("--brain", str(path), "keys", "trust", "verifier", address, check=True)
    finally:
        brain.close()
    brain = Brain.open(path)
    try:
        plan = _plan(brain)
        _evaluate(brain, passes_with=set(CASES), passes_base=set(), plan=plan)  # v1 helps on every case
        _skill(path, "v2: sum the column, differently")
        brain.snapshot(note="s v2")
        _evaluate(brain, passes_with={"1", "2", "3"}, passes_base={"1", "2", "3", "4"}, plan=plan)  # v2: no help
        _evaluate(brain, passes_with=set(CASES), passes_base=set(), plan=plan, actor="agent")  # self-reported
    finally:
        brain.close()
    B = ("--brain", str(path))
    shown = json.loads(run_ledger(*B, "skill", "show", "s", "--stats", "--json", check=True).stdout)
    v1, v2 = shown["versions"]
    a = v1["lift"]["verified"]
    assert (a["plan"], a["pairs"], a["table"], a["delta"], a["preregistered"], a["stale"]) == (
        plan,
        8,
        [0, 8, 0, 0],
        1.0,
        True,
        False,
    )
    assert a["interval"] == [round(x, 6) for x in newcombe_paired(0, 8, 0, 0)] and a["interval"][0] > 0
    assert (a["time_delta_ms"], a["tokens_delta"], a["regressed"], v1["lift"]["self"]) == (500, 200, [], None)
    b = v2["lift"]["verified"]
    assert (b["table"], b["delta"], b["regressed"]) == ([3, 0, 1, 4], -0.125, ["4"])
    assert v2["lift"]["self"]["delta"] == 1.0  # the agent's own evaluation: its own tier, never summed
    assert v2["verified"]["successes"] + v2["verified"]["failures"] == 8  # competence counts the with_skill runs only
    logged = json.loads(run_ledger(*B, "log", "--stats", "--json", check=True).stdout)
    assert [v["lift"] for v in logged[0]["versions"]] == [v1["lift"], v2["lift"]]
    status = json.loads(run_ledger(*B, "status", "--json", check=True).stdout)
    (flag,) = [r for r in status["regressions"] if r.get("kind") == "lift"]
    assert (flag["skill"], flag["version"], flag["from"], flag["tier"], flag["why"]) == (
        "s",
        2,
        1,
        "verified",
        "below its predecessor's",
    )
    assert flag["revert"] == "ledger revert s --to 1"
    text = run_ledger(*B, "status", check=True).stdout
    assert "lift regressed s v2" in text and "ledger revert s --to 1" in text
    text = run_ledger(*B, "skill", "show", "s", "--stats", check=True).stdout
    assert "+100.0 pts" in text and "pre-registered" in text and "regressed case(s): 4" in text
    assert (
        json.loads(run_ledger(*B, "skill", "show", "s", "--stats", "--json", check=True).stdout) == shown
    )  # from the cache
    run_ledger(*B, "report", "-o", str(tmp_path / "page"), check=True)
    page = (tmp_path / "page" / "index.html").read_text()
    drawn = re.findall(r'<tr data-lift="s" data-v="(\d)" data-tier="(\w+)" data-pre="(\w+)" data-stale="(\w+)">', page)
    assert sorted(drawn) == [("1", "verified", "yes", "no"), ("2", "self", "yes", "no"), ("2", "verified", "yes", "no")]
    row = page[page.index('<tr data-lift="s" data-v="2" data-tier="verified"') :]
    assert "38% vs 50% no skill" in row[: row.index("</tr>")]  # both conditions side by side: 3/8 with, 4/8 without
    # a new plan with another runner: the evidence so far is stale (kept, shown so, never summed with the new)
    brain = Brain.open(path)
    try:
        _plan(brain, runner="claude-code 2.1 / claude-sonnet-4-5")
    finally:
        brain.close()
    again = json.loads(run_ledger(*B, "skill", "show", "s", "--stats", "--json", check=True).stdout)
    assert [v["lift"]["verified"]["stale"] for v in again["versions"]] == [True, True]
    assert [v["lift"]["verified"]["delta"] for v in again["versions"]] == [1.0, -0.125]
    assert run_ledger(*B, "verify").returncode == 0


def test_the_figures_cache_extends_by_each_append_and_equals_a_fresh_count(tmp_path, keys, monkeypatch) -> None:
    """The figures cache (keyed by the log's tree id and the trust set) extended append by append gives what a
    count from scratch gives, byte for byte."""
    from ledger._fs import EVIDENCE_FIGURES, cache_name
    from ledger.brain import Brain
    from ledger.brain import evidence as evmod
    from ledger.brain.evidence import stats_doc

    extended_by: list[bool] = []
    real = evmod._extends
    monkeypatch.setattr(evmod, "_extends", lambda *a: extended_by.append(real(*a)) or extended_by[-1])

    def docs(brain) -> list[dict[str, Any]]:
        per, lifted = brain.evidence.figures()
        return [stats_doc(n, 2, per.get(n, {}), lifted.get(n, {}), None) for n in sorted(set(per) | set(lifted))]

    path = tmp_path / "brain"
    brain = Brain.init(path)
    try:
        _skill(path, "v1")
        brain.snapshot(note="s v1")
        plan = _plan(brain)
        cache = path / ".ledger" / "cache" / cache_name(*EVIDENCE_FIGURES)
        seen = []
        for i in range(3):
            _evaluate(brain, passes_with=set(CASES[: 3 + i]), passes_base=set(CASES[:4]), plan=plan, actor="agent")
            brain.evidence.record("s", result="success", task=f"plain-{i}")  # a plain outcome between evaluations
            if i == 1:
                _skill(path, "v2")
                brain.snapshot(note="s v2")
            seen.append(docs(brain))
            assert int(cache.read_bytes().split(b"\n", 1)[0].split()[2]) == brain.evidence.size()
        extended = cache.read_bytes()
        cache.unlink()
        fresh = Brain.open(path)
        try:
            assert docs(fresh) == seen[-1]
            assert cache.read_bytes() == extended  # byte for byte what the extended cache held
        finally:
            fresh.close()
        v1 = next(v for v in seen[-1][0]["versions"] if v["version"] == 1)
        assert (v1["lift"]["self"]["table"], v1["lift"]["self"]["pairs"]) == ([7, 0, 1, 8], 16)  # two evaluations
        assert seen[0] != seen[1] != seen[2]
        assert extended_by == [True, True]  # rounds 2 and 3 extended the cache by their appends (each round: 2)
    finally:
        brain.close()
