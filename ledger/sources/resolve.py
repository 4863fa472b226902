"""Resolve a SOURCE into pinned :class:`Candidate` skills, and read a recorded pin back.

A SOURCE is one string; its form is decided in this order:

1. **another brain** (:mod:`~ledger.sources.brainsource`): a path or git URL whose
   ``refs/heads/main`` holds ledger snapshots.  Audited, every file proven against the
   signed root, and with ``rpc`` checked on chain.  Pin ``{"commit", "root", "seq"}``.
2. **a git repository of skills** (:mod:`~ledger.sources.gitsource`): a path, ``file://``,
   ``https://`` or ``git@`` URL, with an optional ``#ref``.  A repository that holds
   ``.claude-plugin/marketplace.json`` is read as form 3.  Pin ``{"commit"}``.
3. **a Claude Code plugin marketplace** (:mod:`~ledger.sources.marketplace`): such a
   repository, or a path to a ``marketplace.json`` inside a git work tree.  Pin ``{"commit"}``.
4. **a skills CLI lock** (:mod:`~ledger.sources.locksource`): a path to ``skills-lock.json``;
   each entry at the commit whose folder has the locked hash.  Pin ``{"commit", "sha256"}``.
5. **an HTTPS index** (:mod:`~ledger.sources.indexsource`): an ``https://`` URL that is not a
   git repository, or that names ``index.json`` or a ``/.well-known/`` path.  Pin ``{"sha256", …}``.

Files (4 and the marketplace file of 3) are told apart by name or, failing that, content.
Nothing is written anywhere but temporary directories, removed before returning.  A SOURCE
that carries credentials is refused (or stripped, when asked); what a third party's document
names stays on its origin (:mod:`~ledger.sources.origins`, docs/sources.md §1.1).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import socket
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ledger.errors import SourceError, StoreError
from ledger.remotes.sharing import fetched
from ledger.sources import brainsource, gitsource, indexsource, locksource, marketplace, origins
from ledger.sources.candidates import Candidate
from ledger.sources.lockfile import LOCK_NAME, LockEntry, folder_sha256, lock_entry, read_lock, write_lock
from ledger.store import supply as sp

__all__ = [
    "Candidate",
    "LockEntry",
    "fetch_pinned",
    "folder_sha256",
    "latest",
    "lock_entry",
    "read_lock",
    "require_kept",
    "resolve",
    "supply_of",
    "write_lock",
]


_WHAT = (
    "give the path of a brain, a git repository of skills, a marketplace.json or a skills-lock.json "
    "(a URL starts with https://)"
)


def _file_kind(path: Path) -> str:
    if path.name == LOCK_NAME:
        return "skills-lock"
    if path.name == "marketplace.json":
        return "marketplace"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror}") from exc
    except ValueError:
        doc = None  # not JSON (or not UTF-8): no source file this ledger reads
    if isinstance(doc, dict) and isinstance(doc.get("plugins"), list):
        return "marketplace"
    if isinstance(doc, dict) and isinstance(doc.get("skills"), dict):
        return "skills-lock"
    raise SourceError(
        f"{path} is neither a skills-lock.json nor a marketplace.json",
        hint="pass a brain, a git repository, a marketplace, a skills-lock.json or an index",
    )


def resolve(
    source: str,
    names: Sequence[str] = (),
    *,
    pin: str | None = None,
    rpc: str | None = None,
    strip_credentials: bool = False,
) -> list[Candidate]:
    """The skills ``source`` serves (those in ``names``, or all), each read at one pinned state.

    ``pin`` is a commit id (or a ref) to read at; None means the source's current head.  A
    named skill the source lacks is a :class:`SourceError` listing what it has.  A source that
    carries credentials is refused, or with ``strip_credentials`` read without them
    (:mod:`~ledger.sources.origins`)."""
    if not source.strip():
        raise SourceError("no source given", hint=_WHAT)
    source = origins.refuse_credentials(source, "the source URL", strip=strip_credentials)
    url, ref = gitsource.split_ref(source)
    given = url
    _reachable(url, source)
    if "://" not in url and Path(url).exists():
        url = str(Path(url).absolute())  # recorded in the pin: it must mean the same from any directory
    path = Path(url)
    if path.is_file():
        if _file_kind(path) == "skills-lock":
            return locksource.lock_candidates(path, names, pin)
        repo, rel = marketplace.local_repo(path)
        return marketplace.marketplace_candidates(repo, ref, rel, names, pin)
    if indexsource.is_index_url(url):
        return _index(url, names, pin)
    brain = _brain(url, names, pin, rpc)
    if brain is not None:
        return brain
    if url.startswith(("https://", "http://")) and not gitsource.is_repo(url):
        return _index(url, names, pin)  # not a git repository: an index's base URL
    if path.is_dir() and not ((path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())):
        raise SourceError(
            f"{source} is a folder, but neither a brain nor a git repository",
            hint=f"a folder of skills is read with 'ledger import {shlex.quote(given)}'; "
            f"install takes {_WHAT.removeprefix('give ')}",
        )
    with gitsource.mirrored(url, pin or ref) as repo:
        commit = gitsource.commit_of(repo, pin or ref, url)
        if any(p == marketplace.MARKETPLACE for _, _, p in gitsource.listing(repo, commit)):
            return marketplace.marketplace_candidates(url, ref, marketplace.MARKETPLACE, names, commit, repo)
        return gitsource.candidates_at(repo, url, ref, commit, names)


def _reachable(url: str, source: str) -> None:
    """Refuse, naming ``source`` as given and the one reason, a local path that does not exist or an http(s)
    host that cannot be reached; before any form is tried, so no later form's error (git's last line, an
    index URL the user never named) stands in for it."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        if (
            parts.hostname is None
            or urllib.request.getproxies().keys() & {parts.scheme, "all"}
            or (parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"))
        ):
            return  # behind a proxy only the proxy knows; plain http off this machine is the forms' to refuse
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            socket.create_connection((parts.hostname, port), timeout=indexsource.TIMEOUT[0]).close()
        except ValueError:
            raise SourceError(f"{source}: the port is not a number", hint="check the URL") from None
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise SourceError(
                f"cannot reach {source}: {reason[:1].lower()}{reason[1:]}",
                hint="check the URL and the network, then install again",
            ) from None
        return
    # git's scp-like ssh form (host:path, git@host:path) has a colon before any slash; a local path has none
    local = parts.path if parts.scheme == "file" else None if "://" in url or ":" in url.split("/")[0] else url
    if local is not None and not Path(local).exists():
        raise SourceError(f"{source}: no such file or directory", hint=_WHAT)


