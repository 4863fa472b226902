"""Pins held to their sources: history never rewritten under a pin, and locked sets read back.

An update moves a pin forward only along the source's history: the new commit must descend
from the pinned one.  A source whose history was rewritten (a force-push, a brain re-signed
from an earlier point) no longer holds the pinned commit as an ancestor, and the update is
refused, like a fetch that is not a fast-forward (docs/supply-chain.md §4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.errors import SourceError, SupplyError
from ledger.sources import gitsource, origins, resolve
from ledger.store import supply as sp
from ledger.store.git import Git

__all__ = ["Locked", "lock_entries", "locked", "require_descends", "require_held"]

HISTORY = ("brain", "git")  # source types whose pins are commits of one repository


def require_descends(source: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Refuse ``new`` unless the source's history still holds ``old`` under it."""
    a, b = old.get("commit"), new.get("commit")
    if source.get("type") not in HISTORY or not a or not b or a == b:
        return
    url = source["url"]
    with gitsource.mirrored(url, b, history=True) as git:  # the new commit's history alone, capped
        descends = Git(git).is_ancestor(a, b)
    if not descends:
        raise SupplyError(
            f"{url} rewrote its history: the pinned commit {a[:12]} is not an ancestor of {b[:12]}; nothing changed",
            hint="a source that rewrites what it published is not trusted forward: review it as a new install, "
            "under another name, if at all",
        )


PINNED_SIGNER = ("index",)  # source types whose signer is the one key of a signed anchor, held to the pin


def require_held(
    source: Mapping[str, Any], name: str, old: Mapping[str, Any], signer: str | None, cand: resolve.Candidate
) -> None:
    """Refuse an update ``cand`` of ``name`` that gives up what its pin ``old`` (signed by ``signer``) held:
    an anchor (the same rule as :func:`~ledger.sources.resolve.fetch_pinned`), the anchor's signer (a new
    version by another key is another publisher's, taken only by a deliberate new install), and the
    anchor's version, which never goes back (a replayed older signed snapshot)."""
    url = origins.redacted(str(source.get("url", "")))
    resolve.require_kept(dict(source), name, dict(old), dict(cand.pin))
    if source.get("type") not in PINNED_SIGNER or "root" not in old:
        return
    if signer and (cand.signer or "").lower() != signer.lower():
        raise SupplyError(
            f"{url} serves {name!r} signed by {cand.signer or 'no key'}, but it is pinned to "
            f"{signer}; a new version by another key is another publisher's; nothing changed",
            hint=f"to accept the new key deliberately, 'ledger skill delete {name}' and "
            f"'ledger install {url} {name}' again, after checking who holds it",
        )
    was, now = old.get("upstream"), cand.pin.get("upstream")
    if isinstance(was, int) and (not isinstance(now, int) or now < was):
        raise SupplyError(
            f"{url} serves {name!r} at version {now} of its signed lineage, older than the pinned "
            f"version {was} (root {old['root']}): an update never goes back; nothing changed",
            hint="the site replays a superseded snapshot: ask its publisher to export again",
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
        return [Locked(e.name, e.source, e.pin, e.sha256, None) for e in resolve.read_lock(path)]
    record = resolve.supply_of(lock, rpc=rpc)
    if not record.skills:
        raise SupplyError(f"{lock} installed no skill from elsewhere: there is nothing to reproduce")
    for name, entry in record.skills.items():  # another brain's record is a third party's document
        _remote_source(entry.source, f"{lock}: the source of {name!r}")
    return [Locked(n, e.source, e.pin, e.sha256, e.blake3) for n, e in sorted(record.skills.items())]


def _remote_source(source: Mapping[str, Any], where: str) -> None:
    """Every location of a recorded source as a third party may name it (:func:`~ledger.sources.origins.remote`;
    an index at an https URL): a brain's record cannot send this installer to its own disk."""
    for value in source.values():
        if isinstance(value, str):
            origins.refuse_credentials(value, where)
    for key in ("url", "repo"):
        value = source.get(key)
        if isinstance(value, str):
            if source.get("type") == "index" and key == "url":
                if not value.startswith("https://"):
                    raise SourceError(f"{where} is {origins.redacted(value)!r}: an index is read over https only")
                origins.refuse_credentials(value, where)
            else:
                origins.remote(value, where)


def lock_entries(installed: Mapping[str, sp.Entry]) -> list[Any]:
    """This brain's installed set as ``skills-lock.json`` entries."""
    return [resolve.lock_entry(n, e.source, e.pin, e.sha256) for n, e in sorted(installed.items())]
