"""brain-ledger: an AI agent's skills as a content-addressed, git-backed, chain-anchored ledger.

The Python API is :class:`Brain` (``Brain.open(path)``): ``list``, ``view``, ``create``,
``upsert``, ``edit``, ``patch``, ``delete``, ``write_file``, ``remove_file``, ``history``,
``diff``, ``revert``, ``snapshot``, ``import_collection``; every mutation returns a
:class:`Receipt`, and ``with brain.acting("agent", task=…):`` attributes the snapshots
made inside.  Agent tools live in :mod:`ledger.agent`.  Names load lazily, so the
console script's fast path (``ledger hash``) imports nothing it does not use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing takes ~5 ms to import: more than the fast path's answers (ledger.fastpath)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Brain", "LedgerError", "Receipt", "find_brain"]


def __getattr__(name: str) -> Any:
    if name in ("Brain", "Receipt", "find_brain"):
        from ledger import brain

        return getattr(brain, name)
    if name == "LedgerError":
        from ledger.errors import LedgerError

        return LedgerError
    raise AttributeError(f"module 'ledger' has no attribute {name!r}")
