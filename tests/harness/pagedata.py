"""Report-page documents (format 2) for tests and scripts/bench_page.py, with realistic variety.

Deterministic (a seeded generator, fixed times), so a page renders to the same bytes twice.
The Wilson interval is computed here independently of the collector (z = 1.96).
"""

from __future__ import annotations

import copy
import hashlib
import math
import random
from typing import Any

Z = 1.959963984540054


def wilson(successes: int, n: int) -> list[float] | None:
    """The 95% Wilson score interval of ``successes`` out of ``n``, or None when n == 0."""
    if n == 0:
        return None
    p = successes / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def tier(successes: int, failures: int) -> dict[str, Any]:
    n = successes + failures
    return {
        "successes": successes,
        "failures": failures,
        "rate": successes / n if n else None,
        "interval": wilson(successes, n),
    }


def _hex(seed: str, n: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n] if n <= 64 else ""


def _time(i: int) -> str:
    return f"2026-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z"


CATEGORIES = ["research", "documents", "security/audits", None]
SIGNERS = ["0x" + _hex(f"signer{i}", 40) for i in range(3)]
VERIFIER = "0x" + _hex("verifier", 40)


def lift(rng: random.Random, version: int) -> dict[str, Any]:
    """A lift as the collector writes one (docs/lineage/evidence.md §6): a paired table, Newcombe's interval."""
    from ledger.evals.lift import newcombe_paired

    table = [rng.randrange(8) for _ in range(4)]
    table[0] += 1
    a, b, c, d = table
    n = sum(table)
    low, high = newcombe_paired(a, b, c, d)
    old = version > 1 and version % 2 == 0
    return {
        "delta": round((b - c) / n, 6),
        "interval": [round(low, 6), round(high, 6)],
        "pairs": n,
        "with_rate": round((a + b) / n, 6),
        "baseline_rate": round((a + c) / n, 6),
        "baseline": "old_skill" if old else "without_skill",
        "arm": version - 1 if old else None,
        "preregistered": rng.random() < 0.7,
        "stale": rng.random() < 0.2,
        "regressed": [str(rng.randrange(20))] if c else [],
    }


