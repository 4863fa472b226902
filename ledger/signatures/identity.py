"""This machine's signing keys, on ssh-keygen's model: one file per role, readable only by its owner.

``$LEDGER_KEYS`` (default ``~/.config/brain-ledger/keys``) holds ``user.key``,
``agent.key`` and ``curator.key``.  A key without a passphrase is a small JSON file
(mode 0600, like an unencrypted ``id_ed25519``), loaded in microseconds so that signing
costs an upsert nothing it can notice.  A key with a passphrase is an eth-account
keystore (JSON v3, scrypt), which any Ethereum wallet imports; its passphrase comes from
``LEDGER_KEY_PASSPHRASE`` (taken out of the environment at start, see ``ledger._env``) or
a prompt, never from argv.  A file that group or others can read is refused, as ssh does.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ledger._env import secret
from ledger.errors import KeystoreError
from ledger.signatures.signing import address_of
from ledger.signatures.trust import ROLES

__all__ = ["LocalKey", "Passphrase", "discard", "generate", "key_path", "keys_home", "load", "peek", "promote"]

Passphrase = Callable[[bool], str]  # (confirm) -> passphrase, for an interactive prompt
_FORMAT = "brain-ledger-key-1"


def keys_home() -> Path:
    return Path(os.environ.get("LEDGER_KEYS") or Path.home() / ".config" / "brain-ledger" / "keys")


def key_path(role: str) -> Path:
    if role not in ROLES:
        raise KeystoreError(f"unknown key role {role!r}", hint="a signing key is a user, agent or curator key")
    return keys_home() / f"{role}.key"


@dataclass(frozen=True)
class LocalKey:
    role: str
    address: str  # 0x + 40 lower-case hex
    secret: bytes = b""

    def __repr__(self) -> str:  # never print the secret
        return f"LocalKey(role={self.role!r}, address={self.address!r})"


def _read(path: Path) -> dict[str, object]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise KeystoreError(f"cannot open {path}: {exc.strerror}", hint="a key file must be a regular file") from exc
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise KeystoreError(f"{path} is not a regular file")
        if st.st_mode & 0o077:
            raise KeystoreError(
                f"{path} is readable by others (mode {stat.S_IMODE(st.st_mode):o}); refusing to use it",
                hint=f"chmod 600 {path}",
            )
        data = fh.read(1 << 16)
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict):
            raise ValueError("not an object")
    except ValueError as exc:
        raise KeystoreError(f"{path} is not a key file: {exc}") from exc
    return doc


def peek(role: str) -> str | None:
    """The address of this machine's ``role`` key, without unlocking it; ``None`` when there is none."""
    try:
        doc = _read(key_path(role))
    except FileNotFoundError:
        return None
    address = str(doc.get("address", "")).lower()
    return address if address.startswith("0x") else "0x" + address


_CACHE: dict[tuple[str, int, int, int], LocalKey] = {}


def load(role: str, passphrase: Passphrase | None = None) -> LocalKey | None:
    """Unlock this machine's ``role`` key (cached per file version in this process); ``None`` if absent."""
    path = key_path(role)
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    version = (str(path), st.st_mtime_ns, st.st_ino, st.st_mode)  # a chmod or a swap is another file
    cached = _CACHE.get(version)
    if cached is not None:
        return cached
    try:
        doc = _read(path)
    except FileNotFoundError:
        return None
    if doc.get("format") == _FORMAT:
        try:
            key = bytes.fromhex(str(doc["private_key"]).removeprefix("0x"))
        except (KeyError, ValueError) as exc:
            raise KeystoreError(f"{path} is a damaged key file") from exc
    elif "crypto" in doc:
        key = _decrypt(path, doc, passphrase)
    else:
        raise KeystoreError(f"{path} is neither a brain-ledger key nor an encrypted keystore")
    found = LocalKey(role, address_of(key), key)
    if str(doc.get("address", "")).lower().removeprefix("0x") != found.address[2:]:
        raise KeystoreError(f"{path} names another address than its key's")
    _CACHE[version] = found
    return found


def _passphrase(source: Passphrase | None, confirm: bool, why: str) -> str:
    env = secret("LEDGER_KEY_PASSPHRASE")
    if env is not None:
        return env
    if source is None:
        raise KeystoreError(f"{why} needs its passphrase", hint="set LEDGER_KEY_PASSPHRASE or run interactively")
    return source(confirm)


def _decrypt(path: Path, doc: dict[str, object], source: Passphrase | None) -> bytes:
    from eth_account import Account  # only passphrase-protected keys pay for eth-account's import

    try:
        return bytes(Account.decrypt(doc, _passphrase(source, False, f"the key {path}")))
    except ValueError as exc:
        raise KeystoreError(f"cannot unlock {path}: wrong passphrase or damaged keystore") from exc


def generate(role: str, passphrase: Passphrase | None = None, *, encrypt: bool = False, suffix: str = "") -> LocalKey:
    """Make a new random ``role`` key; refuses to overwrite one.  ``encrypt`` asks for a passphrase;
    ``suffix`` writes it beside the current key (``.next``, for a rotation)."""
    path = key_path(role).with_name(key_path(role).name + suffix)
    key = os.urandom(32)
    found = LocalKey(role, address_of(key), key)
    doc: dict[str, object]
    if encrypt:
        from eth_account import Account

        words = _passphrase(passphrase, True, f"a new {role} key")
        if not words:
            raise KeystoreError("an empty passphrase: leave out --passphrase for a key without one")
        doc = {**Account.encrypt(key, words), "role": role}
    else:
        doc = {"format": _FORMAT, "role": role, "address": found.address, "private_key": "0x" + key.hex()}
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # never replaces: two inits racing keep one key, and both use it
        except FileExistsError:
            raise KeystoreError(f"{path} already exists", hint="'ledger keys rotate' replaces a key") from None
    finally:
        tmp.unlink(missing_ok=True)
    return found


def promote(role: str, suffix: str) -> Path:
    """Make ``<role>.key<suffix>`` this machine's ``role`` key; the old one is kept as
    ``<role>.key.<address>.old`` (a rotated key still proves what it signed)."""
    path = key_path(role)
    address = peek(role)
    old = path.with_name(f"{path.name}.{address}.old")
    if address is not None:
        os.link(path, old)
    os.replace(path.with_name(path.name + suffix), path)
    return old


def discard(role: str, suffix: str) -> None:
    key_path(role).with_name(key_path(role).name + suffix).unlink(missing_ok=True)