def _no_credentials(url: str) -> None:
    """Refuse a URL that carries credentials: the source is recorded in the signed supply record, which is
    pushed with the brain and never rewritten, and published in its manifests."""
    origins.refuse_credentials(url, "the source URL")


def _index(url: str, names: Sequence[str], pin: str | None) -> list[Candidate]:
    """An index's skills; an index serves only its current state, so a ``pin`` (a folder sha256) keeps
    the skills that still hash to it and refuses when none does."""
    found = indexsource.index_candidates(url, names)
    if pin is None:
        return found
    kept = [c for c in found if pin in (c.pin["sha256"], c.pin.get("digest"), c.pin.get("root"), c.pin.get("commit"))]
    if not kept:
        raise SourceError(
            f"{url} no longer serves {pin}: an index serves only its current files",
            hint="resolve it without a pin to see what it serves now",
        )
    return kept


def _brain(url: str, names: Sequence[str], pin: str | None, rpc: str | None) -> list[Candidate] | None:
    """The brain's candidates when ``url`` is a brain, else None (not even fetchable as one).

    Whether it is one is read from the tip of its ``main`` alone (one commit, capped), so that a
    repository of skills is never fetched whole to learn that it is not a brain."""
    try:
        with gitsource.mirrored(url, "main") as probe:
            if not brainsource.is_brain(probe):
                return None
    except SourceError:
        return None  # no 'main' branch, or not a repository at all: the other forms decide
    with contextlib.ExitStack() as stack:
        try:
            repo = stack.enter_context(fetched(url))
        except StoreError:
            return None  # no 'main' branch, or not a repository at all: the other forms decide
        if not brainsource.is_brain(repo):
            return None
        return brainsource.read_brain(repo, url, names, pin, rpc)
    return None  # unreachable: the stack never swallows an exception


def supply_of(source: str, *, rpc: str | None = None) -> sp.Supply:
    """Another brain's ``supply`` record at its head, audited: the set it installed, for ``install --frozen``."""
    return brainsource.supply_of(source, rpc)


def fetch_pinned(source: dict[str, Any], pin: dict[str, Any], name: str) -> Candidate:
    """Exactly the recorded ``pin`` of ``name`` from ``source`` (a :attr:`Candidate.source`), or
    :class:`SourceError` saying the source no longer serves it."""
    kind = source.get("type")
    if kind == "brain":
        return brainsource.pinned(source, pin, name)
    if kind == "git":
        return gitsource.pinned(source, pin["commit"], name)
    if kind == "marketplace":
        return gitsource.pinned(source, pin["commit"], name, repo_url=source.get("repo"))
    if kind == "skills-lock":
        return locksource.pinned(source, pin, name)
    if kind == "index":
        return indexsource.pinned(source, pin, name)
    raise SourceError(f"unknown source type {kind!r}", hint="the record was written by a newer brain-ledger")


def latest(source: dict[str, Any], name: str, pin: dict[str, Any] | None = None) -> Candidate:
    """The source's current version of ``name`` (for ``ledger supply outdated`` and ``update``); with the recorded
    ``pin``, refused when it gives up what the pin holds (:func:`require_kept`)."""
    found = _latest(source, name)
    if pin is not None:
        require_kept(source, name, pin, found.pin)
    return found


def _latest(source: dict[str, Any], name: str) -> Candidate:
    kind, url, ref = source.get("type"), source["url"], source.get("ref")
    at = f"{url}#{ref}" if ref else url
    if kind == "brain":
        found = brainsource.brain_candidates(url, [name])
    elif kind == "git":
        found = gitsource.git_candidates(at, [name])
    elif kind == "marketplace":
        plugin = source.get("plugin")
        found = marketplace.marketplace_candidates(
            url, ref, source.get("file", marketplace.MARKETPLACE), [f"{plugin}:{name}" if plugin else name]
        )
    elif kind == "skills-lock":
        return locksource.latest(source, name)
    elif kind == "index":
        found = indexsource.index_candidates(url, [name])
    else:
        raise SourceError(f"unknown source type {kind!r}", hint="the record was written by a newer brain-ledger")
    return found[0]


def require_kept(source: dict[str, Any], name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """What a pin keeps whatever way its next version was read (``latest``, a ``--pin``, ``fetch_pinned``):
    an index skill pinned to an anchor's root is never taken again without one."""
    if source.get("type") == "index":
        indexsource.keeps_anchor(source["url"], name, old, new)
