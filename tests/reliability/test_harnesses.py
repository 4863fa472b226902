"""The harnesses stop every process they started, on failure too (issue 46).

A harness run is made to fail mid-way (one of its own steps raises, as a bug or a broken
assumption in it would), and right after the exception, before any fixture cleans up,
``/proc`` is searched for a process carrying this test's marker in its environment: every
child the harness started, and every child of those, carries it.  None may be left.  The
outage of the fleet harness is also exercised against a push that is under way.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledger.chain import anvil
from ledger.errors import ChainError
from tests.harness import fleet, procs, synckills
from tests.harness.wait import TimedOut, until

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")


class Boom(RuntimeError):
    """The failure a test forces on a harness."""


def _left(mark: str) -> list[tuple[int, str]]:
    """What the harness left running: not the packer the ledger detaches on purpose, which ends by itself."""
    return [(pid, cmd) for pid, cmd in procs.tagged(procs.CASE, mark) if not procs.detached(pid)]


@pytest.fixture
def mark(monkeypatch: pytest.MonkeyPatch) -> str:
    """A marker of this test's own, in every child's environment; whatever carries it is killed afterwards."""
    value = procs.new_mark()
    monkeypatch.setenv(procs.CASE, value)
    yield value
    procs.reap(procs.CASE, value)


@pytest.mark.chain
def test_a_fleet_run_that_fails_while_writing_leaves_no_process(
    tmp_path: Path, mark: str, monkeypatch: pytest.MonkeyPatch, node: anvil.Node
) -> None:
    """The first loop the fault injector takes down raises instead: by then every machine's loop and its
    writers (CLI commands, MCP servers starting) are running."""
    started: list[int] = []

    def kill_loop(self: fleet.Machine) -> None:
        started.extend(pid for pid, cmd in _left(mark) if "sync --watch" in cmd)
        raise Boom("the harness broke while the fleet was writing")

    monkeypatch.setattr(fleet.Machine, "kill_loop", kill_loop)
    with pytest.raises(Boom):
        fleet.fleet_run(tmp_path, node.url, machines=2, writers=2, writes=30, seed=3, quiet_timeout=60)
    assert started, "no sync loop was running when the harness failed: the test proves nothing"
    assert _left(mark) == []


@pytest.mark.chain
def test_a_fleet_run_that_fails_while_converging_leaves_no_process(
    tmp_path: Path, mark: str, monkeypatch: pytest.MonkeyPatch, node: anvil.Node
) -> None:
    """The wait for the fleet to agree raises: every loop was up again for the quiet phase."""
    loops: list[int] = []

    def converge(*_args: object) -> bool:
        loops.extend(pid for pid, cmd in _left(mark) if "sync --watch" in cmd)
        raise Boom("the harness broke while the fleet converged")

    monkeypatch.setattr(fleet, "_converge", converge)
    with pytest.raises(Boom):
        fleet.fleet_run(tmp_path, node.url, machines=2, writers=2, writes=3, seed=3, faults=False)
    assert len(loops) >= 2, loops
    assert _left(mark) == []


def test_the_fleet_outage_survives_a_push_under_way(tmp_path: Path) -> None:
    """The outage the fleet harness simulates cannot be defeated by git: a push that is under way when the
    remote goes away lands in the repository it opened, and the remote comes back whatever git did
    meanwhile.  (Renaming the repository away, as the harness did before, failed to rename back when
    receive-pack recreated its quarantine at the old path.)"""
    remote, link = tmp_path / "remote.git", tmp_path / fleet.LINK
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    gate = tmp_path / "gate"
    hook = remote / "hooks" / "pre-receive"  # holds the push inside receive-pack, its quarantine made
    hook.write_text(f"#!/bin/sh\ntouch '{gate}.ready'\nwhile [ -e '{gate}' ]; do sleep 0.02; done\ncat >/dev/null\n")
    hook.chmod(0o755)
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    (work / "f").write_text("one\n")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    fleet._point(link, remote.name)
    gate.touch()
    push = subprocess.Popen(
        [*git, "push", "-q", str(link), "main"], stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        until(lambda: (tmp_path / "gate.ready").exists() or push.poll() is not None, timeout=30, what="the push's hook")
        assert (tmp_path / "gate.ready").exists(), push.communicate()
        assert list((remote / "objects").glob("tmp_objdir-incoming-*")), "no push under way"
        fleet._point(link, fleet.OUTAGE)  # the outage begins while receive-pack holds its quarantine
        down = subprocess.run(["git", "ls-remote", str(link)], capture_output=True, text=True)
        assert down.returncode != 0 and "does not appear to be a git repository" in down.stderr, down.stderr
    except BaseException:
        procs.kill(push)
        raise
    finally:
        gate.unlink(missing_ok=True)
    assert push.wait(timeout=60) == 0, push.communicate()
    fleet._point(link, remote.name)  # and ends
    up = subprocess.run(["git", "ls-remote", str(link), "main"], capture_output=True, text=True, check=True)
    head = subprocess.run([*git, "rev-parse", "main"], capture_output=True, text=True, check=True).stdout
    assert up.stdout.split()[0] == head.strip()
    assert not (tmp_path / fleet.OUTAGE).exists()


def test_a_sync_kill_run_that_fails_mid_round_leaves_no_process(
    tmp_path: Path, mark: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger write of a round raises while that round's ``ledger sync`` runs."""
    seen: list[int] = []

    def write(brain: Path, name: str, token: str) -> None:
        seen.extend(pid for pid, cmd in _left(mark) if " sync " in f"{cmd} ")
        raise Boom("the harness broke mid-round")

    monkeypatch.setattr(synckills, "_ledger_write", write)
    with pytest.raises(Boom):
        synckills.sync_kill_run(tmp_path, kills=50, seed=1)  # a round writes with probability 1/2: one soon does
    assert seen, "no sync was running when the harness failed: the test proves nothing"
    assert _left(mark) == []


