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
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ledger import gitstore as gs
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
    MAX_SUPPORT_FILE,
    SKILL_MD,
    SUPPORT_DIRS,
    SkillDoc,
    check_name,
    check_support_path,
    declared_name,
    ensure_frontmatter,
    parse_skill_md,
    slugify,
)

__all__ = ["Brain", "NoChangeError", "Receipt", "SkillInfo", "Status", "find_brain"]

CONTROL = ".ledger"
CONFIG = "config.json"
_CONFIG_FORMAT = 1

FileMap = dict[str, tuple[int, bytes]]  # skill-relative path → (git mode, blob id)


class NoChangeError(LedgerError):
    """The requested write would leave the brain exactly as it is."""


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
            return method(self, *args, **kwargs)

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
        if (self.control / "journal.json").exists():
            with self.locked():
                pass  # locked() rolls the journal forward

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
            msg = gs.format_message("init", EMPTY_ROOT, None, [])
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
    def locked(self) -> Iterator[None]:
        """Hold the brain's writer lock; waits up to ``LEDGER_LOCK_TIMEOUT`` seconds (default 30)."""
        if self._lock_fd is not None:
            yield
            return
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

    def _skill_files(self, tree: bytes, prefix: str = "") -> FileMap:
        out: FileMap = {}
        for sha, mode, name in self.store.read_tree(tree):
            if mode == gs.MODE_DIR:
                out.update(self._skill_files(sha, f"{prefix}{name}/"))
            else:
                gs.kind_of_mode(mode, prefix + name)
                out[prefix + name] = (mode, sha)
        return out

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
        """Skills in the working tree, from frontmatter only (bodies are not read)."""
        out = []
        for name in self._skill_names():
            doc = parse_skill_md(_read_frontmatter(self.skills_dir / name / SKILL_MD), dir_name=name)
            out.append(SkillInfo(doc.name, doc.description, doc.version, doc.license, doc.compatibility))
        return out

    def index(self) -> str:
        """The Level-0 index: ``▸ <name>: <description>`` per skill, sorted, one line each."""
        lines = [f"▸ {s.name}: {' '.join(s.description.split())}" for s in self.list()]
        return "".join(line + "\n" for line in lines)

    def view(self, name: str, file: str | None = None) -> dict[str, Any]:
        """A skill's body and its linked files, or one supporting file's text."""
        check_name(name)
        sdir = self.skills_dir / name
        if not (sdir / SKILL_MD).is_file():
            raise SkillNotFoundError(f"no skill named {name!r}", hint="see 'ledger skill list'")
        if file is not None:
            parts = check_support_path(file)
            path = self._inside(sdir, parts)
            if not path.is_file():
                raise SkillNotFoundError(f"skill {name!r} has no file {file!r}")
            data = path.read_bytes()
            try:
                return {"name": name, "file": file, "content": data.decode("utf-8")}
            except UnicodeDecodeError:
                return {"name": name, "file": file, "binary": True, "size": len(data)}
        doc = parse_skill_md((sdir / SKILL_MD).read_text(encoding="utf-8"), dir_name=name)
        linked: dict[str, list[str]] = {}
        for sub in SUPPORT_DIRS:
            if (sdir / sub).is_dir():
                linked[sub] = sorted(str(p.relative_to(sdir)) for p in (sdir / sub).rglob("*") if p.is_file())
        return {
            "name": doc.name,
            "description": doc.description,
            "version": doc.version,
            "body": doc.body,
            "files": linked,
        }

    def _skill_names(self) -> list[str]:
        if not self.skills_dir.is_dir():
            return []
        return sorted(
            e.name
            for e in os.scandir(self.skills_dir)
            if e.is_dir(follow_symlinks=False) and (Path(e.path) / SKILL_MD).is_file()
        )

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
        tree = self._expand_all(self.head().skills[name])
        return {f"{name}/{rel}": (d.kind, d.digest) for rel, d in iter_files(tree)}

    def _expand_all(self, tree: bytes) -> DirNode:
        entries: dict[str, Digest | DirNode] = {}
        for sha, mode, name in self.store.read_tree(tree):
            kind = gs.kind_of_mode(mode, name)
            entries[name] = (
                self._expand_all(sha) if kind == KIND_DIR else Digest(kind, gs.blob_digest(self.store, sha, self.cache))
            )
        return DirNode(entries)

    # ------------------------------------------------------------------ mutations

    @_writer
    def create(self, name: str, description: str, body: str = "", *, note: str = "") -> Receipt:
        """Create a new skill at version 1; refuses a name that exists."""
        check_name(name)
        head = self.head()
        if name in head.skills or (self.skills_dir / name).exists():
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
            updates: dict[str, FileMap | None] = {}
            changes: list[gs.Change] = []
            for name in sorted(set(disk.names) | set(head.skills)):
                node = disk.entries.get(name)
                if node is not None and head.bundle.digests.get(name) == node.digest:
                    continue
                if node is None:
                    _, doc = self._committed(name)
                    updates[name] = None
                    changes.append(gs.Change("delete", name, doc.version))
                    continue
                raw = self._read_disk_skill(name, node)
                doc = parse_skill_md(raw.pop(SKILL_MD)[0].decode("utf-8"), dir_name=name)
                version = 1
                action = "create"
                if name in head.skills:
                    version = self._committed(name)[1].version + 1
                    action = "update"
                raw[SKILL_MD] = (doc.with_version(version).render().encode(), False)
                updates[name] = self._blobs(raw, {})
                changes.append(gs.Change(action, name, version))
            return self._apply("snapshot", updates, changes, note)

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
            elif (self.skills_dir / name).exists():
                raise SkillExistsError(
                    f"skills/{name} exists in the working tree but not in a snapshot",
                    hint="run 'ledger status' and 'ledger snapshot' to record it first",
                )
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
            self.cache.put(sha, file_digest(data))
            files[path] = (gs.MODE_EXEC if executable else gs.MODE_FILE, sha)
        return files

    def _tree(self, files: FileMap, where: str) -> tuple[bytes, bytes]:
        """Write the git tree for a skill's files; return (tree id, bundle digest)."""
        groups: dict[str, FileMap] = {}
        leaves: dict[str, tuple[int, bytes]] = {}
        for path, spec in files.items():
            head, sep, rest = path.partition("/")
            if sep:
                groups.setdefault(head, {})[rest] = spec
            else:
                leaves[path] = spec
        entries: list[gs.TreeEntry] = []
        nodes: dict[str, Digest | DirNode] = {}
        for name, (mode, sha) in leaves.items():
            entries.append((sha, mode, name))
            nodes[name] = Digest(gs.kind_of_mode(mode, name), gs.blob_digest(self.store, sha, self.cache))
        for name, sub in groups.items():
            sha, digest = self._tree(sub, f"{where}/{name}")
            entries.append((sha, gs.MODE_DIR, name))
            nodes[name] = Digest(KIND_DIR, digest)
        tree = self.store.write_tree(entries)
        digest = DirNode(nodes, where).digest
        self.cache.put(tree, digest)
        return tree, digest

    def _apply(
        self, operation: str, updates: Mapping[str, FileMap | None], changes: list[gs.Change], note: str
    ) -> Receipt:
        """The one write path: objects → journal → working tree → branch → done."""
        with self.locked():
            head = self.head()
            try:
                return self._apply_locked(head, operation, updates, changes, note)
            except BaseException:
                self._head = None  # the in-memory head may be half-updated; reload it from git
                raise

    def _apply_locked(
        self, head: _Head, operation: str, updates: Mapping[str, FileMap | None], changes: list[gs.Change], note: str
    ) -> Receipt:
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
        crashpoint("after-objects")
        journal = {"commit": commit.hex(), "expected": head.commit.hex(), "skills": sorted(updates)}
        _write_json(self.control / "journal.json", journal)
        crashpoint("after-journal")
        self._head = None
        self._materialize(sorted(updates), skills)
        crashpoint("after-worktree")
        self.store.move_head(commit, head.commit)
        crashpoint("after-ref")
        (self.control / "journal.json").unlink()
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

    def _recover(self) -> None:
        """Roll an interrupted write forward from its journal (its objects are already stored)."""
        path = self.control / "journal.json"
        if not path.exists():
            return
        try:
            journal = json.loads(path.read_text())
            commit, expected = bytes.fromhex(journal["commit"]), bytes.fromhex(journal["expected"])
            names = [check_name(n) for n in journal["skills"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{path} is corrupt: {exc}", hint="inspect it; remove it to abandon the write") from exc
        if not self.store.has(commit):
            path.unlink()  # the write never reached the object store: old state stands
            return
        current = self.store.head()
        if current not in (commit, expected):
            raise StoreError(f"{path}: the branch moved since the interrupted write", hint="inspect and remove it")
        skills_tree = self.store.skills_tree(commit)
        trees = {n: sha for sha, _, n in self.store.read_tree(skills_tree)} if skills_tree else {}
        self._materialize(names, trees)
        if current != commit:
            self.store.move_head(commit, expected)
        path.unlink()
        self._head = None

    def _materialize(self, names: list[str], trees: Mapping[str, bytes]) -> None:
        """Make ``skills/<name>`` exactly match the skill tree ``trees[name]`` (absent: delete it)."""
        for name in names:
            target = self.skills_dir / name
            if name not in trees:
                _remove_tree(target)
                continue
            files = self._skill_files(trees[name])
            target.mkdir(parents=True, exist_ok=True)
            for rel, (mode, sha) in files.items():
                path = self._inside(target, tuple(rel.split("/")), create=True)
                data = self.store.read(sha, b"blob")
                perm = 0o755 if mode == gs.MODE_EXEC else 0o644
                try:
                    st = path.lstat()
                    if stat.S_ISREG(st.st_mode) and (st.st_mode & 0o777) == perm and path.read_bytes() == data:
                        continue
                except FileNotFoundError:
                    pass
                _atomic_write(path, data, perm)
            for path in sorted(target.rglob("*"), reverse=True):
                rel = path.relative_to(target).as_posix()
                if path.is_symlink() or path.is_file():
                    if rel not in files:
                        path.unlink()
                elif path.is_dir() and not any(path.iterdir()):
                    path.rmdir()

    def _inside(self, base: Path, parts: tuple[str, ...], *, create: bool = False) -> Path:
        """Resolve ``parts`` under ``base`` refusing any symlink on the way: never write outside."""
        path = base
        for i, part in enumerate(parts):
            path = path / part
            if path.is_symlink():
                raise TreeError(f"{path.relative_to(self.root)} is a symbolic link; refusing to follow it")
            if create and i < len(parts) - 1:
                path.mkdir(exist_ok=True)
        return path

    def _require_clean(self, name: str) -> None:
        sdir = self.skills_dir / name
        head = self.head()
        want = head.bundle.digests.get(name)
        have = read_tree(sdir).digest if sdir.exists() else None
        if have != want:
            raise StoreError(
                f"skills/{name} has changes that are not in a snapshot",
                hint="run 'ledger status' to see them and 'ledger snapshot' to record them",
            )

    def _read_disk_skill(self, name: str, node: Digest | DirNode) -> dict[str, tuple[bytes, bool]]:
        """Validate a skill directory from the working tree and return its files."""
        if not isinstance(node, DirNode):
            raise SkillError(f"skills/{name} is a file; every entry in skills/ must be a skill directory")
        check_name(name)
        out: dict[str, tuple[bytes, bool]] = {}
        for rel, leaf in iter_files(node):
            if rel != SKILL_MD:
                check_support_path(rel)
            data = (self.skills_dir / name / rel).read_bytes()
            if file_digest(data) != leaf.digest:
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


def _read_frontmatter(path: Path) -> str:
    """Read SKILL.md up to the end of its frontmatter, so listing never loads bodies."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = [fh.readline()]
            if lines[0].rstrip("\r\n").rstrip() != "---":
                return lines[0] + fh.read()  # let the parser report the malformed file
            for line in fh:
                lines.append(line)
                if line.rstrip("\r\n").rstrip() == "---":
                    break
            return "".join(lines)
    except UnicodeDecodeError as exc:
        raise SkillError(f"{path} is not valid UTF-8") from exc


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _atomic_write(path: Path, data: bytes, perm: int) -> None:
    tmp = path.with_name(f".{path.name}.ledger-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, perm)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        os.fchmod(fh.fileno(), perm)  # the umask must not decide the mode that gets hashed
    os.replace(tmp, path)


def _remove_tree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
        return
    if not path.exists():
        return
    for child in sorted(path.rglob("*"), reverse=True):
        if child.is_symlink() or child.is_file():
            child.unlink()
        else:
            child.rmdir()
    path.rmdir()
