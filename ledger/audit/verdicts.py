"""An audit's verdicts: one :class:`Check` per rule of docs/lineage.md §10, gathered in a :class:`Report`.

Kept apart from the checks themselves so that each half of an audit (offline, signatures,
chain) can record into a report without importing the others.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Check", "Report"]


@dataclass
class Check:
    name: str
    ok: bool = True
    summary: str = ""
    snapshot: str | None = None
    index: int | None = None
    path: str | None = None
    expected: str | None = None
    computed: str | None = None
    failures: int = 0
    skipped: bool = False  # could not run (no data to check): never reported as OK
    warned: bool = False  # passed, with something a reader must know (unsigned snapshots)

    def skip(self, reason: str) -> None:
        self.skipped = True
        self.summary = reason

    def warn(self, reason: str) -> None:
        self.warned = True
        self.summary = reason

    @property
    def status(self) -> str:
        return "FAIL" if not self.ok else "SKIP" if self.skipped else "WARN" if self.warned else "OK"

    def fail(self, summary: str, **where: Any) -> None:
        """Record a failure; the first one is kept as the pinpointed divergence."""
        self.failures += 1
        if self.ok:
            self.ok = False
            self.summary = summary
            for key, value in where.items():
                setattr(self, key, value)


@dataclass
class Report:
    repo: str
    checks: dict[str, Check] = field(default_factory=dict)
    timeline: list[dict[str, Any]] = field(default_factory=list)  # oldest first
    skills: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    chain: dict[str, Any] | None = None
    # When and with what the audit ran, so that it can be reproduced.
    context: dict[str, Any] = field(default_factory=dict)
    tops: dict[str, dict[str, bytes]] = field(default_factory=dict, repr=False)  # commit → its top-level blob ids
    chain_skipped: str | None = None  # why the chain.* checks did not run ("no --rpc"), when they did not
    supply: list[dict[str, Any]] = field(default_factory=list)  # the head's skills from elsewhere, with credit
    evidence: Any = field(default=None, repr=False)  # ledger.audit.evidencecheck.Tally: each outcome's tier

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks.values())

    @property
    def skipped(self) -> list[str]:
        """The checks that did not run (SKIP): passing them says nothing."""
        return [name for name, c in self.checks.items() if c.ok and c.skipped]

    def verdict(self) -> str:
        """The last line of a report: OK never hides a check that was not made."""
        if not self.ok:
            return "Verification FAILED"
        chain = [n for n in self.skipped if n.startswith("chain.")] if self.chain_skipped else []
        other = [n for n in self.skipped if n not in chain]
        said = [f"chain checks skipped: {self.chain_skipped}"] if chain else []
        if other:
            said.append(f"{'also ' if said else ''}skipped: {', '.join(other)}")
        return "Verified OK" + (f" ({'; '.join(said)})" if said else "")

    def check(self, name: str) -> Check:
        return self.checks.setdefault(name, Check(name))

    def to_json(self) -> dict[str, Any]:
        return {  # tops is working state, not a verdict
            "repo": self.repo,
            "ok": self.ok,
            "verdict": self.verdict(),
            "skipped": self.skipped,
            "checks": {k: asdict(v) for k, v in self.checks.items()},
            "pending": self.pending,
            "chain": self.chain,
            "context": self.context,
            "timeline": self.timeline,
            "skills": self.skills,
            "supply": self.supply,
        }
