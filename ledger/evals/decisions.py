"""The gate's use cases: turn it on or off, approve a version, revert to the newest released one.

They live apart from :mod:`ledger.evals.gate` (the gate's reading and its rules) because ``ledger status``
and every sync read the gate, and none of them returns an eval report: reading loads no report module,
deciding does (issue 53: the reports had cost ``status`` 14 ms of dataclasses at start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger.errors import LedgerError, UsageError
from ledger.evals import gate
from ledger.evals.reports import EvalApprovalReport, GateReport

if TYPE_CHECKING:
    from ledger.brain import Brain


def switch(brain: Brain, on: bool, actor: str = "user") -> GateReport:
    """Turn the gate on or off ("eval": {"gate": …} in .ledger/config.json).  Turning it off takes a user's
    or curator's key on this machine (``actor``): the gate holds back what an agent wrote."""
    section = dict(brain.config.get("eval") or {})
    changed = bool(section.get("gate")) is not on
    section["gate"] = on
    if changed and not on:
        trust = brain.trust()
        key = brain.key_for(trust, actor) if trust.established else None
        if isinstance(key, tuple):
            raise LedgerError(
                f"turning the gate off takes a {actor}'s key, and {key[0]}",
                hint=f"{key[1]}; then 'ledger eval gate off' (--actor user or curator)",
            )
    if changed:
        brain.update_config(eval=section)
    return GateReport(gate=on, changed=changed)


def approve(brain: Brain, actor: str, name: str, version: int, reason: str) -> EvalApprovalReport:
    """Release ``name`` at ``version`` through the gate with ``actor``'s signed approval (an evidence log
    entry).  An agent's key may not approve; the reason is 1 to 512 characters."""
    if actor == "agent":
        raise LedgerError(
            "an agent's key may not approve a version: the gate holds back what an agent wrote "
            "until a verifier's evaluation or a person releases it",
            hint=f"approve with your own key: ledger eval approve {name}@{version} --reason TEXT "
            "(--actor user or curator)",
        )
    if not 1 <= len(reason) <= 512:
        raise UsageError(f"--reason is {len(reason)} characters; give 1 to 512")
    with brain.acting(actor):
        receipt, entry = brain.evidence.approve(name, version, reason)
    return EvalApprovalReport.from_receipt(receipt, approval=entry.id.hex())


def revert(brain: Brain, name: str, note: str = "") -> Any:
    """Restore ``name`` as it was at its newest released version, as a new version (the brain's
    ``revert``): the receipt; refused when the gate does not hold it or its head is released."""
    name_ = brain.resolve(name)
    found = gate.read(brain, [name_]).get(name_)
    if found is None:
        why = (
            "the gate is off"
            if not gate.enabled(brain.config)
            else f"{name_} has no evals/evals.json at the head, so the gate does not hold it"
        )
        raise LedgerError(
            f"nothing to revert: {why}", hint=f"'ledger skill revert {name_} --to V' restores any version"
        )
    if found.released is None:
        raise LedgerError(
            f"{name_} has no released version to go back to",
            hint=f"run 'ledger eval run {name_}', or approve one: ledger eval approve {name_}@V --reason TEXT",
        )
    if found.released == found.head:
        raise LedgerError(
            f"nothing to revert: {name_} v{found.head} is released",
            hint=f"'ledger skill revert {name_} --to V' restores any version",
        )
    return brain.revert(
        name_, found.released, note=note or f"eval revert {name_} to v{found.released}, its newest released version"
    )
