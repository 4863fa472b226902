"""Evaluations (issue 47), the engine: `ledger eval plan|run|import` on the example family, with the reference runner
and grader, the real CLI, real git and real signatures; the agentskills workspace and its JSON shapes, key by key."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ledger.brain import Brain
from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger

FAMILY = Path(__file__).parents[2] / "fixtures" / "eval-family"

# The agentskills guide's own examples ("Evaluating skill output quality"), verbatim: the shapes to match.
GUIDE_BENCHMARK = {
    "run_summary": {
        "with_skill": {
            "pass_rate": {"mean": 0.83, "stddev": 0.06},
            "time_seconds": {"mean": 45.0, "stddev": 12.0},
            "tokens": {"mean": 3800, "stddev": 400},
        },
        "without_skill": {
            "pass_rate": {"mean": 0.33, "stddev": 0.10},
            "time_seconds": {"mean": 32.0, "stddev": 8.0},
            "tokens": {"mean": 2100, "stddev": 300},
        },
        "delta": {"pass_rate": 0.50, "time_seconds": 13.0, "tokens": 1700},
    }
}
GUIDE_GRADING = {
    "assertion_results": [
        {
            "text": "The output includes a bar chart image file",
            "passed": True,
            "evidence": "Found chart.png (45KB) in outputs directory",
        }
    ],
    "summary": {"passed": 3, "failed": 1, "total": 4, "pass_rate": 0.75},
}
GUIDE_TIMING = {"total_tokens": 84852, "duration_ms": 23332}


def _shape(doc: Any) -> Any:
    """A document's shape: its keys (in order) down to the leaves, each leaf's kind (number, text, flag)."""
    if isinstance(doc, dict):
        return [(k, _shape(v)) for k, v in doc.items()]
    if isinstance(doc, list):
        return [_shape(doc[0])] if doc else []
    if isinstance(doc, bool):
        return "flag"
    return "number" if isinstance(doc, (int, float)) else "text"


def verifier_brain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skills: Path) -> Path:
    """A brain holding the skills of ``skills`` (imported as one snapshot), with a trusted verifier key."""
    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    b = make_brain(tmp_path / "brain", via="cli", src=skills)
    address = json.loads(run_ledger("--brain", str(b), "keys", "generate", "verifier", "--json", check=True).stdout)[
        "address"
    ]
    run_ledger("--brain", str(b), "keys", "trust", "verifier", address, check=True)
    return b


@pytest.fixture
def family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A brain holding the example family, with a trusted verifier key."""
    return verifier_brain(tmp_path, monkeypatch, FAMILY)


