"""Skills from a ``skills-lock.json`` of the ``skills`` CLI, each installed only at its locked state.

The lock records, per skill, where it came from (``source``, ``sourceType``; newer releases
also ``ref`` and ``skillPath``) and the folder's ``computedHash`` (:mod:`ledger.sources.lockfile`),
but no commit.  So the locked state is found by content: the skill's folder at the head of
its ref, and, if that hash differs, at each earlier commit that changed the folder (at most
:data:`HISTORY` of them); the first whose :func:`~ledger.sources.lockfile.folder_sha256` equals
``computedHash`` is the pin, ``{"commit", "sha256"}``.  None equal: refused.

``sourceType`` ``github`` (``owner/repo``) is read from ``https://github.com/owner/repo.git``;
``git`` from its URL; ``local`` from its path, relative to the lock file's folder.  Other
types (``node_modules``, ``well-known``, …) name no git repository and are refused.  Without
a ``skillPath`` the skill's folder is found by its name (gitsource's rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger.errors import SourceError
from ledger.sources import gitsource as gsrc
from ledger.sources.candidates import Candidate, git, pick
from ledger.sources.lockfile import folder_sha256, read_lock

__all__ = ["GIT_TYPES", "HISTORY", "latest", "lock_candidates", "pinned"]

HISTORY = 200  # earlier commits of a skill's folder searched for its locked hash
GIT_TYPES = ("github", "git", "gitlab", "local")  # lock source types that name a git repository


def _folder(source: dict[str, Any], name: str, rows: gsrc.Listing, where: str) -> str:
    """The skill's folder in its repository: the recorded ``path`` when known, else found by name."""
    if source.get("path"):
        return str(source["path"])
    dirs = gsrc.skill_dirs(rows)
    if "" in dirs:
        return ""
    pick(dirs, [name], where)
    return dirs[name]


def _readable(source: dict[str, Any], name: str) -> None:
    if source.get("sourceType", "git") not in GIT_TYPES:
        raise SourceError(
            f"{name!r} comes from a {source.get('sourceType')!r} source, which names no git repository",
            hint="install it from its repository or index instead",
        )


def _locked(source: dict[str, Any], name: str, sha256: str, start: str | None, commit: str | None) -> Candidate:
    """The candidate whose folder hashes to ``sha256``: at ``commit`` when given (it must), else the
    newest such version at or before ``start`` (default: the ref's head)."""
    _readable(source, name)
    url = source["url"]
    # a recorded commit is fetched alone; otherwise the one ref's history is searched for the locked hash
    with gsrc.mirrored(url, commit or start or source.get("ref"), history=commit is None) as repo:
        if commit is not None and not gsrc.reachable(repo, commit):
            raise SourceError(
                f"{url} no longer serves commit {commit}: no branch or tag reaches it",
                hint="the source was rewritten (force-pushed)",
            )
        head = commit or gsrc.commit_of(repo, start or source.get("ref"), url)
        where = f"{url}@{head[:12]}"
        rows = gsrc.listing(repo, head)
        folder = _folder(source, name, rows, where)
        history = (
            []
            if commit
            else git(
                "rev-list",
                f"--max-count={HISTORY}",
                head,
                "--",
                folder or ".",
                what="reading the history",
                git_dir=str(repo),
            )
            .decode()
            .split()
        )
        seen = []
        for at in dict.fromkeys([head, *history]):
            here = rows if at == head else gsrc.listing(repo, at)
            files, _ = gsrc.read_dir(repo, here, folder, where)
            seen.append(folder_sha256(files))
            if seen[-1] == sha256:
                doc = {**source, "path": folder}
                found = gsrc.read_candidate(repo, here, at, folder, name, doc)
                return Candidate(
                    found.name,
                    found.files,
                    found.symlinks,
                    found.source,
                    {"commit": at, "sha256": sha256},
                    found.signer,
                    None,
                    frozenset(),
                    found.link_targets,
                )
    if commit is not None:
        raise SourceError(
            f"{url} no longer serves the locked {name!r}: {commit[:12]} hashes to {seen[0]}, not {sha256}"
        )
    raise SourceError(
        f"{name!r} is locked at computedHash {sha256}, but {url} serves {seen[0]} at {head[:12]} "
        f"and no earlier version of {folder or 'its root'} matches",
        hint="the upstream content differs from what was locked; check it, then re-lock with 'npx skills add'",
    )


def lock_candidates(lock: Path, names: Sequence[str] = (), pin: str | None = None) -> list[Candidate]:
    """Every entry of ``lock`` (or those named), each at the commit whose folder has its locked hash.

    ``pin`` (a commit id or ref) is where the search starts instead of the ref's head."""
    entries = {e.name: e for e in read_lock(lock)}
    return [_locked(entries[n].source, n, entries[n].sha256, pin, None) for n in pick(entries, names, str(lock))]


def pinned(source: dict[str, Any], pin: dict[str, Any], name: str) -> Candidate:
    """A lock source at its pin: the recorded commit when there is one, else found by the locked hash;
    refused unless the folder hashes to it."""
    sha256 = pin.get("sha256") or source.get("computedHash")
    if not isinstance(sha256, str):
        raise SourceError(f"the pin of {name!r} has no sha256", hint="a lock pin names the folder's computedHash")
    return _locked(source, name, sha256, None, pin.get("commit"))


def latest(source: dict[str, Any], name: str) -> Candidate:
    """The upstream's current folder for a lock source (whatever its hash): what an update would take."""
    _readable(source, name)
    with gsrc.mirrored(source["url"], source.get("ref")) as repo:
        commit = gsrc.commit_of(repo, source.get("ref"), source["url"])
        rows = gsrc.listing(repo, commit)
        folder = _folder(source, name, rows, f"{source['url']}@{commit[:12]}")
        found = gsrc.read_candidate(repo, rows, commit, folder, name, {**source, "path": folder})
    pin = {"commit": commit, "sha256": folder_sha256(found.files)}
    return Candidate(
        found.name, found.files, found.symlinks, found.source, pin, found.signer, None, frozenset(), found.link_targets
    )
