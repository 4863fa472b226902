"""Skills from an HTTPS discovery index: the Agent Skills well-known URIs.

Three shapes of one format are read (the Agent Skills Discovery RFC, cloudflare/agent-skills-discovery-rfc):

- v0.2.0 as published (``"$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json"``,
  at ``<base>/.well-known/agent-skills/index.json``): ``{"skills": [{"name", "type", "description",
  "url", "digest": "sha256:<hex>"}]}``; ``type`` ``skill-md`` is one ``SKILL.md`` at ``url``,
  ``archive`` a ``.tar.gz`` of the skill's folder (its root, or one top folder named as the skill).
  ``url`` is resolved against the index's URL; the artifact must match ``digest``.
- the RFC draft's v0.2.0 (README at 366ad374: ``"version": "0.2.0"``): ``files`` is a list of
  ``{"path", "digest"}`` and the skill's ``digest`` is SHA-256 over ``path \0 hex \n`` lines sorted
  by path bytes; every file and the skill digest are checked.
- v0.1 at ``<base>/.well-known/skills/index.json`` (the ``skills`` CLI's ``providers/wellknown.ts``):
  ``files`` is a list of paths, with no digests; the content is taken as served and pinned by hash.

Files listed by path are at ``<index folder>/<name>/<path>``.  A URL ending in ``index.json`` is
read as it is; otherwise the ``agent-skills`` location is tried, then ``skills``.  Only ``https``
is fetched, except plain ``http`` to a loopback host (``127.0.0.1``, ``localhost``, ``::1``: what
the tests serve).  Redirects are followed only within the same scheme and host, at most
:data:`MAX_REDIRECTS`; every response is capped (:data:`MAX_INDEX`, the project's per-file limit,
:data:`~ledger.supply.candidates.MAX_SKILL_BYTES` for an archive) and timed out.  An archive's
members are read in memory; links in it are reported as ``symlinks``, never written anywhere.
The pin is ``{"sha256": folder_sha256, "version", "digest"?}`` (the index's digest when it gives one).
"""

from __future__ import annotations

import hashlib
import io
import json
import posixpath
import tarfile
from collections.abc import Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests

from ledger.bundle.skill import MAX_SUPPORT_FILE
from ledger.errors import SourceError
from ledger.supply.candidates import MAX_SKILL_BYTES, Candidate, candidate, pick, source_doc
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
        version = doc.get("version", _schema_version(doc.get("$schema")))
        if not isinstance(version, str) or not version.startswith("0."):
            raise SourceError(f"{where} is index version {version!r}; this ledger reads 0.1 and 0.2",
                              hint="upgrade brain-ledger")  # fmt: skip
        return where, doc
    raise SourceError(f"{url} serves no skills index at {' or '.join(tries)}", hint="pass the index's URL")


def _schema_version(schema: Any) -> str:
    """The version a ``$schema`` URL names (``…/discovery/0.2.0/schema.json``), else 0.1.0."""
    parts = schema.split("/") if isinstance(schema, str) else []
    return parts[-2] if len(parts) >= 2 and parts[-1] == "schema.json" else "0.1.0"


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
    if "url" in entry and "files" not in entry:
        return _artifact(index_url, version, entry, where)
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


def _artifact(index_url: str, version: str, entry: dict[str, Any], where: str) -> Candidate:
    """A published v0.2.0 entry: one ``SKILL.md`` or one archive at ``url``, checked against ``digest``."""
    name, kind = entry["name"], entry.get("type")
    candidate(name, {"SKILL.md": (b"", False)}, source_doc("index", index_url, name, None), {})  # the name first
    if kind not in ("skill-md", "archive") or not isinstance(entry.get("url"), str):
        raise SourceError(f"{where}: entry type {kind!r} is not one this ledger reads (skill-md, archive)")
    want = _hex(entry.get("digest"), where)
    url = urljoin(index_url, entry["url"])
    body = _get(url, MAX_SUPPORT_FILE if kind == "skill-md" else MAX_SKILL_BYTES)
    if body is None:
        raise SourceError(f"{where}: {url} is listed but not served")
    if hashlib.sha256(body).hexdigest() != want:
        raise SourceError(f"{where}: {url} does not match its digest in the index",
                          hint="the file or the index was altered; nothing was taken")  # fmt: skip
    files, links = ({"SKILL.md": (body, False)}, []) if kind == "skill-md" else _unpacked(body, name, where)
    pin = {"sha256": folder_sha256(files), "version": version, "digest": f"sha256:{want}"}
    return candidate(name, files, source_doc("index", index_url, name, None), pin, symlinks=links)


def _unpacked(data: bytes, name: str, where: str) -> tuple[dict[str, tuple[bytes, bool]], list[str]]:
    """The regular files (and the links, unread) of a ``.tar.gz``, in memory; its one top folder
    named ``name`` is taken as the skill's root."""
    files: dict[str, tuple[bytes, bool]] = {}
    links: list[str] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            members = tar.getmembers()
            if len(members) > 10_000:
                raise SourceError(f"{where}: the archive holds {len(members)} entries; refused")
            for m in members:
                rel = m.name.removeprefix("./")
                if m.isfile():
                    handle = tar.extractfile(m)
                    files[rel] = (handle.read() if handle else b"", bool(m.mode & 0o100))
                elif m.issym() or m.islnk():
                    links.append(rel)
                elif not m.isdir():
                    raise SourceError(f"{where}: archive member {rel!r} is not a file, folder or link")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SourceError(f"{where}: the archive cannot be read: {exc}") from exc
    if "SKILL.md" not in files and f"{name}/SKILL.md" in files:
        outside = [p for p in [*files, *links] if not p.startswith(f"{name}/")]
        if outside:
            raise SourceError(f"{where}: the archive holds {outside[0]!r} beside its folder {name!r}")
        cut = len(name) + 1
        files = {p[cut:]: v for p, v in files.items() if p.startswith(f"{name}/")}
        links = [p[cut:] for p in links if p.startswith(f"{name}/")]
    return files, links


def index_candidates(url: str, names: Sequence[str] = ()) -> list[Candidate]:
    """The skills an index at (or under) ``url`` lists, each fetched and checked."""
    index_url, doc = _index(url)
    entries = {e["name"]: e for e in doc["skills"] if isinstance(e, dict) and isinstance(e.get("name"), str)}
    version = doc.get("version", _schema_version(doc.get("$schema")))
    return [_skill(index_url, version, entries[n]) for n in pick(entries, names, index_url)]


def pinned(source: dict[str, Any], pin: dict[str, Any], name: str) -> Candidate:
    """The skill as the index serves it now, refused unless its bytes hash to the recorded pin."""
    (found,) = index_candidates(source["url"], [name])
    if found.pin["sha256"] != pin.get("sha256"):
        raise SourceError(f"{source['url']} no longer serves {name!r} as pinned: its folder hashes to "
                          f"{found.pin['sha256']}, not {pin.get('sha256')}",
                          hint="the index's content changed; 'ledger outdated' shows the new version")  # fmt: skip
    return found
