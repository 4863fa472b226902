"""The sandboxed run (issue 49): what running one script under bubblewrap and strace costs, against the
same script run bare, measured in the same run.

A skill of three small scripts (a shell script that lists and reads its files, a Python script that
imports json and parses a file, a Markdown ``bash`` block) is run by ``sandbox.run_verdict`` (a fresh
sandbox per script: the fake /etc, the canary HOME and the scratch copy written, bwrap started under
strace, the trace read back into findings) and, as the anchor, each script is run bare (``sh FILE``,
``python3 FILE``, ``bash FILE`` in a temporary copy of the skill).  Times are medians over ``--repeat``
rounds, per script.

    .venv/bin/python scripts/bench_sandbox.py [--repeat 5] [--out bench-out/sandbox.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ledger.scanner import sandbox

SKILL_MD = (
    b"---\nname: bench\ndescription: Bench the sandbox.\n---\n# Bench\n\n```bash\nwc -c SKILL.md data.json\n```\n"
)
FILES = {
    "SKILL.md": (SKILL_MD, False),
    "data.json": (json.dumps({"rows": list(range(200))}).encode(), False),
    "scripts/list.sh": (b"#!/bin/sh\nls -la . > /dev/null\ncat data.json | wc -c\n", True),
    "scripts/parse.py": (b"import json\nprint(len(json.load(open('data.json'))['rows']))\n", False),
}
BARE = [["sh", "scripts/list.sh"], ["python3", "scripts/parse.py"]]


def bare_once(root: Path) -> float:
    (root / "block.sh").write_text("wc -c SKILL.md data.json\n")
    t = time.perf_counter()
    for argv in [*BARE, ["bash", "block.sh"]]:
        subprocess.run(argv, cwd=root, capture_output=True, check=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="bench-out/sandbox.json")
    args = ap.parse_args()
    runs = len(sandbox.items(FILES))
    sandbox.available()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, (data, _) in FILES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        bare, boxed = [], []
        for _ in range(args.repeat):
            bare.append(bare_once(root) / runs)
            t = time.perf_counter()
            verdict = sandbox.run_verdict(FILES)
            boxed.append((time.perf_counter() - t) / runs)
    out = {
        "scripts": runs,
        "repeat": args.repeat,
        "sandbox_ms_per_script": statistics.median(boxed) * 1000,
        "bare_ms_per_script": statistics.median(bare) * 1000,
        "findings": len(verdict.findings),
    }
    out["ratio"] = out["sandbox_ms_per_script"] / out["bare_ms_per_script"]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
