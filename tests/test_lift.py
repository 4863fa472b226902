"""Lift (issue 47, docs/lineage.md §14.6, ADR 46): Newcombe's paired interval against published worked
examples, and the pairing, tiers, staleness and regression rules over records in the v3 shape."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.evals.lift import lift_regressions, lifts, newcombe_paired, version_json

VERIFIER, AGENT, REVOKED = "0x" + "11" * 20, "0x" + "22" * 20, "0x" + "33" * 20
ROLES = {VERIFIER: "verifier", AGENT: "agent"}
PLAN = "ab" * 32


# ---------------------------------------------------------------- the interval, against published figures


@pytest.mark.parametrize(("table", "published"), [
    # Newcombe RG (1998), "Improved confidence intervals for the difference between binomial proportions based
    # on paired data", Statistics in Medicine 17:2635-2650, Table II, method 10 ("score-based hybrid, no CC"):
    ((36, 12, 2, 0), (0.0569, 0.3404)),  # example (a)
    ((20, 12, 2, 16), (0.0562, 0.3292)),  # example (b): Armitage & Berry's fifty sputum specimens, two media
    # Fagerland, Lydersen & Laake (2014), Statistics in Medicine 33:2850-2875, the Newcombe square-and-add
    # interval (his method 10) of their worked example: airway hyper-responsiveness before and after stem cell
    # transplantation (Bentur et al. 2009).
    ((1, 1, 7, 12), (-0.507, -0.026)),
])  # fmt: skip
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


def rec(case: str, run: int, cond: str, ok: bool, *, skill: str = "s", version: int = 2, signer: str = VERIFIER,
        plan: str | None = PLAN, batch: str = "b1", arm: int | None = None, ms: int = 100, tokens: int | None = 10,
        runner: str = "ref-runner 1", grader: str = "ref-grader 1") -> dict[str, Any]:  # fmt: skip
    """An eval record as §14.10 lays it out (only the members lift reads are filled in faithfully)."""
    if cond == "with_skill":
        arm = version
    return {"format": "brain-ledger/outcome/v3", "skill": skill, "version": version, "signer": signer,
            "batch": {"id": batch, "prev": None, "count": 1, "index": 0},
            "outcome": {"result": "score", "score": 3 if ok else 2, "scale": [0, 3], "threshold": 3},
            "eval": {"plan": plan, "set": "blake3-tree-v1:" + "0" * 64, "case": case, "run": run, "condition": cond,
                     "arm": arm, "runner": runner, "grader": grader, "tokens": tokens, "ms": ms}}  # fmt: skip


def grid(with_: dict[str, list[bool]], base: dict[str, list[bool]], **kw: Any) -> list[dict[str, Any]]:
    out = []
    for case, oks in with_.items():
        for run, ok in enumerate(oks):
            out.append(rec(case, run, "with_skill", ok, **kw))
            out.append(rec(case, run, "without_skill", base[case][run], **{**kw, "ms": 40, "tokens": 4}))
    return out


def test_pairs_by_case_and_run_and_counts_the_table():
    records = grid({"1": [True, True], "2": [True, False], "3": [False, False]},
                   {"1": [False, True], "2": [True, True], "3": [False, True]})  # fmt: skip
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
    records = [rec("1", 0, "with_skill", True), rec("1", 1, "without_skill", False),  # other run index
               rec("2", 0, "with_skill", True), rec("2", 0, "without_skill", False, batch="b2"),  # other evaluation
               rec("3", 0, "with_skill", True), rec("3", 0, "without_skill", False, version=3)]  # other version
    assert lifts(records, ROLES) == {}


def test_tiers_never_summed_and_revoked_keys_withdrawn():
    records = (grid({"1": [True]}, {"1": [False]}) + grid({"1": [False]}, {"1": [False]}, signer=AGENT, batch="b2")
               + grid({"1": [True]}, {"1": [True]}, signer=REVOKED, batch="b3"))  # fmt: skip
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
    new_plan = {"skill": "s", "runner": {"command": "x", "id": "claude-code 2.1 / model-b"},
                "grader": {"command": "g", "id": "ref-grader 1"}}
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
