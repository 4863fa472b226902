"""The one table of the command lines answered before click (see :mod:`ledger.fastpath`).

A command line is read once, here, as click reads it: an optional leading ``--brain DIR`` or
``--brain=DIR`` (else ``$LEDGER_BRAIN``; an empty one is unset, as click takes it), then the
command's words.  Each :class:`Row` takes the lines whose words it knows and hands them to its
handler, unless a user switch turns it off; the handler returns the exit status once it has
answered, or None, and then click answers.  :func:`ledger._entry.main` asks the rows in order.

=========  ==============================================  =====================  =========================
row        command lines (after ``[--brain DIR]``)          answered from          turned off by
=========  ==============================================  =====================  =========================
hash       ``hash DIR [--json]``                            the native hasher      LEDGER_PURE_PYTHON
sync       ``sync [NAME…] [--no-remote] [--json]``          the instant records    both switches
reads      ``status [--json]``, ``index``, ``skill list``   the stat cache         both switches
mcp        ``mcp``                                          (serves the brain)     LEDGER_FULL_PATH
=========  ==============================================  =====================  =========================
"""

from __future__ import annotations

import os

from ledger.fastpath import hashing, reads, serve, sync

TYPE_CHECKING = False  # typing costs the fast path ~5 ms
if TYPE_CHECKING:
    from collections.abc import Callable

    Handler = Callable[[str | None, list[str]], int | None]

__all__ = ["FULL", "PURE", "TABLE", "Row", "command_line"]

PURE, FULL = "LEDGER_PURE_PYTHON", "LEDGER_FULL_PATH"  # the user's switches (docs/reference.md)


class Row:
    """One kind of command line answered before click: ``takes(words)`` says which, ``handler``
    answers it (``handler(brain, words)``: the exit status, or None), ``off`` names the variables
    that, set to anything but the empty string, send it to click."""

    __slots__ = ("handler", "name", "off", "takes")

    def __init__(self, name: str, takes: Callable[[list[str]], bool], handler: Handler, off: tuple[str, ...]) -> None:
        self.name, self.takes, self.handler, self.off = name, takes, handler, off

    def answer(self, brain: str | None, words: list[str]) -> int | None:
        if not words or not self.takes(words) or any(os.environ.get(v) for v in self.off):
            return None
        return self.handler(brain, words)


TABLE: tuple[Row, ...] = (
    Row("hash", lambda w: w[0] == "hash", hashing.answer, (PURE,)),
    Row("sync", lambda w: w[0] == "sync", sync.answer, (PURE, FULL)),
    Row("reads", reads.takes, reads.answer, (PURE, FULL)),
    Row("mcp", lambda w: w == ["mcp"], serve.answer, (FULL,)),
)


def command_line(args: list[str]) -> tuple[str | None, list[str]] | None:
    """``(brain, words)`` of ``ledger ARGS``: the brain named (None: found from the current
    directory up), and the words after it; None for a line no row may answer (``--brain ""``)."""
    if args[:1] == ["--brain"] and len(args) > 1:
        brain: str | None = args[1]
        words = args[2:]
    elif args[:1] and args[0].startswith("--brain="):
        brain, words = args[0][len("--brain=") :], args[1:]
    else:
        return os.environ.get("LEDGER_BRAIN") or None, args
    return (brain, words) if brain else None  # an empty --brain: click's reading of it decides
