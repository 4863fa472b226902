"""Red-team review of issue 48 (rt2): whose word an imported outcome is, as a new user and a hostile file meet it.

Each test drives the real CLI on a real brain (real git, real keys, real signatures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_ledger
from tests.test_evals_engine import FAMILY, _hand_workspace, verifier_brain


def _records(b: Path) -> list[dict]:
    return json.loads(run_ledger("--brain", str(b), "outcome", "list", "--json", check=True).stdout)


def test_eval_import_of_a_workspace_without_actor_is_a_usage_error(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A workspace's grading.json was written by whoever ran it (skill-creator, the agent itself, a hand):
    importing it must not make its runs *verified* by a default, as `outcome import`'s rows (ADR 0053)."""
    b = verifier_brain(tmp_path, monkeypatch, FAMILY)
    cases = json.loads((FAMILY / "csv-sum/evals/evals.json").read_text())["evals"][:2]
    ws = _hand_workspace(tmp_path / "ws", "csv-sum", cases, {"with_skill": True, "without_skill": False})
    head = run_ledger("--brain", str(b), "log", "--json", check=True).stdout
    proc = run_ledger("--brain", str(b), "eval", "import", str(ws), "--skill", "csv-sum")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--actor verifier" in proc.stderr and "--actor agent" in proc.stderr, proc.stderr
    assert run_ledger("--brain", str(b), "log", "--json", check=True).stdout == head and _records(b) == []
    done = run_ledger("--brain", str(b), "eval", "import", str(ws), "--skill", "csv-sum", "--actor", "agent")
    assert done.returncode == 0, done.stderr
    assert {r["tier"] for r in _records(b)} == {"self"}
