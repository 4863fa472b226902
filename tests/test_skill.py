"""The skill format: names, frontmatter, support paths; what we write passes skills-ref."""

from __future__ import annotations

from pathlib import Path

import pytest
from skills_ref.validator import validate as skills_ref_validate

from ledger.errors import SkillError
from ledger.skill import (
    SkillDoc,
    check_name,
    check_support_path,
    ensure_frontmatter,
    parse_skill_md,
    slugify,
)


@pytest.mark.parametrize(
    ("raw", "slug"),
    [
        ("Oracle Manipulation", "oracle-manipulation"),
        ("  PDF -- tools!! ", "pdf-tools"),
        ("Café Crème", "cafe-creme"),
        ("a" * 80, "a" * 64),
        ("x" * 63 + " y", "x" * 63),
    ],
)
def test_slugify(raw: str, slug: str) -> None:
    assert slugify(raw) == slug
    assert check_name(slug) == slug


@pytest.mark.parametrize("bad", ["", "-a", "a-", "a--b", "A", "a_b", "a b", "../x", "a" * 65, "ümlaut", "a/b"])
def test_invalid_names(bad: str) -> None:
    with pytest.raises(SkillError, match="skill name"):
        check_name(bad)


@pytest.mark.parametrize(
    "bad",
    [
        "../x",
        "references/../../x",
        "/etc/passwd",
        "references\\x",
        "C:x",
        "SKILL.md",
        "other/x",
        "references",
        "references//x",
        "references/./x",
        "references/",
    ],
)
def test_invalid_support_paths(bad: str) -> None:
    with pytest.raises(SkillError, match="invalid path"):
        check_support_path(bad)


def test_valid_support_path() -> None:
    assert check_support_path("scripts/sub/run.sh") == ("scripts", "sub", "run.sh")


MALFORMED = {
    "no frontmatter": "just text\n",
    "unclosed": "---\nname: a\ndescription: b\n",
    "not a mapping": "---\n- a\n- b\n---\n",
    "yaml error": "---\nname: [a\n---\n",
    "missing description": "---\nname: a\n---\n",
    "empty description": "---\nname: a\ndescription: '  '\n---\n",
    "bool description": "---\nname: a\ndescription: yes\n---\n",
    "long description": "---\nname: a\ndescription: " + "d" * 1025 + "\n---\n",
    "long compatibility": "---\nname: a\ndescription: b\ncompatibility: " + "c" * 501 + "\n---\n",
    "unknown field": "---\nname: a\ndescription: b\nauthor: me\n---\n",
    "metadata not strings": "---\nname: a\ndescription: b\nmetadata:\n  n: 3\n---\n",
    "duplicate key": "---\nname: a\ndescription: b\ndescription: c\n---\n",
    "bad version": "---\nname: a\ndescription: b\nmetadata:\n  version: 'x'\n---\n",
    "wrong dir": "---\nname: b\ndescription: b\n---\n",
    "bom": "\ufeff---\nname: a\ndescription: b\n---\n",
    "oversized": "---\nname: a\ndescription: b\n---\n" + "x" * 100_001,
}


@pytest.mark.parametrize("text", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_frontmatter_refused(text: str) -> None:
    with pytest.raises(SkillError):
        parse_skill_md(text, dir_name="a")


def test_legacy_top_level_version_is_read_and_migrated() -> None:
    doc = parse_skill_md("---\nname: a\ndescription: b\nversion: 7\n---\nbody\n", dir_name="a")
    assert doc.version == 7
    assert "version: '7'" in doc.render() and "\nversion:" not in doc.render()


def test_render_round_trips_and_keeps_body_bytes() -> None:
    body = "line\r\nwith: colon\n---\nnot frontmatter\n"
    doc = SkillDoc(name="a", description="d: with colon", version=3, body=body, license="MIT", metadata={"author": "x"})
    again = parse_skill_md(doc.render(), dir_name="a")
    assert again == doc
    assert again.body == body


def test_bare_body_gets_default_frontmatter() -> None:
    text = ensure_frontmatter("# Fetch prices\n\nUse TWAP.\n", name="prices")
    doc = parse_skill_md(text, dir_name="prices")
    assert doc.description == "Fetch prices"
    assert doc.body == "# Fetch prices\n\nUse TWAP.\n"


def test_written_skills_pass_skills_ref(tmp_path: Path) -> None:
    doc = SkillDoc(
        name="demo",
        description="Multi\nline: description",
        version=12,
        body="b\n",
        compatibility="python>=3.11",
        allowed_tools="Bash Read",
        metadata={"k": "v"},
    )
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "SKILL.md").write_text(doc.render())
    assert skills_ref_validate(tmp_path / "demo") == []
