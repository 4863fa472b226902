"""Evaluations (issue 47): the ledger's own overhead per eval run, against the runner's time.

The runner is a no-op that only takes its time (``sleep --sleep``: an agent's run, stripped of the
agent), the grader a no-op that prints a fixed grading.json (``cat "$EVAL_SET/grading.json"``).
``ledger eval run`` (the CLI, a new process: plan lookup, a fresh sandbox per run with the skill
copied in, the env contract, timing.json, grading.json checked and hashed, benchmark.json, every
run signed and recorded as one batch in one ``outcome`` snapshot) of ``--cases`` cases × 2
conditions is measured against the anchor: the same runner and grader commands run the same number
of times by a bare loop (``sh -c`` each, one after the other), measured in the same run.  The ratio
is ledger / anchor (target ≤ 1.05: at most 5 % overhead); the overhead per run is their difference
over the run count.

    .venv/bin/python scripts/bench_evals.py [--cases 10] [--sleep 1.0] [--repeat 3] [--out bench-out/evals.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LEDGER = str(Path(sys.executable).with_name("ledger"))
GRADING = {
    "assertion_results": [{"text": "it ran", "passed": True, "evidence": "a no-op grader"}],
    "summary": {"passed": 1, "failed": 0, "total": 1, "pass_rate": 1.0},
}
GRADER = 'cat "$EVAL_SET/grading.json"'


def _ledger(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LEDGER, *args], check=True, capture_output=True, text=True, env=env)


def _brain(root: Path, cases: int, env: dict[str, str]) -> Path:
    brain = root / "brain"
    _ledger("init", str(brain), env=env)
    skill = root / "src/noop"
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: noop\ndescription: Does nothing, in measured time.\n---\nNothing.\n")
    (skill / "evals/grading.json").write_text(json.dumps(GRADING))
    (skill / "evals/evals.json").write_text(
        json.dumps(
            {
                "skill_name": "noop",
                "evals": [
                    {"id": i + 1, "prompt": f"case {i + 1}", "expected_output": "nothing", "assertions": ["it ran"]}
                    for i in range(cases)
                ],
            }
        )
    )
    _ledger("--brain", str(brain), "import", str(root / "src"), env=env)
    address = json.loads(_ledger("--brain", str(brain), "keys", "generate", "verifier", "--json", env=env).stdout)
    _ledger("--brain", str(brain), "keys", "trust", "verifier", address["address"], env=env)
    return brain


def _anchor(runs: int, runner: str, work: Path) -> float:
    """The runner and the grader, ``runs`` times each, by a bare loop: what the runs cost without the ledger."""
    env = dict(os.environ, EVAL_SET=str(work))
    (work / "grading.json").write_text(json.dumps(GRADING))
    t = time.perf_counter()
    for _ in range(runs):
        subprocess.run(["/bin/sh", "-c", runner], cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["/bin/sh", "-c", GRADER], cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--sleep", type=float, default=1.0, help="seconds the no-op runner takes per run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="bench-out/evals.json")
    args = ap.parse_args()
    runner = f"sleep {args.sleep:g}"
    runs = args.cases * 2
    ledger_s, anchor_s = [], []
    with tempfile.TemporaryDirectory(prefix="bench-evals-") as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
        env["LEDGER_KEYS"] = str(root / "keys")
        brain = _brain(root, args.cases, env)
        _ledger(
            "--brain",
            str(brain),
            "eval",
            "plan",
            "noop",
            "--runner",
            runner,
            "--runner-id",
            "no-op runner",
            "--grader",
            GRADER,
            "--grader-id",
            "no-op grader",
            env=env,
        )
        (root / "anchor").mkdir()
        for i in range(args.repeat):
            anchor_s.append(_anchor(runs, runner, root / "anchor"))
            t = time.perf_counter()
            _ledger(
                "--brain", str(brain), "eval", "run", "noop", "--workspace", str(root / f"ws{i}"), "--json", env=env
            )
            ledger_s.append(time.perf_counter() - t)
    led, anc = statistics.median(ledger_s), statistics.median(anchor_s)
    out = {
        "cases": args.cases,
        "runs": runs,
        "sleep_s": args.sleep,
        "repeat": args.repeat,
        "ledger_s": led,
        "anchor_s": anc,
        "ratio": led / anc,
        "overhead_ms_per_run": (led - anc) / runs * 1000,
        "all_ledger_s": ledger_s,
        "all_anchor_s": anchor_s,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(
        f"eval run, {runs} runs of a {args.sleep:g} s no-op runner: ledger {led:.2f} s, bare loop {anc:.2f} s, "
        f"ratio {led / anc:.3f} (target ≤ 1.05), overhead {out['overhead_ms_per_run']:.1f} ms per run"
    )


if __name__ == "__main__":
    main()
