"""Bundle digests of stored git trees: the digest cache, tree digests, proofs' expansions, recomputed roots.

Keys are git object ids, which are content hashes, so a digest computed for an id
stays right forever; the persisted :class:`DigestCache` only spares work, and what is
anchored on chain is recomputed without it (:func:`recompute_roots`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from blake3 import blake3

from ledger._fs import append_cache, read_cache
from ledger.bundle.merkle import KIND_DIR, Digest, DirNode, RootIndex, file_digest, format_root
from ledger.errors import TreeError
from ledger.store.gitstore import MODE_DIR, GitStore, TreeEntry, kind_of_mode
from ledger.store.skilltree import skills_of

__all__ = [
    "DigestCache",
    "blob_digest",
    "bundle_of_tree",
    "evals_digest",
    "expand",
    "files_of",
    "recompute_roots",
    "tree_digest",
]


class DigestCache:
    """git object id → bundle digest, persisted append-only in ``.ledger/cache``.

    Keys are git ids, which are themselves content hashes (a blob id covers the
    bytes, a tree id covers names, modes and children), so an entry can never go
    stale: the same key always has the same digest.  Records are appended in
    blocks, each sealed by a BLAKE3 checksum; a block that fails its checksum
    (a torn write, a flipped bit) is ignored rather than trusted.
    """

    _MAGIC = b"LDC1"
    _RECORD = 20 + 32

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._loaded: dict[bytes, bytes] | None = None  # read on first use: most reads never need it
        self._pending: list[bytes] = []
        self._new: dict[bytes, bytes] = {}  # put in this process (the file may repeat a record: harmless)

    @property
    def _map(self) -> dict[bytes, bytes]:
        if self._loaded is None:
            self._loaded = {}
            self._load((read_cache(self.path, bytes) if self.path is not None else None) or b"")
        return self._loaded

    def _load(self, data: bytes) -> None:
        off, n, rec = 0, len(data), self._RECORD
        while off + 8 <= n and data[off : off + 4] == self._MAGIC:
            count = int.from_bytes(data[off + 4 : off + 8], "big")
            end = off + 8 + count * rec
            if end + 32 > n:
                break  # a torn final block
            if blake3(data[off:end]).digest() == data[end : end + 32]:
                body = data[off + 8 : end]
                self._map.update((body[i : i + 20], body[i + 20 : i + rec]) for i in range(0, len(body), rec))
            off = end + 32

    def get(self, key: bytes) -> bytes | None:
        return self._new.get(key) or self._map.get(key)

    def put(self, key: bytes, digest: bytes) -> None:
        """Remember a digest; a write puts a few without reading the whole file (records are appended)."""
        known = self._new.get(key) or (self._loaded.get(key) if self._loaded is not None else None)
        if known != digest:
            self._new[key] = digest
            self._pending.append(key + digest)

    def flush(self) -> None:
        if self.path is None or not self._pending:
            return
        block = self._MAGIC + len(self._pending).to_bytes(4, "big") + b"".join(self._pending)
        append_cache(self.path, block + blake3(block).digest())  # refused: recomputed next time
        self._pending.clear()


def files_of(store: GitStore, tree: bytes | None) -> dict[str, tuple[int, bytes]]:
    """Every file under a git tree as ``rel → (mode, blob id)`` (iterative: no depth limit)."""
    out: dict[str, tuple[int, bytes]] = {}
    stack = [(tree, "")] if tree is not None else []
    while stack:
        sha, prefix = stack.pop()
        for child, mode, name in store.read_tree(sha):
            if mode == MODE_DIR:
                stack.append((child, f"{prefix}{name}/"))
            else:
                out[prefix + name] = (mode, child)
    return out


def _level(store: GitStore, listing: list[TreeEntry], cache: DigestCache, where: str) -> DirNode:
    """One directory's :class:`DirNode`, its subdirectories as digests (already in ``cache`` or computed)."""
    entries: dict[str, Digest | DirNode] = {}
    for sha, mode, name in listing:
        label = f"{where}/{name}" if where else name
        kind = kind_of_mode(mode, label)
        if kind == KIND_DIR:
            entries[name] = Digest(KIND_DIR, tree_digest(store, sha, cache, label))
        else:
            entries[name] = Digest(kind, blob_digest(store, sha, cache))
    if not entries and where:
        raise TreeError(f"{where!r} is an empty directory in the snapshot")
    return DirNode(entries, where)


def bundle_of_tree(store: GitStore, tree: bytes | None, cache: DigestCache, where: str = "") -> DirNode:
    """Rebuild the bundle :class:`DirNode` of a git tree, expanding one level.

    Subdirectories come back as :class:`Digest` nodes, recomputed through the
    cache so that only trees never seen before are read and hashed.
    """
    if tree is None:
        return DirNode({})
    return _level(store, store.read_tree(tree), cache, where)


