"""One brain on many machines: the remote half of ``ledger sync`` (docs/scaling.md, ADR 24).

Each machine keeps its own brain and writes to it at once, online or not.  A sync
publishes to the shared git remote and, when asked, anchors on chain:

1. **push** by compare-and-swap (:func:`ledger.remotes.sharing.push`): when the remote
   moved, fetch, audit, merge (:mod:`ledger.remotes.lineagemerge`) and try again;
2. **commit** what is now on the remote, and only that (``commit_pending(upto=…)``), in
   batches: one transaction carries every machine's snapshots published since the last.
   When another machine committed first (``StaleParent``, or the chain ahead of this
   copy), fetch and merge again, then commit on top of the chain's head.

A remote that cannot be reached is not an error of the brain: the sync reports
``offline`` and the next one catches up with everything written meanwhile.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ledger.brain import Brain
from ledger.errors import ChainError, LedgerError, StoreError, UsageError
from ledger.remotes import sharing
from ledger.reports import OMIT
from ledger.sync.reports import GuardReport, RemoteReport, RemoteSetReport, RemoteUnsetReport

__all__ = [
    "COMMIT_ATTEMPTS",
    "GuardReport",
    "RemoteReport",
    "RemoteSetReport",
    "RemoteUnsetReport",
    "is_url",
    "remote_location",
    "remote_of",
    "set_remote",
    "show_remote",
    "sync_remote",
    "unset_remote",
]

COMMIT_ATTEMPTS = 6  # StaleParent → fetch, merge, push, commit again; each round another machine won


def show_remote(brain: Brain) -> RemoteReport:
    """The brain's shared remote (:func:`remote_of`), as a report."""
    return RemoteReport(remote_of(brain))


def set_remote(
    brain: Brain, url: str, *, create: bool = False, commit: bool = False, key: str | None = None
) -> RemoteSetReport:
    """Sync with ``url`` on every sync (:func:`remote_location` says how it is recorded; ``create`` makes
    a new bare repository at a path that does not exist); ``commit``: anchor after each push."""
    stored, made = remote_location(url, brain.root, create=create)
    brain.update_config(remote={"url": stored, "commit": commit, **({"key": key} if key else {})})
    return RemoteSetReport(url=stored, commit=commit, key=key or OMIT, created=made)


def unset_remote(brain: Brain) -> RemoteUnsetReport:
    """Stop syncing with the remote; nothing on it changes."""
    was = remote_of(brain)
    brain.update_config(remote=None)
    return RemoteUnsetReport(unset=True, url=was["url"] if was else None)


def remote_of(brain: Brain) -> dict[str, Any] | None:
    """The brain's shared remote (``ledger remote set``): ``{"url": …, "commit": bool}``, or None.

    A relative path (recorded before paths were made absolute) is the brain directory's, wherever
    the command runs."""
    doc = brain.config.get("remote")
    if not (isinstance(doc, dict) and doc.get("url")):
        return None
    doc = dict(doc)
    if not is_url(doc["url"]) and not os.path.isabs(doc["url"]):
        doc["url"] = os.path.normpath(brain.root / doc["url"])
    return doc


def is_url(remote: str) -> bool:
    """Whether git reads ``remote`` as a URL (``scheme://…``, or scp-like ``host:path``), not a path."""
    return "://" in remote or ":" in remote.split("/")[0]


