"""The lineage spec: its core (docs/lineage.md) and its extensions (docs/lineage/*.md), as files and as one text.

A test that asks whether the spec names something (a tamper class, a member) reads ``spec_text()``: the core and
every extension, since issue 53 moved each extension's text (and its tamper classes) to its own document.
"""

from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
CORE = DOCS / "lineage.md"
EXTENSIONS = {p.stem: p for p in sorted((DOCS / "lineage").glob("*.md"))}


def spec_text() -> str:
    """The core and every extension, in that order."""
    return "\n".join(p.read_text(encoding="utf-8") for p in (CORE, *EXTENSIONS.values()))
