"""The brain's public mutations, each one snapshot: create, upsert, edit, patch, rewrite,
write-file, remove-file, delete, revert, and the snapshot of hand edits.

A brain *has* a :class:`Mutations` (``brain._mutations``); :class:`ledger.brain.Brain`'s
methods of the same names delegate to it.  Every mutation runs entirely under the writer
lock: it reads its base there (``writer.base``, so a branch moved under it is refused)
and ends in :meth:`ledger.write.apply.Writer.apply`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ledger.brain.categories import Categories, check_category
from ledger.brain.reads import Reads
from ledger.bundle import textpatch
from ledger.bundle.merkle import (
    DirNode,
    read_tree,
)
from ledger.bundle.skill import (
    SKILL_MD,
    SkillDoc,
    belongs_to,
    check_name,
    check_support_path,
    parse_skill_md,
    slugify,
)
from ledger.errors import (
    LedgerError,
    PatchError,
    SkillError,
    SkillExistsError,
    SkillNotFoundError,
    TreeError,
    UsageError,
)
from ledger.store import gitstore as gs
from ledger.store.skilltree import skills_of
from ledger.write import writepath as wp
from ledger.write.apply import Writer, check_support_size
from ledger.write.head import KEEP, Head
from ledger.write.records import NoChangeError, Receipt

__all__ = ["Mutations"]


def _writer(method: Callable[..., Receipt]) -> Callable[..., Receipt]:
    """Run a mutation entirely under the writer lock, so its read-modify-write cannot interleave."""

    @functools.wraps(method)
    def wrapped(self: Mutations, *args: Any, **kwargs: Any) -> Receipt:
        writer = self.writer
        with writer.lock.locked():
            if writer.base is not None:  # nested (upsert → edit): the outer call's base stands
                return method(self, *args, **kwargs)
            writer.base = self.store.head()
            try:
                return method(self, *args, **kwargs)
            finally:
                writer.base = None

    return wrapped


class _CommittedFiles(Mapping[str, bytes]):
    """A skill's committed files by path, each read from the store when first asked for."""

    def __init__(self, files: gs.FileMap, read: Callable[[bytes], bytes]) -> None:
        self._files, self._read, self._got = files, read, {}  # type: dict[str, bytes]

    def __getitem__(self, rel: str) -> bytes:
        if rel not in self._got:
            self._got[rel] = self._read(self._files[rel][1])
        return self._got[rel]

    def __contains__(self, rel: object) -> bool:
        return rel in self._files

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


