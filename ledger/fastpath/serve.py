"""``ledger [--brain DIR] mcp``: the MCP server started without click, whose import is about
30 ms of every agent session's start (ADR 32).

The brain is found as the click command finds it (``--brain``, else ``$LEDGER_BRAIN``, else the
current directory or its nearest brain parent: :func:`ledger._paths.brain_root`).  With no brain
there, or one that does not open, nothing is read from stdin and nothing started: click then does
it again and reports as usual.
"""

from __future__ import annotations

__all__ = ["answer"]


def answer(brain: str | None, words: list[str]) -> int | None:
    from ledger._paths import brain_root

    try:
        root = brain_root(brain, search_up=brain is None)
    except OSError:  # the current directory is gone: click says so
        return None
    if root is None:
        return None
    from ledger.agent.mcp_server import quick_serve  # the server is this row's answer

    return 0 if quick_serve(root) else None
