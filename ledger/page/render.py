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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ledger.page import svg
from ledger.page.model import covering, validate
from ledger.page.style import CSP, CSS, JS
from ledger.page.svg import hook
from ledger.page.svg import text as _e

__all__ = [
    "ATTENTION",
    "NEWEST",
    "OPEN_SKILLS",
    "banner",
    "checks",
    "document",
    "render_page",
    "section",
    "short",
    "table",
]

NEWEST = 50  # timeline rows shown open; the rest sit in a "show all" <details>
OPEN_SKILLS = 100  # skill rows shown open, most in need of attention first
ATTENTION = 4  # larger plots, for the regressed and the weakest skills


def document(title: str, body: str, *, script: bool = True) -> str:
    """The one HTML skeleton: the policy that pins the one stylesheet (and script), ``title`` and ``body``
    already escaped.  Both pages are drawn in it; a page without the filter box leaves the script out."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{title}</title><style>{CSS}</style></head><body>{body}"
        + (f"<script>{JS}</script>" if script else "")
        + "</body></html>\n"
    )


def section(hook_id: str, title: str, inner: str) -> str:
    """A section: its id (what tests and readers find it by), its heading and content (markup)."""
    return f'<section id="{hook_id}"><h2>{title}</h2>{inner}</section>'


def table(heads: Sequence[str], rows: str, attrs: str = "") -> str:
    """A table: one header row of ``heads`` (markup), then ``rows`` (markup, ``<tr>`` each)."""
    return f"<table{attrs}><tr>{''.join(f'<th>{h}</th>' for h in heads)}</tr>{rows}</table>"


def banner(cls: str, word: str, why: str, attrs: str = "") -> str:
    """The verdict, first on either page: ``word`` large on a green (``ok``), amber (``ok unchecked``) or red band."""
    return (
        f'<div id="verdict" class="verdict {cls}" role="status"{attrs}>'
        f'<span class="word">{word}</span><span class="why">{why}</span></div>'
    )


def fig(text: str, checked: bool) -> str:
    """A figure (already escaped ``text``) marked checked or claimed, the page's one convention.

    The ✓ and the "claimed" label are drawn by the stylesheet from ``data-checked``, so the
    mark and the attribute a test reads cannot disagree (and 10,000 rows do not repeat them).
    """
    return f'<span class="fig" data-checked="{"true" if checked else "false"}">{text}</span>'


def _count(n: int, unit: str = "") -> str:
    return f"{n:,} {unit}".rstrip()


def short(value: str, keep: int = 10) -> str:
    text = value.partition(":")[2] or value
    shown = value[: len(value) - len(text)] + text[:keep] + ("…" if len(text) > keep else "")
    return f'<code title="{_e(value)}">{_e(shown)}</code>'


def _rate(tier: Mapping[str, Any]) -> str:
    if tier["rate"] is None:
        return '<span class="none">no outcomes</span>'
    n = tier["successes"] + tier["failures"]
    lo, hi = tier["interval"]
    return (
        f"{tier['rate'] * 100:.0f}% <span class='sub'>{tier['successes']}/{n} · {lo * 100:.0f}–{hi * 100:.0f}%</span>"
    )


def _tier(tier: Mapping[str, Any], checked: bool) -> str:
    """A tier's latest figure; "no outcomes" is an absence, not a figure, so it is never marked."""
    return fig(_rate(tier), checked) if tier["rate"] is not None else _rate(tier)


def _verdict(data: Mapping[str, Any]) -> str:
    v = data["verdict"]
    failed = [c for c in v["checks"] if c["status"] == "FAIL"]
    order = {"FAIL": 0, "WARN": 1, "SKIP": 2, "OK": 3}
    if v["ok"]:
        tally = ", ".join(f"{n} {k}" for k in order if (n := sum(c["status"] == k for c in v["checks"])))
        word, why = "PASSING", f"The audit re-derived this brain and no check failed ({tally or 'no checks'})."
        if not v["chain_checked"] and data["chain"] is None:
            word = "PASSING — not on any chain"
            why = "Nothing to check on a chain: this brain is not registered on one. " + why
        elif not v["chain_checked"]:
            word = "PASSING — chain not checked"
            why = (
                "The chain was not checked: the page was made without a chain endpoint (ledger report --rpc URL "
                "checks it), so what it says about the chain is this copy's claim. " + why
            )
    else:
        names = ", ".join(_e(c["name"]) for c in failed) or "the audit"
        why = (
            f"The audit failed ({names}). Every figure on this page is what the brain <b>claims</b>; "
            "none of it is checked."
        )
        word = "FAILING"
    cls = ("ok" if v["chain_checked"] else "ok unchecked") if v["ok"] else "fail"
    return banner(cls, word, why, f' data-chain-checked="{_yes(v["chain_checked"])}"')


