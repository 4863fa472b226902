"""``ledger keys``'s use cases for signing keys and the trust set (docs/lineage.md §8), as reports.

A change to the trust set is one signed snapshot, and the function returns its receipt
(:class:`ledger.write.records.Receipt`). They sit beside the facade, whose write context they
use, so they can name the receipt they return.  No printing, no exit codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.signatures.identity import KeyDir, KeyExistsError, Passphrase
from ledger.signatures.reports import KeyReport, KeysReport, TrustUnchanged
from ledger.write.records import Receipt

if TYPE_CHECKING:
    from ledger.brain.facade import Brain

__all__ = ["adopt", "generate", "revoke", "rotate", "set_policy", "show", "trust"]


def show(brain: Brain) -> KeysReport:
    """This machine's signing keys and the keys ``brain`` trusts, revoked and its policy."""
    return KeysReport.of(brain.trusted_keys())


def generate(keys: KeyDir, role: str, passphrase: Passphrase | None = None, *, encrypt: bool = False) -> KeyReport:
    """Make this machine's ROLE key in ``keys``; one that exists is left as it is and named (re-runnable)."""
    try:
        address, made = keys.generate(role, passphrase, encrypt=encrypt).address, True
    except KeyExistsError:
        address, made = keys.peek(role), False
    return KeyReport(role=role, address=address, path=str(keys.path(role)), created=made)  # type: ignore[arg-type]


def trust(brain: Brain, role: str, address: str, *, note: str = "") -> Receipt | TrustUnchanged:
    """Trust ``address`` to sign as ``role``: a receipt, or :class:`TrustUnchanged` when it already is."""
    if {"address": address.lower(), "role": role} in brain.trusted_keys()["trusted"]:
        return TrustUnchanged(changed=False, address=address.lower(), role=role)  # type: ignore[arg-type]
    with brain.writing() as w:
        return w.trust(address, role, note=note)


def revoke(brain: Brain, address: str, *, note: str = "") -> Receipt:
    """Stop trusting ``address``: snapshots it signs from now on fail the audit; earlier ones stand."""
    with brain.writing() as w:
        return w.revoke(address, note=note)


def rotate(brain: Brain, role: str, *, note: str = "", encrypt: bool = False) -> Receipt:
    """Replace this machine's ROLE key: the new one trusted and the old revoked, in one signed snapshot."""
    with brain.writing() as w:
        return w.rotate(role, note=note, encrypt=encrypt)


def set_policy(brain: Brain, policy: str, *, note: str = "") -> Receipt:
    """Set the signature policy ('signed' or 'open'), in a snapshot signed by the user key."""
    with brain.writing() as w:
        return w.set_policy(policy, note=note)


def adopt(brain: Brain, *, note: str = "") -> Receipt:
    """Adopt signing for a brain made without it: one 'adopt' snapshot founding its trust set."""
    with brain.writing() as w:
        return w.adopt(note=note)
