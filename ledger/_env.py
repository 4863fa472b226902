"""Secrets taken out of the process environment, so that no child process inherits them.

The console script calls :func:`take_secrets` before anything else; every
subprocess the ledger starts (git, anvil) also gets :func:`child_env`, which
drops them again for library callers that never called it.
"""

from __future__ import annotations

import os

__all__ = ["SECRET_VARS", "child_env", "secret", "take_secrets"]

SECRET_VARS = ("LEDGER_KEY_PASSWORD", "LEDGER_KEY_PASSPHRASE")
_taken: dict[str, str] = {}


def take_secrets() -> None:
    """Move secret variables from ``os.environ`` into this process's memory only."""
    for name in SECRET_VARS:
        value = os.environ.pop(name, None)
        if value is not None:
            _taken[name] = value


def secret(name: str) -> str | None:
    return _taken.get(name, os.environ.get(name))


def child_env() -> dict[str, str]:
    """The environment for a child process: this one's, less every secret."""
    return {k: v for k, v in os.environ.items() if k not in SECRET_VARS}
