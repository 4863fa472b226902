"""Git snapshots: objects written directly, refs moved by compare-and-swap.

Snapshots never go through a git index: GitPython's ``IndexFile`` rewrites the
whole index per call (2.4 s for one file at 10,000 files).  Blobs, trees and
commits are written in-process to the object database, unchanged subtrees are
reused by id, and ``refs/heads/main`` moves with git's own lock-file protocol,
so ``git`` itself sees an ordinary repository.

No filters or line-ending conversion ever touch the bytes: what the brain holds
is what the snapshot holds.

The object database (the cat-file reader, loose and bulk writes, git's tree and mode formats) is
:mod:`ledger.store.objectdb`, which :class:`GitStore` composes; the commit message grammar (subject,
note, ``Ledger-*`` trailers) is :mod:`ledger.protocol.messages`.  Their names are re-exported here,
where the store reads and writes them.  This module holds the repository itself: refs, commits,
snapshots and the records of a snapshot's top tree.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from ledger._paths import read_ref
from ledger.bundle.merkle import parse_root
from ledger.errors import StoreError, TreeError
from ledger.protocol.messages import (  # re-exported: the store reads and writes these
    ACTORS,
    EVIDENCE,
    OPERATIONS,
    Change,
    Snapshot,
    attribution,
    canonical_message,
    format_message,
    parse_change,
    parse_trailers,
    split_note,
)
from ledger.protocol.refs import BRANCH
from ledger.signatures import trust as trustset
from ledger.store import commitsig
from ledger.store.git import WHOLE, Git
from ledger.store.objectdb import (  # re-exported: callers name them as the store's
    MODE_DIR,
    MODE_EXEC,
    MODE_FILE,
    STAGING_DIR,
    FileMap,
    ObjectDB,
    TreeEntry,
    blob_id,
    git_order,
    kind_of_mode,
    mode_of_kind,
    parse_tree,
)

__all__ = [
    "ACTORS",
    "BRANCH",
    "EVIDENCE",
    "MODE_DIR",
    "MODE_EXEC",
    "MODE_FILE",
    "OPERATIONS",
    "STAGING_DIR",
    "Change",
    "FileMap",
    "GitStore",
    "Snapshot",
    "TreeEntry",
    "attribution",
    "blob_id",
    "canonical_message",
    "format_message",
    "format_record",
    "git_order",
    "kind_of_mode",
    "mode_of_kind",
    "parse_commit",
    "parse_record",
    "parse_tree",
    "snapshot_of",
    "split_note",
]

SKILLS_DIR = "skills"
RETIRED = "retired"  # beside skills/: the last version of every deleted name, so versions never repeat
VERSIONS = "versions"  # beside skills/ when versions live in the store, not SKILL.md: each live skill's version
NULL_SHA = b"\x00" * 20
_IDENTITY = "brain-ledger <ledger@localhost>"


_HEX40 = re.compile(rb"[0-9a-f]{40}")
_CORE_HEADERS = {b"tree", b"parent", b"author", b"committer"}


def _git_dir(path: Path) -> Path:
    """Locate the git directory of a work tree, a brain (``.git``) or a bare repository."""
    dot = path / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():  # a gitfile: "gitdir: <path>"
        text = dot.read_text().strip()
        if text.startswith("gitdir:"):
            return (path / text[7:].strip()).resolve()
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return path
    raise StoreError(f"{path} is not a git repository")


class GitStore:
    """A brain's git repository: ``<brain>/.git``, configured bare (no index, no work tree).

    Being bare keeps ``git status`` from reporting a stale index, while ``git log``
    and ``git clone <brain>`` work as usual.  Objects are read through one
    ``git cat-file --batch`` and written in-process; GitPython (120 ms to
    import) is loaded only to create repositories and to parse revisions.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.git_dir = _git_dir(self.path)
        self.objects = ObjectDB(self.git_dir)  # git objects read and written (ledger.store.objectdb)
        self.staging_dir = self.objects.staging_dir  # writers' temporary files
        self._cat = self.objects.cat  # its `git cat-file --batch` reader

    @classmethod
    def init(cls, path: Path) -> GitStore:
        import git  # GitPython: repository creation and config, off the hot path

        repo = git.Repo.init(path, initial_branch="main")
        with repo.config_writer() as cw:
            cw.set_value("core", "bare", "true")
            cw.set_value("core", "autocrlf", "false")
            cw.set_value("core", "logAllRefUpdates", "true")
            cw.set_value("gc", "auto", "0")
        repo.close()
        return cls(path)

    def close(self) -> None:
        self.objects.close()

    def __enter__(self) -> GitStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ objects (ledger.store.objectdb)

    def bulk(self) -> contextlib.AbstractContextManager[None]:
        """Objects written inside go into one new pack, not loose files (:meth:`ObjectDB.bulk`)."""
        return self.objects.bulk()

    def publish(self) -> None:
        """Make the objects of a running :meth:`bulk` visible now; later writes go loose."""
        self.objects.publish()

    def write_blob(self, data: bytes) -> bytes:
        return self.objects.write(b"blob", data)

    def write_tree(self, entries: Sequence[TreeEntry]) -> bytes:
        return self.objects.write_tree(entries)

    def write_raw_tree(self, data: bytes) -> bytes:
        """Store an already serialised tree (entries in git order); the upsert hot path."""
        return self.objects.write(b"tree", data)

    def write_commit(
        self, tree: bytes, parents: Sequence[bytes], message: str, sign: Callable[[bytes], str] | None = None
    ) -> bytes:
        """Write a commit object; author and committer come from ``LEDGER_COMMITTER``.  ``sign`` (the
        commit without a signature → an armored signature) adds git's ``gpgsig`` header
        (:mod:`ledger.store.commitsig`), so ``git verify-commit`` checks the snapshot."""
        stamp = f"{int(time.time())} +0000"
        identity = os.environ.get("LEDGER_COMMITTER", _IDENTITY)
        if "\n" in identity or "<" not in identity:
            raise StoreError("LEDGER_COMMITTER must look like 'Name <email>'")
        lines = [f"tree {tree.hex()}"]
        lines += [f"parent {p.hex()}" for p in parents]
        lines += [f"author {identity} {stamp}", f"committer {identity} {stamp}", "", message]
        data = "\n".join(lines).encode("utf-8")
        if sign is not None:
            data = commitsig.insert(data, sign(data))
        return self.objects.write(b"commit", data)

    def read_commits(self, binshas: Sequence[bytes]) -> list[bytes]:
        """The raw bytes of each commit object, read in one pipelined request (an audit's git signatures)."""
        return self.objects.read_many(binshas, b"commit")

    def read(self, binsha: bytes, expect: bytes) -> bytes:
        return self.objects.read(binsha, expect)

    def read_blobs(self, binshas: Sequence[bytes]) -> list[bytes]:
        """The bytes of each blob, read in one pipelined request (:meth:`ObjectDB.read_blobs`)."""
        return self.objects.read_blobs(binshas)

    def read_tree(self, binsha: bytes) -> list[TreeEntry]:
        return self.objects.read_tree(binsha)

    def read_trees(self, binshas: Sequence[bytes]) -> list[list[TreeEntry]]:
        """Each tree's entries, read in one pipelined request (:meth:`ObjectDB.read_trees`)."""
        return self.objects.read_trees(binshas)

    def has(self, binsha: bytes) -> bool:
        return self.objects.has(binsha)

    # ------------------------------------------------------------------ refs

    def head(self) -> bytes | None:
        """The commit ``main`` points at, or ``None`` before the first snapshot."""
        return self.read_ref(BRANCH)

    def read_ref(self, ref: str) -> bytes | None:
        """The commit ``ref`` names, loose or packed (:func:`ledger._paths.read_ref`); None if none."""
        text = read_ref(self.git_dir, ref)
        return None if text is None else bytes.fromhex(text)

    def move_head(self, new: bytes, expected: bytes | None) -> None:
        """Point ``main`` at ``new`` if it still points at ``expected`` (git's lock protocol)."""
        self.move_ref(BRANCH, new, expected)

    def move_ref(self, name: str, new: bytes, expected: bytes | None) -> None:
        """Compare-and-swap any ref with git's ``<ref>.lock`` protocol."""
        ref = self.git_dir / name
        ref.parent.mkdir(parents=True, exist_ok=True)
        lock = ref.with_name(ref.name + ".lock")
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise StoreError(
                f"{lock} exists: another git process is updating the branch",
                hint="if no git process is running, remove the stale lock file",
            ) from None
        try:
            current = self.read_ref(name)
            if current != expected:
                raise StoreError(
                    f"branch moved underneath this write (expected {_hex(expected)}, found {_hex(current)})"
                )
            os.write(fd, new.hex().encode() + b"\n")
            os.fsync(fd)
            os.close(fd)
            fd = -1
            os.replace(lock, ref)  # git's lock protocol (compare, then rename the lock): not ledger._fs.atomic_write
        finally:
            if fd >= 0:
                os.close(fd)
            if lock.exists():
                lock.unlink()
        self._log_ref(name, expected, new)

    def _log_ref(self, name: str, old: bytes | None, new: bytes) -> None:
        log = self.git_dir / "logs" / name
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{_hex(old) or '0' * 40} {new.hex()} {_IDENTITY} {int(time.time())} +0000\tledger\n")

    # ------------------------------------------------------------------ snapshots

    def commit_info(self, commit: bytes) -> tuple[bytes, tuple[str, ...], int, str]:
        """(tree id, parent ids, committer time, message) parsed from the raw commit object (:func:`parse_commit`)."""
        return parse_commit(commit, self.read(commit, b"commit"))

    def snapshot(self, commit: bytes) -> Snapshot:
        return snapshot_of(commit, self.read(commit, b"commit"))

    def lineage(self, start: bytes | None = None) -> Iterator[Snapshot]:
        """Snapshots from ``start`` (default: head) back to genesis, first parent only."""
        commit = start if start is not None else self.head()
        while commit is not None:
            snap = self.snapshot(commit)
            yield snap
            commit = bytes.fromhex(snap.parents[0]) if snap.parents else None

    def number(self, commit: bytes | None = None) -> int:
        """The snapshot's number (docs/lineage.md, 'The lineage'): how many commits lie behind it on its
        first-parent line, so genesis is #0 and each later snapshot is its first parent's number + 1.
        The one place it is computed; whoever walks the first-parent line counts down from it."""
        commit = commit if commit is not None else self.head()
        what = f"cannot count the snapshots before {commit.hex()[:12]}"
        out = Git(self.git_dir).run(
            "rev-list", "--first-parent", "--count", commit.hex(), "--", timeout=WHOLE, what=what
        )
        if not out.strip().isdigit():
            raise StoreError(f"{what}: git counted {out.strip()[:40]!r}")
        return int(out) - 1

    def diffstat(self, old: bytes, new: bytes, prefix: str) -> tuple[dict[str, int], dict[str, int]]:
        """Files added, changed and removed under ``prefix`` from commit ``old`` to ``new``, and lines added
        and removed, as ``git diff --stat`` counts them (a binary file's lines count 0; no renames).
        Git diffs the two trees itself: one process for the whole snapshot, where reading each changed
        file's two sides here costs a round trip per object (the page's release notes, ADR 0052)."""
        out = Git(self.git_dir).run(
            "diff-tree",
            "-r",
            "--no-renames",
            "--no-commit-id",
            "-z",
            "--raw",
            "--numstat",
            old.hex(),
            new.hex(),
            "--",
            prefix,
            what=f"cannot diff {old.hex()[:12]}..{new.hex()[:12]}",
        )
        files, lines = {"added": 0, "changed": 0, "removed": 0}, {"added": 0, "removed": 0}
        tokens = out.split(b"\0")
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token.startswith(b":"):  # ":old-mode new-mode old-sha new-sha STATUS", then the path
                status = token.split()[-1][:1]
                files["added" if status == b"A" else "removed" if status == b"D" else "changed"] += 1
                i += 2
                continue
            if token:  # "added<TAB>removed<TAB>path"; "-<TAB>-" for a binary file
                plus, minus = token.split(b"\t", 2)[:2]
                lines["added"] += int(plus) if plus.isdigit() else 0
                lines["removed"] += int(minus) if minus.isdigit() else 0
            i += 1
        return files, lines

    def resolve(self, rev: str) -> bytes:
        """Resolve a revision (hex, ``HEAD~2``, a root) to a commit id."""
        if rev.startswith("blake3-tree-v1:"):
            want = parse_root(rev)
            for snap in self.lineage():
                if snap.root == want:
                    return bytes.fromhex(snap.commit)
            raise StoreError(f"no snapshot has root {rev}")
        commit = Git(self.git_dir).rev_parse(rev)
        if commit is None:
            raise StoreError(f"unknown revision {rev!r}", hint="use a commit id, main~N or a root")
        return commit

    def skills_tree(self, commit: bytes, tree: bytes | None = None) -> bytes | None:
        """The ``skills/`` tree id of a snapshot (``None`` for the empty brain)."""
        tree = tree if tree is not None else self.commit_info(commit)[0]
        for sha, mode, name in self.read_tree(tree):
            if name == SKILLS_DIR:
                if mode != MODE_DIR:
                    raise TreeError("'skills' in the snapshot is not a directory")
                return sha
        return None

    def root_tree(
        self,
        skills: bytes | None,
        categories: bytes | None = None,
        retired: bytes | None = None,
        layout: bytes | None = None,
        trust: bytes | None = None,
        versions: bytes | None = None,
        supply: bytes | None = None,
        evidence: bytes | None = None,
    ) -> bytes:
        """A snapshot's top tree: ``skills/`` (the bundle); ``categories/``, ``retired`` and a
        ``layout`` record (:mod:`ledger.store.skilltree`) and the ``keys`` record
        (:mod:`ledger.signatures.trust`), the ``supply`` record and the ``evidence/`` log
        (:mod:`ledger.store.evidence`) beside it when needed."""
        entries = [(skills, MODE_DIR, SKILLS_DIR)] if skills else []
        if categories:
            entries.append((categories, MODE_DIR, "categories"))
        if retired:
            entries.append((retired, MODE_FILE, RETIRED))
        if layout:
            entries.append((layout, MODE_FILE, "layout"))
        if trust:
            entries.append((trust, MODE_FILE, "keys"))
        if versions:
            entries.append((versions, MODE_FILE, VERSIONS))
        if supply:
            entries.append((supply, MODE_FILE, "supply"))
        if evidence:
            entries.append((evidence, MODE_DIR, "evidence"))
        return self.write_tree(entries)

    def trust_record(self, tree: bytes) -> tuple[bytes | None, bytes]:
        """The ``keys`` record of a snapshot's top tree (:mod:`ledger.signatures.trust`): its blob id and bytes."""
        for sha, mode, name in self.read_tree(tree):
            if name == "keys" and mode == MODE_FILE:
                return sha, self.read(sha, b"blob")
        return None, b""

    def trust_at(self, tree: str) -> tuple[bytes | None, trustset.Trust]:
        """The trust set a snapshot's tree (hex) records: empty for a brain that never had keys."""
        if not tree:
            return None, trustset.Trust()
        sha, data = self.trust_record(bytes.fromhex(tree))
        return (sha, trustset.parse_record(data)) if sha is not None else (None, trustset.Trust())

    def write_trust(self, trust: trustset.Trust) -> bytes | None:
        """The ``keys`` record's blob for ``trust``, or None while no key has been trusted."""
        return self.write_blob(trustset.format_record(trust)) if trust.established else None

    def retired(self, tree: bytes) -> tuple[bytes | None, dict[str, int]]:
        """The ``retired`` record of a snapshot's top tree: its blob id and each deleted name's last version."""
        return self.record(tree, RETIRED)

    def versions(self, tree: bytes) -> tuple[bytes | None, dict[str, int]]:
        """The ``versions`` record of a snapshot's top tree (a brain that keeps its version counter
        out of SKILL.md, lineage.md §4.2): its blob id, ``None`` in a brain that counts in SKILL.md,
        and each live skill's version."""
        return self.record(tree, VERSIONS)

    def record(self, tree: bytes, entry: str) -> tuple[bytes | None, dict[str, int]]:
        """A ``NAME VERSION`` record of a snapshot's top tree (``retired`` or ``versions``)."""
        for sha, mode, name in self.read_tree(tree):
            if name == entry and mode == MODE_FILE:
                return sha, parse_record(self.read(sha, b"blob"), entry)
        return None, {}

    def supply_record(self, tree: bytes) -> tuple[bytes | None, bytes]:
        """The ``supply`` record of a snapshot's top tree (:mod:`ledger.store.supply`): its blob id and bytes."""
        for sha, mode, name in self.read_tree(tree):
            if name == "supply" and mode == MODE_FILE:
                return sha, self.read(sha, b"blob")
        return None, b""

    def categories_tree(self, tree: bytes) -> bytes | None:
        """The ``categories/`` tree of a snapshot's top tree, if any (docs/layouts.md)."""
        found = (sha for sha, mode, name in self.read_tree(tree) if name == "categories" and mode == MODE_DIR)
        return next(found, None)


