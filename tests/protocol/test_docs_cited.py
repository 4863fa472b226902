"""Every document the code and the docs cite exists, and every section they cite is a heading of it (issue 53).

A citation is written so that a reader (and this test) finds its place without guessing:

- a path under docs/ ending in .md is a file of this repository; a name before ``§`` (``bundle-hash.md §4``,
  ``lineage/epochs.md §6``, ``docs/lineage.md §7``) is looked up under docs/, then at the repository's root,
  then beside the citing file; ``lineage §N`` is the core's (docs/lineage.md);
- ``<doc> §N.M`` is a heading numbered N.M in that document; a bare ``§N.M`` that continues a citation
  (after ``,``, ``;``, ``–``, ``and``, ``or``, ``to``) is in the same document;
- any other bare ``§N.M`` is the citing document's own section when it has numbered headings, else (code,
  ADRs) the lineage core's;
- ``RFC NNNN §N``, ``issue NN §N`` and a document that is not ours (``SKILL.md``) are not checked.

The spec is a core of at most 1,200 lines (docs/lineage.md) and extensions (docs/lineage/*.md), each with a
``Version:`` line and, last, its test vectors, whose files exist.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CORE = DOCS / "lineage.md"
EXTENSIONS = sorted((DOCS / "lineage").glob("*.md"))
NAMED = ("supply", "attestations", "epochs", "evidence", "evaluations")  # the issue's five, at least

PATH = re.compile(r"(?<![A-Za-z0-9_./-])docs/[A-Za-z0-9_./-]+\.md\b")
CITE = re.compile(r"((?:[A-Za-z0-9_./-]+\.md|lineage|RFC \d+|[Ii]ssue \d+)\s+)?§(\d+(?:\.\d+)*)")
CONTINUES = re.compile(r"\s*(?:[,;–-]|,? ?(?:and|or|to))\s*")
HEADING = re.compile(r"^#+ (\d+(?:\.\d+)*)\.? ", re.M)


def _sources() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "ledger", "scripts", "tests", "docs", "README.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    out = []
    for name in listed:
        path = ROOT / name
        if name.startswith("tests/vectors/") or path.suffix not in ("", ".py", ".md", ".sh", ".toml", ".txt"):
            continue  # the committed vectors are frozen data (their "about" keeps the numbering they were made under)
        if path.is_file():
            out.append(path)
    return out


@cache
def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


@cache
def _headings(path: Path) -> frozenset[str]:
    return frozenset(HEADING.findall(_text(path)))


def _resolve(name: str, citing: Path) -> Path | None:
    """The document a name before ``§`` means, or None when it is not one of ours."""
    if name == "lineage":
        return CORE
    for base in (DOCS, ROOT, citing.parent):
        if (base / name).is_file():
            return (base / name).resolve()
    return None


def _citations(path: Path) -> list[tuple[int, str, Path | None, str]]:
    """(line, text, document or None for one not ours, section) of every § citation in ``path``."""
    own = path.resolve() if path.suffix == ".md" and _headings(path) else CORE
    out = []
    for n, line in enumerate(_text(path).splitlines(), 1):
        before: tuple[Path | None, int] | None = None  # the document of the citation just before, and its end
        for m in CITE.finditer(line):
            name = m.group(1).strip() if m.group(1) else None
            if name and name.startswith(("RFC", "issue", "Issue")):
                doc = None
            elif name:
                doc = _resolve(name, path)
                if doc is None and not (name.startswith(("docs/", "lineage")) or name == "lineage"):
                    doc = None  # another project's document (SKILL.md, a spec's .md): not ours to check
                elif doc is None:
                    out.append((n, line.strip(), Path(name), m.group(2)))  # ours, and missing
                    before = (None, m.end())
                    continue
            elif before and CONTINUES.fullmatch(line[before[1] : m.start()]):
                doc = before[0]
            else:
                doc = own
            before = (doc, m.end())
            if doc is not None:
                out.append((n, line.strip(), doc, m.group(2)))
    return out


def test_every_cited_document_exists() -> None:
    missing = []
    for path in _sources():
        for n, line in enumerate(_text(path).splitlines(), 1):
            for m in PATH.finditer(line):
                if line[m.start() - 1 : m.start()] == '"' and line[m.end() : m.end() + 1] == '"':
                    continue  # a string that is a path in a test's own files, not a citation
                if not (ROOT / m.group(0)).is_file():
                    missing.append(f"{path.relative_to(ROOT)}:{n}: {m.group(0)}")
    assert not missing, "cited documents that do not exist:\n" + "\n".join(missing)


def test_every_cited_section_is_a_heading_of_its_document() -> None:
    wrong = []
    for path in _sources():
        for n, line, doc, section in _citations(path):
            if not doc.is_file():
                wrong.append(f"{path.relative_to(ROOT)}:{n}: {doc} does not exist: {line[:140]}")
            elif section not in _headings(doc):
                where = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc
                wrong.append(f"{path.relative_to(ROOT)}:{n}: {where} has no §{section}: {line[:140]}")
    assert not wrong, f"{len(wrong)} citations name no heading:\n" + "\n".join(wrong)


def test_the_core_is_at_most_1200_lines_and_has_its_version() -> None:
    lines = _text(CORE).splitlines()
    assert len(lines) <= 1200, f"docs/lineage.md is {len(lines)} lines"
    assert re.search(r"^Version: 1\.\d+\b", _text(CORE), re.M), "docs/lineage.md has no Version: line"
    for ext in EXTENSIONS:  # the core names every extension, so a reader finds them from it
        assert f"lineage/{ext.name}" in _text(CORE), ext.name
    assert re.search(r"^Version: \d+\b", _text(DOCS / "bundle-hash.md"), re.M)


def test_the_issue_s_extensions_exist() -> None:
    assert {p.stem for p in EXTENSIONS} >= set(NAMED)


@pytest.mark.parametrize("ext", EXTENSIONS, ids=lambda p: p.stem)
def test_each_extension_has_a_version_what_it_builds_on_and_its_vectors_last(ext: Path) -> None:
    text = _text(ext)
    assert text.startswith("# ") and text.splitlines()[0].endswith(": an extension of lineage v1"), ext.name
    assert re.search(r"^Version: 1\.\d+\b", text, re.M), f"{ext.name} has no Version: line"
    assert re.search(r"^Builds on: ", text, re.M), f"{ext.name} does not say which core sections it builds on"
    sections = re.split(r"^(?=## )", text, flags=re.M)
    last = sections[-1]
    assert re.match(r"## \d+\. .*[Tt]est vectors", last), f"{ext.name} does not end with its test vectors"
    named = re.findall(r"tests/vectors/[A-Za-z0-9_./{},-]+", last)
    assert named, f"{ext.name}'s test vectors name no file"
    for pattern in named:
        pattern = pattern.rstrip(".,;")
        braces = re.search(r"\{([^}]*)\}", pattern)
        paths = (
            [pattern[: braces.start()] + alt + pattern[braces.end() :] for alt in braces.group(1).split(",")]
            if braces
            else [pattern]
        )
        for p in paths:
            assert (ROOT / p).exists(), f"{ext.name} names {p}, which does not exist"
