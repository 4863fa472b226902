"""A collection of skills as found in a folder: each skill's files, or why it cannot be recorded,
and the category files beside them.  What :mod:`ledger.folders.layouts` reads from a
runtime's folder and :class:`ledger.write.importer.Importer` records as one snapshot.

It also holds how Hermes reads a folder (:func:`hermes_shape`) and whether a brain's skills and
categories can be laid out that way and read back the same (:func:`hermes_conflicts`): import and
export share the one reading, so what export writes is what import, and Hermes, find again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ledger.bundle.skill import SKILL_MD, SUPPORT_DIRS
from ledger.errors import LedgerError

__all__ = ["HERMES_SKIP", "Collection", "Found", "HermesShape", "HermesTree", "hermes_conflicts", "hermes_shape"]

# Folder names Hermes's scanner never enters (agent/skill_utils.py EXCLUDED_SKILL_DIRS), and the ledger's own.
HERMES_SKIP = frozenset(
    {
        ".git",
        ".github",
        ".hub",
        ".archive",
        ".venv",
        "venv",
        "node_modules",
        "site-packages",
        "__pycache__",
        ".tox",
        ".nox",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
    }
)
DESCRIPTION_MD = "DESCRIPTION.md"


def _ours(name: str) -> bool:
    """The ledger's own work folders and index (``.ledger-staging``, ``.ledger-categories.json``): never a
    skill nor a category file, wherever a tree holds them."""
    return name.startswith(".ledger-")


@dataclass
class Found:
    """One skill in a source tree, read whole (or the reason it cannot be)."""

    key: str
    folder: str  # its folder (or file stem) as found, for lint's name check
    source: str
    files: dict[str, tuple[bytes, bool]] = field(default_factory=dict)  # rel → (bytes, executable)
    category: str | None = None  # hermes: "category/sub"
    notes: list[str] = field(default_factory=list)
    refused: str | None = None
    hint: str | None = None


@dataclass
class Collection:
    layout: str
    skills: list[Found]
    categories: dict[str, bytes] = field(default_factory=dict)  # category files: "cat/sub/DESCRIPTION.md" → bytes
    notes: list[str] = field(default_factory=list)  # where skills were looked for, beyond the source itself
    skipped: list[str] = field(default_factory=list)  # folders that hold no skill, so a user sees what was passed

    def add(self, other: Collection, where: str) -> None:
        """Merge ``other`` in, or refuse the whole merge before anything is recorded: a category file two
        sources hold with different bytes (never one silently kept, issue 19) and, for Hermes roots (its
        ``skills/`` and ``optional-skills/``), a skill two roots both hold, or a skill and a category the
        merged tree could not hold as Hermes lays it out (:func:`hermes_conflicts`), so that an import of
        both roots at once either is whole or makes no snapshot."""
        for rel, data in other.categories.items():
            if rel in self.categories and self.categories[rel] != data:
                raise LedgerError(
                    f"two sources hold category file {rel} with different content ({where} and an earlier source)",
                    hint="make them agree, or import the sources one at a time (the later import replaces the file)",
                )
        if "hermes" in (self.layout, other.layout):
            mine = {f.key: f for f in self.skills}
            twice = [(mine[f.key], f) for f in other.skills if f.key in mine]
            if twice:
                raise LedgerError(
                    f"{len(twice)} skill(s) are in two sources; nothing was imported:"
                    + "".join(f"\n  {a.key}: {a.source} and {b.source}" for a, b in twice[:20]),
                    hint="import the sources one at a time (the later import updates the skill), or rename one folder",
                )
            merged: dict[str, Found] = {}
            for f in (*self.skills, *other.skills):
                if not f.refused:
                    merged.setdefault(f.key, f)  # the one the importer keeps: a later one of a key is refused
            problems = hermes_conflicts(
                {k: (f.category, list(f.files)) for k, f in merged.items()},
                [*self.categories, *other.categories],
                {k: f.source for k, f in merged.items()},
            )
            if problems:
                raise LedgerError(
                    f"{where} and the sources before it cannot be one Hermes tree; nothing was imported:"
                    + "".join(f"\n  {p}" for p in problems[:20]),
                    hint="move the skill or the category folder in one source, or import only one of them "
                    "(a skill in the brain moves with 'ledger skill move NAME [CATEGORY]')",
                )
        self.categories.update(other.categories)
        self.skills.extend(other.skills)
        self.notes.extend(other.notes)
        self.skipped.extend(other.skipped)


class HermesTree(Protocol):
    """A folder as :func:`hermes_shape` reads it: a disk folder on import, the planned tree on export."""

    def entries(self, rel: str) -> Iterable[tuple[str, str]]:
        """``(name, kind)`` of each entry of folder ``rel`` (``""``: the top); kind ``dir``, ``file`` or ``other``
        (a link or special file, never followed)."""
        ...

    def is_skill(self, rel: str) -> bool:
        """Whether folder ``rel`` holds a ``SKILL.md``."""
        ...


@dataclass
class HermesShape:
    """What a Hermes tree holds, found as Hermes finds it (agent/skill_utils.py ``iter_skill_index_files``):
    every folder holding ``SKILL.md`` is a skill, at any depth, and is searched further, except its support
    folders (``references/`` …) and the folders Hermes never enters."""

    skills: dict[str, str | None] = field(default_factory=dict)  # skill folder → its category (parent path)
    # skill folder → its top-level entries that are not the skill's: a folder holding skills of its own ("x/"),
    # and its DESCRIPTION.md once it holds any (Hermes reads that as the category's description)
    foreign: dict[str, set[str]] = field(default_factory=dict)
    categories: list[str] = field(default_factory=list)  # category files, by path
    links: list[str] = field(default_factory=list)  # folders outside any skill that are links (never followed)


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def hermes_shape(tree: HermesTree) -> HermesShape:
    """Every skill and category file of ``tree``.  A folder inside a skill that holds a skill (at any
    depth) is a category folder: its files are category files and the skill does not hold it, so a
    skill that is also a category (``dogfood/SKILL.md`` beside ``dogfood/wrap-up/SKILL.md``) reads as
    two skills, as Hermes lists them.  A folder inside a skill that holds none is the skill's."""
    shape = HermesShape()
    loose: list[tuple[str | None, str]] = []  # (nearest enclosing skill folder, path) of files outside skill tops
    has_description: set[str] = set()
    stack: list[tuple[str, str | None]] = [("", None)]
    while stack:
        rel, owner = stack.pop()
        in_skill = rel in shape.skills
        for name, kind in tree.entries(rel):
            child = _join(rel, name)
            if kind == "dir":
                if name in HERMES_SKIP or _ours(name) or (in_skill and name in SUPPORT_DIRS):
                    continue
                if tree.is_skill(child):
                    shape.skills[child] = rel or None
                    shape.foreign.setdefault(child, set())
                    if owner is not None:
                        shape.foreign[owner].add(child[len(owner) + 1 :].split("/")[0] + "/")
                    stack.append((child, child))
                else:
                    stack.append((child, owner))
            elif in_skill:
                if name == DESCRIPTION_MD and kind == "file":
                    has_description.add(rel)
            elif kind == "file" and not _ours(name):
                loose.append((owner, child))
            elif kind == "other" and owner is None:
                shape.links.append(child)
    for owner, path in loose:
        if owner is None or path[len(owner) + 1 :].split("/")[0] + "/" in shape.foreign[owner]:
            shape.categories.append(path)
    for folder in sorted(has_description):
        if shape.foreign[folder]:
            shape.foreign[folder].add(DESCRIPTION_MD)
            shape.categories.append(f"{folder}/{DESCRIPTION_MD}")
    shape.categories.sort()
    return shape