def parse_commit(commit: bytes, raw: bytes) -> tuple[bytes, tuple[str, ...], int, str]:
    """(tree id, parent ids, committer time, message) of commit ``commit``'s raw object ``raw``, as git reads it.

    git takes the *first* line as the tree, the ``parent`` lines right after it, then ``author``
    and ``committer``; any header after those is one git ignores.  A commit that names a tree,
    a parent, an author or a committer anywhere else is refused: it would read one way here and
    another way in git (a second ``tree`` line after ``committer`` is the attack)."""
    head, sep, body = raw.partition(b"\n\n")
    lines = head.split(b"\n")
    if not sep or not lines[0].startswith(b"tree ") or not _HEX40.fullmatch(lines[0][5:]):
        raise StoreError(f"commit {commit.hex()} is malformed: its first line is not 'tree <id>'")
    tree, i, parents = bytes.fromhex(lines[0][5:].decode()), 1, []
    while i < len(lines) and lines[i].startswith(b"parent "):
        if not _HEX40.fullmatch(lines[i][7:]):
            raise StoreError(f"commit {commit.hex()} is malformed: a parent line is not 'parent <id>'")
        parents.append(lines[i][7:].decode())
        i += 1
    if len(lines) < i + 2 or not lines[i].startswith(b"author ") or not lines[i + 1].startswith(b"committer "):
        raise StoreError(f"commit {commit.hex()} is malformed: 'author' and 'committer' must follow its parents")
    stamp = int(lines[i + 1].rsplit(b" ", 2)[-2])
    for line in lines[i + 2 :]:
        name = line.split(b" ", 1)[0]
        if name in _CORE_HEADERS:
            raise StoreError(
                f"commit {commit.hex()} names a second {name.decode()!r} after its committer, "
                "which git would not read: refusing a commit that reads two ways"
            )
    try:
        return tree, tuple(parents), stamp, body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreError(f"commit {commit.hex()} has a message that is not UTF-8") from exc


