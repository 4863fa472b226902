"""The fast path: the command lines answered before click loads, in one table (:mod:`.table`).

An agent calls ``ledger index`` at the start of every task, scripts call ``ledger hash`` and
``ledger status`` in loops, a runtime's hook calls ``ledger sync`` after every session, and every
agent session starts ``ledger mcp``.  Importing click and the brain's write engine takes longer
than answering most of these when nothing has changed, so :func:`ledger._entry.main` first asks
each row of :data:`.table.TABLE`; a row answers (and returns the exit status) or returns None
("not mine, or not sure"), and click then does the whole job.  Whatever a row answers, the click
path answers byte for byte (stdout, stderr, exit status: tests/cli/test_fastpath.py runs both).

Rows import only the standard library, blake3, :mod:`ledger._native` and the light modules that
read what the full path leaves behind (:mod:`ledger._paths`, the stat cache, the instant records,
the text of ``status``/``index``/``skill list``), each only when it takes a command line; the
``mcp`` row, once it has found the brain, starts the server (that is its whole answer).

Two user switches (docs/reference.md) turn rows off: ``LEDGER_PURE_PYTHON`` (every row but
``mcp``) and ``LEDGER_FULL_PATH`` (every row but ``hash``).
"""

from __future__ import annotations

import os
import sys

__all__ = ["head", "quiet", "say"]

_OWN_REFS = ("refs/heads/main", "refs/notes/ledger-chain")  # the refs a writer of this brain locks


def say(text: str) -> int:
    """Print an answer (``text`` and a newline) as click would; the exit status: 0, or 1 when the
    reader has gone (a closed pipe, as ``ledger index | head -1`` leaves it)."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return 1
    return 0


def head(root: str) -> str | None:
    """The brain's head commit in hex (``refs/heads/main``, loose or packed: :func:`ledger._paths.read_ref`),
    or None before the first snapshot or when the ref holds anything else."""
    from ledger._paths import read_ref

    text = read_ref(f"{root}/.git", "refs/heads/main")
    try:
        commit = bytes.fromhex(text).hex() if text is not None else ""
    except ValueError:
        return None
    return commit if len(commit) == 40 else None


def quiet(root: str) -> bool:
    """Whether the brain at ``root`` would open as it is: its ``skills`` is no link (opening refuses
    it), no killed write's journal waits to be rolled forward, and no writer holds a ref lock."""
    return not (
        os.path.islink(f"{root}/skills")
        or os.path.lexists(f"{root}/.ledger/journal.json")
        or any(os.path.lexists(f"{root}/.git/{ref}.lock") for ref in _OWN_REFS)
    )
