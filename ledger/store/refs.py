"""The pending-count cache key and the store's cache file names: plain constants, so the CLI's
stat-cache fast path (:mod:`ledger.fastpath.reads`) can read them without importing git or the chain.
The ref names are :mod:`ledger.protocol.refs`'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["PENDING_CACHE", "REGRESSIONS_CACHE", "pending_key"]

PENDING_CACHE = "pending-v1.json"  # in .ledger/cache/: the last pending count and what it was counted from
REGRESSIONS_CACHE = "regressions-v1.json"  # in .ledger/cache/: the last head whose outcomes flag no regression


def pending_key(head: str, notes: str, chain: Mapping[str, Any]) -> list[Any]:
    """What a pending count depends on: the head, the receipts' notes ref, the registry and agent."""
    return [head, notes, chain.get("registry"), chain.get("agent_id")]
