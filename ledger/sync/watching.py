"""``ledger sync --watch``: a sync whenever a target or the brain changes, debounced.

File events come from watchfiles (the Rust ``notify`` crate: inotify on Linux, FSEvents
on macOS), not a polling loop of ours.  watchdog was tried first and rejected: its
inotify thread dies on the directory exchanges a sync makes (ADR 23).  Each target is
watched recursively, and the brain at its refs, so a snapshot made by any other command
is projected too.  Events are coalesced: a sync runs once nothing has changed for
``debounce`` seconds, so an editor's burst of writes is recorded as one version.  The
engine's own writes cause at most one more pass, which finds nothing to do.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import watchfiles

from ledger.folders.folder import STAGING
from ledger.sync.projection import Projection
from ledger.sync.targets import Target

__all__ = ["watch"]


def watch(
    engine: Projection,
    targets: Sequence[Target],
    *,
    debounce: float = 0.2,
    on_report: Callable[[dict[str, Any]], None] | None = None,
    committed: Callable[[], bytes | None] | None = None,
    stop: threading.Event | None = None,
    on_tick: Callable[[bool], None] | None = None,
) -> None:
    """Sync ``targets`` whenever they or the brain change, until ``stop`` is set (or Ctrl-C).

    ``on_tick(changed)`` runs after each look (about every ``debounce``), ``changed`` when a sync
    ran: the shared remote's half (:mod:`ledger.remotes.fleet`) decides there when to publish."""
    git = engine.brain.root / ".git"
    refs = (str(git / "refs" / "heads"), str(git / "packed-refs"), str(git / "HEAD"))
    paths = [t.path for t in targets if os.path.isdir(t.path)]  # a missing one is refused by each sync
    quiet = max(1, int(debounce * 1000))

    def relevant(_change: watchfiles.Change, path: str) -> bool:
        if path.startswith(str(git)):
            return path.startswith(refs) and not path.endswith(".lock")
        return f"/{STAGING}" not in path and not path.endswith(".tmp")

    names = [t.name for t in targets]
    first = True
    try:
        changes = watchfiles.watch(
            *paths,
            str(git),
            watch_filter=relevant,
            step=quiet,
            debounce=max(2000, 10 * quiet),
            stop_event=stop,
            rust_timeout=200,
            yield_on_timeout=True,
        )
        for batch in changes:
            if not batch and not first:
                if on_tick is not None:
                    on_tick(False)
                continue  # a timeout: nothing changed
            # The first sync runs once the watch is set up, so no edit falls between the two.
            report = engine.sync(names, committed=committed() if committed else None)
            busy = any(
                t["recorded"] or t["projected"] or t["removed"] or t["conflicts"] or t["status"] != "ok"
                for t in report["targets"]
            )
            if (busy or first) and on_report is not None:
                on_report(report)
            if on_tick is not None:
                on_tick(True)
            first = False
    except KeyboardInterrupt:
        pass
