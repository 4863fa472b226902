"""Changes to a brain's trust set, each a signed snapshot (docs/lineage.md §8).

A brain *has* a :class:`Keyring`.  Trusting, revoking and rotating a key write a ``keys``
snapshot signed by the brain's user key; adoption writes the ``adopt`` snapshot that gives
an unsigned brain its trust set, signing the head as it is (history is never rewritten).
None changes a skill, so the root stays the parent's and nothing new is anchored on chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger import identity
from ledger.errors import KeystoreError
from ledger.records import Receipt
from ledger.sealing import Sealer, founding_keys
from ledger.trust import ROLES, KeyChange, Trust, TrustError, check_address

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["Keyring"]


class Keyring:
    def __init__(self, brain: Brain) -> None:
        self._brain = brain

    def show(self) -> dict[str, Any]:
        """The head's trust set, and this machine's keys with whether the brain trusts each."""
        brain = self._brain
        trust = self._trust()
        local = []
        for role in ("user", "agent", "curator"):
            address = identity.peek(role)
            local.append({"role": role, "address": address, "path": str(identity.key_path(role)),
                          "trusted": address is not None and trust.active.get(address) == role})  # fmt: skip
        return {
            "signing": brain.sealer.enabled,
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
        brain = self._brain
        signer = identity.load("user", brain.sealer.passphrase)  # unlocked before anything is made
        if signer is None:
            raise KeystoreError("rotating a key needs this machine's user key, which it does not have")
        trust = self._trust()
        fresh = identity.generate(role, brain.sealer.passphrase, encrypt=encrypt, suffix=".next")
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
        brain = self._brain
        trust = self._trust()
        if trust.established or trust.revoked:
            raise TrustError("'adopt' founds the trust set, which this brain already has",
                             hint="see 'ledger keys show'; 'ledger keys trust' adds a key")  # fmt: skip
        brain.update_config(signing=True)
        brain.sealer.enabled = True
        with brain.acting("user"):
            return brain._apply("adopt", {}, [], note, key_changes=founding_keys(brain.sealer.passphrase))

    def _trust(self) -> Trust:
        """The head's trust set (read from its commit alone, without loading the skills)."""
        store = self._brain.store
        head = store.head()
        return Sealer.trust_of(store, store.snapshot(head).tree)[1] if head else Trust()

    def _change(self, changes: list[KeyChange], note: str, key: identity.LocalKey | None = None) -> Receipt:
        brain = self._brain
        if not brain.sealer.enabled:
            raise TrustError("this brain is unsigned, so it has no trust set to change", hint="ledger sign --adopt")
        brain.sealer.override = key
        try:
            with brain.acting("user"):
                return brain._apply("keys", {}, [], note, key_changes=changes)
        finally:
            brain.sealer.override = None
