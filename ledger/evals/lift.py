"""Lift: what a skill version adds, from paired evaluation runs (docs/lineage/evidence.md §6; ADR 48).

Pure functions over checked outcome records (the inner ``record`` objects of the evidence log,
in log order).  Only v3 records with an ``eval`` member count; each run is paired with the run
of the other condition that shares its **pairing key** (plan, version, case, run) within one
evaluation (one signed batch: the audit holds a plan's batch to its whole grid, lineage/evidence.md §5), so a
with-skill run is only ever compared with the baseline run of the same case and repetition.

Per skill, version and tier (a record signed by a key the head trusts as ``verifier`` is
*verified*, by any other active key *self-reported*, by a key revoked since *withdrawn*: the
tiers of :mod:`ledger.brain.competence`, never summed) and per comparison (the plan, the baseline
condition and its version, the runner's and grader's declared identities: results of different
comparisons are never summed), the pairs form the paired 2×2 table

    a = both pass, b = pass with the skill only, c = pass with the baseline only, d = neither,

``delta`` = (b − c) / n, the difference of the two pass rates, and its 95 % interval is
Newcombe's (1998) hybrid score interval for paired proportions, his method 10: the Wilson
interval of each rate (:func:`~ledger.brain.competence.wilson`, the same one outcomes use),
combined with the correlation of the pairs (ADR 48 says why).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.brain.competence import Z95, wilson

TRUSTED = frozenset({"verifier", "user", "curator"})  # roles whose plans count (and evaluations release: gate)

__all__ = ["TRUSTED", "Lift", "Pairing", "lift_regressions", "lifts", "newcombe_paired", "passed", "version_json"]

BASELINES = ("without_skill", "old_skill")


def newcombe_paired(a: int, b: int, c: int, d: int, z: float = Z95) -> tuple[float, float] | None:
    """Newcombe's (1998) method 10 interval for p1 − p2 of paired proportions, p1 = (a+b)/n, p2 = (a+c)/n.

    ``a`` pairs where both succeed, ``b`` only the first, ``c`` only the second, ``d`` neither; None for no
    pair.  (l1, u1) and (l2, u2) are the Wilson intervals of p1 and p2; φ is the phi coefficient of the
    table with Newcombe's correction (AD − BC > 0: max(AD − BC − n/2, 0) / √(marginals); otherwise
    (AD − BC) / √(marginals); 0 when a marginal total is 0); then

        L = (p1 − p2) − √((p1 − l1)² − 2φ(p1 − l1)(u2 − p2) + (u2 − p2)²)
        U = (p1 − p2) + √((u1 − p1)² − 2φ(u1 − p1)(p2 − l2) + (p2 − l2)²)
    """
    n = a + b + c + d
    if n <= 0:
        return None
    p1, p2 = (a + b) / n, (a + c) / n
    w1, w2 = wilson(a + b, n, z), wilson(a + c, n, z)
    assert w1 is not None and w2 is not None
    (l1, u1), (l2, u2) = w1, w2
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    if margins == 0:
        phi = 0.0
    elif cross > 0:
        phi = max(cross - n / 2, 0.0) / math.sqrt(margins)
    else:
        phi = cross / math.sqrt(margins)
    low = (p1 - p2) - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = (p1 - p2) + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, low), min(1.0, high)


def passed(outcome: Mapping[str, Any]) -> bool:
    """Whether a run passed: every assertion passed (``score`` ≥ ``threshold``, which an eval record sets to
    the total), or ``success``."""
    if outcome["result"] == "score":
        threshold = outcome["threshold"]
        return bool(outcome["score"] >= (threshold if threshold is not None else outcome["scale"][1]))
    return bool(outcome["result"] == "success")


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


@dataclass
class Lift:
    """The paired runs of one comparison of one skill version in one tier."""

    skill: str
    version: int
    tier: str  # "verified" or "self"
    plan: str | None
    baseline: str  # "without_skill" or "old_skill"
    arm: int | None  # the baseline's version (old_skill), else None
    runner: str
    grader: str
    table: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # a, b, c, d
    ms: list[int] = field(default_factory=lambda: [0, 0])  # sums over the pairs: with, baseline
    tokens: list[int] = field(default_factory=lambda: [0, 0, 0])  # over pairs with both counts: with, baseline, n
    cases: dict[str, list[bool]] = field(default_factory=dict)  # case -> [every baseline run passed, a with failed]
    last: int = -1  # log index of its newest run
    stale: bool = False

    @property
    def pairs(self) -> int:
        return sum(self.table)

    @property
    def delta(self) -> float:
        return (self.table[1] - self.table[2]) / self.pairs

    @property
    def interval(self) -> tuple[float, float]:
        found = newcombe_paired(*self.table)
        assert found is not None
        return found

    @property
    def regressed(self) -> list[str]:
        """Cases that passed in every baseline run and failed in some run with this version."""
        return [case for case, (base_all, with_failed) in self.cases.items() if base_all and with_failed]

    def add(self, with_: Mapping[str, Any], base: Mapping[str, Any], index: int) -> None:
        w, b = passed(with_["outcome"]), passed(base["outcome"])
        self.table[0 if w and b else 1 if w else 2 if b else 3] += 1
        we, be = with_["eval"], base["eval"]
        self.ms[0] += we["ms"]
        self.ms[1] += be["ms"]
        if we["tokens"] is not None and be["tokens"] is not None:
            self.tokens[0] += we["tokens"]
            self.tokens[1] += be["tokens"]
            self.tokens[2] += 1
        seen = self.cases.setdefault(we["case"], [True, False])
        seen[0] = seen[0] and b
        seen[1] = seen[1] or not w
        self.last = max(self.last, index)

    def to_json(self) -> dict[str, Any]:
        n = self.pairs
        a, b, c = self.table[:3]
        low, high = self.interval
        tokens = _r((self.tokens[0] - self.tokens[1]) / self.tokens[2]) if self.tokens[2] else None
        return {
            "plan": self.plan,
            "baseline": self.baseline,
            "arm": self.arm,
            "runner": self.runner,
            "grader": self.grader,
            "pairs": n,
            "table": list(self.table),
            "with_rate": _r((a + b) / n),
            "baseline_rate": _r((a + c) / n),
            "delta": _r(self.delta),
            "interval": [_r(low), _r(high)],
            "preregistered": self.plan is not None,
            "stale": self.stale,
            "regressed": self.regressed,
            "time_delta_ms": _r((self.ms[0] - self.ms[1]) / n),
            "tokens_delta": tokens,
        }


class Pairing:
    """The pairs of a log, fed in order, one append at a time (:meth:`add`), then :meth:`result`.

    A cell (a pairing key within one batch) is paired within one :meth:`add`: a batch is appended whole
    (lineage/evidence.md §9), so its two runs of a cell never arrive apart; the comparisons accumulate across calls, so
    a
    cache of them (:meth:`ledger.brain.evidence.Evidence.figures`) extends with the next append's runs."""

    def __init__(self) -> None:
        self.groups: dict[tuple[Any, ...], Lift] = {}
        self.ran: dict[str, list[str]] = {}  # skill -> its newest eval record's [runner, grader]
        self.planned: dict[str, list[str]] = {}  # skill -> its newest plan's [runner id, grader id]

    def add(
        self,
        records: Iterable[Mapping[str, Any]],
        roles: Mapping[str, str],
        plans: Iterable[Mapping[str, Any]],
        start: int = 0,
    ) -> None:
        """``records`` (log order, the first at log index ``start``) and the ``plans`` among the same entries."""
        cells: dict[tuple[Any, ...], list[Any]] = {}  # pairing key -> [with, baseline, log index]
        for index, rec in enumerate(records, start):
            ev = rec.get("eval")
            if ev is None:
                continue
            role = roles.get(rec["signer"])
            if role is None:  # signed by a key revoked since (or never trusted): withdrawn
                continue
            self.ran[rec["skill"]] = [ev["runner"], ev["grader"]]
            tier = "verified" if role == "verifier" else "self"
            batch = (rec.get("batch") or {}).get("id")
            key = (rec["skill"], rec["version"], tier, ev["plan"], batch, ev["case"], ev["run"])
            cell = cells.setdefault(key, [None, None, index])
            slot = 0 if ev["condition"] == "with_skill" else 1
            if cell[slot] is None:  # a cell holds one run of each condition (the audit: each cell once)
                cell[slot] = rec
                cell[2] = index
        for plan in plans:  # an agent's plan does not make the others' evidence out of date (the gate's rule)
            if roles.get(plan.get("signer") or "") in TRUSTED:
                self.planned[plan["skill"]] = [plan["runner"]["id"], plan["grader"]["id"]]
        for (skill, version, tier, plan, _batch, _case, _run), (with_, base, index) in cells.items():
            if with_ is None or base is None:
                continue
            be, we = base["eval"], with_["eval"]
            gkey = (skill, version, tier, plan, be["condition"], be["arm"], we["runner"], we["grader"])
            lift = self.groups.get(gkey)
            if lift is None:
                lift = self.groups[gkey] = Lift(
                    skill, version, tier, plan, be["condition"], be["arm"], gkey[6], gkey[7]
                )
            lift.add(with_, base, index)

    def keep(self, lift: Lift) -> None:
        """A comparison read back from a cache of an earlier :meth:`result`."""
        self.groups[
            (lift.skill, lift.version, lift.tier, lift.plan, lift.baseline, lift.arm, lift.runner, lift.grader)
        ] = lift

    def result(self) -> dict[str, dict[int, dict[str, list[Lift]]]]:
        out: dict[str, dict[int, dict[str, list[Lift]]]] = {}
        for lift in self.groups.values():
            current = self.planned.get(lift.skill) or self.ran.get(lift.skill)
            lift.stale = [lift.runner, lift.grader] != current
            out.setdefault(lift.skill, {}).setdefault(lift.version, {}).setdefault(lift.tier, []).append(lift)
        for per in out.values():
            for tiers in per.values():
                for found in tiers.values():
                    found.sort(key=_rank)
        return out


