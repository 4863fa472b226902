"""The skill format: names, frontmatter, support paths; what we write passes skills-ref."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skills_ref.validator import validate as skills_ref_validate

from ledger.bundle.frontmatter import set_counter
from ledger.bundle.skill import (
    SkillDoc,
    check_name,
    check_support_path,
    parse_skill_md,
    slugify,
)
from ledger.errors import SkillError


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
        "references//x",
        "references/./x",
        "references/",
        "assets/.git/config",
        "a/GIT~1/x",
        "con.txt",
    ],
)
def test_invalid_support_paths(bad: str) -> None:
    with pytest.raises(SkillError, match="invalid path"):
        check_support_path(bad)


@pytest.mark.parametrize(
    "good",
    ["scripts/sub/run.sh", "LICENSE.txt", "forms.md", "reference/api.md", "themes/dark/font.ttf", "examples/a/b/c.pdf"],
)
def test_any_file_or_folder_is_a_valid_support_path(good: str) -> None:
    assert check_support_path(good) == tuple(good.split("/"))


def test_skill_md_is_not_a_support_path() -> None:
    with pytest.raises(SkillError, match="the skill itself"):
        check_support_path("SKILL.md")


REFUSED = {
    "no frontmatter": "just text\n",
    "unclosed": "---\nname: a\ndescription: b\n",
    "not a mapping": "---\n- a\n- b\n---\n",
    "yaml error": "---\nname: [a\n---\n",
    "duplicate key": "---\nname: a\ndescription: b\ndescription: c\n---\n",
    "metadata a list": "---\nname: a\ndescription: b\nmetadata: [1, 2]\n---\n",
    "bad ledger-version": "---\nname: a\nmetadata:\n  version: '1.0'\n  ledger-version: x\n---\n",
    "bom": "\ufeff---\nname: a\ndescription: b\n---\n",
    "oversized": "---\nname: a\ndescription: b\n---\n" + "x" * 100_001,
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_ledger_cannot_keep_a_version_in_is_refused(text: str) -> None:
    with pytest.raises(SkillError):
        parse_skill_md(text, limit=100_000)


KEPT = {
    "missing description": "---\nname: a\n---\n",
    "bool description": "---\nname: a\ndescription: yes\n---\n",
    "long description": "---\nname: a\ndescription: " + "d" * 1025 + "\n---\n",
    "unknown fields": "---\nname: a\ndescription: b\nauthor: me\nplatforms: [linux, macos]\n---\n",
    "nested metadata": "---\nname: a\ndescription: b\nmetadata:\n  hermes:\n    tags: [x]\n  n: 3\n---\n",
    "semver metadata.version": "---\nname: a\ndescription: b\nmetadata:\n  version: '1.0'\n---\n",
    "name differs from folder": "---\nname: b\ndescription: b\n---\n",
}


@pytest.mark.parametrize("text", KEPT.values(), ids=KEPT.keys())
def test_spec_violations_are_kept_as_they_are(text: str) -> None:
    doc = parse_skill_md(text)
    assert doc.text == text and doc.version == 0
    again = parse_skill_md(doc.with_counter(4))
    assert again.version == 4


def test_top_level_version_is_the_authors_and_never_touched() -> None:
    text = "---\nname: a\ndescription: b\nversion: 2.3.1\n---\nbody\n"
    doc = parse_skill_md(text)
    assert doc.version == 0 and doc.declared_version == "2.3.1"
    out = doc.with_counter(7)
    assert "version: 2.3.1\n" in out and parse_skill_md(out).version == 7


_CRLF_BEFORE = (
    "---\r\nname: a  # the key\r\ndescription: 'd'\r\nmetadata:\r\n  version: '3'   # ledger\r\n  x: y\r\n---\r\nb\r\n"
)
EDITS = {
    # name: (before, after) — the counter is the only change
    "quoted, CRLF, comments": (_CRLF_BEFORE, _CRLF_BEFORE.replace("'3'", "'4'")),
    "plain int": (
        "---\nname: a\nmetadata: {x: 1, version: 9}\n---\n",
        "---\nname: a\nmetadata: {x: 1, version: 4}\n---\n",
    ),
    "double quoted": ('---\nmetadata:\n  version: "3"\n---\n', '---\nmetadata:\n  version: "4"\n---\n'),
    "no metadata": (
        "---\nname: a\ntags: [x, y]\n---\nbody",
        "---\nname: a\ntags: [x, y]\nmetadata:\n  version: '4'\n---\nbody",
    ),
    "block metadata without version": (
        "---\nname: a\nmetadata:\n    author: me\n    hermes:\n      k: v\n---\n",
        "---\nname: a\nmetadata:\n    version: '4'\n    author: me\n    hermes:\n      k: v\n---\n",
    ),
    "flow metadata without version": ("---\nmetadata: {a: b}\n---\n", "---\nmetadata: {version: '4', a: b}\n---\n"),
    "empty flow metadata": ("---\nmetadata: {}\n---\n", "---\nmetadata: {version: '4'}\n---\n"),
    "null metadata": (
        "---\nname: a\nmetadata:\ndescription: d\n---\n",
        "---\nname: a\nmetadata:\n  version: '4'\ndescription: d\n---\n",
    ),
    "semver in metadata.version": (
        "---\nmetadata:\n  version: 1.2.0\n---\n",
        "---\nmetadata:\n  ledger-version: '4'\n  version: 1.2.0\n---\n",
    ),
    "empty frontmatter": ("---\n---\nbody\n", "---\nmetadata:\n  version: '4'\n---\nbody\n"),
}


@pytest.mark.parametrize(("before", "after"), EDITS.values(), ids=EDITS.keys())
def test_counter_is_edited_in_place_and_nothing_else_changes(before: str, after: str) -> None:
    assert set_counter(before, 4) == after
    assert set_counter(after, 4) == after
    # The same edit from a parsed SkillDoc, which hands set_counter what its parse found.
    doc = parse_skill_md(before)
    assert doc.counter is not None and doc.with_counter(4) == after


def test_render_writes_what_parse_reads() -> None:
    body = "line\r\nwith: colon\n---\nnot frontmatter\n"
    doc = SkillDoc(name="a", description="d: with colon", version=3, body=body, license="MIT", metadata={"author": "x"})
    again = parse_skill_md(doc.render())
    got = (again.name, again.description, again.version, again.license, again.body)
    assert got == ("a", doc.description, 3, "MIT", body)


def test_unterminated_frontmatter_is_named_as_such() -> None:
    with pytest.raises(SkillError, match="never closed"):
        parse_skill_md("---\nname: a\ndescription: d\nbody without a closing line\n")


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


@settings(max_examples=300, deadline=None)
@given(
    depth=st.integers(min_value=1, max_value=40),
    styles=st.lists(st.sampled_from(["block-map", "block-seq", "flow-map", "flow-seq"]), min_size=40, max_size=40),
)
def test_the_depth_guard_fast_path_never_admits_what_the_event_scan_refuses(depth: int, styles: list[str]) -> None:
    """``bounded`` skips the event scan when the text has too few collection indicators to nest
    past the limit; nested collections of every style, as deep as 40, are judged as the scan would."""
    from ledger.bundle.frontmatter import MAX_YAML_DEPTH, bounded

    value, flowable = "leaf", True
    for level in range(depth - 1):  # the mapping at the top is one level
        style = styles[level]
        if style.startswith("flow") and not flowable:
            style = "block-map"  # a flow collection holds only flow content
        flowable = style.startswith("flow")
        if style == "flow-map":
            value = f"{{k: {value}}}"
        elif style == "flow-seq":
            value = f"[{value}]"
        elif style == "block-seq":
            value = "\n".join(("- " if i == 0 else "  ") + line for i, line in enumerate(value.splitlines()))
        else:
            value = "k:\n" + "\n".join("  " + line for line in value.splitlines())
    source = "top:\n" + "\n".join("  " + line for line in value.splitlines())
    import yaml

    events = list(yaml.parse(source))
    deepest = level = 0
    for event in events:
        level += isinstance(event, yaml.CollectionStartEvent) - isinstance(event, yaml.CollectionEndEvent)
        deepest = max(deepest, level)
    if deepest > MAX_YAML_DEPTH:
        with pytest.raises(SkillError, match="nested deeper"):
            bounded(source)
    else:
        bounded(source)
