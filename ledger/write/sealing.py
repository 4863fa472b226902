"""The writer's signing part: which local key signs a snapshot, and the signature trailer it adds.

A brain *has* a :class:`Sealer`.  The write path hands it a snapshot's message, root,
parent and tree just before the commit is written; the sealer picks this machine's key
for the acting role, checks that the brain's trust set allows it (the same
:meth:`ledger.signatures.trust.Trust.authorize` the audit replays), and appends ``Ledger-Signature``.
When this machine holds no trusted key for the role, the snapshot is written unsigned and
the reason kept in :attr:`Sealer.unsigned`, for the caller to show: a write is never
refused for want of a key, and ``ledger audit`` reports every unsigned snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ledger.errors import KeystoreError
from ledger.signatures import identity, signing
from ledger.signatures.trust import KeyChange, Trust, TrustError

__all__ = ["Sealed", "Sealer", "founding_keys"]


@dataclass(frozen=True)
class Sealed:
    message: str
    signer: str | None  # the signing address, or None for an unsigned snapshot
    why_unsigned: str | None = None


class Sealer:
    def __init__(self, *, enabled: bool = True, passphrase: identity.Passphrase | None = None) -> None:
        self.enabled = enabled  # False: write unsigned snapshots (a brain made with --unsigned)
        self.passphrase = passphrase  # a prompt, set by an interactive CLI
        self.unsigned: str | None = None  # why the last snapshot was not signed (None: it was)
        self.override: identity.LocalKey | None = None  # the key for the next seal (a user key's rotation)

    def seal(
        self,
        message: str,
        *,
        trust: Trust,
        operation: str,
        key_changes: Sequence[KeyChange],
        root: bytes,
        parent_root: bytes | None,
        parent: bytes | None,
        tree: bytes,
        actor: str,
    ) -> Sealed:
        """``message`` with its signature, or as it is with the reason it could not be signed."""
        key = self._key(trust, operation, key_changes, actor)
        if isinstance(key, str):
            if key_changes:
                raise TrustError(f"a key change must be signed, and {key}",
                                 hint="run it where the brain's user key is (ledger keys show)")  # fmt: skip
            self.unsigned = key
            return Sealed(message, None, key)
        trust.authorize(operation, key_changes, key.address, actor)  # the audit's own rule, before anything is written
        digest = signing.digest(root, parent_root, parent, tree, actor, message)
        self.unsigned = None
        signed = message + f"{signing.SIGNATURE_TRAILER}: {signing.sign(key.secret, digest)}\n"
        return Sealed(signed, key.address)

    def _key(
        self, trust: Trust, operation: str, key_changes: Sequence[KeyChange], actor: str
    ) -> identity.LocalKey | str:
        if not self.enabled:
            return "signing is off for this brain"
        if self.override is not None:
            return self.override
        role = "user" if key_changes else actor
        address = identity.peek(role)
        if address is None:
            return f"this machine has no {role} key ({identity.key_path(role)})"
        if key_changes and not trust.established:
            trusted = any(c.address == address and c.role == role for c in key_changes)
        else:
            trusted = trust.active.get(address) == role
        if not trusted:
            if not trust.established:
                return "this brain has no trust set (see 'ledger sign --adopt')"
            return f"this machine's {role} key {address} is not in the brain's trust set (see 'ledger keys trust')"
        key = identity.load(role, self.passphrase)
        if key is None:
            return f"this machine's {role} key vanished while the write ran"
        return key


def founding_keys(passphrase: identity.Passphrase | None = None, *, encrypt: bool = False) -> list[KeyChange]:
    """The keys a new brain trusts: this machine's user and agent keys (made when missing, as
    ssh-keygen would; ``encrypt`` protects a new user key with a passphrase), and its curator key
    if it has one."""
    out = []
    for role in ("user", "agent", "curator"):
        address = identity.peek(role)
        if address is None and role != "curator":
            try:
                address = identity.generate(role, passphrase, encrypt=encrypt and role == "user").address
            except KeystoreError:
                address = identity.peek(role)  # another init made it first: use that one
                if address is None:
                    raise
        if address is not None:
            out.append(KeyChange("add", address, role))
    return out
