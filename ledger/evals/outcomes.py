"""The outcome use cases: record one outcome, import a JSONL of them, list the log, list each signer's batches
(``ledger outcome …``, the agent's ``skill_outcome``; docs/lineage/evidence.md).

Each takes an open brain (``ledger.brain.Brain``) and returns a report of :mod:`ledger.evals.reports`;
refusals raise as the evidence log does.  No printing, no exit codes: the CLI and the MCP tool do that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.evals.reports import (
    Batch,
    BatchesReport,
    NothingImported,
    OutcomeEntry,
    OutcomeImportReport,
    OutcomeListReport,
    OutcomeReport,
    SignerBatches,
    SkillOutcomeReport,
)
from ledger.store import outcomes as oc

__all__ = ["batches", "import_outcomes", "list_outcomes", "record"]


def record(
    brain: Any,
    actor: str,
    name: str,
    version: int | None,
    *,
    result: str,
    task: str | None = None,
    task_digest: str | None = None,
    score: float | None = None,
    scale: tuple[float, float] | None = None,
    threshold: float | None = None,
    evidence: str | None = None,
    evidence_digest: str | None = None,
    verifier: str | None = None,
    when: str | None = None,
    note: str = "",
    receipt: Mapping[str, Any] | None = None,
    attribution: Mapping[str, str] | None = None,
) -> SkillOutcomeReport:
    """Sign one outcome of ``name`` at ``version`` (None: the head's) with ``actor``'s key and append it:
    one ``outcome`` snapshot.  ``receipt`` is a usage receipt a ``skill_view`` gave (it pins the version);
    ``attribution`` the snapshot's evidence trailers (task=…, session=…)."""
    with brain.acting(actor, **dict(attribution or {})):
        snapshot, entry = brain.evidence.record(
            name,
            version,
            result=result,
            task=task,
            task_digest=task_digest,
            score=score,
            scale=scale,
            threshold=threshold,
            evidence=evidence,
            evidence_digest=evidence_digest,
            verifier=verifier,
            receipt=receipt,
            when=when,
            note=note,
        )
    return SkillOutcomeReport(
        outcome=entry.id.hex(),
        tier="verified" if actor == "verifier" else "self",
        skill=entry.record["skill"],
        version=entry.record["version"],
        receipt=OutcomeReport.from_receipt(snapshot),
        log_size=brain.evidence.size(),
        signer=entry.signer,
    )


def import_outcomes(
    brain: Any, actor: str | None, data: bytes, *, note: str = ""
) -> OutcomeImportReport | NothingImported:
    """Import a JSONL of outcomes (docs/reference.md, "Outcome JSONL") as one snapshot signed by ``actor``'s key
    (None: the key that signs a file of entries signed elsewhere).  One bad line refuses the whole file."""
    with brain.acting(actor or brain.evidence.holder_role()):
        before = brain.evidence.size()
        snapshot, counts = brain.evidence.import_lines(data.splitlines(), note=note)
        after = brain.evidence.size()
    if snapshot is None:
        return NothingImported()
    return OutcomeImportReport.from_receipt(snapshot, read=counts["read"], added=after - before, log_size=after)


def list_outcomes(brain: Any, name: str | None = None, version: int | None = None) -> OutcomeListReport:
    """The entries of the log, oldest first, each with its index and its signer's tier under the head's trust
    set; of one skill (a name the brain never had is refused), or one version of it."""
    if name is not None:
        name = brain.resolve(name)
        brain.history(name)  # a name this brain never had is refused, not listed as empty
    roles = brain.trust().active
    out = []
    for i, data in enumerate(brain.evidence.entries()):
        doc = oc.loads(data)
        rec = doc[oc.kind_of(data)]  # an outcome record, an eval plan or an approval (docs/lineage/evaluations.md)
        if (name and rec["skill"] != name) or (version and rec.get("version", version) != version):
            continue
        role = roles.get(rec["signer"])
        tier = "verified" if role == "verifier" else "self" if role else "withdrawn"
        out.append(OutcomeEntry(i, tier, doc))
    return OutcomeListReport(tuple(out))


def batches(brain: Any, signer: str | None = None) -> BatchesReport:
    """Each signer's batches in the head's log (docs/lineage/evidence.md §9), of one signer (lowercase address)."""
    found = brain.evidence.batches(signer)
    return BatchesReport(
        tuple(
            SignerBatches(s["signer"], s["tier"], s["outcomes"], s["v1"], tuple(Batch(**b) for b in s["batches"]))
            for s in found
        )
    )
