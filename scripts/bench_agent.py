"""Agent-surface latency on a 10,000-skill brain, in one run: a patch through the warm MCP server
(skill_manage over stdio, the official SDK client), the same change through the CLI, and in process.

Target (issue 10): warm MCP patch p50 <= 25 ms.  Usage: .venv/bin/python scripts/bench_agent.py [--skills N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import make_brain
from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers

LEDGER = str(Path(sys.executable).with_name("ledger"))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] * 1000


async def mcp_patches(brain: Path, names: list[str]) -> list[float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    params = StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env=env)
    times = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        await s.call_tool("skills_list", {})  # warm: brain open, head and index loaded
        for i, name in enumerate(names):
            t = time.perf_counter()
            r = await s.call_tool(
                "skill_manage",
                {"action": "patch", "name": name, "old_string": "Step 1:", "new_string": f"Step 1 (mcp {i}):"},
            )
            times.append(time.perf_counter() - t)
            assert not r.is_error, r
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skills", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=60)
    args = ap.parse_args()
    with scratch_dir() as d:
        brain = make_brain(Path(d) / "b", args.skills)
        api = []
        for i in range(args.calls):
            t = time.perf_counter()
            brain.patch(f"skill-{i:05d}", "Step 0:", f"Step 0 (api {i}):")
            api.append(time.perf_counter() - t)
        root = brain.root
        brain.close()
        mcp = asyncio.run(mcp_patches(root, [f"skill-{i:05d}" for i in range(args.calls, 2 * args.calls)]))
        cli = []
        for i in range(15):
            t = time.perf_counter()
            name = f"skill-{3 * args.calls + i:05d}"
            argv = [LEDGER, "--brain", str(root), "skill", "patch", name, "--old", "Step 2:", "--new", f"Step 2 ({i}):"]
            subprocess.run(argv, check=True, capture_output=True)
            cli.append(time.perf_counter() - t)
    print(f"{args.skills} skills; patches: {args.calls} API, {args.calls} MCP, 15 CLI")
    for label, xs in (("warm MCP skill_manage patch", mcp), ("CLI skill patch", cli), ("in-process API", api)):
        mean = statistics.mean(xs) * 1000
        print(f"  {label:30} p50 {pct(xs, 50):7.1f} ms   p99 {pct(xs, 99):7.1f} ms   mean {mean:7.1f} ms")
    verdict = "PASS" if pct(mcp, 50) <= 25 else "MISS"
    print(f"  target: warm MCP p50 <= 25 ms: {verdict}")


if __name__ == "__main__":
    main()
