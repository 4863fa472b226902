"""The scanner's rules over one text file: hidden Unicode, injection phrasing, network
execution, credential reads, encoded payloads, obfuscation (docs/scanner.md).

Each rule names an incident class seen in public skill registries (ClawHavoc's fake
installers, Snyk's ToxicSkills categories, wallet and SSH-key stealers).  Patterns are
written for precision first: a reviewer stops reading a scanner that cries wolf on every
security skill, so text that *discusses* an attack (quoted, in a code example, next to
words like "injection" or "e.g.") is reported below the critical level that blocks.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ledger.scanner.text import URL, TextFile, detail, hosts, words

__all__ = ["RULES", "SEVERITIES", "Finding", "Rule", "check_text"]

SEVERITIES = ("critical", "high", "medium", "low")  # most severe first
BLOB_MIN = 400  # characters in one base64 or hex run before it counts as a payload (~300 bytes)
ESCAPE_RUN = 24  # consecutive \xNN / \uNNNN / \NNN escapes that make an "escape soup"
LONG_LINE = 1000  # characters on one line of a script
NEAR = 6  # lines: a credential read and a network send this close in a document are one command


# The hosts a credential is meant for, by a word of where it was read (a token command, a
# credential file): sending it there is using it, not exfiltrating it.
ISSUERS = (
    (re.compile(r"^gh\b|git-credentials|/gh/hosts", re.I), ("github.com", "githubusercontent.com", "gitlab.com")),
    (re.compile(r"^glab\b", re.I), ("gitlab.com",)),
    (re.compile(r"^aws\b|\.aws\b", re.I), ("amazonaws.com",)),
    (re.compile(r"^gcloud\b|gcloud", re.I), ("googleapis.com", "google.com")),
    (re.compile(r"^az\b|\.azure\b", re.I), ("azure.com", "microsoft.com", "windows.net", "azure.net")),
    (re.compile(r"^doctl\b", re.I), ("digitalocean.com",)),
    (re.compile(r"^heroku\b", re.I), ("heroku.com",)),
    (re.compile(r"\.npmrc", re.I), ("npmjs.org", "npmjs.com")),
    (re.compile(r"\.pypirc", re.I), ("pypi.org",)),
    (re.compile(r"\.docker/config", re.I), ("docker.io", "docker.com")),
)


def issued_by(credential: str, host: str) -> bool:
    """Whether ``host`` belongs to the service that issued ``credential`` (:data:`ISSUERS`)."""
    host = host.lower().rstrip(".")
    named = [h for pattern, hs in ISSUERS if pattern.search(credential) for h in hs]
    return bool(host) and any(host == h or host.endswith("." + h) for h in named)


@dataclass(frozen=True)
class Rule:
    """A rule's stable id, its most severe level (a finding may report less; docs/scanner.md says when)."""

    id: str
    severity: str
    title: str
    why: str


@dataclass(frozen=True)
class Finding:
    """One match: which rule, how bad here, where (``line`` 1-based, ``None`` for the whole file)."""

    rule: str
    severity: str
    file: str
    line: int | None
    detail: str


