"""One run: the runner, then the grader, under the env contract (docs/reference.md, "Eval runner contract").

Each is a shell command (``sh -c``) started in a new session, so that when it ends, fails or times out
its whole process group is stopped (SIGTERM, then SIGKILL after a grace): no child outlives its run.
The runner's environment is this process's, less every secret (:func:`ledger._env.child_env`), every
``LEDGER_*`` (the ledger's own settings, among them where its signing keys are: a runner that found them
could sign its own verified outcomes) and any ``EVAL_*`` of ours, plus:

- cwd ``$EVAL_INPUTS``: a fresh folder holding the case's input files, each under its file name;
- ``EVAL_PROMPT`` (the case's prompt), ``EVAL_ID`` (its id as text), ``EVAL_OUTPUTS`` (an empty folder of
  the sandbox, copied into the workspace after the run: the runner is never told where the workspace is,
  and nothing it leaves, a link included, is written through);
- ``EVAL_SKILL``: a fresh copy of the skill folder at the condition's version; **unset** without the skill;
- ``EVAL_TIMING``: where the runner may write timing.json (``total_tokens``, ``duration_ms``);
- ``PATH`` starting with the folder of the ledger's own Python, so ``python -m ledger.evals.refrunner`` runs it.

The grader runs in the same environment plus ``EVAL_ASSERTIONS`` (a JSON array of the case's assertion
texts) and ``EVAL_SET`` (a copy of the version under test's ``evals`` folder, in every condition, so a
skill's own graders are there even without the skill), both in a fresh folder made after the runner
ended (the runner could have planted links anywhere in its sandbox), and prints grading.json on stdout.
Each command's stderr goes to an unnamed temporary file of which only the last 4 KiB are read.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger._env import child_env
from ledger.evals.evalset import EvalError

__all__ = ["GRACE", "Outcome", "Sandbox", "run_command"]

GRACE = 2.0  # seconds between SIGTERM and SIGKILL of a run's process group
MAX_STDOUT = 1024 * 1024  # bytes of a grader's stdout kept


@dataclass(frozen=True)
class Outcome:
    """How a command ended: its exit status (None: timed out), wall time, and the tail of its output."""

    status: int | None
    ms: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.status == 0

    def why(self, timeout: float) -> str:
        if self.status is None:
            return f"timed out after {timeout:g} s (its process group was stopped)"
        tail = self.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return f"exited with status {self.status}" + (f": {tail[0][:300]}" if tail[0] else "")


class Sandbox:
    """A run's fresh temporary folder: ``inputs/``, ``skill/`` (when given), ``evals/`` (the grader's), and
    ``timing.json``'s path; removed whole on exit."""

    def __init__(self, parent: Path | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ledger-eval-", dir=parent))
        self.inputs = self.root / "inputs"
        self.inputs.mkdir()
        self.timing = self.root / "timing.json"
        self.outputs = self.root / "outputs"
        self.outputs.mkdir()
        self.later: list[Path] = []

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        for folder in (self.root, *self.later):
            shutil.rmtree(folder, ignore_errors=True)  # never follows a link (a runner may leave some)

    def add_inputs(self, files: Mapping[str, bytes]) -> None:
        """The case's input files, each under its file name (evalset checked that names are distinct)."""
        for rel, data in files.items():
            (self.inputs / rel.rsplit("/", 1)[-1]).write_bytes(data)

    def add_folder(self, name: str, files: Mapping[str, tuple[bytes, bool]], fresh: bool = False) -> Path:
        """A folder of the sandbox holding ``files`` (rel → bytes, executable), as a skill's copy; ``fresh``:
        in a new folder of the system's temporary directory (made after a runner ran: nothing it planted in
        the sandbox is written through), removed with the sandbox."""
        if fresh:
            self.later.append(Path(tempfile.mkdtemp(prefix="ledger-eval-")))
            base = self.later[-1] / name
        else:
            base = self.root / name
        base.mkdir()
        for rel, (data, executable) in files.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            if executable:
                path.chmod(0o755)
        return base


def contract_env(
    *, inputs: Path, prompt: str, case: str, outputs: Path, skill: Path | None, timing: Path
) -> dict[str, str]:
    env = {k: v for k, v in child_env().items() if not k.startswith(("EVAL_", "LEDGER_"))}
    own = os.path.dirname(sys.executable)  # `python` is the ledger's own Python (the reference runner's)
    env["PATH"] = own + os.pathsep + env["PATH"] if env.get("PATH") else own
    env.update(
        {
            "EVAL_INPUTS": str(inputs),
            "EVAL_PROMPT": prompt,
            "EVAL_ID": case,
            "EVAL_OUTPUTS": str(outputs),
            "EVAL_TIMING": str(timing),
        }
    )
    if skill is not None:
        env["EVAL_SKILL"] = str(skill)
    return env


def run_command(command: str, env: Mapping[str, str], cwd: Path, timeout: float) -> Outcome:
    """Run ``command`` with ``sh -c`` in its own session; stop its process group when it ends or at
    ``timeout`` seconds, then every process it left that escaped the group (``setsid``: this process is
    their child subreaper while a command runs, so they are reparented here, and killed).  stdout and
    stderr are drained through pipes as they come: the first :data:`MAX_STDOUT` + 1 bytes of stdout and the
    last 4 KiB of stderr are kept, the rest dropped (a command printing gigabytes fills no disk, no memory)."""
    start = time.monotonic()
    before = _children()
    _subreaper(True)
    try:
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", command],
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise EvalError(f"cannot start {command[:80]!r}: {exc.strerror}") from exc
        assert proc.stdout is not None and proc.stderr is not None
        out, err = bytearray(), bytearray()
        drains = [
            threading.Thread(target=_drain, args=(proc.stdout, out, MAX_STDOUT + 1, False), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, err, 4096, True), daemon=True),
        ]
        for t in drains:
            t.start()
        try:
            status = _wait(proc, timeout)
        finally:
            _stop_group(proc, before)
            _sweep(before | {proc.pid})
            for t in drains:
                t.join(GRACE)
            proc.stdout.close()
            proc.stderr.close()
    finally:
        _subreaper(False)
    ms = int((time.monotonic() - start) * 1000)
    return Outcome(status, ms, bytes(out), bytes(err))


