"""Sibling public keys for tools outside the ledger: git's ``allowed_signers`` file, and one PEM key.

``git verify-commit`` (``gpg.format=ssh``) checks a snapshot's ``gpgsig`` against an OpenSSH
``allowed_signers`` file; :func:`allowed_signers` writes the one a brain's lineage justifies.  Its
keys are not taken from this machine but from the lineage: for every address the head's trust set
trusts (or revoked), the ``ssh-ed25519`` key that address certified in the ``Ledger-Sibling``
trailers of a snapshot whose EIP-712 signature recovers to it.  So whoever holds the file verifies
every signed snapshot with plain git, and the file says no more than the lineage does.

:func:`certified_sibling` is the PEM public key of one trusted key's sibling, which model-signing
(P-256) and DSSE tools take, also read from the lineage (no secret needed, so an auditor's clone
exports it); :func:`local_sibling` is this machine's side, for when no brain is in scope.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ledger.audit.signatures import signer_of
from ledger.errors import KeystoreError, LedgerError, StoreError
from ledger.protocol.messages import Snapshot
from ledger.signatures import identity, siblings
from ledger.signatures.trust import KEY_TRAILER, parse_key_change
from ledger.store import gitstore as gs
from ledger.store.git import WHOLE, Git

__all__ = ["AllowedSigner", "allowed_signers", "certified_sibling", "local_sibling", "principal"]

SCHEMES = {"p256": siblings.P256, "ed25519": siblings.ED25519}


def principal(role: str, address: str) -> str:
    """An allowed_signers principal naming a key: ``<role>@<address>`` (what git prints after 'for')."""
    return f"{role}@{address}"


@dataclass(frozen=True)
class AllowedSigner:
    address: str
    role: str
    ed25519: str  # the certified OpenSSH line, 'ssh-ed25519 AAAA…'
    valid_before: int | None = None  # a revoked key: see allowed_signers (Unix seconds)

    def line(self) -> str:
        """``<principal> namespaces="git"[,valid-before="YYYYMMDDHHMMSSZ"] ssh-ed25519 AAAA…``"""
        options = 'namespaces="git"'
        if self.valid_before is not None:
            options += f',valid-before="{time.strftime("%Y%m%d%H%M%S", time.gmtime(self.valid_before))}Z"'
        return f"{principal(self.role, self.address)} {options} {self.ed25519}"


def allowed_signers(store: gs.GitStore) -> tuple[list[AllowedSigner], list[str]]:
    """The allowed_signers entries of the head's trust set, trusted keys first then revoked ones, each by
    address; and a note for each address left out (it certified no sibling in this lineage).

    Every snapshot reachable from the head is read; a certification counts only when the snapshot's
    EIP-712 signature recovers to a trusted or revoked address.  An address that certified two
    different siblings is refused: the lineage fails ``ledger audit`` and no file is written.

    A revoked key's ``valid-before`` is the later of the mainline revocation's committer time and one
    second after the newest snapshot it signed that the audit accepts (one whose first parent's trust set
    trusts it, lineage.md §9.2): a side branch may go on signing with a key the mainline revoked, and git
    then verifies every snapshot the audit verifies, and none dated later."""
    head = store.head()
    if head is None:
        raise StoreError("this brain has no snapshots", hint="ledger init")
    tip = store.snapshot(head)
    trust = store.trust_at(tip.tree)[1]
    wanted = set(trust.active) | set(trust.revoked)
    if not wanted:
        raise StoreError("this brain has no trust set: no snapshot is signed", hint="ledger sign --adopt")
    mainline = _commits(store, head, "--first-parent")
    certified: dict[str, str] = {}
    roles: dict[str, str] = dict(trust.active)
    revoked_at: dict[str, int] = {}
    signed_until: dict[str, int] = {}  # revoked address -> newest accepted snapshot it signed (committer time)
    for commit in _commits(store, head):  # newest first, merged branches included
        snap = store.snapshot(bytes.fromhex(commit))
        if commit in mainline:
            for change in map(parse_key_change, snap.trailers.get(KEY_TRAILER, [])):
                if change.action == "revoke":
                    revoked_at.setdefault(change.address, snap.timestamp)
                elif change.action == "add" and change.role is not None:
                    roles.setdefault(change.address, change.role)
        values = snap.trailers.get(siblings.SIBLING_TRAILER, [])
        if not values or snap.signature is None:
            continue
        try:
            signer = signer_of(snap)
        except LedgerError:
            continue  # certified by no key at all
        if signer not in wanted:
            continue
        if (
            signer not in trust.active
            and snap.timestamp >= signed_until.get(signer, -1)
            and _accepted(store, snap, signer)
        ):
            signed_until[signer] = snap.timestamp
        try:
            ed25519 = siblings.Siblings.from_trailers(values).ed25519
        except LedgerError as exc:
            raise StoreError(f"snapshot {commit[:12]}: {exc.message}", hint="run 'ledger audit'") from exc
        if ed25519 is None:
            continue
        if certified.setdefault(signer, ed25519) != ed25519:
            raise StoreError(
                f"{signer} certifies two different Ed25519 siblings in this lineage",
                hint="run 'ledger audit': the lineage fails its 'siblings' check",
            )
    out, notes = [], []
    for address in [*sorted(trust.active), *sorted(trust.revoked - set(trust.active))]:
        if address not in certified:
            notes.append(
                f"{address} ({roles.get(address, 'revoked')}) left out: it signed no snapshot that "
                "certifies a sibling key in this lineage"
            )
            continue
        before = revoked_at.get(address) if address not in trust.active else None
        if address not in trust.active and before is None:
            notes.append(f"{address} left out: revoked, and no revoking snapshot dates it")
            continue
        if before is not None and address in signed_until:
            before = max(before, signed_until[address] + 1)
        out.append(AllowedSigner(address, roles.get(address, "revoked"), certified[address], before))
    return out, notes


def _accepted(store: gs.GitStore, snap: Snapshot, signer: str) -> bool:
    """Whether the audit accepts ``signer`` on ``snap``: its first parent's trust set trusts it (§9.2), or,
    for a snapshot with no parent, it founds the trust set that trusts it."""
    if not snap.parents:
        return signer in store.trust_at(snap.tree)[1].active
    parent = store.snapshot(bytes.fromhex(snap.parents[0]))
    return signer in store.trust_at(parent.tree)[1].active


def _commits(store: gs.GitStore, head: bytes, *flags: str) -> list[str]:
    return (
        Git(store.git_dir)
        .run("rev-list", *flags, head.hex(), timeout=WHOLE, what="git rev-list cannot walk the history")
        .decode()
        .split()
    )


def certified_sibling(
    store: gs.GitStore, role: str, scheme: str, keys: identity.KeyDir, address: str | None = None
) -> tuple[str, bytes]:
    """``(address, PEM)`` of the ``scheme`` sibling that the lineage certifies for the head's trusted ``role``
    key: ``address`` when given, else the only one, else the one ``keys`` (this machine) holds.

    The certification rules are :func:`allowed_signers`': a snapshot's ``Ledger-Sibling`` trailers count
    when its EIP-712 signature recovers to the address; two different siblings of the address are refused.
    A trusted key that certified no sibling (it signed nothing since siblings exist) is refused, never
    replaced by an unvouched key."""
    head = store.head()
    if head is None:
        raise StoreError("this brain has no snapshots", hint="ledger init")
    trust = store.trust_at(store.snapshot(head).tree)[1]
    if not trust.active and not trust.revoked:
        raise KeystoreError(
            "this brain is unsigned: it has no trust set, so no key of it is certified", hint="ledger sign --adopt"
        )
    candidates = sorted(a for a, r in trust.active.items() if r == role)
    if address is not None:
        address = address.lower()
        if address not in candidates:
            trusts = ", ".join(candidates) or "none"
            raise KeystoreError(
                f"this brain does not trust {address} as its {role} key (it trusts: {trusts})",
                hint="see 'ledger keys show'",
            )
    elif not candidates:
        raise KeystoreError(f"this brain trusts no {role} key", hint=f"ledger keys trust {role} ADDRESS")
    elif len(candidates) == 1:
        address = candidates[0]
    else:
        found = keys.find(role, candidates)
        if found is None:
            raise KeystoreError(
                f"this brain trusts {len(candidates)} {role} keys ({', '.join(candidates)}) and "
                "this machine holds none of them",
                hint="pick one: --address ADDR",
            )
        address = found[0]
    pair: siblings.Siblings | None = None
    for commit in _commits(store, head):
        snap = store.snapshot(bytes.fromhex(commit))
        values = snap.trailers.get(siblings.SIBLING_TRAILER, [])
        if not values or snap.signature is None:
            continue
        try:
            if signer_of(snap) != address:
                continue
        except LedgerError:
            continue  # certified by no key at all
        try:
            found_pair = siblings.Siblings.from_trailers(values)
        except LedgerError as exc:
            raise StoreError(f"snapshot {commit[:12]}: {exc.message}", hint="run 'ledger audit'") from exc
        if pair is not None and found_pair != pair:
            raise StoreError(
                f"{address} certifies two different sibling keys in this lineage",
                hint="run 'ledger audit': the lineage fails its 'siblings' check",
            )
        pair = found_pair
    if pair is None or (pair.p256 if SCHEMES[scheme] == siblings.P256 else pair.ed25519) is None:
        raise KeystoreError(
            f"the {role} key {address} has certified no {scheme} sibling in this lineage (it "
            "has signed nothing since sibling keys exist)",
            hint=f"make one signed change as {role} where that key is, then export again",
        )
    return address, pair.pem(SCHEMES[scheme])


def local_sibling(
    keys: identity.KeyDir,
    role: str,
    scheme: str,
    allowed: list[str] | None = None,
    passphrase: identity.Passphrase | None = None,
) -> tuple[str, bytes]:
    """``(address, PEM)`` of this machine's ``role`` key's sibling.  ``scheme``: p256 or ed25519.

    ``allowed`` (a brain's trusted addresses for the role, perhaps none) picks the local key among
    them, and refuses when there is none: a key the brain does not trust is never handed out in its
    name.  ``None`` (no brain) takes the machine's current key, which no brain vouches for."""
    found = keys.find(role, allowed) if allowed else None
    if allowed is not None and found is None:
        trusts = f"it trusts {', '.join(sorted(allowed))}" if allowed else f"it trusts no {role} key"
        raise KeystoreError(
            f"this machine has no {role} key this brain trusts ({trusts})",
            hint="run it where that key is (ledger keys show), or have the brain trust this "
            f"machine's key: ledger keys trust {role} ADDRESS",
        )
    key = keys.load(role, passphrase, found[1] if found else None)
    if key is None:
        raise KeystoreError(f"this machine has no {role} key in {keys.home}", hint=f"ledger keys generate {role}")
    line = siblings.public_lines(key.secret)[0 if SCHEMES[scheme] == siblings.ED25519 else 1]
    pair = siblings.Siblings.from_trailers([line])
    return key.address, pair.pem(SCHEMES[scheme])
