"""What `ledger commit` pays to recompute roots from git objects before anchoring (ADR 5).

For a brain of N skills it times, in process and with an empty in-memory cache:
one pending snapshot (a full hash of the tree from git objects), and a batch of
32 pending snapshots (the first full, then one changed skill each), against the
in-process upsert that made them.  Usage: .venv/bin/python scripts/anchor_cost.py [N …]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import make_brain
from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers

from ledger.store import treehash as th


def recompute(brain, commits: list[bytes]) -> float:
    t = time.perf_counter()
    for _ in th.recompute_roots(brain.store, commits):
        pass
    return time.perf_counter() - t


def main(sizes: list[int]) -> None:
    print("| skills | upsert (in-process, median of 32) | recompute 1 pending | recompute 32 pending |")
    print("|---|---|---|---|")
    for n in sizes:
        with scratch_dir() as d:
            brain = make_brain(Path(d) / "b", n)
            times, commits = [], []
            for i in range(32):
                t = time.perf_counter()
                r = brain.patch(f"skill-{i * 7 % n:05d}", "Step 0:", f"Step 0 ({i}):")
                times.append(time.perf_counter() - t)
                commits.append(bytes.fromhex(r.commit))
            one = min(recompute(brain, commits[-1:]) for _ in range(3))
            batch = min(recompute(brain, commits) for _ in range(3))
            upsert = sorted(times)[len(times) // 2]
            print(f"| {n:,} | {upsert * 1000:.1f} ms | {one * 1000:.0f} ms | {batch * 1000:.0f} ms |")
            brain.close()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10000])
