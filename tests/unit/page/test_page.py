"""The shareholder report page (issue 38, item 5): rendered from data, refused when malformed, checked in Chromium.

The Python half parses the rendered HTML (the standard library's parser) and counts what was
drawn against the data; the browser half loads the same pages in real headless Chromium
(tests/harness/chromium.py) and proves by geometry that every mark is drawn inside its plot, that
nothing is logged, thrown or fetched, and that a failing brain leads with FAILING.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from ledger.errors import LedgerError, PageDataError
from ledger.page import render_page
from ledger.page.render import ATTENTION, NEWEST, OPEN_SKILLS
from tests.harness import pagedata
from tests.harness.chromium import visit

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "page"


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the text, of a document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> _Elements:
    p = _Elements()
    p.feed(page)
    p.close()
    return p


def without_legend(page: str) -> str:
    """The page less its legend, whose samples show both conventions on purpose."""
    start = page.index('<section id="legend"')
    return page[:start] + page[page.index("</section>", start) :]


def expected_marks(skill: dict[str, Any]) -> int:
    return sum(v[t]["rate"] is not None for v in skill["versions"] for t in ("verified", "self"))


def spark_marks(doc: _Elements) -> Counter[str]:
    """Marks per sparkline, by walking the tags: a ``<g data-version>`` belongs to the last opened plot."""
    out: Counter[str] = Counter()
    current = None
    for tag, a in doc.tags:
        if tag == "svg":
            current = a.get("data-skill") if "spark" in (a.get("class") or "").split() else None
        elif tag == "g" and "data-version" in a and current is not None:
            out[current] += 1
    return out


# --------------------------------------------------------------------------- rendering


def test_a_passing_brain_draws_every_outcome_as_checked() -> None:
    data = pagedata.brain()
    page = render_page(data)
    doc = parse(page)
    verdict = [a for t, a in doc.tags if a.get("id") == "verdict"]
    assert len(verdict) == 1 and verdict[0]["class"] == "verdict ok" and "PASSING" in page
    assert any(a.get("id") == "legend" for _, a in doc.tags)
    sparks = [a["data-skill"] for t, a in doc.tags if t == "svg" and "spark" in (a.get("class") or "")]
    assert sorted(sparks) == sorted(s["name"] for s in data["skills"])
    assert spark_marks(doc) == Counter({s["name"]: expected_marks(s) for s in data["skills"] if expected_marks(s)})
    marks = [a for t, a in doc.tags if t == "g" and "data-version" in a]
    assert {a["data-tier"] for a in marks} == {"verified", "self"}
    assert {a["data-checked"] for a in marks} == {"true"}
    assert all(a["data-checked"] == "true" for _, a in parse(without_legend(page)).tags if "data-checked" in a)
    rows = [a["data-index"] for _, a in doc.tags if "data-index" in a]
    assert rows == [str(s["index"]) for s in reversed(data["timeline"])]
    assert [a["data-address"] for _, a in doc.tags if "data-address" in a] == [s["address"] for s in data["signers"]]
    assert render_page(copy.deepcopy(data)) == page  # the same data, the same bytes


def test_a_failing_brain_leads_with_failing_and_claims_every_figure() -> None:
    data = pagedata.failing()
    assert all(s["checked"] for s in data["signers"]) and data["evidence"]["checked"]  # the parts still say checked
    page = render_page(data)
    doc = parse(page)
    (verdict,) = [a for _, a in doc.tags if a.get("id") == "verdict"]
    assert verdict["class"] == "verdict fail"
    assert page.index("FAILING") < page.index('id="legend"') and "<title>acme-research-agent: FAILING" in page
    flags = Counter(a["data-checked"] for _, a in parse(without_legend(page)).tags if "data-checked" in a)
    assert flags["true"] == 0 and flags["false"] > 100
    checks = [a["data-check"] for _, a in doc.tags if "data-check" in a]
    assert checks[0] == "signatures"  # the failed check comes first
    assert '<tr data-index="3" class="sig-fail">' in page and "signature does not verify" in page
    assert page.count("CLAIMED · not checked by the audit") == ATTENTION


def test_hostile_strings_render_inert() -> None:
    page = render_page(pagedata.hostile())
    doc = parse(page)
    assert [t for t, _ in doc.tags].count("script") == 1 and "img" not in [t for t, _ in doc.tags]
    assert not [(t, k) for t, a in doc.tags for k in a if k.startswith("on")]
    assert "window.__pwned=1</script>" not in page
    text = "".join(doc.text)
    assert text.count(pagedata.HOSTILE) >= 30  # each one shown, as text (the summary and its commands too)
    assert "&lt;script&gt;" in page and "javascript:alert(1)" in text
    assert not [a for _, a in doc.tags if any(v and "javascript:" in v for k, v in a.items() if k != "data-skill")]


def test_control_and_bidi_characters_are_shown_not_obeyed() -> None:
    """A name may not reorder what a reader sees (U+202E) nor carry terminal escapes; the hooks keep the name."""
    data = pagedata.brain(skills=3, versions=2)
    name = "evil\u202e3 trever regdel\x1b[31m"
    data["skills"][0]["name"] = name
    page = render_page(data)
    text = "".join(parse(page).text)
    assert "\u202e" not in text and "\x1b" not in text and "evil\\u202e3 trever regdel\\x1b[31m" in text
    assert [a["data-skill"] for t, a in parse(page).tags if t == "svg" and a.get("data-skill") == name]


def test_an_empty_brain_and_a_brain_without_a_chain() -> None:
    page = render_page(pagedata.empty())
    assert "No skills yet." in page and "No signing keys" in page and "No chain configured" in page
    assert "Every skill is this brain's own: none was installed" in page and 'class="plot' not in page
    assert 'data-index="0"' in page and "unsigned" in page
    page = render_page(pagedata.brain(chain=False))
    assert "No chain configured" in page and "not anchored" in page and "pending</span>" not in page


def test_a_regression_is_flagged_with_its_revert_command() -> None:
    data = pagedata.brain()
    regressed = [s for s in data["skills"] if s["regression"]]
    assert len(regressed) == 2
    page = render_page(data)
    doc = parse(page)
    order = [a["data-skill-row"] for _, a in doc.tags if "data-skill-row" in a]
    assert set(order[:2]) == {s["name"] for s in regressed}  # most in need of attention first
    big = [a["data-skill"] for t, a in doc.tags if t == "svg" and "big" in (a.get("class") or "")]
    assert len(big) == ATTENTION and set(big[:2]) == {s["name"] for s in regressed}
    for s in regressed:
        r = s["regression"]
        assert f'<code class="revert" data-revert>ledger revert {s["name"]} {r["from"]}</code>' in page
        assert f"regressed v{r['version']}" in page
    assert sum(1 for t, a in doc.tags if t == "g" and a.get("class") == "reg") >= 4  # both tiers, sparkline and big


def test_the_page_loads_nothing_and_pins_its_style_and_script() -> None:
    page = render_page(pagedata.brain())
    doc = parse(page)
    assert not [(t, k) for t, a in doc.tags for k in a if k in ("src", "href", "style", "srcset", "action")]
    assert "url(" not in re.sub(r"url\(#hatch\)", "", page) and "@import" not in page
    (csp,) = [a["content"] for t, a in doc.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in csp
    for tag in ("style", "script"):
        body = re.search(f"<{tag}>(.*?)</{tag}>", page, re.S).group(1)
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"{tag}-src 'sha256-{digest}'" in csp


def test_the_audits_page_is_drawn_in_the_same_skeleton_stylesheet_and_escaping() -> None:
    """Issue 51, item 6: the audit's ``--html`` page and the report page share one renderer: the same pinned
    policy and stylesheet, the same verdict banner and check list, control and bidi characters shown, no script."""
    from ledger.audit.verdicts import Report
    from ledger.page.audit import render_audit

    report = Report(repo="/brains/evil\u202eadmin")
    report.check("snapshots").fail("a root differs", snapshot="ab" * 20, index=1, path="s/SKILL.md\x1b[31m")
    report.check("fsck").summary = "git fsck found no problems"
    report.skills["s"] = [{"action": "create", "version": 1}, {"action": "update", "version": 2}]
    report.timeline.append(
        {
            "index": 0,
            "commit": "cd" * 20,
            "operation": "init",
            "changes": [],
            "ok": True,
            "root": "blake3-tree-v1:" + "0" * 64,
            "timestamp": 0,
            "chain": None,
            "actor": "user",
        }
    )
    page = render_audit(report)
    doc, ours = parse(page), parse(render_page(pagedata.brain()))

    def policy(d: _Elements) -> str:
        (csp,) = [a["content"] for t, a in d.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
        return csp

    assert policy(doc) == policy(ours) and "default-src 'none'" in policy(doc)
    style = re.search("<style>(.*?)</style>", page, re.S).group(1)
    assert style == re.search("<style>(.*?)</style>", render_page(pagedata.brain()), re.S).group(1)
    assert "script" not in [t for t, _ in doc.tags]
    assert not [(t, k) for t, a in doc.tags for k in a if k in ("src", "href", "style", "srcset", "action")]
    (verdict,) = [a for _, a in doc.tags if a.get("id") == "verdict"]
    assert verdict["class"] == "verdict fail" and "FAILED" in page
    assert [a["data-check"] for _, a in doc.tags if "data-check" in a] == ["snapshots", "fsck"]
    text = "".join(doc.text)
    assert "\u202e" not in text and "\x1b" not in text and "evil\\u202eadmin" in text and "SKILL.md\\x1b[31m" in text
    assert "<b>s</b>: v1 → v2" in page and "<td>1970-01-01T00:00:00Z</td>" in page


def test_a_thousand_skills_of_ten_versions_render_compactly() -> None:
    data = pagedata.brain(skills=1000, versions=10, snapshots=10_000)
    page = render_page(data)
    assert len(page.encode()) < 8_000_000, len(page.encode())  # 1.2 KB a skill-version, timeline included
    doc = parse(page)
    assert spark_marks(doc) == Counter({s["name"]: expected_marks(s) for s in data["skills"] if expected_marks(s)})
    rows = [a["data-skill-row"] for _, a in doc.tags if "data-skill-row" in a]
    assert len(rows) == 1000 == len(set(rows))
    assert [a["data-index"] for _, a in doc.tags if "data-index" in a] == [str(i) for i in range(9_999, -1, -1)]
    first_details = page.index('<details class="more">', page.index('id="timeline"'))
    assert page[:first_details].count("<tr data-index=") == NEWEST
    assert page[: page.index('<details class="more">')].count("<tr data-skill-row=") == OPEN_SKILLS


def test_lift_per_skill_and_version_side_by_side_with_its_flags() -> None:
    data = pagedata.brain()
    page = render_page(data)
    doc = parse(page)
    rows = [a for _, a in doc.tags if "data-lift" in a]
    want = [
        (s["name"], v["version"], t, x)
        for s in data["skills"]
        for v in s["versions"]
        for t in ("verified", "self")
        if (x := v["lift"][t])
    ]
    assert len(rows) == len(want) > 10
    assert sorted(
        (r["data-lift"], int(r["data-v"]), r["data-tier"], r["data-pre"], r["data-stale"]) for r in rows
    ) == sorted((n, v, t, "yes" if x["preregistered"] else "no", "yes" if x["stale"] else "no") for n, v, t, x in want)
    high = {(n, str(v), t): x["interval"][1] for n, v, t, x in want}
    highs = [high[r["data-lift"], r["data-v"], r["data-tier"]] for r in rows]
    assert highs == sorted(highs)  # the most harmful first
    name, version, tier, lift = min(want, key=lambda w: (w[3]["interval"][1], w[0], -w[1], w[2]))
    row = page[page.index(f'<tr data-lift="{name}" data-v="{version}" data-tier="{tier}"') :]
    row = row[: row.index("</tr>")]
    base = "no skill" if lift["baseline"] == "without_skill" else f"v{lift['arm']}"
    assert f"{lift['with_rate'] * 100:.0f}% vs {lift['baseline_rate'] * 100:.0f}% {base}" in row
    assert f"{lift['delta'] * 100:+.0f} <span class=sub>{lift['interval'][0] * 100:+.0f}…" in row
    assert 'data-checked="true"' in row
    failing = copy.deepcopy(data)
    failing["verdict"]["ok"] = False
    failing["verdict"]["checks"][0]["status"] = "FAIL"
    lifted = render_page(failing)
    part = lifted[lifted.index('<section id="lift">') : lifted.index("</section>", lifted.index('<section id="lift">'))]
    assert 'data-checked="true"' not in part and 'data-checked="false"' in part  # a failed audit vouches for none


def _set(path: str, value: Any):
    def change(d: dict[str, Any]) -> None:
        keys = re.findall(r"[^.\[\]]+", path)
        target: Any = d
        for k in keys[:-1]:
            target = target[int(k)] if k.isdigit() else target[k]
        last = keys[-1]
        if value is _DELETE:
            del target[last]
        else:
            target[int(last) if last.isdigit() else last] = value

    return change


_DELETE = object()
MALFORMED = [
    ("format", 1, "format 1 is not 2"),
    ("format", True, "format: expected a non-negative integer"),
    ("generated", "2026-11-26 16:00:00", "generated: expected a string"),
    ("generated", "2026-13-40T16:00:00Z", "not a valid ISO 8601 time"),
    ("brain.head.index", "3", "brain.head.index: expected a non-negative integer"),
    ("brain.head.index", -1, "brain.head.index"),
    ("brain.head.root", "blake3-tree-v1:" + "AB" * 32, "brain.head.root"),
    ("brain.genesis", "0x" + "ab" * 20, "brain.genesis"),
    ("brain.extra", 1, "unknown ['extra']"),
    ("brain.name", _DELETE, "missing ['name']"),
    ("brain.name", "", "brain.name: expected a non-empty string"),
    ("verdict.ok", 1, "verdict.ok: expected true or false"),
    ("verdict.checks[0].status", "ok", "verdict.checks[0].status: expected one of"),
    ("verdict.checks[1].status", "FAIL", "a passing verdict with a failed check"),
    ("timeline[2].index", 1, "timeline[2]: index 1 does not follow 1"),
    ("timeline[0].signer", "0x1234", "timeline[0].signer"),
    ("timeline[0].signature", None, "timeline[0].signature"),
    ("timeline[0].anchor.tx", "0x" + "1" * 63, "timeline[0].anchor.tx"),
    ("timeline[0].changes[0].action", "rename", "timeline[0].changes[0].action"),
    ("timeline[0].signer", None, "timeline[0].signer: signature 'ok' with signer None"),
    ("timeline[0].signature", "unsigned", "timeline[0].signer: signature 'unsigned' with signer '0x"),
    ("timeline", {}, "timeline: expected a list"),
    ("skills[0].versions[1].version", 1, "version 1 does not follow 1"),
    ("skills[0].versions[1].verified.rate", 1.5, "expected a number in [0, 1]"),
    ("skills[0].versions[1].verified.rate", float("nan"), "expected a number in [0, 1]"),
    (
        "skills[0].versions[0].verified",
        {"successes": 3, "failures": 1, "rate": 0.5, "interval": [0.3, 0.9]},
        "0.5 is not successes / n = 3/4",
    ),
    (
        "skills[0].versions[0].verified",
        {"successes": 3, "failures": 1, "rate": 0.75, "interval": [0.0, 0.5]},
        "[0.0, 0.5] does not contain the rate 0.75",
    ),
    ("skills[0].versions[1].verified.interval", [0.0], "expected a pair"),
    ("skills[0].versions[1].verified.successes", 2.0, "expected a non-negative integer"),
    (
        "skills[0].versions[0].verified",
        {"successes": 0, "failures": 0, "rate": 0.0, "interval": [0, 1]},
        "no outcomes, yet a rate",
    ),
    (
        "skills[0].versions[0].verified",
        {"successes": 1, "failures": 0, "rate": None, "interval": None},
        "1 outcomes but no rate",
    ),
    ("skills[0].regression.from", 99, "not among the versions"),
    ("skills[0].regression.from", 4, "cannot regress from a later or the same v4"),
    ("skills[0].live", "yes", "skills[0].live"),
    ("skills[1].name", "pdf-tools-0000", "appears twice"),
    ("signers[0].state", "retired", "signers[0].state"),
    ("signers[1].address", pagedata.SIGNERS[0].upper().replace("0X", "0x"), "an address appears twice"),
    ("chain.head", "0x" + "00" * 32, "chain.head"),
    ("chain.evidence.size", None, "chain.evidence.size"),
    ("evidence.checked", None, "evidence.checked"),
    ("supply[0].pin", 7, "supply[0].pin"),
    ("skills[1].versions[0].lift.verified.delta", -1.5, "expected a number in [-1, 1]"),
    ("skills[1].versions[0].lift.verified.with_rate", 1.0, "is not with_rate − baseline_rate"),
    ("skills[1].versions[0].lift.verified.interval", [0.995, 1.0], "does not contain the delta"),
    ("skills[1].versions[0].lift.verified.arm", 3, "an old_skill baseline names its version"),
    ("skills[1].versions[0].lift.verified.pairs", 0, "a lift has at least one pair"),
    ("skills[1].versions[0].lift", {"verified": None}, "missing ['self']"),
    ("skills[0].description", None, "skills[0].description: expected a string"),
    ("skills[0].category", 3, "skills[0].category"),
    ("timeline[0].files.added", -1, "timeline[0].files.added"),
    ("timeline[0].lines", {"added": 1}, "missing ['removed']"),
    ("timeline[0].message", None, "timeline[0].message"),
    ("verify[0].command", "", "verify[0].command: expected a non-empty string"),
    ("verdict.chain_checked", False, "differs from chain.checked"),
    ("chain.pending", 0, "whose root is anchored"),  # "pending 0" beside pending rows: a contradiction
    ("chain.anchored", 9_999, "whose root is anchored"),
    ("chain.seq", 0, "is less than the newest anchor's chain sequence"),
    ("chain.local", "yes", "chain.local"),
    ("chain.shares.total_supply", 5, "is not the sum of the holders' balances"),
    ("chain.shares.metadata.head", "blake3-tree-v1:" + "ab" * 32, "the token metadata's head is not the head on"),
    ("chain.shares.holders[0].balance", -3, "chain.shares.holders[0].balance"),
]


@pytest.mark.parametrize(
    ("path", "value", "message"), MALFORMED, ids=[f"{i}-{p}" for i, (p, _v, _m) in enumerate(MALFORMED)]
)
def test_malformed_data_is_refused_naming_the_place(path: str, value: Any, message: str) -> None:
    data = pagedata.brain()
    _set(path, value)(data)
    with pytest.raises(PageDataError) as err:
        render_page(data)
    assert isinstance(err.value, LedgerError) and err.value.hint and message in err.value.message, err.value.message


def test_the_committed_vectors_are_current_and_render() -> None:
    """tests/vectors/page/*.json: the collector's contract by example; regenerated by
    python -m tests.harness.pagedata."""
    for name, make in pagedata.VECTORS.items():
        stored = json.loads((VECTORS / f"{name}.json").read_text())
        assert stored == json.loads(json.dumps(make())), f"{name}.json is stale: python -m tests.harness.pagedata"
        assert render_page(stored).startswith("<!DOCTYPE html>")


# --------------------------------------------------------------------------- in real headless Chromium

# Opens every <details>, then measures: every mark of every plot non-empty and inside its svg.
GEOMETRY = """(() => {
  const v = document.getElementById('verdict'), vr = v.getBoundingClientRect();
  const verdict = {cls: v.className, word: v.querySelector('.word').textContent, top: vr.top, height: vr.height,
                   width: vr.width, inner: innerHeight};
  const filter = document.getElementById('filter');
  const filterHidden = filter ? filter.hidden : null;
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const bad = [], perPlot = {};
  let marks = 0;
  for (const p of document.querySelectorAll('svg.plot')) {
    const r = p.getBoundingClientRect();
    if (!(r.width > 0 && r.height > 0)) bad.push([p.dataset.skill, 'svg', r.width, r.height]);
    const ms = p.querySelectorAll('[data-version]');
    if (p.classList.contains('spark')) perPlot[p.dataset.skill] = ms.length;
    for (const m of ms) {
      marks++;
      const b = m.getBoundingClientRect();
      if (!(b.width > 0 && b.height > 0 && b.left >= r.left - 0.5 && b.right <= r.right + 0.5 &&
            b.top >= r.top - 0.5 && b.bottom <= r.bottom + 0.5))
        bad.push([p.dataset.skill, m.dataset.version, m.dataset.tier, b.left, b.top, b.width, b.height]);
    }
  }
  const style = (sel, pseudo, prop) => { const e = document.querySelector(sel);
    return e ? getComputedStyle(e, pseudo)[prop] : null; };
  return {verdict, filterHidden, perPlot, marks, bad: bad.slice(0, 10), nbad: bad.length,
    plots: document.querySelectorAll('svg.plot').length,
    legend: !!document.getElementById('legend') && document.getElementById('legend').getBoundingClientRect().height > 0,
    checked: [...document.querySelectorAll('[data-checked="true"]')].filter(e => !e.closest('#legend')).length,
    claimed: [...document.querySelectorAll('[data-checked="false"]')].filter(e => !e.closest('#legend')).length,
    pwned: typeof window.__pwned,
    rows: document.querySelectorAll('tr[data-skill-row]').length,
    snapshots: document.querySelectorAll('[data-index]').length,
    after: {checked: style('.fig[data-checked="true"]', '::after', 'content'),
            claimed: style('.fig[data-checked="false"]', '::after', 'content')},
    fill: {verified: style('.plot g[data-tier="verified"][data-checked="true"] circle', null, 'fill'),
           self: style('.plot g[data-tier="self"][data-checked="true"] rect', null, 'fill'),
           claimed: style('.plot g[data-checked="false"] circle', null, 'fill')}};
})()"""


def _open(tmp_path: Path, data: dict[str, Any], name: str, **kw: Any) -> dict[str, Any]:
    page = tmp_path / name / "index.html"
    page.parent.mkdir()
    page.write_text(render_page(data), encoding="utf-8")
    seen = visit(page, GEOMETRY, **kw)
    assert seen.problems() == [], seen.problems()
    assert seen.requests == [page.resolve().as_uri()]  # the page itself, and nothing else
    return seen.value


def _drawn(value: dict[str, Any], data: dict[str, Any]) -> None:
    assert value["nbad"] == 0, value["bad"]
    assert value["perPlot"] == {s["name"]: expected_marks(s) for s in data["skills"] if s["versions"]}
    assert value["marks"] > 0 and value["legend"]


@pytest.mark.browser
def test_pages_render_in_chromium_drawn_and_silent(tmp_path: Path) -> None:
    data = pagedata.brain()
    v = _open(tmp_path, data, "passing")
    _drawn(v, data)
    assert v["verdict"]["cls"] == "verdict ok" and v["verdict"]["word"] == "PASSING"
    assert v["claimed"] == 0 and v["checked"] > 100 and v["filterHidden"] is False  # the script ran and showed it
    assert v["after"]["checked"] == '"✓"' and v["fill"]["verified"] != v["fill"]["self"]
    assert v["plots"] == len(data["skills"]) + ATTENTION

    data = pagedata.failing()
    v = _open(tmp_path, data, "failing")
    _drawn(v, data)
    b = v["verdict"]
    assert b["cls"] == "verdict fail" and b["word"] == "FAILING"
    assert 0 <= b["top"] < 200 and b["height"] > 60 and b["width"] > 600  # a banner, at the top of the first screen
    assert v["checked"] == 0 and v["claimed"] > 100
    assert v["after"]["claimed"] == '"claimed"' and v["fill"]["claimed"].startswith("url(")

    for name, d in (("empty", pagedata.empty()), ("nochain", pagedata.brain(chain=False))):
        v = _open(tmp_path, d, name)
        _drawn(v, d) if d["skills"] else None
        assert v["verdict"]["word"] == "PASSING — not on any chain" and v["snapshots"] == len(d["timeline"])


@pytest.mark.browser
def test_hostile_strings_stay_text_in_chromium(tmp_path: Path) -> None:
    data = pagedata.hostile()
    v = _open(tmp_path, data, "hostile")
    assert v["pwned"] == "undefined"
    _drawn(v, data)


@pytest.mark.browser
def test_the_page_is_complete_without_javascript(tmp_path: Path) -> None:
    data = pagedata.brain(skills=150, versions=4, snapshots=120)
    v = _open(tmp_path, data, "nojs", javascript=False)
    assert v["filterHidden"] is True  # the filter box needs the script, so without it there is none
    assert v["rows"] == 150 and v["snapshots"] == 120
    _drawn(v, data)


@pytest.mark.browser
def test_a_thousand_skills_draw_in_chromium(tmp_path: Path) -> None:
    data = pagedata.brain(skills=1000, versions=10, snapshots=10_000)
    v = _open(tmp_path, data, "big", timeout=240)
    _drawn(v, data)
    assert v["rows"] == 1000 and v["snapshots"] == 10_000 and v["plots"] == 1000 + ATTENTION


@pytest.mark.browser
def test_the_filter_box_filters(tmp_path: Path) -> None:
    data = pagedata.brain(skills=150, versions=3, snapshots=10)
    page = tmp_path / "index.html"
    page.write_text(render_page(data), encoding="utf-8")
    typed = """(() => { const f = document.getElementById('filter'); f.value = 'PDF-TOOLS-01';
      f.dispatchEvent(new Event('input'));
      return {shown: [...document.querySelectorAll('tr[data-skill-row]')].filter(r => !r.hidden).length,
              open: document.querySelector('#skills details.more').open}; })()"""
    seen = visit(page, typed)
    assert seen.problems() == []
    expected = sum("pdf-tools-01" in s["name"] for s in data["skills"])
    assert expected > 10 and seen.value == {"shown": expected, "open": True}


@pytest.mark.browser
def test_a_stray_external_reference_fails_loudly(tmp_path: Path) -> None:
    """The harness can fail: a page that reaches out is caught by its own policy and by the resolver."""
    page = tmp_path / "index.html"
    stray = '<img src="https://example.invalid/x.png" alt=""><link rel="stylesheet" href="http://cdn.invalid/a.css">'
    page.write_text(render_page(pagedata.empty()).replace("<main>", "<main>" + stray), encoding="utf-8")
    assert any("Content Security Policy" in p or "example.invalid" in p for p in visit(page).problems())
    bare = tmp_path / "bare.html"  # without the policy, the request itself is seen and fails
    bare.write_text(f"<!DOCTYPE html><html><body>{stray}</body></html>", encoding="utf-8")
    problems = visit(bare).problems()
    assert any(p.startswith("request: https://example.invalid/") for p in problems), problems


def test_a_known_public_chain_is_named_and_linked_and_a_local_one_is_said_to_be_local() -> None:
    from ledger.chain.networks import network

    assert (network(31337).name, network(31337).local, network(31337).explorer) == ("local test chain", True, None)
    assert network(1337).local and not network(11155111).local and network(424242).explorer is None
    data = pagedata.brain(skills=3, versions=2)
    sepolia = network(11155111)
    data["chain"].update(chain_id=sepolia.chain_id, name=sepolia.name, local=False, explorer=sepolia.explorer)
    page = render_page(data)
    registry = data["chain"]["registry"]
    assert f'href="https://sepolia.etherscan.io/address/{registry}"' in page
    assert f'href="https://sepolia.etherscan.io/token/{registry}"' in page  # the share token, as a wallet shows it
    assert 'data-chain="Sepolia (Ethereum test network)"' in page and 'data-local="false"' in page
    local = render_page(pagedata.brain(skills=3, versions=2))
    assert "href=" not in local and "a test chain on one machine, not a public network" in local


def test_without_the_chain_checked_the_verdict_says_so_first() -> None:
    data = pagedata.brain(skills=3, versions=2)
    data["chain"]["checked"] = data["verdict"]["chain_checked"] = False
    doc = parse(render_page(data))
    verdict = next(a for _, a in doc.tags if a.get("id") == "verdict")
    assert verdict["class"] == "verdict ok unchecked" and verdict["data-chain-checked"] == "false"
    assert "PASSING — chain not checked" in render_page(data)
    assert "<title>acme-research-agent: PASSING, chain not checked" in render_page(data)


def test_a_snapshot_is_anchored_by_its_run_of_the_same_root_and_pending_counts_roots() -> None:
    from ledger.page.model import covering, pending_roots

    def snap(i: int, root: str, anchored: bool) -> dict[str, Any]:
        return {"index": i, "root": root, "anchor": {"seq": i} if anchored else None}

    # A (anchored), A (an outcome), B (anchored), A again (a revert: the chain must take A again), A, C
    tl = [
        snap(0, "A", True),
        snap(1, "A", False),
        snap(2, "B", True),
        snap(3, "A", False),
        snap(4, "A", False),
        snap(5, "C", False),
    ]
    cover = covering(tl)
    assert [c and c["index"] for c in cover] == [0, 0, 2, None, None, None]
    assert pending_roots(tl, cover) == 2  # A again and C: what 'ledger commit' would send