@pytest.mark.chain
def test_anvil_moves_on_when_the_port_it_picked_is_taken_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``anvil.start`` picks a free port, closes it, then anvil binds it: on a shared machine another program
    may take it in between (several suites start anvils at once).  Here one does, every time for the first
    pick: a port asked for is refused as before, but a port anvil picked itself is picked again."""
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = taken.getsockname()[1]
    picks = iter([busy])
    real = anvil.free_port
    monkeypatch.setattr(anvil, "free_port", lambda: next(picks, None) or real())
    try:
        node = anvil.start(tmp_path / "a", persist=False, lifetime=120)
        try:
            assert node.port != busy and anvil.rpc_ready(node.url)
            assert (tmp_path / "a" / "port").read_text().strip() == str(node.port)
        finally:
            anvil.stop(tmp_path / "a")
        with pytest.raises(ChainError, match="exited at start"):
            anvil.start(tmp_path / "b", port=busy, persist=False, lifetime=120)
    finally:
        taken.close()


def test_until_returns_what_it_saw_or_names_what_did_not_happen() -> None:
    """tests/harness/wait.py, the one poll: the predicate's value; else a failure naming what was awaited, at the
    timeout, or as soon as the process it waited on has ended (with that process's output)."""
    assert until(lambda: 42, what="an answer") == 42
    with pytest.raises(TimedOut, match=re.escape("the flag: not within 0.05 s")):
        until(lambda: False, timeout=0.05, what="the flag")
    proc = subprocess.Popen([sys.executable, "-c", "print('bye')"], stdout=subprocess.PIPE, text=True)
    started = time.monotonic()
    with pytest.raises(TimedOut, match=re.escape("the ready file: the process ended first (exit 0): 'bye\\n'")):
        until(lambda: False, timeout=60, what="the ready file", alive=proc)
    assert time.monotonic() - started < 30
