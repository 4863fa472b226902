"""OpenSSH signatures (SSHSIG, openssh-portable PROTOCOL.sshsig) made and checked with an Ed25519 key.

This is what ``ssh-keygen -Y sign`` writes and ``git verify-commit`` checks under
``gpg.format=ssh``: a snapshot commit's ``gpgsig`` header holds one, made by its signer's Ed25519
sibling (:mod:`ledger.signatures.siblings`) in the namespace ``git``.

Written here rather than taken from PyPI: the one maintained package, ``sshsig`` (0.3.1), only
*verifies*; signing is the other half of the same ~60 lines of wire format, and one strict
implementation of both is easier to hold to exact bytes than a dependency plus a signing shim.

Only what the ledger makes is accepted: an ``ssh-ed25519`` key, hash ``sha512``, an empty
``reserved`` field, and the armor exactly as ssh-keygen writes it (base64 wrapped at 70 columns,
one trailing newline), so that one signature has one encoding.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from typing import TYPE_CHECKING

from ledger.protocol.signing import SignatureError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["BEGIN", "END", "NAMESPACE", "armor", "dearmor", "public_blob", "sign", "signed_data", "verify"]

MAGIC = b"SSHSIG"
VERSION = 1
NAMESPACE = "git"
HASH = "sha512"
ED25519 = b"ssh-ed25519"
BEGIN, END = "-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----"
_WRAP = 70  # ssh-keygen's line width for the armored base64


def _string(data: bytes) -> bytes:
    """An SSH wire ``string`` (RFC 4251 §5): uint32 length, big-endian, then the bytes."""
    return struct.pack(">I", len(data)) + data


def _strings(blob: bytes, count: int, what: str) -> list[bytes]:
    """Exactly ``count`` SSH strings filling ``blob``; anything short, long or trailing is refused."""
    out, at = [], 0
    for _ in range(count):
        if at + 4 > len(blob):
            raise SignatureError(f"{what} is truncated")
        n = int.from_bytes(blob[at : at + 4], "big")
        if at + 4 + n > len(blob):
            raise SignatureError(f"{what} is truncated")
        out.append(blob[at + 4 : at + 4 + n])
        at += 4 + n
    if at != len(blob):
        raise SignatureError(f"{what} has {len(blob) - at} trailing byte(s)")
    return out


def public_blob(raw: bytes) -> bytes:
    """The SSH wire form of a 32-byte Ed25519 public key (what ``ssh-ed25519 AAAA…`` encodes)."""
    return _string(ED25519) + _string(raw)


def signed_data(message: bytes, namespace: str = NAMESPACE) -> bytes:
    """The bytes the key signs: the preamble, namespace, reserved, hash name and SHA-512 of ``message``."""
    digest = hashlib.sha512(message).digest()
    return MAGIC + _string(namespace.encode()) + _string(b"") + _string(HASH.encode()) + _string(digest)


def armor(blob: bytes) -> str:
    """The armored form of a signature blob, byte for byte as ssh-keygen writes it."""
    text = base64.b64encode(blob).decode()
    return "\n".join([BEGIN, *(text[i : i + _WRAP] for i in range(0, len(text), _WRAP)), END]) + "\n"


def dearmor(text: str) -> bytes:
    """The blob of an armored signature; refused unless :func:`armor` would write exactly ``text``."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[0] != BEGIN or lines[-2] != END or lines[-1] != "":
        raise SignatureError("not an armored SSH signature ('-----BEGIN SSH SIGNATURE-----' … END, newline)")
    try:
        blob = base64.b64decode("".join(lines[1:-2]), validate=True)
    except ValueError as exc:
        raise SignatureError(f"the SSH signature is not base64: {exc}") from exc
    if armor(blob) != text:
        raise SignatureError("the SSH signature is not in canonical armor (70-column base64, as ssh-keygen writes)")
    return blob


def sign(key: Ed25519PrivateKey, message: bytes, namespace: str = NAMESPACE) -> str:
    """An armored SSHSIG of ``message`` by ``key`` (Ed25519 is deterministic: same inputs, same bytes)."""
    from cryptography.hazmat.primitives import serialization as ser

    raw = key.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
    signature = _string(ED25519) + _string(key.sign(signed_data(message, namespace)))
    blob = (
        MAGIC
        + struct.pack(">I", VERSION)
        + _string(public_blob(raw))
        + _string(namespace.encode())
        + _string(b"")
        + _string(HASH.encode())
        + _string(signature)
    )
    return armor(blob)


def verify(text: str, message: bytes, public: bytes, namespace: str = NAMESPACE) -> None:
    """Check an armored SSHSIG of ``message`` by the Ed25519 key ``public`` (its SSH wire blob, see
    :func:`ledger.signatures.siblings.parse_public`); raises :class:`SignatureError` if it is not exactly that."""
    blob = dearmor(text)
    if blob[:6] != MAGIC or blob[6:10] != struct.pack(">I", VERSION):
        raise SignatureError("not an SSHSIG version 1 blob")
    key, ns, reserved, hash_name, signature = _strings(blob[10:], 5, "the SSH signature")
    if key != public:
        raise SignatureError("the SSH signature names another key than the certified one")
    if ns != namespace.encode():
        raise SignatureError(f"the SSH signature's namespace is {ns[:40]!r}, not {namespace!r}")
    if reserved or hash_name != HASH.encode():
        raise SignatureError(f"the SSH signature must use hash {HASH} and an empty reserved field")
    kind, raw = _strings(key, 2, "the SSH signature's key")
    scheme, sig = _strings(signature, 2, "the SSH signature's signature")
    if kind != ED25519 or scheme != ED25519 or len(raw) != 32 or len(sig) != 64:
        raise SignatureError("the SSH signature is not an ssh-ed25519 one")
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(sig, signed_data(message, namespace))
    except InvalidSignature:
        raise SignatureError("the SSH signature does not verify over these bytes") from None
