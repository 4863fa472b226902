"""The brain: a narrow facade (:class:`Brain`) over its parts: it shows its store (read-only) and
root; the head, the lock, the writer, the reads and the catalog stay behind it, and services
write through ``brain.writing()`` (ADR 72).

``from ledger.brain import Brain`` is the public way in; the parts' modules are the brain's own.
The names load on first use, so a module that needs only the brain's reports
(:mod:`ledger.brain.reports`, named by every command for ``--json``) does not load the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger.brain.facade import Brain, NoChangeError, Receipt, RecoveryError, SkillInfo, Status, find_brain

__all__ = ["Brain", "NoChangeError", "Receipt", "RecoveryError", "SkillInfo", "Status", "find_brain"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from ledger.brain import facade

        return getattr(facade, name)
    raise AttributeError(f"module 'ledger.brain' has no attribute {name!r}")
