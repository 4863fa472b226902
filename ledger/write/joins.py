"""The snapshots whose parents are not just the head: a merge's two, and a new brain's none.

Every commit on ``main`` is sealed, written, published and moved here, in the write layer,
beside :class:`~ledger.write.apply.Writer`, whose lock the caller holds: one place that
checks the base, signs (refusing under the policy ``signed``, ADR 26) and moves the head by
the journaled roll-forward.  A merge is *planned* by :mod:`ledger.remotes.lineagemerge` (which
skills, which versions, which trees); only its commit is made here (docs/lineage.md §9).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol

from ledger.bundle.merkle import EMPTY_ROOT
from ledger.errors import StaleError
from ledger.signatures.trust import KeyChange, Trust
from ledger.store import gitstore as gs
from ledger.store import skilltree
from ledger.write.journal import Journal
from ledger.write.sealing import Sealer
from ledger.write.snapshots import Snapshots

__all__ = ["Joins", "differing"]


def differing(store: gs.GitStore, a: bytes, b: bytes) -> list[str]:
    """The skills whose trees differ between snapshots ``a`` and ``b`` (commit ids)."""
    sa = skilltree.skills_of(store, store.commit_info(a)[0])[1]
    sb = skilltree.skills_of(store, store.commit_info(b)[0])[1]
    return sorted(n for n in set(sa) | set(sb) if sa.get(n) != sb.get(n))


class Writes(Protocol):
    """The parts of :class:`~ledger.write.apply.Writer` a join uses (it composes a :class:`Joins`)."""

    store: gs.GitStore
    snapshots: Snapshots
    sealer: Sealer
    journal: Journal
    attribution: dict[str, str]

    def require_unchanged(self, names: list[str], refused: str, retry: str) -> None: ...


class Joins:
    """A writer's commits with other parents than its head (``writer.joins``); under the writer lock."""

    def __init__(self, writer: Writes) -> None:
        self.writer = writer

    def merge(
        self,
        top: bytes,
        root: bytes,
        first: tuple[bytes, gs.Snapshot],
        second: tuple[bytes, bytes],
        changes: Sequence[gs.Change],
        note: str,
    ) -> tuple[bytes, list[str]]:
        """Write the merge snapshot ``top`` (a tree planned by the caller) with ``first`` (the remote's
        commit and snapshot) and ``second`` (this brain's head commit and root) as parents, and move the
        head to it; returns the commit and the skills the working tree changes in."""
        w = self.writer
        store = w.store
        head = w.snapshots.head().commit
        if head != second[0]:
            raise StaleError(
                "this brain's head moved while the merge was planned; nothing was merged", hint="sync again"
            )
        message = gs.format_message(
            "merge", root, first[1].root, changes, note, attribution=w.attribution, merged=(second[0].hex(), second[1])
        )
        trust = store.trust_at(first[1].tree)[1]
        sealed = w.sealer.seal(
            message,
            trust=trust,
            operation="merge",
            key_changes=(),
            root=root,
            parent_root=first[1].root,
            parent=first[0],
            tree=top,
            actor=w.attribution["actor"],
        )
        commit = store.write_commit(top, [first[0], second[0]], sealed.message, sealed.git_signer())
        store.publish()
        names = differing(store, head, commit)
        w.require_unchanged(names, "nothing was merged", "sync again")
        w.journal.fast_forward(commit, names)
        return commit, names

    def fast_forward(self, theirs: bytes) -> list[str]:
        """Move the head to ``theirs`` (a descendant whose objects this store holds); the skills it changes."""
        w = self.writer
        names = differing(w.store, w.snapshots.head().commit, theirs)
        w.require_unchanged(names, "nothing was taken", "sync again")
        w.journal.fast_forward(theirs, names)
        return names

    def found(self, tree: bytes, founding: Sequence[KeyChange]) -> bytes:
        """Snapshot 0 of a new brain: its tree (the trust set's record and the versions mode), signed by
        the user key it founds the trust set with (unsigned when ``founding`` is empty)."""
        w = self.writer
        msg = gs.format_message(
            "init",
            EMPTY_ROOT,
            None,
            [],
            nonce=os.urandom(16).hex(),
            attribution=w.attribution,
            keys=[k.trailer() for k in founding],
        )
        sealed = w.sealer.seal(
            msg,
            trust=Trust(),
            operation="init",
            key_changes=founding,
            root=EMPTY_ROOT,
            parent_root=None,
            parent=None,
            tree=tree,
            actor="user",
        )
        commit = w.store.write_commit(tree, [], sealed.message, sealed.git_signer())
        w.store.move_head(commit, None)
        return commit
