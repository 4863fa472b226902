"""The set-up scripts a new user runs first: the demo is re-runnable and cleans up after itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.chain
def test_demo_runs_twice_on_the_same_directory_and_leaves_no_scratch(tmp_path: Path) -> None:
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")} | {"TMPDIR": str(scratch)}
    brain = tmp_path / "demo-brain"
    for run in (1, 2):
        proc = subprocess.run([str(REPO / "scripts" / "demo"), str(brain)], env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip
        assert proc.returncode == 0, (run, proc.stderr[-3000:])
        assert "OK: the on-chain head equals the local head" in proc.stdout
        assert list(scratch.iterdir()) == [], f"run {run} left {list(scratch.iterdir())}"
    assert "starting it over" in proc.stderr
    other = tmp_path / "not-a-demo"
    other.mkdir()
    (other / "keep.txt").write_text("mine\n")
    refused = subprocess.run([str(REPO / "scripts" / "demo"), str(other)], env=env, capture_output=True, text=True,
                             timeout=600)  # fmt: skip
    assert refused.returncode == 1 and (other / "keep.txt").read_text() == "mine\n"
