"""What the report page shows, gathered from one audit of the brain (and the chain, given ``rpc``).

Every figure comes from what the audit checked, and says so: the verdict and each check; the
mainline with each snapshot's verified signer; competence per version from the evidence log
the ``evidence`` check walked; receipts and pending roots; the supply record.  Where the audit
could not check a part (no chain given, or a check failed) the part is marked unchecked and
the page draws it as a claim (:mod:`ledger.page.render`).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from ledger._faults import pausepoint
from ledger.audit.lineage import audit_repo
from ledger.brain.competence import VersionStats, competence, wilson
from ledger.chain.networks import network
from ledger.chain.receipts import read_receipts
from ledger.chain.shares import read_shares, unavailable
from ledger.errors import ChainError, LedgerError
from ledger.evals.lift import version_json
from ledger.page.model import FORMAT, LIFT, covering, pending_roots
from ledger.protocol.bundlehash import format_root
from ledger.protocol.evidencelog import EvidenceLog
from ledger.store import evidence as ev
from ledger.store import outcomes as oc
from ledger.store.outcomes import format_time

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["collect"]


def _tier(t: Any) -> dict[str, Any]:
    interval = wilson(t.successes, t.n)
    return {
        "successes": t.successes,
        "failures": t.failures,
        "rate": t.successes / t.n if t.n else None,
        "interval": list(interval) if interval else None,
    }


def collect(brain: Brain, *, rpc: str | None = None) -> dict[str, Any]:
    """The page document (format 2) for ``brain``; with ``rpc``, the chain checked too."""

    cfg = brain.config.get("chain") or {}
    kwargs: dict[str, Any] = {}
    if rpc is not None:
        if not (cfg.get("registry") and cfg.get("agent_id")):
            raise ChainError(
                "this brain has no registered agent to check on chain",
                hint="ledger chain deploy / register; or leave out --rpc",
            )
        from ledger.chain.registry import Registry

        # The page names the chain from the config: the endpoint must serve that chain ("wrong chain" otherwise),
        # or a brain configured for chain 1 would be shown as checked on Ethereum mainnet from any test node.
        Registry(rpc, cfg["registry"], expected_chain_id=int(cfg["chain_id"]) if cfg.get("chain_id") else None)
        kwargs = {
            "rpc": rpc,
            "registry": cfg["registry"],
            "agent": int(cfg["agent_id"], 16),
            "from_block": int(cfg.get("deploy_block", 0)),
        }
    report = audit_repo(brain.root, worktree=True, without_chain=("no --rpc", "pass --rpc URL"), **kwargs)
    checks = report.checks
    ok = report.ok
    sig_ok, ev_ok = checks["signatures"].ok, checks["evidence"].ok
    chain_ok = rpc is not None and all(
        c.ok and not c.skipped
        for n, c in checks.items()
        if n in ("chain.code", "chain.events", "chain.roots", "chain.head")
    )
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
    trust = brain.trust()
    per = competence(counted, trust)
    lifted = brain.evidence.lifts(counted)
    roles = trust.active

    timeline, created = _timeline(brain, report, rpc is not None and chain_ok, sig_ok)
    live = brain.evidence.live()
    described = _described(brain)
    skills = []
    for name in sorted(set(created) | set(per)):
        stats = per.get(name, {})
        versions = []
        for v in sorted(created.get(name, {})):
            when, commit = created[name][v]
            vs = stats.get(v) or VersionStats(v)
            lift = version_json(lifted.get(name, {}).get(v))
            versions.append(
                {
                    "version": v,
                    "created": format_time(when),
                    "commit": commit,
                    "verified": _tier(vs.verified),
                    "self": _tier(vs.self),
                    "lift": {t: {k: x[k] for k in LIFT} if (x := lift[t]) else None for t in lift},
                }
            )
        flagged = brain.evidence.regression(name, live[name], stats) if name in live else None
        desc, category = described.get(name, ("", None))
        skills.append(
            {
                "name": name,
                "live": name in live,
                "description": desc,
                "category": category,
                "versions": versions,
                "regression": {k: flagged[k] for k in ("version", "from", "revert")} if flagged else None,
            }
        )
    signed_count: dict[str, int] = {}
    for snap in timeline:
        if snap["signer"]:
            signed_count[snap["signer"]] = signed_count.get(snap["signer"], 0) + 1
    signers = [
        {
            "address": a,
            "role": r,
            "state": "active",
            "snapshots": signed_count.get(a, 0),
            "outcomes": outcomes_by.get(a, 0),
            "checked": ok and sig_ok,
        }
        for a, r in sorted(roles.items())
    ]
    signers += [
        {
            "address": a,
            "role": "revoked",
            "state": "revoked",
            "snapshots": signed_count.get(a, 0),
            "outcomes": outcomes_by.get(a, 0),
            "checked": ok and sig_ok,
        }
        for a in sorted(trust.revoked)
    ]
    tiers = [roles.get(who) for e in entries if (who := _signer(e)) is not None]
    verified = sum(1 for r in tiers if r == "verifier")
    head = report.timeline[-1] if report.timeline else None
    chain = _chain(brain, cfg, report, rpc, chain_ok, timeline)
    evidence = EvidenceLog(entries)
    return {
        "format": FORMAT,
        "generated": format_time(),
        "brain": {
            "name": brain.root.name or "brain",
            "genesis": brain.evidence.genesis,
            "head": {"commit": head["commit"], "root": head["root"], "index": head["index"]},
        },
        "verdict": {
            "ok": ok,
            "chain_checked": chain is not None and chain["checked"],
            "checks": [{"name": n, "status": c.status, "detail": c.summary} for n, c in checks.items()],
        },
        "timeline": timeline,
        "skills": skills,
        "signers": signers,
        "chain": chain,
        "evidence": {
            "size": evidence.size,
            "root": "0x" + evidence.root.hex(),
            "verified": verified,
            "self": sum(1 for r in tiers if r is not None) - verified,
            "checked": ok and ev_ok,
        },
        "supply": [
            {
                "name": s["skill"],
                "source": f"{s['type']} {s['source']}",
                "pin": _pin(s["pin"]),
                "state": s["state"],
                "worst": str(s["verdict"]),
            }
            for s in report.supply
        ],
        "verify": _verify(brain, cfg, rpc, chain),
    }


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


def _timeline(brain: Brain, report: Any, chain_checked: bool, sig_ok: bool) -> tuple[list[dict[str, Any]], Created]:
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
            anchor = {
                "seq": t["chain"]["seq"],
                "tx": t["chain"]["tx"],
                "block": t["chain"]["block"],
                "checked": bool(t["chain"]["ok"]),
            }
        elif t["commit"] in receipts:
            r = receipts[t["commit"]]
            anchor = {"seq": int(r["seq"]), "tx": r["tx"], "block": int(r["block"]), "checked": False}
        files, lines = _release_diff(brain, out[-1] if out else None, t)
        out.append(
            {
                "index": t["index"],
                "commit": t["commit"],
                "time": format_time(t["timestamp"]),
                "operation": t["operation"],
                "root": t["root"],
                "changes": t["changes"],
                "signer": signer if not bad else None,
                "role": t["actor"] if signer and not bad else None,
                "signature": "fail" if bad else "ok" if signer else "unsigned",
                "anchor": anchor,
                "outcomes": max(0, added),
                "message": _subject(store, t["commit"]),
                "files": files,
                "lines": lines,
            }
        )
    return out, created


def _subject(store: Any, commit: str) -> str:
    """The commit message's subject line, as ``git log --format=%s`` shows it (its first paragraph, one line)."""
    try:
        message = store.commit_info(bytes.fromhex(commit))[3]
    except LedgerError:
        return ""
    return " ".join(message.strip().split("\n\n")[0].split())


