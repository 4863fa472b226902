"""Skills the head's ``supply`` record withholds (quarantined or revoked), and what a reader is told.

A withheld skill is stored and versioned like any other, but no runtime, index or agent
listing sees it (docs/layouts.md, "Quarantined and revoked skills"; docs/mcp-tools.md): the
Level-0 index and the agents' listings leave it out, an agent's read or write of it is
refused with :func:`refusal`, ``ledger sync`` never projects it and takes it out of a target
it was projected to, and ``ledger export`` leaves it out.  The user who curates the brain
still sees it: ``ledger skill list`` marks its state, ``ledger skill view`` says it.

The head's record is read once per head (:func:`ledger.write.head.head_supply`); every write
moves the head, so a listing kept per head commit changes at once with an approve or a revoke.
"""

from __future__ import annotations

from ledger.errors import SupplyError
from ledger.store.supply import QUARANTINED, REVOKED, Supply
from ledger.write.head import Head, head_supply
from ledger.write.snapshots import Snapshots

__all__ = ["refusal", "states", "supply_of", "withheld"]


def supply_of(snapshots: Snapshots, head: Head | None = None) -> Supply:
    """The supply record of ``head`` (default: the head now)."""
    return head_supply(snapshots.store, head or snapshots.head())[1]


def withheld(snapshots: Snapshots, head: Head | None = None) -> frozenset[str]:
    """The names ``head``'s record withholds (quarantined or revoked)."""
    return supply_of(snapshots, head).withheld()


def states(supply: Supply) -> dict[str, str]:
    """Each withheld name → its state (``quarantined`` or ``revoked``)."""
    return {n: supply.skills[n].state for n in supply.withheld()}


def why_revoked(supply: Supply, name: str) -> str | None:
    """The reason recorded for the revocation of ``name``'s digests, if any is."""
    entry = supply.skills.get(name)
    digest = supply.is_revoked(*entry.digests()) if entry is not None else None
    return str(supply.revoked[digest].get("reason")) if digest is not None else None


def refusal(supply: Supply, name: str, what: str = "an agent") -> SupplyError | None:
    """The error that refuses ``what`` access to withheld skill ``name``, naming its state and the fix;
    ``None`` if ``name`` is not withheld."""
    entry = supply.skills.get(name)
    if entry is None or name not in supply.withheld():
        return None
    source = entry.source.get("url") or "elsewhere"
    if entry.state == QUARANTINED:
        verdict = entry.verdict.get("worst", "unknown")
        return SupplyError(
            f"skill {name!r} is quarantined: it was installed from {source} and is not approved, so {what} "
            f"may not see it (scan verdict: {verdict})",
            hint=f"it waits for a curator's review: 'ledger approve {name}'",
            skill=name,
            state=QUARANTINED,
        )
    reason = why_revoked(supply, name) or "no reason was recorded"
    assert entry.state == REVOKED
    return SupplyError(
        f"skill {name!r} is revoked ({reason}), so {what} may not see it",
        hint=f"it stays in the brain's history; install a version that is not revoked, or delete {name!r}",
        skill=name,
        state=REVOKED,
        reason=reason,
    )
