"""Git snapshots: objects written directly, refs moved by compare-and-swap.

Snapshots never go through a git index: GitPython's ``IndexFile`` rewrites the
whole index per call (2.4 s for one file at 10,000 files).  Blobs, trees and
commits are written in-process to the object database, unchanged subtrees are
reused by id, and ``refs/heads/main`` moves with git's own lock-file protocol,
so ``git`` itself sees an ordinary repository.

No filters or line-ending conversion ever touch the bytes: what the brain holds
is what the snapshot holds.

The commit message grammar (subject, note, ``Ledger-*`` trailers) is :mod:`ledger.store.messages`;
its names are re-exported here, where the store reads and writes them.  Over 400 lines: git's
object, tree and ref formats are one concern, the store's byte-level contract.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import subprocess
import time
import zlib
from collections.abc import Iterator, Sequence
from itertools import count
from pathlib import Path

from ledger._env import child_env
from ledger.bundle.merkle import (
    KIND_DIR,
    KIND_EXEC,
    KIND_FILE,
    parse_root,
)
from ledger.errors import StoreError, TreeError
from ledger.signatures import trust as trustset
from ledger.store.messages import (  # re-exported: the store reads and writes these
    ACTORS,
    EVIDENCE,
    OPERATIONS,
    Change,
    Snapshot,
    attribution,
    canonical_message,
    format_message,
    parse_change,
    parse_trailers,
    split_note,
)
from ledger.store.packwrite import PackWriter
from ledger.store.refs import BRANCH

__all__ = [
    "ACTORS",
    "BRANCH",
    "EVIDENCE",
    "OPERATIONS",
    "Change",
    "FileMap",
    "GitStore",
    "Snapshot",
    "TreeEntry",
    "attribution",
    "blob_id",
    "canonical_message",
    "format_message",
    "split_note",
]

def blob_id(data: bytes) -> bytes:
    """The git blob id of ``data``: how the working tree is compared with a snapshot."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).digest()


_STAGED = count()  # staging-file counter (see GitStore._staging)
STAGING_DIR = "ledger-staging"  # under objects/: git ignores a directory whose name is not two hex digits

SKILLS_DIR = "skills"
RETIRED = "retired"  # beside skills/: the last version of every deleted name, so versions never repeat
VERSIONS = "versions"  # beside skills/ when versions live in the store, not SKILL.md: each live skill's version
NULL_SHA = b"\x00" * 20
MODE_FILE, MODE_EXEC, MODE_DIR = 0o100644, 0o100755, 0o40000
_MODE_KIND = {MODE_FILE: KIND_FILE, MODE_EXEC: KIND_EXEC, MODE_DIR: KIND_DIR}
_KIND_MODE = {v: k for k, v in _MODE_KIND.items()}
_IDENTITY = "brain-ledger <ledger@localhost>"

TreeEntry = tuple[bytes, int, str]  # (binsha, mode, name), as GitPython's tree functions use
FileMap = dict[str, tuple[int, bytes]]  # a skill's files: skill-relative path → (git mode, blob id)


def kind_of_mode(mode: int, where: str) -> int:
    try:
        return _MODE_KIND[mode]
    except KeyError:
        what = {0o120000: "a symbolic link", 0o160000: "a submodule"}.get(mode, f"mode {mode:o}")
        raise TreeError(f"{where!r} is {what}; only files and directories can be hashed") from None


def mode_of_kind(kind: int) -> int:
    return _KIND_MODE[kind]


def git_order(entries: Sequence[TreeEntry]) -> list[TreeEntry]:
    """Sort entries as git does: bytewise, a directory compared as ``name + '/'``."""
    return sorted(entries, key=lambda e: e[2].encode() + (b"/" if e[1] == MODE_DIR else b""))


def _git_dir(path: Path) -> Path:
    """Locate the git directory of a work tree, a brain (``.git``) or a bare repository."""
    dot = path / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():  # a gitfile: "gitdir: <path>"
        text = dot.read_text().strip()
        if text.startswith("gitdir:"):
            return (path / text[7:].strip()).resolve()
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return path
    raise StoreError(f"{path} is not a git repository")


_PIPELINE = 512  # requests per write to `git cat-file --batch`: 512 x 41 bytes stays well inside a 64 KB pipe