def lifts(
    records: Iterable[Mapping[str, Any]], roles: Mapping[str, str], plans: Iterable[Mapping[str, Any]] = ()
) -> dict[str, dict[int, dict[str, list[Lift]]]]:
    """Per skill, version and tier (``"verified"``, ``"self"``), every comparison's :class:`Lift`, the one
    shown first first (a current one, then a pre-registered one, then the newest).  ``records`` in log order;
    tiers by ``roles`` (the head's active keys: address → role); staleness against the newest of ``plans``
    (plan bodies in log order) of the skill, or, for a skill without a plan, its newest evaluation's."""
    pairing = Pairing()
    pairing.add(records, roles, plans)
    return pairing.result()


def _rank(lift: Lift) -> tuple[bool, bool, int]:
    """The comparison shown first: a current one before a stale one, pre-registered before not, then the newest."""
    return (lift.stale, lift.plan is None, -lift.last)


def version_json(found: Mapping[str, list[Lift]] | None) -> dict[str, Any]:
    """A version's ``lift`` member: per tier its first comparison, with the others under ``earlier``; or null."""
    out: dict[str, Any] = {}
    for tier in ("verified", "self"):
        shown = (found or {}).get(tier) or []
        out[tier] = {**shown[0].to_json(), "earlier": [x.to_json() for x in shown[1:]]} if shown else None
    return out


