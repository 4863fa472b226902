"""The light signer (ledger/chain/signer.py) against eth-account's and pyrlp's own, byte for byte:
the transactions ``ledger commit`` sends, anvil's development keys, and keystores (ADR 18's rule)."""

from __future__ import annotations

import random

import pytest
import rlp as pyrlp
from eth_account import Account
from eth_utils import to_checksum_address

from ledger.chain import keys, signer
from ledger.errors import ChainError, KeystoreError

RNG = random.Random(1559)


def _item(depth: int = 0) -> bytes | int | list:
    pick = RNG.randrange(5 if depth < 3 else 3)
    if pick == 0:
        return RNG.randbytes(RNG.choice([0, 1, 2, 55, 56, 200, 70_000]))
    if pick == 1:
        return bytes([RNG.randrange(256)])
    if pick == 2:
        return RNG.getrandbits(RNG.choice([0, 7, 8, 64, 256]))
    return [_item(depth + 1) for _ in range(RNG.randrange(6))]


def _bytes(item: bytes | int | list) -> bytes | list:
    """pyrlp's form of an item: ints as big-endian bytes (it has no int without a sedes)."""
    if isinstance(item, list):
        return [_bytes(i) for i in item]
    return item.to_bytes((item.bit_length() + 7) // 8, "big") if isinstance(item, int) else item


def test_rlp_is_pyrlps() -> None:
    for _ in range(300):
        item = _item()
        assert signer.rlp(item) == pyrlp.encode(_bytes(item))
    assert signer.rlp([b"x" * 56] * 40) == pyrlp.encode([b"x" * 56] * 40)  # long list lengths


@pytest.mark.parametrize("trial", range(12))
def test_a_transaction_is_eth_accounts_byte_for_byte(trial: int) -> None:
    key = RNG.randbytes(32)
    tx = {
        "type": 2,
        "chainId": RNG.choice([1, 10, 31337, 11155111, 2**40]),
        "nonce": RNG.choice([0, 1, 127, 128, 2**32]),
        "to": to_checksum_address(RNG.randbytes(20)),  # eth-account takes only the checksummed form
        "value": RNG.choice([0, 1, 10**18]),
        "data": RNG.randbytes(RNG.choice([0, 1, 100, 164, 1060])),
        "gas": RNG.randrange(21_000, 3_000_000),
        "maxPriorityFeePerGas": RNG.choice([0, 1, 10**9]),
        "maxFeePerGas": RNG.randrange(10**9, 10**12),
    }
    theirs = Account.sign_transaction({**tx, "accessList": []}, key)
    ours = signer.Signer(key)
    assert ours.address == Account.from_key(key).address
    assert ours.sign_transaction(tx) == bytes(theirs.raw_transaction)


def test_the_light_signer_refuses_what_it_does_not_sign() -> None:
    key = RNG.randbytes(32)
    base = {"chainId": 1, "nonce": 0, "to": "0x" + "11" * 20, "gas": 1, "maxPriorityFeePerGas": 1, "maxFeePerGas": 1}
    for bad in ({"type": 0}, {"accessList": [{"address": "0x" + "11" * 20, "storageKeys": []}]}, {"to": "0x"}):
        with pytest.raises(ChainError):
            signer.sign_1559(key, {**base, **bad})
    with pytest.raises(KeystoreError):
        signer.Signer(b"\x00" * 32)


def test_anvils_development_keys_are_eth_accounts_derivation() -> None:
    Account.enable_unaudited_hdwallet_features()
    for i in range(10):
        theirs = Account.from_mnemonic(keys._ANVIL_MNEMONIC, account_path=f"m/44'/60'/0'/0/{i}")
        assert keys.dev_account(i).key == bytes(theirs.key)
        assert keys.dev_account(i).address == theirs.address


@pytest.mark.parametrize("kdf", ["scrypt", "pbkdf2"])
def test_keystores_decrypt_as_eth_account_decrypts_them(kdf: str) -> None:
    key = RNG.randbytes(32)
    doc = Account.encrypt(key, "pässword", kdf=kdf, iterations=2**10 if kdf == "scrypt" else 1000)
    assert signer.decrypt_keystore(doc, "pässword") == bytes(Account.decrypt(doc, "pässword")) == key
    with pytest.raises(ValueError, match="MAC mismatch"):
        signer.decrypt_keystore(doc, "wrong")


def test_the_projects_own_keystores_decrypt() -> None:
    from ledger.signatures.keystore import encrypt

    key = RNG.randbytes(32)
    doc = encrypt(key, "pw", n=2**10)
    assert signer.decrypt_keystore(doc, "pw") == key == bytes(Account.decrypt(doc, "pw"))
