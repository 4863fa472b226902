"""Verdicts, not gates: each skill against the agentskills spec and against Hermes's limits.

The spec verdict applies the rules of the reference validator, ``skills-ref``,
including its reading of YAML: every scalar is a string, and the frontmatter is what
lies between the first two ``---``. One thing ``skills-ref`` refuses is a limit of its
parser, not a rule of the spec: strictyaml rejects flow style (``tags: [a, b]``), which
the spec does not forbid and Hermes's own skills use. That is reported as a warning,
with the reason, and does not make a skill invalid. Hermes's limits are what its
agent-facing tools enforce; they are reported beside the verdict and never change it.

A top-level key outside the spec's six (Hermes's ``version``, ``author``, ``platforms``…)
is an error to ``skills-ref`` but breaks nothing a runtime reads: the skill is still
well formed. So the verdict keeps it apart: ``errors`` are the spec's rules and decide
``valid``; ``extra`` lists each extra field and decides, with ``errors``,
``strict_valid`` — what ``skills-ref`` would say, bar flow style. A brain recorded as it
is then reads "valid (extra fields)", not "INVALID", and nothing is hidden.

:func:`introduced_errors` is the authoring gate: what the ledger writes from a command
must not break a rule the skill kept before (a skill recorded as it is keeps its own
departures from the spec, and can still be improved). It is strict: an extra field a
write adds counts as an error, since what the ledger itself authors must be spec-valid.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ledger.bundle.frontmatter import bounded
from ledger.errors import SkillError

__all__ = ["Verdict", "introduced_errors", "lint_skill"]

SPEC_FIELDS = frozenset({"name", "description", "license", "allowed-tools", "metadata", "compatibility"})
# top-level keys Hermes's bundled skills carry beyond the spec (its metadata.hermes sits inside the spec's metadata)
HERMES_FIELDS = frozenset({"version", "author", "platforms", "prerequisites", "dependencies", "tags", "triggers",
                           "category", "environments"})  # fmt: skip
HERMES_DIRS = ("references", "templates", "scripts", "assets")
HERMES_SKILL_MD = 100_000  # characters
HERMES_FILE = 1024 * 1024  # bytes


@dataclass
class Verdict:
    """One skill's verdict. ``valid``: no spec error; ``strict_valid``: no extra field either."""

    skill: str
    valid: bool
    strict_valid: bool = True
    errors: list[str] = field(default_factory=list)  # the agentskills spec (skills-ref's rules, bar extra fields)
    extra: list[str] = field(default_factory=list)  # top-level keys outside the spec: skills-ref errors, ours warnings
    hermes: list[str] = field(default_factory=list)  # Hermes's tool limits (advisory)
    warnings: list[str] = field(default_factory=list)  # skills-ref's parser limits that are no rule of the spec
    rules: list[str] = field(default_factory=list, repr=False)  # each error's rule, for introduced_errors
    extra_fields: list[str] = field(default_factory=list, repr=False)  # the keys behind ``extra``, likewise

    def error(self, rule: str, message: str) -> None:
        self.errors.append(message)
        self.rules.append(rule)

    def extra_field(self, key: str) -> None:
        why = "; Hermes reads it" if key in HERMES_FIELDS else ""
        self.extra.append(f"extra field '{key}' (not in the agentskills spec{why})")
        self.extra_fields.append(key)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        del out["rules"], out["extra_fields"]
        return out


FLOW_WARNING = ("flow style ([…] or {…}) in the frontmatter: skills-ref's strictyaml parser refuses it, "
                "but the agentskills spec does not forbid it")


