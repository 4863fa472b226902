"""`ledger report` end to end (issue 38, item 5): a real brain with outcomes, anchored on a real anvil,
rendered in real headless Chromium; and the same brain tampered with, shown as failing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.chain.keys import DEV_KEY_NAME
from ledger.exchange.anchoring import commit_pending
from tests.chromium import visit
from tests.conftest import run_ledger
from tests.test_page import GEOMETRY

pytestmark = [pytest.mark.browser, pytest.mark.chain]

SKILL = "---\nname: s\ndescription: The s skill\n---\n{body}\n"


def _rows(prefix: str, passed: int, failed: int) -> str:
    return "".join(json.dumps({"skill": "s", "task": f"{prefix}{i}", "success": i < passed}) + "\n"
                   for i in range(passed + failed))  # fmt: skip


def _page(path: Path, out: Path, *args: str) -> tuple[int, dict]:
    proc = run_ledger("--brain", str(path), "report", "-o", str(out), *args)
    assert "Traceback" not in proc.stderr and (out / "index.html").is_file(), proc.stderr
    seen = visit(out / "index.html", GEOMETRY)
    assert seen.problems() == [], seen.problems()  # no console error, no exception, no request off the page
    assert seen.requests == [(out / "index.html").resolve().as_uri()]
    return proc.returncode, seen.value


def test_a_real_brain_renders_checked_and_a_tampered_copy_renders_failing(chained, tmp_path: Path) -> None:
    brain = chained
    b = ("--brain", str(brain.root))
    run_ledger(*b, "skill", "create", "s", "--description", "The s skill", check=True)
    address = json.loads(run_ledger(*b, "keys", "generate", "verifier", "--json", check=True).stdout)["address"]
    run_ledger(*b, "keys", "trust", "verifier", address, check=True)
    run_ledger(*b, "outcome", "import", "-", "--actor", "verifier", input=_rows("a", 19, 1), check=True)
    (tmp_path / "v2.md").write_text(SKILL.format(body="worse"))
    run_ledger(*b, "skill", "edit", "s", "--file", str(tmp_path / "v2.md"), check=True)
    run_ledger(*b, "outcome", "import", "-", "--actor", "verifier", input=_rows("b", 2, 18), check=True)
    run_ledger(*b, "outcome", "record", "s", "--task", "self-1", "--success", check=True)  # the agent's own
    brain.snapshots.current = None
    commit_pending(brain, key=DEV_KEY_NAME)
    rpc = brain.config["chain"]["rpc"]

    code, v = _page(brain.root, tmp_path / "ok", "--rpc", rpc)
    assert code == 0 and v["verdict"]["word"] == "PASSING"
    assert v["nbad"] == 0 and v["perPlot"]["s"] == 3 and v["marks"] > 0  # v1 verified; v2 verified and self
    assert v["claimed"] == 0 and v["checked"] > 0
    html = (tmp_path / "ok" / "index.html").read_text()
    assert "ledger revert s --to 1" in html  # the regression, named with its undo

    run_ledger("clone", str(brain.root / ".git"), str(tmp_path / "tampered"), check=True)
    tampered = tmp_path / "tampered"
    _flip_a_failure(tampered / ".git")  # an outcome rewritten after it was signed: failure → success
    code, v = _page(tampered, tmp_path / "bad")
    assert code == 1 and v["verdict"]["cls"] == "verdict fail" and v["verdict"]["word"] == "FAILING"
    assert v["checked"] == 0 and v["claimed"] > 0 and v["nbad"] == 0


def _flip_a_failure(git_dir: Path) -> None:
    """Replace the tip by a commit whose evidence log has one failure turned into a success (same message)."""
    from tests.tamper import blob_at, edit_tree, git

    tip = git(git_dir, "rev-parse", "main").strip()
    chunk = blob_at(git_dir, tip, "evidence/00000000")
    assert b'"result":"failure"' in chunk
    tree = edit_tree(git_dir, git(git_dir, "rev-parse", f"{tip}^{{tree}}").strip(), "evidence/00000000",
                     chunk.replace(b'"result":"failure"', b'"result":"success"', 1))  # fmt: skip
    message = git(git_dir, "log", "-1", "--format=%B", tip)
    parent = git(git_dir, "rev-parse", f"{tip}^").strip()
    forged = git(git_dir, "commit-tree", tree, "-p", parent, input=message).strip()
    git(git_dir, "update-ref", "refs/heads/main", forged)
