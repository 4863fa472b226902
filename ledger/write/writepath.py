"""The write path: the only code that reads or changes files in a brain's working tree.

This module is the security boundary.  Every path is opened relative to a
directory file descriptor, one component at a time, with ``O_NOFOLLOW``, so a
symbolic link anywhere on the way is refused rather than followed, and swapping
a directory for a link while a write runs can at worst redirect the write into
the directory that was moved, which is still inside the brain.  New files are
written to ``.ledger/tmp/`` under a random name opened with ``O_EXCL`` and renamed
into place relative to the target directory's descriptor: a planted hard link
is replaced, never written through.  Absolute path length never matters, since
no syscall here sees more than one component.

Before a write is journaled, :meth:`WorkTree.check` compares each skill on
disk with the states the write may legitimately find (the old tree, and during
a roll-forward also the new one).  Anything else is a hand edit or an obstacle,
and the write or roll-forward refuses, naming it; nothing here deletes a file
it cannot account for.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import secrets
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from ledger.errors import LedgerError, StoreError, TreeError
from ledger.store.gitstore import blob_id

__all__ = ["FileMap", "WorkTree", "blob_id", "clear_ref_locks", "read_limited", "read_regular"]

MODE_FILE, MODE_EXEC = 0o100644, 0o100755
FileMap = Mapping[str, tuple[int, bytes]]  # skill-relative path → (git mode, blob id)

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def read_limited(fd: int, limit: int, what: str) -> bytes:
    """Read an open file to its end, refusing more than ``limit`` bytes (``/dev/zero`` included)."""
    chunks, total = [], 0
    while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise LedgerError(f"{what} is larger than {limit} bytes", hint="pass a smaller regular file")
    return b"".join(chunks)


def read_regular(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """A regular file's bytes, at most ``limit``: a link (``O_NOFOLLOW``), a FIFO, a device (``O_NONBLOCK``,
    then ``fstat``) or a larger file is a :class:`LedgerError`, never followed, waited on or read whole."""
    try:
        fd = os.open(path, _FILE)
    except OSError as exc:
        said = "is a symbolic link" if exc.errno == errno.ELOOP else f"cannot be read: {exc.strerror}"
        raise LedgerError(f"{what} {said}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LedgerError(f"{what} is not a regular file")
        if os.fstat(fd).st_size > limit:
            raise LedgerError(f"{what} is {os.fstat(fd).st_size} bytes; at most {limit}")
        return read_limited(fd, limit, what)
    finally:
        os.close(fd)


def _raise_fd_limit() -> None:
    """Removing a tree holds one descriptor per level; allow the deepest tree the path rules admit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096 if hard == resource.RLIM_INFINITY else min(4096, hard), hard))


def _refuse(exc: OSError, where: str) -> LedgerError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return TreeError(
            f"{where} is a symbolic link or not a directory; the brain refuses to follow it",
            hint="replace it with a real directory (see 'ledger status')",
        )
    return StoreError(f"{where}: {exc.strerror}")


