"""The typed results of ``ledger sync``, ``link``, ``unlink`` and ``runtimes`` (ledger.reports, ADR 73).

A sync's engine (:class:`ledger.sync.projection.Projection`) and the remote half
(:func:`ledger.remotes.fleet.sync_remote`) build their documents as dicts; the use cases
(:mod:`ledger.sync.run`, :mod:`ledger.sync.links`) return them typed with ``of``. Each report's
``to_json()`` is the document ``--json`` printed before it was typed, byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from ledger.reports import OMIT, Listing, Report, optional

_SCHEMA = "https://json-schema.org/draft/2020-12/schema"

__all__ = [
    "GuardReport",
    "Held",
    "HiddenHeld",
    "IgnoredHeld",
    "KeptCopy",
    "LeftAlone",
    "LinkReport",
    "LinkedTarget",
    "Recorded",
    "RemoteReport",
    "RemoteSetReport",
    "RemoteSyncReport",
    "RemoteTick",
    "RemoteUnsetReport",
    "Rescued",
    "RuntimeRow",
    "RuntimesReport",
    "SyncReport",
    "SyncStatusReport",
    "TargetReport",
    "UnlinkReport",
]


def _known(cls: type, doc: Mapping[str, Any]) -> None:
    """Refuse a key the report does not carry: it would be dropped from the document silently."""
    unknown = set(doc) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field for {', '.join(sorted(unknown))}: add it to the report")


@dataclasses.dataclass(frozen=True)
class Recorded(Report):
    """A change found in a target and recorded in the brain (``version`` null: no new version)."""

    skill: str
    version: int | None
    action: str


@dataclasses.dataclass(frozen=True)
class LeftAlone(Report):
    """A folder of a target that a sync neither records nor replaces, and why."""

    dir: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Rescued(Report):
    """A copy a sync kept aside (``kept``: where), what it is (``kind``) and why."""

    skill: str
    kept: str
    kind: str
    why: str


@dataclasses.dataclass(frozen=True)
class IgnoredHeld(Report):
    """A file the brain holds that an ignore rule would hide: the rule is not obeyed for it."""

    skill: str
    path: str
    rule: str
    source: str


@dataclasses.dataclass(frozen=True)
class Held(Report):
    """A version the gate holds back from a target (``shows``: the version it keeps, or null)."""

    skill: str
    version: int
    shows: int | None
    kept: bool
    why: str


@dataclasses.dataclass(frozen=True)
class TargetReport(Report):
    """One target's pass: what was recorded from it, projected into it, removed, and what is unsettled.

    ``reason`` and ``hint`` say why a refused target was refused."""

    name: str
    path: str
    status: Literal["ok", "refused"]
    recorded: tuple[Recorded, ...]
    projected: tuple[str, ...]
    removed: tuple[str, ...]
    # A conflict is ``skill``, ``files``, ``hint``, ``since`` and its kind's own detail (a three-way
    # conflict, two folders of one skill, a Hermes category file): the manifest's entry as it is.
    conflicts: tuple[dict[str, Any], ...]
    left_alone: tuple[LeftAlone, ...]
    rescued: tuple[Rescued, ...]
    ignored_held: tuple[IgnoredHeld, ...]
    held: tuple[Held, ...] = optional()
    reason: str = optional()
    hint: str = optional()

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> TargetReport:
        """The engine's document of one target, typed; its keys keep the engine's order."""
        _known(cls, doc)
        report = cls(
            name=doc["name"],
            path=doc["path"],
            status=doc["status"],
            recorded=tuple(Recorded(**r) for r in doc["recorded"]),
            projected=tuple(doc["projected"]),
            removed=tuple(doc["removed"]),
            conflicts=tuple(dict(c) for c in doc["conflicts"]),
            left_alone=tuple(LeftAlone(**a) for a in doc["left_alone"]),
            rescued=tuple(Rescued(**r) for r in doc["rescued"]),
            ignored_held=tuple(IgnoredHeld(**h) for h in doc["ignored_held"]),
            held=tuple(Held(**h) for h in doc["held"]) if "held" in doc else OMIT,
            reason=doc.get("reason", OMIT),
            hint=doc.get("hint", OMIT),
        )
        object.__setattr__(report, "_order", tuple(doc))  # not a field: no part of equality or the schema
        return report

    def to_json(self) -> dict[str, Any]:
        # A refused target's reason comes before its lists or after them, as the pass that refused it
        # wrote it (the document's bytes stay those the engine made); a report built by hand: field order.
        doc = super().to_json()
        order = getattr(self, "_order", ())
        return {**{k: doc[k] for k in order if k in doc}, **doc} if order else doc

    @property
    def busy(self) -> bool:
        """Whether the pass did anything, or found a conflict."""
        return bool(self.recorded or self.projected or self.removed or self.conflicts)


@dataclasses.dataclass(frozen=True)
class RemoteSyncReport(Report):
    """The remote half of a sync: published to the shared remote (merging what others published), anchored.

    ``status`` is ``offline`` when the remote cannot be reached (the next sync catches up), ``busy``
    when every compare-and-swap lost, ``refused`` otherwise; ``reason`` and ``hint`` say why."""

    remote: str
    status: Literal["ok", "offline", "busy", "refused"]
    merges: tuple[dict[str, Any], ...]  # what each merge did: git's own (ledger.remotes.sharing.push)
    pushed: bool
    committed: int
    transactions: tuple[str, ...]
    conflicts: tuple[str, ...]
    stale_parent: int
    head: str = optional()
    refused_refs: dict[str, str] = optional()
    reason: str = optional()
    hint: str | None = optional()
    seconds: float = optional()

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> RemoteSyncReport:
        """:func:`ledger.remotes.fleet.sync_remote`'s document, typed (its keys come in field order)."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()})


