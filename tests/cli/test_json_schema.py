"""One JSON schema for ``--json`` and the MCP docs (issue 52): every command takes ``--json`` and names
the reports it prints, what it prints validates against them, and docs/json.md is what the code gives.

The walk reads click's own command tree. The scenario is a real brain made with the real CLI
(no chain): each command's stdout must be one JSON document, valid against the union of its
reports' schemas (``reports_of``), and where an MCP tool's result carries a command's document
(``MCP_SHARED`` in scripts/json_docs.py) both are run on the brain and must agree.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import click
import jsonschema
import pytest

from ledger.reports import Report, key, optional
from tests.harness.brains import make_brain
from tests.harness.cli import run_in_process

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("json_docs", ROOT / "scripts" / "json_docs.py")
assert _spec is not None and _spec.loader is not None
json_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(json_docs)

NO_JSON = {"mcp"}  # it speaks MCP on stdout: no document to print


def _walked() -> list[tuple[str, click.Command]]:
    return [(path, cmd) for path, cmd in json_docs.commands() if path not in NO_JSON]


def test_the_walk_sees_the_whole_tree() -> None:
    """The walk is click's tree: nested groups included, ``mcp`` the only command left out."""
    paths = [p for p, _ in json_docs.commands()]
    assert "mcp" in paths and "skill create" in paths and "status" in paths
    assert len(paths) == len(set(paths)) and len(_walked()) == len(paths) - 1


def test_every_command_but_mcp_takes_json() -> None:
    lacking = [path for path, cmd in _walked() if not json_docs.has_json_flag(cmd)]
    assert not lacking, f"commands without --json: {', '.join(lacking)}"


def test_every_command_names_the_reports_its_json_prints() -> None:
    """``@returns(Report, ...)`` on each command (ledger/cli/common.py). The helpers typing the commands
    (issue 52, design §1) add them; until all are merged this lists the commands still missing one."""
    missing = [path for path, cmd in _walked() if not json_docs.reports(cmd)]
    assert not missing, (
        f"{len(missing)} command(s) name no report (not yet typed: mark each with "
        f"@returns(XReport, ...) above its @…command()): {', '.join(missing)}"
    )


def test_every_report_has_a_valid_draft_2020_12_schema() -> None:
    from ledger.reports import NoChange

    found = {r for _, cmd in _walked() for r in json_docs.reports(cmd)} | {NoChange}
    for report in sorted(found, key=lambda r: (r.__module__, r.__qualname__)):
        schema = json_docs.schema_of(report)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", report
        jsonschema.Draft202012Validator.check_schema(schema)


def test_docs_json_md_is_what_the_code_gives() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "json_docs.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    text = (ROOT / "docs" / "json.md").read_text()
    assert "draft 2020-12" in text and "## MCP tools" in text
    for path, _ in _walked():
        if not json_docs.hidden(path):
            assert f"| `ledger {path}` |" in text, path


def test_the_mcp_reference_links_each_shared_document() -> None:
    """docs/mcp-tools.md says where a tool's result is a command's document, linking the one schema."""
    text = (ROOT / "docs" / "mcp-tools.md").read_text()
    for tool, where, _spellings, _what in json_docs.MCP_SHARED:
        section = text.split(f"### `{tool}`", 1)[1].split("\n### ", 1)[0]
        assert f"json.md#{tool}" in section, f"docs/mcp-tools.md: {tool} does not link docs/json.md#{tool}"
        assert f"`{where}`" in section, (tool, where)


# ------------------------------------------------------------------------------------------ the scenario