def brain(
    skills: int = 12,
    versions: int = 5,
    snapshots: int | None = None,
    chain: bool = True,
    seed: int = 7,
    regressions: int = 2,
) -> dict[str, Any]:
    """A passing brain: ``skills`` skills of up to ``versions`` versions, outcomes in both tiers."""
    rng = random.Random(seed)
    skill_list = []
    for s in range(skills):
        name = f"skill-{s:04d}" if s % 3 else f"pdf-tools-{s:04d}"
        quality = rng.uniform(0.3, 0.95)
        vs = []
        count = versions if s % 4 else max(1, versions - rng.randrange(versions))
        for v in range(1, count + 1):
            n_ver = rng.choice([0, 3, 8, 20, 40]) if v > 1 or s % 2 else 0
            n_self = rng.choice([0, 5, 12, 30])
            q = min(0.99, max(0.01, quality + rng.uniform(-0.15, 0.15)))
            ok_ver = sum(rng.random() < q for _ in range(n_ver))
            ok_self = sum(rng.random() < min(0.99, q + 0.1) for _ in range(n_self))
            vs.append(
                {
                    "version": v,
                    "created": _time(s + v),
                    "commit": _hex(f"c{s}.{v}", 40),
                    "verified": tier(ok_ver, n_ver - ok_ver),
                    "self": tier(ok_self, n_self - ok_self),
                    "lift": {
                        "verified": lift(rng, v) if s % 3 == 1 else None,
                        "self": lift(rng, v) if s % 10 == 2 else None,
                    },
                }
            )
        skill_list.append(
            {
                "name": name,
                "live": s % 11 != 5,
                "description": f"Does task {s} well ({name})",
                "category": CATEGORIES[s % len(CATEGORIES)],
                "versions": vs,
                "regression": None,
            }
        )
    for s in range(min(regressions, skills)):
        sk = skill_list[s * 5 % skills]
        if len(sk["versions"]) >= 2:
            last, prev = sk["versions"][-1], sk["versions"][-2]
            last["verified"], prev["verified"] = tier(3, 17), tier(18, 2)
            sk["regression"] = {
                "version": last["version"],
                "from": prev["version"],
                "revert": f"ledger revert {sk['name']} {prev['version']}",
            }
    n_snap = snapshots if snapshots is not None else max(1, sum(len(s["versions"]) for s in skill_list))
    timeline = []
    for i in range(n_snap):
        anchored = chain and i < n_snap - 2
        sk = skill_list[i % skills] if skills else None
        timeline.append(
            {
                "index": i,
                "commit": _hex(f"snap{i}", 40),
                "time": _time(i),
                "operation": "create" if i < skills else "patch",
                "root": "blake3-tree-v1:" + _hex(f"root{i}", 64),
                "changes": [
                    {
                        "skill": sk["name"],
                        "action": "create" if i < skills else "update",
                        "version": 1 + i // max(skills, 1),
                    }
                ]
                if sk
                else [],
                "signer": SIGNERS[i % 2],
                "role": "agent" if i % 2 else "operator",
                "signature": "ok",
                "anchor": {"seq": i, "tx": "0x" + _hex(f"tx{i}", 64), "block": 100 + i, "checked": True}
                if anchored
                else None,
                "outcomes": i % 7,
                "message": f"{'create' if i < skills else 'patch'}: 1 skill(s)",
                "files": {"added": 1, "changed": 0, "removed": 0}
                if i < skills
                else {"added": 0, "changed": 1, "removed": 0},
                "lines": {"added": 5 + i % 9, "removed": 0 if i < skills else i % 4},
            }
        )
    verified = sum(v["verified"]["successes"] + v["verified"]["failures"] for s in skill_list for v in s["versions"])
    own = sum(v["self"]["successes"] + v["self"]["failures"] for s in skill_list for v in s["versions"])
    ev_root = "0x" + _hex("evidence", 64)
    head = timeline[-1]
    return {
        "format": 2,
        "generated": "2026-11-26T16:00:00Z",
        "brain": {
            "name": "acme-research-agent",
            "genesis": timeline[0]["commit"],
            "head": {"commit": head["commit"], "root": head["root"], "index": head["index"]},
        },
        "verdict": {
            "ok": True,
            "chain_checked": chain,
            "checks": [
                {"name": "lineage", "status": "OK", "detail": f"{n_snap} snapshots re-hashed"},
                {"name": "signatures", "status": "OK", "detail": "every snapshot signed by a trusted key"},
                {"name": "evidence", "status": "OK", "detail": f"{verified + own} outcome records verified"},
                {
                    "name": "chain",
                    "status": "OK" if chain else "SKIP",
                    "detail": "head anchored" if chain else "no chain",
                },
                {"name": "supply", "status": "WARN", "detail": "1 installed skill has a low-severity finding"},
            ],
        },
        "timeline": timeline,
        "skills": skill_list,
        "signers": [
            {
                "address": SIGNERS[0],
                "role": "operator",
                "state": "active",
                "snapshots": (n_snap + 1) // 2,
                "outcomes": 0,
                "checked": True,
            },
            {
                "address": SIGNERS[1],
                "role": "agent",
                "state": "active",
                "snapshots": n_snap // 2,
                "outcomes": own,
                "checked": True,
            },
            {
                "address": VERIFIER,
                "role": "verifier",
                "state": "active",
                "snapshots": 0,
                "outcomes": verified,
                "checked": True,
            },
            {
                "address": SIGNERS[2],
                "role": "agent",
                "state": "revoked",
                "snapshots": 0,
                "outcomes": 0,
                "checked": True,
            },
        ],
        "chain": {
            "chain_id": 31337,
            "name": "local test chain",
            "local": True,
            "explorer": None,
            "registry": REGISTRY,
            "agent": AGENT,
            "checked": True,
            "detail": "the registry's head is two snapshots behind the local head",
            "anchored": max(0, n_snap - 2),
            "pending": min(2, n_snap),
            "seq": max(0, n_snap - 3),
            "head": timeline[max(0, n_snap - 3)]["root"],
            "evidence": {"size": verified + own, "root": ev_root},
            "shares": shares(timeline[max(0, n_snap - 3)]["root"], n_snap - 3, (verified + own, ev_root)),
        }
        if chain
        else None,
        "evidence": {"size": verified + own, "root": ev_root, "verified": verified, "self": own, "checked": True},
        "supply": [
            {
                "name": "skill-0001",
                "source": "github:anthropics/skills@main",
                "pin": _hex("pin", 40),
                "state": "approved",
                "worst": "low",
            },
        ],
        "verify": [
            {"what": "the whole audit", "command": "ledger audit ."},
            {"what": "the head root", "command": "ledger hash ."},
        ],
    }