# id, severity (the most a finding of the rule reports), title | why: the incident class it answers.
_TABLE = """
LS101 critical bidirectional control character | Trojan Source: text that displays differently from what the agent reads
LS102 critical Unicode tag characters | ASCII smuggling: invisible tag characters spell instructions only the model sees
LS103 critical zero-width characters | invisible characters hide or encode text (a long run of them is a hidden message)
LS105 medium   text that is not valid UTF-8 | a stray byte must not switch the text rules off: read with U+FFFD and said
LS201 critical instruction override | prompt injection: 'ignore previous instructions' and kin, said to the agent
LS202 high     concealment from the user | ToxicSkills: the skill tells the agent to hide what it does from the user
LS203 critical instructions in a hidden HTML comment | hidden when rendered, read by the model: unseen by a reviewer
LS204 high     role hijack | jailbreak phrasing that re-assigns the agent's identity or lifts its limits
LS205 high     exfiltration directive | the skill tells the agent to send secrets somewhere
LS301 critical network content piped to an interpreter | ClawHavoc: 'curl … | bash' runs whatever the host serves
LS302 critical download then execute | a fetched file made executable and run: the same risk as a pipe, one step removed
LS303 high     drop host | webhook, paste and tunnel services are where stolen data and second stages live
LS311 critical fetch then execute (behaviour) | any spelling of running what a host serves
LS312 critical network shell (behaviour) | a reverse or bind shell: a connection that carries a shell or a descriptor
LS313 critical decoded and executed (behaviour) | a payload decoded (base64, hex, rot13, escapes), then run
LS401 critical credential read sent to the network | stealers read SSH keys, cloud keys, wallets, cookies; post them
LS402 medium   credential path | a mention of a secret store: fine in setup docs, worth a look in code
LS411 high     credential read (behaviour) | a command reads SSH keys, cloud or wallet files, browser stores, .env
LS412 critical credential sent out (behaviour) | stealers: a credential read or the environment leaves the machine
LS501 high     large encoded blob | base64 or hex payloads hide code from review
LS502 critical decoded and executed | 'base64 -d | sh', eval(atob(…)), exec(b64decode(…)): a hidden payload run
LS601 high     eval of a computed string | code assembled at run time so no reader sees it
LS602 high     character-code chains | String.fromCharCode / chr() chains spell code one number at a time
LS603 medium   escape soup | long runs of \\x escapes hide strings from review
LS604 medium   very long line in a script | minified or packed code in a script no one can review
LS701 high     symlink | a link can point outside the skill, at a secret or a system file
LS702 medium   executable script | a file marked executable runs as code; review it as code
LS703 critical binary executable | compiled programs (ELF, Mach-O, PE) cannot be reviewed; fake tools ship them
LS704 medium   archive | an archive's contents are not scanned; ClawHavoc shipped payloads in zips
LS705 critical symlink out of the skill | a link out of the skill; critical when it names secrets or system files
LS801 critical allowed-tools widened | MCP rug pull: an update grants tools the approved version never had
LS802 medium   unreadable frontmatter | allowed-tools cannot be compared when the frontmatter does not parse
LS803 high     new executable | an update that adds code to run deserves the review a first install got
LS804 low      new host | an update that talks to a host the approved version never named
LS911 critical persistence (behaviour) | cron, systemd, login items, shell rc, agent hooks: it outlives its run
LS912 critical safety turned off (behaviour) | permission prompts, sandboxes, TLS checks turned off
LS951 critical connection attempted (run) | the sandboxed run tried a host, a port or a DNS name; critical with data
LS952 critical canary credential read (run) | a script opened a planted SSH, cloud, wallet or browser secret
LS953 critical write outside the scratch dir (run) | rc files, crontab, systemd, agent settings: critical
LS954 low      process tree (run) | a shell, an interpreter or a network tool that a script started
LS955 medium   sandbox limit reached (run) | the time or output cap stopped the run: what came after is unseen
"""
RULES: dict[str, Rule] = {
    row[0]: Rule(row[0], row[1], *row[2].split(" | ", 1))
    for row in (line.split(maxsplit=2) for line in _TABLE.strip().splitlines())
}


# --- hidden Unicode ------------------------------------------------------------------

_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_TAGS = re.compile("[\U000e0000-\U000e007f]+")
_ZW = re.compile("[\u200b-\u200d\u2060\ufeff]+")


def _emoji(c: str) -> bool:
    o = ord(c)
    return o >= 0x1F000 or 0x2190 <= o <= 0x2BFF or 0xFE00 <= o <= 0xFE0F or 0x1F1E6 <= o <= 0x1F1FF


def _unicode(f: TextFile) -> Iterator[Finding]:
    text = f.text
    for m in _BIDI.finditer(text):
        line = f.lines[f.line_of(m.start()) - 1]
        mark = m.group() in "\u200e\u200f\u061c"
        severity = "critical" if f.critical_place else "high"
        if mark and _RTL.search(line):
            severity = "low"  # a direction mark inside Arabic or Hebrew prose is what it is for
        yield Finding("LS101", severity, f.path, f.line_of(m.start()), f"U+{ord(m.group()):04X} in text")
    for m in _TAGS.finditer(text):
        before = text[m.start() - 1] if m.start() else ""
        if before == "\U0001f3f4" and m.group().endswith("\U000e007f") and len(m.group()) <= 7:
            continue  # a subdivision flag emoji (England, Scotland, Wales) is spelled with tags
        hidden = "".join(chr(ord(c) - 0xE0000) for c in m.group() if 0x20 <= ord(c) - 0xE0000 < 0x7F)
        severity = "critical" if f.critical_place else "high"
        yield Finding("LS102", severity, f.path, f.line_of(m.start()), detail(f"{len(m.group())} tag chars: {hidden}"))
    for m in _ZW.finditer(text):
        run = m.group()
        if m.start() == 0 and run == "\ufeff":
            continue  # a byte-order mark at the start of the file is not hidden text
        before = text[m.start() - 1] if m.start() else " "
        after = text[m.end()] if m.end() < len(text) else " "
        if len(run) == 1 and run in "\u200c\u200d" and (not before.isascii() or not after.isascii()):
            continue  # joiners inside emoji sequences, Persian and Indic words
        if len(run) == 1 and run == "\u200b" and (_emoji(before) or _emoji(after)):
            continue
        if len(run) >= 16:
            severity = "critical" if f.critical_place else "high"
        elif len(run) >= 8:
            severity = "high"
        else:
            severity = "medium"
        yield Finding(
            "LS103", severity, f.path, f.line_of(m.start()), f"{len(run)} zero-width char(s), U+{ord(run[0]):04X}"
        )


