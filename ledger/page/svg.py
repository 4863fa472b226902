"""The page's inline SVG: competence plots, the legend's samples and the lineage strip.

Every drawn outcome mark is one ``<g>`` carrying ``data-version``, ``data-tier``
(``verified`` or ``self``) and ``data-checked``, holding its Wilson error bar and its point,
so a test can find each mark and measure it.  The two tiers differ by shape and colour
(verified: filled circle, solid line; self-reported: hollow square, dashed line) and are
never added together.  Claimed marks are styled by CSS on ``data-checked="false"``
(grey, hatched), so no colour is written into a mark here.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ledger.errors import printable
from ledger.page.model import covering

__all__ = ["DEFS", "big_plot", "hook", "legend_marks", "sparkline", "strip", "text"]

TIERS = ("verified", "self")
# The one hatch every claimed mark is filled with, defined once for the whole document.
DEFS = (
    '<svg class="defs" width="0" height="0" aria-hidden="true"><defs>'
    '<pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
    '<rect width="4" height="4" fill="#f1f3f6"/><path d="M0 0V4" stroke="#9aa3ae" stroke-width="1.6"/>'
    "</pattern></defs></svg>"
)


def _e(value: Any) -> str:
    """Text a reader sees: control and bidi characters shown as escapes, so no name can repaint the page."""
    return html.escape(printable(str(value)), quote=True)


text = _e


def hook(value: Any) -> str:
    """A test hook's attribute value (``data-skill``): the exact string, markup-escaped only."""
    return html.escape(str(value), quote=True)


def _n(x: float) -> str:
    """A coordinate with one decimal and no trailing zero: the plots' bytes are most of the page."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _pct(rate: float) -> str:
    return f"{rate * 100:.0f}%"


def _marks(
    versions: Sequence[Mapping[str, Any]],
    xs: list[float],
    y: Callable[[float], float],
    checked: bool,
    size: float,
    titles: bool,
    regressed: int | None,
) -> list[str]:
    """The error bars, points and joining lines of both tiers, one ``<g>`` a drawn outcome."""
    out: list[str] = []
    flag = "true" if checked else "false"
    for t, tier in enumerate(TIERS):
        dx = (-1 if t == 0 else 1) * size * 0.7  # the tiers side by side, so neither hides the other
        line: list[str] = []
        for v, x0 in zip(versions, xs, strict=True):
            d = v[tier]
            if d["rate"] is None:
                continue
            x, yr = x0 + dx, y(d["rate"])
            lo, hi = d["interval"]
            line.append(f"{'L' if line else 'M'}{_n(x)} {_n(yr)}")
            cap = (
                f"M{_n(x - size)} {_n(y(hi))}h{_n(2 * size)}M{_n(x - size)} {_n(y(lo))}h{_n(2 * size)}"
                if titles
                else ""
            )
            side = _n(2 * size)
            point = (
                f'<circle cx="{_n(x)}" cy="{_n(yr)}" r="{_n(size)}"/>'
                if tier == "verified"
                else f'<rect x="{_n(x - size)}" y="{_n(yr - size)}" width="{side}" height="{side}"/>'
            )
            title = ""
            if titles:
                n = d["successes"] + d["failures"]
                title = (
                    f"<title>v{v['version']} {'verified' if tier == 'verified' else 'self-reported'}"
                    f"{'' if checked else ' (claimed)'}: {d['successes']}/{n} = {_pct(d['rate'])}, "
                    f"95% interval {_pct(lo)}–{_pct(hi)}</title>"
                )
            reg = ' class="reg"' if v["version"] == regressed else ""
            out.append(
                f'<g data-version="{v["version"]}" data-tier="{tier}" data-checked="{flag}"{reg}>{title}'
                f'<path class="eb" d="M{_n(x)} {_n(y(lo))}V{_n(y(hi))}{cap}"/>{point}</g>'
            )
        if len(line) > 1:
            out.insert(0, f'<path class="ln ln-{tier}" data-checked="{flag}" d="{"".join(line)}"/>')
    return out


def sparkline(skill: Mapping[str, Any], checked: bool) -> str:
    """A row-sized plot of one skill's success rate per version, both tiers, with Wilson bars."""
    w, h, pad = 168, 40, 4.0
    versions = skill["versions"]
    xs = _xs(len(versions), pad + 3, w - pad - 3)
    y = _scale(pad, h - pad)
    reg = skill["regression"]
    body = [f'<path class="axis" d="M0 {_n(y(0))}H{w}M0 {_n(y(1))}H{w}"/>']
    if reg is not None:
        i = [v["version"] for v in versions].index(reg["version"])
        body.append(f'<rect class="regband" x="{_n(xs[i] - 5)}" y="0" width="10" height="{h}"/>')
    body += _marks(versions, xs, y, checked, 2.2, False, reg and reg["version"])
    label = _e(f"{skill['name']}: success rate per version")
    return (
        f'<svg class="plot spark" data-skill="{hook(skill["name"])}" viewBox="0 0 {w} {h}" width="{w}" '
        f'height="{h}" role="img" aria-label="{label}">{"".join(body)}</svg>'
    )


