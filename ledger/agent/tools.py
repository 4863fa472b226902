"""Skill tools for function-calling runtimes: JSON Schemas and one dispatcher.

``skill_manage`` takes Hermes's arguments unchanged (``action``, ``name``, ``content``,
``old_string``, ``new_string``, ``replace_all``, ``file_path``, ``file_content``), so a
prompt written for Hermes works as it is. Beyond Hermes there are ``skill_history``,
``skill_diff`` and ``action=revert``. Every write is one snapshot, attributed to
the agent, and every result carries its receipt. ``skill_view`` returns a usage
receipt with an inclusion proof of what it returned.

The write policy (which folders, which sizes) is the agent's: :class:`Policy` defaults to Hermes's.

The schemas (``TOOLS``) and the dispatcher that checks calls against them are one
contract, kept in one file (``skill_outcome``'s in :mod:`ledger.agent.outcome_tool`).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from ledger.agent import hermes_listing, hermes_shapes, outcome_tool
from ledger.brain.categories import check_category
from ledger.brain.withholding import refusal
from ledger.bundle import textpatch
from ledger.bundle.lint import HERMES_DIRS, HERMES_FILE, HERMES_SKILL_MD
from ledger.bundle.merkle import format_root
from ledger.bundle.skill import SKILL_MD, check_name, declared_name, parse_skill_md
from ledger.errors import LedgerError, SkillError, SkillNotFoundError
from ledger.evals import gate
from ledger.sync.status import status as sync_status

__all__ = ["ANNOTATIONS", "TOOLS", "Policy", "SkillTools", "check_arguments"]

_MANAGE_DESCRIPTION = (
    "Create or improve a skill in the agent's skill ledger. Prefer improving an existing skill (patch) over "
    "creating a near-duplicate: create is refused when a skill with a very similar name or description exists. "
    "Actions: create (name, content, category), edit (name, content), patch (name, old_string, new_string, "
    "replace_all, file_path), delete (name, absorbed_into), write_file (name, file_path, file_content), "
    "remove_file (name, file_path), revert (name, version), move (name, category; empty: the top level). "
    "Every change is a versioned, verifiable snapshot."
)
_NAME = {"type": "string", "description": "The skill's name (its folder under skills/), e.g. git-bisect."}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "skills_list",
        "description": "List the skills as Hermes lists them: name (as SKILL.md declares it), description, "
        "category (the top folder), version and path (which skill_view takes); hidden: each skill "
        "Hermes would not show (another platform, a duplicate name, ...) and why.",
        "parameters": {
            "type": "object",
            "properties": {
                "category": {
                    "type": "string",
                    "description": "Only skills in this category (or under it), e.g. research or research/papers.",
                },
                "all_platforms": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also list skills whose "
                    "platforms: exclude this host (hidden by default, as Hermes does).",
                },
            },
            "additionalProperties": False,
        },
    },
    {
        "name": "skill_view",
        "description": "Read a skill's SKILL.md (or one of its files) with a receipt proving which version you got.",
        "parameters": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "file_path": {
                    "type": "string",
                    "description": "A file in the skill, e.g. references/api.md; omit it for SKILL.md.",
                },
            },
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
                "action": {
                    "type": "string",
                    "enum": ["create", "edit", "patch", "delete", "write_file", "remove_file", "revert", "move"],
                    "description": "What to do; the other arguments each action takes are listed above.",
                },
                "name": _NAME,
                "content": {"type": "string", "description": "The full SKILL.md (create, edit)."},
                "old_string": {"type": "string", "description": "patch: the exact text to replace."},
                "new_string": {"type": "string", "description": "patch: the text to put in its place."},
                "replace_all": {
                    "type": "boolean",
                    "default": False,
                    "description": "patch: replace every match, not exactly one.",
                },
                "file_path": {"type": "string", "description": "A file in the skill, e.g. references/api.md."},
                "file_content": {"type": "string", "description": "write_file: the file's full text."},
                "version": {"type": "integer", "minimum": 1, "description": "revert: the version to restore."},
                "force": {"type": "boolean", "default": False, "description": "create despite a near-duplicate."},
                "category": {
                    "type": "string",
                    "description": "create, move: the Hermes category, e.g. research "
                    "or mlops/inference (move: empty for the top level).",
                },
                "absorbed_into": {
                    "type": "string",
                    "description": "delete: the skill this one was merged into (recorded in the snapshot's note).",
                },
                "task": {
                    "type": "string",
                    "description": "Any action: the task this change serves, recorded as "
                    "the snapshot's Ledger-Task (one line, at most 200 characters).",
                },
            },
            "required": ["action", "name"],
            "additionalProperties": False,
        },
    },
    {
        "name": "skill_history",
        "description": "A skill's versions, newest first, each with its root, commit, actor and note.",
        "parameters": {
            "type": "object",
            "properties": {"name": _NAME},
            "required": ["name"],
            "additionalProperties": False,
        },
    },
    {
        "name": "skill_diff",
        "description": "The unified diff of a skill's SKILL.md between two versions.",
        "parameters": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "from": {"type": "integer", "minimum": 1, "description": "The older version."},
                "to": {"type": "integer", "minimum": 1, "description": "The newer version."},
            },
            "required": ["name", "from", "to"],
            "additionalProperties": False,
        },
    },
    {
        "name": "skills_sync_status",
        "description": "The runtime folders this brain is synced with, and each skill changed on both sides "
        "since the last sync (a conflict: nothing was overwritten; settle it by editing one side), "
        "each skill two machines changed in ways that did not merge (merge_conflicts), and each file "
        "the brain holds that an ignore rule names (ignored_held: still synced, the rule is not "
        "obeyed for it).",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
    outcome_tool.SCHEMA,
]
# MCP tool annotations (hints to a client about each tool's effects); ``ledger mcp`` publishes them as they are.
ANNOTATIONS: dict[str, dict[str, bool]] = {
    "skills_list": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    "skill_view": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    "skill_manage": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False},
    "skill_history": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    "skill_diff": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    "skills_sync_status": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    "skill_outcome": outcome_tool.ANNOTATION,
}


_MESSAGES = {  # the messages Hermes's skill_manage returns, with the version the ledger gave
    "create": "Skill '{name}' created (v{v}).",
    "edit": "Skill '{name}' updated (full rewrite, v{v}).",
    "patch": "Patched skill '{name}' (v{v}).",
    "delete": "Skill '{name}' deleted.",
    "write_file": "File written to skill '{name}' (v{v}).",
    "remove_file": "File removed from skill '{name}' (v{v}).",
    "revert": "Skill '{name}' reverted (v{v}).",
    "move": "Skill '{name}' moved.",
}
_ACTIONS = ("create", "edit", "patch", "delete", "write_file", "remove_file", "revert", "move")
# What each action needs beyond ``name``, and what else it may take.
_ACTION_ARGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "create": (("content",), ("force", "category")),
    "edit": (("content",), ()),
    "patch": (("old_string", "new_string"), ("replace_all", "file_path")),
    "delete": ((), ("absorbed_into",)),
    "write_file": (("file_path", "file_content"), ()),
    "remove_file": (("file_path",), ()),
    "revert": (("version",), ()),
    "move": (("category",), ()),
}


@dataclass(frozen=True)
class Policy:
    """What an agent may write (Hermes's defaults); the ledger itself holds any files."""

    # Hermes's four folders, and evals/: a skill's eval set (evals/evals.json and its input files) is part
    # of the skill (issue 47), though Hermes's own skill_manage keeps to the four
    dirs: tuple[str, ...] = (*HERMES_DIRS, "evals")
    max_skill_md: int = HERMES_SKILL_MD  # characters
    max_file: int = HERMES_FILE  # bytes
    max_description: int = 1024
    duplicate_ratio: float = 0.85  # name or description similarity that makes a create a near-duplicate


class ToolFailure(LedgerError):
    """A refusal an agent can act on; ``detail`` goes into the result."""


def check_arguments(tool: str, args: dict[str, Any]) -> None:
    """Refuse arguments that do not match ``tool``'s published schema, naming what is wrong."""
    import jsonschema  # loaded on the first call: start-up stays free of it

    schema = next(t["parameters"] for t in TOOLS if t["name"] == tool)
    problems = sorted(jsonschema.Draft202012Validator(schema).iter_errors(args), key=lambda e: list(e.path))
    if problems:
        where = [f"{'.'.join(map(str, p.path)) or 'arguments'}: {p.message}" for p in problems[:5]]
        raise ToolFailure(
            f"bad arguments for {tool}: " + "; ".join(where),
            hint="see the tool's input schema (tools/list)",
            problems=where,
        )


# Hints written for a person at the CLI, as an agent can act on them: the tool that does the same.
_HINTS = (
    (re.compile(r"'ledger skill list'"), "skills_list"),
    (re.compile(r"'ledger skill (?:edit|upsert)'(?: or 'patch')?"), "skill_manage (action=edit or patch)"),
    (re.compile(r"'ledger skill patch'"), "skill_manage (action=patch)"),
    (re.compile(r"'ledger skill create'"), "skill_manage (action=create)"),
    (re.compile(r"'ledger (?:skill )?(?:log|history)[^']*'"), "skill_history"),
    (re.compile(r"'ledger (?:skill )?(?:view|show)[^']*'"), "skill_view"),
    (re.compile(r"'(ledger [^']*)'"), r"the operator's '\1'"),
)


def _tool_hint(hint: str | None) -> str | None:
    for pattern, tool in _HINTS if hint else ():
        hint = pattern.sub(tool, hint)  # type: ignore[arg-type]
    return hint


class SkillTools:
    """The dispatcher: ``call(tool, arguments)`` → a JSON-serialisable result, never an exception."""

    def __init__(self, brain: Any, *, policy: Policy | None = None, actor: str = "agent", **evidence: Any) -> None:
        self.brain = brain
        self.policy = policy or Policy()
        self.actor = actor
        self.evidence = evidence
        self._hermes_listing = hermes_listing.Listing(brain)  # skills_list's, kept per head
        # skills_list's JSON per (category, all_platforms), with the listing it was made from (ADR 28)
        self._sent: dict[tuple[Any, Any], tuple[Any, Any, str]] = {}

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run one tool call. Arguments are checked against the published schema first (a ``null``
        value counts as absent, as Hermes-style callers send every key); nothing runs on a mismatch."""
        args = {k: v for k, v in (arguments or {}).items() if v is not None}
        method = {t["name"]: getattr(self, t["name"]) for t in TOOLS}.get(tool)
        try:
            if method is None:
                raise ToolFailure(f"unknown tool {tool!r}", hint="tools: " + ", ".join(t["name"] for t in TOOLS))
            check_arguments(tool, args)
            if tool == "skill_diff":
                args = {"name": args["name"], "old": args["from"], "new": args["to"]}
            return {"success": True, **method(**args)}
        except LedgerError as exc:
            out = {"success": False, "error": exc.message, "hint": _tool_hint(exc.hint)}
            return {**out, **getattr(exc, "detail", {})}
        except Exception as exc:  # the contract is a result, never an exception; this is a bug in the ledger
            return {
                "success": False,
                "error": f"internal error: {type(exc).__name__}: {exc}",
                "internal": True,
                "hint": "this is a bug in brain-ledger; the call changed nothing it did not acknowledge",
            }

    def call_json(self, tool: str, arguments: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str]:
        """:meth:`call` as ``ledger mcp`` sends it: ``(result, its compact JSON)``. A successful
        ``skills_list`` is ``(None, its JSON)``: sent once, as text (ADR 28), and kept for the listing it
        was made from, which :class:`~ledger.agent.hermes_listing.Listing` keeps per head, so a warm
        listing is a lookup. The JSON is always :meth:`call`'s, byte for byte."""
        args = {k: v for k, v in (arguments or {}).items() if v is not None}
        slot = (args.get("category"), args.get("all_platforms", False))
        try:
            if tool != "skills_list":
                raise LookupError
            check_arguments(tool, args)
            shown, hidden = self._hermes_listing(bool(slot[1]))
        except Exception:  # not a listing, or one that fails: call() answers, as it always has
            shown = hidden = None
        kept = self._sent.get(slot)
        if shown is not None and kept is not None and kept[0] is shown and kept[1] is hidden:
            return None, kept[2]  # the same list objects: the same head, config and environment
        result = self.call(tool, arguments)
        text = compact_json(result)
        if shown is None or not result["success"]:
            return result, text
        if len(self._sent) >= 16:
            self._sent.clear()
        # Made from this listing or a newer one (a write in between): a newer one is never served under
        # the older lists' identity, since the Listing never hands those lists out again.
        self._sent[slot] = (shown, hidden, text)
        return None, text

    # ------------------------------------------------------------------ reads

    def skills_list(self, category: str | None = None, all_platforms: bool = False) -> dict[str, Any]:
        """Hermes's ``skills_list`` of the home this brain projects to (``ledger export --layout hermes``),
        from the head snapshot: the names SKILL.md declares, the top category folder, the same
        descriptions, the skills it shows in its order (hermes_shapes.list_home). Ours add each
        skill's ``version`` and folder ``path`` (what skill_view takes), and ``hidden``: every skill
        Hermes leaves out, with the reason, so nothing vanishes unexplained. ``category``: Hermes's
        top category, or a deeper ``a/b`` (ours). ``all_platforms``: as if every ``platforms:`` held
        this host. Names a linked Hermes home's config.yaml disables are left out, as there."""
        shown, hidden = self._hermes_listing(all_platforms)
        empty = not shown  # Hermes's message when it lists nothing at all
        if category:
            prefix = check_category(category) + "/"
            shown = [e for e in shown if e["category"] and e["path"].startswith(prefix)]
            hidden = [e for e in hidden if e["category"] and e["path"].startswith(prefix)]
        skills = [dict(e) for e in shown]
        return {
            "success": True,
            "skills": skills,
            "categories": sorted({x["category"] for x in skills if x["category"]}),
            "count": len(skills),
            "hint": "Use skill_view(name) to see full content, tags, and linked files",
            "hidden": [dict(e) for e in hidden],
            **({"category": category} if category else {}),
            **({"message": "No skills found in skills/ directory."} if empty else {}),
        }

    def skill_view(self, name: str, file_path: str | None = None) -> dict[str, Any]:
        """From the head snapshot, with the receipt a runtime keeps beside its output. ``name`` is the
        folder, a ``category/…/folder`` path or the declared name, as Hermes's skill_view takes them;
        the result has Hermes's fields (docs/layouts.md) and ours (version, receipt, proof)."""
        name = self._visible(name)
        files, doc = self.brain.committed(name)
        rel = file_path or SKILL_MD
        if rel not in files:
            raise SkillNotFoundError(f"skill {name!r} has no file {rel!r}", hint="see the files skill_view lists")
        data = self.brain.store.read(files[rel][1], b"blob")
        head = self.brain.head()
        proof = self.brain.prove(f"{name}/{rel}")
        receipt = {
            "skill": name,
            "version": doc.version,
            "root": format_root(head.snap.root),
            "commit": head.commit.hex(),
            "path": f"{name}/{rel}",
            "proof": proof.to_json(),
        }
        out: dict[str, Any] = {"success": True, "name": name, "version": doc.version, "receipt": receipt}
        try:
            out["content"] = data.decode("utf-8")
        except UnicodeDecodeError:
            out.update(
                binary=True,
                size=len(data),
                is_binary=True,
                content=f"[Binary file: {rel.rsplit('/', 1)[-1]}, size: {len(data)} bytes]",
            )
        if file_path is not None:
            out["file"] = file_path
            if not out.get("is_binary"):
                out["file_type"] = "." + rel.rsplit(".", 1)[-1] if "." in rel.rsplit("/", 1)[-1] else ""
            return out
        out["description"] = doc.description
        out["files"] = sorted(r for r in files if r != SKILL_MD)
        category = self.brain.categories.of().get(name)
        where = f"{category}/{name}" if category else name
        out.update(
            hermes_shapes.view_fields(
                out.get("content", ""), out["files"], f"{where}/{SKILL_MD}", str(self.brain.skills_dir / name)
            )
        )
        return out

    def skill_history(self, name: str) -> dict[str, Any]:
        return {"name": name, "versions": self.brain.history(self._visible(name))}

    def skill_diff(self, name: str, old: int, new: int) -> dict[str, Any]:
        a, b, name = int(old), int(new), self._visible(name)
        old, new = self.brain.show(name, a), self.brain.show(name, b)
        diff = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"{name}@{a}/SKILL.md", f"{name}@{b}/SKILL.md"
        )
        return {"name": name, "from": a, "to": b, "diff": "".join(diff)}

    def skills_sync_status(self) -> dict[str, Any]:
        """The targets (``ledger target add``), their unsettled conflicts, and the merge conflicts of lineages
        joined from other machines (``ledger sync`` with a remote), from ``.ledger/`` alone."""
        return sync_status(self.brain).to_json()  # the use case's report (ledger.sync.status)

    def skill_outcome(self, **args: Any) -> dict[str, Any]:  # ledger.agent.outcome_tool
        return outcome_tool.record(self.brain, self.actor, self.evidence, {**args, "name": self._visible(args["name"])})

    def _visible(self, name: str, resolve: bool = True) -> str:
        """``name``'s folder; refused if the head's supply record withholds it (ledger.brain.withholding)."""
        name = self.brain.resolve(name) if resolve else name
        if (refused := refusal(self.brain.supply(), name)) is not None:
            raise refused
        return name

    # ------------------------------------------------------------------ writes

    def skill_manage(self, action: str, name: str, task: str | None = None, **args: Any) -> dict[str, Any]:
        if action == "create":
            check_name(name)
        handler = getattr(self, "_" + action, None) if action in _ACTIONS else None
        if handler is None:
            raise ToolFailure(f"unknown action {action!r}", hint=", ".join(_ACTIONS))
        needs, takes = _ACTION_ARGS[action]
        missing = [k for k in needs if k not in args]
        if missing:  # arguments another action takes are ignored, as Hermes does: its callers send every key
            raise ToolFailure(
                f"action={action} needs {', '.join(missing)}",
                hint=f"action={action} takes name" + "".join(f", {k}" for k in needs + takes),
            )
        args = {k: v for k, v in args.items() if k in needs or k in takes}
        # Every read a handler makes (exists? near-duplicate? the text to patch) is in the write's
        # critical section: the lock is held from the first read to the acknowledgement.
        evidence = {**self.evidence, **({"task": task} if task else {})}  # what the caller says it works on
        with self.brain.writing(self.actor, **evidence):
            # the folder, a category path or the declared name, as Hermes takes them; withheld: refused
            name = self._visible(name, resolve=action != "create")
            receipt = handler(name, **args)
        doc = receipt.to_json()
        hermes = hermes_shapes.manage_fields(action, args, self.brain.skills_dir / name, args.get("category"))
        message = _MESSAGES[action].format(name=name, v=doc.get("version"))
        held = self._held(name, doc.get("version"))
        return {
            "success": True,
            "message": message + (" " + held if held else ""),
            **hermes,
            "action": action,
            "signed": receipt.signer is not None,
            "signer": receipt.signer,
            "receipt": doc,
            **({"gate": held} if held else {}),
        }
        # Hermes's fields, then ours: whether the snapshot is signed, and by whom; and what the gate holds

    def _held(self, name: str, version: Any) -> str | None:
        """The gate's word on the version just written (docs/layouts.md, "The gate"), if it holds it back."""
        if not isinstance(version, int) or not gate.enabled(self.brain.config):
            return None
        found = gate.read(self.brain, [name]).get(name)
        if found is None or version not in {v.version for v in found.held()}:
            return None
        return f"gate: {name} v{version} waits for its evaluation (ledger eval run {name}) before runtimes get it"

    def _create(self, name: str, content: str, force: bool = False, category: str | None = None) -> Any:
        self._check_skill_md(name, content)
        head = self.brain.head()
        if name in head.skills:
            raise ToolFailure(f"skill {name!r} already exists", hint=f"patch or edit {name!r} instead")
        if not force:
            self._refuse_near_duplicate(name, content)
        return self.brain.upsert(content, name=name, category=category)  # Hermes's create(category=…)

    def _edit(self, name: str, content: str) -> Any:
        declared = self.brain.committed(name)[1].name  # the name its committed SKILL.md declares now
        self._check_skill_md(name, content, keep=declared)
        return self.brain.edit(name, content)

    def _patch(
        self, name: str, old_string: str, new_string: str, replace_all: bool = False, file_path: str | None = None
    ) -> Any:
        """Read, replace and write in one critical section (``Brain.rewrite``): a write acknowledged
        between our read and our write cannot be overwritten."""
        rel = file_path or SKILL_MD
        if rel != SKILL_MD:
            self._check_path(rel)

        def change(current: Any) -> dict[str, bytes]:
            if rel not in current:
                raise SkillNotFoundError(f"skill {name!r} has no file {rel!r}", hint="see the files skill_view lists")
            try:
                text = current[rel].decode("utf-8")
            except UnicodeDecodeError:
                raise ToolFailure(f"{name}/{rel} is not UTF-8 text", hint="replace it whole with write_file") from None
            patched = textpatch.replace(text, old_string, new_string, where=f"{name}/{rel}", replace_all=replace_all)
            if rel == SKILL_MD:
                self._check_skill_md(name, patched, keep=declared_name(text))
            else:
                self._check_size(rel, patched.encode("utf-8"))
            return {rel: patched.encode("utf-8")}

        return self.brain.rewrite(name, change, operation="patch")

    def _delete(self, name: str, absorbed_into: str | None = None) -> Any:
        note = ""
        if absorbed_into:  # Hermes's argument: this skill was merged into another, which must exist
            target = self.brain.resolve(absorbed_into)  # a name that matches nothing comes back as it is
            if target not in self.brain.head().skills or target == name:
                raise SkillNotFoundError(
                    f"absorbed_into names no other skill: {absorbed_into!r}",
                    hint="name the skill this one was merged into (see skills_list)",
                )
            note = f"absorbed into {target}"
        return self.brain.delete(name, note=note)

    def _move(self, name: str, category: str) -> Any:
        return self.brain.categories.move(name, category or None)

    def _write_file(self, name: str, file_path: str, file_content: str) -> Any:
        self._check_path(file_path)
        data = file_content.encode("utf-8")
        self._check_size(file_path, data)
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
            raise ToolFailure(
                f"{rel!r} is outside the folders an agent may write",
                hint="use " + ", ".join(f"{d}/" for d in self.policy.dirs),
            )

    def _check_size(self, rel: str, data: bytes) -> None:
        if len(data) > self.policy.max_file:
            raise ToolFailure(f"{rel} is {len(data)} bytes; the agent policy allows {self.policy.max_file}")

    def _check_skill_md(self, name: str, content: str, keep: str | None = None) -> None:
        """``keep``: the name the committed SKILL.md declares, which an edit may keep (vllm/ declaring
        serving-llms-vllm stays so; it is never renamed, nor made a second skill)."""
        if len(content) > self.policy.max_skill_md:
            raise ToolFailure(
                f"SKILL.md is {len(content)} characters; the agent policy allows {self.policy.max_skill_md}",
                hint="move detail into references/ files",
            )
        declared = declared_name(content)
        if declared is not None and declared != name and declared != keep:
            raise ToolFailure(f"the frontmatter name {declared!r} must equal the skill name {name!r}")
        doc = parse_skill_md(content)
        if len(doc.description) > self.policy.max_description:
            limit = self.policy.max_description
            raise SkillError(f"description is {len(doc.description)} characters; the limit is {limit}")

    def _refuse_near_duplicate(self, name: str, content: str) -> None:
        description = parse_skill_md(content).description.lower()
        for other in self.brain.listing():
            by_name = difflib.SequenceMatcher(None, name, other.name).ratio()
            by_desc = difflib.SequenceMatcher(None, description, other.description.lower()).ratio()
            if max(by_name, by_desc) >= self.policy.duplicate_ratio:
                raise ToolFailure(
                    f"skill {other.name!r} is very close to {name!r} ({'name' if by_name >= by_desc else 'description'}"
                    f" {max(by_name, by_desc):.0%} alike)",
                    hint=f"improve {other.name!r} with action=patch, or pass force=true",
                    similar=other.name,
                )


def as_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False)


def compact_json(result: dict[str, Any]) -> str:
    """A result as ``ledger mcp`` sends it: compact (a listing can be megabytes)."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
