"""The store's own ref names, and the pending-count cache key: plain constants, so the CLI's
stat-cache fast path (:mod:`ledger.fastpath.reads`) can read them without importing git or the chain."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["BRANCH", "EPOCHS_REF", "EPOCH_NOTES_REF", "EVIDENCE_NOTES_REF", "KEPT", "NAMESPACES", "NOTES_REF",
           "PUBLISHED", "UNVERIFIED_REF", "pending_key"]  # fmt: skip

BRANCH = "refs/heads/main"  # the lineage
NOTES_REF = "refs/notes/ledger-chain"  # chain receipts (ledger.chain.receipts), as git notes
EPOCH_NOTES_REF = "refs/notes/ledger-epochs"  # each brain's epoch receipts (ledger.chain.epochlog)
EVIDENCE_NOTES_REF = "refs/notes/ledger-epoch-evidence"  # its evidence epoch receipts (ledger.chain.epochevidence)
EPOCHS_REF = "refs/ledger/epochs"  # an operator's epoch log (ledger.chain.epochlog)
UNVERIFIED_REF = "refs/notes/ledger-chain-unverified"  # receipts from elsewhere not yet checked against a chain
# Every ref a copy publishes (push) and takes (pull, clone), each checked on arrival and by a guarded
# remote (ledger.audit.refs); the refs a copy keeps for itself and never publishes; and the namespaces
# that are the ledger's own, where a remote takes no other name (docs/adr/0027).
PUBLISHED = (BRANCH, NOTES_REF, EPOCH_NOTES_REF, EVIDENCE_NOTES_REF, EPOCHS_REF)
KEPT = (UNVERIFIED_REF,)
NAMESPACES = ("refs/ledger/", "refs/notes/ledger-")


def pending_key(head: str, notes: str, chain: Mapping[str, Any]) -> list[Any]:
    """What a pending count depends on: the head, the receipts' notes ref, the registry and agent."""
    return [head, notes, chain.get("registry"), chain.get("agent_id")]
