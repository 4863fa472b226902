"""The bundle root kept as Merkle levels and updated incrementally: :class:`RootIndex`.

The bundle root is a directory of skill directories.  A writer that changes one skill
should not rehash every other, so :class:`RootIndex` keeps the root directory's RFC 6962
levels and recomputes one leaf-to-root path per change; :meth:`RootIndex.dump` and
:meth:`RootIndex.load` keep it in ``.ledger/cache`` between runs.  Kept apart from
:mod:`ledger.protocol.bundlehash` because it is an optimisation, not part of the spec: the root
it holds is the one :class:`~ledger.protocol.bundlehash.DirNode` computes, only cheaper to update.
Import it from :mod:`ledger.bundle.merkle`, which re-exports it.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

from blake3 import blake3

from ledger.errors import TreeError
from ledger.protocol.bundlehash import _MAX_NAME_BYTES, EMPTY_ROOT, KIND_DIR, TREE, _fold, check_name, leaf_hash

__all__ = ["RootIndex"]


class RootIndex:
    """A directory of subdirectories (the bundle root) kept as Merkle levels, updated incrementally.

    Replacing a child's digest recomputes one leaf-to-root path (O(log n));
    adding or removing a child rebuilds the levels (O(n) hashes of 65 bytes).
    Names added here are checked against the naming rules, case folds included.
    """

    def __init__(self, digests: Mapping[str, bytes]) -> None:
        self.names = sorted(digests)
        self.digests = dict(digests)
        self._fold_map: dict[str, str] | None = {}
        for name in self.names:
            self._admit(name)
        self.levels = TREE.levels([leaf_hash(KIND_DIR, n, self.digests[n]) for n in self.names])

    def _admit(self, name: str) -> None:
        if name.isascii() and 0 < len(name) <= _MAX_NAME_BYTES and "/" not in name and "\x00" not in name:
            if name in (".", ".."):
                check_name(name)  # raises
        else:
            check_name(name)
        key = _fold(name)
        if self._folded.get(key, name) != name:
            raise TreeError(f"{self._folded[key]!r} and {name!r} collide on a case-insensitive filesystem")
        self._folded[key] = name

    @property
    def _folded(self) -> dict[str, str]:
        """Each name's case fold → the name; built on first use, as only adding or removing a name
        needs it (an index loaded for a write that changes one skill never does)."""
        if self._fold_map is None:
            self._fold_map = {_fold(x): x for x in self.names}
        return self._fold_map

    @property
    def root(self) -> bytes:
        return self.levels[-1][0] if self.names else EMPTY_ROOT

    def set(self, name: str, digest: bytes | None) -> None:
        i = bisect.bisect_left(self.names, name)
        present = i < len(self.names) and self.names[i] == name
        if digest is not None and present:
            self.digests[name] = digest
            TREE.update(self.levels, i, leaf_hash(KIND_DIR, name, digest))
            return
        leaves = self.levels[0]
        if digest is None:
            if present:
                del self.names[i], leaves[i], self.digests[name]
                self._folded.pop(_fold(name), None)
        else:
            self._admit(name)
            self.names.insert(i, name)
            leaves.insert(i, leaf_hash(KIND_DIR, name, digest))
            self.digests[name] = digest
        self.levels = TREE.levels(leaves)

    def update(self, changes: Mapping[str, bytes | None]) -> None:
        """Apply many changes; adds and removals rebuild the levels once, not once each."""
        if len(changes) <= 1 or all(d is not None and n in self.digests for n, d in changes.items()):
            for name, digest in changes.items():
                self.set(name, digest)
            return
        for name, digest in changes.items():
            if digest is None:
                if self.digests.pop(name, None) is not None:
                    self._folded.pop(_fold(name), None)
            else:
                if name not in self.digests:
                    self._admit(name)
                self.digests[name] = digest
        self.names = sorted(self.digests)
        self.levels = TREE.levels([leaf_hash(KIND_DIR, n, self.digests[n]) for n in self.names])

    _MAGIC = b"LRI1"

    def dump(self, key: bytes) -> bytes:
        """Serialise (names, digests, levels) under ``key``, sealed with a BLAKE3 checksum."""
        names = "\n".join(self.names).encode()
        body = b"".join(
            [
                self._MAGIC,
                key,
                len(self.names).to_bytes(4, "big"),
                len(names).to_bytes(4, "big"),
                names,
                *(self.digests[n] for n in self.names),
                *(h for level in self.levels for h in level),
            ]
        )
        return body + blake3(body).digest()

    @classmethod
    def load(cls, data: bytes, key: bytes) -> RootIndex | None:
        """The index :meth:`dump` wrote for ``key``, or ``None`` if it is for another key or damaged."""
        if len(data) < 60 or data[:4] != cls._MAGIC or data[4:24] != key:
            return None
        if blake3(data[:-32]).digest() != data[-32:]:
            return None
        n, size = int.from_bytes(data[24:28], "big"), int.from_bytes(data[28:32], "big")
        off = 32 + size
        names = data[32:off].decode().split("\n") if n else []
        digests = [data[off + 32 * i : off + 32 * i + 32] for i in range(n)]
        off += 32 * n
        levels, count = [], n
        while True:
            levels.append([data[off + 32 * i : off + 32 * i + 32] for i in range(count)])
            off += 32 * count
            if count <= 1:
                break
            count = (count + 1) // 2
        if off != len(data) - 32 or len(names) != n:
            return None
        index = cls.__new__(cls)
        index.names, index.digests, index.levels = names, dict(zip(names, digests, strict=True)), levels
        index._fold_map = None  # names loaded were admitted when the index was built
        return index

    def copy(self) -> RootIndex:
        other = RootIndex.__new__(RootIndex)
        other.names, other.digests = list(self.names), dict(self.digests)
        other._fold_map = dict(self._fold_map) if self._fold_map is not None else None
        other.levels = [list(level) for level in self.levels]
        return other
