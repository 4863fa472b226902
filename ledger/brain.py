"""Store operations on a brain: slug-keyed skill upserts, each one a snapshot.

A brain is a directory::

    <brain>/skills/<name>/SKILL.md ...   the bundle (what is hashed and committed)
    <brain>/.git/                        the snapshot store (configured bare)
    <brain>/.ledger/                     control: config, lock, journal, cache

Every mutation follows one path (:meth:`Brain._apply`): build the new git
objects, write a journal, update the working tree, move the branch, drop the
journal.  A crash before the journal leaves the old state; after it, the next
open rolls forward to the new state.  Either way no snapshot's root disagrees
with its tree, because the root is computed from the very entries written.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ledger import gitstore as gs
from ledger import writepath as wp
from ledger._faults import crashpoint
from ledger.errors import (
    LedgerError,
    LockedError,
    PatchError,
    SkillError,
    SkillExistsError,
    SkillNotFoundError,
    StoreError,
    TreeError,
)
from ledger.merkle import (
    EMPTY_ROOT,
    KIND_DIR,
    KIND_EXEC,
    Digest,
    DirNode,
    InclusionProof,
    RootIndex,
    file_digest,
    format_root,
    iter_files,
    prove,
    read_tree,
)
from ledger.skill import (
    MAX_SKILL_MD,
    MAX_SUPPORT_FILE,
    SKILL_MD,
    SUPPORT_DIRS,
    SkillDoc,
    check_bundle_path,
    check_name,
    check_support_path,
    declared_name,
    ensure_frontmatter,
    parse_skill_md,
    slugify,
)

__all__ = ["Brain", "NoChangeError", "Receipt", "RecoveryError", "SkillInfo", "Status", "find_brain"]

CONTROL = ".ledger"
CONFIG = "config.json"
_JOURNAL = "journal.json"
_OWN_REFS = (gs.BRANCH, "refs/notes/ledger-chain")
_CONFIG_FORMAT = 1

FileMap = dict[str, tuple[int, bytes]]  # skill-relative path → (git mode, blob id)


class NoChangeError(LedgerError):
    """The requested write would leave the brain exactly as it is."""


class RecoveryError(StoreError):
    """An interrupted write cannot be rolled forward without discarding something on disk."""

    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(
            message + "".join(f"\n  {p}" for p in problems[:20]),
            hint="run 'ledger recover' to see it, and 'ledger recover --move-aside' to keep those files "
            "under .ledger/rescued/ and finish the write",
        )
        self.problems = problems


@dataclass(frozen=True)
class Receipt:
    """What a mutation returns: enough to find and verify the snapshot it made."""

    skill: str | None
    version: int | None
    root: str
    commit: str
    operation: str
    chain: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.chain is None:
            del out["chain"]
        return out


@dataclass(frozen=True)
class SkillInfo:
    name: str
    description: str
    version: int
    license: str | None = None
    compatibility: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Status:
    head_commit: str
    head_root: str
    tree_root: str
    changes: dict[str, str] = field(default_factory=dict)  # bundle path → modified|new|deleted
    pending_chain: int | None = None

    @property
    def clean(self) -> bool:
        return not self.changes

    def to_json(self) -> dict[str, Any]:
        return {
            "head": self.head_commit,
            "root": self.head_root,
            "tree_root": self.tree_root,
            "clean": self.clean,
            "changes": self.changes,
            "pending_chain": self.pending_chain,
        }


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


def _tree_entry(name: str, tree: bytes) -> bytes:
    """One serialised git tree entry for a skill directory."""
    return b"40000 " + name.encode() + b"\x00" + tree


class _Head:
    """The head snapshot held in memory, so an upsert touches only what it changes.

    ``entries`` holds each skill's serialised git tree entry keyed by ``name/``
    (git's sort key for a directory) and ``keys`` their sorted order, so the new
    ``skills/`` tree is one join rather than a re-serialisation.
    """

    def __init__(
        self,
        commit: bytes,
        snap: gs.Snapshot,
        skills: dict[str, bytes],
        bundle: RootIndex,
        entries: dict[str, bytes] | None = None,
        keys: list[str] | None = None,
        ordered: list[bytes] | None = None,
    ) -> None:
        self.commit = commit
        self.snap = snap
        self.skills = skills  # name → tree id
        self.bundle = bundle
        self.entries = entries if entries is not None else {n + "/": _tree_entry(n, t) for n, t in skills.items()}
        self.keys = keys if keys is not None else sorted(self.entries)
        self.ordered = ordered if ordered is not None else [self.entries[k] for k in self.keys]


class Brain:
    """An open brain.  Use :meth:`init` or :meth:`open`; close it (or use ``with``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.skills_dir = root / "skills"
        self.control = root / CONTROL
        if self.skills_dir.is_symlink():
            raise StoreError(f"{self.skills_dir} is a symbolic link; the brain refuses to follow it")
        self.store = gs.GitStore(root)
        self.cache = gs.DigestCache(self.control / "cache" / "digests-v2.bin")
        self._head: _Head | None = None
        self._lock_fd: int | None = None
        self._thread_lock = threading.RLock()
        self._base: bytes | None = None  # the head a running mutation read under the lock
        self._fresh: dict[bytes, bytes] = {}  # blob id → digest computed from bytes in this process
        self.pending_recovery: RecoveryError | StoreError | None = None
        if (self.control / _JOURNAL).exists() or self._stale_ref_locks():
            try:
                with self.locked():
                    pass  # locked() rolls the journal forward
            except StoreError as exc:
                # Reads still work (on the last snapshot); every write refuses with this error.
                self.pending_recovery = exc

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def init(cls, path: str | os.PathLike[str]) -> Brain:
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
        (root / "skills").mkdir(parents=True, exist_ok=True)
        (root / CONTROL).mkdir(exist_ok=True)
        gs.GitStore.init(root).close()
        (root / CONTROL / ".gitignore").write_text("*\n")
        _write_json(root / CONTROL / CONFIG, {"format": _CONFIG_FORMAT})
        brain = cls(root)
        with brain.locked():
            tree = brain.store.root_tree(None)
            msg = gs.format_message("init", EMPTY_ROOT, None, [], nonce=secrets.token_hex(16))
            commit = brain.store.write_commit(tree, [], msg)
            brain.store.move_head(commit, None)
        return brain

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
            _write_json(self.control / CONFIG, cfg)

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

    def head(self) -> _Head:
        commit = self.store.head()
        if commit is None:
            raise StoreError(f"{self.root} has no snapshots", hint="the brain was not initialised; run 'ledger init'")
        if self._head is not None and self._head.commit == commit:
            return self._head
        snap = self.store.snapshot(commit)
        skills_tree = self.store.skills_tree(commit, bytes.fromhex(snap.tree))
        skills: dict[str, bytes] = {}
        for sha, mode, name in self.store.read_tree(skills_tree) if skills_tree else ():
            if mode != gs.MODE_DIR:
                raise TreeError(f"skills/{name} in the snapshot is not a skill directory")
            skills[name] = sha
        bundle = self._load_index(skills_tree)
        if bundle is None or bundle.names != sorted(skills) or bundle.root != snap.root:
            digests = {n: gs.tree_digest(self.store, sha, self.cache, n) for n, sha in skills.items()}
            bundle = RootIndex(digests)
        if bundle.root != snap.root:
            raise StoreError(
                f"head snapshot {commit.hex()[:12]} claims root {format_root(snap.root)} but its tree "
                f"hashes to {format_root(bundle.root)}",
                hint="the store was tampered with; run 'ledger verify'",
            )
        self._head = _Head(commit, snap, skills, bundle)
        return self._head

    _INDEX = "root-index-v1.bin"

    def _load_index(self, skills_tree: bytes | None) -> RootIndex | None:
        """The root index saved for this exact ``skills/`` tree id, if any (see :meth:`close`)."""
        if skills_tree is None:
            return None
        try:
            return RootIndex.load((self.control / "cache" / self._INDEX).read_bytes(), skills_tree)
        except FileNotFoundError:
            return None

    def _save_index(self) -> None:
        """Persist the head's root index once per process, so the next CLI call skips O(n) rehashing."""
        head = self._head
        if head is None or not head.skills or len(head.skills) < 256:
            return
        key = bytes.fromhex(head.snap.tree) if head.snap.tree else None
        tree = self.store.skills_tree(head.commit, key)
        if tree is None or self._load_index(tree) is not None:
            return
        path = self.control / "cache" / self._INDEX
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(head.bundle.dump(tree))
        os.replace(tmp, path)

    def _skill_files(self, tree: bytes) -> FileMap:
        files = gs.files_of(self.store, tree)
        for rel, (mode, _) in files.items():
            gs.kind_of_mode(mode, rel)
        return files

    def _committed(self, name: str) -> tuple[FileMap, SkillDoc]:
        head = self.head()
        if name not in head.skills:
            raise SkillNotFoundError(f"no skill named {name!r}", hint="see 'ledger skill list'")
        files = self._skill_files(head.skills[name])
        if SKILL_MD not in files:
            raise StoreError(f"skill {name!r} in the head snapshot has no {SKILL_MD}")
        doc = parse_skill_md(self._text(files[SKILL_MD][1], name), dir_name=name)
        return files, doc

    def _text(self, blob: bytes, where: str) -> str:
        try:
            return self.store.read(blob, b"blob").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillError(f"{where}: file is not valid UTF-8") from exc

    # ------------------------------------------------------------------ reads

    def list(self) -> list[SkillInfo]:
        """Skills in the working tree, from frontmatter only (bodies are not parsed)."""
        out = []
        with wp.WorkTree(self.root, self.control) as tree:
            for name in self._skill_names(tree):
                data = tree.read((name, SKILL_MD), 4 * MAX_SKILL_MD)
                if data is None:
                    continue
                doc = parse_skill_md(_frontmatter_only(data, f"skills/{name}/{SKILL_MD}"), dir_name=name)
                out.append(SkillInfo(doc.name, doc.description, doc.version, doc.license, doc.compatibility))
        return out

    def index(self) -> str:
        """The Level-0 index: ``▸ <name>: <description>`` per skill, sorted, one line each."""
        lines = [f"▸ {s.name}: {' '.join(s.description.split())}" for s in self.list()]
        return "".join(line + "\n" for line in lines)

    def view(self, name: str, file: str | None = None) -> dict[str, Any]:
        """A skill's body and its linked files, or one supporting file's text.

        Reads go through the same descriptor-relative path as writes: a symbolic link
        anywhere in the skill is refused, never followed out of the brain.
        """
        check_name(name)
        with wp.WorkTree(self.root, self.control) as tree:
            text = tree.read((name, SKILL_MD), 4 * MAX_SKILL_MD)
            if text is None:
                raise SkillNotFoundError(f"no skill named {name!r}", hint="see 'ledger skill list'")
            if file is not None:
                parts = check_support_path(file)
                data = tree.read((name, *parts), MAX_SUPPORT_FILE)
                if data is None:
                    raise SkillNotFoundError(f"skill {name!r} has no file {file!r}")
                try:
                    return {"name": name, "file": file, "content": data.decode("utf-8")}
                except UnicodeDecodeError:
                    return {"name": name, "file": file, "binary": True, "size": len(data)}
            files, _ = tree.scan(name)
        doc = parse_skill_md(_decode(text, f"skills/{name}/{SKILL_MD}"), dir_name=name)
        linked: dict[str, list[str]] = {}
        for rel in sorted(files):
            top = rel.split("/", 1)[0]
            if top in SUPPORT_DIRS and "/" in rel:
                linked.setdefault(top, []).append(rel)
        return {
            "name": doc.name,
            "description": doc.description,
            "version": doc.version,
            "body": doc.body,
            "files": linked,
        }

    def _on_disk(self, name: str) -> bool:
        """Whether anything, a dangling link included, sits at ``skills/<name>``."""
        with wp.WorkTree(self.root, self.control) as tree:
            return tree.exists(name)

    def _skill_names(self, tree: wp.WorkTree) -> list[str]:
        return sorted(name for name, is_dir in tree.listdir() if is_dir)

    def status(self) -> Status:
        """Compare the working tree with the head snapshot: ``{path: modified|new|deleted}``."""
        head = self.head()
        disk = read_tree(self.skills_dir) if self.skills_dir.exists() else DirNode({})
        changes: dict[str, str] = {}
        if disk.digest != head.bundle.root:
            names = set(disk.names) | set(head.skills)
            for name in sorted(names):
                on_disk = disk.entries.get(name)
                digest = head.bundle.digests.get(name)
                if on_disk is not None and digest is not None and on_disk.digest == digest:
                    continue
                old = self._committed_files(name) if digest is not None else {}
                new = _disk_files(on_disk, name)
                for path in sorted(set(old) | set(new)):
                    if path not in new:
                        changes[path] = "deleted"
                    elif path not in old:
                        changes[path] = "new"
                    elif old[path] != new[path]:
                        changes[path] = "modified"
        return Status(head.commit.hex(), format_root(head.bundle.root), format_root(disk.digest), changes)

    def prove(self, rel: str, at: str | None = None) -> InclusionProof:
        """Inclusion proof of bundle path ``rel`` (``<skill>/<file>``) in a snapshot (default: head)."""
        commit = self.store.resolve(at) if at else self.head().commit
        snap = self.store.snapshot(commit)
        parts = tuple(p for p in rel.split("/"))
        tree = gs.expand(self.store, self.store.skills_tree(commit), self.cache, parts)
        if tree.digest != snap.root:
            raise StoreError(f"snapshot {commit.hex()[:12]} does not hash to its recorded root; run 'ledger verify'")
        return prove(tree, rel)

    # ------------------------------------------------------------------ history

    def diff(self, rev1: str, rev2: str) -> dict[str, Any]:
        """Files and skills that differ between two snapshots: ``{path: added|deleted|modified}``."""
        a, b = (self.store.skills_tree(self.store.resolve(r)) for r in (rev1, rev2))
        old = {n: s for s, _, n in self.store.read_tree(a)} if a else {}
        new = {n: s for s, _, n in self.store.read_tree(b)} if b else {}
        files: dict[str, str] = {}
        skills: dict[str, str] = {}
        for name in sorted(set(old) | set(new)):
            if old.get(name) == new.get(name):
                continue
            skills[name] = "added" if name not in old else "deleted" if name not in new else "modified"
            fa = self._skill_files(old[name]) if name in old else {}
            fb = self._skill_files(new[name]) if name in new else {}
            for rel in sorted(set(fa) | set(fb)):
                if fa.get(rel) != fb.get(rel):
                    files[f"{name}/{rel}"] = "added" if rel not in fa else "deleted" if rel not in fb else "modified"
        return {"from": rev1, "to": rev2, "skills": skills, "files": files}

    def _version_commit(self, name: str, version: int) -> bytes:
        """The newest snapshot that wrote ``name`` at ``version`` (a deleted and recreated name reuses numbers)."""
        check_name(name)
        for snap in self.store.lineage():
            for change in snap.changes:
                if change.skill == name and change.version == version and change.action != "delete":
                    return bytes.fromhex(snap.commit)
        raise SkillNotFoundError(f"no snapshot wrote {name} v{version}", hint=f"see 'ledger log' for {name}'s versions")

    def show(self, name: str, version: int) -> str:
        """``SKILL.md`` of ``name`` exactly as it was at ``version``."""
        commit = self._version_commit(name, version)
        tree = {n: s for s, _, n in self.store.read_tree(self.store.skills_tree(commit) or b"")}
        return self._text(self._skill_files(tree[name])[SKILL_MD][1], f"{name}/{SKILL_MD}")

    @_writer
    def revert(self, name: str, version: int, *, note: str = "") -> Receipt:
        """Restore ``name`` (all its files) as it was at ``version``, as a new upsert; history is never rewritten."""
        commit = self._version_commit(name, version)
        skills_tree = self.store.skills_tree(commit)
        tree = {n: s for s, _, n in self.store.read_tree(skills_tree)} if skills_tree else {}
        old_files = self._skill_files(tree[name])
        old_doc = parse_skill_md(self._text(old_files[SKILL_MD][1], name), dir_name=name)
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
        writes[SKILL_MD] = (old_doc.with_version(1).render().encode(), False)
        return self._write_skill("revert", name, writes, note=note)

    def _committed_files(self, name: str) -> dict[str, tuple[int, bytes]]:
        return {
            f"{name}/{rel}": (gs.kind_of_mode(mode, rel), gs.blob_digest(self.store, sha, self.cache))
            for rel, (mode, sha) in self._skill_files(self.head().skills[name]).items()
        }

    # ------------------------------------------------------------------ mutations

    @_writer
    def create(self, name: str, description: str, body: str = "", *, note: str = "") -> Receipt:
        """Create a new skill at version 1; refuses a name that exists."""
        check_name(name)
        head = self.head()
        if name in head.skills or self._on_disk(name):
            raise SkillExistsError(
                f"skill {name!r} already exists",
                hint="use 'ledger skill edit' or 'patch' to improve it",
            )
        doc = SkillDoc(name=name, description=description, version=1, body=body)
        text = doc.render()
        parse_skill_md(text, dir_name=name)  # validates description length etc.
        return self._write_skill("create", name, {SKILL_MD: (text.encode(), False)}, note=note)

    @_writer
    def upsert(self, text: str, *, name: str | None = None, note: str = "") -> Receipt:
        """Slug-keyed write of a whole ``SKILL.md``: create at v1, or bump an existing skill in place.

        The key is ``slugify(name)``, or of the name the frontmatter declares; a
        bare body gets default frontmatter.
        """
        declared = name if name is not None else declared_name(text)
        if declared is None:
            raise SkillError("cannot tell which skill this is", hint="pass a name or declare 'name:' in frontmatter")
        slug = slugify(declared)
        text = ensure_frontmatter(text, name=slug)
        if slug in self.head().skills:
            return self.edit(slug, text, note=note)
        doc = parse_skill_md(text, dir_name=slug, set_name=slug)
        return self._write_skill("create", slug, {SKILL_MD: (doc.with_version(1).render().encode(), False)}, note=note)

    @_writer
    def edit(self, name: str, text: str, *, note: str = "") -> Receipt:
        """Rewrite ``SKILL.md`` in full; the ledger sets the next version."""
        check_name(name)
        files, old = self._committed(name)
        text = ensure_frontmatter(text, name=name, description=old.description)
        new = parse_skill_md(text, dir_name=name, set_name=name)
        if new.name != name:
            raise SkillError(f"the new SKILL.md declares name {new.name!r}, not {name!r}")
        return self._bump("edit", name, files, old, new, {}, note=note)

    @_writer
    def patch(self, name: str, old: str, new: str, *, file: str | None = None, note: str = "") -> Receipt:
        """Replace ``old`` with ``new`` in SKILL.md (or a supporting file); exactly one match."""
        check_name(name)
        if not old:
            raise PatchError("the text to replace is empty")
        files, doc = self._committed(name)
        target = SKILL_MD if file is None else "/".join(check_support_path(file))
        if target not in files:
            raise SkillNotFoundError(f"skill {name!r} has no file {target!r}")
        text = self._text(files[target][1], f"{name}/{target}")
        first = text.find(old)
        if first < 0:
            raise PatchError(
                f"patch text not found in {name}/{target}", hint="copy the text exactly, including whitespace"
            )
        if text.find(old, first + 1) >= 0:
            count = text.count(old)
            raise PatchError(
                f"patch text matches {max(count, 2)} times in {name}/{target}; it must match exactly once",
                hint="include more surrounding context to make it unique",
            )
        patched = text[:first] + new + text[first + len(old) :]
        if target == SKILL_MD:
            try:
                new_doc = parse_skill_md(patched, dir_name=name)
            except SkillError as exc:
                raise PatchError(f"the patched SKILL.md is invalid: {exc.message}", hint=exc.hint) from exc
            return self._bump("patch", name, files, doc, new_doc, {}, note=note)
        data = patched.encode("utf-8")
        _check_support_size(target, data)
        return self._bump("patch", name, files, doc, doc, {target: (data, files[target][0] == gs.MODE_EXEC)}, note=note)

    @_writer
    def write_file(self, name: str, rel: str, data: bytes, *, executable: bool = False, note: str = "") -> Receipt:
        """Add or replace a supporting file under references/ templates/ scripts/ assets/."""
        check_name(name)
        target = "/".join(check_support_path(rel))
        _check_support_size(target, data)
        files, doc = self._committed(name)
        for existing in files:
            if existing.startswith(target + "/") or target.startswith(existing + "/"):
                raise SkillError(f"{rel!r} conflicts with existing path {existing!r}")
        return self._bump("write-file", name, files, doc, doc, {target: (data, executable)}, note=note)

    @_writer
    def remove_file(self, name: str, rel: str, *, note: str = "") -> Receipt:
        check_name(name)
        target = "/".join(check_support_path(rel))
        files, doc = self._committed(name)
        if target not in files:
            raise SkillNotFoundError(f"skill {name!r} has no file {rel!r}")
        return self._bump("remove-file", name, files, doc, doc, {target: None}, note=note)

    @_writer
    def delete(self, name: str, *, note: str = "") -> Receipt:
        check_name(name)
        _, doc = self._committed(name)
        self._require_clean(name)
        return self._apply("delete", {name: None}, [gs.Change("delete", name, doc.version)], note)

    @_writer
    def snapshot(self, note: str = "", progress: Callable[[int, int], None] | None = None) -> Receipt:
        """Record hand edits in the working tree as one snapshot, bumping each changed skill."""
        with self.locked():
            head = self.head()
            disk = read_tree(self.skills_dir, progress) if self.skills_dir.exists() else DirNode({})
            if disk.digest == head.bundle.root:
                raise NoChangeError("nothing to snapshot: the working tree equals the head snapshot")
            with wp.WorkTree(self.root, self.control) as tree:
                return self._snapshot_changes(tree, head, disk, note)

    def _snapshot_changes(self, tree: wp.WorkTree, head: _Head, disk: DirNode, note: str) -> Receipt:
        updates: dict[str, FileMap | None] = {}
        changes: list[gs.Change] = []
        seen: dict[str, FileMap] = {}
        for name in sorted(set(disk.names) | set(head.skills)):
            node = disk.entries.get(name)
            if node is not None and head.bundle.digests.get(name) == node.digest:
                continue
            if node is None:
                _, doc = self._committed(name)
                updates[name] = None
                changes.append(gs.Change("delete", name, doc.version))
                continue
            raw = self._read_disk_skill(tree, name, node)
            seen[name] = {r: (gs.MODE_EXEC if x else gs.MODE_FILE, wp.blob_id(d)) for r, (d, x) in raw.items()}
            doc = parse_skill_md(raw.pop(SKILL_MD)[0].decode("utf-8"), dir_name=name)
            version = 1
            action = "create"
            if name in head.skills:
                version = self._committed(name)[1].version + 1
                action = "update"
            raw[SKILL_MD] = (doc.with_version(version).render().encode(), False)
            updates[name] = self._blobs(raw, {})
            changes.append(gs.Change(action, name, version))
        return self._apply("snapshot", updates, changes, note, disk=seen)

    # ------------------------------------------------------------------ internals

    def _bump(
        self,
        operation: str,
        name: str,
        files: FileMap,
        old: SkillDoc,
        new: SkillDoc,
        writes: Mapping[str, tuple[bytes, bool] | None],
        *,
        note: str,
    ) -> Receipt:
        changed = new.with_version(old.version) != old
        for path, spec in writes.items():
            if spec is None:
                changed = changed or path in files
            else:
                changed = changed or files.get(path) != (gs.MODE_EXEC if spec[1] else gs.MODE_FILE, _blob_id(spec[0]))
        if not changed:
            raise NoChangeError(f"{operation} leaves skill {name!r} unchanged")
        payload: dict[str, tuple[bytes, bool] | None] = dict(writes)
        payload[SKILL_MD] = (new.with_version(old.version + 1).render().encode(), False)
        return self._write_skill(operation, name, payload, base=files, note=note, version=old.version + 1)

    def _write_skill(
        self,
        operation: str,
        name: str,
        writes: Mapping[str, tuple[bytes, bool] | None],
        *,
        base: FileMap | None = None,
        note: str = "",
        version: int = 1,
    ) -> Receipt:
        with self.locked():
            if base is not None:
                self._require_clean(name)
                if self.head().skills.get(name) is None:
                    raise SkillNotFoundError(f"skill {name!r} was deleted concurrently")
            elif name in self.head().skills:
                raise SkillExistsError(f"skill {name!r} already exists")
            elif self._on_disk(name):
                raise SkillExistsError(
                    f"skills/{name} exists in the working tree but not in a snapshot",
                    hint="run 'ledger status' and 'ledger snapshot' to record it first",
                )
            for rel in writes:
                check_bundle_path(name, rel)  # before any object is written
            files = self._blobs(writes, dict(base or {}))
            action = "create" if base is None else "update"
            return self._apply(operation, {name: files}, [gs.Change(action, name, version)], note)

    def _blobs(self, writes: Mapping[str, tuple[bytes, bool] | None], files: FileMap) -> FileMap:
        for path, spec in writes.items():
            if spec is None:
                files.pop(path, None)
                continue
            data, executable = spec
            sha = self.store.write_blob(data)
            self._fresh[sha] = file_digest(data)
            self.cache.put(sha, self._fresh[sha])
            files[path] = (gs.MODE_EXEC if executable else gs.MODE_FILE, sha)
        return files

    def _tree(self, files: FileMap, where: str) -> tuple[bytes, bytes]:
        """Write the git trees for a skill's files; return (tree id, bundle digest).

        Iterative, deepest directory first, so depth is bounded only by the path rules.
        File digests come from the bytes (:meth:`_blob_digest`), never from the cache.
        """
        dirs: dict[str, dict[str, tuple[int, bytes] | None]] = {"": {}}  # None marks a subdirectory
        for path, spec in files.items():
            parent, _, leaf = path.rpartition("/")
            dirs.setdefault(parent, {})
            if dirs[parent].get(leaf, spec) is None or path in dirs:
                raise SkillError(f"{where}/{path} is both a file and a directory")
            dirs[parent][leaf] = spec
            while parent:
                up, _, name = parent.rpartition("/")
                siblings = dirs.setdefault(up, {})
                if name in siblings:
                    if siblings[name] is not None:
                        raise SkillError(f"{where}/{parent} is both a file and a directory")
                    break
                siblings[name] = None
                parent = up
        done: dict[str, tuple[bytes, bytes]] = {}
        for rel in sorted(dirs, key=lambda p: -(p.count("/") + 1) if p else 0):
            entries: list[gs.TreeEntry] = []
            nodes: dict[str, Digest | DirNode] = {}
            for name, spec in dirs[rel].items():
                if spec is None:
                    sha, digest = done[f"{rel}/{name}" if rel else name]
                    entries.append((sha, gs.MODE_DIR, name))
                    nodes[name] = Digest(KIND_DIR, digest)
                else:
                    mode, sha = spec
                    entries.append((sha, mode, name))
                    nodes[name] = Digest(gs.kind_of_mode(mode, name), self._blob_digest(sha))
            tree = self.store.write_tree(entries)
            digest = DirNode(nodes, f"{where}/{rel}" if rel else where).digest
            self.cache.put(tree, digest)
            done[rel] = (tree, digest)
        return done[""]

    def _blob_digest(self, sha: bytes) -> bytes:
        """A file digest computed from its bytes in this write; the persisted cache is not trusted here."""
        digest = self._fresh.get(sha)
        if digest is None:
            digest = self._fresh[sha] = file_digest(self.store.read(sha, b"blob"))
            self.cache.put(sha, digest)
        return digest

    def _apply(
        self,
        operation: str,
        updates: Mapping[str, FileMap | None],
        changes: list[gs.Change],
        note: str,
        disk: Mapping[str, FileMap] | None = None,
    ) -> Receipt:
        """The one write path: objects → checks → journal → working tree → branch → done.

        ``disk`` is what a snapshot read from the working tree, where that differs from
        the last snapshot (it re-renders SKILL.md with the new version).
        """
        with self.locked():
            head = self.head()
            try:
                return self._apply_locked(head, operation, updates, changes, note, disk or {})
            except BaseException:
                self._head = None  # the in-memory head may be half-updated; reload it from git
                raise

    def _apply_locked(
        self,
        head: _Head,
        operation: str,
        updates: Mapping[str, FileMap | None],
        changes: list[gs.Change],
        note: str,
        disk: Mapping[str, FileMap],
    ) -> Receipt:
        if self._base is not None and head.commit != self._base:
            raise StoreError(
                f"the branch moved from {self._base.hex()[:12]} to {head.commit.hex()[:12]} while this write ran "
                "(a git command outside the ledger?); nothing was written",
                hint="run the command again",
            )
        skills = dict(head.skills)
        entries = dict(head.entries)
        digests: dict[str, bytes | None] = {}
        for name, files in updates.items():
            if files is None:
                skills.pop(name, None)
                entries.pop(name + "/", None)
                digests[name] = None
            else:
                tree, digests[name] = self._tree(files, name)
                skills[name] = tree
                entries[name + "/"] = _tree_entry(name, tree)
        bundle = head.bundle  # updated in place: a failure below drops the cached head (see _apply)
        bundle.update(digests)
        # Git orders tree entries by name + "/" for directories; all of skills/ are directories.
        same_names = all(files is not None and name in head.skills for name, files in updates.items())
        if same_names:
            keys, ordered = head.keys, list(head.ordered)
            for name in updates:
                ordered[bisect.bisect_left(keys, name + "/")] = entries[name + "/"]
        else:
            keys = sorted(entries)
            ordered = [entries[k] for k in keys]
        skills_tree = self.store.write_raw_tree(b"".join(ordered)) if keys else None
        if skills_tree is not None:
            self.cache.put(skills_tree, bundle.root)
        root = bundle.root
        message = gs.format_message(operation, root, head.snap.root, changes, note)
        root_tree = self.store.root_tree(skills_tree)
        commit = self.store.write_commit(root_tree, [head.commit], message)
        with wp.WorkTree(self.root, self.control) as tree:
            olds = {n: self._skill_files(head.skills[n]) if n in head.skills else None for n in updates}
            for name, files in updates.items():
                for rel in files or ():
                    check_bundle_path(name, rel)
                problems = tree.check(name, [disk[name] if name in disk else olds[name], files])
                if problems:
                    raise StoreError(
                        f"skills/{name} on disk is neither its last snapshot nor this write:"
                        + "".join(f"\n  {p}" for p in problems[:20]),
                        hint="run 'ledger status'; record hand edits with 'ledger snapshot' or move them away",
                    )
            crashpoint("after-objects")
            journal = {
                "commit": commit.hex(),
                "expected": head.commit.hex(),
                "skills": sorted(updates),
                "disk": {n: {r: [m, sha.hex()] for r, (m, sha) in fm.items()} for n, fm in disk.items()},
            }
            _write_json(self.control / _JOURNAL, journal)
            crashpoint("after-journal")
            self._head = None
            for name in sorted(updates):
                tree.materialize(name, updates[name], self._read_blob)
            crashpoint("after-worktree")
            self.store.move_head(commit, head.commit)
            crashpoint("after-ref")
            (self.control / _JOURNAL).unlink()
        snap = gs.Snapshot.made(commit, root_tree, operation, root, head.snap.root, changes, message, head.commit)
        self._head = _Head(commit, snap, skills, bundle, entries, keys, ordered)
        single = changes[0] if len(changes) == 1 else None
        return Receipt(
            skill=single.skill if single else None,
            version=single.version if single else None,
            root=format_root(root),
            commit=commit.hex(),
            operation=operation,
        )

    def _read_blob(self, sha: bytes) -> bytes:
        return self.store.read(sha, b"blob")

    def _stale_ref_locks(self) -> bool:
        return any((self.store.git_dir / (ref + ".lock")).exists() for ref in _OWN_REFS)

    def _clear_leftovers(self) -> None:
        """Under the writer lock, a ref lock or temp file of ours can only be a killed writer's: clear it."""
        wp.move_ref_lock_aside(self.store.git_dir, _OWN_REFS)
        if (self.control / "tmp").is_dir():
            with wp.WorkTree(self.root, self.control) as tree:
                tree.clear_tmp()

    def _journal(self) -> tuple[bytes, bytes, list[str], dict[str, FileMap]] | None:
        path = self.control / _JOURNAL
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

    def _trees_at(self, commit: bytes) -> dict[str, bytes]:
        skills_tree = self.store.skills_tree(commit)
        return {n: sha for sha, _, n in self.store.read_tree(skills_tree)} if skills_tree else {}

    def _recover(self, *, move_aside: bool = False) -> list[str]:
        """Roll an interrupted write forward from its journal (its objects are already stored).

        Each file of a journaled skill must be in its old or its new state; anything else
        is a hand edit made after the crash, and is never overwritten: the roll-forward
        refuses (:class:`RecoveryError`), or with ``move_aside`` keeps the skill's files
        under ``.ledger/rescued/`` first.  Returns the paths moved aside.
        """
        found = self._journal()
        if found is None:
            return []
        commit, expected, names, disk = found
        path = self.control / _JOURNAL
        if not self.store.has(commit):
            path.unlink()  # the write never reached the object store: old state stands
            return []
        current = self.store.head()
        if current not in (commit, expected):
            raise StoreError(f"{path}: the branch moved since the interrupted write", hint="inspect and remove it")
        old, new = self._trees_at(expected), self._trees_at(commit)
        moved: list[str] = []
        with wp.WorkTree(self.root, self.control) as tree:
            plans = {
                n: (
                    self._skill_files(old[n]) if n in old else None,
                    self._skill_files(new[n]) if n in new else None,
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
                tree.materialize(name, plans[name][1], self._read_blob)
        if current != commit:
            self.store.move_head(commit, expected)
        path.unlink()
        self._head = None
        return moved

    def recover(self, *, move_aside: bool = False) -> dict[str, Any]:
        """Finish (or report) an interrupted write: the one command that settles a pending journal."""
        with self.locked(recover=False):
            pending = self._journal()
            if pending is None:
                self.pending_recovery = None
                return {"pending": False, "moved": []}
            moved = self._recover(move_aside=move_aside)
            self.pending_recovery = None
            return {"pending": True, "commit": pending[0].hex(), "skills": pending[2], "moved": moved}

    def _require_clean(self, name: str) -> None:
        head = self.head()
        want = self._skill_files(head.skills[name]) if name in head.skills else {}
        with wp.WorkTree(self.root, self.control) as tree:
            have, problems = tree.scan(name)
        if problems:
            raise TreeError(problems[0], hint="replace it with a regular file or directory, then 'ledger snapshot'")
        if have != want:
            raise StoreError(
                f"skills/{name} has changes that are not in a snapshot",
                hint="run 'ledger status' to see them and 'ledger snapshot' to record them",
            )

    def _read_disk_skill(
        self, tree: wp.WorkTree, name: str, node: Digest | DirNode
    ) -> dict[str, tuple[bytes, bool]]:
        """Validate a skill directory from the working tree and return its files."""
        if not isinstance(node, DirNode):
            raise SkillError(f"skills/{name} is a file; every entry in skills/ must be a skill directory")
        check_name(name)
        out: dict[str, tuple[bytes, bool]] = {}
        for rel, leaf in iter_files(node):
            if rel != SKILL_MD:
                check_support_path(rel)
            check_bundle_path(name, rel)
            data = tree.read((name, *rel.split("/")), MAX_SUPPORT_FILE if rel != SKILL_MD else 4 * MAX_SKILL_MD)
            if data is None or file_digest(data) != leaf.digest:
                raise StoreError(f"skills/{name}/{rel} changed while it was being read; try again")
            if rel != SKILL_MD:
                _check_support_size(rel, data)
            out[rel] = (data, leaf.kind == KIND_EXEC)
        if SKILL_MD not in out:
            raise SkillError(f"skills/{name} has no {SKILL_MD}")
        try:
            out[SKILL_MD][0].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillError(f"skills/{name}/{SKILL_MD} is not valid UTF-8") from exc
        return out


def _disk_files(node: Digest | DirNode | None, name: str) -> dict[str, tuple[int, bytes]]:
    if node is None:
        return {}
    if not isinstance(node, DirNode):
        return {name: (node.kind, node.digest)}
    return {f"{name}/{rel}": (d.kind, d.digest) for rel, d in iter_files(node)}


def _check_support_size(rel: str, data: bytes) -> None:
    if len(data) > MAX_SUPPORT_FILE:
        raise SkillError(
            f"{rel} is {len(data)} bytes; supporting files are limited to {MAX_SUPPORT_FILE} bytes",
            hint="split it or link to it from references/",
        )


def _blob_id(data: bytes) -> bytes:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).digest()


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillError(f"{where} is not valid UTF-8") from exc


def _frontmatter_only(data: bytes, where: str) -> str:
    """SKILL.md cut after its frontmatter, so listing never parses bodies."""
    text = _decode(data, where)
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return text  # let the parser report the malformed file
    for i, line in enumerate(lines[1:], 1):
        if line.rstrip("\r\n").rstrip() == "---":
            return "".join(lines[: i + 1])
    return text


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
