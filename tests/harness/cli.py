"""The real ``ledger`` command, run as a user runs it: the one CLI runner of the tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LEDGER = str(Path(sys.executable).with_name("ledger"))


def run_ledger(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``ledger`` console script, as a user would."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    full_env.update(env or {})
    proc = subprocess.run(
        [LEDGER, *args], cwd=cwd, env=full_env, input=input, capture_output=True, text=True, timeout=120
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"ledger {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc
