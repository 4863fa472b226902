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
:data:`~ledger.sources.candidates.MAX_SKILL_BYTES` for an archive) and timed out.  A ``$schema`` is
matched against the known URIs (:data:`SCHEMAS`) and an unknown one refused; an entry of a type this
ledger does not read is skipped.  An archive (``.tar.gz``, other tar compressions, or ``.zip``) is
downloaded whole and its digest checked before it is unpacked; unpacking applies its caps as bytes
are decompressed, never after, refuses a member named twice, a ``..`` or absolute name and a link that
resolves outside the skill, and reports the links inside it as ``symlinks``, never written anywhere.
An entry's URL stays on the index's origin or is a remote https URL (:mod:`~ledger.sources.origins`).
The pin is ``{"sha256": folder_sha256, "version", "digest"?}`` (the index's digest when it gives one).

A site written by ``ledger export --discovery`` serves beside the index each skill's anchor
(``<name>.anchor.json``, docs/lineage/anchor.md §5): when one is there every file is proven into its
root with :func:`ledger.publish.anchor.verify_anchor`, the pin gains ``root`` and ``commit`` and the
candidate's signer is the address the snapshot's signature recovers (ADR 64).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import io
import json
import lzma
import posixpath
import re
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO
from urllib.parse import urljoin, urlsplit

import requests

from ledger._json import shown as json_shown
from ledger._json import unique_keys
from ledger.bundle.skill import MAX_SUPPORT_FILE, declared_name
from ledger.errors import LedgerError, SourceError
from ledger.publish import anchor as anchors
from ledger.sources import origins
from ledger.sources.candidates import MAX_SKILL_BYTES, Candidate, candidate, pick, source_doc
from ledger.sources.lockfile import folder_sha256

__all__ = ["MAX_INDEX", "MAX_REDIRECTS", "index_candidates", "is_index_url", "pinned", "skill_digest"]

# bytes of index.json: ~12,000 entries at the spec's longest description, so a big brain's own export reads back
MAX_INDEX = 16 * 1024 * 1024
MAX_REDIRECTS = 3
MAX_ANCHOR = 16 * 1024 * 1024  # bytes of one anchor file: its signed fields and one proof per file (at most 512)
MAX_MEMBERS = 10_000  # entries of one archive
_SPOOL = 8 * 1024 * 1024  # bytes of a downloaded archive held in memory before it is spooled to disk
_HEADER_ROOM = 16 * 1024 * 1024  # decompressed bytes an archive may spend on anything but the files taken
_CHUNK = 65536
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
TIMEOUT = (5.0, 30.0)  # connect, read (seconds)
SCHEMAS = {"https://schemas.agentskills.io/discovery/0.2.0/schema.json": "0.2.0"}  # $schema URI -> version
KINDS = ("skill-md", "archive")  # the v0.2.0 entry types this ledger reads
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_LOCATIONS = (".well-known/agent-skills/index.json", ".well-known/skills/index.json")


def is_index_url(url: str) -> bool:
    path = urlsplit(url).path
    return url.startswith(("https://", "http://")) and (path.endswith("index.json") or "/.well-known/" in path)


def _allowed(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK):
        return
    raise SourceError(
        f"refusing to fetch {url}: an index is read over https only",
        hint="use the https:// URL (plain http is allowed only to this machine, for tests)",
    )


@contextlib.contextmanager
def _response(url: str) -> Iterator[requests.Response | None]:
    """The open response at ``url`` (None on 404), after same-host redirects; its body is not read yet.

    The body is asked for as it is (``Accept-Encoding: identity``) and read undecoded, so that no
    transport encoding can inflate it behind the caps; a response in another encoding is refused."""
    for _ in range(MAX_REDIRECTS + 1):
        _allowed(url)
        shown = origins.redacted(url)
        try:
            with requests.get(
                url, timeout=TIMEOUT, allow_redirects=False, stream=True, headers={"Accept-Encoding": "identity"}
            ) as resp:
                if resp.is_redirect:
                    target = urljoin(url, resp.headers.get("location", ""))
                    if urlsplit(target)[:2] != urlsplit(url)[:2]:
                        raise SourceError(
                            f"{shown} redirects to another host or scheme ({origins.redacted(target)}); not followed"
                        )
                    url = target
                    continue
                if resp.status_code == 404:
                    yield None
                    return
                if resp.status_code != 200:
                    raise SourceError(f"{shown} answered HTTP {resp.status_code}", hint="check the URL, or try later")
                encoding = resp.headers.get("content-encoding", "identity").strip().lower()
                if encoding not in ("", "identity"):
                    raise SourceError(
                        f"{shown} answered in Content-Encoding {encoding!r} though asked for none; refused",
                        hint="serve the file as it is",
                    )
                yield resp
                return
        except requests.RequestException as exc:
            raise SourceError(
                f"cannot fetch {shown}: {type(exc).__name__}", hint="check the URL and the network"
            ) from None
    raise SourceError(f"{origins.redacted(url)} redirects more than {MAX_REDIRECTS} times; not followed")


class _Body(io.RawIOBase):
    """A response body as a stream: read as it arrives, hashed, and refused past ``limit`` bytes."""

    def __init__(self, resp: requests.Response, limit: int, where: str) -> None:
        self.resp, self.limit, self.where = resp, limit, where
        self.sha256 = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        try:
            data = self.resp.raw.read(min(len(buf), _CHUNK), decode_content=False)
        except (requests.RequestException, OSError) as exc:
            raise SourceError(f"{self.where}: the download failed: {type(exc).__name__}") from None
        self.size += len(data)
        if self.size > self.limit:
            raise SourceError(f"{self.where} is larger than {self.limit} bytes; refused")
        self.sha256.update(data)
        buf[: len(data)] = data
        return len(data)

    def drain(self) -> None:
        while self.read(_CHUNK):
            pass


def _get(url: str, limit: int) -> bytes | None:
    """The body at ``url`` (None on 404), within ``limit`` bytes and same-host redirects."""
    with _response(url) as resp:
        if resp is None:
            return None
        body = _Body(resp, limit, origins.redacted(url))
        out = bytearray()
        while chunk := body.read(_CHUNK):
            out += chunk
        return bytes(out)


def _index(url: str) -> tuple[str, dict[str, Any]]:
    """(index URL, its document), trying the well-known locations under a base URL."""
    named = urlsplit(url).path.endswith("index.json")
    tries = [url] if named else [urljoin(url.rstrip("/") + "/", loc) for loc in _LOCATIONS]
    for where in tries:
        body = _get(where, MAX_INDEX)
        if body is None:
            continue
        try:
            doc = json.loads(body, object_pairs_hook=unique_keys)  # read one way only (RFC 8259 §4)
        except ValueError as exc:
            raise SourceError(f"{where} is not JSON: {exc}") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("skills"), list):
            raise SourceError(f"{where} is not a skills index: it has no 'skills' list")
        version = _version(doc, where)
        if not isinstance(version, str):
            raise SourceError(
                f"{where} is not a skills index: its version {json_shown(version)} is not text",
                hint='an index names its version as text: "0.1.0" or "0.2.0"',
            )
        if not version.startswith("0."):
            raise SourceError(
                f"{where} is index version {json_shown(version)}; this ledger reads 0.1 and 0.2",
                hint="upgrade brain-ledger",
            )
        return where, doc
    raise SourceError(
        f"{url} is neither a git repository nor a skills index (none at {' or '.join(tries)})",
        hint="check the URL: a git repository's clone URL, or an index's URL",
    )


