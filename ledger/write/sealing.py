"""The writer's signing part: which local key signs a snapshot, and the signature trailer it adds.

A brain *has* a :class:`Sealer`.  The write path hands it a snapshot's message, root,
parent and tree just before the commit is written; the sealer picks the local key that
the brain's trust set names for the acting role (the brain's own key directory may hold
several, see :class:`~ledger.signatures.identity.KeyDir`), checks that the trust set allows
it (the same :meth:`ledger.signatures.trust.Trust.authorize` the audit replays), and
appends ``Ledger-Signature``.

When no such key is here, a brain whose policy is ``signed`` (every brain made or adopted
since lineage v1.3) **refuses** the write, naming the key and the command that provides
it; only a brain whose policy is ``open`` writes the snapshot unsigned, with the reason
kept in :attr:`Sealer.unsigned` for the caller to show.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ledger.errors import KeystoreError
from ledger.protocol import signing
from ledger.signatures import identity, siblings, sshsig
from ledger.signatures.trust import KeyChange, Trust, TrustError, policy_change

__all__ = ["Sealed", "Sealer", "SignatureRequiredError", "founding_keys"]


class SignatureRequiredError(KeystoreError):
    """The brain requires signed snapshots, and this write cannot be signed: nothing is written."""


@dataclass(frozen=True)
class Sealed:
    message: str
    signer: str | None  # the signing address, or None for an unsigned snapshot
    why_unsigned: str | None = None
    key: identity.LocalKey | None = None  # the key that signed, for the commit's git signature

    def git_signer(self) -> Callable[[bytes], str] | None:
        """What signs the snapshot's commit object for git (``GitStore.write_commit``'s ``sign``): an
        SSHSIG in the namespace ``git`` by the signer's Ed25519 sibling, the one its trailers certify;
        ``None`` for an unsigned snapshot, which stays unsigned for git too."""
        if self.key is None:
            return None
        secret = self.key.secret
        return lambda payload: sshsig.sign(siblings.ed25519_key(secret), payload)


class Sealer:
    def __init__(
        self, keys: identity.KeyDir, *, enabled: bool = True, passphrase: identity.Passphrase | None = None
    ) -> None:
        self.keys = keys  # where this brain's keys are
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
        """``message`` with its signature, or (policy ``open`` only) as it is with the reason it
        could not be signed."""
        key = self.key_for(trust, actor, key_changes)
        if isinstance(key, tuple):
            why, fix = key
            if key_changes:
                raise TrustError(f"a key change must be signed, and {why}", hint=fix)
            if trust.signed:
                raise SignatureRequiredError(
                    f"this brain requires every snapshot to be signed, and {why}; nothing was written", hint=fix
                )
            self.unsigned = why
            return Sealed(message, None, why)
        trust.authorize(operation, key_changes, key.address, actor)  # the audit's own rule, before anything is written
        # The signer certifies its sibling keys (Ed25519, P-256) inside the text it signs (ADR 35).
        message += "".join(f"{siblings.SIBLING_TRAILER}: {line}\n" for line in siblings.public_lines(key.secret))
        digest = signing.digest(root, parent_root, parent, tree, actor, message)
        self.unsigned = None
        signed = message + f"{signing.SIGNATURE_TRAILER}: {signing.sign(key.secret, digest)}\n"
        return Sealed(signed, key.address, key=key)

    def key_for(
        self, trust: Trust, actor: str, key_changes: Sequence[KeyChange] = ()
    ) -> identity.LocalKey | tuple[str, str]:
        """The key that signs for ``actor``, or why there is none and the command that provides one."""
        role = "user" if key_changes else actor
        if not self.enabled and not trust.signed and not key_changes:
            return "signing is off for this brain", "ledger sign --adopt"
        if self.override is not None:
            return self.override
        if key_changes and not trust.established:
            allowed = [c.address for c in key_changes if c.action == "add" and c.role == role]
        else:
            allowed = [a for a, r in trust.active.items() if r == role]
        if not trust.established and not key_changes:
            return "this brain has no trust set", "ledger sign --adopt"
        found = self.keys.find(role, allowed)
        if found is None:
            here = self.keys.peek(role)
            where = f"{self.keys.home} (LEDGER_KEYS, or the brain's 'keys' setting)"
            if here is None:
                return (
                    f"there is no {role} key in {where}",
                    f"copy this brain's {role} key into {self.keys.home}, or make one with "
                    f"'ledger keys generate {role}' and have the user trust it: 'ledger keys trust {role} "
                    "ADDRESS' where the brain's user key is",
                )
            return (
                f"this machine's {role} key {here} ({self.keys.path(role)}) is not one the brain trusts "
                f"as {role} ({', '.join(allowed) or 'none'})",
                f"'ledger keys trust {role} {here}' where the brain's user key is, or point LEDGER_KEYS at "
                "the directory that holds a trusted key",
            )
        path = found[1]
        key = self.keys.load(role, self.passphrase, path)
        if key is None:
            return f"the {role} key {path} vanished while the write ran", "run the write again"
        return key


def founding_keys(
    keys: identity.KeyDir, passphrase: identity.Passphrase | None = None, *, encrypt: bool = False
) -> list[KeyChange]:
    """The keys a new brain trusts: this machine's user and agent keys (made when missing, as
    ssh-keygen would; ``encrypt`` protects a new user key with a passphrase), and its curator key
    if it has one; and the policy ``signed``."""
    out = []
    for role in ("user", "agent", "curator"):
        address = keys.peek(role)
        if address is None and role != "curator":
            try:
                address = keys.generate(role, passphrase, encrypt=encrypt and role == "user").address
            except KeystoreError:
                address = keys.peek(role)  # another init made it first: use that one
                if address is None:
                    raise
        if address is not None:
            out.append(KeyChange("add", address, role))
    return [*out, policy_change("signed")]
