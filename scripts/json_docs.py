#!/usr/bin/env python3
"""Write docs/json.md from click's command tree: what each command's ``--json`` prints, and its schema.

For every command (its full path; hidden aliases are left out, they print what their command
prints) the reports ``ledger.cli.common.reports_of`` names, and for each report, once, a table
of its keys (key, type, required, description: a comment on the field, else the nested class's
docstring) and its JSON Schema (``Report.schema()``, draft 2020-12) exactly as the tests
validate against it. Then the MCP tools whose result is, or embeds, one of those documents
(:data:`MCP_SHARED`). The output depends only on the code, so it is deterministic.

Usage: ``scripts/json_docs.py`` writes docs/json.md; ``scripts/json_docs.py --check`` exits 1,
naming what to run, when docs/json.md is not what the code gives (the tests run it).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import re
import sys
import textwrap
import tokenize
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "json.md"

# Where an MCP tool's result (docs/mcp-tools.md) carries the very document a command prints with --json:
# (tool, the key in its result, dotted, the command, each spelling it may have, first found wins,
# what it is). tests/cli/test_json_schema.py runs both on one brain and checks they agree.
MCP_SHARED: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "skill_manage",
        "receipt",
        ("skill create",),
        "the receipt every write of a snapshot prints (`skill create`, `skill patch`, `skill revert`, `snapshot`, …)",
    ),
    (
        "skill_outcome",
        "receipt",
        ("outcome record",),
        "the receipt of the `outcome` snapshot the call appends",
    ),
    (
        "skill_view",
        "receipt.proof",
        ("proof make", "prove"),
        "the inclusion proof of the file returned, which `ledger proof check` checks; "
        "`ledger skill view --json` carries the same as its `receipt.proof`",
    ),
)
# Why a tool's result is its own document, not a command's (each was compared on one brain).
MCP_OWN: dict[str, str] = {
    "skills_list": "Hermes's listing (`name` as SKILL.md declares it, `category`, `hidden`, …); "
    "`ledger skill list --json` is a list of the brain's skills by folder, another document",
    "skill_view": "Hermes's `skill_view` fields and `content` (the whole SKILL.md); `ledger skill view --json` "
    "has `body` and `files` by folder, and its `receipt` adds `matches` where the tool's adds `path`",
    "skill_history": "one skill's versions (`version`, `action`, `time`, …); `ledger log --json` is the lineage "
    "of snapshots, each with every change",
    "skill_diff": "`from`/`to` are versions and `diff` is SKILL.md's unified diff; `ledger diff --json` compares "
    "commits, file by file, with a git patch",
    "skills_sync_status": "what `.ledger/` records of the targets (no pass is run); `ledger sync --json` is the "
    "report of a pass, and its `conflicts` a count",
    "skill_manage": "Hermes's `skill_manage` fields, then `action`, `signed`, `signer`",
    "skill_outcome": "the outcome's id, `tier`, `skill`, `version` and `log_size`",
}


# ---------------------------------------------------------------------------------------------- the tree


def commands(group: click.Group | None = None, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """Every command under ``group`` (default ``ledger``), as (full path, command), groups left out, in
    name order; hidden ones (old spellings) too, after their group's visible ones are walked."""
    if group is None:
        from ledger.cli import main

        group = main
    for name in sorted(group.commands):
        cmd = group.commands[name]
        full = (*path, name)
        if isinstance(cmd, click.Group):
            yield from commands(cmd, full)
        else:
            yield " ".join(full), cmd


def hidden(path: str) -> bool:
    """Whether ``path`` (or a group on it) is hidden: an old spelling, not listed."""
    from ledger.cli import main

    cmd: click.Command = main
    for part in path.split():
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[part]
        if cmd.hidden:
            return True
    return False


def has_json_flag(cmd: click.Command) -> bool:
    return any(isinstance(p, click.Option) and "--json" in p.opts for p in cmd.params)


def reports(cmd: click.Command) -> tuple[type, ...]:
    from ledger.cli.common import reports_of

    return reports_of(cmd)


