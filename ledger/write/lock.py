"""The brain's writer lock: one writer at a time, across threads and processes.

Taking it first settles what a killed writer left (its stale git ref locks and temp
files, and its journal, rolled forward): the brain hands the lock a ``settle`` callback,
the writer's, so the lock knows nothing of journals.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ledger.errors import LockedError
from ledger.store import treehash as th

__all__ = ["WriterLock"]


class WriterLock:
    """``flock`` on ``.ledger/lock``, re-entrant within a thread; waits up to ``LEDGER_LOCK_TIMEOUT`` seconds."""

    def __init__(self, control: Path, cache: th.DigestCache, settle: Callable[[bool], None]) -> None:
        self.control, self.cache, self.settle = control, cache, settle
        self._fd: int | None = None
        self._thread_lock = threading.RLock()

    @property
    def held(self) -> bool:
        return self._fd is not None

    @contextlib.contextmanager
    def locked(self, *, recover: bool = True) -> Iterator[None]:
        """Hold the lock; ``recover=False`` skips only the journal's roll-forward when taking it."""
        with self._thread_lock:
            if self._fd is not None:
                yield
                return
            with self._flocked(recover):
                yield

    @contextlib.contextmanager
    def _flocked(self, recover: bool) -> Iterator[None]:
        path = self.control / "lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + float(os.environ.get("LEDGER_LOCK_TIMEOUT", "30"))
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    os.close(fd)
                    raise LockedError(
                        f"the brain is locked by another writer (pid {holder})",
                        hint="wait for it to finish, or raise LEDGER_LOCK_TIMEOUT",
                    ) from None
                time.sleep(0.01)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        try:
            self.settle(recover)
            yield
        finally:
            self._fd = None
            self.cache.flush()
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
