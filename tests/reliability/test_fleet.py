"""The fleet harness, reduced (issue 23): three machines, two writers each (CLI and MCP), faults on.

The full run (8 machines x 4 writers x 100 writes) is ``scripts/stress fleet``; its figures are in
docs/RELIABILITY.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.chain import anvil
from tests.harness.fleet import fleet_run

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")


@pytest.mark.chain
def test_a_small_fleet_loses_nothing_and_converges(tmp_path: Path, node: anvil.Node) -> None:
    out = fleet_run(tmp_path, node.url, machines=3, writers=2, writes=12, seed=7, quiet_timeout=600)
    assert out["acknowledged"] >= 60  # most writes are acknowledged, offline or not
    assert out["lost"] == 0, out["lost_sample"]
    assert out["converged"], out
    assert out["version_repeats_on_mainline"] == 0
    assert out["audit_ok"], out["audit_failed"]
    assert out["merges"] >= 1 and out["roots_anchored"] >= 1
