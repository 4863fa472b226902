"""What the report page shows, gathered from one audit of the brain (and the chain, given ``rpc``).

Every figure comes from what the audit checked, and says so: the verdict and each check; the
mainline with each snapshot's verified signer; competence per version from the evidence log
the ``evidence`` check walked; receipts and pending roots; the supply record.  Where the audit
could not check a part (no chain given, or a check failed) the part is marked unchecked and
the page draws it as a claim (:mod:`ledger.page.render`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ledger.audit.lineage import audit_repo
from ledger.brain.competence import VersionStats, competence, wilson
from ledger.chain.receipts import read_receipts
from ledger.chain.tlog import root_of
from ledger.errors import ChainError, LedgerError
from ledger.evals.lift import version_json
from ledger.page.model import LIFT
from ledger.store import evidence as ev
from ledger.store import outcomes as oc

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["collect"]


def _iso(stamp: int | float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(stamp)))


def _tier(t: Any) -> dict[str, Any]:
    interval = wilson(t.successes, t.n)
    return {"successes": t.successes, "failures": t.failures, "rate": t.successes / t.n if t.n else None,
            "interval": list(interval) if interval else None}  # fmt: skip


def collect(brain: Brain, *, rpc: str | None = None) -> dict[str, Any]:
    """The page document (format 1) for ``brain``; with ``rpc``, the chain checked too."""

    cfg = brain.config.get("chain") or {}
    kwargs: dict[str, Any] = {}
    if rpc is not None:
        if not (cfg.get("registry") and cfg.get("agent_id")):
            raise ChainError("this brain has no registered agent to check on chain",
                             hint="ledger chain deploy / register; or leave out --rpc")  # fmt: skip
        kwargs = {"rpc": rpc, "registry": cfg["registry"], "agent": int(cfg["agent_id"], 16),
                  "from_block": int(cfg.get("deploy_block", 0))}  # fmt: skip
    report = audit_repo(brain.root, worktree=True, without_chain=("no --rpc", "pass --rpc URL"), **kwargs)
    checks = report.checks
    ok = report.ok
    sig_ok, ev_ok = checks["signatures"].ok, checks["evidence"].ok
    chain_ok = rpc is not None and all(c.ok and not c.skipped for n, c in checks.items()
                                       if n in ("chain.events", "chain.roots", "chain.head"))  # fmt: skip
    entries = brain.evidence.entries()
    try:
        counted = brain.evidence.checked()  # what the figures count: entries whose signatures verify
    except LedgerError:
        counted = []  # an altered log: the audit fails, and the page claims nothing
    outcomes_by: dict[str, int] = {}
    for entry in entries:  # every outcome of the head's log, merged in or appended here (not plans, approvals)
        who = _signer(entry)
        if who is not None:
            outcomes_by[who] = outcomes_by.get(who, 0) + 1
    trust = brain.evidence._trust()
    per = competence(counted, trust)
    lifted = brain.evidence.lifts(counted)
    roles = trust.active

    timeline, created = _timeline(brain, report, rpc is not None and chain_ok, sig_ok)
    live = brain.evidence.live()
    skills = []
    for name in sorted(set(created) | set(per)):
        stats = per.get(name, {})
        versions = []
        for v in sorted(created.get(name, {})):
            when, commit = created[name][v]
            vs = stats.get(v) or VersionStats(v)
            lift = version_json(lifted.get(name, {}).get(v))
            versions.append({"version": v, "created": _iso(when), "commit": commit,
                             "verified": _tier(vs.verified), "self": _tier(vs.self),
                             "lift": {t: {k: x[k] for k in LIFT} if (x := lift[t]) else None
                                      for t in lift}})  # fmt: skip
        flagged = brain.evidence.regression(name, live[name], stats) if name in live else None
        skills.append({"name": name, "live": name in live, "versions": versions,
                       "regression": {k: flagged[k] for k in ("version", "from", "revert")} if flagged else None})
    signed_count: dict[str, int] = {}
    for snap in timeline:
        if snap["signer"]:
            signed_count[snap["signer"]] = signed_count.get(snap["signer"], 0) + 1
    signers = [{"address": a, "role": r, "state": "active", "snapshots": signed_count.get(a, 0),
                "outcomes": outcomes_by.get(a, 0), "checked": ok and sig_ok} for a, r in sorted(roles.items())]
    signers += [{"address": a, "role": "revoked", "state": "revoked", "snapshots": signed_count.get(a, 0),
                 "outcomes": outcomes_by.get(a, 0), "checked": ok and sig_ok} for a in sorted(trust.revoked)]
    tiers = [roles.get(who) for e in entries if (who := _signer(e)) is not None]
    verified = sum(1 for r in tiers if r == "verifier")
    head = report.timeline[-1] if report.timeline else None
    return {
        "format": 1,
        "generated": _iso(time.time()),
        "brain": {"name": brain.root.name or "brain", "genesis": brain.evidence.genesis,
                  "head": {"commit": head["commit"], "root": head["root"], "index": head["index"]}},
        "verdict": {"ok": ok, "checks": [{"name": n, "status": c.status, "detail": c.summary}
                                         for n, c in checks.items()]},
        "timeline": timeline,
        "skills": skills,
        "signers": signers,
        "chain": _chain(brain, cfg, report, rpc, chain_ok),
        "evidence": {"size": len(entries), "root": "0x" + root_of(entries).hex(), "verified": verified,
                     "self": sum(1 for r in tiers if r is not None) - verified, "checked": ok and ev_ok},
        "supply": [{"name": s["skill"], "source": f"{s['type']} {s['source']}", "pin": _pin(s["pin"]),
                    "state": s["state"], "worst": str(s["verdict"])} for s in report.supply],
    }  # fmt: skip


def _signer(entry: bytes) -> str | None:
    """The signer of an outcome record; None for an eval plan or an approval (no outcome)."""
    try:
        doc = oc.loads(entry)
        if isinstance(doc, dict) and "record" not in doc and ("plan" in doc or "approval" in doc):
            return None
        return str(doc["record"]["signer"])
    except (LedgerError, KeyError, TypeError):
        return "unreadable"


def _pin(pin: dict[str, Any]) -> str:
    return str(pin.get("commit") or pin.get("sha256") or pin.get("version") or pin.get("root") or "")


Created = dict[str, dict[int, tuple[int, str]]]  # skill → version → (time, commit) of its first snapshot


def _timeline(brain: Brain, report: Any, chain_checked: bool,
              sig_ok: bool) -> tuple[list[dict[str, Any]], Created]:  # fmt: skip
    """The mainline for the page, and each version's first snapshot."""

    store = brain.store
    receipts: dict[str, Any] = {}
    if brain.config.get("chain") and not chain_checked:
        receipts = read_receipts(store)
    failed_at = report.checks["signatures"].index if not sig_ok else None
    out: list[dict[str, Any]] = []
    created: Created = {}
    size = 0
    for t in report.timeline:
        for c in t["changes"]:
            if c["action"] != "delete":
                created.setdefault(c["skill"], {}).setdefault(c["version"], (t["timestamp"], t["commit"]))
        added = 0
        if t["operation"] in ("outcome", "merge"):
            top = report.tops.get(t["commit"], {})
            tree = top.get(ev.EVIDENCE)
            now = ev.size_of(store, tree) if tree is not None else 0
            added, size = now - size, now
        signer = t.get("signer")
        bad = t["actor"] in ("refused", "bad signature") or (failed_at is not None and t["index"] >= failed_at)
        anchor = None
        if t.get("chain") and chain_checked:
            anchor = {"seq": t["chain"]["seq"], "tx": t["chain"]["tx"], "block": t["chain"]["block"],
                      "checked": bool(t["chain"]["ok"])}  # fmt: skip
        elif t["commit"] in receipts:
            r = receipts[t["commit"]]
            anchor = {"seq": int(r["seq"]), "tx": r["tx"], "block": int(r["block"]), "checked": False}
        out.append({"index": t["index"], "commit": t["commit"], "time": _iso(t["timestamp"]),
                    "operation": t["operation"], "root": t["root"], "changes": t["changes"],
                    "signer": signer if not bad else None, "role": t["actor"] if signer and not bad else None,
                    "signature": "fail" if bad else "ok" if signer else "unsigned", "anchor": anchor,
                    "outcomes": max(0, added)})  # fmt: skip
    return out, created


