"""The reference grader: ``python -m ledger.evals.refgrader``, script assertions only.

For each assertion of ``$EVAL_ASSERTIONS`` (a JSON array of texts), the first `` `…` `` span is a shell
command run with cwd ``$EVAL_OUTPUTS`` in the run's environment (``$EVAL_SET`` is the eval set's folder,
where a skill's own graders live): exit status 0 is a PASS, anything else a FAIL, the evidence quoting the
command, its status and its output's first line.  An assertion with no `` `…` `` span is a FAIL ("not a
script assertion"): this grader never gives the benefit of the doubt.  It prints grading.json (the
agentskills guide's shape) on stdout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

IDENTITY = "brain-ledger reference-grader 1"
TIMEOUT = 60  # seconds per assertion
_SCRIPT = re.compile(r"`([^`]+)`")


def grade(text: str, outputs: Path) -> dict[str, object]:
    m = _SCRIPT.search(text)
    if m is None:
        return {
            "text": text,
            "passed": False,
            "evidence": "not a script assertion: the reference grader runs the "
            "first `command` of an assertion, and this one has none",
        }
    cmd = m.group(1)
    try:
        proc = subprocess.run(["/bin/sh", "-c", cmd], cwd=outputs, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"text": text, "passed": False, "evidence": f"`{cmd}` timed out after {TIMEOUT} s"}
    said = (proc.stdout + proc.stderr).decode("utf-8", "replace").strip().splitlines()[:1]
    return {
        "text": text,
        "passed": proc.returncode == 0,
        "evidence": f"`{cmd}` exited {proc.returncode}" + (f": {said[0][:200]}" if said else ""),
    }


def main() -> int:
    assertions = json.loads(Path(os.environ["EVAL_ASSERTIONS"]).read_text(encoding="utf-8"))
    outputs = Path(os.environ["EVAL_OUTPUTS"])
    results = [grade(a, outputs) for a in assertions]
    passed = sum(1 for r in results if r["passed"])
    doc = {
        "assertion_results": results,
        "summary": {
            "passed": passed,
            "failed": len(results) - passed,
            "total": len(results),
            "pass_rate": round(passed / len(results), 4) if results else 0.0,
        },
    }
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