def big_plot(skill: Mapping[str, Any], checked: bool) -> str:
    """A larger plot with axes, version labels and a tooltip per mark, for skills needing attention."""
    w, h, left, right, top, bottom = 560, 230, 42, 14, 24, 26
    versions = skill["versions"]
    xs = _xs(len(versions), left + 14, w - right - 14)
    y = _scale(top, h - bottom)
    body = []
    for r in (0, 0.25, 0.5, 0.75, 1):
        body.append(
            f'<path class="grid" d="M{left} {_n(y(r))}H{w - right}"/><text class="tick" '
            f'x="{left - 6}" y="{_n(y(r) + 4)}" text-anchor="end">{_pct(r)}</text>'
        )
    step = max(1, -(-len(versions) // 14))
    for i, (v, x) in enumerate(zip(versions, xs, strict=True)):
        if i % step == 0 or i == len(versions) - 1:
            body.append(f'<text class="tick" x="{_n(x)}" y="{h - 8}" text-anchor="middle">v{v["version"]}</text>')
    reg = skill["regression"]
    if reg is not None:
        i = [v["version"] for v in versions].index(reg["version"])
        body.append(
            f'<rect class="regband" x="{_n(xs[i] - 12)}" y="{top}" width="24" height="{h - top - bottom}">'
            f"<title>v{reg['version']} regressed from v{reg['from']}</title></rect>"
        )
    body += _marks(versions, xs, y, checked, 4.0, True, reg and reg["version"])
    if not checked:
        body.append(
            f'<text class="claimed-label" x="{w - right}" y="{top - 10}" text-anchor="end">'
            "CLAIMED · not checked by the audit</text>"
        )
    label = _e(f"{skill['name']}: success rate per version, verified and self-reported")
    return (
        f'<svg class="plot big" data-skill="{hook(skill["name"])}" viewBox="0 0 {w} {h}" role="img" '
        f'aria-label="{label}">{"".join(body)}</svg>'
    )


def legend_marks(tier: str, checked: bool) -> str:
    """One sample mark, drawn exactly as in the plots (for the legend)."""
    one = {"version": 1, "verified": None, "self": None}
    one[tier] = {"successes": 4, "failures": 1, "rate": 0.8, "interval": [0.38, 0.96]}
    other = "self" if tier == "verified" else "verified"
    one[other] = {"successes": 0, "failures": 0, "rate": None, "interval": None}
    marks = _marks([one], [16.0], _scale(3, 29), checked, 3.6, False, None)
    return (
        f'<svg class="sample" viewBox="0 0 32 32" width="32" height="32" aria-hidden="true">'
        f"{''.join(marks).replace('data-version', 'data-sample')}</svg>"
    )


def strip(timeline: Sequence[Mapping[str, Any]], chain: bool, trusted: bool) -> str:
    """The whole lineage as one bar of up to 240 bins, oldest left, each coloured by its worst snapshot."""
    if not timeline:
        return ""
    bins = min(240, len(timeline))
    w, h = 960, 30
    cover = covering(timeline)  # anchored: a snapshot of its run of the same root has an anchor
    out = []
    for b in range(bins):
        part = timeline[b * len(timeline) // bins : (b + 1) * len(timeline) // bins]
        state = "ok"
        if any(s["signature"] == "fail" for s in part):
            state = "bad"
        elif chain and any(c is None for c in cover[b * len(timeline) // bins : (b + 1) * len(timeline) // bins]):
            state = "pending"
        elif any(s["signature"] == "unsigned" for s in part):
            state = "unsigned"
        elif not trusted or any(s["anchor"] is not None and not s["anchor"]["checked"] for s in part):
            state = "claimed"
        x0, x1 = b * w / bins, (b + 1) * w / bins
        first, last = part[0]["index"], part[-1]["index"]
        span = f"#{first}" if first == last else f"#{first}–#{last}"
        out.append(
            f'<rect class="s-{state}" x="{_n(x0)}" y="0" width="{_n(max(x1 - x0 - 1, 1))}" height="{h}">'
            f"<title>{span}: {state}</title></rect>"
        )
    return (
        f'<svg class="strip" viewBox="0 0 {w} {h}" preserveAspectRatio="none" role="img" '
        f'aria-label="the lineage, oldest left">{"".join(out)}</svg>'
    )


def _xs(n: int, lo: float, hi: float) -> list[float]:
    if n == 1:
        return [(lo + hi) / 2]
    return [lo + i * (hi - lo) / (n - 1) for i in range(n)]


def _scale(top: float, bottom: float) -> Callable[[float], float]:
    return lambda r: bottom - r * (bottom - top)
