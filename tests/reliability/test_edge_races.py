"""Reduced edge-race harness (tests/harness/edgeraces.py; any size: ``python -m tests.harness.edgeraces``): CLI and MCP
writers on one skill linked into a target, while a runtime edits the target's copy and ``ledger sync`` loops.
No acknowledged write may be lost, on either side of the edge.

A loss needs a sync to record while the writers move the head, so the run is a few short rounds on fresh
brains (each round's first syncs are where that happens most) rather than one long one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.edgeraces import edge_run

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")

FIGURES = (
    "seed",
    "acknowledged",
    "present",
    "lost",
    "cli",
    "mcp",
    "lost_examples",
    "lost_dropped_by",
    "runtime_acknowledged",
    "runtime_in_head",
    "runtime_in_conflict",
    "runtime_rescued",
    "runtime_rescued_outside_conflict",
    "runtime_lost",
    "runtime_lost_examples",
    "runtime_crossed_exchange",
    "runtime_lost_crossed",
    "conflict_left",
    "verify_ok",
    "verify_problems",
    "syncs",
    "refusals",
    "seconds",
)


def test_no_acknowledged_write_is_lost_at_the_edge(tmp_path: Path) -> None:
    rounds = [
        edge_run(tmp_path / f"round-{seed}", cli_writers=3, mcp_writers=1, ops=10, seed=seed) for seed in range(1, 5)
    ]
    figures = json.dumps([{k: res[k] for k in FIGURES} for res in rounds], indent=1)
    for res in rounds:
        assert res["acknowledged"] > 0 and res["runtime_acknowledged"] > 0 and res["syncs"]["runs"] > 1, figures
        assert res["tracebacks"] == 0 and res["server_tracebacks"] == 0 and res["syncs"]["tracebacks"] == 0, figures
    # Every acknowledged write is kept, on both sides of the edge: a runtime write made across an exchange
    # (read in the folder the ledger replaced, renamed into the new one) included, and none ends only in a
    # rescued copy unless it truly conflicts with the brain (ADR 44).
    lost = [(res["seed"], res["lost"], res["runtime_lost"], res["runtime_rescued_outside_conflict"]) for res in rounds]
    assert all(x[1:] == (0, 0, 0) for x in lost), (
        f"(seed, lost, runtime_lost, rescued outside a conflict): {lost}\n{figures}"
    )
    assert all(res["verify_ok"] for res in rounds), figures
