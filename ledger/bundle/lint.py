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

import json
import unicodedata
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ledger.bundle.frontmatter import bounded
from ledger.errors import SkillError

__all__ = ["Verdict", "introduced_errors", "lint_skill", "served_errors"]

SPEC_FIELDS = frozenset({"name", "description", "license", "allowed-tools", "metadata", "compatibility"})
# top-level keys Hermes's bundled skills carry beyond the spec (its metadata.hermes sits inside the spec's metadata)
HERMES_FIELDS = frozenset(
    {"version", "author", "platforms", "prerequisites", "dependencies", "tags", "triggers", "category", "environments"}
)
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


FLOW_WARNING = (
    "flow style ([…] or {…}) in the frontmatter: skills-ref's strictyaml parser refuses it, "
    "but the agentskills spec does not forbid it"
)


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


def _field_errors(verdict: Verdict, fm: Mapping[str, Any], folder: str) -> None:
    """The spec's rules for the fields of frontmatter ``fm`` of the skill in ``folder``."""
    err = verdict.error
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
    if "compatibility" in fm and (not isinstance(compat, str) or not compat.strip() or len(compat) > 500):
        err("compatibility", "Field 'compatibility' must be a string of 1 to 500 characters")


def served_errors(folder: str, fm: Mapping[str, Any]) -> list[str]:
    """What keeps frontmatter ``fm``, read with its types as a server serves it (the JSON rendering of
    docs/lineage/anchor.md §2), from conforming to the agentskills spec, each with its fix; [] when it does.

    The lint's own rules (:func:`lint_skill`: name, description, compatibility), plus those its
    string-only reading cannot see: ``license`` and ``allowed-tools`` are strings, ``metadata`` maps
    strings to strings (a host's schema refuses a whole listing for one ``version: 1``), and no key is
    ``__proto__`` (JavaScript hosts refuse it). Fields outside the spec's pass through, as the spec has."""
    verdict = Verdict(folder, True)
    _field_errors(verdict, fm, folder)
    out = list(verdict.errors)
    for key in ("license", "allowed-tools"):
        if key in fm and not isinstance(fm[key], str):
            out.append(
                f"Field '{key}' must be a string, not {type(fm[key]).__name__} (fix: quote it, or write "
                f"it as one line of text)"
            )
    meta = fm.get("metadata")
    if "metadata" in fm:
        if not isinstance(meta, Mapping):
            out.append("Field 'metadata' must map strings to strings (fix: write it as 'key: value' lines)")
        else:
            for key, value in meta.items():
                if isinstance(value, list | dict):
                    out.append(
                        f"Field 'metadata.{key}' must be a string, not a list or mapping (fix: write it "
                        "as one string, or move it out of metadata)"
                    )
                elif not isinstance(value, str):
                    shown = json.dumps(value)
                    out.append(
                        f"Field 'metadata.{key}' must be a string, not {shown} (fix: quote it: {key}: '{shown}')"
                    )
    if _has_proto(fm):
        out.append("A frontmatter key is '__proto__', which JavaScript hosts refuse (fix: rename it)")
    return out


def _has_proto(value: Any) -> bool:
    if isinstance(value, Mapping):
        return "__proto__" in value or any(_has_proto(v) for v in value.values())
    return isinstance(value, list) and any(_has_proto(v) for v in value)


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
            _field_errors(verdict, fm, folder)
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
