"""An operator's epoch log, kept in its brain's git store under ``refs/ledger/epochs``.

One commit per epoch (its parent the epoch before), so the log survives restarts, is pushed
and fetched like any ref (``git push REMOTE refs/ledger/epochs``), and an auditor replays it
from a copy.  Each commit's tree holds two files (their bytes are :mod:`ledger.protocol.epochlog`'s):

- ``entries``: every entry so far, 104 bytes each (:func:`ledger.protocol.tlog.entry`), in log order;
  or, once the log holds an evidence entry (105 bytes, :mod:`ledger.protocol.epochevidence`),
  ``entries-v2`` instead: each entry preceded by its length as one byte (104 or 105), so a
  reader that knows only heads refuses the log rather than misreading it;
- ``log.json``: the origin, the chain and operator, the checkpoint key and its certification,
  and each epoch's ``size``, ``root`` (hex), checkpoint (a signed note), ``tx`` and ``block``.

An epoch is recorded *before* its transaction is sent (``tx`` null), so a run killed after
sending finds it and settles it from the chain (:mod:`ledger.anchoring.epochs`).  A copy read
from elsewhere is a claim: :func:`read_remote` parses it strictly, and the audit recomputes every
root from the entries and compares it with the chain's.
"""

from __future__ import annotations

import json
import tempfile

from ledger.errors import ChainError
from ledger.protocol.epochlog import ENTRIES_V2, EpochLog, encode_entries, parse
from ledger.protocol.refs import EPOCHS_REF
from ledger.store.git import NETWORK, Git
from ledger.store.gitstore import MODE_FILE, GitStore

__all__ = ["read_at", "read_local", "read_remote", "save"]


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
        raise ChainError(
            f"{EPOCHS_REF} holds {', '.join(sorted(files)) or 'nothing'}, not log.json and one of entries, {ENTRIES_V2}"
        )
    return parse(names[0], store.read(files[names[0]], b"blob"), store.read(files["log.json"], b"blob"), head)


def save(store: GitStore, log: EpochLog, message: str) -> bytes:
    """Write ``log`` as the next commit of the ref, by compare-and-swap on the commit it was read from."""
    doc = json.dumps({"header": log.header, "epochs": log.epochs}, sort_keys=True, indent=1).encode() + b"\n"
    name, data = encode_entries(log.entries)
    tree = store.write_tree([(store.write_blob(data), MODE_FILE, name), (store.write_blob(doc), MODE_FILE, "log.json")])
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
    with tempfile.TemporaryDirectory(prefix="ledger-epochs-") as tmp:
        what = f"cannot read the operator's epoch log at {location}"
        hint = (
            "the receipt's 'log' names where the operator publishes refs/ledger/epochs; "
            "ask the operator to push it there"
        )
        git = Git(
            tmp, env={"GIT_ALLOW_PROTOCOL": "file:git:ssh:http:https", "GIT_TERMINAL_PROMPT": "0"}, error=ChainError
        ).run
        git("init", "-q", "--bare", what=what, hint=hint)
        git(
            "fetch",
            "-q",
            "--no-tags",
            "--end-of-options",
            location,
            f"+{EPOCHS_REF}:{EPOCHS_REF}",
            what=what,
            hint=hint,
            timeout=NETWORK,
        )
        head = git("rev-parse", EPOCHS_REF, what=what, hint=hint).strip()
        listed = git("ls-tree", "--name-only", "--end-of-options", EPOCHS_REF, what=what, hint=hint)
        names = sorted(listed.decode().split("\n")[:-1])
        wanted = [n for n in names if n in ("entries", ENTRIES_V2)]
        if len(names) != 2 or "log.json" not in names or len(wanted) != 1:
            raise ChainError(f"the log at {location} holds {names}, not log.json and one of entries, {ENTRIES_V2}")
        entries = git("cat-file", "blob", f"{EPOCHS_REF}:{wanted[0]}", what=what, hint=hint)
        doc = git("cat-file", "blob", f"{EPOCHS_REF}:log.json", what=what, hint=hint)
        return parse(wanted[0], entries, doc, bytes.fromhex(head.decode()))
