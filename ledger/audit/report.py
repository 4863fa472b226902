"""A self-contained HTML lineage report (inline CSS, no scripts, no external assets)."""

from __future__ import annotations

import html
import time
from typing import Any

from ledger.audit.verdicts import Report

__all__ = ["render_html"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#1d2330;background:#fbfbfd}
h1{font-size:1.5rem;margin:0 0 .25rem} h2{font-size:1.1rem;margin:2rem 0 .5rem}
.verdict{display:inline-block;padding:.3rem .8rem;border-radius:6px;font-weight:600;color:#fff}
.ok{background:#1f883d} .fail{background:#cf222e} .pending{background:#9a6700} .skip{background:#6e7781}
.warn{background:#9a6700}
table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 1px 2px #0001}
th,td{padding:.35rem .6rem;border-bottom:1px solid #e6e8ee;text-align:left;vertical-align:top}
th{background:#f3f4f8;font-weight:600} tr.bad td{background:#ffebe9} tr.pend td{background:#fff8c5}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
.tag{display:inline-block;padding:0 .4rem;border-radius:4px;font-size:12px;color:#fff}
.muted{color:#6e7781} ul.skills{columns:2;padding-left:1.2rem}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _short(root: str | None, n: int = 16) -> str:
    if not root:
        return "—"
    head, _, digest = root.partition(":")
    return f"<code title='{_e(root)}'>{_e(head)}:{_e(digest[:n])}…</code>"


def _when(stamp: Any) -> str:
    """A Unix time as ISO 8601 UTC, or a dash."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(stamp))) if stamp is not None else "—"


def _supply_html(report: Report) -> str:
    """Whose skills this brain uses (docs/supply-chain.md §7): source, pin, upstream agent, standing."""
    if not report.supply:
        return "<p class='muted' id='supply'>None: every skill is this brain's own.</p>"
    rows = []
    for s in report.supply:
        pin = s["pin"].get("commit") or s["pin"].get("sha256") or ""
        credit = s["derived_from"] or {}
        upstream = f"agent {credit['agent']:#x} on chain {credit.get('chain')}" if "agent" in credit else \
            _short(credit.get("root"))  # fmt: skip
        rows.append(f"<tr><td>{_e(s['skill'])}</td><td>{_e(s['state'])}</td><td>{_e(s['verdict'])}</td>"
                    f"<td>{_e(s['type'])} <code>{_e(s['source'])}</code></td><td><code>{_e(pin[:12])}</code></td>"
                    f"<td>{_e(upstream)}</td><td><code>{_e(s['signer'] or '')}</code></td>"
                    f"<td><code>{_e(s['approved_by'] or '')}</code></td></tr>")  # fmt: skip
    return ("<table id='supply'><tr><th>skill</th><th>state</th><th>scan</th><th>source</th><th>pin</th>"
            "<th>derived from</th><th>upstream signer</th><th>approved by</th></tr>" + "".join(rows) + "</table>")


def render_html(report: Report) -> str:
    """Render an audit report for people: verdict, checks, timeline, chain, skill histories."""
    verdict = "ok" if report.ok else "fail"
    rows = []
    pending = set(report.pending)
    for snap in reversed(report.timeline):
        changes = ", ".join(f"{c['action']} {c['skill']} v{c['version']}" for c in snap["changes"]) or "—"
        chain = snap.get("chain")
        if chain:
            state = "ok" if chain["ok"] else "fail"
            onchain = (
                f"<span class='tag {state}'>chain sequence {chain['seq']}</span> block {chain['block']} "
                f"<code title='{_e(chain['tx'])}'>{_e(chain['tx'][:12])}…</code>"
            )
        elif snap["commit"] in pending:
            onchain = "<span class='tag pending'>pending</span>"
        else:
            onchain = "<span class='muted'>—</span>"
        bad = not snap["ok"] or (chain is not None and not chain["ok"])
        cls = "bad" if bad else ("pend" if snap["commit"] in pending else "")
        rows.append(
            f"<tr class='{cls}' data-index='{snap['index']}'><td>#{snap['index']}</td>"
            f"<td><code>{_e(snap['commit'][:12])}</code></td><td>{_e(_when(snap.get('timestamp')))}</td>"
            f"<td>{_e(snap['operation'])}</td><td class='actor'>{_e(snap.get('actor', '—'))}</td>"
            f"<td>{_e(changes)}</td><td>{_short(snap['root'])}</td><td>{onchain}</td>"
            f"<td>{'✔' if snap['ok'] else '✘'}</td></tr>"
        )
    checks = []
    for chk in report.checks.values():
        detail = ""
        if not chk.ok:
            parts = [
                f"snapshot <code>{_e(chk.snapshot[:12])}</code>" + (f" (#{chk.index})" if chk.index is not None else "")
                if chk.snapshot else "",
                f"path <code>{_e(chk.path)}</code>" if chk.path else "",
                f"expected <code>{_e(chk.expected)}</code>" if chk.expected else "",
                f"computed <code>{_e(chk.computed)}</code>" if chk.computed else "",
            ]
            detail = "<br>".join(p for p in parts if p)
        checks.append(
            f"<tr class='{'' if chk.ok else 'bad'}' data-check='{_e(chk.name)}'>"
            f"<td><span class='tag {chk.status.lower()}'>{chk.status}</span></td>"
            f"<td>{_e(chk.name)}</td><td>{_e(chk.summary)}<br><span class='muted'>{detail}</span></td></tr>"
        )
    skills = []
    for name in sorted(report.skills):
        steps = " → ".join(
            f"{'✕' if h['action'] == 'delete' else 'v' + str(h['version'])}" for h in report.skills[name]
        )
        skills.append(f"<li><b>{_e(name)}</b>: {_e(steps)}</li>")
    chain = report.chain
    chain_html = (
        f"<p>Registry <code>{_e(chain['registry'])}</code> on chain {_e(chain['chain_id'])}, agent "
        f"<code>{_e(chain['agent'][:18])}…</code>: {_e(chain['onchain_seq'])} root(s) on chain, "
        f"{len(report.pending)} snapshot(s) pending.</p>"
        f"<table id='context-chain'><tr><th>RPC endpoint</th><td><code>{_e(chain.get('rpc'))}</code></td></tr>"
        f"<tr><th>chain id</th><td>{_e(chain['chain_id'])}</td></tr>"
        f"<tr><th>block height</th><td>{_e(chain.get('block_height'))} "
        f"<code>{_e(str(chain.get('block_hash'))[:18])}…</code> at {_e(_when(chain.get('block_time')))}</td></tr>"
        "</table>"
        if chain
        else "<p class='muted'>No chain was checked (pass --rpc, --registry and --agent).</p>"
    )
    ctx = report.context
    when = ctx.get("audited_at") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>brain-ledger audit: {_e(report.repo)}</title>
<style>{_CSS}</style></head><body>
<h1>Brain lineage audit</h1>
<p class="muted" id="context"><code>{_e(report.repo)}</code> · {len(report.timeline)} snapshot(s) ·
audited <time>{_e(when)}</time> by brain-ledger {_e(ctx.get("ledger_version", "?"))}</p>
<p><span id="verdict" class="verdict {verdict}">{"VERIFIED" if report.ok else "FAILED"}</span>
<span class="muted" id="verdict-line">{_e(report.verdict()) if report.ok else ""}</span></p>
<h2>Checks</h2>
<table id="checks"><tr><th></th><th>check</th><th>result</th></tr>{"".join(checks)}</table>
<h2>On chain</h2>{chain_html}
<h2>Timeline (newest first)</h2>
<table id="timeline"><tr><th>#</th><th>commit</th><th>recorded (UTC)</th><th>operation</th><th>signed by</th>
<th>changes</th><th>root</th>
<th>on chain</th><th>root ok</th></tr>{"".join(rows)}</table>
<h2>Skill versions</h2><ul class="skills" id="skills">{"".join(skills)}</ul>
<h2>Skills from elsewhere</h2>{_supply_html(report)}
</body></html>
"""
