"""The RFC 6962 / RFC 9162 Merkle tree over SHA-256: the operator's epoch log of heads.

Pure hashlib, so a receipt verifies offline in microseconds with nothing but the standard
library.  A leaf is ``SHA-256(0x00 ‖ entry)``, a node ``SHA-256(0x01 ‖ left ‖ right)``
(RFC 9162 §2.1.1); the tree, its proofs (``PATH``, ``PROOF``) and their checks are the one
core of :mod:`ledger.protocol.merkle` with these two hashes (:data:`TREE`), the same
algorithms ``contracts/BrainRegistry.sol`` runs on chain.  An entry is one agent's head
(:func:`entry`), 104 bytes, docs/lineage.md "Epochs".  A proof of the wrong shape or one that
does not verify is a :class:`~ledger.errors.ProofError`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ledger.errors import ChainError
from ledger.protocol.merkle import Merkle

__all__ = [
    "ENTRY_SIZE",
    "TREE",
    "Tree",
    "entry",
    "leaf_hash",
    "node_hash",
    "parse_entry",
    "root_from_inclusion",
    "root_of",
    "verify_consistency",
    "verify_inclusion",
]

ENTRY_SIZE = 104  # agent id (32) ‖ seq (8) ‖ parent root (32) ‖ root (32)


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


TREE = Merkle(leaf=leaf_hash, node=node_hash, empty=hashlib.sha256(b"").digest())  # RFC 9162 §2.1.1


def entry(agent: int, seq: int, parent: bytes, root: bytes) -> bytes:
    """One head as a log entry: ``uint256 agent ‖ uint64 seq ‖ parent ‖ root``, big-endian, 104 bytes."""
    if not 0 <= agent < 1 << 256 or not 1 <= seq < 1 << 64 or len(parent) != 32 or len(root) != 32:
        raise ChainError(
            f"not a head: agent {agent:#x}, seq {seq}, a {len(parent)}-byte parent, a {len(root)}-byte root"
        )
    return agent.to_bytes(32, "big") + seq.to_bytes(8, "big") + parent + root


def parse_entry(data: bytes) -> tuple[int, int, bytes, bytes]:
    """(agent, seq, parent, root) of an entry; anything but exactly 104 bytes and seq ≥ 1 is refused."""
    if len(data) != ENTRY_SIZE:
        raise ChainError(f"a log entry is {ENTRY_SIZE} bytes, got {len(data)}")
    seq = int.from_bytes(data[32:40], "big")
    if seq == 0:
        raise ChainError("a log entry's seq is 0; sequences start at 1")
    return int.from_bytes(data[:32], "big"), seq, data[40:72], data[72:]


class Tree:
    """The tree over a list of leaf hashes, every level kept: a root, any proof, in O(log n)."""

    def __init__(self, leaves: Sequence[bytes]) -> None:
        self.size = len(leaves)
        self.levels = TREE.levels(leaves)

    def root(self) -> bytes:
        """MTH of the whole tree; SHA-256 of the empty string for no leaves (RFC 9162 §2.1.1)."""
        return TREE.top(self.levels)

    def subroot(self, lo: int, hi: int) -> bytes:
        """MTH(D[lo:hi]) for 0 ≤ lo < hi ≤ size."""
        return TREE.subroot(self.levels, lo, hi)

    def inclusion(self, index: int) -> list[bytes]:
        """PATH(index, D[0:size]), leaf's sibling first."""
        return TREE.path(self.levels, index)

    def consistency(self, first: int) -> list[bytes]:
        """PROOF(first, D[0:size]) for 0 < first ≤ size (empty when equal)."""
        return TREE.consistency(self.levels, first)


def root_of(leaves: Sequence[bytes]) -> bytes:
    return TREE.root(leaves)


root_from_inclusion = TREE.root_from_path
verify_inclusion = TREE.verify_inclusion
verify_consistency = TREE.verify_consistency
