"""The shareholder report page: one static, self-contained HTML document per agent.

It draws what the collector gathered and the audit checked, and never more: the input is
refused unless well formed (:mod:`ledger.page.model`); every string is escaped; the page
loads nothing (inline CSS and script, both pinned by a hash in its Content-Security-Policy).
One convention runs through it: a figure the audit checked is solid ink with a ✓ and
``data-checked="true"``; anything else is *claimed*, grey, hatched and italic, labelled so
and ``data-checked="false"``.  A brain whose audit fails is led by FAILING, and none of its
figures is shown as checked, whatever the part flags say: a failed audit vouches for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ledger.page import svg
from ledger.page.model import validate
from ledger.page.style import CSP, CSS, JS
from ledger.page.svg import hook
from ledger.page.svg import text as _e

__all__ = ["ATTENTION", "NEWEST", "OPEN_SKILLS", "render_page"]

NEWEST = 50  # timeline rows shown open; the rest sit in a "show all" <details>
OPEN_SKILLS = 100  # skill rows shown open, most in need of attention first
ATTENTION = 4  # larger plots, for the regressed and the weakest skills


def fig(text: str, checked: bool) -> str:
    """A figure (already escaped ``text``) marked checked or claimed, the page's one convention.

    The ✓ and the "claimed" label are drawn by the stylesheet from ``data-checked``, so the
    mark and the attribute a test reads cannot disagree (and 10,000 rows do not repeat them).
    """
    return f'<span class="fig" data-checked="{"true" if checked else "false"}">{text}</span>'


def _count(n: int, unit: str = "") -> str:
    return f"{n:,} {unit}".rstrip()


def _short(value: str, keep: int = 10) -> str:
    text = value.partition(":")[2] or value
    shown = value[: len(value) - len(text)] + text[:keep] + ("…" if len(text) > keep else "")
    return f'<code title="{_e(value)}">{_e(shown)}</code>'


def _rate(tier: Mapping[str, Any]) -> str:
    if tier["rate"] is None:
        return '<span class="none">no outcomes</span>'
    n = tier["successes"] + tier["failures"]
    lo, hi = tier["interval"]
    return (f"{tier['rate'] * 100:.0f}% <span class='sub'>{tier['successes']}/{n} · "
            f"{lo * 100:.0f}–{hi * 100:.0f}%</span>")  # fmt: skip


def _tier(tier: Mapping[str, Any], checked: bool) -> str:
    """A tier's latest figure; "no outcomes" is an absence, not a figure, so it is never marked."""
    return fig(_rate(tier), checked) if tier["rate"] is not None else _rate(tier)


def _verdict(data: Mapping[str, Any]) -> str:
    v = data["verdict"]
    failed = [c for c in v["checks"] if c["status"] == "FAIL"]
    order = {"FAIL": 0, "WARN": 1, "SKIP": 2, "OK": 3}
    checks = "".join(
        f'<li data-check="{hook(c["name"])}"><span class="pill st-{c["status"]}">{c["status"]}</span> '
        f'<b>{_e(c["name"])}</b><span class="d">{_e(c["detail"])}</span></li>'
        for c in sorted(v["checks"], key=lambda c: order[c["status"]])
    )
    if v["ok"]:
        tally = ", ".join(f"{n} {k}" for k in order if (n := sum(c["status"] == k for c in v["checks"])))
        word, why = "PASSING", f"The audit re-derived this brain and no check failed ({tally or 'no checks'})."
    else:
        names = ", ".join(_e(c["name"]) for c in failed) or "the audit"
        why = (f"The audit failed ({names}). Every figure on this page is what the brain <b>claims</b>; "
               "none of it is checked.")  # fmt: skip
        word = "FAILING"
    cls = "ok" if v["ok"] else "fail"
    return (
        f'<div id="verdict" class="verdict {cls}" role="status"><span class="word">{word}</span>'
        f'<span class="why">{why}</span><ul class="checks">{checks}</ul></div>'
    )


