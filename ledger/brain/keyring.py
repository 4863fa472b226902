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
from ledger.signatures.identity import LocalKey
from ledger.signatures.trust import ROLES, KeyChange, Trust, TrustError, check_address, policy_change
from ledger.write.records import Receipt
from ledger.write.sealing import founding_keys

if TYPE_CHECKING:
    from ledger.brain import signers
    from ledger.write.apply import Writer

__all__ = ["Keyring"]


class Keyring:
    """A brain's trust-set changes (``brain._keyring``), each written by the writer as the user.

    ``enable_signing`` records in the brain's config that it signs from now on (adoption)."""

    def __init__(self, writer: Writer, enable_signing: Callable[[], None]) -> None:
        self.writer, self.sealer, self.enable_signing = writer, writer.sealer, enable_signing
        self.keys = writer.sealer.keys

    def show(self) -> dict[str, Any]:
        """The head's trust set and policy, and, per role, the local key this brain signs with."""
        trust = self._trust()
        local = []
        for role in ("user", "agent", "curator", "verifier"):
            found = self.keys.find(role, [a for a, r in trust.active.items() if r == role])
            address, path = found if found else (self.keys.peek(role), self.keys.path(role))
            local.append({"role": role, "address": address, "path": str(path), "trusted": found is not None})
        return {
            "signing": self.sealer.enabled or trust.signed,
            "policy": trust.policy,
            "keys_dir": str(self.keys.home),
            "trusted": [{"address": a, "role": r} for a, r in sorted(trust.active.items())],
            "revoked": sorted(trust.revoked),
            "local": local,
        }

    def allowed_signers(self) -> tuple[list[signers.AllowedSigner], list[str]]:
        """git's ``allowed_signers`` entries for the head's trust set, from the siblings its lineage
        certifies, and why any address is left out (:func:`ledger.brain.signers.allowed_signers`)."""
        from ledger.brain import signers  # it reads every snapshot's signature: only this command needs it

        return signers.allowed_signers(self.writer.store)

    def sibling_pem(self, role: str, scheme: str, address: str | None = None) -> tuple[str, bytes]:
        """``(address, PEM)`` of the sibling (``p256`` or ``ed25519``) the lineage certifies for the head's
        trusted ``role`` key (``address``, else the only one, else the one this machine holds); no secret
        is read, so a clone exports it too (:func:`ledger.brain.signers.certified_sibling`)."""
        from ledger.brain import signers

        return signers.certified_sibling(self.writer.store, role, scheme, self.keys, address)

    def signer(self, role: str) -> dict[str, Any]:
        """Who signs this brain's ``role`` snapshots here: the address and key file, or why nobody can
        (and what provides a key), with the policy that decides whether such a write is refused."""
        trust = self._trust()
        key = self.sealer.key_for(trust, role)
        if isinstance(key, tuple):
            return {"role": role, "address": None, "policy": trust.policy, "why": key[0], "hint": key[1]}
        return {"role": role, "address": key.address, "policy": trust.policy}

    def set_policy(self, policy: str, *, note: str = "") -> Receipt:
        """Require signatures from now on (``signed``), or allow unsigned snapshots again (``open``):
        a ``keys`` snapshot signed by the user key, so no peer can drop the policy."""
        return self._change([policy_change(policy)], note)

    def trust(self, address: str, role: str, *, note: str = "") -> Receipt:
        """Trust ``address`` to sign as ``role`` (another machine's agent key, say)."""
        if role not in ROLES:
            raise TrustError(f"unknown role {role!r}", hint="a key is a user, agent, curator or verifier key")
        return self._change([KeyChange("add", check_address(address), role)], note)

    def revoke(self, address: str, *, note: str = "") -> Receipt:
        """Stop trusting ``address``; snapshots it signs from now on fail the audit."""
        return self._change([KeyChange("revoke", check_address(address))], note)

    def rotate(self, role: str, *, note: str = "", encrypt: bool = False) -> Receipt:
        """Replace this machine's ``role`` key: a new key is trusted and the old one revoked in one
        snapshot signed by the user key (the old one, when rotating the user key itself)."""
        trust = self._trust()
        found = self.keys.find(role, [a for a, r in trust.active.items() if r == role])
        old = found[0] if found else self.keys.peek(role)
        if old is None:
            raise KeystoreError(f"this machine has no {role} key to rotate", hint=f"ledger keys generate {role}")
        users = self.keys.find("user", [a for a, r in trust.active.items() if r == "user"])
        signer = self.keys.load("user", self.sealer.passphrase, users[1]) if users else None  # unlocked first
        if signer is None:
            raise KeystoreError(
                "rotating a key needs a user key this brain trusts, which this machine does not have",
                hint="run it where the brain's user key is (ledger keys show)",
            )
        fresh = self.keys.generate(role, self.sealer.passphrase, encrypt=encrypt, suffix=".next")
        changes = [KeyChange("add", fresh.address, role)]
        if old in trust.active:  # a key already revoked is only replaced
            changes.append(KeyChange("revoke", old))
        try:
            receipt = self._change(changes, note, key=signer)
        except BaseException:
            self.keys.discard(role, ".next")
            raise
        # The new key becomes the machine's current one; the old file stays as <role>.<address>.key,
        # so every other brain that trusts it goes on signing with it (ADR 26).
        self.keys.promote(role, ".next")
        return receipt

    def adopt(self, *, note: str = "") -> Receipt:
        """Found the trust set of a brain that has none, signing its head as an attestation."""
        trust = self._trust()
        if trust.established or trust.revoked:
            raise TrustError(
                "'adopt' founds the trust set, which this brain already has",
                hint="see 'ledger keys show'; 'ledger keys trust' adds a key",
            )
        self.enable_signing()
        self.sealer.enabled = True
        with self.writer.acting("user"):
            return self.writer.apply(
                "adopt", {}, [], note, key_changes=founding_keys(self.keys, self.sealer.passphrase)
            )

    def _trust(self) -> Trust:
        """The head's trust set (read from its commit alone, without loading the skills)."""
        store = self.writer.store
        head = store.head()
        return store.trust_at(store.snapshot(head).tree)[1] if head else Trust()

    def _change(self, changes: list[KeyChange], note: str, key: LocalKey | None = None) -> Receipt:
        if not self.sealer.enabled:
            raise TrustError("this brain is unsigned, so it has no trust set to change", hint="ledger sign --adopt")
        self.sealer.override = key
        try:
            with self.writer.acting("user"):
                return self.writer.apply("keys", {}, [], note, key_changes=changes)
        finally:
            self.sealer.override = None