class _CatFile:
    """One long-lived ``git cat-file --batch``: reads cost a pipe round trip, not a process.

    Reading through git itself keeps packs, alternates and replace refs meaning
    what they mean to every other git user (an auditor must see what they see).
    """

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                ["git", f"--git-dir={self._git_dir}", "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=child_env(),
            )
        return self._proc

    def read(self, binsha: bytes) -> tuple[bytes, bytes] | None:
        """(type, content) of an object, or ``None`` when it is missing."""
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(binsha.hex().encode() + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) != 3:
            return None
        size = int(header[2])
        data = proc.stdout.read(size + 1)[:size]
        return header[1], data

    def read_many(self, binshas: Sequence[bytes]) -> list[tuple[bytes, bytes] | None]:
        """:meth:`read` of each, pipelined: one write and one flush for them all, so reading many
        small objects (a projection of 10,000 skills reads 30,000) costs no round trip each."""
        if not binshas:
            return []
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        out: list[tuple[bytes, bytes] | None] = []
        # Requests go in chunks small enough (~21 KB) to fit a pipe's buffer whole, and every answer of a
        # chunk is read before the next is written: otherwise git blocks writing answers nobody reads
        # while we block writing requests it no longer reads (a skill with thousands of files did that).
        for i in range(0, len(binshas), _PIPELINE):
            chunk = binshas[i : i + _PIPELINE]
            proc.stdin.write(b"".join(sha.hex().encode() + b"\n" for sha in chunk))
            proc.stdin.flush()
            for _ in chunk:
                header = proc.stdout.readline().split()
                if len(header) != 3:
                    out.append(None)
                    continue
                size = int(header[2])
                out.append((header[1], proc.stdout.read(size + 1)[:size]))
        return out

    def close(self) -> None:
        if self._proc is not None:
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    stream.close()
            self._proc.wait(timeout=10)
            self._proc = None


