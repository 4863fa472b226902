"""The one git runner: every ``git`` command line the ledger runs is built and run here (ADR 71).

One environment rule: a child git gets :func:`ledger._env.child_env` (this process's secrets
withheld), plus whatever variables a caller adds (``GIT_ALLOW_PROTOCOL``, no terminal prompts).
One timeout policy, by what the command does (a timeout is an error, never a hang):

- :data:`LOCAL`: plumbing on a repository of this machine (a ref, an object, an ancestry check,
  a diff of two trees, a config line);
- :data:`NETWORK`: a fetch, push or ``ls-remote`` (a remote, or a large copy on another disk);
- :data:`WHOLE`: work over a whole history or store (a walk of every commit, ``fsck``, ``repack``).

One error rule: a failure raises the caller's error class (:class:`~ledger.errors.StoreError` unless
it names another) saying what failed (``what``, else the command) and why, in git's own words
(:func:`reason`); ``detail`` holds the command line and git's stderr, passed through the caller's
``redact`` (a source's URL may carry a credential: :func:`ledger.sources.origins.redacted`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ledger._env import child_env
from ledger.errors import LedgerError, StoreError

__all__ = ["LOCAL", "NETWORK", "WHOLE", "Git", "reason"]

LOCAL = 120.0  # seconds: plumbing on this machine (refs, objects, ancestry, a diff, config)
NETWORK = 600.0  # a fetch, push or ls-remote
WHOLE = 3600.0  # a whole history or store: rev-list of every commit, fsck, repack

_POLL = 0.05  # seconds between two calls of a watched command's ``watch``


def reason(stderr: bytes | str) -> str:
    """The one reason a failed git gives: its first line that says why (ssh's, or the first fatal or error
    line), never the closing boilerplate ("Please make sure … and the repository exists.")."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    said = next((ln for ln in lines if ln.startswith(("ssh:", "fatal:", "error:"))), lines[0] if lines else "")
    return said.removeprefix("fatal: ").removeprefix("error: ") or "git failed"


