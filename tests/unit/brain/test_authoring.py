"""Spec-valid authoring (issue 19, item 8): what the ledger writes from a command passes the agentskills
spec, or breaks no rule the skill kept; --allow-invalid records it anyway. Import records as it is."""

from __future__ import annotations

import json
from pathlib import Path

from skills_ref.validator import validate as skills_ref_validate

from ledger.bundle.lint import FLOW_WARNING, introduced_errors, lint_skill
from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger


def _brain(tmp_path: Path) -> Path:
    return make_brain(tmp_path / "b", {"git-bisect": ("Find a bad commit", "Run git bisect.\n")}, via="cli")


def test_a_description_over_the_limit_is_refused_unless_allowed(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    long = "x" * 1025
    refused = run_ledger("--brain", str(brain), "skill", "create", "long", "--description", long)
    assert refused.returncode == 1 and "Description exceeds 1024 character limit (1025 chars)" in refused.stderr
    assert "--allow-invalid" in refused.stderr and not (brain / "skills" / "long").exists()
    run_ledger("--brain", str(brain), "skill", "create", "long", "--description", long, "--allow-invalid", check=True)
    assert skills_ref_validate(brain / "skills" / "long")  # recorded as asked, and lint still says why


def test_a_patch_that_empties_the_name_is_refused_unless_allowed(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    before = (brain / "skills" / "git-bisect" / "SKILL.md").read_bytes()
    args = ("--brain", str(brain), "skill", "patch", "git-bisect", "--old", "name: git-bisect", "--new", "name:")
    refused = run_ledger(*args)
    assert refused.returncode == 1 and "Field 'name' must be a non-empty string" in refused.stderr
    assert (brain / "skills" / "git-bisect" / "SKILL.md").read_bytes() == before
    run_ledger(*args, "--allow-invalid", check=True)
    assert b"name:\n" in (brain / "skills" / "git-bisect" / "SKILL.md").read_bytes()


def test_a_payload_that_breaks_frontmatter_is_refused_unless_allowed(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    text = "---\nname: git-bisect\ndescription: Find a bad commit\ncolour: red\n---\nRun git bisect.\n"
    payload = {"summary": "add a field", "operation_type": "revise", "upsert_files": {"git-bisect/SKILL.md": text}}
    (tmp_path / "p.json").write_text(json.dumps(payload))
    refused = run_ledger("--brain", str(brain), "skill", "apply", str(tmp_path / "p.json"))
    assert refused.returncode == 1 and "Unexpected fields in frontmatter: colour" in refused.stderr
    run_ledger("--brain", str(brain), "skill", "apply", str(tmp_path / "p.json"), "--allow-invalid", check=True)
    assert b"colour: red" in (brain / "skills" / "git-bisect" / "SKILL.md").read_bytes()


def test_a_skill_recorded_as_it_is_can_still_be_improved(tmp_path: Path) -> None:
    """A Hermes skill with extra frontmatter keeps them; an edit that breaks nothing new is accepted,
    one that adds a new departure is not."""
    src = tmp_path / "src" / "tools"
    src.mkdir(parents=True)
    (src / "SKILL.md").write_text("---\nname: tools\ndescription: Tools\nplatforms: [linux]\n---\nold\n")
    brain = tmp_path / "b"
    run_ledger("init", str(brain), check=True)
    run_ledger("--brain", str(brain), "import", str(tmp_path / "src"), check=True)  # recorded as it is
    run_ledger("--brain", str(brain), "skill", "patch", "tools", "--old", "old", "--new", "new", check=True)
    worse = run_ledger(
        "--brain", str(brain), "skill", "patch", "tools", "--old", "platforms:", "--new", "tags: [x]\nplatforms:"
    )
    assert worse.returncode == 1 and "Unexpected fields in frontmatter: tags" in worse.stderr


def test_flow_style_is_a_parser_limit_not_a_spec_error() -> None:
    text = "---\nname: x\ndescription: d\nmetadata:\n  tags: [a, b]\n---\nbody\n"
    verdict = lint_skill("x", text, {"SKILL.md": len(text)})
    assert verdict.valid and verdict.warnings == [FLOW_WARNING]
    assert introduced_errors("x", None, text) == []