def _version(doc: dict[str, Any], where: str) -> Any:
    """The index's version: the one a known ``$schema`` URI names, else its draft ``version``, else 0.1.0.

    The RFC makes ``$schema`` an opaque identifier matched against known URIs, and an index with one
    this ledger does not know is not processed (its structure may have changed incompatibly)."""
    if "$schema" not in doc:
        return doc.get("version", "0.1.0")
    version = SCHEMAS.get(doc["$schema"]) if isinstance(doc["$schema"], str) else None
    if version is None:
        raise SourceError(
            f"{where} declares the index schema {json_shown(doc['$schema'])}, which this ledger "
            f"does not know; not read",
            hint="it reads " + ", ".join(SCHEMAS) + "; upgrade "
            "brain-ledger, or ask the publisher which schema the index follows",
        )
    return version


def _hex(digest: Any, where: str) -> str:
    """The hex of a ``sha256:{hex}`` digest: exactly 64 lower-case hex digits, as the RFC writes it."""
    if not isinstance(digest, str) or _DIGEST.fullmatch(digest) is None:
        raise SourceError(f"{where}: digest {json_shown(digest)} is not sha256: and 64 lower-case hex digits")
    return digest[7:]


def skill_digest(files: dict[str, str]) -> str:
    """The v0.2 skill-level digest of {path: file sha256 hex}: lines ``path\\0hex\\n`` sorted by path bytes."""
    ordered = sorted(files.items(), key=lambda item: item[0].encode())
    lines = b"".join(p.encode() + b"\0" + h.encode() + b"\n" for p, h in ordered)
    return "sha256:" + hashlib.sha256(lines).hexdigest()


