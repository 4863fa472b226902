"""The ``ledger`` console script.

``ledger hash DIR [--json]`` is the command scripts and CI call in loops, and
on a 10,000-skill brain the native hasher takes less time than importing click
and ``ledger.bundle.merkle`` (~90 ms together).  So that exact form is answered here,
importing neither; every other command line, and every failure or tree the
native hasher hands back, goes to the click CLI (``ledger.cli``), which does
the work again and reports as usual.  Output is byte-identical either way
(tests/test_native.py).  So are ``status``, ``index`` and ``skill list`` from the stat cache
(:mod:`ledger._quick`), and a no-op ``sync`` from its instant records
(:mod:`ledger.exchange.instant`; tests/test_statcache.py, tests/test_sync_instant.py).
"""

from __future__ import annotations

import os
import sys


def _quick_hash(args: list[str]) -> str | None:
    """The root for ``hash DIR [--json]`` when the native hasher can answer alone, else ``None``."""
    if not args or args[0] != "hash" or os.environ.get("LEDGER_PURE_PYTHON"):
        return None
    brain = os.environ.get("LEDGER_BRAIN")
    if brain and os.path.exists(brain) and not os.path.isdir(brain):
        return None  # click rejects that --brain default before any command runs
    rest = args[1:]
    as_json = "--json" in rest
    operands = [a for a in rest if a != "--json"]
    if len(operands) != 1 or operands[0].startswith("-") or len(rest) - len(operands) > 1:
        return None
    try:
        from ledger import _native
    except ImportError:
        return None
    directory = operands[0].rstrip("/") or "/"
    if os.path.islink(directory):
        return None  # refused by the reference in every spelling ("lnk", "lnk/")
    # Same rule as ledger.cli.hash_cmd: a brain is hashed over its skills/.
    if os.path.isfile(os.path.join(directory, ".ledger", "config.json")):
        directory = os.path.join(directory, "skills")
        if not os.path.lexists(directory):
            return None  # a brain with no skills/ holds the empty bundle: the click path says so
    # While the GIL is released Python cannot raise KeyboardInterrupt, so let Ctrl-C end
    # the process at once, as it does for b3sum.  (_signal: the signal module's enum
    # wrappers would add 4 ms to a 120 ms command.)
    import _signal

    previous = _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    try:
        root = _native.hash_dir(directory)
    finally:
        _signal.signal(_signal.SIGINT, previous)
    if root is None:
        # The native hasher declined this tree; the click path must not ask it a second time.
        os.environ["LEDGER_PURE_PYTHON"] = "1"
        return None
    text = f"{_native.VERSION}:{root.hex()}"
    if as_json:
        import json

        return json.dumps({"root": text}, indent=2, ensure_ascii=False)
    return text


def main() -> None:
    from ledger._env import take_secrets

    take_secrets()  # before anything can start a child process
    out = _quick_hash(sys.argv[1:])
    if out is None and not os.environ.get("LEDGER_FULL_PATH"):
        if "sync" in sys.argv[1:4]:
            from ledger.exchange.instant import answer as in_step  # a no-op sync from its instant records

            out = in_step(sys.argv[1:])
        if out is None:
            from ledger._quick import answer  # status, index, skill list from the stat cache

            out = answer(sys.argv[1:])
    if out is None and sys.argv[-1:] == ["mcp"] and not os.environ.get("LEDGER_FULL_PATH"):
        from ledger.agent.mcp_server import quick_serve  # every agent session starts one: no click

        if quick_serve(sys.argv[1:-1]):
            return
    if out is None:
        from ledger.cli import main as cli

        cli(prog_name="ledger")
        return
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        sys.exit(1)
