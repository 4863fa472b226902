"""The report page's input, checked before a single mark is drawn.

The page is read by people who will not re-derive its numbers, so a malformed or
self-contradictory input is refused (:class:`~ledger.errors.PageDataError`) rather than
drawn: a wrong type anywhere, an unknown or missing key, a rate that is not
``successes / n``, an interval that does not contain its rate, versions out of order.
The shape is the contract with the collector (docs/report.md, "Input").
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ledger.errors import PageDataError

__all__ = ["FORMAT", "covering", "pending_roots", "validate"]

FORMAT = 2

HEX40 = re.compile(r"[0-9a-f]{40}")
ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
WORD = re.compile(r"0x[0-9a-fA-F]{64}")
ROOT = re.compile(r"blake3-tree-v1:[0-9a-f]{64}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)")

# A spec is a type name, a compiled pattern (a string matching it in full), a dict (an object
# with exactly those keys), ("opt", spec), ("list", spec), ("enum", names) or ("pair", spec).
TIER = {"successes": "int", "failures": "int", "rate": ("opt", "unit"), "interval": ("opt", ("pair", "unit"))}
LIFT = {
    "delta": "diff",
    "interval": ("pair", "diff"),
    "pairs": "int",
    "with_rate": "unit",
    "baseline_rate": "unit",
    "baseline": ("enum", ("without_skill", "old_skill")),
    "arm": ("opt", "int"),
    "preregistered": "bool",
    "stale": "bool",
    "regressed": ("list", "str"),
}
VERSION = {
    "version": "int",
    "created": TIME,
    "commit": HEX40,
    "verified": TIER,
    "self": TIER,
    "lift": {"verified": ("opt", LIFT), "self": ("opt", LIFT)},
}
SKILL = {
    "name": "name",
    "live": "bool",
    "description": "str",
    "category": ("opt", "str"),
    "versions": ("list", VERSION),
    "regression": ("opt", {"version": "int", "from": "int", "revert": "name"}),
}
ANCHOR = {"seq": "int", "tx": WORD, "block": "int", "checked": "bool"}
CHANGE = {"skill": "name", "action": ("enum", ("create", "update", "delete")), "version": "int"}
SNAPSHOT = {
    "index": "int",
    "commit": HEX40,
    "time": TIME,
    "operation": "name",
    "root": ROOT,
    "changes": ("list", CHANGE),
    "signer": ("opt", ADDRESS),
    "role": ("opt", "str"),
    "signature": ("enum", ("ok", "fail", "unsigned")),
    "anchor": ("opt", ANCHOR),
    "outcomes": "int",
    "message": "str",
    "files": {"added": "int", "changed": "int", "removed": "int"},
    "lines": {"added": "int", "removed": "int"},
}
SIGNER = {
    "address": ADDRESS,
    "role": "str",
    "state": ("enum", ("active", "revoked")),
    "snapshots": "int",
    "outcomes": "int",
    "checked": "bool",
}
LOGROOT = {"size": "int", "root": WORD}
HOLDER = {"address": ADDRESS, "balance": "int"}
SHARES = {
    "token": ADDRESS,
    "id": WORD,
    "total_supply": "int",
    "owner": ADDRESS,
    "owner_balance": "int",
    "holders": ("list", HOLDER),
    "checked": "bool",
    "metadata": {
        "uri": "str",
        "head": ("opt", ROOT),
        "sequence": "int",
        "evidence": ("opt", LOGROOT),
        "location": ("opt", "str"),
    },
}
CHAIN = {
    "chain_id": "int",
    "name": "name",
    "local": "bool",
    "explorer": ("opt", "str"),
    "registry": ADDRESS,
    "agent": WORD,
    "checked": "bool",
    "detail": "str",
    "anchored": "int",
    "pending": "int",
    "seq": "int",
    "head": ("opt", ROOT),
    "evidence": ("opt", LOGROOT),
    "shares": ("opt", SHARES),
}
CHECK = {"name": "name", "status": ("enum", ("OK", "FAIL", "SKIP", "WARN")), "detail": "str"}
PAGE = {
    "format": "int",
    "generated": TIME,
    "brain": {"name": "name", "genesis": HEX40, "head": {"commit": HEX40, "root": ROOT, "index": "int"}},
    "verdict": {"ok": "bool", "chain_checked": "bool", "checks": ("list", CHECK)},
    "timeline": ("list", SNAPSHOT),
    "skills": ("list", SKILL),
    "signers": ("list", SIGNER),
    "chain": ("opt", CHAIN),
    "evidence": {"size": "int", "root": WORD, "verified": "int", "self": "int", "checked": "bool"},
    "supply": ("list", {"name": "name", "source": "str", "pin": "str", "state": "str", "worst": "str"}),
    "verify": ("list", {"what": "name", "command": "name"}),
}

_HINT = "the page draws only what the collector produced: fix the collector (docs/report.md, 'Input')"


def _refuse(path: str, what: str) -> None:
    raise PageDataError(f"report data: {path or 'the document'}: {what}", hint=_HINT)


def _check(value: Any, spec: Any, path: str) -> None:
    """Check ``value`` against ``spec``, naming the first offending path."""
    if isinstance(spec, dict):
        if not isinstance(value, Mapping):
            _refuse(path, f"expected an object, got {type(value).__name__}")
        keys = set(value)
        if keys != set(spec):
            extra, missing = sorted(map(str, keys - set(spec))), sorted(set(spec) - keys)
            _refuse(path, f"keys differ (unknown {extra}, missing {missing})")
        for key, sub in spec.items():
            _check(value[key], sub, f"{path}.{key}" if path else key)
    elif isinstance(spec, re.Pattern):
        if not isinstance(value, str) or not spec.fullmatch(value):
            _refuse(path, f"expected a string of the form {spec.pattern}, got {_show(value)}")
    elif isinstance(spec, tuple):
        kind, sub = spec
        if kind == "opt":
            if value is not None:
                _check(value, sub, path)
        elif kind == "enum":
            if not isinstance(value, str) or value not in sub:
                _refuse(path, f"expected one of {list(sub)}, got {_show(value)}")
        elif not isinstance(value, list) or (kind == "pair" and len(value) != 2):
            _refuse(path, f"expected a {'pair' if kind == 'pair' else 'list'}, got {_show(value)}")
        else:
            for i, item in enumerate(value):
                _check(item, sub, f"{path}[{i}]")
    elif spec == "int":
        if type(value) is not int or value < 0:
            _refuse(path, f"expected a non-negative integer, got {_show(value)}")
    elif spec == "bool":
        if type(value) is not bool:
            _refuse(path, f"expected true or false, got {_show(value)}")
    elif spec == "unit":
        if type(value) not in (int, float) or not math.isfinite(value) or not 0 <= value <= 1:
            _refuse(path, f"expected a number in [0, 1], got {_show(value)}")
    elif spec == "diff":
        if type(value) not in (int, float) or not math.isfinite(value) or not -1 <= value <= 1:
            _refuse(path, f"expected a number in [-1, 1], got {_show(value)}")
    elif spec in ("str", "name"):
        if not isinstance(value, str) or (spec == "name" and not value):
            _refuse(path, f"expected a{' non-empty' if spec == 'name' else ''} string, got {_show(value)}")
    else:  # pragma: no cover - a spec typo is a bug here, not in the data
        raise AssertionError(spec)


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'…' if len(text) > 40 else ''}"


def _tier(t: Mapping[str, Any], path: str) -> None:
    n = t["successes"] + t["failures"]
    rate, interval = t["rate"], t["interval"]
    if n == 0:
        if rate is not None or interval is not None:
            _refuse(path, "no outcomes, yet a rate or interval is given (both must be null when n == 0)")
        return
    if rate is None or interval is None:
        _refuse(path, f"{n} outcomes but no rate or interval")
    if abs(rate - t["successes"] / n) > 1e-9:
        _refuse(f"{path}.rate", f"{rate} is not successes / n = {t['successes']}/{n}")
    lo, hi = interval
    if not (lo <= rate + 1e-12 and rate <= hi + 1e-12):
        _refuse(f"{path}.interval", f"[{lo}, {hi}] does not contain the rate {rate}")


def _lift(lift: Mapping[str, Any] | None, path: str) -> None:
    if lift is None:
        return
    if lift["pairs"] < 1:
        _refuse(f"{path}.pairs", "a lift has at least one pair")
    if abs(lift["delta"] - (lift["with_rate"] - lift["baseline_rate"])) > 2e-6:
        _refuse(
            f"{path}.delta",
            f"{lift['delta']} is not with_rate − baseline_rate = {lift['with_rate']} − {lift['baseline_rate']}",
        )
    lo, hi = lift["interval"]
    if not (lo <= lift["delta"] + 1e-12 and lift["delta"] <= hi + 1e-12):
        _refuse(f"{path}.interval", f"[{lo}, {hi}] does not contain the delta {lift['delta']}")
    if (lift["arm"] is None) != (lift["baseline"] == "without_skill"):
        _refuse(f"{path}.arm", "an old_skill baseline names its version (arm); a without_skill one has none")


def _increasing(values: list[int], path: str, what: str) -> None:
    for i in range(1, len(values)):
        if values[i] <= values[i - 1]:
            _refuse(f"{path}[{i}]", f"{what} {values[i]} does not follow {values[i - 1]} (must increase)")


def validate(data: Any) -> None:
    """Refuse ``data`` unless it is a well-formed, self-consistent page document (format 2)."""
    _check(data, PAGE, "")
    if data["format"] != FORMAT:
        _refuse("format", f"format {data['format']} is not {FORMAT}; this renderer draws format {FORMAT} only")
    for path, stamp in [("generated", data["generated"])] + [
        (f"timeline[{i}].time", s["time"]) for i, s in enumerate(data["timeline"])
    ]:
        try:
            datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            _refuse(path, f"{stamp!r} is not a valid ISO 8601 time")
    verdict = data["verdict"]
    if verdict["ok"] and any(c["status"] == "FAIL" for c in verdict["checks"]):
        _refuse("verdict.ok", "true, yet a check FAILs: a passing verdict with a failed check is a contradiction")
    _increasing([s["index"] for s in data["timeline"]], "timeline", "index")
    for i, snap in enumerate(data["timeline"]):
        if (snap["signature"] == "ok" and snap["signer"] is None) or (
            snap["signature"] == "unsigned" and snap["signer"] is not None
        ):
            _refuse(
                f"timeline[{i}].signer",
                f"signature {snap['signature']!r} with signer {snap['signer']!r}: "
                "a good signature names its signer, an unsigned snapshot has none (a failed one may not "
                "recover any)",
            )
    names: set[str] = set()
    for i, skill in enumerate(data["skills"]):
        path = f"skills[{i}]"
        if skill["name"] in names:
            _refuse(f"{path}.name", f"{skill['name']!r} appears twice")
        names.add(skill["name"])
        versions = [v["version"] for v in skill["versions"]]
        _increasing(versions, f"{path}.versions", "version")
        for j, v in enumerate(skill["versions"]):
            _tier(v["verified"], f"{path}.versions[{j}].verified")
            _tier(v["self"], f"{path}.versions[{j}].self")
            _lift(v["lift"]["verified"], f"{path}.versions[{j}].lift.verified")
            _lift(v["lift"]["self"], f"{path}.versions[{j}].lift.self")
        reg = skill["regression"]
        if reg is not None and (reg["version"] not in versions or reg["from"] not in versions):
            _refuse(f"{path}.regression", f"v{reg['version']} from v{reg['from']}: not among the versions {versions}")
        if reg is not None and reg["from"] >= reg["version"]:
            _refuse(f"{path}.regression", f"v{reg['version']} cannot regress from a later or the same v{reg['from']}")
    _consistent(data)
    addresses = [s["address"].lower() for s in data["signers"]]
    if len(set(addresses)) != len(addresses):
        _refuse("signers", "an address appears twice")


def covering(timeline: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any] | None]:
    """Each snapshot's anchoring snapshot, or None while it is pending.  The chain holds a sequence of
    roots, one per run of consecutive snapshots with the same root (an outcome or a key change keeps
    the root), as ``ledger chain anchor`` sends them: a snapshot is anchored when a snapshot of its run has
    an anchor (the receipt sits on one of them, usually the first)."""
    out: list[Mapping[str, Any] | None] = []
    i = 0
    while i < len(timeline):
        j = i
        while j + 1 < len(timeline) and timeline[j + 1]["root"] == timeline[i]["root"]:
            j += 1
        anchor = next((s for s in timeline[i : j + 1] if s["anchor"] is not None), None)
        out += [anchor] * (j + 1 - i)
        i = j + 1
    return out


def pending_roots(timeline: Sequence[Mapping[str, Any]], cover: Sequence[Mapping[str, Any] | None]) -> int:
    """How many roots ``ledger chain anchor`` would send: the runs of consecutive same-root snapshots not anchored."""
    return sum(
        1
        for i, c in enumerate(cover)
        if c is None and (i == 0 or timeline[i]["root"] != timeline[i - 1]["root"] or cover[i - 1] is not None)
    )


def _consistent(data: Mapping[str, Any]) -> None:
    """The figures that could contradict each other, checked against their one source."""
    chain, tl = data["chain"], data["timeline"]
    if chain is None:
        if data["verdict"]["chain_checked"]:
            _refuse("verdict.chain_checked", "true, yet there is no chain")
        return
    if data["verdict"]["chain_checked"] != chain["checked"]:
        _refuse("verdict.chain_checked", "differs from chain.checked: the verdict and the chain part disagree")
    cover = covering(tl)
    anchored, pending = sum(1 for c in cover if c is not None), pending_roots(tl, cover)
    if (chain["anchored"], chain["pending"]) != (anchored, pending):
        _refuse(
            "chain.anchored",
            f"anchored {chain['anchored']}, pending {chain['pending']}, but the lineage has "
            f"{anchored} snapshot(s) whose root is anchored and {pending} root(s) not yet on chain",
        )
    seqs = [s["anchor"]["seq"] for s in tl if s["anchor"] is not None]
    # With the chain read, seq is the registry's own count, which can run past this copy's snapshots
    # (roots committed elsewhere: the audit then fails); without, it is the newest receipt's.
    if chain["seq"] < max(seqs, default=0):
        _refuse("chain.seq", f"{chain['seq']} is less than the newest anchor's chain sequence {max(seqs, default=0)}")
    shares = chain["shares"]
    if shares is not None:
        if shares["total_supply"] != sum(h["balance"] for h in shares["holders"]):
            _refuse("chain.shares.total_supply", "is not the sum of the holders' balances")
        if shares["checked"] and shares["metadata"]["head"] != chain["head"]:
            _refuse("chain.shares.checked", "true, yet the token metadata's head is not the head on chain")