def _frontmatter(content: str, warnings: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    """skills-ref's reading: starts with ``---``, split on the next ``---``, YAML scalars as strings."""
    if not content.startswith("---"):
        return None, "SKILL.md must start with YAML frontmatter (---)"
    parts = content.split("---", 2)
    if len(parts) < 3:
        return None, "SKILL.md frontmatter not properly closed with ---"
    import yaml  # on first use, as in ledger.bundle.frontmatter

    base = getattr(yaml, "CBaseLoader", yaml.BaseLoader)  # every scalar a string, as strictyaml reads them
    # A flow collection starts at a '[' or '{': without one, the event pass is needed only to name
    # the error it would have met before the load's (the load parses the whole stream too).
    flow = "[" in parts[1] or "{" in parts[1]
    try:
        bounded(parts[1])  # before anything recursive: depth, aliases
        if flow:
            events = list(yaml.parse(parts[1], Loader=base))
            if any(isinstance(e, yaml.CollectionStartEvent) and e.flow_style for e in events):
                warnings.append(FLOW_WARNING)
        try:
            data = yaml.load(parts[1], Loader=base)
        except yaml.YAMLError:
            if not flow:
                list(yaml.parse(parts[1], Loader=base))  # its error first, as when it ran before the load
            raise
    except (yaml.YAMLError, SkillError) as exc:
        text = exc.message if isinstance(exc, SkillError) else str(exc).splitlines()[0]
        return None, f"Invalid YAML in frontmatter: {text}"
    if not isinstance(data, dict):
        return None, "SKILL.md frontmatter must be a YAML mapping"
    return data, None


def _name_errors(verdict: Verdict, name: Any, folder: str) -> None:
    if not isinstance(name, str) or not name.strip():
        verdict.error("name-empty", "Field 'name' must be a non-empty string")
        return
    name = unicodedata.normalize("NFKC", name.strip())
    if len(name) > 64:
        verdict.error("name-length", f"Skill name '{name}' exceeds 64 character limit ({len(name)} chars)")
    if name != name.lower():
        verdict.error("name-case", f"Skill name '{name}' must be lowercase")
    if name.startswith("-") or name.endswith("-"):
        verdict.error("name-hyphen-edge", "Skill name cannot start or end with a hyphen")
    if "--" in name:
        verdict.error("name-double-hyphen", "Skill name cannot contain consecutive hyphens")
    if not all(c.isalnum() or c == "-" for c in name):
        verdict.error("name-characters", f"Skill name '{name}' contains invalid characters")
    if unicodedata.normalize("NFKC", folder) != name:
        verdict.error("name-folder", f"Directory name '{folder}' must match skill name '{name}'")


def lint_skill(folder: str, skill_md: str | None, files: Mapping[str, int]) -> Verdict:
    """The verdict for one skill: its folder name, its SKILL.md text, and ``{path: size}`` of every file."""
    verdict = Verdict(folder, True)
    err = verdict.error
    if skill_md is None:
        err("skill-md", "Missing required file: SKILL.md")
    else:
        fm, problem = _frontmatter(skill_md, verdict.warnings)
        if problem:
            err("frontmatter", problem)
        else:
            assert fm is not None
            for key in sorted(set(fm) - SPEC_FIELDS):
                verdict.extra_field(key)
            if "name" not in fm:
                err("name-missing", "Missing required field in frontmatter: name")
            else:
                _name_errors(verdict, fm["name"], folder)
            desc = fm.get("description")
            if "description" not in fm:
                err("description-missing", "Missing required field in frontmatter: description")
            elif not isinstance(desc, str) or not desc.strip():
                err("description-empty", "Field 'description' must be a non-empty string")
            elif len(desc) > 1024:
                err("description-length", f"Description exceeds 1024 character limit ({len(desc)} chars)")
            compat = fm.get("compatibility")
            if "compatibility" in fm and (not isinstance(compat, str) or len(compat) > 500):
                err("compatibility", "Field 'compatibility' must be a string of at most 500 characters")
        if len(skill_md) > HERMES_SKILL_MD:
            verdict.hermes.append(f"SKILL.md is {len(skill_md)} characters; Hermes's tools cap it at {HERMES_SKILL_MD}")
    for rel, size in sorted(files.items()):
        if rel == "SKILL.md":
            continue
        if rel.split("/", 1)[0] not in HERMES_DIRS or "/" not in rel:
            verdict.hermes.append(f"{rel}: Hermes's write_file only writes under {', '.join(HERMES_DIRS)}")
        if size > HERMES_FILE:
            verdict.hermes.append(f"{rel} is {size} bytes; Hermes's tools cap a file at {HERMES_FILE}")
    verdict.valid = not verdict.errors
    verdict.strict_valid = verdict.valid and not verdict.extra_fields
    return verdict


def introduced_errors(folder: str, old_md: str | None, new_md: str) -> list[str]:
    """The spec errors of ``new_md`` that ``old_md`` (the skill as committed; ``None`` for a new one) did
    not have: what a command would break.  Strict, as ``skills-ref`` is: an extra top-level field is an
    error here, counted per field, so a write may keep the fields a skill came with but add none."""
    new = lint_skill(folder, new_md, {})
    before = lint_skill(folder, old_md, {}) if old_md is not None else Verdict(folder, True)
    out = []
    added = sorted(set(new.extra_fields) - set(before.extra_fields))
    if added:
        out.append(f"Unexpected fields in frontmatter: {', '.join(added)}")
    out += [msg for rule, msg in zip(new.rules, new.errors, strict=True) if rule not in before.rules]
    return out
