"""Import finds skills where runtimes keep them and says what it passed over (issue 19, items 4, 6, 9):
a repository root holding skills/, a project's .claude/skills/, a Hermes home's skills/, and category
files two roots disagree on, which are refused rather than one silently kept."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness.brains import make_brain, skill_md
from tests.harness.cli import run_in_process


def _skill(path: Path, name: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(skill_md(name, f"{name}.", f"{name}\n"))


def _import(tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    brain = tmp_path / "b"
    if not brain.exists():
        make_brain(brain, via="cli")
    proc = run_in_process("--brain", str(brain), "import", *args, "--json")
    return proc.returncode, json.loads(proc.stdout) if proc.returncode == 0 else {}, proc.stderr


def test_a_repository_root_holding_skills_imports_them_all_and_names_what_it_skipped(tmp_path: Path) -> None:
    root = tmp_path / "anthropic-skills"  # its shape: skills/<name>/, template/, spec/ (no SKILL.md)
    for name in ("pdf", "docx", "xlsx"):
        _skill(root / "skills" / name, name)
    _skill(root / "template", "template-skill")
    (root / "spec").mkdir()
    (root / "spec" / "README.md").write_text("the spec\n")
    code, report, err = _import(tmp_path, str(root), "--layout", "agentskills", "--dry-run")
    assert code == 0, err
    assert sorted(r["skill"] for r in report["skills"]) == ["docx", "pdf", "template", "xlsx"]
    assert any("skills" in line and "3 skill(s)" in line for line in report["found"])
    assert report["skipped"] == [f"{root / 'spec'}: no SKILL.md"]
    text = run_in_process("--brain", str(tmp_path / "b"), "import", str(root), "--dry-run", check=True).stdout
    assert "skipped" in text and "spec: no SKILL.md" in text


def test_a_project_root_and_a_hermes_home(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    _skill(proj / ".claude" / "skills" / "deploy", "deploy")
    (proj / "src").mkdir()
    code, report, err = _import(tmp_path, str(proj))
    assert code == 0 and [r["skill"] for r in report["skills"]] == ["deploy"], err
    home = tmp_path / ".hermes"
    _skill(home / "skills" / "research" / "arxiv", "arxiv")
    (home / "skills" / "research" / "DESCRIPTION.md").write_text("Research.\n")
    (home / "memories").mkdir()
    (home / "config.yaml").write_text("model: x\n")
    code, report, err = _import(tmp_path, str(home))
    assert code == 0 and report["layout"] == "hermes" and [r["skill"] for r in report["skills"]] == ["arxiv"], err
    assert report["skipped"] == [f"{home / 'memories'}: not a skills folder"]
    assert (tmp_path / "b" / ".git").exists()
    out = tmp_path / "out"
    run_in_process("--brain", str(tmp_path / "b"), "export", str(out), "--layout", "hermes", check=True)
    assert (out / "research" / "arxiv" / "SKILL.md").is_file() and (out / "research" / "DESCRIPTION.md").is_file()


def test_category_files_two_roots_disagree_on_are_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "skills", tmp_path / "optional-skills"
    _skill(a / "research" / "arxiv", "arxiv")
    _skill(b / "research" / "papers", "papers")
    (a / "research" / "DESCRIPTION.md").write_text("Research.\n")
    (b / "research" / "DESCRIPTION.md").write_text("Optional research.\n")
    code, _, err = _import(tmp_path, str(a), str(b), "--layout", "hermes")
    assert code == 1 and "research/DESCRIPTION.md" in err and "different content" in err
    assert not (tmp_path / "b" / "skills" / "arxiv").exists()  # nothing imported
    (b / "research" / "DESCRIPTION.md").write_text("Research.\n")  # the same bytes: one file, kept once
    code, report, err = _import(tmp_path, str(a), str(b), "--layout", "hermes")
    assert code == 0 and sorted(r["skill"] for r in report["skills"]) == ["arxiv", "papers"], err
