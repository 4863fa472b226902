"""Files changed beside a running write: refusals or successes, never tracebacks (issue 17, item 7)."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from tests.harness.cli import run_ledger

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")


def test_a_support_folder_renamed_beside_writes_never_gives_a_traceback(tmp_path: Path) -> None:
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    run_ledger("--brain", str(brain), "skill", "create", "s", "--description", "S", check=True)
    src = tmp_path / "f.md"
    src.write_text("x\n")
    for i in range(3):
        run_ledger(
            "--brain", str(brain), "skill", "write-file", "s", f"references/r{i}.md", "--from", str(src), check=True
        )
    folder, aside = brain / "skills" / "s" / "references", brain / "skills" / "s" / "moved"
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            for a, b in ((folder, aside), (aside, folder)):
                with contextlib.suppress(OSError):
                    os.rename(a, b)

    flipper = threading.Thread(target=flip)
    flipper.start()
    outcomes = []
    try:
        for i in range(30):
            proc = run_ledger(
                "--brain", str(brain), "skill", "write-file", "s", f"references/w{i}.md", "--from", str(src)
            )
            outcomes.append(proc)
    finally:
        stop.set()
        flipper.join()
    # A write may have made references/ anew while the old one was aside: both are then hand
    # changes to the working tree, which read-only commands must still open.
    assert all(p.returncode in (0, 1) for p in outcomes), [p.stderr for p in outcomes if p.returncode not in (0, 1)]
    tracebacks = [p.stderr for p in outcomes if "Traceback" in p.stderr]
    assert not tracebacks, tracebacks[0]
    refusals = [p.stderr for p in outcomes if p.returncode == 1]
    assert all("error: " in err for err in refusals), refusals  # a named refusal, perhaps after a warning
    # Whatever was acknowledged is recorded, and the brain still opens for every read-only command.
    for cmd in (["status"], ["skill", "list"], ["log"], ["verify"]):
        proc = run_ledger("--brain", str(brain), *cmd)
        assert "Traceback" not in proc.stderr, proc.stderr