class Git:
    """git for one repository, ``git_dir`` (None: a command that names its own, as ``init`` or
    ``merge-file``).  ``env`` adds variables to :func:`child_env`; ``error`` is the class a failure
    raises; ``redact`` shows an argument or a line of git's output as a message may show it."""

    def __init__(
        self,
        git_dir: Path | str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        error: type[LedgerError] = StoreError,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.git_dir = git_dir
        self.env = dict(env or {})
        self.error = error
        self.redact = redact or (lambda s: s)

    def argv(self, *args: str) -> list[str]:
        return ["git", *([f"--git-dir={self.git_dir}"] if self.git_dir is not None else []), *args]

    def _shown(self, text: str) -> str:
        """``text`` with each word as ``redact`` shows it."""
        return re.sub(r"\S+", lambda m: self._word(m.group()), text)

    def _word(self, word: str) -> str:
        try:
            return self.redact(word)
        except ValueError:  # a word the redaction cannot parse is not shown at all
            return "…"

    def _fail(self, args: Sequence[str], what: str | None, why: str, hint: str | None, stderr: str = "") -> LedgerError:
        command = self._shown(" ".join(self.argv(*args)))
        said = self._shown(f"{what}: {why}" if what else f"{command}: {why}")
        return self.error(said, hint=hint, command=command, stderr=self._shown(stderr))

    def call(
        self,
        *args: str,
        input: bytes | None = None,
        timeout: float = LOCAL,
        what: str | None = None,
        watch: Callable[[], None] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git args`` and return how it ended, whatever its exit status (for a command whose status is
        its answer).  A timeout, or a git that cannot start, raises.  ``watch`` is called every few
        milliseconds while git runs (output then goes to a file, git in its own process group) and may
        raise to stop it: the process group is killed."""
        env = {**child_env(), **self.env}
        try:
            if watch is not None:
                return _watched(self.argv(*args), env, timeout, watch)
            return subprocess.run(
                self.argv(*args),
                input=input,
                capture_output=True,
                env=env,
                timeout=timeout,
                stdin=None if input is not None else subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise self._fail(
                args,
                what,
                f"git took longer than {timeout:g} s",
                "try again; if it keeps happening, check the repository or the remote",
            ) from None
        except OSError as exc:
            raise self._fail(args, what, f"git cannot run ({exc.strerror})", "install git") from None

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        timeout: float = LOCAL,
        what: str | None = None,
        hint: str | None = None,
        watch: Callable[[], None] | None = None,
    ) -> bytes:
        """git's output; a non-zero exit raises the error class with ``what`` (else the command) and git's
        :func:`reason`."""
        proc = self.call(*args, input=input, timeout=timeout, what=what, watch=watch)
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "replace")
            raise self._fail(args, what, reason(stderr), hint, stderr)
        return proc.stdout

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """A long-lived git reading requests on stdin (``cat-file --batch``); its stderr is discarded."""
        return subprocess.Popen(
            self.argv(*args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**child_env(), **self.env},
        )

    # ---------------------------------------------------------------- the operations callers share

    def is_ancestor(self, a: bytes | str, b: bytes | str) -> bool:
        """Whether commit ``a`` is ``b`` or an ancestor of it (False too when either is unknown here, or is
        no revision at all: neither is ever read as an option)."""
        revs = [_hex(a), _hex(b)]
        if any(not r or r.startswith("-") for r in revs):
            return False
        return self.call("merge-base", "--is-ancestor", *revs).returncode == 0

    def merge_base(self, a: bytes, b: bytes) -> bytes | None:
        """The best common ancestor of two commits, or None when they share none."""
        proc = self.call("merge-base", a.hex(), b.hex())
        out = proc.stdout.strip()
        return bytes.fromhex(out.decode()) if proc.returncode == 0 and out else None

    def rev_parse(self, rev: str) -> bytes | None:
        """The commit ``rev`` names, or None when it names none (``rev`` is never read as an option)."""
        proc = self.call("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
        try:
            return bytes.fromhex(proc.stdout.strip().decode()) if proc.returncode == 0 else None
        except ValueError:
            return None

    def fetch(
        self,
        remote: str,
        *specs: str,
        options: Sequence[str] = (),
        what: str,
        hint: str | None = None,
        watch: Callable[[], None] | None = None,
    ) -> None:
        """``git fetch`` of ``specs`` from ``remote`` (never read as an option), quietly, without tags or
        ``FETCH_HEAD``; ``options`` go before the subcommand's own (``-c fetch.fsckObjects=true``)."""
        config, flags = _split_config(options)
        self.run(
            *config,
            "fetch",
            "-q",
            "--no-tags",
            "--no-write-fetch-head",
            *flags,
            "--",
            remote,
            *specs,
            timeout=NETWORK,
            what=what,
            hint=hint,
            watch=watch,
        )

    def push(self, remote: str, *specs: str, options: Sequence[str] = ()) -> subprocess.CompletedProcess[bytes]:
        """``git push`` of ``specs`` to ``remote``, and how it ended: a refused push is the caller's to read."""
        return self.call("push", *options, "--", remote, *specs, timeout=NETWORK, what=f"pushing to {remote}")

    def ls_remote(
        self,
        remote: str,
        *patterns: str,
        options: Sequence[str] = (),
        what: str,
        hint: str | None = None,
        timeout: float = NETWORK,
    ) -> bytes:
        """``git ls-remote`` of ``patterns`` at ``remote`` (never read as an option)."""
        return self.run("ls-remote", *options, "--", remote, *patterns, timeout=timeout, what=what, hint=hint)


def _hex(commit: bytes | str) -> str:
    return commit.hex() if isinstance(commit, bytes) else commit


def _split_config(options: Sequence[str]) -> tuple[list[str], list[str]]:
    """``-c name=value`` pairs (git's own options) apart from the subcommand's flags."""
    config: list[str] = []
    flags: list[str] = []
    it = iter(options)
    for opt in it:
        if opt == "-c":
            config += [opt, next(it)]
        else:
            flags.append(opt)
    return config, flags


def _watched(
    argv: list[str], env: dict[str, str], timeout: float, watch: Callable[[], None]
) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` in its own process group, calling ``watch`` while it runs; kill the group when ``watch``
    raises or ``timeout`` passes (then :class:`subprocess.TimeoutExpired`)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    proc.wait(timeout=_POLL)
                    break
                except subprocess.TimeoutExpired:
                    pass
                watch()
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(argv, timeout)
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, proc.returncode, out.read(), err.read(65536))
