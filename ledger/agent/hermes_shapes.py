"""The result fields Hermes's own skill tools return, so a Hermes caller consumes ours unchanged.

Read from hermes-agent 0.19's ``tools/skills_tool.py`` (``skill_view``, ``skills_list``)
and ``agent/skill_utils.py`` (``platforms`` gating); docs/layouts.md maps each field.
Ours adds ``version``, ``receipt`` and its ``proof``. Readiness is reported as Hermes
reports a skill with nothing to set up: the ledger never reads the host's environment
variables or credential files on a skill's behalf.

:func:`list_home` is Hermes's ``skills_list`` (``_find_all_skills``) run on the home a brain
projects to, with the reason for every skill it leaves out: the same walk (its pruned folder
names), the same reading of each SKILL.md (its first 4,000 characters, read as
``Path.read_text`` reads them), the same names, categories, descriptions, gates and order.
:class:`ledger.agent.hermes_listing.Listing` keeps that listing for a brain's head.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.bundle.collection import HERMES_SKIP
from ledger.bundle.frontmatter import bounded
from ledger.bundle.skill import SUPPORT_DIRS as SKILL_SUPPORT_DIRS
from ledger.errors import SkillError

__all__ = [
    "Card",
    "Found",
    "frontmatter",
    "home_config",
    "linked_files",
    "list_home",
    "manage_fields",
    "matches_environment",
    "matches_platform",
    "parse_frontmatter",
    "read_card",
    "view_fields",
]

_PLATFORMS = {"macos": "darwin", "linux": "linux", "windows": "win32"}  # Hermes's PLATFORM_MAP
_SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".js", ".ts", ".rb")  # what Hermes lists under scripts/


def frontmatter(text: str) -> dict[str, Any]:
    """The frontmatter as Hermes reads it (YAML, flow lists included); empty when there is none."""
    import yaml

    if not text.startswith("---"):
        return {}
    parts = text.split("---", 2)
    if len(parts) < 3:
        return {}
    try:
        bounded(parts[1])
        data = yaml.load(parts[1], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, SkillError):
        return {}
    return data if isinstance(data, dict) else {}


def matches_platform(fm: dict[str, Any], platform: str = sys.platform) -> bool:
    """Hermes's rule: no ``platforms`` means every platform; else one must match this host
    (under Termux, ``linux``, ``termux`` and ``android`` match: skill_utils.skill_matches_platform_list)."""
    wanted = fm.get("platforms")
    if not wanted:
        return True
    termux = bool(os.getenv("TERMUX_VERSION") or "com.termux/files/usr" in os.getenv("PREFIX", ""))
    for name in wanted if isinstance(wanted, list) else [wanted]:
        key = str(name).lower().strip()
        mapped = _PLATFORMS.get(key, key)
        if platform.startswith(mapped) or (termux and mapped in ("linux", "termux", "android")):
            return True
    return False


# ---------------------------------------------------------------- skills_list, as Hermes lists a home

# agent/skill_utils.py: folder names its walk never enters, and the folders of a skill's files,
# never entered from a folder that holds a SKILL.md.
EXCLUDED_DIRS = HERMES_SKIP  # one list, ledger.bundle.collection's
SUPPORT_DIRS = frozenset(SKILL_SUPPORT_DIRS)
_PRUNED = EXCLUDED_DIRS | SUPPORT_DIRS
READ_CHARS, MAX_NAME, MAX_DESCRIPTION = 4000, 64, 1024  # tools/skills_tool.py
_ENVIRONMENTS = frozenset(("kanban", "docker", "s6"))  # the environment tags Hermes knows; others match
_ABSENT: Any = type("Absent", (), {"__repr__": lambda _: "<absent>"})()
_FENCE = re.compile(r"\n---\s*\n")


def _yaml_load(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader)


def parse_frontmatter(content: str) -> tuple[dict[str, Any], str]:
    """Hermes's ``parse_frontmatter`` (agent/skill_utils.py), statement for statement: a leading BOM
    dropped, ``---`` then the first ``\\n---`` line, YAML, else ``key: value`` lines; (frontmatter, body)."""
    if content.startswith("\ufeff"):
        content = content[1:]
    if not content.startswith("---"):
        return {}, content
    end = _FENCE.search(content, 3)
    if not end:
        return {}, content
    raw, body = content[3 : end.start()], content[end.end() :]
    fm: dict[str, Any] = {}
    try:
        bounded(raw)  # hostile YAML (too deep for PyYAML's recursion, aliases): SkillError, never parsed
        parsed = _yaml_load(raw)
        if isinstance(parsed, dict):
            fm = parsed
    except SkillError:
        raise
    except Exception:  # Hermes's fallback for YAML it cannot read, whatever the error
        for line in raw.strip().split("\n"):
            if ":" in line:
                key, value = line.split(":", 1)
                fm[key.strip()] = value.strip()
    return fm, body


@dataclass(frozen=True)
class Card:
    """What Hermes's listing reads of one SKILL.md (its first 4,000 characters)."""

    name: Any = _ABSENT  # the frontmatter's name as parsed, _ABSENT when it has none
    description: Any = ""  # the description Hermes shows
    platforms: Any = None
    environments: Any = None
    unreadable: str | None = None  # why Hermes skips the file before its frontmatter
    bad_description: str | None = None  # why computing the description fails (Hermes skips the skill)