# --- prompt injection ----------------------------------------------------------------

_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|abandon)\s+(?:(?:of|the|your|my|these|those)\s+)?"
    r"(?:all|any|every|prior|previous|above|earlier|preceding|original|safety|system|developer)\s+"
    r"(?:(?:of|the|your|my|prior|previous|above|earlier|preceding|original|safety|system|developer)\s+){0,3}"
    r"(?:instructions?|prompts?|rules|directives|guidelines|guardrails|constraints|context|messages?)\b"
    r"|\bdisregard\s+(?:the\s+|your\s+)?system\s+prompt\b"
    r"|\bnew\s+system\s+prompt\s*:"
    r"|<\|im_start\|>\s*system",
    re.I,
)
_CONCEAL = re.compile(
    r"\b(?:do\s+not|don'?t|never|without)\s+(?:tell(?:ing)?|inform(?:ing)?|notify(?:ing)?|alert(?:ing)?|mention(?:ing)?|reveal(?:ing)?|disclos(?:e|ing)|let(?:ting)?)\s+"
    r"(?:(?:this|it|anything|any\s+of\s+this)\s+(?:to\s+)?)?(?:the\s+)?(?:user|human|operator|owner)\b(?!'s|\s+to\b)"
    r"|\b(?:hide|conceal|keep)\s+(?:this|these\s+steps|it|the\s+(?:command|request|upload))\s+(?:secret\s+|hidden\s+)?from\s+the\s+(?:user|human)\b"
    r"|\bthe\s+user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|find\s+out|be\s+told)\b",
    re.I,
)
_ROLE = re.compile(
    r"\byou\s+are\s+now\s+(?:in\s+)?(?:a\s+|an\s+)?(?:DAN\b|jailbroken|unrestricted|unfiltered|uncensored|developer\s+mode|god\s+mode|no\s+longer\s+bound|free\s+(?:from|of)\s+(?:all\s+|any\s+)?(?:rules|restrictions|limits)|without\s+(?:any\s+)?(?:restrictions|limits|rules|filters))"
    r"|\b(?:act|behave)\s+as\s+(?:if|though)\s+you\s+(?:have|had)\s+no\s+(?:restrictions|rules|limits|guidelines)"
    r"|\bpretend\s+(?:that\s+)?you\s+(?:have\s+no|are\s+not\s+bound\s+by)\s+(?:restrictions|rules|limits|guidelines)",
    re.I,
)
_EXFIL = re.compile(
    r"(?<!could )(?<!might )(?<!can )(?<!may )(?<!would )(?<!attempt to )(?<!try to )\bexfiltrate\b"
    r"|\b(?:send|upload|post|forward|transmit|copy)\s+(?:the\s+|all\s+|any\s+|their\s+|the\s+user'?s\s+)*(?:private\s+keys?|ssh\s+keys?|seed\s+phrases?|mnemonics?|wallet\s+(?:files?|keys?)|credentials?\s+files?|browser\s+cookies|saved\s+passwords)\b[^.\n]{0,60}?\bto\b",
    re.I,
)
_DISCUSS = re.compile(
    r"inject|attack|malicious|adversar|jailbreak|exploit|e\.g\.|such\s+as|for\s+example|phrases?\s+like|red[\s-]?team|"
    r"payload|untrusted|suspicious|beware|watch\s+(?:out\s+)?for|refuse|(?:never|not|n't)\s+(?:follow|obey|comply)|"
    r"threat|defen[cs]e|sanitiz|treat\s.{0,40}\sas\s+data|benchmark|dataset|detect",
    re.I,
)
_QUOTES = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}
_COMMENT = re.compile(r"<!--(.{0,4000}?)-->", re.S)
_AGENT_IMPERATIVE = re.compile(
    r"\b(?:assistant|AI|agent|Claude|model|LLM)\b[,:]?\s+(?:must|should|always|never|will)\b|\byou\s+must\b|\bsilently\b|\bsecretly\b",
    re.I,
)


