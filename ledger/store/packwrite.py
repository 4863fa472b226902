"""One git packfile for a bulk write, instead of thousands of loose objects.

A first snapshot or an import of 10,000 skills writes 20,000 objects.  As loose
objects each costs an exclusive create, a write, a rename and a directory entry
(~100 us here, the largest share of the write); the packer then reads them all
back to pack them.  Written straight into one pack, they cost one sequential file.

The format is git's own (``Documentation/gitformat-pack.txt``), undeltified:

- ``.pack``: ``PACK``, version 2, the object count; per object a type-and-size
  header and its zlib stream; the SHA-1 of all that.
- ``.idx`` version 2: the 256-entry fan-out table, the sorted object ids, each
  object's CRC-32, its 32-bit offset (or an index into 64-bit offsets), the pack's
  checksum and the index's own.

Both are written under temporary names in ``objects/ledger-staging`` and fsynced, then
the pack and its index are renamed into ``objects/pack`` in that order (git's order: an
object is visible once its ``.idx`` is).  A crash before the renames leaves
``ledger-bulk-*`` files, which the next writer clears under its lock; nothing refers to
their objects.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import zlib
from itertools import count
from pathlib import Path

__all__ = ["STAGING_PREFIX", "PackWriter"]

STAGING_PREFIX = "ledger-bulk-"
_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
_NAMES = count()


class PackWriter:
    """Objects appended to a temporary pack; :meth:`finish` makes them visible, :meth:`abort` drops them."""

    def __init__(self, objects: Path, staging: Path) -> None:
        self._dir = objects / "pack"
        self._dir.mkdir(exist_ok=True)
        staging.mkdir(exist_ok=True)
        self._tmp = staging / f"{STAGING_PREFIX}{os.getpid()}-{next(_NAMES)}"
        self._fh = open(self._tmp, "x+b")  # noqa: SIM115 - closed by finish() or abort()
        self._sha = hashlib.sha1()
        self._offset = 0
        self._entries: dict[bytes, tuple[int, int]] = {}  # object id → (offset, CRC-32)
        self._put(b"PACK" + struct.pack(">II", 2, 0))  # the count is patched in by finish()

    def __contains__(self, sha: bytes) -> bool:
        return sha in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def _put(self, data: bytes) -> None:
        self._fh.write(data)
        self._offset += len(data)

    def add(self, sha: bytes, kind: bytes, data: bytes, level: int) -> None:
        """Append one object whose id ``sha`` the caller computed from ``kind`` and ``data``."""
        if sha in self._entries:
            return
        size = len(data)
        byte = (_TYPES[kind] << 4) | (size & 0x0F)
        size >>= 4
        header = bytearray()
        while size:
            header.append(byte | 0x80)
            byte, size = size & 0x7F, size >> 7
        header.append(byte)
        record = bytes(header) + zlib.compress(data, level)
        self._entries[sha] = (self._offset, zlib.crc32(record))
        self._put(record)

    def finish(self) -> int:
        """Seal, fsync and publish the pack; its size in bytes (0 if it holds nothing, or was published)."""
        if self._fh.closed:
            return 0
        if not self._entries:
            self.abort()
            return 0
        # The header's count was written as 0: rewrite it, then checksum the whole file.
        self._fh.seek(8)
        self._fh.write(struct.pack(">I", len(self._entries)))
        self._fh.flush()
        self._fh.seek(0)
        sha = hashlib.sha1()
        while chunk := self._fh.read(1 << 20):
            sha.update(chunk)
        checksum = sha.digest()
        self._fh.seek(0, os.SEEK_END)
        self._fh.write(checksum)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        name = f"pack-{checksum.hex()}"
        idx_tmp = self._tmp.with_name(self._tmp.name + ".idx")
        with open(idx_tmp, "wb") as fh:
            fh.write(self._index(checksum))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(self._tmp, 0o444)
        os.chmod(idx_tmp, 0o444)
        # git finds packs by their .idx: the .pack goes first, so a kill between the two renames leaves
        # a .pack git does not list (the next packer's garbage), never an index naming a missing pack.
        # a pack and its index published as a pair, then their directory fsynced: not ledger._fs.atomic_write
        os.replace(self._tmp, self._dir / f"{name}.pack")
        os.replace(idx_tmp, self._dir / f"{name}.idx")
        _fsync_dir(self._dir)
        return self._offset + len(checksum)

    def abort(self) -> None:
        """Drop an unpublished pack (a published one stays: a snapshot may refer to it)."""
        if self._fh.closed and not self._tmp.exists():
            return
        with contextlib.suppress(OSError):
            self._fh.close()
        for path in (self._tmp, self._tmp.with_name(self._tmp.name + ".idx")):
            path.unlink(missing_ok=True)

    def _index(self, pack_checksum: bytes) -> bytes:
        ids = sorted(self._entries)
        fanout = [0] * 256
        for sha in ids:
            fanout[sha[0]] += 1
        total = 0
        for i in range(256):
            total += fanout[i]
            fanout[i] = total
        small, large = [], []
        for sha in ids:
            offset = self._entries[sha][0]
            if offset < 0x80000000:
                small.append(offset)
            else:
                small.append(0x80000000 | len(large))
                large.append(offset)
        body = b"".join(
            [
                b"\xfftOc" + struct.pack(">I", 2),
                struct.pack(">256I", *fanout),
                *ids,
                struct.pack(f">{len(ids)}I", *(self._entries[s][1] for s in ids)),
                struct.pack(f">{len(ids)}I", *small),
                struct.pack(f">{len(large)}Q", *large),
                pack_checksum,
            ]
        )
        return body + hashlib.sha1(body).digest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
