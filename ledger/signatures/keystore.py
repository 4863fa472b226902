"""Writing a Web3 Secret Storage keystore (JSON v3: scrypt, AES-128-CTR, keccak MAC) without eth-account.

Why: ``eth_account`` imports ``eth_keyfile``, which imports py_ecc's BLS12-381 code for
version-4 keystores: ~0.4 s before a key is made, on top of a KDF that is slow on purpose.
The format is fixed and small (https://ethereum.org/developers/docs/data-structures-and-encoding/web3-secret-storage);
this module writes exactly what ``eth_account.Account.encrypt(key, password)`` writes, with the
same primitives (pycryptodome's scrypt and AES, keccak-256), and the tests decrypt every file
it makes with eth-account.  Reading a keystore stays with eth-account (``Account.decrypt``).

The KDF cost is a deliberate choice: scrypt with n = 2**18, r = 8, p = 1 (eth-account's and
geth's "standard" parameters), about 0.5 s on a 2020s server core, so that a stolen keystore
costs an attacker that much per password guess.  docs/reference.md (`keys new`) says so.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from ledger.protocol.signing import address_of

__all__ = ["SCRYPT_N", "SECP256K1_ORDER", "checksum_address", "encrypt"]

SCRYPT_N, SCRYPT_R, SCRYPT_P, DKLEN = 2**18, 8, 1, 32
SECP256K1_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # secp256k1's group order


def _keccak(data: bytes) -> bytes:
    from sha3 import keccak_256

    return keccak_256(data).digest()


def checksum_address(address: str) -> str:
    """EIP-55 mixed-case form of a ``0x`` address."""
    hexpart = address.lower().removeprefix("0x")
    digest = _keccak(hexpart.encode()).hex()
    return "0x" + "".join(c.upper() if int(digest[i], 16) >= 8 else c for i, c in enumerate(hexpart))


def encrypt(private_key: bytes, password: str, *, n: int = SCRYPT_N) -> dict[str, Any]:
    """``private_key`` as a JSON v3 keystore document locked by ``password`` (UTF-8, as eth-account)."""
    from Crypto.Cipher import AES
    from Crypto.Protocol.KDF import scrypt
    from Crypto.Util import Counter

    if len(private_key) != 32 or not 0 < int.from_bytes(private_key, "big") < SECP256K1_ORDER:
        raise ValueError("a secp256k1 private key is 32 bytes in [1, n)")
    salt, iv = os.urandom(16), os.urandom(16)
    derived = scrypt(password.encode("utf-8"), salt, key_len=DKLEN, N=n, r=SCRYPT_R, p=SCRYPT_P)  # type: ignore[arg-type]
    counter = Counter.new(128, initial_value=int.from_bytes(iv, "big"))
    ciphertext = AES.new(derived[:16], AES.MODE_CTR, counter=counter).encrypt(private_key)
    return {
        "address": checksum_address(address_of(private_key))[2:],
        "crypto": {
            "cipher": "aes-128-ctr",
            "cipherparams": {"iv": iv.hex()},
            "ciphertext": ciphertext.hex(),
            "kdf": "scrypt",
            "kdfparams": {"dklen": DKLEN, "n": n, "r": SCRYPT_R, "p": SCRYPT_P, "salt": salt.hex()},
            "mac": _keccak(derived[16:32] + ciphertext).hex(),
        },
        "id": str(uuid.uuid4()),
        "version": 3,
    }
