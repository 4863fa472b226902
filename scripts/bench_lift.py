"""Lift at scale (issue 47): ``ledger show NAME --stats`` with lift on a brain of ``--skills`` skills holding
``--runs`` signed evaluation runs (v3 records: each skill's evaluation pre-registered by a plan, every case
run once with the skill and once without, one batch a skill), against ``ledger skill list`` on the same brain.

Both are the CLI, a new process each, medians of ``--repeat`` after one warm-up run of each (as a second
look finds the caches: the figures cache is keyed by the log's tree id and the trust set, so the first
``show --stats`` on a new log computes, and is reported apart as ``cold``; the first after one more
evaluation is appended extends the cache by its runs, reported as ``after_append``).  The anchor is
``skill list --json`` (as bench_outcomes.py's ``log --stats`` row); plain ``skill list`` is recorded too.

    .venv/bin/python scripts/bench_lift.py [--skills 10000] [--runs 100000] [--repeat 5]
        [--out bench-out/lift.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers

LEDGER = str(Path(sys.executable).with_name("ledger"))
SKILL = "---\nname: {n}\ndescription: Skill {n}\n---\nSum the column of {n}.\n"
RUNNER, GRADER = "brain-ledger reference-runner 1", "brain-ledger reference-grader 1"


def _run(*args: str, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([LEDGER, *args], check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def build(root: Path, skills: int, runs: int) -> tuple[str, int]:
    """A brain of ``skills`` skills with an ``evals/`` each, and ``runs`` eval runs appended as one snapshot."""
    from ledger.brain import Brain
    from ledger.store import outcomes as oc
    from ledger.store.treehash import evals_digest

    cases_per = max(1, runs // skills // 2)
    cases = [str(c) for c in range(1, cases_per + 1)]
    brain = Brain.init(root)
    names = [f"skill-{i:05d}" for i in range(skills)]
    evals = json.dumps(
        {
            "skill_name": "x",
            "evals": [
                {"id": int(c), "prompt": f"case {c}", "expected_output": c, "assertions": [f"`test -s out{c}`"]}
                for c in cases
            ],
        }
    )
    for n in names:
        d = brain.skills_dir / n
        (d / "evals").mkdir(parents=True)
        (d / "SKILL.md").write_text(SKILL.format(n=n))
        (d / "evals" / "evals.json").write_text(evals.replace('"x"', json.dumps(n)))
    brain.snapshot(note="skills")
    entries: list[oc.Entry] = []
    with brain.acting("agent"):
        ev = brain.evidence
        key = ev._key()
        head = brain.head()
        plans, batches, prev = [], [], None
        for i, n in enumerate(names):
            served = ev.served(n)
            digest = evals_digest(brain.store, head.skills[n])
            plan = oc.make_plan(
                brain=ev.genesis,
                skill=n,
                set=digest,
                cases=cases,
                baseline="none",
                runs=1,
                runner={"command": "python -m ledger.evals.refrunner", "id": RUNNER},
                grader={"command": "python -m ledger.evals.refgrader", "id": GRADER},
                min_lift=0,
                signer=key.address,
            )
            entry = oc.sign_body("plan", plan, key.secret, key.address)
            plans.append(entry)
            rows = []
            for c in cases:
                for cond in ("with_skill", "without_skill"):
                    ok = (cond == "with_skill") != (int(c) + i) % 3 == 0
                    run = {
                        "plan": entry.id.hex(),
                        "set": digest,
                        "case": c,
                        "run": 0,
                        "condition": cond,
                        "arm": served.version if cond == "with_skill" else None,
                        "runner": RUNNER,
                        "grader": GRADER,
                        "tokens": 100,
                        "ms": 50,
                    }
                    rows.append(
                        ev.unsigned(
                            served,
                            {
                                "task": {"id": c, "digest": "sha256:" + hashlib.sha256(c.encode()).hexdigest()},
                                "score": int(ok),
                                "scale": (0, 1),
                                "threshold": 1,
                                "verifier": GRADER,
                                "evidence": f"iteration-1/eval-{c}/{cond}/grading.json",
                                "evidence_digest": "sha256:" + hashlib.sha256(f"{n}{c}{cond}".encode()).hexdigest(),
                                "eval": run,
                            },
                            "score",
                        )
                    )
            signed = oc.sign_batch(rows, key.secret, prev=prev)
            prev = signed[-1].batch["id"]
            batches += signed
        entries = plans + batches
        ev.append(entries, "eval: every skill")
    count = len(batches)
    brain.close()
    return names[skills // 2], count


def one_more(root: Path, name: str) -> None:
    """One more evaluation of ``name`` (every case with and without, one batch): what a user's next
    ``eval run`` appends; the figures cache then extends by its runs alone."""
    from ledger.brain import Brain
    from ledger.store.treehash import evals_digest

    brain = Brain.open(root)
    try:
        with brain.acting("agent"):
            ev = brain.evidence
            served = ev.served(name)
            digest = evals_digest(brain.store, brain.head().skills[name])
            plan = next(p for p in ev.plans(name)).id.hex()
            cases = json.loads((brain.skills_dir / name / "evals" / "evals.json").read_text())["evals"]
            rows = []
            for case in (str(c["id"]) for c in cases):
                for cond in ("with_skill", "without_skill"):
                    run = {
                        "plan": plan,
                        "set": digest,
                        "case": case,
                        "run": 0,
                        "condition": cond,
                        "arm": served.version if cond == "with_skill" else None,
                        "runner": RUNNER,
                        "grader": GRADER,
                        "tokens": 100,
                        "ms": 50,
                    }
                    rows.append(
                        ev.unsigned(
                            served,
                            {
                                "task": {"id": case, "digest": "sha256:" + hashlib.sha256(case.encode()).hexdigest()},
                                "score": 1,
                                "scale": (0, 1),
                                "threshold": 1,
                                "verifier": GRADER,
                                "evidence": f"iteration-2/eval-{case}/{cond}/grading.json",
                                "evidence_digest": "sha256:" + hashlib.sha256(f"2{case}{cond}".encode()).hexdigest(),
                                "eval": run,
                            },
                            "score",
                        )
                    )
            ev.record_runs(rows, f"eval: {name} again")
    finally:
        brain.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skills", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="bench-out/lift.json")
    args = ap.parse_args()
    with scratch_dir("bench-lift-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "LEDGER_KEYS": str(work / "keys")}
        os.environ["LEDGER_KEYS"] = env["LEDGER_KEYS"]
        t = time.perf_counter()
        name, runs = build(work / "brain", args.skills, args.runs)
        built = time.perf_counter() - t
        b = ("--brain", str(work / "brain"))
        cold = _run(*b, "skill", "show", name, "--stats", "--json", env=env)
        shown = json.loads(
            subprocess.run(
                [LEDGER, *b, "skill", "show", name, "--stats", "--json"], check=True, capture_output=True, env=env
            ).stdout
        )
        assert shown["versions"][0]["lift"]["self"]["pairs"] == runs // args.skills // 2, shown
        _run(*b, "skill", "list", "--json", env=env)
        _run(*b, "skill", "list", env=env)
        anchor = statistics.median(_run(*b, "skill", "list", "--json", env=env) for _ in range(args.repeat))
        plain = statistics.median(_run(*b, "skill", "list", env=env) for _ in range(args.repeat))
        show = statistics.median(
            _run(*b, "skill", "show", name, "--stats", "--json", env=env) for _ in range(args.repeat)
        )
        text = statistics.median(_run(*b, "skill", "show", name, "--stats", env=env) for _ in range(args.repeat))
        one_more(work / "brain", name)
        after = _run(*b, "skill", "show", name, "--stats", "--json", env=env)
    out = {
        "skills": args.skills,
        "runs": runs,
        "build_s": built,
        "show_stats_cold_s": cold,
        "show_stats_s": show,
        "show_stats_after_append_s": after,
        "show_stats_text_s": text,
        "skill_list_json_s": anchor,
        "skill_list_s": plain,
        "show_vs_list": show / anchor,
        "show_vs_plain_list": show / plain,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(
        f"lift    {args.skills:,} skills, {runs:,} eval runs: show --stats --json {show * 1e3:.0f} ms "
        f"({out['show_vs_list']:.2f}× skill list --json, {anchor * 1e3:.0f} ms; {out['show_vs_plain_list']:.2f}× "
        f"skill list, {plain * 1e3:.0f} ms); cold {cold * 1e3:.0f} ms, after one more evaluation "
        f"{after * 1e3:.0f} ms; built in {built:.0f} s"
    )


if __name__ == "__main__":
    main()
