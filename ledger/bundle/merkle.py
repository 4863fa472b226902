"""Bundle hash v1: a deterministic BLAKE3 Merkle tree over a directory tree.

``docs/bundle-hash.md`` is the source of truth; this module and the two beside it implement
it and nothing else.  In short: every directory is an RFC 6962-shaped binary Merkle tree
over its sorted entries, an entry leaf binds (kind, name, child digest), and
domain-separation prefixes keep file contents, leaves and interior nodes apart.  Proofs are
one RFC 6962 audit path per directory level, so they grow as depth × log2(fan-out).

Read it in this order, beside the document:

- :mod:`ledger.protocol.bundlehash`: the hash itself, in memory (digests, levels, the naming
  rules, :class:`DirNode`, the text form of a root);
- this module: a directory on disk read into a :class:`DirNode` (:func:`read_tree`,
  :func:`hash_path`, every refusal of the filesystem), and inclusion proofs
  (:func:`prove`, :func:`verify_proof`);
- :mod:`ledger.bundle.rootindex`: :class:`RootIndex`, the bundle root kept incrementally.

This module is the public face: it re-exports the other two's names, so the ledger imports
bundle hash v1 from here alone.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from blake3 import blake3

from ledger._json import shown
from ledger.bundle.rootindex import RootIndex  # re-exported: the bundle root kept incrementally
from ledger.errors import ProofError, TreeError
from ledger.protocol.bundlehash import (  # re-exported: the hash in memory
    _CONTENT,
    _HEX64,
    EMPTY_ROOT,
    KIND_DIR,
    KIND_EXEC,
    KIND_FILE,
    MAX_PATH_BYTES,
    TREE,
    UNICODE_VERSION,
    VERSION,
    Digest,
    DirNode,
    Node,
    check_name,
    file_digest,
    file_entries,
    format_root,
    iter_files,
    leaf_hash,
    parse_root,
)

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
    "TREE",
    "UNICODE_VERSION",
    "VERSION",
    "Digest",
    "DirNode",
    "InclusionProof",
    "Node",
    "ProofStep",
    "RootIndex",
    "check_name",
    "file_digest",
    "file_entries",
    "format_root",
    "hash_path",
    "iter_files",
    "leaf_hash",
    "parse_root",
    "prove",
    "read_tree",
    "tree_of",
    "verify_proof",
]


# --------------------------------------------------------------------------- filesystem


_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
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


def tree_of(files: Mapping[str, Digest]) -> DirNode:
    """The :class:`DirNode` of a folder holding ``files`` (``rel → Digest`` of a file), built bottom-up with
    no recursion; every name is checked as :func:`read_tree` checks one, and a path that is both a file and
    a directory is refused."""
    dirs: dict[str, dict[str, Node | str]] = {"": {}}
    for rel, digest in files.items():
        parts = rel.split("/")
        for i in range(1, len(parts)):
            parent, here = "/".join(parts[: i - 1]), "/".join(parts[:i])
            if here not in dirs:
                if parts[i - 1] in dirs[parent]:
                    raise TreeError(f"{here!r} is both a file and a directory")
                dirs[here] = {}
                dirs[parent][parts[i - 1]] = here
        where, name = "/".join(parts[:-1]), parts[-1]
        if name in dirs[where]:
            raise TreeError(f"{rel!r} is both a file and a directory")
        dirs[where][name] = digest
    nodes: dict[str, DirNode] = {}
    for path in sorted(dirs, key=lambda p: -p.count("/") - (p != "")):  # deepest first, the folder last
        entries = {n: nodes[v] if isinstance(v, str) else v for n, v in dirs[path].items()}
        nodes[path] = DirNode(entries, path)
    return nodes[""]


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


# --------------------------------------------------------------------------- proofs


_KIND_NAMES = {KIND_FILE: "file", KIND_EXEC: "exec", KIND_DIR: "dir"}  # a proof's "kind", as JSON spells it


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
        if not isinstance(doc, dict):
            raise ProofError(f"malformed proof: a proof is a JSON object, not {shown(doc, 40)}")
        missing = [k for k in ("format", "kind", "path", "content", "steps", "root") if k not in doc]
        if missing:
            raise ProofError(f"malformed proof: it has no {', '.join(missing)}")
        if doc["format"] != f"{VERSION}/inclusion":
            raise ProofError(f"unsupported proof format {shown(doc['format'])}", hint=f"expected {VERSION}/inclusion")
        kinds = {v: k for k, v in _KIND_NAMES.items() if k != KIND_DIR}
        if doc["kind"] not in kinds:
            raise ProofError(f"proof kind must be 'file' or 'exec', got {shown(doc['kind'])}")
        if not isinstance(doc["path"], str) or not isinstance(doc["root"], str):
            what = "path" if not isinstance(doc["path"], str) else "root"
            raise ProofError(f"malformed proof: its {what} {shown(doc[what])} is not text")
        if not isinstance(doc["steps"], list) or not all(isinstance(s, dict) for s in doc["steps"]):
            raise ProofError(f"malformed proof: its steps {shown(doc['steps'])} are not a list of objects")
        try:
            steps = tuple(
                ProofStep(_int(s["index"]), _int(s["count"]), tuple(_hash32(h) for h in _list(s["siblings"])))
                for s in doc["steps"]
            )
        except KeyError as exc:
            raise ProofError(f"malformed proof: a step has no {exc.args[0]}") from None
        return cls(
            path=doc["path"],
            kind=kinds[doc["kind"]],
            content=_hash32(doc["content"]),
            steps=steps,
            root=parse_root(doc["root"]),
        )


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ProofError(f"malformed proof: a step's siblings {shown(value)} are not a list")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProofError(f"malformed proof: {shown(value)} is not a non-negative integer")
    return value


def _hash32(value: Any) -> bytes:
    """A digest in a proof: exactly 64 lower-case hex digits, the one form ``to_json`` writes."""
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise ProofError(f"malformed proof: {shown(value)} is not 64 lower-case hex digits")
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
        child = TREE.root_from_path(step.index, step.count, leaf_hash(kind, name, child), step.siblings)
        kind = KIND_DIR
    if child != root:
        raise ProofError(f"proof does not verify: computed {format_root(child)}, expected {format_root(root)}")
