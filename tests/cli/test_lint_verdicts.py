"""Lint keeps spec errors apart from extra fields: a Hermes skill is "valid (extra fields)", not INVALID.

Real brains and the real CLI; ``strict_valid`` is checked against the reference validator's own
command line (``agentskills validate``, from PyPI ``skills-ref``), run on the brain's copy of each skill.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.brain import Brain
from ledger.bundle.lint import FLOW_WARNING, introduced_errors, lint_skill
from tests.harness.cli import run_in_process

SKILLS_REF = str(Path(sys.executable).with_name("agentskills"))  # skills-ref's console script

HERMESY = (
    "---\nname: hermesy\ndescription: A Hermes skill.\nversion: 1.0.0\nauthor: x\nplatforms: [linux, macos]\n---\nDo.\n"
)


def _md(name: str, fields: str) -> str:
    return f"---\nname: {name}\n{fields}---\nBody.\n"


# name: (SKILL.md, valid, strict_valid). Block style only, so skills-ref's strictyaml reads each to the
# end and its verdict is comparable (it stops at flow style, a parser limit; see ADR 19)
CASES = {
    "plain": (_md("plain", "description: Plain.\n"), True, True),
    "hermes": (_md("hermes", "description: H.\nversion: 1\nauthor: x\nplatforms:\n- linux\n"), True, False),
    "unknown-key": (_md("unknown-key", "description: U.\nfoo: bar\n"), True, False),
    "no-description": (_md("no-description", ""), False, False),
    "wrong-name": (_md("other", "description: W.\nauthor: x\n"), False, False),
    "long-compat": (_md("long-compat", "description: L.\ncompatibility: " + "c" * 501 + "\n"), False, False),
    "metadata-ok": (_md("metadata-ok", "description: M.\nlicense: MIT\nmetadata:\n  author: x\n"), True, True),
}


def _import(brain: Brain, tmp_path: Path, skills: dict[str, str]) -> None:
    src = tmp_path / "src"
    for folder, text in skills.items():
        (src / folder).mkdir(parents=True)
        (src / folder / "SKILL.md").write_text(text)
    run_in_process("--brain", str(brain.root), "import", str(src), check=True)


def _lint(brain: Brain, *args: str) -> subprocess.CompletedProcess[str]:
    return run_in_process("--brain", str(brain.root), "skill", "lint", *args)


def test_a_hermes_skill_is_valid_with_extra_fields_and_strict_refuses_it(brain: Brain, tmp_path: Path) -> None:
    _import(brain, tmp_path, {"hermesy": HERMESY, "plain": CASES["plain"][0]})
    out = _lint(brain)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "valid (extra fields) hermesy" in lines and "valid plain" in lines
    for key in ("author", "platforms", "version"):
        assert f"        warning: extra field '{key}' (not in the agentskills spec; Hermes reads it)" in lines
    assert f"        warning: {FLOW_WARNING}" in lines  # skills-ref's parser limit, reported too
    assert "INVALID" not in out.stdout and "spec:" not in out.stdout

    strict = _lint(brain, "--strict")
    assert strict.returncode == 1
    assert "INVALID hermesy" in strict.stdout and "valid plain" in strict.stdout
    assert "        spec:    extra field 'author' (not in the agentskills spec; Hermes reads it)" in strict.stdout
    assert _lint(brain, "--strict", "plain").returncode == 0

    (row,) = json.loads(_lint(brain, "hermesy", "--json").stdout)
    assert row["valid"] and not row["strict_valid"] and row["errors"] == []
    assert [e.split("'")[1] for e in row["extra"]] == ["author", "platforms", "version"]
    assert row["warnings"] == [FLOW_WARNING]
    assert _lint(brain, "hermesy", "--json", "--strict").returncode == 1


def test_a_real_spec_error_is_invalid_and_exits_1(brain: Brain, tmp_path: Path) -> None:
    _import(brain, tmp_path, {"no-description": CASES["no-description"][0], "hermesy": HERMESY})
    out = _lint(brain)
    assert out.returncode == 1
    assert "INVALID no-description" in out.stdout and "valid (extra fields) hermesy" in out.stdout
    assert "        spec:    Missing required field in frontmatter: description" in out.stdout
    assert _lint(brain, "hermesy").returncode == 0  # one skill's verdict, its own exit code


def test_strict_valid_is_what_skills_ref_says(brain: Brain, tmp_path: Path) -> None:
    _import(brain, tmp_path, {name: text for name, (text, _, _) in CASES.items()})
    rows = {r["skill"]: r for r in json.loads(_lint(brain, "--json").stdout)}
    assert set(rows) == set(CASES)
    for name, (_, valid, strict_valid) in CASES.items():
        theirs = subprocess.run(
            [SKILLS_REF, "validate", str(brain.root / "skills" / name)], capture_output=True, text=True, timeout=60
        )
        row = rows[name]
        assert (row["valid"], row["strict_valid"]) == (valid, strict_valid), row
        assert row["strict_valid"] == (theirs.returncode == 0), (row, theirs.stdout, theirs.stderr)
        assert row["valid"] == (row["errors"] == []) and row["strict_valid"] == (valid and not row["extra"])
    assert rows["unknown-key"]["extra"] == ["extra field 'foo' (not in the agentskills spec)"]


@pytest.mark.parametrize(
    ("old", "new", "refused"),
    [
        (
            None,
            HERMESY,
            "Unexpected fields in frontmatter: author, platforms, version",
        ),  # a new skill: every field counts
        (HERMESY, HERMESY.replace("Do.", "Do it."), None),  # fields the skill came with are kept
        (HERMESY, HERMESY.replace("author: x", "author: x\ntags:\n  - t"), "Unexpected fields in frontmatter: tags"),
        (
            HERMESY,
            HERMESY.replace("description: A Hermes skill.\n", ""),
            "Missing required field in frontmatter: description",
        ),
    ],
)
def test_what_the_ledger_authors_still_may_not_add_a_field(old: str | None, new: str, refused: str | None) -> None:
    assert lint_skill("hermesy", new, {}).valid == ("description" in new)
    assert introduced_errors("hermesy", old, new) == ([refused] if refused else [])