# (id, spellings of the command (the first one this CLI has is run), its arguments, exit code).
# {tmp} is the test's directory, {root} the root ``prove`` proved against; every step runs in the brain,
# in order, after the set-up.
SCENARIO: list[tuple[str, tuple[str, ...], tuple[str, ...], int]] = [
    ("init", ("init",), ("{tmp}/other", "--json"), 0),
    ("skill-create", ("skill create",), ("foo", "--description", "Takes notes", "--body", "Write it down."), 0),
    (
        "skill-create-category",
        ("skill create",),
        ("bar", "--description", "Reads papers, slowly", "--body", "Read.", "--category", "research"),
        0,
    ),
    ("skill-patch", ("skill patch",), ("foo", "--old", "Write it down.", "--new", "Write it all down."), 0),
    ("skill-write-file", ("skill write-file",), ("foo", "references/a.md", "--from", "{tmp}/a.md"), 0),
    ("skill-upsert-nochange", ("skill upsert",), ("--file", "skills/foo/SKILL.md"), 0),
    ("skill-move", ("skill move",), ("bar",), 0),
    ("skill-list", ("skill list",), (), 0),
    ("skill-view", ("skill view",), ("foo",), 0),
    ("skill-view-file", ("skill view",), ("foo", "--file", "references/a.md"), 0),
    ("status", ("status",), (), 0),
    ("log", ("log",), (), 0),
    ("log-stats", ("log",), ("--stats",), 0),
    ("diff-versions", ("diff",), ("foo@1", "foo@2"), 0),
    ("show-stats", ("skill show", "show"), ("foo", "--stats"), 0),
    ("verify", ("verify",), (), 0),
    ("index", ("index",), (), 0),
    ("hash", ("hash",), (".",), 0),
    ("lint", ("skill lint", "lint"), (), 0),
    ("manifest", ("manifest",), ("foo",), 0),
    ("prove", ("proof make", "prove"), ("foo/SKILL.md",), 0),
    ("verify-proof", ("proof check", "verify-proof"), ("{tmp}/proof.json", "--root", "{root}"), 0),
    ("export", ("export",), ("{tmp}/exported",), 0),
    ("import", ("import",), ("{tmp}/exported",), 0),
    ("scan", ("supply scan", "scan"), ("{tmp}/exported/foo",), 0),
    ("supply-list", ("supply list",), (), 0),
    ("outcome-record", ("outcome record",), ("foo", "--task", "t1", "--success"), 0),
    ("outcome-list", ("outcome list",), (), 0),
    ("outcome-batches", ("outcome batches",), (), 0),
    ("keys-show", ("keys show",), (), 0),
    ("keys-list", ("keys list",), (), 0),
    ("keys-export", ("keys export",), ("--public", "user"), 0),
    ("runtimes", ("target list", "runtimes"), (), 0),
    ("link", ("target add", "link"), ("{tmp}/target",), 0),
    ("sync", ("sync",), ("--no-remote",), 0),
    ("hand-edit-status", ("status",), (), 0),  # after the set-up's hand edit below
    ("snapshot", ("snapshot",), ("-m", "by hand"), 0),
    ("diff-worktree", ("diff",), (), 0),
    ("skill-remove-file", ("skill remove-file",), ("foo", "references/a.md"), 0),
    ("revert", ("skill revert", "revert"), ("foo", "--to", "1"), 0),
    ("skill-delete", ("skill delete",), ("bar",), 0),
    ("unlink", ("target remove", "unlink"), ("target",), 0),
    ("remote-set", ("remote set",), ("{tmp}/remote.git", "--create"), 0),
    ("remote-unset", ("remote unset",), (), 0),
    ("attest", ("attest",), ("--format", "intoto", "-o", "{tmp}/attestation.json"), 0),
    ("audit", ("audit",), (".",), 0),
    ("report", ("report",), ("-o", "{tmp}/page"), 0),
    ("clone", ("clone",), (".", "{tmp}/cloned"), 0),
    ("gc", ("gc",), (), 0),
    ("recover", ("recover",), (), 0),
]