class Mutations:
    """The slug-keyed mutations over a brain's writer, reads and categories."""

    def __init__(self, writer: Writer, reads: Reads, categories: Categories) -> None:
        self.writer, self.reads, self.categories = writer, reads, categories
        self.snapshots, self.store, self.versions = writer.snapshots, writer.store, writer.versions
        self.limits, self.skills_dir = writer.limits, writer.skills_dir
        self.root, self.control = writer.root, writer.control

    @_writer
    def revert(self, name: str, version: int, *, note: str = "") -> Receipt:
        """Restore ``name`` (all its files) as it was at ``version``, as a new upsert; history is never rewritten."""
        name = self.reads.resolve(name)
        commit = self.reads.version_commit(name, version)
        tree = skills_of(self.store, self.store.commit_info(commit)[0])[1]
        old_files = self.snapshots.files(tree[name])
        old_text = self.snapshots.text(old_files[SKILL_MD][1], name)
        old_doc = self.versions.doc(self.snapshots.head(), old_text, limit=self.limits["skill_md"])
        writes: dict[str, tuple[bytes, bool] | None] = {
            rel: (self.store.read(sha, b"blob"), mode == gs.MODE_EXEC) for rel, (mode, sha) in old_files.items()
        }
        note = note or f"revert {name} to v{version}"
        if name in self.snapshots.head().skills:
            files, current = self.snapshots.committed(name)
            for rel in files:
                writes.setdefault(rel, None)
            writes.pop(SKILL_MD)
            return self.writer.bump("revert", name, files, current, old_doc, writes, note=note)
        version = self.writer.first_version(name)
        writes[SKILL_MD] = (old_doc.with_counter(version).encode(), False)
        return self.writer.write_skill("revert", name, writes, note=note, version=version)

    @_writer
    def create(
        self, name: str, description: str, body: str = "", *, note: str = "", category: str | None = None
    ) -> Receipt:
        """Create a new skill at version 1, in ``category`` if given; refuses a name that exists."""
        check_name(name)
        category = check_category(category) if category else None
        head = self.snapshots.head()
        if name in head.skills or self.writer.on_disk(name):
            raise SkillExistsError(
                f"skill {name!r} already exists",
                hint="use 'ledger skill edit' or 'patch' to improve it",
            )
        if not description.strip():
            raise SkillError("a new skill needs a description", hint="pass --description TEXT")
        version = self.writer.first_version(name)
        counted = self.versions.record(head) is None
        text = SkillDoc(name=name, description=description, version=version, body=body, counted=counted).render()
        parse_skill_md(text, limit=self.limits["skill_md"])
        self.writer.check_authored(name, None, text)
        return self.writer.write_skill(
            "create",
            name,
            {SKILL_MD: (text.encode(), False)},
            note=note,
            version=version,
            categories=self._placed(name, category),
        )

    @_writer
    def upsert(self, text: str, *, name: str | None = None, note: str = "", category: str | None = None) -> Receipt:
        """Slug-keyed write of a whole ``SKILL.md``: create it, or bump the existing skill in place.

        The key is ``slugify(name)``, or of the name the frontmatter declares.  The text
        is parsed strictly first, so a YAML error is reported as itself, and a file
        declaring another skill's name is refused, never renamed.
        """
        doc = self.versions.doc(self.snapshots.head(), text, limit=self.limits["skill_md"])
        declared = name if name is not None else (doc.name or None)
        if declared is None:
            raise SkillError("the frontmatter declares no name", hint="add 'name: …' to it, or pass --name")
        slug = slugify(declared)
        if not belongs_to(doc, slug):
            raise SkillError(
                f"the file declares name {doc.name!r}, which is not skill {slug!r}",
                hint=f"drop --name to write skill {doc.name!r}, or fix the frontmatter's name",
            )
        if slug in self.snapshots.head().skills:
            return self.edit(slug, text, note=note)
        if name is None and doc.name:  # a folder whose SKILL.md declares this name (vllm/: serving-llms-vllm)
            owners = sorted(k for k, v in self.reads.declared_names(self.snapshots.head()).items() if v == doc.name)
            if len(owners) > 1:
                raise SkillError(
                    f"skills {', '.join(owners)} all declare name {doc.name!r}",
                    hint="edit one of them by its folder: ledger skill edit FOLDER --file …",
                )
            if owners:
                return self.edit(owners[0], text, note=note)
        version = max(doc.version, self.writer.first_version(slug))  # a whole-number version the file brings is kept
        self.writer.check_authored(slug, None, doc.with_counter(version))
        return self.writer.write_skill(
            "create",
            slug,
            {SKILL_MD: (doc.with_counter(version).encode(), False)},
            note=note,
            version=version,
            categories=self._placed(slug, check_category(category) if category else None),
        )

    @_writer
    def edit(self, name: str, text: str, *, note: str = "") -> Receipt:
        """Rewrite ``SKILL.md`` in full; the ledger sets the next version."""
        name = self.reads.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        new = self.versions.doc(self.snapshots.head(), text, limit=self.limits["skill_md"])  # strict: nothing filled in
        files, old = self.snapshots.committed(name)
        if not belongs_to(new, name) and new.name != old.name:  # a declared name kept as it was is the skill's
            raise SkillError(
                f"the new SKILL.md declares name {new.name!r}, which is not skill {name!r}",
                hint=f"use 'ledger skill upsert' to write skill {new.name!r}",
            )
        return self.writer.bump("edit", name, files, old, new, {}, note=note)

    @_writer
    def patch(
        self, name: str, old: str, new: str, *, file: str | None = None, replace_all: bool = False, note: str = ""
    ) -> Receipt:
        """Replace ``old`` with ``new`` in SKILL.md (or a supporting file): exactly one match, or every
        match with ``replace_all``. The file is read under the writer lock, in the write's critical section."""
        name = self.reads.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        target = SKILL_MD if file is None else "/".join(check_support_path(file))
        return self.rewrite(
            name,
            lambda current: {target: self._patched(name, target, current, old, new, replace_all)},
            operation="patch",
            note=note,
        )

    def _placed(self, name: str, category: str | None) -> bytes | object | None:
        """The categories tree for a new skill put in ``category``; ``KEEP`` (the head's) for none."""
        return self.categories.tree_with(self.snapshots.head(), {name: category}) if category is not None else KEEP

    def _patched(self, name: str, target: str, current: Mapping[str, bytes], old: str, new: str, every: bool) -> bytes:
        if target not in current:
            raise SkillNotFoundError(f"skill {name!r} has no file {target!r}")
        try:
            text = current[target].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillError(f"{name}/{target}: file is not valid UTF-8") from exc
        return textpatch.replace(text, old, new, where=f"{name}/{target}", replace_all=every).encode("utf-8")

    @_writer
    def rewrite(
        self,
        name: str,
        change: Callable[[Mapping[str, bytes]], Mapping[str, bytes | None]],
        *,
        operation: str = "edit",
        note: str = "",
    ) -> Receipt:
        """The read-modify-write primitive: ``change`` gets the skill's committed files, read under the writer
        lock, and returns the files to write (``None`` removes one). Nothing can land between the read and the
        write, so no acknowledged write is lost to a stale read. ``change`` may raise to refuse; nothing is
        written then. SKILL.md's version counter is the ledger's: whatever ``change`` puts there is replaced."""
        name = self.reads.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        if operation not in ("edit", "patch", "write-file", "remove-file"):
            raise UsageError(f"rewrite records an edit, patch, write-file or remove-file, not {operation!r}")
        files, doc = self.snapshots.committed(name)
        writes = dict(change(_CommittedFiles(files, self.snapshots.read_blob)))
        new_doc = doc
        if SKILL_MD in writes:
            data = writes.pop(SKILL_MD)
            if data is None:
                raise SkillError(f"{SKILL_MD} cannot be removed", hint="delete the skill instead")
            try:
                new_doc = self.versions.doc(self.snapshots.head(), data.decode("utf-8"), limit=self.limits["skill_md"])
            except UnicodeDecodeError as exc:
                raise SkillError(f"{name}/{SKILL_MD}: the new text is not valid UTF-8") from exc
            except SkillError as exc:
                raise PatchError(f"the new SKILL.md is invalid: {exc.message}", hint=exc.hint) from exc
            if not belongs_to(new_doc, name) and new_doc.name != doc.name:
                raise PatchError(
                    f"the new SKILL.md declares name {new_doc.name!r}, which is not skill {name!r}",
                    hint=f"use 'ledger skill upsert' to write skill {new_doc.name!r}",
                )
        specs: dict[str, tuple[bytes, bool] | None] = {}
        for rel, data in writes.items():
            target = "/".join(check_support_path(rel))
            if data is None:
                if target not in files:
                    raise SkillNotFoundError(f"skill {name!r} has no file {rel!r}")
                specs[target] = None
                continue
            check_support_size(target, data, self.limits["file"])
            for existing in files:
                if existing.startswith(target + "/") or target.startswith(existing + "/"):
                    raise SkillError(f"{rel!r} conflicts with existing path {existing!r}")
            specs[target] = (data, files[target][0] == gs.MODE_EXEC if target in files else False)
        return self.writer.bump(operation, name, files, doc, new_doc, specs, note=note)

    @_writer
    def write_file(self, name: str, rel: str, data: bytes, *, executable: bool = False, note: str = "") -> Receipt:
        """Add or replace a supporting file at any portable path in the skill (the agent tools keep to
        references/ templates/ scripts/ assets/, as Hermes does)."""
        name = self.reads.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        target = "/".join(check_support_path(rel))
        check_support_size(target, data, self.limits["file"])
        files, doc = self.snapshots.committed(name)
        for existing in files:
            if existing.startswith(target + "/") or target.startswith(existing + "/"):
                raise SkillError(f"{rel!r} conflicts with existing path {existing!r}")
        return self.writer.bump("write-file", name, files, doc, doc, {target: (data, executable)}, note=note)

    @_writer
    def remove_file(self, name: str, rel: str, *, note: str = "") -> Receipt:
        name = self.reads.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        target = "/".join(check_support_path(rel))
        files, doc = self.snapshots.committed(name)
        if target not in files:
            raise SkillNotFoundError(f"skill {name!r} has no file {rel!r}")
        return self.writer.bump("remove-file", name, files, doc, doc, {target: None}, note=note)

    @_writer
    def delete(self, name: str, *, note: str = "") -> Receipt:
        name = self.reads.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        _, doc = self.snapshots.committed(name)
        self.writer.require_clean(name)
        cats = self.categories.tree_with(self.snapshots.head(), {name: None})  # a deleted skill leaves its category
        changes = [gs.Change("delete", name, doc.version)]
        return self.writer.apply("delete", {name: None}, changes, note, categories=cats)

    @_writer
    def snapshot(self, note: str = "", progress: Callable[[int, int], None] | None = None) -> Receipt:
        """Record hand edits in the working tree as one snapshot, bumping each changed skill."""
        with self.writer.lock.locked():
            head = self.snapshots.head()
            try:
                disk = read_tree(self.skills_dir, progress) if self.skills_dir.exists() else DirNode({})
            except TreeError:
                raise self.reads.every_problem() from None
            if disk.digest == head.bundle.root:
                raise NoChangeError("nothing to snapshot: the working tree equals the head snapshot")
            with wp.WorkTree(self.root, self.control) as tree, self.store.bulk():
                try:
                    return self._snapshot_changes(tree, head, disk, note)
                finally:
                    self.snapshots.held.clear()

    def _snapshot_changes(self, tree: wp.WorkTree, head: Head, disk: DirNode, note: str) -> Receipt:
        updates: dict[str, gs.FileMap | None] = {}
        changes: list[gs.Change] = []
        seen: dict[str, gs.FileMap] = {}
        problems: list[str] = []
        for name in sorted(set(disk.names) | set(head.skills)):
            node = disk.entries.get(name)
            if node is not None and head.bundle.digests.get(name) == node.digest:
                continue
            if node is None:
                _, doc = self.snapshots.committed(name)
                updates[name] = None
                changes.append(gs.Change("delete", name, doc.version))
                continue
            try:
                raw = self.writer.read_disk_skill(tree, name, node)
                seen[name] = {r: (gs.MODE_EXEC if x else gs.MODE_FILE, gs.blob_id(d)) for r, (d, x) in raw.items()}
                doc = self.versions.doc(head, raw.pop(SKILL_MD)[0].decode("utf-8"), limit=self.limits["skill_md"])
                if name in head.skills:
                    action, version = "update", self.snapshots.committed(name)[1].version + 1
                else:
                    action, version = "create", max(doc.version, self.writer.first_version(name, head))
                raw[SKILL_MD] = (doc.with_counter(version).encode(), False)
            except LedgerError as exc:
                problems.append(f"skills/{name}: {exc.message}")
                continue
            updates[name] = self.writer.trees.blobs(raw, {}, self.snapshots.held)  # the working tree reads these
            changes.append(gs.Change(action, name, version))
        if problems:
            raise SkillError(
                f"{len(problems)} skill(s) cannot be recorded:" + "".join(f"\n  {p}" for p in problems),
                hint="fix each, then run 'ledger snapshot' again; nothing was recorded",
            )
        return self.writer.apply("snapshot", updates, changes, note, disk=seen)
