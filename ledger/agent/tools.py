"""Skill tools for function-calling runtimes: JSON Schemas and one dispatcher.

``skill_manage`` takes Hermes's arguments unchanged (``action``, ``name``, ``content``,
``old_string``, ``new_string``, ``replace_all``, ``file_path``, ``file_content``), so a
prompt written for Hermes works as it is. Beyond Hermes there are ``skill_history``,
``skill_diff`` and ``action=revert``. Every write is one snapshot, attributed to
the agent, and every result carries its receipt. ``skill_view`` returns a usage
receipt with an inclusion proof of what it returned.

The write policy (which folders, which sizes) is the agent's, not the ledger's:
:class:`Policy` defaults to Hermes's limits and is configurable.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from ledger.errors import LedgerError, SkillError, SkillNotFoundError
from ledger.lint import HERMES_DIRS, HERMES_FILE, HERMES_SKILL_MD
from ledger.merkle import format_root
from ledger.skill import SKILL_MD, check_name, declared_name, parse_skill_md

__all__ = ["TOOLS", "Policy", "SkillTools"]

_MANAGE_DESCRIPTION = (
    "Create or improve a skill in the agent's skill ledger. Prefer improving an existing skill (patch) over "
    "creating a near-duplicate: create is refused when a skill with a very similar name or description exists. "
    "Actions: create (name, content), edit (name, content), patch (name, old_string, new_string, replace_all, "
    "file_path), delete (name), write_file (name, file_path, file_content), remove_file (name, file_path), "
    "revert (name, version). Every change is a versioned, verifiable snapshot."
)
TOOLS: list[dict[str, Any]] = [
    {
        "name": "skills_list",
        "description": "List every skill: name, description and version (the Level-0 index).",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
    {
        "name": "skill_view",
        "description": "Read a skill's SKILL.md (or one of its files) with a receipt proving which version you got.",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "file_path": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": False,
        },
    },
    {
        "name": "skill_manage",
        "description": _MANAGE_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {
                "action": {"enum": ["create", "edit", "patch", "delete", "write_file", "remove_file", "revert"]},
                "name": {"type": "string"},
                "content": {"type": "string", "description": "The full SKILL.md (create, edit)."},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean", "default": False},
                "file_path": {"type": "string", "description": "A file in the skill, e.g. references/api.md."},
                "file_content": {"type": "string"},
                "version": {"type": "integer", "minimum": 1, "description": "revert: the version to restore."},
                "force": {"type": "boolean", "default": False, "description": "create despite a near-duplicate."},
            },
            "required": ["action", "name"],
            "additionalProperties": False,
        },
    },
    {
        "name": "skill_history",
        "description": "A skill's versions, newest first, each with its root, commit, actor and note.",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
    {
        "name": "skill_diff",
        "description": "The unified diff of a skill's SKILL.md between two versions.",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "from": {"type": "integer"}, "to": {"type": "integer"}},
            "required": ["name", "from", "to"],
        },
    },
]


_ACTIONS = ("create", "edit", "patch", "delete", "write_file", "remove_file", "revert")


@dataclass(frozen=True)
class Policy:
    """What an agent may write (Hermes's defaults); the ledger itself holds any files."""

    dirs: tuple[str, ...] = HERMES_DIRS
    max_skill_md: int = HERMES_SKILL_MD  # characters
    max_file: int = HERMES_FILE  # bytes
    max_description: int = 1024
    duplicate_ratio: float = 0.85  # name or description similarity that makes a create a near-duplicate


class ToolFailure(LedgerError):
    """A refusal an agent can act on; ``detail`` goes into the result."""

    def __init__(self, message: str, *, hint: str | None = None, **detail: Any) -> None:
        super().__init__(message, hint=hint)
        self.detail = detail


class SkillTools:
    """The dispatcher: ``call(tool, arguments)`` → a JSON-serialisable result, never an exception."""

    def __init__(self, brain: Any, *, policy: Policy | None = None, actor: str = "agent", **evidence: Any) -> None:
        self.brain = brain
        self.policy = policy or Policy()
        self.actor = actor
        self.evidence = evidence

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        args = dict(arguments or {})
        method = {t["name"]: getattr(self, t["name"]) for t in TOOLS}.get(tool)
        try:
            if method is None:
                raise ToolFailure(f"unknown tool {tool!r}", hint="tools: " + ", ".join(t["name"] for t in TOOLS))
            return {"success": True, **method(**args)}
        except TypeError as exc:
            return {"success": False, "error": f"bad arguments for {tool}: {exc}"}
        except LedgerError as exc:
            return {"success": False, "error": exc.message, "hint": exc.hint, **getattr(exc, "detail", {})}

    # ------------------------------------------------------------------ reads

    def skills_list(self) -> dict[str, Any]:
        skills = [{"name": s.name, "description": s.description, "version": s.version} for s in self.brain.list()]
        return {"skills": skills, "index": self.brain.index()}

    def skill_view(self, name: str, file_path: str | None = None) -> dict[str, Any]:
        """From the head snapshot, with the receipt a runtime keeps beside its output."""
        check_name(name)
        files, doc = self.brain._committed(name)
        rel = file_path or SKILL_MD
        if rel not in files:
            raise SkillNotFoundError(f"skill {name!r} has no file {rel!r}", hint="see the files listed by skill_view")
        data = self.brain.store.read(files[rel][1], b"blob")
        head = self.brain.head()
        proof = self.brain.prove(f"{name}/{rel}")
        receipt = {"skill": name, "version": doc.version, "root": format_root(head.snap.root),
                   "commit": head.commit.hex(), "path": f"{name}/{rel}", "proof": proof.to_json()}  # fmt: skip
        out: dict[str, Any] = {"name": name, "version": doc.version, "receipt": receipt}
        try:
            out["content"] = data.decode("utf-8")
        except UnicodeDecodeError:
            out.update(binary=True, size=len(data))
        if file_path is None:
            out["description"] = doc.description
            out["files"] = sorted(r for r in files if r != SKILL_MD)
        return out

    def skill_history(self, name: str) -> dict[str, Any]:
        return {"name": name, "versions": self.brain.history(name)}

    def skill_diff(self, name: str, **bounds: int) -> dict[str, Any]:
        a, b = int(bounds["from"]), int(bounds["to"])
        old, new = self.brain.show(name, a), self.brain.show(name, b)
        diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                    f"{name}@{a}/SKILL.md", f"{name}@{b}/SKILL.md")  # fmt: skip
        return {"name": name, "from": a, "to": b, "diff": "".join(diff)}

    # ------------------------------------------------------------------ writes

    def skill_manage(self, action: str, name: str, **args: Any) -> dict[str, Any]:
        check_name(name)
        handler = getattr(self, "_" + action, None) if action in _ACTIONS else None
        if handler is None:
            raise ToolFailure(f"unknown action {action!r}", hint=", ".join(_ACTIONS))
        args = {k: v for k, v in args.items() if v is not None}  # Hermes-style callers send every key, null or not
        with self.brain.acting(self.actor, **self.evidence):
            receipt = handler(name, **args)
        return {"action": action, "receipt": receipt.to_json()}

    def _create(self, name: str, content: str, force: bool = False) -> Any:
        self._check_skill_md(name, content)
        head = self.brain.head()
        if name in head.skills:
            raise ToolFailure(f"skill {name!r} already exists", hint=f"patch or edit {name!r} instead")
        if not force:
            self._refuse_near_duplicate(name, content)
        return self.brain.upsert(content, name=name)

    def _edit(self, name: str, content: str) -> Any:
        self._check_skill_md(name, content)
        return self.brain.edit(name, content)

    def _patch(self, name: str, old_string: str, new_string: str, replace_all: bool = False,
               file_path: str | None = None) -> Any:  # fmt: skip
        files, _ = self.brain._committed(name)
        rel = file_path or SKILL_MD
        if rel != SKILL_MD:
            self._check_path(rel)
        if rel not in files:
            raise SkillNotFoundError(f"skill {name!r} has no file {rel!r}")
        text = self.brain.store.read(files[rel][1], b"blob").decode("utf-8")
        count = text.count(old_string) if old_string else 0
        if count == 0:
            raise ToolFailure(
                f"old_string not found in {name}/{rel}",
                hint="copy the text exactly, including whitespace; the closest lines are listed",
                closest=_closest(text, old_string),
            )
        if count > 1 and not replace_all:
            raise ToolFailure(
                f"old_string matches {count} places in {name}/{rel}; it must match exactly one",
                hint="add surrounding context, or set replace_all",
                matches=_places(text, old_string),
            )
        if count == 1:
            return self.brain.patch(name, old_string, new_string, file=file_path)
        patched = text.replace(old_string, new_string)
        if rel == SKILL_MD:
            self._check_skill_md(name, patched)
            return self.brain.edit(name, patched)
        return self._write_file(name, rel, patched)

    def _delete(self, name: str) -> Any:
        return self.brain.delete(name)

    def _write_file(self, name: str, file_path: str, file_content: str) -> Any:
        self._check_path(file_path)
        data = file_content.encode("utf-8")
        if len(data) > self.policy.max_file:
            raise ToolFailure(f"{file_path} is {len(data)} bytes; the agent policy allows {self.policy.max_file}")
        return self.brain.write_file(name, file_path, data)

    def _remove_file(self, name: str, file_path: str) -> Any:
        self._check_path(file_path)
        return self.brain.remove_file(name, file_path)

    def _revert(self, name: str, version: int) -> Any:
        return self.brain.revert(name, int(version))

    # ------------------------------------------------------------------ policy

    def _check_path(self, rel: str) -> None:
        top = rel.split("/", 1)[0]
        if top not in self.policy.dirs or "/" not in rel or ".." in rel.split("/"):
            raise ToolFailure(f"{rel!r} is outside the folders an agent may write",
                              hint="use " + ", ".join(f"{d}/" for d in self.policy.dirs))  # fmt: skip

    def _check_skill_md(self, name: str, content: str) -> None:
        if len(content) > self.policy.max_skill_md:
            raise ToolFailure(
                f"SKILL.md is {len(content)} characters; the agent policy allows {self.policy.max_skill_md}",
                hint="move detail into references/ files",
            )
        declared = declared_name(content)
        if declared is not None and declared != name:
            raise ToolFailure(f"the frontmatter name {declared!r} must equal the skill name {name!r}")
        doc = parse_skill_md(content)
        if len(doc.description) > self.policy.max_description:
            limit = self.policy.max_description
            raise SkillError(f"description is {len(doc.description)} characters; the limit is {limit}")

    def _refuse_near_duplicate(self, name: str, content: str) -> None:
        description = parse_skill_md(content).description.lower()
        for other in self.brain.list():
            by_name = difflib.SequenceMatcher(None, name, other.name).ratio()
            by_desc = difflib.SequenceMatcher(None, description, other.description.lower()).ratio()
            if max(by_name, by_desc) >= self.policy.duplicate_ratio:
                raise ToolFailure(
                    f"skill {other.name!r} is very close to {name!r} ({'name' if by_name >= by_desc else 'description'}"
                    f" {max(by_name, by_desc):.0%} alike)",
                    hint=f"improve {other.name!r} with action=patch, or pass force=true", similar=other.name,
                )


def _closest(text: str, needle: str) -> list[dict[str, Any]]:
    """The lines most like the first line of what was not found, with their line numbers."""
    lines = text.splitlines()
    probe = next((ln for ln in needle.splitlines() if ln.strip()), needle)
    scored = sorted(((difflib.SequenceMatcher(None, probe, ln).ratio(), i) for i, ln in enumerate(lines)),
                    reverse=True)  # fmt: skip
    return [{"line": i + 1, "text": lines[i], "similarity": round(r, 2)} for r, i in scored[:3] if r > 0.3]


def _places(text: str, needle: str) -> list[dict[str, Any]]:
    out, start = [], 0
    while (at := text.find(needle, start)) >= 0:
        line = text.count("\n", 0, at) + 1
        out.append({"line": line, "context": text.splitlines()[line - 1]})
        start = at + 1
    return out


def as_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False)

