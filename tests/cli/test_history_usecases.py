"""Issue 52: verify, audit, diff, show, import, export, lint, apply, report, attest and manifest as use cases.

Each use case, called from Python on a brain, returns a typed report whose ``to_json()`` is the
document the command prints with ``--json`` for the same brain (the CLI runs as a user runs it);
each document validates against its report's ``schema()``; each command names its reports.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ledger.brain import Brain
from tests.harness.brains import make_brain
from tests.harness.cli import run_in_process


def cli(b: Brain | Path, *args: str, code: int = 0) -> Any:
    root = b.root if isinstance(b, Brain) else b
    proc = run_in_process("--brain", str(root), *args, "--json")
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout)


def valid(report: Any) -> Any:
    """``report``'s document, after checking it against its own schema."""
    doc = report.to_json()
    jsonschema.Draft202012Validator.check_schema(report.schema())
    jsonschema.validate(doc, report.schema(), cls=jsonschema.Draft202012Validator)
    return doc


def timeless(doc: dict[str, Any]) -> dict[str, Any]:
    """An audit's document without the second it ran at (two runs may straddle one)."""
    return {**doc, "context": {k: v for k, v in doc["context"].items() if k != "audited_at"}}


@pytest.fixture
def brain(tmp_path: Path) -> Iterator[Brain]:
    b = make_brain(tmp_path / "brain", {"alpha": ("Alpha", "one\n"), "beta": ("Beta", "two\n")})
    b.patch("alpha", "one", "uno")
    b.write_file("beta", "references/notes.md", b"notes\n")
    try:
        yield b
    finally:
        b.close()