class GitStore:
    """A brain's git repository: ``<brain>/.git``, configured bare (no index, no work tree).

    Being bare keeps ``git status`` from reporting a stale index, while ``git log``
    and ``git clone <brain>`` work as usual.  Objects are read through one
    ``git cat-file --batch`` and written in-process; GitPython (120 ms to
    import) is loaded only to create repositories and to parse revisions.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.git_dir = _git_dir(self.path)
        self._objects = self.git_dir / "objects"
        self.staging_dir = self._objects / STAGING_DIR  # writers' temporary files (see _staging)
        self._fanout: set[str] = set()
        self._pack: PackWriter | None = None  # set inside bulk()
        self.loose_written = 0  # bytes of loose objects this process wrote (the packer trigger counts them)
        self.bulk_written = 0  # bytes of undeltified packs it published (ledger.store.packwrite)
        self._cat = _CatFile(self.git_dir)

    @classmethod
    def init(cls, path: Path) -> GitStore:
        import git  # GitPython: repository creation and config, off the hot path

        repo = git.Repo.init(path, initial_branch="main")
        with repo.config_writer() as cw:
            cw.set_value("core", "bare", "true")
            cw.set_value("core", "autocrlf", "false")
            cw.set_value("core", "logAllRefUpdates", "true")
            cw.set_value("gc", "auto", "0")
        repo.close()
        return cls(path)

    def close(self) -> None:
        self._cat.close()

    def __enter__(self) -> GitStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ objects

    def _store(self, kind: bytes, data: bytes) -> bytes:
        """Write a loose object in-process: ``zlib(b"<kind> <size>\\0" + data)`` at ``objects/xx/yy…``.

        GitPython's command-line object database spawns ``git hash-object`` per
        object (~1.5 ms) and its in-process GitDB backend is deprecated; the
        loose-object format is stable and small enough to write directly.
        """
        header = b"%s %d\x00" % (kind, len(data))
        h = hashlib.sha1(header)
        h.update(data)
        sha = h.digest()
        hexsha = sha.hex()
        path = f"{self._objects}/{hexsha[:2]}/{hexsha[2:]}"  # str, not Path: ~10 us an object in bulk writes
        if os.path.exists(path):
            return sha
        # Large objects here are skills/ trees: mostly SHA-1s, which do not compress;
        # level 0 keeps the upsert O(copy). The packer repacks them with deltas.
        level = 0 if len(data) > 65536 else 1
        if self._pack is not None:
            self._pack.add(sha, kind, data, level)
            return sha
        # The temporary file is made in objects/ledger-staging/, which no packer removes and
        # git ignores; only the rename needs the fan-out directory, and `git prune-packed` may
        # remove an emptied one at any moment, so it is made again until the rename lands.
        fd, tmp = self._staging()
        try:
            try:
                parts = _deflate(header, data, level)
                _write_all(fd, parts)
                self.loose_written += sum(map(len, parts))
            finally:
                os.close(fd)
            for attempt in range(100):
                if attempt or hexsha[:2] not in self._fanout:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(f"{self._objects}/{hexsha[:2]}")
                    self._fanout.add(hexsha[:2])
                try:
                    os.replace(tmp, path)
                    break
                except FileNotFoundError:
                    continue  # the fan-out directory was pruned between mkdir and rename
            else:
                raise StoreError(f"cannot store object {hexsha}: objects/{hexsha[:2]} keeps disappearing")
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return sha

    def _staging(self) -> tuple[int, str]:
        """A new ``objects/ledger-staging/tmp_obj_*`` file, opened exclusively.

        A directory of its own, not ``objects/``: a packer's ``prune-packed`` holds
        ``objects/`` while it removes emptied fan-out directories, and a writer creating
        files there waited on it (the slowest upserts of a write burst).  Named by pid and
        a counter rather than by :func:`tempfile.mkstemp`, whose random names cost ~60 us an
        object.  ``O_EXCL`` still refuses a name a killed process left behind.
        """
        while True:
            tmp = f"{self.staging_dir}/tmp_obj_{os.getpid()}_{next(_STAGED)}"
            try:
                # Created read-only, as git's objects are: this descriptor may still write it.
                return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444), tmp
            except FileExistsError:
                continue
            except FileNotFoundError:
                os.makedirs(self.staging_dir, exist_ok=True)

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Objects written inside go into one new pack (:mod:`ledger.store.packwrite`), not loose files.

        The pack is published by :meth:`publish` (a writer calls it before its journal, as
        every object must exist before anything refers to it) or when the block ends; an
        error inside drops it.
        """
        if self._pack is not None:
            yield
            return
        pack = self._pack = PackWriter(self._objects, self.staging_dir)
        try:
            yield
        except BaseException:
            pack.abort()  # unpublished objects are unreferenced: nothing is lost
            raise
        finally:
            self._pack = None
        self.bulk_written += pack.finish()  # 0 when publish() already ran

    def publish(self) -> None:
        """Make the objects of a running :meth:`bulk` visible now; later writes go loose."""
        if self._pack is not None:
            pack, self._pack = self._pack, None
            self.bulk_written += pack.finish()

    def write_blob(self, data: bytes) -> bytes:
        return self._store(b"blob", data)

    def write_tree(self, entries: Sequence[TreeEntry]) -> bytes:
        data = b"".join(b"%o %s\x00%s" % (mode, name.encode(), sha) for sha, mode, name in git_order(entries))
        return self._store(b"tree", data)

    def write_raw_tree(self, data: bytes) -> bytes:
        """Store an already serialised tree (entries in git order); the upsert hot path."""
        return self._store(b"tree", data)

    def write_commit(self, tree: bytes, parents: Sequence[bytes], message: str) -> bytes:
        """Write a commit object; author and committer come from ``LEDGER_COMMITTER``."""
        stamp = f"{int(time.time())} +0000"
        identity = os.environ.get("LEDGER_COMMITTER", _IDENTITY)
        if "\n" in identity or "<" not in identity:
            raise StoreError("LEDGER_COMMITTER must look like 'Name <email>'")
        lines = [f"tree {tree.hex()}"]
        lines += [f"parent {p.hex()}" for p in parents]
        lines += [f"author {identity} {stamp}", f"committer {identity} {stamp}", "", message]
        return self._store(b"commit", "\n".join(lines).encode("utf-8"))

    def read(self, binsha: bytes, expect: bytes) -> bytes:
        if self._pack is not None and binsha in self._pack:
            self.publish()  # git reads only published packs
        found = self._cat.read(binsha)
        if found is None:
            raise StoreError(f"git object {binsha.hex()} is missing from the store")
        kind, data = found
        if kind != expect:
            raise StoreError(f"git object {binsha.hex()} is a {kind.decode()}, expected {expect.decode()}")
        return data

    def read_blobs(self, binshas: Sequence[bytes]) -> list[bytes]:
        """The bytes of each blob, read in one pipelined request (:meth:`_CatFile.read_many`)."""
        if self._pack is not None and any(sha in self._pack for sha in binshas):
            self.publish()
        out = []
        for sha, found in zip(binshas, self._cat.read_many(binshas), strict=True):
            if found is None or found[0] != b"blob":
                raise StoreError(f"git object {sha.hex()} is missing from the store or not a blob")
            out.append(found[1])
        return out

    def read_tree(self, binsha: bytes) -> list[TreeEntry]:
        return parse_tree(self.read(binsha, b"tree"), binsha)

    def has(self, binsha: bytes) -> bool:
        hexsha = binsha.hex()
        return (self._objects / hexsha[:2] / hexsha[2:]).exists() or self._cat.read(binsha) is not None

    # ------------------------------------------------------------------ refs

    def head(self) -> bytes | None:
        """The commit ``main`` points at, or ``None`` before the first snapshot."""
        return self.read_ref(BRANCH)

    def read_ref(self, ref: str) -> bytes | None:
        loose = self.git_dir / ref
        try:
            return bytes.fromhex(loose.read_text().strip())
        except FileNotFoundError:
            pass
        try:
            for line in (self.git_dir / "packed-refs").read_text().splitlines():
                if line.endswith(" " + ref):
                    return bytes.fromhex(line.split(" ", 1)[0])
        except FileNotFoundError:
            pass
        return None

    def move_head(self, new: bytes, expected: bytes | None) -> None:
        """Point ``main`` at ``new`` if it still points at ``expected`` (git's lock protocol)."""
        self.move_ref(BRANCH, new, expected)

    def move_ref(self, name: str, new: bytes, expected: bytes | None) -> None:
        """Compare-and-swap any ref with git's ``<ref>.lock`` protocol."""
        ref = self.git_dir / name
        ref.parent.mkdir(parents=True, exist_ok=True)
        lock = ref.with_name(ref.name + ".lock")
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise StoreError(
                f"{lock} exists: another git process is updating the branch",
                hint="if no git process is running, remove the stale lock file",
            ) from None
        try:
            current = self.read_ref(name)
            if current != expected:
                raise StoreError(
                    f"branch moved underneath this write (expected {_hex(expected)}, found {_hex(current)})"
                )
            os.write(fd, new.hex().encode() + b"\n")
            os.fsync(fd)
            os.close(fd)
            fd = -1
            os.replace(lock, ref)
        finally:
            if fd >= 0:
                os.close(fd)
            if lock.exists():
                lock.unlink()
        self._log_ref(name, expected, new)

    def _log_ref(self, name: str, old: bytes | None, new: bytes) -> None:
        log = self.git_dir / "logs" / name
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{_hex(old) or '0' * 40} {new.hex()} {_IDENTITY} {int(time.time())} +0000\tledger\n")

    # ------------------------------------------------------------------ snapshots

    def commit_info(self, commit: bytes) -> tuple[bytes, tuple[str, ...], int, str]:
        """(tree id, parent ids, committer time, message) parsed from the raw commit object."""
        raw = self.read(commit, b"commit")
        head, sep, body = raw.partition(b"\n\n")
        tree, parents, stamp = b"", [], 0
        for line in head.split(b"\n"):
            if line.startswith(b"tree "):
                tree = bytes.fromhex(line[5:].decode())
            elif line.startswith(b"parent "):
                parents.append(line[7:].decode())
            elif line.startswith(b"committer "):
                stamp = int(line.rsplit(b" ", 2)[-2])
        if len(tree) != 20 or not sep:
            raise StoreError(f"commit {commit.hex()} is malformed")
        try:
            return tree, tuple(parents), stamp, body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StoreError(f"commit {commit.hex()} has a message that is not UTF-8") from exc

    def snapshot(self, commit: bytes) -> Snapshot:
        tree, parents, stamp, message = self.commit_info(commit)
        trailers = parse_trailers(message)

        def one(key: str) -> str:
            values = trailers.get(key, [])
            if len(values) != 1:
                raise StoreError(f"commit {commit.hex()[:12]} has {len(values)} {key} trailers, expected 1")
            return values[0]

        try:
            root = parse_root(one("Ledger-Root"))
            pr = one("Ledger-Parent-Root")
            parent_root = None if pr == "none" else parse_root(pr)
            changes = tuple(parse_change(v) for v in trailers.get("Ledger-Change", []))
        except (ValueError, StoreError) as exc:
            raise StoreError(f"commit {commit.hex()[:12]} is not a ledger snapshot: {exc}") from exc
        return Snapshot(
            commit=commit.hex(),
            tree=tree.hex(),
            parents=parents,
            root=root,
            parent_root=parent_root,
            operation=one("Ledger-Operation"),
            changes=changes,
            message=message,
            timestamp=int(stamp),
            trailers=trailers,
        )

    def lineage(self, start: bytes | None = None) -> Iterator[Snapshot]:
        """Snapshots from ``start`` (default: head) back to genesis, first parent only."""
        commit = start if start is not None else self.head()
        while commit is not None:
            snap = self.snapshot(commit)
            yield snap
            commit = bytes.fromhex(snap.parents[0]) if snap.parents else None

    def resolve(self, rev: str) -> bytes:
        """Resolve a revision (hex, ``HEAD~2``, a root) to a commit id."""
        if rev.startswith("blake3-tree-v1:"):
            want = parse_root(rev)
            for snap in self.lineage():
                if snap.root == want:
                    return bytes.fromhex(snap.commit)
            raise StoreError(f"no snapshot has root {rev}")
        proc = subprocess.run(
            [
                "git",
                f"--git-dir={self.git_dir}",
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                f"{rev}^{{commit}}",
            ],
            capture_output=True,
            text=True,
            env=child_env(),
        )
        try:
            if proc.returncode != 0:
                raise ValueError(proc.stderr.strip())
            return bytes.fromhex(proc.stdout.strip())
        except ValueError as exc:
            raise StoreError(f"unknown revision {rev!r}", hint="use a commit id, main~N or a root") from exc

    def skills_tree(self, commit: bytes, tree: bytes | None = None) -> bytes | None:
        """The ``skills/`` tree id of a snapshot (``None`` for the empty brain)."""
        tree = tree if tree is not None else self.commit_info(commit)[0]
        for sha, mode, name in self.read_tree(tree):
            if name == SKILLS_DIR:
                if mode != MODE_DIR:
                    raise TreeError("'skills' in the snapshot is not a directory")
                return sha
        return None

    def root_tree(
        self, skills: bytes | None, categories: bytes | None = None, retired: bytes | None = None,
        layout: bytes | None = None, trust: bytes | None = None, versions: bytes | None = None,
    ) -> bytes:
        """A snapshot's top tree: ``skills/`` (the bundle); ``categories/``, ``retired`` and a
        ``layout`` record (:mod:`ledger.store.skilltree`) and the ``keys`` record
        (:mod:`ledger.signatures.trust`) beside it when needed."""
        entries = [(skills, MODE_DIR, SKILLS_DIR)] if skills else []
        if categories:
            entries.append((categories, MODE_DIR, "categories"))
        if retired:
            entries.append((retired, MODE_FILE, RETIRED))
        if layout:
            entries.append((layout, MODE_FILE, "layout"))
        if trust:
            entries.append((trust, MODE_FILE, "keys"))
        if versions:
            entries.append((versions, MODE_FILE, VERSIONS))
        return self.write_tree(entries)

    def trust_record(self, tree: bytes) -> tuple[bytes | None, bytes]:
        """The ``keys`` record of a snapshot's top tree (:mod:`ledger.signatures.trust`): its blob id and bytes."""
        for sha, mode, name in self.read_tree(tree):
            if name == "keys" and mode == MODE_FILE:
                return sha, self.read(sha, b"blob")
        return None, b""

    def trust_at(self, tree: str) -> tuple[bytes | None, trustset.Trust]:
        """The trust set a snapshot's tree (hex) records: empty for a brain that never had keys."""
        if not tree:
            return None, trustset.Trust()
        sha, data = self.trust_record(bytes.fromhex(tree))
        return (sha, trustset.parse_record(data)) if sha is not None else (None, trustset.Trust())

    def write_trust(self, trust: trustset.Trust) -> bytes | None:
        """The ``keys`` record's blob for ``trust``, or None while no key has been trusted."""
        return self.write_blob(trustset.format_record(trust)) if trust.established else None

    def retired(self, tree: bytes) -> tuple[bytes | None, dict[str, int]]:
        """The ``retired`` record of a snapshot's top tree: its blob id and each deleted name's last version."""
        return self.record(tree, RETIRED)

    def versions(self, tree: bytes) -> tuple[bytes | None, dict[str, int]]:
        """The ``versions`` record of a snapshot's top tree (a brain that keeps its version counter
        out of SKILL.md, lineage.md §4.2): its blob id, ``None`` in a brain that counts in SKILL.md,
        and each live skill's version."""
        return self.record(tree, VERSIONS)

    def record(self, tree: bytes, entry: str) -> tuple[bytes | None, dict[str, int]]:
        """A ``NAME VERSION`` record of a snapshot's top tree (``retired`` or ``versions``)."""
        for sha, mode, name in self.read_tree(tree):
            if name == entry and mode == MODE_FILE:
                return sha, parse_record(self.read(sha, b"blob"), entry)
        return None, {}

    def categories_tree(self, tree: bytes) -> bytes | None:
        """The ``categories/`` tree of a snapshot's top tree, if any (docs/layouts.md)."""
        found = (sha for sha, mode, name in self.read_tree(tree) if name == "categories" and mode == MODE_DIR)
        return next(found, None)