_PHRASE_WORDS = {
    "LS201": words("ignore disregard forget override bypass abandon system"),
    "LS202": words("user human operator owner"),
    "LS204": words("you pretend"),
    "LS205": words("exfiltrat key seed mnemonic wallet credential cookies password"),
}


def _quoted(line: str, start: int, end: int) -> bool:
    """Whether ``line[start:end]`` sits inside a pair of quotes, backticks or emphasis."""
    for left, right in _QUOTES.items():
        i = line.rfind(left, 0, start)
        if i >= 0 and line.find(right, end) >= 0 and (left != "'" or line.count(left, 0, start) % 2 == 1):
            return True
    return False


def _discussed(f: TextFile, lineno: int, start: int, end: int, near_cache: dict[int, bool] | None = None) -> bool:
    """Text *about* an attack rather than one: in code, next to words that discuss it, or quoted
    outside SKILL.md (in SKILL.md quotes alone are too cheap a disguise).  ``near_cache`` keeps the
    answer for the lines around ``lineno`` (it does not depend on the hit), so a line with thousands
    of hits is searched once, not once per hit."""
    line = f.lines[lineno - 1]
    if f.fenced[lineno - 1] or (not f.instructions and _quoted(line, start, end)):
        return True
    if near_cache is not None and lineno in near_cache:
        return near_cache[lineno]
    near = " ".join(f.lines[max(0, lineno - 2) : lineno + 1])
    found = bool(_DISCUSS.search(near)) or line.lstrip().startswith(("|", ">"))
    if near_cache is not None:
        near_cache[lineno] = found
    return found


def _phrases(f: TextFile) -> Iterator[Finding]:
    hidden = [(m.start(), m.end()) for m in _COMMENT.finditer(f.text)] if f.doc else []
    starts = [a for a, _ in hidden]
    near_cache: dict[int, bool] = {}
    for rule, pattern, bare in (
        ("LS201", _OVERRIDE, "critical"),
        ("LS202", _CONCEAL, "high"),
        ("LS204", _ROLE, "high"),
        ("LS205", _EXFIL, "high"),
    ):
        for m in pattern.finditer(f.text) if f.has(_PHRASE_WORDS[rule]) else ():
            lineno = f.line_of(m.start())
            col = m.start() - f._starts[lineno - 1]
            at = bisect.bisect_right(starts, m.start()) - 1
            in_comment = at >= 0 and m.start() < hidden[at][1]
            if in_comment and not f.fenced[lineno - 1]:
                continue  # reported once, as LS203, below
            severity = "medium" if _discussed(f, lineno, col, col + len(m.group()), near_cache) else bare
            yield Finding(rule, severity, f.path, lineno, detail(m.group()))
    for m in _COMMENT.finditer(f.text) if f.doc else ():
        body = m.group(1)
        lineno = f.line_of(m.start())
        if not any(
            p.search(body) for p in (_OVERRIDE, _CONCEAL, _ROLE, _EXFIL, _AGENT_IMPERATIVE, _PIPE, _DECODE_EXEC)
        ):
            continue
        severity = "medium" if f.fenced[lineno - 1] else "critical"
        yield Finding("LS203", severity, f.path, lineno, detail("<!--" + body))


# --- network execution ---------------------------------------------------------------

