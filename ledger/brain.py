"""Store operations on a brain: slug-keyed skill upserts, each one a snapshot.

A brain is a directory::

    <brain>/skills/<name>/SKILL.md ...   the bundle (what is hashed and committed)
    <brain>/.git/                        the snapshot store (configured bare)
    <brain>/.ledger/                     control: config, lock, journal, cache

This module holds the brain's lifecycle, its writer lock, the head snapshot and
the public mutations.  Every mutation reads its base under the lock and goes
through one write path (:mod:`ledger.apply`), whose file I/O is
:mod:`ledger.writepath`, the security boundary; reads are :mod:`ledger.reads`.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ledger import gitstore as gs
from ledger import packing, textpatch
from ledger import treehash as th
from ledger import writepath as wp
from ledger.apply import JOURNAL, Head, SnapshotWriter, check_support_size, write_json
from ledger.catalog import Catalog
from ledger.categories import Categories, check_category
from ledger.errors import (
    LedgerError,
    LockedError,
    PatchError,
    SkillError,
    SkillExistsError,
    SkillNotFoundError,
    StoreError,
    TreeError,
    UsageError,
)
from ledger.identity import Passphrase
from ledger.importer import Importer
from ledger.keyring import Keyring
from ledger.merkle import (
    EMPTY_ROOT,
    DirNode,
    RootIndex,
    format_root,
    read_tree,
)
from ledger.reads import BrainReads
from ledger.records import NoChangeError, Receipt, RecoveryError, SkillInfo, Status
from ledger.sealing import Sealer, founding_keys
from ledger.sharing import Sharing
from ledger.skill import (
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
from ledger.skilltree import Fanout, skills_of
from ledger.trust import Trust
from ledger.versioning import FRONTMATTER, Versions, check_mode

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
            if self._base is not None:  # nested (upsert → edit): the outer call's base stands
                return method(self, *args, **kwargs)
            self._base = self.store.head()
            try:
                return method(self, *args, **kwargs)
            finally:
                self._base = None

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


class Brain(BrainReads, SnapshotWriter, Importer, Sharing):
    """An open brain.  Use :meth:`init` or :meth:`open`; close it (or use ``with``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.skills_dir = root / "skills"
        self.control = root / CONTROL
        if self.skills_dir.is_symlink():
            raise StoreError(f"{self.skills_dir} is a symbolic link; the brain refuses to follow it")
        self.store = gs.GitStore(root)
        self.cache = th.DigestCache(self.control / "cache" / "digests-v2.bin")
        self._head: Head | None = None
        self._lock_fd: int | None = None
        self._thread_lock = threading.RLock()
        self._base: bytes | None = None  # the head a running mutation read under the lock
        self._fresh: dict[bytes, bytes] = {}  # blob id → digest computed from bytes in this process
        self._held: dict[bytes, bytes] = {}  # blob id → bytes, while an import writes them out
        self._index_saved: bytes | None = None  # the skills/ tree the saved root index is for
        self._files_memo: dict[bytes, FileMap] = {}  # skill tree id → its files (see _skill_files)
        self._text_memo: dict[bytes, bytes] = {}  # SKILL.md blob id → bytes, the last few read
        self.attribution = gs.attribution("user")  # recorded in every snapshot's trailers (see acting())
        config = json.loads((self.control / CONFIG).read_text())
        self.allow_invalid = False  # record what a command authors even if lint calls it invalid (--allow-invalid)
        self.sealer = Sealer(enabled=config.get("signing", True) is not False)  # signs each snapshot
        self.versions = Versions(self.store)  # where skill versions live: SKILL.md or the store (ADR 20)
        self.keyring = Keyring(self)  # the trust set's changes: trust, revoke, rotate, adopt
        self.categories = Categories(self)  # Hermes categories: members, move, create into one
        self.catalog = Catalog(self)  # the head's listing and index, for agents (kept per head and skill tree)
        self.pending_recovery: RecoveryError | StoreError | None = None
        self.limits = _limits(config.get("limits") or {})
        gc = config.get("gc") or {}
        self.gc_every = int(gc.get("every", packing.DEFAULT_EVERY))
        self.gc_bytes = int(gc.get("bytes", packing.DEFAULT_BYTES))
        self._gc_mark = 0
        if (self.control / JOURNAL).exists() or self._stale_ref_locks():
            try:
                with self.locked():
                    pass  # locked() rolls the journal forward
            except StoreError as exc:
                # Reads still work (on the last snapshot); every write refuses with this error.
                self.pending_recovery = exc

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
            tree = brain.store.root_tree(None, trust=Sealer.record(brain.store, trust),
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
            if self._skill_names(tree):
                raise StoreError(f"{self.skills_dir} is not empty", hint="clone into a new directory")
            for name, sha in self.head().skills.items():
                tree.materialize(name, self._skill_files(sha), self._read_blob)

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, search_up: bool = False) -> Brain:
        return cls(find_brain(path, search_up=search_up))

    def close(self) -> None:
        with contextlib.suppress(OSError, LedgerError):
            self._save_index()
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
        previous = self.attribution
        self.attribution = gs.attribution(actor, **evidence)
        try:
            yield
        finally:
            self.attribution = previous

    @contextlib.contextmanager
    def locked(self, *, recover: bool = True) -> Iterator[None]:
        """Hold the brain's writer lock; waits up to ``LEDGER_LOCK_TIMEOUT`` seconds (default 30).

        Taking it first settles what a killed writer left: its stale git ref locks and temp
        files, and its journal, which is rolled forward (``recover=False`` skips only that).
        """
        with self._thread_lock:
            if self._lock_fd is not None:
                yield
                return
            with self._flocked(recover):
                yield

    @contextlib.contextmanager
    def _flocked(self, recover: bool) -> Iterator[None]:
        path = self.control / "lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + float(os.environ.get("LEDGER_LOCK_TIMEOUT", "30"))
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    os.close(fd)
                    raise LockedError(
                        f"the brain is locked by another writer (pid {holder})",
                        hint="wait for it to finish, or raise LEDGER_LOCK_TIMEOUT",
                    ) from None
                time.sleep(0.01)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd
        try:
            self._clear_leftovers()
            if recover:
                self._recover()
            yield
        finally:
            self._lock_fd = None
            self.cache.flush()
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # ------------------------------------------------------------------ head state

    def head(self) -> Head:
        commit = self.store.head()
        if commit is None:
            raise StoreError(f"{self.root} has no snapshots", hint="the brain was not initialised; run 'ledger init'")
        if self._head is not None and self._head.commit == commit:
            return self._head
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
        self._head = Head(commit, snap, skills, bundle, fanout=Fanout(read=buckets) if buckets is not None else None)
        return self._head

    _INDEX = "root-index-v1.bin"

    def _load_index(self, skills_tree: bytes | None) -> RootIndex | None:
        """The root index saved for this exact ``skills/`` tree id, if any (see :meth:`close`)."""
        if skills_tree is None:
            return None
        try:
            index = RootIndex.load((self.control / "cache" / self._INDEX).read_bytes(), skills_tree)
        except FileNotFoundError:
            return None
        if index is not None:
            self._index_saved = skills_tree
        return index

    def _save_index(self) -> None:
        """Persist the head's root index once per process, so the next CLI call skips O(n) rehashing."""
        head = self._head
        if head is None or not head.skills or len(head.skills) < 256:
            return
        key = bytes.fromhex(head.snap.tree) if head.snap.tree else None
        tree = self.store.skills_tree(head.commit, key)
        if tree is None or tree == self._index_saved:
            return
        path = self.control / "cache" / self._INDEX
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(head.bundle.dump(tree))
        os.replace(tmp, path)
        self._index_saved = tree

    def _skill_files(self, tree: bytes) -> FileMap:
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

    def _committed(self, name: str) -> tuple[FileMap, SkillDoc]:
        head = self.head()
        if name not in head.skills:
            raise SkillNotFoundError(f"no skill named {name!r}", hint="see 'ledger skill list'")
        files = self._skill_files(head.skills[name])
        if SKILL_MD not in files:
            raise StoreError(f"skill {name!r} in the head snapshot has no {SKILL_MD}")
        doc = self.versions.doc(head, self._text(files[SKILL_MD][1], name), name=name, limit=self.limits["skill_md"])
        return files, doc

    def _text(self, blob: bytes, where: str) -> str:
        try:
            return self._read_blob(blob).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillError(f"{where}: file is not valid UTF-8") from exc

    # ------------------------------------------------------------------ reads

    @_writer
    def revert(self, name: str, version: int, *, note: str = "") -> Receipt:
        """Restore ``name`` (all its files) as it was at ``version``, as a new upsert; history is never rewritten."""
        name = self.resolve(name)
        commit = self._version_commit(name, version)
        tree = skills_of(self.store, self.store.commit_info(commit)[0])[1]
        old_files = self._skill_files(tree[name])
        old_text = self._text(old_files[SKILL_MD][1], name)
        old_doc = self.versions.doc(self.head(), old_text, limit=self.limits["skill_md"])
        writes: dict[str, tuple[bytes, bool] | None] = {
            rel: (self.store.read(sha, b"blob"), mode == gs.MODE_EXEC) for rel, (mode, sha) in old_files.items()
        }
        note = note or f"revert {name} to v{version}"
        if name in self.head().skills:
            files, current = self._committed(name)
            for rel in files:
                writes.setdefault(rel, None)
            writes.pop(SKILL_MD)
            return self._bump("revert", name, files, current, old_doc, writes, note=note)
        version = self._first_version(name)
        writes[SKILL_MD] = (old_doc.with_counter(version).encode(), False)
        return self._write_skill("revert", name, writes, note=note, version=version)

    @_writer
    def create(
        self, name: str, description: str, body: str = "", *, note: str = "", category: str | None = None
    ) -> Receipt:
        """Create a new skill at version 1, in ``category`` if given; refuses a name that exists."""
        check_name(name)
        category = check_category(category) if category else None
        head = self.head()
        if name in head.skills or self._on_disk(name):
            raise SkillExistsError(
                f"skill {name!r} already exists",
                hint="use 'ledger skill edit' or 'patch' to improve it",
            )
        if not description.strip():
            raise SkillError("a new skill needs a description", hint="pass --description TEXT")
        version = self._first_version(name)
        counted = self.versions.record(head) is None
        text = SkillDoc(name=name, description=description, version=version, body=body, counted=counted).render()
        parse_skill_md(text, limit=self.limits["skill_md"])
        self._check_authored(name, None, text)
        return self._write_skill("create", name, {SKILL_MD: (text.encode(), False)}, note=note, version=version,
                                 category=category)  # fmt: skip

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
            owners = sorted(k for k, v in self._declared_names(self.head()).items() if v == doc.name)
            if len(owners) > 1:
                raise SkillError(f"skills {', '.join(owners)} all declare name {doc.name!r}",
                                 hint="edit one of them by its folder: ledger skill edit FOLDER --file …")  # fmt: skip
            if owners:
                return self.edit(owners[0], text, note=note)
        version = max(doc.version, self._first_version(slug))  # a whole-number version the file brings is kept
        self._check_authored(slug, None, doc.with_counter(version))
        return self._write_skill(
            "create", slug, {SKILL_MD: (doc.with_counter(version).encode(), False)}, note=note, version=version,
            category=check_category(category) if category else None,
        )

    @_writer
    def edit(self, name: str, text: str, *, note: str = "") -> Receipt:
        """Rewrite ``SKILL.md`` in full; the ledger sets the next version."""
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.naming)
        new = self.versions.doc(self.head(), text, limit=self.limits["skill_md"])  # strict: nothing is filled in
        files, old = self._committed(name)
        if not belongs_to(new, name) and new.name != old.name:  # a declared name kept as it was is the skill's
            raise SkillError(
                f"the new SKILL.md declares name {new.name!r}, which is not skill {name!r}",
                hint=f"use 'ledger skill upsert' to write skill {new.name!r}",
            )
        return self._bump("edit", name, files, old, new, {}, note=note)

    @_writer
    def patch(
        self, name: str, old: str, new: str, *, file: str | None = None, replace_all: bool = False, note: str = ""
    ) -> Receipt:
        """Replace ``old`` with ``new`` in SKILL.md (or a supporting file): exactly one match, or every
        match with ``replace_all``. The file is read under the writer lock, in the write's critical section."""
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.naming)
        target = SKILL_MD if file is None else "/".join(check_support_path(file))
        return self.rewrite(
            name,
            lambda current: {target: self._patched(name, target, current, old, new, replace_all)},
            operation="patch",
            note=note,
        )

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
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.naming)
        if operation not in ("edit", "patch", "write-file", "remove-file"):
            raise UsageError(f"rewrite records an edit, patch, write-file or remove-file, not {operation!r}")
        files, doc = self._committed(name)
        writes = dict(change(_CommittedFiles(files, self._read_blob)))
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
        return self._bump(operation, name, files, doc, new_doc, specs, note=note)

    @_writer
    def write_file(self, name: str, rel: str, data: bytes, *, executable: bool = False, note: str = "") -> Receipt:
        """Add or replace a supporting file at any portable path in the skill (the agent tools keep to
        references/ templates/ scripts/ assets/, as Hermes does)."""
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.naming)
        target = "/".join(check_support_path(rel))
        check_support_size(target, data, self.limits["file"])
        files, doc = self._committed(name)
        for existing in files:
            if existing.startswith(target + "/") or target.startswith(existing + "/"):
                raise SkillError(f"{rel!r} conflicts with existing path {existing!r}")
        return self._bump("write-file", name, files, doc, doc, {target: (data, executable)}, note=note)

    @_writer
    def remove_file(self, name: str, rel: str, *, note: str = "") -> Receipt:
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.naming)
        target = "/".join(check_support_path(rel))
        files, doc = self._committed(name)
        if target not in files:
            raise SkillNotFoundError(f"skill {name!r} has no file {rel!r}")
        return self._bump("remove-file", name, files, doc, doc, {target: None}, note=note)

    @_writer
    def delete(self, name: str, *, note: str = "") -> Receipt:
        name = self.resolve(name)  # the folder, a category path or a declared name (ledger.naming)
        _, doc = self._committed(name)
        self._require_clean(name)
        cats = self.categories.tree_with(self.head(), {name: None})  # a deleted skill leaves its category
        return self._apply("delete", {name: None}, [gs.Change("delete", name, doc.version)], note, categories=cats)

    @_writer
    def snapshot(self, note: str = "", progress: Callable[[int, int], None] | None = None) -> Receipt:
        """Record hand edits in the working tree as one snapshot, bumping each changed skill."""
        with self.locked():
            head = self.head()
            try:
                disk = read_tree(self.skills_dir, progress) if self.skills_dir.exists() else DirNode({})
            except TreeError:
                raise self._every_problem() from None
            if disk.digest == head.bundle.root:
                raise NoChangeError("nothing to snapshot: the working tree equals the head snapshot")
            with wp.WorkTree(self.root, self.control) as tree, self.store.bulk():
                try:
                    return self._snapshot_changes(tree, head, disk, note)
                finally:
                    self._held.clear()

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
                _, doc = self._committed(name)
                updates[name] = None
                changes.append(gs.Change("delete", name, doc.version))
                continue
            try:
                raw = self._read_disk_skill(tree, name, node)
                seen[name] = {r: (gs.MODE_EXEC if x else gs.MODE_FILE, wp.blob_id(d)) for r, (d, x) in raw.items()}
                doc = self.versions.doc(head, raw.pop(SKILL_MD)[0].decode("utf-8"), limit=self.limits["skill_md"])
                if name in head.skills:
                    action, version = "update", self._committed(name)[1].version + 1
                else:
                    action, version = "create", max(doc.version, self._first_version(name, head))
                raw[SKILL_MD] = (doc.with_counter(version).encode(), False)
            except LedgerError as exc:
                problems.append(f"skills/{name}: {exc.message}")
                continue
            updates[name] = self._blobs(raw, {}, self._held)  # the working tree is written from these bytes
            changes.append(gs.Change(action, name, version))
        if problems:
            raise SkillError(
                f"{len(problems)} skill(s) cannot be recorded:" + "".join(f"\n  {p}" for p in problems),
                hint="fix each, then run 'ledger snapshot' again; nothing was recorded",
            )
        return self._apply("snapshot", updates, changes, note, disk=seen)

    # ------------------------------------------------------------------ internals