def tree_digest(store: GitStore, tree: bytes, cache: DigestCache, where: str = "") -> bytes:
    """The bundle digest of a git tree, deepest subtrees first (iterative: no depth limit)."""
    hit = cache.get(tree)
    if hit is not None:
        return hit
    stack: list[tuple[bytes, str, list[TreeEntry] | None]] = [(tree, where, None)]
    while stack:
        sha, label, listing = stack[-1]
        if cache.get(sha) is not None:
            stack.pop()
            continue
        if listing is None:
            listing = store.read_tree(sha)
            stack[-1] = (sha, label, listing)
            todo = [
                (child, f"{label}/{name}" if label else name, None)
                for child, mode, name in listing
                if mode == MODE_DIR and cache.get(child) is None
            ]
            if todo:
                stack.extend(todo)
                continue
        cache.put(sha, _level(store, listing, cache, label).digest)
        stack.pop()
    return cache.get(tree)  # type: ignore[return-value]


def evals_digest(store: GitStore, skill_tree: bytes, cache: DigestCache | None = None) -> str | None:
    """The digest (``blake3-tree-v1:`` and hex) of the ``evals`` directory of a skill's git tree: the same
    directory digest as a skill's (bundle-hash.md §4), which an evaluation's plan and records name as their
    ``set`` (docs/lineage/evaluations.md); None when the skill has no ``evals`` directory."""
    for sha, mode, name in store.read_tree(skill_tree):
        if name == "evals" and mode == MODE_DIR:
            return format_root(tree_digest(store, sha, cache if cache is not None else DigestCache(None), "evals"))
    return None


def blob_digest(store: GitStore, blob: bytes, cache: DigestCache) -> bytes:
    hit = cache.get(blob)
    if hit is None:
        hit = file_digest(store.read(blob, b"blob"))
        cache.put(blob, hit)
    return hit


def expand(store: GitStore, tree: bytes | None, cache: DigestCache, path: Sequence[str] = ()) -> DirNode:
    """Like :func:`bundle_of_tree`, but with the directories along ``path`` expanded (for proofs)."""
    node = bundle_of_tree(store, tree, cache)
    if not path or tree is None:
        return node
    chain: list[tuple[DirNode, str]] = []
    current, sha, where = node, tree, ""
    for name in path[:-1]:
        sub = next((s for s, mode, n in store.read_tree(sha) if n == name and mode == MODE_DIR), None)
        if sub is None:
            break
        chain.append((current, name))
        where = f"{where}/{name}" if where else name
        current, sha = bundle_of_tree(store, sub, cache, where), sub
    for parent, name in reversed(chain):
        entries = dict(parent.entries)
        entries[name] = current
        current = DirNode(entries)
    return current


def expand_skills(store: GitStore, skills: Mapping[str, bytes], cache: DigestCache, path: Sequence[str]) -> DirNode:
    """The bundle :class:`DirNode` of a snapshot's skills (``{name: tree id}``, either layout of
    :mod:`ledger.store.skilltree`) with the directories along ``path`` expanded, for proofs."""
    node = DirNode({n: Digest(KIND_DIR, tree_digest(store, t, cache, n)) for n, t in skills.items()})
    if len(path) < 2 or path[0] not in skills:
        return node
    entries = dict(node.entries)
    entries[path[0]] = expand(store, skills[path[0]], cache, path[1:])
    return DirNode(entries)


def recompute_roots(store: GitStore, commits: Sequence[bytes]) -> Iterator[bytes]:
    """Each snapshot's root from its git objects alone, trusting no stored cache.

    Consecutive snapshots share most skills: digests are cached in memory by tree id
    (content-addressed, computed in this call), and the root's Merkle levels are updated
    along changed skills only, so a batch costs one full hash plus its changes.
    """
    cache = DigestCache(None)
    index = RootIndex({})
    entries: dict[str, bytes] = {}
    memo: dict[bytes, dict[str, bytes]] = {}  # bucket listings of fanned-out snapshots, by tree id
    for commit in commits:
        try:
            now = skills_of(store, store.commit_info(commit)[0], memo)[1]
        except TreeError as exc:
            raise TreeError(f"snapshot {commit.hex()[:12]}: {exc.message}") from None
        changed = {n for n in set(now) | set(entries) if now.get(n) != entries.get(n)}
        index.update({n: tree_digest(store, now[n], cache, n) if n in now else None for n in changed})
        entries = now
        yield index.root
