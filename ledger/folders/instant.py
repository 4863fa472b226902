"""A target known to be in step from its metadata alone: the **instant record** a ``ledger sync``
pass leaves for each target, so that the next pass ``lstat``s what it names instead of reading
the target (docs/layouts.md, "No-op syncs").

``.ledger/cache/instant-<target>.json`` is saved only by a pass that found the whole target in
step with the head (every skill projected there in place and unchanged; nothing recorded,
projected, removed, in conflict, left alone or under way), after its manifest; every pass
deletes the old one before it does anything else.  It holds:

- the folders the pass listed to find the skills, the folders it looked into for a ``SKILL.md``
  (and a Hermes home's category files), and, for each skill, the paths of its folders and files:
  each group with the key of their ``lstat`` fields (:func:`ledger._paths.stat_key`: mode, inode,
  size, mtime, ctime, as git's index compares them; in C by :func:`ledger._native.stat_keys`);
- digests of all else the pass depended on: ``targets.json``, ``config.json``, the brain's
  ``syncignore``, the target's ``.ledgerignore``, and the manifest as the pass saved it;
- ``commit``: the head commit the target was found in step with.

A folder's mtime and ctime change when an entry is added, removed or renamed in it; a file's
when it is written, replaced or chmod'ed; a link swapped in changes the mode.  A group is keyed
only when every path in it is older, by :data:`RACY_NS`, than the moment it was listed or read
(git's "racily clean": an edit in the same clock tick would leave the fields as they were); it is
read again next time, and the pass saves no record.  What no ``lstat`` field shows (same size,
mtime restored *and* ctime unchanged: a clock set back, a raw device write) is read by
``ledger sync --full``, which reads every file (ADR 30).

The record is bookkeeping: lost or corrupt, the next pass reads the target as it always did.
This module imports nothing heavy: :mod:`ledger.fastpath` reads the records before click and the
write engine load, and answers a no-op ``ledger sync`` from them (:func:`in_step`).
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterable, Mapping

from blake3 import blake3

from ledger._fs import CACHE_DIR, atomic_write, cache_name, instant_record
from ledger._json import loads_local
from ledger._paths import current_keys, stat_fields, stat_key

__all__ = [
    "LISTS",
    "RACY_NS",
    "SCAN",
    "Group",
    "Record",
    "controls",
    "digest_of",
    "in_step",
    "read_file",
    "read_ignore",
    "record_file",
]

RACY_NS = 2_000_000_000  # a path is trusted once it is this much older than its reading (FAT keeps 2 s mtimes)
LISTS = ("recorded", "projected", "removed", "conflicts", "left_alone", "rescued", "ignored_held")  # of a report
SCAN = "."  # the group of the folders a pass listed to find skills: the target's own folder
_FORMAT = 1
_DECLINE = object()  # read_ignore: a .ledgerignore no record can stand for (a link, a fifo, a huge file)
_IGNORE_FILE = ".ledgerignore"
_STAGING = ".ledger-staging"


class Group:
    """Paths under one folder of a target with their ``lstat`` fields, as one pass saw them;
    ``since`` is when it began to list or read them (now, unless given: every field must be
    older than that by :data:`RACY_NS`)."""

    __slots__ = ("rows", "since")

    def __init__(self, since: int | None = None) -> None:
        self.rows: dict[str, tuple[int, ...]] = {}
        self.since = time.time_ns() if since is None else since

    def add(self, rel: str, st: os.stat_result) -> None:
        """``rel``'s fields, unless it has some already: the first look is the one a reading relied on."""
        self.rows.setdefault(rel, stat_fields(st))

    def without(self, paths: Iterable[str]) -> Group:
        """The same group less ``paths`` (keyed in another group already)."""
        out = Group(self.since)
        out.rows = dict(self.rows)
        for rel in paths:
            out.rows.pop(rel, None)
        return out

    def sealed(self) -> tuple[list[str], str] | None:
        """``(paths, key)``, or None while any path is racily clean (written within :data:`RACY_NS`
        of its reading, or dated in the future)."""
        limit = self.since - RACY_NS
        if not self.rows or any(max(r[3], r[4]) >= limit for r in self.rows.values()):
            return None
        paths = sorted(self.rows)
        return paths, stat_key(self.rows[p] for p in paths)


def record_file(control: str, name: str) -> str:
    """Where target ``name``'s record is kept (``sync-<name>.json`` beside it is the manifest's stat
    entries: a target may be named ``x.instant``, so the record's name starts differently)."""
    return f"{control}/{CACHE_DIR}/{cache_name(*instant_record(name))}"


def digest_of(data: bytes | None) -> str:
    """A file's digest as a record names it: BLAKE3 (``-``: no such file)."""
    return "-" if data is None else blake3(data).hexdigest()


