"""Pins held to their sources: history never rewritten under a pin, and locked sets read back.

An update moves a pin forward only along the source's history: the new commit must descend
from the pinned one.  A source whose history was rewritten (a force-push, a brain re-signed
from an earlier point) no longer holds the pinned commit as an ancestor, and the update is
refused, like a fetch that is not a fast-forward (docs/supply-chain.md §4).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger._env import child_env
from ledger.errors import SourceError, SupplyError
from ledger.store import supply as sp
from ledger.supply import sources

__all__ = ["Locked", "lock_entries", "locked", "require_descends"]

HISTORY = ("git", "brain")  # source types whose pins are commits of one repository


def require_descends(source: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Refuse ``new`` unless the source's history still holds ``old`` under it."""
    a, b = old.get("commit"), new.get("commit")
    if source.get("type") not in HISTORY or not a or not b or a == b:
        return
    with tempfile.TemporaryDirectory(prefix="ledger-pin-") as tmp:
        git = Path(tmp) / "repo.git"
        url = source["url"]
        clone = subprocess.run(["git", "clone", "--bare", "--quiet", "--", url, str(git)], capture_output=True,
                               text=True, env=child_env(), timeout=600)  # fmt: skip
        if clone.returncode != 0:
            raise SourceError(f"cannot read {url}: {clone.stderr.strip()[:300]}")
        ok = subprocess.run(["git", f"--git-dir={git}", "merge-base", "--is-ancestor", a, b],
                            capture_output=True, env=child_env(), timeout=600)  # fmt: skip
    if ok.returncode != 0:
        raise SupplyError(
            f"{url} rewrote its history: the pinned commit {a[:12]} is not an ancestor of {b[:12]}; nothing changed",
            hint="a source that rewrites what it published is not trusted forward: review it as a new install, "
            "under another name, if at all",
        )


@dataclass(frozen=True)
class Locked:
    """One skill of a locked set: where to fetch it, at which pin, and the digests it must have."""

    name: str
    source: dict[str, Any]
    pin: dict[str, Any]
    sha256: str | None
    blake3: str | None


def locked(lock: str, *, rpc: str | None = None) -> list[Locked]:
    """The set a ``skills-lock.json`` pins, or the set another brain's supply record pins."""
    path = Path(lock)
    if path.is_file():
        return [Locked(e.name, e.source, e.pin, e.sha256, None) for e in sources.read_lock(path)]
    record = sources.supply_of(lock, rpc=rpc)
    if not record.skills:
        raise SupplyError(f"{lock} installed no skill from elsewhere: there is nothing to reproduce")
    return [Locked(n, e.source, e.pin, e.sha256, e.blake3) for n, e in sorted(record.skills.items())]


def lock_entries(installed: Mapping[str, sp.Entry]) -> list[Any]:
    """This brain's installed set as ``skills-lock.json`` entries."""
    return [sources.lock_entry(n, e.source, e.pin, e.sha256) for n, e in sorted(installed.items())]
