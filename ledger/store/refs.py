"""The pending count's cache key, so the CLI's stat-cache fast path (:mod:`ledger.fastpath.reads`) can
compute it without importing git or the chain.  The ref names are :mod:`ledger.protocol.refs`'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["pending_key"]


def pending_key(head: str, notes: str, chain: Mapping[str, Any]) -> list[Any]:
    """What a pending count depends on: the head, the receipts' notes ref, the registry and agent."""
    return [head, notes, chain.get("registry"), chain.get("agent_id")]
