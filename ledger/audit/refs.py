"""Every ref the ledger publishes, checked as a copy takes it: by a peer on arrival, by a guarded remote
before git takes a push, and by ``ledger audit`` (the ``refs`` check), with the same rules (docs/adr/0027).

The refs (:data:`ledger.protocol.refs.PUBLISHED`): ``main``, audited as a lineage elsewhere
(:func:`ledger.audit.lineage.audit_repo`); three notes refs of receipts and an operator's epoch log.
Under the ledger's namespaces (``refs/ledger/``, ``refs/notes/ledger-``) no other name is published.

- :func:`shape` is what makes a whole ref unusable: not a commit; a notes ref whose tree is not a notes
  tree (a note per snapshot commit, named by its 40 hex digits, with git's fan-out directories); a log
  that is not one (:func:`ledger.chain.epochlog.read_at`).  A peer refuses such a ref whole and names it,
  and still takes a good ``main``.
- :func:`receipt_problem` is why one receipt is refused (a peer takes the others): a chain receipt by
  §6.1–6.2, an epoch receipt by lineage/epochs.md §6, an evidence epoch receipt by lineage/evidence.md §7, each checked
  offline against the lineage it sits on.
- :func:`log_keeps` is why a log is not the one before it grown (lineage/epochs.md §8).
- :func:`update_problems` is the guard's: a push refused for any of the above, for a deletion, for a
  non-fast-forward update (every published ref only grows), for a receipt a peer would refuse, and
  for a name under the namespaces that is not published.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ledger.audit.verdicts import Report
from ledger.chain import epochlog
from ledger.errors import LedgerError, StoreError
from ledger.protocol import epochevidence, epochproof
from ledger.protocol.epochlog import EpochLog
from ledger.protocol.receipts import anchored, note_problems, parse_note, positions
from ledger.protocol.refs import (
    BRANCH,
    EPOCH_NOTES_REF,
    EPOCHS_REF,
    EVIDENCE_NOTES_REF,
    INCOMING,
    KEPT,
    NAMESPACES,
    NOTES_REF,
    PUBLISHED,
)
from ledger.store import gitstore as gs
from ledger.store.evidence import log_of
from ledger.store.git import WHOLE, Git

__all__ = [
    "NOTES",
    "Lineage",
    "check_refs",
    "epoch_receipt",
    "evidence_receipt",
    "listed",
    "log_keeps",
    "owned",
    "receipt_problem",
    "shape",
    "update_problems",
]

NOTES = (NOTES_REF, EPOCH_NOTES_REF, EVIDENCE_NOTES_REF)
ZERO = b"\x00" * 32
_NOTE_NAME = re.compile(r"[0-9a-f]{40}")
_FANOUT = re.compile(r"(?:[0-9a-f]{2}/)*")
_KIND = {NOTES_REF: "chain receipt", EPOCH_NOTES_REF: "epoch receipt", EVIDENCE_NOTES_REF: "evidence receipt"}


def owned(ref: str) -> bool:
    """Whether ``ref`` is the ledger's: ``main``, or a name under its namespaces."""
    return ref == BRANCH or ref.startswith(NAMESPACES)


# ------------------------------------------------------------------ the lineage receipts sit on


class Lineage:
    """The mainline of ``main`` at ``head``, read once and only when a receipt needs it."""

    def __init__(self, store: gs.GitStore, head: bytes | None) -> None:
        self.store, self.head = store, head
        self._snaps: list[gs.Snapshot] | None = None

    @property
    def mainline(self) -> list[gs.Snapshot]:
        if self._snaps is None:
            self._snaps = []
            if self.head is not None:
                proc = Git(self.store.git_dir).call(
                    "rev-list", "--first-parent", "--reverse", self.head.hex(), timeout=WHOLE
                )
                for commit in proc.stdout.decode().split():
                    try:
                        self._snaps.append(self.store.snapshot(bytes.fromhex(commit)))
                    except (LedgerError, ValueError):
                        continue  # not a snapshot: the lineage's audit names it; no receipt can sit on it
        return self._snaps

    @property
    def anchored(self) -> list[gs.Snapshot]:
        return anchored(self.mainline)


# ------------------------------------------------------------------ whole refs


def _commit_tree(store: gs.GitStore, commit: bytes) -> bytes:
    data = store.read(commit, b"commit")
    first = data.split(b"\n", 1)[0].split(b" ")
    if len(first) != 2 or first[0] != b"tree":
        raise StoreError(f"commit {commit.hex()[:12]} has no tree")
    return bytes.fromhex(first[1].decode())