@dataclasses.dataclass(frozen=True)
class SyncReport(Report):
    """``ledger sync``: every target's pass, the counts that decide the exit code, and the remote's half.

    ``merge_conflicts``: the skills two machines changed in ways that did not merge."""

    targets: tuple[TargetReport, ...]
    conflicts: int
    refused: int
    remote: RemoteSyncReport = optional()
    merge_conflicts: tuple[str, ...] = optional()

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> SyncReport:
        _known(cls, doc)
        return cls(
            targets=tuple(TargetReport.of(t) for t in doc["targets"]),
            conflicts=doc["conflicts"],
            refused=doc["refused"],
            remote=RemoteSyncReport.of(doc["remote"]) if doc.get("remote") is not None else OMIT,
            merge_conflicts=tuple(doc["merge_conflicts"]) if "merge_conflicts" in doc else OMIT,
        )

    @property
    def left_alone(self) -> int:
        """How many entries of the targets were left alone."""
        return sum(len(t.left_alone) for t in self.targets)

    @property
    def ok(self) -> bool:
        """In step: no conflict, refused target, merge conflict, entry left alone, or remote trouble."""
        remote = self.remote or None
        return not (
            self.conflicts
            or self.refused
            or self.merge_conflicts
            or self.left_alone
            or (remote is not None and (remote.status != "ok" or remote.refused_refs))
        )


@dataclasses.dataclass(frozen=True)
class RemoteTick(Report):
    """``ledger sync --watch --json``: one look at the shared remote (a document of its own)."""

    remote: RemoteSyncReport


@dataclasses.dataclass(frozen=True)
class RuntimeRow(Report):
    """A runtime's skills folder on this machine: whether it exists, how many skills it holds, and the
    target it is linked as (null: not linked)."""

    name: str
    runtime: str
    scope: str
    path: str
    layout: str
    installed: bool
    source: str
    exists: bool
    skills: int | None
    linked: str | None


