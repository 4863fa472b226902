"""Reduced edge-race harness (tests/edgeraces.py; any size: ``python -m tests.edgeraces``): CLI and MCP
writers on one skill linked into a target, while a runtime edits the target's copy and ``ledger sync`` loops.
No acknowledged write may be lost, on either side of the edge."""

from __future__ import annotations

import json
from pathlib import Path

from tests.edgeraces import edge_run


def test_no_acknowledged_write_is_lost_at_the_edge(tmp_path: Path) -> None:
    res = edge_run(tmp_path, cli_writers=3, mcp_writers=1, ops=15, seed=3)
    figures = json.dumps({k: res[k] for k in ("acknowledged", "present", "lost", "cli", "mcp", "lost_examples",
                                              "runtime_acknowledged", "runtime_in_head", "runtime_in_conflict",
                                              "runtime_rescued", "runtime_lost", "runtime_lost_examples",
                                              "runtime_crossed_exchange", "lost_dropped_by",
                                              "verify_ok", "verify_problems", "syncs", "refusals")},
                         indent=1)  # fmt: skip
    assert res["acknowledged"] > 0 and res["runtime_acknowledged"] > 0 and res["syncs"]["runs"] > 1, figures
    assert res["tracebacks"] == 0 and res["server_tracebacks"] == 0 and res["syncs"]["tracebacks"] == 0, figures
    assert (res["lost"], res["runtime_lost"]) == (0, 0), figures
    assert res["verify_ok"], figures
