"""A skill read from a source, pinned: :class:`Candidate`, and the checks every source applies.

Every reader (:mod:`~ledger.supply.gitsource`, :mod:`~ledger.supply.brainsource`,
:mod:`~ledger.supply.indexsource`, …) hands its files through :func:`candidate`, so the
name and path rules are the project's own (:mod:`ledger.bundle.skill`) wherever a skill
comes from, and a source cannot smuggle a path a brain would refuse.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ledger._env import child_env
from ledger.bundle.skill import MAX_SUPPORT_FILE, SKILL_MD, check_bundle_path, check_name, check_support_path
from ledger.errors import SkillError, SourceError

__all__ = ["MAX_SKILL_BYTES", "Candidate", "candidate", "git", "git_env", "pick", "source_doc"]

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
    name: str, files: Mapping[str, tuple[bytes, bool]], source: dict[str, Any], pin: dict[str, Any], *,
    symlinks: Sequence[str] = (), signer: str | None = None, derived_from: dict[str, Any] | None = None,
    revoked: frozenset[str] = frozenset(), link_targets: Mapping[str, str] | None = None,
) -> Candidate:  # fmt: skip
    """A :class:`Candidate` whose name and every path pass the project's rules, or :class:`SourceError`."""
    where = f"{source['url']}" + (f" ({source['path']})" if source.get("path") else "")
    try:
        check_name(name)
    except SkillError as exc:
        raise SourceError(f"{where} offers a skill named {name!r}, which is not a valid skill name: {exc.message}",
                          hint=exc.hint or "ask its publisher to rename it") from None  # fmt: skip
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
            raise SourceError(f"{where}: skill {name!r} holds {clash!r} both as a file and as the folder of "
                              f"{rel!r}; nothing was taken",
                              hint="ask the source's publisher to rename one of them")  # fmt: skip
    if total > MAX_SKILL_BYTES:
        raise SourceError(f"{where}: skill {name!r} holds {total} bytes; one skill is limited to {MAX_SKILL_BYTES}")
    targets = {rel: t for rel, t in (link_targets or {}).items() if rel in symlinks}
    return Candidate(name, dict(sorted(files.items())), tuple(sorted(symlinks)), source, pin, signer,
                     derived_from, revoked, dict(sorted(targets.items())))  # fmt: skip


def _check_path(name: str, rel: str, where: str) -> None:
    try:
        if rel != SKILL_MD:
            check_support_path(rel)
        check_bundle_path(name, rel)
    except SkillError as exc:
        raise SourceError(f"{where}: skill {name!r} holds a path no brain may hold: {exc.message}",
                          hint="nothing was taken; ask the source's publisher to fix the path") from None  # fmt: skip


def pick(found: Mapping[str, Any], names: Sequence[str], where: str) -> list[str]:
    """The names asked for, in order (all of ``found`` when none): a missing one is refused with what there is."""
    if not names:
        return sorted(found)
    missing = [n for n in names if n not in found]
    if missing:
        has = ", ".join(sorted(found)) or "no skills"
        raise SourceError(f"{where} has no skill named {', '.join(repr(n) for n in missing)}; it has: {has}",
                          hint="name one of the skills it has")  # fmt: skip
    return list(dict.fromkeys(names))


def git_env() -> dict[str, str]:
    """The environment git runs in for a source: no terminal prompts, no LFS smudging, no secret of this process."""
    return child_env() | {"GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1"}


def git(*args: str, what: str, git_dir: str | None = None, data: bytes | None = None, timeout: int = 300) -> bytes:
    """Run git (no terminal prompts, this process's secrets withheld); a failure is a :class:`SourceError`."""
    cmd = ["git", *([f"--git-dir={git_dir}"] if git_dir else []), *args]
    try:
        proc = subprocess.run(cmd, input=data, capture_output=True, env=git_env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SourceError(f"{what}: git took longer than {timeout} s", hint="try again, or check the source") from None
    if proc.returncode != 0:
        raise SourceError(f"{what}: {git_reason(proc.stderr)}", hint="check the path or URL and the ref")
    return proc.stdout


def git_reason(stderr: bytes) -> str:
    """The one reason a failed git gives: its first line that says why (ssh's, or the first fatal or error
    line), never the closing boilerplate ("Please make sure … and the repository exists.")."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    said = next((ln for ln in lines if ln.startswith(("ssh:", "fatal:", "error:"))), lines[0] if lines else "")
    return said.removeprefix("fatal: ").removeprefix("error: ") or "git failed"
