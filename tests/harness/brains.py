"""The one brain factory of the tests (``make_brain``, ``skill_md``), and skill collections built on the
fly, shaped like the public ones (none of their text is copied).

A test that needs a brain asks ``make_brain`` for one rather than writing its own ``_brain``: the
differences between tests (through the API or the real CLI, which skills, signed or not, where
versions live, an import layout) are its parameters, so a reader meets one way of making a brain,
and a change to how brains are made is made once (tests/cli/test_one_factory.py keeps it so).

What real collections contain and the ledger must keep: a LICENSE.txt that ``license:``
points to, extra top-level .md files the body links to, folders outside the four
standard ones with binaries, Hermes categories with DESCRIPTION.md, Hermes
frontmatter (flow lists, author, dependencies, nested metadata.hermes, a semver
version), an over-long description, a name that differs from its folder, a very
large SKILL.md and reference, CRLF and YAML comments, and Slopstock flat files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, overload

from ledger.brain import Brain
from tests.harness.cli import run_in_process

TTF = b"\x00\x01\x00\x00\x00\x0c\x00\x80\x00\x03\x00\x40OS/2" + bytes(range(256)) * 8
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + bytes(range(256)) * 4 + b"%%EOF\n"


def _put(path: Path, data: bytes | str, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    if executable:
        path.chmod(0o755)


def skill_tree(root: Path, skills: Mapping[str, Mapping[str, bytes | str]]) -> Path:
    """``root`` holding each named skill's files (``{name: {path: bytes}}``); files under ``scripts/`` executable."""
    for name, files in skills.items():
        for rel, data in files.items():
            _put(root / name / rel, data, executable=rel.startswith("scripts/"))
    return root


def skill_md(name: str, description: str, body: str = "", **frontmatter: str) -> str:
    """A SKILL.md, byte for byte what the tests wrote by hand: a ``---`` line, ``name: NAME``,
    ``description: DESCRIPTION``, a ``KEY: VALUE`` line for each ``frontmatter`` item in order, a ``---``
    line, then ``body`` as given (its line ends included)."""
    extra = "".join(f"{key}: {value}\n" for key, value in frontmatter.items())
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


Files = Mapping[str, bytes | str]
"""A skill given as its folder: relative path → content (``scripts/…`` made executable)."""
Skill = str | tuple[str, str] | Files
"""A skill for ``make_brain``: its description alone, ``(description, body)``, or its files."""


@overload
def make_brain(
    path: Path,
    skills: Mapping[str, Skill] = ...,
    *,
    via: Literal["api"] = ...,
    signed: bool = ...,
    versions: str = ...,
    layout: str | None = ...,
    src: Path | None = ...,
    env: dict[str, str] | None = ...,
) -> Brain: ...
@overload
def make_brain(
    path: Path,
    skills: Mapping[str, Skill] = ...,
    *,
    via: Literal["cli"],
    signed: bool = ...,
    versions: str = ...,
    layout: str | None = ...,
    src: Path | None = ...,
    env: dict[str, str] | None = ...,
) -> Path: ...
def make_brain(
    path: Path,
    skills: Mapping[str, Skill] = {},
    *,
    via: Literal["api", "cli"] = "api",
    signed: bool = True,
    versions: str = "frontmatter",
    layout: str | None = None,
    src: Path | None = None,
    env: dict[str, str] | None = None,
) -> Brain | Path:
    """A new brain at ``path`` holding ``skills``: the one way the tests make a brain.

    ``via="api"`` makes it in this process (``Brain.init``, then ``Brain.create`` per skill) and returns
    the open ``Brain`` (the caller closes it); ``via="cli"`` makes it as a user does, with the real
    ``ledger init`` and ``ledger skill create`` (``env`` added to each run; the one runner runs them in
    process, or in a child where the process matters: tests/harness/cli.py), and returns its path.

    Each skill is one of:

    - ``"description"``: created with that description and no body (the CLI is given no ``--body``);
    - ``("description", "body")``: created with both;
    - ``{path: content}`` (CLI only): its folder's files, written under ``src`` (default: ``path``'s
      sibling ``src``) with ``skill_tree``; a name may hold ``/`` (a Hermes category), and an entry of
      only a DESCRIPTION.md is a category's file.

    Through the CLI, ``src`` (a tree a test built itself, e.g. with ``hermes``, or the folders above) is
    brought in by one ``ledger import`` (``--layout layout`` if given) before any created skill: the
    way a user brings in a collection, with its bytes kept.

    Created skills are made in the order given, one snapshot each.  ``signed=False`` makes an unsigned
    brain; ``versions="store"`` keeps versions out of SKILL.md (``ledger init --versions store``).
    """
    path = Path(path)
    files = {name: spec for name, spec in skills.items() if isinstance(spec, Mapping)}
    created = {name: spec for name, spec in skills.items() if not isinstance(spec, Mapping)}
    if via == "cli":
        flags = (*(() if signed else ("--unsigned",)), *(("--versions", versions) if versions != "frontmatter" else ()))
        run_in_process("init", *flags, str(path), check=True, env=env)
        if files or src is not None:
            tree = skill_tree(src or path.parent / "src", files)
            how = ("--layout", layout) if layout else ()
            run_in_process("--brain", str(path), "import", str(tree), *how, check=True, env=env)
        for name, spec in created.items():
            description, body = (spec, None) if isinstance(spec, str) else spec
            more = () if body is None else ("--body", body)
            run_in_process(
                "--brain", str(path), "skill", "create", name, "--description", description, *more, check=True, env=env
            )
        return path
    if files or layout is not None or env is not None or src is not None:
        raise ValueError("skills given as files, src, layout and env are for via='cli'")
    brain = Brain.init(path, sign=signed, versions=versions)
    for name, spec in created.items():
        description, body = (spec, "") if isinstance(spec, str) else spec
        brain.create(name, description, body)
    return brain


