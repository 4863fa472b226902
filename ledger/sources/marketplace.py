"""Skills from a Claude Code plugin marketplace (``.claude-plugin/marketplace.json``).

The schema, as Claude Code's docs give it (code.claude.com/docs/en/plugin-marketplaces):
``{"name", "owner": {...}, "metadata": {"pluginRoot"?, …}, "plugins": [{"name", "source", "skills"?, …}]}``.
A plugin's ``source`` is a relative path (``./plugins/x``, resolved against the marketplace's
repository root, or against ``metadata.pluginRoot`` when the path is a bare name) or an object:
``{"source": "github", "repo": "owner/repo", "ref"?, "sha"?}``, ``{"source": "url", "url", "ref"?,
"sha"?}`` (a remote git URL) or ``{"source": "git-subdir", "url", "path", "ref"?, "sha"?}``.  Other
kinds (``npm``, ``pip``) are not git and are left out: their skills are not listed.  The marketplace
is a third party's document: a URL it names is remote (:func:`~ledger.sources.origins.remote`), never
a path, ``file://`` or local transport on the installer's machine.

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
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger.bundle.skill import SKILL_MD
from ledger.errors import SourceError
from ledger.sources import gitsource as gsrc
from ledger.sources import origins
from ledger.sources.candidates import Candidate, git, pick, source_doc

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
        raise SourceError(
            f"{where}: path {rel!r} leaves the repository: it names a source on this machine, outside the marketplace",
            hint="plugin paths stay inside the marketplace's repository",
        )
    return "" if joined == "." else joined


_GITHUB_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def _plugin_location(entry: dict[str, Any], url: str, root: str, where: str) -> dict[str, Any] | None:
    """Where a plugin's files are: {"url", "ref", "sha", "folder", "same"}; None for kinds that are not git.

    The marketplace is a third party's document: a plugin is a path inside its own repository or a remote
    URL (:func:`~ledger.sources.origins.remote`), never a place on the installer's machine."""
    src = entry.get("source")
    name = entry.get("name")
    if isinstance(src, str):
        if (
            "://" in src
            or "::" in src
            or origins.scp_like(src)
            or src.startswith(("~", "/", "\\"))
            or re.match(r"[A-Za-z]:[\\/]", src)
        ):
            raise SourceError(
                f"{where}: plugin {name!r} names a source on this machine or elsewhere as a path: "
                f"{origins.redacted(src)!r}; a plugin's path is relative, inside the marketplace's "
                "repository",
                hint='a remote plugin is {"source": "url", "url": "https://…"}',
            )
        base = root if root and "/" not in src.removeprefix("./") else ""
        folder = _inside(base, src, f"{where}: plugin {name!r}")
        return {"url": url, "ref": None, "sha": None, "folder": folder, "same": True}
    if not isinstance(src, dict):
        raise SourceError(f"{where}: plugin {name!r} has a source that is neither a path nor an object")
    kind = src.get("source")
    if kind == "github" and isinstance(src.get("repo"), str):
        repo = src["repo"].removesuffix(".git")
        if not _GITHUB_REPO.fullmatch(repo) or ".." in repo.split("/"):
            raise SourceError(
                f"{where}: plugin {name!r} names GitHub repository {src['repo']!r}, not owner/repo",
                hint='a github source is {"source": "github", "repo": "owner/repo"}',
            )
        repo_url = f"https://github.com/{repo}.git"
    elif kind in ("url", "git", "git-subdir") and isinstance(src.get("url"), str):
        repo_url = origins.remote(src["url"], f"{where}: plugin {name!r}")
    else:
        return None
    for key in ("ref", "sha"):
        if src.get(key) is not None and (not isinstance(src[key], str) or not _REF.fullmatch(src[key])):
            raise SourceError(f"{where}: plugin {name!r} has {key} {src[key]!r}, which is not a ref or commit id")
    subdir = kind == "git-subdir" and isinstance(src.get("path"), str)
    folder = _inside("", src["path"], f"{where}: plugin {name!r}") if subdir else ""
    return {"url": repo_url, "ref": src.get("ref"), "sha": src.get("sha"), "folder": folder, "same": False}