class _Planned:
    """The tree a brain's skills and category files make when laid out as Hermes lays them out."""

    def __init__(self) -> None:
        self.dirs: dict[str, dict[str, str]] = {"": {}}
        self.claim: dict[str, str] = {}  # path → what first put it there
        self.clashes: list[str] = []
        self.clashed: set[str] = set()  # paths two sides need: explained once, by the clash

    def put(self, path: str, what: str) -> None:
        parts = path.split("/")
        for i, name in enumerate(parts):
            here, rel = "/".join(parts[:i]), "/".join(parts[: i + 1])
            kind = "file" if i == len(parts) - 1 else "dir"
            held = self.dirs[here].get(name)
            if held is None:
                self.dirs[here][name] = kind
                self.claim[rel] = what
                if kind == "dir":
                    self.dirs[rel] = {}
            elif held != kind or kind == "file":
                self.clashes.append(f"{rel} would be both {self.claim[rel]} and {what}")
                self.clashed.add(path)
                return

    def entries(self, rel: str) -> Iterable[tuple[str, str]]:
        return self.dirs.get(rel, {}).items()

    def is_skill(self, rel: str) -> bool:
        return self.dirs.get(rel, {}).get(SKILL_MD) == "file"


def _enclosing(shape: HermesShape, path: str) -> str | None:
    """The deepest skill folder ``path`` lies in, or None."""
    parts = path.split("/")
    for i in range(len(parts) - 1, 0, -1):
        if "/".join(parts[:i]) in shape.skills:
            return "/".join(parts[:i])
    return None


