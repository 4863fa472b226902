"""Shared fixtures: real brains in temporary directories, and the real CLI."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger


@pytest.fixture(scope="session", autouse=True)
def signing_keys(tmp_path_factory: pytest.TempPathFactory):
    """This test session's signing keys ($LEDGER_KEYS): made by the first ``init``, as on a new machine,
    and never the real ~/.config of whoever runs the suite."""
    home = tmp_path_factory.mktemp("keys")
    old = os.environ.get("LEDGER_KEYS")
    os.environ["LEDGER_KEYS"] = str(home / "keys")
    try:
        yield home / "keys"
    finally:
        if old is None:
            os.environ.pop("LEDGER_KEYS", None)
        else:
            os.environ["LEDGER_KEYS"] = old


@pytest.fixture(autouse=True)
def _stray_processes():
    """Every process a test starts carries ``LEDGERTEST_CASE`` (tests/harness/procs.py), and whatever still runs when
    the test ends is killed, so a test that fails never leaves its children to the next.  This is a net, not
    the rule: each harness stops what it started itself (tests/reliability/test_harnesses.py proves it), and what the
    ledger detaches on purpose (its packer) ends by itself.  Fixtures of a wider scope (``node``) are made
    before this one and keep running."""
    import warnings

    from tests.harness import procs

    before = procs.pids()  # none of these can carry the marker: only the test's new processes are read
    with procs.marked(procs.CASE) as mark:
        yield

    def spare(pid: int, cmd: str) -> bool:
        return procs.detached(pid) or procs.in_process(pid, cmd)

    left = [(pid, cmd) for pid, cmd in procs.tagged(procs.CASE, mark, before=before) if not spare(pid, cmd)]
    if left:
        procs.reap(procs.CASE, mark, spare=spare)
        warnings.warn(f"the test left {len(left)} process(es) running (killed now): {left[:5]}", stacklevel=1)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory):
    """A real anvil on a free loopback port, bounded in time, always stopped."""
    from ledger.chain import anvil

    state = tmp_path_factory.mktemp("anvil")
    n = anvil.start(state, persist=False, lifetime=900)
    try:
        yield n
    finally:
        anvil.stop(state)


@pytest.fixture
def chained(tmp_path: Path, node):
    """A brain with its own freshly deployed registry and registered agent (dev key, real anvil)."""
    from ledger.anchoring.commits import deploy, register
    from ledger.chain.keys import DEV_KEY_NAME

    brain = make_brain(tmp_path / "brain")
    brain.update_config(chain={"rpc": node.url})
    deploy(brain, key=DEV_KEY_NAME)
    register(brain, shares=1000, key=DEV_KEY_NAME)
    try:
        yield brain
    finally:
        brain.close()


@pytest.fixture
def brain(tmp_path: Path):
    b = make_brain(tmp_path / "brain")
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def ledger() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_ledger
