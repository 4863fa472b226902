"""``skill_outcome``: an agent closes the usage receipt a ``skill_view`` gave it with how the task went.

The outcome is signed by the key the runtime acts with (the agent's: *self-reported*, never
summed with a verifier's) and appended to the evidence log as one ``outcome`` snapshot
(docs/lineage/evidence.md).  The receipt pins the version and the snapshot that served it, so an
agent cannot credit a version it did not use.
"""

from __future__ import annotations

from typing import Any

from ledger.errors import UsageError
from ledger.evals import outcomes

__all__ = ["ANNOTATION", "SCHEMA", "record"]

SCHEMA: dict[str, Any] = {
    "name": "skill_outcome",
    "description": "Record how a task went with a skill you used: pass the receipt skill_view returned, the task, "
    "and success, failure or a score. Signed with your key and kept in the skill's evidence log "
    "as a self-reported outcome of exactly the version you viewed.",
    "parameters": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill you used."},
            "receipt": {
                "type": "object",
                "description": "The receipt skill_view returned (skill, version, root, commit, …), unchanged.",
                "properties": {
                    "skill": {"type": "string"},
                    "version": {"type": "integer", "minimum": 1},
                    "root": {"type": "string"},
                    "commit": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
                },
                "required": ["skill", "version", "root", "commit"],
            },
            "task": {"type": "string", "minLength": 1, "maxLength": 512, "description": "The task's id."},
            "outcome": {"type": "string", "enum": ["success", "failure", "score"]},
            "score": {"type": "number", "description": "outcome=score: the score, on scale."},
            "scale": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 2,
                "maxItems": 2,
                "description": "outcome=score: [lowest, highest]; default [0, 1].",
            },
            "threshold": {"type": "number", "description": "outcome=score: the score at or above which it passed."},
            "evidence": {"type": "string", "maxLength": 512, "description": "Where the evidence is (a URI)."},
            "evidence_digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
        },
        "required": ["name", "receipt", "task", "outcome"],
        "additionalProperties": False,
    },
}
ANNOTATION = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}


def record(brain: Any, actor: str, evidence: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """Check the receipt against the call, then sign and append the outcome as ``actor``: the document of
    :class:`ledger.evals.reports.SkillOutcomeReport` (the use case 'ledger outcome record' shares)."""
    receipt = args["receipt"]
    name = brain.resolve(args["name"])
    if receipt["skill"] != name:
        raise UsageError(
            f"the receipt is for {receipt['skill']!r}, not {name!r}",
            hint="pass the receipt skill_view returned for this skill",
        )
    result = args["outcome"]
    if (result == "score") != ("score" in args) or (result != "score" and ({"scale", "threshold"} & set(args))):
        raise UsageError("score, scale and threshold go with outcome=score, and outcome=score needs a score")
    return outcomes.record(
        brain,
        actor,
        name,
        int(receipt["version"]),
        result=result,
        task=args["task"],
        score=args.get("score"),
        scale=tuple(args.get("scale", (0, 1))) if result == "score" else None,
        threshold=args.get("threshold"),
        evidence=args.get("evidence"),
        evidence_digest=args.get("evidence_digest"),
        receipt=receipt,
        attribution=evidence,
    ).to_json()