_FETCH = r"(?:curl|wget|fetch|http|https|iwr|irm|Invoke-WebRequest|Invoke-RestMethod|aria2c)"
_ARGS = r"(?:[^|\n;&\\]|\\\r?\n|\\.|&&(?=[^|\n]{0,300}\|)){0,600}+"
_SHELL = r"(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+(?:\S+=\S*\s+)*)?(?:/usr/bin/|/bin/)?(?:ba|z|da|k|c|tc|fi|a)?sh\b(?!\s+-c)"
_INTERP = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:python[\d.]*|perl|ruby|node|php|pwsh|powershell|osascript)(?:\s+-)?\s*(?=$|[;&|)`'\"])"
)
_PIPE_BAR = rf"\b{_FETCH}\b{_ARGS}\|\s*(?:{_SHELL}|{_INTERP})|"  # the costly branches need a `|`
_PIPE_BAR += r"\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b[^\n|]{0,200}\|\s*(?:iex|Invoke-Expression)\b|"
_PIPE_NOBAR = re.compile(
    rf"\b(?:ba|z)?sh\s+(?:-s\s+)?<\(\s*{_FETCH}\b"
    rf"|(?:\bsource|(?:^|[;&|]\s*)\.)\s+<\(\s*{_FETCH}\b"
    rf"|\b(?:ba|z)?sh\s+-c\s+[\"']?(?:\$\(|`)\s*{_FETCH}\b"
    rf"|\beval\s+[\"']?(?:\$\(|`)\s*{_FETCH}\b"
    r"|\b(?:iex|Invoke-Expression)\b[^\n]{0,80}\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod|DownloadString|Net\.WebClient)\b"
    r"|\b(?:exec|eval)\s*\(\s*(?:requests|httpx|urllib\.request|urllib2|urlopen)\b[^\n]{0,120}(?:\.text|\.content|\.read\(\))"
    r"|\b(?:eval|new\s+Function)\s*\(\s*await\s+\(?\s*(?:await\s+)?fetch\(",
    re.I | re.M,
)
_PIPE = re.compile(_PIPE_BAR + _PIPE_NOBAR.pattern, re.I | re.M)
_DOWNLOAD_RUN = re.compile(
    rf"\b{_FETCH}\b(?>[^\n]{{0,300}}?(?:\s-o\s*|\s-O\s*|--output[ =]|-outfile\s+))(\S{{1,300}}+)[^\n&;]{{0,300}}+"
    r"(?:&&|;)\s*(?:chmod\s+\+?[0-7]*x[^\n]{0,300}?(?:&&|;)\s*)?(?:sudo\s+)?"
    r"(?:\./|/tmp/|(?:ba)?sh\s+|python3?\s+|open\s+-a|\S*\1\b)",
    re.I,
)
DROP_HOSTS = words(
    "webhook.site requestbin pipedream.net ngrok pastebin.com hastebin glot.io paste.ee 0x0.st "
    "transfer.sh file.io interact.sh oast. burpcollaborator discord.com/api/webhooks "
    "discordapp.com/api/webhooks api.telegram.org/bot trycloudflare.com serveo.net localtunnel "
)


_IP_HOST = re.compile(r"^(?:\d{1,3}\.){3}\d{1,3}$|^\[[0-9a-f:]+\]$", re.I)
_AGGRAVATED = re.compile(
    r"\b(?:http|ftp)://|\s(?:-k|--insecure|--no-check-certificate)\b|base64|base32|\\x[0-9a-f]{2}|\$\(\s*echo\b|xxd\s+-r"
    r"|>\s*/dev/null|2>&1|\bnohup\b|\bdisown\b|\bsetsid\b|&\s*$",
    re.I,
)
_WARNED = re.compile(
    r"inject|attack|malicious|never\s+run|do\s+not\s+run|don'?t\s+run|dangerous|block|suspicious|detect|red\s+flag",
    re.I,
)


def _quoted_as_example(f: TextFile, lineno: int) -> bool:
    """Whether line ``lineno`` sits in a fenced block that a warning or a discussion introduces: the
    three lines before the fence, or the heading of its section, warn against it or discuss it."""
    start = lineno - 1
    if not f.fenced[start]:
        return False
    while start > 0 and f.fenced[start - 1]:
        start -= 1
    near = " ".join(f.lines[max(0, start - 3) : start])
    heading = next((ln for ln in reversed(f.lines[:start]) if ln.startswith("#")), "")
    return any(p.search(near) or p.search(heading) for p in (_WARNED, _DISCUSS))


def _pipe_severity(f: TextFile, m: re.Match[str]) -> str:
    """How bad a pipe from the network is here.

    Critical where nothing vouches for it: in code that runs unread, over plain HTTP, from
    an IP address or a drop host, obfuscated, hidden from the terminal, or with TLS checks
    off.  A TLS installer from a named host, in documentation, is how vendors ship their
    CLIs, and text cannot tell it from a fake one (docs/scanner.md): high in SKILL.md,
    medium in reference docs, and medium where the text warns against it.  A reference document
    that quotes an attack in a fenced block under a warning or a discussion is high at most.
    """
    lineno = f.line_of(m.start())
    line = f.lines[lineno - 1]
    names = hosts(m.group())
    severity = _pipe_unvouched(f, m, lineno, line, names) or ("high" if f.instructions else "medium")
    if severity == "critical" and f.doc and not f.instructions and _quoted_as_example(f, lineno):
        return "high"  # a reference document showing the attack under a warning: high at most
    return severity


