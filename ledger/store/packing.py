"""Packing the snapshot store: loose objects into delta-compressed packs, off the write path.

Every upsert writes its objects loose (level-0 zlib, so a write costs a copy), and on a
large brain most of that is the new ``skills/`` tree: about 40 bytes a skill, every
time.  Left alone the store grows by the size of the brain per upsert.  Packed with
deltas, successive trees cost almost nothing.

- **Bounded and detached.** Every ``gc.every`` writes (default 64), or every
  ``gc.bytes`` of loose objects (default 4 MB), whichever comes first, the writer
  starts ``python -m ledger.store.packing`` in its own session and returns; no upsert waits
  for a pack.  The packer waits for a pause in the writes (at most 30 s, or until
  8 × ``gc.bytes`` are loose), so a burst of upserts does not share the disk with a
  pack, then runs ``git repack --geometric=2 -d``: loose objects go into
  one new pack, and packs are rolled together only as needed to keep a geometric
  progression, so the work per run stays proportional to what is new.
- **Never drops an object.** ``repack -d`` removes loose objects only once they are in
  a pack, and packs only once another pack holds all they held; nothing is pruned, so
  an object a concurrent writer has just written (reachable or not yet) survives.
  ``ledger gc --full`` repacks everything into one pack keeping unreachable objects
  (``-a -k``), then checks connectivity.
- **Safe beside readers and writers.** Git writes a pack under a temporary name and
  renames it into place with its index, so no reader sees a half-written pack; a
  reader that misses an object re-scans the packs.  One packer runs at a time
  (``.ledger/gc.lock``); it needs no writer lock.  A killed packer's temporary files
  are removed by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from ledger._env import child_env
from ledger.errors import StoreError
from ledger.store.git import WHOLE, Git

__all__ = ["DEFAULT_EVERY", "no_repack", "note_write", "pack", "store_size"]

DEFAULT_EVERY = 64  # writes between automatic packs
DEFAULT_BYTES = 4 << 20  # or loose bytes written since the last pack, whichever comes first
_COUNTER = "gc-writes"
_LOCK = "gc.lock"
_FULL = "gc-full"  # a bulk write asked for one repack of everything (its pack has no deltas)


def store_size(git_dir: Path) -> dict[str, int]:
    """Bytes and counts of loose objects and packs (as ``git count-objects -v`` reports them)."""
    loose = loose_bytes = packs = pack_bytes = 0
    objects = git_dir / "objects"
    with contextlib.suppress(FileNotFoundError):
        for d in os.scandir(objects):
            if len(d.name) == 2 and d.is_dir():
                for f in os.scandir(d.path):
                    loose += 1
                    loose_bytes += f.stat().st_size
    with contextlib.suppress(FileNotFoundError):
        for f in os.scandir(objects / "pack"):
            if f.name.endswith((".pack", ".idx")):
                packs += f.name.endswith(".pack")
                pack_bytes += f.stat().st_size
    return {
        "loose": loose,
        "loose_bytes": loose_bytes,
        "packs": packs,
        "pack_bytes": pack_bytes,
        "bytes": loose_bytes + pack_bytes,
    }


def note_write(
    git_dir: Path, control: Path, every: int, written: int, limit: int = DEFAULT_BYTES, bulk: int = 0
) -> bool:
    """Count one write of ``written`` loose bytes (the caller holds the writer lock).

    Every ``every`` writes, or once ``limit`` loose bytes have piled up since the last
    pack, start a packer.  Returns whether one was started.  ``every`` ≤ 0 disables
    automatic packing.  ``bulk`` bytes went into an undeltified pack (ledger.store.packwrite):
    the next packer repacks everything once, so they get their deltas.
    """
    if every <= 0:
        return False
    if bulk:
        (control / _FULL).touch()
        written += bulk
    counter = control / _COUNTER
    try:
        writes, size = (int(x) for x in counter.read_text().split())
    except (FileNotFoundError, ValueError):
        writes = size = 0
    writes, size = writes + 1, size + written
    if (writes < every and size < limit and not bulk) or _packer_running(control):
        counter.write_text(f"{writes} {size}")  # a running packer: the next write asks again
        return False
    counter.write_text("0 0")
    log = open(control / "gc.log", "ab")  # noqa: SIM115 - handed to the child
    try:
        subprocess.Popen(
            [sys.executable, "-m", "ledger.store.packing", str(git_dir), str(control), str(8 * limit)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env=child_env(),
        )
    finally:
        log.close()
    return True


def _packer_running(control: Path) -> bool:
    with _packer_lock(control, wait=False) as free:
        return not free


@contextlib.contextmanager
def _packer_lock(control: Path, wait: bool) -> Iterator[bool]:
    fd = os.open(control / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def no_repack(control: Path) -> Iterator[None]:
    """Hold off the packer while a reader lists and opens packs (``git fsck``): a repack deletes
    the packs it replaced, and a pack listed before that and opened after is an error."""
    with _packer_lock(control, wait=True):
        yield


QUIET_S = 0.5  # an automatic pack starts once writes pause this long ...
MAX_DEFER_S = 30.0  # ... or after this long at most ...
DEFER_BYTES = 8 * DEFAULT_BYTES  # ... or once this many loose bytes wait, whichever comes first


class Clock(Protocol):
    """What :func:`_await_quiet` reads the time with: the :mod:`time` module, or a test's own clock."""

    def monotonic(self) -> float: ...
    def time(self) -> float: ...
    def sleep(self, seconds: float, /) -> None: ...


