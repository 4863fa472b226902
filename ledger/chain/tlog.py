"""The RFC 6962 / RFC 9162 Merkle tree over SHA-256: the operator's epoch log of heads.

Pure hashlib, so a receipt verifies offline in microseconds with nothing but the standard
library.  A leaf is ``SHA-256(0x00 ‖ entry)``, a node ``SHA-256(0x01 ‖ left ‖ right)``
(RFC 9162 §2.1.1); the tree of ``n`` leaves is the RFC's (the left subtree is the largest
power of two below ``n``), built here level by level with a lone last node carried up,
which is the same tree.  Proofs are generated as the RFC's ``PATH`` and ``PROOF``
(§2.1.3.1, §2.1.4.1) and checked by the RFC's verification algorithms, step by step
(§2.1.3.2, §2.1.4.2), which ``contracts/BrainRegistry.sol`` runs on chain as well.
An entry is one agent's head (:func:`entry`), 104 bytes, docs/lineage.md "Epochs".
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ledger.errors import ChainError

__all__ = [
    "ENTRY_SIZE",
    "Tree",
    "entry",
    "leaf_hash",
    "node_hash",
    "parse_entry",
    "root_from_inclusion",
    "root_of",
    "verify_consistency",
    "verify_inclusion",
]  # fmt: skip

ENTRY_SIZE = 104  # agent id (32) ‖ seq (8) ‖ parent root (32) ‖ root (32)


class ProofError(ChainError):
    """A Merkle proof that does not verify, or is malformed."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


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
        self.levels: list[list[bytes]] = [list(leaves)]
        while len(self.levels[-1]) > 1:
            low = self.levels[-1]
            up = [node_hash(low[i], low[i + 1]) for i in range(0, len(low) - 1, 2)]
            if len(low) % 2:
                up.append(low[-1])
            self.levels.append(up)

    def root(self) -> bytes:
        """MTH of the whole tree; SHA-256 of the empty string for no leaves (RFC 9162 §2.1.1)."""
        return self.levels[-1][0] if self.size else hashlib.sha256(b"").digest()

    def subroot(self, lo: int, hi: int) -> bytes:
        """MTH(D[lo:hi]) for 0 ≤ lo < hi ≤ size, using stored nodes for aligned perfect subtrees."""
        n = hi - lo
        if n & (n - 1) == 0 and lo % n == 0:
            return self.levels[n.bit_length() - 1][lo // n]
        k = 1 << ((n - 1).bit_length() - 1)
        return node_hash(self.subroot(lo, lo + k), self.subroot(lo + k, hi))

    def inclusion(self, index: int) -> list[bytes]:
        """PATH(index, D[0:size]), leaf's sibling first."""
        if not 0 <= index < self.size:
            raise ProofError(f"no leaf {index} in a tree of {self.size}")
        path = []
        for level in self.levels[:-1]:
            sibling = index ^ 1
            if sibling < len(level):
                path.append(level[sibling])
            index >>= 1
        return path

    def consistency(self, first: int) -> list[bytes]:
        """PROOF(first, D[0:size]) for 0 < first ≤ size (empty when equal)."""
        if not 0 < first <= self.size:
            raise ProofError(f"no consistency proof from size {first} to {self.size}")
        return self._subproof(first, 0, self.size, True)

    def _subproof(self, m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
        n = hi - lo
        if m == n:
            return [] if whole else [self.subroot(lo, hi)]
        k = 1 << ((n - 1).bit_length() - 1)
        if m <= k:
            return [*self._subproof(m, lo, lo + k, whole), self.subroot(lo + k, hi)]
        return [*self._subproof(m - k, lo + k, hi, False), self.subroot(lo, lo + k)]


def root_of(leaves: Sequence[bytes]) -> bytes:
    return Tree(leaves).root()


def root_from_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes]) -> bytes:
    """The root an inclusion path leads to (RFC 9162 §2.1.3.2 steps 1-4); raises on a path of the wrong shape."""
    if not 0 <= index < size or len(leaf) != 32 or any(len(p) != 32 for p in path):
        raise ProofError(f"an inclusion proof of leaf {index} in a tree of {size} with 32-byte hashes only")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise ProofError("the inclusion proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the inclusion proof is shorter than the tree is deep")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes], root: bytes) -> None:
    """Raise :class:`ProofError` unless ``leaf`` (a leaf hash) is leaf ``index`` of the tree ``root`` of ``size``."""
    if root_from_inclusion(index, size, leaf, path) != root:
        raise ProofError(f"the inclusion proof of leaf {index} does not lead to the root of size {size}")


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes, path: Sequence[bytes]) -> None:
    """Raise :class:`ProofError` unless the tree ``second_root`` of ``second`` leaves extends the tree
    ``first_root`` of ``first`` (RFC 9162 §2.1.4.2; equal sizes need an empty proof and equal roots)."""
    if not 0 < first <= second or any(len(h) != 32 for h in (first_root, second_root, *path)):
        raise ProofError(
            f"no consistency proof from size {first} to {second} (sizes 0 < first ≤ second, 32-byte hashes)"
        )
    if first == second:
        if path or first_root != second_root:
            raise ProofError(f"equal sizes {first} need an empty proof and equal roots")
        return
    nodes = list(path) if first & (first - 1) else [first_root, *path]
    if not nodes:
        raise ProofError("an empty consistency proof between different sizes")
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = nodes[0]
    for c in nodes[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is longer than the trees are deep")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0 or fr != first_root or sr != second_root:
        raise ProofError(f"the consistency proof from size {first} to {second} does not verify")
