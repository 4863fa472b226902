"""The one write context a service holds: ``with brain.writing(actor=…) as w:`` (ADR 72).

Inside the block the brain's writer lock is held (re-entrant, so the writes that take it
themselves nest) and every snapshot is attributed to ``actor`` and its evidence, exactly as
:meth:`ledger.brain.Brain.locked` and :meth:`ledger.brain.Brain.acting` did together.  ``w``
exposes the verbs services write with, and the reads a write decides on under the lock; the
writer's parts (its journal, joins, trees, sealer) stay behind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ledger.store import gitstore as gs

if TYPE_CHECKING:
    from ledger.brain.keyring import Keyring
    from ledger.bundle.collection import Collection
    from ledger.write.apply import Writer
    from ledger.write.importer import Importer
    from ledger.write.records import Receipt

__all__ = ["Writing"]


class Writing:
    """What a service may do while it writes: the verbs of the brain's one write path."""

    def __init__(self, writer: Writer, importer: Importer, keyring: Keyring) -> None:
        self._writer, self._importer, self._keyring = writer, importer, keyring

    @property
    def attribution(self) -> dict[str, str]:
        """The actor and evidence recorded in the trailers of what is written now."""
        return self._writer.attribution

    # ------------------------------------------------------------------ snapshots

    def apply(
        self,
        operation: str,
        updates: Mapping[str, gs.FileMap | None],
        changes: list[gs.Change],
        note: str,
        **options: Any,
    ) -> Receipt:
        """One snapshot through the one write path (:meth:`ledger.write.apply.Writer.apply`)."""
        return self._writer.apply(operation, updates, changes, note, **options)

    def write_skill(self, *args: Any, **options: Any) -> Receipt:
        """One skill's files as one snapshot (:meth:`ledger.write.apply.Writer.write_skill`)."""
        return self._writer.write_skill(*args, **options)

    def import_collection(self, coll: Collection, **options: Any) -> dict[str, Any]:
        """A collection recorded as one snapshot (:meth:`ledger.write.importer.Importer.import_collection`)."""
        return self._importer.import_collection(coll, **options)

    def fast_forward(self, theirs: bytes) -> list[str]:
        """Move the head to ``theirs``, a descendant (:meth:`ledger.write.joins.Joins.fast_forward`)."""
        return self._writer.joins.fast_forward(theirs)

    def merge(self, *args: Any, **options: Any) -> Receipt:
        """A merge snapshot of two lineages (:meth:`ledger.write.joins.Joins.merge`)."""
        return self._writer.joins.merge(*args, **options)

    def write_tree(self, files: gs.FileMap, name: str) -> tuple[bytes, Any]:
        """A skill's blobs and tree written to the store, its id first (:meth:`ledger.write.trees.SkillTrees.write`)."""
        return self._writer.trees.write(files, name)

    def blobs(self, writes: Mapping[str, Any]) -> gs.FileMap:
        """The blobs of ``writes`` (path → bytes), held for the write that records them."""
        return self._writer.trees.blobs(writes, {}, self._writer.snapshots.held)

    # ------------------------------------------------------------------ checks a write makes under the lock

    def require_unchanged(self, names: list[str], refused: str, retry: str) -> None:
        """Refuse if any of ``names`` has working-tree changes not in a snapshot."""
        self._writer.require_unchanged(names, refused, retry)

    # ------------------------------------------------------------------ the trust set (the keyring's writes)

    def trust(self, address: str, role: str, *, note: str = "") -> Receipt:
        return self._keyring.trust(address, role, note=note)

    def revoke(self, address: str, *, note: str = "") -> Receipt:
        return self._keyring.revoke(address, note=note)

    def rotate(self, role: str, *, note: str = "", encrypt: bool = False) -> Receipt:
        return self._keyring.rotate(role, note=note, encrypt=encrypt)

    def set_policy(self, policy: str, *, note: str = "") -> Receipt:
        return self._keyring.set_policy(policy, note=note)

    def adopt(self, *, note: str = "") -> Receipt:
        return self._keyring.adopt(note=note)
