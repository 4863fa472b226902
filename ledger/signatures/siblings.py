"""Sibling keys: an Ed25519 and a P-256 key for each Ethereum signing key, for the formats that can't take secp256k1.

git's SSH signatures, C2SP signed notes (checkpoints) and DSSE take Ed25519; the OpenSSF
model-signing format (OMS v1.0) takes only NIST curves.  A ledger key is secp256k1, so each
one has two *siblings*, derived from its secret with HKDF-SHA256 (RFC 5869): no new key file,
nothing new to back up or rotate, and an encrypted keystore unlocks them with the same passphrase.

A sibling is *certified* by the snapshot signature itself: every signed snapshot carries
``Ledger-Sibling`` trailers naming its signer's sibling public keys, in OpenSSH form, inside
the text that the EIP-712 signature covers (docs/lineage.md §8.7, ADR 35).  Whoever trusts an
address in a brain's trust set therefore trusts the keys that address certified, and nothing
else; ``ledger audit`` checks that an address never certifies two different siblings.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.protocol.signing import SignatureError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "ED25519",
    "P256",
    "SCHEMES",
    "SIBLING_TRAILER",
    "Siblings",
    "derive",
    "ed25519_key",
    "p256_key",
    "parse_public",
    "public_lines",
]

SIBLING_TRAILER = "Ledger-Sibling"
ED25519, P256 = "ssh-ed25519", "ecdsa-sha2-nistp256"  # the OpenSSH key type names, as the trailer spells them
SCHEMES = (ED25519, P256)
_SALT = b"brain-ledger/sibling/v1"
_P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def derive(secret: bytes, scheme: str, length: int) -> bytes:
    """HKDF-SHA256 (RFC 5869) of a secp256k1 secret: salt ``brain-ledger/sibling/v1``, info the scheme name."""
    if scheme not in SCHEMES:
        raise SignatureError(f"unknown sibling scheme {scheme!r}", hint=f"one of {', '.join(SCHEMES)}")
    prk = hmac.new(_SALT, secret, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + scheme.encode() + bytes([counter]), hashlib.sha256).digest()
        out, counter = out + block, counter + 1
    return out[:length]


_KEYS: dict[tuple[bytes, str], object] = {}


def ed25519_key(secret: bytes) -> Ed25519PrivateKey:
    """The Ed25519 sibling: its 32-byte RFC 8032 seed is the first 32 bytes of :func:`derive`."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = _KEYS.get((secret, ED25519))
    if key is None:
        key = _KEYS[(secret, ED25519)] = Ed25519PrivateKey.from_private_bytes(derive(secret, ED25519, 32))
    return key  # type: ignore[return-value]


def p256_key(secret: bytes) -> EllipticCurvePrivateKey:
    """The P-256 sibling: its scalar is ``(int(derive(48 bytes)) mod (n − 1)) + 1`` (FIPS 186-5 A.2.1)."""
    from cryptography.hazmat.primitives.asymmetric import ec

    key = _KEYS.get((secret, P256))
    if key is None:
        scalar = int.from_bytes(derive(secret, P256, 48), "big") % (_P256_ORDER - 1) + 1
        key = _KEYS[(secret, P256)] = ec.derive_private_key(scalar, ec.SECP256R1())
    return key  # type: ignore[return-value]


_LINES: dict[bytes, tuple[str, ...]] = {}


def public_lines(secret: bytes) -> tuple[str, ...]:
    """The ``Ledger-Sibling`` trailer values for a key: its siblings' OpenSSH public keys, Ed25519 first."""
    lines = _LINES.get(secret)
    if lines is None:
        from cryptography.hazmat.primitives import serialization as ser

        fmt = (ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)
        lines = _LINES[secret] = (
            ed25519_key(secret).public_key().public_bytes(*fmt).decode(),
            p256_key(secret).public_key().public_bytes(*fmt).decode(),
        )
    return lines


@dataclass(frozen=True)
class Siblings:
    """The sibling public keys one signed snapshot certifies, as OpenSSH lines (``type base64``)."""

    ed25519: str | None
    p256: str | None

    @classmethod
    def from_trailers(cls, values: list[str]) -> Siblings:
        """Parse a snapshot's ``Ledger-Sibling`` values: at most one of each scheme, each a well-formed key."""
        found: dict[str, str] = {}
        for value in values:
            scheme = parse_public(value)[0]
            if scheme in found:
                raise SignatureError(f"two {scheme} sibling keys in one snapshot")
            found[scheme] = value
        return cls(found.get(ED25519), found.get(P256))

    def pem(self, scheme: str) -> bytes:
        """The sibling's public key as PEM (SubjectPublicKeyInfo), the form model-signing and DSSE tools take."""
        from cryptography.hazmat.primitives import serialization as ser

        line = self.ed25519 if scheme == ED25519 else self.p256
        if line is None:
            raise SignatureError(f"no {scheme} sibling key is certified")
        key = ser.load_ssh_public_key(line.encode())
        return key.public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)


@functools.lru_cache(maxsize=1024)  # a lineage names the same few keys in every snapshot
def parse_public(value: str) -> tuple[str, bytes]:
    """``(scheme, SSH wire blob)`` of a trailer value; refuses anything but the two schemes, in canonical form."""
    parts = value.split(" ")
    if len(parts) != 2 or parts[0] not in SCHEMES:
        raise SignatureError(f"a Ledger-Sibling is '<{ED25519}|{P256}> <base64>', got {value[:80]!r}")
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except ValueError as exc:
        raise SignatureError(f"a Ledger-Sibling key is not base64: {exc}") from exc
    if base64.b64encode(blob).decode() != parts[1]:
        raise SignatureError("a Ledger-Sibling key is not canonical base64")
    if not blob.startswith(_PREFIX[parts[0]]):
        raise SignatureError(
            f"a Ledger-Sibling key's blob is not a {parts[0]} key (its type, curve or length "
            "fields are not the canonical ones)"
        )
    expected = {ED25519: 4 + 11 + 4 + 32, P256: 4 + 19 + 4 + 8 + 4 + 65}[parts[0]]
    if len(blob) != expected:
        raise SignatureError(f"a Ledger-Sibling {parts[0]} key is {len(blob)} bytes, not {expected}")
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key

    try:  # a P-256 point must be on the curve; cryptography checks it, as every verifier will
        load_ssh_public_key(value.encode())
    except (ValueError, TypeError) as exc:
        raise SignatureError(f"a Ledger-Sibling {parts[0]} key is not a valid public key: {exc}") from None
    return parts[0], blob


def _field(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


# Every blob starts with these bytes (RFC 8709 §4, RFC 5656 §3.1: type, [curve,] key length, [uncompressed point]).
_PREFIX = {
    ED25519: _field(ED25519.encode()) + (32).to_bytes(4, "big"),
    P256: _field(P256.encode()) + _field(b"nistp256") + (65).to_bytes(4, "big") + b"\x04",
}
