"""The text of ``status``, ``index`` and ``skill list``, in one place.

Both the click commands and the quick path (:mod:`ledger.fastpath.reads`) print through these,
so the two cannot drift apart.  No imports: the quick path loads this module and
little else.
"""

from __future__ import annotations

__all__ = ["index_line", "list_line", "status_doc", "status_lines"]


def index_line(name: str, description: str) -> str:
    """One Level-0 index line: ``▸ name: description`` with the description on one line."""
    return f"▸ {name}: {' '.join(description.split())}\n"


def list_line(name: str, version: int, description: str, state: str | None = None) -> str:
    """One ``skill list`` line; ``state``: the supply record withholds the skill (``[quarantined]``)."""
    return f"{name:32} v{version:<4} {f'[{state}] ' if state else ''}{description}\n"


def status_doc(head: str, root: str, tree_root: str, changes: dict[str, str], pending: int | None) -> dict[str, object]:
    """``status --json``."""
    return {
        "head": head,
        "root": root,
        "tree_root": tree_root,
        "clean": not changes,
        "changes": changes,
        "pending_chain": pending,
    }


def status_lines(head: str, root: str, tree_root: str, changes: dict[str, str], pending: int | None) -> list[str]:
    """``status`` as text, a line each (without newlines)."""
    lines = [f"head   {head}", f"root   {root}"]
    if pending is not None:
        lines.append(f"chain  {pending} snapshot(s) without a local receipt ('ledger chain status' asks the chain)")
    if not changes:
        return [*lines, "working tree clean"]
    lines += [f"tree   {tree_root}", "changes not in a snapshot (record them with 'ledger snapshot'):"]
    return lines + [f"  {what:9} skills/{path}" for path, what in changes.items()]
