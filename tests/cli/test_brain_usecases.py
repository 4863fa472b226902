"""The brain's use cases (ledger.brain.usecases, ledger.overview) against the CLI (issue 52).

Each use case, called from Python on a brain, returns a typed report whose ``to_json()`` is
byte for byte what ``ledger … --json`` prints for the same brain; a write's receipt is the same
document but its commit (the snapshot's date may differ by a second between the two copies). Every document, the
writes' receipts and ``NoChange`` included, validates against its report's schema, and every
command of ``ledger.cli.brain`` and ``ledger.cli.skills`` but ``mcp`` names its reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest

from ledger.brain import Brain, usecases
from ledger.brain.reports import (
    GcReport,
    IndexReport,
    InitReport,
    LogReport,
    LogStatsReport,
    ProveReport,
    RecoverReport,
    SkillFileReport,
    SkillListReport,
    SkillViewReport,
    StatusReport,
)
from ledger.cli import main
from ledger.cli.common import reports_of
from ledger.overview import status
from ledger.reports import NoChange
from ledger.write.records import Receipt
from tests.harness.brains import copy_brain, make_brain
from tests.harness.cli import run_in_process

FULL = {"LEDGER_FULL_PATH": "1"}  # status, index and skill list through click, not the stat cache


def printed(report: Any) -> str:
    """What ``emit`` prints for ``report``."""
    return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"


def cli(root: Path, *args: str) -> str:
    proc = run_in_process("--brain", str(root), *args, env=FULL, check=True)
    return proc.stdout


def valid(doc: Any, report: type) -> None:
    schema = report.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A brain with two skills (one filed in a category), a supporting file, a binary asset, and a
    hand edit not in a snapshot."""
    root = make_brain(tmp_path_factory.mktemp("usecases") / "brain", via="cli")
    cli(root, "skill", "create", "alpha", "--description", "Alpha skill", "--body", "Use alpha.\n")
    cli(root, "skill", "create", "beta", "--description", "Beta – ünïcode", "--category", "research")
    data = root.parent / "blob.bin"
    data.write_bytes(b"\xff\xfe\x00")
    cli(root, "skill", "write-file", "alpha", "assets/blob.bin", "--from", str(data))
    (root / "skills" / "alpha" / "references").mkdir()
    (root / "skills" / "alpha" / "references" / "x.md").write_text("a reference\n")
    cli(root, "snapshot", "-m", "a reference")
    with (root / "skills" / "beta" / "SKILL.md").open("a") as f:
        f.write("hand edit\n")
    return root


@pytest.fixture
def copy(made: Path, tmp_path: Path) -> Callable[[str], Path]:
    def make(name: str) -> Path:
        dest = tmp_path / name
        return copy_brain(made, dest)

    return make


@pytest.fixture
def opened(made: Path) -> Iterator[Brain]:
    with Brain.open(made) as brain:
        yield brain


READS: list[tuple[str, list[str], Callable[[Brain], Any], type]] = [
    ("status", ["status", "--json"], status, StatusReport),
    ("index", ["index", "--json"], usecases.index, IndexReport),
    ("skill-list", ["skill", "list", "--json"], usecases.skill_list, SkillListReport),
    (
        "skill-list-category",
        ["skill", "list", "--category", "research", "--json"],
        lambda b: usecases.skill_list(b, "research"),
        SkillListReport,
    ),
    ("skill-view", ["skill", "view", "alpha", "--json"], lambda b: usecases.skill_view(b, "alpha"), SkillViewReport),
    (
        "skill-view-file",
        ["skill", "view", "alpha", "--file", "references/x.md", "--json"],
        lambda b: usecases.skill_view(b, "alpha", "references/x.md"),
        SkillFileReport,
    ),
    (
        "skill-view-binary",
        ["skill", "view", "alpha", "--file", "assets/blob.bin", "--json"],
        lambda b: usecases.skill_view(b, "alpha", "assets/blob.bin"),
        SkillFileReport,
    ),
    ("log", ["log", "--json"], usecases.log, LogReport),
    (
        "log-filtered",
        ["log", "-1", "--skill", "alpha", "--json"],
        lambda b: usecases.log(b, max_count=1, skill="alpha"),
        LogReport,
    ),
    ("log-actor", ["log", "--actor", "agent", "--json"], lambda b: usecases.log(b, actor="agent"), LogReport),
    ("log-stats", ["log", "--stats", "--json"], usecases.log_stats, LogStatsReport),
    ("prove", ["prove", "alpha/SKILL.md", "--json"], lambda b: usecases.prove(b, "alpha/SKILL.md"), ProveReport),
    (
        "prove-at",
        ["prove", "alpha/assets/blob.bin", "--at", "main~1", "--json"],
        lambda b: usecases.prove(b, "alpha/assets/blob.bin", "main~1"),
        ProveReport,
    ),
    ("recover", ["recover", "--json"], usecases.recover, RecoverReport),
]