REGISTRY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
AGENT = "0x" + _hex("agent", 64)
OWNER = "0x" + _hex("owner", 40)


def shares(head: str | None, seq: int, evidence: tuple[int, str], holders: int = 3) -> dict[str, Any]:
    """The chain's share token as ``Shares.to_json()`` gives it (its metadata naming the head on chain),
    plus the page's ``checked``."""
    balances = [("0x" + _hex(f"holder{i}", 40), 1000 * (i + 1)) for i in range(holders - 1)]
    rows = sorted([(OWNER, 1_000_000 - sum(b for _, b in balances)), *balances], key=lambda r: (-r[1], r[0]))
    return {
        "token": REGISTRY,
        "id": AGENT,
        "total_supply": 1_000_000,
        "owner": OWNER,
        "owner_balance": rows[0][1],
        "holders": [{"address": a, "balance": b} for a, b in rows],
        "metadata": {
            "uri": "data:application/json;base64,e30=",
            "head": head,
            "sequence": max(0, seq),
            "evidence": {"size": evidence[0], "root": evidence[1]} if evidence[0] else None,
            "location": None,
        },
        "checked": True,
    }


def failing(data: dict[str, Any] | None = None) -> dict[str, Any]:
    """``data`` (default: :func:`brain`) with a failed signature check; the part flags still say checked."""
    d = copy.deepcopy(data or brain())
    d["verdict"]["ok"] = False
    d["verdict"]["checks"][1] = {
        "name": "signatures",
        "status": "FAIL",
        "detail": "snapshot #3 is signed by a key outside the trust set",
    }
    d["timeline"][3]["signature"] = "fail"
    return d


HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">&amp;"\''


def hostile() -> dict[str, Any]:
    """Every free-text field carries markup that would run if it were not escaped."""
    d = brain(skills=4, versions=3)
    d["brain"]["name"] = "agent " + HOSTILE
    d["skills"][1]["name"] = "s" + HOSTILE
    d["skills"][0]["regression"] = d["skills"][0]["regression"] or None
    for s in d["skills"]:
        if s["regression"]:
            s["regression"]["revert"] = "ledger revert " + HOSTILE + " 1"
    d["verdict"]["checks"][0]["detail"] = "detail " + HOSTILE
    d["verdict"]["checks"][0]["name"] = "check" + HOSTILE
    d["timeline"][0]["operation"] = "op" + HOSTILE
    d["timeline"][-1]["message"] = "message " + HOSTILE  # the newest release note, and its data attribute
    d["skills"][0]["description"] = "does " + HOSTILE
    d["skills"][2]["category"] = "cat" + HOSTILE
    d["verify"][0] = {"what": "what " + HOSTILE, "command": "ledger audit . " + HOSTILE}
    d["timeline"][0]["changes"][0]["skill"] = "c" + HOSTILE
    d["timeline"][1]["role"] = "role" + HOSTILE
    d["signers"][0]["role"] = "r" + HOSTILE
    d["chain"]["detail"] = "chain " + HOSTILE
    d["supply"][0] = {
        "name": "n" + HOSTILE,
        "source": "javascript:alert(1)//" + HOSTILE,
        "pin": HOSTILE,
        "state": HOSTILE,
        "worst": HOSTILE,
    }
    return d


def empty() -> dict[str, Any]:
    """A brain just made: its genesis snapshot, no skills, no signers, no evidence, no chain."""
    d = brain(skills=0, versions=0, snapshots=1, chain=False)
    d["timeline"][0].update(operation="init", signer=None, role=None, signature="unsigned", outcomes=0)
    d["signers"], d["supply"] = [], []
    d["evidence"] = {"size": 0, "root": "0x" + "00" * 32, "verified": 0, "self": 0, "checked": True}
    return d


VECTORS = {
    "passing": lambda: brain(skills=3, versions=3),
    "failing": lambda: failing(brain(skills=3, versions=3)),
    "empty": empty,
}


if __name__ == "__main__":  # python -m tests.harness.pagedata: rewrite tests/vectors/page/*.json
    import json
    from pathlib import Path

    out = Path(__file__).resolve().parents[1] / "vectors" / "page"
    out.mkdir(parents=True, exist_ok=True)
    for name, make in VECTORS.items():
        (out / f"{name}.json").write_text(json.dumps(make(), indent=1, sort_keys=True) + "\n")
        print(out / f"{name}.json")
