"""The edge against its model, at CI size (tests/harness/edgemodel.py; a long run:
``python -m tests.harness.edgemodel``).

Hermes's own ``skill_manage`` (PyPI ``hermes-agent``, in ``.venv-hermes/`` as tests/interop/test_hermes_compare.py
makes it), hand edits in a Claude-layout folder, CLI and MCP ledger writes at once, and syncs (some overlapping
the writes) and resolves, in random short sequences (Hypothesis stateful, from a fixed seed: the same sequences
on every run; seed 1 spreads them over every rule, where a derandomized run draws mostly the first). Every
acknowledged ledger write is in the head or was changed by a later acknowledged write; every runtime write ends
in a version, a kept conflict or a named rescue copy; ``ledger verify`` passes. Outside CI a missing Hermes venv
that cannot be made skips; in CI (LEDGER_CI=1) it fails.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.harness.edgemodel import run
from tests.interop.test_hermes_compare import _hermes_python

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")

EXAMPLES, STEPS, SEED = 16, 12, 1  # about a minute


def test_the_edge_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    python = _hermes_python()
    keys = Path(os.environ.get("LEDGER_KEYS") or tmp_path / "keys")
    res = run(EXAMPLES, STEPS, python, keys, seed=SEED)
    report = json.dumps(res, indent=1)
    print(report)  # the counts, in the test's captured output
    assert res["invariant_failures"] == 0, report
    assert res["examples"] >= EXAMPLES and res["steps"] > EXAMPLES, report
    assert res["acknowledged"]["ledger"] > 0 and res["acknowledged"]["runtime"] > 0, report
    assert res["acknowledged"]["hermes"] > 0 and res["acknowledged"]["mcp"] > 0, report
    assert res["syncs"]["overlapping_ledger_writes"] > 0, report
    assert res["ledger_writes"]["lost"] == res["runtime_writes"]["lost"] == 0, report
