"""A runtime's skills folder, reached and changed only through directory descriptors.

A target is somebody else's folder (``~/.claude/skills``, ``~/.hermes/skills``) that a
runtime and people write while the ledger reads and writes it.  So every operation here
is relative to a descriptor opened without following links, from ``/`` down:

- a symbolic link anywhere (the target's path, a skill folder, a file in a skill) is
  never followed; a skill holding one is refused, and left as it is;
- a skill is written whole into ``.ledger-staging/`` in the target's work folder (in the
  brain, never where a runtime scans: ADR 25), then renamed into place:
  ``RENAME_NOREPLACE`` for a new skill, ``RENAME_EXCHANGE`` to replace one, so a runtime
  sees the old skill or the new one, never half of either (ADR 23);
- what an exchange displaces is compared with what the ledger expected to displace.
  An edit that landed in between is put back, never deleted (:meth:`TargetFS.settle`).

Reads are cached by ``stat`` like git's index: an entry is trusted only if the file's
mtime is older than the moment it was hashed by more than :data:`RACY_NS`; and what a pass
listed and read is keyed by its ``lstat`` fields for the next one (:class:`Group`,
:mod:`ledger.folders.instant`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from ledger.bundle.skill import SKILL_MD, SUPPORT_DIRS
from ledger.errors import LedgerError
from ledger.folders.descriptors import DIR_FLAGS as _DIR
from ledger.folders.descriptors import (
    EXCHANGE,
    NOREPLACE,
    TargetError,
    descend,
    open_path,
    printable,
    renameat2,
    utf8,
    work_dir,
)
from ledger.folders.ignoring import Matcher, nothing
from ledger.folders.instant import Group
from ledger.store.gitstore import MODE_EXEC, MODE_FILE, FileMap, blob_id
from ledger.write.writepath import read_limited

__all__ = ["RACY_NS", "STAGING", "Scan", "TargetError", "TargetFS"]

STAGING = ".ledger-staging"  # whole skills are written here, then renamed into place
RESCUED = ".ledger-rescued"  # what an interrupted exchange displaced that nobody recorded yet
RACY_NS = 1_000_000_000  # a stat entry is trusted once the file is this much older than its hashing
_SKIP = frozenset(
    {".git", ".github", ".hub", ".archive", "node_modules", ".venv", "venv", "__pycache__", STAGING, RESCUED}
)


@dataclass
class Scan:
    """What a target holds: each skill folder (``key → relative dir``), and what was left alone, and why."""

    skills: dict[str, str] = field(default_factory=dict)
    more: list[tuple[str, str]] = field(default_factory=list)  # (folder, dir): a folder name seen again (hermes)
    refused: dict[str, str] = field(default_factory=dict)  # relative dir → why
    categories: dict[str, bytes] = field(default_factory=dict)  # hermes: category files by relative path
    group: Group = field(default_factory=Group)  # what was listed and looked into (instant.SCAN)


class TargetFS:
    """One open target: a descriptor of its folder, and the operations the projection needs.

    ``work`` is where whole skills are staged and what nobody can explain is kept: a folder no
    runtime scans (Hermes lists every ``SKILL.md`` under its home, dot-folders included), on the
    target's filesystem so that a rename can move a skill in one step.  ``None`` stages inside
    the folder itself (``ledger export`` into a new folder)."""

    def __init__(self, path: str, layout: str, limit: int, work: str | None = None) -> None:
        self.path, self.layout, self.limit = path, layout, limit
        self.ignore: Matcher = nothing  # debris never read nor replaced (ledger.folders.ignoring)
        self.held: Callable[[str, str], bool] = lambda folder, path: False  # what no rule hides (ignoring.Held)
        self.owns: Callable[[str, str], bool] = lambda outer, inner: layout != "hermes"  # see scan()
        self.fd = open_path(path)
        self.work_fd, self.work = -1, path
        try:
            if work is None:
                self.work_fd = os.dup(self.fd)
            else:
                self.work_fd, self.work = work_dir(self.fd, path, work)
                self._adopt_legacy()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for name in ("fd", "work_fd"):
            if getattr(self, name) >= 0:
                os.close(getattr(self, name))
                setattr(self, name, -1)

    def _adopt_legacy(self) -> None:
        """Staged and rescued copies an older ledger kept inside the target move to the work folder."""
        for folder in (STAGING, RESCUED):
            try:
                src = os.open(folder, _DIR, dir_fd=self.fd)
            except OSError:
                continue
            try:
                with self._wdir(folder, create=True) as dst:
                    for e in os.scandir(src):
                        os.rename(e.name, e.name, src_dir_fd=src, dst_dir_fd=dst)
            finally:
                os.close(src)
            with contextlib.suppress(OSError):
                os.rmdir(folder, dir_fd=self.fd)

    def __enter__(self) -> TargetFS:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ descriptors

    @contextlib.contextmanager
    def _dir(self, rel: str, create: bool = False) -> Iterator[int]:
        """A descriptor of ``rel`` inside the target, each part opened without following links."""
        fd = descend(self.fd, rel.split("/"), f"{self.path}/{rel}", create=create)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _wdir(self, rel: str, create: bool = False) -> Iterator[int]:
        """A descriptor of ``rel`` inside the work folder."""
        fd = descend(self.work_fd, rel.split("/"), f"{self.work}/{rel}", create=create)
        try:
            yield fd
        finally:
            os.close(fd)

    @staticmethod
    def _split(rel: str) -> tuple[str, str]:
        parent, _, name = rel.rpartition("/")
        return parent, name

    # ------------------------------------------------------------------ reading

    def scan(self) -> Scan:
        """Every skill folder in the target's layout; folders that are links are refused, not followed.

        In a Hermes home a skill folder is searched further, as Hermes searches it
        (``agent/skill_utils.py``): a folder inside it that holds a ``SKILL.md`` is a skill of its
        own, in the category of the outer folder, unless it sits in one of the skill's own support
        folders, or :attr:`owns` says the outer skill holds it as its files (a brain recorded so)."""
        out = Scan()  # its group's clock starts before the first listing
        stack: list[tuple[str, str | None]] = [("", None)]  # (folder, the skill it is inside)
        while stack:
            rel, inside = stack.pop()
            with self._dir(rel) as fd:
                out.group.add(rel, os.fstat(fd))  # an entry added, removed or renamed in it changes this
                entries = sorted(os.scandir(fd), key=lambda e: e.name)
                for e in entries:
                    child = f"{rel}/{e.name}" if rel else e.name
                    if e.name in _SKIP or e.name.startswith(".ledger-"):
                        continue
                    if inside is not None and (
                        not e.is_dir(follow_symlinks=False) or (inside == rel and e.name in SUPPORT_DIRS)
                    ):
                        continue  # a skill's own files and support folders: read by state(), not here
                    try:
                        utf8(e.name, rel)
                    except TargetError as exc:
                        out.refused[printable(child)] = exc.message
                        continue
                    if self.ignore(e.name + "/" if e.is_dir(follow_symlinks=False) else e.name) and not (
                        e.is_dir(follow_symlinks=False) and self.held(child, "")
                    ):
                        continue  # debris, or a folder the brain holds no skill in
                    if e.is_symlink():
                        if rel == "" or self.layout == "hermes":
                            out.refused[child] = "a symbolic link (never followed)"
                        continue
                    if e.is_dir(follow_symlinks=False):
                        out.group.add(child, e.stat(follow_symlinks=False))  # a SKILL.md added or removed
                        skill = self._has_skill_md(fd, e.name) and (inside is None or not self.owns(inside, child))
                        if skill:
                            if e.name in out.skills:
                                out.more.append((e.name, child))  # the same name in another category
                            else:
                                out.skills[e.name] = child
                        if self.layout == "hermes":
                            stack.append((child, child if skill else inside))
                    elif rel and self.layout == "hermes" and e.is_file(follow_symlinks=False):
                        with contextlib.suppress(OSError, LedgerError):
                            out.group.add(child, e.stat(follow_symlinks=False))  # keyed before it is read
                            out.categories[child] = self._read_file(fd, e.name)[0]
        return out

    def holds_skill(self, rel: str) -> bool:
        """Whether the folder at ``rel`` holds a ``SKILL.md`` (False if it is gone or no folder)."""
        parent, name = self._split(rel)
        try:
            with self._dir(parent) as fd:
                return self._has_skill_md(fd, name)
        except (OSError, LedgerError):
            return False

    def read_top(self, name: str) -> bytes | None:
        """A file at the top of the target (its ``.ledgerignore``), or None; a link is never followed."""
        try:
            return self._read_file(self.fd, name)[0]
        except (OSError, LedgerError):
            return None

    @staticmethod
    def _has_skill_md(fd: int, name: str) -> bool:
        try:
            st = os.stat(f"{name}/{SKILL_MD}", dir_fd=fd, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode)

    def _read_file(self, dir_fd: int, name: str) -> tuple[bytes, os.stat_result]:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise TargetError(f"{name} is not a regular file")
            try:
                return read_limited(fd, self.limit, name), st
            except LedgerError as exc:
                raise TargetError(exc.message, hint="raise limits.file in .ledger/config.json") from None
        finally:
            os.close(fd)

    def state(
        self,
        rel: str,
        cache: Mapping[str, list] | None = None,
        *,
        work: bool = False,
        group: Group | None = None,
        held_as: str | None = None,
    ) -> tuple[FileMap, dict[str, list]]:
        """The skill at ``rel`` as a file map, and its stat entries; files whose stat entry in
        ``cache`` still holds are not read again; ``group`` gets the ``lstat`` fields of its folders
        and files, each taken before it is read.  Raises :class:`TargetError` for a link or special
        file inside the skill (it is refused as a whole, never partly recorded)."""
        files: FileMap = {}
        stats: dict[str, list] = {}
        for path, dir_fd, name, st in self._walk(rel, work, group=group, held_as=held_as):
            if group is not None:
                group.add(path, st)
            mode = MODE_EXEC if st.st_mode & stat.S_IXUSR else MODE_FILE
            old = (cache or {}).get(path)
            key = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
            if old is not None and old[2:6] == key and old[6] - st.st_mtime_ns > RACY_NS and old[0] == mode:
                files[path], stats[path] = (mode, bytes.fromhex(old[1])), old
                continue
            seen = _now()
            data, st2 = self._read_file(dir_fd, name)
            mode = MODE_EXEC if st2.st_mode & stat.S_IXUSR else MODE_FILE
            files[path] = (mode, blob_id(data))
            stats[path] = [mode, files[path][1].hex(), st2.st_size, st2.st_mtime_ns, st2.st_ctime_ns, st2.st_ino, seen]
        return files, stats

    def read(self, rel: str, *, ignored: bool = False, work: bool = False) -> dict[str, tuple[bytes, bool]]:
        """Every file of the skill at ``rel`` (in the work folder with ``work``): ``path → (bytes, executable)``;
        with ``ignored``, only the debris the ignore rules keep out of it (carried across when the ledger
        replaces the folder)."""
        out = {}
        for path, dir_fd, name, _ in self._walk(rel, work, ignored=ignored):
            data, st = self._read_file(dir_fd, name)
            out[path] = (data, bool(st.st_mode & stat.S_IXUSR))
        return out

    def _walk(
        self,
        rel: str,
        work: bool = False,
        *,
        ignored: bool = False,
        group: Group | None = None,
        held_as: str | None = None,
    ) -> Iterator[tuple[str, int, str, os.stat_result]]:
        """Each regular file of the skill at ``rel`` that the ignore rules keep (or, with ``ignored``,
        each one they leave out); a link or special file that is kept refuses the whole skill.
        A file the brain holds in the skill's folder (:attr:`held`; a staged copy: in ``held_as``)
        is kept whatever the rules say.
        ``group`` gets the ``lstat`` fields of each folder walked (``""``: the skill's own)."""
        folder = held_as if work else rel
        with self._wdir(rel) if work else self._dir(rel) as top:
            if group is not None:
                group.add("", os.fstat(top))
            stack: list[tuple[int, str, bool]] = [(os.dup(top), "", False)]
            try:
                while stack:
                    fd, prefix, skipped = stack.pop()
                    try:
                        for e in os.scandir(fd):  # unsorted: the caller keys what it finds by path
                            utf8(e.name, f"{rel}/{prefix}")
                            st = e.stat(follow_symlinks=False)
                            is_dir = stat.S_ISDIR(st.st_mode)
                            inner = f"{prefix}{e.name}/" if is_dir else f"{prefix}{e.name}"
                            hide = skipped or self.ignore(inner)  # what the rules alone would leave out
                            out = hide and (folder is None or not self.held(folder, inner))
                            if is_dir and not work and self._nested(rel, prefix, e.name, fd):
                                continue  # a skill of its own inside this one (Hermes): never its files
                            if is_dir:
                                if out and not ignored:
                                    continue  # an ignored folder is never read
                                if group is not None:
                                    group.add(f"{prefix}{e.name}", st)
                                try:
                                    stack.append((os.open(e.name, _DIR, dir_fd=fd), f"{prefix}{e.name}/", hide))
                                except OSError as exc:
                                    raise TargetError(f"{self.path}/{rel}/{prefix}{e.name}: {exc.strerror}") from None
                            elif out != ignored:
                                continue  # a kept file in a walk for debris, or debris in a walk for the skill
                            elif stat.S_ISREG(st.st_mode):
                                yield f"{prefix}{e.name}", fd, e.name, st
                            elif not ignored:
                                kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a special file"
                                raise TargetError(
                                    f"{rel}/{prefix}{e.name} is {kind}; a skill holds only files "
                                    "and folders, so it is left as it is",
                                    hint="replace the link with the file it points to",
                                )
                    finally:
                        os.close(fd)
            finally:
                for fd, *_ in stack:
                    os.close(fd)

    def _nested(self, rel: str, prefix: str, name: str, fd: int) -> bool:
        """Whether folder ``prefix + name`` of the skill at ``rel`` is a skill of its own (see :meth:`scan`)."""
        if self.layout != "hermes" or (prefix or name + "/").split("/", 1)[0] in SUPPORT_DIRS:
            return False  # inside the skill's own support folders Hermes looks for no skill
        if not self._has_skill_md(fd, name):
            return False
        return not self.owns(rel, f"{rel}/{prefix}{name}")

    # ------------------------------------------------------------------ writing

    @staticmethod
    def new_name() -> str:
        """A fresh name in :data:`STAGING`, chosen before anything is written under it."""
        return secrets.token_hex(8)

    def stage(self, files: Mapping[str, tuple[bytes, bool]], name: str) -> dict[str, list]:
        """Write a whole skill into folder ``name`` under :data:`STAGING`; return its stat entries."""
        with self._wdir(STAGING, create=True) as sfd:
            os.mkdir(name, 0o755, dir_fd=sfd)
            stats: dict[str, list] = {}
            with self._wdir(f"{STAGING}/{name}") as top:
                for path in sorted(files):
                    data, executable = files[path]
                    parent, base = self._split(path)
                    with self._subdir(top, parent) as pfd:
                        mode = 0o755 if executable else 0o644
                        fd = os.open(
                            base, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=pfd
                        )
                        try:
                            view = memoryview(data)
                            while view:
                                view = view[os.write(fd, view) :]
                            os.fchmod(fd, mode)
                            st = os.fstat(fd)
                        finally:
                            os.close(fd)
                    gmode = MODE_EXEC if executable else MODE_FILE
                    stats[path] = [
                        gmode,
                        blob_id(data).hex(),
                        st.st_size,
                        st.st_mtime_ns,
                        st.st_ctime_ns,
                        st.st_ino,
                        _now(),
                    ]
        return stats

    @staticmethod
    @contextlib.contextmanager
    def _subdir(top: int, rel: str) -> Iterator[int]:
        fd = os.dup(top)
        try:
            for part in [p for p in rel.split("/") if p]:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                nfd = os.open(part, _DIR, dir_fd=fd)
                os.close(fd)
                fd = nfd
            yield fd
        finally:
            os.close(fd)

    def place_new(self, staged: str, rel: str) -> bool:
        """Rename a staged skill to ``rel`` unless something is there now (then False, and it stays staged)."""
        parent, name = self._split(rel)
        with self._wdir(STAGING) as sfd, self._dir(parent, create=True) as pfd:
            try:
                renameat2(sfd, staged, pfd, name, NOREPLACE)
            except OSError as exc:
                if exc.errno == errno.EEXIST:
                    return False
                if exc.errno not in (errno.ENOSYS, errno.EINVAL):
                    raise
                try:  # no renameat2 here: look, then rename (a narrow window, said in ADR 23)
                    os.stat(name, dir_fd=pfd, follow_symlinks=False)
                    return False
                except FileNotFoundError:
                    os.rename(staged, name, src_dir_fd=sfd, dst_dir_fd=pfd)
        return True

    def exchange(self, staged: str, rel: str) -> None:
        """Swap the staged folder with the skill at ``rel`` in one step: the old one is then staged."""
        parent, name = self._split(rel)
        with self._wdir(STAGING) as sfd, self._dir(parent) as pfd:
            try:
                renameat2(sfd, staged, pfd, name, EXCHANGE)
            except OSError as exc:
                if exc.errno not in (errno.ENOSYS, errno.EINVAL):
                    raise
                aside = staged + ".old"  # no exchange here: the skill is briefly absent, never half there
                os.rename(name, aside, src_dir_fd=pfd, dst_dir_fd=sfd)
                os.rename(staged, name, src_dir_fd=sfd, dst_dir_fd=pfd)
                os.rename(aside, staged, src_dir_fd=sfd, dst_dir_fd=sfd)

    def take_out(self, rel: str, staged: str) -> None:
        """Move the skill at ``rel`` to ``staged`` in :data:`STAGING` (a removal that can still be undone)."""
        parent, name = self._split(rel)
        with self._wdir(STAGING, create=True) as sfd, self._dir(parent) as pfd:
            os.rename(name, staged, src_dir_fd=pfd, dst_dir_fd=sfd)

    def put_back(self, staged: str, rel: str) -> bool:
        return self.place_new(staged, rel)

    def staged_state(self, staged: str, held_as: str | None = None) -> FileMap | None:
        """A staged copy's state; ``held_as``: the folder it was (or is to be), whose held files it keeps."""
        try:
            return self.state(f"{STAGING}/{staged}", work=True, held_as=held_as)[0]
        except (OSError, LedgerError):
            return None

    def discard(self, staged: str) -> None:
        """Delete a staged folder: renamed to ``<name>.gone`` first, so a kill halfway through the
        delete never leaves a half-deleted skill under a name a pass might put back."""
        with self._wdir(STAGING) as sfd:
            with contextlib.suppress(FileNotFoundError):
                os.rename(staged, staged + ".gone", src_dir_fd=sfd, dst_dir_fd=sfd)
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(staged + ".gone", dir_fd=sfd)

    def rescue(self, staged: str, key: str, note: Mapping[str, str] | None = None) -> str:
        """Keep a copy aside, out of the runtime's sight, in the work folder's ``.ledger-rescued/<key>-<n>``,
        with ``note`` (what it is and why) beside it as ``<key>-<n>.json``; its absolute path."""
        name = f"{key}-{secrets.token_hex(4)}"
        with self._wdir(STAGING) as sfd, self._wdir(RESCUED, create=True) as rfd:
            if note is not None:  # a fresh name, written before the copy it explains is moved beside it
                doc = {"skill": key, **note, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                fd = os.open(
                    f"{name}.json",
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o644,
                    dir_fd=rfd,
                )
                try:
                    os.write(fd, json.dumps(doc, sort_keys=True).encode())
                finally:
                    os.close(fd)
            os.rename(staged, name, src_dir_fd=sfd, dst_dir_fd=rfd)
        return f"{self.work}/{RESCUED}/{name}"

    def read_one(self, rel: str) -> tuple[bytes, bool] | None:
        """One file in the target (bytes, executable), or None if it is not there (or not a regular file)."""
        parent, name = self._split(rel)
        try:
            with self._dir(parent) as pfd:
                data, st = self._read_file(pfd, name)
        except (OSError, LedgerError):
            return None
        return data, bool(st.st_mode & stat.S_IXUSR)

    def put_merged(
        self,
        rel: str,
        want: tuple[bytes, bool] | None,
        expect: tuple[bytes, bool] | None,
        join: Callable[[bytes | None, bytes, bytes], bytes | None],
    ) -> bool:
        """Put ``want`` at ``rel`` (None: take the file out) where ``expect`` is (None: nothing), one rename
        at a time, so a runtime never sees half a file.  A file its writer renamed there in between is
        never dropped: what a rename displaced that is not ``expect`` is joined into what goes in next
        (``join(base, earlier, later)``, both the runtime's edits), until a rename displaces exactly what
        was put there.  False if that cannot be done (a folder gone, or data that cannot be joined):
        then what is there stays."""
        parent, name = self._split(rel)
        try:
            ctx = contextlib.ExitStack()
            sfd = ctx.enter_context(self._wdir(STAGING, create=True))
            pfd = ctx.enter_context(self._dir(parent, create=want is not None))
        except (OSError, LedgerError):
            return False
        with ctx:
            for _ in range(64):  # each round is a runtime write landing within a rename: a few at most
                tmp = self.new_name()
                if want is not None:
                    mode = 0o755 if want[1] else 0o644
                    fd = os.open(
                        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=sfd
                    )
                    try:
                        view = memoryview(want[0])
                        while view:
                            view = view[os.write(fd, view) :]
                        os.fchmod(fd, mode)
                    finally:
                        os.close(fd)
                try:
                    if want is not None and expect is None:
                        renameat2(sfd, tmp, pfd, name, NOREPLACE)
                        return True
                    if want is not None:
                        renameat2(sfd, tmp, pfd, name, EXCHANGE)
                    else:
                        os.rename(name, tmp, src_dir_fd=pfd, dst_dir_fd=sfd)
                except FileExistsError:  # written there meanwhile: join it, and exchange
                    os.unlink(tmp, dir_fd=sfd)
                    expect = self._read_one(pfd, name)
                    if expect is None:
                        return False
                    want = self._join(join, None, want, expect)
                    if want is None:
                        return False
                    continue
                except FileNotFoundError:  # taken out meanwhile
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp, dir_fd=sfd)
                    if want is None:
                        return True
                    expect = None
                    continue
                except OSError:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp, dir_fd=sfd)
                    return False
                displaced = self._read_one(sfd, tmp)
                if displaced == expect:
                    os.unlink(tmp, dir_fd=sfd)
                    return True
                # The runtime renamed a newer file in after ``expect`` was read: what is in place now is
                # ``want``, without that write.  Join it in, and put the result over ``want``.
                joined = self._join(join, expect[0] if expect else None, want, displaced) if displaced else want
                if joined is None:  # cannot be joined: the runtime's write goes back, as it was
                    renameat2(sfd, tmp, pfd, name, EXCHANGE) if want is not None else renameat2(
                        sfd, tmp, pfd, name, NOREPLACE
                    )
                    return False
                os.unlink(tmp, dir_fd=sfd)
                want, expect = joined, want
        return False

    @staticmethod
    def _join(
        join: Callable[[bytes | None, bytes, bytes], bytes | None],
        base: bytes | None,
        earlier: tuple[bytes, bool] | None,
        later: tuple[bytes, bool],
    ) -> tuple[bytes, bool] | None:
        if earlier is None:
            return later  # a removal, then a write: the write is the later
        data = join(base, earlier[0], later[0])
        return None if data is None else (data, later[1])

    def _read_one(self, dir_fd: int, name: str) -> tuple[bytes, bool] | None:
        try:
            data, st = self._read_file(dir_fd, name)
        except (OSError, LedgerError):
            return None
        return data, bool(st.st_mode & stat.S_IXUSR)

    def tidy(self) -> None:
        """Remove the staging folder once empty, so a runtime's folder holds only skills."""
        with contextlib.suppress(OSError):
            os.rmdir(STAGING, dir_fd=self.work_fd)

    def staged(self) -> list[str]:
        try:
            with self._wdir(STAGING) as sfd:
                return sorted(e.name for e in os.scandir(sfd))
        except FileNotFoundError:
            return []

    def put_file(self, rel: str, data: bytes | None, expect: str | None) -> bool:
        """Put one file (a category's ``DESCRIPTION.md``) at ``rel`` in one rename, or take it out
        (``data`` None), if what is there is still ``expect`` (a blob id in hex, None: nothing).
        What a rename displaced that is not ``expect`` goes back at once; False then."""
        parent, name = self._split(rel)
        staged = self.new_name()
        with self._wdir(STAGING, create=True) as sfd, self._dir(parent, create=data is not None) as pfd:
            if data is not None:
                fd = os.open(
                    staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=sfd
                )
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)
                if expect is None:
                    try:
                        renameat2(sfd, staged, pfd, name, NOREPLACE)
                        return True
                    except FileExistsError:
                        os.unlink(staged, dir_fd=sfd)
                        return False
                renameat2(sfd, staged, pfd, name, EXCHANGE)
            else:
                os.rename(name, staged, src_dir_fd=pfd, dst_dir_fd=sfd)
            try:
                displaced = blob_id(self._read_file(sfd, staged)[0]).hex()
            except (OSError, LedgerError):
                displaced = None
            if displaced == expect:
                os.unlink(staged, dir_fd=sfd)
                return True
            if data is None:
                renameat2(sfd, staged, pfd, name, NOREPLACE)  # an edit made meanwhile goes back
            else:
                renameat2(sfd, staged, pfd, name, EXCHANGE)
                os.unlink(staged, dir_fd=sfd)  # our own copy, never seen by anyone as the file
            return False

    def write_missing(self, rel: str, data: bytes) -> None:
        """A Hermes category file the target lacks (``DESCRIPTION.md``); an existing one is never replaced."""
        parent, name = self._split(rel)
        with self._dir(parent, create=True) as pfd, contextlib.suppress(FileExistsError):
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=pfd)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)


def _now() -> int:
    return time.time_ns()
