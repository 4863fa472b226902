"""Lifetime benchmarks (issue 12): storage growth, chain-free latency, reads at scale, bulk writes, 100k skills.

Every target is a ratio against an anchor measured in the same run on the same files.
Writes ``bench-out/lifetime.json``; ``scripts/bench_report.py`` turns it into
``docs/BENCHMARKS.md`` and the plot.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import make_brain, median_time, skill_text  # scripts/ is on sys.path when run as a script
from scratch import remove_brain, scratch_dir, wait_for_packer  # scripts/scratch.py: waits for the packers

from ledger.brain import Brain
from ledger.chain import anvil
from ledger.store import statcache
from ledger.store.packing import store_size

LEDGER = str(Path(sys.executable).with_name("ledger"))
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd)


def cli_time(k: int, *args: str, env: dict[str, str] | None = None) -> float:
    run(*args, env=env)  # warm
    return median_time(lambda: run(*args, env=env), k)


def git_repo_of(skills: Path, work: Path) -> Path:
    """An ordinary git repository (with an index) holding the same files, for `git status` anchors."""
    shutil.copytree(skills, work / "skills")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run("git add -A && git commit -qm init", shell=True, cwd=work, check=True, env=GIT_ENV)
    return work


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def settle(brain: Brain) -> None:
    """Wait for a detached packer to finish (it holds .ledger/gc.lock)."""
    wait_for_packer(brain.root)


def storage_and_latency(tmp: Path, skills: int, upserts: int) -> dict:
    """`.git` size and upsert latency over `upserts` one-line upserts on a `skills`-skill brain."""
    brain = make_brain(tmp / "life", skills)
    settle(brain)
    lat, sizes = [], []
    for i in range(upserts):
        name = f"skill-{(i * 7919) % skills:05d}"
        t = time.perf_counter()
        brain.patch(name, "Step 7:", f"Step 7 (rev {i}):")
        lat.append(time.perf_counter() - t)
        if i % 25 == 0 or i == upserts - 1:
            sizes.append((i + 1, store_size(brain.store.git_dir)["bytes"]))
    settle(brain)
    final = store_size(brain.store.git_dir)
    brain.close()
    copy = tmp / "aggressive.git"
    shutil.copytree(brain.store.git_dir, copy)
    subprocess.run(["git", f"--git-dir={copy}", "gc", "-q", "--aggressive", "--prune=now"], check=True)
    aggressive = store_size(copy)["bytes"]
    lat_sorted = sorted(lat)
    p = lambda q: lat_sorted[min(len(lat_sorted) - 1, int(q * len(lat_sorted)))]  # noqa: E731
    return {
        "skills": skills,
        "upserts": upserts,
        "git_bytes": final["bytes"],
        "git_packs": final["packs"],
        "git_loose": final["loose"],
        "aggressive_bytes": aggressive,
        "p50_s": p(0.50),
        "p99_s": p(0.99),
        "max_s": max(lat),
        "size_series": sizes,
        "brain": str(brain.root),
    }


def chain_free(tmp: Path, brain_root: Path, k: int) -> dict:
    """status with a chain configured and its RPC down, against no chain; `chain anchor` with nothing to commit."""
    out: dict = {}
    out["status_no_chain_s"] = cli_time(k, LEDGER, "--brain", str(brain_root), "status")
    cfg_path = brain_root / ".ledger" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["chain"] = {"rpc": f"http://127.0.0.1:{anvil.free_port()}"}
    cfg_path.write_text(json.dumps(cfg))
    out["status_rpc_down_s"] = cli_time(k, LEDGER, "--brain", str(brain_root), "status")
    node_dir = tmp / "anvil"
    node = anvil.start(node_dir, persist=False, lifetime=1800)
    try:
        steps = (
            ["chain", "use", node.url],
            ["chain", "deploy"],
            ["chain", "register"],
            ["chain", "anchor", "--batch", "100"],
        )
        for step in steps:
            proc = run(LEDGER, "--brain", str(brain_root), *step)
            assert proc.returncode == 0, (step, proc.stderr)
        # `ledger chain anchor` (before issue 52, `ledger commit`: the old spelling also prints a warning)
        out["commit_nothing_s"] = cli_time(k, LEDGER, "--brain", str(brain_root), "chain", "anchor")
        assert "nothing to commit" in run(LEDGER, "--brain", str(brain_root), "chain", "anchor").stdout
    finally:
        anvil.stop(node_dir)
    return out


def past_racy_window(skills: Path) -> None:
    """Wait until every path under ``skills`` is older than the stat cache's racy window.

    The stat cache stores no skill modified within two seconds of being read ("racily clean",
    ledger/store/statcache.py), so until then ``status``, ``skill list`` and ``index`` go to click,
    every call.  On a fast machine the reads below began inside that window after the upserts,
    and the clean-status figure flipped between the two paths from run to run (122 ms or 36 ms).
    """
    newest = max(p.lstat().st_mtime_ns for p in (skills, *skills.rglob("*")))
    wait = (newest + statcache._RACY_NS - time.time_ns()) / 1e9
    if wait > 0:
        time.sleep(wait + 0.05)


def reads(tmp: Path, brain_root: Path, k: int) -> dict:
    repo = git_repo_of(brain_root / "skills", tmp / "gitcopy")
    past_racy_window(brain_root / "skills")  # figures of a clean brain at rest, not of one just written
    out = {"git_status_s": cli_time(k, "git", "-C", str(repo), "status", "--porcelain")}
    for name, args in (("status_s", ["status"]), ("list_s", ["skill", "list"]), ("index_s", ["index"])):
        out[name] = cli_time(k, LEDGER, "--brain", str(brain_root), *args)
    return out


def bulk(tmp: Path, skills: int, rounds: int = 3) -> dict:
    """First snapshot and import of `skills` hand-copied skills, against `git add -A && git commit`.

    Each is timed `rounds` times on fresh copies (median), after a `sync`: the copies just made are
    gigabytes of dirty pages, and whichever command meets the kernel's writeback pays for them.
    """
    src = tmp / "bulk-src"
    for i in range(skills):
        d = src / f"skill-{i:05d}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(skill_text(i))
    times: dict[str, list[float]] = {"git": [], "cp_git": [], "snapshot": [], "import": []}
    for r in range(rounds):
        gitwork, snap, imp = tmp / f"bulk-git-{r}", tmp / f"bulk-brain-{r}", tmp / f"import-brain-{r}"
        cpwork = tmp / f"bulk-cp-git-{r}"
        shutil.copytree(src, gitwork / "skills")
        subprocess.run(["git", "init", "-q", str(gitwork)], check=True)
        subprocess.run(["git", "init", "-q", str(cpwork)], check=True)
        run(LEDGER, "init", str(snap))
        shutil.copytree(src, snap / "skills", dirs_exist_ok=True)
        run(LEDGER, "init", str(imp))
        for key, cmd, cwd in (
            ("git", ["sh", "-c", "git add -A && git commit -qm bulk"], gitwork),
            # an import copies the files in as well: its anchor copies them, then adds and commits (issue 35)
            ("cp_git", ["sh", "-c", f"cp -r '{src}' skills && git add -A && git commit -qm bulk"], cpwork),
            ("snapshot", [LEDGER, "--brain", str(snap), "snapshot"], None),
            ("import", [LEDGER, "--brain", str(imp), "import", str(src)], None),
        ):
            subprocess.run(["sync"], check=True)
            t = time.perf_counter()
            proc = run(*cmd, env=GIT_ENV, cwd=cwd)
            times[key].append(time.perf_counter() - t)
            assert proc.returncode == 0, proc.stderr
        for path in (gitwork, cpwork, snap, imp):
            remove_brain(path)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    return {
        "bulk_skills": skills,
        "bulk_rounds": rounds,
        "git_add_commit_bulk_s": med["git"],
        "cp_git_add_commit_bulk_s": med["cp_git"],
        "first_snapshot_s": med["snapshot"],
        "import_s": med["import"],
        "bulk_times": times,
    }


def scale(tmp: Path, big: int, small: int, k: int) -> dict:
    """In-process upsert at `big` against `small` skills; peak RSS of a CLI upsert at `big`."""
    out: dict = {"scale_big": big, "scale_small": small, "curve": []}
    for n in sorted(x for x in {small, 1000, 10_000, big} if x <= big):
        brain = make_brain(tmp / f"scale-{n}", n)
        state = {"i": 0, "old": "Step 9:"}
        one = _patcher(brain, state)
        one()
        t = median_time(one, k)
        out["curve"].append((n, t))
        settle(brain)
        brain.close()
        if n == big:
            cmd = [
                "/usr/bin/time",
                "-f",
                "%M",
                LEDGER,
                "--brain",
                str(brain.root),
                "skill",
                "patch",
                "skill-00042",
                "--old",
                state["old"],
                "--new",
                "Step 9 (cli):",
            ]
            proc = run(*cmd)
            assert proc.returncode == 0, proc.stderr
            out["cli_upsert_rss_mb"] = int(proc.stderr.strip().splitlines()[-1]) / 1024
        settle(brain)
        remove_brain(tmp / f"scale-{n}")
    out["upsert_small_s"] = out["curve"][0][1]
    out["upsert_big_s"] = out["curve"][-1][1]
    return out


def _patcher(brain: Brain, state: dict):
    def one() -> None:
        new = f"Step 9 (rev {state['i']}):"
        state["i"] += 1
        brain.patch("skill-00042", state["old"], new)
        state["old"] = new

    return one


def verify_gc(tmp: Path, snapshots: int, skills: int) -> dict:
    """`ledger verify` on `snapshots` snapshots x `skills` skills, before and after `ledger gc --full`."""
    brain = make_brain(tmp / "verify", skills)
    brain.update_config(gc={"every": 0})  # no background packing: "before" means loose
    brain.close()
    brain = Brain.open(tmp / "verify")
    for i in range(snapshots - 2):
        name = f"skill-{(i * 7919) % skills:05d}"
        text = (brain.skills_dir / name / "SKILL.md").read_text()
        old = text[text.index("Step 0:") : text.index("\n", text.index("Step 0:"))]
        brain.patch(name, old, f"Step 0: revision {i}.")
    brain.close()
    verify = lambda: run(LEDGER, "--brain", str(brain.root), "verify")  # noqa: E731
    before = median_time(verify, 3)
    proc = run(LEDGER, "--brain", str(brain.root), "gc", "--full")
    assert proc.returncode == 0, proc.stderr
    after = median_time(verify, 3)
    assert verify().returncode == 0
    return {
        "verify_snapshots": snapshots,
        "verify_skills": skills,
        "verify_before_gc_s": before,
        "verify_after_gc_s": after,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skills", type=int, default=10_000)
    ap.add_argument("--upserts", type=int, default=1000)
    ap.add_argument("--big", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--verify-snapshots", type=int, default=1000)
    ap.add_argument("--verify-skills", type=int, default=1000)
    ap.add_argument("--out", default="bench-out/lifetime.json")
    args = ap.parse_args()
    res: dict = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "git": run("git", "--version").stdout.strip(),
        }
    }
    with scratch_dir() as tmp_s:
        tmp = Path(tmp_s)
        print(f"== storage: {args.upserts} upserts on {args.skills} skills", file=sys.stderr)
        life = storage_and_latency(tmp, args.skills, args.upserts)
        res.update(life)
        brain_root = Path(life.pop("brain"))
        print("== reads", file=sys.stderr)
        res.update(reads(tmp, brain_root, args.repeat))
        print("== chain-free paths", file=sys.stderr)
        res.update(chain_free(tmp, brain_root, args.repeat))
        with Brain.open(brain_root) as done:
            settle(done)
        remove_brain(brain_root)
        print(f"== bulk: {args.skills} skills", file=sys.stderr)
        res.update(bulk(tmp, args.skills))
        print(f"== scale: up to {args.big} skills", file=sys.stderr)
        res.update(scale(tmp, args.big, args.small, args.repeat))
        print(f"== verify: {args.verify_snapshots} x {args.verify_skills}", file=sys.stderr)
        res.update(verify_gc(tmp, args.verify_snapshots, args.verify_skills))
    res["peak_rss_bench_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))
    print(json.dumps({k: v for k, v in res.items() if not isinstance(v, list)}, indent=2))


if __name__ == "__main__":
    main()
