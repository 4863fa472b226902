"""Bundle hash v1 in memory: the digests, the leaf and node hashes, the naming rules, :class:`DirNode`.

This is the hash itself, as ``docs/bundle-hash.md`` defines it: domain-separated content
digests, entry leaves binding (kind, name, child digest), every directory an RFC 6962-shaped
binary Merkle tree over its sorted entries (:data:`TREE`, the one core of
:mod:`ledger.protocol.merkle` with BLAKE3's hashes), the names the spec refuses, and the text
form of a root.  It touches no filesystem: :mod:`ledger.bundle.merkle` reads a directory on
disk and proves a file, :mod:`ledger.bundle.rootindex` keeps the bundle root incrementally,
both on top of this module; the former re-exports its names.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from blake3 import blake3

from ledger.errors import ProofError, TreeError
from ledger.protocol.merkle import Merkle

__all__ = [
    "EMPTY_ROOT",
    "KIND_DIR",
    "KIND_EXEC",
    "KIND_FILE",
    "MAX_PATH_BYTES",
    "TREE",
    "UNICODE_VERSION",
    "VERSION",
    "Digest",
    "DirNode",
    "Node",
    "check_name",
    "file_digest",
    "file_entries",
    "format_root",
    "iter_files",
    "leaf_hash",
    "parse_root",
]

VERSION = "blake3-tree-v1"

_LEAF = b"\x00"
_NODE = b"\x01"
_CONTENT = b"\x02"

KIND_FILE = 1  # regular file, not executable (git 100644)
KIND_EXEC = 2  # regular file, owner-executable (git 100755)
KIND_DIR = 3  # directory (git 40000)

EMPTY_ROOT = blake3(b"").digest()
MAX_PATH_BYTES = 4000  # a bundle path ("a/b/c") longer than this is refused (docs/bundle-hash.md)
UNICODE_VERSION = "14.0.0"  # NFC and case folding are pinned to this Unicode version (docs/bundle-hash.md)
_MAX_NAME_BYTES = 255


def file_digest(data: bytes) -> bytes:
    """Digest of a file's exact bytes: ``BLAKE3(0x02 ‖ content)``."""
    h = blake3(_CONTENT)
    h.update(data)
    return h.digest()


def leaf_hash(kind: int, name: str, child: bytes) -> bytes:
    """Entry leaf: ``BLAKE3(0x00 ‖ kind ‖ u16be(len(name)) ‖ name ‖ child)``."""
    raw = name.encode("utf-8")
    return blake3(_LEAF + bytes((kind,)) + len(raw).to_bytes(2, "big") + raw + child).digest()


def _node(left: bytes, right: bytes) -> bytes:
    """Interior node: ``BLAKE3(0x01 ‖ left ‖ right)``."""
    return blake3(_NODE + left + right).digest()


TREE = Merkle(leaf=leaf_hash, node=_node, empty=EMPTY_ROOT)  # every directory's tree: levels, paths, proofs


def check_name(name: str, where: str = "") -> str:
    """Refuse names the spec cannot hash unambiguously; return the name."""
    label = f"{where}/{name}" if where else name
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:
        raise TreeError(f"{label!r}: name is not valid UTF-8", hint="rename it using UTF-8") from None
    if name in ("", ".", "..") or "/" in name or "\x00" in name:
        raise TreeError(f"{label!r}: invalid entry name")
    if len(raw) > _MAX_NAME_BYTES:
        raise TreeError(f"{label!r}: name is longer than {_MAX_NAME_BYTES} bytes")
    if len(name) == 4 and name.lower() == ".git":
        raise TreeError(f"{label!r}: a '.git' component (in any case) is refused", hint="git itself refuses it")
    if name.isascii():
        return name
    if unicodedata.unidata_version != UNICODE_VERSION:
        raise TreeError(
            f"{label!r}: this Python's Unicode {unicodedata.unidata_version} is not the pinned {UNICODE_VERSION}, "
            "so non-ASCII names cannot be checked the same way everywhere",
            hint="use Python 3.11, or an ASCII name",
        )
    if any(unicodedata.category(c) == "Cn" for c in name):
        raise TreeError(f"{label!r}: name has a code point unassigned in Unicode {UNICODE_VERSION}")
    if not unicodedata.is_normalized("NFC", name):
        raise TreeError(
            f"{label!r}: name is not in Unicode NFC",
            hint="rename it to its NFC form (macOS filesystems may produce NFD)",
        )
    return name


