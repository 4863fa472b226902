"""The one git runner (ledger/store/git.py): real git, its environment, its timeouts, its errors.

Also the rule it exists for: no module of the package but the runner builds a ``git`` command line
(issue 51; the census's ``git_argv_modules``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from pathlib import Path

import pytest

from ledger.errors import SourceError, StoreError
from ledger.sources.origins import redacted
from ledger.store.git import LOCAL, NETWORK, WHOLE, Git, reason

ROOT = Path(__file__).resolve().parents[3]


def _repo(path: Path) -> tuple[Path, bytes, bytes, bytes]:
    """A repository with main: a - b, and a side commit c off a; its git dir and the three commits."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(path), *args], check=True, capture_output=True, text=True, env=env
        ).stdout.strip()

    path.mkdir()
    git("init", "-q", "--initial-branch=main")
    git("commit", "-q", "--allow-empty", "-m", "a")
    a = git("rev-parse", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "b")
    b = git("rev-parse", "HEAD")
    git("checkout", "-q", "-b", "side", a)
    git("commit", "-q", "--allow-empty", "-m", "c")
    c = git("rev-parse", "HEAD")
    return path / ".git", bytes.fromhex(a), bytes.fromhex(b), bytes.fromhex(c)


def test_one_timeout_policy_local_below_network_below_whole() -> None:
    assert 0 < LOCAL < NETWORK <= WHOLE


def test_ancestry_merge_base_and_rev_parse(tmp_path: Path) -> None:
    git_dir, a, b, c = _repo(tmp_path / "r")
    g = Git(git_dir)
    assert g.is_ancestor(a, b) and g.is_ancestor(a, a) and g.is_ancestor(a.hex(), c.hex())
    assert not g.is_ancestor(b, a) and not g.is_ancestor(b, c)
    assert not g.is_ancestor(bytes(20), b)  # unknown here: not an ancestor, not an error
    assert not g.is_ancestor("--help", b.hex()) and not g.is_ancestor("", b.hex())  # never read as an option
    assert g.merge_base(b, c) == a
    assert g.rev_parse("main") == b and g.rev_parse("side~1") == a
    assert g.rev_parse("no-such-branch") is None and g.rev_parse("--all") is None


def test_a_failure_names_what_failed_and_why_in_the_callers_class(tmp_path: Path) -> None:
    git_dir, *_ = _repo(tmp_path / "r")
    with pytest.raises(StoreError) as exc:
        Git(git_dir).run("cat-file", "-p", "no-such-object", what="reading the object")
    assert exc.value.message.startswith("reading the object: ")
    assert "no-such-object" in exc.value.message  # git's own reason, its "fatal: " dropped
    assert "fatal:" not in exc.value.message
    assert exc.value.detail["command"] == f"git --git-dir={git_dir} cat-file -p no-such-object"
    assert "no-such-object" in str(exc.value.detail["stderr"])
    with pytest.raises(SourceError) as without_what:
        Git(git_dir, error=SourceError).run("cat-file", "-p", "no-such-object", hint="check the ref")
    assert without_what.value.message.startswith(f"git --git-dir={git_dir} cat-file -p no-such-object: ")
    assert without_what.value.hint == "check the ref"


def test_reason_is_the_line_that_says_why() -> None:
    assert reason(b"warning: x\nfatal: repository 'r' not found\n") == "repository 'r' not found"
    assert (
        reason("ssh: connect to host h port 22: Connection refused\nfatal: Could not read\n")
        == "ssh: connect to host h port 22: Connection refused"
    )
    assert reason(b"") == "git failed"


def test_the_child_environment_withholds_secrets_and_adds_the_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_KEY_PASSWORD", "hunter2-secret")
    out = Git(env={"GIT_TERMINAL_PROMPT": "0"}).run("-c", "alias.penv=!env", "penv").decode()
    assert "hunter2-secret" not in out and "LEDGER_KEY_PASSWORD" not in out
    assert "GIT_TERMINAL_PROMPT=0" in out.splitlines()


def test_a_credential_in_a_location_is_never_shown(tmp_path: Path) -> None:
    url = "https://someone:tok3n-value@127.0.0.1:9/repo.git"  # port 9 (discard): refused at once
    with pytest.raises(SourceError) as exc:
        Git(tmp_path, env={"GIT_TERMINAL_PROMPT": "0"}, error=SourceError, redact=redacted).ls_remote(
            url, "HEAD", what=f"reading {url}", timeout=LOCAL
        )
    shown = f"{exc.value.message} {exc.value.detail}"
    assert "tok3n-value" not in shown and "someone:" not in shown
    assert "127.0.0.1:9/repo.git" in exc.value.message


def test_a_timeout_is_an_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # git blocks opening it for reading: no writer ever comes
    started = time.monotonic()
    with pytest.raises(StoreError) as exc:
        Git().run("hash-object", str(fifo), timeout=0.5, what="hashing the fifo")
    assert time.monotonic() - started < 10
    assert exc.value.message == "hashing the fifo: git took longer than 0.5 s"


def test_a_watch_that_raises_stops_git(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    calls: list[float] = []

    def watch() -> None:
        calls.append(time.monotonic())
        if len(calls) == 3:
            raise SourceError("enough")

    started = time.monotonic()
    with pytest.raises(SourceError, match="enough"):
        Git().run("hash-object", str(fifo), watch=watch)
    assert len(calls) == 3 and time.monotonic() - started < 10


def test_only_the_runner_builds_git_command_lines() -> None:
    spec = importlib.util.spec_from_file_location("census", ROOT / "scripts" / "census.py")
    assert spec is not None and spec.loader is not None
    census = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(census)
    figures = census.census(ROOT)
    assert figures["git_argv_modules"] == {"ledger.store.git": 1}, figures["git_argv_modules"]
    assert figures["git_runners"] == []
