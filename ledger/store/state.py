"""The one cache: ``.ledger/cache/``, bookkeeping the ledger keeps between processes (as dvc-data's ``state``).

Every file under it is read and written through :class:`State`, by the one rule of
:mod:`ledger._fs` (which the fast path, loading before the store, reads by too):

- **where**: ``<brain>/.ledger/cache/<file>``, each file declared once in :mod:`ledger._fs`
  (``CATALOG``, ``DIGESTS``, ``EVIDENCE_*``, ``HERMES_LISTING``, ``PENDING``, ``REGRESSIONS``,
  ``ROOT_INDEX``, ``STAT``, ``SUPPLY``, ``sync_stats(target)``, ``instant_record(target)``) as a stem and
  the version of its format;
- **version**: in the file's name (``pending-v1.json``); a reader opens only the version it knows, so an
  older or unknown one is a miss, and a new format is a new version, never a new reading of an old name;
- **key**: an entry is keyed by what it was computed from, a git object id (content-addressed: it cannot
  go stale) or a head (the commit, notes and settings it was counted at); each decoder compares the key
  it holds with the one asked and answers ``None`` for another: a miss;
- **corrupt means miss**: missing, unreadable, truncated, foreign or malformed bytes make :meth:`State.read`
  answer ``None``, never an error and never a value of the wrong shape (a decoder checks what it returns);
- **a write lands whole** (:func:`ledger._fs.atomic_write`, unsynced: every entry is checked when used),
  or, for the two files of self-checking records (digests, checked evidence chunks), is appended; a
  write the disk refuses is dropped.

Deleting the directory (or any file in it) changes no answer, only how long it takes
(tests/reliability/test_cache_state.py).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ledger import _fs

__all__ = ["Entry", "State"]

T = TypeVar("T")
Entry = tuple[str, int]  # (stem, version): ledger._fs.PENDING and its siblings


class State:
    """The cache directory of the brain whose control directory (``.ledger``) is ``control``."""

    def __init__(self, control: str | os.PathLike[str]) -> None:
        self.control = Path(control)
        self.root = self.control / _fs.CACHE_DIR

    def path(self, entry: Entry) -> Path:
        """Where ``entry`` lives (for a reader that keeps its own handle: the stat cache, the memo)."""
        return self.root / _fs.cache_name(*entry)

    def read(self, entry: Entry, decode: Callable[[bytes], T | None]) -> T | None:
        """``decode`` of the entry's bytes, or ``None``: missing, corrupt or keyed otherwise (a miss)."""
        return _fs.read_cache(self.path(entry), decode)

    def read_json(self, entry: Entry, check: Callable[[Any], T | None]) -> T | None:
        """:meth:`read` of a JSON entry: ``check`` of its document."""
        return _fs.read_cache_json(self.path(entry), check)

    def write(self, entry: Entry, data: bytes) -> bool:
        """Put the entry in place whole; ``False`` if the disk refused (the next reader recomputes)."""
        return _fs.write_cache(self.path(entry), data)

    def write_json(self, entry: Entry, doc: Any) -> bool:
        """:meth:`write` of ``doc`` as compact JSON (unless it already holds exactly that: no write)."""
        data = json.dumps(doc, separators=(",", ":")).encode()
        if self.read(entry, lambda held: held == data):
            return True
        return self.write(entry, data)

    def append(self, entry: Entry, data: bytes) -> bool:
        """Append self-checking records to the entry (see the module doc); ``False`` if refused."""
        return _fs.append_cache(self.path(entry), data)

    def drop(self, entry: Entry) -> None:
        """Forget the entry (a miss for the next reader)."""
        with contextlib.suppress(OSError):
            self.path(entry).unlink()