def _legend() -> str:
    items = [
        (fig("42", True), "checked: the audit re-derived it"),
        (fig("42", False), "claimed: stated by the brain, not checked"),
        (svg.legend_marks("verified", True), "verified outcomes (independent verifier key)"),
        (svg.legend_marks("self", True), "self-reported outcomes (the agent's own key)"),
        (svg.legend_marks("verified", False) + svg.legend_marks("self", False), "claimed outcomes (hatched grey)"),
    ]
    body = "".join(f'<span class="item">{a}<span>{b}</span></span>' for a, b in items)
    note = (
        "Bars are 95% Wilson intervals; the two tiers are separate series and are never added. "
        "A red band marks a version that regressed."
    )
    return f'<section id="legend" class="legend" aria-label="legend">{body}<span class="sub">{note}</span></section>'


def _cards(data: Mapping[str, Any], trusted: bool) -> str:
    skills, ev, chain = data["skills"], data["evidence"], data["chain"]
    evc = trusted and ev["checked"]
    cards = [
        (
            "skills live",
            fig(_count(sum(s["live"] for s in skills)), trusted) + f" <span class='sub'>of {len(skills):,}</span>",
        ),
        ("versions", fig(f"{sum(len(s['versions']) for s in skills):,}", trusted)),
        ("snapshots", fig(f"{len(data['timeline']):,}", trusted)),
        ("verified outcomes", fig(f"{ev['verified']:,}", evc)),
        ("self-reported outcomes", fig(f"{ev['self']:,}", evc)),
        ("regressions", fig(f"{sum(s['regression'] is not None for s in skills):,}", evc)),
    ]
    if chain is not None:
        cc = trusted and chain["checked"]
        cards += [("anchored", fig(f"{chain['anchored']:,}", cc)), ("pending", fig(f"{chain['pending']:,}", cc))]
    else:
        cards.append(("on chain", "<span class='none'>no chain</span>"))
    return (
        '<div class="cards">'
        + "".join(f'<div class="card"><div class="k">{k}</div><div class="v">{v}</div></div>' for k, v in cards)
        + "</div>"
    )


