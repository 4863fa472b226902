"""Fault injection for the crash-consistency tests: inert unless ``LEDGER_CRASHPOINT`` names the point."""

from __future__ import annotations

import os


def crashpoint(name: str) -> None:
    """Exit at once (no cleanup, as a kill would) when the test asks to crash at ``name``."""
    if os.environ.get("LEDGER_CRASHPOINT") == name:
        os._exit(86)


def pausepoint(name: str) -> None:
    """Wait at ``name`` while a test changes the world under the process (``LEDGER_PAUSEPOINT``):
    write ``$LEDGER_PAUSE_FILE.ready``, then wait (at most 60 s) until the test removes
    ``$LEDGER_PAUSE_FILE``.  Once per process; inert unless both variables are set."""
    if os.environ.get("LEDGER_PAUSEPOINT") != name or not os.environ.get("LEDGER_PAUSE_FILE"):
        return
    import time

    gate = os.environ["LEDGER_PAUSE_FILE"]
    del os.environ["LEDGER_PAUSEPOINT"]  # once per process
    with open(gate, "w"), open(gate + ".ready", "w"):
        pass
    deadline = time.monotonic() + 60
    while os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)
