"""Directories reached only through descriptors, from ``/`` down, never following a link; the
renames that move a whole skill in one step (``renameat2``); and the names a target may hold.

The low half of :mod:`ledger.folders.folder`: nothing here knows what a skill is.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
from typing import Any

from ledger.errors import LedgerError

__all__ = [
    "DIR_FLAGS",
    "EXCHANGE",
    "NOREPLACE",
    "TargetError",
    "descend",
    "open_path",
    "printable",
    "renameat2",
    "utf8",
    "work_dir",
]

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NOREPLACE, EXCHANGE = 1, 2  # renameat2(2) flags
_DIR = DIR_FLAGS


class TargetError(LedgerError):
    """A target cannot be read or written safely."""


@functools.cache
def _libc_renameat2() -> Any:
    return getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)  # glibc 2.28+, musl 1.2.5+


def renameat2(src_fd: int, src: str, dst_fd: int, dst: str, flags: int) -> None:
    fn = _libc_renameat2()
    if fn is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    if fn(src_fd, src.encode(), dst_fd, dst.encode(), flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), dst)


def open_path(path: str) -> int:
    """A descriptor of directory ``path`` (absolute), reached from ``/`` with no link followed."""
    if not os.path.isabs(path):
        raise TargetError(f"{path} is not an absolute path")
    root = os.open("/", _DIR)
    try:
        return descend(root, path.split("/"), path, create=False)
    finally:
        os.close(root)


def descend(fd: int, parts: list[str], where: str, *, create: bool) -> int:
    """A new descriptor of ``fd``/``parts``, each part opened without following a link (made first
    when ``create``); the caller still owns ``fd``."""
    fd = os.dup(fd)
    try:
        for part in [p for p in parts if p]:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                nfd = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise TargetError(
                        f"{where}: {part!r} is a symbolic link or not a folder",
                        hint="a link is never followed: link the target by its real path, or remove the link",
                    ) from None
                raise
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def work_dir(target_fd: int, path: str, work: str) -> tuple[int, str]:
    """The work folder's descriptor and path: ``work`` (in the brain's ``.ledger/``) when it is on the
    target's filesystem, else ``.<name>.ledger-sync`` beside the target; never inside it."""
    dev = os.fstat(target_fd).st_dev
    os.makedirs(work, mode=0o700, exist_ok=True)
    fd = open_path(os.path.realpath(work))
    if os.fstat(fd).st_dev == dev:
        return fd, work
    os.close(fd)
    parent, base = os.path.split(path.rstrip("/"))
    if parent:
        pfd = open_path(parent)
        try:
            if os.fstat(pfd).st_dev == dev:
                sibling = f".{base}.ledger-sync"
                return descend(pfd, [sibling], f"{parent}/{sibling}", create=True), f"{parent}/{sibling}"
        finally:
            os.close(pfd)
    raise TargetError(
        f"{path} is a filesystem of its own, apart from the brain: a skill cannot be renamed into "
        "it in one step from anywhere a runtime does not scan",
        hint="link a folder inside it, or keep the brain on the same filesystem",
    )


def utf8(name: str, where: str) -> None:
    """Refuse a name that is not UTF-8 (``os.scandir`` hands it over with surrogate escapes): git
    and the ledger's paths are UTF-8, so such a file is left where it is, and named."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise TargetError(
            f"{printable(where.rstrip('/') + '/' + name if where else name)}: the name is not "
            "valid UTF-8, so it cannot be recorded; the skill is left as it is",
            hint="rename the file to a UTF-8 name",
        ) from None


def printable(path: str) -> str:
    """A path as it can be shown: undecodable bytes as ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
