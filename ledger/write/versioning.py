"""Where a brain keeps its skills' version numbers (docs/lineage.md §4.2, ADR 20).

By default the counter lives in each SKILL.md's frontmatter (``metadata.version``), so
a skill's version travels with its files and is covered by the root.  A brain made
with ``--versions store`` keeps it only in the store instead: a ``versions`` record
beside ``skills/`` lists every live skill's version, and no SKILL.md is ever touched,
so an imported upstream collection exports byte for byte.  The choice is made when the
brain is made and holds for its whole lineage (the record is in snapshot 0 or in none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.bundle.skill import MAX_SKILL_MD, SkillDoc, parse_skill_md
from ledger.errors import StoreError, UsageError
from ledger.store import gitstore as gs

if TYPE_CHECKING:
    from ledger.write.head import Head

__all__ = ["FRONTMATTER", "MODES", "STORE", "Versions"]

FRONTMATTER, STORE = "frontmatter", "store"
MODES = (FRONTMATTER, STORE)


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise UsageError(f"unknown versions setting {mode!r}", hint="choose 'frontmatter' (the default) or 'store'")
    return mode


class Versions:
    """A brain's part that reads and writes skill versions in the brain's chosen place."""

    def __init__(self, store: gs.GitStore) -> None:
        self.store = store

    def record(self, head: Head) -> dict[str, int] | None:
        """Each live skill's version from the head's ``versions`` record; ``None`` when the brain
        counts in SKILL.md.  Read once per head."""
        if head.versions is None:
            head.versions = self.store.versions(bytes.fromhex(head.snap.tree)) if head.snap.tree else (None, {})
        return head.versions[1] if head.versions[0] is not None else None

    def mode(self, head: Head) -> str:
        return FRONTMATTER if self.record(head) is None else STORE

    def doc(self, head: Head, text: str, *, name: str | None = None, limit: int = MAX_SKILL_MD) -> SkillDoc:
        """``text`` parsed as a SKILL.md of this brain: committed skill ``name``'s (its version is the
        store's when the brain keeps versions there), or a new file's (``name`` None: version 0)."""
        doc = parse_skill_md(text, limit=limit)
        record = self.record(head)
        if record is None:
            return doc
        return doc.uncounted(record.get(name, 0) if name is not None else 0)

    def version(self, head: Head, name: str, doc: SkillDoc) -> int:
        """Committed skill ``name``'s version, given its parsed SKILL.md."""
        record = self.record(head)
        return doc.version if record is None else record.get(name, 0)

    def next_record(self, head: Head, changes: list[gs.Change]) -> tuple[bytes | None, dict[str, int]] | None:
        """The ``versions`` record after ``changes`` (blob id, map); ``None`` when the brain counts in SKILL.md."""
        record = self.record(head)
        if record is None:
            return None
        after = dict(record)
        for change in changes:
            if change.action == "delete":
                after.pop(change.skill, None)
            else:
                after[change.skill] = change.version
        if after == record:
            assert head.versions is not None
            return head.versions
        return self.store.write_blob(gs.format_record(after)), after

    def choose(self, head: Head, mode: str) -> bool:
        """Make ``mode`` this brain's from the next snapshot on; ``True`` when that changes it.

        Only an empty brain (no skill, none ever deleted) may move its versions into the
        store, so no SKILL.md is left with a counter nobody maintains (lineage.md §4.2).
        The caller drops ``head`` if no snapshot follows (a dry run)."""
        if self.mode(head) == check_mode(mode):
            return False
        if mode == FRONTMATTER:
            raise StoreError(
                "this brain keeps its versions in the store, for its whole lineage",
                hint="export it and import the skills into a brain made with 'ledger init'",
            )
        if head.skills or self.store.retired(bytes.fromhex(head.snap.tree))[0] is not None:
            raise StoreError(
                f"versions can move into the store only while the brain is empty; it holds {len(head.skills)} skill(s)"
                " or has deleted some",
                hint="make a new brain with 'ledger init --versions store DIR' and import into it",
            )
        head.versions = (self.store.write_blob(b""), {})
        return True

    def genesis(self, mode: str) -> bytes | None:
        """Snapshot 0's ``versions`` record (empty) for a brain that keeps versions in the store."""
        return self.store.write_blob(b"") if check_mode(mode) == STORE else None
