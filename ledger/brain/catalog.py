"""The head's skills as a listing (name, description, version, category, platform), for agents.

An agent reads the listing and the Level-0 index at the start of every task.  Read from
the working tree, that is an ``lstat`` walk and a frontmatter parse per skill on every
call: 346 ms at 10,000 skills through a warm MCP server.  A brain *has* a
:class:`Catalog` that answers from what the head snapshot records instead:

- each skill's entry is kept by its git tree id, which is a content hash of the skill's
  files, so an entry can never be stale, and only skills a write changed are read again;
- the finished listing is kept per head commit, so a second call on the same head is a
  lookup; it leaves out the skills the head's ``supply`` record withholds
  (:mod:`ledger.brain.withholding`), and an approve or a revoke is a new head;
- each skill tree's entry is also kept on disk (:class:`ledger.brain.memo.ObjectMemo`, in
  ``.ledger/cache/catalog-v1.json``), so a fresh process reads from the store only the
  skills it has never seen; those it reads in one pipelined request each for their trees
  and their SKILL.md files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger._fs import CATALOG
from ledger.brain.memo import ObjectMemo, files_of_trees
from ledger.brain.withholding import withheld
from ledger.bundle import frontmatter
from ledger.bundle.render import index_line
from ledger.bundle.skill import SKILL_MD, parse_skill_md
from ledger.errors import LedgerError, StoreError
from ledger.store import treehash as th
from ledger.store.state import State

if TYPE_CHECKING:
    from ledger.brain.categories import Categories
    from ledger.write.snapshots import Snapshots
    from ledger.write.versioning import Versions

__all__ = ["Catalog", "Entry"]


@dataclass(frozen=True)
class Entry:
    name: str  # the folder, the key
    description: str
    version: int
    category: str | None
    platforms: Any  # the frontmatter's ``platforms:`` as written (Hermes gates on it), or None


class Catalog:
    """The head's listing, kept per head commit and per skill tree id."""

    def __init__(self, snapshots: Snapshots, versions: Versions, categories: Categories) -> None:
        self.snapshots, self.versions, self.categories = snapshots, versions, categories
        self._by_tree: dict[bytes, tuple[str, int, Any]] = {}  # skill tree id → description, counter, platforms
        self._at: tuple[bytes, list[Entry]] | None = None  # the last head's listing
        self._index: tuple[bytes, str] | None = None  # and its Level-0 index
        sources = ("ledger.brain.catalog", "ledger.bundle.skill", "ledger.bundle.frontmatter")
        self.memo = ObjectMemo(State(snapshots.control).path(CATALOG), sources)  # for the next process

    def entries(self) -> list[Entry]:
        """Every skill in the head snapshot that its supply record does not withhold, in byte order of the name."""
        head = self.snapshots.head()
        if self._at is not None and self._at[0] == head.commit:
            return self._at[1]
        record = self.versions.record(head)
        categories = self.categories.of()
        if len(self._by_tree) > 2 * len(head.skills) + 1024:  # entries of skills long since rewritten
            live = set(head.skills.values())
            self._by_tree = {t: v for t, v in self._by_tree.items() if t in live}
        self._fill([t for t in head.skills.values() if t not in self._by_tree])
        out, hidden = [], withheld(self.snapshots, head)
        for name in sorted(head.skills, key=str.encode):
            if name in hidden:
                continue
            tree = head.skills[name]
            known = self._by_tree.get(tree)
            if known is None:
                known = self._by_tree[tree] = self._read(tree)
            description, counter, platforms = known
            version = counter if record is None else record.get(name, 0)
            out.append(Entry(name, description, version, categories.get(name), platforms))
        self._at = (head.commit, out)
        self.memo.save(head.skills.values())
        return out

    def _fill(self, trees: list[bytes]) -> None:
        """Read the entries of ``trees``: from the memo, else from the store, every tree and SKILL.md
        in one pipelined request; a tree that does not read as a skill is left to :meth:`_read`."""
        rest = []
        for tree in trees:
            kept = self.memo.get(tree)
            if type(kept) is list and len(kept) == 3 and type(kept[0]) is str and type(kept[1]) is int:
                self._by_tree[tree] = (kept[0], kept[1], kept[2])
            else:
                rest.append(tree)
        if not rest:
            return
        store = self.snapshots.store
        try:
            files = files_of_trees(store, rest)
            skill_mds = {t: f[SKILL_MD][1] for t, f in files.items() if SKILL_MD in f}
            blobs = store.read_blobs(list(skill_mds.values()))
        except StoreError:  # a missing object: _read names the first, in name order, as it always has
            return
        for (tree, _), data in zip(skill_mds.items(), blobs, strict=True):
            entry = self._by_tree[tree] = self._parse(data)
            self.memo.put(tree, list(entry))

    def index(self) -> str:
        """The Level-0 index of the head: ``▸ <name>: <description>`` per skill, one line each."""
        entries = self.entries()
        assert self._at is not None
        if self._index is None or self._index[0] != self._at[0]:
            self._index = (self._at[0], "".join(index_line(e.name, e.description) for e in entries))
        return self._index[1]

    def _read(self, tree: bytes) -> tuple[str, int, Any]:
        store = self.snapshots.store
        files = th.files_of(store, tree)
        return self._parse(store.read(files[SKILL_MD][1], b"blob"))

    @staticmethod
    def _parse(data: bytes) -> tuple[str, int, Any]:
        try:
            doc = parse_skill_md(data.decode("utf-8"), limit=1 << 31)
            platforms = frontmatter.load(doc.text)[0].get("platforms") if b"platforms" in data else None
        except (LedgerError, UnicodeDecodeError):
            return "", 0, None  # recorded as it is; lint says what is wrong with it
        return doc.description, doc.version, platforms