@dataclasses.dataclass(frozen=True)
class RuntimesReport(Listing):
    """``ledger target list``: the runtimes' skills folders (the document is their list)."""

    runtimes: tuple[RuntimeRow, ...]


@dataclasses.dataclass(frozen=True)
class LinkReport(Report):
    """``ledger target add``: the target added (as ``.ledger/targets.json`` records it)."""

    name: str
    path: str
    layout: str
    runtime: str
    actor: str
    skills: str | None
    committed: bool
    best_verified: bool


@dataclasses.dataclass(frozen=True)
class UnlinkReport(Report):
    """``ledger target remove``: the target removed; its files are left as they are."""

    unlinked: str
    path: str


@dataclasses.dataclass(frozen=True)
class LinkedTarget(Report):
    """A linked target: its name, folder and layout."""

    name: str
    path: str
    layout: str


@dataclasses.dataclass(frozen=True)
class KeptCopy(Report):
    """A copy a sync kept aside in a target (``path``), what it is (``kind``) and why; ``at``: when."""

    target: str
    path: str
    skill: str
    kind: str
    why: str
    at: str = optional()


@dataclasses.dataclass(frozen=True)
class HiddenHeld(Report):
    """A file the brain holds in ``target`` that an ignore rule would hide: the rule is not obeyed for it."""

    target: str
    skill: str
    path: str
    rule: str
    source: str


@dataclasses.dataclass(frozen=True)
class SyncStatusReport(Report):
    """What is unsettled between the brain and its targets, read from ``.ledger/`` alone (no target is
    read, nothing is written): the MCP tool ``skills_sync_status``.

    ``conflicts``: each skill changed on both sides since the last sync (``target``, ``path``,
    ``skill`` and the conflict's detail); ``merge_conflicts``: each skill two machines changed in
    ways that did not merge (``skill`` and its detail)."""

    targets: tuple[LinkedTarget, ...]
    conflicts: tuple[dict[str, Any], ...]  # the manifests' entries as they are (three kinds, each its own detail)
    rescued: tuple[KeptCopy, ...]
    ignored_held: tuple[HiddenHeld, ...]
    merge_conflicts: tuple[dict[str, Any], ...]  # ledger.remotes.lineagemerge.describe: the merge's own detail


@dataclasses.dataclass(frozen=True)
class RemoteReport(Report):
    """``ledger remote``: the shared remote as ``.ledger/config.json`` records it (``url``; ``commit``:
    anchored on chain after each push, by ``key`` when named), or null when none is set."""

    remote: dict[str, Any] | None  # the config's entry as it is: a key another release wrote is shown too

    def to_json(self) -> dict[str, Any] | None:  # type: ignore[override]
        return None if self.remote is None else dict(self.remote)

    @classmethod
    def schema(cls) -> dict[str, Any]:
        return {"$schema": _SCHEMA, "title": cls.__name__, **cls.json_schema()}

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        entry = {
            "type": "object",
            "required": ["url"],
            "additionalProperties": True,
            "properties": {"url": {"type": "string"}, "commit": {"type": "boolean"}, "key": {"type": "string"}},
        }
        return {"anyOf": [entry, {"type": "null"}], "description": " ".join((cls.__doc__ or "").split())}


@dataclasses.dataclass(frozen=True)
class RemoteSetReport(Report):
    """``ledger remote set``: the remote recorded (``url``: a path made absolute), whether it anchors on
    chain after each push (``commit``, by ``key`` when named), and whether a new bare repository was made."""

    url: str
    commit: bool
    key: str = optional()
    created: bool = False


@dataclasses.dataclass(frozen=True)
class RemoteUnsetReport(Report):
    """``ledger remote unset``: the brain syncs with no remote now; ``url`` is the one it had (null: none)."""

    unset: bool
    url: str | None


@dataclasses.dataclass(frozen=True)
class GuardReport(Report):
    """``ledger remote guard``: the hook that audits every update of main (``guarded``: its path)."""

    guarded: str