def _spelling(spellings: tuple[str, ...]) -> tuple[str, click.Command]:
    found = dict(json_docs.commands())
    for spelling in spellings:
        if spelling in found:
            return spelling, found[spelling]
    raise AssertionError(f"no command is spelt {' or '.join(spellings)}")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every step of :data:`SCENARIO` run once, in order, on one brain: id → (command, process)."""
    tmp = tmp_path_factory.mktemp("json")
    env = {"LEDGER_KEYS": str(tmp / "keys")}
    brain = make_brain(tmp / "brain", via="cli", env=env)
    (tmp / "a.md").write_text("# A reference\n")
    (tmp / "target").mkdir()
    out: dict[str, Any] = {"brain": brain, "env": env}
    root = ""
    for step, spellings, args, _code in SCENARIO:
        if step == "hand-edit-status":
            (brain / "skills" / "foo" / "references" / "b.md").write_text("by hand\n")
        if step == "verify-proof":
            proved = run_in_process("prove", "foo/SKILL.md", cwd=brain, env=env, check=True).stdout
            (tmp / "proof.json").write_text(proved)
            root = json.loads(proved)["root"]
        path, cmd = _spelling(spellings)
        argv = [*path.split(), *(a.format(tmp=tmp, root=root) for a in args), "--json"]
        out[step] = (path, cmd, run_in_process(*argv, cwd=brain, env=env))
    return out


def _validate(doc: Any, reports: tuple[type, ...]) -> list[str]:
    """Why ``doc`` fits none of ``reports``' schemas (empty: it fits one)."""
    why = []
    for report in reports:
        errors = list(jsonschema.Draft202012Validator(json_docs.schema_of(report)).iter_errors(doc))
        if not errors:
            return []
        best = jsonschema.exceptions.best_match(errors)
        why.append(f"{report.__name__}: {'/'.join(map(str, best.absolute_path)) or 'document'}: {best.message}")
    return why


@pytest.mark.parametrize("step", [s[0] for s in SCENARIO])
def test_each_command_prints_one_document_its_reports_describe(scenario: dict[str, Any], step: str) -> None:
    path, cmd, proc = scenario[step]
    code = next(s[3] for s in SCENARIO if s[0] == step)
    assert proc.returncode == code, f"ledger {path} --json exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
    doc = json.loads(proc.stdout)  # one document, nothing else on stdout
    reports = json_docs.reports(cmd)
    if reports:  # a command not typed yet is named by test_every_command_names_the_reports_its_json_prints
        why = _validate(doc, reports)
        assert not why, f"ledger {path} --json printed a document no report of it describes: {why}"


def test_the_scenario_reaches_most_commands(scenario: dict[str, Any]) -> None:
    """A new command is added to the scenario when it runs with no chain (this counts the reach)."""
    ran = {scenario[s[0]][0] for s in SCENARIO}
    walked = {p for p, _ in _walked() if not json_docs.hidden(p)}
    assert len(ran & walked) >= 45, sorted(walked - ran)


