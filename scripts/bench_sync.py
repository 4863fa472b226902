"""Benchmarks of ``ledger sync`` (issue 22), each a ratio against an anchor measured in the same run.

- **no-op sync**: 4 targets × N skills in step, ``ledger sync`` vs ``git status`` on the brain
  (with an index of its own, in a temporary file, so the brain is not touched); and
  ``ledger sync --no-remote`` (the flag a runtime's hook passes) vs ``ledger sync`` (issue 51: the
  fast path answers both);
- **watch latency**: an edit in a target until its version is on the brain's branch, with
  ``ledger sync --watch`` running (p50, p90);
- **first projection**: M skills into an empty target, ``ledger sync`` vs ``cp -r`` of the
  same files.

Writes ``bench-out/sync.json``.  Usage: scripts/bench_sync.py [--skills N] [--first M] [--edits K]
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

LEDGER = str(Path(sys.executable).with_name("ledger"))
ENV = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}


def _skills(src: Path, n: int) -> None:
    """N skills of three files each, as a runtime's folder holds them."""
    for i in range(n):
        d = src / f"skill-{i:05d}"
        (d / "references").mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: skill-{i:05d}\ndescription: Skill number {i}.\n---\n"
            + f"# Skill {i}\n\nStep one.\n\nStep two.\n" * 8
        )
        (d / "references" / "notes.md").write_text(f"Notes for {i}.\n" * 20)
        (d / "references" / "example.py").write_text(f"print({i})\n" * 10)


def _ledger(brain: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LEDGER, "--brain", str(brain), *args], capture_output=True, text=True, env=ENV, check=check)


def _time(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env or ENV)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def _time_pair(a: list[str], b: list[str], repeat: int) -> tuple[float, float]:
    """Medians of two commands run in turn, so a busy machine slows both alike."""
    runs: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for cmd, out in ((a, runs[0]), (b, runs[1])):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=ENV)
            out.append(time.perf_counter() - t0)
    return statistics.median(runs[0]), statistics.median(runs[1])


def _brain(work: Path, n: int, tag: str = "") -> Path:
    """A brain of ``n`` imported skills; ``tag`` keeps two brains of one size apart (noop and first)."""
    src, brain = work / f"src-{n}{tag}", work / f"brain-{n}{tag}"
    _skills(src, n)
    _ledger(brain.parent, "init", str(brain))
    _ledger(brain, "import", str(src))
    return brain


def noop(work: Path, n: int, repeat: int) -> dict:
    brain = _brain(work, n)
    for t in range(4):
        _ledger(brain, "target", "add", str(work / f"target-{t}"))
    _ledger(brain, "sync")
    time.sleep(1.2)  # past the stat entries' racy window (targetfs.RACY_NS): the next sync re-hashes once
    _ledger(brain, "sync")
    _ledger(brain, "sync")
    sync, no_remote = _time_pair(
        [LEDGER, "--brain", str(brain), "sync"], [LEDGER, "--brain", str(brain), "sync", "--no-remote"], repeat
    )
    index = work / "bench.index"
    genv = {**ENV, "GIT_INDEX_FILE": str(index), "GIT_DIR": str(brain / ".git"), "GIT_WORK_TREE": str(brain)}
    subprocess.run(["git", "read-tree", "HEAD"], check=True, env=genv)
    subprocess.run(["git", "update-index", "-q", "--refresh"], env=genv)
    subprocess.run(["git", "status", "--porcelain"], check=True, capture_output=True, env=genv)
    status = _time(["git", "-c", "core.bare=false", "status", "--porcelain"], repeat, genv)
    return {
        "skills": n,
        "targets": 4,
        "files_per_skill": 3,
        "sync_s": round(sync, 4),
        "git_status_s": round(status, 4),
        "ratio": round(sync / status, 2),
        "target_ratio": 1.5,
        "sync_no_remote_s": round(no_remote, 4),
        "no_remote_ratio": round(no_remote / sync, 2),
        "no_remote_target_ratio": 1.5,
    }


def watch(work: Path, n: int, edits: int) -> dict:
    brain = work / f"brain-{n}"
    ref = brain / ".git" / "refs" / "heads" / "main"
    target = work / "target-0"
    proc = subprocess.Popen(
        [LEDGER, "--brain", str(brain), "sync", "--watch"],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    lat = []
    try:
        time.sleep(3)  # the watcher's first sync
        for i in range(edits):
            before = ref.read_bytes() if ref.exists() else b""
            md = target / f"skill-{i:05d}" / "SKILL.md"
            t0 = time.perf_counter()
            md.write_text(md.read_text() + f"\nEdit {i}.\n")
            while (ref.read_bytes() if ref.exists() else b"") == before:
                if time.perf_counter() - t0 > 30:
                    raise SystemExit(f"watch: edit {i} not recorded in 30 s")
                time.sleep(0.002)
            lat.append(time.perf_counter() - t0)
            time.sleep(0.5)  # let the watcher project the new version before the next edit
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    lat.sort()
    return {
        "skills": n,
        "edits": edits,
        "debounce_s": 0.2,
        "p50_s": round(statistics.median(lat), 3),
        "p90_s": round(lat[int(0.9 * (len(lat) - 1))], 3),
        "max_s": round(lat[-1], 3),
        "target_p50_s": 1.0,
    }


def first(work: Path, m: int, repeat: int) -> dict:
    brain = _brain(work, m, "-first")
    cps, syncs = [], []
    for r in range(repeat):
        dest = work / f"cp-{r}"
        subprocess.run(["sync"], check=True)
        t0 = time.perf_counter()
        subprocess.run(["cp", "-r", str(brain / "skills"), str(dest)], check=True)
        cps.append(time.perf_counter() - t0)
        target = work / f"first-{r}"
        _ledger(brain, "target", "add", str(target), "--name", f"first-{r}")
        subprocess.run(["sync"], check=True)
        t0 = time.perf_counter()
        _ledger(brain, "sync", f"first-{r}")
        syncs.append(time.perf_counter() - t0)
        _ledger(brain, "target", "remove", f"first-{r}")
        shutil.rmtree(dest)
        shutil.rmtree(target)
    sync, cp = statistics.median(syncs), statistics.median(cps)
    return {
        "skills": m,
        "files": 3 * m,
        "sync_s": round(sync, 3),
        "cp_r_s": round(cp, 3),
        "ratio": round(sync / cp, 2),
        "target_ratio": 1.5,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--skills", type=int, default=1000)
    ap.add_argument("--first", type=int, default=10000)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="bench-out/sync.json")
    args = ap.parse_args()
    out: dict = {}
    with scratch_dir(prefix="ledger-bench-sync-") as d:
        work = Path(d)
        out["noop"] = noop(work, args.skills, args.repeat)
        print(json.dumps({"noop": out["noop"]}), flush=True)
        out["watch"] = watch(work, args.skills, args.edits)
        print(json.dumps({"watch": out["watch"]}), flush=True)
        out["first"] = first(work, args.first, max(1, args.repeat // 2))
        print(json.dumps({"first": out["first"]}), flush=True)
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
