"""The ``skills`` CLI's folder hash (``computedHash`` of ``skills-lock.json``), bit for bit.

Read from vercel-labs/skills at d050d784 (``src/local-lock.ts``, ``computeSkillFolderHash``): SHA-256
over, for every regular file of the folder in the order of ``relativePath.localeCompare``, the UTF-8
relative path (``/``-separated) then the raw bytes, with no separator; directories named ``.git`` or
``node_modules`` are skipped; lowercase hex, no prefix.  ``localeCompare`` is ICU's root collation:
:func:`_collation_key` reproduces it for ASCII exactly and approximates it beyond (NFD base letters, then
accents, then case).  Here, below the store, so that the audit recomputes a supply entry's ``sha256``
(docs/lineage/supply.md §1) with the same function the installer and the lock file use.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Mapping

__all__ = ["folder_sha256"]

_SKIPPED_DIRS = frozenset({".git", "node_modules"})
# ICU root collation of printable ASCII punctuation and symbols (alternate=non-ignorable), after
# whitespace and before digits; Node 20: [...ascii].sort((a, b) => a.localeCompare(b)).
_PUNCT = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
_PRIMARY = {" ": 1, "\t": 1, "\n": 1, "\r": 1, "\v": 1, "\f": 1} | {c: 10 + i for i, c in enumerate(_PUNCT)}


def _collation_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """ICU root collation key of ``text``: primary weights, then accents, then case (lower first)."""
    primary: list[int] = []
    accents: list[int] = []
    case: list[int] = []
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch):
            accents.append(ord(ch))
            continue
        if ch in _PRIMARY:
            weight = _PRIMARY[ch]
        elif ch.isdigit() and ch.isascii():
            weight = 100 + int(ch)
        elif unicodedata.category(ch).startswith("C"):
            continue  # control and format characters are ignorable in ICU
        else:
            weight = 1000 + ord(ch.lower())
        primary.append(weight)
        accents.append(0)
        case.append(1 if ch != ch.lower() else 0)
    return tuple(primary), tuple(accents), tuple(case)


def folder_sha256(files: Mapping[str, tuple[bytes, bool]]) -> str:
    """``computedHash`` of a skill folder given as {relative path: (bytes, executable)}: what
    ``npx skills`` records, so a lock written here verifies there and the reverse.

    The executable bit is not hashed (the skills CLI reads content only)."""
    kept = [p for p in files if not _SKIPPED_DIRS.intersection(p.split("/")[:-1])]
    digest = hashlib.sha256()
    # equal keys: code-point order (lineage/supply.md §3)
    for path in sorted(kept, key=lambda p: (_collation_key(p), p)):
        digest.update(path.encode("utf-8"))
        digest.update(files[path][0])
    return digest.hexdigest()