def _skill(index_url: str, version: str, entry: dict[str, Any], published: bool = False) -> Candidate:
    """One index entry's files, fetched and checked against every digest the index gives."""
    name = entry["name"]
    where = f"{index_url} ({name})"
    if published or ("url" in entry and "files" not in entry):
        return _named(_artifact(index_url, version, entry, where), where)
    listed = entry.get("files")
    if not isinstance(listed, list) or not listed:
        raise SourceError(f"{where}: the entry lists no files")
    wanted: dict[str, str | None] = {}
    for item in listed:
        if not isinstance(item, (str, dict)):
            raise SourceError(f'{where}: a file entry is a path or {{"path", "digest"}}, not {json_shown(item)}')
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
            raise SourceError(
                f"{where}: {path} does not match its digest in the index",
                hint="the file or the index was altered; nothing was taken",
            )
        files[path] = (body, False)
    pin: dict[str, Any] = {"sha256": folder_sha256(files), "version": version}
    if all(w is not None for w in wanted.values()) and "digest" in entry:
        got = skill_digest({p: hashlib.sha256(b).hexdigest() for p, (b, _) in files.items()})
        if got != f"sha256:{_hex(entry['digest'], where)}":
            raise SourceError(
                f"{where}: the files' skill digest {got} is not the index's {entry['digest']}",
                hint="the index and its files disagree; nothing was taken",
            )
        pin["digest"] = got
    return _named(candidate(name, files, source_doc("index", index_url, name, None), pin), where)


def _named(found: Candidate, where: str) -> Candidate:
    """``found`` unless its SKILL.md declares another name than the index's: the RFC names a skill by its
    directory, Agent Skills by its frontmatter, and the two must be one (a brain serves no other)."""
    declared = declared_name(found.files["SKILL.md"][0].decode("utf-8", "replace"))
    if declared is not None and declared != found.name:
        raise SourceError(
            f"{where}: the index names the skill {found.name!r}, but its SKILL.md names it "
            f"{declared!r}; nothing was taken",
            hint="a skill's name is its folder's and its frontmatter's: ask the publisher to make them one",
        )
    return found


