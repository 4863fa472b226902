"""A target known to be in step from its metadata alone: the **instant record** a ``ledger sync``
pass leaves for each target, so that the next pass ``lstat``s what it names instead of reading
the target (docs/layouts.md, "No-op syncs").

``.ledger/cache/sync-<target>.instant.json`` holds:

- the folders the pass listed to find the skills (and a Hermes home's category files), and, for
  each skill whose files were what the manifest says, the paths of its folders and files: each
  group with a key of their ``lstat`` fields (mode, inode, size, mtime, ctime; git's index
  compares the same), computed as :func:`ledger._native.stat_keys` computes it;
- digests of all else the pass depended on: ``targets.json``, ``config.json``, the brain's
  ``syncignore``, the target's ``.ledgerignore``, and the manifest as the pass saved it;
- ``commit``: the head commit the whole target was found in step with (every skill projected
  there in place and unchanged, nothing in conflict, left alone or under way), else none.

A folder's mtime and ctime change when an entry is added, removed or renamed in it; a file's
when it is written, replaced or chmod'ed; a link swapped in changes the mode.  A group is keyed
only when every path in it is older, by :data:`RACY_NS`, than the moment it was listed or read
(git's "racily clean": an edit in the same clock tick would leave the fields as they were); it is
read again next time.  What no ``lstat`` field shows (same size, mtime restored *and* ctime
unchanged: a clock set back, a raw device write) is read by ``ledger sync --full``.

The record is bookkeeping: lost or corrupt, the next pass reads the target as it always did.
This module imports nothing heavy: :func:`answer` runs before click and the write engine load.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Sequence

__all__ = ["RACY_NS", "SCAN", "Group", "Record", "answer", "controls", "current_keys", "digest_of", "in_step",
           "read_ignore", "record_file"]  # fmt: skip

RACY_NS = 2_000_000_000  # a path is trusted once it is this much older than its reading (FAT keeps 2 s mtimes)
SCAN = "."  # the group of the folders a pass listed to find skills: the target's own folder
_FORMAT = 1
_DECLINE = object()  # read_ignore: a .ledgerignore no record can stand for (a link, a fifo, a huge file)
_IGNORE_FILE = ".ledgerignore"
_STAGING = ".ledger-staging"


def fields(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What a key covers of one ``lstat``: mode, inode, size (0 for a folder), mtime, ctime."""
    return st.st_mode, st.st_ino, 0 if stat.S_ISDIR(st.st_mode) else st.st_size, st.st_mtime_ns, st.st_ctime_ns


def key(rows: Iterable[tuple[int, ...]]) -> str:
    """The key of a group's fields, path by path: BLAKE3 over them as native int64s, first 16 bytes."""
    from array import array

    from blake3 import blake3

    flat = array("q", [v if v < 1 << 63 else v - (1 << 64) for row in rows for v in row])
    return blake3(flat.tobytes()).hexdigest()[:32]


class Group:
    """Paths under one folder of a target with their ``lstat`` fields, as one pass saw them;
    ``since`` is when it began to list or read them (every field must be older than that)."""

    __slots__ = ("rows", "since")

    def __init__(self, since: int) -> None:
        self.rows: dict[str, tuple[int, ...]] = {}
        self.since = since

    def add(self, rel: str, st: os.stat_result) -> None:
        self.rows[rel] = fields(st)

    def sealed(self) -> tuple[list[str], str] | None:
        """``(paths, key)``, or None while any path is racily clean (written within :data:`RACY_NS`)."""
        limit = self.since - RACY_NS
        if not self.rows or any(max(r[3], r[4]) >= limit for r in self.rows.values()):
            return None
        paths = sorted(self.rows)
        return paths, key(self.rows[p] for p in paths)


def current_keys(base: str, names: Sequence[str], groups: Sequence[Sequence[str]]) -> list[str | None]:
    """The key of each group ``groups[i]`` of paths under ``base/names[i]`` now (None: a path is gone):
    in C on several threads when the native module is built, as git's preloaded index does."""
    if not os.environ.get("LEDGER_PURE_PYTHON"):
        try:
            from ledger import _native
        except ImportError:  # pragma: no cover - the pure-Python build
            pass
        else:
            return _native.stat_keys(base, list(names), [list(g) for g in groups])
    out: list[str | None] = []
    for name, paths in zip(names, groups, strict=True):
        try:
            out.append(key(fields(os.lstat(f"{base}/{name}/{rel}" if rel else f"{base}/{name}")) for rel in paths))
        except OSError:
            out.append(None)
    return out


def record_file(control: str, name: str) -> str:
    return f"{control}/cache/sync-{name}.instant.json"