def checks(rows: Iterable[tuple[str, str, str]]) -> str:
    """Every audit check as ``(name, status, detail markup)``, failed checks first (the verdict's grounds)."""
    order = {"FAIL": 0, "WARN": 1, "SKIP": 2, "OK": 3}
    items = "".join(
        f'<li data-check="{hook(name)}"><span class="pill st-{status}">{status}</span> '
        f'<b>{_e(name)}</b><span class="d">{detail}</span></li>'
        for name, status, detail in sorted(rows, key=lambda c: order[c[1]])
    )
    return f'<ul class="checks">{items}</ul>'


def _checks(data: Mapping[str, Any]) -> str:
    rows = ((c["name"], c["status"], _e(c["detail"])) for c in data["verdict"]["checks"])
    return section("checks", "Every check of the audit", checks(rows))


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
    skills, ev = data["skills"], data["evidence"]
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
        status = (
            f'v{reg["version"]} is worse than v{reg["from"]}<code class="revert" data-revert>{_e(reg["revert"])}</code>'
        )
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
        return section("skills", "Competence", '<p class="none">No skills yet.</p>')
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
    head = ("skill", "latest", "verified (latest)", "self-reported (latest)", "success rate per version", "regression")
    first = "".join(_skill_row(s, checked) for s in skills[:OPEN_SKILLS])
    rest = skills[OPEN_SKILLS:]
    more = (
        (
            f'<details class="more"><summary>show the other {len(rest):,} skills</summary>'
            + table(head, "".join(_skill_row(s, checked) for s in rest))
            + "</details>"
        )
        if rest
        else ""
    )
    return (section("attention", "Needs attention", f'<div class="attention">{figures}</div>') if figures else "") + (
        section(
            "skills",
            f'Competence per skill <span class="sub">({len(skills):,}, most in need of attention first)</span>',
            '<div class="toolbar"><input id="filter" type="search" hidden placeholder="filter '
            'skills by name" aria-label="filter skills"></div>' + table(head, first) + more,
        )
    )


def _snapshot(
    s: Mapping[str, Any],
    chain: bool,
    trusted: bool,
    compact: bool = False,
    first: Mapping[int, Mapping[str, Any] | None] | None = None,
) -> str:
    """One lineage row; ``compact`` (the older rows) leaves out the full hashes, kept in the newest rows."""
    changes = s["changes"]
    shown = ", ".join(f"<b>{_e(c['skill'])}</b> {c['action']} v{c['version']}" for c in changes[:6])
    if len(changes) > 6:
        shown += f" <span class='sub'>and {len(changes) - 6:,} more</span>"
    cut = (lambda v, k=10: _e(v[:k])) if compact else short
    if s["signature"] == "ok":
        sig = fig(f"signed {cut(s['signer'] or '', 8)}", trusted)
    elif s["signature"] == "fail":
        sig = f'<span class="bad">✗ signature does not verify {cut(s["signer"] or "", 8)}</span>'
    else:
        sig = '<span class="none">unsigned</span>'
    role = f"<div class='sub'>{_e(s['role'])}</div>" if s["role"] else ""
    msg = "" if compact else f'<div class="msg">{_e(s["message"])}</div>'
    a = s["anchor"]
    same = (first or {}).get(s["index"])
    if a is not None:
        tx = "" if compact else " " + cut(a["tx"], 8)
        anchor = fig(f"⚓ chain sequence {a['seq']} · block {a['block']:,}{tx}", trusted and a["checked"])
    elif same is not None:  # an outcome or a key change: the root is the one anchored with that snapshot
        anchor = fig(f"⚓ same root as #{same['index']}", trusted and same["anchor"]["checked"])
    else:
        anchor = '<span class="pill st-WARN">pending</span>' if chain else '<span class="none">not anchored</span>'
    ids = "" if compact else f'<td class="ids">{short(s["root"])}<br>{short(s["commit"], 8)}</td>'
    return (
        f'<tr data-index="{s["index"]}" class="sig-{s["signature"]}"><td class="idx">#{s["index"]}</td>'
        f'<td><b>{_e(s["operation"])}</b><div class="sub">{_e(s["time"])}</div></td><td class="ch">'
        f"{msg}{shown}</td>"
        f"<td>{sig}{role}</td><td>{anchor}</td><td>{s['outcomes']:,}</td>{ids}</tr>"
    )