def schema_of(report: type) -> dict[str, Any]:
    """The JSON Schema of a report's document (a type that is not a report says its own)."""
    if hasattr(report, "schema"):
        return report.schema()
    if hasattr(report, "json_schema"):
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": report.__name__,
            **report.json_schema(),
        }
    raise TypeError(
        f"{report.__module__}.{report.__qualname__} is no report: it has neither schema() nor json_schema()"
    )


def resolve(spellings: tuple[str, ...]) -> tuple[str, click.Command] | None:
    """The first of ``spellings`` that names a command, as its listed path and the command."""
    found = dict(commands())
    for spelling in spellings:
        cmd = found.get(spelling)
        if cmd is None:
            continue
        if hidden(spelling):  # an old spelling: name the listed command that runs the same function
            for path, other in found.items():
                if not hidden(path) and (other is cmd or other.callback is cmd.callback):
                    return path, other
        return spelling, cmd
    return None


# ------------------------------------------------------------------------------------ field comments


_NOT_PROSE = ("type:", "noqa", "fmt:", "pragma")


def _comment(text: str) -> str:
    text = text.lstrip("#").strip()
    return "" if text.startswith(_NOT_PROSE) else text


def field_comments(cls: type) -> dict[str, str]:
    """Each field's comment in ``cls``'s source (and its bases'): the one on its line, else the lines
    of comment right above it."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        comments: dict[int, str] = {}
        alone: set[int] = set()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = _comment(tok.string)
                if not tok.line[: tok.start[1]].strip():
                    alone.add(tok.start[0])
        node = ast.parse(source).body[0]
        assert isinstance(node, ast.ClassDef)
        for item in node.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            end = item.end_lineno or item.lineno
            said = [comments[n] for n in range(item.lineno, end + 1) if n in comments and n not in alone]
            above, n = [], item.lineno - 1
            while n in alone:
                above.insert(0, comments[n])
                n -= 1
            text = " ".join(t for t in (said or above) if t)
            if text:
                out[item.target.id] = text
    return out


def _nested(tp: Any, suffix: str = "") -> Iterator[tuple[type, str]]:
    """The dataclasses inside a field's type, each with the path suffix that reaches its objects."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        for a in args:
            yield from _nested(a, suffix)
    elif origin in (list, tuple, typing.Sequence) and args:
        for a in args:
            if a is not Ellipsis:
                yield from _nested(a, suffix + "[]")
    elif origin is dict and args:
        yield from _nested(args[1], suffix + ".*")
    elif isinstance(tp, type) and dataclasses.is_dataclass(tp) and not hasattr(tp, "json_schema"):
        yield tp, suffix


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def comments_by_path(cls: type, prefix: str = "", seen: frozenset[type] = frozenset()) -> dict[str, str]:
    """Field comments of ``cls`` and the dataclasses it nests, by the key path of the document."""
    if cls in seen or not dataclasses.is_dataclass(cls):
        return {}
    said = field_comments(cls)
    hints = typing.get_type_hints(cls)
    out: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        path = _join(prefix, f.metadata.get("key", f.name))
        if f.name in said:
            out[path] = said[f.name]
        for sub, suffix in _nested(hints[f.name]):
            for k, v in comments_by_path(sub, path + suffix, seen | {cls}).items():
                out.setdefault(k, v)
    return out


# ---------------------------------------------------------------------------------------- rendering


def type_of(node: Any) -> str:
    """A schema fragment in words: ``string``, ``array of object``, ``"a" | "b"``, ``integer or null``."""
    if node is True or node == {}:
        return "any"
    if node is False:
        return "nothing"
    if "const" in node:
        return json.dumps(node["const"], ensure_ascii=False)
    if "enum" in node:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in node["enum"])
    if "anyOf" in node or "oneOf" in node:
        parts: list[str] = []
        for branch in node.get("anyOf", node.get("oneOf")):
            word = type_of(branch)
            if word not in parts:
                parts.append(word)
        return " or ".join(parts)
    t = node.get("type")
    if isinstance(t, list):
        return " or ".join(t)
    if t == "array":
        if "prefixItems" in node:
            return "[" + ", ".join(type_of(x) for x in node["prefixItems"]) + "]"
        return f"array of {type_of(node.get('items', {}))}"
    if t == "object":
        extra = node.get("additionalProperties")
        if "properties" not in node and isinstance(extra, dict) and extra:
            return f"object of {type_of(extra)}"
        return "object"
    return t or "any"


