"""Skills from a ``skills-lock.json`` of the ``skills`` CLI, each installed only at its locked state.

The lock records, per skill, where it came from (``source``, ``sourceType``; newer releases
also ``ref`` and ``skillPath``) and the folder's ``computedHash`` (:mod:`ledger.supply.lockfile`),
but no commit.  So the locked state is found by content: the skill's folder at the head of
its ref, and, if that hash differs, at each earlier commit that changed the folder (at most
:data:`HISTORY` of them); the first whose :func:`~ledger.supply.lockfile.folder_sha256` equals
``computedHash`` is the pin.  None equal: refused.

``sourceType`` ``github`` (``owner/repo``) is read from ``https://github.com/owner/repo.git``;
``git`` from its URL; ``local`` from its path, relative to the lock file's folder.  Other
types (``node_modules``, ``well-known``, …) name no git repository and are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger.errors import SourceError
from ledger.supply import gitsource as gsrc
from ledger.supply.candidates import Candidate, git, pick, source_doc
from ledger.supply.lockfile import LockEntry, folder_sha256, read_lock

__all__ = ["HISTORY", "latest", "lock_candidates", "pinned", "repo_url"]

HISTORY = 200  # earlier commits of a skill's folder searched for its locked hash


def repo_url(entry: LockEntry, lock: Path) -> str:
    """The git repository a lock entry names."""
    kind, source = entry.source_type, entry.source
    if kind == "github":
        owner_repo = "/".join(source.removeprefix("https://github.com/").split("/")[:2]).removesuffix(".git")
        return f"https://github.com/{owner_repo}.git"
    if kind in ("git", "gitlab"):
        url = entry.get("sourceUrl") or source
        return url if isinstance(url, str) else source
    if kind == "local":
        return str((lock.parent / source).resolve())
    raise SourceError(f"{lock}: {entry.name!r} comes from a {kind!r} source, which names no git repository",
                      hint="install it from its repository or index instead")  # fmt: skip


def _folder(entry: LockEntry, rows: gsrc.Listing, where: str) -> str:
    """The skill's folder in its repository: ``skillPath`` when the lock has it, else found by name."""
    path = entry.get("skillPath")
    if isinstance(path, str) and path:
        folder = path.removesuffix("SKILL.md").rstrip("/")
        return folder
    dirs = gsrc.skill_dirs(rows)
    if "" in dirs:
        return ""
    pick(dirs, [entry.name], where)
    return dirs[entry.name]


def _locked(repo: Path, url: str, head: str, entry: LockEntry, lock: Path) -> tuple[str, gsrc.Listing, str]:
    """(commit, listing, folder) where the entry's folder hashes to its ``computedHash``."""
    where = f"{url}@{head[:12]}"
    rows = gsrc.listing(repo, head)
    folder = _folder(entry, rows, where)
    seen: list[str] = []
    history = git("rev-list", f"--max-count={HISTORY}", head, "--", folder or ".", what="reading the history",
                  git_dir=str(repo)).decode().split()  # fmt: skip
    for commit in dict.fromkeys([head, *history]):
        here = rows if commit == head else gsrc.listing(repo, commit)
        files, _ = gsrc.read_dir(repo, here, folder, where)
        digest = folder_sha256(files)
        if digest == entry.computed_hash:
            return commit, here, folder
        seen.append(digest)
    raise SourceError(f"{lock}: {entry.name!r} is locked at computedHash {entry.computed_hash}, but {url} serves "
                      f"{seen[0]} at {head[:12]} and no earlier version of {folder or 'its root'} matches",
                      hint="the upstream content differs from what was locked; check it, then re-lock with "
                           "'npx skills add'")  # fmt: skip


def lock_candidates(lock: Path, names: Sequence[str] = (), pin: str | None = None) -> list[Candidate]:
    """Every entry of ``lock`` (or those named), each at the commit whose folder has its locked hash.

    ``pin`` (a commit id) is where the search starts instead of the ref's head."""
    entries = {e.name: e for e in read_lock(lock)}
    out = []
    for name in pick(entries, names, str(lock)):
        entry = entries[name]
        url = repo_url(entry, lock)
        ref = entry.get("ref") if isinstance(entry.get("ref"), str) else None
        with gsrc.mirrored(url) as repo:
            head = gsrc.commit_of(repo, pin or ref, url)
            commit, rows, folder = _locked(repo, url, head, entry, lock)
            doc = source_doc("skills-lock", url, folder, ref, lock=str(lock), computedHash=entry.computed_hash)
            found = gsrc.read_candidate(repo, rows, commit, folder, name, doc)
        pinned_at = {"commit": commit, "sha256": entry.computed_hash}
        out.append(Candidate(found.name, found.files, found.symlinks, found.source, pinned_at, found.signer, None,
                             frozenset()))  # fmt: skip
    return out


def pinned(source: dict[str, Any], pin: dict[str, Any], name: str) -> Candidate:
    """The recorded commit of a lock source, refused unless its folder still hashes to the locked value."""
    found = gsrc.pinned(source, pin["commit"], name)
    digest = folder_sha256(found.files)
    if digest != pin.get("sha256", source.get("computedHash")):
        raise SourceError(f"{source['url']} no longer serves the locked {name!r}: {pin['commit'][:12]} hashes to "
                          f"{digest}, not {pin.get('sha256')}")  # fmt: skip
    return Candidate(found.name, found.files, found.symlinks, found.source, dict(pin), found.signer, None, frozenset())


def latest(source: dict[str, Any], name: str) -> Candidate:
    """The upstream's current folder for a lock source (whatever its hash): what an update would take."""
    with gsrc.mirrored(source["url"]) as repo:
        commit = gsrc.commit_of(repo, source.get("ref"), source["url"])
        found = gsrc.read_candidate(repo, gsrc.listing(repo, commit), commit, source["path"], name, dict(source))
    return Candidate(
        found.name,
        found.files,
        found.symlinks,
        found.source,
        {"commit": commit, "sha256": folder_sha256(found.files)},
        found.signer,
        None,
        frozenset(),
    )
