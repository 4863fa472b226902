"""The ``ledger`` console script.

A few command lines are answered before click loads, from what the full path left behind:
``hash``, a no-op ``sync``, a clean ``status``, ``index`` and ``skill list``, and ``mcp``
(:mod:`ledger.fastpath`, whose :data:`~ledger.fastpath.table.TABLE` lists them).  Each row of
the table answers, returning the exit status, or returns None, and then the click CLI
(:mod:`ledger.cli`) does the whole job.  Output is byte-identical either way
(tests/cli/test_fastpath.py runs both).
"""

from __future__ import annotations

import sys


def main() -> None:
    from ledger._env import take_secrets

    take_secrets()  # before anything can start a child process
    from ledger.fastpath.table import TABLE, command_line

    line = command_line(sys.argv[1:])
    for row in TABLE if line is not None else ():
        status = row.answer(*line)
        if status is not None:
            if status:
                sys.exit(status)
            return
    from ledger.cli import main as cli

    cli(prog_name="ledger")
