"""``ledger export --discovery DIR``: the brain's served skills as a static Agent Skills Discovery site.

The site is what the Agent Skills Discovery RFC v0.2.0 (cloudflare/agent-skills-discovery-rfc) asks
for, and nothing a web server must compute: ``.well-known/agent-skills/index.json`` with ``$schema``
and one entry per skill (``name``, ``type``, ``description``, ``url``, ``digest``), each skill either
``<name>/SKILL.md`` (``skill-md``: a skill that is one non-executable ``SKILL.md``) or ``<name>.tar.gz``
(``archive``: the skill's files at the archive's root, byte-reproducible, :func:`tarball`), and beside
each ``<name>.anchor.json``: the entry's ``_meta`` object as the MCP Skills extension serves it
(docs/lineage/anchor.md, docs/lineage/anchor.md §5), so a client can prove every file into the brain's signed root.

The skills are exactly those :class:`~ledger.publish.entries.Entries` serves (what the brain withholds,
or an evaluation gate holds back, is not published), read from the same snapshot.  This module only
computes the site's bytes (:func:`site_files`) and recognises a previous export (:func:`is_site`); the
CLI writes them with the export's one atomic tree write (:func:`ledger.folders.export.write_tree`).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.errors import LedgerError
from ledger.publish.anchor import KEY

if TYPE_CHECKING:
    from ledger.publish.entries import Entries

__all__ = ["BASE", "INDEX", "SCHEMA", "is_site", "site_files", "tarball"]

SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"  # the RFC's v0.2.0 $schema URI
BASE = ".well-known/agent-skills"  # the index's folder under the site's root
INDEX = f"{BASE}/index.json"
_SKILL = "skill://"
_SKILL_MD = "SKILL.md"


def _json(doc: Any) -> bytes:
    """One JSON document as the ledger writes its records: sorted keys, two-space indent, ASCII, final LF."""
    return (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=True) + "\n").encode()


def tarball(files: Mapping[str, tuple[bytes, bool]]) -> bytes:
    """A byte-reproducible ``.tar.gz`` of ``files`` ({path: (bytes, executable)}) at the archive's root.

    Members in path byte order, regular files only (no folders, no links), PAX format, mode 0755 for an
    executable file and 0644 otherwise, mtime 0, uid and gid 0, no owner or group names; gzip with no
    file name, mtime 0, level 9.  The same files give the same bytes on any machine with the same zlib."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(files, key=lambda p: p.encode()):
            data, executable = files[rel]
            info = tarfile.TarInfo(rel)
            info.size, info.mode, info.mtime = len(data), 0o755 if executable else 0o644, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def site_files(entries: Entries) -> dict[str, bytes]:
    """Every file of the site ({path under DIR: bytes}): the index, each skill's artifact and its anchor.

    Two served skills of one name (a nested skill named as another) cannot both be in one index, whose
    entries are found by name: that is refused, naming both, and nothing is written."""
    out: dict[str, bytes] = {}
    skills: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for entry in entries.list():
        uri = entry["uri"]
        path = uri[len(_SKILL) : -len("/" + _SKILL_MD)]
        name = path.rsplit("/", 1)[-1]
        if name in seen:
            raise LedgerError(
                f"two served skills are named {name!r} ({seen[name]} and {uri}); a discovery "
                "index lists each name once, so nothing was written",
                hint="rename one of them ('ledger skill move'), then export again",
            )
        seen[name] = uri
        anchor = entry["_meta"][KEY]
        prefix = anchor.get("prefix") or ""
        kinds = {f["path"]: f["kind"] for f in anchor["files"]}
        files: dict[str, tuple[bytes, bool]] = {}
        for res in entry["resources"]:
            rel = res["uri"][len(f"{_SKILL}{path}/") :]
            files[rel] = (entries.read(res["uri"]), kinds[f"{prefix}/{rel}" if prefix else rel] == "exec")
        if set(files) == {_SKILL_MD} and not files[_SKILL_MD][1]:
            kind, url, data = "skill-md", f"{name}/{_SKILL_MD}", files[_SKILL_MD][0]
        else:
            kind, url, data = "archive", f"{name}.tar.gz", tarball(files)
        out[f"{BASE}/{url}"] = data
        out[f"{BASE}/{name}.anchor.json"] = _json({KEY: anchor})
        description = entry["frontmatter"].get("description")
        skills.append(
            {
                "name": name,
                "type": kind,
                "description": description if isinstance(description, str) else "",
                "url": url,
                "digest": _sha256(data),
            }
        )
    skills.sort(key=lambda s: s["name"])
    out[INDEX] = _json({"$schema": SCHEMA, "skills": skills})
    return dict(sorted(out.items()))


def is_site(dest: Path) -> bool:
    """Whether ``dest`` holds a previous discovery export and nothing else: only ``.well-known/agent-skills/``,
    whose every file is one its own ``index.json`` names (an artifact, or an anchor beside one), no link."""
    try:
        if {e.name for e in os.scandir(dest)} != {".well-known"} or {
            e.name for e in os.scandir(dest / ".well-known")
        } != {"agent-skills"}:
            return False
        doc = json.loads((dest / INDEX).read_bytes())
        if not isinstance(doc, dict) or doc.get("$schema") != SCHEMA or not isinstance(doc.get("skills"), list):
            return False
        named = {"index.json"}
        for s in doc["skills"]:
            named |= {str(s.get("url")), f"{s.get('name')}.anchor.json"} if isinstance(s, dict) else set()
        for root, dirs, names in os.walk(dest / BASE):
            for n in [*dirs, *names]:
                if os.path.islink(os.path.join(root, n)):
                    return False
            for n in names:
                if os.path.relpath(os.path.join(root, n), dest / BASE).replace(os.sep, "/") not in named:
                    return False
        return True
    except (OSError, ValueError):
        return False