def hermes_conflicts(
    skills: Mapping[str, tuple[str | None, Iterable[str]]],
    category_files: Iterable[str],
    where: Mapping[str, str] | None = None,
) -> list[str]:
    """Why the skills (``key → (category, file paths)``) and category files cannot be written as one
    Hermes tree that reads back as them, one sentence each naming both sides; empty when they can.

    Hermes allows a skill folder to hold a category (``dogfood/SKILL.md`` and ``dogfood/wrap-up/``),
    so that is laid out as it is; what cannot be is a path both sides need (a skill's file where a
    skill of its category goes), a file that would be read back as another's (a skill's own
    DESCRIPTION.md in a folder that is also a category), or a skill Hermes would not find, or find
    twice (inside another's ``references/``, or a ``SKILL.md`` deep in a skill's files)."""
    where = where or {}

    def skill(key: str) -> str:
        return f"skill {key}" + (f" ({where[key]})" if key in where else "")

    plan, folders = _Planned(), {}
    for key, (category, _) in sorted(skills.items()):
        folders[_join(category or "", key)] = key
    for folder, key in sorted(folders.items()):
        for rel in sorted(skills[key][1]):
            plan.put(f"{folder}/{rel}", f"{skill(key)}'s file {rel}" if rel != SKILL_MD else f"{skill(key)}'s folder")
    cats = sorted(set(category_files))
    for rel in cats:
        plan.put(rel, f"category file {rel}")
    problems = list(plan.clashes)
    shape = hermes_shape(plan)
    for folder, key in sorted(folders.items()):
        if folder not in shape.skills:
            outer = _enclosing(shape, folder)
            why = (
                f"inside {skill(folders.get(outer, outer))}'s {folder[len(outer) + 1 :].split('/')[0]}/ folder"
                if outer
                else "in a folder Hermes never enters"
            )
            problems.append(f"{skill(key)} would be written at {folder}/, {why}, where Hermes does not list it")
            continue
        for rel in sorted(skills[key][1]):
            top = rel.split("/")[0] + ("/" if "/" in rel else "")
            if top not in shape.foreign[folder] or f"{folder}/{rel}" in plan.clashed:
                continue
            inner = f"{folder}/{top[:-1]}"
            if rel == DESCRIPTION_MD:
                problems.append(
                    f"{skill(key)}'s own {DESCRIPTION_MD} is where category {folder}'s description "
                    f"goes ({folder}/ also holds skills), so it would read back as the category's"
                )
            elif inner in shape.skills:
                problems.append(
                    f"{skill(key)}'s file {rel} would be inside {skill(folders.get(inner, inner))}'s "
                    f"folder {inner}/, and read back as that skill's"
                )
            else:
                problems.append(
                    f"{skill(key)}'s file {rel} would read back as a file of category {inner}: "
                    f"that folder also holds skills"
                )
    for folder in sorted(set(shape.skills) - set(folders)):
        problems.append(
            f"{plan.claim.get(folder + '/' + SKILL_MD, folder)} would be listed by Hermes as a skill "
            f"of its own ({folder}/)"
        )
    found = set(shape.categories)
    for rel in cats:
        if rel not in found and rel not in plan.clashed:
            outer = _enclosing(shape, rel)
            problems.append(
                f"category file {rel} would read back as {skill(folders[outer])}'s file"
                if outer in folders
                else f"category file {rel} is in a folder Hermes never enters"
            )
    return list(dict.fromkeys(problems))


# Where runtimes keep skills inside a project or a home: `ledger import proj/` and `ledger import ~/.hermes`
# look there too (Claude Code's .claude/skills/, the shared .agents/skills/, Codex, and Hermes's skills/).