def format_record(versions: dict[str, int]) -> bytes:
    """A ``retired`` or ``versions`` record: ``<name> <version>\\n`` per name, in byte order of the name."""
    return b"".join(f"{n} {v}\n".encode() for n, v in sorted(versions.items(), key=lambda kv: kv[0].encode()))


def parse_record(data: bytes, entry: str = RETIRED) -> dict[str, int]:
    """Read a ``retired`` or ``versions`` record; refuse anything :func:`format_record` would not have written."""
    out: dict[str, int] = {}
    try:
        for line in data.decode("utf-8").splitlines():
            name, version = line.split(" ")
            out[name] = int(version)
    except ValueError as exc:
        raise StoreError(f"the snapshot's {entry!r} record is malformed", hint="run 'ledger audit'") from exc
    if format_record(out) != data:
        raise StoreError(f"the snapshot's {entry!r} record is not in canonical form", hint="run 'ledger audit'")
    return out


def parse_tree(data: bytes, binsha: bytes = b"") -> list[TreeEntry]:
    """Parse a git tree object: ``<octal mode> <name>\\0<20-byte id>`` repeated.

    GitPython's parser re-validates every name as a repository path (about
    10 µs per entry), which dominated audits; names are checked against the
    bundle rules by whoever hashes them, and a malformed tree is refused here.
    """
    out: list[TreeEntry] = []
    i, n = 0, len(data)
    try:
        while i < n:
            sp = data.index(b" ", i)
            nul = data.index(b"\x00", sp)
            if nul + 21 > n:
                raise ValueError("truncated entry")
            out.append(
                (data[nul + 1 : nul + 21], int(data[i:sp], 8), data[sp + 1 : nul].decode("utf-8", "surrogateescape"))
            )
            i = nul + 21
    except ValueError as exc:
        raise StoreError(f"git tree {binsha.hex()} is malformed: {exc}") from exc
    return out


