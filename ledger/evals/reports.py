"""The typed results of outcome and evaluation use cases: what ``ledger outcome …``/``ledger eval …`` print
with ``--json`` and what ``skill_outcome`` returns (:mod:`ledger.reports`, ADR 73).

A write's document is its snapshot's receipt (``ledger.write.records.Receipt.to_json()``) with the
command's own keys after it: :class:`ReceiptReport` holds the receipt's keys in its order, and each
write's report adds its keys as fields of a subclass, so ``to_json()`` is the same document, key for key.
The module sits in the evals layer (below the writer), so it names the receipt's keys, not its class.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ledger.reports import OMIT, Listing, Report, key

Tier = Literal["verified", "self", "withdrawn"]


@dataclass(frozen=True)
class ReceiptReport(Report):
    """A write's receipt: enough to find and verify the snapshot it made."""

    skill: str | None = None
    version: int | None = None
    root: str = ""
    commit: str = ""
    operation: str = ""
    # The chain step's receipt (its keys are the registry client's: tx, block, …) or, when it failed,
    # {"committed": false, "error": …}: open, as the chain client writes it.
    chain: dict[str, Any] = field(default=OMIT)
    # Every skill the snapshot touched: {"skill", "action", "version", "files": {path: added|deleted|modified}}.
    changes: list[dict[str, Any]] = ()  # type: ignore[assignment]
    signer: str | None = None
    keys: list[str] = field(default=OMIT)
    signed: bool = False

    @classmethod
    def from_receipt(cls, receipt: Any, **extra: Any) -> Any:
        """This report of a ``Receipt`` (its document's keys) and the subclass's own fields in ``extra``."""
        doc = receipt.to_json()
        names = {f.name for f in fields(ReceiptReport)}
        return cls(**{**{k: v for k, v in doc.items() if k in names}, **extra})  # the command's own keys win

    def receipt_json(self) -> dict[str, Any]:
        """The receipt's part of the document (the keys :class:`ReceiptReport` holds)."""
        names = {f.name for f in fields(ReceiptReport)}
        return {k: v for k, v in self.to_json().items() if k in names}

    def extra_json(self) -> dict[str, Any]:
        """The command's own keys, after the receipt's."""
        names = {f.name for f in fields(ReceiptReport)}
        return {k: v for k, v in self.to_json().items() if k not in names}

    def receipt_fields(self) -> dict[str, Any]:
        """The keyword arguments that rebuild the ``Receipt`` (for the CLI's chain step and text)."""
        out = {f.name: getattr(self, f.name) for f in fields(ReceiptReport) if f.name != "signed"}
        out["chain"] = None if out["chain"] is OMIT else out["chain"]
        out["keys"] = [] if out["keys"] is OMIT else list(out["keys"])
        out["changes"] = list(out["changes"])
        return out


# --------------------------------------------------------------------------- outcomes


@dataclass(frozen=True)
class OutcomeReport(ReceiptReport):
    """One outcome recorded ('ledger outcome record'): the receipt of its 'outcome' snapshot."""


@dataclass(frozen=True)
class SkillOutcomeReport(Report):
    """One outcome recorded, as the agent's ``skill_outcome`` tool returns it and 'ledger outcome record'
    recorded it: the outcome's id, its tier, the version it credits, the snapshot's receipt, the log's size."""

    outcome: str
    tier: Literal["verified", "self"]
    skill: str
    version: int
    receipt: OutcomeReport
    log_size: int
    # The outcome's signer (the acting key), which the snapshot's signer need not be (an unsigned brain's
    # snapshots carry none): for the text of 'ledger outcome record'; not a member of the document.
    signer: str = field(default="", repr=False, compare=False, metadata={"key": "_signer"})

    def to_json(self) -> dict[str, Any]:
        doc = super().to_json()
        del doc["_signer"]
        return doc

    @classmethod
    def schema(cls) -> dict[str, Any]:
        out = super().schema()
        del out["properties"]["_signer"]
        out["required"].remove("_signer")
        return out


@dataclass(frozen=True)
class OutcomeImportReport(ReceiptReport):
    """An outcome import: the receipt of its one snapshot, the lines read, the outcomes added, the log's size."""

    read: int = 0
    added: int = 0
    log_size: int = 0


@dataclass(frozen=True)
class NothingImported(Report):
    """An outcome import of a file that holds no line: nothing was written."""

    read: int = 0
    added: int = 0


@dataclass(frozen=True)
class OutcomeEntry(Report):
    """One entry of the evidence log: its index, its signer's tier under the head's trust set, and the entry
    as the log holds it ({"record", "signature"}, {"plan", …} or {"approval", …}: docs/lineage/evidence.md)."""

    open_keys = True  # the entry's own members follow (lineage/evidence.md's entry shapes, each with its own keys)
    index: int
    tier: Tier
    entry: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "tier": self.tier, **self.entry}

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"index": {"type": "integer"}, "tier": {"enum": list(Tier.__args__)}},
            "required": ["index", "tier"],
            "additionalProperties": True,
            "description": "An evidence log entry (docs/lineage/evidence.md) with its index and tier.",
        }


