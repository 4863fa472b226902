"""One error hierarchy for the whole ledger.

Every error says what was wrong and, where there is one, how to fix it.  The CLI
maps :class:`LedgerError` to exit code 1 and :class:`UsageError` to 2; nothing
else needs to know about exit codes.
"""

from __future__ import annotations


class LedgerError(Exception):
    """Base class: an operation was refused or failed and changed nothing."""

    def __init__(self, message: str, *, hint: str | None = None, **detail: object) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.detail = detail  # machine-readable context for agents (a failed patch's closest lines, …)

    def __str__(self) -> str:
        return f"{self.message}\nhint: {self.hint}" if self.hint else self.message

    def report(self) -> str:
        """The ``error:`` line and any ``hint:`` line a command prints, made :func:`printable`."""
        return f"error: {printable(self.message)}" + (f"\nhint: {printable(self.hint)}" if self.hint else "")


def printable(text: str) -> str:
    """Escape control characters and undecodable bytes, so no input can repaint the terminal."""
    return "".join(c if _shown(c) else c.encode("unicode_escape").decode() for c in text)


def _shown(c: str) -> bool:
    return (c.isprintable() or c in "\n\t") and not 0xDC80 <= ord(c) <= 0xDCFF


class UsageError(LedgerError):
    """The request itself is malformed (CLI exit code 2)."""


class SkillError(LedgerError):
    """A skill is invalid: bad name, frontmatter, size or path."""


class SkillNotFoundError(SkillError):
    """The named skill (or file within it) does not exist."""


class SkillExistsError(SkillError):
    """``create`` was asked for a name that already exists."""


class PatchError(SkillError):
    """A patch did not match exactly once, or its result is invalid."""


class TreeError(LedgerError):
    """A tree cannot be hashed unambiguously (symlink, special file, bad name)."""


class ProofError(LedgerError):
    """An inclusion proof is malformed or does not verify."""


class StoreError(LedgerError):
    """The brain or its git store is missing, locked or inconsistent."""


class LockedError(StoreError):
    """Another writer holds the brain lock."""


class StaleError(StoreError):
    """A write was decided on a head that has moved since (a compare-and-swap lost): nothing was written."""


class ChainError(LedgerError):
    """The chain refused or could not be reached."""


class RpcUnreachableError(ChainError):
    """The RPC endpoint did not answer."""


class RpcError(ChainError):
    """The node answered a JSON-RPC error; ``detail`` holds its ``code``, ``data`` (revert data,
    when a call reverted) and ``node_message``, for the registry to explain."""


class KeystoreError(LedgerError):
    """A keystore is missing, unreadable or not allowed on this chain."""


class AuditError(LedgerError):
    """An audit could not be run (as opposed to running and finding failures)."""


class PageDataError(LedgerError):
    """The report page was given data it cannot draw faithfully (a wrong type, a contradiction)."""


class SupplyError(LedgerError):
    """A skill from elsewhere was refused: its source, pin, proof, scan verdict or revocation
    does not allow it (docs/supply-chain.md)."""


class SourceError(SupplyError):
    """A source could not be read, or no longer serves the pin recorded for a skill."""
