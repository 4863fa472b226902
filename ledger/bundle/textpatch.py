"""Find-and-replace on a skill file's text, with the diagnostics an agent needs to retry.

One function serves the CLI, the API and the agent tools, so a patch means the same
thing everywhere. It runs on text read under the writer lock (see ``Brain.patch``).
"""

from __future__ import annotations

import difflib
from typing import Any

from ledger.errors import PatchError

__all__ = ["replace", "shown"]


def replace(text: str, old: str, new: str, *, where: str, replace_all: bool = False) -> str:
    """``text`` with ``old`` replaced by ``new``: exactly one match, or every match with ``replace_all``.

    A refusal carries ``closest`` (no match) or ``matches`` (several) in its detail.
    """
    if not old:
        raise PatchError("the text to replace is empty", hint="pass the exact text to replace")
    first = text.find(old)
    if first < 0:
        closest = _closest(text, old)
        raise PatchError(
            f"patch text not found in {where}",
            hint="copy the text exactly, including whitespace; "
            + ("the closest lines are listed" if closest else "no line of it resembles the text"),
            closest=closest,
        )
    if replace_all:
        return text.replace(old, new)
    if text.find(old, first + 1) >= 0:
        count = text.count(old)
        raise PatchError(
            f"patch text matches {max(count, 2)} times in {where}; it must match exactly once",
            hint="include more surrounding context to make it unique, or replace every match (--replace-all on the "
            "command line, replace_all in the agent tool)",
            matches=_places(text, old),
        )
    return text[:first] + new + text[first + len(old) :]


def shown(detail: dict[str, Any]) -> list[str]:
    """A refusal's ``closest`` or ``matches`` detail as lines for a person (the CLI prints what the agent
    tools return as data): ``line N: TEXT``."""
    rows = detail.get("closest") or detail.get("matches") or []
    return [f"  line {r['line']}: {r.get('text', r.get('context', ''))}" for r in rows]


def _closest(text: str, needle: str) -> list[dict[str, Any]]:
    """The lines most like the first line of what was not found, with their line numbers."""
    lines = text.splitlines()
    probe = next((ln for ln in needle.splitlines() if ln.strip()), needle)
    scored = sorted(((difflib.SequenceMatcher(None, probe, ln).ratio(), i) for i, ln in enumerate(lines)), reverse=True)
    return [{"line": i + 1, "text": lines[i], "similarity": round(r, 2)} for r, i in scored[:3] if r > 0.3]


def _places(text: str, needle: str) -> list[dict[str, Any]]:
    out, start = [], 0
    lines = text.splitlines()
    while (at := text.find(needle, start)) >= 0 and len(out) < 20:
        line = text.count("\n", 0, at) + 1
        out.append({"line": line, "context": lines[line - 1] if line <= len(lines) else ""})
        start = at + 1
    return out
