"""A skill's evals/ folder (evals/evals.json and its input files) through every writer of the ledger (issue 47):
the agent tools (MCP's skill_manage, which refused evals/ before), runtime sync from a Claude-layout and a
Hermes-layout target (which took it already: this test keeps it so); and 'ledger lint' on evals.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ledger.agent.tools import SkillTools
from ledger.brain import Brain
from tests.harness.cli import run_ledger

FAMILY = Path(__file__).parents[2] / "fixtures" / "eval-family"
EVALS = (FAMILY / "csv-sum/evals/evals.json").read_text()
CSV = (FAMILY / "csv-sum/evals/files/sales.csv").read_text()


def _files(brain_dir: Path, name: str) -> set[str]:
    with Brain.open(brain_dir) as b:
        return set(b.committed(name)[0])


def test_the_agent_tools_write_an_evals_folder(tmp_path: Path) -> None:
    run_ledger("init", str(tmp_path / "b"), check=True)
    run_ledger("--brain", str(tmp_path / "b"), "skill", "create", "csv-sum", "--description", "Sum a CSV.", check=True)
    with Brain.open(tmp_path / "b") as brain:
        tools = SkillTools(brain)
        for rel, text in (("evals/evals.json", EVALS), ("evals/files/sales.csv", CSV)):
            done = tools.call(
                "skill_manage", {"action": "write_file", "name": "csv-sum", "file_path": rel, "file_content": text}
            )
            assert done["success"], done
        outside = tools.call(
            "skill_manage", {"action": "write_file", "name": "csv-sum", "file_path": "notes/x.md", "file_content": "x"}
        )
        assert not outside["success"] and "evals/" in outside["hint"]
    assert {"evals/evals.json", "evals/files/sales.csv"} <= _files(tmp_path / "b", "csv-sum")


def test_sync_records_an_evals_folder_from_claude_and_hermes_targets(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    env = {"HOME": str(home), "HERMES_HOME": str(tmp_path / "hermes")}
    b = tmp_path / "b"
    run_ledger("init", str(b), check=True, env=env)
    for name in ("csv-sum", "word-count"):
        run_ledger("--brain", str(b), "skill", "create", name, "--description", f"Do {name}.", check=True, env=env)
    run_ledger("--brain", str(b), "target", "add", "claude", check=True, env=env)
    run_ledger("--brain", str(b), "target", "add", "hermes", check=True, env=env)
    run_ledger("--brain", str(b), "sync", check=True, env=env)
    claude = home / ".claude/skills/csv-sum"
    shutil.copytree(FAMILY / "csv-sum/evals", claude / "evals")
    hermes = tmp_path / "hermes/skills/word-count"
    assert (hermes / "SKILL.md").is_file()
    shutil.copytree(FAMILY / "word-count/evals", hermes / "evals")
    report = json.loads(run_ledger("--brain", str(b), "sync", "--json", check=True, env=env).stdout)
    recorded = sorted((r["skill"], r["action"]) for t in report["targets"] for r in t["recorded"])
    assert recorded == [("csv-sum", "updated"), ("word-count", "updated")], report
    assert {"evals/evals.json", "evals/files/sales.csv", "evals/files/units.csv"} <= _files(b, "csv-sum")
    assert {"evals/evals.json", "evals/files/fox.txt"} <= _files(b, "word-count")
    # and each target received the other's evals/ byte for byte
    run_ledger("--brain", str(b), "sync", check=True, env=env)
    hermes_csv = tmp_path / "hermes/skills/csv-sum/evals/evals.json"
    assert hermes_csv.read_bytes() == (claude / "evals/evals.json").read_bytes()
    assert (home / ".claude/skills/word-count/evals/files/fox.txt").read_bytes() == (
        FAMILY / "word-count/evals/files/fox.txt"
    ).read_bytes()


def test_lint_checks_evals_json_and_names_each_problem(tmp_path: Path) -> None:
    b = tmp_path / "b"
    run_ledger("init", str(b), check=True)
    run_ledger("--brain", str(b), "import", str(FAMILY), check=True)
    verdicts = json.loads(run_ledger("--brain", str(b), "skill", "lint", "--json", check=True).stdout)
    assert [v["errors"] for v in verdicts] == [[], [], []], verdicts
    bad = json.loads(EVALS)
    bad["evals"][0]["expectations"] = list(bad["evals"][0]["assertions"])  # skill-creator's name, and the guide's
    bad["evals"][0]["input_files"] = []
    bad["evals"][1]["id"] = 1
    bad["evals"][2]["files"] = ["evals/files/missing.csv", "../outside.csv", "scripts/solve"]
    (b / "skills/csv-sum/evals/evals.json").write_text(json.dumps(bad))
    proc = run_ledger("--brain", str(b), "skill", "lint", "csv-sum", "--json")
    (verdict,) = json.loads(proc.stdout)
    assert not verdict["valid"]
    errors = "\n".join(verdict["errors"])
    assert "both 'assertions' and 'expectations'" in errors
    assert "unknown key 'input_files'" in errors and "the guide calls it 'files'" in errors
    assert "id '1' is also evals[0]'s" in errors
    assert "'evals/files/missing.csv' is not a file of the skill" in errors
    assert "'../outside.csv' is not a path inside the skill folder" in errors
    assert "'scripts/solve' is not under evals/" in errors
    (b / "skills/csv-sum/evals/evals.json").write_text(EVALS.replace('"csv-sum"', '"word-count"'))
    (verdict,) = json.loads(run_ledger("--brain", str(b), "skill", "lint", "csv-sum", "--json").stdout)
    assert verdict["errors"] == ["evals/evals.json: 'skill_name' is 'word-count', not this skill's name 'csv-sum'"]
    (b / "skills/csv-sum/evals/evals.json").write_text("{not json")
    (verdict,) = json.loads(run_ledger("--brain", str(b), "skill", "lint", "csv-sum", "--json").stdout)
    assert any("evals/evals.json: not JSON" in e for e in verdict["errors"])