def notes_tree(store: gs.GitStore, commit: bytes) -> dict[str, bytes]:
    """Snapshot commit (hex) → note blob of the notes commit ``commit``; raises what makes it no notes tree."""
    out: dict[str, bytes] = {}

    def walk(tree: bytes, prefix: str) -> None:
        for sha, mode, name in store.read_tree(tree):
            path = prefix + name
            if mode == gs.MODE_DIR and len(name) == 2 and _FANOUT.fullmatch(path + "/"):
                walk(sha, path + "/")
                continue
            key = path.replace("/", "")
            if mode != gs.MODE_FILE or not _NOTE_NAME.fullmatch(key) or not _FANOUT.fullmatch(prefix):
                raise StoreError(
                    f"its tree holds {path!r}, which is not a note on a commit (40 hex digits, in "
                    "git's fan-out directories)"
                )
            if key in out:
                raise StoreError(f"its tree holds two notes on {key[:12]}")
            out[key] = sha

    walk(_commit_tree(store, commit), "")
    return out


def shape(store: gs.GitStore, ref: str, commit: bytes) -> str | None:
    """Why ``commit`` cannot be ``ref`` at all (None when it can): what makes a peer refuse the whole ref."""
    if ref not in PUBLISHED or ref == BRANCH:
        return None if ref == BRANCH else "it is not a ref the ledger publishes"
    try:
        store.read(commit, b"commit")
    except StoreError as exc:
        return f"it is not a commit ({exc.message})"
    try:
        if ref in NOTES:
            notes_tree(store, commit)
        else:
            epochlog.read_at(store, commit)
    except LedgerError as exc:
        return f"it is not {'a notes commit' if ref in NOTES else 'an epoch log'}: {exc.message}"
    return None


# ------------------------------------------------------------------ receipts


def epoch_receipt(data: bytes, commit: str, snaps: list[gs.Snapshot], agent: int | None) -> tuple[Any, str | None]:
    """``((doc, facts), None)`` for an epoch receipt that holds up offline, else ``(None, why)``.

    It must verify offline (lineage/epochs.md §6) and name the snapshot it sits on: its agent (when the copy knows its
    own),
    its seq (the snapshot's position among the anchored ones ``snaps``), its root, and as parent the root before."""
    try:
        doc = epochproof.parse_receipt(data)
        facts = epochproof.verify_offline(doc)
    except LedgerError as exc:
        return None, f"does not verify offline: {exc.message}"
    position = {s.commit: i for i, s in enumerate(snaps)}
    i = position.get(commit)
    if i is None:
        return None, "sits on a commit that is not an anchored snapshot of the lineage"
    if agent is not None and facts["agent"] != agent:
        return None, f"names agent {facts['agent']:#x}, not this brain's {agent:#x}"
    if facts["seq"] != i + 1 or facts["root"] != snaps[i].root:
        return None, (
            f"names chain sequence {facts['seq']} and its root, but that snapshot is anchored as chain sequence {i + 1}"
        )
    if facts["parent"] != (snaps[i - 1].root if i else ZERO):
        return None, "names a parent that is not the root of the snapshot before"
    return (doc, facts), None


def evidence_receipt(
    data: bytes, commit: str, mainline: list[gs.Snapshot], store: gs.GitStore, agent: int | None
) -> tuple[Any, str | None]:
    """``((doc, facts), None)`` for an evidence receipt that holds up offline, else ``(None, why)``: it verifies
    offline and sits on a mainline snapshot whose root is its head and whose evidence log is exactly its own."""
    try:
        doc = epochproof.parse_receipt(data)
        facts = epochevidence.verify_offline(doc)
    except LedgerError as exc:
        return None, f"does not verify offline: {exc.message}"
    snap = next((s for s in mainline if s.commit == commit), None)
    if snap is None:
        return None, "sits on a commit that is not a snapshot of the lineage"
    if agent is not None and facts["agent"] != agent:
        return None, f"names agent {facts['agent']:#x}, not this brain's {agent:#x}"
    if snap.root != facts["head"]:
        return None, "names a head that is not that snapshot's root"
    try:
        log = log_of(store, snap)
    except LedgerError as exc:
        return None, f"sits on a snapshot whose evidence log cannot be read: {exc.message}"
    if (log.size, log.root) != (facts["evidence_size"], facts["evidence_root"]):
        return None, (
            f"anchors {facts['evidence_size']} evidence entries, but that snapshot records {log.size} or another root"
        )
    return (doc, facts), None


def receipt_problem(store: gs.GitStore, ref: str, commit: str, data: bytes, lineage: Lineage) -> str | None:
    """Why the note ``data`` on ``commit`` under the notes ref ``ref`` is refused, checked without a chain."""
    if ref == NOTES_REF:
        note, why = parse_note(data)
        problems = [f"note {why}"] if note is None else note_problems(note, commit, positions(lineage.mainline))
        return "; ".join(problems) or None
    if ref == EPOCH_NOTES_REF:
        return epoch_receipt(data, commit, lineage.anchored, None)[1]
    return evidence_receipt(data, commit, lineage.mainline, store, None)[1]


# ------------------------------------------------------------------ the operator's log