def _fold(name: str) -> str:
    """The case-insensitive identity of a name (for ASCII, casefold is lower and NFC a no-op)."""
    return name.lower() if name.isascii() else unicodedata.normalize("NFC", name.casefold())


@dataclass(frozen=True, slots=True)
class Digest:
    kind: int
    digest: bytes


class DirNode:
    """A directory: sorted entries, with its digest and Merkle levels computed once."""

    __slots__ = ("_levels", "digest", "entries", "names")

    def __init__(self, entries: Mapping[str, Node], where: str = "") -> None:
        names = sorted(entries)
        folded: dict[str, str] = {}
        for name in names:
            check_name(name, where)
            key = _fold(name)
            if key in folded:
                raise TreeError(
                    f"{where + '/' if where else ''}{folded[key]!r} and {name!r} collide on a "
                    "case-insensitive filesystem",
                    hint="rename one of them",
                )
            folded[key] = name
        self.names = names
        self.entries = {n: entries[n] for n in names}
        leaves = [leaf_hash(_kind(self.entries[n]), n, self.entries[n].digest) for n in names]
        self._levels = TREE.levels(leaves)
        self.digest = TREE.top(self._levels)

    def audit(self, name: str) -> tuple[int, int, list[bytes]]:
        index = self.names.index(name)
        return index, len(self.names), TREE.path(self._levels, index)


Node = Digest | DirNode


def _kind(node: Node) -> int:
    return KIND_DIR if isinstance(node, DirNode) else node.kind


_HEX64 = re.compile(r"[0-9a-f]{64}")  # a root or a digest in a proof: 64 lower-case hex digits, nothing else


def format_root(digest: bytes) -> str:
    """Print a root with its algorithm and version: ``blake3-tree-v1:<64 hex>``."""
    return f"{VERSION}:{digest.hex()}"


def parse_root(text: str) -> bytes:
    """Accept ``blake3-tree-v1:<hex>`` or a ``0x``-prefixed bytes32 as committed on chain."""
    value = text.strip()
    if value.startswith(VERSION + ":"):
        value = value[len(VERSION) + 1 :]
    elif value.startswith(("0x", "0X")):
        value = value[2:]
    elif ":" in value:
        raise ProofError(f"unsupported root format {text!r}", hint=f"expected {VERSION}:<hex>")
    if not _HEX64.fullmatch(value):
        raise ProofError(f"root {text!r} is not 64 lower-case hex digits", hint=f"expected {VERSION}:<64 hex>")
    return bytes.fromhex(value)


def file_entries(node: Digest | DirNode | None, name: str) -> dict[str, tuple[int, bytes]]:
    """Every file under ``node`` (skill ``name``) as ``name/rel → (kind, digest)``: what status and the
    audit compare, path by path, between a snapshot and a working tree."""
    if node is None:
        return {}
    if not isinstance(node, DirNode):
        return {name: (node.kind, node.digest)}
    return {f"{name}/{rel}": (d.kind, d.digest) for rel, d in iter_files(node)}


def iter_files(node: DirNode, prefix: str = "") -> Iterator[tuple[str, Digest]]:
    """Every file under ``node`` as (relative path, node), in bundle order (iterative: no depth limit)."""
    stack: list[tuple[DirNode, str, int]] = [(node, prefix, 0)]
    while stack:
        current, base, i = stack.pop()
        if i >= len(current.names):
            continue
        stack.append((current, base, i + 1))
        name = current.names[i]
        child = current.entries[name]
        if isinstance(child, DirNode):
            stack.append((child, f"{base}{name}/", 0))
        else:
            yield f"{base}{name}", child
