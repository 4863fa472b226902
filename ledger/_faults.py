"""Fault injection for the crash-consistency tests: inert unless ``LEDGER_CRASHPOINT`` names the point."""

from __future__ import annotations

import os


def crashpoint(name: str) -> None:
    """Exit at once (no cleanup, as a kill would) when the test asks to crash at ``name``."""
    if os.environ.get("LEDGER_CRASHPOINT") == name:
        os._exit(86)