def rows(node: Any, path: str = "") -> Iterator[tuple[str, str, bool, str]]:
    """(key path, type, required, the schema's description) for every key the document can hold."""
    if not isinstance(node, dict):
        return
    for branch in node.get("anyOf", node.get("oneOf", ())):
        yield from rows(branch, path)
    required = set(node.get("required", ()))
    for key, sub in node.get("properties", {}).items():
        here = _join(path, key)
        yield here, type_of(sub), key in required, _description(sub)
        yield from rows(sub, here)
    if node.get("type") == "array" or "items" in node:
        yield from rows(node.get("items"), path + "[]")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        yield from rows(extra, path + ".*")


def _description(node: Any) -> str:
    """A fragment's description: its own, else that of the objects it holds (a list's, a map's)."""
    while isinstance(node, dict):
        if node.get("description"):
            return str(node["description"])
        node = node.get("items", node.get("additionalProperties"))
    return ""


def _markdown(text: str) -> str:
    """A docstring's or comment's reST as Markdown: ``x`` and :role:`~a.b.x` are `x`."""
    text = re.sub(
        r":[a-z]+:`~?([^`]+)`",
        lambda m: f"`{m.group(1).rsplit('.', 1)[-1] if '~' in m.group(0) else m.group(1)}`",
        text,
    )
    return text.replace("``", "`")


def _cell(text: str) -> str:
    return _markdown(" ".join(text.split())).replace("|", "\\|")


def report_name(report: type) -> str:
    return report.__name__


def anchor(report: type) -> str:
    """GitHub's anchor of the report's heading (``### `Name```)."""
    return report.__name__.lower()


def link(report: type) -> str:
    return f"[`{report_name(report)}`](#{anchor(report)})"


def render_report(report: type, printed_by: list[str]) -> str:
    schema = schema_of(report)
    said = comments_by_path(report)
    out = [f"### `{report_name(report)}`", ""]
    doc = inspect.cleandoc(report.__doc__ or "") if report.__doc__ else ""
    out.append(
        f"`{report.__module__}.{report.__qualname__}`" + (f": {_markdown(' '.join(doc.split()))}" if doc else "")
    )
    out.append("")
    if printed_by:
        out += ["Printed by " + ", ".join(f"`ledger {p}`" for p in printed_by) + ".", ""]
    table, seen = [], set()
    for path, kind, required, description in rows(schema):
        if path in seen:
            continue
        seen.add(path)
        text = said.get(path) or description
        table.append(f"| `{path}` | {_cell(kind)} | {'yes' if required else 'no'} | {_cell(text)} |")
    if schema.get("type") == "array":
        out += [f"The document is an {type_of(schema)}.", ""]
    if table:
        out += ["| key | type | required | description |", "|---|---|---|---|", *table, ""]
    if schema.get("additionalProperties") is True:
        out += ["The document may carry keys beyond these (`open_keys`).", ""]
    out += [
        "<details><summary>JSON Schema</summary>",
        "",
        "```json",
        json.dumps(schema, indent=2, ensure_ascii=False),
        "```",
        "",
        "</details>",
        "",
    ]
    return "\n".join(out)


HEADER = """\
# JSON output (`--json`)

<!-- Generated by scripts/json_docs.py from click's command tree and the reports; do not edit.
     Run `scripts/json_docs.py` after changing a command or a report (`--check` tells whether it is stale). -->

Every command but `ledger mcp` takes `--json`: it then prints **one JSON document** on stdout and
nothing else (what it would say to a person goes to stderr, or is in the document), and keeps its
exit code: 0 ok or nothing to do, 1 refused or failed, 2 usage. A refusal (bad input, a missing
skill) prints no document, only `error: …` and `hint: …` on stderr; a check that fails (`verify`,
`audit`) or a `sync` that leaves a conflict prints its report, then exits 1.

```sh
ledger status --json | jq -r .root
ledger skill create notes --description "How I take notes" --json > receipt.json
```

- **Stable keys.** A key, once printed, keeps its name, its type and its meaning; new keys may be
  added. A key marked *required: no* is left out when it does not apply (it is not printed as `null`);
  a key whose type includes `null` is always printed.
- **Order.** Keys are printed in the order of the report's fields (its `to_json()`), the order of the
  tables below; a reader should not depend on it, but the bytes are stable for the same brain.
- **One schema.** Each document is a typed report (`ledger/reports.py`, ADR 73): a frozen dataclass
  whose `to_json()` is the document and whose `schema()` is its JSON Schema, **draft 2020-12**,
  derived from the field types. The schema below is that method's output, the one
  `tests/cli/test_json_schema.py` validates every command's output against, and the one the MCP tools
  share where their result carries the same document (below, and docs/mcp-tools.md).
- A write that would change nothing prints [`NoChange`](#nochange) (`{"changed": false, "reason": …}`)
  and exits 0.
"""


