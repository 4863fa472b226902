"""Competence per skill version: successes and failures by tier, rates with Wilson intervals, regressions.

Two tiers, never summed (docs/lineage/evidence.md §6): outcomes signed by a key the head trusts as
``verifier`` are *verified*; outcomes signed by any other trusted key are *self-reported*.  A
key revoked since is withdrawn from both (its outcomes are still in the log, and counted as
``withdrawn``), so revoking a compromised verifier key takes back what it vouched for.

A version **regressed** when its verified success rate is significantly worse than its
predecessor's: both have verified outcomes, and the upper end of its 95 % Wilson interval is
below the lower end of the predecessor's.  Non-overlapping intervals is a deliberately strict
test: a flag is worth acting on (``ledger skill revert``), and anyone can check it from the two
intervals shown beside it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.signatures.trust import Trust

__all__ = ["Tier", "VersionStats", "best_verified", "competence", "regression", "wilson"]

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95 % interval


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a binomial proportion (Wilson 1927); None for no trial."""
    if n <= 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Tier:
    successes: int = 0
    failures: int = 0
    scores: list[float] = field(default_factory=list)  # normalised to [0, 1], scores without a threshold

    @property
    def n(self) -> int:
        return self.successes + self.failures

    def to_json(self) -> dict[str, Any]:
        interval = wilson(self.successes, self.n)
        return {
            "successes": self.successes,
            "failures": self.failures,
            "rate": round(self.successes / self.n, 6) if self.n else None,
            "interval": [round(interval[0], 6), round(interval[1], 6)] if interval else None,
            "scored": len(self.scores),
            "mean_score": round(sum(self.scores) / len(self.scores), 6) if self.scores else None,
        }


@dataclass
class VersionStats:
    version: int
    verified: Tier = field(default_factory=Tier)
    self: Tier = field(default_factory=Tier)
    withdrawn: int = 0  # outcomes signed by a key revoked since (or never trusted)
    digest: str | None = None  # the version's directory digest, as its records name it

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "verified": self.verified.to_json(),
            "self": self.self.to_json(),
            "withdrawn": self.withdrawn,
        }


def competence(entries: Iterable[bytes | Mapping[str, Any]], trust: Trust) -> dict[str, dict[int, VersionStats]]:
    """Per skill, per version, the outcomes of ``entries`` by tier under ``trust`` (the head's).

    ``entries`` are checked ones (:meth:`ledger.brain.evidence.Evidence.checked`: every signature
    verified, each entry measured before it was parsed), as bytes or as their parsed JSON (a caller that
    reads them for more than this parses each once), so this reads each record as it is.  An eval
    plan or an approval counts in no figure, nor does an evaluation's baseline arm (a ``without_skill`` or
    ``old_skill`` run is not an outcome of the version it belongs to; docs/lineage/evaluations.md)."""
    out: dict[str, dict[int, VersionStats]] = {}
    for data in entries:
        rec = (json.loads(data) if isinstance(data, bytes) else data).get("record")  # an entry, or its JSON
        if rec is None or (rec.get("eval") or {}).get("condition", "with_skill") != "with_skill":
            continue
        per = out.setdefault(rec["skill"], {})
        stats = per.get(rec["version"])
        if stats is None:
            stats = per[rec["version"]] = VersionStats(rec["version"], digest=rec["digest"])
        role = trust.active.get(rec["signer"])
        if role is None:
            stats.withdrawn += 1
            continue
        tier = stats.verified if role == "verifier" else stats.self
        out_ = rec["outcome"]
        if out_["result"] == "success":
            tier.successes += 1
        elif out_["result"] == "failure":
            tier.failures += 1
        else:
            lo, hi = out_["scale"]
            if out_["threshold"] is None:
                tier.scores.append((out_["score"] - lo) / (hi - lo))
            elif out_["score"] >= out_["threshold"]:
                tier.successes += 1
            else:
                tier.failures += 1
    return out


def best_verified(versions: Mapping[int, VersionStats]) -> int | None:
    """The version with the best verified evidence: the highest lower end of its 95 % Wilson interval
    (the newest on a tie); None when no version has a verified outcome.  What a target linked with
    ``--best-verified`` shows (docs/lineage/evidence.md §6)."""
    scored = [(wilson(s.verified.successes, s.verified.n)[0], v) for v, s in versions.items() if s.verified.n]  # type: ignore[index]
    return max(scored)[1] if scored else None


def regression(name: str, live: int, versions: Mapping[int, VersionStats]) -> dict[str, Any] | None:
    """The verified regression the live skill stands on: its newest version up to ``live`` with verified
    outcomes, against that version's newest predecessor with some.  An unverified newer version does not
    clear it (a one-byte edit is no evidence); verified outcomes of the live version do (and a revert to the
    predecessor's content, which :meth:`ledger.brain.evidence.Evidence.regression` looks for)."""
    judged = [v for v in versions if v <= live and versions[v].verified.n]
    if not judged:
        return None
    cur = versions[max(judged)]
    before = [v for v in judged if v < cur.version]
    if not before:
        return None
    prev = versions[max(before)]
    a, b = wilson(cur.verified.successes, cur.verified.n), wilson(prev.verified.successes, prev.verified.n)
    assert a is not None and b is not None
    if a[1] >= b[0]:
        return None
    return {
        "skill": name,
        "version": cur.version,
        "live": live,
        "from": prev.version,
        "rate": round(cur.verified.successes / cur.verified.n, 6),
        "from_rate": round(prev.verified.successes / prev.verified.n, 6),
        "interval": [round(a[0], 6), round(a[1], 6)],
        "from_interval": [round(b[0], 6), round(b[1], 6)],
        "revert": f"ledger revert {name} --to {prev.version}",
    }
