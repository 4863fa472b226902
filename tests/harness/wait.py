"""Waiting for something to happen: one bounded poll, instead of a fixed sleep that is too long on a quiet machine
and too short on a loaded one.

A test that waits for the wall clock itself to move (an mtime tick, a debounce, a racy window) does not poll: it sets
the time it needs (``os.utime``) or hands the code a clock (e.g. ``ledger.store.packing._await_quiet``'s ``clock``)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["TimedOut", "until"]

T = TypeVar("T")


class TimedOut(AssertionError):
    """What a test waited for did not happen in time (or the process it waited on ended first)."""


def until(
    predicate: Callable[[], T],
    timeout: float = 60.0,
    what: str = "the condition",
    *,
    alive: subprocess.Popen[Any] | None = None,
    interval: float = 0.01,
) -> T:
    """Call ``predicate`` until it returns something true, and return that; raise :class:`TimedOut` naming
    ``what`` after ``timeout`` seconds.  With ``alive``, also fail as soon as that process has ended (its output
    in the message), since what it was to do can no longer happen.  The pause between calls starts at
    ``interval`` and doubles up to 0.1 s (or ``interval``, if longer): a quick condition is seen at once, and a
    slow one costs little."""
    deadline = time.monotonic() + timeout
    pause, most = interval, max(interval, 0.1)
    while True:
        value = predicate()
        if value:
            return value
        if alive is not None and alive.poll() is not None:
            out, err = alive.communicate()
            raise TimedOut(f"{what}: the process ended first (exit {alive.returncode}): {out!r} {err!r}")
        if time.monotonic() >= deadline:
            raise TimedOut(f"{what}: not within {timeout:g} s")
        time.sleep(pause)  # the poll's own pause, bounded by the deadline above
        pause = min(pause * 2, most)
