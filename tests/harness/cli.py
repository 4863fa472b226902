"""The real ``ledger`` command, run as a user runs it: the one CLI runner of the tests.

:func:`run_ledger` runs the installed console script in a child process, as a user would.
:func:`run_in_process` runs the same entry point (:func:`ledger._entry.main`, the function the
console script calls, its fast path included) inside the test process, which saves the ~0.3 s a
fresh Python, click and the write engine cost each call; both return the same
:class:`subprocess.CompletedProcess` (``args``, ``returncode``, ``stdout`` and ``stderr`` as text).
tests/cli/test_runner.py runs a table of real command lines both ways and asserts the same bytes.

What a call in process sees, made the same as a child process would see it:

- ``sys.argv`` is ``[LEDGER, *args]``; ``os.environ`` is, for the call only, the environment
  :func:`run_ledger` gives its child (this process's less every ``LEDGER_*`` but ``LEDGER_KEYS``,
  plus ``env``), and the secrets :func:`ledger._env.take_secrets` takes out of it are forgotten
  after the call; the working directory is ``cwd``.
- File descriptors 0, 1 and 2 are files of their own for the call (``input``, or nothing, on 0;
  stdout and stderr captured from 1 and 2, so what a child of the command writes there is caught
  too), and ``sys.stdin``/``sys.stdout``/``sys.stderr`` are fresh text streams on them with the
  encoding and error handlers a child's would have (neither is a terminal, as with pipes).
- The exit status is ``SystemExit``'s code (None: 0; a string is printed to stderr: 1); an exception
  that escapes is printed as Python prints it and exits 1, as in a child.
- Signal handlers, the umask, the recursion limit and the root logger's handlers are put back after
  the call.  A call that leaves a thread running fails the test: such a command must run in a child
  process.  The ledger registers no ``atexit`` hook (tests/cli/test_runner.py keeps it so); the hooks
  the standard library and its dependencies register once, lazily (``logging``, ``certifi``,
  ``weakref.finalize``), only tidy up, and run when the test process exits.
- Module-level caches (parsed front matter, keys by path and mtime, the sandbox's tool check) are keyed
  by their inputs, so a second call sees what a fresh process would compute.  ``flock`` locks belong to an
  open file, not to a process, so a lock the test holds on another descriptor still refuses the command.

What cannot be made the same, so :func:`run_in_process` runs it in a child process instead
(:func:`why_not_in_process` names the rule; a test that wants the child says so with :func:`run_ledger`):

- a crash or pause hook in the environment (``LEDGER_CRASHPOINT``, ``LEDGER_PAUSEPOINT``,
  ``LEDGER_PAUSE_FILE``): a crash point ends the process with ``os._exit`` and a pause point blocks it
  while the test changes the world;
- a command that serves or watches until killed (``mcp``, any ``--watch``), that starts or stops a
  node which outlives it (``chain up``, ``chain down``: in process the node would be the test's child,
  a zombie to ``kill(pid, 0)`` once stopped), or that runs evaluations (``eval``: the runner makes the
  process a child subreaper and kills its new children);
- a ``timeout``: only a child process can be stopped at one;
- an environment whose Python or locale settings (``PYTHON*``, ``LANG``, ``LC_*``, ``TZ``) differ from
  this process's, which a running interpreter has already read;
- a call from any thread but the main one, or from inside another call, or while a thread the test
  started runs (a local HTTP server, say): ``os.environ``, the working directory, ``sys.std*`` and
  descriptors 0-2 belong to the whole process, and that thread would see the call's or write into them.

docs/adr/0081-in-process-cli-runner.md says why.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = ["LEDGER", "Ran", "run_in_process", "run_ledger", "why_not_in_process"]

LEDGER = str(Path(sys.executable).with_name("ledger"))

_HOOKS = ("LEDGER_CRASHPOINT", "LEDGER_PAUSEPOINT", "LEDGER_PAUSE_FILE")
_PROCESS_VARS = ("PYTHON", "LANG", "LC_", "TZ")  # read once by a running interpreter
_busy = threading.Lock()
_THREADS = frozenset(threading.enumerate())  # pytest's and xdist's own, there before any test


class Ran(subprocess.CompletedProcess):  # type: ignore[type-arg]
    """A finished ``ledger`` call: :class:`subprocess.CompletedProcess` (text ``stdout``/``stderr``), which also
    answers to :class:`click.testing.Result`'s ``exit_code`` and ``output`` (stdout, then stderr), the names
    the tests that once used click's ``CliRunner`` read."""

    @property
    def exit_code(self) -> int:
        return self.returncode

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def child_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the command: this process's less every ``LEDGER_*`` but ``LEDGER_KEYS``, plus ``env``."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    full_env.update(env or {})
    return full_env


