"""The ``ledger sync`` use case: every target projected and recorded, then the shared remote's half.

:func:`sync` is what ``ledger sync`` runs, and what the MCP tools and the Python API call: it returns
a :class:`~ledger.sync.reports.SyncReport`, prints nothing and picks no exit code. :func:`watch` is
``ledger sync --watch``; :func:`settle` is ``ledger skill resolve SKILL --take ledger|TARGET`` for a
runtime's conflict. The targets' passes are :class:`~ledger.sync.projection.Projection`'s; the
remote's, :func:`ledger.remotes.fleet.sync_remote`'s. This module sits in the remotes' layer
(tests/unit/test_layers.py): a sync is both halves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ledger.errors import LedgerError, UsageError
from ledger.remotes.fleet import remote_of, sync_remote
from ledger.remotes.lineagemerge import conflicts as merge_conflicts
from ledger.sync.projection import Projection
from ledger.sync.reports import RemoteSyncReport, SyncReport
from ledger.sync.targets import Target, Targets

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["committed_or_none", "plan", "settle", "sync", "watch"]


def sync(
    brain: Brain,
    names: Sequence[str] = (),
    *,
    take: tuple[str, str] | None = None,
    confirm: Sequence[str] = (),
    restore: Sequence[str] = (),
    remote: bool = True,
    full: bool = False,
) -> SyncReport:
    """One sync of the targets ``names`` (default: every linked target), then, with ``remote`` and no
    ``names``, the shared remote's (``ledger remote set``); the targets are synced again when the
    remote brought changes, so they show the merged result.

    ``take=(side, skill)`` settles a conflict (``side``: ``ledger`` or a target); a target in
    ``confirm`` has the skills gone from it recorded as deletions, one in ``restore`` gets the
    brain's skills back; ``full`` reads every file, trusting no stat entry. Refused (LedgerError)
    when there is nothing to sync or a named target is unknown, before anything moves."""
    targets = Targets(brain.control)
    chosen, shared = plan(brain, names, remote, targets)
    committed = committed_or_none(brain) if any(t.committed for t in chosen) else None
    engine = Projection(brain, targets)
    for name in (*confirm, *restore):
        targets.get(name)  # an unknown target is a mistake, said before anything moves
    report = (
        engine.sync(names, take=take, confirm_deletions=confirm, committed=committed, restore=restore, full=full)
        if chosen
        else {"targets": [], "conflicts": 0, "refused": 0}
    )
    if shared is not None:
        before = brain.head().commit
        report["remote"] = _sync_remote(brain, shared)
        if chosen and brain.head().commit != before:  # the targets show the merged result, not one behind
            again = committed_or_none(brain) if any(t.committed for t in chosen) else None
            _fold(report, engine.sync(names, committed=again, full=full))
    report["merge_conflicts"] = sorted(merge_conflicts(brain))
    return SyncReport.of(report)


def watch(
    brain: Brain,
    names: Sequence[str] = (),
    *,
    remote: bool = True,
    debounce: float = 0.2,
    poll: float = 2.0,
    on_report: Callable[[SyncReport], None] | None = None,
    on_remote: Callable[[RemoteSyncReport], None] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Sync ``names`` (default: every target) whenever they or the brain change, until ``stop`` is set
    (or Ctrl-C): ``on_report`` gets each sync that did something (and the first); with ``remote``,
    the shared remote is synced after each change, or every ``poll`` seconds, and ``on_remote``
    gets each of those. Refused as :func:`sync` is when there is nothing to sync."""
    from ledger.sync.watching import watch as run_watch

    targets = Targets(brain.control)
    chosen, shared = plan(brain, names, remote, targets)
    pinned = any(t.committed for t in chosen)
    tick = _remote_tick(brain, shared, poll, on_remote) if shared is not None else None
    run_watch(
        Projection(brain, targets),
        chosen,
        debounce=debounce,
        on_report=(lambda r: on_report(SyncReport.of(r))) if on_report is not None else None,
        committed=(lambda: committed_or_none(brain)) if pinned else None,
        stop=stop,
        on_tick=tick,
    )


def settle(brain: Brain, skill: str, side: str) -> SyncReport:
    """Settle a runtime's conflict on ``skill``: one sync of the targets in conflict on it, ``side``
    (``ledger`` or one of those targets) winning. Refused when nothing is in conflict on ``skill``."""
    targets = Targets(brain.control)
    where = sorted({c["target"] for c in targets.conflicts() if c["skill"] == skill})
    if not where:
        raise LedgerError(f"no conflict on {skill!r}", hint="see 'ledger status'")
    if side != "ledger" and side not in where:
        raise UsageError(
            f"--take must be kept, other, ledger or a target in conflict on {skill!r} "
            f"({', '.join(where)}), not {side!r}"
        )
    chosen = where if side == "ledger" else [side]
    return SyncReport.of(Projection(brain, targets).sync(chosen, take=(side, skill)))


def committed_or_none(brain: Brain) -> bytes | None:
    """The committed root's snapshot, or None when the chain can't say: only the targets that show
    it are refused (one failing target fails only itself)."""
    from ledger.anchoring.commits import committed_snapshot

    try:
        return committed_snapshot(brain)
    except LedgerError:
        return None


def plan(
    brain: Brain, names: Sequence[str] = (), remote: bool = True, targets: Targets | None = None
) -> tuple[list[Target], dict[str, Any] | None]:
    """The targets a sync of ``names`` syncs and the shared remote it syncs with (None: left out);
    refused when both are none, or a name is not a target's."""
    targets = targets or Targets(brain.control)
    chosen = [targets.get(n) for n in names] if names else targets.all()
    shared = None if not remote or names else remote_of(brain)
    if not chosen and shared is None:
        raise LedgerError(
            "no targets are linked and no remote is set",
            hint="'ledger target add claude' (see 'ledger target list') or 'ledger remote set URL'",
        )
    return chosen, shared


def _sync_remote(brain: Brain, remote: dict[str, Any]) -> dict[str, Any]:
    return sync_remote(brain, remote["url"], commit=bool(remote.get("commit")), key=remote.get("key"))


def _remote_tick(
    brain: Brain, remote: dict[str, Any], poll: float, on_remote: Callable[[RemoteSyncReport], None] | None
) -> Callable[[bool], None]:
    """The watch's remote half: after the brain changed, or every ``poll`` seconds (others may have pushed)."""
    last = [0.0]

    def tick(changed: bool) -> None:
        if not changed and time.monotonic() - last[0] < poll:
            return
        last[0] = time.monotonic()
        out = RemoteSyncReport.of(_sync_remote(brain, remote))
        if on_remote is not None:
            on_remote(out)

    return tick


def _fold(report: dict[str, Any], again: dict[str, Any]) -> None:
    """A second pass's report (after a merge from the remote) into the first: its lists added, its state kept."""
    first = {t["name"]: t for t in report["targets"]}
    for t in again["targets"]:
        into = first.get(t["name"])
        if into is None:
            report["targets"].append(t)
            continue
        for key in ("recorded", "rescued"):
            into[key] = into[key] + t[key]
        for key in ("projected", "removed"):  # a skill projected again after the merge is reported once
            into[key] = list(dict.fromkeys(into[key] + t[key]))
        for key in ("status", "conflicts", "left_alone", "ignored_held", "reason", "hint"):
            if key in t:
                into[key] = t[key]
    report["conflicts"], report["refused"] = again["conflicts"], again["refused"]
