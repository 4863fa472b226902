"""The ``skills`` CLI's project lock, ``skills-lock.json``, and its folder hash, bit for bit.

So that a brain and ``npx skills`` (vercel-labs/skills) can share one lock, both are
written exactly as that tool writes them, read from its ``src/local-lock.ts``
(vercel-labs/skills at d050d784, ``writeLocalLock`` and ``computeSkillFolderHash``):

- the file is ``JSON.stringify({version, skills}, null, 2) + "\\n"``: two-space indent,
  ``version`` first (1), ``skills`` sorted by name in UTF-16 code-unit order (JavaScript's
  default ``sort()``), each entry's keys in the order they were given
  (``source, sourceType, computedHash`` from ``add``; newer releases add ``ref`` and
  ``skillPath``, which are kept, in order, when read);
- ``computedHash`` is SHA-256 over, for every regular file of the folder in the order of
  ``relativePath.localeCompare``, the UTF-8 relative path (``/``-separated) then the raw
  bytes, with no separator; directories named ``.git`` or ``node_modules`` are skipped,
  as are symlinks (a ``Dirent`` of a link is neither a file nor a directory); the result
  is lowercase hex, no prefix.

``localeCompare`` is ICU's root collation (Node's default ``en-US`` sorts ASCII the same):
whitespace, then punctuation, digits, then letters with case second (``a`` < ``A`` < ``b``).
:func:`ledger.bundle.folderhash.folder_sha256` (below the store: the audit uses it too) reproduces it
for ASCII exactly
(checked against Node 20 in the tests' comment); beyond ASCII it approximates ICU by
NFD base letters then accents then case, which agrees for Latin scripts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger._fs import atomic_write
from ledger.bundle.folderhash import folder_sha256
from ledger.errors import SourceError
from ledger.sources import origins

__all__ = [
    "LOCK_NAME",
    "LOCK_VERSION",
    "LockEntry",
    "folder_sha256",
    "lock_entry",
    "read_lock",
    "render_lock",
    "upstream_url",
    "write_lock",
]

LOCK_NAME = "skills-lock.json"
LOCK_VERSION = 1


@dataclass(frozen=True)
class LockEntry:
    """One skill of ``skills-lock.json``: where to fetch it (a :attr:`Candidate.source` record of type
    ``skills-lock``), its pin (``{"sha256": computedHash}``: the lock names content, not a commit), and
    ``fields``, the file's own keys in the file's order, so that a round trip changes no byte."""

    name: str
    source: dict[str, Any]
    pin: dict[str, Any]
    sha256: str
    fields: tuple[tuple[str, Any], ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        doc = dict(self.fields)
        doc["computedHash"] = self.sha256  # in its place when the file had it, else last (as 'add' writes it)
        return doc


def upstream_url(source: str, source_type: str, lock_dir: Path) -> str:
    """The repository a lock entry's ``source`` names: ``owner/repo`` on GitHub, a git URL, or a
    path relative to the lock's folder (``local``); other types are kept as they are."""
    if source_type == "github":
        owner_repo = "/".join(source.removeprefix("https://github.com/").split("/")[:2]).removesuffix(".git")
        return f"https://github.com/{owner_repo}.git"
    if source_type == "local":
        return str((lock_dir / source).resolve())
    return source


def _on_its_origin(url: str, given: str, kind: str, where: str, lock_dir: Path) -> str:
    """A lock's line is a third party's: a ``local`` source stays inside the lock's own folder, and a
    repository is a remote URL (:func:`~ledger.sources.origins.remote`); other types are refused later."""
    origins.refuse_credentials(given, where)  # the entry's own 'source' is recorded too ('upstream')
    if kind == "local":
        inside = Path(given).is_absolute() is False and Path(url).is_relative_to(Path(lock_dir).resolve())
        if not inside or "://" in given:
            raise SourceError(
                f"{where} names a source on this machine outside the lock's folder: {given!r}",
                hint="a lock's local source is a path inside the lock's own folder; to install "
                "from elsewhere here, name the path yourself: 'ledger install PATH'",
            )
        return url
    if kind in ("github", "gitlab", "git"):
        return origins.remote(url, where)
    return url


def _folder_of(skill_path: Any) -> str:
    """The skill's folder from a ``skillPath`` (``skills/x/SKILL.md`` → ``skills/x``), as the CLI derives it."""
    if not isinstance(skill_path, str):
        return ""
    return skill_path.removesuffix("SKILL.md").rstrip("/")