def snapshot_of(commit: bytes, raw: bytes) -> Snapshot:
    """The ledger snapshot that commit ``commit``'s raw object ``raw`` records (refuses what is not one)."""
    tree, parents, stamp, message = parse_commit(commit, raw)
    trailers = parse_trailers(message)

    def one(key: str) -> str:
        values = trailers.get(key, [])
        if len(values) != 1:
            raise StoreError(f"commit {commit.hex()[:12]} has {len(values)} {key} trailers, expected 1")
        return values[0]

    try:
        root = parse_root(one("Ledger-Root"))
        pr = one("Ledger-Parent-Root")
        parent_root = None if pr == "none" else parse_root(pr)
        changes = tuple(parse_change(v) for v in trailers.get("Ledger-Change", []))
    except (ValueError, StoreError) as exc:
        raise StoreError(f"commit {commit.hex()[:12]} is not a ledger snapshot: {exc}") from exc
    return Snapshot(
        commit=commit.hex(),
        tree=tree.hex(),
        parents=parents,
        root=root,
        parent_root=parent_root,
        operation=one("Ledger-Operation"),
        changes=changes,
        message=message,
        timestamp=int(stamp),
        trailers=trailers,
    )


def format_record(versions: dict[str, int]) -> bytes:
    """A ``retired`` or ``versions`` record: ``<name> <version>\\n`` per name, in byte order of the name."""
    return b"".join(f"{n} {v}\n".encode() for n, v in sorted(versions.items(), key=lambda kv: kv[0].encode()))


def parse_record(data: bytes, entry: str = RETIRED) -> dict[str, int]:
    """Read a ``retired`` or ``versions`` record; refuse anything :func:`format_record` would not have written."""
    out: dict[str, int] = {}
    try:
        for line in data.decode("utf-8").splitlines():
            name, version = line.split(" ")
            out[name] = int(version)
    except ValueError as exc:
        raise StoreError(f"the snapshot's {entry!r} record is malformed", hint="run 'ledger audit'") from exc
    if format_record(out) != data:
        raise StoreError(f"the snapshot's {entry!r} record is not in canonical form", hint="run 'ledger audit'")
    return out


def _hex(sha: bytes | None) -> str:
    return sha.hex() if sha else ""
