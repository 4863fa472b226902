"""A real agent runtime as the eval runner (issue 47): the PyPI ``hermes-agent`` (its own venv, as in
tests/interop/test_hermes_compare.py) runs headless through ``ledger.evals.runners.hermes`` against a scripted
model on a local OpenAI-compatible endpoint (tests/harness/scriptedmodel.py).  "With the skill" goes through
Hermes itself: the runner installs the skill into a fresh HERMES_HOME, Hermes lists it in the system
prompt it sends, the model calls Hermes's ``skill_view``, and Hermes's answer (the skill's text, with its
own ``${HERMES_SKILL_DIR}`` filled in) is what the model follows.  Without the skill nothing is listed and
the model's first turn differs.  Everything the test checks is read from what Hermes sent the endpoint.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ledger.brain import Brain
from ledger.evals.runners import hermes as hermes_runner
from tests.harness.cli import run_ledger
from tests.harness.scriptedmodel import ScriptedModel, endpoint, listed_skills, skill_policy
from tests.harness.wait import TimedOut, until
from tests.interop.test_hermes_compare import _hermes_python

REPO = Path(__file__).resolve().parents[2]
MARKER = "Sum with the bundled script, never by eye."
SKILL_MD = f"""---
name: csv-sum
description: Sum the amount column of a CSV file exactly.
---
{MARKER}

```sh
python3 ${{HERMES_SKILL_DIR}}/scripts/solve data.csv
```
"""
SOLVE = """import csv, os, sys
rows = list(csv.DictReader(open(sys.argv[1])))
total = sum(int(r["amount"]) for r in rows)
open(os.path.join(os.environ["EVAL_OUTPUTS"], "total.txt"), "w").write(f"{total}\\n")
"""
NAIVE = 'wc -l < data.csv > "$EVAL_OUTPUTS/total.txt"'  # a guess: counts lines, not amounts
PROMPT = "What is the total of the amount column of data.csv? Write it to total.txt."
DATA = "name,amount\na,3\nb,4\nc,35\n"


def _skill(root: Path) -> Path:
    skill = root / "csv-sum"
    (skill / "scripts").mkdir(parents=True)
    (skill / "evals").mkdir()
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "scripts" / "solve").write_text(SOLVE)
    (skill / "evals" / "evals.json").write_text('{"skill_name": "csv-sum", "evals": []}\n')
    return skill


def _run(tmp: Path, hermes: Path, base_url: str, skill: Path | None) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One run under the eval runner contract, as the engine sets it up."""
    inputs, outputs, timing = tmp / "inputs", tmp / "outputs", tmp / "timing.json"
    inputs.mkdir(parents=True)
    (inputs / "data.csv").write_text(DATA)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_")}
    env.update(
        EVAL_INPUTS=str(inputs),
        EVAL_PROMPT=PROMPT,
        EVAL_ID="1",
        EVAL_OUTPUTS=str(outputs),
        EVAL_TIMING=str(timing),
        HOME=str(tmp / "home"),
    )
    if skill is not None:
        env["EVAL_SKILL"] = str(skill)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ledger.evals.runners.hermes",
            "--hermes",
            str(hermes),
            "--base-url",
            base_url,
            "--model",
            "scripted",
            "--timeout",
            "240",
        ],
        cwd=inputs,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc, tmp


def test_hermes_runner_loads_the_skill_through_hermes(tmp_path: Path) -> None:
    hermes = _hermes_python().parent / "hermes"
    skill = _skill(tmp_path / "skill")
    seen: dict[str, ScriptedModel] = {}
    for arm, folder in (("with", skill), ("without", None)):
        model = seen[arm] = ScriptedModel(skill_policy(NAIVE))
        with endpoint(model) as url:
            proc, run = _run(tmp_path / arm, hermes, url, folder)
        assert proc.returncode == 0, (arm, proc.stdout[-2000:], proc.stderr[-2000:])
        timing = json.loads((run / "timing.json").read_text())
        assert timing["total_tokens"] == model.total_tokens() > 0, (timing, model.usage)  # the endpoint's usage
        assert timing["duration_ms"] > 0
    with_, without = seen["with"], seen["without"]
    # With the skill: Hermes listed it, the model called Hermes's skill_view, and Hermes answered with the
    # skill's text from its own skills folder (${HERMES_SKILL_DIR} filled in by Hermes), which the model ran.
    assert listed_skills(with_.requests[0]["messages"]) == ["csv-sum"]
    calls = with_.calls()
    assert calls[0] == ("skill_view", {"name": "csv-sum"})
    loaded = json.loads(with_.tool_results()[0])
    assert MARKER in loaded["content"] and "${HERMES_SKILL_DIR}" not in loaded["content"]
    home = Path(loaded["skill_dir"]).parent.parent  # the run's own HERMES_HOME, made fresh by the runner
    assert home.name == "hermes-home" and home.parent.name.startswith("ledger-hermes-") and not home.exists()
    assert calls[1] == ("terminal", {"command": f"python3 {loaded['skill_dir']}/scripts/solve data.csv"})
    assert (tmp_path / "with" / "outputs" / "total.txt").read_text() == "42\n"
    # Without: nothing listed, no skill text anywhere in what Hermes sent, a different first turn and output.
    assert listed_skills(without.requests[0]["messages"]) == []
    assert without.calls()[0] == ("terminal", {"command": NAIVE})
    assert all(MARKER not in json.dumps(r) for r in without.requests)
    assert (tmp_path / "without" / "outputs" / "total.txt").read_text().strip() == "4"


