"""Keystores written without eth-account (ledger/signatures/keystore.py) are the ones eth-account writes.

eth-account is the reference here: it decrypts every document this module makes, and its own
``Account.encrypt`` output has the same shape, field for field.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from eth_account import Account
from eth_utils import to_checksum_address

from ledger.signatures import keystore

FAST_N = 2**10  # the format is the same at any work factor; the standard one is checked once


def shape(doc: object) -> object:
    """The document's keys and constant values, with every random or key-dependent value blanked."""
    if isinstance(doc, dict):
        return {k: shape(v) for k, v in doc.items()}
    return type(doc).__name__


@pytest.mark.parametrize("password", ["correct horse", "pässwörd ✓", "x" * 200])
def test_eth_account_decrypts_what_we_write(password: str) -> None:
    key = os.urandom(32)
    doc = keystore.encrypt(key, password, n=FAST_N)
    assert bytes(Account.decrypt(doc, password)) == key
    assert "0x" + doc["address"] == Account.from_key(key).address
    with pytest.raises(ValueError):
        Account.decrypt(doc, password + "!")


def test_the_standard_work_factor_and_the_same_document_as_eth_account() -> None:
    key = os.urandom(32)
    ours, theirs = keystore.encrypt(key, "pw"), Account.encrypt(key, "pw")
    assert shape(ours) == shape(theirs)
    assert {k: v for k, v in ours["crypto"]["kdfparams"].items() if k != "salt"} == {
        k: v for k, v in theirs["crypto"]["kdfparams"].items() if k != "salt"
    }
    assert ours["crypto"]["kdfparams"]["n"] == 2**18 and ours["crypto"]["cipher"] == theirs["crypto"]["cipher"]
    assert ours["address"] == theirs["address"]
    assert bytes(Account.decrypt(ours, "pw")) == key


def test_checksum_addresses_match_eip55() -> None:
    for _ in range(50):
        raw = "0x" + os.urandom(20).hex()
        assert keystore.checksum_address(raw) == to_checksum_address(raw)


@pytest.mark.parametrize("key", [b"\x00" * 32, bytes.fromhex("ff" * 32), b"\x01" * 31])
def test_a_key_outside_the_curve_is_refused(key: bytes) -> None:
    with pytest.raises(ValueError, match="secp256k1"):
        keystore.encrypt(key, "pw", n=FAST_N)


def test_keys_new_writes_a_keystore_eth_account_unlocks_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ledger keys new` (a committer key) costs its KDF and little else: no eth-account on its path
    (~0.7 s to import), and the key it prints is the one eth-account and `load_account` unlock."""
    import json

    from ledger.chain.keys import load_account
    from tests.cli.test_startup_imports import heavy_imports
    from tests.harness.cli import run_ledger

    env = {"LEDGER_KEYSTORE": str(tmp_path), "LEDGER_KEY_PASSWORD": "pw", "PYTHONPROFILEIMPORTTIME": "1"}
    proc = run_ledger("keys", "new", "k1", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    address = proc.stdout.strip()
    assert address == to_checksum_address(address), "the address is printed in its EIP-55 form"
    ways, packages = heavy_imports(proc.stderr)
    assert not packages, ways
    doc = json.loads((tmp_path / "k1.json").read_text())
    assert doc["crypto"]["kdfparams"]["n"] == keystore.SCRYPT_N, "the standard work factor, on purpose"
    assert Account.from_key(Account.decrypt(doc, "pw")).address == address
    monkeypatch.setenv("LEDGER_KEYSTORE", str(tmp_path))
    monkeypatch.setenv("LEDGER_KEY_PASSWORD", "pw")
    assert load_account("k1", 1).address == address
    listed = run_ledger("keys", "list", "--json", env=env, check=True)
    assert {"name": "k1", "address": address} in [
        {k: e[k] for k in ("name", "address")} for e in json.loads(listed.stdout)
    ]