def _ledger(b: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = run_ledger("--brain", str(b), *args)
    assert proc.returncode == code, f"ledger {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _head(b: Path) -> str:
    return subprocess.run(["git", "-C", str(b), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def _entries(b: Path) -> list[Any]:
    with Brain.open(b) as brain:
        return list(brain.evidence.parsed())


def _records(b: Path, skill: str) -> list[dict[str, Any]]:
    return [e.record for e in _entries(b) if e.kind == "record" and e.record["skill"] == skill]


def test_plan_and_run_the_family_make_the_layout_signed_records_and_signs_right(family: Path, tmp_path: Path) -> None:
    deltas = {}
    for name, runs in (("csv-sum", 1), ("word-count", 2), ("title-case", 1)):
        plan = json.loads(_ledger(family, "eval", "plan", name, "--runs", str(runs), "--json").stdout)
        assert plan["changed"] is True and plan["plan"]["format"] == "brain-ledger/eval-plan/v1"
        cases = json.loads((FAMILY / name / "evals/evals.json").read_text())["evals"]
        assert plan["plan"]["cases"] == [str(c["id"]) for c in cases]
        assert plan["plan"]["runner"]["id"] == "brain-ledger reference-runner 1"
        ws = tmp_path / f"{name}-workspace"
        done = json.loads(_ledger(family, "eval", "run", name, "--workspace", str(ws), "--json").stdout)
        assert done["plan"] == plan["plan"]["id"] and done["iteration"] == 1 and done["operation"] == "outcome"
        # the agentskills layout, every run's three things, run-R folders when runs > 1
        it = ws / "iteration-1"
        for case in cases:
            for cond in ("with_skill", "without_skill"):
                for r in range(runs):
                    run = it / f"eval-{case['id']}" / cond / (f"run-{r + 1}" if runs > 1 else "")
                    assert (run / "outputs").is_dir() and any((run / "outputs").iterdir())
                    assert _shape(json.loads((run / "timing.json").read_text())) == _shape(GUIDE_TIMING)
                    grading = json.loads((run / "grading.json").read_text())
                    assert _shape(grading) == _shape(GUIDE_GRADING)
                    assert [a["text"] for a in grading["assertion_results"]] == case["assertions"]
        assert sorted(p.name for p in it.iterdir()) == ["benchmark.json", *sorted(f"eval-{c['id']}" for c in cases)]
        bench = json.loads((it / "benchmark.json").read_text())
        assert _shape(bench) == _shape(GUIDE_BENCHMARK), bench  # key by key, in the guide's order
        assert bench == done["benchmark"]
        deltas[name] = bench["run_summary"]["delta"]["pass_rate"]
        # one signed v3 record per run, all in ONE batch signed by the verifier, each naming its plan and pair
        records = _records(family, name)
        assert len(records) == len(cases) * 2 * runs
        assert {r["format"] for r in records} == {"brain-ledger/outcome/v3"}
        assert len({r["batch"]["id"] for r in records}) == 1 and records[0]["batch"]["count"] == len(records)
        signers = {r["signer"] for r in records}
        assert len(signers) == 1 and signers != {plan["plan"]["signer"]}  # the verifier's key; the plan, the user's
        grid = {(r["eval"]["case"], r["eval"]["condition"], r["eval"]["run"]) for r in records}
        assert grid == {
            (str(c["id"]), cond, r) for c in cases for cond in ("with_skill", "without_skill") for r in range(runs)
        }
        for r in records:
            e = r["eval"]
            assert e["plan"] == plan["plan"]["id"] and e["set"] == plan["plan"]["set"]
            assert e["arm"] == (r["version"] if e["condition"] == "with_skill" else None)
            graded = (ws / r["evidence"]["uri"]).read_bytes()
            assert r["evidence"]["digest"] == "sha256:" + hashlib.sha256(graded).hexdigest()
            assert r["outcome"]["result"] == "score" and r["outcome"]["threshold"] == r["outcome"]["scale"][1]
    # the signs: csv-sum helps, word-count is neutral, title-case hurts (on cases 2 and 3)
    assert deltas["csv-sum"] > 0 and deltas["word-count"] == 0 and deltas["title-case"] < 0, deltas
    passes = {
        (r["eval"]["case"], r["eval"]["condition"]): r["outcome"]["score"] == r["outcome"]["threshold"]
        for r in _records(family, "title-case")
    }
    regressed = sorted(
        c for c, cond in passes if cond == "without_skill" and passes[c, cond] and not passes[c, "with_skill"]
    )
    assert regressed == ["2", "3"]
    # the ledger's own figures say the same: the paired lift of 'show --stats' (verified tier, pre-registered)
    lifts = {}
    for name in deltas:
        shown = json.loads(_ledger(family, "show", name, "--stats", "--json").stdout)
        lift, mine = shown["versions"][-1]["lift"]["verified"], shown["versions"][-1]["lift"]["self"]
        assert lift["preregistered"] is True and lift["stale"] is False and mine is None
        lo, hi = lift["interval"]
        assert lo <= lift["delta"] <= hi
        lifts[name] = lift
    assert lifts["csv-sum"]["delta"] > 0 and lifts["csv-sum"]["interval"][0] > 0, lifts  # significantly better
    assert lifts["word-count"]["delta"] == 0 and lifts["word-count"]["pairs"] == 6, lifts
    assert lifts["title-case"]["delta"] < 0 and lifts["title-case"]["regressed"] == ["2", "3"], lifts
    audit = json.loads(_ledger(family, "verify", "--json").stdout)
    assert audit["ok"] is True, audit


def test_plan_twice_writes_nothing_and_a_changed_eval_set_needs_a_new_plan(family: Path, tmp_path: Path) -> None:
    # a runner without its declared identity, an identity without its runner, a case with nothing to grade
    assert "--runner needs --runner-id" in _ledger(family, "eval", "plan", "csv-sum", "--runner", "true", code=2).stderr
    assert "declares its own" in _ledger(family, "eval", "plan", "csv-sum", "--grader-id", "me", code=2).stderr
    bare = json.loads((FAMILY / "word-count/evals/evals.json").read_text())
    del bare["evals"][1]["assertions"]
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    _ledger(family, "skill", "write-file", "word-count", "evals/evals.json", "--from", str(tmp_path / "bare.json"))
    assert (
        "case(s) 2 of evals/evals.json have no assertions"
        in _ledger(family, "eval", "plan", "word-count", code=1).stderr
    )
    assert _entries(family) == []
    first = json.loads(_ledger(family, "eval", "plan", "csv-sum", "--json").stdout)
    head, log = _head(family), len(_entries(family))
    again = json.loads(_ledger(family, "eval", "plan", "csv-sum", "--json").stdout)
    assert again == {"changed": False, "plan": first["plan"]}
    assert "nothing was written" in _ledger(family, "eval", "plan", "csv-sum").stdout
    assert (_head(family), len(_entries(family))) == (head, log)
    # the eval set changes (an assertion added): the plan no longer holds, and nothing is run or written
    evals = json.loads((FAMILY / "csv-sum/evals/evals.json").read_text())
    evals["evals"][0]["assertions"].append("answer.txt is one line: `test $(wc -l < answer.txt) -eq 1`")
    (tmp_path / "evals.json").write_text(json.dumps(evals, indent=2))
    _ledger(family, "skill", "write-file", "csv-sum", "evals/evals.json", "--from", str(tmp_path / "evals.json"))
    head, log = _head(family), len(_entries(family))
    refused = _ledger(family, "eval", "run", "csv-sum", "--workspace", str(tmp_path / "ws"), code=1)
    assert "changed eval set need a new plan" in refused.stderr and "ledger eval plan csv-sum" in refused.stderr
    assert (_head(family), len(_entries(family))) == (head, log) and not (tmp_path / "ws").exists()
    # so does another runner than the plan's, or another run count
    for extra in (("--runner", "true"), ("--runs", "3")):
        _ledger(family, "eval", "run", "csv-sum@1", *extra, code=1)
    second = json.loads(_ledger(family, "eval", "plan", "csv-sum", "--json").stdout)
    assert second["changed"] is True and second["plan"]["set"] != first["plan"]["set"]
    done = json.loads(_ledger(family, "eval", "run", "csv-sum", "--workspace", str(tmp_path / "ws"), "--json").stdout)
    assert done["plan"] == second["plan"]["id"] and len(done["runs"]) == 6
    # a version run under an older plan's set is refused too: v1's evals/ is not the current plan's
    assert "changed eval set" in _ledger(family, "eval", "run", "csv-sum@1", code=1).stderr


def test_a_crashed_or_timed_out_run_is_recorded_failed_and_no_child_lives(family: Path, tmp_path: Path) -> None:
    contract = (
        '[ "$PWD" = "$EVAL_INPUTS" ] && test -f lines.txt && [ -n "$EVAL_PROMPT" ] && '
        'test ! -e "${EVAL_SKILL:-/none}/evals" && [ -z "$(ls "$EVAL_OUTPUTS")" ] || exit 9'
    )
    runner = (
        'case "$EVAL_ID" in 1) echo boom >&2; exit 3;; 2) sleep 31.4159 & sleep 31.4159;; '
        f"*) {contract}; python -m ledger.evals.refrunner;; esac"
    )
    _ledger(family, "eval", "plan", "word-count", "--runner", runner, "--runner-id", "flaky test runner 1")
    ws = tmp_path / "ws"
    done = json.loads(
        _ledger(family, "eval", "run", "word-count", "--timeout", "2", "--workspace", str(ws), "--json").stdout
    )
    by = {(r["case"], r["condition"]): r for r in done["runs"]}
    assert len(by) == 6
    assert "exited with status 3: boom" in by["1", "with_skill"]["failure"]
    assert "timed out after 2 s" in by["2", "without_skill"]["failure"]
    assert by["3", "with_skill"]["pass"] and by["3", "without_skill"]["pass"]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 31.4159" not in ps  # the whole process group was stopped, the background child too
    records = {(r["eval"]["case"], r["eval"]["condition"]): r for r in _records(family, "word-count")}
    assert len(records) == 6  # the failed runs are recorded, never dropped
    for key in (("1", "with_skill"), ("1", "without_skill"), ("2", "with_skill"), ("2", "without_skill")):
        assert records[key]["outcome"]["score"] == 0, key
        grading = json.loads((ws / records[key]["evidence"]["uri"]).read_text())
        assert grading["summary"] == {"passed": 0, "failed": 1, "total": 1, "pass_rate": 0.0}
        assert grading["assertion_results"][0]["evidence"].startswith("the runner ")
    assert records["2", "with_skill"]["eval"]["ms"] >= 2000


def _hand_workspace(root: Path, skill: str, cases: list[dict[str, Any]], passed: dict[str, bool]) -> Path:
    """A workspace written by hand in the guide's exact shapes (as skill-creator writes one)."""
    for case in cases:
        folder = root / "iteration-1" / f"eval-{case['id']}"
        if case["id"] == 2:  # skill-creator names a folder for what it tests, and says its id in eval_metadata.json
            folder = root / "iteration-1" / "eval-units-total"
            folder.mkdir(parents=True)
            (folder / "eval_metadata.json").write_text(
                json.dumps({"eval_id": 2, "eval_name": "units-total", "prompt": case["prompt"]})
            )
        for cond in ("with_skill", "without_skill"):
            run = folder / cond
            (run / "outputs").mkdir(parents=True)
            (run / "outputs" / "answer.txt").write_text("42\n")
            ok = passed[cond]
            results = [
                {"text": a, "passed": ok, "evidence": "Found 42 in answer.txt" if ok else "answer.txt holds 3"}
                for a in case["assertions"]
            ]
            n = len(results)
            (run / "grading.json").write_text(
                json.dumps(
                    {
                        "assertion_results": results,
                        "summary": {
                            "passed": n if ok else 0,
                            "failed": 0 if ok else n,
                            "total": n,
                            "pass_rate": 1.0 if ok else 0.0,
                        },
                    },
                    indent=2,
                )
            )
            (run / "timing.json").write_text(json.dumps({"total_tokens": 84852, "duration_ms": 23332}, indent=2))
    return root


def test_import_of_a_hand_written_workspace_and_its_refusals(family: Path, tmp_path: Path) -> None:
    cases = json.loads((FAMILY / "csv-sum/evals/evals.json").read_text())["evals"][:2]
    ws = _hand_workspace(tmp_path / "csv-sum-workspace", "csv-sum", cases, {"with_skill": True, "without_skill": False})
    head, log = _head(family), len(_entries(family))
    # refusals first, each changing nothing: a missing grading.json; a workspace run against another eval set
    moved = ws / "iteration-1/eval-units-total/without_skill/grading.json"
    moved.rename(tmp_path / "aside.json")
    refused = _ledger(family, "eval", "import", str(ws), "--actor", "verifier", "--skill", "csv-sum", code=1)
    assert "eval-units-total/without_skill/grading.json is missing" in refused.stderr
    assert "nothing was recorded" in refused.stderr
    (tmp_path / "aside.json").rename(moved)
    other = "blake3-tree-v1:" + "ab" * 32
    refused = _ledger(
        family, "eval", "import", str(ws), "--actor", "verifier", "--skill", "csv-sum", "--set", other, code=1
    )
    assert f"run against eval set {other}" in refused.stderr
    good = (ws / "iteration-1/eval-1/with_skill/grading.json").read_text()
    bad = json.loads(good)
    bad["summary"]["passed"] = 5
    (ws / "iteration-1/eval-1/with_skill/grading.json").write_text(json.dumps(bad))
    refused = _ledger(family, "eval", "import", str(ws), "--actor", "verifier", "--skill", "csv-sum", code=1)
    assert "is not what its assertion_results say" in refused.stderr
    (ws / "iteration-1/eval-1/with_skill/grading.json").write_text(good)
    # a condition the guide does not name (skill-creator's new_skill/) is refused, never left out
    shutil.copytree(ws / "iteration-1/eval-1/with_skill", ws / "iteration-1/eval-1/new_skill")
    refused = _ledger(family, "eval", "import", str(ws), "--actor", "verifier", "--skill", "csv-sum", code=1)
    assert "new_skill/ is no condition of the guide" in refused.stderr
    shutil.rmtree(ws / "iteration-1/eval-1/new_skill")
    assert (_head(family), len(_entries(family))) == (head, log)
    with Brain.open(family) as brain:
        from ledger.brain.evaluations import Evaluations

        digest = Evaluations(brain).version("csv-sum").set_digest
    done = json.loads(
        _ledger(
            family,
            "eval",
            "import",
            str(ws),
            "--actor",
            "verifier",
            "--skill",
            "csv-sum@1",
            "--set",
            digest,
            "--runner-id",
            "claude-code 2.1 / claude-sonnet-4-5",
            "--json",
        ).stdout
    )
    assert done["plan"] is None and len(done["runs"]) == 4
    assert done["benchmark"]["run_summary"]["delta"] == {"pass_rate": 1.0, "time_seconds": 0.0, "tokens": 0.0}
    records = _records(family, "csv-sum")
    assert len(records) == 4 and {r["eval"]["plan"] for r in records} == {None}
    assert {r["eval"]["runner"] for r in records} == {"claude-code 2.1 / claude-sonnet-4-5"}
    for r in records:
        data = (ws / r["evidence"]["uri"]).read_bytes()
        assert r["evidence"]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
        assert (r["eval"]["tokens"], r["eval"]["ms"]) == (84852, 23332)
    assert json.loads(_ledger(family, "verify", "--json").stdout)["ok"] is True
    shutil.rmtree(ws)


def test_a_previous_baseline_runs_old_skill_and_stale_evidence_is_rerun(family: Path, tmp_path: Path) -> None:
    # title-case v2 keeps acronyms: against v1 (old_skill) it fixes cases 2 and 3
    solve = (
        (FAMILY / "title-case/scripts/solve")
        .read_text()
        .replace("w[:1].upper() + w[1:].lower()", "(w if w.isupper() else w[:1].upper() + w[1:].lower())")
    )
    (tmp_path / "solve").write_text(solve)
    _ledger(
        family, "skill", "write-file", "title-case", "scripts/solve", "--from", str(tmp_path / "solve"), "--executable"
    )
    plan = json.loads(_ledger(family, "eval", "plan", "title-case", "--baseline", "previous", "--json").stdout)
    assert "no earlier version" in _ledger(family, "eval", "run", "title-case@1", code=1).stderr
    assert (
        "not with the skill absent" in _ledger(family, "eval", "run", "title-case", "--baseline", "none", code=1).stderr
    )
    ws = tmp_path / "ws"
    done = json.loads(_ledger(family, "eval", "run", "title-case", "--workspace", str(ws), "--json").stdout)
    assert (done["version"], done["baseline"], done["arm"]) == (2, "old_skill", 1)
    bench = json.loads((ws / "iteration-1/benchmark.json").read_text())
    assert list(bench["run_summary"]) == ["with_skill", "old_skill", "delta"]
    assert bench["run_summary"]["delta"]["pass_rate"] > 0
    assert (ws / "iteration-1/eval-2/old_skill/grading.json").is_file()
    records = _records(family, "title-case")
    assert {(r["version"], r["eval"]["condition"], r["eval"]["arm"]) for r in records} == {
        (2, "with_skill", 2),
        (2, "old_skill", 1),
    }  # the pair belongs to the version under test
    # a new runner identity: a new plan, and the evidence of v2 is stale until it is run again under it
    runner = "python -m ledger.evals.refrunner"
    _ledger(
        family,
        "eval",
        "plan",
        "title-case",
        "--baseline",
        "previous",
        "--runner",
        runner,
        "--runner-id",
        "reference runner, second declaration",
    )
    with Brain.open(family) as brain:
        from ledger.brain.evaluations import Evaluations

        assert Evaluations(brain).stale("title-case") == [2]
    again = json.loads(_ledger(family, "eval", "run", "title-case", "--stale", "--workspace", str(ws), "--json").stdout)
    assert [(r["version"], r["iteration"]) for r in again["rerun"]] == [(2, 2)] and again["plan"] != plan["plan"]["id"]
    assert "nothing stale" in _ledger(family, "eval", "run", "title-case", "--stale").stdout
    assert json.loads(_ledger(family, "verify", "--json").stdout)["ok"] is True


def test_benchmark_figures_are_means_and_sample_deviations_of_the_runs() -> None:
    from ledger.evals.workspace import RunCell, benchmark

    cells = [
        RunCell("with_skill", 1.0, 1500, 100),
        RunCell("with_skill", 0.5, 2500, None),
        RunCell("old_skill", 0.0, 1000, 40),
        RunCell("old_skill", 1 / 3, 1000, 60),
    ]
    rs = benchmark(cells, "old_skill")["run_summary"]
    assert list(rs) == ["with_skill", "old_skill", "delta"]
    assert rs["with_skill"] == {
        "pass_rate": {"mean": 0.75, "stddev": 0.3536},
        "time_seconds": {"mean": 2.0, "stddev": 0.7071},
        "tokens": {"mean": 100.0, "stddev": 0.0},
    }
    assert rs["old_skill"]["pass_rate"] == {"mean": 0.1667, "stddev": 0.2357}
    assert rs["delta"] == {"pass_rate": 0.5833, "time_seconds": 1.0, "tokens": 50.0}  # from unrounded means