def run_ledger(
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    check: bool = False,
    timeout: float | None = None,
) -> Ran:
    """Run the installed ``ledger`` console script in a child process, as a user would."""
    proc = subprocess.run(
        [LEDGER, *args],
        cwd=cwd,
        env=child_env(env),
        input=input,
        capture_output=True,
        text=True,
        timeout=120 if timeout is None else timeout,
    )
    return _checked(proc, check)


def run_in_process(
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    check: bool = False,
    timeout: float | None = None,
) -> Ran:
    """:func:`run_ledger`'s call, answered by the console script's entry point inside this process; in a
    child process instead when :func:`why_not_in_process` names a reason (the module's docstring lists them)."""
    full_env = child_env(env)
    if why_not_in_process(args, full_env, timeout) is not None or not _busy.acquire(blocking=False):
        return run_ledger(*args, cwd=cwd, env=env, input=input, check=check, timeout=timeout)
    try:
        proc = _in_process(list(args), cwd, full_env, input)
    finally:
        _busy.release()
    return _checked(proc, check)


def why_not_in_process(args: tuple[str, ...] | list[str], env: Mapping[str, str], timeout: float | None) -> str | None:
    """Why this call must run in a child process (the module's docstring), or None."""
    if threading.current_thread() is not threading.main_thread():
        return "a thread other than the main one"
    if set(threading.enumerate()) - _THREADS:
        return "a thread the test started runs (it shares sys.std*, os.environ and the working directory)"
    hooks = [k for k in env if k in _HOOKS or k.startswith("LEDGER_CRASH")]
    if hooks:
        return f"a process hook in the environment ({', '.join(sorted(hooks))})"
    if timeout is not None:
        return "a timeout"
    changed = sorted(k for k in {*env, *os.environ} if k.startswith(_PROCESS_VARS) and env.get(k) != os.environ.get(k))
    if changed:
        return f"Python or locale settings differ ({', '.join(changed)})"
    words = list(args)
    if words[:1] == ["--brain"]:
        words = words[2:]
    elif words[:1] and words[0].startswith("--brain="):
        words = words[1:]
    if "--watch" in words:
        return "a watcher (--watch) runs until killed"
    if words[:1] == ["mcp"]:
        return "mcp serves until killed"
    if words[:2] in (["chain", "up"], ["chain", "down"]):
        return "a node outlives the command"
    if words[:1] == ["eval"]:
        return "evaluations make the process a subreaper"
    return None


def _checked(done: subprocess.CompletedProcess[str], check: bool) -> Ran:
    proc = Ran(done.args, done.returncode, done.stdout, done.stderr)
    if check and proc.returncode != 0:
        args = " ".join(proc.args[1:])
        raise AssertionError(f"ledger {args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


_STDIO: dict[str, tuple[str, str]] = {}


def _stdio(name: str) -> tuple[str, str]:
    """``(encoding, errors)`` of a child's ``sys.stdin``/``sys.stdout``/``sys.stderr``, asked of a child once."""
    if not _STDIO:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys\nfor s in sys.stdin, sys.stdout, sys.stderr: print(s.encoding, s.errors)",
            ],
            env=child_env(),
            input="",
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for i, stream in enumerate(("stdin", "stdout", "stderr")):
            _STDIO[stream] = (out[2 * i], out[2 * i + 1])
    return _STDIO[name]


