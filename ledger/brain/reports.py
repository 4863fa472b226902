"""The brain's typed reports: what ``init``, ``index``, ``status``, ``log``, ``prove``, ``gc``,
``recover`` and ``skill list/view`` print with ``--json`` (ADR 73), made by the use cases in
:mod:`ledger.brain.usecases` (and ``status`` in :mod:`ledger.overview`).

Each ``to_json()`` is byte for byte the document the command printed before it was typed. A
listing command's document is a JSON array, not an object: its report is a :class:`Listing`,
whose ``to_json()`` is the list of its entries and whose schema is an array's. A write prints
the write layer's :class:`~ledger.write.records.Receipt` (its schema is its own) or
:class:`~ledger.reports.NoChange`.

A field typed ``dict[str, Any]`` carries a document another part of the ledger defines and
types (a chain receipt note, a sync conflict, an outcome figure): its shape is that part's, said
in the comment beside the field, and it is not repeated here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ledger.bundle.render import index_line
from ledger.reports import OMIT, Listing, Report, optional

__all__ = [
    "ChainMatch",
    "EntryCheckFailure",
    "EntryCheckReport",
    "GateState",
    "GcReport",
    "HashReport",
    "IndexEntry",
    "IndexReport",
    "InitReport",
    "Listing",
    "LogChange",
    "LogEntry",
    "LogReport",
    "LogStatsReport",
    "ProofCheckReport",
    "ProofStep",
    "ProveReport",
    "RecoverReport",
    "SkillFileReport",
    "SkillListEntry",
    "SkillListReport",
    "SkillStats",
    "SkillViewReport",
    "StatusReport",
    "StoreSize",
    "TrustedKey",
    "UsageReceipt",
]


# ---------------------------------------------------------------------------------------------- init


@dataclass(frozen=True)
class TrustedKey(Report):
    """A key the first snapshot trusts."""

    role: str
    address: str
    new_key: str | None  # the key file made by this init (as ssh-keygen would), else None: it was there


@dataclass(frozen=True)
class InitReport(Report):
    """``ledger init``: the new brain, its first root, the keys it trusts and how it signs and versions."""

    brain: str
    root: str
    trusted: tuple[TrustedKey, ...]
    policy: Literal["signed", "unsigned"]
    versions: Literal["frontmatter", "store"]


# --------------------------------------------------------------------------------------------- index


@dataclass(frozen=True)
class IndexEntry(Report):
    """One skill of the Level-0 index (its text line is ``▸ name: description``)."""

    name: str
    description: str


@dataclass(frozen=True)
class IndexReport(Listing):
    """``ledger index``: the Level-0 index, one entry per skill an agent may see, sorted by name."""

    entries: tuple[IndexEntry, ...] = ()

    def text(self) -> str:
        """The index as ``ledger index`` prints it."""
        return "".join(index_line(e.name, e.description) for e in self.entries)


# -------------------------------------------------------------------------------------------- status


@dataclass(frozen=True)
class GateState(Report):
    """The eval gate (``eval gate on``) and the versions it holds back from runtimes."""

    on: bool
    held: list[dict[str, Any]]  # ledger.evals.gate.Gate.to_json() of each gated skill holding a version


@dataclass(frozen=True)
class StatusReport(Report):
    """``ledger status``: what differs between the working tree and the head snapshot, and what needs a hand."""

    head: str
    root: str
    tree_root: str
    clean: bool
    changes: dict[str, Literal["modified", "new", "deleted"]]  # bundle path → what happened to it
    pending_chain: int | None  # snapshots without a local chain receipt; None: no chain configured
    # With sync targets (ledger.sync.targets.Targets: conflicts(), rescued(), ignored_held()):
    sync_conflicts: tuple[dict[str, Any], ...] = optional()
    sync_rescued: tuple[dict[str, Any], ...] = optional()
    sync_ignored_held: tuple[dict[str, Any], ...] = optional()
    # With a fleet: unsettled lineage-merge conflicts (ledger.remotes.lineagemerge.describe)
    merge_conflicts: tuple[dict[str, Any], ...] = optional()
    gate: GateState = optional()  # with the eval gate on
    # Each regression (ledger.brain.evidence: a verified rate's, or with "kind": "lift" a lift's)
    regressions: list[dict[str, Any]] = field(default_factory=list)


# ----------------------------------------------------------------------------------------------- log


@dataclass(frozen=True)
class LogChange(Report):
    """One skill a snapshot changed."""

    action: str
    skill: str
    version: int


@dataclass(frozen=True)
class LogEntry(Report):
    """One snapshot of the lineage, numbered from the first (1)."""

    number: int
    commit: str
    root: str
    parent_root: str | None
    operation: str
    skill: str | None
    version: int | None
    changes: tuple[LogChange, ...]
    timestamp: int
    signed: bool
    actor: str
    claimed_actor: str = optional()  # what an unsigned snapshot's trailers claim
    attribution: dict[str, str] = field(default_factory=dict)
    chain: dict[str, Any] | None = None  # its chain receipt note (ledger.protocol.receipts), if this copy has one
    date: str = ""
    note: str = ""

    @classmethod
    def of(cls, number: int, doc: dict[str, Any], chain: dict[str, Any] | None, date: str, note: str) -> LogEntry:
        """From a snapshot's ``to_json()`` (:class:`ledger.protocol.messages.Snapshot`)."""
        return cls(
            number=number,
            commit=doc["commit"],
            root=doc["root"],
            parent_root=doc["parent_root"],
            operation=doc["operation"],
            skill=doc["skill"],
            version=doc["version"],
            changes=tuple(LogChange(**c) for c in doc["changes"]),
            timestamp=doc["timestamp"],
            signed=doc["signed"],
            actor=doc["actor"],
            claimed_actor=doc.get("claimed_actor", OMIT),
            attribution=doc["attribution"],
            chain=chain,
            date=date,
            note=note,
        )


