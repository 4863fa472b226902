"""A committer key that signs the registry's transactions without eth-account.

``ledger chain anchor`` signs one EIP-1559 transaction; eth-account takes ~0.5 s to import for it
(and web3, which a build_transaction needs, ~1 s: issue 35).  The arithmetic is short: RLP,
keccak (safe-pysha3) and a recoverable secp256k1 signature (coincurve, RFC 6979 nonces, low
``s``), as :mod:`ledger.protocol.signing` already does for snapshots (ADR 18).  The tests
check every transaction byte for byte against eth-account's ``sign_transaction``, anvil's
development keys against its ``from_mnemonic``, and keystores against its ``decrypt``.
Deploying (a contract creation) still goes through eth-account: :meth:`Signer.local_account`.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from ledger.chain.abi import checksum, hexbytes
from ledger.errors import ChainError, KeystoreError
from ledger.protocol.signing import keccak

__all__ = ["Signer", "decrypt_keystore", "derive_hd_key", "rlp", "sign_1559"]

_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # secp256k1's group order
_HARDENED = 1 << 31


class Signer:
    """One private key: its checksummed ``address``, and what it signs."""

    def __init__(self, key: bytes) -> None:
        from coincurve import PrivateKey

        if len(key) != 32 or not 0 < int.from_bytes(key, "big") < _N:
            raise KeystoreError("a secp256k1 private key is 32 bytes in [1, n)")
        self.key = key
        self.address = checksum(keccak(PrivateKey(key).public_key.format(compressed=False)[1:])[12:])

    def __repr__(self) -> str:  # never the key
        return f"Signer({self.address})"

    def sign_transaction(self, tx: dict[str, Any]) -> bytes:
        """The raw signed transaction (what ``eth_sendRawTransaction`` takes) of an EIP-1559 ``tx``."""
        return sign_1559(self.key, tx)

    def local_account(self) -> Any:
        """The same key as an eth-account ``LocalAccount``, for web3's own paths (deploy, register)."""
        from eth_account import Account

        return Account.from_key(self.key)


def rlp(item: bytes | int | list[Any]) -> bytes:
    """Recursive-length prefix encoding of bytes, non-negative ints (big-endian, no leading zero)
    and lists of them: the yellow paper's appendix B."""
    if isinstance(item, list):
        body = b"".join(rlp(i) for i in item)
        return _length(len(body), 0xC0) + body
    if isinstance(item, int):
        if item < 0:
            raise ChainError("RLP encodes no negative integer")
        item = item.to_bytes((item.bit_length() + 7) // 8, "big")
    if len(item) == 1 and item[0] < 0x80:
        return item
    return _length(len(item), 0x80) + item


def _length(n: int, offset: int) -> bytes:
    if n < 56:
        return bytes([offset + n])
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([offset + 55 + len(size)]) + size


def sign_1559(key: bytes, tx: dict[str, Any]) -> bytes:
    """``0x02 ‖ rlp([chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gas, to, value, data,
    accessList, yParity, r, s])`` over keccak(``0x02 ‖ rlp(the first nine)``) (EIP-1559, EIP-2718).
    Only calls (a ``to``) with an empty access list: what the registry's commits need."""
    from coincurve import PrivateKey

    if tx.get("type", 2) != 2 or tx.get("accessList"):
        raise ChainError("the light signer signs EIP-1559 transactions with an empty access list only")
    to = hexbytes(tx["to"])
    if len(to) != 20:
        raise ChainError("the light signer signs calls only (a 20-byte 'to'); a deploy goes through eth-account")
    fields: list[Any] = [
        tx["chainId"],
        tx["nonce"],
        tx["maxPriorityFeePerGas"],
        tx["maxFeePerGas"],
        tx["gas"],
        to,
        tx.get("value", 0),
        hexbytes(tx.get("data", b"")),
        [],
    ]
    signature = PrivateKey(key).sign_recoverable(keccak(b"\x02" + rlp(fields)), hasher=None)
    r, s, parity = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:64], "big"), signature[64]
    return b"\x02" + rlp([*fields, parity, r, s])


def derive_hd_key(mnemonic: str, path: str, passphrase: str = "") -> bytes:
    """The private key at ``path`` (``m/44'/60'/0'/0/i``) of a BIP-39 ``mnemonic`` (BIP-32 over
    secp256k1): anvil's development accounts, derived from its published mnemonic."""
    from coincurve import PrivateKey

    seed = hashlib.pbkdf2_hmac("sha512", mnemonic.encode(), ("mnemonic" + passphrase).encode(), 2048)
    digest = hmac.digest(b"Bitcoin seed", seed, "sha512")
    key, chain = digest[:32], digest[32:]
    for part in path.split("/")[1:]:
        index = int(part.rstrip("'")) + (_HARDENED if part.endswith("'") else 0)
        data = b"\x00" + key if index >= _HARDENED else PrivateKey(key).public_key.format(compressed=True)
        digest = hmac.digest(chain, data + index.to_bytes(4, "big"), "sha512")
        child = (int.from_bytes(digest[:32], "big") + int.from_bytes(key, "big")) % _N
        if int.from_bytes(digest[:32], "big") >= _N or child == 0:  # BIP-32: skip to the next index
            raise ChainError(f"the HD path {path} reaches an invalid key (probability below 2^-127)")
        key, chain = child.to_bytes(32, "big"), digest[32:]
    return key


def decrypt_keystore(doc: dict[str, Any], password: str) -> bytes:
    """The private key of a JSON v3 keystore (scrypt or pbkdf2, AES-128-CTR, keccak MAC); ValueError
    when the MAC does not match (a wrong password or a corrupt file), as eth-account raises."""
    from Crypto.Cipher import AES
    from Crypto.Util import Counter

    crypto = doc.get("crypto") or doc.get("Crypto")
    if doc.get("version") != 3 or not isinstance(crypto, dict) or crypto.get("cipher") != "aes-128-ctr":
        raise ValueError("not a JSON v3 keystore with aes-128-ctr")
    params, secret = crypto["kdfparams"], password.encode("utf-8")
    salt = bytes.fromhex(params["salt"])
    if crypto["kdf"] == "scrypt":
        n, r, p = int(params["n"]), int(params["r"]), int(params["p"])
        derived = hashlib.scrypt(
            secret, salt=salt, n=n, r=r, p=p, dklen=int(params["dklen"]), maxmem=128 * r * (n + p + 2) + (1 << 20)
        )
    elif crypto["kdf"] == "pbkdf2" and params.get("prf") == "hmac-sha256":
        derived = hashlib.pbkdf2_hmac("sha256", secret, salt, int(params["c"]), int(params["dklen"]))
    else:
        raise ValueError(f"unsupported keystore kdf {crypto['kdf']!r}")
    ciphertext = bytes.fromhex(crypto["ciphertext"])
    if not hmac.compare_digest(keccak(derived[16:32] + ciphertext), bytes.fromhex(crypto["mac"])):
        raise ValueError("MAC mismatch")
    counter = Counter.new(128, initial_value=int.from_bytes(bytes.fromhex(crypto["cipherparams"]["iv"]), "big"))
    return AES.new(derived[:16], AES.MODE_CTR, counter=counter).decrypt(ciphertext)
