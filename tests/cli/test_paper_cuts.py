"""Paper cuts a new user meets: each refused or reported plainly, with the real CLI."""

from __future__ import annotations

import functools
import http.server
import json
from pathlib import Path

from tests.harness.brains import make_brain
from tests.harness.localhttp import refused_url, serving

ROW = '{"skill": "s", "task": "t1", "success": true}\n'


def _brain(tmp_path: Path) -> list[str]:
    return ["--brain", str(make_brain(tmp_path / "b", {"s": ("d", "x\n")}, via="cli"))]


def test_outcome_import_of_rows_without_actor_is_a_usage_error(ledger, tmp_path: Path) -> None:
    """An unjudged row is never turned into a verified outcome by a default: rows need --actor."""
    b = _brain(tmp_path)
    ledger(*b, "keys", "generate", "verifier", check=True)
    ledger(*b, "keys", "trust", "verifier", check=True)
    before = ledger(*b, "log", "--json", check=True).stdout
    proc = ledger(*b, "outcome", "import", "-", input=ROW)
    assert proc.returncode == 2, proc.stderr
    assert "--actor" in proc.stderr and "verifier" in proc.stderr and "agent" in proc.stderr
    assert ledger(*b, "log", "--json", check=True).stdout == before  # nothing written
    assert json.loads(ledger(*b, "outcome", "list", "--json", check=True).stdout) == []
    ok = ledger(*b, "outcome", "import", "-", "--actor", "agent", input=ROW, check=True)
    assert "imported 1" in ok.stdout
    [row] = json.loads(ledger(*b, "outcome", "list", "--json", check=True).stdout)
    assert row["tier"] == "self"


def test_install_from_a_missing_path_names_it_and_the_reason(ledger, tmp_path: Path) -> None:
    b = _brain(tmp_path)
    proc = ledger(*b, "supply", "install", "../upstrem", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first == "error: ../upstrem: no such file or directory", proc.stderr
    assert "repository exists" not in proc.stderr


def test_install_from_an_unreachable_url_names_it_and_the_reason(ledger, tmp_path: Path) -> None:
    b = _brain(tmp_path)
    url = refused_url().replace("http://", "https://", 1) + "/team/skills.git"  # a closed port on this machine
    proc = ledger(*b, "supply", "install", url)
    assert proc.returncode == 1, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"error: cannot reach {url}: "), proc.stderr
    assert "refused" in first.lower()
    assert "index.json" not in proc.stderr and "ConnectionError" not in proc.stderr


def test_install_from_a_url_that_is_no_source_says_so_once(ledger, tmp_path: Path) -> None:
    b = _brain(tmp_path)
    (tmp_path / "www").mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "www"))
    with serving(handler) as base:
        url = f"{base}/team/skills.git"
        proc = ledger(*b, "supply", "install", url)
    assert proc.returncode == 1, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"error: {url} is neither a git repository nor a skills index"), proc.stderr


def test_a_missed_cli_patch_lists_its_closest_lines(ledger, tmp_path: Path) -> None:
    """The CLI shows the lines the agent tool returns as data (one function finds them: ledger.bundle.textpatch)."""
    b = _brain(tmp_path)
    ledger(
        *b,
        "skill",
        "create",
        "p",
        "--description",
        "d",
        "--body",
        "Use pdftotext -layout first.\nThen OCR.\n",
        check=True,
    )
    proc = ledger(*b, "skill", "patch", "p", "--old", "Use pdftotext -layout frist.", "--new", "x")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "error: patch text not found in p/SKILL.md", proc.stderr
    assert any(ln.endswith(": Use pdftotext -layout first.") and ln.lstrip().startswith("line ") for ln in lines[1:])
    assert lines[-1] == "hint: copy the text exactly, including whitespace; the closest lines are listed"


def test_push_into_an_empty_remote_says_what_it_pushed(ledger, tmp_path: Path) -> None:
    b = _brain(tmp_path)
    proc = ledger(*b, "push", str(tmp_path / "r.git"), check=True)
    head = ledger(*b, "log", "--json", check=True)
    count = len(json.loads(head.stdout))
    tip = json.loads(head.stdout)[0]["commit"][:12]
    assert proc.stdout.splitlines() == [
        f"pushed the whole lineage, {count} snapshot(s) up to {tip}, to {tmp_path / 'r.git'} (it held none)"
    ], proc.stdout
    assert "(nothing)" not in proc.stdout


def test_the_fleet_walkthroughs_last_sync_reports_each_projection_once(ledger, tmp_path: Path) -> None:
    """The README's "Many machines, one brain": a sync that merges the remote's change projects the skill again;
    it says so once."""
    b = _brain(tmp_path)
    body = tmp_path / "SKILL.md"
    body.write_text("---\nname: s\ndescription: d\n---\nRead the whole diff.\nRun the tests.\n")
    ledger(*b, "skill", "edit", "s", "--file", str(body), check=True)
    ledger(*b, "target", "add", str(tmp_path / "agents-skills"), "--name", "agents", check=True)
    ledger(*b, "sync", check=True)
    ledger(*b, "remote", "set", "--create", str(tmp_path / "shared.git"), check=True)
    ledger(*b, "sync", check=True)
    server = tmp_path / "server"
    ledger("clone", str(tmp_path / "shared.git"), str(server), check=True)
    s = ["--brain", str(server)]
    ledger(*s, "remote", "set", str(tmp_path / "shared.git"), check=True)
    ledger(*s, "skill", "patch", "s", "--old", "Read the whole diff.", "--new", "Read the diff twice.", check=True)
    ledger(*s, "sync", check=True)
    (tmp_path / "checklist.md").write_text("Check error paths.\n")
    ledger(
        *b, "skill", "write-file", "s", "references/checklist.md", "--from", str(tmp_path / "checklist.md"), check=True
    )
    last = ledger(*b, "sync", check=True).stdout.splitlines()
    assert last.count("projected s → agents") == 1, last
    assert any(ln.startswith("merged ") for ln in last), last  # the merge happened: the case the README shows
    assert "Read the diff twice." in (tmp_path / "agents-skills" / "s" / "SKILL.md").read_text()
