"""Verdicts, not gates: each skill against the agentskills spec and against Hermes's limits.

The spec verdict applies the rules of the reference validator, ``skills-ref``,
exactly, including its reading of YAML. It uses strictyaml, so every scalar is a
string, flow style (``[a, b]``, ``{k: v}``) is an error, and the frontmatter is what
lies between the first two ``---``. So ``ledger lint`` and ``skills-ref validate``
agree on every skill. Hermes's limits are what its agent-facing tools enforce; they
are reported beside the verdict and never change it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ledger.errors import SkillError
from ledger.frontmatter import bounded

__all__ = ["Verdict", "lint_skill"]

SPEC_FIELDS = frozenset({"name", "description", "license", "allowed-tools", "metadata", "compatibility"})
HERMES_DIRS = ("references", "templates", "scripts", "assets")
HERMES_SKILL_MD = 100_000  # characters
HERMES_FILE = 1024 * 1024  # bytes


@dataclass
class Verdict:
    skill: str
    valid: bool
    errors: list[str] = field(default_factory=list)  # the agentskills spec (skills-ref's rules)
    hermes: list[str] = field(default_factory=list)  # Hermes's tool limits (advisory)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _frontmatter(content: str) -> tuple[dict[str, Any] | None, str | None]:
    """skills-ref's reading: starts with ``---``, split on the next ``---``, strict YAML."""
    if not content.startswith("---"):
        return None, "SKILL.md must start with YAML frontmatter (---)"
    parts = content.split("---", 2)
    if len(parts) < 3:
        return None, "SKILL.md frontmatter not properly closed with ---"
    import yaml  # on first use, as in ledger.frontmatter

    base = getattr(yaml, "CBaseLoader", yaml.BaseLoader)  # every scalar a string, as strictyaml reads them
    try:
        bounded(parts[1])  # before anything recursive: depth, aliases
        events = list(yaml.parse(parts[1], Loader=base))
        if any(isinstance(e, yaml.CollectionStartEvent) and e.flow_style for e in events):
            return None, "Invalid YAML in frontmatter: flow style ([…] or {…}) is not allowed"
        data = yaml.load(parts[1], Loader=base)
    except (yaml.YAMLError, SkillError) as exc:
        text = exc.message if isinstance(exc, SkillError) else str(exc).splitlines()[0]
        return None, f"Invalid YAML in frontmatter: {text}"
    if not isinstance(data, dict):
        return None, "SKILL.md frontmatter must be a YAML mapping"
    return data, None


def _name_errors(name: Any, folder: str) -> list[str]:
    if not isinstance(name, str) or not name.strip():
        return ["Field 'name' must be a non-empty string"]
    name = unicodedata.normalize("NFKC", name.strip())
    errors = []
    if len(name) > 64:
        errors.append(f"Skill name '{name}' exceeds 64 character limit ({len(name)} chars)")
    if name != name.lower():
        errors.append(f"Skill name '{name}' must be lowercase")
    if name.startswith("-") or name.endswith("-"):
        errors.append("Skill name cannot start or end with a hyphen")
    if "--" in name:
        errors.append("Skill name cannot contain consecutive hyphens")
    if not all(c.isalnum() or c == "-" for c in name):
        errors.append(f"Skill name '{name}' contains invalid characters")
    if unicodedata.normalize("NFKC", folder) != name:
        errors.append(f"Directory name '{folder}' must match skill name '{name}'")
    return errors


def lint_skill(folder: str, skill_md: str | None, files: Mapping[str, int]) -> Verdict:
    """The verdict for one skill: its folder name, its SKILL.md text, and ``{path: size}`` of every file."""
    verdict = Verdict(folder, True)
    errors = verdict.errors
    if skill_md is None:
        errors.append("Missing required file: SKILL.md")
    else:
        fm, problem = _frontmatter(skill_md)
        if problem:
            errors.append(problem)
        else:
            assert fm is not None
            extra = sorted(set(fm) - SPEC_FIELDS)
            if extra:
                errors.append(f"Unexpected fields in frontmatter: {', '.join(extra)}")
            if "name" not in fm:
                errors.append("Missing required field in frontmatter: name")
            else:
                errors.extend(_name_errors(fm["name"], folder))
            desc = fm.get("description")
            if "description" not in fm:
                errors.append("Missing required field in frontmatter: description")
            elif not isinstance(desc, str) or not desc.strip():
                errors.append("Field 'description' must be a non-empty string")
            elif len(desc) > 1024:
                errors.append(f"Description exceeds 1024 character limit ({len(desc)} chars)")
            compat = fm.get("compatibility")
            if "compatibility" in fm and (not isinstance(compat, str) or len(compat) > 500):
                errors.append("Field 'compatibility' must be a string of at most 500 characters")
        if len(skill_md) > HERMES_SKILL_MD:
            verdict.hermes.append(f"SKILL.md is {len(skill_md)} characters; Hermes's tools cap it at {HERMES_SKILL_MD}")
    for rel, size in sorted(files.items()):
        if rel == "SKILL.md":
            continue
        if rel.split("/", 1)[0] not in HERMES_DIRS or "/" not in rel:
            verdict.hermes.append(f"{rel}: Hermes's write_file only writes under {', '.join(HERMES_DIRS)}")
        if size > HERMES_FILE:
            verdict.hermes.append(f"{rel} is {size} bytes; Hermes's tools cap a file at {HERMES_FILE}")
    verdict.valid = not errors
    return verdict
