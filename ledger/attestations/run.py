"""The attestations' use cases: ``ledger attest`` and ``ledger verify --attestation``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger._fs import atomic_write
from ledger.attestations.attest import attest as make
from ledger.attestations.attest import read_attestation, verify_attestation
from ledger.attestations.reports import AttestationVerified, AttestReport
from ledger.errors import LedgerError, StoreError, UsageError

__all__ = ["attest", "check_attestation", "read_attestation", "rev_and_name"]


def rev_and_name(brain: Any, words: tuple[str, ...] | list[str]) -> tuple[str | None, str | None]:
    """``[REV] [NAME]``: two words are both; one is a revision, or a skill of the head, never both."""
    if len(words) > 2:
        raise UsageError("give at most REV and NAME")
    if len(words) == 2:
        return words[0], words[1]
    if not words:
        return None, None
    word = words[0]
    try:
        brain.store.resolve(word)
        is_rev = True
    except StoreError:
        is_rev = False
    is_skill = word in brain.head().skills
    if is_rev and is_skill:
        raise UsageError(f"{word!r} is both a revision and a skill", hint=f"write 'ledger attest HEAD {word}'")
    if not is_rev and not is_skill:
        raise UsageError(
            f"{word!r} is neither a revision nor a skill of the head",
            hint="revisions: a commit id, main~N or a root; for a past skill give REV NAME",
        )
    return (word, None) if is_rev else (None, word)


def attest(
    brain: Any, rev: str | None, name: str | None, fmt: str, actor: str = "user", output: Path | None = None
) -> tuple[bytes, AttestReport]:
    """``(attestation bytes, report)`` of snapshot ``rev``'s skills (or skill ``name``), signed by the
    P-256 sibling of this machine's ``actor`` key; with ``output``, the bytes are written there whole."""
    data, summary = make(brain, rev, name, fmt, actor)
    if output is not None:
        try:
            atomic_write(output, data)  # a temporary file renamed over it, never half
        except OSError as exc:
            raise LedgerError(f"cannot write {output}: {exc.strerror or exc}") from None
        summary["output"] = str(output)
    return data, AttestReport.of(summary)


def check_attestation(brain: Any, data: bytes, rev: str | None = None) -> AttestationVerified:
    """Check attestation ``data`` (OMS or in-toto) against the brain at ``rev`` or the snapshot it names;
    :class:`~ledger.attestations.subjects.AttestationError` names every failure
    (:meth:`AttestationFailed.of <ledger.attestations.reports.AttestationFailed.of>` is its document)."""
    return AttestationVerified.of(verify_attestation(brain, data, rev))