def _pipe_unvouched(f: TextFile, m: re.Match[str], lineno: int, line: str, names: list[str]) -> str:
    """``critical`` when nothing vouches for the pipe, ``medium`` when the text warns against it,
    "" when neither (a TLS installer of a named host)."""
    if f.script or _AGGRAVATED.search(m.group()) or _AGGRAVATED.search(line[m.end() - f._starts[lineno - 1] :]):
        return "critical"
    if any(_IP_HOST.match(h) for h in names) or any(d in m.group().lower() for d in DROP_HOSTS):
        return "critical"
    if _WARNED.search(" ".join(f.lines[max(0, lineno - 2) : lineno])) or line.lstrip().startswith("|") or not names:
        return "medium"
    return ""


_FETCH_WORDS = words(
    "curl wget fetch http iwr irm invoke- aria2c downloadstring webclient requests httpx urllib urlopen"
)


_PIPE_TOKENS = ("<(", "-c", "eval", "iex", "invoke-expression", "exec", "function")  # one in each _PIPE_NOBAR branch
_RUN_TOKENS = ("-o", "--output", "-outfile")  # one in _DOWNLOAD_RUN (lower case: -O is -o)


def _network(f: TextFile) -> Iterator[Finding]:
    for start, end in f.spans(_FETCH_WORDS):  # every pipe and download names its fetcher on its line
        # each pattern tries a bounded window after every fetcher: a line of 28,000 fetchers costs
        # seconds, so a line without a token every alternative needs is not searched (exact, linear)
        low = f.text[start:end].lower()
        pipe = _PIPE if "|" in low else _PIPE_NOBAR if any(t in low for t in _PIPE_TOKENS) else None
        for m in pipe.finditer(f.text, start, end) if pipe else ():
            yield Finding("LS301", _pipe_severity(f, m), f.path, f.line_of(m.start()), detail(m.group()))
        for m in _DOWNLOAD_RUN.finditer(f.text, start, end) if any(t in low for t in _RUN_TOKENS) else ():
            yield Finding("LS302", _pipe_severity(f, m), f.path, f.line_of(m.start()), detail(m.group()))
    for m in URL.finditer(f.text):
        url = f.text[m.start() : m.start() + 200].split()[0].lower()
        hit = next((d for d in DROP_HOSTS if d in url.split("://", 1)[-1].split("?")[0][:120]), None)
        if hit:
            severity = "medium" if f.doc else "high"  # docs name tunnels to explain them; code posts to them
            yield Finding("LS303", severity, f.path, f.line_of(m.start()), detail(f"drop host {hit}: {url}"))


# --- credentials ---------------------------------------------------------------------

_CRED = re.compile(
    r"(?:~|\$HOME|\$\{HOME\}|%USERPROFILE%|/home/\w+|/Users/\w+|expanduser\(\s*['\"]~)/?\.ssh(?!/(?:config|known_hosts|authorized_keys)\b|/[\w.-]+\.pub\b)(?:/[\w.-]*)?"
    r"|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)"
    r"|\.aws/credentials|\.config/gcloud|\.kube/config|\.docker/config\.json|\.git-credentials|\.netrc\b|\.npmrc\b|\.pypirc\b|\.gnupg\b"
    r"|\bwallet\.dat\b|\.ethereum/keystore|\.electrum\b|Application\s+Support/(?:Exodus|atomic|Electrum)|\bsolana/id\.json|\.config/solana\b"
    r"|nkbihfbeogaeaoehlefnkodbefgpgknn|\bLogin\s+Data\b|\bcookies\.sqlite\b|\bkey4\.db\b|\blogins\.json\b|(?:Chrome|Chromium|Brave|Edge)[\w\s/-]{0,60}/Cookies\b"
    r"|\blogin\.keychain|\bsecurity\s+(?:dump-keychain|find-generic-password)",
    re.I,
)
_CRED_WORDS = words(
    ".ssh id_rsa id_dsa id_ecdsa id_ed25519 .aws/ gcloud .kube/ .docker/ git-credentials .netrc .npmrc .pypirc "
    ".gnupg wallet.dat .ethereum electrum exodus atomic solana nkbihfbeogaeaoehlefnkodbefgpgknn login cookies "
    "key4.db logins.json keychain dump-keychain find-generic-password"
)
_DOTENV = re.compile(r"(?:^|[\s'\"/=(`])(\.env(?:\.local|\.production|\.prod)?)(?![\w.-])", re.M)
_SEND = re.compile(
    r"\bcurl\b[^\n]{0,400}(?:\s-d\b|--data|\s-F\b|--form|\s-T\b|--upload-file|-X\s*POST)|\bwget\b[^\n]{0,400}--post-(?:file|data)"
    r"|\brequests\.(?:post|put)\s*\(|\bhttpx\.(?:post|put)\s*\(|\burlopen\s*\([^)]{0,400}data=|\bfetch\s*\([^)]{0,400}method\s*:\s*['\"](?:POST|PUT)"
    r"|\b(?:nc|ncat|netcat)\s+[\w.-]+\s+\d+|\bInvoke-(?:WebRequest|RestMethod)\b[^\n]{0,400}-Method\s+(?:Post|Put)|\bscp\s+[^\n]{0,400}\s[\w.-]+@[\w.-]+:"
    r"|\baxios\.post\s*\(|XMLHttpRequest|\bsocket\.(?:send|sendall)\(",
    re.I,
)
# one of these is in every _SEND branch (lower case): a file without any is not searched
_SEND_WORDS = (
    "-d",
    "--data",
    "-f",
    "--form",
    "-t",
    "--upload-file",
    "post",
    "put",
    "data=",
    "nc",
    "netcat",
    "scp",
    "xmlhttprequest",
    "socket.send",
)
_ENV_DUMP = re.compile(
    r"\b(?:env|printenv)\b\s*\|\s*(?:curl|nc|wget)\b|\bcurl\b[^\n]{0,400}\$\(\s*(?:env|printenv)\s*\)|json\.dumps\(\s*dict\(\s*os\.environ",
    re.I,
)