def read_card(data: bytes) -> Card:
    """One SKILL.md as ``_find_all_skills`` reads it: ``read_text`` (strict UTF-8, universal
    newlines), cut to 4,000 characters, frontmatter, then the description (the frontmatter's, else
    the body's first line that is not a heading, cut to 1,024 characters)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Card(unreadable="SKILL.md is not UTF-8 text, which Hermes skips")
    text = text[: 2 * READ_CHARS + 1]  # enough for 4,000 characters once each \r\n is one
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        fm, body = parse_frontmatter(text[:READ_CHARS])
    except SkillError as exc:  # YAML nested past the ledger's bound, or aliases: never parsed here
        return Card(unreadable=f"the ledger does not read its frontmatter ({exc.message})")
    description = fm.get("description", "")
    try:
        if not description:
            for line in body.strip().split("\n"):
                line = line.strip()
                if line and not line.startswith("#"):
                    description = line
                    break
        if len(description) > MAX_DESCRIPTION:
            description = description[: MAX_DESCRIPTION - 3] + "..."
    except Exception:  # len() of a number or a date: Hermes's listing skips the skill
        bad = f"its description is {_kind(description)}, not text, which Hermes skips"
        return Card(fm.get("name", _ABSENT), None, fm.get("platforms"), fm.get("environments"), bad_description=bad)
    return Card(fm.get("name", _ABSENT), description, fm.get("platforms"), fm.get("environments"))


def _kind(value: Any) -> str:
    return "empty" if value is None else f"the {type(value).__name__} {str(value)[:40]}"


@functools.cache
def _in_container() -> bool:
    """hermes_constants.is_container."""
    if os.environ.get("KUBERNETES_SERVICE_HOST") or any(map(os.path.exists, ("/.dockerenv", "/run/.containerenv"))):
        return True
    for path, markers in (
        ("/proc/1/cgroup", ("docker", "podman", "/lxc/", "kubepods", "containerd", "crio")),
        ("/proc/self/mountinfo", ("kubepods", "containerd", "crio")),
    ):
        try:
            with open(path, encoding="utf-8") as f:
                if any(m in f.read() for m in markers):
                    return True
        except OSError:
            pass
    return False


def environment_active(env: str, kanban_toolset: bool = False) -> bool:
    """skill_utils._detect_environment on this host; ``kanban_toolset``: the home's config lists kanban."""
    if env == "kanban":
        return bool(os.getenv("HERMES_KANBAN_TASK") or os.getenv("HERMES_KANBAN_BOARD")) or kanban_toolset
    if env == "docker":
        return _in_container()
    if env == "s6":
        return os.path.isdir("/run/s6") or os.path.isdir("/package/admin/s6-overlay")
    return True


def matches_environment(environments: Any, active: Callable[[str], bool] = environment_active) -> bool:
    """Hermes's ``environments:`` gate: none means every environment; else one tag must be active,
    and a tag Hermes does not know matches."""
    if not environments:
        return True
    for env in environments if isinstance(environments, list) else [environments]:
        key = str(env).lower().strip()
        if key and (key not in _ENVIRONMENTS or active(key)):
            return True
    return False


def _names(values: Any) -> set[str]:
    if values is None:
        return set()
    if isinstance(values, str):
        values = [values]
    return {str(v).strip() for v in values if str(v).strip()}


