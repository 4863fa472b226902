"""The in-process runner (tests/harness/cli.py) answers as the console script does in a child process.

Each real command line of :data:`LINES` runs twice, on fresh copies of one brain at the same path: once
with :func:`run_ledger` (a child process) and once with :func:`run_in_process` (the entry point in this
process); stdout, stderr and the exit status must be the same.  The table has successes and failures
(exit 1, usage exit 2), ``--json``, standard input, a working directory instead of ``--brain``, the
user's switches, and every fast-path row but ``mcp`` (which the runner always hands to a child process).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import threading
from pathlib import Path

import pytest

from tests.harness.brains import copy_brain, make_brain
from tests.harness.cli import LEDGER, run_in_process, run_ledger, why_not_in_process

B = ("--brain", "{b}")
# the clock, read by each run: verify's audit time, and a new snapshot's commit (its time is in it)
NOW = re.compile(r'"audited_at": "[0-9T:-]+Z"|"commit": "[0-9a-f]{40}"')
SKILL = "---\nname: piped\ndescription: A skill from stdin\n---\nbody from stdin\n"


def line(
    *args: str, env: dict[str, str] | None = None, stdin: str | None = None, warm: bool = False, cwd: bool = False
):
    return pytest.param(args, env or {}, stdin, warm, cwd, id=" ".join(args).replace("{b}", "B") or "(none)")


LINES = [
    # the fast path's rows, each warmed first (the full path leaves the stat cache and instant records behind)
    line(*B, "status", warm=True),
    line(*B, "status", "--json", warm=True),
    line(*B, "index", warm=True),
    line(*B, "skill", "list", warm=True),
    line(*B, "sync", "--no-remote", "--json", warm=True),
    line("hash", "{b}/skills"),
    line("hash", "{b}/skills", "--json"),
    line("hash", "{b}/missing"),
    # the same lines with the user's switch: the click path
    line(*B, "status", "--json", env={"LEDGER_FULL_PATH": "1"}, warm=True),
    line("hash", "{b}/skills", env={"LEDGER_PURE_PYTHON": "1"}),
    # the brain found from the working directory, and from $LEDGER_BRAIN
    line("status", cwd=True),
    line("skill", "list", env={"LEDGER_BRAIN": "{b}"}),
    # reads
    line(*B, "log"),
    line(*B, "log", "--json"),
    line(*B, "skill", "show", "alpha"),
    line(*B, "skill", "show", "alpha", "--json"),
    line(*B, "verify"),
    line(*B, "verify", "--json"),
    line(*B, "diff"),
    # writes
    line(*B, "skill", "create", "gamma", "--description", "The gamma skill", "--body", "gamma body"),
    line(*B, "skill", "create", "gamma", "--description", "The gamma skill", "--body", "gamma body", "--json"),
    line(*B, "skill", "write-file", "alpha", "references/notes.md", "--from", "-", stdin="notes from stdin\n"),
    line(*B, "skill", "write-file", "alpha", "SKILL.md", "--from", "-", stdin=SKILL),
    # refused (exit 1) and usage (exit 2)
    line(*B, "skill", "show", "nope"),
    line(*B, "skill", "show", "nope", "--json"),
    line(*B, "skill", "create", "alpha", "--description", "Again", "--body", "again"),
    line("--brain", "{b}/nowhere", "status"),
    line(*B, "nope"),
    line(*B, "skill", "create"),
    line(*B, "status", "--bogus"),
    line(),
    line("--help"),
    line(*B, "skill", "--help"),
    line("--version"),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    skills = {name: (f"The {name} skill", name) for name in ("alpha", "beta")}
    return make_brain(tmp_path_factory.mktemp("runner") / "template", skills, via="cli")


@pytest.mark.parametrize(("args", "env", "stdin", "warm", "cwd"), LINES)
def test_in_process_answers_as_a_child_process(
    template: Path, tmp_path: Path, args: tuple[str, ...], env: dict[str, str], stdin: str | None, warm: bool, cwd: bool
) -> None:
    brain = tmp_path / "brain"
    argv = [a.replace("{b}", str(brain)) for a in args]
    env = {k: v.replace("{b}", str(brain)) for k, v in env.items()}
    assert why_not_in_process(argv, {**os.environ, **env}, None) is None, argv  # it really runs in this process
    got = {}
    for how, run in (("child", run_ledger), ("in-process", run_in_process)):
        shutil.rmtree(brain, ignore_errors=True)
        copy_brain(template, brain)
        if warm:
            run_ledger("--brain", str(brain), *argv[2:], env=env)
        proc = run(*argv, env=env, input=stdin, cwd=brain if cwd else tmp_path)
        assert proc.args == [LEDGER, *argv]
        got[how] = (proc.returncode, NOW.sub("<now>", proc.stdout), proc.stderr)
    assert got["in-process"] == got["child"]


def test_the_process_is_left_as_it_was(tmp_path: Path) -> None:
    before = (
        dict(os.environ),
        os.getcwd(),
        sys.stdout,
        sys.stderr,
        sys.stdin,
        sys.argv,
        signal.getsignal(signal.SIGINT),
    )
    run_in_process("init", str(tmp_path / "b"), cwd=tmp_path, env={"LEDGER_KEY_PASSWORD": "pw"}, check=True)
    proc = run_in_process("hash", str(tmp_path / "b" / "skills"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    after = (
        dict(os.environ),
        os.getcwd(),
        sys.stdout,
        sys.stderr,
        sys.stdin,
        sys.argv,
        signal.getsignal(signal.SIGINT),
    )
    assert after == before
    from ledger import _env

    assert _env._taken == {}  # the secret taken from the call's environment is forgotten


@pytest.mark.parametrize(
    ("args", "env", "timeout", "why"),
    [
        (("--brain", "b", "mcp"), {}, None, "mcp"),
        (("--brain", "b", "sync", "--watch"), {}, None, "--watch"),
        (("chain", "up"), {}, None, "node"),
        (("--brain", "b", "eval", "run", "s"), {}, None, "subreaper"),
        (("status",), {"LEDGER_PAUSEPOINT": "sync.record"}, None, "LEDGER_PAUSEPOINT"),
        (("status",), {"LEDGER_CRASHPOINT": "x"}, None, "LEDGER_CRASHPOINT"),
        (("status",), {}, 5.0, "timeout"),
        (("status",), {"PYTHONIOENCODING": "latin-1"}, None, "PYTHONIOENCODING"),
        (("status",), {"LC_ALL": "C"}, None, "LC_ALL"),
    ],
)
def test_what_must_run_in_a_child_process(
    args: tuple[str, ...], env: dict[str, str], timeout: float | None, why: str
) -> None:
    reason = why_not_in_process(args, {**os.environ, **env}, timeout)
    assert reason is not None and why in reason, reason


def test_a_refused_call_still_runs_in_a_child(tmp_path: Path) -> None:
    """A crash point ends the process: the runner hands the call to a child, whose exit is 86."""
    run_ledger("init", str(tmp_path / "b"), check=True)
    create = ("--brain", str(tmp_path / "b"), "skill", "create", "s", "--description", "The s skill", "--body", "x")
    proc = run_in_process(*create, env={"LEDGER_CRASHPOINT": "after-journal"})
    assert proc.returncode == 86, proc.stderr


def test_a_thread_the_test_started_keeps_calls_in_a_child_process() -> None:
    """A local server in a thread would see the call's environment and working directory, and write into its stderr."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        reason = why_not_in_process(("status",), dict(os.environ), None)
    finally:
        stop.set()
        thread.join()
    assert reason is not None and "thread" in reason, reason
    assert why_not_in_process(("status",), dict(os.environ), None) is None


def test_the_ledger_registers_no_atexit_hook() -> None:
    """In process, an ``atexit`` hook would run when the test process exits, not when the command does."""
    package = Path(__file__).resolve().parents[2] / "ledger"
    assert [str(p) for p in package.rglob("*.py") if "atexit" in p.read_text()] == []
