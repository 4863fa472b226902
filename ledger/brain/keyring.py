"""Changes to a brain's trust set, each a signed snapshot (docs/lineage.md §8).

A brain *has* a :class:`Keyring`.  Trusting, revoking and rotating a key write a ``keys``
snapshot signed by the brain's user key; adoption writes the ``adopt`` snapshot that gives
an unsigned brain its trust set, signing the head as it is (history is never rewritten).
None changes a skill, so the root stays the parent's and nothing new is anchored on chain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ledger.errors import KeystoreError
from ledger.signatures import identity
from ledger.signatures.trust import ROLES, KeyChange, Trust, TrustError, check_address
from ledger.write.records import Receipt
from ledger.write.sealing import founding_keys

if TYPE_CHECKING:
    from ledger.write.apply import Writer

__all__ = ["Keyring"]


class Keyring:
    """A brain's trust-set changes (``brain.keyring``), each written by the writer as the user.

    ``enable_signing`` records in the brain's config that it signs from now on (adoption)."""

    def __init__(self, writer: Writer, enable_signing: Callable[[], None]) -> None:
        self.writer, self.sealer, self.enable_signing = writer, writer.sealer, enable_signing

    def show(self) -> dict[str, Any]:
        """The head's trust set, and this machine's keys with whether the brain trusts each."""
        trust = self._trust()
        local = []
        for role in ("user", "agent", "curator"):
            address = identity.peek(role)
            local.append({"role": role, "address": address, "path": str(identity.key_path(role)),
                          "trusted": address is not None and trust.active.get(address) == role})  # fmt: skip
        return {
            "signing": self.sealer.enabled,
            "trusted": [{"address": a, "role": r} for a, r in sorted(trust.active.items())],
            "revoked": sorted(trust.revoked),
            "local": local,
        }

    def trust(self, address: str, role: str, *, note: str = "") -> Receipt:
        """Trust ``address`` to sign as ``role`` (another machine's agent key, say)."""
        if role not in ROLES:
            raise TrustError(f"unknown role {role!r}", hint="a key is a user, agent or curator key")
        return self._change([KeyChange("add", check_address(address), role)], note)

    def revoke(self, address: str, *, note: str = "") -> Receipt:
        """Stop trusting ``address``; snapshots it signs from now on fail the audit."""
        return self._change([KeyChange("revoke", check_address(address))], note)

    def rotate(self, role: str, *, note: str = "", encrypt: bool = False) -> Receipt:
        """Replace this machine's ``role`` key: a new key is trusted and the old one revoked in one
        snapshot signed by the user key (the old one, when rotating the user key itself)."""
        old = identity.peek(role)
        if old is None:
            raise KeystoreError(f"this machine has no {role} key to rotate", hint=f"ledger keys generate {role}")
        signer = identity.load("user", self.sealer.passphrase)  # unlocked before anything is made
        if signer is None:
            raise KeystoreError("rotating a key needs this machine's user key, which it does not have")
        trust = self._trust()
        fresh = identity.generate(role, self.sealer.passphrase, encrypt=encrypt, suffix=".next")
        changes = [KeyChange("add", fresh.address, role)]
        if old in trust.active:  # a key already revoked is only replaced
            changes.append(KeyChange("revoke", old))
        try:
            receipt = self._change(changes, note, key=signer)
        except BaseException:
            identity.discard(role, ".next")
            raise
        identity.promote(role, ".next")  # the old file is kept as <role>.key.<address>.old
        return receipt

    def adopt(self, *, note: str = "") -> Receipt:
        """Found the trust set of a brain that has none, signing its head as an attestation."""
        trust = self._trust()
        if trust.established or trust.revoked:
            raise TrustError("'adopt' founds the trust set, which this brain already has",
                             hint="see 'ledger keys show'; 'ledger keys trust' adds a key")  # fmt: skip
        self.enable_signing()
        self.sealer.enabled = True
        with self.writer.acting("user"):
            return self.writer.apply("adopt", {}, [], note, key_changes=founding_keys(self.sealer.passphrase))

    def _trust(self) -> Trust:
        """The head's trust set (read from its commit alone, without loading the skills)."""
        store = self.writer.store
        head = store.head()
        return store.trust_at(store.snapshot(head).tree)[1] if head else Trust()

    def _change(self, changes: list[KeyChange], note: str, key: identity.LocalKey | None = None) -> Receipt:
        if not self.sealer.enabled:
            raise TrustError("this brain is unsigned, so it has no trust set to change", hint="ledger sign --adopt")
        self.sealer.override = key
        try:
            with self.writer.acting("user"):
                return self.writer.apply("keys", {}, [], note, key_changes=changes)
        finally:
            self.sealer.override = None