def _in_process(args: list[str], cwd: Path | str | None, env: dict[str, str], input: str | None) -> Ran:
    from ledger import _entry, _env

    encodings = {name: _stdio(name) for name in ("stdin", "stdout", "stderr")}
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        fin.write((input or "").encode(*encodings["stdin"]))
        fin.seek(0)
        threads = set(threading.enumerate())
        with _process_state(args, cwd, env), _descriptors(fin, fout, ferr, encodings):
            _env._taken.clear()
            try:
                _entry.main()
                code: object = 0
            except SystemExit as exc:
                code = exc.code
            except BaseException:  # what escapes a child is printed by Python, which then exits 1
                traceback.print_exc()
                code = 1
            finally:
                _env._taken.clear()
            if code is None:
                code = 0
            elif not isinstance(code, int):
                print(code, file=sys.stderr)
                code = 1
        left = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        for t in left:
            t.join(5)
        if any(t.is_alive() for t in left):
            raise AssertionError(f"ledger {' '.join(args)} left a thread running: run it with run_ledger")
        fout.seek(0)
        ferr.seek(0)
        stdout = fout.read().decode(*encodings["stdout"])
        stderr = ferr.read().decode(*encodings["stderr"])
    return Ran([LEDGER, *args], code, stdout, stderr)


@contextlib.contextmanager
def _process_state(args: list[str], cwd: Path | str | None, env: dict[str, str]) -> Iterator[None]:
    """``sys.argv``, ``os.environ`` and the working directory for the call; these and the process-wide
    settings a command may change (signal handlers, umask, recursion limit, root logger) put back after."""
    saved_argv, saved_env, saved_cwd = sys.argv, dict(os.environ), os.getcwd()
    handlers = {}
    for sig in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):
            handlers[sig] = signal.getsignal(sig)
    umask = os.umask(0o022)
    os.umask(umask)
    limit = sys.getrecursionlimit()
    root = logging.getLogger()
    log_handlers, log_level = list(root.handlers), root.level
    sys.argv = [LEDGER, *args]
    os.environ.clear()
    os.environ.update(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
        for sig, handler in handlers.items():
            if handler is not None and signal.getsignal(sig) != handler:
                signal.signal(sig, handler)
        os.umask(umask)
        sys.setrecursionlimit(limit)
        root.handlers[:] = log_handlers
        root.setLevel(log_level)


@contextlib.contextmanager
def _descriptors(
    fin: io.BufferedRandom, fout: io.BufferedRandom, ferr: io.BufferedRandom, encodings: dict
) -> Iterator[None]:
    """Descriptors 0-2 on the call's own files, and fresh ``sys.std*`` text streams on them, as a child has."""
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    for stream in saved_streams:
        with contextlib.suppress(Exception):
            stream.flush()
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    streams: list[io.TextIOWrapper] = []
    try:
        for fd, f in ((0, fin), (1, fout), (2, ferr)):
            os.dup2(f.fileno(), fd)
        for fd, name, mode in ((0, "stdin", "rb"), (1, "stdout", "wb"), (2, "stderr", "wb")):
            raw = open(fd, mode, closefd=False)  # noqa: SIM115 - the stream outlives this block
            encoding, errors = encodings[name]
            streams.append(io.TextIOWrapper(raw, encoding=encoding, errors=errors, line_buffering=fd == 2))
        sys.stdin, sys.stdout, sys.stderr = streams
        yield
    finally:
        for stream in streams:
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for fd, saved in zip((0, 1, 2), saved_fds, strict=True):
            os.dup2(saved, fd)
            os.close(saved)
