"""Hermes categories as a part of the brain: list by category, create into one, move between them.

A brain *has* a :class:`Categories`. Membership lives in the snapshot's ``categories/``
tree beside the bundle (ADR 8, docs/lineage.md §1.5): ``.ledger-categories.json`` maps
each categorised skill to its ``category[/sub]``, and Hermes's category files
(``DESCRIPTION.md``) sit at their paths. A move changes only that tree, so it is a
snapshot whose root equals its parent's (operation ``move``), anchored with it (§7).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from ledger.bundle.naming import CATEGORY_INDEX
from ledger.errors import SkillError
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.write.records import NoChangeError, Receipt

if TYPE_CHECKING:
    from ledger.brain.reads import Reads
    from ledger.write.apply import Writer

__all__ = ["Categories", "check_category"]

_SEGMENT = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}\Z")


def check_category(category: str) -> str:
    """A category as Hermes names its folders: one to three lower-case segments joined by ``/``."""
    parts = category.strip("/").split("/")
    if not category.strip("/") or len(parts) > 3 or not all(_SEGMENT.match(p) and ".." not in p for p in parts):
        raise SkillError(
            f"invalid category {category!r}",
            hint="one to three lower-case folder names joined by '/', e.g. research or mlops/inference",
        )
    return "/".join(parts)


class Categories:
    """A brain's categories (``brain.categories``): read from the head, changed through the writer."""

    def __init__(self, writer: Writer, reads: Reads) -> None:
        self.writer, self.reads = writer, reads

    def of(self) -> dict[str, str]:
        """Each categorised skill's category in the head snapshot."""
        return self.reads.categories_of(self.writer.snapshots.head())

    def members(self, category: str) -> list[str]:
        """The skills in ``category`` or under it (``research`` holds ``research/arxiv``'s skills too)."""
        category = check_category(category)
        return sorted(k for k, c in self.of().items() if c == category or c.startswith(category + "/"))

    def move(self, name: str, category: str | None, *, note: str = "") -> Receipt:
        """Put skill ``name`` in ``category`` (``None``: the top level) as one snapshot."""
        target = check_category(category) if category else None
        with self.writer.lock.locked():
            name = self.reads.resolve(name)
            head = self.writer.snapshots.head()
            if name not in head.skills:
                raise SkillError(f"no skill {name!r}", hint="see 'ledger skill list'")
            if self.of().get(name) == target:
                raise NoChangeError(f"skill {name!r} is already in {target or 'the top level'}")
            tree = self.tree_with(head, {name: target})
            return self.writer.apply("move", {}, [], note or f"{name} → {target or 'top level'}", categories=tree)

    def tree_with(self, head: object, membership: dict[str, str | None]) -> bytes | None:
        """The head's ``categories/`` tree with ``membership`` applied (``None`` removes a skill's entry);
        the tree as it is when nothing changes, so a write outside categories leaves it alone."""
        store = self.writer.store
        old = self.writer.snapshots.categories_tree(head)  # type: ignore[arg-type]
        files = th.files_of(store, old) if old else {}
        index: dict[str, str] = {}
        if CATEGORY_INDEX in files:
            index = dict(json.loads(store.read(files[CATEGORY_INDEX][1], b"blob"))["skills"])
        before = dict(index)
        for key, category in membership.items():
            if category:
                index[key] = category
            else:
                index.pop(key, None)
        if index == before:
            return old
        doc = json.dumps({"format": 1, "skills": dict(sorted(index.items()))}, indent=2) + "\n"
        files[CATEGORY_INDEX] = (gs.MODE_FILE, store.write_blob(doc.encode()))
        return self.writer.trees.write(files, "categories")[0]
