"""``ledger import``: a whole collection as one snapshot, with a report for every skill.

Each skill is imported (created), updated (one version bump), unchanged, or
refused with the reason and a hint; the rest go ahead unless ``all_or_nothing``.
Files are kept byte for byte; SKILL.md changes only in the ledger's version value,
and an integer version the file already carries is kept.  Importing the same
content again makes no snapshot.  Hermes category files and membership are kept
beside the bundle, in the snapshot's ``categories/`` tree (docs/layouts.md).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ledger.bundle.collection import Collection, Found
from ledger.bundle.lint import lint_skill
from ledger.bundle.skill import SKILL_MD, check_bundle_path, check_support_path
from ledger.errors import LedgerError, SkillError, StaleError
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.gitstore import blob_id
from ledger.write import writepath as wp
from ledger.write.apply import Writer
from ledger.write.records import Receipt

__all__ = ["CATEGORY_INDEX", "Importer"]

CATEGORY_INDEX = ".ledger-categories.json"  # in categories/: {"format": 1, "skills": {key: "cat/sub"}}


class Importer:
    """Records a whole collection as one snapshot through the writer: a brain *has* one (``brain._importer``)."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer

    def import_collection(
        self,
        coll: Collection,
        *,
        note: str = "",
        dry_run: bool = False,
        all_or_nothing: bool = False,
        progress: Callable[[int, int], None] | None = None,
        operation: str = "import",
        versions: str | None = None,
        deletions: Sequence[str] = (),
        expect: Mapping[str, bytes | None] | None = None,
        moves: Mapping[str, str | None] | None = None,
        category_removals: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Import ``coll`` as one snapshot; ``versions="store"`` first moves an empty brain's version
        counter out of SKILL.md (ledger.write.versioning), so every file is recorded byte for byte.
        ``deletions`` are skills deleted in the same snapshot (``ledger sync`` records a runtime's).
        ``expect`` (skill → its tree at the head the caller decided on, or None) is compared under
        the lock: if any moved, :class:`StaleError` is raised and nothing is written.  ``moves`` (skill →
        Hermes category) and ``category_removals`` (category files) change only ``categories/``."""
        bulk = self.writer.store.bulk() if not dry_run else contextlib.nullcontext()
        with self.writer.lock.locked(), bulk:
            head = self.writer.snapshots.head()
            moved = sorted(k for k, tree in (expect or {}).items() if head.skills.get(k) != tree)
            if moved:
                raise StaleError(
                    f"skill(s) {', '.join(moved)} changed since this recording read them",
                    hint="read the head again and merge; nothing was written",
                )
            switched = self.writer.versions.choose(head, versions) if versions else False
            report: dict[str, Any] | None = None
            try:
                report = self._import_locked(
                    coll,
                    note,
                    dry_run,
                    all_or_nothing,
                    progress,
                    operation,
                    switched,
                    deletions,
                    moves or {},
                    category_removals,
                )
                return report
            finally:
                self.writer.snapshots.held.clear()
                if switched and (report is None or report["snapshot"] is None):
                    head.versions = None  # nothing recorded: the head read from git again says where versions live

    def _import_locked(
        self,
        coll: Collection,
        note: str,
        dry_run: bool,
        all_or_nothing: bool,
        progress: Callable[[int, int], None] | None,
        operation: str,
        switched: bool = False,
        deletions: Sequence[str] = (),
        moves: Mapping[str, str | None] | None = None,
        category_removals: Sequence[str] = (),
    ) -> dict[str, Any]:
        head = self.writer.snapshots.head()
        with wp.WorkTree(self.writer.root, self.writer.control) as tree:
            on_disk = {name for name, _ in tree.listdir()}  # listed once: the write re-checks each
        rows: list[dict[str, Any]] = []
        updates: dict[str, gs.FileMap | None] = {}
        changes: list[gs.Change] = []
        seen: set[str] = set()
        for i, found in enumerate(coll.skills, 1):
            row: dict[str, Any] = {"skill": found.key, "source": found.source, "notes": found.notes}
            try:
                if found.refused:
                    raise SkillError(found.refused, hint=found.hint or "fix it in the source and import again")
                if found.key in seen:
                    raise SkillError(f"another source in this import is also skill {found.key!r}")
                seen.add(found.key)
                row.update(self._plan(head, found, updates, changes, on_disk))
            except LedgerError as exc:
                row.update(status="refused", reason=exc.message, hint=exc.hint)
            rows.append(row)
            if progress is not None:
                progress(i, len(coll.skills))
        refused = [r for r in rows if r["status"] == "refused"]
        if refused and all_or_nothing:
            raise SkillError(
                f"{len(refused)} skill(s) refused; with --all-or-nothing nothing was imported:"
                + "".join(f"\n  {r['skill']}: {r['reason']}" for r in refused[:20]),
                hint="fix them, or import without --all-or-nothing to take the rest",
            )
        gone = [key for key in deletions if key in head.skills and key not in seen]
        for key in gone:
            updates[key] = None
            changes.append(gs.Change("delete", key, self.writer.snapshots.committed(key)[1].version))
            rows.append({"skill": key, "source": "", "notes": [], "status": "deleted", "version": changes[-1].version})
        old_cats = self.writer.snapshots.categories_tree(head)
        accepted = {r["skill"] for r in rows if r["status"] != "refused"}
        membership = {k: c for k, c in (moves or {}).items() if k in head.skills and k not in gone}
        membership |= {f.key: f.category for f in coll.skills if f.key in accepted}  # a refused skill moves nowhere
        cats = self._merge_categories(old_cats, coll, membership, gone, category_removals)
        report: dict[str, Any] = {"layout": coll.layout, "dry_run": dry_run, "skills": rows, "snapshot": None}
        if dry_run or (not updates and cats == old_cats and not switched):
            return report
        receipt: Receipt = self.writer.apply(operation, updates, changes, note, categories=cats)
        report["snapshot"] = receipt.to_json()
        return report

    def _plan(
        self,
        head: Any,
        found: Found,
        updates: dict[str, gs.FileMap | None],
        changes: list[gs.Change],
        on_disk: set[str],
    ) -> dict:
        key, files = found.key, found.files
        limits = self.writer.limits
        for rel, (data, _) in files.items():
            if rel != SKILL_MD:
                check_support_path(rel)
                if len(data) > limits["file"]:
                    raise SkillError(
                        f"{rel} is {len(data)} bytes; this brain's limit is {limits['file']}",
                        hint="raise limits.file in .ledger/config.json",
                    )
            check_bundle_path(key, rel)
        if SKILL_MD not in files:
            raise SkillError(f"no {SKILL_MD}")
        try:
            text = files[SKILL_MD][0].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillError(f"{SKILL_MD} is not valid UTF-8 (byte {exc.start})") from exc
        doc = self.writer.versions.doc(head, text, limit=limits["skill_md"])
        verdict = lint_skill(found.folder, text, {r: len(d) for r, (d, _) in files.items()})
        out: dict[str, Any] = {
            "lint": {
                "valid": verdict.valid,
                "strict_valid": verdict.strict_valid,
                "errors": verdict.errors,
                "extra": verdict.extra,
            }
        }
        if doc.name and doc.name != key:
            found.notes.append(f"frontmatter name {doc.name!r} differs from the folder: stored as {key!r}, name kept")
        if key in head.skills:
            current_files, current = self.writer.snapshots.committed(key)
            same_md = doc.with_counter(current.version) == current.text
            others = {r: (gs.MODE_EXEC if x else gs.MODE_FILE, blob_id(d)) for r, (d, x) in files.items()}
            others.pop(SKILL_MD)
            if same_md and others == {r: v for r, v in current_files.items() if r != SKILL_MD}:
                return {**out, "status": "unchanged", "version": current.version}
            action, version = "update", current.version + 1
        else:
            if key in on_disk:
                raise SkillError(
                    f"skills/{key} exists in the working tree but not in a snapshot",
                    hint="record it with 'ledger snapshot', or move it away",
                )
            action, version = "create", max(doc.version, self.writer.first_version(key, head))
            if doc.version and version == doc.version:
                found.notes.append(f"kept the file's version {doc.version}")
            elif version > 1:
                found.notes.append(f"{key!r} was deleted at v{version - 1}; it starts again at v{version}")
        if doc.version == 0 and action == "create" and doc.counted:
            where = "metadata.ledger-version" if "version" in doc.metadata else "metadata.version"
            found.notes.append(f"added the ledger's version counter as {where}")
        writes = dict(files)
        writes[SKILL_MD] = (doc.with_counter(version).encode(), files[SKILL_MD][1])
        updates[key] = self.writer.trees.blobs(writes, {}, self.writer.snapshots.held)
        changes.append(gs.Change(action, key, version))
        return {**out, "status": "imported" if action == "create" else "updated", "version": version}

    def _merge_categories(
        self,
        old: bytes | None,
        coll: Collection,
        membership: dict[str, str | None],
        gone: Sequence[str] = (),
        removals: Sequence[str] = (),
    ) -> bytes | None:
        """The new ``categories/`` tree: the old one, plus this import's category files and memberships."""
        if old is None and (coll.layout != "hermes" or not (coll.categories or any(membership.values()))):
            return None  # nothing to say about categories: no categories/ tree is made out of nothing
        files = th.files_of(self.writer.store, old) if old else {}
        index: dict[str, str] = {}
        if CATEGORY_INDEX in files:
            index = json.loads(self.writer.store.read(files[CATEGORY_INDEX][1], b"blob"))["skills"]
        if coll.layout == "hermes":
            for key, category in membership.items():
                if category:
                    index[key] = category
                else:
                    index.pop(key, None)
            for rel, data in coll.categories.items():
                files[rel] = (gs.MODE_FILE, self.writer.store.write_blob(data))
            for rel in removals:
                files.pop(rel, None)
        for key in gone:
            index.pop(key, None)  # a deleted skill leaves its category
        doc = json.dumps({"format": 1, "skills": dict(sorted(index.items()))}, indent=2) + "\n"
        files[CATEGORY_INDEX] = (gs.MODE_FILE, self.writer.store.write_blob(doc.encode()))
        return self.writer.trees.write(files, "categories")[0]
