"""The disk's two rules, for every layer (standard library only): one atomic write, and how a cache file is read.

:func:`atomic_write` is the project's one "write these bytes in place of that file": a temporary file in
the same directory, written whole (and fsynced unless the caller checks the file on every use), then
renamed over the target, so a reader sees the old file or the new one, never a part of either.  No
directory is fsynced: no write the ledger made before had it, and the only pair that needs it (a pack
and its index, :mod:`ledger.store.packwrite`) is not a "write these bytes" and keeps its own.

``.ledger/cache/`` (:mod:`ledger.store.state` is the object over it) holds bookkeeping only: deleting
the directory loses nothing but time.  Its one rule, here so that the fast path, which loads before
the store, reads by the very same rule:

- a file's format version is in its name, ``<stem>-v<N>.<ext>`` (version 0: ``<stem>.<ext>``, the
  names from before versions were named); a reader asks for the one version it understands, so a file
  of an older or unknown version is never opened: a miss;
- a file that is missing, unreadable, truncated, corrupt or of the wrong shape is a miss
  (:func:`read_cache`): never an error, never a wrong answer (a decoder checks what it keys on, the
  object id or head the entry was computed from, and returns ``None`` when it is not the one asked);
- a write lands whole by :func:`atomic_write`, unsynced (a cache is checked on every use), and a write
  that fails is dropped (:func:`write_cache`): the next reader recomputes.
"""

from __future__ import annotations

import contextlib
import os
import zlib

from ledger._json import loads_local

TYPE_CHECKING = False  # typing and pathlib stay out of the fast path's start (a no-op sync is ~30 ms)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = [
    "CACHE_DIR",
    "CATALOG",
    "DIGESTS",
    "EVIDENCE_BATCHES",
    "EVIDENCE_CHECKED",
    "EVIDENCE_FIGURES",
    "EVIDENCE_IDS",
    "HERMES_LISTING",
    "MISS",
    "PENDING",
    "REGRESSIONS",
    "ROOT_INDEX",
    "STAT",
    "SUPPLY",
    "append_cache",
    "atomic_write",
    "cache_name",
    "cache_path",
    "instant_record",
    "read_cache",
    "read_cache_json",
    "sync_stats",
    "write_cache",
]

CACHE_DIR = "cache"  # .ledger/cache/
# What a damaged cache file raises while it is decoded: each is a miss (UnicodeDecodeError and
# json.JSONDecodeError are ValueErrors; RecursionError: a file nested past the parser's stack).
MISS: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    AttributeError,
    RecursionError,
    OverflowError,
    zlib.error,
)


def atomic_write(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None, durable: bool = True) -> None:
    """Replace ``path`` by ``data`` whole: a temporary file beside it, fsynced (unless ``durable`` is
    false: a file checked on every use), then renamed over it.  The new file has ``mode`` (else what
    the umask leaves of 0o666, as ``open`` makes it).  On failure the temporary file is removed and
    the error raised; ``path`` is as it was."""
    target = os.fspath(path)
    folder, name = os.path.split(target)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# Every file of .ledger/cache/, as (stem, version): declared once, here, because the fast path (which may
# not import the store) reads some of them; ledger.store.state names them for everyone else.
CATALOG = ("catalog.json", 1)  # ledger.brain.catalog: what a listing read from each git object
DIGESTS = ("digests.bin", 2)  # ledger.store.treehash: git object id -> bundle digest, appended in sealed blocks
EVIDENCE_BATCHES = ("evidence-batches.bin", 2)  # a log's tree id, its newest record format, each batch's signer, id
EVIDENCE_CHECKED = ("evidence-checked.txt", 1)  # chunk blob ids whose every entry was verified (appended)
EVIDENCE_FIGURES = ("evidence-figures.txt", 1)  # a log's tree id and trust digest, then the figures per skill
EVIDENCE_IDS = ("evidence-ids.bin", 1)  # a log's tree id, its agent, and every outcome id in it
HERMES_LISTING = ("hermes-listing.json", 1)  # ledger.agent.hermes_listing: the Hermes listing, per object
PENDING = ("pending.json", 1)  # the last pending count and what it was counted from (the head, notes, chain)
REGRESSIONS = ("regressions.json", 1)  # the last head whose outcomes flag no regression
ROOT_INDEX = ("root-index.bin", 1)  # ledger.write.snapshots: the head's root index, by skills tree id
STAT = ("stat.json", 1)  # ledger.store.statcache: lstat keys and what was computed from them (format 3 inside)
SUPPLY = ("supply.json", 1)  # the names a head's supply record withholds


def sync_stats(target: str) -> tuple[str, int]:
    """A sync target's stat entries (ledger.sync.targets): version 0, the name it always had."""
    return (f"sync-{target}.json", 0)


def instant_record(target: str) -> tuple[str, int]:
    """A sync target's instant record (ledger.folders.instant): version 0, the name it always had."""
    return (f"instant-{target}.json", 0)


def cache_name(stem: str, version: int) -> str:
    """A cache file's name for format ``version`` of ``stem`` (``"pending.json"``, 1 → ``pending-v1.json``)."""
    base, dot, ext = stem.rpartition(".")
    return stem if version == 0 else f"{base}-v{version}{dot}{ext}"


def cache_path(control: str | os.PathLike[str], stem: str, version: int) -> Path:
    """Where that file lives: ``<control>/cache/<cache_name>`` (``control`` is a brain's ``.ledger``)."""
    from pathlib import Path

    return Path(control) / CACHE_DIR / cache_name(stem, version)


def read_cache(path: str | os.PathLike[str], decode: Callable[[bytes], T | None]) -> T | None:
    """``decode`` of the file's bytes, or ``None`` (a miss) if it is missing, unreadable or ``decode``
    raises any of :data:`MISS` (it returns ``None`` itself for an entry of another key or shape)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        return decode(data)
    except MISS:
        return None


def read_cache_json(path: str | os.PathLike[str], check: Callable[[Any], T | None]) -> T | None:
    """:func:`read_cache` of a JSON file: ``check`` of the parsed document (any shape: ``check``
    looks at what it uses and returns ``None`` for what it does not want)."""
    return read_cache(path, lambda data: check(loads_local(data)))


def append_cache(path: str | os.PathLike[str], data: bytes) -> bool:
    """Append ``data`` to a cache file whose records check themselves (a torn or foreign record is a
    miss to its reader); ``False`` if the disk refused."""
    try:
        os.makedirs(os.path.dirname(os.fspath(path)), exist_ok=True)
        with open(path, "ab") as fh:
            fh.write(data)
    except OSError:
        return False
    return True


def write_cache(path: str | os.PathLike[str], data: bytes) -> bool:
    """Put a cache file in place (:func:`atomic_write`, unsynced), its directory made if need be;
    ``False`` if the disk refused (a cache that is not written is recomputed next time)."""
    try:
        os.makedirs(os.path.dirname(os.fspath(path)), exist_ok=True)
        atomic_write(path, data, durable=False)
    except OSError:
        return False
    return True
