"""``ledger sync --watch``: a sync whenever a target or the brain changes, debounced.

File events come from watchdog (inotify on Linux, FSEvents on macOS), not a polling loop
of ours.  Each target is watched recursively; the brain is watched at its branch ref, so
a snapshot made by any other command is projected too.  Events are coalesced: a sync
runs once nothing has changed for ``debounce`` seconds, so an editor's burst of writes is
recorded as one version.  The engine's own writes cause one more (no-op) pass at most.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from ledger.exchange.projection import Projection
from ledger.exchange.targetfs import STAGING
from ledger.exchange.targets import Target

__all__ = ["watch"]


class _Wake(FileSystemEventHandler):
    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def on_any_event(self, event: FileSystemEvent) -> None:
        path = str(event.src_path)
        if f"/{STAGING}" in path or path.endswith((".lock", ".tmp")):
            return  # the engine's own staging, and git's lock files
        self.event.set()


def watch(
    engine: Projection,
    targets: Sequence[Target],
    *,
    debounce: float = 0.2,
    on_report: Callable[[dict[str, Any]], None] | None = None,
    committed: Callable[[], bytes] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Sync ``targets`` whenever they or the brain change, until ``stop`` is set (or Ctrl-C)."""
    wake, stop = threading.Event(), stop or threading.Event()
    observer = Observer()
    handler = _Wake(wake)
    for t in targets:
        observer.schedule(handler, t.path, recursive=True)
    git = engine.brain.root / ".git"
    for where in (git, git / "refs" / "heads"):  # a loose ref, or packed-refs
        if where.is_dir():
            observer.schedule(handler, str(where), recursive=False)
    observer.start()
    names = [t.name for t in targets]
    try:
        while not stop.is_set():
            if not wake.wait(0.5):
                continue
            while wake.is_set() and not stop.is_set():  # debounce: wait for a quiet spell
                wake.clear()
                stop.wait(debounce)
            report = engine.sync(names, committed=committed() if committed else None)
            busy = any(t["recorded"] or t["projected"] or t["removed"] or t["conflicts"] or t["status"] != "ok"
                       for t in report["targets"])  # fmt: skip
            if busy and on_report is not None:
                on_report(report)
    except KeyboardInterrupt:
        pass
    finally:
        observer.stop()
        observer.join(timeout=5)