@dataclass(frozen=True)
class OutcomeListReport(Listing):
    """The entries of the evidence log, oldest first (a JSON array)."""

    entries: tuple[OutcomeEntry, ...] = ()


@dataclass(frozen=True)
class Batch(Report):
    """One signed batch of outcomes: its id, the batch it follows, its count, the log index of its first
    outcome, and whether it is a head (no batch of its signer follows it)."""

    id: str
    prev: str | None
    count: int
    first: int
    head: bool


@dataclass(frozen=True)
class SignerBatches(Report):
    """One signer's outcomes: its tier, its outcome count, its v1 records (in no batch) and its batches."""

    signer: str
    tier: Tier
    outcomes: int
    v1: int
    batches: tuple[Batch, ...]


@dataclass(frozen=True)
class BatchesReport(Listing):
    """Each signer's batches in the evidence log (a JSON array, one object a signer)."""

    signers: tuple[SignerBatches, ...] = ()


# --------------------------------------------------------------------------- evaluations


@dataclass(frozen=True)
class Party(Report):
    """A runner or grader: its shell command and declared identity."""

    command: str
    id: str


@dataclass(frozen=True)
class PlanRule(Report):
    """A plan's decision rule: the interval method and the least lift."""

    interval: str
    min_lift: float


@dataclass(frozen=True)
class Plan(Report):
    """An eval plan entry (docs/lineage/evaluations.md): its id, then the signed plan's members.

    A plan read back from the log has its members in the canonical (JCS) order, a plan just signed in the
    order it was made: ``order`` keeps the entry's, so the document is the entry's key for key."""

    id: str
    format: str
    brain: str
    skill: str
    set: str
    cases: list[str]
    baseline: Literal["none", "previous"]
    runs: int
    runner: Party
    grader: Party
    rule: PlanRule
    time: str
    signer: str
    order: tuple[str, ...] = field(default=(), repr=False, compare=False, metadata={"key": "_order"})

    def to_json(self) -> dict[str, Any]:
        doc = super().to_json()
        doc.pop("_order", None)
        return {k: doc[k] for k in ("id", *self.order)} if self.order else doc

    @classmethod
    def schema(cls) -> dict[str, Any]:
        out = super().schema()
        del out["properties"]["_order"]
        out["required"].remove("_order")
        return out

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        out = cls.schema()
        del out["$schema"]
        return out


@dataclass(frozen=True)
class EvalPlanReport(ReceiptReport):
    """A plan registered ('ledger eval plan'): the receipt of its entry's snapshot and the plan."""

    changed: Literal[True] = True
    plan: Plan = field(default_factory=dict)  # type: ignore[assignment]


@dataclass(frozen=True)
class EvalPlanUnchanged(Report):
    """'ledger eval plan' with the current plan's parameters: the plan, nothing written."""

    changed: Literal[False] = False
    plan: Plan = field(default_factory=dict)  # type: ignore[assignment]


@dataclass(frozen=True)
class EvalRun(Report):
    """One run of an evaluation: its case, condition and repetition, its grading's figures, and (for a run
    made here) its failure, time and tokens."""

    case: str
    condition: str
    run: int
    passed: int
    total: int
    pass_: bool = key("pass", default=False)
    failure: str | None = field(default=OMIT)
    ms: int | float = field(default=OMIT)
    tokens: int | None = field(default=OMIT)
    grading: str = ""


@dataclass(frozen=True)
class EvalRunReport(ReceiptReport):
    """An evaluation run and recorded ('ledger eval run'): the receipt of its one batch's snapshot, the version,
    plan and baseline, the workspace's iteration, every run and the benchmark."""

    skill: str = ""
    version: int = 0  # type: ignore[assignment]
    plan: str | None = None
    baseline: str = ""
    arm: int | None = None
    workspace: str = ""
    iteration: int = 0
    runs: tuple[EvalRun, ...] = ()
    benchmark: dict[str, Any] = field(default_factory=dict)  # benchmark.json, the agentskills guide's shape


@dataclass(frozen=True)
class EvalImportReport(ReceiptReport):
    """A workspace's runs recorded ('ledger eval import'): as :class:`EvalRunReport`, under no plan."""

    skill: str = ""
    version: int = 0  # type: ignore[assignment]
    plan: None = None
    baseline: str = ""
    arm: int | None = None
    iteration: int = 0
    workspace: str = ""
    runs: tuple[EvalRun, ...] = ()
    benchmark: dict[str, Any] = field(default_factory=dict)  # benchmark.json, the agentskills guide's shape


@dataclass(frozen=True)
class EvalStaleReport(Report):
    """'ledger eval run NAME --stale': each stale version re-run (its receipt and run) and each skipped."""

    skill: str
    plan: str
    rerun: tuple[EvalRunReport, ...]
    skipped: list[dict[str, Any]]  # {"version", "reason"}


@dataclass(frozen=True)
class GateReport(Report):
    """'ledger eval gate on|off': the gate's state now and whether this changed it."""

    gate: bool
    changed: bool


@dataclass(frozen=True)
class EvalApprovalReport(ReceiptReport):
    """A version released through the gate ('ledger eval approve'): the receipt and the approval entry's id."""

    approval: str = ""
