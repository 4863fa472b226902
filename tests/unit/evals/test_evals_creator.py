"""Evaluations (issue 47): `ledger eval import` of a workspace as Anthropic's skill-creator writes it.

skill-creator (github.com/anthropics/skills, skills/skill-creator: references/schemas.md, agents/grader.md,
scripts/aggregate_benchmark.py, SKILL.md "Running and evaluating test cases") names the guide's `assertions`
`expectations` (in evals.json and in grading.json, whose other members are execution_metrics, timing, claims,
user_notes_summary, eval_feedback), writes timing.json with more members than the guide's two, an
eval_metadata.json in each eval folder (which may be named for what it tests), and run-N folders (aggregate) or
none (SKILL.md). Each shape below is copied from those files; the numbers are made consistent.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ledger.brain import Brain
from tests.unit.evals.test_evals_engine import _ledger, verifier_brain

SKILL_MD = """---
name: report-totals
description: Total the amount column of a CSV report and write the total to answer.txt.
---
# Report totals

Add the last column of every row after the header and write the total to `answer.txt`.
"""
# references/schemas.md "evals.json", ids from 0 as SKILL.md's eval-0, eval-1 folders
CASES = [
    {
        "id": 0,
        "prompt": "What's the total in sample1.csv? Put it in answer.txt.",
        "expected_output": "answer.txt holds 42.",
        "files": ["evals/files/sample1.csv"],
        "expectations": ["The output includes answer.txt", "answer.txt holds 42", "The skill's rule was followed"],
    },
    {
        "id": 1,
        "prompt": "sum the amounts of sample1.csv into answer.txt, no header",
        "expected_output": "answer.txt holds 42 and nothing else.",
        "files": ["evals/files/sample1.csv"],
        "expectations": ["answer.txt holds 42", "answer.txt holds one line"],
    },
]


def _skill(root: Path, cases: list[dict[str, Any]], name: str = "report-totals") -> Path:
    skill = root / name
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD.replace("report-totals", name))
    (skill / "evals" / "files" / "sample1.csv").write_text("item,amount\na,40\nb,2\n")
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": name, "evals": cases}, indent=2))
    return root


@pytest.fixture
def brain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A brain holding the skill (its evals.json in skill-creator's dialect), with a trusted verifier key."""
    return verifier_brain(tmp_path, monkeypatch, _skill(tmp_path / "skills", CASES))


