"""This machine's signing keys, on ssh-keygen's model: one file per role, readable only by its owner.

A :class:`KeyDir` (``$LEDGER_KEYS``, else the directory the brain's config names, else
``~/.config/brain-ledger/keys``) holds ``user.key``, ``agent.key`` and ``curator.key``, and
every key a rotation replaced as ``<role>.<address>.key``.  A key without a passphrase is a small JSON file
(mode 0600, like an unencrypted ``id_ed25519``), loaded in microseconds so that signing
costs an upsert nothing it can notice.  A key with a passphrase is an eth-account
keystore (JSON v3, scrypt), which any Ethereum wallet imports; its passphrase comes from
``LEDGER_KEY_PASSPHRASE`` (taken out of the environment at start, see ``ledger._env``) or
a prompt, never from argv.  A file that group or others can read is refused, as ssh does.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ledger._env import secret
from ledger.errors import KeystoreError
from ledger.protocol.signing import address_of
from ledger.signatures.trust import ROLES

__all__ = ["KeyDir", "KeyExistsError", "LocalKey", "Passphrase", "keys_home"]

Passphrase = Callable[[bool], str]  # (confirm) -> passphrase, for an interactive prompt
_FORMAT = "brain-ledger-key-1"


def keys_home(configured: str | os.PathLike[str] | None = None) -> Path:
    """Where the keys are: ``$LEDGER_KEYS``, else the brain's configured directory, else the default."""
    given = os.environ.get("LEDGER_KEYS") or configured
    return Path(given) if given else Path.home() / ".config" / "brain-ledger" / "keys"


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


def _address(doc: dict[str, object]) -> str:
    address = str(doc.get("address", "")).lower()
    return address if address.startswith("0x") else "0x" + address


_CACHE: dict[tuple[str, int, int, int], LocalKey] = {}
_KEPT = re.compile(r"(?P<role>user|agent|curator|verifier)\.(?P<address>0x[0-9a-f]{40})\.key\Z")
_LEGACY = re.compile(r"(?P<role>user|agent|curator|verifier)\.key\.(?P<address>0x[0-9a-f]{40})\.old\Z")


class KeyDir:
    """One directory of signing keys.  ``<role>.key`` is the machine's current key for a role
    (what a new brain trusts); ``<role>.<address>.key`` is each key it replaced, kept because
    another brain may still trust it and sign with it (docs/adr/0026).  A brain signs with
    whichever of these its own trust set names, so rotating a key in one brain never changes
    what another brain signs with."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def path(self, role: str) -> Path:
        if role not in ROLES:
            raise KeystoreError(
                f"unknown key role {role!r}", hint="a signing key is a user, agent, curator or verifier key"
            )
        return self.home / f"{role}.key"

    def peek(self, role: str) -> str | None:
        """The address of this machine's current ``role`` key, without unlocking it; ``None`` when none."""
        try:
            return _address(_read(self.path(role)))
        except FileNotFoundError:
            return None

    def find(self, role: str, allowed: Iterable[str]) -> tuple[str, Path] | None:
        """A local ``role`` key whose address is in ``allowed``: the current one first, then kept ones."""
        allowed = set(allowed)
        current = self.peek(role)
        if current in allowed:
            return current, self.path(role)
        try:
            names = sorted(os.listdir(self.home))
        except FileNotFoundError:
            return None
        for name in names:
            m = _KEPT.match(name) or _LEGACY.match(name)
            if m and m["role"] == role and m["address"] in allowed:
                path = self.home / name
                if _address(_read(path)) == m["address"]:
                    return m["address"], path
        return None

    def load(self, role: str, passphrase: Passphrase | None = None, path: Path | None = None) -> LocalKey | None:
        """Unlock the ``role`` key at ``path`` (default: the current one), cached per file version in
        this process; ``None`` if absent."""
        path = path or self.path(role)
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
        if _address(doc) != found.address:
            raise KeystoreError(f"{path} names another address than its key's")
        _CACHE[version] = found
        return found

    def generate(
        self, role: str, passphrase: Passphrase | None = None, *, encrypt: bool = False, suffix: str = ""
    ) -> LocalKey:
        """Make a new random ``role`` key; refuses to overwrite one.  ``encrypt`` asks for a passphrase;
        ``suffix`` writes it beside the current key (``.next``, for a rotation)."""
        path = self.path(role).with_name(self.path(role).name + suffix)
        key = os.urandom(32)
        found = LocalKey(role, address_of(key), key)
        doc: dict[str, object]
        if encrypt:
            from ledger.signatures.keystore import encrypt as lock

            words = _passphrase(passphrase, True, f"a new {role} key")
            if not words:
                raise KeystoreError("an empty passphrase: leave out --passphrase for a key without one")
            doc = {**lock(key, words), "role": role}
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
                raise KeyExistsError(f"{path} already exists", hint="'ledger keys rotate' replaces a key") from None
        finally:
            tmp.unlink(missing_ok=True)
        return found

    def promote(self, role: str, suffix: str) -> Path:
        """Make ``<role>.key<suffix>`` this machine's current ``role`` key; the one it replaces is kept as
        ``<role>.<address>.key`` (it still proves what it signed, and other brains may still sign with it)."""
        path = self.path(role)
        address = self.peek(role)
        old = path.with_name(f"{role}.{address}.key")
        if address is not None and not old.exists():
            os.link(path, old)
        os.replace(path.with_name(path.name + suffix), path)  # a key already written and kept: a rename, no bytes
        return old

    def discard(self, role: str, suffix: str) -> None:
        self.path(role).with_name(self.path(role).name + suffix).unlink(missing_ok=True)


class KeyExistsError(KeystoreError):
    """The key file already exists (``ledger keys generate`` reports it and succeeds)."""


def _passphrase(source: Passphrase | None, confirm: bool, why: str) -> str:
    env = secret("LEDGER_KEY_PASSPHRASE")
    if env is not None:
        return env
    if source is None:
        mixed = (
            " (LEDGER_KEY_PASSWORD is set, but it unlocks committer keystores, not signing keys)"
            if secret("LEDGER_KEY_PASSWORD") is not None
            else ""
        )
        raise KeystoreError(
            f"{why} needs its passphrase{mixed}",
            hint="set LEDGER_KEY_PASSPHRASE in the environment (never argv), or run on a terminal "
            "to be prompted; an agent runtime's key is best kept without one",
        )
    return source(confirm)


def _decrypt(path: Path, doc: dict[str, object], source: Passphrase | None) -> bytes:
    from eth_account import Account  # only passphrase-protected keys pay for eth-account's import

    try:
        return bytes(Account.decrypt(doc, _passphrase(source, False, f"the key {path}")))
    except ValueError as exc:
        raise KeystoreError(
            f"cannot unlock {path}: wrong passphrase or damaged keystore",
            hint="check LEDGER_KEY_PASSPHRASE (the key's passphrase, not LEDGER_KEY_PASSWORD, "
            "which unlocks committer keystores)",
        ) from exc
