"""Skills on disk read for the scanner: ``ledger supply scan`` and ``scripts/scan-corpus`` read folders alike.

Symbolic links are reported with their targets (``os.readlink``), never followed; a nested skill
(a folder of its own with a SKILL.md) is left to that skill; ``.git`` trees are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["load", "skill_dirs"]


def skill_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` (``root`` included) that holds a SKILL.md, ``.git`` trees left out."""
    out = [Path(d) for d, _dirs, names in os.walk(root) if "SKILL.md" in names and ".git" not in Path(d).parts]
    return sorted(out)


def load(skill: Path) -> tuple[dict[str, tuple[bytes, bool]], dict[str, str | None]]:
    """The scanner's input for one skill: its files (a nested skill's left to that skill), its symlinks
    mapped to their targets as written in the link (``None`` when the target cannot be read)."""
    files: dict[str, tuple[bytes, bool]] = {}
    links: dict[str, str | None] = {}
    for d, dirs, names in os.walk(skill):
        here = Path(d)
        dirs[:] = sorted(x for x in dirs if x != ".git" and not (here / x / "SKILL.md").is_file())
        for name in sorted(names + [x for x in dirs if (here / x).is_symlink()]):
            path = here / name
            rel = path.relative_to(skill).as_posix()
            if path.is_symlink():
                try:
                    links[rel] = os.readlink(path)
                except OSError:
                    links[rel] = None
            elif path.is_file():
                files[rel] = (path.read_bytes(), os.access(path, os.X_OK))
    return files, links