def _release_diff(
    brain: Brain, parent: dict[str, Any] | None, t: dict[str, Any]
) -> tuple[dict[str, int], dict[str, int]]:
    """What the snapshot changed under skills/ against the one before it on the mainline: files added,
    changed and removed, lines added and removed (as ``git diff --stat`` counts them).  A snapshot with
    its parent's root changed no skill file (an outcome, a key), so its diff is not read."""
    if parent is None or parent["root"] == t["root"]:
        return {"added": 0, "changed": 0, "removed": 0}, {"added": 0, "removed": 0}
    try:
        return brain.store.diffstat(bytes.fromhex(parent["commit"]), bytes.fromhex(t["commit"]), "skills")
    except LedgerError:
        return {"added": 0, "changed": 0, "removed": 0}, {"added": 0, "removed": 0}


def _described(brain: Brain) -> dict[str, tuple[str, str | None]]:
    """Each live skill's description and category, from the head snapshot."""
    try:
        return brain.described(brain.head())
    except LedgerError:
        return {}


def _chain(
    brain: Brain, cfg: dict[str, Any], report: Any, rpc: str | None, checked: bool, timeline: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The chain part.  Anchored and pending come from one source, the timeline's anchors (the chain's
    events with ``rpc``, else this copy's receipts), by :func:`ledger.page.model.covering`: anchored
    counts snapshots, pending counts the roots ``ledger chain anchor`` would send (as ``ledger chain status``)."""
    if not (cfg.get("registry") and cfg.get("agent_id")):
        return None
    agent = int(cfg["agent_id"], 16)
    cover = covering(timeline)
    anchored = sum(1 for c in cover if c is not None)
    seq = max((t["anchor"]["seq"] for t in timeline if t["anchor"] is not None), default=0)
    evidence = head = shares = None
    if rpc is not None:
        from ledger.chain.registry import Registry

        pausepoint("report.chain")  # tests commit on chain here, after the audit read it
        reg = Registry(rpc, cfg["registry"])
        at = int(report.chain["block_height"])  # every read at the block the audit checked, not a later tip
        seq = reg.sequence(agent, at)  # the chain's own count, also of roots this copy does not have
        raw = reg.head(agent, at)
        head = None if raw == b"\0" * 32 else format_root(raw)
        size, root = reg.evidence(agent, at)
        evidence = {"size": size, "root": "0x" + root.hex()} if size else None
        shares = _shares(reg, cfg, agent, checked, head, at)
    else:  # the newest receipt's root: what this copy says the chain holds, a claim until checked
        newest = max((t for t in timeline if t["anchor"] is not None), key=lambda t: t["anchor"]["seq"], default=None)
        head = newest["root"] if newest else None
    detail = (
        "; ".join(f"{n}: {c.summary}" for n, c in report.checks.items() if n.startswith("chain."))
        if rpc
        else "not checked: no --rpc given; the anchors shown are this copy's receipts, claims until checked"
    )
    net = network(int(cfg.get("chain_id") or 0))
    return {
        "chain_id": net.chain_id,
        "name": net.name,
        "local": net.local,
        "explorer": net.explorer,
        "registry": cfg["registry"],
        "agent": f"0x{agent:064x}",
        "checked": checked,
        "detail": detail,
        "anchored": anchored,
        "pending": pending_roots(timeline, cover),
        "seq": seq,
        "head": head,
        "evidence": evidence,
        "shares": shares,
    }


def _shares(
    reg: Any, cfg: dict[str, Any], agent: int, checked: bool, head: str | None, at: int
) -> dict[str, Any] | None:
    """The share token as the chain holds it (ledger.chain.shares).  Checked: the audit checked the chain
    and the token metadata names the head on chain (the page's head, unless newer snapshots are pending)."""
    if unavailable(reg, agent, block=at) is not None:  # a registry from before the token metadata, as chain status
        return None
    found = read_shares(reg, cfg["registry"], agent, from_block=int(cfg.get("deploy_block", 0)), block=at).to_json()
    found["checked"] = bool(checked and found["metadata"]["head"] == head)
    return found


def _verify(brain: Brain, cfg: dict[str, Any], rpc: str | None, chain: dict[str, Any] | None) -> list[dict[str, str]]:
    """The "check this yourself" block: commands that re-derive the page's main figures, run in a clone
    of the brain (``git clone`` of its remote, or a copy of the folder)."""
    q = shlex.quote
    out = [
        {
            "what": "the whole audit behind this page: every snapshot re-hashed, every signature and outcome checked",
            "command": "ledger audit ."
            + (
                f" --rpc {q(rpc)} --registry {q(chain['registry'])} --agent {q(chain['agent'])}"
                if rpc and chain
                else ""
            ),
        },
        {
            "what": "the head root: the skills folder hashed from scratch (equals the page's head root)",
            "command": "ledger hash .",
        },
        {
            "what": "the head commit and its signature, with plain git (the keys exported first)",
            "command": 'd=$(mktemp -d) && ledger keys export --allowed-signers -o "$d/allowed_signers" && git -c '
            'gpg.format=ssh -c gpg.ssh.allowedSignersFile="$d/allowed_signers" verify-commit HEAD',
        },
        {
            "what": "the skills as files, signed in the OpenSSF model-signing format, checked with the stock tool",
            "command": 'd=$(mktemp -d) && ledger export "$d/out" && ledger attest --format oms -o "$d/skills.sig" && '
            'ledger keys export --public user > "$d/user.pem" && model_signing verify key "$d/out" '
            '--signature "$d/skills.sig" --public_key "$d/user.pem"',
        },
    ]
    if chain is not None:
        url = q(rpc or str(cfg.get("rpc") or "$RPC"))
        reg, agent = q(chain["registry"]), q(chain["agent"])  # from the config: quoted, whatever it holds
        out += [
            {
                "what": "the head on chain and the chain sequence (compare with the page's head root)",
                "command": f"cast call {reg} 'headOf(uint256)(bytes32)' {agent} --rpc-url {url} && "
                f"cast call {reg} 'sequenceOf(uint256)(uint64)' {agent} --rpc-url {url}",
            },
            {
                "what": "the evidence log's size and root on chain",
                "command": f"cast call {reg} 'evidenceOf(uint256)(uint64,bytes32)' {agent} --rpc-url {url}",
            },
            {"what": "the shares: token, supply, owner balance and holders", "command": "ledger chain status --json"},
            {
                "what": "the owner's balance of shares, with plain cast",
                "command": f"cast call {reg} 'balanceOf(address,uint256)(uint256)' "
                f"$(cast call {reg} 'ownerOf(uint256)(address)' {agent} --rpc-url {url}) {agent} "
                f"--rpc-url {url}",
            },
            {
                "what": "the token metadata a wallet shows (its head is the on-chain head)",
                "command": f"cast call {reg} 'uri(uint256)(string)' {agent} --rpc-url {url} | "
                "cut -d, -f2 | tr -d '\"' | base64 -d",
            },
        ]
    return out