@dataclass(frozen=True)
class LogReport(Listing):
    """``ledger log``: the snapshots shown, newest first."""

    entries: tuple[LogEntry, ...] = ()


@dataclass(frozen=True)
class SkillStats(Report):
    """One skill's competence (``ledger log --stats``): its versions' outcomes and lift."""

    skill: str
    live: int | None
    versions: list[dict[str, Any]]  # ledger.brain.evidence.VersionStats.to_json() with its "lift"
    regression: dict[str, Any] | None  # as in StatusReport.regressions
    lift_regressions: list[dict[str, Any]]  # ledger.evals.lift.lift_regressions

    @classmethod
    def of(cls, doc: dict[str, Any]) -> SkillStats:
        return cls(**doc)


@dataclass(frozen=True)
class LogStatsReport(Listing):
    """``ledger log --stats``: each skill's competence per version."""

    entries: tuple[SkillStats, ...] = ()


# --------------------------------------------------------------------------------------------- prove


@dataclass(frozen=True)
class ProofStep(Report):
    """One level of an inclusion proof: the node's index among ``count``, and its siblings (hex)."""

    index: int
    count: int
    siblings: tuple[str, ...]


@dataclass(frozen=True)
class ProveReport(Report):
    """``ledger proof make``: the inclusion proof of one file in a root (docs/lineage.md, "Inclusion proofs")."""

    format: str
    root: str
    path: str
    kind: Literal["file", "exec", "dir"]
    content: str
    steps: tuple[ProofStep, ...]

    @classmethod
    def of(cls, doc: dict[str, Any]) -> ProveReport:
        """From :meth:`ledger.bundle.merkle.InclusionProof.to_json`."""
        return cls(
            **{**doc, "steps": tuple(ProofStep(s["index"], s["count"], tuple(s["siblings"])) for s in doc["steps"])}
        )


# ---------------------------------------------------------------------------------------------- hash


@dataclass(frozen=True)
class HashReport(Report):
    """``ledger hash``: the bundle root of a directory (of a brain's skills/)."""

    root: str


# -------------------------------------------------------------------------------------- verify-proof


@dataclass(frozen=True)
class ChainMatch(Report):
    """Where the chain committed a root: its sequence, block and tx, and the agent's head sequence."""

    seq: int
    block: int
    tx: str
    head: int
    is_head: bool


@dataclass(frozen=True)
class ProofCheckReport(Report):
    """``ledger proof check`` of an inclusion proof: whether the file is in the root (with ``--chain``, where
    the chain committed it); on a failure, ``error`` says why (exit 1)."""

    ok: bool
    path: str
    root: str
    error: str = optional()
    chain: ChainMatch | None = optional()


