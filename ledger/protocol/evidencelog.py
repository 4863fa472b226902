"""A snapshot's evidence log as the chain sees it: its size, its RFC 9162 root, any prefix's root,
and the consistency proof from the anchored prefix.

The log's entries (signed outcome records) live in the snapshot's top tree, ``evidence/``, beside
the bundle (:mod:`ledger.store.evidence` reads them, in log order, and :func:`ledger.store.evidence.log_of`
builds a snapshot's log).  What goes on chain is the
RFC 9162 tree hash over them (leaf ``SHA-256(0x00 ‖ entry)``, :mod:`ledger.protocol.tlog`): the same tree as the
epoch log, so the registry checks append-only with the verifier it already has.  Shared by the
anchoring (what to send) and the audit (what the chain's events must match).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ledger.errors import ChainError, ProofError
from ledger.protocol.tlog import Tree, leaf_hash

__all__ = ["EvidenceLog", "prefix_problem"]


@dataclass(frozen=True)
class EvidenceLog:
    """One snapshot's evidence log: its entries, and the RFC 9162 tree over them."""

    entries: list[bytes] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.entries)

    @cached_property
    def tree(self) -> Tree:
        return Tree([leaf_hash(e) for e in self.entries])

    @property
    def root(self) -> bytes:
        """The tree hash of the whole log (SHA-256 of nothing for an empty one, RFC 9162 §2.1.1)."""
        return self.tree.root()

    def prefix_root(self, size: int) -> bytes:
        """The tree hash of the first ``size`` entries (0 < size ≤ :attr:`size`)."""
        if not 0 < size <= self.size:
            raise ChainError(f"no prefix of {size} entries in an evidence log of {self.size}")
        return self.tree.subroot(0, size)

    def consistency(self, first: int) -> list[bytes]:
        """The RFC 9162 proof from the first ``first`` entries to the whole log ([] for ``first`` 0)."""
        try:
            return self.tree.consistency(first) if first else []
        except ProofError as exc:  # a size past the log: refused as the chain's record it is asked for
            raise ChainError(exc.message, hint=exc.hint) from exc

    def as_json(self) -> dict[str, object]:
        return {"size": self.size, "root": "0x" + self.root.hex() if self.size else None}


def prefix_problem(log: EvidenceLog, size: int, root: bytes) -> str | None:
    """Why the anchored log (``size``, ``root``) is not a prefix of ``log``, or None when it is
    (an empty anchored log, size 0, is everyone's prefix)."""
    if size == 0:
        return None
    if log.size < size:
        return (
            f"the chain anchored {size} evidence entries (root 0x{root.hex()}) but this log has only "
            f"{log.size}: it was trimmed after it was anchored"
        )
    mine = log.prefix_root(size)
    if mine != root:
        return (
            f"the first {size} evidence entries hash to 0x{mine.hex()} here but the chain anchored "
            f"0x{root.hex()}: an anchored outcome was rewritten"
        )
    return None
