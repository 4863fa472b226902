"""The chain at the edges (issue 35): `ledger chain status` against a live anvil, what it imports,
and the gas of a steady-state single-root `commit`.

Starts its own anvil on a free 127.0.0.1 port (always stopped), sets up a brain with a deployed
registry and a registered agent, and measures, each a median of ``--repeat`` runs:

- ``chain_status_s``: wall time of `ledger chain status` (the installed console script, in a
  subprocess, as a user runs it);
- ``import_web3_s``: wall time of `python -c "import web3"`, the anchor for "import web3 on every
  chain command";
- ``chain_status_imports_web3`` / ``chain_status_web3_ms``: whether `chain status` imports web3,
  read from Python's own import-time report (``PYTHONPROFILEIMPORTTIME``), and what it costs
  there (0 when absent);
- ``commit_gas``: a steady-state single-root `commit`, from the receipts (transaction level:
  21,000 intrinsic and calldata included), as ``scripts/bench_reads.py`` ``gas()`` measures it.

Usage: .venv/bin/python scripts/bench_chain.py [--repeat 5] [--out bench-out/chain.json]
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


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    """The user's environment without LEDGER_* settings, with this run's own signing keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    return {**env, "LEDGER_KEYS": str(tmp / "keys"), **extra}


def _wall(argv: list[str], env: dict[str, str], repeat: int) -> float:
    """Median wall time of ``argv`` (after one untimed run that warms the page cache)."""
    times = []
    for i in range(repeat + 1):
        t = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        elapsed = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
        if i:
            times.append(elapsed)
    return statistics.median(times)


def web3_cost_ms(import_report: str) -> float:
    """The cumulative import time of the top-level ``web3`` package in a ``-X importtime`` report
    (stderr), in ms; 0 when the process never imported it."""
    total_us = 0
    for line in import_report.splitlines():
        if not line.startswith("import time:"):
            continue
        _, cumulative, name = line[len("import time:") :].split("|", 2)
        if name.strip() == "web3":
            total_us += int(cumulative)
    return total_us / 1000


def setup(tmp: Path, url: str) -> Path:
    """A brain with a deployed registry, a registered agent and five roots committed one a
    transaction (the genesis root, then four skills)."""
    brain = tmp / "brain"
    env = _env(tmp)

    def ledger(*args: str) -> str:
        proc = subprocess.run(
            [LEDGER, "--brain", str(brain), *args], env=env, capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0:
            raise SystemExit(f"ledger {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
        return proc.stdout

    subprocess.run([LEDGER, "init", str(brain)], env=env, check=True, capture_output=True, timeout=120)
    for step in (["chain", "use", url], ["chain", "deploy"], ["chain", "register"]):
        ledger(*step)
    for i in range(4):
        ledger("skill", "create", f"g{i}", "--description", "G.", "--body", "x\n")
    ledger("chain", "anchor", "--batch", "1")
    return brain


def commit_gas(brain: Path) -> int:
    """The steady-state single-root commit: the largest of seq 2..5 (seq 1 writes the head slot
    for the first time), as in scripts/bench_reads.py."""
    from ledger.brain import Brain
    from ledger.chain.receipts import read_receipts

    with Brain.open(brain) as b:
        receipts = read_receipts(b.store).values()
    return max(r["gas_used"] for r in receipts if 1 < r["seq"] <= 5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per timed figure (median)")
    ap.add_argument("--out", default="bench-out/chain.json")
    args = ap.parse_args()
    from ledger.chain import anvil

    started = time.perf_counter()
    with scratch_dir(prefix="bench-chain-") as d:
        tmp = Path(d)
        node = anvil.start(tmp / "anvil", persist=False, lifetime=600)
        try:
            brain = setup(tmp, node.url)
            status = [LEDGER, "--brain", str(brain), "chain", "status"]
            env = _env(tmp)
            chain_status_s = _wall(status, env, args.repeat)
            report = subprocess.run(
                status, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, capture_output=True, text=True, timeout=120
            )
            if report.returncode != 0 or "import time:" not in report.stderr:
                raise SystemExit(f"no import report from chain status:\n{report.stderr[-2000:]}")
            web3_ms = web3_cost_ms(report.stderr)
            import_web3_s = _wall([sys.executable, "-c", "import web3"], env, args.repeat)
            gas = commit_gas(brain)
        finally:
            anvil.stop(tmp / "anvil")
    result = {
        "chain_status_s": round(chain_status_s, 4),
        "import_web3_s": round(import_web3_s, 4),
        "chain_status_imports_web3": web3_ms > 0,
        "chain_status_web3_ms": round(web3_ms, 1),
        "commit_gas": gas,
        "repeat": args.repeat,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    print(
        f"  chain status {chain_status_s * 1000:.0f} ms (web3 imported: {result['chain_status_imports_web3']}, "
        f"{web3_ms:.0f} ms); import web3 {import_web3_s * 1000:.0f} ms; steady-state commit {gas:,} gas",
        file=sys.stderr,
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