def _artifact(index_url: str, version: str, entry: dict[str, Any], where: str) -> Candidate:
    """A published v0.2.0 entry: one ``SKILL.md`` or one archive at ``url``, checked against ``digest``.

    The artifact is downloaded whole (capped as it arrives, an archive spooled to a temporary file past
    :data:`_SPOOL` bytes) and its digest checked before an archive is unpacked, in the RFC's order; the
    unpacking applies its own caps as bytes are decompressed (:func:`_unpacked`).  When the site serves
    the skill's anchor beside the index (:func:`_anchored`), every file is then proven into its root."""
    name, kind = entry["name"], entry.get("type")
    candidate(name, {"SKILL.md": (b"", False)}, source_doc("index", index_url, name, None), {})  # the name first
    if kind not in KINDS:
        said = "has no type" if kind is None else f"is of type {json_shown(kind)}"
        raise SourceError(f"{where}: the entry {said}, not one this ledger reads (skill-md, archive)")
    if not isinstance(entry.get("url"), str):
        raise SourceError(f"{where}: the entry's url {json_shown(entry.get('url'))} is not text")
    want = _hex(entry.get("digest"), where)
    url = _entry_url(index_url, entry["url"], where)
    shown = origins.redacted(url)
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL) as spool:
        with _response(url) as resp:
            if resp is None:
                raise SourceError(f"{where}: {shown} is listed but not served")
            body = _Body(resp, MAX_SUPPORT_FILE if kind == "skill-md" else MAX_SKILL_BYTES, shown)
            while chunk := body.read(_CHUNK):
                spool.write(chunk)
        if body.sha256.hexdigest() != want:
            raise SourceError(
                f"{where}: {shown} does not match its digest in the index",
                hint="the file or the index was altered; nothing was taken",
            )
        spool.seek(0)
        if kind == "skill-md":
            files, links = {"SKILL.md": (spool.read(), False)}, {}
        else:
            files, links = _unpacked(spool, name, where)
    pin: dict[str, Any] = {"sha256": folder_sha256(files), "version": version, "digest": f"sha256:{want}"}
    signer = _anchored(index_url, name, files, links, pin, where)
    return candidate(
        name,
        files,
        source_doc("index", index_url, name, None),
        pin,
        symlinks=list(links),
        signer=signer,
        link_targets={rel: t for rel, t in links.items() if t is not None},
    )


def _anchored(
    index_url: str,
    name: str,
    files: dict[str, tuple[bytes, bool]],
    links: dict[str, str | None],
    pin: dict[str, Any],
    where: str,
) -> str | None:
    """Prove ``files`` into the root of the anchor served beside the index, if there is one (docs/lineage.md
    lineage/anchor.md §5: ``<index folder>/<name>.anchor.json``, the entry's ``_meta`` object); ``pin`` gains its root
    and
    commit, and the anchor's signer is returned.  None (and ``pin`` as it was) when no anchor is served.

    Every file must be one the anchor lists, with the same bytes and kind, and the anchor must list no
    other: a file that does not prove is refused by name, and nothing is taken."""
    url = urljoin(index_url, f"{name}.anchor.json")
    body = _get(url, MAX_ANCHOR)
    if body is None:
        return None
    shown = origins.redacted(url)
    try:
        # lineage/anchor.md §3 step 1: a key named twice is refused
        doc = json.loads(body, object_pairs_hook=unique_keys)
    except ValueError as exc:
        raise SourceError(f"{where}: its anchor {shown} is not JSON: {exc}; nothing was taken") from None
    found = doc.get(anchors.KEY) if isinstance(doc, dict) else None
    if not isinstance(found, dict):
        raise SourceError(
            f"{where}: its anchor {shown} holds no {anchors.KEY!r} object",
            hint="the anchor file is the entry's _meta object (docs/lineage/anchor.md §5)",
        )
    if links:
        rel = sorted(links)[0]
        raise SourceError(
            f"{where}: {rel} is a link, which no anchored skill holds; nothing was taken",
            hint="the archive was altered after it was published",
        )
    prefix = found.get("prefix") or ""
    outer = found.get("skill")
    if (prefix.rsplit("/", 1)[-1] if prefix else outer) != name:
        raise SourceError(
            f"{where}: its anchor is for the skill {json_shown(outer)}"
            + (f" at {json_shown(prefix)}" if prefix else "")
            + f", not {name!r}; nothing was taken",
            hint="the anchor beside this skill belongs to another skill",
        )
    kinds = {e.get("path"): e.get("kind") for e in found.get("files", []) if isinstance(e, dict)}
    served = {(f"{prefix}/{rel}" if prefix else rel): v for rel, v in files.items()}
    for rel, (_, executable) in sorted(served.items()):
        if rel in kinds and kinds[rel] != ("exec" if executable else "file"):
            raise SourceError(
                f"{where}: {rel} is served {'executable' if executable else 'not executable'}, "
                f"but its anchor says {json_shown(kinds[rel])}; nothing was taken",
                hint="the archive was altered after it was published",
            )
    try:
        check = anchors.verify_anchor(found, {rel: data for rel, (data, _) in files.items()})
    except LedgerError as exc:
        raise SourceError(
            f"{where}: {exc.message}; nothing was taken",
            hint="the site's files do not prove into the anchor's signed root: they, the "
            "index or the anchor were altered",
        ) from None
    pin["root"], pin["commit"], pin["upstream"] = check.root, check.commit, check.version
    return check.signer