def _hex(sha: bytes | None) -> str:
    return sha.hex() if sha else ""


def _deflate(header: bytes, data: bytes | bytearray, level: int) -> list[bytes | memoryview]:
    """The zlib stream of ``header + data``, without joining them.

    Level 0 is written as stored deflate blocks by hand: ``zlib`` at level 0 still
    copies through its window (9 ms for a 100,000-skill ``skills/`` tree, against
    1.6 ms for the blocks and an Adler-32).
    """
    if level:
        comp = zlib.compressobj(level)
        return [comp.compress(header) + comp.compress(data) + comp.flush()]
    view = memoryview(data)
    parts: list[bytes | memoryview] = [b"\x78\x01", struct.pack("<BHH", 0, len(header), 0xFFFF ^ len(header)), header]
    for off in range(0, max(len(view), 1), 0xFFFF):
        chunk = view[off : off + 0xFFFF]
        last = off + 0xFFFF >= len(view)
        parts += [struct.pack("<BHH", last, len(chunk), 0xFFFF ^ len(chunk)), chunk]
    parts.append(struct.pack(">I", zlib.adler32(data, zlib.adler32(header))))
    return parts


def _write_all(fd: int, parts: list[bytes | memoryview]) -> None:
    views = [memoryview(p) for p in parts if len(p)]
    while views:
        done = os.writev(fd, views[:512])
        while done:
            if done >= len(views[0]):
                done -= len(views.pop(0))
            else:
                views[0], done = views[0][done:], 0