def home_config(text: str, platform: str | None = None) -> tuple[set[str], bool]:
    """From a Hermes home's ``config.yaml``: the skill names its listing leaves out (``skills.disabled``,
    and ``skills.platform_disabled.<platform>`` when ``HERMES_PLATFORM`` names one) and whether its
    toolsets include kanban. Unreadable: nothing disabled, as Hermes reads it."""
    try:
        parsed = _yaml_load(text)
    except Exception:
        return set(), False
    if not isinstance(parsed, dict):
        return set(), False
    toolsets = parsed.get("toolsets")
    kanban = isinstance(toolsets, (list, str, dict)) and "kanban" in toolsets
    skills = parsed.get("skills")
    if not isinstance(skills, dict):
        return set(), kanban
    try:
        disabled = _names(skills.get("disabled"))
        platform = platform if platform is not None else os.getenv("HERMES_PLATFORM")
        if platform:
            more = (skills.get("platform_disabled") or {}).get(platform)
            if more is not None:
                disabled |= _names(more)
    except (AttributeError, TypeError):
        return set(), kanban
    return disabled, kanban


@dataclass(frozen=True)
class Found:
    """A SKILL.md in the Hermes home a brain projects to."""

    path: str  # in the home, e.g. devops/deploy/SKILL.md
    skill: str | None  # the ledger skill that holds it (None: a file of the categories tree)
    file: str  # its path in that skill: SKILL.md, or e.g. child/SKILL.md
    card: Card
    blob: bytes = b""  # its git blob id


def _show(value: Any) -> str:
    return "[" + ", ".join(str(v) for v in value) + "]" if isinstance(value, list) else str(value)


def _pruned(path: str, holders: set[str]) -> str | None:
    """Why Hermes's walk (skill_utils.iter_skill_index_files) never reaches ``path``, or ``None``."""
    parts = path.split("/")[:-1]
    if _PRUNED.isdisjoint(parts):
        return None
    for i, part in enumerate(parts):
        where, parent = "/".join(parts[: i + 1]), "/".join(parts[:i])
        if part in EXCLUDED_DIRS:
            return f"it is under {where}/, and Hermes never looks inside a folder named {part}"
        if part in SUPPORT_DIRS and parent in holders:
            return (
                f"it is under {where}/, which Hermes reads as the {part}/ of the skill at "
                f"{parent or 'the top'}/, never as a skill"
            )
    return None


def list_home(
    found: list[Found],
    *,
    disabled: Mapping[str, str] | None = None,
    platform_ok: Callable[[Any], bool] | None = None,
    environment_ok: Callable[[Any], bool] = matches_environment,
) -> tuple[list[tuple[Found, dict[str, Any]]], list[tuple[Found, dict[str, Any]]]]:
    """Hermes's ``skills_list`` of a home holding the SKILL.md files ``found``: the skills it shows
    (``name``, ``description``, ``category`` and the folder's ``path``), sorted as Hermes sorts them,
    and the ones it leaves out in its walk order, each with the ``reason``. ``disabled``: name → where
    it is disabled; ``platform_ok``: the ``platforms:`` gate (default: this host's).

    The walk's rules (tools/skills_tool.py ``_find_all_skills``): files in sorted path order; the
    category is the top folder (``a/b/x/SKILL.md`` → ``a``, ``x/SKILL.md`` → none); the name is the
    frontmatter's, cut to 64 characters, else the folder's; then, in Hermes's order, ``platforms:``,
    ``environments:``, a name already shown (the first in path order wins), a disabled name, and
    a description that is not text each leave the skill out. A SKILL.md under a skill's own
    ``references/``, ``templates/``, ``assets/`` or ``scripts/`` is a file of that skill to both
    Hermes and the ledger: it is in neither list."""
    disabled = disabled or {}
    platform_ok = platform_ok or (lambda p: matches_platform({"platforms": p}))
    holders = {f.path.rpartition("/")[0] for f in found}
    shown: list[tuple[Found, dict[str, Any]]] = []
    hidden: list[tuple[Found, dict[str, Any]]] = []
    seen: dict[str, str] = {}  # name → the folder of the skill shown under it
    for f in sorted(found, key=lambda f: f.path):
        folder = f.path.rpartition("/")[0]
        parts = f.path.split("/")
        category = parts[0] if len(parts) >= 3 else None
        card = f.card
        own = folder.rpartition("/")[2] or "skills"  # the folder's name (the home's own: skills)
        name = own if card.name is _ABSENT else card.name
        label = name[:MAX_NAME] if isinstance(name, str) else own
        why = _pruned(f.path, holders)
        if why is not None and f.file != "SKILL.md" and f.skill is not None:
            continue  # a SKILL.md among a skill's own files is a file of that skill, to both sides
        if why is not None:
            pass
        elif card.unreadable:
            why = card.unreadable
        elif not platform_ok(card.platforms):
            why = f"platforms {_show(card.platforms)} do not include {sys.platform}"
        elif not environment_ok(card.environments):
            why = f"environments {_show(card.environments)} are not active here"
        elif not isinstance(name, str):
            why = f"its frontmatter name is {_kind(name)}, not text, which Hermes skips"
        elif label in seen:
            why = f"duplicate name: hidden behind {seen[label] or 'the top'}/"
        elif label in disabled:
            why = f"disabled in {disabled[label]}"
        else:
            why = card.bad_description
        entry = {"name": label, "description": card.description, "category": category, "path": folder}
        if why is None:
            seen[label] = folder
            shown.append((f, entry))
        else:
            del entry["description"]
            hidden.append((f, {**entry, "reason": why}))
    shown.sort(key=lambda x: (x[1]["category"] or "", x[1]["name"]))
    return shown, hidden


