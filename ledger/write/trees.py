"""A skill's blobs and git trees, written for the writer, each file digest computed from its bytes.

Apart from :class:`~ledger.write.apply.Writer` because it is pure object writing: it knows the
store and the digest cache, and nothing of the lock, the journal or the working tree.  The
digests it computes in this process (:attr:`SkillTrees.fresh`) are the only ones a write
trusts; the persisted cache is written, never believed, here.
"""

from __future__ import annotations

from collections.abc import Mapping

from ledger.bundle.merkle import KIND_DIR, Digest, DirNode, file_digest
from ledger.errors import SkillError
from ledger.store import gitstore as gs
from ledger.store import treehash as th

__all__ = ["SkillTrees"]


class SkillTrees:
    """Blobs and trees for the writer (``writer.trees``)."""

    def __init__(self, store: gs.GitStore, cache: th.DigestCache) -> None:
        self.store, self.cache = store, cache
        self.fresh: dict[bytes, bytes] = {}  # blob id → digest computed from bytes in this process

    def blobs(
        self, writes: Mapping[str, tuple[bytes, bool] | None], files: gs.FileMap, keep: dict[bytes, bytes] | None = None
    ) -> gs.FileMap:
        """Write the blobs of ``writes`` over ``files``; ``keep`` collects their bytes for the working tree."""
        for path, spec in writes.items():
            if spec is None:
                files.pop(path, None)
                continue
            data, executable = spec
            sha = self.store.write_blob(data)
            if keep is not None:
                keep[sha] = data
            self.fresh[sha] = file_digest(data)
            self.cache.put(sha, self.fresh[sha])
            files[path] = (gs.MODE_EXEC if executable else gs.MODE_FILE, sha)
        return files

    def write(self, files: gs.FileMap, where: str) -> tuple[bytes, bytes]:
        """Write the git trees for a skill's files; return (tree id, bundle digest).

        Iterative, deepest directory first, so depth is bounded only by the path rules.
        File digests come from the bytes (:meth:`_blob_digest`), never from the cache.
        """
        dirs: dict[str, dict[str, tuple[int, bytes] | None]] = {"": {}}  # None marks a subdirectory
        for path, spec in files.items():
            parent, _, leaf = path.rpartition("/")
            dirs.setdefault(parent, {})
            if dirs[parent].get(leaf, spec) is None or path in dirs:
                raise SkillError(f"{where}/{path} is both a file and a directory")
            dirs[parent][leaf] = spec
            while parent:
                up, _, name = parent.rpartition("/")
                siblings = dirs.setdefault(up, {})
                if name in siblings:
                    if siblings[name] is not None:
                        raise SkillError(f"{where}/{parent} is both a file and a directory")
                    break
                siblings[name] = None
                parent = up
        done: dict[str, tuple[bytes, bytes]] = {}
        for rel in sorted(dirs, key=lambda p: -(p.count("/") + 1) if p else 0):
            entries: list[gs.TreeEntry] = []
            nodes: dict[str, Digest | DirNode] = {}
            for name, spec in dirs[rel].items():
                if spec is None:
                    sha, digest = done[f"{rel}/{name}" if rel else name]
                    entries.append((sha, gs.MODE_DIR, name))
                    nodes[name] = Digest(KIND_DIR, digest)
                else:
                    mode, sha = spec
                    entries.append((sha, mode, name))
                    nodes[name] = Digest(gs.kind_of_mode(mode, name), self._blob_digest(sha))
            tree = self.store.write_tree(entries)
            digest = DirNode(nodes, f"{where}/{rel}" if rel else where).digest
            self.cache.put(tree, digest)
            done[rel] = (tree, digest)
        return done[""]

    def _blob_digest(self, sha: bytes) -> bytes:
        """A file digest computed from its bytes in this write; the persisted cache is not trusted here."""
        digest = self.fresh.get(sha)
        if digest is None:
            digest = self.fresh[sha] = file_digest(self.store.read(sha, b"blob"))
            self.cache.put(sha, digest)
        return digest
