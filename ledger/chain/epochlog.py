"""An operator's epoch log, kept in its brain's git store under ``refs/ledger/epochs``.

One commit per epoch (its parent the epoch before), so the log survives restarts, is pushed
and fetched like any ref (``git push REMOTE refs/ledger/epochs``), and an auditor replays it
from a copy.  Each commit's tree holds two files:

- ``entries``: every entry so far, 104 bytes each (:func:`ledger.protocol.tlog.entry`), in log order;
  or, once the log holds an evidence entry (105 bytes, :mod:`ledger.protocol.epochevidence`),
  ``entries-v2`` instead: each entry preceded by its length as one byte (104 or 105), so a
  reader that knows only heads refuses the log rather than misreading it;
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
from ledger.errors import ChainError
from ledger.protocol.epochevidence import EVIDENCE_ENTRY_SIZE, parse_item
from ledger.protocol.refs import EPOCHS_REF
from ledger.protocol.tlog import ENTRY_SIZE, leaf_hash
from ledger.store.gitstore import MODE_FILE, GitStore

__all__ = ["ENTRIES_V2", "EpochLog", "decode_entries", "encode_entries",
           "read_at", "read_local", "read_remote", "save"]  # fmt: skip

_MAX_ENTRIES = 1 << 24
ENTRIES_V2 = "entries-v2"  # the file's name once the log holds an evidence entry


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
            if len(e) == ENTRY_SIZE:
                _, (agent, seq, _, root) = parse_item(e)
                out[agent] = (seq, root)
        return out

    def evidence(self) -> dict[int, tuple[int, bytes]]:
        """Each agent's last evidence entry: agent → (size, evidence root)."""
        out: dict[int, tuple[int, bytes]] = {}
        for e in self.entries:
            if len(e) == EVIDENCE_ENTRY_SIZE:
                _, (agent, _head, size, root) = parse_item(e)
                out[agent] = (size, root)
        return out

    def size(self) -> int:
        return int(self.epochs[-1]["size"]) if self.epochs else 0


def encode_entries(entries: list[bytes]) -> tuple[str, bytes]:
    """(file name, bytes) of the entries: ``entries`` concatenated while every entry is a head, else
    ``entries-v2``, each entry after its one-byte length.  One log has one encoding."""
    if all(len(e) == ENTRY_SIZE for e in entries):
        return "entries", b"".join(entries)
    return ENTRIES_V2, b"".join(bytes([len(e)]) + e for e in entries)


def decode_entries(name: str, data: bytes) -> list[bytes]:
    """The entries of a file :func:`encode_entries` wrote; anything else (a length byte that is not 104
    or 105, a cut entry, an ``entries-v2`` holding heads only) is refused."""
    if name == "entries":
        if len(data) % ENTRY_SIZE or len(data) // ENTRY_SIZE > _MAX_ENTRIES:
            raise ChainError(
                f"the epoch log's entries are {len(data)} bytes, not a whole number of {ENTRY_SIZE}-byte entries"
            )
        return [data[i : i + ENTRY_SIZE] for i in range(0, len(data), ENTRY_SIZE)]
    if name != ENTRIES_V2:
        raise ChainError(f"the epoch log's entries file is {name!r}, not 'entries' or {ENTRIES_V2!r}")
    items, i = [], 0
    while i < len(data):
        n = data[i]
        if n not in (ENTRY_SIZE, EVIDENCE_ENTRY_SIZE) or i + 1 + n > len(data) or len(items) >= _MAX_ENTRIES:
            raise ChainError(f"the epoch log's {ENTRIES_V2} has a length byte {n} at offset {i}: not 104 or 105, "
                             "or past its end")  # fmt: skip
        items.append(data[i + 1 : i + 1 + n])
        i += 1 + n
    if all(len(e) == ENTRY_SIZE for e in items):
        raise ChainError(f"the epoch log's {ENTRIES_V2} holds no evidence entry: a log of heads is 'entries'")
    return items


def _parse(name: str, entries: bytes, doc_bytes: bytes, commit: bytes | None) -> EpochLog:
    try:
        doc = json.loads(doc_bytes)
    except ValueError as exc:
        raise ChainError(f"the epoch log's log.json is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("epochs"), list) or not isinstance(doc.get("header"), dict):
        raise ChainError("the epoch log's log.json is not an object with a header and a list of epochs")
    items = decode_entries(name, entries)
    for item in items:
        parse_item(item)
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
    return EpochLog() if head is None else read_at(store, head)


def read_at(store: GitStore, head: bytes) -> EpochLog:
    """The log whose commit is ``head`` (a copy fetched, or a push a guarded remote has not taken yet)."""
    tree = bytes.fromhex(store.read(head, b"commit").split(b"\n", 1)[0].split(b" ")[1].decode())
    files = {name: sha for sha, _, name in store.read_tree(tree)}
    names = sorted(set(files) - {"log.json"})
    if len(files) != 2 or "log.json" not in files or names[0] not in ("entries", ENTRIES_V2):
        raise ChainError(f"{EPOCHS_REF} holds {', '.join(sorted(files)) or 'nothing'}, not log.json and one of "
                         f"entries, {ENTRIES_V2}")  # fmt: skip
    return _parse(names[0], store.read(files[names[0]], b"blob"), store.read(files["log.json"], b"blob"), head)


def save(store: GitStore, log: EpochLog, message: str) -> bytes:
    """Write ``log`` as the next commit of the ref, by compare-and-swap on the commit it was read from."""
    doc = json.dumps({"header": log.header, "epochs": log.epochs}, sort_keys=True, indent=1).encode() + b"\n"
    name, data = encode_entries(log.entries)
    tree = store.write_tree([(store.write_blob(data), MODE_FILE, name),
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
        names = sorted(git("ls-tree", "--name-only", "--end-of-options", EPOCHS_REF).decode().split("\n")[:-1])
        wanted = [n for n in names if n in ("entries", ENTRIES_V2)]
        if len(names) != 2 or "log.json" not in names or len(wanted) != 1:
            raise ChainError(f"the log at {location} holds {names}, not log.json and one of entries, {ENTRIES_V2}")
        return _parse(wanted[0], git("cat-file", "blob", f"{EPOCHS_REF}:{wanted[0]}"),
                      git("cat-file", "blob", f"{EPOCHS_REF}:log.json"), bytes.fromhex(head.decode()))  # fmt: skip