def _tags(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value or "").strip().strip("[]")
    return [t.strip().strip("'\"") for t in text.split(",") if t.strip()]


def linked_files(rels: list[str]) -> dict[str, list[str]] | None:
    """Support files grouped by folder, as Hermes's ``linked_files`` (``None`` when there are none)."""
    out: dict[str, list[str]] = {}
    for rel in sorted(rels):
        top = rel.split("/", 1)[0]
        if top == "scripts" and not rel.endswith(_SCRIPT_SUFFIXES):
            continue
        if top in ("references", "templates", "assets", "scripts") and "/" in rel:
            out.setdefault(top, []).append(rel)
    return out or None


def view_fields(text: str, rels: list[str], path: str, skill_dir: str) -> dict[str, Any]:
    """Hermes's ``skill_view`` fields for a SKILL.md (beside ours: name, version, receipt)."""
    fm = frontmatter(text)
    meta = fm.get("metadata") if isinstance(fm.get("metadata"), dict) else None
    hermes = (meta or {}).get("hermes") if isinstance((meta or {}).get("hermes"), dict) else {}
    linked = linked_files(rels)
    out: dict[str, Any] = {
        "success": True,
        "tags": _tags(hermes.get("tags") or fm.get("tags", "")),
        "related_skills": _tags(hermes.get("related_skills") or fm.get("related_skills", "")),
        "path": path,
        "skill_dir": skill_dir,
        "linked_files": linked,
        "usage_hint": "To view linked files, call skill_view(name, file_path) where file_path is e.g. "
        "'references/api.md' or 'assets/config.yaml'"
        if linked
        else None,
        "required_environment_variables": [],
        "required_commands": [],
        "missing_required_environment_variables": [],
        "missing_credential_files": [],
        "missing_required_commands": [],
        "setup_needed": False,
        "setup_skipped": False,
        "readiness_status": "available",
    }
    if fm.get("compatibility"):
        out["compatibility"] = fm["compatibility"]
    if meta is not None:
        out["metadata"] = meta
    return out


def _clip(text: str, limit: int) -> str:
    return text[:limit] + ("…" if len(text) > limit else "")


def manage_fields(action: str, args: dict[str, Any], skill_dir: Path, category: str | None) -> dict[str, Any]:
    """The fields Hermes's ``skill_manage`` returns beside ``success`` and ``message`` for ``action``
    (hermes-agent 0.19, tools/skill_manager_tool.py): where the skill or file is, and ``_change``,
    the preview its notifications show."""
    if action == "create":
        out: dict[str, Any] = {
            "path": f"{category}/{skill_dir.name}" if category else skill_dir.name,  # relative, as Hermes's
            "skill_md": str(skill_dir / "SKILL.md"),
            "_change": {"description": _clip_description(args.get("content", ""))},
        }
        if category:
            out["category"] = category
        out["hint"] = (
            "To add reference files, templates, or scripts, use skill_manage(action='write_file', "
            f"name='{skill_dir.name}', file_path='references/example.md', file_content='...')"
        )
        return out
    if action == "edit":
        return {"path": str(skill_dir), "_change": {"description": _clip_description(args.get("content", ""))}}
    if action == "patch":
        return {
            "_change": {"old": _clip(args.get("old_string", ""), 200), "new": _clip(args.get("new_string", ""), 200)}
        }
    if action == "write_file":
        return {"path": str(skill_dir / args["file_path"])}
    return {}


def _clip_description(content: str) -> str:
    description = frontmatter(content).get("description", "")
    return str(description)[:120] if description is not None else ""
