"""The processes a test harness starts: started in their own process groups, stopped whole, and found
afterwards by a marker in their environment (issue 46: a harness that fails mid-way must not leave
its sync loops, MCP servers or git children running).

- :class:`Children` starts each child in a new session and, on :meth:`Children.stop`, SIGKILLs
  each one's whole process group (its git and ssh children with it).  Once stopped it starts
  nothing more, so a writer thread that races the stop cannot leave a fresh child behind.
- :func:`tagged` scans ``/proc`` for live processes whose environment holds ``NAME=VALUE``.  A
  child inherits its parent's environment, so a marker given to the harness's children is carried
  by everything they start, whichever session it ends up in (an MCP server the SDK starts, a git
  ``receive-pack``, a detached packer).  :func:`reap` kills whatever still carries one.

Linux only (``/proc``), as the suite is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

RUN = "LEDGERTEST_RUN"  # given by a harness to every child it starts: one value per run
CASE = "LEDGERTEST_CASE"  # set in os.environ by tests/conftest.py for the length of one test
# Neither starts with LEDGER_: the harnesses' environments (tests/harness/stress.py's _env(), run_ledger()) drop
# LEDGER_ variables but keep every other, so a marker in os.environ reaches every child a test starts.

# What the ledger itself detaches on purpose and which ends by itself (ledger/store/packing.py).
DETACHED = ("ledger.store.packing",)


def new_mark() -> str:
    return uuid.uuid4().hex


def _state(pid: str) -> str:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return chr(stat[stat.rfind(b")") + 2])


def pids() -> set[int]:
    """Every process id in ``/proc`` now."""
    return {int(e.name) for e in os.scandir("/proc") if e.name.isdigit()}


def tagged(name: str, value: str, *, before: set[int] | None = None) -> list[tuple[int, str]]:
    """(pid, command line) of every live process whose environment holds ``name=value`` (not this one).
    ``before``: ids that ran before the marker was set, and cannot carry it (a cheaper scan)."""
    want = f"{name}={value}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid() or (before and int(entry.name) in before):
            continue
        try:
            if want not in Path(f"/proc/{entry.name}/environ").read_bytes().split(b"\0"):
                continue
            if _state(entry.name) in "ZX":  # dead, waiting to be reaped: it runs nothing
                continue
            cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        found.append((int(entry.name), cmd.strip()))
    return found


def detached(pid: int) -> bool:
    """Whether ``pid`` is, or was started by, a process the ledger detaches on purpose (:data:`DETACHED`)."""
    for _ in range(16):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            return False
        if any(d in cmd for d in DETACHED):
            return True
        pid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        if pid <= 1:
            return False
    return False


def in_process(pid: int, cmd: str) -> bool:
    """Whether ``pid`` is a ``git cat-file`` reader this very process keeps for a repository object it holds
    (GitPython starts one per repository on first read, and keeps it for that object's life): not a child a
    harness started and must stop, and killing it would break the object if a later test still reads through it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    parent = int(stat[stat.rfind(b")") + 2 :].split()[1])
    return parent == os.getpid() and " cat-file " in f" {cmd} "


def reap(
    name: str,
    value: str,
    *,
    wait: float = 10.0,
    spare: Callable[[int, str], bool] | None = None,
) -> list[tuple[int, str]]:
    """SIGKILL every live process carrying ``name=value`` (but those ``spare`` keeps) and wait (bounded) until
    none is left; what was killed."""
    killed: dict[int, str] = {}
    deadline = time.monotonic() + wait

    def live() -> list[tuple[int, str]]:
        return [(pid, cmd) for pid, cmd in tagged(name, value) if spare is None or not spare(pid, cmd)]

    while (left := live()) and time.monotonic() < deadline:
        for pid, cmd in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            killed.setdefault(pid, cmd)
        time.sleep(0.05)
    return sorted(killed.items())


class Stopped(RuntimeError):
    """A harness asked to start a child after it was told to stop."""


class Children:
    """The processes one harness run starts; :meth:`stop` kills every one's process group, and waits."""

    def __init__(self) -> None:
        self._live: set[subprocess.Popen[Any]] = set()
        self._lock = threading.Lock()
        self.stopped = False

    def popen(self, argv: list[str], **kw: Any) -> subprocess.Popen[Any]:
        with self._lock:
            if self.stopped:
                raise Stopped(f"not starting {argv[:4]}: the harness is stopping")
            proc = subprocess.Popen(argv, start_new_session=True, **kw)
            self._live.add(proc)
            return proc

    def run(
        self,
        argv: list[str],
        *,
        timeout: float,
        input: str | None = None,
        **kw: Any,
    ) -> subprocess.CompletedProcess[str]:
        """As ``subprocess.run(capture_output=True, text=True)``, in its own group, killed whole on a timeout."""
        proc = self.popen(
            argv,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kw,
        )
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except BaseException:
            kill(proc)
            raise
        finally:
            with self._lock:
                self._live.discard(proc)
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def forget(self, proc: subprocess.Popen[Any]) -> None:
        with self._lock:
            self._live.discard(proc)

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            live = list(self._live)
            self._live.clear()
        for proc in live:
            kill(proc)


def kill(proc: subprocess.Popen[Any], timeout: float = 30, close: bool = True) -> None:
    """SIGKILL ``proc``'s whole process group (it leads one: started with ``start_new_session``) and reap it.

    The group is signalled only while ``proc`` is unreaped, so its id cannot name someone else's group."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(proc.pid) == proc.pid:
                os.killpg(proc.pid, signal.SIGKILL)
            else:  # not a group leader: never signal the group we share
                proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=timeout)
    for stream in (proc.stdin, proc.stdout, proc.stderr) if close else ():
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


@contextlib.contextmanager
def marked(name: str = CASE) -> Iterator[str]:
    """``os.environ[name]`` set to a fresh value for the block (children started meanwhile carry it); yields it."""
    old = os.environ.get(name)
    value = new_mark()
    os.environ[name] = value
    try:
        yield value
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