def _timeline(data: Mapping[str, Any], trusted: bool) -> str:
    tl, chain = data["timeline"], data["chain"] is not None
    first = _anchors(tl)
    if not tl:
        return section("timeline", "Lineage", '<p class="none">No snapshots.</p>')
    newest = list(reversed(tl[-NEWEST:]))
    older = list(reversed(tl[:-NEWEST])) if len(tl) > NEWEST else []
    head = ("#", "snapshot", "changes", "signed by", "anchored", "outcomes")
    rows = "".join(_snapshot(s, chain, trusted, first=first) for s in newest)
    more = (
        (
            f'<details class="more"><summary>show all {len(tl):,} snapshots ({len(older):,} older)</summary>'
            + table(head, "".join(_snapshot(s, chain, trusted, True, first) for s in older), ' class="tl"')
            + "</details>"
        )
        if older
        else ""
    )
    keys = "".join(
        f'<span><i class="sw s-{k}"></i>{t}</span>'
        for k, t in (
            ("ok", "signed and anchored"),
            ("pending", "not yet anchored (its root is not on chain)"),
            ("unsigned", "unsigned"),
            ("bad", "a signature fails"),
            ("claimed", "claimed, not checked"),
        )
    )
    return section(
        "timeline",
        f'Lineage <span class="sub">({len(tl):,} snapshots, newest first)</span>',
        f'{svg.strip(tl, chain, trusted)}<div class="keys">{keys}</div>'
        + table((*head, "root · commit"), rows, ' class="tl"')
        + more,
    )


def _signers(data: Mapping[str, Any], trusted: bool) -> str:
    if not data["signers"]:
        return section("signers", "Who signed what", '<p class="none">No signing keys: nothing is signed.</p>')
    rows = "".join(
        f'<tr data-address="{hook(s["address"])}"><td><code>{_e(s["address"])}</code></td><td>{_e(s["role"])}</td>'
        f'<td><span class="tag {s["state"]}">{s["state"]}</span></td>'
        f"<td>{fig(_count(s['snapshots']), trusted and s['checked'])}</td>"
        f"<td>{fig(_count(s['outcomes']), trusted and s['checked'])}</td></tr>"
        for s in data["signers"]
    )
    return section(
        "signers", "Who signed what", table(("address", "role", "state", "snapshots signed", "outcomes signed"), rows)
    )


