"""The edges a user waits on (issue 35): MCP start-up, warm and first, and `ledger keys new`.

- **MCP start-up:** spawn `ledger --brain B mcp` as an agent runtime does, send `initialize`,
  and time the answer, then `tools/list` (a session can use the tools only after both).
  Warm: page cache warm, medians of ``--repeat``.  First start: the same after dropping the
  kernel's page cache (``/proc/sys/vm/drop_caches``, root only; reported as null elsewhere),
  which is what a new user's first session after install or reboot pays.
- **keys new:** a committer key made and stored encrypted (JSON v3 keystore, scrypt), the
  password from ``LEDGER_KEY_PASSWORD`` as a script would pass it; the KDF's own cost is
  measured beside it, since that part is deliberate (docs/reference.md, `keys new`).

Usage: .venv/bin/python scripts/bench_edges.py [--skills 10000] [--repeat 7] [--out bench-out/edges.json]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import make_brain
from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers

LEDGER = str(Path(sys.executable).with_name("ledger"))
CLIENT = {"name": "bench", "version": "0"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT},
}
LIST = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'


def mcp_start(brain: Path, env: dict[str, str]) -> tuple[float, float]:
    """(spawn -> initialize answer, spawn -> tools/list answer), in seconds."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        [LEDGER, "--brain", str(brain), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(INIT).encode() + b"\n")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        init = time.perf_counter() - t
        assert first.get("id") == 1 and "result" in first, first
        proc.stdin.write(LIST)
        proc.stdin.flush()
        second = json.loads(proc.stdout.readline())
        tools = time.perf_counter() - t
        assert second.get("id") == 2 and second["result"]["tools"], second
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return init, tools


def drop_caches() -> bool:
    """Empty the kernel's page cache, so the next start reads every file from disk (root only)."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def mcp_figures(brain: Path, env: dict[str, str], repeat: int) -> dict[str, float | None]:
    mcp_start(brain, env)  # warm the page cache
    warm = [mcp_start(brain, env) for _ in range(repeat)]
    firsts = []
    for _ in range(min(repeat, 3)):
        if not drop_caches():
            break
        firsts.append(mcp_start(brain, env))
    return {
        "init_s": statistics.median(w[0] for w in warm),
        "tools_s": statistics.median(w[1] for w in warm),
        "first_init_s": statistics.median(f[0] for f in firsts) if firsts else None,
        "first_tools_s": statistics.median(f[1] for f in firsts) if firsts else None,
    }


def keys_new(tmp: Path, env: dict[str, str], repeat: int) -> dict[str, float]:
    store = tmp / "keystore"
    env = {**env, "LEDGER_KEYSTORE": str(store), "LEDGER_KEY_PASSWORD": "bench-password-not-a-secret"}
    times = []
    for i in range(repeat):
        t = time.perf_counter()
        subprocess.run([LEDGER, "keys", "new", f"bench-{i}"], env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    import hashlib

    kdf = []
    for _ in range(3):  # the keystore's own scrypt parameters (n=2^18, r=8, p=1), alone
        doc = json.loads((store / "bench-0.json").read_text())["crypto"]["kdfparams"]
        t = time.perf_counter()
        hashlib.scrypt(b"x", salt=os.urandom(16), n=doc["n"], r=doc["r"], p=doc["p"], maxmem=2**30, dklen=32)
        kdf.append(time.perf_counter() - t)
    return {"keys_new_s": statistics.median(times), "kdf_s": statistics.median(kdf), "kdf_n": doc["n"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skills", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default="bench-out/edges.json")
    args = ap.parse_args()
    result: dict[str, object] = {"skills": args.skills}
    with scratch_dir() as d:
        tmp = Path(d)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
        env["LEDGER_KEYS"] = str(tmp / "keys")  # the brains' signing keys, made by init
        os.environ["LEDGER_KEYS"] = env["LEDGER_KEYS"]
        small = make_brain(tmp / "one", 1)
        small.close()
        result["mcp_1"] = mcp_figures(small.root, env, args.repeat)
        big = make_brain(tmp / "big", args.skills)
        big.close()
        result["mcp_big"] = mcp_figures(big.root, env, args.repeat)
        result.update(keys_new(tmp, env, args.repeat))
    for key in ("mcp_1", "mcp_big"):
        m = result[key]
        print(
            f"  MCP start ({key}): initialize {m['init_s'] * 1000:.0f} ms, tools/list {m['tools_s'] * 1000:.0f} ms"
            + (f"; first start {m['first_init_s'] * 1000:.0f} ms" if m["first_init_s"] else ""),
            file=sys.stderr,
        )
    print(
        f"  keys new {result['keys_new_s'] * 1000:.0f} ms (scrypt alone {result['kdf_s'] * 1000:.0f} ms)",
        file=sys.stderr,
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
