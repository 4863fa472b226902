"""The brain's trust set: which keys may sign its snapshots, in which role (docs/lineage.md §8).

The set travels with the brain, so a clone verifies offline.  It changes only through
``Ledger-Key`` trailers on signed snapshots (``init``, ``adopt`` and ``keys``), and each
snapshot's tree carries the resulting set as the ``keys`` record, so a writer reads it in
O(1).  One :class:`Trust` fold serves the writer (refuse a change before signing it) and
the audit (replay every change), so the two cannot disagree on a rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ledger.errors import LedgerError

__all__ = [
    "KEY_TRAILER",
    "POLICIES",
    "RECORD",
    "ROLES",
    "KeyChange",
    "Trust",
    "TrustError",
    "format_record",
    "parse_key_change",
    "parse_record",
]

ROLES = ("agent", "curator", "user", "verifier")
RECORD = "keys"  # beside skills/ in a snapshot's tree
KEY_TRAILER = "Ledger-Key"
KEY_OPERATIONS = ("init", "adopt", "keys")  # the only operations that may change the set
POLICIES = ("signed", "open")  # signed: every later snapshot must be signed (lineage v1.3, §8.4)
_POLICY_LINE = "policy signed"
_ADDRESS = re.compile(r"0x[0-9a-f]{40}\Z")


class TrustError(LedgerError):
    """A key change the protocol does not allow, or a snapshot signed by a key it does not trust."""


def check_address(address: str) -> str:
    """An address as the protocol writes it: ``0x`` and 40 lower-case hex digits (any case accepted in)."""
    low = address.lower()
    if not _ADDRESS.match(low):
        raise TrustError(f"{address!r} is not an Ethereum address", hint="0x followed by 40 hex digits")
    return low


@dataclass(frozen=True)
class KeyChange:
    """``add ADDRESS ROLE``, ``revoke ADDRESS`` or ``policy POLICY`` (``address`` empty, ``role`` the
    policy): one ``Ledger-Key`` trailer."""

    action: str
    address: str
    role: str | None = None

    def trailer(self) -> str:
        if self.action == "policy":
            return f"policy {self.role}"
        return f"add {self.address} {self.role}" if self.action == "add" else f"revoke {self.address}"


def policy_change(policy: str) -> KeyChange:
    if policy not in POLICIES:
        raise TrustError(f"unknown signature policy {policy!r}", hint="'signed' or 'open'")
    return KeyChange("policy", "", policy)


def parse_key_change(value: str) -> KeyChange:
    parts = value.split(" ")
    if len(parts) == 3 and parts[0] == "add" and parts[2] in ROLES and _ADDRESS.match(parts[1]):
        return KeyChange("add", parts[1], parts[2])
    if len(parts) == 2 and parts[0] == "revoke" and _ADDRESS.match(parts[1]):
        return KeyChange("revoke", parts[1])
    if len(parts) == 2 and parts[0] == "policy" and parts[1] in POLICIES:
        return KeyChange("policy", "", parts[1])
    raise TrustError(
        f"malformed Ledger-Key trailer {value!r}",
        hint="'add 0x<40 hex> ROLE', 'revoke 0x<40 hex>' or 'policy signed|open'",
    )


def format_record(trust: Trust) -> bytes:
    """The ``keys`` record: ``ADDRESS SP ROLE LF`` per trusted key and ``ADDRESS SP "revoked" LF`` per
    revoked one, in byte order of the address, then ``policy signed LF`` when signatures are required."""
    rows = {**{a: "revoked" for a in trust.revoked}, **trust.active}
    lines = [f"{a} {r}\n" for a, r in sorted(rows.items())]
    return "".join(lines + [_POLICY_LINE + "\n"] * trust.signed).encode()


def parse_record(data: bytes) -> Trust:
    """Read a ``keys`` record; refuse anything :func:`format_record` would not have written."""
    out = Trust()
    try:
        for line in data.decode("ascii").split("\n")[:-1]:
            if line == _POLICY_LINE:
                out.signed = True
                continue
            address, role = line.split(" ")
            if not _ADDRESS.match(address) or role not in (*ROLES, "revoked"):
                raise ValueError(line)
            if role == "revoked":
                out.revoked.add(address)
            else:
                out.active[address] = role
    except (UnicodeDecodeError, ValueError) as exc:
        raise TrustError("the 'keys' record is malformed") from exc
    if format_record(out) != data:
        raise TrustError("the 'keys' record is not in canonical form (sorted, one key per line)")
    return out


@dataclass
class Trust:
    """The keys trusted after some snapshot, and every address ever revoked (never trusted again)."""

    active: dict[str, str] = field(default_factory=dict)  # address → role
    revoked: set[str] = field(default_factory=set)
    signed: bool = False  # the policy: every snapshot after this one must be signed

    @property
    def established(self) -> bool:
        return bool(self.active)

    @property
    def policy(self) -> str:
        return "signed" if self.signed else "open"

    def copy(self) -> Trust:
        return Trust(dict(self.active), set(self.revoked), self.signed)

    def authorize(self, operation: str, changes: Iterable[KeyChange], signer: str | None, actor: str | None) -> None:
        """Check that ``signer`` may sign a snapshot of ``operation`` by ``actor`` making ``changes``.

        ``init`` and ``adopt`` found the set: they are signed by a ``user`` key they add.
        ``keys`` is signed by a ``user`` key already trusted; every other snapshot by a
        trusted key whose role is the snapshot's ``Ledger-Actor``, and changes no key.
        ``signer`` is ``None`` for an unsigned snapshot, which may change no key, and which a
        brain whose policy is ``signed`` refuses.
        """
        role = self._role(operation, list(changes), signer)
        if signer is None and self.signed:
            raise TrustError(
                "the snapshot is unsigned, and the brain's policy requires every snapshot to be "
                "signed by a key it trusts"
                " (see docs/lineage.md, 'Unsigned snapshots and the policy')"
            )
        if signer is not None and actor != role:
            raise TrustError(f"signed by {signer}, {_a(role)} key, but its Ledger-Actor is {actor or 'missing'}")

    def _role(self, operation: str, changes: list[KeyChange], signer: str | None) -> str:
        if changes and operation not in KEY_OPERATIONS:
            raise TrustError(f"a {operation!r} snapshot cannot change keys; only init, adopt and keys can")
        if operation == "init" and not changes and signer is None:
            return ""  # an unsigned brain's first snapshot
        if operation in ("init", "adopt"):
            if self.established or self.revoked:
                raise TrustError(f"'{operation}' founds the trust set, which this brain already has")
            if signer is None or not changes:
                raise TrustError(f"an '{operation}' snapshot that adds keys must be signed")
            added = {c.address: c.role for c in changes if c.action == "add"}
            if added.get(signer) != "user":
                raise TrustError(f"an '{operation}' snapshot must be signed by a user key it adds")
            return "user"
        if signer is None:
            if changes:
                raise TrustError("a key change must be signed by a trusted user key")
            return ""
        role = self.active.get(signer)
        if signer in self.revoked:
            raise TrustError(f"signed by {signer}, a key revoked before this snapshot")
        if role is None:
            raise TrustError(
                f"its signature recovers {signer}, which the brain does not trust: the snapshot "
                "was altered after it was signed, or signed by a key the brain never trusted"
            )
        if operation == "keys" and role != "user":
            raise TrustError(f"key changes must be signed by a user key; {signer} is {_a(role)} key")
        if role == "verifier" and operation != "outcome":
            raise TrustError(
                f"{signer} is a verifier key, which signs outcomes and 'outcome' snapshots only, "
                f"not {operation!r} (see docs/lineage.md, 'Tiers and the verifier role')"
            )
        return role

    def apply(self, changes: Iterable[KeyChange]) -> Trust:
        """The set after ``changes``; refuses a change that leaves it inconsistent."""
        out = self.copy()
        seen: set[str] = set()
        for c in changes:
            if c.action == "policy":
                if "policy" in seen:
                    raise TrustError("the policy is changed twice in one snapshot")
                if c.role == out.policy:
                    raise TrustError(f"the signature policy is already {c.role!r}")
                seen.add("policy")
                out.signed = c.role == "signed"
                continue
            if c.address in seen:
                raise TrustError(f"{c.address} is changed twice in one snapshot")
            seen.add(c.address)
            if c.action == "add":
                if c.address in out.revoked:
                    raise TrustError(
                        f"{c.address} was revoked; a revoked key is never trusted again",
                        hint="make a new key (ledger keys rotate)",
                    )
                if c.address in out.active:
                    raise TrustError(f"{c.address} is already trusted as a {out.active[c.address]} key")
                out.active[c.address] = c.role or ""
            else:
                if c.address not in out.active:
                    raise TrustError(f"{c.address} is not a trusted key, so it cannot be revoked")
                del out.active[c.address]
                out.revoked.add(c.address)
        if seen and "user" not in out.active.values():
            raise TrustError("the change would leave no trusted user key, and so no way to change keys again")
        return out


def _a(role: str) -> str:
    return ("an " if role[0] in "aeiou" else "a ") + role
