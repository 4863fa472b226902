"""How a snapshot's git tree holds ``skills/``: flat, or fanned out by hash (docs/layouts.md, ADR 15).

- **Flat** (a brain of up to :data:`FANOUT_AT` skills): ``skills/<name>/…``, what a git
  user expects to browse.
- **Fanned out** (above it): ``skills/<xx>/<name>/…``, where ``xx`` is the first byte of
  BLAKE3(name) in hex, and the snapshot's top tree holds a ``layout`` blob saying so.

Why: every upsert writes a new ``skills/`` tree.  Flat, that tree holds one entry per
skill, ~40 bytes each: 380 KB a write at 10,000 skills and 3.8 MB at 100,000, which
the packer then has to read back and delta.  Fanned out, a write rewrites one bucket of
~1/256 of the skills and a top of at most 256 entries.

The layout is how git stores the snapshot, not what it records: the bundle hash is
computed from names and contents (docs/bundle-hash.md) and is the same either way.
Readers accept both layouts in any snapshot; anything else (an unknown layout record,
a name in the wrong bucket, an empty or misnamed bucket) is refused.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping

from blake3 import blake3

from ledger.errors import StoreError, TreeError
from ledger.store.gitstore import MODE_DIR, MODE_FILE, SKILLS_DIR, GitStore

__all__ = ["FANOUT", "FANOUT_AT", "LAYOUT", "Fanout", "bucket", "skills_of"]

FANOUT_AT = 1024  # more skills than this: fanned out
LAYOUT = "layout"  # the top-tree blob naming a layout other than flat
FANOUT = b"skills/<first byte of BLAKE3(name), in hex>/<name>/\n"
_HEX = set("0123456789abcdef")


def bucket(name: str) -> str:
    """The fan-out directory of skill ``name``."""
    return blake3(name.encode()).digest(length=1).hex()


Buckets = dict[str, tuple[bytes, dict[str, bytes]]]  # bucket → (its tree id, {name: skill tree id})


def skills_of(
    store: GitStore, top: bytes, memo: dict[bytes, dict[str, bytes]] | None = None
) -> tuple[bytes | None, dict[str, bytes], Buckets | None]:
    """``(skills/ tree id, {name: skill tree id}, the buckets, or None when flat)`` of a
    snapshot's top tree.  ``memo`` keeps bucket listings by tree id across snapshots."""
    skills = layout = None
    for sha, mode, name in store.read_tree(top):
        if name == SKILLS_DIR:
            if mode != MODE_DIR:
                raise TreeError("'skills' in the snapshot is not a directory")
            skills = sha
        elif name == LAYOUT:
            if mode != MODE_FILE or store.read(sha, b"blob") != FANOUT:
                raise StoreError(
                    "the snapshot's layout record is not one this ledger reads",
                    hint="a newer ledger wrote it, or it was altered; run 'ledger audit'",
                )
            layout = sha
    if skills is None:
        return None, {}, None
    entries = store.read_tree(skills)
    out: dict[str, bytes] = {}
    if layout is None:
        for sha, mode, name in entries:
            if mode != MODE_DIR:
                raise TreeError(f"skills/{name} in the snapshot is not a skill directory")
            out[name] = sha
        return skills, out, None
    buckets: dict[str, bytes] = {}
    for sha, mode, name in entries:
        if mode != MODE_DIR or len(name) != 2 or not set(name) <= _HEX:
            raise TreeError(f"skills/{name} in a fanned-out snapshot is not a fan-out directory")
        buckets[name] = sha
    memo = memo if memo is not None else {}
    unread = [sha for sha in buckets.values() if sha not in memo]
    read = dict(zip(unread, store.read_trees(unread), strict=True))  # one pipelined request, not 256 round trips
    found: Buckets = {}
    for key, sha in buckets.items():
        listing = memo.get(sha)
        if listing is None:
            listing = {}
            for child, mode, name in read[sha]:
                if mode != MODE_DIR:
                    raise TreeError(f"skills/{key}/{name} in the snapshot is not a skill directory")
                if bucket(name) != key:
                    raise TreeError(
                        f"skills/{key}/{name} is in the wrong fan-out directory (it belongs in skills/{bucket(name)}/)"
                    )
                listing[name] = child
            if not listing:
                raise TreeError(f"skills/{key}/ in the snapshot is empty")
            memo[sha] = listing
        out.update(listing)
        found[key] = (sha, listing)
    return skills, out, found


class Fanout:
    """The buckets of a fanned-out ``skills/`` tree, kept with a head so a write rewrites only
    the buckets it touches.  ``entries`` maps ``name + "/"`` to the skill's serialised tree entry."""

    def __init__(self, keys: Iterable[str] = (), read: Buckets | None = None) -> None:
        self.keys: dict[str, list[str]] = {}
        self.trees: dict[str, bytes] = {}  # bucket → its tree id, where written
        for b, (sha, listing) in (read or {}).items():  # as read: in git order already
            self.keys[b], self.trees[b] = [name + "/" for name in listing], sha
        added = set()
        for key in keys:
            b = bucket(key[:-1])
            self.keys.setdefault(b, []).append(key)
            added.add(b)
        for b in added:
            self.keys[b].sort(key=str.encode)

    def write(self, store: GitStore, entries: Mapping[str, bytes], changed: Iterable[str]) -> bytes:
        """Write the buckets of the ``changed`` names and the top; the ``skills/`` tree id."""
        for name in changed:
            key, b = name + "/", bucket(name)
            listing = self.keys.setdefault(b, [])
            at = bisect.bisect_left(listing, key.encode(), key=str.encode)
            present = at < len(listing) and listing[at] == key
            if key in entries and not present:
                listing.insert(at, key)
            elif key not in entries and present:
                del listing[at]
            self.trees.pop(b, None)
            if not listing:
                del self.keys[b]
        for b, listing in self.keys.items():
            if b not in self.trees:
                self.trees[b] = store.write_raw_tree(b"".join(entries[k] for k in listing))
        top = b"".join(b"40000 %s\x00%s" % (b.encode(), self.trees[b]) for b in sorted(self.keys))
        return store.write_raw_tree(top)
