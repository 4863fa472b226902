"""An operator's epoch log, kept in its brain's git store under ``refs/ledger/epochs``.

One commit per epoch (its parent the epoch before), so the log survives restarts, is pushed
and fetched like any ref (``git push REMOTE refs/ledger/epochs``), and an auditor replays it
from a copy.  Each commit's tree holds two files:

- ``entries``: every entry so far, 104 bytes each (:func:`ledger.chain.tlog.entry`), in log order;
- ``log.json``: the origin, the chain and operator, the checkpoint key and its certification,
  and each epoch's ``size``, ``root`` (hex), checkpoint (a signed note), ``tx`` and ``block``.

An epoch is recorded *before* its transaction is sent (``tx`` null), so a run killed after
sending finds it and settles it from the chain (:mod:`ledger.exchange.epochs`).  A copy read
from elsewhere is a claim: :func:`read_remote` parses it strictly, and the audit recomputes every
root from the entries and compares it with the chain's.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any

from ledger._env import child_env
from ledger.chain.tlog import ENTRY_SIZE, leaf_hash, parse_entry
from ledger.errors import ChainError
from ledger.store.gitstore import MODE_FILE, GitStore

__all__ = ["EPOCHS_REF", "EPOCH_NOTES_REF", "EpochLog", "read_local", "read_remote", "save"]

EPOCHS_REF = "refs/ledger/epochs"  # the operator's log
EPOCH_NOTES_REF = "refs/notes/ledger-epochs"  # each brain's epoch receipts, beside refs/notes/ledger-chain
_MAX_ENTRIES = 1 << 24


@dataclass
class EpochLog:
    """The log in memory: its header, its entries, and each epoch."""

    header: dict[str, Any] = field(default_factory=dict)  # origin, chain_id, registry, operator, vkey, key_signature
    entries: list[bytes] = field(default_factory=list)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    commit: bytes | None = None  # the ref's commit this was read from

    def leaves(self) -> list[bytes]:
        return [leaf_hash(e) for e in self.entries]

    def heads(self) -> dict[int, tuple[int, bytes]]:
        """Each agent's last entry: agent → (seq, root)."""
        out: dict[int, tuple[int, bytes]] = {}
        for e in self.entries:
            agent, seq, _, root = parse_entry(e)
            out[agent] = (seq, root)
        return out

    def size(self) -> int:
        return int(self.epochs[-1]["size"]) if self.epochs else 0


def _parse(entries: bytes, doc_bytes: bytes, commit: bytes | None) -> EpochLog:
    if len(entries) % ENTRY_SIZE or len(entries) // ENTRY_SIZE > _MAX_ENTRIES:
        raise ChainError(
            f"the epoch log's entries are {len(entries)} bytes, not a whole number of {ENTRY_SIZE}-byte entries"
        )
    try:
        doc = json.loads(doc_bytes)
    except ValueError as exc:
        raise ChainError(f"the epoch log's log.json is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("epochs"), list) or not isinstance(doc.get("header"), dict):
        raise ChainError("the epoch log's log.json is not an object with a header and a list of epochs")
    items = [entries[i : i + ENTRY_SIZE] for i in range(0, len(entries), ENTRY_SIZE)]
    for item in items:
        parse_entry(item)
    last = 0
    for n, ep in enumerate(doc["epochs"], 1):
        if not isinstance(ep, dict) or ep.get("epoch") != n or not isinstance(ep.get("size"), int):
            raise ChainError(f"the epoch log's epoch #{n} is not numbered {n} with a size")
        if not last < ep["size"] <= len(items):
            raise ChainError(
                f"the epoch log's epoch {n} has size {ep['size']}: not above {last}, or beyond its entries"
            )
        last = ep["size"]
    return EpochLog(doc["header"], items, doc["epochs"], commit)


def read_local(store: GitStore) -> EpochLog:
    """This store's log (an empty one before the first epoch)."""
    head = store.read_ref(EPOCHS_REF)
    if head is None:
        return EpochLog()
    tree = bytes.fromhex(store.read(head, b"commit").split(b"\n", 1)[0].split(b" ")[1].decode())
    files = {name: sha for sha, _, name in store.read_tree(tree)}
    if set(files) != {"entries", "log.json"}:
        raise ChainError(f"{EPOCHS_REF} holds {sorted(files)}, not entries and log.json")
    return _parse(store.read(files["entries"], b"blob"), store.read(files["log.json"], b"blob"), head)


def save(store: GitStore, log: EpochLog, message: str) -> bytes:
    """Write ``log`` as the next commit of the ref, by compare-and-swap on the commit it was read from."""
    doc = json.dumps({"header": log.header, "epochs": log.epochs}, sort_keys=True, indent=1).encode() + b"\n"
    tree = store.write_tree([(store.write_blob(b"".join(log.entries)), MODE_FILE, "entries"),
                             (store.write_blob(doc), MODE_FILE, "log.json")])  # fmt: skip
    new = store.write_commit(tree, [log.commit] if log.commit else [], message)
    store.move_ref(EPOCHS_REF, new, log.commit)
    log.commit = new
    return new


def read_remote(location: str) -> EpochLog:
    """The log published at ``location`` (a brain's path or a git URL), fetched into a scratch repository.

    ``location`` comes from a receipt, so it is untrusted: it can never be read as an option
    (``--end-of-options``), and only the file, git, ssh and http(s) transports may serve it (no ``ext::``)."""
    if not location or location.startswith("-") or any(ord(c) < 0x20 for c in location):
        raise ChainError(f"the operator's log location {location[:80]!r} is not a path or git URL")
    env = {**child_env(), "GIT_ALLOW_PROTOCOL": "file:git:ssh:http:https", "GIT_TERMINAL_PROMPT": "0"}
    with tempfile.TemporaryDirectory(prefix="ledger-epochs-") as tmp:

        def git(*args: str) -> bytes:
            proc = subprocess.run(["git", f"--git-dir={tmp}", *args], capture_output=True, env=env, timeout=120)
            if proc.returncode:
                raise ChainError(f"cannot read the operator's epoch log at {location}: "
                                 f"{proc.stderr.decode(errors='replace').strip()[:300]}",
                                 hint="the receipt's 'log' names where the operator publishes refs/ledger/epochs; "
                                      "ask the operator to push it there")  # fmt: skip
            return proc.stdout

        git("init", "-q", "--bare")
        git("fetch", "-q", "--no-tags", "--end-of-options", location, f"+{EPOCHS_REF}:{EPOCHS_REF}")
        head = git("rev-parse", EPOCHS_REF).strip()
        return _parse(git("cat-file", "blob", f"{EPOCHS_REF}:entries"),
                      git("cat-file", "blob", f"{EPOCHS_REF}:log.json"), bytes.fromhex(head.decode()))  # fmt: skip
