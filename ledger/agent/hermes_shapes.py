"""The result fields Hermes's own skill tools return, so a Hermes caller consumes ours unchanged.

Read from hermes-agent 0.19's ``tools/skills_tool.py`` (``skill_view``, ``skills_list``)
and ``agent/skill_utils.py`` (``platforms`` gating); docs/layouts.md maps each field.
Ours adds ``version``, ``receipt`` and its ``proof``. Readiness is reported as Hermes
reports a skill with nothing to set up: the ledger never reads the host's environment
variables or credential files on a skill's behalf.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

__all__ = ["frontmatter", "linked_files", "manage_fields", "matches_platform", "view_fields"]

_PLATFORMS = {"macos": "darwin", "linux": "linux", "windows": "win32"}  # Hermes's PLATFORM_MAP
_SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".js", ".ts", ".rb")  # what Hermes lists under scripts/


def frontmatter(text: str) -> dict[str, Any]:
    """The frontmatter as Hermes reads it (YAML, flow lists included); empty when there is none."""
    import yaml

    from ledger.bundle.frontmatter import bounded
    from ledger.errors import SkillError

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
    """Hermes's rule: no ``platforms`` means every platform; else one must match this host."""
    wanted = fm.get("platforms")
    if not wanted:
        return True
    for name in wanted if isinstance(wanted, list) else [wanted]:
        key = str(name).lower().strip()
        if platform.startswith(_PLATFORMS.get(key, key)):
            return True
    return False


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
        "'references/api.md' or 'assets/config.yaml'" if linked else None,
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
        out["hint"] = ("To add reference files, templates, or scripts, use skill_manage(action='write_file', "
                       f"name='{skill_dir.name}', file_path='references/example.md', file_content='...')")  # fmt: skip
        return out
    if action == "edit":
        return {"path": str(skill_dir), "_change": {"description": _clip_description(args.get("content", ""))}}
    if action == "patch":
        return {"_change": {"old": _clip(args.get("old_string", ""), 200),
                            "new": _clip(args.get("new_string", ""), 200)}}  # fmt: skip
    if action == "write_file":
        return {"path": str(skill_dir / args["file_path"])}
    return {}


def _clip_description(content: str) -> str:
    description = frontmatter(content).get("description", "")
    return str(description)[:120] if description is not None else ""
