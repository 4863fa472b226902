"""A stat cache for the read commands (status, list, index), as git keeps its index.

``ledger status`` on a 10,000-skill brain read and hashed every byte (0.6 s against
0.12 s for ``git status``), and ``skill list`` parsed every frontmatter, though almost
nothing changes between two calls.  This cache remembers, per skill, the ``lstat`` of
its directory, every subdirectory and every file, with what was computed from them:
the skill's bundle digest, and its index line.  A later call re-``lstat``s the same
paths and reuses the result only if every field still matches.

It is **verified, never trusted** for what gets recorded:

- it serves only read commands; ``snapshot``, every write and ``commit`` read the bytes;
- a directory's mtime changes when an entry is added, removed or renamed, and each
  file's inode, size, mtime and ctime are compared, so an edit, a replacement or a
  symbolic link swapped in (``lstat`` mode) misses the cache;
- stat fields are taken *before* the bytes are read, so a file written during the read
  carries a newer mtime than the one cached and misses next time;
- an entry whose newest mtime is within two seconds of when it was cached is "racily
  clean" (git's term: an edit in the same clock tick would leave the fields as they
  were) and is not stored.

The cache is bookkeeping: deleting ``.ledger/cache/stat-v1.json`` loses nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from array import array
from pathlib import Path
from typing import Any

from blake3 import blake3

__all__ = ["StatCache", "signature"]

_RACY_NS = 2_000_000_000


def signature(skill_dir: Path) -> tuple[list[str], str, int] | None:
    """The paths of a skill directory's whole tree (directories and files), a digest of their
    lstat fields, and the newest mtime; ``None`` if it holds a link or special file."""
    paths: list[str] = []
    fields: list[int] = []
    newest = 0
    stack = [""]
    base = os.fspath(skill_dir)
    while stack:
        rel = stack.pop()
        path = f"{base}/{rel}" if rel else base
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode):
                return None
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return None
        paths.append(rel)
        fields += _fields(st)
        newest = max(newest, st.st_mtime_ns)
        for entry in entries:
            sub = f"{rel}/{entry.name}" if rel else entry.name
            try:
                est = entry.stat(follow_symlinks=False)
            except OSError:
                return None
            if stat.S_ISDIR(est.st_mode):
                stack.append(sub)
            elif stat.S_ISREG(est.st_mode):
                paths.append(sub)
                fields += _fields(est)
                newest = max(newest, est.st_mtime_ns)
            else:
                return None  # a link or special file: the slow path explains what is wrong
    return paths, _key(fields), newest


def _fields(st: os.stat_result) -> tuple[int, ...]:
    size = 0 if stat.S_ISDIR(st.st_mode) else st.st_size
    return st.st_mode, st.st_ino, size, st.st_mtime_ns, st.st_ctime_ns


def _key(fields: list[int]) -> str:
    return blake3(array("q", fields).tobytes()).hexdigest()[:32]


def _current_key(skill_dir: str, paths: list[str]) -> str | None:
    """The lstat digest of ``paths`` now (no directory listing: a directory's mtime covers its entries)."""
    fields: list[int] = []
    for rel in paths:
        try:
            fields += _fields(os.lstat(f"{skill_dir}/{rel}" if rel else skill_dir))
        except OSError:
            return None
    return _key(fields)


class StatCache:
    """``name → {"sig", "digest", "info"}`` in ``.ledger/cache/stat-v1.json``; saved only when it changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._changed = False
        try:
            doc = json.loads(path.read_text())
            self._entries: dict[str, dict[str, Any]] = doc["skills"] if doc.get("format") == 2 else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self._entries = {}

    def get(self, skills_dir: Path, name: str, key: str) -> Any:
        """The cached ``key`` ("digest" or "info") of skill ``name`` if its tree is unchanged, else ``None``."""
        entry = self._entries.get(name)
        if entry is None or key not in entry:
            return None
        if _current_key(f"{os.fspath(skills_dir)}/{name}", entry["paths"]) != entry["stat"]:
            del self._entries[name]
            self._changed = True
            return None
        return entry[key]

    def put(self, name: str, sig: tuple[list[str], str, int] | None, started_ns: int, **values: Any) -> None:
        """Remember ``values`` for a tree whose ``sig`` was taken before its bytes were read at ``started_ns``."""
        if sig is None or sig[2] >= started_ns - _RACY_NS:
            return  # not a plain tree, or racily clean: compute again next time
        entry = self._entries.get(name)
        if entry is None or entry["stat"] != sig[1] or entry["paths"] != sig[0]:
            entry = self._entries[name] = {"paths": sig[0], "stat": sig[1]}
        entry.update(values)
        self._changed = True

    def keep_only(self, names: set[str]) -> None:
        for gone in set(self._entries) - names:
            del self._entries[gone]
            self._changed = True

    def save(self) -> None:
        if not self._changed:
            return
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"format": 2, "skills": self._entries}, separators=(",", ":")))
            os.replace(tmp, self.path)
        self._changed = False


