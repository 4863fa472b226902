"""Trace one fleet sync through the layers and count the calls that go back *up* a layer.

ADR 22 orders ``ledger/`` bottom-up (``tests/unit/test_layers.py`` ``LAYERS``): a module imports only its
own package and those below it.  Imports say nothing of *calls*, though: a lower layer can still
call a higher one through a callback, a protocol or an object handed down.  This script sets up
a fleet of two machines on one shared remote (each has written a skill the other has not seen),
then runs the second machine's ``ledger sync`` in this process under ``sys.setprofile`` and counts
every Python call whose caller is a ``ledger`` module of a lower layer than the callee's.

It prints the total of such calls, the distinct (caller → callee) function pairs behind them, and
both grouped by (caller layer → callee layer).  Usage: .venv/bin/python scripts/trace_layers.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers
from test_layers import LAYERS  # the one statement of the order

# ``python -m ledger`` rather than the console script, so that PYTHONPATH=OTHER_TREE traces another
# commit's code with this environment (the "before" figure of issue 35 was read that way).
LEDGER = [sys.executable, "-m", "ledger"]


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (length of the matched prefix, layer)
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[0]):
                best = (len(name), i)
    return None if best is None else best[1]


def layer_name(i: int) -> str:
    return LAYERS[i][0].removeprefix("ledger.") if LAYERS[i][0] != "ledger.errors" else "base"


def fleet(tmp: Path, env: dict[str, str]) -> Path:
    """Two machines on one shared remote, each with a skill the other has not seen; returns the second."""

    def ledger(*args: str) -> None:
        proc = subprocess.run([*LEDGER, *args], env=env, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise SystemExit(f"ledger {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")

    a, b, shared = tmp / "a", tmp / "b", tmp / "shared.git"
    ledger("init", str(a))
    ledger("--brain", str(a), "skill", "create", "alpha", "--description", "Alpha.", "--body", "a\n")
    subprocess.run(["git", "init", "-q", "--bare", str(shared)], check=True)  # as a git host makes one
    ledger("--brain", str(a), "remote", "set", str(shared))
    ledger("--brain", str(a), "sync")
    ledger("clone", str(shared), str(b))
    ledger("--brain", str(b), "remote", "set", str(shared))
    ledger("--brain", str(a), "skill", "create", "beta", "--description", "Beta.", "--body", "b\n")
    ledger("--brain", str(a), "sync")
    ledger("--brain", str(b), "skill", "create", "gamma", "--description", "Gamma.", "--body", "c\n")
    # and a runtime's folder on the second machine, in which the runtime edited a skill since the last pass
    ledger("--brain", str(b), "target", "add", str(tmp / "runtime"), "--layout", "hermes")
    ledger("--brain", str(b), "sync")
    (tmp / "runtime" / "gamma" / "SKILL.md").write_text("---\nname: gamma\ndescription: Gamma.\n---\nc, edited\n")
    ledger("--brain", str(a), "skill", "create", "delta", "--description", "Delta.", "--body", "d\n")
    ledger("--brain", str(a), "sync")
    return b


def trace(brain: Path) -> tuple[Counter[tuple[int, int]], Counter[tuple[str, str]], int]:
    from ledger.cli import main as cli  # the code under PYTHONPATH, when it is set

    up: Counter[tuple[int, int]] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    total = 0
    layers: dict[str, int | None] = {}

    def of(frame) -> tuple[str, int | None]:  # type: ignore[no-untyped-def]
        module = frame.f_globals.get("__name__", "")
        if module not in layers:
            layers[module] = layer_of(module) if module.startswith("ledger") else None
        return module, layers[module]

    def profile(frame, event, arg) -> None:  # type: ignore[no-untyped-def]
        nonlocal total
        if event != "call" or frame.f_back is None:
            return
        callee, to = of(frame)
        if to is None:
            return
        caller, frm = of(frame.f_back)
        if frm is None:
            return
        total += 1
        if to > frm:
            up[(frm, to)] += 1
            pairs[(f"{caller}.{frame.f_back.f_code.co_name}", f"{callee}.{frame.f_code.co_name}")] += 1

    sys.setprofile(profile)
    try:
        cli(["--brain", str(brain), "sync"], prog_name="ledger", standalone_mode=False)
    finally:
        sys.setprofile(None)
    return up, pairs, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with scratch_dir(prefix="trace-layers-") as d:
        tmp = Path(d)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
        env["LEDGER_KEYS"] = os.environ["LEDGER_KEYS"] = str(tmp / "keys")
        brain = fleet(tmp, env)
        up, pairs, total = trace(brain)
    result = {
        "calls_between_ledger_modules": total,
        "calls_up_a_layer": sum(up.values()),
        "distinct_call_sites_up": len(pairs),
        "by_layers": {f"{layer_name(f)} -> {layer_name(t)}": n for (f, t), n in sorted(up.items())},
        "pairs": {f"{c} -> {e}": n for (c, e), n in pairs.most_common()},
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(
        f"one fleet sync: {total:,} calls between ledger functions, {result['calls_up_a_layer']:,} of them up a "
        f"layer, from {len(pairs)} distinct (caller -> callee) pairs"
    )
    for k, n in result["by_layers"].items():
        print(f"  {k}: {n}")
    for k, n in result["pairs"].items():
        print(f"    {n:5d}  {k}")


if __name__ == "__main__":
    main()
