"""Import adapters: where skills live in each runtime's layout, read without following links.

- ``agentskills``: a folder of skill folders (``<name>/SKILL.md``), or one skill folder;
- ``claude``: the same shape (``.claude/skills/<name>/``);
- ``hermes``: a category tree ``<category>/[<sub>/]<name>/SKILL.md``, with a
  ``DESCRIPTION.md`` (and any other files) in category folders; found as Hermes finds
  skills, so a skill folder may also be a category (``dogfood/SKILL.md`` beside
  ``dogfood/wrap-up/SKILL.md`` is two skills, as Hermes's own ``skills/`` ships them);
- ``slopstock``: flat ``<stem>.md`` files, each a SKILL.md with top-level ``name``,
  ``description`` and ``version``.

A skill's key in the brain is its folder name (its stem for Slopstock), slugged
only if it is not already a valid key, and the report says so. Category files
are kept beside the bundle (docs/layouts.md).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ledger.bundle.collection import Collection, Found, HermesShape, hermes_shape
from ledger.bundle.skill import SKILL_MD, check_name, slugify
from ledger.errors import LedgerError, UsageError
from ledger.folders.folder import TargetFS
from ledger.write.writepath import read_limited

__all__ = ["LAYOUTS", "Collection", "Found", "detect", "read"]

LAYOUTS = ("auto", "agentskills", "claude", "hermes", "slopstock")
_SKIP = frozenset({".git", ".hub", ".archive", "node_modules", ".venv", "venv", "__pycache__"})  # as Hermes scans


HOMES = (".claude/skills", ".agents/skills", ".codex/skills", "skills")


def _entries(path: Path) -> list[tuple[str, int]]:
    """``(name, file type)`` of each entry, sorted; the type comes from the directory listing
    (``d_type``) where the file system gives it, so a 10,000-skill import does not lstat twice."""
    out = []
    with os.scandir(path) as it:
        for e in it:
            if e.is_dir(follow_symlinks=False):
                kind = stat.S_IFDIR
            elif e.is_file(follow_symlinks=False):
                kind = stat.S_IFREG
            else:
                kind = stat.S_IFMT(e.stat(follow_symlinks=False).st_mode)
            out.append((e.name, kind))
    return sorted(out)


def _is_file(*parts: str | Path) -> bool:
    return os.path.isfile(os.path.join(*parts))


def _read(path: Path, limit: int) -> tuple[bytes, bool]:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise LedgerError(f"{path} is not a regular file")
        try:
            return read_limited(fd, limit, str(path)), bool(mode & stat.S_IXUSR)
        except LedgerError as exc:
            raise LedgerError(exc.message, hint="raise limits.file in .ledger/config.json") from None
    finally:
        os.close(fd)


def _key(folder: str, notes: list[str]) -> str:
    try:
        return check_name(folder)
    except LedgerError:
        key = slugify(folder)
        notes.append(f"folder {folder!r} is not a valid skill key; stored as {key!r}")
        return key


def _skill_folder(
    path: Path,
    limit: int,
    category: str | None = None,
    foreign: frozenset[str] = frozenset(),
    parent: TargetFS | None = None,
) -> Found:
    """One skill read whole by the projection's reader (:class:`TargetFS`): through descriptors,
    never following a link, so import and ``ledger sync`` read a folder the same way.  ``foreign``
    are its top-level entries that are not its own (a folder of skills inside it, ``x/``, and the
    category's DESCRIPTION.md): they are never read into it.  ``parent``: its folder, opened once
    for all the skills in it (else opened here, from ``/`` down)."""
    notes: list[str] = []
    found = Found(_key(path.name, notes), path.name, str(path), category=category, notes=notes)
    try:
        with (
            contextlib.nullcontext(parent)
            if parent
            else TargetFS(os.path.realpath(path.parent), "agentskills", limit) as fs
        ):
            fs.ignore = foreign.__contains__
            found.files = fs.read(path.name)
    except (LedgerError, OSError) as exc:
        found.refused = exc.message if isinstance(exc, LedgerError) else f"cannot read it: {exc}"
        found.hint = exc.hint if isinstance(exc, LedgerError) else None
    if foreign:
        found.notes.append(
            "its folder is also a category: "
            + ", ".join(sorted(foreign))
            + " kept out of this skill, as Hermes lists the skills inside on their own"
        )
    return found


def detect(src: Path) -> str:
    """The layout of ``src``: a skill folder or folder of them, a Hermes tree, or Slopstock files."""
    if (src / SKILL_MD).is_file():
        return "agentskills"
    subdirs = [src / n for n, m in _entries(src) if stat.S_ISDIR(m) and n not in _SKIP]
    deeper = any(not _is_file(d, SKILL_MD) and any(_is_file(d, n, SKILL_MD) for n, _ in _entries(d)) for d in subdirs)
    if deeper or any(_is_file(d, "DESCRIPTION.md") for d in subdirs):
        return "hermes"  # a skill below a folder that is not one, as in optional-skills/<category>/<name>/
    if any(_is_file(d, SKILL_MD) for d in subdirs):
        return "agentskills"
    if any(n.endswith(".md") and stat.S_ISREG(m) for n, m in _entries(src)):
        return "slopstock"
    raise LedgerError(
        f"{src}: no skills found (no SKILL.md, category tree or .md files)",
        hint="point at the folder that holds the skills, or pass --layout",
    )


def _homes(src: Path) -> list[Path]:
    """The skills folders a project or runtime home holds (never through a symbolic link)."""
    return [
        src / h
        for h in HOMES
        if (src / h).is_dir() and not (src / h).is_symlink() and not (src / Path(h).parts[0]).is_symlink()
    ]


def read(src: Path, layout: str, limit: int) -> Collection:
    """Every skill under ``src`` in ``layout`` (``auto``: :func:`detect`), each read whole or refused.

    A project or runtime home (``proj/``, ``~/.hermes``, a repository root) is searched in its
    skills folders (:data:`HOMES`) as well as itself; the collection's notes say where.
    """
    if not src.is_dir() or src.is_symlink():
        raise UsageError(f"{src} is not a directory")
    homes = _homes(src) if not (src / SKILL_MD).is_file() else []
    if homes:
        own_skills = any(_is_file(src, n, SKILL_MD) for n, m in _entries(src) if stat.S_ISDIR(m))
        out = Collection(layout, [])
        for home in homes:
            part = read(home, layout, limit)
            out.layout = part.layout if out.layout == "auto" else out.layout
            out.add(part, str(home))
            out.notes.append(f"found {len(part.skills)} skill(s) in {home}")
        if own_skills:
            out.add(_read_here(src, "agentskills" if layout == "auto" else layout, limit, exclude=homes), str(src))
        else:
            tops = {h.relative_to(src).parts[0] for h in homes}
            out.skipped += [
                _passed_over(src / n) for n, m in _entries(src) if stat.S_ISDIR(m) and n not in _SKIP and n not in tops
            ]
        return out
    return _read_here(src, layout, limit)


def _passed_over(path: Path) -> str:
    """Why a folder of a home was not read: it holds no skills, or (Hermes's ``optional-skills/``, which
    Hermes installs from but never lists) it holds skills no runtime reads there."""
    try:
        kids = [path / n for n, m in _entries(path) if stat.S_ISDIR(m) and n not in _SKIP]
        held = any(_is_file(k, SKILL_MD) or any(_is_file(k, n, SKILL_MD) for n, _ in _entries(k)) for k in kids)
    except OSError:
        held = False
    if held:
        return f"{path}: holds skills, but no runtime reads them there; import it by name to take them"
    return f"{path}: not a skills folder"


def _read_here(src: Path, layout: str, limit: int, exclude: Sequence[Path] = ()) -> Collection:
    if layout == "auto":
        layout = detect(src)
    if layout in ("agentskills", "claude"):
        if (src / SKILL_MD).is_file():
            return Collection(layout, [_skill_folder(src, limit)])
        skipped = {h.relative_to(src).parts[0] for h in exclude}
        out = Collection(layout, [])
        try:  # one descriptor walk from / for the folder, not one per skill (10,000 realpaths in an import)
            parent: TargetFS | None = TargetFS(os.path.realpath(src), "agentskills", limit)
        except (LedgerError, OSError):
            parent = None  # each skill says why, as when read alone
        try:
            for n, m in _entries(src):
                if not stat.S_ISDIR(m) or n in _SKIP or n in skipped:
                    continue
                if _is_file(src, n, SKILL_MD):
                    out.skills.append(_skill_folder(src / n, limit, parent=parent))
                else:
                    out.skipped.append(f"{src / n}: no {SKILL_MD}")
        finally:
            if parent is not None:
                parent.close()
        return out
    if layout == "hermes":
        return _hermes(src, limit)
    if layout == "slopstock":
        return _slopstock(src, limit)
    raise UsageError(f"unknown layout {layout!r}", hint="one of " + ", ".join(LAYOUTS))


class _Disk:
    """A folder on disk as :func:`hermes_shape` reads it; entries are never followed through a link."""

    def __init__(self, src: Path) -> None:
        self.src = src

    def entries(self, rel: str) -> list[tuple[str, str]]:
        kinds = {stat.S_IFDIR: "dir", stat.S_IFREG: "file"}
        return [(n, kinds.get(m, "other")) for n, m in _entries(self.src / rel)]

    def is_skill(self, rel: str) -> bool:
        return _is_file(self.src, rel, SKILL_MD)


def _hermes(src: Path, limit: int) -> Collection:
    """A Hermes tree read as Hermes reads it (:func:`hermes_shape`): every folder holding SKILL.md is a
    skill, at any depth, in the category of its parent path, even inside another skill's folder."""
    out = Collection("hermes", [])
    shape: HermesShape = hermes_shape(_Disk(src))
    for folder, category in shape.skills.items():
        out.skills.append(_skill_folder(src / folder, limit, category, frozenset(shape.foreign[folder])))
    for rel in shape.categories:
        out.categories[rel] = _read(src / rel, limit)[0]
    out.skipped += [f"{src / rel}: a symbolic link (never followed)" for rel in shape.links]
    out.skills.sort(key=lambda f: f.source)
    return out


def _slopstock(src: Path, limit: int) -> Collection:
    skills = []
    for name, mode in _entries(src):
        if not (name.endswith(".md") and stat.S_ISREG(mode)):
            continue
        stem = name[: -len(".md")]
        notes: list[str] = []
        found = Found(_key(stem, notes), stem, str(src / name), notes=notes)
        try:
            found.files[SKILL_MD] = _read(src / name, limit)
        except (LedgerError, OSError) as exc:
            found.refused = exc.message if isinstance(exc, LedgerError) else str(exc)
        skills.append(found)
    return Collection("slopstock", skills)
