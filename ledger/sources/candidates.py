"""A skill read from a source, pinned: :class:`Candidate`, and the checks every source applies.

Every reader (:mod:`~ledger.sources.gitsource`, :mod:`~ledger.sources.brainsource`,
:mod:`~ledger.sources.indexsource`, …) hands its files through :func:`candidate`, so the
name and path rules are the project's own (:mod:`ledger.bundle.skill`) wherever a skill
comes from, and a source cannot smuggle a path a brain would refuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.bundle.skill import MAX_SUPPORT_FILE, SKILL_MD, check_bundle_path, check_name, check_support_path
from ledger.errors import SkillError, SourceError
from ledger.sources.origins import redacted
from ledger.store.git import NETWORK, Git

__all__ = ["MAX_SKILL_BYTES", "SOURCE_ENV", "Candidate", "candidate", "git", "pick", "source_doc", "source_git"]

MAX_SKILL_BYTES = 256 * 1024 * 1024  # one skill's files together: a source cannot fill the disk through one skill


@dataclass(frozen=True)
class Candidate:
    """One skill as a source serves it at one pin; nothing in it has been trusted yet."""

    name: str
    files: dict[str, tuple[bytes, bool]]
    symlinks: tuple[str, ...]
    source: dict[str, Any]
    pin: dict[str, Any]
    signer: str | None
    derived_from: dict[str, Any] | None
    revoked: frozenset[str]
    link_targets: Mapping[str, str] = field(default_factory=dict)  # link -> its target, when the source knows it


def source_doc(kind: str, url: str, path: str, ref: str | None, **extra: Any) -> dict[str, Any]:
    """The ``source`` record: the same keys in the same order for every candidate of a kind."""
    return {"type": kind, "url": url, "path": path, "ref": ref, **extra}


def candidate(
    name: str,
    files: Mapping[str, tuple[bytes, bool]],
    source: dict[str, Any],
    pin: dict[str, Any],
    *,
    symlinks: Sequence[str] = (),
    signer: str | None = None,
    derived_from: dict[str, Any] | None = None,
    revoked: frozenset[str] = frozenset(),
    link_targets: Mapping[str, str] | None = None,
) -> Candidate:
    """A :class:`Candidate` whose name and every path pass the project's rules, or :class:`SourceError`."""
    where = f"{source['url']}" + (f" ({source['path']})" if source.get("path") else "")
    try:
        check_name(name)
    except SkillError as exc:
        raise SourceError(
            f"{where} offers a skill named {name!r}, which is not a valid skill name: {exc.message}",
            hint=exc.hint or "ask its publisher to rename it",
        ) from None
    if SKILL_MD not in files:
        raise SourceError(f"{where}: skill {name!r} has no {SKILL_MD}", hint="a skill folder holds SKILL.md")
    total = 0
    for rel, (data, _) in files.items():
        _check_path(name, rel, where)
        if len(data) > MAX_SUPPORT_FILE:
            raise SourceError(f"{where}: {name}/{rel} is {len(data)} bytes; the limit is {MAX_SUPPORT_FILE}")
        total += len(data)
    for rel in symlinks:
        _check_path(name, rel, where)
    paths = {*files, *symlinks}
    for rel in sorted(paths):  # a file and a folder of one name: no file system (and no bundle) holds both
        parts = rel.split("/")
        clash = next(("/".join(parts[:i]) for i in range(1, len(parts)) if "/".join(parts[:i]) in paths), None)
        if clash is not None:
            raise SourceError(
                f"{where}: skill {name!r} holds {clash!r} both as a file and as the folder of "
                f"{rel!r}; nothing was taken",
                hint="ask the source's publisher to rename one of them",
            )
    if total > MAX_SKILL_BYTES:
        raise SourceError(f"{where}: skill {name!r} holds {total} bytes; one skill is limited to {MAX_SKILL_BYTES}")
    targets = {rel: t for rel, t in (link_targets or {}).items() if rel in symlinks}
    return Candidate(
        name,
        dict(sorted(files.items())),
        tuple(sorted(symlinks)),
        source,
        pin,
        signer,
        derived_from,
        revoked,
        dict(sorted(targets.items())),
    )


def _check_path(name: str, rel: str, where: str) -> None:
    try:
        if rel != SKILL_MD:
            check_support_path(rel)
        check_bundle_path(name, rel)
    except SkillError as exc:
        raise SourceError(
            f"{where}: skill {name!r} holds a path no brain may hold: {exc.message}",
            hint="nothing was taken; ask the source's publisher to fix the path",
        ) from None


def pick(found: Mapping[str, Any], names: Sequence[str], where: str) -> list[str]:
    """The names asked for, in order (all of ``found`` when none): a missing one is refused with what there is."""
    if not names:
        return sorted(found)
    missing = [n for n in names if n not in found]
    if missing:
        has = ", ".join(sorted(found)) or "no skills"
        raise SourceError(
            f"{where} has no skill named {', '.join(repr(n) for n in missing)}; it has: {has}",
            hint="name one of the skills it has",
        )
    return list(dict.fromkeys(names))


SOURCE_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1"}  # git for a source: no prompts, no LFS smudging


def source_git(git_dir: str | Path | None = None) -> Git:
    """The store's git runner as a source uses it: :data:`SOURCE_ENV`, a failure is a :class:`SourceError`, and a
    location is shown :func:`~ledger.sources.origins.redacted`."""
    return Git(git_dir, env=SOURCE_ENV, error=SourceError, redact=redacted)


def git(
    *args: str, what: str, git_dir: str | Path | None = None, data: bytes | None = None, timeout: float = NETWORK
) -> bytes:
    """``git args`` for a source (:func:`source_git`), its output; a failure is a :class:`SourceError`."""
    return source_git(git_dir).run(
        *args, input=data, timeout=timeout, what=what, hint="check the path or URL and the ref"
    )