def _credentials(f: TextFile) -> Iterator[Finding]:
    if f.has(("printenv", "os.environ")) or (f.has(("env",)) and f.has(("curl", "wget", "nc "))):
        for m in _ENV_DUMP.finditer(f.text):
            yield Finding("LS401", "critical", f.path, f.line_of(m.start()), detail("environment sent: " + m.group()))
    matches = [(m, "") for m in _CRED.finditer(f.text)] if f.has(_CRED_WORDS) else []
    matches += [(m, "dotenv") for m in _DOTENV.finditer(f.text)] if f.has((".env",)) else []
    if not matches:
        return
    sends = sorted({f.line_of(m.start()) for m in _SEND.finditer(f.text)}) if f.has(_SEND_WORDS) else []
    on_line = set(sends)
    seen: set[int] = set()
    for m, kind in sorted(matches, key=lambda x: x[0].start()):
        lineno = f.line_of(m.start())
        if lineno in seen:
            continue
        seen.add(lineno)
        shown = m.group(1) if kind else m.group()
        near: int | None = None
        if lineno in on_line:  # read and sent in one command: the flow is on the line
            near = lineno
        elif kind:  # a .env file is loaded by every API client; only its contents piped out count
            pass
        elif not f.doc:  # a script reads what it names
            near = sends[0] if sends else None
        elif f.fenced[lineno - 1]:  # a document: a send on a code line a few lines away
            i = bisect.bisect_left(sends, lineno - NEAR)
            close = [s for s in sends[i : i + 2 * NEAR + 1] if abs(s - lineno) <= NEAR and f.fenced[s - 1]]
            near = close[0] if close else None
        where = sorted(hosts(f.lines[near - 1])) if near else []
        if where and all(issued_by(shown, h) for h in where):  # sent back to its issuer: used, not stolen
            yield Finding("LS402", "medium", f.path, lineno, detail(shown))
        elif near:
            where = where or ["?"]
            yield Finding("LS401", "critical", f.path, lineno, detail(f"{shown} read, sent to {where[0]}"))
        elif not kind:
            yield Finding("LS402", "medium", f.path, lineno, detail(shown))


# --- encoded payloads and obfuscation ------------------------------------------------

