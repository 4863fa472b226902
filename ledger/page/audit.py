"""The audit's page (``ledger verify --html``, ``ledger audit --html``): one audit drawn by the report page's renderer.

The same skeleton, stylesheet, escaping, sections, tables and verdict banner as ``ledger report``
(ADR 67); no script.  It shows what the audit found: the verdict, every check (a failure with its
first divergence), the chain as read, the lineage newest first, each skill's versions and the
skills from elsewhere, and when, with what and against which node the audit ran, so it can be
reproduced.  The audit is passed in as its :class:`~ledger.audit.reports.AuditReport`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger.page.render import banner, checks, document, section, short, table
from ledger.page.svg import text as _e
from ledger.store.outcomes import format_time

if TYPE_CHECKING:
    from pathlib import Path

    from ledger.audit.reports import AuditCheck as Check
    from ledger.audit.reports import AuditReport as Report

__all__ = ["render_audit"]


def _when(stamp: Any) -> str:
    return format_time(stamp) if stamp is not None else "—"


def _root(root: str | None) -> str:
    return short(root, 16) if root else "—"


def _check(chk: Check) -> tuple[str, str, str]:
    """A check's row: its summary, and where a failure first diverged."""
    where = (
        []
        if chk.ok
        else [
            f"snapshot <code>{_e(chk.snapshot[:12])}</code>" + (f" (#{chk.index})" if chk.index is not None else "")
            if chk.snapshot
            else "",
            *(
                f"{what} <code>{_e(value)}</code>"
                for what, value in (("path", chk.path), ("expected", chk.expected), ("computed", chk.computed))
                if value
            ),
        ]
    )
    detail = "<br>".join(p for p in where if p)
    return chk.name, chk.status, _e(chk.summary) + (f"<br>{detail}" if detail else "")


def _snapshot(snap: dict[str, Any], pending: set[str]) -> str:
    changes = ", ".join(f"{c['action']} {c['skill']} v{c['version']}" for c in snap["changes"]) or "—"
    chain = snap.get("chain")
    if chain:
        onchain = (
            f'<span class="pill st-{"OK" if chain["ok"] else "FAIL"}">chain sequence {chain["seq"]}</span> '
            f"block {chain['block']} {short(chain['tx'], 12)}"
        )
    elif snap["commit"] in pending:
        onchain = '<span class="pill st-WARN">pending</span>'
    else:
        onchain = '<span class="none">—</span>'
    bad = not snap["ok"] or (chain is not None and not chain["ok"])
    cls = "bad" if bad else ("pend" if snap["commit"] in pending else "")
    return (
        f'<tr class="{cls}" data-index="{snap["index"]}"><td>#{snap["index"]}</td>'
        f"<td><code>{_e(snap['commit'][:12])}</code></td><td>{_e(_when(snap.get('timestamp')))}</td>"
        f"<td>{_e(snap['operation'])}</td><td class='actor'>{_e(snap.get('actor', '—'))}</td>"
        f"<td>{_e(changes)}</td><td>{_root(snap['root'])}</td><td>{onchain}</td>"
        f"<td>{'✔' if snap['ok'] else '✘'}</td></tr>"
    )


def _chain(report: Report) -> str:
    chain = report.chain
    if not chain:
        return '<p class="none">No chain was checked (pass --rpc, --registry and --agent).</p>'
    return (
        f"<p>Registry <code>{_e(chain['registry'])}</code> on chain {_e(chain['chain_id'])}, agent "
        f"<code>{_e(chain['agent'][:18])}…</code>: {_e(chain['onchain_seq'])} root(s) on chain, "
        f"{len(report.pending)} snapshot(s) pending.</p>"
        f'<dl class="kv" id="context-chain"><dt>RPC endpoint</dt><dd><code>{_e(chain.get("rpc"))}</code></dd>'
        f"<dt>chain id</dt><dd>{_e(chain['chain_id'])}</dd><dt>block height</dt><dd>"
        f"{_e(chain.get('block_height'))} <code>{_e(str(chain.get('block_hash'))[:18])}…</code> at "
        f"{_e(_when(chain.get('block_time')))}</dd></dl>"
    )


def _supply(report: Report) -> str:
    """Whose skills this brain uses (docs/supply-chain.md §7): source, pin, upstream agent, standing.
    ``id='supply'``, single-quoted, is what tests/unit/supply/test_supply.py finds it by."""
    if not report.supply:
        return "<p class=\"none\" id='supply'>None: every skill is this brain's own.</p>"
    rows = []
    for s in report.supply:
        pin = s["pin"].get("commit") or s["pin"].get("sha256") or ""
        credit = s["derived_from"] or {}
        upstream = (
            _e(f"agent {credit['agent']:#x} on chain {credit.get('chain')}")
            if "agent" in credit
            else _root(credit.get("root"))
        )
        rows.append(
            f"<tr><td>{_e(s['skill'])}</td><td>{_e(s['state'])}</td><td>{_e(s['verdict'])}</td>"
            f"<td>{_e(s['type'])} <code>{_e(s['source'])}</code></td><td><code>{_e(pin[:12])}</code></td>"
            f"<td>{upstream}</td><td><code>{_e(s['signer'] or '')}</code></td>"
            f"<td><code>{_e(s['approved_by'] or '')}</code></td></tr>"
        )
    heads = ("skill", "state", "scan", "source", "pin", "derived from", "upstream signer", "approved by")
    return table(heads, "".join(rows), " id='supply'")


def render_audit(report: Report) -> str:
    """The audit as a page: verdict, checks, chain, timeline, skill histories, skills from elsewhere."""
    pending = set(report.pending)
    failed = [c.name for c in report.checks.values() if not c.ok]
    why = _e(report.verdict) if report.ok else f"The audit failed ({_e(', '.join(failed))})."
    skills = "".join(
        f"<li><b>{_e(name)}</b>: "
        + _e(" → ".join("✕" if h["action"] == "delete" else f"v{h['version']}" for h in report.skills[name]))
        + "</li>"
        for name in sorted(report.skills)
    )
    ctx = report.context
    when = ctx.get("audited_at") or format_time()
    heads = ("#", "commit", "recorded (UTC)", "operation", "signed by", "changes", "root", "on chain", "root ok")
    body = "".join(
        [
            f'<header class="top"><h1>Brain lineage audit</h1><span class="sub" id="context"><code>{_e(report.repo)}'
            f"</code> · {len(report.timeline)} snapshot(s) · audited <time>{_e(when)}</time> by brain-ledger "
            f"{_e(ctx.get('ledger_version', '?'))}</span></header>",
            banner(
                ("ok unchecked" if report.skipped else "ok") if report.ok else "fail",
                "VERIFIED" if report.ok else "FAILED",
                why,
            ),
            section("checks", "Checks", checks(_check(c) for c in report.checks.values())),
            section("chain", "On chain", _chain(report)),
            section(
                "timeline",
                "Timeline (newest first)",
                table(heads, "".join(_snapshot(s, pending) for s in reversed(report.timeline)), ' class="tl"'),
            ),
            section("skills", "Skill versions", f'<ul class="skills">{skills}</ul>'),
            section("elsewhere", "Skills from elsewhere", _supply(report)),
        ]
    )
    return document(f"brain-ledger audit: {_e(report.repo)}", f"<main>{body}</main>", script=False)


def write_audit(path: Path, report: Report) -> None:
    """Write the audit's page to ``path`` (``verify``/``audit --html``)."""
    path.write_text(render_audit(report), encoding="utf-8")
