"""Committer keys: encrypted keystores (JSON v3), never a secret in argv.

Keystores live in ``$LEDGER_KEYSTORE`` (default ``~/.config/brain-ledger/keystore``),
one ``<name>.json`` each.  Passwords come from ``LEDGER_KEY_PASSWORD`` or an
interactive prompt supplied by the caller.  Anvil's well-known development
accounts are usable only on chain id 31337.

A new key is locked by :mod:`ledger.signatures.keystore` (the document ``Account.encrypt``
writes, without eth-account's ~0.7 s import), so ``keys new`` costs its deliberate KDF and
little else.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from ledger._env import secret
from ledger.chain.signer import Signer, decrypt_keystore, derive_hd_key
from ledger.errors import KeystoreError
from ledger.signatures import keystore

__all__ = [
    "ANVIL_CHAIN_ID",
    "DEV_KEY_NAME",
    "Signer",
    "dev_addresses",
    "import_key",
    "keystore_dir",
    "list_keys",
    "load_account",
    "new_key",
]

ANVIL_CHAIN_ID = 31337
DEV_KEY_NAME = "anvil-dev"  # the first anvil account, by name rather than by secret
_ANVIL_MNEMONIC = "test test test test test test test test test test test junk"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
PasswordSource = Callable[[bool], str]  # (confirm) -> password


def keystore_dir() -> Path:
    return Path(os.environ.get("LEDGER_KEYSTORE", Path.home() / ".config" / "brain-ledger" / "keystore"))


@cache
def _dev_accounts() -> tuple[Signer, ...]:
    """Anvil's ten default accounts, derived from its published mnemonic (nothing secret is stored)."""
    return tuple(Signer(derive_hd_key(_ANVIL_MNEMONIC, f"m/44'/60'/0'/0/{i}")) for i in range(10))


def dev_addresses() -> frozenset[str]:
    return frozenset(a.address for a in _dev_accounts())


def dev_account(index: int = 0) -> Signer:
    return _dev_accounts()[index]


def _path(name: str) -> Path:
    if not _NAME.match(name):
        raise KeystoreError(f"invalid key name {name!r}", hint="use letters, digits, '.', '_' and '-'")
    return keystore_dir() / f"{name}.json"


def _password(source: PasswordSource | None, confirm: bool) -> str:
    env = secret("LEDGER_KEY_PASSWORD")
    if env is not None:
        return env
    if source is None:
        raise KeystoreError("no password: set LEDGER_KEY_PASSWORD or run interactively")
    return source(confirm)


def _write(name: str, key: bytes, source: PasswordSource | None) -> str:
    path = _path(name)
    if path.exists():
        raise KeystoreError(f"key {name!r} already exists at {path}", hint="choose another name")
    password = _password(source, True)
    if not password:
        raise KeystoreError("refusing an empty keystore password")
    doc = keystore.encrypt(key, password)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh)
    return "0x" + doc["address"]


def new_key(name: str, password: PasswordSource | None = None) -> str:
    """Create a random key (from the OS's CSPRNG), store it encrypted, and return its address."""
    while True:
        key = os.urandom(32)
        if 0 < int.from_bytes(key, "big") < keystore.SECP256K1_ORDER:  # fails once in ~2**128 draws
            return _write(name, key, password)


def import_key(name: str, private_key: str, password: PasswordSource | None = None) -> str:
    """Encrypt an existing private key (read by the caller from stdin or a prompt)."""
    from eth_account import Account  # parses every spelling of a key users paste; not a hot path

    try:
        account = Account.from_key(private_key.strip())
    except (ValueError, TypeError) as exc:
        raise KeystoreError("that is not a valid private key (expected 32 bytes of hex)") from exc
    return _write(name, bytes(account.key), password)


def list_keys() -> list[dict[str, Any]]:
    out = []
    directory = keystore_dir()
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            address = "0x" + json.loads(path.read_text())["address"]
        except (ValueError, KeyError):
            address = None
        out.append({"name": path.stem, "address": address, "path": str(path)})
    return out


def load_account(name: str, chain_id: int, password: PasswordSource | None = None) -> Signer:
    """Unlock a key for signing on ``chain_id``; development keys only on 31337."""
    if name == DEV_KEY_NAME:
        account = dev_account(0)
    else:
        path = _path(name)
        if not path.exists():
            raise KeystoreError(f"no key named {name!r} in {keystore_dir()}", hint="see 'ledger keys list'")
        try:
            key = decrypt_keystore(json.loads(path.read_text()), _password(password, False))
        except (ValueError, KeyError, TypeError) as exc:
            raise KeystoreError(f"cannot unlock key {name!r}: wrong password or corrupt keystore") from exc
        account = Signer(key)
    if account.address in dev_addresses() and chain_id != ANVIL_CHAIN_ID:
        raise KeystoreError(
            f"key {name!r} is a well-known anvil development key; refusing it on chain id {chain_id}",
            hint=f"development keys are accepted only on chain id {ANVIL_CHAIN_ID}",
        )
    return account