def test_verify_and_audit_give_the_cli_document_on_a_clean_and_a_tampered_brain(brain: Brain, tmp_path: Path) -> None:
    from ledger.audit.reports import AuditReport
    from ledger.audit.run import audit, verify

    report = verify(brain)
    assert isinstance(report, AuditReport) and report.ok and report.verdict.startswith("Verified OK")
    assert timeless(valid(report)) == timeless(cli(brain, "verify"))
    proc = run_in_process("audit", str(brain.root), "--json")
    assert proc.returncode == 0
    assert timeless(valid(audit(brain.root))) == timeless(json.loads(proc.stdout))

    (brain.skills_dir / "beta" / "references" / "notes.md").write_text("edited by hand\n")
    report = verify(brain)
    assert not report.ok and report.checks["worktree"].status == "FAIL"
    assert timeless(valid(report)) == timeless(cli(brain, "verify", code=1))

    copy = tmp_path / "tampered"
    subprocess.run(["git", "clone", "-q", str(brain.root), str(copy)], check=True)
    git = ["git", "-C", str(copy)]
    text = subprocess.run([*git, "log", "-1", "--format=%B"], capture_output=True, text=True, check=True).stdout
    forged = subprocess.run(
        [*git, "commit-tree", "HEAD^{tree}", "-p", "HEAD~1", "-m", text.replace("beta", "bet")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run([*git, "update-ref", "refs/heads/main", forged], check=True)
    report = audit(copy)
    assert not report.ok and report.verdict == "Verification FAILED"
    proc = run_in_process("audit", str(copy), "--json")
    assert proc.returncode == 1
    assert timeless(valid(report)) == timeless(json.loads(proc.stdout))


def test_diff_and_stats_give_the_cli_document(brain: Brain) -> None:
    from ledger.audit.history import diff, skill_stats

    (brain.skills_dir / "alpha" / "SKILL.md").write_text(
        (brain.skills_dir / "alpha" / "SKILL.md").read_text() + "more\n"
    )
    for args in ((), ("main~2",), ("main~3", "main", "beta"), ("alpha@1", "alpha@2")):
        report = diff(brain, args)
        assert valid(report) == cli(brain, "diff", *args), args
    assert valid(diff(brain, (), "alpha"))["skills"] == {"alpha": "modified"}
    assert valid(skill_stats(brain, "alpha")) == cli(brain, "show", "alpha", "--stats")
    assert valid(skill_stats(brain, "alpha", 1)) == cli(brain, "show", "alpha@1", "--stats")


def test_import_export_and_lint_give_the_cli_document(brain: Brain, tmp_path: Path) -> None:
    from ledger.folders.collections import export_snapshot, import_collections, lint_skills

    src = tmp_path / "src"
    (src / "gamma").mkdir(parents=True)
    (src / "gamma" / "SKILL.md").write_text("---\nname: gamma\ndescription: Gamma.\nauthor: me\n---\nthree\n")
    (src / "delta").mkdir()
    (src / "delta" / "SKILL.md").write_bytes(b"\xff\xfe not UTF-8")
    report = import_collections(brain, [src], dry_run=True)
    doc = valid(report)
    assert doc == cli(brain, "import", str(src), "--dry-run")
    assert [r["status"] for r in doc["skills"]] == ["refused", "imported"] and doc["snapshot"] is None

    dest = tmp_path / "out"
    doc = valid(export_snapshot(brain, dest, "claude", "main~1"))
    shutil.rmtree(dest)
    assert doc == cli(brain, "export", str(dest), "--layout", "claude", "--at", "main~1")

    lint = lint_skills(brain)
    assert valid(lint) == cli(brain, "lint") and lint.failed == []
    assert isinstance(lint.to_json(), list) and lint.schema()["type"] == "array"


def test_discovery_and_apply_documents_validate(brain: Brain, tmp_path: Path) -> None:
    from ledger.folders.collections import export_discovery
    from ledger.publish.reports import DiscoveryReport
    from ledger.write.transfers import ApplyReport

    site = tmp_path / "site"
    doc = valid(export_discovery(brain, site))
    shutil.rmtree(site)
    assert doc == cli(brain, "export", "--discovery", str(site))
    jsonschema.validate(doc, DiscoveryReport.schema())
    payload = tmp_path / "payload.json"
    payload.write_text(
        json.dumps(
            {
                "summary": "learned",
                "operation_type": "create",
                "upsert_files": {"eta/SKILL.md": "---\nname: eta\ndescription: Eta.\n---\nE\n"},
            }
        )
    )
    applied = cli(brain, "apply", str(payload))
    jsonschema.validate(applied, ApplyReport.schema())
    assert ApplyReport.of(applied).to_json() == applied


def test_manifest_attest_and_its_check_give_the_cli_document(brain: Brain, tmp_path: Path) -> None:
    from ledger.attestations.reports import AttestationFailed
    from ledger.attestations.run import attest, check_attestation, read_attestation
    from ledger.attestations.subjects import AttestationError
    from ledger.supply.manifesting import manifest

    assert valid(manifest(brain, "alpha", 1)) == cli(brain, "manifest", "alpha@1")
    out = tmp_path / "att.json"
    _, report = attest(brain, None, "alpha", "intoto", "user", out)
    doc = valid(report)
    assert doc["output"] == str(out) and doc["skill"] == "alpha"
    assert doc == cli(brain, "attest", "alpha", "--format", "intoto", "-o", str(out))
    checked = check_attestation(brain, read_attestation(out))
    assert valid(checked) == cli(brain, "verify", "--attestation", str(out))
    brain.patch("alpha", "uno", "eins")  # the head moves on: the attestation no longer matches it
    with pytest.raises(AttestationError) as failed:
        check_attestation(brain, read_attestation(out), "main")
    assert valid(AttestationFailed.of(failed.value)) == cli(brain, "verify", "--attestation", str(out), "main", code=1)
    assert failed.value.detail["problems"]


def test_report_json_says_what_it_wrote(brain: Brain, tmp_path: Path) -> None:
    from ledger.audit.reports import PageReport
    from ledger.page.run import write_page

    out = tmp_path / "page"
    doc = cli(brain, "report", "-o", str(out))
    jsonschema.validate(doc, PageReport.schema())
    assert doc["output"] == str(out / "index.html") and (out / "index.html").is_file()
    assert doc["ok"] is True and doc["verdict"] == "verified OK" and doc["chain_checked"] is False
    assert (doc["skills"], doc["snapshots"], doc["outcomes"]) == (2, 5, 0)
    assert doc["commit"] == brain.head().commit.hex()
    proc = run_in_process("--brain", str(brain.root), "report", "-o", str(out))
    assert proc.stdout == (
        f"report written to {out / 'index.html'} (verified OK; 2 skill(s), 5 snapshot(s), 0 outcome(s))\n"
    )
    assert valid(write_page(brain, out)) == doc
    (brain.skills_dir / "beta" / "SKILL.md").write_text("tampered\n")
    failing = cli(brain, "report", "-o", str(out), code=1)
    assert failing["ok"] is False and failing["verdict"] == "verification FAILED"


def test_every_history_command_names_its_reports() -> None:
    from ledger.cli import main
    from ledger.cli.common import reports_of
    from ledger.reports import Report

    for name in (
        "verify",
        "audit",
        "diff",
        "skill show",
        "skill revert",
        "import",
        "export",
        "skill lint",
        "skill apply",
        "report",
        "attest",
        "manifest",
    ):
        cmd = main
        for word in name.split():
            cmd = cmd.commands[word]  # type: ignore[attr-defined]
        found = reports_of(cmd)
        assert found, name
        for cls in found:
            assert issubclass(cls, Report) or hasattr(cls, "json_schema") or hasattr(cls, "to_json"), (name, cls)
