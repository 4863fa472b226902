"""The snapshot message grammar of docs/lineage.md §3: a subject, an optional note, and the
``Ledger-*`` trailers, written canonically so that :func:`canonical_message` of what was read
back equals what was written (which is how the audit checks every trailer)."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ledger.errors import LedgerError, StoreError
from ledger.protocol.bundlehash import format_root, parse_root

__all__ = [
    "ACTORS",
    "EVIDENCE",
    "OPERATIONS",
    "Change",
    "Snapshot",
    "attribution",
    "canonical_message",
    "format_message",
    "parse_change",
    "parse_trailers",
    "split_note",
]

_TRAILER = re.compile(r"^(Ledger-[A-Za-z-]+): (.*)$")


@dataclass(frozen=True)
class Change:
    """One skill touched by a snapshot: ``action`` is create, update or delete."""

    action: str
    skill: str
    version: int

    def trailer(self) -> str:
        return f"{self.action} {self.skill} {self.version}"


@dataclass(frozen=True)
class Snapshot:
    """A ledger commit, as read back from its message trailers."""

    commit: str
    tree: str
    parents: tuple[str, ...]
    root: bytes
    parent_root: bytes | None
    operation: str
    changes: tuple[Change, ...]
    message: str
    timestamp: int
    trailers: dict[str, list[str]] = field(default_factory=dict)

    @property
    def skill(self) -> str | None:
        return self.changes[0].skill if len(self.changes) == 1 else None

    @property
    def attribution(self) -> dict[str, str]:
        """Actor and evidence from the trailers (empty for snapshots made before attribution)."""
        out = {}
        for key in ("actor", *EVIDENCE):
            values = self.trailers.get(_trailer_name(key), [])
            if values:
                out[key] = values[0]
        return out

    @property
    def version(self) -> int | None:
        return self.changes[0].version if len(self.changes) == 1 else None

    @property
    def shown_actor(self) -> str:
        """The actor as shown to people: ``unsigned`` for a snapshot without a signature, whatever
        role its ``Ledger-Actor`` claims (nobody vouches for it, docs/lineage.md §8.4)."""
        return self.attribution.get("actor", "-") if self.signature else "unsigned"

    @property
    def signature(self) -> str | None:
        """The ``Ledger-Signature`` trailer (docs/lineage.md §8), if the snapshot was signed."""
        values = self.trailers.get("Ledger-Signature", [])
        return values[-1] if values else None

    def merged(self) -> tuple[str, bytes] | None:
        """A merge's second parent as its trailers name it: (commit hex, root); None for other snapshots."""
        commits, roots = self.trailers.get("Ledger-Merge-Parent", []), self.trailers.get("Ledger-Merge-Root", [])
        if len(commits) != 1 or len(roots) != 1:
            return None
        try:
            return commits[0], parse_root(roots[0])
        except (ValueError, LedgerError):
            return None  # not canonical: the audit's trailers check names it

    @classmethod
    def made(
        cls,
        commit: bytes,
        tree: bytes,
        operation: str,
        root: bytes,
        parent_root: bytes | None,
        changes: Sequence[Change],
        message: str,
        parent: bytes,
    ) -> Snapshot:
        """The snapshot just written, without reading it back from git."""
        return cls(
            commit=commit.hex(),
            tree=tree.hex(),
            parents=(parent.hex(),),
            root=root,
            parent_root=parent_root,
            operation=operation,
            changes=tuple(changes),
            message=message,
            timestamp=int(time.time()),
            trailers=parse_trailers(message),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "commit": self.commit,
            "root": format_root(self.root),
            "parent_root": format_root(self.parent_root) if self.parent_root else None,
            "operation": self.operation,
            "skill": self.skill,
            "version": self.version,
            "changes": [{"action": c.action, "skill": c.skill, "version": c.version} for c in self.changes],
            "timestamp": self.timestamp,
            "signed": self.signature is not None,
            "actor": self.shown_actor,
            **(
                {}
                if self.signature or "actor" not in self.attribution
                else {"claimed_actor": self.attribution["actor"]}
            ),
            "attribution": {**self.attribution, "actor": self.shown_actor},
        }


def parse_trailers(message: str) -> dict[str, list[str]]:
    """The ``Ledger-*`` trailers of the message's last paragraph."""
    last = message.rstrip("\n").rsplit("\n\n", 1)[-1]
    out: dict[str, list[str]] = {}
    for line in last.splitlines():
        m = _TRAILER.match(line)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


def parse_change(value: str) -> Change:
    action, skill, version = value.split(" ")
    if action not in ("create", "update", "delete"):
        raise ValueError(f"unknown change action {action!r}")
    return Change(action, skill, int(version))


OPERATIONS: dict[str, tuple[str, ...]] = {
    # operation → the change actions it may record (init records none; snapshot, one or more)
    "init": (),
    "create": ("create",),
    "edit": ("update",),
    "patch": ("update",),
    "write-file": ("update",),
    "remove-file": ("update",),
    "delete": ("delete",),
    "revert": ("create", "update"),
    "snapshot": ("create", "update", "delete"),
    "import": ("create", "update"),
    "apply": ("create", "update"),
    "adopt": (),  # signs an unsigned brain's head and founds its trust set (docs/lineage.md §8)
    "keys": (),  # adds or revokes signing keys
    "move": (),  # moves a skill between Hermes categories (categories/ only; the root is the parent's)
    "install": ("create", "update"),  # skills from elsewhere, pinned and scanned, into quarantine (supply-chain.md)
    "approve": (),  # a curator's approval of installed skills (the supply record only)
    "revoke": (),  # digests revoked, and the installed skills they name (the supply record only)
    "sync": ("create", "update", "delete"),  # what a runtime changed in its folder, recorded back (ledger sync)
    "merge": ("create", "update", "delete"),  # two lineages joined, skill by skill (docs/lineage.md §9)
    "resolve": ("update",),  # a merge conflict settled by taking the other side's skill
    "outcome": (),  # outcome records appended to the evidence log (docs/lineage/evidence.md; the root is the parent's)
}


