"""Core benchmarks: full hash vs b3sum, upsert latency vs `git add -A && git commit`.

Each figure is the median of K runs; every target is a ratio against an anchor
measured in the same run on the same files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers

from ledger.brain import Brain

LEDGER = str(Path(sys.executable).with_name("ledger"))
BODY = "".join(
    f"Step {j}: check the oracle's heartbeat, deviation threshold and TWAP window before trusting it.\n"
    for j in range(20)
)


def skill_text(i: int) -> str:
    return f"---\nname: skill-{i:05d}\ndescription: Benchmark skill number {i}\nmetadata:\n  version: '1'\n---\n" + BODY


def make_brain(root: Path, n: int) -> Brain:
    brain = Brain.init(root)
    for i in range(n):
        d = brain.skills_dir / f"skill-{i:05d}"
        d.mkdir()
        (d / "SKILL.md").write_text(skill_text(i))
    t = time.perf_counter()
    brain.snapshot("bulk import")
    print(f"  generated {n} skills, first snapshot {time.perf_counter() - t:.2f}s", file=sys.stderr)
    return brain


def median_time(fn, k: int) -> float:
    times = []
    for _ in range(k):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def git_baseline(src: Path, work: Path, k: int) -> float:
    """`git add -A && git commit` of a one-file change, in an ordinary repo with an index."""
    shutil.copytree(src, work / "skills")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run("git add -A && git commit -qm init", shell=True, cwd=work, check=True, env=env)
    target = work / "skills" / "skill-00042" / "SKILL.md"
    counter = iter(range(10**6))

    def one() -> None:
        with open(target, "a") as fh:
            fh.write(f"edit {next(counter)}\n")
        subprocess.run("git add -A && git commit -qm edit", shell=True, cwd=work, check=True, env=env)

    one()  # warm the index and page cache
    return median_time(one, k)


def inprocess_upsert(brain: Brain, k: int) -> float:
    counter = iter(range(10**6))
    state = {"old": "Step 3:"}

    def one() -> None:
        new = f"Step 3 (rev {next(counter)}):"
        brain.patch("skill-00042", state["old"], new)
        state["old"] = new

    one()
    return median_time(one, k)


def cli_patch(root: Path, k: int) -> float:
    counter = iter(range(10**6))
    state = {"old": "Step 5:"}

    def one() -> None:
        new = f"Step 5 (cli {next(counter)}):"
        subprocess.run(
            [LEDGER, "--brain", str(root), "skill", "patch", "skill-00042", "--old", state["old"], "--new", new],
            check=True,
            capture_output=True,
        )
        state["old"] = new

    one()
    return median_time(one, k)


def audit_bench(tmp: Path, snapshots: int, skills: int) -> dict[str, float]:
    """Time `ledger audit` on a lineage of `snapshots` snapshots over a `skills`-skill brain."""
    brain = make_brain(tmp / "audit", skills)
    t = time.perf_counter()
    for i in range(snapshots - 2):  # init and the bulk import are the first two
        name = f"skill-{(i * 7919) % skills:05d}"
        text = (brain.skills_dir / name / "SKILL.md").read_text()
        old = text[text.index("Step 0:") : text.index("\n", text.index("Step 0:"))]
        brain.patch(name, old, f"Step 0: revision {i}.")
    print(f"  {snapshots} snapshots written in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    brain.close()
    t = time.perf_counter()
    proc = subprocess.run([LEDGER, "audit", str(brain.root)], capture_output=True, text=True)
    audit_s = time.perf_counter() - t
    assert proc.returncode == 0, proc.stdout + proc.stderr
    t = time.perf_counter()
    proc = subprocess.run([LEDGER, "--brain", str(brain.root), "verify"], capture_output=True, text=True)
    verify_s = time.perf_counter() - t
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {"audit_snapshots": snapshots, "audit_skills": skills, "audit_s": audit_s, "verify_s": verify_s}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit-only", action="store_true", help="Only the 1,000 x 1,000 audit benchmark.")
    ap.add_argument("--audit-snapshots", type=int, default=1000)
    ap.add_argument("--audit-skills", type=int, default=1000)
    ap.add_argument("--skills", type=int, default=10_000)
    ap.add_argument("--small", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--out", default="bench-out/core.json")
    args = ap.parse_args()
    k = args.repeat
    res: dict[str, float] = {}
    if args.audit_only:
        with scratch_dir() as tmp:
            res = audit_bench(Path(tmp), args.audit_snapshots, args.audit_skills)
        print(
            f"\naudit of {res['audit_snapshots']} snapshots x {res['audit_skills']} skills: "
            f"ledger audit {res['audit_s']:.2f}s, ledger verify {res['verify_s']:.2f}s"
        )
        return
    with scratch_dir() as tmp:
        tmp_p = Path(tmp)
        print(f"== {args.small} skills", file=sys.stderr)
        small = make_brain(tmp_p / "small", args.small)
        res["upsert_small_s"] = inprocess_upsert(small, k)
        small.close()

        print(f"== {args.skills} skills", file=sys.stderr)
        big = make_brain(tmp_p / "big", args.skills)
        files = [str(p) for p in sorted((big.skills_dir).rglob("*")) if p.is_file()]
        listing = tmp_p / "files.txt"
        listing.write_text("\0".join(files))
        res["files"], res["skills"] = len(files), args.skills
        res["bytes"] = sum(os.path.getsize(f) for f in files)
        b3 = lambda: subprocess.run(f"xargs -0 b3sum < {listing} > /dev/null", shell=True, check=True)  # noqa: E731
        lh = lambda: subprocess.run([LEDGER, "hash", str(big.root)], check=True, capture_output=True)  # noqa: E731
        b3(), lh()  # warm the page cache for both
        res["b3sum_s"] = median_time(b3, k)
        res["ledger_hash_s"] = median_time(lh, k)
        res["upsert_big_s"] = inprocess_upsert(big, k)
        big.close()
        res["cli_patch_s"] = cli_patch(big.root, k)
        (tmp_p / "git").mkdir()
        res["git_add_commit_s"] = git_baseline(big.skills_dir, tmp_p / "git", k)

    ratios = {
        "hash_vs_b3sum": (res["ledger_hash_s"] / res["b3sum_s"], 1.0),
        "upsert_vs_git": (res["upsert_big_s"] / res["git_add_commit_s"], 0.25),
        "upsert_10k_vs_100": (res["upsert_big_s"] / res["upsert_small_s"], 2.0),
        "cli_patch_vs_git": (res["cli_patch_s"] / res["git_add_commit_s"], 1.5),
    }
    print(f"\n{res['files']} files, {res['bytes'] / 1e6:.1f} MB, median of {k} runs")
    for key in ("b3sum_s", "ledger_hash_s", "git_add_commit_s", "upsert_small_s", "upsert_big_s", "cli_patch_s"):
        print(f"  {key:18} {res[key] * 1000:9.1f} ms")
    print()
    for name, (value, target) in ratios.items():
        verdict = "PASS" if value <= target else "MISS"
        print(f"  {name:18} {value:6.3f}x   target <= {target}x   {verdict}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"results": res, "ratios": {k: v[0] for k, v in ratios.items()}}, indent=2))


if __name__ == "__main__":
    main()
