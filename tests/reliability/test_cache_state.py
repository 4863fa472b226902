"""Deleting, corrupting or rolling back ``.ledger/cache/`` changes no answer (issue 51, item 4b; ledger/store/state.py).

A seeded random sequence of real writes (``skill create``, a hand edit and ``snapshot``, ``outcome
record``, an edit in a linked target and ``sync``) runs through the installed ``ledger`` command on a
real brain.  Before and after each write the cache is damaged at random: a file deleted, truncated,
a byte flipped, filled with noise or with JSON of another shape, the whole directory removed, or a
file put back as it was at an earlier step (a stale entry: the sharpest test of "keyed by object
id or head").  Then every answer (status, its JSON, the skill list, the index, verify, each skill's
evidence figures, the batches, a no-op sync) is read twice: with the cache as the damage left it,
and again with no cache at all, computed from the store alone.  They must be equal, byte for byte.

The skills' and the target's mtimes are set back after each write, as time passing would, so the
stat caches keep their entries (a racily clean tree is not cached) and the quick paths answer.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.unit.sync.test_sync import _ledger, _setup

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")

SEEDS = (1, 2, 3)
STEPS = 7
# Each read is compared with its exit status and both streams; verify must pass besides.
READS = (
    ("status",),
    ("status", "--json"),
    ("skill", "list"),
    ("index",),
    ("verify",),
    ("outcome", "batches"),
    ("sync",),
)
MODES = ("none", "none", "none", "delete", "truncate", "flip", "noise", "shape", "stale", "stale", "stale")
SHAPES = (  # JSON of other shapes
    '{"format": 3, "names": "x"}',
    "[]",
    "null",
    '{"key": 1, "pending": "2"}',
    '{"head": null, "regressions": 0}',
    '{"commit": 1, "blob": null, "withheld": "ab"}',
    '{"alpha": {"SKILL.md": [1]}, "beta": []}',
)


def _answers(brain: Path, env: dict[str, str], names: list[str]) -> dict[str, tuple[int, str, str]]:
    out = {}
    for args in [*READS, *(("show", n, "--stats") for n in names)]:
        proc = _ledger(brain, env, *args, check=False)
        out[" ".join(args)] = (proc.returncode, proc.stdout, proc.stderr)
    assert out["verify"][0] == 0, out["verify"]
    return out


def _age(*folders: Path) -> None:
    """Set every mtime under ``folders`` ten seconds back: their stat entries are then kept."""
    then = time.time() - 10
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            if not path.is_symlink():
                os.utime(path, (then, then))


def _damage(rng: random.Random, cache: Path, kept: list[dict[str, bytes]]) -> str:
    """Damage the cache: now and then the whole directory, else each file (and each file an earlier
    step had) one random way; what was done (for the failure message)."""
    if rng.random() < 0.1:
        shutil.rmtree(cache, ignore_errors=True)
        return "rmdir"
    done = []
    here = {p.name for p in cache.iterdir() if p.is_file()} if cache.is_dir() else set()
    for name in sorted(here | {n for old in kept for n in old}):
        path = cache / name
        data = path.read_bytes() if path.is_file() else None
        how = rng.choice(MODES)
        if how == "stale":
            old = [o[name] for o in kept if name in o and o[name] != data]
            if not old:
                continue
            cache.mkdir(parents=True, exist_ok=True)
            path.write_bytes(rng.choice(old))
        elif how == "none" or data is None:
            continue
        elif how == "delete":
            path.unlink()
        elif how == "truncate":
            path.write_bytes(data[: rng.randrange(len(data) + 1)])
        elif how == "flip" and data:
            at = rng.randrange(len(data))
            path.write_bytes(data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :])
        elif how == "noise":
            path.write_bytes(rng.randbytes(rng.randrange(1, 200)))
        elif how == "shape":
            path.write_text(rng.choice(SHAPES))
        done.append(f"{how} {name}")
    return ", ".join(done) or "none"


def _step(rng: random.Random, brain: Path, env: dict[str, str], target: Path, names: list[str], i: int) -> str:
    """One random write; what it was."""
    what = rng.choice(["create", "edit", "outcome", "outcome", "target", "none"])
    if what == "create" or not names:
        name = f"s{i}"
        _ledger(brain, env, "skill", "create", name, "--description", f"Do {name}.", "--body", f"# {name}\n\nStep.\n")
        names.append(name)
        what = f"create {name}"
    elif what == "edit":
        name = rng.choice(names)
        md = brain / "skills" / name / "SKILL.md"
        md.write_text(md.read_text() + f"\nEdit {i}.\n")
        _ledger(brain, env, "snapshot", "-m", f"edit {i}")
        what = f"edit {name}"
    elif what == "outcome":
        name = rng.choice(names)
        verdict = rng.choice(["--success", "--failure"])
        _ledger(brain, env, "outcome", "record", name, "--task", f"task-{i}", verdict)
        what = f"outcome {name} {verdict}"
    elif what == "target":
        name = rng.choice(names)
        md = target / name / "SKILL.md"
        if md.is_file():
            md.write_text(md.read_text() + f"\nIn the target {i}.\n")
        what = f"target edit {name}"
    proc = _ledger(brain, env, "sync", "--json", check=False)  # every step ends in step with the target
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _age(brain / "skills", target)
    return what


@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_or_stale_cache_changes_no_answer(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    brain, env = _setup(tmp_path, "alpha", "beta")
    target = tmp_path / "rt"
    _ledger(brain, env, "link", str(target))
    _ledger(brain, env, "sync")
    _age(brain / "skills", target)
    cache = brain / ".ledger" / "cache"
    names, kept, story = ["alpha", "beta"], [], []
    for i in range(STEPS):
        story.append(f"before: {_damage(rng, cache, kept)}")
        story.append(_step(rng, brain, env, target, names, i))
        story.append(f"after: {_damage(rng, cache, kept)}")
        as_is = _answers(brain, env, names)
        if cache.is_dir():
            kept.append({p.name: p.read_bytes() for p in cache.iterdir() if p.is_file()})
        shutil.rmtree(cache, ignore_errors=True)
        fresh = _answers(brain, env, names)  # from the store alone; it fills the cache again
        for read in fresh:
            assert as_is[read] == fresh[read], f"seed {seed}, `ledger {read}` after: {'; '.join(story)}"
        kept.append({p.name: p.read_bytes() for p in cache.iterdir() if p.is_file()})
    used = set().union(*kept)  # the caches really were there to be damaged
    assert used >= {"stat-v1.json", "supply-v1.json", "digests-v2.bin", "catalog-v1.json", "sync-rt.json"}, used


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path: Path) -> None:
    """The one atomic write: the bytes land whole with the mode asked (else the umask's), and a write
    that fails leaves the old file and no temporary file beside it."""
    from ledger._fs import atomic_write

    path = tmp_path / "hook"
    atomic_write(path, b"old")
    umask = os.umask(0o022)
    os.umask(umask)
    assert path.read_bytes() == b"old" and path.stat().st_mode & 0o777 == 0o666 & ~umask
    atomic_write(path, b"#!/bin/sh\n", mode=0o755, durable=False)
    assert path.read_bytes() == b"#!/bin/sh\n" and path.stat().st_mode & 0o777 == 0o755
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "x").write_text("in the way")
    with pytest.raises(OSError):
        atomic_write(tmp_path / "dir", b"new")  # a non-empty directory cannot be replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "hook"]


def test_a_cache_reader_misses_and_never_raises(tmp_path: Path) -> None:
    """The one rule (ledger._fs): missing, undecodable or of another shape is ``None``; the version is in the name."""
    from ledger._fs import PENDING, cache_name, cache_path, read_cache, read_cache_json, sync_stats
    from ledger.store.state import State

    assert cache_name(*PENDING) == "pending-v1.json" and cache_name(*sync_stats("a")) == "sync-a.json"
    state = State(tmp_path / ".ledger")
    assert state.path(PENDING) == cache_path(tmp_path / ".ledger", *PENDING)
    want = lambda doc: doc["pending"] if type(doc["pending"]) is int else None  # noqa: E731
    assert state.read_json(PENDING, want) is None  # missing
    for junk in (b"", b"\xff\xfe", b"[" * 100_000, b"[]", b'{"pending": "1"}', b"1e999999"):
        state.path(PENDING).parent.mkdir(parents=True, exist_ok=True)
        state.path(PENDING).write_bytes(junk)
        assert state.read_json(PENDING, want) is None, junk
    assert state.write_json(PENDING, {"pending": 3}) and state.read_json(PENDING, want) == 3
    assert read_cache(tmp_path / "nowhere" / "x.bin", bytes) is None
    assert read_cache_json(state.path(PENDING), want) == 3


def test_a_deeply_nested_cache_file_is_a_miss_even_after_eth_account_raised_the_recursion_limit(tmp_path: Path) -> None:
    """py_ecc (imported with eth-account, as every signing command does) raises the recursion limit to
    100,000 on import, past what the C stack holds: a damaged cache file nested that deep must still be a
    miss, not a segfault.  In a child process, so a crash fails this test rather than the test worker."""
    deep = tmp_path / "pending-v1.json"
    deep.write_bytes(b"[" * 200_000)
    code = (
        "import sys, eth_account; from ledger._fs import read_cache_json; "
        "assert sys.getrecursionlimit() >= 100_000; "
        f"print(read_cache_json({str(deep)!r}, lambda doc: doc), sys.getrecursionlimit())"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.split() == ["None", "100000"]  # a miss, and the limit is given back
