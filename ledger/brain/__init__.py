"""The brain: a facade (:class:`Brain`) over its named parts: the store, the head, the lock,
the writer, the reads, and the agent-facing catalog and categories.

``from ledger.brain import Brain`` is the public way in; the parts' modules are the brain's own.
"""

from ledger.brain.facade import Brain, NoChangeError, Receipt, RecoveryError, SkillInfo, Status, find_brain

__all__ = ["Brain", "NoChangeError", "Receipt", "RecoveryError", "SkillInfo", "Status", "find_brain"]