def _attention(skills: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Regressed skills first, then the lowest verified rate of the latest version (the one the row shows);
    a latest version without verified outcomes last."""

    def latest(s: Mapping[str, Any]) -> float:
        rate = s["versions"][-1]["verified"]["rate"] if s["versions"] else None
        return 2.0 if rate is None else rate

    return sorted(skills, key=lambda s: (s["regression"] is None, latest(s), s["name"]))


def _skill_row(s: Mapping[str, Any], checked: bool) -> str:
    last = s["versions"][-1] if s["versions"] else None
    tags = "" if s["live"] else '<span class="tag del">deleted</span>'
    reg = s["regression"]
    status = ""
    if reg is not None:
        tags += f'<span class="tag reg">regressed v{reg["version"]}</span>'
        status = (f'v{reg["version"]} is worse than v{reg["from"]}'
                  f'<code class="revert" data-revert>{_e(reg["revert"])}</code>')  # fmt: skip
    ver = _tier(last["verified"], checked) if last else "—"
    own = _tier(last["self"], checked) if last else "—"
    plot = svg.sparkline(s, checked) if s["versions"] else '<span class="none">no versions</span>'
    return (
        f'<tr data-skill-row="{hook(s["name"])}"><td class="name">{_e(s["name"])}{tags}</td>'
        f"<td>{'v' + str(last['version']) if last else '—'}</td><td>{ver}</td><td>{own}</td>"
        f"<td>{plot}</td><td>{status}</td></tr>"
    )


def _skills(data: Mapping[str, Any], checked: bool) -> str:
    skills = _attention(data["skills"])
    if not skills:
        return '<section id="skills"><h2>Competence</h2><p class="none">No skills yet.</p></section>'
    worst = [
        s for s in skills if s["regression"] or (s["versions"] and s["versions"][-1]["verified"]["rate"] is not None)
    ]
    worst = worst[:ATTENTION]
    figures = "".join(
        f"<figure><h3>{_e(s['name'])}</h3>{svg.big_plot(s, checked)}<figcaption>"
        + (
            f"v{s['regression']['version']} regressed from v{s['regression']['from']}: "
            f"<code>{_e(s['regression']['revert'])}</code>"
            if s["regression"]
            else "among the lowest verified success rates of a latest version"
        )
        + "</figcaption></figure>"
        for s in worst
    )
    head = ("<tr><th>skill</th><th>latest</th><th>verified (latest)</th><th>self-reported (latest)</th>"
            "<th>success rate per version</th><th>regression</th></tr>")  # fmt: skip
    first = "".join(_skill_row(s, checked) for s in skills[:OPEN_SKILLS])
    rest = skills[OPEN_SKILLS:]
    more = (
        (
            f'<details class="more"><summary>show the other {len(rest):,} skills</summary><table>{head}'
            + "".join(_skill_row(s, checked) for s in rest)
            + "</table></details>"
        )
        if rest
        else ""
    )
    return (
        f'<section id="attention"><h2>Needs attention</h2><div class="attention">{figures}</div></section>'
        if figures
        else ""
    ) + (
        f'<section id="skills"><h2>Competence per skill <span class="sub">({len(skills):,}, most in need of '
        f'attention first)</span></h2><div class="toolbar"><input id="filter" type="search" hidden '
        f'placeholder="filter skills by name" aria-label="filter skills"></div><table>{head}{first}</table>{more}'
        "</section>"
    )


def _snapshot(s: Mapping[str, Any], chain: bool, trusted: bool, compact: bool = False) -> str:
    """One lineage row; ``compact`` (the older rows) leaves out the full hashes, kept in the newest rows."""
    changes = s["changes"]
    shown = ", ".join(f"<b>{_e(c['skill'])}</b> {c['action']} v{c['version']}" for c in changes[:6])
    if len(changes) > 6:
        shown += f" <span class='sub'>and {len(changes) - 6:,} more</span>"
    short = (lambda v, k=10: _e(v[:k])) if compact else _short
    if s["signature"] == "ok":
        sig = fig(f"signed {short(s['signer'] or '', 8)}", trusted)
    elif s["signature"] == "fail":
        sig = f'<span class="bad">✗ signature does not verify {short(s["signer"] or "", 8)}</span>'
    else:
        sig = '<span class="none">unsigned</span>'
    role = f"<div class='sub'>{_e(s['role'])}</div>" if s["role"] else ""
    a = s["anchor"]
    if a is not None:
        tx = "" if compact else " " + _short(a["tx"], 8)
        anchor = fig(f"⚓ chain sequence {a['seq']} · block {a['block']:,}{tx}", trusted and a["checked"])
    else:
        anchor = '<span class="pill st-WARN">pending</span>' if chain else '<span class="none">not anchored</span>'
    ids = "" if compact else f'<td class="ids">{_short(s["root"])}<br>{_short(s["commit"], 8)}</td>'
    return (f'<tr data-index="{s["index"]}" class="sig-{s["signature"]}"><td class="idx">#{s["index"]}</td>'
            f'<td><b>{_e(s["operation"])}</b><div class="sub">{_e(s["time"])}</div></td><td class="ch">{shown}</td>'
            f'<td>{sig}{role}</td><td>{anchor}</td><td>{s["outcomes"]:,}</td>{ids}</tr>')  # fmt: skip


def _timeline(data: Mapping[str, Any], trusted: bool) -> str:
    tl, chain = data["timeline"], data["chain"] is not None
    if not tl:
        return '<section id="timeline"><h2>Lineage</h2><p class="none">No snapshots.</p></section>'
    newest = list(reversed(tl[-NEWEST:]))
    older = list(reversed(tl[:-NEWEST])) if len(tl) > NEWEST else []
    head = "<tr><th>#</th><th>snapshot</th><th>changes</th><th>signed by</th><th>anchored</th><th>outcomes</th>"
    rows = "".join(_snapshot(s, chain, trusted) for s in newest)
    more = (
        (
            f'<details class="more"><summary>show all {len(tl):,} snapshots ({len(older):,} older)</summary>'
            f'<table class="tl">{head}</tr>{"".join(_snapshot(s, chain, trusted, True) for s in older)}</table>'
            "</details>"
        )
        if older
        else ""
    )
    keys = "".join(
        f'<span><i class="sw s-{k}"></i>{t}</span>'
        for k, t in (
            ("ok", "signed and anchored"),
            ("pending", "not yet anchored"),
            ("unsigned", "unsigned"),
            ("bad", "a signature fails"),
            ("claimed", "claimed, not checked"),
        )
    )
    return (
        f'<section id="timeline"><h2>Lineage <span class="sub">({len(tl):,} snapshots, newest first)</span>'
        f'</h2>{svg.strip(tl, chain, trusted)}<div class="keys">{keys}</div>'
        f'<table class="tl">{head}<th>root · commit</th></tr>{rows}</table>{more}'
        "</section>"
    )


def _signers(data: Mapping[str, Any], trusted: bool) -> str:
    if not data["signers"]:
        return (
            '<section id="signers"><h2>Who signed what</h2><p class="none">No signing keys: nothing is signed.'
            "</p></section>"
        )
    rows = "".join(
        f'<tr data-address="{hook(s["address"])}"><td><code>{_e(s["address"])}</code></td><td>{_e(s["role"])}</td>'
        f'<td><span class="tag {s["state"]}">{s["state"]}</span></td>'
        f"<td>{fig(_count(s['snapshots']), trusted and s['checked'])}</td>"
        f"<td>{fig(_count(s['outcomes']), trusted and s['checked'])}</td></tr>"
        for s in data["signers"]
    )
    return (
        '<section id="signers"><h2>Who signed what</h2><table><tr><th>address</th><th>role</th><th>state</th>'
        f"<th>snapshots signed</th><th>outcomes signed</th></tr>{rows}</table></section>"
    )


def _chain(data: Mapping[str, Any], trusted: bool) -> str:
    c, ev, head = data["chain"], data["evidence"], data["brain"]["head"]["root"]
    evc = trusted and ev["checked"]
    local = (
        f"<dt>evidence log</dt><dd>{fig(_count(ev['size'], 'records'), evc)} · root "
        f"{fig(_short(ev['root'], 16), evc)} · {fig(_count(ev['verified'], 'verified'), evc)} · "
        f"{fig(_count(ev['self'], 'self-reported'), evc)}</dd>"
    )
    if c is None:
        return (
            f'<section id="chain"><h2>On chain</h2><p class="none">No chain configured: nothing is anchored, '
            f'every figure here is local.</p><dl class="kv">{local}</dl></section>'
        )
    cc = trusted and c["checked"]
    if c["head"] is None:
        at = '<span class="none">nothing anchored yet</span>'
    else:
        same = " (the local head)" if c["head"] == head else " <span class='sub'>(behind the local head)</span>"
        at = fig(_short(c["head"], 16), cc) + same
    if c["evidence"] is None:
        evon = '<span class="none">no evidence root on chain yet</span>'
    else:
        o = c["evidence"]
        match = "" if o["root"].lower() == ev["root"].lower() and o["size"] == ev["size"] else \
            f' <span class="sub">(local log: {ev["size"]:,} records)</span>'  # fmt: skip
        evon = fig(f"{o['size']:,} records, root {_short(o['root'], 16)}", cc) + match
    return (
        f'<section id="chain"><h2>On chain</h2><dl class="kv"><dt>chain</dt><dd>{c["chain_id"]}</dd>'
        f"<dt>registry</dt><dd><code>{_e(c['registry'])}</code></dd><dt>agent</dt><dd><code>{_e(c['agent'])}"
        f"</code></dd><dt>anchored</dt><dd>{fig(_count(c['anchored'], 'snapshots'), cc)}</dd><dt>pending</dt>"
        f"<dd>{fig(_count(c['pending'], 'snapshots'), cc)}</dd><dt>head on chain</dt><dd>{at}</dd>"
        f"<dt>evidence on chain</dt><dd>{evon}</dd>{local}<dt>check</dt><dd>{_e(c['detail'])}</dd></dl></section>"
    )


def _supply(data: Mapping[str, Any]) -> str:
    if not data["supply"]:
        return (
            '<section id="supply"><h2>Installed skills</h2><p class="none">None: every skill is this brain\'s '
            "own.</p></section>"
        )
    rows = "".join(
        f"<tr><td class='name'>{_e(s['name'])}</td><td><code>{_e(s['source'])}</code></td>"
        f"<td><code>{_e(s['pin'])}</code></td><td>{_e(s['state'])}</td><td>{_e(s['worst'])}</td></tr>"
        for s in data["supply"]
    )
    return (
        '<section id="supply"><h2>Installed skills and their sources</h2><table><tr><th>skill</th><th>source</th>'
        f"<th>pin</th><th>state</th><th>worst scan finding</th></tr>{rows}</table></section>"
    )


def _pts(x: float) -> str:
    return f"{x * 100:+.0f}"


def _lift_row(s: Mapping[str, Any], v: Mapping[str, Any], tier: str, lift: Mapping[str, Any], checked: bool) -> str:
    """One lift: both conditions' pass rates side by side, the lift and its interval in points, the pairs,
    pre-registered or not, stale or not, the regressed cases (compact: 10,000 versions may each have one)."""
    lo, hi = lift["interval"]
    base = "no skill" if lift["baseline"] == "without_skill" else f"v{lift['arm']}"
    sig = ' class="worse"' if hi < 0 else ' class="better"' if lo > 0 else ""
    both = fig(f"{lift['with_rate'] * 100:.0f}% vs {lift['baseline_rate'] * 100:.0f}% {base}", checked)
    shown = fig(f"{_pts(lift['delta'])} <span class=sub>{_pts(lo)}…{_pts(hi)}</span>", checked)
    pre, stale = ("yes" if lift["preregistered"] else "no"), ("stale" if lift["stale"] else "")
    return (f'<tr data-lift="{hook(s["name"])}" data-v="{v["version"]}" data-tier="{tier}" data-pre="{pre}"'
            f' data-stale="{"yes" if stale else "no"}"><td>{_e(s["name"])}</td><td>v{v["version"]} {tier}</td>'
            f"<td>{both}</td><td{sig}>{shown}</td><td>{lift['pairs']:,}</td><td>{pre}</td><td>{stale}</td>"
            f"<td>{', '.join(_e(c) for c in lift['regressed'])}</td></tr>")  # fmt: skip


def _lifts(data: Mapping[str, Any], checked: bool) -> str:
    """Lift per skill and version: both conditions side by side, the paired difference and its 95% interval
    (Newcombe's method 10), pre-registered or not, stale or not; newest versions first, worst first."""
    rows = [(s, v, tier, v["lift"][tier]) for s in data["skills"] for v in s["versions"]
            for tier in ("verified", "self") if v["lift"][tier]]  # fmt: skip
    if not rows:
        return ""
    rows.sort(key=lambda r: (r[3]["interval"][1], r[0]["name"], -r[1]["version"], r[2]))
    head = ("<tr><th>skill</th><th>version, tier</th><th>pass rate: with the skill vs the baseline</th>"
            "<th>lift, points (95% interval)</th><th>pairs</th><th>pre-registered</th><th>stale</th>"
            "<th>regressed cases</th></tr>")  # fmt: skip
    first = "".join(_lift_row(*r, checked) for r in rows[:OPEN_SKILLS])
    rest = rows[OPEN_SKILLS:]
    more = (f'<details class="more"><summary>show the other {len(rest):,} lifts</summary><table>{head}'
            + "".join(_lift_row(*r, checked) for r in rest) + "</table></details>") if rest else ""  # fmt: skip
    return (
        '<section id="lift"><h2>Lift per skill and version <span class="sub">(pass rate with the skill minus '
        "the baseline's over paired runs, in points; 95% interval by Newcombe's paired method; the two tiers "
        f"never added; most harmful first)</span></h2><table>{head}{first}</table>{more}</section>"
    )


def render_page(data: Mapping[str, Any]) -> str:
    """The whole HTML document for ``data`` (format 1), or :class:`~ledger.errors.PageDataError`."""
    validate(data)
    trusted = data["verdict"]["ok"]
    evidence_checked = trusted and data["evidence"]["checked"]
    b = data["brain"]
    head = (f'<header class="top"><h1>{_e(b["name"])}</h1><span class="sub">head #{b["head"]["index"]} '
            f'{fig(_short(b["head"]["root"], 16), trusted)} · commit {_short(b["head"]["commit"], 10)} · genesis '
            f'{_short(b["genesis"], 10)} · generated {_e(data["generated"])}</span></header>')  # fmt: skip
    body = "".join(
        [
            head,
            _verdict(data),
            _legend(),
            _cards(data, trusted),
            _skills(data, evidence_checked),
            _lifts(data, evidence_checked),
            _timeline(data, trusted),
            _signers(data, trusted),
            _chain(data, trusted),
            _supply(data),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(b['name'])}: {'PASSING' if trusted else 'FAILING'} · brain-ledger report</title>"
        f"<style>{CSS}</style></head><body>{svg.DEFS}<main>{body}<footer>brain-ledger report page, format "
        f"{data['format']}. Static and self-contained: it loads nothing. Checked figures carry ✓; claimed figures "
        f"are grey, hatched and labelled.</footer></main><script>{JS}</script></body></html>\n"
    )