def test_mcp_results_carry_the_documents_the_commands_print(
    scenario: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """skill_manage's and skill_outcome's ``receipt`` is a write command's receipt; skill_view's
    ``receipt.proof`` is ``ledger prove``'s proof, byte for byte on the same head: one schema each."""
    from ledger.agent.tools import SkillTools
    from ledger.brain import Brain

    brain_dir, env = scenario["brain"], scenario["env"]
    monkeypatch.setenv("LEDGER_KEYS", env["LEDGER_KEYS"])  # the brain's keys: the agent key signs
    brain = Brain.open(brain_dir)
    try:
        tools = SkillTools(brain)
        skill_md = "---\nname: baz\ndescription: Counts the birds in the garden\n---\nCount.\n"
        results = {"skill_manage": tools.call("skill_manage", {"action": "create", "name": "baz", "content": skill_md})}
        viewed = tools.call("skill_view", {"name": "baz"})
        results["skill_view"] = viewed
        results["skill_outcome"] = tools.call(
            "skill_outcome", {"name": "baz", "receipt": viewed.get("receipt"), "task": "t2", "outcome": "success"}
        )
    finally:
        brain.close()
    cli = {
        "skill_manage": ["skill", "create", "qux", "--description", "Sorts the post", "--body", "Sort."],
        "skill_outcome": ["outcome", "record", "baz", "--task", "t3", "--success"],
        "skill_view": ["prove", "baz/SKILL.md"],
    }
    # the proof first: the CLI's write below moves the head
    for tool, where, spellings, _what in sorted(json_docs.MCP_SHARED, key=lambda s: s[0] != "skill_view"):
        result = results[tool]
        assert result["success"], result
        part = result
        for k in where.split("."):
            part = part[k]
        path, cmd = _spelling(spellings)
        args = cli[tool] if tool != "skill_view" else [*path.split(), "baz/SKILL.md"]
        printed = run_in_process(*args, "--json", cwd=brain_dir, env=env)
        if printed.returncode == 2 and tool == "skill_view":  # 'prove' had no --json before issue 52: it printed JSON
            printed = run_in_process(*args, cwd=brain_dir, env=env)
        assert printed.returncode == 0, printed.stderr
        doc = json.loads(printed.stdout)
        if tool == "skill_view":  # the same head, the same file: the same proof
            assert part == doc
        else:
            assert _shape(part) == _shape(doc), (tool, part, doc)
        typed = tuple(r for r in json_docs.reports(cmd) if r.__name__ != "NoChange")
        if typed:
            assert not _validate(part, typed), (tool, _validate(part, typed))


def _shape(doc: Any) -> Any:
    """The keys and value types of a document, its values left out."""
    if isinstance(doc, dict):
        return {k: _shape(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return sorted({json.dumps(_shape(v), sort_keys=True) for v in doc})
    return type(doc).__name__


# ------------------------------------------------------------------------------------ the doc's renderer


@dataclasses.dataclass(frozen=True)
class _Part(Report):
    """One file the sample touched."""

    path: str  # the file, from the skill's folder
    # what happened to it
    status: Literal["added", "modified", "deleted"]


@dataclasses.dataclass(frozen=True)
class _Sample(Report):
    """A sample report.

    Only its first paragraph is the schema's description."""

    name: str  # the skill's folder | its key
    signer: str | None
    parts: tuple[_Part, ...] = ()
    by_path: dict[str, _Part] = dataclasses.field(default_factory=dict)
    source: str = key("from", default="here")  # where it came from
    gate: str = optional()


def test_the_doc_shows_each_key_with_its_type_whether_required_and_its_comment() -> None:
    text = json_docs.render_report(_Sample, ["skill create", "revert"])
    assert text.startswith("### `_Sample`\n")
    assert "Printed by `ledger skill create`, `ledger revert`." in text
    for row in (
        "| `name` | string | yes | the skill's folder \\| its key |",
        "| `signer` | string or null | yes |  |",
        "| `parts` | array of object | yes | One file the sample touched. |",
        "| `parts[].path` | string | yes | the file, from the skill's folder |",
        '| `parts[].status` | "added" \\| "modified" \\| "deleted" | yes | what happened to it |',
        "| `by_path.*.path` | string | yes | the file, from the skill's folder |",
        "| `from` | string | yes | where it came from |",
        "| `gate` | string | no |  |",
    ):
        assert row + "\n" in text, row
    block = text.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(block) == _Sample.schema()


def test_a_document_its_reports_do_not_describe_is_named_with_why(scenario: dict[str, Any]) -> None:
    """The scenario's check on the one report every write shares: a write that changes nothing."""
    from ledger.reports import NoChange

    doc = json.loads(scenario["skill-upsert-nochange"][2].stdout)
    assert doc["changed"] is False and not _validate(doc, (NoChange,))
    assert _validate({**doc, "changed": True}, (NoChange,)) == ["NoChange: changed: True is not one of [False]"]
    assert _validate({"reason": "x"}, (NoChange, _Sample)) == [
        "NoChange: document: 'changed' is a required property",
        "_Sample: document: 'name' is a required property",
    ]