def _chain(brain: Brain, cfg: dict[str, Any], report: Any, rpc: str | None, checked: bool) -> dict[str, Any] | None:
    if not (cfg.get("registry") and cfg.get("agent_id")):
        return None
    anchored = sum(1 for t in report.timeline if t.get("chain")) if rpc else 0
    if rpc is None:
        anchored = len(read_receipts(brain.store))
    evidence = None
    head = None
    if rpc is not None:
        from ledger.chain.registry import Registry

        reg = Registry(rpc, cfg["registry"])
        raw = reg.head(int(cfg["agent_id"], 16))
        head = None if raw == b"\0" * 32 else "blake3-tree-v1:" + raw.hex()
        if hasattr(reg, "evidence"):
            size, root = reg.evidence(int(cfg["agent_id"], 16))
            evidence = {"size": size, "root": "0x" + root.hex()} if size else None
    detail = "; ".join(f"{n}: {c.summary}" for n, c in report.checks.items() if n.startswith("chain.")) \
        if rpc else "not checked: no --rpc given; anchors shown are this copy's receipts, claims until checked"
    pending = len(report.pending)
    if rpc is None:
        roots = sum(1 for i, t in enumerate(report.timeline) if i == 0 or t["root"] != report.timeline[i - 1]["root"])
        pending = max(0, roots - anchored)
    return {"chain_id": int(cfg.get("chain_id") or 0), "registry": cfg["registry"],
            "agent": f"0x{int(cfg['agent_id'], 16):064x}", "checked": checked, "detail": detail,
            "anchored": anchored, "pending": pending, "head": head, "evidence": evidence}  # fmt: skip