def lift_regressions(name: str, live: int, per: Mapping[int, Mapping[str, list[Lift]]]) -> list[dict[str, Any]]:
    """The live skill's flagged lifts, one per tier: its newest version up to ``live`` with a lift in that tier,
    flagged when the upper end of the lift's interval is below 0 (the version makes the agent worse), or, for a
    comparison against no skill under a plan, below the lower end of its predecessor's lift on the same plan
    and tier (significantly less than the version before added)."""
    out = []
    for tier in ("verified", "self"):
        judged = [v for v in per if v <= live and per[v].get(tier)]
        if not judged:
            continue
        version = max(judged)
        lift = per[version][tier][0]
        low, high = lift.interval
        before = None
        if lift.plan is not None and lift.baseline == "without_skill":
            earlier = [
                (v, x)
                for v in judged
                if v < version
                for x in per[v][tier]
                if x.plan == lift.plan and x.baseline == "without_skill"
            ]
            before = max(earlier, key=lambda vx: vx[0]) if earlier else None
        below_zero = high < 0
        below_before = before is not None and high < before[1].interval[0]
        if not (below_zero or below_before):
            continue
        prev = before[0] if before is not None else (lift.arm if lift.arm is not None else version - 1)
        doc = {
            "kind": "lift",
            "skill": name,
            "version": version,
            "live": live,
            "tier": tier,
            "plan": lift.plan,
            "delta": _r(lift.delta),
            "interval": [_r(low), _r(high)],
            "pairs": lift.pairs,
            "regressed": lift.regressed,
            "why": "below zero" if below_zero else "below its predecessor's",
            "from": before[0] if before is not None else None,
            "from_delta": _r(before[1].delta) if before is not None else None,
            "from_interval": [_r(x) for x in before[1].interval] if before is not None else None,
            "revert": f"ledger revert {name} --to {prev}" if prev and prev >= 1 else None,
        }
        out.append(doc)
    return out
