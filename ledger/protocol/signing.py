"""Snapshot signatures: EIP-712 typed data over a snapshot's root, parent, tree and message.

docs/lineage.md §8 is the protocol; this module is its arithmetic.  The typed data is
encoded here by hand, with keccak from safe-pysha3 and secp256k1 from coincurve, because
``eth_account`` takes about a second to import and a signature must cost an upsert well
under two milliseconds (ADR 18).  The tests check every digest against eth-account's own
``encode_typed_data``, so any standard EIP-712 library verifies what this one signs.
"""

from __future__ import annotations

from typing import Any

from ledger.errors import LedgerError

__all__ = [
    "DOMAIN",
    "SIGNATURE_TRAILER",
    "SNAPSHOT_TYPE",
    "SignatureError",
    "address_of",
    "digest",
    "digest_of",
    "keccak",
    "message_hash",
    "recover",
    "sign",
    "split_signature",
    "typed_data",
]

DOMAIN = {"name": "brain-ledger", "version": "1"}
_DOMAIN_TYPE = b"EIP712Domain(string name,string version)"
SNAPSHOT_TYPE = (
    b"Snapshot(bytes32 root,bytes32 parentRoot,bytes20 parentCommit,bytes20 tree,string actor,bytes32 message)"
)
SIGNATURE_TRAILER = "Ledger-Signature"
_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # secp256k1's group order


class SignatureError(LedgerError):
    """A signature that is malformed, non-canonical, or by another key than expected."""


def keccak(data: bytes) -> bytes:
    """Keccak-256 (Ethereum's, not SHA3-256): the one in the ledger."""
    # safe-pysha3 (eth-hash's own fast backend) imports in ~2 ms; pycryptodome's keccak costs
    # ~30 ms of every signing CLI start, parsing its C declarations with cffi (issue 35).
    from sha3 import keccak_256

    return keccak_256(data).digest()


_DOMAIN_SEPARATOR: bytes | None = None


def _domain_separator() -> bytes:
    global _DOMAIN_SEPARATOR
    if _DOMAIN_SEPARATOR is None:
        _DOMAIN_SEPARATOR = keccak(
            keccak(_DOMAIN_TYPE) + keccak(DOMAIN["name"].encode()) + keccak(DOMAIN["version"].encode())
        )
    return _DOMAIN_SEPARATOR


def _word(value: bytes, size: int, what: str) -> bytes:
    if len(value) != size:
        raise SignatureError(f"{what} must be {size} bytes, got {len(value)}")
    return value + b"\x00" * (32 - size)  # EIP-712: bytesN is right-padded to 32 bytes


def digest(
    root: bytes, parent_root: bytes | None, parent_commit: bytes | None, tree: bytes, actor: str, signed_text: str
) -> bytes:
    """The 32 bytes a snapshot's key signs: ``keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(snapshot))``.

    ``parent_root`` and ``parent_commit`` are ``None`` for snapshot 0 (encoded as zeros);
    ``signed_text`` is the commit message without its ``Ledger-Signature`` line.
    """
    return digest_of(root, parent_root, parent_commit, tree, actor, message_hash(signed_text))


def message_hash(signed_text: str) -> bytes:
    """The typed data's ``message``: keccak-256 of the signed text (UTF-8)."""
    return keccak(signed_text.encode("utf-8"))


def digest_of(
    root: bytes, parent_root: bytes | None, parent_commit: bytes | None, tree: bytes, actor: str, message: bytes
) -> bytes:
    """:func:`digest` from the typed data's fields as signed, ``message`` already hashed (:func:`message_hash`):
    what a holder of those fields alone, without the commit message, recomputes (docs/lineage/anchor.md)."""
    struct = keccak(
        keccak(SNAPSHOT_TYPE)
        + _word(root, 32, "root")
        + _word(parent_root or b"\x00" * 32, 32, "parent root")
        + _word(parent_commit or b"\x00" * 20, 20, "parent commit")
        + _word(tree, 20, "tree")
        + keccak(actor.encode())
        + _word(message, 32, "message")
    )
    return keccak(b"\x19\x01" + _domain_separator() + struct)


def typed_data(
    root: bytes, parent_root: bytes | None, parent_commit: bytes | None, tree: bytes, actor: str, signed_text: str
) -> dict[str, Any]:
    """The same snapshot as an ``eth_signTypedData_v4`` document, for wallets and other verifiers."""
    return {
        "types": {
            "EIP712Domain": [{"name": "name", "type": "string"}, {"name": "version", "type": "string"}],
            "Snapshot": [
                {"name": "root", "type": "bytes32"},
                {"name": "parentRoot", "type": "bytes32"},
                {"name": "parentCommit", "type": "bytes20"},
                {"name": "tree", "type": "bytes20"},
                {"name": "actor", "type": "string"},
                {"name": "message", "type": "bytes32"},
            ],
        },
        "primaryType": "Snapshot",
        "domain": dict(DOMAIN),
        "message": {
            "root": "0x" + root.hex(),
            "parentRoot": "0x" + (parent_root or b"\x00" * 32).hex(),
            "parentCommit": "0x" + (parent_commit or b"\x00" * 20).hex(),
            "tree": "0x" + tree.hex(),
            "actor": actor,
            "message": "0x" + keccak(signed_text.encode("utf-8")).hex(),
        },
    }


def address_of(private_key: bytes) -> str:
    """The Ethereum address of a secp256k1 private key, ``0x`` and 40 lower-case hex digits."""
    from coincurve import PrivateKey

    public = PrivateKey(private_key).public_key.format(compressed=False)[1:]
    return "0x" + keccak(public)[12:].hex()


def sign(private_key: bytes, message_digest: bytes) -> str:
    """A 65-byte ``r ‖ s ‖ v`` signature (``v`` 27 or 28, ``s`` in the lower half), as ``0x`` hex."""
    from coincurve import PrivateKey

    raw = PrivateKey(private_key).sign_recoverable(message_digest, hasher=None)
    return "0x" + raw[:64].hex() + f"{raw[64] + 27:02x}"


def recover(message_digest: bytes, signature: str) -> str:
    """The address that made ``signature`` over ``message_digest``; refuses any non-canonical form."""
    from coincurve import PublicKey

    text = signature[2:] if signature.startswith("0x") else ""
    if len(text) != 130 or text != text.lower() or any(c not in "0123456789abcdef" for c in text):
        raise SignatureError("a signature is 0x and 130 lower-case hex digits (r, s, v)")
    raw = bytes.fromhex(text)
    r, s, v = int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:64], "big"), raw[64]
    if v not in (27, 28):
        raise SignatureError(f"signature v is {v}; it must be 27 or 28")
    if not 0 < r < _N or not 0 < s <= _N // 2:
        raise SignatureError("signature r or s is out of range (s must be in the lower half, EIP-2)")
    try:
        public = PublicKey.from_signature_and_message(raw[:64] + bytes([v - 27]), message_digest, hasher=None)
    except Exception as exc:  # coincurve raises plain Exception for an unrecoverable point
        raise SignatureError(f"the signature recovers no key: {exc}") from exc
    return "0x" + keccak(public.format(compressed=False)[1:])[12:].hex()


def split_signature(message: str) -> tuple[str, str | None]:
    """``(signed text, signature)``: a message's last line, when it is the signature trailer, and the rest."""
    body = message[:-1] if message.endswith("\n") else message
    head, _, last = body.rpartition("\n")
    prefix = SIGNATURE_TRAILER + ": "
    if not last.startswith(prefix):
        return message, None
    return head + "\n", last[len(prefix) :]