def _entry_url(index_url: str, given: str, where: str) -> str:
    """An entry's URL, resolved against the index's: on the index's own origin, or a remote https URL."""
    url = urljoin(index_url, given)
    if urlsplit(url)[:2] == urlsplit(index_url)[:2]:
        return url
    return origins.remote(url, f"{where}: url")


class _Capped(io.RawIOBase):
    """A decompressed stream that refuses past ``limit`` bytes, before a read that would pass it."""

    def __init__(self, raw: Any, limit: int, where: str) -> None:
        self.raw, self.limit, self.where, self.size = raw, limit, where, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        data = self.raw.read(min(len(buf), _CHUNK, self.limit + 1 - self.size))
        self.size += len(data)
        if self.size > self.limit:
            raise SourceError(f"{self.where}: the archive unpacks to more than {self.limit} bytes; refused")
        buf[: len(data)] = data
        return len(data)


def _decompressed(fh: BinaryIO) -> Any:
    """``fh`` decompressed as a stream, by its magic bytes (gzip, bzip2, xz, or a plain tar)."""
    magic = fh.read(6)
    fh.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=fh, mode="rb")
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(fh)
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(fh)
    return fh


def _unpacked(fh: BinaryIO, name: str, where: str) -> tuple[dict[str, tuple[bytes, bool]], dict[str, str | None]]:
    """The regular files and the links (a symlink's target as written, a hard link's ``None``) of an
    archive whose digest was checked: a ``.zip`` (by its magic bytes) or a tar, plain or compressed.
    Its one top folder named ``name`` is taken as the skill's root (the RFC puts the files at the root;
    a wrapper folder named as the skill is read too).  A link that resolves outside the skill's folder,
    a member named twice, and a name with ``..`` or an absolute path are refused, naming it."""
    if fh.read(4) in (b"PK\x03\x04", b"PK\x05\x06"):
        fh.seek(0)
        files, links, hard = _unzipped(fh, where)
    else:
        fh.seek(0)
        files, links, hard = _untarred(fh, where)
    if "SKILL.md" not in files and f"{name}/SKILL.md" in files:
        outside = [p for p in [*files, *links] if not p.startswith(f"{name}/")]
        if outside:
            raise SourceError(f"{where}: the archive holds {outside[0]!r} beside its folder {name!r}")
        cut = len(name) + 1
        files = {p[cut:]: v for p, v in files.items()}
        links = {p[cut:]: t for p, t in links.items()}
        hard = {p[cut:]: t[cut:] if t.startswith(f"{name}/") else f"../{t}" for p, t in hard.items()}
    for rel in [*files, *links]:
        if rel.startswith("/") or ".." in rel.split("/"):
            raise SourceError(
                f"{where}: archive member {rel!r} leaves the skill's folder; refused",
                hint="the RFC forbids '..' and absolute paths; nothing was taken",
            )
    for rel, target in sorted(links.items()):
        dest = hard.get(rel) if target is None else posixpath.join(posixpath.dirname(rel), target)
        if (
            dest is None
            or (target is not None and target.startswith("/"))
            or posixpath.normpath(dest).split("/")[0] == ".."
        ):
            said = "a hard link to" if target is None else "a symlink to"
            raise SourceError(
                f"{where}: archive member {rel!r} is {said} {json_shown(target or hard.get(rel))}, "
                "outside the skill's folder; refused",
                hint="the RFC forbids links that leave the skill; nothing was taken",
            )
    return files, links