@dataclass(frozen=True)
class EntryCheckReport(Report):
    """``ledger proof check`` of an MCP skill entry (docs/lineage/anchor.md §3): what its verified anchor
    establishes (:class:`ledger.publish.anchor.AnchorCheck`), and with ``--chain`` where the chain committed it."""

    ok: Literal[True]
    skill: str
    prefix: str
    version: int
    versions: str
    version_bound: bool
    root: str
    commit: str
    signer: str | None
    role: str | None
    chain: dict[str, Any] | None  # as the anchor states it (docs/lineage/anchor.md §3)
    files: tuple[str, ...]
    bytes_checked: bool
    trusted: str | None
    onchain: ChainMatch | None


@dataclass(frozen=True)
class EntryCheckFailure(Report):
    """``ledger proof check`` of an MCP skill entry that does not check (exit 1)."""

    ok: Literal[False]
    error: str
    hint: str | None


# ------------------------------------------------------------------------------------------------ gc


@dataclass(frozen=True)
class StoreSize(Report):
    """Loose objects and packs of the store, as ``git count-objects -v`` counts them."""

    loose: int
    loose_bytes: int
    packs: int
    pack_bytes: int
    bytes: int


@dataclass(frozen=True)
class GcReport(Report):
    """``ledger gc``: the store packed, its size before and after, its connectivity checked."""

    full: bool
    seconds: float
    deferred: float
    before: StoreSize
    after: StoreSize
    connectivity: Literal["ok"] = optional()

    @classmethod
    def of(cls, doc: dict[str, Any]) -> GcReport:
        """From :func:`ledger.store.packing.pack` (waited for: never skipped)."""
        return cls(**{**doc, "before": StoreSize(**doc["before"]), "after": StoreSize(**doc["after"])})


# ------------------------------------------------------------------------------------------- recover


@dataclass(frozen=True)
class RecoverReport(Report):
    """``ledger recover``: the interrupted write finished (``pending``), or nothing to recover."""

    pending: bool
    commit: str = optional()
    skills: tuple[str, ...] = optional()
    moved: tuple[str, ...] = ()  # where files changed since the crash were kept

    @classmethod
    def of(cls, doc: dict[str, Any]) -> RecoverReport:
        """From :meth:`ledger.brain.Brain.recover`."""
        return cls(
            pending=doc["pending"],
            commit=doc.get("commit", OMIT),
            skills=tuple(doc["skills"]) if "skills" in doc else OMIT,
            moved=tuple(doc["moved"]),
        )


# -------------------------------------------------------------------------------------- skill list


@dataclass(frozen=True)
class SkillListEntry(Report):
    """One skill: name, version, description, and where it is filed."""

    name: str
    description: str
    version: int
    license: str | None
    compatibility: str | None
    category: str | None  # its Hermes category, None at the top level
    supply: Literal["quarantined", "revoked"] = optional()  # withheld from runtimes by the supply record


@dataclass(frozen=True)
class SkillListReport(Listing):
    """``ledger skill list``: every skill in the working tree, sorted by name."""

    entries: tuple[SkillListEntry, ...] = ()


# -------------------------------------------------------------------------------------- skill view


@dataclass(frozen=True)
class UsageReceipt(Report):
    """What a runtime stores beside its output: the skill's version, the head root and commit, a proof
    of its SKILL.md, and whether the text shown is the proven one."""

    skill: str
    version: int
    root: str
    commit: str
    proof: ProveReport
    matches: bool

    @classmethod
    def of(cls, doc: dict[str, Any]) -> UsageReceipt:
        return cls(**{**doc, "proof": ProveReport.of(doc["proof"])})


@dataclass(frozen=True)
class SkillViewReport(Report):
    """``ledger skill view NAME``: the skill's body, its linked files and a usage receipt."""

    name: str
    description: str
    version: int
    body: str
    files: dict[str, list[str]]  # support directory → its files' paths in the skill
    receipt: UsageReceipt | None  # None: the skill is not in the head snapshot yet
    supply: Literal["quarantined", "revoked"] = optional()


@dataclass(frozen=True)
class SkillFileReport(Report):
    """``ledger skill view NAME --file REL``: one supporting file, as text or (binary) its size."""

    name: str
    file: str
    content: str = optional()
    binary: Literal[True] = optional()
    size: int = optional()
    supply: Literal["quarantined", "revoked"] = optional()
