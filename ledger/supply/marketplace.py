"""Skills from a Claude Code plugin marketplace (``.claude-plugin/marketplace.json``).

The schema, as Claude Code's docs give it (code.claude.com/docs/en/plugin-marketplaces):
``{"name", "owner": {...}, "metadata": {"pluginRoot"?, …}, "plugins": [{"name", "source", "skills"?, …}]}``.
A plugin's ``source`` is a relative path (``./plugins/x``, resolved against the marketplace's
repository root, or against ``metadata.pluginRoot`` when the path is a bare name) or an object:
``{"source": "github", "repo": "owner/repo", "ref"?, "sha"?}``, ``{"source": "url", "url", "ref"?,
"sha"?}`` (any git URL) or ``{"source": "git-subdir", "url", "path", "ref"?, "sha"?}``.  Other kinds
(``npm``, ``pip``) are not git and are left out: their skills are not listed.

A plugin's skills are ``skills/<name>/SKILL.md`` under its root, plus each path that its
marketplace entry or its own ``.claude-plugin/plugin.json`` lists in ``skills`` (a skill
folder, or a folder of skill folders), relative to the plugin's root.

Names: a candidate's ``name`` is the skill's folder name (the key it will have in a brain),
and its ``source`` records the ``plugin``.  ``names`` may say ``plugin:skill``, or just
``skill`` when only one plugin has a skill of that name.  The marketplace is read from git
(a repository URL or path, or a ``marketplace.json`` inside a git work tree, read as its
``HEAD`` commit holds it: uncommitted edits are not seen); each pin is the commit of the
repository the skill was read from, with a ``sha`` in the entry used as that pin.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger.bundle.skill import SKILL_MD
from ledger.errors import SourceError
from ledger.supply import gitsource as gsrc
from ledger.supply.candidates import Candidate, git, pick, source_doc

__all__ = ["MARKETPLACE", "local_repo", "marketplace_candidates"]

MARKETPLACE = ".claude-plugin/marketplace.json"


def local_repo(path: Path) -> tuple[str, str]:
    """(repository root, the file's path in it) of a file inside a git work tree."""
    top = git("-C", str(path.parent), "rev-parse", "--show-toplevel", what=f"finding the repository of {path}")
    root = Path(top.decode().strip())
    return str(root), path.resolve().relative_to(root.resolve()).as_posix()


def _inside(base: str, rel: str, where: str) -> str:
    """``rel`` joined to ``base`` inside the repository, or refused (no ``..`` escape, no absolute path)."""
    joined = posixpath.normpath(posixpath.join(base, rel.removeprefix("./")))
    if rel.startswith("/") or joined == ".." or joined.startswith("../"):
        raise SourceError(f"{where}: path {rel!r} leaves the repository", hint="plugin paths stay inside it")
    return "" if joined == "." else joined


def _plugin_location(entry: dict[str, Any], url: str, root: str, where: str) -> dict[str, Any] | None:
    """Where a plugin's files are: {"url", "ref", "sha", "folder"}; None for kinds that are not git."""
    src = entry.get("source")
    if isinstance(src, str):
        base = root if root and "/" not in src.removeprefix("./") else ""
        return {"url": url, "ref": None, "sha": None, "folder": _inside(base, src, where), "same": True}
    if not isinstance(src, dict):
        raise SourceError(f"{where}: plugin {entry.get('name')!r} has a source that is neither a path nor an object")
    kind = src.get("source")
    if kind == "github" and isinstance(src.get("repo"), str):
        repo_url = f"https://github.com/{src['repo']}.git"
    elif kind in ("url", "git", "git-subdir") and isinstance(src.get("url"), str):
        repo_url = src["url"]
    else:
        return None
    folder = _inside("", src["path"], where) if kind == "git-subdir" and isinstance(src.get("path"), str) else ""
    return {"url": repo_url, "ref": src.get("ref"), "sha": src.get("sha"), "folder": folder, "same": False}


def _skill_folders(rows: gsrc.Listing, folder: str, listed: Sequence[str], where: str) -> dict[str, str]:
    """{skill name: folder} of one plugin: ``skills/*`` and the paths its entry lists."""
    paths = {p for _, _, p in rows}
    bases = [_inside(folder, "skills", where)] + [_inside(folder, s, where) for s in listed]
    found: dict[str, str] = {}
    for base in bases:
        prefix = f"{base}/" if base else ""
        if f"{prefix}{SKILL_MD}" in paths:
            found.setdefault(posixpath.basename(base), base)
            continue
        depth = prefix.count("/") + 2
        for path in sorted(paths):
            parts = path.split("/")
            if path.startswith(prefix) and len(parts) == depth and parts[-1] == SKILL_MD:
                found.setdefault(parts[-2], "/".join(parts[:-1]))
    return found


def _manifest_skills(repo: Path, commit: str, folder: str, rows: gsrc.Listing) -> list[str]:
    """The skill paths a plugin's own ``.claude-plugin/plugin.json`` lists (``skills``), if any."""
    manifest = posixpath.join(folder, ".claude-plugin/plugin.json") if folder else ".claude-plugin/plugin.json"
    if not any(p == manifest for _, _, p in rows):
        return []
    try:
        doc = json.loads(git("show", f"{commit}:{manifest}", what=f"reading {manifest}", git_dir=str(repo)))
    except ValueError:
        return []  # a manifest that is not JSON lists nothing; Claude Code would refuse the plugin, not us
    return _listed(doc) if isinstance(doc, dict) else []


def marketplace_candidates(url: str, ref: str | None, file: str = MARKETPLACE, names: Sequence[str] = (),
                           pin: str | None = None, repo: Path | None = None) -> list[Candidate]:  # fmt: skip
    """The skills of the marketplace ``file`` in the repository ``url`` at ``pin`` (default: ``ref``'s head).

    Every plugin's repository is fetched to list its skills (a skill's plugin is known only then);
    ``repo`` is the marketplace's repository when the caller has fetched it already."""
    with contextlib.ExitStack() as stack:
        repos = {url: repo if repo is not None else stack.enter_context(gsrc.mirrored(url))}
        commit = gsrc.commit_of(repos[url], pin or ref, url)
        where = f"{url}@{commit[:12]}:{file}"
        plugins = _plugins(repos[url], commit, file, url, where)
        catalog: dict[str, tuple[str, str, str, gsrc.Listing]] = {}  # plugin:skill → (repo url, commit, folder, rows)
        for plugin, (entry, loc) in plugins.items():
            if loc["url"] not in repos:
                repos[loc["url"]] = stack.enter_context(gsrc.mirrored(loc["url"]))
            at = commit if loc["same"] else gsrc.commit_of(repos[loc["url"]], loc["sha"] or loc["ref"], loc["url"])
            rows = gsrc.listing(repos[loc["url"]], at)
            listed = _listed(entry) + _manifest_skills(repos[loc["url"]], at, loc["folder"], rows)
            for skill, folder in _skill_folders(rows, loc["folder"], listed, where).items():
                catalog[f"{plugin}:{skill}"] = (loc["url"], at, folder, rows)
        out = []
        for key in _chosen(catalog, names, where):
            plugin, skill = key.split(":", 1)
            repo_url, at, folder, rows = catalog[key]
            doc = source_doc("marketplace", url, folder, ref, plugin=plugin, repo=repo_url, file=file)
            out.append(gsrc.read_candidate(repos[repo_url], rows, at, folder, skill, doc))
        return out


def _plugins(repo: Path, commit: str, file: str, url: str, where: str) -> dict[str, tuple[dict[str, Any], Any]]:
    """{plugin name: (its entry, where its files are)} of the marketplace file at ``commit``."""
    try:
        doc = json.loads(git("show", f"{commit}:{file}", what=f"reading {file}", git_dir=str(repo)))
    except SourceError as exc:
        raise SourceError(f"{url} has no {file} at {commit[:12]}", hint="pass a marketplace's repository") from exc
    except ValueError as exc:
        raise SourceError(f"{where} is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("plugins"), list):
        raise SourceError(f"{where} is not a marketplace: it has no 'plugins' list")
    root = (doc.get("metadata") or {}).get("pluginRoot") or ""
    plugins = {}
    for entry in doc["plugins"]:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            loc = _plugin_location(entry, url, root if isinstance(root, str) else "", where)
            if loc is not None:
                plugins[entry["name"]] = (entry, loc)
    return plugins


def _listed(entry: dict[str, Any]) -> list[str]:
    skills = entry.get("skills") or []
    return [skills] if isinstance(skills, str) else [s for s in skills if isinstance(s, str)]


def _chosen(catalog: dict[str, Any], names: Sequence[str], where: str) -> list[str]:
    """The ``plugin:skill`` keys ``names`` ask for (every key when none)."""
    if not names:
        return sorted(catalog)
    by_skill: dict[str, list[str]] = {}
    for key in catalog:
        by_skill.setdefault(key.split(":", 1)[1], []).append(key)
    keys = []
    for name in names:
        hits = [name] if name in catalog else by_skill.get(name, [])
        if len(hits) > 1:
            raise SourceError(f"{where}: more than one plugin has a skill {name!r}: {', '.join(sorted(hits))}",
                              hint="name it as plugin:skill")  # fmt: skip
        keys += hits or [name]
    pick(catalog, keys, where)  # a missing one is refused, with what there is
    return list(dict.fromkeys(keys))
