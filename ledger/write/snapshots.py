"""The head snapshot and the skills it records, read from the store with the caches a write needs.

A brain *has* a :class:`Snapshots` (``brain._snapshots``); the writer, the reads and the
agent-facing parts all read the head through it, so it is loaded, verified and kept in
one place.  The head's root index is verified against the root its commit records
before it is used, and saved at close for the next process (ADR 21); a skill tree's
files are remembered by tree id, which is a content hash, so they can never be stale.
"""

from __future__ import annotations

from pathlib import Path

from ledger._fs import ROOT_INDEX
from ledger.bundle.merkle import RootIndex, format_root
from ledger.bundle.skill import SKILL_MD, SkillDoc
from ledger.errors import SkillError, SkillNotFoundError, StoreError
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.skilltree import Fanout, skills_of
from ledger.store.state import State
from ledger.write.head import KEEP, Head
from ledger.write.versioning import Versions

__all__ = ["Snapshots"]


class Snapshots:
    """The head and what it records: each skill's files and SKILL.md, read once and remembered."""

    def __init__(
        self, store: gs.GitStore, control: Path, cache: th.DigestCache, versions: Versions, limits: dict[str, int]
    ) -> None:
        self.store, self.control, self.cache, self.versions, self.limits = store, control, cache, versions, limits
        self.current: Head | None = None  # the head in memory; the writer replaces it after each write
        self.held: dict[bytes, bytes] = {}  # blob id → bytes, while a bulk write writes them out
        self.index_saved: bytes | None = None  # the skills/ tree the saved root index is for
        self._files_memo: dict[bytes, gs.FileMap] = {}  # skill tree id → its files (see files())
        self._text_memo: dict[bytes, bytes] = {}  # SKILL.md blob id → bytes, the last few read

    def head(self) -> Head:
        """The head snapshot, loaded and its root checked when the branch has moved."""
        commit = self.store.head()
        if commit is None:
            raise StoreError(
                f"{self.store.path} has no snapshots", hint="the brain was not initialised; run 'ledger init'"
            )
        if self.current is not None and self.current.commit == commit:
            return self.current
        snap = self.store.snapshot(commit)
        skills_tree, skills, buckets = skills_of(self.store, bytes.fromhex(snap.tree))
        bundle = self._load_index(skills_tree)
        if bundle is None or bundle.names != sorted(skills) or bundle.root != snap.root:
            digests = {n: th.tree_digest(self.store, sha, self.cache, n) for n, sha in skills.items()}
            bundle = RootIndex(digests)
        if bundle.root != snap.root:
            raise StoreError(
                f"head snapshot {commit.hex()[:12]} claims root {format_root(snap.root)} but its tree "
                f"hashes to {format_root(bundle.root)}",
                hint="the store was tampered with; run 'ledger verify'",
            )
        self.current = Head(commit, snap, skills, bundle, fanout=Fanout(read=buckets) if buckets is not None else None)
        return self.current

    def _load_index(self, skills_tree: bytes | None) -> RootIndex | None:
        """The root index saved for this exact ``skills/`` tree id, if any (see :meth:`save_index`)."""
        if skills_tree is None:
            return None
        index = State(self.control).read(ROOT_INDEX, lambda data: RootIndex.load(data, skills_tree))
        if index is not None:
            self.index_saved = skills_tree
        return index

    def save_index(self) -> None:
        """Persist the head's root index once per process, so the next CLI call skips O(n) rehashing."""
        head = self.current
        if head is None or not head.skills or len(head.skills) < 256:
            return
        key = bytes.fromhex(head.snap.tree) if head.snap.tree else None
        tree = self.store.skills_tree(head.commit, key)
        if tree is None or tree == self.index_saved:
            return
        State(self.control).write(ROOT_INDEX, head.bundle.dump(tree))
        self.index_saved = tree

    def categories_tree(self, head: Head) -> bytes | None:
        """The head's ``categories/`` tree id (docs/layouts.md), read once per head."""
        if head.categories is KEEP:
            head.categories = self.store.categories_tree(bytes.fromhex(head.snap.tree))
        return head.categories  # type: ignore[return-value]

    def files(self, tree: bytes) -> gs.FileMap:
        """A skill tree's files; remembered by tree id (content-addressed), as one upsert asks
        for the same skill's files three times, and each ``git cat-file`` round trip slows
        while a packer changes the packs under it."""
        files = self._files_memo.get(tree)
        if files is None:
            files = th.files_of(self.store, tree)
            for rel, (mode, _) in files.items():
                gs.kind_of_mode(mode, rel)
            if len(self._files_memo) >= 64:
                self._files_memo.pop(next(iter(self._files_memo)))
            self._files_memo[tree] = files
        return dict(files)

    def committed(self, name: str) -> tuple[gs.FileMap, SkillDoc]:
        """Skill ``name``'s files and parsed SKILL.md at the head."""
        head = self.head()
        if name not in head.skills:
            raise SkillNotFoundError(f"no skill named {name!r}", hint="see 'ledger skill list'")
        files = self.files(head.skills[name])
        if SKILL_MD not in files:
            raise StoreError(f"skill {name!r} in the head snapshot has no {SKILL_MD}")
        doc = self.versions.doc(head, self.text(files[SKILL_MD][1], name), name=name, limit=self.limits["skill_md"])
        return files, doc

    def text(self, blob: bytes, where: str) -> str:
        try:
            return self.read_blob(blob).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillError(f"{where}: file is not valid UTF-8") from exc

    def read_blob(self, sha: bytes) -> bytes:
        """A blob's bytes: those a write holds already, a recent small one, else from git."""
        data = self.held.get(sha) or self._text_memo.get(sha)
        if data is None:
            data = self.store.read(sha, b"blob")
            if len(data) <= 65536:  # SKILL.md files, read by every write of their skill
                if len(self._text_memo) >= 64:
                    self._text_memo.pop(next(iter(self._text_memo)))
                self._text_memo[sha] = data
        return data
