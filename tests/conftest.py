"""Shared fixtures: real brains in temporary directories, and the real CLI."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.brain import Brain

LEDGER = str(Path(sys.executable).with_name("ledger"))


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
    """Every process a test starts carries ``LEDGERTEST_CASE`` (tests/procs.py), and whatever still runs when
    the test ends is killed, so a test that fails never leaves its children to the next.  This is a net, not
    the rule: each harness stops what it started itself (tests/test_harnesses.py proves it), and what the
    ledger detaches on purpose (its packer) ends by itself.  Fixtures of a wider scope (``node``) are made
    before this one and keep running."""
    import warnings

    from tests import procs

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

    brain = Brain.init(tmp_path / "brain")
    brain.update_config(chain={"rpc": node.url})
    deploy(brain, key=DEV_KEY_NAME)
    register(brain, shares=1000, key=DEV_KEY_NAME)
    try:
        yield brain
    finally:
        brain.close()


@pytest.fixture
def brain(tmp_path: Path):
    b = Brain.init(tmp_path / "brain")
    try:
        yield b
    finally:
        b.close()


def run_ledger(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``ledger`` console script, as a user would."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    full_env.update(env or {})
    proc = subprocess.run(
        [LEDGER, *args], cwd=cwd, env=full_env, input=input, capture_output=True, text=True, timeout=120
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"ledger {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def ledger() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_ledger


def _walk(root: Path, prune: set[Path]) -> list[Path]:
    """Every file and link under ``root``, sorted, never descending into ``prune``: the packer empties
    and removes object directories while a test walks, and a walk must not trip over that."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=lambda _exc: None):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in prune and not (here / d).is_symlink()]
        found += [here / f for f in filenames]
        found += [here / d for d in os.listdir(here) if (here / d).is_symlink()] if os.path.isdir(here) else []
    return sorted(set(found))


def fingerprint(root: Path) -> dict[str, str]:
    """Every file of a brain (working tree and git store) with its content hash and mode.

    The lock file, the digest cache and the packer's files are excluded: they are
    bookkeeping that may change without the brain changing. The git object store is
    taken as the set of object ids it holds, not as files: a detached packer may move
    objects from loose files into packs at any moment, and that changes no object.
    """
    out: dict[str, str] = {}
    git_dir = root / ".git" if (root / ".git").is_dir() else root  # a brain, or a bare repository
    store = git_dir.relative_to(root).as_posix() + "/" if git_dir != root else ""
    packed: tuple[str, ...] = ()  # what a packer or gc may rewrite without changing an object
    if (git_dir / "objects").is_dir() and (git_dir / "HEAD").is_file():
        packed = (store + "objects/", store + "info/refs")  # info/refs: written by gc for dumb transports
        objects = subprocess.run(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        out[store + "objects"] = hashlib.sha256("\n".join(sorted(set(objects))).encode()).hexdigest()
    for path in _walk(root, prune={git_dir / "objects"} if packed else set()):
        rel = path.relative_to(root).as_posix()
        if rel.startswith((".ledger/lock", ".ledger/cache", ".ledger/gc", *packed)):
            continue
        try:
            data = path.read_bytes() if not path.is_symlink() else os.readlink(path).encode()
            mode = path.lstat().st_mode
        except FileNotFoundError:  # the packer's own files come and go; a brain's never do unasked
            continue
        out[rel] = f"{hashlib.sha256(data).hexdigest()} {mode:o}"
    return out


@contextlib.contextmanager
def two_copies(tmp_path: Path, skills: dict[str, str]) -> Iterator[tuple[Any, Path, Any]]:
    """Brain ``a`` with ``skills`` (name → body), pushed to a bare remote, and ``b`` cloned from it."""
    from ledger.remotes import sharing

    a = Brain.init(tmp_path / "a")
    for name, body in skills.items():
        a.create(name, name.upper(), body)
    remote = tmp_path / "remote.git"
    sharing.push(a, str(remote))
    b = sharing.clone(str(remote), tmp_path / "b")
    try:
        yield a, remote, b
    finally:
        a.close()
        b.close()