def _state(b: Path) -> tuple[str, int]:
    head = subprocess.run(["git", "-C", str(b), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    with Brain.open(b) as brain:
        return head, len(list(brain.evidence.parsed()))


def _records(b: Path) -> list[dict[str, Any]]:
    with Brain.open(b) as brain:
        return [e.record for e in brain.evidence.parsed() if e.kind == "record"]


def _grading(texts: list[str], passed: list[bool]) -> dict[str, Any]:
    """agents/grader.md's grading.json, every member, in its order."""
    n, ok = len(texts), sum(passed)
    return {
        "expectations": [
            {"text": t, "passed": p, "evidence": "Found in answer.txt" if p else "answer.txt holds 3"}
            for t, p in zip(texts, passed, strict=True)
        ],
        "summary": {"passed": ok, "failed": n - ok, "total": n, "pass_rate": round(ok / n, 2)},
        "execution_metrics": {
            "tool_calls": {"Read": 5, "Write": 2, "Bash": 8},
            "total_tool_calls": 15,
            "total_steps": 6,
            "errors_encountered": 0,
            "output_chars": 12450,
            "transcript_chars": 3200,
        },
        "timing": {
            "executor_duration_seconds": 165.0,
            "grader_duration_seconds": 26.0,
            "total_duration_seconds": 191.0,
        },
        "claims": [
            {"claim": "The total is 42", "type": "factual", "verified": True, "evidence": "40 + 2 in sample1.csv"}
        ],
        "user_notes_summary": {
            "uncertainties": ["Used 2023 data, may be stale"],
            "needs_review": [],
            "workarounds": [],
        },
        "eval_feedback": {
            "suggestions": [{"assertion": texts[0], "reason": "A hallucinated file would pass"}],
            "overall": "Assertions check presence but not correctness.",
        },
    }


TIMING = {
    "total_tokens": 84852,
    "duration_ms": 23332,
    "total_duration_seconds": 23.3,
    "executor_start": "2026-01-15T10:30:00Z",
    "executor_end": "2026-01-15T10:32:45Z",
    "executor_duration_seconds": 165.0,
    "grader_start": "2026-01-15T10:32:46Z",
    "grader_end": "2026-01-15T10:33:12Z",
    "grader_duration_seconds": 26.0,
}

# (folder name, case id, run folder or "" for SKILL.md's layout) -> condition -> each expectation's verdict
RUNS = {
    ("eval-0", 0, "run-1"): {"with_skill": [True, True, True], "without_skill": [True, False, True]},
    ("eval-spreadsheet-totals", 1, ""): {"with_skill": [True, False], "without_skill": [False, False]},
}


def _workspace(root: Path) -> Path:
    """`<skill>-workspace/` as skill-creator leaves it: skill-snapshot/, iteration-1/ with benchmark.json and
    benchmark.md, eval folders with eval_metadata.json, runs with outputs/ (metrics.json, user_notes.md)."""
    (root / "skill-snapshot").mkdir(parents=True)
    (root / "skill-snapshot" / "SKILL.md").write_text(SKILL_MD)
    it = root / "iteration-1"
    it.mkdir()
    (it / "benchmark.json").write_text(json.dumps({"metadata": {"skill_name": "report-totals"}, "runs": []}))
    (it / "benchmark.md").write_text("# Skill Benchmark: report-totals\n")
    (root / "feedback.json").write_text(json.dumps({"reviews": [], "status": "complete"}))
    for (folder, case_id, run), conds in RUNS.items():
        case = CASES[case_id]
        d = it / folder
        d.mkdir()
        (d / "eval_metadata.json").write_text(
            json.dumps(
                {
                    "eval_id": case_id,
                    "eval_name": folder[5:],
                    "prompt": case["prompt"],
                    "assertions": case["expectations"],
                },
                indent=2,
            )
        )
        for cond, verdicts in conds.items():
            r = d / cond / run if run else d / cond
            (r / "outputs").mkdir(parents=True)
            (r / "outputs" / "answer.txt").write_text("42\n")
            (r / "outputs" / "metrics.json").write_text(
                json.dumps({"tool_calls": {"Read": 5}, "total_tool_calls": 5, "files_created": ["answer.txt"]})
            )
            (r / "outputs" / "user_notes.md").write_text("Used 2023 data, may be stale\n")
            (r / "timing.json").write_text(json.dumps(TIMING, indent=2))
            (r / "grading.json").write_text(json.dumps(_grading(case["expectations"], verdicts), indent=2))
    return root


def test_a_skill_creator_workspace_imports_with_its_verdicts_and_hashes(brain: Path, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "report-totals-workspace")
    # lint reads `expectations` but tells the author the guide's name: a warning, the skill stays valid
    linted = _ledger(brain, "lint", "report-totals")
    assert "warning: evals/evals.json: eval 0: 'expectations' is skill-creator's name" in linted.stdout
    assert "calls it 'assertions'" in linted.stdout and "INVALID" not in linted.stdout
    done = json.loads(
        _ledger(
            brain,
            "eval",
            "import",
            str(ws),
            "--actor",
            "verifier",
            "--skill",
            "report-totals",
            "--runner-id",
            "claude-code 2.1 / claude-sonnet-4-5",
            "--grader-id",
            "skill-creator grader / claude-sonnet-4-5",
            "--json",
        ).stdout
    )
    assert done["plan"] is None and done["baseline"] == "without_skill" and len(done["runs"]) == 4
    records = _records(brain)
    assert len(records) == 4
    got = {(r["eval"]["case"], r["eval"]["condition"]): r for r in records}
    for (folder, case_id, run), conds in RUNS.items():
        case = CASES[case_id]
        jcs = json.dumps(case, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        for cond, verdicts in conds.items():
            r = got[(str(case_id), cond)]
            assert r["task"] == {"id": str(case_id), "digest": "sha256:" + hashlib.sha256(jcs).hexdigest()}
            assert r["outcome"] == {
                "result": "score",
                "score": sum(verdicts),
                "scale": [0, len(verdicts)],
                "threshold": len(verdicts),
            }
            # the path as found: a run-1 folder or none (single run); a descriptive eval folder's name kept
            assert r["evidence"]["uri"] == "/".join(p for p in ("iteration-1", folder, cond, run, "grading.json") if p)
            data = (ws / r["evidence"]["uri"]).read_bytes()
            assert b'"expectations"' in data and b'"eval_feedback"' in data
            assert r["evidence"]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
            assert (r["eval"]["run"], r["eval"]["tokens"], r["eval"]["ms"]) == (0, 84852, 23332)
            assert r["eval"]["arm"] == (r["version"] if cond == "with_skill" else None)
            assert r["verifier"] == r["eval"]["grader"] == "skill-creator grader / claude-sonnet-4-5"
    passes = {k: r["outcome"]["score"] == r["outcome"]["threshold"] for k, r in got.items()}
    assert passes == {
        ("0", "with_skill"): True,
        ("0", "without_skill"): False,
        ("1", "with_skill"): False,
        ("1", "without_skill"): False,
    }
    assert json.loads(_ledger(brain, "verify", "--json").stdout)["ok"] is True


def test_ambiguous_skill_creator_input_is_refused_and_changes_nothing(brain: Path, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "report-totals-workspace")
    before = _state(brain)
    # a grading.json holding both the guide's assertion_results and skill-creator's expectations
    g = ws / "iteration-1/eval-0/with_skill/run-1/grading.json"
    good = g.read_bytes()
    both = json.loads(good)
    both["assertion_results"] = [dict(e, passed=False) for e in both["expectations"]]
    g.write_text(json.dumps(both))
    refused = _ledger(brain, "eval", "import", str(ws), "--actor", "verifier", "--skill", "report-totals", code=1)
    assert "holds both 'assertion_results' and 'expectations'" in refused.stderr
    g.write_bytes(good)
    # an eval folder named for one case whose eval_metadata.json names another
    meta = ws / "iteration-1/eval-0/eval_metadata.json"
    meta.write_text(json.dumps({"eval_id": 1, "eval_name": "0", "prompt": CASES[1]["prompt"], "assertions": []}))
    refused = _ledger(brain, "eval", "import", str(ws), "--actor", "verifier", "--skill", "report-totals", code=1)
    assert "eval-0 is case 0, but its eval_metadata.json says eval_id 1" in refused.stderr
    assert _state(brain) == before and _records(brain) == []
    # an evals.json case with both `assertions` and `expectations`: lint calls it invalid, import refuses it
    bad = [dict(CASES[0], assertions=["answer.txt holds 42"]), CASES[1]]
    _ledger(brain, "import", str(_skill(tmp_path / "more", bad, "both-keys")))
    linted = _ledger(brain, "lint", "both-keys", code=1)
    assert "eval 0: both 'assertions' and 'expectations'" in linted.stdout
    before = _state(brain)
    refused = _ledger(brain, "eval", "import", str(ws), "--actor", "verifier", "--skill", "both-keys", code=1)
    assert "both 'assertions' and 'expectations'" in refused.stderr
    assert _state(brain) == before and _records(brain) == []


def test_a_skill_creator_eval_set_plans_and_runs_but_the_run_writes_and_takes_the_guides_shapes(
    brain: Path, tmp_path: Path
) -> None:
    # the grader gets the `expectations` as $EVAL_ASSERTIONS and prints grading.json under the key in `key`
    key = tmp_path / "key"
    grader = (
        'python -c \'import json, os; a = json.load(open(os.environ["EVAL_ASSERTIONS"])); '
        f'print(json.dumps({{open("{key}").read(): [{{"text": t, "passed": True, "evidence": "ok"}} '
        'for t in a], "summary": {"passed": len(a), "failed": 0, "total": len(a), "pass_rate": 1}}))\''
    )
    runner = 'echo 42 > "$EVAL_OUTPUTS/answer.txt"'
    _ledger(
        brain,
        "eval",
        "plan",
        "report-totals",
        "--runner",
        runner,
        "--runner-id",
        "echo 1",
        "--grader",
        grader,
        "--grader-id",
        "inline 1",
    )
    ws = tmp_path / "ws"
    key.write_text("expectations")  # skill-creator's dialect is for import; a run's grader prints the guide's
    before = _state(brain)
    refused = _ledger(brain, "eval", "run", "report-totals", "--workspace", str(ws), code=1)
    assert "lacks 'assertion_results'" in refused.stderr and "nothing was recorded" in refused.stderr
    assert _state(brain) == before
    key.write_text("assertion_results")
    done = json.loads(_ledger(brain, "eval", "run", "report-totals", "--workspace", str(ws), "--json").stdout)
    assert len(done["runs"]) == 4 and all(r["pass"] for r in done["runs"])
    it = ws / f"iteration-{done['iteration']}"
    graded = json.loads((it / "eval-0/with_skill/grading.json").read_text())
    assert [r["text"] for r in graded["assertion_results"]] == CASES[0]["expectations"]
    assert list(json.loads((it / "benchmark.json").read_text())) == ["run_summary"]
    assert sorted(json.loads((it / "eval-1/without_skill/timing.json").read_text())) == ["duration_ms", "total_tokens"]
    assert json.loads(_ledger(brain, "verify", "--json").stdout)["ok"] is True