def _drain(pipe: Any, keep: bytearray, most: int, tail: bool) -> None:
    """Read ``pipe`` to its end, keeping its first ``most`` bytes (``tail``: its last)."""
    with contextlib.suppress(OSError, ValueError):
        while chunk := pipe.read1(1 << 16):
            if tail:
                keep += chunk
                del keep[:-most]
            elif len(keep) < most:
                keep += chunk[: most - len(keep)]


_PR_SET_CHILD_SUBREAPER = 36


def _subreaper(on: bool) -> None:
    """Make this process the child subreaper of what it starts (Linux prctl): a process a command started
    that left its session is reparented here when its parent dies, not to init, so it can be stopped."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def _children() -> set[int]:
    """The pids of this process's children (``/proc/PID/stat``'s ppid)."""
    me, out = os.getpid(), set()
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if int(data[data.rindex(b")") + 2 :].split()[1]) == me:
                out.add(int(name))
    return out


def _sweep(keep: set[int]) -> None:
    """SIGKILL and reap every child of this process not in ``keep``: what a command left behind, reparented
    here; again until none is left (a killed one's own children are reparented here in turn)."""
    for _ in range(100):
        left = _children() - keep
        if not left:
            return
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in left:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The exit status, or None at ``timeout`` seconds.  Woken by the exit itself (a pidfd, Linux ≥ 5.3), not
    by ``Popen.wait``'s polling, which sleeps up to 50 ms past it: a run's own overhead counts (issue 47)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            poller.poll(left * 1000)
        return proc.returncode
    finally:
        os.close(fd)


def _stop_group(proc: subprocess.Popen[bytes], before: set[int]) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after :data:`GRACE` seconds.  Members that
    died after their parent are this process's (its subreaper's) zombies: reaped as they come, so a dead
    group is seen as dead."""
    pgid = proc.pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            for pid in _children() - before - {proc.pid}:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
            if not _group_alive(pgid):
                return
        time.sleep(0.01)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=GRACE)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
