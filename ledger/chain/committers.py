"""``ledger keys new|import|list``'s use cases: committer keystores, as reports (:mod:`ledger.chain.reports`).

The secret stays in the keystore (:mod:`ledger.chain.keys`): a report names the key, never holds it.
"""

from __future__ import annotations

from ledger.chain.keys import DEV_KEY_NAME, PasswordSource, dev_account, import_key, keystore_dir, list_keys, new_key
from ledger.chain.reports import CommitterKey, CommitterKeyReport, CommitterKeysReport

__all__ = ["import_committer", "list_committers", "new_committer"]


def new_committer(name: str, password: PasswordSource | None = None) -> CommitterKeyReport:
    """A new random committer keystore ``name``, locked with the password ``password`` gives."""
    address = new_key(name, password)
    return CommitterKeyReport(name=name, address=address, path=str(keystore_dir() / f"{name}.json"))


def import_committer(name: str, secret: str, password: PasswordSource | None = None) -> CommitterKeyReport:
    """The private key ``secret`` (read by the caller from stdin or a hidden prompt) as keystore ``name``."""
    address = import_key(name, secret, password)
    return CommitterKeyReport(name=name, address=address, path=str(keystore_dir() / f"{name}.json"))


def list_committers() -> CommitterKeysReport:
    """Every committer keystore with its address, then anvil's dev key (chain 31337 only)."""
    found = [CommitterKey(**k) for k in list_keys()]
    found.append(CommitterKey(name=DEV_KEY_NAME, address=dev_account(0).address, note="chain 31337 only"))
    return CommitterKeysReport(keys=tuple(found))
