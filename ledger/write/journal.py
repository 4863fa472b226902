"""The journal of an interrupted write, and its roll-forward (ADR 2).

The writer builds every object first, then writes ``.ledger/journal.json`` (the new
commit, the head it expects, the skills it touches), then materialises the working tree
and moves the branch.  A writer killed after the journal leaves it behind; the next one
to take the lock rolls it forward, unless a file changed since, which it refuses to
overwrite (``ledger recover --move-aside`` keeps such files under ``.ledger/rescued/``).
The writer *has* a :class:`Journal` (``writer.journal``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from ledger._fs import atomic_write
from ledger.bundle.skill import check_name
from ledger.errors import LedgerError, StoreError
from ledger.protocol.refs import BRANCH, NOTES_REF
from ledger.store import gitstore as gs
from ledger.store import skilltree
from ledger.write import writepath as wp
from ledger.write.records import RecoveryError
from ledger.write.snapshots import Snapshots

__all__ = ["JOURNAL", "Journal", "write_json"]

JOURNAL = "journal.json"  # in .ledger/
OWN_REFS = (BRANCH, NOTES_REF)  # the refs only a writer holding the lock moves


class Journal:
    """Reads, rolls forward and clears what a killed writer left."""

    def __init__(self, root: Path, control: Path, store: gs.GitStore, snapshots: Snapshots) -> None:
        self.root, self.control, self.store, self.snapshots = root, control, store, snapshots

    def stale_ref_locks(self) -> bool:
        return any((self.store.git_dir / (ref + ".lock")).exists() for ref in OWN_REFS)

    def clear_leftovers(self) -> None:
        """Under the writer lock, a ref lock or temp file of ours can only be a killed writer's: clear it."""
        wp.clear_ref_locks(self.store.git_dir, OWN_REFS)
        with contextlib.suppress(FileNotFoundError), os.scandir(self.store.staging_dir) as it:
            for entry in it:  # only writers, who hold this lock, make these (loose objects, bulk packs)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
        if (self.control / "tmp").is_dir():
            with wp.WorkTree(self.root, self.control) as tree:
                tree.clear_tmp()

    def read(self) -> tuple[bytes, bytes, list[str], dict[str, gs.FileMap]] | None:
        path = self.control / JOURNAL
        try:
            journal = json.loads(path.read_text())
            disk = {
                check_name(n): {str(r): (int(m), bytes.fromhex(h)) for r, (m, h) in fm.items()}
                for n, fm in journal.get("disk", {}).items()
            }
            return (
                bytes.fromhex(journal["commit"]),
                bytes.fromhex(journal["expected"]),
                [check_name(n) for n in journal["skills"]],
                disk,
            )
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, LedgerError) as exc:
            raise StoreError(f"{path} is corrupt: {exc}", hint="inspect it; remove it to abandon the write") from exc

    def trees_at(self, commit: bytes) -> dict[str, bytes]:
        return skilltree.skills_of(self.store, self.store.commit_info(commit)[0])[1]

    def roll_forward(self, *, move_aside: bool = False) -> list[str]:
        """Roll an interrupted write forward from its journal (its objects are already stored).

        Each file of a journaled skill must be in its old or its new state; anything else
        is a hand edit made after the crash, and is never overwritten: the roll-forward
        refuses (:class:`RecoveryError`), or with ``move_aside`` keeps the skill's files
        under ``.ledger/rescued/`` first.  Returns the paths moved aside.
        """
        found = self.read()
        if found is None:
            return []
        commit, expected, names, disk = found
        path = self.control / JOURNAL
        if not self.store.has(commit):
            path.unlink()  # the write never reached the object store: old state stands
            return []
        current = self.store.head()
        if current not in (commit, expected):
            raise StoreError(f"{path}: the branch moved since the interrupted write", hint="inspect and remove it")
        old, new = self.trees_at(expected), self.trees_at(commit)
        moved: list[str] = []
        with wp.WorkTree(self.root, self.control) as tree:
            plans = {
                n: (
                    self.snapshots.files(old[n]) if n in old else None,
                    self.snapshots.files(new[n]) if n in new else None,
                )
                for n in names
            }
            problems = {n: tree.check(n, [*states, *([disk[n]] if n in disk else [])]) for n, states in plans.items()}
            if any(problems.values()):
                if not move_aside:
                    raise RecoveryError(
                        "an interrupted write cannot be finished without overwriting files changed since:",
                        [p for ps in problems.values() for p in ps],
                    )
                dest = self.control / "rescued" / time.strftime("%Y%m%dT%H%M%S") / commit.hex()[:12]
                for name, ps in problems.items():
                    if ps:
                        tree.move_aside(name, dest)
                        moved.append(str(dest / name))
            for name in names:
                tree.materialize(name, plans[name][1], self.snapshots.read_blob)
        if current != commit:
            self.store.move_head(commit, expected)
        path.unlink()
        self.snapshots.current = None
        return moved

    def fast_forward(self, new: bytes, names: list[str]) -> None:
        """Move ``main`` and the working tree to ``new`` (a descendant, its objects stored) by the
        journaled roll-forward every write uses; ``names`` are the skills that differ."""
        head = self.snapshots.head()
        write_json(self.control / JOURNAL, {"commit": new.hex(), "expected": head.commit.hex(), "skills": names})
        self.roll_forward()


def write_json(path: Path, doc: Any) -> None:
    """``doc`` as the ledger's control files hold JSON (indented, sorted keys), written whole and durable."""
    atomic_write(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())
