"""The object database of a brain's repository: git objects read and written, nothing that names them.

Reads go through one long-lived ``git cat-file --batch`` (:class:`CatFile`); writes are
loose objects made in-process (or, inside :meth:`ObjectDB.bulk`, one new pack).  Also here:
git's tree and mode formats.  Apart from :mod:`ledger.store.gitstore`, which composes an
:class:`ObjectDB` and adds refs, commits and a snapshot's records: this half knows only
object ids and bytes, and its pipes and write paths are tuned on their own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import struct
import subprocess
import zlib
from collections.abc import Iterator, Sequence
from itertools import count
from pathlib import Path

from ledger.bundle.merkle import KIND_DIR, KIND_EXEC, KIND_FILE
from ledger.errors import StoreError, TreeError
from ledger.store.git import Git
from ledger.store.packwrite import PackWriter

__all__ = [
    "MODE_DIR",
    "MODE_EXEC",
    "MODE_FILE",
    "STAGING_DIR",
    "CatFile",
    "FileMap",
    "ObjectDB",
    "TreeEntry",
    "blob_id",
    "git_order",
    "kind_of_mode",
    "mode_of_kind",
    "parse_tree",
]


def blob_id(data: bytes) -> bytes:
    """The git blob id of ``data``: how the working tree is compared with a snapshot."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).digest()


_STAGED = count()  # staging-file counter (see ObjectDB._staging)
STAGING_DIR = "ledger-staging"  # under objects/: git ignores a directory whose name is not two hex digits

MODE_FILE, MODE_EXEC, MODE_DIR = 0o100644, 0o100755, 0o40000
_MODE_KIND = {MODE_FILE: KIND_FILE, MODE_EXEC: KIND_EXEC, MODE_DIR: KIND_DIR}
_KIND_MODE = {v: k for k, v in _MODE_KIND.items()}

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


_ENTRY = re.compile(rb"([^ ]*) ([^\0]*)\0(.{20})", re.S)  # <mode> <name>\0<20-byte id>, as parse_tree's loop reads one


def parse_tree(data: bytes, binsha: bytes = b"") -> list[TreeEntry]:
    """Parse a git tree object: ``<octal mode> <name>\\0<20-byte id>`` repeated.

    GitPython's parser re-validates every name as a repository path (about
    10 µs per entry), which dominated audits; names are checked against the
    bundle rules by whoever hashes them, and a malformed tree is refused here.

    One ``findall`` splits the entries (twice as fast: a fanned-out head's 10,000 entries
    in ~5 ms); it is used only when its entries cover ``data`` end to end, which makes them
    the entries the loop below finds, so anything else (a malformed tree) meets the loop
    and its error.
    """
    found = _ENTRY.findall(data)
    if sum(len(mode) + len(name) for mode, name, _ in found) + 22 * len(found) == len(data):
        try:
            return [(sha, int(mode, 8), name.decode("utf-8", "surrogateescape")) for mode, name, sha in found]
        except ValueError:
            pass  # a mode that is not octal: the loop says so
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


_PIPELINE = 512  # requests per write to `git cat-file --batch`: 512 x 41 bytes stays well inside a 64 KB pipe


class CatFile:
    """One long-lived ``git cat-file --batch``: reads cost a pipe round trip, not a process.

    Reading through git itself keeps packs, alternates and replace refs meaning
    what they mean to every other git user (an auditor must see what they see).
    """

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = Git(self._git_dir).popen("cat-file", "--batch")
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


class ObjectDB:
    """The ``objects/`` directory of a git repository: written in-process, read through :class:`CatFile`."""

    def __init__(self, git_dir: Path) -> None:
        self._objects = git_dir / "objects"
        self.staging_dir = self._objects / STAGING_DIR  # writers' temporary files (see _staging)
        self._fanout: set[str] = set()
        self._pack: PackWriter | None = None  # set inside bulk()
        self.loose_written = 0  # bytes of loose objects this process wrote (the packer trigger counts them)
        self.bulk_written = 0  # bytes of undeltified packs it published (ledger.store.packwrite)
        self.cat = CatFile(git_dir)

    def close(self) -> None:
        self.cat.close()

    def write(self, kind: bytes, data: bytes) -> bytes:
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
                    os.replace(tmp, path)  # staged elsewhere, renamed into a fan-out that may vanish: not atomic_write
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
        return self.write(b"blob", data)

    def write_tree(self, entries: Sequence[TreeEntry]) -> bytes:
        data = b"".join(b"%o %s\x00%s" % (mode, name.encode(), sha) for sha, mode, name in git_order(entries))
        return self.write(b"tree", data)

    def write_raw_tree(self, data: bytes) -> bytes:
        """Store an already serialised tree (entries in git order); the upsert hot path."""
        return self.write(b"tree", data)

    def read(self, binsha: bytes, expect: bytes) -> bytes:
        if self._pack is not None and binsha in self._pack:
            self.publish()  # git reads only published packs
        found = self.cat.read(binsha)
        if found is None:
            raise StoreError(f"git object {binsha.hex()} is missing from the store")
        kind, data = found
        if kind != expect:
            raise StoreError(f"git object {binsha.hex()} is a {kind.decode()}, expected {expect.decode()}")
        return data

    def read_blobs(self, binshas: Sequence[bytes]) -> list[bytes]:
        """The bytes of each blob, read in one pipelined request (:meth:`CatFile.read_many`)."""
        return self.read_many(binshas, b"blob")

    def read_many(self, binshas: Sequence[bytes], expect: bytes) -> list[bytes]:
        """The bytes of each object, all of kind ``expect``, read in one pipelined request."""
        if self._pack is not None and any(sha in self._pack for sha in binshas):
            self.publish()
        out = []
        for sha, found in zip(binshas, self.cat.read_many(binshas), strict=True):
            if found is None or found[0] != expect:
                raise StoreError(f"git object {sha.hex()} is missing from the store or not a {expect.decode()}")
            out.append(found[1])
        return out

    def read_tree(self, binsha: bytes) -> list[TreeEntry]:
        return parse_tree(self.read(binsha, b"tree"), binsha)

    def read_trees(self, binshas: Sequence[bytes]) -> list[list[TreeEntry]]:
        """:meth:`read_tree` of each, read in one pipelined request (a fanned-out head's 256 buckets)."""
        if self._pack is not None and any(sha in self._pack for sha in binshas):
            self.publish()
        out = []
        for sha, found in zip(binshas, self.cat.read_many(binshas), strict=True):
            if found is None:
                raise StoreError(f"git object {sha.hex()} is missing from the store")
            if found[0] != b"tree":
                raise StoreError(f"git object {sha.hex()} is a {found[0].decode()}, expected tree")
            out.append(parse_tree(found[1], sha))
        return out

    def has(self, binsha: bytes) -> bool:
        hexsha = binsha.hex()
        return (self._objects / hexsha[:2] / hexsha[2:]).exists() or self.cat.read(binsha) is not None


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