def read_file(path: str) -> bytes | None:
    """A file's bytes, or None if there is none."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def controls(control: str, ignore: bytes | None) -> str:
    """One digest (BLAKE3: hashlib's OpenSSL takes longer to load than this whole check) of what a
    pass over a target depends on besides the target and its manifest."""
    h = blake3()
    for data in (
        read_file(f"{control}/targets.json"),
        read_file(f"{control}/config.json"),
        read_file(f"{control}/syncignore"),
        ignore,
    ):
        h.update(b"-" if data is None else b"%d:" % len(data) + data)
    return h.hexdigest()


def read_ignore(path: str) -> object:
    """The target's ``.ledgerignore`` as a pass reads it (None: there is none), or :data:`_DECLINE`."""
    try:
        st = os.lstat(f"{path}/{_IGNORE_FILE}")
    except FileNotFoundError:
        return None
    except OSError:
        return _DECLINE
    if not stat.S_ISREG(st.st_mode) or st.st_size > 1 << 20:
        return _DECLINE
    try:
        fd = os.open(f"{path}/{_IGNORE_FILE}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return _DECLINE
    try:
        data = b""
        while chunk := os.read(fd, 1 << 20):
            data += chunk
        return data
    finally:
        os.close(fd)


def real_folder(path: str) -> bool:
    """Whether every part of absolute ``path`` is a folder and none a link (what a pass opens)."""
    if not path.startswith("/"):
        return False
    here = ""
    for part in path.split("/"):
        if not part:
            continue
        here += "/" + part
        try:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return False
        except OSError:
            return False
    return True


class Record:
    """One target's instant record (see the module's doc), in columns: skill ``names[i]`` is in folder
    ``dirs[i]``, the paths keyed under it are ``shapes[shape[i]]`` (shared by skills alike), and their
    key is ``keys[i]``; ``scan`` is ``(paths under the target, key)``."""

    def __init__(
        self,
        controls: str,
        manifest: str,
        commit: str,
        scan: tuple[list[str], str],
        skills: Mapping[str, tuple[str, list[str], str]],
    ) -> None:
        self.controls, self.manifest, self.commit, self.scan = controls, manifest, commit, scan
        self.names = sorted(skills)
        self.dirs = [skills[k][0] for k in self.names]
        index: dict[tuple[str, ...], int] = {}
        self.shape = [index.setdefault(tuple(skills[k][1]), len(index)) for k in self.names]
        self.shapes = [list(s) for s in index]
        self.keys = [skills[k][2] for k in self.names]

    @classmethod
    def load(cls, path: str) -> Record | None:
        """The record at ``path``; None if there is none, or it is damaged in any way."""
        try:
            with open(path, "rb") as fh:
                doc = loads_local(fh.read())
            if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
                return None
            rec = cls.__new__(cls)
            rec.controls, rec.manifest, rec.commit = doc["controls"], doc["manifest"], doc["commit"]
            rec.scan = (doc["scan"], doc["scan_key"])
            rec.names, rec.dirs, rec.shape, rec.shapes, rec.keys = (
                doc[k] for k in ("names", "dirs", "shape", "shapes", "keys")
            )
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return None  # a corrupt record is no record
        strings = (rec.controls, rec.manifest, rec.commit, rec.scan[1])
        columns = (rec.names, rec.dirs, rec.keys, rec.scan[0], *rec.shapes)
        if not (
            all(type(v) is str for v in strings)
            and all(type(c) is list for c in (*columns, rec.shapes, rec.shape))
            and len(rec.names) == len(rec.dirs) == len(rec.keys) == len(rec.shape)
            and all(type(v) is str for c in columns for v in c)
            and all(type(i) is int and 0 <= i < len(rec.shapes) for i in rec.shape)
        ):
            return None
        return rec

    def save(self, path: str) -> None:
        """Written whole and renamed into place; no fsync: it is checked on every use."""
        doc = {
            "format": _FORMAT,
            "controls": self.controls,
            "manifest": self.manifest,
            "commit": self.commit,
            "scan": self.scan[0],
            "scan_key": self.scan[1],
            "names": self.names,
            "dirs": self.dirs,
            "shape": self.shape,
            "shapes": self.shapes,
            "keys": self.keys,
        }
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, json.dumps(doc, separators=(",", ":")).encode(), durable=False)

    def unchanged(self, base: str) -> bool:
        """Whether every path it keys under ``base`` still has the ``lstat`` fields it recorded."""
        got = current_keys(base, [SCAN, *self.dirs], [self.scan[0], *(self.shapes[i] for i in self.shape)])
        return got == [self.scan[1], *self.keys]


def in_step(control: str, name: str, path: str, commit: str, *, rec: Record | None = None) -> bool:
    """Whether a pass over target ``name`` (folder ``path``) would find nothing to do with head
    ``commit``: its record says the whole target was in step with ``commit``, nothing it depends
    on has changed since, and no pass is under way or was killed in it."""
    rec = rec or Record.load(record_file(control, name))
    if rec is None or rec.commit != commit:
        return False
    if os.path.lexists(f"{control}/sync/{name}.pending.json") or os.path.lexists(
        f"{control}/sync/work/{name}/{_STAGING}"
    ):
        return False  # a killed pass to settle, or its staging to tidy
    parent, base = os.path.split(path.rstrip("/"))
    if os.path.lexists(f"{parent}/.{base}.ledger-sync/{_STAGING}") or not real_folder(path):
        return False
    ignore = read_ignore(path)
    if ignore is _DECLINE or rec.controls != controls(control, ignore):  # type: ignore[arg-type]
        return False
    if rec.manifest != digest_of(read_file(f"{control}/sync/{name}.json")):
        return False
    return rec.unchanged(path)
