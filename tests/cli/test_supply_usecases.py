"""The supply, scan, outcome and eval use cases (issue 52): called from Python they give the reports whose
``to_json()`` is what the CLI prints with ``--json`` for the same brain, and each document validates
against its report's ``schema()``.  Reads are compared on one brain byte for byte; writes on two ``cp -a``
copies of one brain, their volatile values (commits, roots, ids, times) masked."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ledger.brain import Brain
from ledger.brain.evaluations import Evaluations
from ledger.cli.common import reports_of
from ledger.evals import decisions, runs
from ledger.evals import outcomes as oc
from ledger.reports import Report
from ledger.supply import usecases as uc
from ledger.supply.installer import Installer
from tests.harness.brains import copy_brain
from tests.harness.cli import run_in_process
from tests.unit.evals.test_evals_engine import FAMILY, verifier_brain

HERE = Path(__file__).parents[1]


def _json(b: Path, *args: str, code: int = 0) -> Any:
    proc = run_in_process("--brain", str(b), *args, "--json")
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout)


def _valid(report: Report) -> dict[str, Any]:
    doc = report.to_json()
    schema = type(report).schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema)
    return doc


_VOLATILE = re.compile(r"(0x)?[0-9a-f]{40,64}|blake3-tree-v1:[0-9a-f]{64}|\d{4}-\d\d-\d\dT[0-9:.]+Z|/tmp/\S+")


def _masked(doc: Any) -> str:
    return _VOLATILE.sub("X", json.dumps(doc, indent=2))


def _keys(doc: Any) -> Any:
    """The document's keys, in order, and its values' JSON types (a run's timings differ run to run)."""
    if isinstance(doc, dict):
        return [(k, _keys(v)) for k, v in doc.items()]
    if isinstance(doc, list):
        return [_keys(v) for v in doc]
    return "number" if isinstance(doc, (int, float)) and not isinstance(doc, bool) else type(doc).__name__


def _source(root: Path) -> Path:
    src = root / "src"
    (src / "skills" / "hello").mkdir(parents=True)
    (src / "skills" / "hello" / "SKILL.md").write_text(
        "---\nname: hello\ndescription: Says hello to the user.\n---\n# Hello\nSay hello.\n"
    )
    for args in (
        ("init", "-q", "-b", "main"),
        ("add", "-A"),
        ("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "skills"),
    ):
        subprocess.run(["git", *args], cwd=src, check=True)
    return src


def test_supply_and_outcome_use_cases_give_the_cli_documents(tmp_path: Path) -> None:
    src = _source(tmp_path)
    a = tmp_path / "a"
    run_in_process("init", str(a), check=True)
    b = tmp_path / "b"
    copy_brain(a, b)
    with Brain.open(a) as brain, brain.acting("user"):
        installed = uc.install(brain, str(src))
        approved = uc.approve(brain, ["hello"])
    cli_installed = _json(b, "install", str(src))
    cli_approved = _json(b, "approve", "hello")
    assert _masked(_valid(installed)) == _masked(cli_installed)
    assert _masked(_valid(approved)) == _masked(cli_approved)
    assert installed.skills[0].state == "quarantined" and installed.stripped == []

    digest = "sha256:" + "ab" * 32
    with Brain.open(a) as brain, brain.acting("user"):
        revoked = uc.revoke(brain, digest, "a bad upstream build")
    assert _masked(_valid(revoked)) == _masked(_json(b, "revoke", digest, "--reason", "a bad upstream build"))
    with Brain.open(a) as brain:
        done = oc.record(brain, "agent", "hello", None, result="success", task="t1")
        reads = {
            ("supply", "list"): uc.record(brain),
            ("supply", "show", "hello"): uc.entry(brain, "hello"),
            ("outdated",): uc.outdated(brain),
            ("outcome", "list"): oc.list_outcomes(brain),
            ("outcome", "batches"): oc.batches(brain),
        }
    assert list(_valid(done)) == ["outcome", "tier", "skill", "version", "receipt", "log_size"]  # skill_outcome's
    assert done.tier == "self" and done.log_size == 1
    assert _masked(_valid(done.receipt)) == _masked(_json(b, "outcome", "record", "hello", "--task", "t1", "--success"))
    for args, report in reads.items():  # the same brain: the same bytes
        assert json.dumps(_valid(report)) == json.dumps(_json(a, *args)), args
    assert reads[("outcome", "list")].entries[0].tier == "self"
    with Brain.open(a) as brain:  # what these commands printed before they had reports: the library's documents
        inst = Installer(brain)
        before = {
            ("supply", "list"): inst.record().to_json(),
            ("supply", "show", "hello"): inst.entry("hello").to_json(),
            ("outcome", "batches"): brain.evidence.batches(None),
        }
    for args, doc in before.items():  # the approval and the revocation in the record's own key order, too
        assert json.dumps(reads[args].to_json()) == json.dumps(doc), args


def test_an_outcome_import_and_an_empty_one_give_the_cli_documents(tmp_path: Path) -> None:
    src = _source(tmp_path)
    a = tmp_path / "a"
    run_in_process("init", str(a), check=True)
    run_in_process("--brain", str(a), "install", str(src), check=True)
    run_in_process("--brain", str(a), "approve", "hello", check=True)
    b = tmp_path / "b"
    copy_brain(a, b)
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"skill": "hello", "task": "t3", "success": true}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with Brain.open(a) as brain:
        imported = oc.import_outcomes(brain, "agent", rows.read_bytes())
        nothing = oc.import_outcomes(brain, None, b"")
    assert _masked(_valid(imported)) == _masked(_json(b, "outcome", "import", str(rows), "--actor", "agent"))
    assert (imported.read, imported.added, imported.log_size) == (1, 1, 1)
    assert json.dumps(_valid(nothing)) == json.dumps(_json(b, "outcome", "import", str(empty)))


def test_the_scan_use_case_gives_the_cli_document_of_the_malicious_samples(tmp_path: Path) -> None:
    samples = HERE / "supply" / "malicious"
    report = uc.scan([samples])
    assert report.blocked, "the malicious samples hold a critical finding"
    assert json.dumps(_valid(report)) == json.dumps(_json(tmp_path, "scan", str(samples), code=1))


def test_eval_use_cases_give_the_cli_documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = verifier_brain(tmp_path, monkeypatch, FAMILY)
    b = tmp_path / "b"
    copy_brain(a, b)
    with Brain.open(a) as brain:
        with brain.acting("user"):
            planned = runs.plan(Evaluations(brain), "csv-sum")
            again = runs.plan(Evaluations(brain), "csv-sum")
        with brain.acting("verifier"):
            ran = runs.run(Evaluations(brain), "csv-sum", workspace=tmp_path / "ws-a")
        switched = decisions.switch(brain, True)
    cli_planned = _json(b, "eval", "plan", "csv-sum")
    cli_again = _json(b, "eval", "plan", "csv-sum")
    cli_ran = _json(b, "eval", "run", "csv-sum", "--workspace", str(tmp_path / "ws-b"))
    assert _masked(_valid(planned)) == _masked(cli_planned)
    assert json.dumps(_valid(again)) == json.dumps(_json(a, "eval", "plan", "csv-sum"))  # the same plan, read back
    assert _masked(again.to_json()) == _masked(cli_again)
    assert _keys(_valid(ran)) == _keys(cli_ran) and ran.operation == "outcome"
    assert json.dumps(_valid(switched)) == json.dumps(_json(b, "eval", "gate", "on"))


def test_every_command_of_this_part_names_its_reports() -> None:
    from ledger.cli import main

    groups = {
        "outcome": ("record", "import", "list", "batches"),
        "eval": ("plan", "run", "import", "gate", "approve", "revert"),
        "supply": ("list", "show", "install", "approve", "revoke", "outdated", "update", "scan"),
    }
    cmds = []
    cmds += [main.commands[g].commands[n] for g, names in groups.items() for n in names]  # type: ignore[attr-defined]
    for cmd in cmds:
        found = reports_of(cmd)
        assert found and all(issubclass(r, Report) for r in found), cmd.name
        for r in found:
            jsonschema.Draft202012Validator.check_schema(r.schema())
