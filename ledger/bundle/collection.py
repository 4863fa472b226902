"""A collection of skills as found in a folder: each skill's files, or why it cannot be recorded,
and the category files beside them.  What :mod:`ledger.exchange.layouts` reads from a
runtime's folder and :class:`ledger.write.importer.Importer` records as one snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger.errors import LedgerError

__all__ = ["Collection", "Found"]


@dataclass
class Found:
    """One skill in a source tree, read whole (or the reason it cannot be)."""

    key: str
    folder: str  # its folder (or file stem) as found, for lint's name check
    source: str
    files: dict[str, tuple[bytes, bool]] = field(default_factory=dict)  # rel → (bytes, executable)
    category: str | None = None  # hermes: "category/sub"
    notes: list[str] = field(default_factory=list)
    refused: str | None = None
    hint: str | None = None


@dataclass
class Collection:
    layout: str
    skills: list[Found]
    categories: dict[str, bytes] = field(default_factory=dict)  # category files: "cat/sub/DESCRIPTION.md" → bytes
    notes: list[str] = field(default_factory=list)  # where skills were looked for, beyond the source itself
    skipped: list[str] = field(default_factory=list)  # folders that hold no skill, so a user sees what was passed

    def add(self, other: Collection, where: str) -> None:
        """Merge ``other`` in; a category file two sources hold with different bytes is refused, never
        one silently kept (issue 19)."""
        for rel, data in other.categories.items():
            if rel in self.categories and self.categories[rel] != data:
                raise LedgerError(
                    f"two sources hold category file {rel} with different content ({where} and an earlier source)",
                    hint="make them agree, or import the sources one at a time (the later import replaces the file)",
                )
            self.categories[rel] = data
        self.skills.extend(other.skills)
        self.notes.extend(other.notes)
        self.skipped.extend(other.skipped)


# Where runtimes keep skills inside a project or a home: `ledger import proj/` and `ledger import ~/.hermes`
# look there too (Claude Code's .claude/skills/, the shared .agents/skills/, Codex, and Hermes's skills/).