def _chain(data: Mapping[str, Any], trusted: bool) -> str:
    """The chain in detail: registry, agent, the head and the evidence log on chain against this copy's.
    Anchored and pending counts are in the summary's "where anchored" only (one place, one source)."""
    c, ev, head = data["chain"], data["evidence"], data["brain"]["head"]["root"]
    evc = trusted and ev["checked"]
    local = (
        f"<dt>evidence log here</dt><dd>{fig(_count(ev['size'], 'records'), evc)} · root "
        f"{fig(short(ev['root'], 16), evc)} · {fig(_count(ev['verified'], 'verified'), evc)} · "
        f"{fig(_count(ev['self'], 'self-reported'), evc)}</dd>"
    )
    if c is None:
        return section(
            "chain",
            "On chain",
            '<p class="none">No chain configured: nothing is anchored, every figure '
            f'here is local.</p><dl class="kv">{local}</dl>',
        )
    cc = trusted and c["checked"]
    if c["head"] is None:
        at = '<span class="none">nothing anchored yet</span>'
    else:
        same = " (the local head)" if c["head"] == head else " <span class='sub'>(behind the local head)</span>"
        at = fig(short(c["head"], 16), cc) + same
        if not c["checked"]:
            at += " <span class='sub'>(from this copy's receipts: the chain was not read)</span>"
    if not c["checked"] and data["verdict"]["chain_checked"] is False and c["evidence"] is None:
        evon = '<span class="none">not read: the chain was not checked</span>'
    elif c["evidence"] is None:
        evon = '<span class="none">no evidence root on chain yet</span>'
    else:
        o = c["evidence"]
        if o["root"].lower() == ev["root"].lower() and o["size"] == ev["size"]:
            evon = fig(f"{o['size']:,} records", cc) + " (the same log as here, the same root)"
        else:
            evon = fig(f"{o['size']:,} records, root {short(o['root'], 16)}", cc) + (
                f' <span class="sub">({ev["size"] - o["size"]:,} record(s) here not yet on chain)</span>'
            )
    return section(
        "chain",
        "On chain",
        f'<dl class="kv"><dt>chain</dt><dd>{_e(c["name"])} '
        f'<span class="sub">(chain id {c["chain_id"]})</span></dd>'
        f"<dt>registry</dt><dd>{_link(c, 'address', c['registry'])}</dd><dt>agent</dt><dd><code>"
        f"{_e(c['agent'])}</code></dd><dt>head on chain</dt><dd>{at}</dd>"
        f"<dt>evidence on chain</dt><dd>{evon}</dd>{local}</dl>",
    )


def _link(c: Mapping[str, Any], kind: str, value: str, text: str | None = None) -> str:
    """``value`` as code, linked to the chain's explorer when the chain is a known public one."""
    shown = f"<code>{_e(text or value)}</code>"
    if not c["explorer"]:
        return shown
    return f'<a href="{_e(c["explorer"])}/{kind}/{_e(value)}" rel="noopener noreferrer">{shown}</a>'


def _yes(flag: bool) -> str:
    return "true" if flag else "false"


def _anchors(tl: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any] | None]:
    """Each snapshot's (by index) anchoring snapshot, or None while pending (:func:`ledger.page.model.covering`)."""
    return {s["index"]: c for s, c in zip(tl, covering(tl), strict=True)}


SUMMARY_SKILLS = 40  # skill descriptions shown open in the summary; the rest in a <details>
SUMMARY_CHANGES = 8  # release notes shown open