def agentskills(root: Path, fillers: int = 0) -> Path:
    """A folder of agentskills skill folders; ``fillers`` adds plain skills (for throughput runs)."""
    _put(
        root / "pdf" / "SKILL.md",
        (
            "---\nname: pdf\ndescription: Fill, merge and extract PDF forms. Use when a task involves PDF files.\n"
            "license: Proprietary. LICENSE.txt has complete terms\n---\n\n# PDF\n\nSee [forms](forms.md) and "
            "[the API](reference/api.md). Run `scripts/fill.py`.\n"
        ),
    )
    _put(root / "pdf" / "LICENSE.txt", "All rights reserved.\n")
    _put(root / "pdf" / "forms.md", "# Forms\n\nFields are named.\n")
    _put(root / "pdf" / "reference" / "api.md", "# API\n\nmerge(a, b)\n")
    _put(root / "pdf" / "scripts" / "fill.py", "#!/usr/bin/env python3\nprint('fill')\n", executable=True)
    _put(root / "pdf" / "themes" / "fonts" / "Inter.ttf", TTF)
    _put(root / "pdf" / "examples" / "sample.pdf", PDF)
    _put(root / "docx" / "SKILL.md", "---\nname: docx-tools\ndescription: Edit Word documents.\n---\nUse editing.md.\n")
    _put(root / "docx" / "editing.md", "# Editing\n")
    _put(root / "brand" / "SKILL.md", "---\nname: brand\ndescription: " + "Brand rules. " * 90 + "\n---\nBody.\n")
    _put(root / "huge" / "SKILL.md", "---\nname: huge\ndescription: A very large skill.\n---\n" + "x" * 149_950 + "\n")
    _put(root / "huge" / "reference" / "big.md", (b"line of reference text\n" * 95_000)[: 2 * 1024 * 1024])
    _put(
        root / "crlf" / "SKILL.md",
        (
            "---\r\n# a comment the ledger keeps\r\nname: crlf  # trailing comment\r\n"
            "description: 'Windows line ends'  \r\n"
            "metadata:\r\n  version: '7'   # imported as 7\r\n  author: someone\r\n---\r\nBody line\r\n"
        ),
    )
    for i in range(fillers):
        name = f"filler-{i:04d}"
        _put(root / name / "SKILL.md", f"---\nname: {name}\ndescription: Filler skill {i}\n---\n" + "step\n" * 300)
        _put(root / name / "references" / "notes.md", f"notes {i}\n" * 50)
    return root


def hermes(root: Path) -> Path:
    """A Hermes skills tree: categories (with DESCRIPTION.md), a sub-category, a top-level skill."""
    _put(root / "software-development" / "DESCRIPTION.md", "Skills for writing and reviewing code.\n")
    _put(
        root / "software-development" / "code-review" / "SKILL.md",
        (
            "---\nname: code-review\ndescription: Review a diff for bugs, style and tests.\nversion: 1.2.0\n"
            "author: Hermes Agent\nlicense: MIT\nplatforms: [linux, macos]\ndependencies: [git]\n"
            "prerequisites:\n  commands: [git, rg]\n  env: []\nmetadata:\n  hermes:\n    tags: [review, quality]\n"
            "    related_skills: [testing]\n---\n\n# Code review\n\n1. Read the diff.\n"
        ),
    )
    _put(root / "software-development" / "code-review" / "templates" / "checklist.md", "- [ ] tests\n")
    _put(root / "research" / "DESCRIPTION.md", "Research skills.\n")
    _put(root / "research" / "arxiv" / "DESCRIPTION.md", "Papers from arXiv.\n")
    _put(
        root / "research" / "arxiv" / "paper-search" / "SKILL.md",
        (
            "---\nname: paper-search\ndescription: Find papers.\nversion: 0.3.1\nmetadata:\n  hermes:\n"
            "    tags: [arxiv]\n---\nSearch.\n"
        ),
    )
    _put(root / "plan" / "SKILL.md", "---\nname: plan\ndescription: Plan a task.\ntags: [planning]\n---\nPlan.\n")
    return root


