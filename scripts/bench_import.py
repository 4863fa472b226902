"""Import throughput on a 200-skill collection against `cp -r` plus `git add -A && git commit`, in one run.

The collection is tests/fixtures.agentskills with fillers: the awkward skills (binaries,
a 150,000-character SKILL.md, a 2 MiB reference, CRLF) plus plain ones, 200 in all.
Usage: .venv/bin/python scripts/bench_import.py [--skills N] [--repeat K]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers

from tests.harness import brains as fixtures

LEDGER = str(Path(sys.executable).with_name("ledger"))
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skills", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with scratch_dir() as d:
        work = Path(d)
        src = fixtures.agentskills(work / "src", fillers=args.skills - 5)
        n = len(fixtures.skill_folders(src))
        size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
        ledger_t, git_t = [], []
        for i in range(args.repeat):
            brain = work / f"brain{i}"
            subprocess.run([LEDGER, "init", str(brain)], check=True, capture_output=True)
            ledger_t.append(
                timed(
                    lambda b=brain: subprocess.run(
                        [LEDGER, "--brain", str(b), "import", str(src)], check=True, capture_output=True
                    )
                )
            )
            repo = work / f"git{i}"
            subprocess.run(["git", "init", "-q", str(repo)], check=True)
            git_t.append(
                timed(
                    lambda r=repo: (
                        shutil.copytree(src, r / "skills"),
                        subprocess.run(
                            "git add -A && git commit -qm import", shell=True, cwd=r, check=True, env=GIT_ENV
                        ),
                    )
                )
            )
        lt, gt = statistics.median(ledger_t), statistics.median(git_t)
        print(f"{n} skills, {size / 1e6:.1f} MB, median of {args.repeat}")
        print(f"  ledger import            {lt * 1000:7.0f} ms   {n / lt:6.0f} skills/s   {size / 1e6 / lt:6.1f} MB/s")
        print(f"  cp -r + git add/commit   {gt * 1000:7.0f} ms   {n / gt:6.0f} skills/s   {size / 1e6 / gt:6.1f} MB/s")
        print(f"  ratio                    {lt / gt:.2f}x")


if __name__ == "__main__":
    main()
