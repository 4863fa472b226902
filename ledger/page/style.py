"""The page's one stylesheet and one script, and the Content-Security-Policy that pins them.

Both are inline and hashed into the policy, so the page loads nothing, and a stray external
reference (or an injected script) is refused by the browser itself, not merely absent.
The script only adds the filter box; the page is complete without it.
"""

from __future__ import annotations

import base64
import hashlib

__all__ = ["CSP", "CSS", "JS"]

CSS = """
:root{--ink:#1a1f36;--muted:#697386;--line:#e3e8ee;--bg:#f6f8fa;--card:#fff;--ok:#0e9f6e;--bad:#df1b41;
--warn:#c27c0e;--ver:#2f6fde;--self:#e8890c;--grey:#9aa3ae;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px 28px 64px}
header.top{display:flex;flex-wrap:wrap;align-items:baseline;gap:8px 24px;margin-bottom:16px}
h1{font-size:24px;margin:0;letter-spacing:-.01em} h2{font-size:17px;margin:0 0 12px}
h3{font-size:14px;margin:0 0 6px;word-break:break-all}
.sub{color:var(--muted);font-size:13px}
code,.mono{font:12px/1.4 var(--mono)}
section{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:18px 20px;margin:16px 0;
box-shadow:0 1px 2px rgba(26,31,54,.05)}
.verdict{border-radius:12px;padding:18px 22px;margin:0 0 16px;color:#fff;display:flex;flex-wrap:wrap;
align-items:center;gap:8px 20px;box-shadow:0 2px 6px rgba(26,31,54,.12)}
.verdict.ok{background:linear-gradient(90deg,#0e9f6e,#16b07e)} .verdict.fail{background:repeating-linear-gradient(
-45deg,#c8102e 0 18px,#df1b41 18px 36px);border:3px solid #7a0016}
.verdict .word{font-size:30px;font-weight:800;letter-spacing:.06em}
.verdict .why{font-size:15px;max-width:760px}
.checks{display:flex;flex-wrap:wrap;gap:6px;margin:0;padding:0;list-style:none}
.pill{display:inline-block;border-radius:999px;padding:1px 9px;font-size:12px;font-weight:600;white-space:nowrap}
.st-OK{background:#e3f6ee;color:#0b7a55} .st-FAIL{background:#ffe4e8;color:#b0002a} .st-WARN{background:#fff3d6;
color:#8a5a00} .st-SKIP{background:#eef0f3;color:#596273}
.checks li{background:#f7f9fc;border-radius:8px;padding:4px 10px;color:var(--ink);font-size:13px;max-width:100%}
.checks li .d{color:var(--muted);margin-left:6px;word-break:break-word}
.legend{display:flex;flex-wrap:wrap;gap:10px 26px;align-items:center;font-size:13px}
.legend .item{display:flex;align-items:center;gap:8px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(128px,1fr));gap:12px;margin:16px 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:12px 14px}
.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.05em}
.card .v{font-size:22px;font-weight:700;margin-top:2px}
.fig{white-space:nowrap} .fig[data-checked=true]{color:var(--ink);font-weight:600}
.fig[data-checked=true]::after{content:"\\2713";color:var(--ok);font-style:normal;font-weight:700;margin-left:3px;
font-size:.85em}
.fig[data-checked=false]{color:#6b7380;font-style:italic;font-weight:500;padding:0 4px;border-radius:4px;
background:repeating-linear-gradient(-45deg,#f1f3f6 0 4px,#e2e6eb 4px 6px)}
.fig[data-checked=false]::after{content:"claimed";font-size:10px;font-style:normal;text-transform:uppercase;
letter-spacing:.06em;margin-left:5px;color:#7d8591;border:1px solid #c5cbd3;border-radius:3px;padding:0 3px;
vertical-align:1px}
.bad{color:var(--bad);font-weight:700} .none{color:var(--muted)}
table{width:100%;border-collapse:collapse;font-size:13px}
th{position:sticky;top:0;background:#f7f9fc;text-align:left;font-weight:600;color:#4f566b;font-size:12px;
padding:7px 8px;border-bottom:1px solid var(--line);z-index:1}
td{padding:6px 8px;border-bottom:1px solid #eef1f5;vertical-align:middle}
tr:hover td{background:#fafbfd} td.name{font-weight:600;word-break:break-all;max-width:260px}
.tag{display:inline-block;font-size:11px;border-radius:4px;padding:0 5px;margin-left:4px;font-weight:600}
.tag.del{background:#eef0f3;color:#596273} .tag.reg{background:#ffe4e8;color:#b0002a}
.tag.revoked{background:#ffe4e8;color:#b0002a} .tag.active{background:#e3f6ee;color:#0b7a55}
td.worse{color:var(--bad);font-weight:600} td.better{color:#0b7a55;font-weight:600}
.revert{display:block;margin-top:2px;color:#b0002a;white-space:nowrap}
svg.plot{display:block;overflow:visible} svg.spark{width:168px;height:40px}
svg.big{width:100%;max-width:560px;height:auto}
.plot .axis,.plot .grid{stroke:#e3e8ee;stroke-width:1;fill:none} .plot .tick{font-size:11px;fill:var(--muted)}
.plot .eb{fill:none;stroke-width:1.2} .plot .ln{fill:none;stroke-width:1.4}
.plot .ln-self,.sample .ln-self{stroke-dasharray:4 3}
[data-tier=verified] .eb,.ln-verified{stroke:var(--ver)}
[data-tier=verified] circle{fill:var(--ver);stroke:#fff;stroke-width:.8}
[data-tier=self] .eb,.ln-self{stroke:var(--self)} [data-tier=self] rect{fill:#fff;stroke:var(--self);stroke-width:1.6}
[data-checked=false] .eb{stroke:var(--grey);stroke-dasharray:2 2} .ln[data-checked=false]{stroke:var(--grey)}
[data-tier][data-checked=false] circle{fill:url(#hatch);stroke:#7d8591}
[data-tier][data-checked=false] rect{fill:#fff;stroke:#7d8591}
.plot .reg circle,.plot .reg rect{stroke:var(--bad);stroke-width:1.8}
.plot .regband{fill:#ffe4e8;opacity:.8} .plot .claimed-label{font-size:12px;font-style:italic;fill:#7d8591}
.attention{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:16px}
.attention figure{margin:0;border:1px solid var(--line);border-radius:10px;padding:12px}
.attention figcaption{font-size:12px;color:var(--muted)}
.strip{display:block;width:100%;height:30px;border-radius:6px}
.s-ok{fill:#34c38f} .s-pending{fill:#f5b73b} .s-unsigned{fill:#c5cbd3} .s-bad{fill:var(--bad)} .s-claimed{fill:#b8c0cc}
.keys{display:flex;gap:14px;flex-wrap:wrap;font-size:12px;color:var(--muted);margin:6px 0 12px}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.sw.s-ok{background:#34c38f}.sw.s-pending{background:#f5b73b}.sw.s-unsigned{background:#c5cbd3}
.sw.s-bad{background:var(--bad)}.sw.s-claimed{background:#b8c0cc}
table.tl td{padding:7px 8px} table.tl td.idx{font-weight:700;white-space:nowrap;border-left:3px solid #34c38f}
table.tl tr.sig-fail td{background:#fff1f3} table.tl tr.sig-fail td.idx{border-left-color:var(--bad)}
table.tl tr.sig-unsigned td.idx{border-left-color:var(--grey)} table.tl .ch{font-size:12.5px;word-break:break-word}
table.tl td.ids{white-space:nowrap} table.tl tr.bad td{background:#fff1f3} table.tl tr.pend td{background:#fff8e6}
ul.skills{columns:2;padding-left:20px}
details>summary{cursor:pointer;color:var(--ver);font-weight:600;margin:10px 0}
.toolbar{display:flex;gap:12px;align-items:center;margin:0 0 10px}
#filter{border:1px solid var(--line);border-radius:8px;padding:7px 10px;font:inherit;width:280px}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:6px 18px;margin:0}
dl.kv dt{color:var(--muted)} dl.kv dd{margin:0;word-break:break-all}
footer{color:var(--muted);font-size:12px;margin-top:28px}
.verdict.ok.unchecked{background:linear-gradient(90deg,#9a6a05,#c27c0e)}
#summary .grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:14px}
#summary .box{border:1px solid var(--line);border-radius:10px;padding:12px 14px;min-width:0;overflow-wrap:anywhere}
#summary dl.kv{grid-template-columns:max-content minmax(0,1fr)} #summary dl.kv dd{word-break:normal}
#summary code{word-break:break-all} #summary .fig{white-space:normal}
#summary h3{word-break:normal;font-size:15px} #summary h4{font-size:13px;margin:8px 0 2px;color:#4f566b}
#summary ul,#summary ol{margin:4px 0;padding-left:20px} #summary li{margin:3px 0;word-break:break-word}
#summary .lead{margin:4px 0 8px} #summary .when{color:var(--muted);font-size:12px}
.msg{font-size:12.5px;color:#4f566b;word-break:break-word}
ul.holders{list-style:none;padding:0;margin:0} h2.detail{margin:28px 0 0;font-size:19px}
#check-yourself ol{padding-left:20px} #check-yourself li p{margin:8px 0 4px}
#check-yourself pre{margin:0;background:#f3f5f8;border:1px solid var(--line);border-radius:6px;padding:8px 10px;
white-space:pre-wrap;word-break:break-all}
@media (max-width:600px){main{padding:12px 10px 40px}section{padding:12px}.verdict .word{font-size:22px}
#summary .grid{grid-template-columns:1fr}td.name{max-width:140px}table{display:block;overflow-x:auto}}
"""

JS = """
(function(){var f=document.getElementById('filter');if(!f){return;}f.hidden=false;
var rows=Array.prototype.slice.call(document.querySelectorAll('tr[data-skill-row]'));
f.addEventListener('input',function(){var q=f.value.toLowerCase();rows.forEach(function(r){
r.hidden=q!==''&&r.getAttribute('data-skill-row').toLowerCase().indexOf(q)<0;});
if(q){Array.prototype.forEach.call(document.querySelectorAll('details.more'),function(d){d.open=true;});}});})();
"""


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = (
    f"default-src 'none'; style-src {_sha256(CSS)}; script-src {_sha256(JS)}; img-src 'none'; "
    "base-uri 'none'; form-action 'none'"
)
