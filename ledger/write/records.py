"""What the brain API returns: receipts, skill summaries, status, and two outcomes that are not bad input."""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ledger.bundle.render import status_doc, status_lines
from ledger.errors import LedgerError, StoreError
from ledger.reports import Report

__all__ = ["NoChangeError", "Receipt", "RecoveryError", "SkillInfo", "Status"]


class NoChangeError(LedgerError):
    """The requested write would leave the brain exactly as it is."""


class RecoveryError(StoreError):
    """An interrupted write cannot be rolled forward without discarding something on disk."""

    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(
            message + "".join(f"\n  {p}" for p in problems[:20]),
            hint="run 'ledger recover' to see it, and 'ledger recover --move-aside' to keep those files "
            "under .ledger/rescued/ and finish the write",
        )
        self.problems = problems


def _one_level(value: Any) -> Any:
    return dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Receipt(Report):
    """What a mutation returns: enough to find and verify the snapshot it made.

    Its document (``to_json()``) is what every write prints with ``--json``; :meth:`json_schema`
    says its shape (ADR 73)."""

    skill: str | None
    version: int | None
    root: str
    commit: str
    operation: str
    chain: dict[str, Any] | None = None
    # Every skill the snapshot touched: {"skill", "action", "version", "files": {rel: added|deleted|modified}}.
    changes: list[dict[str, Any]] = field(default_factory=list)
    signer: str | None = None  # the address that signed the snapshot (docs/lineage.md §8); None: unsigned
    keys: list[str] = field(default_factory=list)  # trust-set changes (``add ADDRESS ROLE``, ``revoke ADDRESS``)

    def to_json(self) -> dict[str, Any]:
        # Not asdict(): it deep-copies every change, 0.3 s of a 10,000-skill import (issue 35).
        # Each change dict is copied one level, so no caller can alter the receipt through it.
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["chain"] = copy.deepcopy(self.chain)
        out["changes"] = [{k: _one_level(v) for k, v in c.items()} for c in self.changes]
        out["keys"] = list(self.keys)
        out["signed"] = self.signer is not None
        if self.chain is None:
            del out["chain"]
        if not self.keys:
            del out["keys"]
        return out

    @classmethod
    def json_schema(cls, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON Schema of the receipt's document, as a command prints it with ``--json``.

        ``chain`` is there once the snapshot was anchored: its chain receipt note, or
        ``{"committed": false, "error": …}`` when the chain step failed (exit 3). ``keys`` is
        there when the trust set changed. A command that prints keys of its own beside the
        receipt (``print_receipt``'s ``extra``) names their schemas in ``extra``.
        """
        change = {
            "type": "object",
            "properties": {
                "skill": {"type": "string"},
                "action": {"type": "string"},
                "version": {"type": "integer"},
                "files": {"type": "object", "additionalProperties": {"enum": ["added", "deleted", "modified"]}},
            },
            "required": ["skill", "action", "version", "files"],
            "additionalProperties": False,
        }
        failed = {
            "type": "object",
            "properties": {"committed": {"enum": [False]}, "error": {"type": "string"}},
            "required": ["committed", "error"],
            "additionalProperties": False,
        }
        props: dict[str, Any] = {
            "skill": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "version": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "root": {"type": "string"},
            "commit": {"type": "string"},
            "operation": {"type": "string"},
            # a chain receipt note (ledger.protocol.receipts: its keys are that format's), or the failure
            "chain": {"anyOf": [failed, {"type": "object"}]},
            "changes": {"type": "array", "items": change},
            "signer": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "keys": {"type": "array", "items": {"type": "string"}},
            "signed": {"type": "boolean"},
            **(extra or {}),
        }
        return {
            "type": "object",
            "properties": props,
            "required": [
                "skill",
                "version",
                "root",
                "commit",
                "operation",
                "changes",
                "signer",
                "signed",
                *(extra or {}),
            ],
            "description": "A write's receipt: the snapshot it made, every skill and file it touched, who signed.",
            "additionalProperties": False,
        }

    @classmethod
    def schema(cls) -> dict[str, Any]:
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": cls.__name__, **cls.json_schema()}


@dataclass(frozen=True)
class SkillInfo:
    name: str
    description: str
    version: int
    license: str | None = None
    compatibility: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Status:
    head_commit: str
    head_root: str
    tree_root: str
    changes: dict[str, str] = field(default_factory=dict)  # bundle path → modified|new|deleted
    pending_chain: int | None = None
    regressions: list[dict[str, Any]] | None = None  # weighed by Brain.status on a clean head (ledger.brain.evidence)

    @property
    def clean(self) -> bool:
        return not self.changes

    def to_json(self) -> dict[str, Any]:
        return status_doc(self.head_commit, self.head_root, self.tree_root, self.changes, self.pending_chain)

    def lines(self) -> list[str]:
        return status_lines(self.head_commit, self.head_root, self.tree_root, self.changes, self.pending_chain)