def remote_location(remote: str, base: Path, *, create: bool = False) -> tuple[str, bool]:
    """``remote`` as a brain records it, and whether a bare repository was made for it now.

    A path is made absolute against ``base`` (the brain's directory, as git reads a relative
    remote against its repository), so a sync run from anywhere finds it; a URL is kept as
    given.  A repository is never made unless asked: a missing path (or ``file://`` URL) is
    refused, and with ``create`` it becomes a new bare repository.  Nothing is made over a network.
    """
    if is_url(remote):
        parts = urlsplit(remote)
        if parts.scheme != "file":
            if create:
                raise UsageError(
                    f"--create makes a local repository; {remote!r} is on another host",
                    hint="make it there ('git init --bare'), then 'ledger remote set URL'",
                )
            return remote, False
        stored, local = remote, Path(unquote(parts.path))
    else:
        local = Path(os.path.normpath(base / remote))
        stored = str(local)
    if os.path.lexists(local):
        return stored, False
    if not create:
        raise StoreError(
            f"no repository at {local}",
            hint=f"check the path, or make a new bare repository there: 'ledger remote set --create {remote}'",
        )
    try:
        sharing.init_remote(str(local))  # a git that fails raises StoreError: "cannot make a bare repository at …"
    except OSError as exc:
        raise StoreError(f"cannot make a bare repository at {local}: {exc}") from exc
    return stored, True


def sync_remote(
    brain: Brain, url: str, *, commit: bool = False, key: str | None = None, password: Any = None, actor: str = "agent"
) -> dict[str, Any]:
    """Publish this brain to ``url`` (merging what others published) and, with ``commit``, anchor it.

    Merges are made as ``actor`` (default ``agent``: the loop runs beside the agents, with their key)."""
    with brain.acting(actor):
        return _sync(brain, url, commit, key, password)


def _sync(brain: Brain, url: str, commit: bool, key: str | None, password: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "remote": url,
        "status": "ok",
        "merges": [],
        "pushed": False,
        "committed": 0,
        "transactions": [],
        "conflicts": [],
        "stale_parent": 0,
    }
    start = time.monotonic()
    try:
        out = sharing.push(brain, url, create=False)
    except StoreError as exc:
        report.update(status=_status(exc), reason=exc.message, hint=exc.hint)
        return report
    report.update(
        pushed=out["pushed"],
        head=out["head"],
        merges=out["merges"],
        refused_refs=out["incoming_receipts"].get("refused_refs") or {},
    )
    report["conflicts"] = sorted({c for m in out["merges"] for c in m.get("conflicts", [])})
    if commit:
        _commit(brain, url, report, key, password)
    report["seconds"] = round(time.monotonic() - start, 3)
    return report


def _status(exc: LedgerError) -> str:
    """``offline`` (the remote cannot be reached), ``busy`` (every compare-and-swap lost), else ``refused``."""
    if "cannot read the remote" in exc.message or "does not appear to be a git repository" in exc.message:
        return "offline"
    return "busy" if "kept moving" in exc.message else "refused"


def _commit(brain: Brain, url: str, report: dict[str, Any], key: str | None, password: Any) -> None:
    from ledger.anchoring.commits import EvidenceNotPrefixError, commit_pending

    published = bytes.fromhex(report["head"])
    for _attempt in range(COMMIT_ATTEMPTS):
        try:
            result = commit_pending(brain, key=key, password=password, upto=published, batch=256)
        except ChainError as exc:
            # Another machine anchored outcomes this copy lacks: before sending (the check), or while it was sent
            # (the registry's InvalidEvidence or InconsistentEvidence): merge the remote and try again.
            behind = isinstance(exc, EvidenceNotPrefixError) or "Evidence(" in exc.message
            if (
                not behind
                and "StaleParent" not in exc.message
                and "moved" not in str(exc.hint)
                and "diverges" not in exc.message
            ):
                report.update(status="refused", reason=exc.message, hint=exc.hint)
                return
            report["stale_parent"] += 1  # another machine committed first: take its work, then ours on top
            try:
                out = sharing.push(brain, url, create=False)
            except LedgerError as again:
                report.update(status=_status(again), reason=again.message)
                return
            report["merges"] += out["merges"]
            published = bytes.fromhex(out["head"])
            continue
        report["committed"] += result.committed
        report["transactions"] += result.transactions
        if result.committed:
            try:
                sharing.push(brain, url, create=False)  # the receipts just recorded travel too
            except LedgerError as exc:
                report.update(status=_status(exc), reason=exc.message)
        return
    report.update(
        status="refused", reason=f"the chain moved {COMMIT_ATTEMPTS} times while committing", hint="sync again"
    )