def render() -> str:
    from ledger.agent.tools import TOOLS

    listed = [(path, cmd) for path, cmd in commands() if not hidden(path) and path != "mcp"]
    from ledger.reports import NoChange

    by_report: dict[type, list[str]] = {NoChange: []}  # the document of every write that changes nothing
    getters = [path for path, cmd in listed if any("--get" in getattr(p, "opts", ()) for p in cmd.params)]
    lines = [HEADER]
    if getters:  # the one-field reader, for scripts that need no JSON parser
        example = "status --get root" if "status" in getters else f"{getters[0]} --get KEY"
        on = ", ".join(f"`ledger {p}`" for p in getters)
        lines += [
            f"`--get FIELD` (on {on}) prints one field of the document instead, by its dotted path: a string "
            f"as it is, anything else as JSON (`ledger {example}`).",
            "",
        ]
    lines += [
        "## Commands",
        "",
        "Each command, and the report (or reports: one of them) its `--json` prints.",
        "",
        "| command | `--json` prints |",
        "|---|---|",
    ]
    missing = []
    for path, cmd in listed:
        found = reports(cmd)
        for report in found:
            by_report.setdefault(report, []).append(path)
        if not found:
            missing.append(path)
        says = ", ".join(link(r) for r in found) if found else "no typed report yet"
        lines.append(f"| `ledger {path}` | {says} |")
    lines.append("")
    if missing:
        lines += [
            f"{len(missing)} command(s) have no typed report yet: their `--json` document is not described here.",
            "",
        ]

    lines += [
        "## MCP tools",
        "",
        "Each tool's result (docs/mcp-tools.md) is a JSON object with `success`. Where it carries the very "
        "document a command prints with `--json`, that document has one schema, the command's report's "
        "below; tests/cli/test_json_schema.py runs both on one brain and validates the tool's part against it.",
        "",
    ]
    tools = [t["name"] for t in TOOLS]
    shared: set[str] = set()
    for tool, where, spellings, what in MCP_SHARED:
        found = resolve(spellings)
        if found is None:
            raise SystemExit(f"json_docs: MCP_SHARED names {spellings[0]!r}, which is no command: fix MCP_SHARED")
        path, cmd = found
        typed = [r for r in reports(cmd) if r.__name__ != "NoChange"]
        target = ", ".join(link(r) for r in typed) if typed else "no typed report yet"
        if tool not in shared:
            lines += [f"### `{tool}`", ""]
        lines += [f"`{where}` is the document `ledger {path} --json` prints ({target}): {what}.", ""]
        if tool not in shared and tool in MCP_OWN:
            lines += [f"The rest of its result is the tool's own: {MCP_OWN[tool]}.", ""]
        shared.add(tool)
    lines += ["### The other tools", "", "Their results carry no command's document:", ""]
    lines += [f"- `{t}`: {MCP_OWN.get(t, 'its own document')}." for t in tools if t not in shared]
    lines.append("")

    lines += ["## Reports", "", "Each report once, by name.", ""]
    for report in sorted(by_report, key=lambda r: (r.__name__, r.__module__)):
        lines.append(render_report(report, by_report[report]))
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    unknown = [a for a in argv if a != "--check"]
    if unknown:
        print(f"usage: scripts/json_docs.py [--check] (unknown: {' '.join(unknown)})", file=sys.stderr)
        return 2
    text = render()
    if check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else None
        if current != text:
            print(
                f"docs/json.md is {'stale' if current is not None else 'missing'}: run scripts/json_docs.py",
                file=sys.stderr,
            )
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
