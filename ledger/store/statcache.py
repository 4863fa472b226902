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

import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any

from ledger._fs import SUPPLY, cache_path, read_cache_json, write_cache
from ledger._paths import current_keys, stat_fields, stat_key

__all__ = ["StatCache", "remember_withheld", "signature", "withheld_at"]

_FORMAT = 3  # columns, not a dict per skill: 10,000 entries load in 6 ms, not 28
_RACY_NS = 2_000_000_000


def signature(skill_dir: Path) -> tuple[list[str], str, int] | None:
    """The paths of a skill directory's whole tree (directories and files), their ``lstat`` key
    (:func:`ledger._paths.stat_key`), and the newest mtime; ``None`` if it holds a link or special file."""
    paths: list[str] = []
    rows: list[tuple[int, ...]] = []
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
        rows.append(stat_fields(st))
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
                rows.append(stat_fields(est))
                newest = max(newest, est.st_mtime_ns)
            else:
                return None  # a link or special file: the slow path explains what is wrong
    return paths, stat_key(rows), newest


class StatCache:
    """``name → {"paths", "stat", "digest", "info"}`` in ``.ledger/cache/stat-v1.json``; saved only when it changed.

    Call :meth:`validate` with the skill names on disk first: it re-``lstat``s every
    cached tree in one batch and drops the entries that no longer match.  ``clean``
    records a head commit that every remaining entry was found equal to; any change to
    an entry forgets it (see :meth:`is_clean`).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._changed = False
        self._clean: dict[str, str] | None = None
        self._entries: dict[str, dict[str, Any]] = {}
        loaded = read_cache_json(path, _loaded)  # missing, corrupt, an older layout: a miss (ledger._fs)
        if loaded is not None:
            self._entries, self._clean = loaded

    def validate(self, skills_dir: Path, names: list[str]) -> bool:
        """Drop every entry that is not in ``names`` or whose tree changed; ``True`` if each of
        ``names`` still has an entry (so nothing on disk needs reading)."""
        self.keep_only(set(names))
        entries = self._entries
        cached = [n for n in names if n in entries]
        rows = [entries[n] for n in cached]
        keys = current_keys(skills_dir, cached, [row["paths"] for row in rows])
        for name in [n for n, row, key in zip(cached, rows, keys, strict=True) if key != row["stat"]]:
            self._drop(name)
        return len(entries) == len(names)

    def get(self, name: str, key: str) -> Any:
        """The cached ``key`` ("digest" or "info") of skill ``name``, after :meth:`validate`."""
        entry = self._entries.get(name)
        return None if entry is None else entry.get(key)

    def put(self, name: str, sig: tuple[list[str], str, int] | None, started_ns: int, **values: Any) -> None:
        """Remember ``values`` for a tree whose ``sig`` was taken before its bytes were read at ``started_ns``."""
        if sig is None or sig[2] >= started_ns - _RACY_NS:
            return  # not a plain tree, or racily clean: compute again next time
        entry = self._entries.get(name)
        if entry is None or entry["stat"] != sig[1] or entry["paths"] != sig[0]:
            entry = self._entries[name] = {"paths": sig[0], "stat": sig[1]}
            self._clean = None
        entry.update(values)
        self._changed = True

    def keep_only(self, names: set[str]) -> None:
        for gone in set(self._entries) - names:
            self._drop(gone)

    def _drop(self, name: str) -> None:
        del self._entries[name]
        self._clean = None
        self._changed = True

    def is_clean(self, commit: str) -> str | None:
        """The bundle root of ``commit`` if every cached skill was found equal to it, else ``None``.

        Sound only after :meth:`validate` returned ``True``: the entries then cover exactly
        the skills on disk, each unchanged since it was read, and none has changed since
        they were all compared with ``commit`` (a change drops the record).
        """
        if self._clean is not None and self._clean.get("commit") == commit:
            return self._clean.get("root")
        return None

    def mark_clean(self, commit: str, root: str) -> None:
        """Record that every entry equals snapshot ``commit``, whose bundle root is ``root``."""
        if self._clean != {"commit": commit, "root": root}:
            self._clean = {"commit": commit, "root": root}
            self._changed = True

    def save(self) -> None:
        if not self._changed:
            return
        doc = _to_columns(self._entries)
        if self._clean is not None:
            doc["clean"] = self._clean
        write_cache(self.path, json.dumps(doc, separators=(",", ":")).encode())
        self._changed = False


def _to_columns(entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    shapes: dict[str, int] = {}  # most skills have the same paths ("", "SKILL.md"): stored once
    names = list(entries)
    rows = [entries[n] for n in names]
    return {
        "format": _FORMAT,
        "names": names,
        "shape": [shapes.setdefault("\0".join(e["paths"]), len(shapes)) for e in rows],
        "shapes": [k.split("\0") for k in shapes],
        "stat": [e["stat"] for e in rows],
        "digest": [e.get("digest") for e in rows],
        "info": [e.get("info") for e in rows],
    }


def _loaded(doc: Any) -> tuple[dict[str, dict[str, Any]], dict[str, str] | None] | None:
    """The entries and clean record of a cache document; ``None`` if it is of another layout."""
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        return None
    entries = _from_columns(doc)
    clean = doc.get("clean")
    return entries, (clean if entries and isinstance(clean, dict) else None)


def _from_columns(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    shapes = doc["shapes"]
    out: dict[str, dict[str, Any]] = {}
    for name, shape, key, digest, info in zip(
        doc["names"], doc["shape"], doc["stat"], doc["digest"], doc["info"], strict=True
    ):
        entry = out[name] = {"paths": shapes[shape], "stat": key}
        if digest is not None:
            entry["digest"] = digest
        if info is not None:
            entry["info"] = info
    return out


# ---------------------------------------------------------------------------------------------- withheld names
# The quick path (ledger.fastpath.reads) answers ``index`` and ``skill list`` from the working tree's stat entries; a
# skill the head's ``supply`` record withholds (ledger.brain.withholding) must not be listed, and the quick
# path loads no brain.  So the full path remembers, per head commit, the record's blob id and the names it
# withholds; the quick path trusts that for the same commit, or for another commit whose top tree (read from
# its loose objects) names the same record, or none.  Anything else is unknown: the full path answers.


def remember_withheld(control: Path, commit: str, blob: str | None, names: list[str]) -> None:
    """Keep what head ``commit``'s supply record (blob id ``blob``, None: none) withholds."""
    path = cache_path(control, *SUPPLY)
    doc = {"commit": commit, "blob": blob, "withheld": sorted(names)}
    if read_cache_json(path, lambda held: held == doc):
        return
    write_cache(path, json.dumps(doc).encode())


