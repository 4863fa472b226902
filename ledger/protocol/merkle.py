"""The one RFC 6962-shaped Merkle core, parametrised by its hash functions.

Two trees in the protocol have this shape: every directory of bundle hash v1 (BLAKE3, a leaf
binding kind, name and child; docs/bundle-hash.md) and the epoch log (SHA-256, RFC 9162 §2.1.1;
docs/lineage.md "Epochs").  They differ only in their hashes, so each is one :class:`Merkle`
value: its leaf hash, its interior-node hash and the root of no leaves
(:data:`ledger.protocol.bundlehash.TREE`, :data:`ledger.protocol.tlog.TREE`).

The tree of ``n`` leaf hashes is RFC 9162's (the left subtree holds the largest power of two
below ``n``), built level by level with a lone last node carried up unchanged, which is the same
tree.  Every level is kept (:meth:`Merkle.levels`), so a leaf is replaced and its path rehashed in
O(log n) (:meth:`Merkle.update`), and any inclusion path (RFC 9162 §2.1.3.1 ``PATH``) or
consistency proof (RFC 9162 §2.1.4.1 ``PROOF``) is read off the levels.  Proofs are checked by the RFC's
own verification algorithms, step by step (RFC 9162 §2.1.3.2, §2.1.4.2), which ``contracts/BrainRegistry.sol``
runs on chain as well.  Everything here is bytes in, bytes out; a proof of the wrong shape or one
that does not verify is a :class:`~ledger.errors.ProofError`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ledger.errors import ProofError

__all__ = ["Merkle"]

Levels = list[list[bytes]]


@dataclass(frozen=True, slots=True)
class Merkle:
    """An RFC 6962-shaped tree family: ``leaf`` hashes an entry (its arguments are the format's),
    ``node`` hashes two children, ``empty`` is the root of no leaves; every hash is ``len(empty)`` bytes."""

    leaf: Callable[..., bytes]
    node: Callable[[bytes, bytes], bytes]
    empty: bytes

    # ----------------------------------------------------------------- building

    def levels(self, leaves: Sequence[bytes]) -> Levels:
        """Every level of the tree over ``leaves`` (leaf hashes), leaves first, root last."""
        node = self.node
        levels = [list(leaves)]
        while len(levels[-1]) > 1:
            low = levels[-1]
            up = [node(low[i], low[i + 1]) for i in range(0, len(low) - 1, 2)]
            if len(low) % 2:
                up.append(low[-1])
            levels.append(up)
        return levels

    def root(self, leaves: Sequence[bytes]) -> bytes:
        """MTH of ``leaves`` (leaf hashes); :attr:`empty` for none."""
        return self.levels(leaves)[-1][0] if leaves else self.empty

    def top(self, levels: Levels) -> bytes:
        """The root of a tree already built by :meth:`levels`."""
        return levels[-1][0] if levels[0] else self.empty

    def update(self, levels: Levels, index: int, leaf: bytes) -> None:
        """Replace leaf ``index`` in place and rehash only its path: O(log n)."""
        node = self.node
        levels[0][index] = leaf
        for depth in range(1, len(levels)):
            below = levels[depth - 1]
            index //= 2
            left = 2 * index
            levels[depth][index] = below[left] if left + 1 >= len(below) else node(below[left], below[left + 1])

    # ----------------------------------------------------------------- proofs

    @staticmethod
    def path(levels: Sequence[Sequence[bytes]], index: int) -> list[bytes]:
        """PATH(index, D[0:n]) (RFC 9162 §2.1.3.1), the leaf's sibling first."""
        if not 0 <= index < len(levels[0]):
            raise ProofError(f"no leaf {index} in a tree of {len(levels[0])}")
        out = []
        for level in levels[:-1]:
            sibling = index ^ 1
            if sibling < len(level):
                out.append(level[sibling])
            index >>= 1
        return out

    def subroot(self, levels: Sequence[Sequence[bytes]], lo: int, hi: int) -> bytes:
        """MTH(D[lo:hi]) for 0 ≤ lo < hi ≤ n, from the stored nodes of aligned perfect subtrees."""
        n = hi - lo
        if n & (n - 1) == 0 and lo % n == 0:
            return levels[n.bit_length() - 1][lo // n]
        k = 1 << ((n - 1).bit_length() - 1)
        return self.node(self.subroot(levels, lo, lo + k), self.subroot(levels, lo + k, hi))

    def consistency(self, levels: Sequence[Sequence[bytes]], first: int) -> list[bytes]:
        """PROOF(first, D[0:n]) (RFC 9162 §2.1.4.1) for 0 < first ≤ n; empty when equal."""
        size = len(levels[0])
        if not 0 < first <= size:
            raise ProofError(f"no consistency proof from size {first} to {size}")
        return self._subproof(levels, first, 0, size, True)

    def _subproof(self, levels: Sequence[Sequence[bytes]], m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
        n = hi - lo
        if m == n:
            return [] if whole else [self.subroot(levels, lo, hi)]
        k = 1 << ((n - 1).bit_length() - 1)
        if m <= k:
            return [*self._subproof(levels, m, lo, lo + k, whole), self.subroot(levels, lo + k, hi)]
        return [*self._subproof(levels, m - k, lo + k, hi, False), self.subroot(levels, lo, lo + k)]

    # ----------------------------------------------------------------- verification

    def root_from_path(self, index: int, size: int, leaf: bytes, path: Sequence[bytes]) -> bytes:
        """The root an inclusion path leads to (RFC 9162 §2.1.3.2 steps 1-4); a path of the wrong shape,
        an index outside the tree or a hash of the wrong length is a :class:`ProofError`."""
        width = len(self.empty)
        if not 0 <= index < size or len(leaf) != width or any(len(p) != width for p in path):
            raise ProofError(f"an inclusion proof of leaf {index} in a tree of {size} with {width}-byte hashes only")
        node = self.node
        fn, sn, r = index, size - 1, leaf
        for p in path:
            if sn == 0:
                raise ProofError("the inclusion proof is longer than the tree is deep")
            if fn & 1 or fn == sn:
                r = node(p, r)
                while not fn & 1 and fn != 0:
                    fn, sn = fn >> 1, sn >> 1
            else:
                r = node(r, p)
            fn, sn = fn >> 1, sn >> 1
        if sn != 0:
            raise ProofError("the inclusion proof is shorter than the tree is deep")
        return r

    def verify_inclusion(self, index: int, size: int, leaf: bytes, path: Sequence[bytes], root: bytes) -> None:
        """Raise :class:`ProofError` unless ``leaf`` (a leaf hash) is leaf ``index`` of the tree ``root`` of
        ``size``."""
        if self.root_from_path(index, size, leaf, path) != root:
            raise ProofError(f"the inclusion proof of leaf {index} does not lead to the root of size {size}")

    def verify_consistency(
        self, first: int, second: int, first_root: bytes, second_root: bytes, path: Sequence[bytes]
    ) -> None:
        """Raise :class:`ProofError` unless the tree ``second_root`` of ``second`` leaves extends the tree
        ``first_root`` of ``first`` (RFC 9162 §2.1.4.2; equal sizes need an empty proof and equal roots)."""
        width = len(self.empty)
        if not 0 < first <= second or any(len(h) != width for h in (first_root, second_root, *path)):
            raise ProofError(
                f"no consistency proof from size {first} to {second} (sizes 0 < first ≤ second, {width}-byte hashes)"
            )
        if first == second:
            if path or first_root != second_root:
                raise ProofError(f"equal sizes {first} need an empty proof and equal roots")
            return
        nodes = list(path) if first & (first - 1) else [first_root, *path]
        if not nodes:
            raise ProofError("an empty consistency proof between different sizes")
        node = self.node
        fn, sn = first - 1, second - 1
        while fn & 1:
            fn, sn = fn >> 1, sn >> 1
        fr = sr = nodes[0]
        for c in nodes[1:]:
            if sn == 0:
                raise ProofError("the consistency proof is longer than the trees are deep")
            if fn & 1 or fn == sn:
                fr, sr = node(c, fr), node(c, sr)
                while not fn & 1 and fn != 0:
                    fn, sn = fn >> 1, sn >> 1
            else:
                sr = node(sr, c)
            fn, sn = fn >> 1, sn >> 1
        if sn != 0 or fr != first_root or sr != second_root:
            raise ProofError(f"the consistency proof from size {first} to {second} does not verify")
