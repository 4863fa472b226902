"""Plain words in what the CLI tells a user: no project vocabulary, no Python reprs.

A user reads errors, hints, audit check details and human output.  None of them may carry an
issue number, a section sign (a spec reference is written "see docs/lineage.md, 'The anchoring
rule'"), or a Python repr (``None``, ``{'…': …}``, ``['…']``, ``b'…'``).  This runs a demo-like
flow on a real anvil (the audit with and without the chain, the log, status, the report, an
attestation, pending roots) and greps every stdout and stderr; tests/cli/test_cli_table.py holds
every row of its error corpus to the same :func:`problems` (its contract test calls it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ledger.chain import anvil
from tests.harness.cli import run_in_process

PATTERNS = {
    "a section sign": re.compile("§"),
    "an issue number": re.compile(r"\bissue \d+", re.IGNORECASE),
    "a Python None": re.compile(r"\bNone\b"),
    "a dict repr": re.compile(r"\{'"),
    "a list repr": re.compile(r"\['"),
    "a bytes repr": re.compile(r"(?<![\w'])b'"),
}


def problems(text: str) -> list[str]:
    """Each pattern ``text`` shows, with the line it is on."""
    found = []
    for line in text.splitlines():
        found += [f"{what}: {line.strip()}" for what, rx in PATTERNS.items() if rx.search(line)]
    return found


def test_the_checker_finds_each_pattern() -> None:
    for bad in ("see §7", "(issue 38)", "signer None", "pin {'commit': 'ab'}", "holds ['README']", "got b'\\x00'"):
        assert problems(bad), bad
    assert not problems("see docs/lineage.md, 'The anchoring rule'; Bob's notes; skill 'b'; snapshot #3")


def test_every_help_speaks_plainly() -> None:
    """Every command's --help (the console script's entry point, in process: ~100 commands)."""
    from ledger.cli import main

    paths: list[list[str]] = [[]]
    for name, cmd in main.commands.items():
        paths += [[name]] + [[name, sub] for sub in getattr(cmd, "commands", None) or {}]
    found = []
    for path in paths:
        result = run_in_process(*path, "--help")
        assert result.exit_code == 0, (path, result.output)
        found += [f"ledger {' '.join(path)} --help\n    {p}" for p in problems(result.output)]
    assert len(paths) > 50 and not found, "\n".join(found)


pytestmark = pytest.mark.chain


def test_a_demo_like_flow_speaks_plainly(tmp_path: Path, node: anvil.Node) -> None:
    brain = tmp_path / "brain"
    b = ["--brain", str(brain)]
    said: list[tuple[list[str], str]] = []

    def run(*args: str, code: int | None = 0, stdin: str | None = None) -> str:
        proc = run_in_process(*args, input=stdin)
        if code is not None:
            assert proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
        said.append((list(args), proc.stdout + proc.stderr))
        return proc.stdout

    run("init", str(brain))
    run(*b, "chain", "use", node.url)
    run(*b, "chain", "deploy")
    run(*b, "chain", "register", "--shares", "1000000")
    run(*b, "skill", "create", "oracle", "--description", "Check oracle freshness", "--body", "Check staleness.\n")
    run(*b, "skill", "create", "pdf", "--description", "Extract text from PDFs", "--body", "Use pdftotext.\n")
    run(*b, "skill", "create", "scratch", "--description", "Temporary notes", "--body", "nothing yet\n")
    run(*b, "skill", "patch", "oracle", "--old", "staleness.", "--new", "staleness. Prefer a TWAP.")
    (tmp_path / "checklist.md").write_text("# checklist\n- heartbeat\n")
    run(*b, "skill", "write-file", "pdf", "references/checklist.md", "--from", str(tmp_path / "checklist.md"))
    run(*b, "skill", "delete", "scratch")
    run(
        *b,
        "skill",
        "patch",
        "pdf",
        "--old",
        "pdftotext.",
        "--new",
        "pdftotext; OCR for scans.",
        "--actor",
        "agent",
        "--evidence",
        "task=t-1",
    )
    run(*b, "outcome", "record", "oracle", "--task", "audit-1", "--success", "--actor", "agent")
    rows = "".join(json.dumps({"skill": "pdf", "task": f"invoice-{i}", "success": True}) + "\n" for i in (1, 2))
    (tmp_path / "outcomes.jsonl").write_text(rows)
    run(*b, "outcome", "import", str(tmp_path / "outcomes.jsonl"), "--actor", "agent")
    run(*b, "show", "oracle", "--stats")
    run(*b, "status")
    run(*b, "commit")
    run(*b, "index")
    run(*b, "log")
    run(*b, "log", "--oneline")
    run(*b, "log", "--stats")
    run(*b, "keys", "show")
    run(*b, "verify")
    run(*b, "verify", "--chain")
    run(*b, "verify", "--chain", "--require-signatures")
    run(*b, "audit", str(brain))
    run(*b, "attest", "--format", "intoto", "-o", str(tmp_path / "brain.intoto.json"))
    run(*b, "verify", "--attestation", str(tmp_path / "brain.intoto.json"))
    run(*b, "report", "-o", str(tmp_path / "page"))
    run(*b, "report", "--rpc", node.url, "-o", str(tmp_path / "page-rpc"))
    run(*b, "chain", "status")
    # pending roots: a change after the last commit, audited with and without the chain
    run(*b, "skill", "patch", "oracle", "--old", "TWAP.", "--new", "TWAP over 30 min.")
    run(*b, "status")
    run(*b, "verify")
    run(*b, "verify", "--chain")
    run(*b, "report", "--rpc", node.url, "-o", str(tmp_path / "page-pending"))
    run(*b, "chain", "status")
    # what a user gets wrong on this brain
    run(*b, "skill", "patch", "oracle", "--old", "absent", "--new", "x", code=1)
    run(*b, "skill", "view", "nosuch", code=1)
    run(*b, "show", "nosuch", code=1)
    run(*b, "verify", "--attestation", str(tmp_path / "checklist.md"), code=1)
    run(*b, "outcome", "record", "nosuch", "--task", "t", "--success", code=None)
    run(*b, "chain", "use", "notaurl", code=2)
    run(*b, "diff", "nosuch", code=None)
    run("audit", str(tmp_path / "nowhere"), code=None)
    found = [f"ledger {' '.join(args)}\n    {p}" for args, text in said for p in problems(text)]
    assert not found, "\n".join(found)


def test_one_number_per_snapshot(tmp_path: Path, node: anvil.Node) -> None:
    """The audit, the log and the attestation name a snapshot by one number; the chain's own count is
    always called the chain sequence.  #0 (genesis) .. #2 are anchored as chain sequence 1..3; #3 and #4
    record outcomes (the same root: not anchored); #5 is anchored as chain sequence 4."""
    brain = tmp_path / "brain"
    b = ["--brain", str(brain)]
    run_in_process("init", str(brain), check=True)
    run_in_process(*b, "chain", "use", node.url, check=True)
    run_in_process(*b, "chain", "deploy", check=True)
    run_in_process(*b, "chain", "register", check=True)
    for name in ("a", "b"):
        run_in_process(*b, "skill", "create", name, "--description", name.upper(), "--body", "x", check=True)
    for task in ("t1", "t2"):
        run_in_process(*b, "outcome", "record", "a", "--task", task, "--success", "--actor", "agent", check=True)
    run_in_process(*b, "skill", "create", "c", "--description", "C", "--body", "x", check=True)
    run_in_process(*b, "chain", "anchor", check=True)
    log = json.loads(run_in_process(*b, "log", "--json", check=True).stdout)
    assert [d["number"] for d in log] == [5, 4, 3, 2, 1, 0]
    head = log[0]["commit"]
    assert log[0]["chain"]["seq"] == 4
    text = run_in_process(*b, "log", "-n", "1", check=True).stdout
    assert f"snapshot #5 {head}" in text and "chain sequence 4," in text, text
    assert run_in_process(*b, "log", "--oneline", "-n", "1", check=True).stdout.startswith("#5 ")
    rep = json.loads(run_in_process(*b, "verify", "--chain", "--json", check=True).stdout)
    assert rep["checks"]["chain.head"]["summary"].endswith("is snapshot #5's root (chain sequence 4)")
    run_in_process(*b, "attest", "--format", "intoto", "-o", str(tmp_path / "s.json"), check=True)
    doc = json.loads((tmp_path / "s.json").read_text())
    import base64

    statement = json.loads(base64.b64decode(doc["payload"]))
    assert statement["predicate"]["snapshot"]["sequence"] == 5  # the protocol field is the snapshot's number
    # A receipt that lies about its transaction: the audit names the snapshot #5, and the chain's count as such.
    note = json.loads(run_in_process("--brain", str(brain), "log", "-n", "1", "--json", check=True).stdout)[0]["chain"]
    assert note is not None
    import subprocess

    bad = {**note, "tx": "0x" + "ee" * 32}
    subprocess.run(
        [
            "git",
            "-C",
            str(brain),
            "notes",
            "--ref=refs/notes/ledger-chain",
            "add",
            "-f",
            "-m",
            json.dumps(bad, sort_keys=True),
            head,
        ],
        check=True,
        capture_output=True,
    )
    rep = json.loads(run_in_process(*b, "verify", "--chain", "--json").stdout)
    summary = rep["checks"]["chain.receipts"]["summary"]
    assert f"receipt of snapshot {head[:12]} (#5)" in summary and "chain sequence 4" in summary, summary