def _can_do(data: Mapping[str, Any]) -> str:
    live = [s for s in data["skills"] if s["live"]]
    if not live:
        return (
            '<div id="can-do" class="box" data-skills="0"><h3>What it can do</h3><p class="none">No skills yet.'
            "</p></div>"
        )
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for sk in live:
        groups.setdefault(sk["category"] or "", []).append(sk)
    order = sorted(groups, key=lambda g: (g == "", g))

    def item(sk: Mapping[str, Any]) -> str:
        desc = _e(sk["description"]) if sk["description"] else '<span class="none">no description</span>'
        return f'<li data-can="{hook(sk["name"])}"><b>{_e(sk["name"])}</b>: {desc}</li>'

    per = max(3, SUMMARY_SKILLS // len(order))  # every category shown, each with its first few skills open
    html = []
    for g in order:
        title = _e(g) if g else ("Skills" if len(order) == 1 else "Other skills")
        items = [item(sk) for sk in groups[g]]
        more = (
            (
                f'<details class="more sum"><summary>and {len(items) - per:,} more</summary><ul>'
                f"{''.join(items[per:])}</ul></details>"
            )
            if len(items) > per
            else ""
        )
        html.append(
            f'<h4 data-category="{hook(g)}">{title} <span class="sub">({len(items):,})</span></h4>'
            f"<ul>{''.join(items[:per])}</ul>{more}"
        )
    return (
        f'<div id="can-do" class="box" data-skills="{len(live)}" data-categories="{len(order)}">'
        f'<h3>What it can do <span class="sub">({len(live):,} skills)</span></h3>{"".join(html)}</div>'
    )


def _note(s: Mapping[str, Any]) -> str:
    f, n = s["files"], s["lines"]
    if s["root"] and not any(f.values()):
        return f"{s['outcomes']:,} outcome(s) recorded; no skill changed" if s["outcomes"] else "no skill changed"
    parts = [f"{f[k]:,} file(s) {k}" for k in ("added", "changed", "removed") if f[k]]
    return ", ".join(parts) + f"; +{n['added']:,} −{n['removed']:,} lines"


def _changes(data: Mapping[str, Any]) -> str:
    tl = data["timeline"]
    notes = [x for x in reversed(tl) if any(x["files"].values()) or x["changes"]]
    if not notes:
        return (
            '<div id="changes" class="box" data-releases="0"><h3>What changed, and when</h3>'
            '<p class="none">No skill has changed yet.</p></div>'
        )

    def row(x: Mapping[str, Any]) -> str:
        return (
            f'<li data-release="{x["index"]}"><span class="when">{_e(x["time"][:10])}</span> '
            f'<b>#{x["index"]}</b> <span class="msg">{_e(x["message"]) or _e(x["operation"])}</span>'
            f'<div class="sub">{_e(_note(x))}</div></li>'
        )

    last = notes[0]
    rest = len(notes) - SUMMARY_CHANGES
    more = f'<p class="sub">and {rest:,} earlier, in the lineage below</p>' if rest > 0 else ""
    return (
        f'<div id="changes" class="box" data-releases="{len(notes)}" data-last-index="{last["index"]}" '
        f'data-last-time="{_e(last["time"])}" data-last-message="{hook(last["message"])}">'
        f'<h3>What changed, and when <span class="sub">(newest first; each snapshot\'s commit message and its '
        f"diff under skills/)</span></h3><ol>{''.join(row(x) for x in notes[:SUMMARY_CHANGES])}</ol>{more}</div>"
    )


def _sum_tier(data: Mapping[str, Any], tier: str) -> tuple[int, int]:
    """Successes and outcomes of the tier over each live skill's latest version (the versions in use)."""
    ok = n = 0
    for sk in data["skills"]:
        if sk["live"] and sk["versions"]:
            t = sk["versions"][-1][tier]
            ok, n = ok + t["successes"], n + t["successes"] + t["failures"]
    return ok, n


def _how_well(data: Mapping[str, Any], checked: bool) -> str:
    lifts = []
    for sk in data["skills"]:
        if sk["live"] and sk["versions"]:
            v = sk["versions"][-1]
            for tier in ("verified", "self"):
                if v["lift"][tier]:
                    lifts.append((sk, v, tier, v["lift"][tier]))
                    break
    vok, vn = _sum_tier(data, "verified")
    sok, sn = _sum_tier(data, "self")

    def rate(ok: int, n: int) -> str:
        return f"{ok / n * 100:.0f}%"

    lines = []
    if lifts:
        better = sum(1 for *_, x in lifts if x["interval"][0] > 0)
        worse = sum(1 for *_, x in lifts if x["interval"][1] < 0)
        lines.append(
            f'<p class="lead">Measured by paired evaluations (each task run with the skill and without '
            f"it): {better:,} of {len(lifts):,} evaluated skills clearly help, {worse:,} clearly hurt, "
            "the rest are not yet distinguishable.</p>"
        )
        items = []
        for sk, v, tier, x in lifts[:SUMMARY_SKILLS]:
            lo, hi = x["interval"]
            word = "helps" if lo > 0 else "hurts" if hi < 0 else "unclear"
            base = "without the skill" if x["baseline"] == "without_skill" else f"with v{x['arm']}"
            items.append(
                f'<li data-lift-summary="{hook(sk["name"])}" data-effect="{word}"><b>{_e(sk["name"])}</b> '
                f"v{v['version']}: "
                + fig(f"{_pts(x['delta'])} points", checked)
                + f" ({x['with_rate'] * 100:.0f}% of tasks pass with it, {x['baseline_rate'] * 100:.0f}% "
                f"{base}; 95% interval {_pts(lo)} to {_pts(hi)}; {x['pairs']:,} pairs; "
                f"{'judged by an independent verifier' if tier == 'verified' else 'self-reported'}): "
                f"<b>{word}</b></li>"
            )
        lines.append(f"<ul>{''.join(items)}</ul>")
    verified = (
        (fig(f"{rate(vok, vn)} success", checked) + f" over {vn:,} outcome(s) judged by an independent verifier key")
        if vn
        else '<span class="none">no outcome judged by an independent verifier yet</span>'
    )
    own = (
        (
            fig(f"{rate(sok, sn)} success", checked) + f" over {sn:,} outcome(s) the agent reported itself (not "
            "independently judged)"
        )
        if sn
        else '<span class="none">no self-reported outcome</span>'
    )
    lines.append(
        f'<dl class="kv"><dt>verified</dt><dd>{verified}</dd><dt>self-reported</dt><dd>{own}</dd></dl>'
        '<p class="sub">Latest version of each skill in use; the two kinds are never added together.</p>'
    )
    return (
        f'<div id="how-well" class="box" data-measure="{"lift" if lifts else "rates"}" data-lifts="{len(lifts)}" '
        f'data-verified-n="{vn}" data-verified-ok="{vok}" data-self-n="{sn}" data-self-ok="{sok}">'
        f"<h3>How well it works</h3>{''.join(lines)}</div>"
    )


def _shares(data: Mapping[str, Any], trusted: bool) -> str:
    c = data["chain"]
    head = data["brain"]["head"]["root"]
    if c is None:
        return (
            '<div id="shares" class="box" data-shares="none"><h3>The shares</h3><p class="none">No share token: '
            "this brain is not registered on a chain.</p></div>"
        )
    sh = c["shares"]
    if sh is None:
        read = any(x["name"] == "chain.events" and x["status"] != "SKIP" for x in data["verdict"]["checks"])
        why = (
            "not read: the chain was not checked (ledger report --rpc URL reads them)"
            if not read
            else "not shown: the registry publishes no share-token metadata (deployed before it had any; "
            "'ledger chain status' says why)"
        )
        return (
            f'<div id="shares" class="box" data-shares="unread"><h3>The shares</h3><p class="none">{why}.</p>'
            f"<p class='sub'>Token contract {_link(c, 'address', c['registry'])}, token id "
            f"<code>{_e(c['agent'])}</code>.</p></div>"
        )
    ok = trusted and sh["checked"]
    meta = sh["metadata"]
    if meta["head"] == head:
        match = fig("the token's metadata names this page's head", ok)
    elif meta["head"] is not None and meta["head"] == c["head"]:
        match = fig("the token's metadata names the head on chain", ok) + (
            f" <span class='sub'>(this page's head is newer: {c['pending']:,} snapshot(s) pending)</span>"
        )
    else:
        match = '<span class="bad">✗ the token\'s metadata names a different head</span> ' + (
            f"<code>{_e(meta['head'] or 'none')}</code>"
        )
    holders = "".join(
        f'<li data-holder="{hook(h["address"])}" data-balance="{h["balance"]}">{_link(c, "address", h["address"])} '
        f"{fig(_count(h['balance'], 'shares'), ok)}"
        + (f" ({h['balance'] / sh['total_supply'] * 100:.1f}%)" if sh["total_supply"] else "")
        + (" <span class='tag active'>owner</span>" if h["address"].lower() == sh["owner"].lower() else "")
        + "</li>"
        for h in sh["holders"][:20]
    )
    more = f"<li class='sub'>and {len(sh['holders']) - 20:,} more</li>" if len(sh["holders"]) > 20 else ""
    loc = f"<dt>published at</dt><dd><code>{_e(meta['location'])}</code></dd>" if meta["location"] else ""
    return (
        f'<div id="shares" class="box" data-shares="read" data-supply="{sh["total_supply"]}" '
        f'data-owner="{_e(sh["owner"])}" data-owner-balance="{sh["owner_balance"]}" '
        f'data-holders="{len(sh["holders"])}" data-head-match="{_yes(meta["head"] == head)}" '
        f'data-metadata-head="{_e(meta["head"] or "")}" '
        f'data-checked="{_yes(ok)}"><h3>The shares</h3>'
        f'<dl class="kv"><dt>total supply</dt><dd>{fig(_count(sh["total_supply"], "shares"), ok)}</dd>'
        f"<dt>owner</dt><dd>{_link(c, 'address', sh['owner'])} holds "
        f"{fig(_count(sh['owner_balance'], 'shares'), ok)}</dd>"
        f"<dt>holders</dt><dd><ul class='holders'>{holders}{more}</ul></dd>"
        f"<dt>token</dt><dd>ERC-1155 contract {_link(c, 'token', sh['token'])}, id <code>{_e(sh['id'])}</code></dd>"
        f"<dt>metadata</dt><dd>{match}</dd>{loc}</dl>"
        "<p class='sub'>A share is a claim on this lineage: the head root names exactly which skills, the "
        "evidence root which outcomes. It is not a claim on money, the agent's keys or control of the brain.</p>"
        "</div>"
    )


def _anchored(data: Mapping[str, Any], trusted: bool) -> str:
    c, tl = data["chain"], data["timeline"]
    if c is None:
        return (
            '<div id="anchored" class="box" data-chain="none"><h3>Where it is anchored</h3><p class="none">'
            "Nowhere: no chain is configured, every figure on this page is local.</p></div>"
        )
    cc = trusted and c["checked"]
    local = " <span class='tag del'>a test chain on one machine, not a public network</span>" if c["local"] else ""
    last = next((s for s in reversed(tl) if s["anchor"] is not None), None)
    tx = f" in transaction {_link(c, 'tx', last['anchor']['tx'], last['anchor']['tx'][:12] + '…')}" if last else ""
    note = "" if c["checked"] else " <span class='sub'>(from this copy's receipts; the chain was not checked)</span>"
    anchored = fig(f"{c['anchored']:,} of {len(tl):,}", cc)
    waiting = sum(1 for x in covering(tl) if x is None)
    pending = fig(_count(c["pending"], "root(s) not yet on chain"), cc) + (
        f" <span class='sub'>({waiting:,} snapshot(s); 'ledger chain anchor' anchors them)</span>" if waiting else ""
    )
    seq = fig(f"{c['seq']:,}", cc)
    newest = f", the newest{tx}" if tx else ""
    return (
        f'<div id="anchored" class="box" data-chain="{_e(c["name"])}" data-chain-id="{c["chain_id"]}" '
        f'data-local="{_yes(c["local"])}" data-anchored="{c["anchored"]}" data-pending="{c["pending"]}" '
        f'data-pending-snapshots="{waiting}" '
        f'data-seq="{c["seq"]}" data-checked="{_yes(cc)}"><h3>Where it is anchored</h3>'
        f'<dl class="kv"><dt>chain</dt><dd><b>{_e(c["name"])}</b> <span class="sub">(chain id {c["chain_id"]})</span>'
        f"{local}</dd><dt>registry</dt><dd>{_link(c, 'address', c['registry'])}</dd>"
        f"<dt>snapshots anchored</dt><dd>{anchored}{note}</dd><dt>pending</dt><dd>{pending}</dd>"
        f"<dt>chain sequence</dt><dd>{seq} <span class='sub'>(roots the chain holds for this agent{newest})</span>"
        "</dd></dl></div>"
    )


def _summary(data: Mapping[str, Any], trusted: bool) -> str:
    evc = trusted and data["evidence"]["checked"]
    v = data["verdict"]
    state = "failing" if not v["ok"] else "passing" if v["chain_checked"] else "passing-chain-not-checked"
    return (
        f'<section id="summary" data-verdict="{state}" aria-label="summary"><h2>In short</h2><div class="grid">'
        + _can_do(data)
        + _changes(data)
        + _how_well(data, evc)
        + _shares(data, trusted)
        + _anchored(data, trusted)
        + "</div></section>"
    )


def _check_yourself(data: Mapping[str, Any]) -> str:
    items = "".join(
        f'<li data-what="{hook(x["what"])}"><p>{_e(x["what"])}</p><pre><code>{_e(x["command"])}</code></pre></li>'
        for x in data["verify"]
    )
    return section(
        "check-yourself",
        "Check this yourself",
        '<p class="sub">Each command re-derives a figure '
        "above, run in a copy of this brain (<code>git clone</code> of its remote) with the ledger "
        "installed; <code>git</code>, <code>cast</code> (Foundry) and <code>model_signing</code> are the "
        f"standard tools, no ledger code involved.</p><ol>{items}</ol>",
    )


def _supply(data: Mapping[str, Any]) -> str:
    if not data["supply"]:
        return section(
            "supply",
            "Installed skills",
            '<p class="none">Every skill is this brain\'s own: none was installed from elsewhere.</p>',
        )
    rows = "".join(
        f"<tr><td class='name'>{_e(s['name'])}</td><td><code>{_e(s['source'])}</code></td>"
        f"<td><code>{_e(s['pin'])}</code></td><td>{_e(s['state'])}</td><td>{_e(s['worst'])}</td></tr>"
        for s in data["supply"]
    )
    return section(
        "supply",
        "Installed skills and their sources",
        table(("skill", "source", "pin", "state", "worst scan finding"), rows),
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
    return (
        f'<tr data-lift="{hook(s["name"])}" data-v="{v["version"]}" data-tier="{tier}" data-pre="{pre}"'
        f' data-stale="{"yes" if stale else "no"}"><td>{_e(s["name"])}</td><td>v{v["version"]} {tier}</td>'
        f"<td>{both}</td><td{sig}>{shown}</td><td>{lift['pairs']:,}</td><td>{pre}</td><td>{stale}</td>"
        f"<td>{', '.join(_e(c) for c in lift['regressed'])}</td></tr>"
    )


def _lifts(data: Mapping[str, Any], checked: bool) -> str:
    """Lift per skill and version: both conditions side by side, the paired difference and its 95% interval
    (Newcombe's method 10), pre-registered or not, stale or not; newest versions first, worst first."""
    rows = [
        (s, v, tier, v["lift"][tier])
        for s in data["skills"]
        for v in s["versions"]
        for tier in ("verified", "self")
        if v["lift"][tier]
    ]
    if not rows:
        return ""
    rows.sort(key=lambda r: (r[3]["interval"][1], r[0]["name"], -r[1]["version"], r[2]))
    head = (
        "skill",
        "version, tier",
        "pass rate: with the skill vs the baseline",
        "lift, points (95% interval)",
        "pairs",
        "pre-registered",
        "stale",
        "regressed cases",
    )
    first = "".join(_lift_row(*r, checked) for r in rows[:OPEN_SKILLS])
    rest = rows[OPEN_SKILLS:]
    more = (
        (
            f'<details class="more"><summary>show the other {len(rest):,} lifts</summary>'
            + table(head, "".join(_lift_row(*r, checked) for r in rest))
            + "</details>"
        )
        if rest
        else ""
    )
    return section(
        "lift",
        'Lift per skill and version <span class="sub">(pass rate with the skill minus the '
        "baseline's over paired runs, in points; 95% interval by Newcombe's paired method; the two tiers "
        "never added; most harmful first)</span>",
        table(head, first) + more,
    )


def _title_word(data: Mapping[str, Any]) -> str:
    v = data["verdict"]
    if not v["ok"]:
        return "FAILING"
    return (
        "PASSING"
        if v["chain_checked"]
        else "PASSING, not on any chain"
        if data["chain"] is None
        else ("PASSING, chain not checked")
    )


def render_page(data: Mapping[str, Any]) -> str:
    """The whole HTML document for ``data`` (format 2), or :class:`~ledger.errors.PageDataError`."""
    validate(data)
    trusted = data["verdict"]["ok"]
    evidence_checked = trusted and data["evidence"]["checked"]
    b = data["brain"]
    head = (
        f'<header class="top"><h1>{_e(b["name"])}</h1><span class="sub">head #{b["head"]["index"]} '
        f"{fig(short(b['head']['root'], 16), trusted)} · commit {short(b['head']['commit'], 10)} · genesis "
        f"{short(b['genesis'], 10)} · generated {_e(data['generated'])}</span></header>"
    )
    body = "".join(
        [
            head,
            _verdict(data),
            _summary(data, trusted),
            _check_yourself(data),
            '<h2 class="detail">The audit in detail</h2>',
            _checks(data),
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
    return document(
        f"{_e(b['name'])}: {_title_word(data)} · brain-ledger report",
        f"{svg.DEFS}<main>{body}<footer>brain-ledger report page, format {data['format']}. Static and "
        "self-contained: it loads nothing. Checked figures carry ✓; claimed figures are grey, hatched "
        "and labelled.</footer></main>",
    )