class _Files:
    """What an archive holds as it is read: files, links and hard links' targets, with the caps applied."""

    def __init__(self, where: str) -> None:
        self.where, self.total, self.count = where, 0, 0
        self.files: dict[str, tuple[bytes, bool]] = {}
        self.links: dict[str, str | None] = {}
        self.hard: dict[str, str] = {}

    def member(self, rel: str) -> str:
        """A member's name, counted, refused past :data:`MAX_MEMBERS` or when it was seen before."""
        self.count += 1
        if self.count > MAX_MEMBERS:
            raise SourceError(f"{self.where}: the archive holds more than {MAX_MEMBERS} entries; refused")
        rel = rel.removeprefix("./")
        if rel in self.files or rel in self.links:
            raise SourceError(f"{self.where}: the archive holds {rel!r} twice; which one is meant is ambiguous")
        return rel

    def size(self, rel: str, size: int) -> None:
        """Refuse a file over the per-file limit, or one that takes the total over one skill's."""
        if size > MAX_SUPPORT_FILE:
            raise SourceError(f"{self.where}: {rel} is {size} bytes; the limit is {MAX_SUPPORT_FILE}")
        self.total += size
        if self.total > MAX_SKILL_BYTES:
            raise SourceError(
                f"{self.where}: the archive's files hold more than {MAX_SKILL_BYTES} bytes; one "
                f"skill is limited to {MAX_SKILL_BYTES}"
            )


