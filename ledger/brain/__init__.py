"""The brain: a narrow facade (:class:`Brain`) over its parts: it shows its store (read-only) and
root; the head, the lock, the writer, the reads and the catalog stay behind it, and services
write through ``brain.writing()`` (ADR 72).

``from ledger.brain import Brain`` is the public way in; the parts' modules are the brain's own.
"""

from ledger.brain.facade import Brain, NoChangeError, Receipt, RecoveryError, SkillInfo, Status, find_brain

__all__ = ["Brain", "NoChangeError", "Receipt", "RecoveryError", "SkillInfo", "Status", "find_brain"]