def digest_of(data: bytes | None) -> str:
    """A file's digest as a record names it (``-``: no such file)."""
    return "-" if data is None else hashlib.sha256(data).hexdigest()


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def controls(control: str, ignore: bytes | None) -> str:
    """One digest of what a pass over a target depends on besides the target and its manifest."""
    h = hashlib.sha256()
    for data in (_read(f"{control}/targets.json"), _read(f"{control}/config.json"), _read(f"{control}/syncignore"),
                 ignore):  # fmt: skip
        h.update(b"-" if data is None else b"%d:" % len(data) + data)
    return h.hexdigest()


def read_ignore(path: str) -> object:
    """The target's ``.ledgerignore`` as a pass reads it (None: there is none), or :data:`_DECLINE`."""
    try:
        st = os.lstat(f"{path}/{_IGNORE_FILE}")
    except FileNotFoundError:
        return None
    except OSError:
        return _DECLINE
    if not stat.S_ISREG(st.st_mode) or st.st_size > 1 << 20:
        return _DECLINE
    try:
        fd = os.open(f"{path}/{_IGNORE_FILE}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return _DECLINE
    try:
        data = b""
        while chunk := os.read(fd, 1 << 20):
            data += chunk
        return data
    finally:
        os.close(fd)


def real_folder(path: str) -> bool:
    """Whether every part of absolute ``path`` is a folder and none a link (what a pass opens)."""
    if not path.startswith("/"):
        return False
    here = ""
    for part in path.split("/"):
        if not part:
            continue
        here += "/" + part
        try:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return False
        except OSError:
            return False
    return True


class Record:
    """One target's instant record: see the module's doc."""

    def __init__(self, controls: str, manifest: str, commit: str | None, scan: tuple[list[str], str] | None,
                 found: dict[str, object] | None, skills: dict[str, tuple[str, list[str], str]]) -> None:  # fmt: skip
        self.controls, self.manifest, self.commit = controls, manifest, commit
        self.scan = scan  # (paths under the target, key)
        self.found = found  # what the scan found, when it can stand for it: {"skills": {…}, "more": […]}
        self.skills = skills  # key → (its folder, paths under it, key)

    @classmethod
    def load(cls, path: str) -> Record | None:
        try:
            with open(path, "rb") as fh:
                doc = json.loads(fh.read())
            if doc.get("format") != _FORMAT:
                return None
            shapes = doc["shapes"]
            skills = {k: (d, shapes[s], key) for k, d, s, key in zip(doc["names"], doc["dirs"], doc["shape"],
                                                                       doc["keys"], strict=True)}  # fmt: skip
            scan = (doc["scan"], doc["scan_key"]) if doc.get("scan_key") else None
            rec = cls(doc["controls"], doc["manifest"], doc.get("commit"), scan, doc.get("found"), skills)
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None  # a corrupt record is no record
        if not all(isinstance(v, str) for v in (rec.controls, rec.manifest)) or (
                rec.scan is not None and not all(isinstance(p, str) for p in rec.scan[0])):  # fmt: skip
            return None
        for d, paths, k in skills.values():
            if not (isinstance(d, str) and isinstance(k, str) and isinstance(paths, list)
                    and all(isinstance(p, str) for p in paths)):  # fmt: skip
                return None
        return rec

    def save(self, path: str) -> None:
        """Written whole and renamed into place; no fsync: it is checked on every use."""
        shapes: dict[tuple[str, ...], int] = {}
        names = sorted(self.skills)
        doc = {"format": _FORMAT, "controls": self.controls, "manifest": self.manifest, "commit": self.commit,
               "scan": self.scan[0] if self.scan else [], "scan_key": self.scan[1] if self.scan else None,
               "found": self.found, "names": names, "dirs": [self.skills[k][0] for k in names],
               "shape": [shapes.setdefault(tuple(self.skills[k][1]), len(shapes)) for k in names],
               "shapes": [list(s) for s in shapes], "keys": [self.skills[k][2] for k in names]}  # fmt: skip
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(json.dumps(doc, separators=(",", ":")).encode())
        os.replace(tmp, path)

    def matching(self, base: str) -> set[str]:
        """The groups whose paths are as recorded: :data:`SCAN`, and the key of each such skill."""
        names, dirs, groups = [], [], []
        if self.scan is not None:
            names.append(SCAN)
            dirs.append(SCAN)
            groups.append(self.scan[0])
        for k, (d, paths, _) in self.skills.items():
            names.append(k)
            dirs.append(d)
            groups.append(paths)
        want = [self.scan[1]] if self.scan is not None else []
        want += [k for _, _, k in self.skills.values()]
        got = current_keys(base, dirs, groups)
        return {n for n, w, g in zip(names, want, got, strict=True) if g is not None and g == w}


def in_step(control: str, name: str, path: str, commit: str, *, rec: Record | None = None) -> bool:
    """Whether a pass over target ``name`` (folder ``path``) would find nothing to do with head
    ``commit``: its record says the whole target was in step with ``commit``, nothing it depends
    on has changed since, and no pass is under way or was killed in it."""
    rec = rec or Record.load(record_file(control, name))
    if rec is None or rec.commit is None or rec.commit != commit or rec.scan is None:
        return False
    if os.path.lexists(f"{control}/sync/{name}.pending.json") or os.path.lexists(
            f"{control}/sync/work/{name}/{_STAGING}"):  # fmt: skip
        return False  # a killed pass to settle, or its staging to tidy
    parent, base = os.path.split(path.rstrip("/"))
    if os.path.lexists(f"{parent}/.{base}.ledger-sync/{_STAGING}") or not real_folder(path):
        return False
    ignore = read_ignore(path)
    if ignore is _DECLINE or rec.controls != controls(control, ignore):  # type: ignore[arg-type]
        return False
    if rec.manifest != digest_of(_read(f"{control}/sync/{name}.json")):
        return False
    return len(rec.matching(path)) == len(rec.skills) + 1


# ---------------------------------------------------------------------------------------------- the quick path


def answer(args: list[str]) -> str | None:
    """The whole output of ``ledger [--brain B] sync [NAME…] [--json]`` when every target is in
    step with the head by its record and there is nothing else to do (no remote, no merge conflict,
    no killed write); else None, and the click CLI does the whole job (the same output: tested)."""
    try:
        return _answer(args)
    except Exception:
        return None


def _answer(args: list[str]) -> str | None:
    given = None
    if args[:1] == ["--brain"] and len(args) > 1:
        given, args = args[1], args[2:]
    elif args[:1] and args[0].startswith("--brain="):
        given, args = args[0].split("=", 1)[1], args[1:]
    else:
        given = os.environ.get("LEDGER_BRAIN") or None
    if args[:1] != ["sync"] or (given is not None and not given):
        return None
    rest = args[1:]
    as_json = "--json" in rest
    names = [a for a in rest if a != "--json"]
    if rest.count("--json") > 1 or any(n.startswith("-") or not n for n in names) or len(set(names)) < len(names):
        return None
    root = _brain(given)
    if root is None:
        return None
    control, git_dir = f"{root}/.ledger", f"{root}/.git"
    if os.path.islink(f"{root}/skills") or os.path.lexists(f"{control}/journal.json"):
        return None  # opening the brain would refuse, or roll a killed write forward
    if any(os.path.lexists(f"{git_dir}/{ref}.lock") for ref in ("refs/heads/main", "refs/notes/ledger-chain")):
        return None
    if os.path.lexists(f"{control}/fleet/conflicts.json"):
        return None  # merge conflicts are listed by the full path
    with open(f"{control}/config.json", "rb") as fh:
        remote = json.loads(fh.read()).get("remote")
    if not names and isinstance(remote, dict) and remote.get("url"):
        return None  # the remote half runs in the full path
    with open(f"{control}/targets.json", "rb") as fh:
        targets = json.loads(fh.read())["targets"]
    by_name = {t["name"]: t for t in targets}
    chosen = [by_name[n] for n in names] if names else targets
    if not chosen or any(t.get("committed") for t in chosen):
        return None
    commit = _head(git_dir)
    if commit is None:
        return None
    fd = os.open(f"{control}/sync.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # a sync is running: the full path waits its turn
        if not all(in_step(control, t["name"], t["path"], commit) for t in chosen):
            return None
    finally:
        os.close(fd)
    if not as_json:
        return "\n".join(f"{t['name']}: in step" for t in chosen)
    empty = {k: [] for k in ("recorded", "projected", "removed", "conflicts", "left_alone", "rescued")}
    doc = {"targets": [{"name": t["name"], "path": t["path"], "status": "ok", **empty} for t in chosen],
           "conflicts": 0, "refused": 0, "merge_conflicts": []}  # fmt: skip
    return json.dumps(doc, indent=2, ensure_ascii=False)


def _brain(given: str | None) -> str | None:
    """The brain the CLI would open (``--brain`` itself, else the nearest holding ``.ledger/config.json``)."""
    here = os.path.join(os.getcwd(), given) if given is not None else os.getcwd()
    while True:
        if os.path.isfile(f"{here}/.ledger/config.json"):
            return here
        up = os.path.dirname(here)
        if given is not None or up == here:
            return None
        here = up


def _head(git_dir: str) -> str | None:
    """``refs/heads/main``, loose or packed."""
    data = _read(f"{git_dir}/refs/heads/main")
    if data is None:
        for line in (_read(f"{git_dir}/packed-refs") or b"").decode().splitlines():
            if line.endswith(" refs/heads/main"):
                data = line.split(" ", 1)[0].encode()
                break
    text = (data or b"").decode().strip()
    return text if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else None