_REF = re.compile(r"(?!-)[A-Za-z0-9._/+-]{1,255}")


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


def marketplace_candidates(
    url: str,
    ref: str | None,
    file: str = MARKETPLACE,
    names: Sequence[str] = (),
    pin: str | None = None,
    repo: Path | None = None,
) -> list[Candidate]:
    """The skills of the marketplace ``file`` in the repository ``url`` at ``pin`` (default: ``ref``'s head).

    Only the plugins that can hold the named skills are read (:func:`_wanted`): ``plugin:skill`` reads
    that plugin; a bare ``skill`` reads the plugins inside the marketplace's own repository, then the
    others in the marketplace's order until one holds it.  With no names every plugin is read.
    ``repo`` is the marketplace's repository when the caller has fetched it already."""
    with contextlib.ExitStack() as stack:
        home = repo if repo is not None else stack.enter_context(gsrc.mirrored(url, pin or ref))
        repos: dict[tuple[str, str | None], Path] = {}
        commit = gsrc.commit_of(home, pin or ref, url)
        where = f"{url}@{commit[:12]}:{file}"
        plugins = _plugins(home, commit, file, url, where)
        # plugin:skill → (repository URL, its fetched copy, commit, folder, listing)
        catalog: dict[str, tuple[str, Path, str, str, gsrc.Listing]] = {}

        def read(plugin: str) -> None:
            entry, loc = plugins[plugin]
            if loc["same"]:
                at, here = commit, home
            else:
                want = loc["sha"] or loc["ref"]
                key = (loc["url"], want)
                if key not in repos:
                    repos[key] = stack.enter_context(gsrc.mirrored(loc["url"], want))
                here = repos[key]
                at = gsrc.commit_of(here, want, loc["url"])
            rows = gsrc.listing(here, at)
            listed = _listed(entry) + _manifest_skills(here, at, loc["folder"], rows)
            for skill, folder in _skill_folders(rows, loc["folder"], listed, where).items():
                catalog[f"{plugin}:{skill}"] = (loc["url"], here, at, folder, rows)

        _wanted(plugins, names, read, catalog)
        out = []
        for key in _chosen(catalog, names, where):
            plugin, skill = key.split(":", 1)
            repo_url, here, at, folder, rows = catalog[key]
            doc = source_doc("marketplace", url, folder, ref, plugin=plugin, repo=repo_url, file=file)
            out.append(gsrc.read_candidate(here, rows, at, folder, skill, doc))
        return out


def _wanted(
    plugins: dict[str, tuple[dict[str, Any], Any]], names: Sequence[str], read: Any, catalog: dict[str, Any]
) -> None:
    """Read (``read(plugin)``) only the plugins the ``names`` need into ``catalog``."""
    done: set[str] = set()

    def once(plugin: str) -> None:
        if plugin not in done:
            done.add(plugin)
            read(plugin)

    if not names:
        for plugin in plugins:
            once(plugin)
        return
    own = [p for p, (_, loc) in plugins.items() if loc["same"]]
    others = [p for p, (_, loc) in plugins.items() if not loc["same"]]
    for name in names:
        plugin, sep, _skill = name.partition(":")
        if sep:
            if plugin in plugins:
                once(plugin)
            continue
        for p in own:  # free: the marketplace's own repository is read already
            once(p)
        for p in others:
            if any(key.split(":", 1)[1] == name for key in catalog):
                break
            once(p)


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
            raise SourceError(
                f"{where}: more than one plugin has a skill {name!r}: {', '.join(sorted(hits))}",
                hint="name it as plugin:skill",
            )
        keys += hits or [name]
    pick(catalog, keys, where)  # a missing one is refused, with what there is
    return list(dict.fromkeys(keys))
