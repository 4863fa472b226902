"""The agent's reads (issue 20): skill_view with its receipt and proof, skills_list and the index,
through a warm `ledger mcp` (the official MCP SDK client over stdio) and in process, at several
brain sizes; then the first snapshot of hand-copied skills, with and without a version counter
in their SKILL.md, each with and without a `sync` first, against `git add -A && git commit`.

Writes bench-out/reads.json for scripts/bench_report.py.
Usage: .venv/bin/python scripts/bench_reads.py [--sizes 100,10000,100000] [--calls 200] [--bulk 10000]
       [--reads-only] (the agent's reads alone; `mcp.list_first` is the first skills_list after start)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import BODY, make_brain
from scratch import remove_brain, scratch_dir  # scripts/scratch.py: waits for the brains' packers

LEDGER = str(Path(sys.executable).with_name("ledger"))
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def summary(xs: list[float]) -> dict[str, float]:
    return {"p50_s": pct(xs, 50), "p99_s": pct(xs, 99), "n": len(xs)}


async def mcp_reads(brain: Path, n: int, calls: int) -> dict[str, dict[str, float]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    params = StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env=env)
    out: dict[str, list[float]] = {"view": [], "list": [], "index": [], "list_first": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        t = time.perf_counter()
        await s.call_tool("skills_list", {})  # warm: the brain open, the head, its index and listing read
        out["list_first"].append(time.perf_counter() - t)  # the first listing after start (.ledger/cache kept)
        await s.call_tool("skill_view", {"name": "skill-00000"})
        for i in range(calls):
            t = time.perf_counter()
            r = await s.call_tool("skill_view", {"name": f"skill-{i * 7919 % n:05d}"})
            out["view"].append(time.perf_counter() - t)
            assert not r.is_error and '"proof"' in r.content[0].text, r
        for _ in range(max(10, calls // 10)):
            t = time.perf_counter()
            r = await s.call_tool("skills_list", {})
            out["list"].append(time.perf_counter() - t)
            assert not r.is_error, r
            t = time.perf_counter()
            await s.read_resource("ledger://index")
            out["index"].append(time.perf_counter() - t)
    return {k: summary(v) for k, v in out.items()}


async def mcp_skills(brain: Path, n: int, calls: int) -> dict[str, dict[str, float]]:
    """The MCP Skills extension's `skills/list` (issue 50) through a warm `ledger mcp`: the first page after
    start (every entry and anchor of the head built), a warm page, and every page cursor after cursor."""
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from pydantic import TypeAdapter

    def skills_list(cursor: str | None = None) -> types.Request:
        return types.Request[dict, str](method="skills/list", params={"cursor": cursor} if cursor else {})

    raw = TypeAdapter(dict)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    params = StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env=env)
    out: dict[str, list[float]] = {"first": [], "page": [], "all": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        t = time.perf_counter()
        page = await s.send_request(skills_list(), raw)
        out["first"].append(time.perf_counter() - t)
        assert page["skills"][0]["_meta"], page
        size = {"page_bytes": len(json.dumps(page)), "page_skills": len(page["skills"])}
        for _ in range(max(10, calls // 10)):
            t = time.perf_counter()
            page = await s.send_request(skills_list(), raw)
            out["page"].append(time.perf_counter() - t)
        for _ in range(3):  # a host's registry build: every page
            t, cursor, seen = time.perf_counter(), None, 0
            while True:
                page = await s.send_request(skills_list(cursor), raw)
                seen += len(page["skills"])
                if (cursor := page.get("nextCursor")) is None:
                    break
            out["all"].append(time.perf_counter() - t)
            assert seen == n, (seen, n)
    return {**{k: summary(v) for k, v in out.items()}, **size}


def in_process(brain, n: int, calls: int) -> dict[str, dict[str, float]]:
    from ledger.agent.tools import SkillTools

    tools = SkillTools(brain)
    tools.skills_list()
    out: dict[str, list[float]] = {"view": [], "list": [], "index": []}
    for i in range(calls):
        t = time.perf_counter()
        tools.skill_view(f"skill-{i * 7919 % n:05d}")
        out["view"].append(time.perf_counter() - t)
    for _ in range(max(10, calls // 10)):
        t = time.perf_counter()
        tools.skills_list()
        out["list"].append(time.perf_counter() - t)
        t = time.perf_counter()
        brain.listing_index()
        out["index"].append(time.perf_counter() - t)
    return {k: summary(v) for k, v in out.items()}


def bulk(tmp: Path, skills: int, rounds: int) -> dict[str, float]:
    """Median first `ledger snapshot` against `git add -A && git commit` of the same copied tree."""
    out: dict[str, float] = {"bulk_skills": skills}
    for counter in (True, False):
        src = tmp / f"src-{counter}"
        for i in range(skills):
            d = src / f"skill-{i:05d}"
            d.mkdir(parents=True)
            meta = "metadata:\n  version: '1'\n" if counter else ""
            (d / "SKILL.md").write_text(
                f"---\nname: skill-{i:05d}\ndescription: Benchmark skill {i}\n{meta}---\n" + BODY
            )
        for synced in (True, False):
            times: dict[str, list[float]] = {"git": [], "snapshot": []}
            for r in range(rounds):
                work, brain = tmp / f"git-{r}", tmp / f"brain-{r}"
                subprocess.run([LEDGER, "init", str(brain)], check=True, capture_output=True)
                for key, cmd, cwd, dest in (
                    ("git", ["sh", "-c", "git init -q && git add -A && git commit -qm bulk"], work, work / "skills"),
                    ("snapshot", [LEDGER, "--brain", str(brain), "snapshot"], None, brain / "skills"),
                ):
                    shutil.copytree(src, dest, dirs_exist_ok=True)  # just written: dirty pages, as a user's copy
                    if synced:
                        subprocess.run(["sync"], check=True)
                    t = time.perf_counter()
                    proc = subprocess.run(cmd, cwd=cwd, env=GIT_ENV, capture_output=True, text=True)
                    times[key].append(time.perf_counter() - t)
                    assert proc.returncode == 0, proc.stderr
                shutil.rmtree(work)
                remove_brain(brain)  # the snapshot's detached packer may still be writing in it
            tag = f"{'counters' if counter else 'no_counters'}_{'sync' if synced else 'nosync'}"
            out[f"snapshot_{tag}_s"] = statistics.median(times["snapshot"])
            out[f"git_{tag}_s"] = statistics.median(times["git"])
            print(
                f"  first snapshot, {tag}: {out[f'snapshot_{tag}_s']:.2f}s vs git {out[f'git_{tag}_s']:.2f}s",
                file=sys.stderr,
            )
        shutil.rmtree(src)
    return out


def gas(tmp: Path) -> dict[str, int]:
    """Gas of a steady-state single-root `commit` and of a batch of ten, from the receipts (transaction
    level: the 21,000 intrinsic gas and calldata included)."""
    from ledger.chain import anvil

    brain = tmp / "gas-brain"
    subprocess.run([LEDGER, "init", str(brain)], check=True, capture_output=True)
    node = anvil.start(tmp / "anvil", persist=False, lifetime=600)
    try:

        def ledger(*args: str) -> str:
            proc = subprocess.run([LEDGER, "--brain", str(brain), *args], capture_output=True, text=True)
            assert proc.returncode == 0, (args, proc.stderr)
            return proc.stdout

        for step in (["chain", "use", node.url], ["chain", "deploy"], ["chain", "register"]):
            ledger(*step)
        for i in range(4):
            ledger("skill", "create", f"g{i}", "--description", "G.", "--body", "x\n")
        ledger("chain", "anchor", "--batch", "1")
        for i in range(4):
            ledger("skill", "patch", f"g{i}", "--old", "x", "--new", f"y{i}")
        for i in range(10):
            ledger("skill", "create", f"h{i}", "--description", "H.", "--body", "x\n")
        ledger("chain", "anchor", "--batch", "100")
    finally:
        anvil.stop(tmp / "anvil")
    from ledger.brain import Brain
    from ledger.chain.receipts import read_receipts

    with Brain.open(brain) as b:
        receipts = sorted(read_receipts(b.store).values(), key=lambda r: r["seq"])
    singles = [r["gas_used"] for r in receipts if 1 < r["seq"] <= 5]
    return {"commit_gas": max(singles), "batch_gas": receipts[-1]["gas_used"], "batch_roots": len(receipts) - 5}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,10000,100000")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--bulk", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench-out/reads.json")
    ap.add_argument("--reads-only", action="store_true", help="only the agent's reads: no bulk snapshots, no gas")
    args = ap.parse_args()
    result: dict = {"sizes": {}}
    with scratch_dir() as d:
        for n in (int(x) for x in args.sizes.split(",")):
            brain = make_brain(Path(d) / f"b{n}", n)
            local = in_process(brain, n, args.calls)
            root = brain.root
            brain.close()
            warm = asyncio.run(mcp_reads(root, n, args.calls))
            # The Skills extension at the head the bulk snapshot made, whose message names all N skills in
            # its Ledger-Change trailers: the worst case for the per-commit part every anchor carries.
            from ledger.brain import Brain

            with Brain.open(root) as b:
                message = b.store.read(b.head().commit, b"commit")
            print(
                f"  head commit object: {len(message):,} bytes, {message.count(b'Ledger-Change: '):,} changes",
                file=sys.stderr,
            )
            ext = asyncio.run(mcp_skills(root, n, args.calls))
            ext["head_commit_bytes"] = len(message)
            result["sizes"][str(n)] = {"mcp": warm, "in_process": local, "skills_ext": ext}
            for where, figs in (("warm MCP", warm), ("in process", local), ("skills/list", ext)):
                line = "  ".join(
                    f"{k} p50 {v['p50_s'] * 1000:.1f} ms p99 {v['p99_s'] * 1000:.1f} ms"
                    for k, v in figs.items()
                    if isinstance(v, dict)
                )
                print(f"{n:>7} skills, {where:10}: {line}", file=sys.stderr)
            remove_brain(root)
        if not args.reads_only:
            result.update(bulk(Path(d), args.bulk, args.rounds))
            result.update(gas(Path(d)))
            print(f"  gas: steady-state commit {result['commit_gas']:,}", file=sys.stderr)
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
