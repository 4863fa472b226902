"""Every git ref name the ledger reads or writes, declared once (docs/lineage.md; docs/adr/0027).

Plain constants, so the fast path ahead of click can read them without importing git or the chain.
"""

from __future__ import annotations

__all__ = [
    "BRANCH",
    "EPOCHS_REF",
    "EPOCH_NOTES_REF",
    "EVIDENCE_NOTES_REF",
    "INCOMING",
    "INCOMING_BRANCH",
    "INCOMING_EPOCHS",
    "INCOMING_EPOCH_EVIDENCE",
    "INCOMING_EPOCH_NOTES",
    "INCOMING_NOTES",
    "KEPT",
    "NAMESPACES",
    "NOTES_REF",
    "ORIGIN_BRANCH",
    "PUBLISHED",
    "REPLACE",
    "UNVERIFIED_REF",
]

BRANCH = "refs/heads/main"  # the lineage
NOTES_REF = "refs/notes/ledger-chain"  # chain receipts (ledger.chain.receipts), as git notes
EPOCH_NOTES_REF = "refs/notes/ledger-epochs"  # each brain's epoch receipts (ledger.chain.epochlog)
EVIDENCE_NOTES_REF = "refs/notes/ledger-epoch-evidence"  # its evidence epoch receipts (ledger.protocol.epochevidence)
EPOCHS_REF = "refs/ledger/epochs"  # an operator's epoch log (ledger.chain.epochlog)
UNVERIFIED_REF = "refs/notes/ledger-chain-unverified"  # receipts from elsewhere not yet checked against a chain
# Every ref a copy publishes (push) and takes (pull, clone), each checked on arrival and by a guarded
# remote (ledger.audit.refs); the refs a copy keeps for itself and never publishes; and the namespaces
# that are the ledger's own, where a remote takes no other name (docs/adr/0027).
PUBLISHED = (BRANCH, NOTES_REF, EPOCH_NOTES_REF, EVIDENCE_NOTES_REF, EPOCHS_REF)
KEPT = (UNVERIFIED_REF,)
NAMESPACES = ("refs/ledger/", "refs/notes/ledger-")
# Where a pull lands what it fetched before checking it (deleted when the pull ends): every name starts
# with INCOMING, which the audit sets aside while a pull runs.
INCOMING = "refs/ledger/incoming"
INCOMING_BRANCH = INCOMING  # a peer's main
INCOMING_NOTES = "refs/ledger/incoming-notes"  # its chain receipts
INCOMING_EPOCH_NOTES = "refs/ledger/incoming-epoch-notes"  # its epoch receipts
INCOMING_EPOCH_EVIDENCE = "refs/ledger/incoming-epoch-evidence"  # its evidence epoch receipts
INCOMING_EPOCHS = "refs/ledger/incoming-epochs"  # an operator's epoch log
ORIGIN_BRANCH = "refs/remotes/origin/main"  # a plain clone's main, which the audit reads when it has no main
REPLACE = "refs/replace/"  # git's replace refs: substituted objects, refused (the audit's fsck, the guard)
