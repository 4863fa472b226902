"""Bundle hash v1: a deterministic BLAKE3 Merkle tree over a directory tree.

``docs/bundle-hash.md`` is the source of truth; this module implements it and
nothing else.  In short: every directory is an RFC 6962-shaped binary Merkle
tree over its sorted entries, an entry leaf binds (kind, name, child digest),
and domain-separation prefixes keep file contents, leaves and interior nodes
apart.  Proofs are one RFC 6962 audit path per directory level, so they grow as
depth × log2(fan-out).

Over 400 lines on purpose: it is the reference implementation of docs/bundle-hash.md, kept
in one file so an auditor reads the protocol's code in one sitting, beside the document.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blake3 import blake3

from ledger.errors import ProofError, TreeError

try:  # the optional C accelerator for hash_path (ledger/_native.c); same roots, several times faster
    from ledger import _native
except ImportError:  # built without it: pure Python
    _native = None  # type: ignore[assignment]

__all__ = [
    "EMPTY_ROOT",
    "KIND_DIR",
    "KIND_EXEC",
    "KIND_FILE",
    "MAX_PATH_BYTES",
    "UNICODE_VERSION",
    "VERSION",
    "Digest",
    "DirNode",
    "InclusionProof",
    "Node",
    "check_name",
    "file_digest",
    "file_entries",
    "format_root",
    "hash_path",
    "leaf_hash",
    "parse_root",
    "prove",
    "read_tree",
    "verify_proof",
]

VERSION = "blake3-tree-v1"

_LEAF = b"\x00"
_NODE = b"\x01"
_CONTENT = b"\x02"

KIND_FILE = 1  # regular file, not executable (git 100644)
KIND_EXEC = 2  # regular file, owner-executable (git 100755)
KIND_DIR = 3  # directory (git 40000)
_KIND_NAMES = {KIND_FILE: "file", KIND_EXEC: "exec", KIND_DIR: "dir"}

EMPTY_ROOT = blake3(b"").digest()
MAX_PATH_BYTES = 4000  # a bundle path ("a/b/c") longer than this is refused (docs/bundle-hash.md)
UNICODE_VERSION = "14.0.0"  # NFC and case folding are pinned to this Unicode version (docs/bundle-hash.md)
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
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
    return blake3(_NODE + left + right).digest()


def merkle_levels(leaves: Sequence[bytes]) -> list[list[bytes]]:
    """All levels of the RFC 6962 tree, leaves first, root last.

    Pairing left to right and promoting an odd last node unchanged yields the
    same shape as RFC 6962's "split at the largest power of two" recursion.
    """
    levels = [list(leaves)]
    while len(levels[-1]) > 1:
        cur = levels[-1]
        nxt = [_node(cur[i], cur[i + 1]) for i in range(0, len(cur) - 1, 2)]
        if len(cur) % 2:
            nxt.append(cur[-1])
        levels.append(nxt)
    return levels


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    if not leaves:
        return EMPTY_ROOT
    return merkle_levels(leaves)[-1][0]


def update_levels(levels: list[list[bytes]], index: int, leaf: bytes) -> None:
    """Replace one leaf in place and recompute only its path: O(log n)."""
    levels[0][index] = leaf
    for depth in range(1, len(levels)):
        below = levels[depth - 1]
        index //= 2
        left = 2 * index
        levels[depth][index] = below[left] if left + 1 >= len(below) else _node(below[left], below[left + 1])


def audit_path(levels: Sequence[Sequence[bytes]], index: int) -> list[bytes]:
    path = []
    for level in levels[:-1]:
        sibling = index ^ 1
        if sibling < len(level):
            path.append(level[sibling])
        index //= 2
    return path


def root_from_path(leaf: bytes, index: int, count: int, path: Sequence[bytes]) -> bytes:
    """Recompute an RFC 6962 root from one leaf and its audit path."""
    if not 0 <= index < count:
        raise ProofError(f"leaf index {index} is outside a directory of {count} entries")
    node, it = leaf, iter(path)
    try:
        while count > 1:
            if index % 2:
                node = _node(next(it), node)
            elif index + 1 < count:
                node = _node(node, next(it))
            index, count = index // 2, (count + 1) // 2
    except StopIteration:
        raise ProofError("audit path is too short for the directory size") from None
    if next(it, None) is not None:
        raise ProofError("audit path is longer than the directory size allows")
    return node


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
        self._levels = merkle_levels(leaves)
        self.digest = self._levels[-1][0] if leaves else EMPTY_ROOT

    def audit(self, name: str) -> tuple[int, int, list[bytes]]:
        index = self.names.index(name)
        return index, len(self.names), audit_path(self._levels, index)


Node = Digest | DirNode


def _kind(node: Node) -> int:
    return KIND_DIR if isinstance(node, DirNode) else node.kind


class RootIndex:
    """A directory of subdirectories (the bundle root) kept as Merkle levels, updated incrementally.

    Replacing a child's digest recomputes one leaf-to-root path (O(log n));
    adding or removing a child rebuilds the levels (O(n) hashes of 65 bytes).
    Names added here are checked against the naming rules, case folds included.
    """

    def __init__(self, digests: Mapping[str, bytes]) -> None:
        self.names = sorted(digests)
        self.digests = dict(digests)
        self._folded = {}
        for name in self.names:
            self._admit(name)
        self.levels = merkle_levels([leaf_hash(KIND_DIR, n, self.digests[n]) for n in self.names])

    def _admit(self, name: str) -> None:
        if name.isascii() and 0 < len(name) <= _MAX_NAME_BYTES and "/" not in name and "\x00" not in name:
            if name in (".", ".."):
                check_name(name)  # raises
        else:
            check_name(name)
        key = _fold(name)
        if self._folded.get(key, name) != name:
            raise TreeError(f"{self._folded[key]!r} and {name!r} collide on a case-insensitive filesystem")
        self._folded[key] = name

    @property
    def root(self) -> bytes:
        return self.levels[-1][0] if self.names else EMPTY_ROOT

    def set(self, name: str, digest: bytes | None) -> None:
        i = bisect.bisect_left(self.names, name)
        present = i < len(self.names) and self.names[i] == name
        if digest is not None and present:
            self.digests[name] = digest
            update_levels(self.levels, i, leaf_hash(KIND_DIR, name, digest))
            return
        leaves = self.levels[0]
        if digest is None:
            if present:
                del self.names[i], leaves[i], self.digests[name]
                self._folded.pop(_fold(name), None)
        else:
            self._admit(name)
            self.names.insert(i, name)
            leaves.insert(i, leaf_hash(KIND_DIR, name, digest))
            self.digests[name] = digest
        self.levels = merkle_levels(leaves)

    def update(self, changes: Mapping[str, bytes | None]) -> None:
        """Apply many changes; adds and removals rebuild the levels once, not once each."""
        if len(changes) <= 1 or all(d is not None and n in self.digests for n, d in changes.items()):
            for name, digest in changes.items():
                self.set(name, digest)
            return
        for name, digest in changes.items():
            if digest is None:
                if self.digests.pop(name, None) is not None:
                    self._folded.pop(_fold(name), None)
            else:
                if name not in self.digests:
                    self._admit(name)
                self.digests[name] = digest
        self.names = sorted(self.digests)
        self.levels = merkle_levels([leaf_hash(KIND_DIR, n, self.digests[n]) for n in self.names])

    _MAGIC = b"LRI1"

    def dump(self, key: bytes) -> bytes:
        """Serialise (names, digests, levels) under ``key``, sealed with a BLAKE3 checksum."""
        names = "\n".join(self.names).encode()
        body = b"".join(
            [
                self._MAGIC,
                key,
                len(self.names).to_bytes(4, "big"),
                len(names).to_bytes(4, "big"),
                names,
                *(self.digests[n] for n in self.names),
                *(h for level in self.levels for h in level),
            ]
        )
        return body + blake3(body).digest()

    @classmethod
    def load(cls, data: bytes, key: bytes) -> RootIndex | None:
        """The index :meth:`dump` wrote for ``key``, or ``None`` if it is for another key or damaged."""
        if len(data) < 60 or data[:4] != cls._MAGIC or data[4:24] != key:
            return None
        if blake3(data[:-32]).digest() != data[-32:]:
            return None
        n, size = int.from_bytes(data[24:28], "big"), int.from_bytes(data[28:32], "big")
        off = 32 + size
        names = data[32:off].decode().split("\n") if n else []
        digests = [data[off + 32 * i : off + 32 * i + 32] for i in range(n)]
        off += 32 * n
        levels, count = [], n
        while True:
            levels.append([data[off + 32 * i : off + 32 * i + 32] for i in range(count)])
            off += 32 * count
            if count <= 1:
                break
            count = (count + 1) // 2
        if off != len(data) - 32 or len(names) != n:
            return None
        index = cls.__new__(cls)
        index.names, index.digests, index.levels = names, dict(zip(names, digests, strict=True)), levels
        index._folded = {_fold(x): x for x in names}
        return index

    def copy(self) -> RootIndex:
        other = RootIndex.__new__(RootIndex)
        other.names, other.digests, other._folded = list(self.names), dict(self.digests), dict(self._folded)
        other.levels = [list(level) for level in self.levels]
        return other


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


# --------------------------------------------------------------------------- filesystem


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _operand(root: str | os.PathLike[str]) -> str:
    """The directory to hash, as given; a symbolic link is refused however it is spelled (``lnk``, ``lnk/``)."""
    given = os.fspath(root)
    base = given.rstrip("/") or "/"
    try:
        st = os.lstat(base)
    except OSError:
        raise TreeError(f"{given!r} is not a directory") from None
    if stat.S_ISLNK(st.st_mode):
        raise TreeError(f"{given!r} is a symbolic link", hint="hash the directory it points to")
    if not stat.S_ISDIR(st.st_mode):
        raise TreeError(f"{given!r} is not a directory")
    return base


def _unreadable(rel: str, exc: OSError) -> TreeError:
    return TreeError(f"cannot read {rel or '.'!r}: {exc.strerror}", hint="an unreadable file is refused, never skipped")


def _walk(root_fd: int) -> tuple[list[str], list[tuple[str, int]]]:
    """Every directory and regular file under ``root_fd``, checked against the naming and path rules.

    Iterative (no recursion limit); subdirectories are opened by their path relative to
    ``root_fd``, which the path rule keeps under ``PATH_MAX``.
    """
    dirs: list[str] = []
    files: list[tuple[str, int]] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        dirs.append(rel)
        try:
            fd = os.open(rel, _DIR_FLAGS, dir_fd=root_fd) if rel else os.dup(root_fd)
        except OSError as exc:
            raise _unreadable(rel, exc) from exc
        try:
            with os.scandir(fd) as it:
                listing = [(entry.name, entry.stat(follow_symlinks=False).st_mode) for entry in it]
        except OSError as exc:
            raise _unreadable(rel, exc) from exc
        finally:
            os.close(fd)
        if not listing and rel:
            raise TreeError(
                f"{rel!r} is an empty directory; git cannot store it, so the bundle refuses it",
                hint="remove it or add a file to it",
            )
        for name, mode in listing:
            check_name(name, rel)
            child = f"{rel}/{name}" if rel else name
            if len(child.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
                raise TreeError(f"{child[:60]!r}… is longer than {MAX_PATH_BYTES} bytes", hint="shorten the path")
            if stat.S_ISDIR(mode):
                stack.append(child)
            elif stat.S_ISREG(mode):
                files.append((child, KIND_EXEC if mode & stat.S_IXUSR else KIND_FILE))
            elif stat.S_ISLNK(mode):
                raise TreeError(
                    f"{child!r} is a symbolic link; links are not allowed in a brain",
                    hint="replace it with the file it points to",
                )
            else:
                raise TreeError(f"{child!r} is a special file (device, FIFO or socket)")
    return dirs, files


def _file_digest_at(root_fd: int, rel: str) -> bytes:
    try:
        fd = os.open(rel, _FLAGS, dir_fd=root_fd)
    except OSError as exc:
        raise _unreadable(rel, exc) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TreeError(f"{rel!r} changed type while it was being read")
        h = blake3(_CONTENT)
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    except OSError as exc:
        raise _unreadable(rel, exc) from exc
    finally:
        os.close(fd)
    return h.digest()


Progress = Callable[[int, int], None]  # (files hashed so far, total)


def read_tree(root: str | os.PathLike[str], progress: Progress | None = None) -> DirNode:
    """Hash a directory on disk into a :class:`DirNode`, refusing anything ambiguous."""
    base = _operand(root)
    try:
        root_fd = os.open(base, _DIR_FLAGS)
    except OSError as exc:
        raise _unreadable(base, exc) from exc
    try:
        dirs, files = _walk(root_fd)
        children: dict[str, dict[str, Node]] = {d: {} for d in dirs}
        for i, (rel, kind) in enumerate(files, 1):
            parent, _, name = rel.rpartition("/")
            children[parent][name] = Digest(kind, _file_digest_at(root_fd, rel))
            if progress is not None and (i % 1024 == 0 or i == len(files)):
                progress(i, len(files))
    finally:
        os.close(root_fd)
    for d in sorted(dirs, key=lambda p: p.count("/") if p else -1, reverse=True):
        if d:
            parent, _, name = d.rpartition("/")
            children[parent][name] = DirNode(children[d], d)
    return DirNode(children[""])


def hash_path(root: str | os.PathLike[str]) -> bytes:
    """The bundle root of a directory on disk: ``read_tree(root).digest``.

    The native hasher answers when it is built and the tree is plain (ASCII names,
    files and directories, paths within the length rule); for anything else, errors
    included, this module's own code decides.  ``LEDGER_PURE_PYTHON=1`` turns the
    native one off.
    """
    base = _operand(root)
    if _native is not None and not os.environ.get("LEDGER_PURE_PYTHON"):
        digest = _native.hash_dir(base)
        if digest is not None:
            return digest
    return read_tree(base).digest


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


# --------------------------------------------------------------------------- proofs


@dataclass(frozen=True)
class ProofStep:
    index: int
    count: int
    siblings: tuple[bytes, ...]


@dataclass(frozen=True)
class InclusionProof:
    """Proof that ``path`` with content digest ``content`` and ``kind`` is in ``root``.

    ``steps[0]`` is the directory holding the file, ``steps[-1]`` the bundle root.
    """

    path: str
    kind: int
    content: bytes
    steps: tuple[ProofStep, ...]
    root: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "format": f"{VERSION}/inclusion",
            "root": format_root(self.root),
            "path": self.path,
            "kind": _KIND_NAMES[self.kind],
            "content": self.content.hex(),
            "steps": [
                {"index": s.index, "count": s.count, "siblings": [h.hex() for h in s.siblings]} for s in self.steps
            ],
        }

    @classmethod
    def from_json(cls, doc: Any) -> InclusionProof:
        try:
            if doc["format"] != f"{VERSION}/inclusion":
                raise ProofError(f"unsupported proof format {doc['format']!r}")
            kinds = {v: k for k, v in _KIND_NAMES.items() if k != KIND_DIR}
            if doc["kind"] not in kinds:
                raise ProofError(f"proof kind must be 'file' or 'exec', got {doc['kind']!r}")
            steps = tuple(
                ProofStep(_int(s["index"]), _int(s["count"]), tuple(_hash32(h) for h in s["siblings"]))
                for s in doc["steps"]
            )
            return cls(
                path=str(doc["path"]),
                kind=kinds[doc["kind"]],
                content=_hash32(doc["content"]),
                steps=steps,
                root=parse_root(doc["root"]),
            )
        except (KeyError, TypeError) as exc:
            raise ProofError(f"malformed proof: missing or mistyped field {exc}") from None


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProofError(f"malformed proof: {value!r} is not a non-negative integer")
    return value


_HEX64 = re.compile(r"[0-9a-f]{64}")


def _hash32(value: Any) -> bytes:
    """A digest in a proof: exactly 64 lower-case hex digits, the one form ``to_json`` writes."""
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise ProofError(f"malformed proof: {value!r} is not 64 lower-case hex digits")
    return bytes.fromhex(value)


def prove(tree: DirNode, path: str) -> InclusionProof:
    """Build the inclusion proof of the file at ``path`` (``/``-separated) in ``tree``."""
    parts = path.split("/")
    chain: list[tuple[DirNode, str]] = []
    node: Node = tree
    for part in parts:
        if not isinstance(node, DirNode) or part not in node.entries:
            raise ProofError(f"{path!r} is not a file in this tree")
        chain.append((node, part))
        node = node.entries[part]
    if not isinstance(node, Digest) or node.kind == KIND_DIR:
        raise ProofError(f"{path!r} is a directory; proofs are for files", hint="name a file: <skill>/<path>")
    steps = tuple(ProofStep(*_audit(d, name)) for d, name in reversed(chain))
    return InclusionProof(path, node.kind, node.digest, steps, tree.digest)


def _audit(d: DirNode, name: str) -> tuple[int, int, tuple[bytes, ...]]:
    index, count, path = d.audit(name)
    return index, count, tuple(path)


def verify_proof(proof: InclusionProof, root: bytes, content: bytes | None = None) -> None:
    """Raise :class:`ProofError` unless ``proof`` places its file in ``root``.

    With ``content``, also check that those bytes are the proven file.
    """
    if content is not None and file_digest(content) != proof.content:
        raise ProofError(f"the given content is not the proven content of {proof.path!r}")
    parts = proof.path.split("/")
    for part in parts:
        check_name(part)
    if len(parts) != len(proof.steps):
        raise ProofError(f"proof has {len(proof.steps)} steps but {proof.path!r} has {len(parts)} segments")
    child, kind = proof.content, proof.kind
    for name, step in zip(reversed(parts), proof.steps, strict=True):
        child = root_from_path(leaf_hash(kind, name, child), step.index, step.count, step.siblings)
        kind = KIND_DIR
    if child != root:
        raise ProofError(f"proof does not verify: computed {format_root(child)}, expected {format_root(root)}")