def test_the_installed_skill_leaves_out_the_eval_set(tmp_path: Path) -> None:
    skill = _skill(tmp_path / "skill")
    (skill / "references").mkdir()
    (skill / "references" / "evals").write_text("a file named evals below the top stays\n")
    args = argparse.Namespace(base_url="http://127.0.0.1:9/v1", provider=None, model="m", max_turns=5)
    home = hermes_runner.make_home(tmp_path / "run", args, skill)
    installed = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    assert installed == [
        "config.yaml",
        "skills/csv-sum/SKILL.md",
        "skills/csv-sum/references/evals",
        "skills/csv-sum/scripts/solve",
    ]
    assert (home / "config.yaml").read_text() == (
        'model:\n  provider: "custom"\n  base_url: "http://127.0.0.1:9/v1"\n  default: "m"\nagent:\n  max_turns: 5\n'
    )


def test_hermes_runner_refuses_outside_the_contract(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_")}
    proc = subprocess.run(
        [sys.executable, "-m", "ledger.evals.runners.hermes", "--hermes", sys.executable],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "EVAL_PROMPT is not set" in proc.stderr, proc.stderr
    env.update(EVAL_PROMPT="p", EVAL_OUTPUTS=str(tmp_path / "o"), EVAL_TIMING=str(tmp_path / "t.json"))
    proc = subprocess.run(
        [sys.executable, "-m", "ledger.evals.runners.hermes", "--hermes", str(tmp_path / "nope")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "no Hermes program" in proc.stderr, proc.stderr
    assert not (tmp_path / "t.json").exists()


FAMILY = REPO / "tests" / "fixtures" / "eval-family"
CSV_NAIVE = 'cat *.csv | wc -l > "$EVAL_OUTPUTS/answer.txt"'  # a guess without the skill: a line count


def test_ledger_eval_run_with_hermes_as_the_runner(tmp_path: Path) -> None:
    """`ledger eval plan/run` end to end with Hermes as the runner, on the example family's csv-sum: every case
    with the skill goes through Hermes's skill_view of the installed csv-sum, and passes; without it Hermes
    lists no skill, the model guesses, and the sums are wrong.  Each run's timing.json holds the tokens the
    endpoint reported for that run's conversation."""
    hermes = _hermes_python().parent / "hermes"
    brain = tmp_path / "b"
    env = {"HOME": str(tmp_path / "home"), "LEDGER_KEYS": str(tmp_path / "keys")}
    run_ledger("init", str(brain), check=True, env=env)
    run_ledger("--brain", str(brain), "import", str(FAMILY), check=True, env=env)
    address = json.loads(
        run_ledger("--brain", str(brain), "keys", "generate", "verifier", "--json", check=True, env=env).stdout
    )["address"]
    run_ledger("--brain", str(brain), "keys", "trust", "verifier", address, check=True, env=env)
    model = ScriptedModel(skill_policy(CSV_NAIVE), limit=40)
    cases = json.loads((FAMILY / "csv-sum/evals/evals.json").read_text())["evals"]
    body = (FAMILY / "csv-sum/SKILL.md").read_text().split("---\n", 2)[2]
    with endpoint(model) as url:
        runner = f"python -m ledger.evals.runners.hermes --hermes {hermes} --base-url {url} --model scripted"
        run_ledger(
            "--brain",
            str(brain),
            "eval",
            "plan",
            "csv-sum",
            "--runner",
            runner,
            "--runner-id",
            "hermes-agent 0.19.0 / scripted",
            check=True,
            env=env,
        )
        proc = run_ledger(
            "--brain",
            str(brain),
            "eval",
            "run",
            "csv-sum",
            "--runner",
            runner,
            "--workspace",
            str(tmp_path / "ws"),
            "--timeout",
            "240",
            "--json",
            env=env,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = json.loads(proc.stdout)
    runs = {(r["case"], r["condition"]): r for r in done["runs"]}
    assert len(runs) == 2 * len(cases) and all(r["failure"] is None for r in runs.values()), done["runs"]
    for case in cases:
        key = str(case["id"])
        assert runs[key, "with_skill"]["pass"], runs[key, "with_skill"]
        assert not runs[key, "without_skill"]["pass"], runs[key, "without_skill"]
    # What Hermes sent the endpoint: one conversation per run, in the grid's order (case, with, without).
    talks = model.conversations()
    assert len(talks) == len(runs)
    for (messages, tokens), r in zip(talks, done["runs"], strict=True):
        user = next(m["content"] for m in messages if m["role"] == "user")
        assert user.startswith(next(c["prompt"] for c in cases if str(c["id"]) == r["case"]))
        timing = json.loads((tmp_path / "ws" / r["grading"].replace("grading.json", "timing.json")).read_text())
        assert timing["total_tokens"] == r["tokens"] == tokens, (r, timing, tokens)
        if r["condition"] == "with_skill":
            assert listed_skills(messages) == ["csv-sum"]
            loaded = json.loads(next(m["content"] for m in messages if m["role"] == "tool"))
            assert loaded["name"] == "csv-sum" and body.strip() in loaded["content"]
        else:
            assert listed_skills(messages) == []
            assert all(body.strip() not in str(m.get("content")) for m in messages)
            called = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()]
            assert called == ["terminal"], called
    # The signed records: one batch, each run's eval member naming Hermes and the tokens the endpoint reported.
    with Brain.open(brain) as b:
        evals = [e.record["eval"] for e in b.evidence.parsed() if e.kind == "record" and e.record.get("eval")]
    assert [(e["case"], e["condition"], e["tokens"]) for e in evals] == [
        (r["case"], r["condition"], tokens) for r, (_, tokens) in zip(done["runs"], talks, strict=True)
    ]
    assert {e["runner"] for e in evals} == {"hermes-agent 0.19.0 / scripted"}


def _holding(marker: str) -> list[int]:
    """The processes whose environment holds ``marker`` (Hermes and its children inherit the runner's)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_hermes_runner_stops_hermes_at_its_timeout_and_on_sigterm(tmp_path: Path) -> None:
    """A model that never answers: the runner's --timeout stops Hermes (a failed run, timing.json still
    written); and the engine's SIGTERM (how `ledger eval run` ends a run at its own timeout) stops it too."""
    hermes = _hermes_python().parent / "hermes"
    asked, release = threading.Event(), threading.Event()

    def hang(messages: list[dict[str, object]]) -> dict[str, object]:
        asked.set()
        release.wait(120)
        return {"role": "assistant", "content": "too late"}

    model = ScriptedModel(hang)
    try:
        with endpoint(model) as url:
            for how in ("timeout", "sigterm"):
                run = tmp_path / how
                inputs = run / "inputs"
                inputs.mkdir(parents=True)
                marker = f"stop-{how}-{os.getpid()}-{tmp_path.name}"
                env = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_")}
                env.update(
                    EVAL_PROMPT=PROMPT,
                    EVAL_ID=marker,
                    EVAL_OUTPUTS=str(run / "outputs"),
                    EVAL_TIMING=str(run / "timing.json"),
                    HOME=str(run / "home"),
                )
                asked.clear()
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "ledger.evals.runners.hermes",
                        "--hermes",
                        str(hermes),
                        "--base-url",
                        url,
                        "--model",
                        "scripted",
                        "--timeout",
                        "20" if how == "timeout" else "600",
                    ],
                    cwd=inputs,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                assert asked.wait(120), "Hermes never called the endpoint"
                assert _holding(marker), "Hermes is not running under the runner"
                if how == "sigterm":
                    proc.send_signal(signal.SIGTERM)
                _, err = proc.communicate(timeout=120)
                assert proc.returncode == 1, (how, err[-2000:])
                if how == "timeout":
                    assert "did not finish in 20 s" in err
                    assert json.loads((run / "timing.json").read_text())["total_tokens"] is None
                with contextlib.suppress(TimedOut):  # the assert below says what outlived what
                    until(lambda m=marker: not _holding(m), timeout=10, what="Hermes to end with its runner")
                assert not _holding(marker), f"{how}: Hermes outlived the runner"
    finally:
        release.set()