@pytest.mark.parametrize(("args", "case", "report"), [pytest.param(a, c, r, id=i) for i, a, c, r in READS])
def test_a_read_use_case_is_the_commands_json(
    made: Path, args: list[str], case: Callable[[Brain], Any], report: type
) -> None:
    shown = cli(made, *args)
    with Brain.open(made) as brain:
        got = case(brain)
    assert type(got) is report
    assert printed(got) == shown
    valid(json.loads(shown), report)


def test_the_fixture_shows_what_the_reports_carry(made: Path) -> None:
    """The brain above is not a trivial one: the documents compared carry the optional parts."""
    st = json.loads(cli(made, "status", "--json"))
    assert st["changes"] == {"beta/SKILL.md": "modified"} and not st["clean"]
    listed = json.loads(cli(made, "skill", "list", "--json"))
    assert [s["category"] for s in listed] == [None, "research"]
    assert json.loads(cli(made, "skill", "view", "alpha", "--file", "assets/blob.bin", "--json")) == {
        "name": "alpha",
        "file": "assets/blob.bin",
        "binary": True,
        "size": 3,
    }
    assert json.loads(cli(made, "index", "--json")) == [
        {"name": "alpha", "description": "Alpha skill"},
        {"name": "beta", "description": "Beta – ünïcode"},
    ]


def test_index_json_is_the_text_index_as_data(made: Path) -> None:
    text = cli(made, "index")
    entries = json.loads(cli(made, "index", "--json"))
    assert text == "".join(f"▸ {e['name']}: {e['description']}\n" for e in entries)
    with Brain.open(made) as brain:
        assert usecases.index(brain).text() == text


def test_prove_prints_the_same_proof_with_or_without_json(made: Path) -> None:
    assert cli(made, "prove", "alpha/SKILL.md") == cli(made, "prove", "alpha/SKILL.md", "--json")


def test_gc_use_case_and_command_give_one_document_shape(copy: Callable[[str], Path]) -> None:
    a, b = copy("a"), copy("b")
    shown = json.loads(cli(a, "gc", "--json"))
    with Brain.open(b) as brain:
        got = usecases.gc(brain).to_json()
    valid(shown, GcReport)
    valid(got, GcReport)
    assert list(got) == list(shown) and shown["connectivity"] == "ok"
    assert {k: got[k] for k in ("full", "after")} == {k: shown[k] for k in ("full", "after")}


def test_init_json_is_the_init_use_case(tmp_path: Path) -> None:
    shown = json.loads(run_in_process("init", str(tmp_path / "a"), "--json", check=True).stdout)
    got = usecases.init(tmp_path / "b").to_json()
    valid(shown, InitReport)
    assert shown["brain"] == str(tmp_path / "a") and got["brain"] == str(tmp_path / "b")
    assert {**shown, "brain": None} == {**got, "brain": None}
    assert shown["policy"] == "signed" and {k["role"] for k in shown["trusted"]} == {"user", "agent"}
    unsigned = json.loads(
        run_in_process("init", str(tmp_path / "c"), "--unsigned", "--versions", "store", "--json", check=True).stdout
    )
    assert (unsigned["trusted"], unsigned["policy"], unsigned["versions"]) == ([], "unsigned", "store")
    text = run_in_process("init", str(tmp_path / "d"), check=True).stdout
    assert text.splitlines()[1] == f"root   {shown['root']}"