def log_keeps(old: EpochLog, new: EpochLog) -> str | None:
    """Why ``new`` is not ``old`` grown (None when it is): every anchored epoch of ``old`` (``tx`` set) must be in
    ``new`` unchanged, with the entries it covers.  A pending last epoch may be settled or dropped
    (lineage/epochs.md §8)."""
    if old.header and new.header != old.header:
        return "its header (origin, operator, checkpoint key) is not the one before"
    done = [ep for ep in old.epochs if ep.get("tx") is not None]
    for ep in done:
        n = ep["epoch"]
        if len(new.epochs) < n or new.epochs[n - 1] != ep:
            return f"its epoch {n} is not the anchored epoch {n} it had"
    size = done[-1]["size"] if done else 0
    if new.entries[:size] != old.entries[:size]:
        return f"its first {size} entries, which anchored epochs cover, are not the ones it had"
    return None


# ------------------------------------------------------------------ a push, ref by ref


def update_problems(
    store: gs.GitStore, ref: str, old: bytes | None, new: bytes | None, lineage: Lineage, *, receipts: bool = True
) -> list[str]:
    """Why moving ``ref`` (not ``main``) from ``old`` to ``new`` is refused (None: absent); empty when it passes.

    ``lineage`` is ``main`` as it will be once the push lands: the receipts the push adds must sit on it
    (not checked without ``receipts``)."""
    if ref in KEPT:
        return ["a copy keeps it for itself (receipts not yet checked against a chain); it is never published"]
    if ref not in PUBLISHED:
        return [
            f"it is not a ref the ledger publishes (under {', '.join(NAMESPACES)} only "
            f"{', '.join(r for r in PUBLISHED if r != BRANCH)})"
        ]
    if new is None:
        return ["deleting it: what the ledger publishes is never removed"]
    why = shape(store, ref, new)
    if why is not None:
        return [why]
    if old is not None and old != new and not Git(store.git_dir).is_ancestor(old, new):
        return [f"it does not extend {old.hex()[:12]} (a non-fast-forward): {ref} only grows"]
    if ref == EPOCHS_REF:
        if old is None:
            return []
        try:
            before = epochlog.read_at(store, old)
        except LedgerError:
            return []  # a malformed log before: a grown one may replace it (the non-fast-forward rule still holds)
        keeps = log_keeps(before, epochlog.read_at(store, new))
        return [f"an operator's epoch log only grows, but this one rewrites the one before: {keeps}"] if keeps else []
    try:
        previous = notes_tree(store, old) if old is not None else {}
    except LedgerError:
        previous = {}
    added = {c: b for c, b in notes_tree(store, new).items() if previous.get(c) != b} if receipts else {}
    problems = []
    for commit, blob in sorted(added.items()):
        why = receipt_problem(store, ref, commit, store.read(blob, b"blob"), lineage)
        if why is not None:
            problems.append(f"the {_KIND[ref]} on {commit[:12]} {why}")
    return problems


# ------------------------------------------------------------------ the audit's `refs` check


def listed(git_dir: Path) -> dict[str, bytes]:
    """Every ref of the repository under the ledger's namespaces → its object id (``main`` aside)."""
    proc = Git(git_dir).call("for-each-ref", "--format=%(objectname) %(refname)")
    out = {}
    for line in proc.stdout.decode().splitlines():
        sha, _, ref = line.partition(" ")
        if owned(ref) and ref != BRANCH:
            out[ref] = bytes.fromhex(sha)
    return out


def check_refs(store: gs.GitStore, head: bytes | None, report: Report) -> None:
    """``refs``: every ref under the ledger's namespaces is one the ledger publishes (or a copy keeps for itself),
    and each published one is what a peer takes: whole, and each epoch receipt holding up offline (the chain
    receipts are the ``receipts`` check's).  A failure names every ref a peer would refuse, and why.  With no
    ref beside ``main`` the check still says something true: there is none a peer refuses."""
    chk = report.check("refs")
    lineage = Lineage(store, head)
    refs = {r: c for r, c in listed(store.git_dir).items() if not r.startswith(INCOMING)}
    refused: dict[str, list[str]] = {}
    for ref, commit in sorted(refs.items()):  # a pull's own refs/ledger/incoming*, while it runs, aside
        if ref in KEPT:
            continue
        try:
            problems = update_problems(store, ref, None, commit, lineage, receipts=ref != NOTES_REF)
        except LedgerError as exc:
            problems = [exc.message]
        if problems:
            refused[ref] = problems
    if refused:
        chk.fail(
            f"{len(refused)} ref(s) every peer refuses: "
            + "; ".join(f"{ref} ({', '.join(why)})" for ref, why in refused.items()),
            path=next(iter(refused)),
        )
        chk.failures = 1  # one line names them all
    else:
        chk.summary = (
            f"{len(refs)} ref(s) beside main, each one a peer takes: {', '.join(sorted(refs))}"
            if refs
            else f"no ref beside main under {', '.join(NAMESPACES)}: none a peer refuses"
        )