def _untarred(fh: BinaryIO, where: str) -> tuple[dict[str, tuple[bytes, bool]], dict[str, str | None], dict[str, str]]:
    """A tar read as a stream.  Each member's size is checked against the per-file limit, and the running
    total against the skill's, from its header before its bytes are read; the decompressed stream itself
    is capped at the files taken plus :data:`_HEADER_ROOM`, checked before each read, so nothing else (a
    long name, a pax record, a folder's data) can inflate past that room."""
    got = _Files(where)
    try:
        stream = _Capped(_decompressed(fh), _HEADER_ROOM, where)  # grows by each file taken
        capped = io.BufferedReader(stream, _CHUNK)
        with tarfile.open(fileobj=capped, mode="r|") as tar:
            for m in tar:
                rel = got.member(m.name)
                if m.isfile() and not m.issparse():
                    got.size(rel, m.size)
                    stream.limit += -(-m.size // 512) * 512  # its blocks, padding included
                    handle = tar.extractfile(m)
                    data = handle.read(m.size) if handle else b""
                    got.files[rel] = (data, bool(m.mode & 0o100))
                elif m.issym() or m.islnk():
                    got.links[rel] = m.linkname if m.issym() else None
                    if m.islnk():
                        got.hard[rel] = m.linkname.removeprefix("./")
                elif not m.isdir():
                    raise SourceError(f"{where}: archive member {rel!r} is not a file, folder or link")
    except (tarfile.TarError, OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise SourceError(f"{where}: the archive cannot be read: {exc}") from exc
    return got.files, got.links, got.hard


def _unzipped(fh: BinaryIO, where: str) -> tuple[dict[str, tuple[bytes, bool]], dict[str, str | None], dict[str, str]]:
    """A ``.zip`` (the RFC's other archive format): each member's declared size is checked against the
    caps before it is read, and no more than that size (plus one byte, to see a lie) is ever read."""
    got = _Files(where)
    try:
        with zipfile.ZipFile(fh) as zf:
            for info in zf.infolist():
                rel = got.member(info.filename)
                mode = info.external_attr >> 16
                if info.is_dir():
                    continue
                if stat.S_ISLNK(mode):
                    with zf.open(info) as h:
                        got.links[rel] = h.read(4097).decode("utf-8", "replace")
                    continue
                if mode and not stat.S_ISREG(mode):
                    raise SourceError(f"{where}: archive member {rel!r} is not a file, folder or link")
                got.size(rel, info.file_size)
                with zf.open(info) as h:
                    data = h.read(info.file_size + 1)
                if len(data) != info.file_size:
                    raise SourceError(f"{where}: archive member {rel!r} is not the size its header says; refused")
                got.files[rel] = (data, bool(mode & 0o100))
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        OSError,
        EOFError,
        NotImplementedError,
        zlib.error,
        lzma.LZMAError,
        RuntimeError,
    ) as exc:
        raise SourceError(f"{where}: the archive cannot be read: {exc}") from exc
    return got.files, got.links, got.hard


def index_candidates(url: str, names: Sequence[str] = ()) -> list[Candidate]:
    """The skills an index at (or under) ``url`` lists, each fetched and checked.

    Two entries of one name are refused (which one is meant is ambiguous).  A v0.2.0 entry of a type
    this ledger does not read is skipped, as the RFC asks, and refused only when it is asked for by name."""
    index_url, doc = _index(url)
    version = _version(doc, index_url)
    entries: dict[str, dict[str, Any]] = {}
    for e in doc["skills"]:
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            continue
        if e["name"] in entries:
            raise SourceError(
                f"{index_url} lists the skill {e['name']!r} twice; which one is meant is ambiguous",
                hint="ask the publisher to list each skill once",
            )
        entries[e["name"]] = e
    unread = {n for n, e in entries.items() if "$schema" in doc and e.get("type") not in KINDS}
    asked = [n for n in names if n in unread]
    if asked:
        e = entries[asked[0]]
        said = "has no type" if e.get("type") is None else f"is of type {json_shown(e.get('type'))}"
        raise SourceError(
            f"{index_url} ({asked[0]}): the entry {said}, not one this ledger reads ({', '.join(KINDS)})",
            hint="ask the publisher for a skill-md or an archive",
        )
    listed = {n: e for n, e in entries.items() if n not in unread}
    return [_skill(index_url, version, listed[n], "$schema" in doc) for n in pick(listed, names, index_url)]


def pinned(source: dict[str, Any], pin: dict[str, Any], name: str) -> Candidate:
    """The skill as the index serves it now, refused unless its bytes hash to the recorded pin."""
    (found,) = index_candidates(source["url"], [name])
    if found.pin["sha256"] != pin.get("sha256"):
        raise SourceError(
            f"{source['url']} no longer serves {name!r} as pinned: its folder hashes to "
            f"{found.pin['sha256']}, not {pin.get('sha256')}",
            hint="the index's content changed; 'ledger supply outdated' shows the new version",
        )
    keeps_anchor(source["url"], name, pin, found.pin)
    return found


def keeps_anchor(url: str, name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Refuse ``new`` (what the index serves now) when ``old`` was pinned to an anchor's root and ``new``
    has none: a skill once proven is never taken again on the index's digests alone (lineage/anchor.md §5)."""
    if "root" in old and new.get("root") is None:
        raise SourceError(
            f"{url} serves {name!r} without the anchor it was pinned to (root "
            f"{old['root']}); its files are no longer proven; nothing changed",
            hint="ask the publisher to export the site again with its anchors",
        )