# Each write command (argv after the brain), and the same write through the Python API.
WRITES: list[tuple[str, list[str], Callable[[Brain, Path], Any]]] = [
    (
        "create",
        ["skill", "create", "gamma", "--description", "Gamma", "--body", "g\n"],
        lambda b, _: b.create("gamma", "Gamma", "g\n"),
    ),
    ("upsert", ["skill", "upsert", "--file", "{src}"], lambda b, src: b.upsert(src.read_text())),
    ("edit", ["skill", "edit", "alpha", "--file", "{src}"], lambda b, src: b.edit("alpha", src.read_text())),
    (
        "patch",
        ["skill", "patch", "alpha", "--old", "Use alpha.", "--new", "Use alpha well."],
        lambda b, _: b.patch("alpha", "Use alpha.", "Use alpha well."),
    ),
    ("delete", ["skill", "delete", "alpha"], lambda b, _: b.delete("alpha")),
    ("move", ["skill", "move", "alpha", "research"], lambda b, _: b.categories.move("alpha", "research")),
    (
        "write-file",
        ["skill", "write-file", "alpha", "references/y.md", "--from", "{data}"],
        lambda b, data: b.write_file("alpha", "references/y.md", data.read_bytes()),
    ),
    (
        "remove-file",
        ["skill", "remove-file", "alpha", "references/x.md"],
        lambda b, _: b.remove_file("alpha", "references/x.md"),
    ),
    ("snapshot", ["snapshot"], lambda b, _: usecases.snapshot(b)),
]


@pytest.mark.parametrize(("args", "write"), [pytest.param(a, w, id=i) for i, a, w in WRITES])
def test_a_write_prints_the_receipt_the_api_returns(
    copy: Callable[[str], Path], tmp_path: Path, args: list[str], write: Callable[[Brain, Path], Any]
) -> None:
    a, b = copy("a"), copy("b")
    src = tmp_path / "SKILL.md"
    src.write_text((a / "skills" / "alpha" / "SKILL.md").read_text().replace("Use alpha.", "Use alpha, edited."))
    data = tmp_path / "y.md"
    data.write_text("why\n")
    argv = [x.replace("{src}", str(src)).replace("{data}", str(data)) for x in args]
    shown = json.loads(run_in_process("--brain", str(a), *argv, "--json", check=True).stdout)
    arg = data if "{data}" in args else src
    with Brain.open(b) as brain, brain.acting("user"):
        got = write(brain, arg)
    assert isinstance(got, Receipt)
    valid(shown, Receipt)
    valid(got.to_json(), Receipt)
    # the commit differs when the two writes fall in different seconds (its date), so it is left out
    assert {**shown, "commit": None} == {**got.to_json(), "commit": None}


def test_a_write_that_changes_nothing_prints_no_change(made: Path, copy: Callable[[str], Path]) -> None:
    a = copy("a")
    run_in_process("--brain", str(a), "snapshot", check=True)
    for argv in (
        ["snapshot"],
        ["skill", "move", "alpha"],
        ["skill", "patch", "alpha", "--old", "Use alpha.", "--new", "Use alpha."],
    ):
        proc = run_in_process("--brain", str(a), *argv, "--json")
        if proc.returncode != 0:  # a refusal is not a "nothing to do"
            assert argv[1] == "patch", proc.stderr
            continue
        doc = json.loads(proc.stdout)
        valid(doc, NoChange)
        assert doc["changed"] is False and doc["reason"]


