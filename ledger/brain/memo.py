"""What the listings read from each git object, kept on disk by object id for the next process.

A git object id names the object's bytes, so what a listing computes from an object (a
skill tree's SKILL.md files, what a SKILL.md's frontmatter says) cannot change while the
code computing it stays the same: an entry is never stale, whatever was written since,
by whichever process. An :class:`ObjectMemo` keeps such values under ``.ledger/cache/``:

- the file is tagged with a digest of the source of the code that computes its values
  (the modules named by its owner, and PyYAML's files); a file whose tag differs (the
  ledger or PyYAML changed), a corrupt, truncated or foreign file, and an entry of the
  wrong shape are each a miss, read again from the store, never an error;
- only values JSON carries exactly are kept (text, whole numbers, booleans, null, lists
  and string-keyed maps of those); anything else (a YAML date, a set) is computed in
  every process and kept in memory only;
- it is written whole, to a temporary file renamed over the old one, so a reader sees
  the old file or the new one; two processes saving at once lose entries, never mix them.

The memo is bookkeeping: deleting the file loses nothing but time. A fresh process reads
it once, lazily (a command that lists nothing never opens it), and a listing at a new
head reads from the store only the objects the memo has not seen (ADR 28).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import math
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ledger._fs import read_cache, write_cache
from ledger.store import gitstore as gs
from ledger.store.objectdb import MODE_DIR, parse_tree

__all__ = ["ObjectMemo", "files_of_trees", "plain"]

_FORMAT = 1
_SAVE_EVERY = 32  # new entries worth a save: fewer are re-read by the next process in well under 10 ms
_MAX_DEPTH = 16
_MAX_INT = 1 << 63


def plain(value: Any, depth: int = 0) -> bool:
    """Whether JSON carries ``value`` exactly: it loads back equal, of the same types."""
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return -_MAX_INT < value < _MAX_INT
    if isinstance(value, float):
        return math.isfinite(value)
    if depth >= _MAX_DEPTH:
        return False
    if type(value) is list:
        return all(plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) is str and plain(v, depth + 1) for k, v in value.items())
    return False


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError("a number beyond a double's range")
    return number


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Every value this reads back is :func:`plain` (a file holding NaN, 1e400 or an integer past Python's
# digit limit does not load at all), so an entry needs only its shape checked.
_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_constant)


def _tag(sources: Sequence[str]) -> str | None:
    """A digest of the named modules' source files and of PyYAML's files; ``None`` (keep nothing on
    disk) when a source cannot be read."""
    digest = hashlib.sha256(f"{_FORMAT} {sys.version_info[:2]}".encode())
    try:
        for name in (*sources, __name__):
            origin = sys.modules[name].__file__ if name in sys.modules else None
            if origin is None:
                return None
            digest.update(name.encode() + b"\0" + Path(origin).read_bytes())
        spec = importlib.util.find_spec("yaml")  # not imported: a listing served from the memo parses nothing
        if spec is None or not spec.submodule_search_locations:
            return None
        where = Path(next(iter(spec.submodule_search_locations)))
        for entry in sorted(os.listdir(where)):  # the C loader (_yaml*.so) present or not, and the version
            digest.update(entry.encode() + b"\0")
        digest.update((where / "__init__.py").read_bytes())
    except (OSError, ValueError, ImportError):
        return None
    return digest.hexdigest()


class ObjectMemo:
    """Object id → a JSON value, in memory and in ``path`` (``None``: memory only).

    ``sources`` names the modules whose code computes the values (see the module doc).
    :meth:`get` returns ``None`` for a miss; values are never ``None``.
    """

    def __init__(self, path: Path | None, sources: Sequence[str]) -> None:
        self.path, self.sources = path, tuple(sources)
        self.unsaved = 0  # entries added since the file was read or written
        self._entries: dict[str, Any] | None = None  # hex id → value; read on first use
        self._tag: str | None = None
        self._on_disk = False  # the file was read whole

    def _load(self) -> dict[str, Any]:
        if self._entries is not None:
            return self._entries
        self._entries = {}
        self._tag = _tag(self.sources) if self.path is not None else None
        if self._tag is None:
            return self._entries
        tag = self._tag

        def decode(data: bytes) -> dict[str, Any] | None:
            doc = _DECODER.decode(data.decode("utf-8"))
            if (
                isinstance(doc, dict)
                and doc.get("format") == _FORMAT
                and doc.get("tag") == tag
                and isinstance(doc.get("entries"), dict)
            ):
                return doc["entries"]
            return None

        held = read_cache(self.path, decode)  # type: ignore[arg-type]  # missing, corrupt, another tag: a miss
        if held is not None:
            self._entries, self._on_disk = held, True
        return self._entries

    def get(self, key: bytes) -> Any:
        """The value kept for ``key`` (:func:`plain`, of whatever shape the file held), or ``None``."""
        return self._load().get(key.hex())

    def put(self, key: bytes, value: Any) -> None:
        """Remember ``value`` (kept only if :func:`plain`; never ``None``)."""
        if value is not None and plain(value):
            self._load()[key.hex()] = value
            self.unsaved += 1

    def forget(self) -> bool:
        """Drop every entry, in memory and (at the next :meth:`save`) on disk: for an owner whose
        entries led it to an object the store does not hold. Whether any entry had come from disk."""
        had = self._on_disk and bool(self._entries)
        self._entries, self._on_disk = {}, False
        return had

    def __len__(self) -> int:
        return len(self._load())

    def save(self, live: Iterable[bytes] | None = None, *, force: bool = False) -> None:
        """Write the memo when enough is new to be worth it (or ``force``); ``live``: the ids still
        in use, to which a memo grown past twice their number is cut first."""
        entries = self._load()
        if self.path is None or self._tag is None or not self.unsaved:
            return
        if not force and self.unsaved < _SAVE_EVERY and self._on_disk:
            return
        if live is not None:
            keep = {k.hex() for k in live}
            if len(entries) > 2 * len(keep) + 1024:
                entries = self._entries = {k: v for k, v in entries.items() if k in keep}
        doc = {"format": _FORMAT, "tag": self._tag, "entries": entries}
        with contextlib.suppress(ValueError):
            write_cache(self.path, json.dumps(doc, separators=(",", ":")).encode("ascii"))
        self.unsaved, self._on_disk = 0, True


def files_of_trees(store: gs.GitStore, trees: Iterable[bytes]) -> dict[bytes, dict[str, tuple[int, bytes]]]:
    """:func:`ledger.store.treehash.files_of` of many trees at once: each level of every tree read
    in one pipelined request to ``git cat-file``, not one round trip per tree (10,000 skills:
    0.3 s less). An object the batch does not find (a pack still being written) is read alone."""
    out: dict[bytes, dict[str, tuple[int, bytes]]] = {}
    level: list[tuple[bytes, bytes, str]] = []  # (the skill's tree, this tree, its path in the skill)
    for tree in trees:
        if tree not in out:
            out[tree] = {}
            level.append((tree, tree, ""))
    while level:
        shas = [sha for _, sha, _ in level]
        found = store.objects.cat.read_many(shas)
        below: list[tuple[bytes, bytes, str]] = []
        for (top, sha, prefix), hit in zip(level, found, strict=True):
            entries = parse_tree(hit[1], sha) if hit is not None and hit[0] == b"tree" else store.read_tree(sha)
            files = out[top]
            for child, mode, name in entries:
                if mode == MODE_DIR:
                    below.append((top, child, f"{prefix}{name}/"))
                else:
                    files[prefix + name] = (mode, child)
        level = below
    return out
