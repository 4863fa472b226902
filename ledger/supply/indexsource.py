"""Skills from an HTTPS discovery index: the Agent Skills well-known URIs.

Two versions of one format are read (cloudflare/agent-skills-discovery-rfc, README at
366ad374, which the ``skills`` CLI's ``providers/wellknown.ts`` follows for v0.1):

- v0.2 at ``<base>/.well-known/agent-skills/index.json``: ``{"version": "0.2.0", "skills":
  [{"name", "description", "digest": "sha256:<hex>", "files": [{"path", "digest"}], "package"?}]}``.
  Every file is checked against its digest, and the skill against its digest: SHA-256 over
  ``path \\0 hex \\n`` lines sorted by path bytes.  A mismatch refuses the skill.
- v0.1 at ``<base>/.well-known/skills/index.json``: ``files`` is a list of paths, with no
  digests; the content is taken as served (nothing to check it against) and pinned by hash.

Files are at ``<index folder>/<name>/<path>``.  A URL ending in ``index.json`` is read as
it is; otherwise the v0.2 location is tried, then v0.1.  Only ``https`` is fetched, except
plain ``http`` to a loopback host (``127.0.0.1``, ``localhost``, ``::1``: what the tests serve).
Redirects are followed only within the same scheme and host, at most :data:`MAX_REDIRECTS`;
every response is capped (:data:`MAX_INDEX`, and the project's per-file limit) and timed out.
The pin is ``{"sha256": folder_sha256, "digest": the index's skill digest (v0.2), "version"}``.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests

from ledger.bundle.skill import MAX_SUPPORT_FILE
from ledger.errors import SourceError
from ledger.supply.candidates import Candidate, candidate, pick, source_doc
from ledger.supply.lockfile import folder_sha256

__all__ = ["MAX_INDEX", "MAX_REDIRECTS", "index_candidates", "is_index_url", "pinned", "skill_digest"]

MAX_INDEX = 1024 * 1024  # bytes of index.json
MAX_REDIRECTS = 3
TIMEOUT = (5.0, 30.0)  # connect, read (seconds)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_LOCATIONS = (".well-known/agent-skills/index.json", ".well-known/skills/index.json")


def is_index_url(url: str) -> bool:
    return url.startswith(("https://", "http://")) and (url.endswith("index.json") or "/.well-known/" in url)


def _allowed(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK):
        return
    raise SourceError(f"refusing to fetch {url}: an index is read over https only",
                      hint="use the https:// URL (plain http is allowed only to this machine, for tests)")  # fmt: skip


def _get(url: str, limit: int) -> bytes | None:
    """The body at ``url`` (None on 404), within ``limit`` bytes and same-host redirects."""
    for _ in range(MAX_REDIRECTS + 1):
        _allowed(url)
        try:
            with requests.get(url, timeout=TIMEOUT, allow_redirects=False, stream=True) as resp:
                if resp.is_redirect:
                    target = urljoin(url, resp.headers.get("location", ""))
                    if urlsplit(target)[:2] != urlsplit(url)[:2]:
                        raise SourceError(f"{url} redirects to another host or scheme ({target}); not followed")
                    url = target
                    continue
                if resp.status_code == 404:
                    return None
                if resp.status_code != 200:
                    raise SourceError(f"{url} answered HTTP {resp.status_code}", hint="check the URL, or try later")
                body = b""
                for chunk in resp.iter_content(65536):
                    body += chunk
                    if len(body) > limit:
                        raise SourceError(f"{url} is larger than {limit} bytes; refused")
                return body
        except requests.RequestException as exc:
            raise SourceError(f"cannot fetch {url}: {exc}", hint="check the URL and the network") from exc
    raise SourceError(f"{url} redirects more than {MAX_REDIRECTS} times; not followed")


def _index(url: str) -> tuple[str, dict[str, Any]]:
    """(index URL, its document), trying the well-known locations under a base URL."""
    tries = [url] if url.endswith("index.json") else [urljoin(url.rstrip("/") + "/", loc) for loc in _LOCATIONS]
    for where in tries:
        body = _get(where, MAX_INDEX)
        if body is None:
            continue
        try:
            doc = json.loads(body)
        except ValueError as exc:
            raise SourceError(f"{where} is not JSON: {exc}") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("skills"), list):
            raise SourceError(f"{where} is not a skills index: it has no 'skills' list")
        version = doc.get("version", "0.1.0")
        if not isinstance(version, str) or not version.startswith("0."):
            raise SourceError(f"{where} is index version {version!r}; this ledger reads 0.1 and 0.2",
                              hint="upgrade brain-ledger")  # fmt: skip
        return where, doc
    raise SourceError(f"{url} serves no skills index at {' or '.join(tries)}", hint="pass the index's URL")


def _hex(digest: Any, where: str) -> str:
    if not isinstance(digest, str) or not digest.startswith("sha256:") or len(digest) != 71:
        raise SourceError(f"{where}: digest {digest!r} is not sha256:<64 hex>")
    return digest[7:].lower()


def skill_digest(files: dict[str, str]) -> str:
    """The v0.2 skill-level digest of {path: file sha256 hex}: lines ``path\\0hex\\n`` sorted by path bytes."""
    ordered = sorted(files.items(), key=lambda item: item[0].encode())
    lines = b"".join(p.encode() + b"\0" + h.encode() + b"\n" for p, h in ordered)
    return "sha256:" + hashlib.sha256(lines).hexdigest()


def _skill(index_url: str, version: str, entry: dict[str, Any]) -> Candidate:
    """One index entry's files, fetched and checked against every digest the index gives."""
    name = entry["name"]
    where = f"{index_url} ({name})"
    listed = entry.get("files")
    if not isinstance(listed, list) or not listed:
        raise SourceError(f"{where}: the entry lists no files")
    wanted: dict[str, str | None] = {}
    for item in listed:
        path, digest = (item, None) if isinstance(item, str) else (item.get("path"), item.get("digest"))
        if not isinstance(path, str):
            raise SourceError(f"{where}: a file entry has no path")
        wanted[path] = _hex(digest, where) if digest is not None else None
    candidate(name, {p: (b"", False) for p in wanted}, source_doc("index", index_url, name, None), {})  # paths first
    files = {}
    for path, want in wanted.items():
        url = urljoin(index_url, posixpath.join(name, path))
        body = _get(url, MAX_SUPPORT_FILE)
        if body is None:
            raise SourceError(f"{where}: {path} is listed but not served ({url})")
        if want is not None and hashlib.sha256(body).hexdigest() != want:
            raise SourceError(f"{where}: {path} does not match its digest in the index",
                              hint="the file or the index was altered; nothing was taken")  # fmt: skip
        files[path] = (body, False)
    pin: dict[str, Any] = {"sha256": folder_sha256(files), "version": version}
    if all(w is not None for w in wanted.values()) and "digest" in entry:
        got = skill_digest({p: hashlib.sha256(b).hexdigest() for p, (b, _) in files.items()})
        if got != f"sha256:{_hex(entry['digest'], where)}":
            raise SourceError(f"{where}: the files' skill digest {got} is not the index's {entry['digest']}",
                              hint="the index and its files disagree; nothing was taken")  # fmt: skip
        pin["digest"] = got
    return candidate(name, files, source_doc("index", index_url, name, None), pin)


def index_candidates(url: str, names: Sequence[str] = ()) -> list[Candidate]:
    """The skills an index at (or under) ``url`` lists, each fetched and checked."""
    index_url, doc = _index(url)
    entries = {e["name"]: e for e in doc["skills"] if isinstance(e, dict) and isinstance(e.get("name"), str)}
    version = doc.get("version", "0.1.0")
    return [_skill(index_url, version, entries[n]) for n in pick(entries, names, index_url)]


def pinned(source: dict[str, Any], pin: dict[str, Any], name: str) -> Candidate:
    """The skill as the index serves it now, refused unless its bytes hash to the recorded pin."""
    (found,) = index_candidates(source["url"], [name])
    if found.pin["sha256"] != pin.get("sha256"):
        raise SourceError(f"{source['url']} no longer serves {name!r} as pinned: its folder hashes to "
                          f"{found.pin['sha256']}, not {pin.get('sha256')}",
                          hint="the index's content changed; 'ledger outdated' shows the new version")  # fmt: skip
    return found