class WorkTree:
    """Descriptor-relative access to ``<brain>/skills`` with temp files in ``<brain>/.ledger/tmp``.

    Use as a context manager; descriptors are closed on exit.
    """

    def __init__(self, brain_root: Path, control: Path) -> None:
        _raise_fd_limit()
        self._root = brain_root
        try:
            self._skills = os.open(brain_root / "skills", _DIR)
        except OSError as exc:
            raise _refuse(exc, "skills/") from exc
        self._control = control
        self._tmp: int | None = None

    def close(self) -> None:
        for fd in (self._skills, self._tmp):
            if fd is not None:
                os.close(fd)
        self._tmp = None

    def __enter__(self) -> WorkTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ descriptors

    def _open_dir(self, parts: tuple[str, ...], *, create: bool = False) -> int:
        """Open ``skills/<parts…>`` one component at a time, never following a link."""
        fd = os.dup(self._skills)
        try:
            for i, part in enumerate(parts):
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                try:
                    child = os.open(part, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    raise
                except OSError as exc:
                    raise _refuse(exc, "skills/" + "/".join(parts[: i + 1])) from exc
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _tmp_fd(self) -> int:
        if self._tmp is None:
            tmp = self._control / "tmp"
            tmp.mkdir(exist_ok=True)
            self._tmp = os.open(tmp, _DIR)
        return self._tmp

    # ------------------------------------------------------------------ reads

    def exists(self, name: str) -> bool:
        """Whether ``skills/<name>`` exists at all (a dangling link counts)."""
        try:
            os.stat(name, dir_fd=self._skills, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def read(self, parts: tuple[str, ...], limit: int) -> bytes | None:
        """The bytes of ``skills/<parts…>``, ``None`` if absent; links and special files are refused."""
        where = "skills/" + "/".join(parts)
        try:
            parent = self._open_dir(parts[:-1])
        except FileNotFoundError:
            return None
        try:
            fd = os.open(parts[-1], _FILE, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise TreeError(f"{where} is a symbolic link; the brain refuses to follow it") from exc
            raise _refuse(exc, where) from exc
        finally:
            os.close(parent)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise TreeError(f"{where} is not a regular file")
            return read_limited(fd, limit, where)
        finally:
            os.close(fd)

    def listdir(self, parts: tuple[str, ...] = ()) -> list[tuple[str, bool]]:
        """``(name, is a real directory)`` for each entry of ``skills/<parts…>``."""
        fd = self._open_dir(parts)
        try:
            with os.scandir(fd) as it:
                return [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        finally:
            os.close(fd)

    def scan(self, name: str, sizes: dict[str, int] | None = None) -> tuple[dict[str, tuple[int, bytes]], list[str]]:
        """Every regular file of ``skills/<name>`` as ``rel → (mode, blob id)``, plus what is not one.

        ``sizes``, when given, is filled with each file's size in bytes.
        """
        files: dict[str, tuple[int, bytes]] = {}
        problems: list[str] = []
        if not self.exists(name):
            return files, problems
        stack: list[tuple[str, ...]] = [(name,)]
        while stack:
            parts = stack.pop()
            rel = "/".join(parts[1:]) + "/" if len(parts) > 1 else ""
            try:
                fd = self._open_dir(parts)
            except LedgerError as exc:
                problems.append(exc.message)
                continue
            except FileNotFoundError:  # renamed or removed beside us, after its parent was listed
                problems.append(f"skills/{name}/{rel or ''} changed while it was read")
                continue
            try:
                with os.scandir(fd) as it:
                    entries = list(it)
                for entry in entries:
                    path = f"{rel}{entry.name}"
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        problems.append(f"skills/{name}/{path} changed while it was read")
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append((*parts, entry.name))
                    elif stat.S_ISREG(st.st_mode):
                        try:
                            ffd = os.open(entry.name, _FILE, dir_fd=fd)
                        except OSError as exc:
                            problems.append(f"skills/{name}/{path}: {exc.strerror}")
                            continue
                        try:
                            fst = os.fstat(ffd)
                            data = read_limited(ffd, 1 << 31, f"skills/{name}/{path}")
                        finally:
                            os.close(ffd)
                        mode = MODE_EXEC if fst.st_mode & stat.S_IXUSR else MODE_FILE
                        files[path] = (mode, blob_id(data))
                        if sizes is not None:
                            sizes[path] = len(data)
                    elif stat.S_ISLNK(st.st_mode):
                        problems.append(f"skills/{name}/{path} is a symbolic link")
                    else:
                        problems.append(f"skills/{name}/{path} is a special file")
            finally:
                os.close(fd)
        return files, problems

    # ------------------------------------------------------------------ checks

    def check(self, name: str, states: list[FileMap | None], seen: dict[str, FileMap] | None = None) -> list[str]:
        """What on disk is neither of ``states`` (``None``: the skill absent), file by file.

        A normal write passes ``[old]``; a roll-forward passes ``[old, new]``, since
        an interrupted materialisation leaves each file in one state or the other.
        ``seen`` keeps what was found, for :meth:`materialize` (one scan a skill, not two).
        """
        files, problems = self.scan(name)
        if seen is not None and not problems:
            seen[name] = files
        wanted = [s for s in states if s is not None]
        for rel, spec in sorted(files.items()):
            if not any(s.get(rel) == spec for s in wanted):
                known = any(rel in s for s in wanted)
                problems.append(f"skills/{name}/{rel} was {'edited' if known else 'added'} by hand")
        # A file every state has, with the same content, is never removed by a write: gone means deleted by hand.
        if wanted and len(wanted) == len(states):
            for rel, spec in sorted(wanted[0].items()):
                if rel not in files and all(s.get(rel) == spec for s in wanted):
                    problems.append(f"skills/{name}/{rel} was deleted by hand")
        return problems

    # ------------------------------------------------------------------ writes

    def materialize(
        self, name: str, new: FileMap | None, read_blob: Callable[[bytes], bytes], have: FileMap | None = None
    ) -> None:
        """Make ``skills/<name>`` hold exactly ``new`` (``None``: remove it).  Call :meth:`check` first;
        ``have`` is what it found there, under the same lock."""
        if new is None:
            if self.exists(name):
                self._remove(self._skills, name)
            return
        if have is None:
            have, problems = self.scan(name)
            if problems:
                raise TreeError(problems[0], hint="run 'ledger recover' to see and settle it")
        # Remove first, so a path that turns from a directory into a file (or back) has room.
        for rel in sorted(set(have) - set(new), reverse=True):
            parts = (name, *rel.split("/"))
            parent = self._open_dir(parts[:-1])
            try:
                os.unlink(parts[-1], dir_fd=parent)
            finally:
                os.close(parent)
        if have or self.exists(name):
            self._prune((name,), keep=set(new))
        for rel, (mode, sha) in sorted(new.items()):
            if have.get(rel) == (mode, sha):
                continue
            self.write((name, *rel.split("/")), read_blob(sha), 0o755 if mode == MODE_EXEC else 0o644)

    def write(self, parts: tuple[str, ...], data: bytes, perm: int) -> None:
        """Atomically replace ``skills/<parts…>``: temp file (``O_EXCL``) then a descriptor-relative rename."""
        parent = self._open_dir(parts[:-1], create=True)
        try:
            tmp = self._tmp_fd()
            name = secrets.token_hex(12)
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, perm, dir_fd=tmp)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, perm)  # the umask must not decide the mode that gets hashed
            finally:
                os.close(fd)
            try:
                os.rename(name, parts[-1], src_dir_fd=tmp, dst_dir_fd=parent)
            except OSError as exc:
                os.unlink(name, dir_fd=tmp)
                if exc.errno == errno.EXDEV:
                    raise StoreError("skills/ and .ledger/ are on different filesystems; keep them together") from exc
                raise _refuse(exc, "skills/" + "/".join(parts)) from exc
        finally:
            os.close(parent)

    def move_aside(self, name: str, dest: Path) -> None:
        """Move ``skills/<name>`` whole into ``dest`` (a new directory under ``.ledger/``)."""
        dest.mkdir(parents=True, exist_ok=True)
        dfd = os.open(dest, _DIR)
        try:
            os.rename(name, name, src_dir_fd=self._skills, dst_dir_fd=dfd)
        finally:
            os.close(dfd)

    def clear_tmp(self) -> None:
        """Drop temp files a killed writer left; only writers holding the brain lock create them."""
        tmp = self._control / "tmp"
        if tmp.is_dir() and not tmp.is_symlink():
            fd = self._tmp_fd()
            for entry in os.listdir(fd):
                self._remove(fd, entry)

    def _prune(self, parts: tuple[str, ...], keep: set[str]) -> None:
        """Remove directories under ``skills/<parts…>`` that hold nothing in ``keep``."""
        prefixes = {"/".join(p.split("/")[:i]) for p in keep for i in range(1, p.count("/") + 1)}
        for rel in self._dirs(parts):
            if rel not in prefixes:
                sub = (*parts, *rel.split("/"))
                parent = self._open_dir(sub[:-1])
                try:
                    os.rmdir(sub[-1], dir_fd=parent)
                except OSError:
                    pass  # not empty: something check() accounted for
                finally:
                    os.close(parent)

    def _dirs(self, parts: tuple[str, ...]) -> Iterator[str]:
        """Subdirectories of ``skills/<parts…>``, deepest first."""
        found: list[str] = []
        stack = [""]
        while stack:
            rel = stack.pop()
            for name, is_dir in self.listdir((*parts, *rel.split("/")) if rel else parts):
                if is_dir:
                    path = f"{rel}/{name}" if rel else name
                    found.append(path)
                    stack.append(path)
        yield from sorted(found, key=lambda p: -p.count("/"))

    @staticmethod
    def _remove(dir_fd: int, name: str) -> None:
        """Remove ``name`` under ``dir_fd`` with everything below it, unlinking links, never following them.

        Iterative, holding one descriptor per level, so depth is bounded only by the path rules.
        """
        if not stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            os.unlink(name, dir_fd=dir_fd)
            return
        stack: list[tuple[int, str, int, list[str]]] = []

        def push(parent: int, child: str) -> None:
            fd = os.open(child, _DIR, dir_fd=parent)
            subdirs = []
            for entry in os.listdir(fd):
                if stat.S_ISDIR(os.stat(entry, dir_fd=fd, follow_symlinks=False).st_mode):
                    subdirs.append(entry)
                else:
                    os.unlink(entry, dir_fd=fd)
            stack.append((parent, child, fd, subdirs))

        try:
            push(dir_fd, name)
            while stack:
                parent, child, fd, subdirs = stack[-1]
                if subdirs:
                    push(fd, subdirs.pop())
                    continue
                stack.pop()
                os.close(fd)
                os.rmdir(child, dir_fd=parent)
        finally:
            for _, _, fd, _ in stack:
                os.close(fd)


def clear_ref_locks(git_dir: Path, refs: tuple[str, ...]) -> list[str]:
    """Remove ``<ref>.lock`` files of the ledger's own refs; call only under the brain's writer lock."""
    cleared = []
    for ref in refs:
        lock = git_dir / (ref + ".lock")
        try:
            lock.unlink()
            cleared.append(ref)
        except FileNotFoundError:
            pass
    return cleared