def slopstock(root: Path) -> Path:
    """Slopstock flat files: top-level name, description and version."""
    _put(root / "oracle-check.md", "---\nname: oracle-check\ndescription: Check an oracle.\nversion: 3\n---\nCheck.\n")
    _put(root / "twap.md", '---\nname: twap\ndescription: Use a TWAP.\nversion: "1.0"\n---\nAverage.\n')
    return root


def skill_folders(root: Path) -> list[Path]:
    """Every folder under ``root`` that holds a SKILL.md."""
    return sorted(Path(d) for d, _, files in os.walk(root) if "SKILL.md" in files)


def publish_index(site: Path, name: str, files: dict[str, bytes], index_name: str | None = None) -> None:
    """A v0.2 discovery index (the RFC draft's shape) at ``site`` that gives a digest for the skill and each file."""
    base = site / ".well-known" / "agent-skills"
    digests = {}
    for rel, data in files.items():
        (base / name / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / name / rel).write_bytes(data)
        digests[rel] = hashlib.sha256(data).hexdigest()
    manifest = b"".join(f"{p}\0{h}\n".encode() for p, h in sorted(digests.items()))
    entry = {
        "name": index_name or name,
        "description": "d",
        "digest": "sha256:" + hashlib.sha256(manifest).hexdigest(),
        "files": [{"path": p, "digest": f"sha256:{h}"} for p, h in digests.items()],
    }
    (base / "index.json").write_text(json.dumps({"version": "0.2.0", "skills": [entry]}))


def _walk(root: Path, prune: set[Path]) -> list[Path]:
    """Every file and link under ``root``, sorted, never descending into ``prune``: the packer empties
    and removes object directories while a test walks, and a walk must not trip over that."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=lambda _exc: None):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in prune and not (here / d).is_symlink()]
        found += [here / f for f in filenames]
        found += [here / d for d in os.listdir(here) if (here / d).is_symlink()] if os.path.isdir(here) else []
    return sorted(set(found))


def fingerprint(root: Path) -> dict[str, str]:
    """Every file of a brain (working tree and git store) with its content hash and mode.

    The lock file, the digest cache and the packer's files are excluded: they are
    bookkeeping that may change without the brain changing. The git object store is
    taken as the set of object ids it holds, not as files: a detached packer may move
    objects from loose files into packs at any moment, and that changes no object.
    """
    out: dict[str, str] = {}
    git_dir = root / ".git" if (root / ".git").is_dir() else root  # a brain, or a bare repository
    store = git_dir.relative_to(root).as_posix() + "/" if git_dir != root else ""
    packed: tuple[str, ...] = ()  # what a packer or gc may rewrite without changing an object
    if (git_dir / "objects").is_dir() and (git_dir / "HEAD").is_file():
        packed = (store + "objects/", store + "info/refs")  # info/refs: written by gc for dumb transports
        objects = subprocess.run(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        out[store + "objects"] = hashlib.sha256("\n".join(sorted(set(objects))).encode()).hexdigest()
    for path in _walk(root, prune={git_dir / "objects"} if packed else set()):
        rel = path.relative_to(root).as_posix()
        if rel.startswith((".ledger/lock", ".ledger/cache", ".ledger/gc", *packed)):
            continue
        try:
            data = path.read_bytes() if not path.is_symlink() else os.readlink(path).encode()
            mode = path.lstat().st_mode
        except FileNotFoundError:  # the packer's own files come and go; a brain's never do unasked
            continue
        out[rel] = f"{hashlib.sha256(data).hexdigest()} {mode:o}"
    return out


@contextlib.contextmanager
def two_copies(tmp_path: Path, skills: dict[str, str]) -> Iterator[tuple[Any, Path, Any]]:
    """Brain ``a`` with ``skills`` (name → body), pushed to a bare remote, and ``b`` cloned from it."""
    from ledger.remotes import sharing

    a = make_brain(tmp_path / "a", {name: (name.upper(), body) for name, body in skills.items()})
    remote = tmp_path / "remote.git"
    sharing.push(a, str(remote))
    b = sharing.clone(str(remote), tmp_path / "b")
    try:
        yield a, remote, b
    finally:
        a.close()
        b.close()


def copy_brain(src: Path, dest: Path) -> Path:
    """A copy of the brain at ``src`` at ``dest``, taken while no packer works on it.

    A write may leave a packer running, detached, that moves objects into packs and removes its own
    files (``.ledger/gc-*``) as it goes; a copy taken meanwhile may miss a file that was listed a moment
    before.  Holding the packer's lock (``no_repack``, the one ``git fsck`` holds) makes the copy one
    state of the brain; a packer that has not started yet packs the original later, and the copy
    keeps its request."""
    from ledger.store.packing import no_repack

    with no_repack(Path(src) / ".ledger"):
        shutil.copytree(src, dest, symlinks=True)
    return Path(dest)