def _entry(name: str, doc: Any, path: Path) -> LockEntry:
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), str) for k in ("source", "sourceType")):
        raise SourceError(
            f"{path}: entry {name!r} has no 'source' and 'sourceType' strings",
            hint="repair it, or run 'npx skills add' again for that skill",
        )
    digest = doc.get("computedHash")
    if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise SourceError(
            f"{path}: entry {name!r} has no computedHash of 64 lowercase hex digits",
            hint="a lock without the hash cannot say which content it locked",
        )
    kind, ref = doc["sourceType"], doc.get("ref")
    url = doc["sourceUrl"] if kind == "git" and isinstance(doc.get("sourceUrl"), str) else doc["source"]
    origins.refuse_credentials(doc["source"], f"{path}: entry {name!r}")
    url = _on_its_origin(upstream_url(url, kind, path.parent), url, kind, f"{path}: entry {name!r}", path.parent)
    source = {
        "type": "skills-lock",
        "url": url,
        "path": _folder_of(doc.get("skillPath")),
        "ref": ref if isinstance(ref, str) and ref else None,
        "upstream": doc["source"],
        "sourceType": kind,
    }
    return LockEntry(name, source, {"sha256": digest}, digest, tuple(doc.items()))


def lock_entry(name: str, source: Mapping[str, Any], pin: Mapping[str, Any], sha256: str) -> LockEntry:
    """The ``skills-lock.json`` entry for a skill installed from ``source`` (any type), as the CLI would
    record it: ``source, sourceType, ref?, skillPath?, computedHash``."""
    kind, url, path = source.get("type"), str(source.get("repo") or source.get("url")), source.get("path") or ""
    if kind == "skills-lock" and isinstance(source.get("upstream"), str):
        upstream, upstream_type = source["upstream"], str(source.get("sourceType"))
    elif kind == "index":
        upstream, upstream_type = url, "well-known"
    elif url.startswith("https://github.com/"):
        upstream, upstream_type = "/".join(url[19:].split("/")[:2]).removesuffix(".git"), "github"
    elif "://" in url or url.startswith("git@"):
        upstream, upstream_type = url, "git"
    else:
        upstream, upstream_type = url, "local"
    fields: list[tuple[str, Any]] = [("source", upstream), ("sourceType", upstream_type)]
    if source.get("ref"):
        fields.append(("ref", source["ref"]))
    if kind != "index":
        fields.append(("skillPath", f"{path}/SKILL.md" if path else "SKILL.md"))
    fields.append(("computedHash", sha256))
    return LockEntry(name, dict(source), dict(pin), sha256, tuple(fields))


def read_lock(path: Path) -> list[LockEntry]:
    """The entries of a ``skills-lock.json``, sorted by name; a file this tool would not read is refused."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SourceError(f"cannot read {path} as JSON: {exc}", hint="pass the skills CLI's skills-lock.json") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("skills"), dict) or not isinstance(doc.get("version"), int):
        raise SourceError(f"{path} is not a skills-lock.json: it needs a numeric 'version' and a 'skills' object")
    if doc["version"] != LOCK_VERSION:
        raise SourceError(
            f"{path} is skills-lock version {doc['version']}; this ledger reads {LOCK_VERSION}",
            hint="upgrade brain-ledger, or re-create the lock with the skills CLI",
        )
    return sorted((_entry(n, e, path) for n, e in doc["skills"].items()), key=lambda e: _utf16(e.name))


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")  # code-unit order, as Array.prototype.sort compares


def render_lock(entries: Iterable[LockEntry]) -> str:
    """The file's exact text: what ``writeLocalLock`` would write for these entries."""
    skills = {e.name: e.to_json() for e in sorted(entries, key=lambda e: _utf16(e.name))}
    # JSON.stringify escapes only what JSON requires and leaves other characters as they are.
    return json.dumps({"version": LOCK_VERSION, "skills": skills}, indent=2, ensure_ascii=False) + "\n"


def write_lock(entries: Iterable[LockEntry], path: Path) -> None:
    """Write ``skills-lock.json`` as the skills CLI does, replacing the file atomically."""
    atomic_write(path, render_lock(entries).encode("utf-8"))
