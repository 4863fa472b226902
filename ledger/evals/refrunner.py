"""The reference runner: ``python -m ledger.evals.refrunner``, a deterministic stand-in for a model.

It follows the env contract (docs/reference.md, "Eval runner contract") as any runtime does:

- with ``$EVAL_SKILL`` set, it runs the skill's solver: the script SKILL.md names on a line
  ``solve: scripts/NAME`` (else ``scripts/solve``), with cwd ``$EVAL_INPUTS``, the prompt on stdin and the
  contract's environment, as an agent following the skill's instructions would run its script;
- without, a fixed naive behaviour: each input file is copied to ``$EVAL_OUTPUTS`` unchanged, and
  ``answer.txt`` holds the number of words in the inputs.

It writes ``$EVAL_TIMING`` (``total_tokens``: the words of the prompt and of what it wrote, a
deterministic count; ``duration_ms``: its wall time).  A test fixture standing in for a model, not a
shortcut: everything the ledger does around it (sandboxes, grading, records, signatures) is real.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

IDENTITY = "brain-ledger reference-runner 1"
_SOLVE = re.compile(r"^solve:\s*(scripts/[A-Za-z0-9._/-]+)\s*$", re.M)


def solver(skill: Path) -> Path:
    text = (skill / "SKILL.md").read_text(encoding="utf-8") if (skill / "SKILL.md").is_file() else ""
    m = _SOLVE.search(text)
    return skill / (m.group(1) if m else "scripts/solve")


def main() -> int:
    start = time.monotonic()
    inputs = Path.cwd()
    outputs = Path(os.environ["EVAL_OUTPUTS"])
    prompt = os.environ.get("EVAL_PROMPT", "")
    skill = os.environ.get("EVAL_SKILL")
    if skill:
        script = solver(Path(skill))
        if not script.is_file():
            print(f"refrunner: the skill has no solver {script.relative_to(skill)}", file=sys.stderr)
            return 3
        cmd = [str(script)] if os.access(script, os.X_OK) else [sys.executable, str(script)]
        code = subprocess.run(cmd, input=prompt.encode(), cwd=inputs).returncode
        if code != 0:
            return code
    else:
        words = 0
        for f in sorted(inputs.iterdir()):
            if f.is_file():
                data = f.read_bytes()
                (outputs / f.name).write_bytes(data)
                words += len(data.split())
        (outputs / "answer.txt").write_text(f"{words}\n")
    written = sum(len(p.read_bytes().split()) for p in outputs.rglob("*") if p.is_file())
    timing = os.environ.get("EVAL_TIMING")
    if timing:
        ms = int((time.monotonic() - start) * 1000)
        Path(timing).write_text(json.dumps({"total_tokens": len(prompt.split()) + written, "duration_ms": ms}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
