"""Store operations on a brain: slug-keyed skill upserts, each one a snapshot.

A brain is a directory::

    <brain>/skills/<name>/SKILL.md ...   the bundle (what is hashed and committed)
    <brain>/.git/                        the snapshot store (configured bare)
    <brain>/.ledger/                     control: config, lock, journal, cache

:class:`Brain` is a facade over named parts, each with its own state (ADR 22):

- ``brain.store``: the git snapshot store (:mod:`ledger.store.gitstore`);
- ``brain.snapshots``: the head and what it records, read once (:mod:`ledger.write.snapshots`);
- ``brain.lock``: the writer lock (:mod:`ledger.write.lock`);
- ``brain.writer``: the one write path, under the lock (:mod:`ledger.write.apply`), whose
  file I/O is :mod:`ledger.write.writepath`, the security boundary;
- ``brain.importer``: a collection recorded as one snapshot (:mod:`ledger.write.importer`);
- ``brain.reads``: views, status, proofs, history and diffs (:mod:`ledger.brain.reads`);
- ``brain.versions``, ``brain.sealer``, ``brain.categories``, ``brain.catalog``, ``brain.keyring``.

This module holds the brain's lifecycle and the public mutations; each reads its base
under the lock and ends in the writer.  Sharing, import from folders and the chain are
services in :mod:`ledger.exchange` that take a brain; the audit never sees one.

Over 400 lines: the public mutations (create … snapshot, ~300 lines) live here over the
parts; moving them into a part of their own is the next cut (ADR 22).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ledger.brain.catalog import Catalog
from ledger.brain.categories import Categories, check_category
from ledger.brain.keyring import Keyring
from ledger.brain.reads import Reads
from ledger.bundle import textpatch
from ledger.bundle.collection import Collection
from ledger.bundle.merkle import (
    EMPTY_ROOT,
    DirNode,
    InclusionProof,
    read_tree,
)
from ledger.bundle.skill import (
    MAX_SKILL_MD,
    MAX_SUPPORT_FILE,
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
    StoreError,
    TreeError,
    UsageError,
)
from ledger.signatures.identity import Passphrase
from ledger.signatures.trust import Trust
from ledger.store import gitstore as gs
from ledger.store import packing
from ledger.store import treehash as th
from ledger.store.diffs import Diff
from ledger.store.skilltree import skills_of
from ledger.write import writepath as wp
from ledger.write.apply import JOURNAL, Writer, check_support_size, write_json
from ledger.write.head import KEEP, Head
from ledger.write.importer import Importer
from ledger.write.lock import WriterLock
from ledger.write.records import NoChangeError, Receipt, RecoveryError, SkillInfo, Status
from ledger.write.sealing import Sealer, founding_keys
from ledger.write.snapshots import Snapshots
from ledger.write.versioning import FRONTMATTER, Versions, check_mode

__all__ = ["Brain", "NoChangeError", "Receipt", "RecoveryError", "SkillInfo", "Status", "find_brain"]

CONTROL = ".ledger"
CONFIG = "config.json"
_CONFIG_FORMAT = 1

FileMap = dict[str, tuple[int, bytes]]  # skill-relative path → (git mode, blob id)


def _writer(method: Callable[..., Receipt]) -> Callable[..., Receipt]:
    """Run a mutation entirely under the writer lock, so its read-modify-write cannot interleave."""

    @functools.wraps(method)
    def wrapped(self: Brain, *args: Any, **kwargs: Any) -> Receipt:
        with self.locked():
            writer = self.writer
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

    def __init__(self, files: FileMap, read: Callable[[bytes], bytes]) -> None:
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


def _limits(given: dict[str, Any]) -> dict[str, int]:
    """Size limits from ``.ledger/config.json`` ``{"limits": {"skill_md": chars, "file": bytes}}``."""
    limits = {"skill_md": MAX_SKILL_MD, "file": MAX_SUPPORT_FILE}
    for key, value in given.items():
        if key not in limits or not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise StoreError(f"config limits.{key} = {value!r} is not a known positive limit", hint="skill_md, file")
        limits[key] = value
    return limits


def find_brain(start: str | os.PathLike[str] | None = None, *, search_up: bool = False) -> Path:
    """Locate a brain: ``start`` itself, or (``search_up``) its nearest ancestor, like git."""
    here = Path(start if start is not None else os.getcwd()).absolute()
    for cand in [here, *here.parents] if search_up else [here]:
        if (cand / CONTROL / CONFIG).is_file():
            return cand
    raise StoreError(
        f"{here} is not a brain (no {CONTROL}/{CONFIG})",
        hint="run 'ledger init DIR', or pass --brain / set LEDGER_BRAIN",
    )


class Brain:
    """An open brain.  Use :meth:`init` or :meth:`open`; close it (or use ``with``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.skills_dir = root / "skills"
        self.control = root / CONTROL
        if self.skills_dir.is_symlink():
            raise StoreError(f"{self.skills_dir} is a symbolic link; the brain refuses to follow it")
        config = json.loads((self.control / CONFIG).read_text())
        self.limits = _limits(config.get("limits") or {})
        gc = config.get("gc") or {}
        self.store = gs.GitStore(root)
        self.cache = th.DigestCache(self.control / "cache" / "digests-v2.bin")
        self.versions = Versions(self.store)  # where skill versions live: SKILL.md or the store (ADR 20)
        self.sealer = Sealer(enabled=config.get("signing", True) is not False)  # signs each snapshot
        self.snapshots = Snapshots(self.store, self.control, self.cache, self.versions, self.limits)
        self.lock = WriterLock(self.control, self.cache, settle=lambda recover: self.writer.settle(recover))
        every, size = int(gc.get("every", packing.DEFAULT_EVERY)), int(gc.get("bytes", packing.DEFAULT_BYTES))
        self.writer = Writer(root, self.control, self.store, self.snapshots, self.lock, sealer=self.sealer,
                             versions=self.versions, limits=self.limits, gc=(every, size))  # fmt: skip
        self.importer = Importer(self.writer)
        self.reads = Reads(root, self.control, self.snapshots, self.versions)
        self.categories = Categories(self.writer, self.reads)  # Hermes categories: members, move, create into one
        self.catalog = Catalog(self.snapshots, self.versions, self.categories)  # the head's listing, for agents
        self.keyring = Keyring(self.writer, lambda: self.update_config(signing=True))  # trust, revoke, rotate, adopt
        if (self.control / JOURNAL).exists() or self.writer.stale_ref_locks():
            try:
                with self.locked():
                    pass  # locked() rolls the journal forward
            except StoreError as exc:
                # Reads still work (on the last snapshot); every write refuses with this error.
                self.writer.pending_recovery = exc

    # ------------------------------------------------------------------ settings the writer keeps

    @property
    def attribution(self) -> dict[str, str]:
        """Recorded in every snapshot's trailers (see :meth:`acting`)."""
        return self.writer.attribution

    @property
    def allow_invalid(self) -> bool:
        """Record what a command authors even if lint calls it invalid (``--allow-invalid``)."""
        return self.writer.allow_invalid

    @allow_invalid.setter
    def allow_invalid(self, value: bool) -> None:
        self.writer.allow_invalid = value

    @property
    def pending_recovery(self) -> RecoveryError | StoreError | None:
        """A journal the last open could not roll forward: reads work, writes refuse with it."""
        return self.writer.pending_recovery

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def init(
        cls, path: str | os.PathLike[str], *, sign: bool = True, passphrase: Passphrase | None = None,
        encrypt: bool = False, versions: str = FRONTMATTER,
    ) -> Brain:
        """A new brain whose first snapshot trusts this machine's keys (made if missing) and is signed
        by its user key; ``sign=False`` makes an unsigned brain (``ledger sign --adopt`` signs it later).
        ``versions="store"`` keeps skill versions out of SKILL.md, so every file stays as written."""
        check_mode(versions)
        root = Path(path).absolute()
        if (root / CONTROL / CONFIG).exists():
            raise StoreError(f"{root} is already a brain")
        if (root / ".git").exists():
            raise StoreError(
                f"{root} already has a .git directory",
                hint="choose an empty or new directory for the brain",
            )
        if (root / "skills").exists() and any((root / "skills").iterdir()):
            raise StoreError(
                f"{root}/skills already has content",
                hint="init an empty directory, then import skills and run 'ledger snapshot'",
            )
        founding = founding_keys(passphrase, encrypt=encrypt) if sign else []
        cls.create_empty(root, signing=sign)
        brain = cls(root)
        brain.sealer.passphrase = passphrase
        with brain.locked():
            trust = Trust().apply(founding) if founding else Trust()
            tree = brain.store.root_tree(None, trust=brain.store.write_trust(trust),
                                         versions=brain.versions.genesis(versions))  # fmt: skip
            msg = gs.format_message("init", EMPTY_ROOT, None, [], nonce=os.urandom(16).hex(),
                                    attribution=brain.attribution, keys=[k.trailer() for k in founding])  # fmt: skip
            msg = brain.sealer.seal(msg, trust=Trust(), operation="init", key_changes=founding, root=EMPTY_ROOT,
                                    parent_root=None, parent=None, tree=tree, actor="user").message  # fmt: skip
            commit = brain.store.write_commit(tree, [], msg)
            brain.store.move_head(commit, None)
        return brain

    @staticmethod
    def create_empty(root: Path, *, signing: bool = True) -> None:
        """The layout of a brain with no snapshot yet: ``init`` adds the first, ``clone`` fetches them."""
        (root / "skills").mkdir(parents=True, exist_ok=True)
        (root / CONTROL).mkdir(exist_ok=True)
        gs.GitStore.init(root).close()
        (root / CONTROL / ".gitignore").write_text("*\n")
        write_json(root / CONTROL / CONFIG, {"format": _CONFIG_FORMAT, **({} if signing else {"signing": False})})

    def checkout_all(self) -> None:
        """Write every skill of the head into an empty working tree (a fresh clone)."""
        with self.locked(), wp.WorkTree(self.root, self.control) as tree:
            if self.reads.skill_names(tree):
                raise StoreError(f"{self.skills_dir} is not empty", hint="clone into a new directory")
            for name, sha in self.head().skills.items():
                tree.materialize(name, self.snapshots.files(sha), self.snapshots.read_blob)

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, search_up: bool = False) -> Brain:
        return cls(find_brain(path, search_up=search_up))

    def close(self) -> None:
        with contextlib.suppress(OSError, LedgerError):
            self.snapshots.save_index()
        self.cache.flush()
        self.store.close()

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> dict[str, Any]:
        return json.loads((self.control / CONFIG).read_text())

    def update_config(self, **values: Any) -> None:
        with self.locked():
            cfg = self.config
            cfg.update(values)
            write_json(self.control / CONFIG, cfg)

    @contextlib.contextmanager
    def acting(self, actor: str = "user", **evidence: object) -> Iterator[None]:
        """Attribute the snapshots written inside the block: ``actor`` (agent, curator or user) and evidence
        (``task``, ``session``, ``tool_calls``, ``reason``), recorded as trailers that ``verify`` checks."""
        with self.writer.acting(actor, **evidence):
            yield

    def locked(self, *, recover: bool = True) -> contextlib.AbstractContextManager[None]:
        """Hold the brain's writer lock; waits up to ``LEDGER_LOCK_TIMEOUT`` seconds (default 30).

        Taking it first settles what a killed writer left: its stale git ref locks and temp
        files, and its journal, which is rolled forward (``recover=False`` skips only that).
        """
        return self.lock.locked(recover=recover)

    def head(self) -> Head:
        """The head snapshot in memory (:class:`ledger.write.head.Head`)."""
        return self.snapshots.head()

    def recover(self, *, move_aside: bool = False) -> dict[str, Any]:
        """Finish (or report) an interrupted write: the one command that settles a pending journal."""
        return self.writer.recover(move_aside=move_aside)

    def import_collection(self, coll: Collection, **options: Any) -> dict[str, Any]:
        """Record ``coll`` (read by :mod:`ledger.exchange.layouts`) as one snapshot, with a report for
        every skill; see :meth:`ledger.write.importer.Importer.import_collection` for the options."""
        return self.importer.import_collection(coll, **options)

    # ------------------------------------------------------------------ reads (brain.reads)

    def list(self) -> list[SkillInfo]:
        return self.reads.list()

    def resolve(self, ref: str) -> str:
        return self.reads.resolve(ref)

    def index(self) -> str:
        return self.reads.index()

    def view(self, name: str, file: str | None = None) -> dict[str, Any]:
        return self.reads.view(name, file)

    def history(self, name: str) -> list[dict[str, Any]]:
        return self.reads.history(name)

    def lint(self, names: list[str] | None = None) -> list[Any]:
        return self.reads.lint(names)

    def status(self) -> Status:
        return self.reads.status()

    def prove(self, rel: str, at: str | None = None) -> InclusionProof:
        return self.reads.prove(rel, at)

    def diff(self, old: str | None = None, new: str | None = None, name: str | None = None) -> Diff:
        return self.reads.diff(old, new, name)

    def show(self, name: str, version: int) -> str:
        return self.reads.show(name, version)

    # ------------------------------------------------------------------ mutations

    @_writer
    def revert(self, name: str, version: int, *, note: str = "") -> Receipt:
        """Restore ``name`` (all its files) as it was at ``version``, as a new upsert; history is never rewritten."""
        name = self.resolve(name)
        commit = self.reads.version_commit(name, version)
        tree = skills_of(self.store, self.store.commit_info(commit)[0])[1]
        old_files = self.snapshots.files(tree[name])
        old_text = self.snapshots.text(old_files[SKILL_MD][1], name)
        old_doc = self.versions.doc(self.head(), old_text, limit=self.limits["skill_md"])
        writes: dict[str, tuple[bytes, bool] | None] = {
            rel: (self.store.read(sha, b"blob"), mode == gs.MODE_EXEC) for rel, (mode, sha) in old_files.items()
        }
        note = note or f"revert {name} to v{version}"
        if name in self.head().skills:
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
        head = self.head()
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
        return self.writer.write_skill("create", name, {SKILL_MD: (text.encode(), False)}, note=note, version=version,
                                       categories=self._placed(name, category))  # fmt: skip

    @_writer
    def upsert(self, text: str, *, name: str | None = None, note: str = "", category: str | None = None) -> Receipt:
        """Slug-keyed write of a whole ``SKILL.md``: create it, or bump the existing skill in place.

        The key is ``slugify(name)``, or of the name the frontmatter declares.  The text
        is parsed strictly first, so a YAML error is reported as itself, and a file
        declaring another skill's name is refused, never renamed.
        """
        doc = self.versions.doc(self.head(), text, limit=self.limits["skill_md"])
        declared = name if name is not None else (doc.name or None)
        if declared is None:
            raise SkillError("the frontmatter declares no name", hint="add 'name: …' to it, or pass --name")
        slug = slugify(declared)
        if not belongs_to(doc, slug):
            raise SkillError(
                f"the file declares name {doc.name!r}, which is not skill {slug!r}",
                hint=f"drop --name to write skill {doc.name!r}, or fix the frontmatter's name",
            )
        if slug in self.head().skills:
            return self.edit(slug, text, note=note)
        if name is None and doc.name:  # a folder whose SKILL.md declares this name (vllm/: serving-llms-vllm)
            owners = sorted(k for k, v in self.reads.declared_names(self.head()).items() if v == doc.name)
            if len(owners) > 1:
                raise SkillError(f"skills {', '.join(owners)} all declare name {doc.name!r}",
                                 hint="edit one of them by its folder: ledger skill edit FOLDER --file …")  # fmt: skip
            if owners:
                return self.edit(owners[0], text, note=note)
        version = max(doc.version, self.writer.first_version(slug))  # a whole-number version the file brings is kept
        self.writer.check_authored(slug, None, doc.with_counter(version))
        return self.writer.write_skill(
            "create", slug, {SKILL_MD: (doc.with_counter(version).encode(), False)}, note=note, version=version,
            categories=self._placed(slug, check_category(category) if category else None),
        )

    @_writer
    def edit(self, name: str, text: str, *, note: str = "") -> Receipt:
        """Rewrite ``SKILL.md`` in full; the ledger sets the next version."""
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        new = self.versions.doc(self.head(), text, limit=self.limits["skill_md"])  # strict: nothing is filled in
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
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        target = SKILL_MD if file is None else "/".join(check_support_path(file))
        return self.rewrite(
            name,
            lambda current: {target: self._patched(name, target, current, old, new, replace_all)},
            operation="patch",
            note=note,
        )

    def _placed(self, name: str, category: str | None) -> bytes | object | None:
        """The categories tree for a new skill put in ``category``; ``KEEP`` (the head's) for none."""
        return self.categories.tree_with(self.head(), {name: category}) if category is not None else KEEP

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
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
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
                new_doc = self.versions.doc(self.head(), data.decode("utf-8"), limit=self.limits["skill_md"])
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
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        target = "/".join(check_support_path(rel))
        check_support_size(target, data, self.limits["file"])
        files, doc = self.snapshots.committed(name)
        for existing in files:
            if existing.startswith(target + "/") or target.startswith(existing + "/"):
                raise SkillError(f"{rel!r} conflicts with existing path {existing!r}")
        return self.writer.bump("write-file", name, files, doc, doc, {target: (data, executable)}, note=note)

    @_writer
    def remove_file(self, name: str, rel: str, *, note: str = "") -> Receipt:
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        target = "/".join(check_support_path(rel))
        files, doc = self.snapshots.committed(name)
        if target not in files:
            raise SkillNotFoundError(f"skill {name!r} has no file {rel!r}")
        return self.writer.bump("remove-file", name, files, doc, doc, {target: None}, note=note)

    @_writer
    def delete(self, name: str, *, note: str = "") -> Receipt:
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.bundle.naming)
        _, doc = self.snapshots.committed(name)
        self.writer.require_clean(name)
        cats = self.categories.tree_with(self.head(), {name: None})  # a deleted skill leaves its category
        changes = [gs.Change("delete", name, doc.version)]
        return self.writer.apply("delete", {name: None}, changes, note, categories=cats)

    @_writer
    def snapshot(self, note: str = "", progress: Callable[[int, int], None] | None = None) -> Receipt:
        """Record hand edits in the working tree as one snapshot, bumping each changed skill."""
        with self.locked():
            head = self.head()
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
        updates: dict[str, FileMap | None] = {}
        changes: list[gs.Change] = []
        seen: dict[str, FileMap] = {}
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
            updates[name] = self.writer.blobs(raw, {}, self.snapshots.held)  # the working tree is written from these
            changes.append(gs.Change(action, name, version))
        if problems:
            raise SkillError(
                f"{len(problems)} skill(s) cannot be recorded:" + "".join(f"\n  {p}" for p in problems),
                hint="fix each, then run 'ledger snapshot' again; nothing was recorded",
            )
        return self.writer.apply("snapshot", updates, changes, note, disk=seen)

    # ------------------------------------------------------------------ internals