def test_the_receipt_schema_refuses_a_wrong_document() -> None:
    change = {"skill": "s", "action": "modify", "version": 1, "files": {"SKILL.md": "modified"}}
    good = Receipt("s", 1, "blake3-tree-v1:00", "ab", "patch", None, [change], None)
    valid(good.to_json(), Receipt)
    failed = {**good.to_json(), "chain": {"committed": False, "error": "no node"}}
    valid(failed, Receipt)
    for bad in (
        {**good.to_json(), "signed": "no"},
        {**good.to_json(), "extra": 1},
        {**good.to_json(), "changes": [{"skill": "s", "action": "x", "version": 1, "files": {"a": "gone"}}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, Receipt.schema())
    with_extra = Receipt.json_schema({"read": {"type": "integer"}})
    jsonschema.validate({**good.to_json(), "read": 3}, with_extra)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(good.to_json(), with_extra)


def _commands() -> Iterator[tuple[str, click.Command]]:
    for name in ("init", "index", "status", "recover", "snapshot", "log", "proof make", "gc", "hash"):
        cmd = main
        for word in name.split():
            cmd = cmd.commands[word]  # type: ignore[attr-defined]
        yield name, cmd
    skill = main.commands["skill"]
    assert isinstance(skill, click.Group)
    for name, cmd in skill.commands.items():
        yield f"skill {name}", cmd


WRITE_COMMANDS = {
    "snapshot",
    *(f"skill {w}" for w in ("create", "upsert", "edit", "patch", "delete", "move", "write-file", "remove-file")),
}


@pytest.mark.parametrize(("name", "cmd"), [pytest.param(n, c, id=n) for n, c in _commands()])
def test_every_command_names_its_reports_and_takes_json(name: str, cmd: click.Command) -> None:
    found = reports_of(cmd)
    assert found, f"ledger {name} names no report (@returns)"
    assert "as_json" in {p.name for p in cmd.params}, f"ledger {name} has no --json"
    if name in WRITE_COMMANDS:
        assert found == (Receipt, NoChange)
    for report in found:
        jsonschema.Draft202012Validator.check_schema(report.schema())


def test_listing_reports_are_arrays(opened: Brain) -> None:
    for report in (usecases.index(opened), usecases.log(opened), usecases.skill_list(opened)):
        assert isinstance(report.to_json(), list)
        assert type(report).schema()["type"] == "array"


def test_verify_proof_documents_validate(made: Path, tmp_path: Path) -> None:
    from ledger.brain.reports import ProofCheckReport

    proof = tmp_path / "proof.json"
    proof.write_text(cli(made, "prove", "alpha/SKILL.md", "--json"))
    root = json.loads(proof.read_text())["root"]
    ok = run_in_process("proof", "check", str(proof), "--root", root, "--json", check=True)
    assert json.loads(ok.stdout) == {"ok": True, "path": "alpha/SKILL.md", "root": root, "chain": None}
    valid(json.loads(ok.stdout), ProofCheckReport)
    other = json.loads(cli(made, "prove", "alpha/SKILL.md", "--at", "main~1"))["root"]
    bad = run_in_process("proof", "check", str(proof), "--root", other, "--json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["ok"] is False
    valid(json.loads(bad.stdout), ProofCheckReport)
    assert reports_of(main.commands["proof"].commands["check"])  # type: ignore[attr-defined]


def test_status_with_targets_a_fleet_and_the_gate(copy: Callable[[str], Path], tmp_path: Path) -> None:
    """The optional parts of status: a sync target's state, a fleet's merges, the eval gate."""
    root = copy("a")
    cli(root, "snapshot")
    (tmp_path / "rt").mkdir()
    cli(root, "link", str(tmp_path / "rt"))
    cli(root, "sync")
    (root / ".ledger" / "fleet").mkdir()
    config = root / ".ledger" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "eval": {"gate": True}}))
    shown = cli(root, "status", "--json")
    with Brain.open(root) as brain:
        got = status(brain)
    assert printed(got) == shown
    doc = json.loads(shown)
    assert list(doc)[6:] == [
        "sync_conflicts",
        "sync_rescued",
        "sync_ignored_held",
        "merge_conflicts",
        "gate",
        "regressions",
    ]
    valid(doc, StatusReport)