def _await_quiet(control: Path, limit: int, clock: Clock = time) -> float:
    """Hold off while writes keep coming: how long this waited.

    A pack written beside a burst of upserts slows the ones it meets (they share the
    disk), so the detached packer, holding its lock, waits for a pause in the writes
    (the counter file is touched by every write).  The wait is bounded by time and by
    the loose bytes piling up, so a brain written without pause is still packed.
    ``clock`` is :mod:`time` but in a test, which drives the writes from its own clock
    instead of sleeping through them.
    """
    started = clock.monotonic()
    counter = control / _COUNTER
    while clock.monotonic() - started < MAX_DEFER_S:
        try:
            st = counter.stat()
        except OSError:
            break
        try:
            waiting = int(counter.read_text().split()[1])
        except (OSError, ValueError, IndexError):
            waiting = 0  # read while a writer rewrote it: a write, so not quiet
        if clock.time() - st.st_mtime >= QUIET_S or waiting >= limit:
            break
        clock.sleep(0.1)
    return clock.monotonic() - started


def pack(
    git_dir: Path,
    control: Path,
    *,
    full: bool = False,
    wait: bool = False,
    check: bool = False,
    defer_bytes: int = 0,
) -> dict[str, Any]:
    """Pack loose objects (geometric roll-up), or with ``full`` everything into one pack.

    Without ``wait``, returns at once when another packer holds the lock.  ``check``
    (implied by ``full``) runs ``git fsck --connectivity-only`` afterwards.  With
    ``defer_bytes`` (the automatic packer), first wait for a pause in the writes.
    """
    with _packer_lock(control, wait) as held:
        if not held:
            return {"skipped": "another pack is running"}
        deferred = _await_quiet(control, defer_bytes) if defer_bytes else 0.0
        for leftover in (git_dir / "objects" / "pack").glob("tmp_*"):
            leftover.unlink(missing_ok=True)  # a killed packer's; we hold the only packer lock
        for leftover in (git_dir / "objects").glob("tmp_obj_*"):
            leftover.unlink(missing_ok=True)  # staged by a killed writer of an older version (ADR 12)
        before = store_size(git_dir)
        started = time.monotonic()
        flag = control / _FULL
        try:
            asked = flag.stat().st_mtime_ns  # a bulk write during this repack asks again
        except FileNotFoundError:
            asked = None
        after_bulk = not full and asked is not None
        if full:
            args = ["repack", "-d", "-q", "-a", "-k", "--window=250", "--depth=50"]
        elif after_bulk:  # everything once, keeping unreachable objects, as `ledger gc --full` does
            args = ["repack", "-d", "-q", "-a", "-k", "-f"]  # -f: search deltas for what the bulk pack stored whole
        else:
            args = ["repack", "-d", "-q", "--geometric=2"]
        Git(git_dir).run(*args, timeout=WHOLE, what="git repack failed")
        with contextlib.suppress(FileNotFoundError):
            if asked is not None and flag.stat().st_mtime_ns == asked:
                flag.unlink()
        seconds = time.monotonic() - started
        result = {
            "full": full or after_bulk,
            "seconds": round(seconds, 3),
            "deferred": round(deferred, 3),
            "before": before,
            "after": store_size(git_dir),
        }
        if full or check:
            _connected(git_dir)
            result["connectivity"] = "ok"
        return result


def _connected(git_dir: Path) -> None:
    """``git fsck --connectivity-only``, read right while writers run beside it.

    fsck lists the loose objects once, then reads refs and reflogs: a commit a writer
    published and pointed ``main`` at in between is reported missing though it exists
    (seen under load as "invalid reflog entry"). An object that is really missing stays
    missing, so a failure is believed when an object it names is absent, or when three
    runs in a row fail.
    """
    git = Git(git_dir)
    for _ in range(3):
        fsck = git.call("fsck", "--connectivity-only", "--no-dangling", timeout=WHOLE)
        if fsck.returncode == 0:
            return
        stderr = fsck.stderr.decode("utf-8", "replace")
        named = set(re.findall(r"\b[0-9a-f]{40}\b", stderr))
        if not named or not all(git.call("cat-file", "-e", sha).returncode == 0 for sha in named):
            break  # really missing
    raise StoreError(f"after packing, git fsck finds the store incomplete: {stderr.strip()}")


def _yield_to_writers() -> None:
    """Run the packer, and the git it starts, only when no writer wants the CPU.

    ``nice 10`` was not enough: on two cores git's delta search kept both busy, and a
    writer woken from an fsync or a pipe read waited for a scheduler tick each time, so
    the upserts that met a pack took 30 ms instead of 7 (p99 3.3× p50).  ``SCHED_IDLE``
    is preempted at once by any normal task; it is inherited by git across exec.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(10)


if __name__ == "__main__":  # the detached packer started by note_write
    _yield_to_writers()  # a pack may take longer, an upsert may not
    out = pack(Path(sys.argv[1]), Path(sys.argv[2]), defer_bytes=int(sys.argv[3]) if len(sys.argv) > 3 else DEFER_BYTES)
    print(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **out}), flush=True)
