"""Outcome evidence (issue 38): recording 100,000 outcomes, --stats at 10,000 skills, the report at
1,000 skills x 10 versions.  Every figure is a ratio against an anchor measured in the same run.

- ``record``: a bulk import of ``--outcomes`` rows (one JSONL, one ``outcome`` snapshot: each row
  signed, checked and appended), against the anchor ``git add && git commit`` of the same rows as
  one plain JSONL file in a git repository (what an unsigned, unchecked log in git costs); then
  one outcome at a time through ``brain.evidence.record`` on that 100k-entry log (median of
  ``--singles``), against one ``git commit`` of a one-line change; and the audit's ``evidence``
  check of the whole log (every signature recovered).
- ``stats``: ``ledger log --stats --json`` and ``ledger show NAME --stats --json`` (the CLI, a
  new process each) on a brain of ``--skills`` skills holding ``--per-skill`` outcomes each,
  against ``ledger skill list --json`` on the same brain.
- ``report``: ``ledger report -o DIR`` on a brain of ``--report-skills`` skills of
  ``--versions`` versions each with outcomes on every version, against ``ledger verify`` of the
  same brain (the audit the report runs first).

    .venv/bin/python scripts/bench_outcomes.py [--outcomes 100000] [--skills 10000] [--per-skill 10]
        [--report-skills 1000] [--versions 10] [--singles 30] [--out bench-out/outcomes.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers

LEDGER = str(Path(sys.executable).with_name("ledger"))
SKILL = "---\nname: {n}\ndescription: Skill {n}, version {v}\n---\nStep {v}: do the thing for {n}.\n"


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _run(*args: str, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([LEDGER, *args], check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _many(brain, names: list[str], version: int) -> None:
    """Write every skill at ``version`` to disk and record them as one snapshot."""
    for n in names:
        d = brain.skills_dir / n
        d.mkdir(parents=True, exist_ok=True)
        text = SKILL.format(n=n, v=version)
        if version > 1:
            text = text.replace("---\nname", f"---\nmetadata:\n  version: {version - 1}\nname", 1)
        (d / "SKILL.md").write_text(text)
    brain.snapshot(note=f"round {version}")


def _rows(names: list[str], per: int, prefix: str) -> list[bytes]:
    return [
        json.dumps({"skill": n, "task": f"{prefix}-{n}-{i}", "success": i % 3 != 0}).encode()
        for n in names
        for i in range(per)
    ]


def bench_record(work: Path, n: int, singles: int, env: dict[str, str]) -> dict:
    from ledger.audit.evidencecheck import check_evidence
    from ledger.audit.verdicts import Report
    from ledger.audit.walk import walk
    from ledger.brain import Brain
    from ledger.store.gitstore import GitStore

    brain = Brain.init(work / "record")
    brain.create("s", "The s skill", "body\n")
    rows = [
        json.dumps(
            {
                "skill": "s",
                "task": f"t{i}",
                "success": i % 4 != 0,
                "verifier": "suite",
                "evidence": f"https://ci.example/{i}",
            }
        ).encode()
        for i in range(n)
    ]
    with brain.acting("agent"):
        bulk = _timed(lambda: brain.evidence.import_lines(rows))
    assert brain.evidence.size() == n
    plain = work / "plain"
    plain.mkdir()
    _git(plain, "init", "-q")
    (plain / "log.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    anchor = _timed(lambda: (_git(plain, "add", "-A"), _git(plain, "commit", "-qm", "log")))
    one, commit = [], []
    with brain.acting("agent"):
        for i in range(singles):
            one.append(_timed(lambda i=i: brain.evidence.record("s", result="success", task=f"single-{i}")))
            (plain / "log.jsonl").open("ab").write(rows[i] + b"\n")
            commit.append(_timed(lambda: (_git(plain, "add", "-A"), _git(plain, "commit", "-qm", "one"))))
    import hashlib

    from ledger.protocol.signing import recover, sign

    secret = hashlib.sha256(b"bench").digest()
    digests = [hashlib.sha256(b"%d" % i).digest() for i in range(n)]
    signatures: list[str] = []
    sign_floor = _timed(lambda: signatures.extend(sign(secret, d) for d in digests))  # the crypto floor
    recover_floor = _timed(lambda: [recover(d, s) for d, s in zip(digests, signatures, strict=True)])
    store = GitStore(brain.root)
    report = Report(repo=str(brain.root))
    walked = walk(store, report, None, (), None)
    audit = _timed(lambda: check_evidence(store, walked, report))
    assert report.checks["evidence"].ok, report.checks["evidence"].summary
    brain.close()
    return {
        "outcomes": n,
        "bulk_import_s": bulk,
        "per_outcome_us": bulk / n * 1e6,
        "git_commit_jsonl_s": anchor,
        "bulk_vs_git": bulk / anchor,
        "single_record_s": statistics.median(one),
        "single_git_commit_s": statistics.median(commit),
        "single_vs_git": statistics.median(one) / statistics.median(commit),
        "audit_evidence_s": audit,
        "audit_per_outcome_us": audit / (n + singles) * 1e6,
        "sign_floor_s": sign_floor,
        "bulk_vs_sign": bulk / sign_floor,
        "recover_floor_s": recover_floor,
        "audit_vs_recover": audit / recover_floor * n / (n + singles),
    }


def bench_stats(work: Path, skills: int, per: int, env: dict[str, str]) -> dict:
    from ledger.brain import Brain

    brain = Brain.init(work / "stats")
    names = [f"skill-{i:05d}" for i in range(skills)]
    _many(brain, names, 1)
    with brain.acting("agent"):
        brain.evidence.import_lines(_rows(names, per, "a"))
    brain.close()
    b = ("--brain", str(work / "stats"))
    _run(*b, "skill", "list", "--json", env=env)  # warm the caches, as a second run finds them
    anchor = statistics.median(_run(*b, "skill", "list", "--json", env=env) for _ in range(3))
    log_stats = statistics.median(_run(*b, "log", "--stats", "--json", env=env) for _ in range(3))
    show = statistics.median(
        _run(*b, "skill", "show", names[skills // 2], "--stats", "--json", env=env) for _ in range(3)
    )
    return {
        "skills": skills,
        "outcomes": skills * per,
        "log_stats_s": log_stats,
        "show_stats_s": show,
        "skill_list_s": anchor,
        "log_stats_vs_list": log_stats / anchor,
        "show_stats_vs_list": show / anchor,
    }


def bench_report(work: Path, skills: int, versions: int, env: dict[str, str]) -> dict:
    from ledger.brain import Brain

    brain = Brain.init(work / "report")
    names = [f"skill-{i:04d}" for i in range(skills)]
    for v in range(1, versions + 1):
        _many(brain, names, v)
        with brain.acting("agent"):
            brain.evidence.import_lines(_rows(names, 2, f"v{v}"))
    brain.close()
    b = ("--brain", str(work / "report"))
    verify = _run(*b, "verify", env=env)
    page = _run(*b, "report", "-o", str(work / "page"), env=env)
    size = (work / "page" / "index.html").stat().st_size
    return {
        "skills": skills,
        "versions": versions,
        "outcomes": skills * versions * 2,
        "report_s": page,
        "verify_s": verify,
        "report_vs_verify": page / verify,
        "html_bytes": size,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--outcomes", type=int, default=100_000)
    ap.add_argument("--singles", type=int, default=30)
    ap.add_argument("--skills", type=int, default=10_000)
    ap.add_argument("--per-skill", type=int, default=10)
    ap.add_argument("--report-skills", type=int, default=1000)
    ap.add_argument("--versions", type=int, default=10)
    ap.add_argument("--out", default="bench-out/outcomes.json")
    args = ap.parse_args()
    with scratch_dir("bench-outcomes-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "LEDGER_KEYS": str(work / "keys")}
        os.environ["LEDGER_KEYS"] = env["LEDGER_KEYS"]
        out = {
            "record": bench_record(work, args.outcomes, args.singles, env),
            "stats": bench_stats(work, args.skills, args.per_skill, env),
            "report": bench_report(work, args.report_skills, args.versions, env),
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    r, s, p = out["record"], out["stats"], out["report"]
    print(
        f"record  {r['outcomes']:,} outcomes by bulk import: {r['bulk_import_s']:.1f} s "
        f"({r['per_outcome_us']:.0f} µs each; {r['bulk_vs_git']:.1f}× git add+commit of the same JSONL, "
        f"{r['git_commit_jsonl_s']:.2f} s)"
    )
    print(
        f"        one outcome on a {r['outcomes']:,}-entry log: {r['single_record_s'] * 1e3:.1f} ms "
        f"({r['single_vs_git']:.2f}× one git commit, {r['single_git_commit_s'] * 1e3:.1f} ms)"
    )
    print(f"        {r['bulk_vs_sign']:.1f}× signing the same number of digests alone ({r['sign_floor_s']:.1f} s)")
    print(
        f"        audit of the log: {r['audit_evidence_s']:.1f} s ({r['audit_per_outcome_us']:.0f} µs an outcome; "
        f"{r['audit_vs_recover']:.1f}× recovering as many signatures alone)"
    )
    print(
        f"stats   {s['skills']:,} skills, {s['outcomes']:,} outcomes: log --stats {s['log_stats_s']:.2f} s "
        f"({s['log_stats_vs_list']:.1f}× skill list, {s['skill_list_s']:.2f} s); show --stats "
        f"{s['show_stats_s']:.2f} s ({s['show_stats_vs_list']:.1f}×)"
    )
    print(
        f"report  {p['skills']:,} skills × {p['versions']} versions, {p['outcomes']:,} outcomes: "
        f"{p['report_s']:.1f} s ({p['report_vs_verify']:.2f}× verify, {p['verify_s']:.1f} s); "
        f"{p['html_bytes'] / 1e6:.1f} MB of HTML"
    )


if __name__ == "__main__":
    main()