ACTORS = ("agent", "curator", "user", "verifier")
EVIDENCE = ("task", "session", "tool-calls", "reason", "evolution", "summary", "runtime", "target")  # Ledger-Task, …


def attribution(actor: str = "user", **evidence: object) -> dict[str, str]:
    """Who made a snapshot and on what evidence, checked: an actor, and one-line evidence values."""
    if actor not in ACTORS:
        raise StoreError(
            f"actor {actor!r} is not one of {', '.join(ACTORS)}", hint="use agent, curator, user or verifier"
        )
    out = {"actor": actor}
    for key, value in evidence.items():
        key = key.replace("_", "-")
        if value is None:
            continue
        text = str(value)
        if key not in EVIDENCE:
            raise StoreError(f"unknown evidence {key!r}", hint="evidence is " + ", ".join(EVIDENCE))
        if key == "tool-calls" and not text.isdigit():
            raise StoreError(f"tool-calls must be a whole number, got {text!r}")
        if not text or len(text) > 200 or any(not c.isprintable() for c in text):
            raise StoreError(f"evidence {key} must be one printable line of at most 200 characters")
        out[key] = text
    return out


def _trailer_name(key: str) -> str:
    return "Ledger-" + "-".join(part.capitalize() for part in key.split("-"))


def format_message(
    operation: str,
    root: bytes,
    parent_root: bytes | None,
    changes: Sequence[Change],
    note: str = "",
    nonce: str | None = None,
    attribution: dict[str, str] | None = None,
    keys: Sequence[str] = (),
    signature: str | None = None,
    merged: tuple[str, bytes] | None = None,
    siblings: Sequence[str] = (),
) -> str:
    """Commit message: a subject, an optional note, then the ``Ledger-*`` trailers.

    The message is canonical: :func:`split_note` and this function invert each other,
    which is how ``verify`` checks every trailer.  ``nonce`` (genesis only) makes two
    brains created in the same second distinct, and so their registration salts.
    ``keys`` are ``Ledger-Key`` trailer values (:mod:`ledger.signatures.trust`); ``signature`` is
    the ``Ledger-Signature`` a key made over the rest (:mod:`ledger.protocol.signing`), after
    the ``Ledger-Sibling`` keys it certifies (:mod:`ledger.signatures.siblings`).
    """
    if len(changes) == 1:
        subject = f"{operation} {changes[0].skill} v{changes[0].version}"
    else:
        subject = f"{operation}: {len(changes)} skill(s)"
    trailers = [
        f"Ledger-Root: {format_root(root)}",
        f"Ledger-Parent-Root: {format_root(parent_root) if parent_root else 'none'}",
    ]
    if merged is not None:  # a merge names its second parent, commit and root (docs/lineage.md §9)
        trailers += [f"Ledger-Merge-Parent: {merged[0]}", f"Ledger-Merge-Root: {format_root(merged[1])}"]
    trailers.append(f"Ledger-Operation: {operation}")
    if len(changes) == 1:
        trailers += [f"Ledger-Skill: {changes[0].skill}", f"Ledger-Version: {changes[0].version}"]
    trailers += [f"Ledger-Change: {c.trailer()}" for c in changes]
    if nonce is not None:
        trailers.append(f"Ledger-Nonce: {nonce}")
    trailers += [f"Ledger-Key: {k}" for k in keys]
    for key in ("actor", *EVIDENCE) if attribution else ():
        if key in attribution:  # type: ignore[operator]
            trailers.append(f"{_trailer_name(key)}: {attribution[key]}")  # type: ignore[index]
    trailers += [f"Ledger-Sibling: {k}" for k in siblings]
    if signature is not None:
        trailers.append(f"Ledger-Signature: {signature}")
    parts = [subject]
    if note.strip():
        parts.append(note.strip())
    parts.append("\n".join(trailers))
    return "\n\n".join(parts) + "\n"


def split_note(message: str) -> str:
    """The free-text note of a ledger message: the paragraphs between the subject and the trailers."""
    paragraphs = message.rstrip("\n").split("\n\n")
    return "\n\n".join(paragraphs[1:-1])


def canonical_message(snap: Snapshot) -> str:
    """The message the ledger writes for this snapshot's fields; any other text means a rewritten trailer."""
    nonce = snap.trailers.get("Ledger-Nonce", [None])[0] if snap.operation == "init" else None
    attr = snap.attribution
    checked = attribution(attr.pop("actor"), **attr) if "actor" in snap.attribution else None
    return format_message(
        snap.operation,
        snap.root,
        snap.parent_root,
        snap.changes,
        split_note(snap.message),
        nonce,
        checked,
        snap.trailers.get("Ledger-Key", []),
        snap.signature,
        snap.merged(),
        snap.trailers.get("Ledger-Sibling", []),
    )