_B64 = re.compile(rf"[A-Za-z0-9+/]{{{BLOB_MIN},}}={{0,2}}|[A-Za-z0-9_-]{{{BLOB_MIN},}}")
_HEX = re.compile(rf"(?:[0-9a-fA-F]{{2}}){{{BLOB_MIN // 2},}}")
_DATA_URI = re.compile(
    r"data:(?:image|font|audio|video)/[\w.+-]+;base64,$|(?:ssh-rsa|ssh-dss|ecdsa-sha2-\S+)\s+$", re.I
)
_DECODE_EXEC = re.compile(
    r"\bbase(?:64|32)\s+(?:-\w+\s+)*(?:-d|--decode|-D)\b[^\n|]{0,300}\|\s*(?:sudo\s+)?(?:(?:ba|z|da)?sh|python[\d.]*|perl|ruby|node)\b"
    r"|\b(?:eval|new\s+Function|setTimeout)\s*\(\s*(?:atob|unescape|decodeURIComponent|String\.fromCharCode)\s*\("
    r"|\b(?:eval|new\s+Function)\s*\(\s*Buffer\.from\([^)]{0,4000}['\"](?:base64|hex)['\"]"
    r"|\b(?:exec|eval)\s*\(\s*(?:(?:__import__\(\s*['\"](?:base64|codecs|zlib|marshal)['\"]\s*\)|base64|codecs|zlib|marshal|bytes)\.(?:b64decode|b32decode|b85decode|a85decode|decode|decompress|loads|fromhex))"
    r"|\bexec\s*\(\s*(?:bytes\.fromhex|bytearray\.fromhex|zlib\.decompress|marshal\.loads)"
    r"|\bpowershell(?:\.exe)?\b[^\n]{0,300}\s-e(?:nc|ncodedcommand)?\s+[A-Za-z0-9+/=]{16,}"
    r"|\beval\s+[\"']?\$\(\s*(?:echo|printf)\b[^)]{0,4000}\|\s*base64\s+(?:-d|--decode|-D)",
    re.I,
)
_EVAL_COMPUTED = re.compile(
    r"\b(?:exec|eval)\s*\(\s*(?![\"'][^\"'\n]{0,400}[\"']\s*\))[^)\n]{0,400}(?:\+|['\"]{2}\.join\(|chr\(|\[::-1\]|\.decode\(|getattr\(|%\s*\(|\.format\()"
    r"|\bgetattr\s*\(\s*__builtins__|\b__import__\s*\(\s*['\"]\w+['\"]\s*\[::-1\]"
    r"|\bnew\s+Function\s*\([^)\n]{0,400}\+"
)
_CHARCODES = re.compile(
    r"String\.fromCharCode\s*\(\s*\d+(?:\s*,\s*\d+){7,}|(?:\bchr\(\s*\d+\s*\)\s*\+\s*){6,}|(?:\[\s*\d+(?:\s*,\s*\d+){15,}\s*\]\s*\.map\(\s*\w+\s*=>\s*String\.fromCharCode)"
)
_ESCAPES = re.compile(rf"(?:\\x[0-9a-fA-F]{{2}}|\\u[0-9a-fA-F]{{4}}|\\[0-7]{{3}}){{{ESCAPE_RUN},}}")


def _encoded(f: TextFile) -> Iterator[Finding]:
    for m in _DECODE_EXEC.finditer(f.text):
        yield Finding("LS502", "critical", f.path, f.line_of(m.start()), detail(m.group()))
    blobs = sorted([*_B64.finditer(f.text), *_HEX.finditer(f.text)], key=lambda m: m.start())
    end = -1
    for m in blobs:
        if m.start() < end:
            continue
        end = m.end()
        run = m.group()
        if not (re.search(r"\d", run) and re.search(r"[A-Za-z]", run)):
            continue  # a run of one character class is padding or a ruler, not a payload
        if _DATA_URI.search(f.text[max(0, m.start() - 60) : m.start()]):
            yield Finding("LS501", "low", f.path, f.line_of(m.start()), f"inline media or public key, {len(run)} chars")
            continue
        yield Finding("LS501", "high", f.path, f.line_of(m.start()), detail(f"{len(run)} encoded chars: {run[:24]}"))
    if not f.script:
        return
    for m in _EVAL_COMPUTED.finditer(f.text):
        yield Finding("LS601", "high", f.path, f.line_of(m.start()), detail(m.group()))
    for m in _CHARCODES.finditer(f.text):
        yield Finding("LS602", "high", f.path, f.line_of(m.start()), detail(m.group()))
    for m in _ESCAPES.finditer(f.text):
        count = len(re.findall(r"\\", m.group()))
        severity = "high" if count >= 2 * ESCAPE_RUN else "medium"
        yield Finding("LS603", severity, f.path, f.line_of(m.start()), f"{count} escapes in a row")
    for i, line in enumerate(f.lines, 1):
        if len(line) > LONG_LINE:
            yield Finding("LS604", "medium", f.path, i, f"{len(line)} characters on one line")


def check_text(path: str, text: str, executable: bool) -> list[Finding]:
    """Every text rule's findings for one decoded file (a byte-order mark at offset 0 is not one)."""
    f = TextFile(path, text, executable)
    out: list[Finding] = []
    for check in (_unicode, _phrases, _network, _credentials, _encoded):
        out.extend(check(f))
    return out