def withheld_at(control: Path, git_dir: Path, commit: str) -> frozenset[str] | None:
    """The names head ``commit``'s supply record withholds, or None when that is not known cheaply."""
    kept = read_cache_json(cache_path(control, *SUPPLY), _withheld)
    if kept is not None and kept[0] == commit:
        return kept[2]
    try:
        tree = _loose(git_dir, commit, b"commit")
        if tree is None or not tree.startswith(b"tree "):
            return None
        top = _loose(git_dir, tree[5:45].decode(), b"tree")
    except (OSError, ValueError, zlib.error):
        return None
    if top is None:
        return None
    at = 0
    while at < len(top):  # <mode> <name>\0<20-byte id>
        nul = top.index(b"\0", at)
        mode, _, name = top[at:nul].partition(b" ")
        if name == b"supply":
            blob = top[nul + 1 : nul + 21].hex()
            return kept[2] if kept is not None and kept[1] == blob and mode == b"100644" else None
        at = nul + 21
    return frozenset()  # no record: nothing is withheld


def _withheld(doc: Any) -> tuple[str, str | None, frozenset[str]] | None:
    if type(doc["withheld"]) is not list:
        return None
    kept = (doc["commit"], doc["blob"], frozenset(doc["withheld"]))
    ok = type(kept[0]) is str and (kept[1] is None or type(kept[1]) is str) and all(type(n) is str for n in kept[2])
    return kept if ok else None


def _loose(git_dir: Path, sha: str, kind: bytes) -> bytes | None:
    """A loose object's content if it is one of ``kind``; None if it is not loose (packed)."""
    if len(sha) != 40:
        return None
    try:
        raw = zlib.decompress((git_dir / "objects" / sha[:2] / sha[2:]).read_bytes())
    except FileNotFoundError:
        return None
    header, _, data = raw.partition(b"\0")
    return data if header.split(b" ")[0] == kind else None
