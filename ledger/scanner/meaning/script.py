"""The other languages a skill ships: JavaScript (``node -e``), PowerShell (``-enc``), Ruby, Perl, PHP.

The standard library parses none of them, so a unit is normalised first (:func:`normalise`):
string concatenation joined (``'ev'+'al'``, ``"ba"."sh"``), PowerShell's backtick escapes and
``[char]`` codes resolved, home directories (``os.homedir()``, ``$env:USERPROFILE``, ``Dir.home``,
``getenv('HOME')``) written ``~``.  Behaviours are then matched on the normalised text, per
language; a command handed to a shell (``child_process.exec``, ``system``, backticks) goes to the
shell analyser, and a payload decoded from a literal (``Buffer.from(x,'base64')``, ``atob``,
``base64_decode``, ``-EncodedCommand``) is judged again in its own language.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ledger.scanner.meaning import places
from ledger.scanner.meaning.decode import b64, decodings
from ledger.scanner.meaning.python import severity
from ledger.scanner.meaning.units import Unit, finding
from ledger.scanner.meaning.units import analyse as analyse_unit
from ledger.scanner.rules import Finding

__all__ = ["LANGS", "analyse", "normalise"]

LANGS = ("js", "powershell", "ruby", "perl", "php")
MAX_TEXT = 512 * 1024  # characters read of one unit
NEAR = 400  # characters: a fetch this close to an eval is one statement's work

_CONCAT = re.compile(r"""(['"])([^'"\n\\]{0,200})\1\s*(?:\+|\.(?!\w))\s*(['"])([^'"\n\\]{0,200})\3""")
_PSCHAR = re.compile(r"\[char\]\s*(\d{1,3})", re.I)
_HOME = re.compile(
    r"os\.homedir\(\)|process\.env\.(?:HOME|USERPROFILE)|process\.env\[['\"](?:HOME|USERPROFILE)['\"]\]"
    r"|\$env:(?:USERPROFILE|HOME)|\$HOME\b|\$\{HOME\}|~|Dir\.home|ENV\[['\"]HOME['\"]\]|\$ENV\{['\"]?HOME['\"]?\}"
    r"|getenv\(\s*['\"](?:HOME|USERPROFILE)['\"]\s*\)|\$_SERVER\[['\"]HOME['\"]\]|File\.expand_path\(['\"]~['\"]\)",
    re.I,
)
_LIT = re.compile(r"""(['"`])((?:(?!\1)[^\\\n]|\\.){1,400})\1""")


def normalise(text: str, lang: str) -> str:
    """``text`` with literal concatenation joined, PowerShell escapes and ``[char]`` codes resolved,
    home directories written ``~``.  Linear in the text (each pass is one regex sweep, passes capped)."""
    t = text[:MAX_TEXT]
    if lang == "powershell":
        t = re.sub(r"`(?=[A-Za-z])(?![ntr0abfv]\b)", "", t)  # I`E`X -> IEX (escapes like `n kept)
        t = _PSCHAR.sub(lambda m: f"'{chr(int(m.group(1)) & 0x7F)}'", t)
    for _ in range(8):
        new = _CONCAT.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(4)}{m.group(1)}", t)
        if new == t:
            break
        t = new
    t = re.sub(r"""(['"])~\1""", "~", t)
    return _HOME.sub("~", t)


def analyse(unit: Unit) -> list[Finding]:
    """The behaviour findings of one unit of JavaScript, PowerShell, Ruby, Perl or PHP."""
    if not unit.text.strip():
        return []
    text = normalise(unit.text, unit.lang)
    judge = {"js": _js, "powershell": _powershell}.get(unit.lang, _rpp)
    out = list(judge(unit, text))
    out.extend(_common(unit, text))
    return out


# --- shared ---------------------------------------------------------------------------------


def _line(unit: Unit, text: str, pos: int) -> int:
    return unit.line + text.count("\n", 0, pos)


def _snip(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else None].strip()


def _f(unit: Unit, text: str, rule: str, top: str, pos: int, what: str) -> Finding:
    evidence = f"{what}: {_snip(text, pos)}" if what else _snip(text, pos)
    return finding(rule, severity(unit, top), unit.path, _line(unit, text, pos), evidence)


def _near(a: re.Pattern[str], b: re.Pattern[str], text: str) -> re.Match[str] | None:
    """A match of ``b`` within :data:`NEAR` characters of a match of ``a``."""
    for m in a.finditer(text):
        lo, hi = max(0, m.start() - NEAR), m.end() + NEAR
        hit = b.search(text, lo, hi)
        if hit:
            return hit
    return None


def _vouched(unit: Unit, segment: str) -> bool:
    """An HTTPS installer from a vendor's own origin, in a document or SKILL.md (not a script), unaggravated."""
    if unit.where == "script" or not segment:
        return False
    urls = re.findall(r"https?://[^\s'\"|)]+", segment)
    return (
        bool(urls)
        and all(places.vendor(u) for u in urls)
        and not re.search(r"-SkipCertificateCheck|\d{1,3}(?:\.\d{1,3}){3}", segment)
    )


def _credential_literals(text: str) -> Iterator[tuple[int, str, str]]:
    """(position, label, path) of each credential path the literals of a line spell, alone or joined
    (``path.join(os.homedir(), '.ssh', 'id_rsa')``)."""
    for lm in re.finditer(r"[^\n]+", text):
        line = lm.group()
        if not re.search(
            r"ssh|aws|gcloud|azure|kube|docker|netrc|npmrc|pypirc|credentials|gnupg|wallet|keystore|"
            r"Login Data|Cookies|Local State|key4|logins|Keychain|Exodus|Electrum|solana|tdata|shadow|"
            r"\.env|nkbih",
            line,
            re.I,
        ):
            continue
        lits = [m.group(2) for m in _LIT.finditer(line)]
        if "~" in line:
            lits = ["~", *lits]
        found = None
        for i in range(len(lits)):
            for j in range(i + 1, min(len(lits), i + 5) + 1):
                path = "/".join(x.strip("/\\") if k else x.rstrip("/\\") for k, x in enumerate(lits[i:j]))
                label = places.credential(path) or places.credential(lits[j - 1])
                if label:
                    found = (lm.start(), label, path)
                    break
            if found:
                break
        if not found:
            m = re.search(r"[~/][^\s'\"`;,)]*", line)
            label = places.credential(m.group()) if m else None
            if m and label:
                found = (lm.start(), label, m.group())
        if found:
            yield found


def _creds(
    unit: Unit, text: str, reads: re.Pattern[str], sends: re.Pattern[str], env: re.Pattern[str]
) -> Iterator[Finding]:
    send = sends.search(text)
    strong = None
    weak = None
    if reads.search(text):
        for pos, label, path in _credential_literals(text):
            if label == "env file":
                weak = weak or (pos, label, path)
            else:
                strong = (pos, label, path)
                break
    dump = env.search(text)
    if strong and send:
        yield _f(unit, text, "LS412", "critical", strong[0], f"{strong[1]} read, sent out by {send.group().strip()}")
    elif dump and send:
        yield _f(unit, text, "LS412", "critical", dump.start(), "the environment sent out")
    if strong:
        yield _f(unit, text, "LS411", "high", strong[0], f"{strong[1]} read")
    elif weak:
        yield _f(unit, text, "LS411", "medium", weak[0], f"{weak[1]} read")


def _persistence(unit: Unit, text: str, writes: re.Pattern[str]) -> Iterator[Finding]:
    for m in writes.finditer(text):
        window = text[m.start() : m.end() + 300]
        for lit in [x.group(2) for x in _LIT.finditer(window)] + re.findall(r"[~/][^\s'\"`;,)]+", window)[:4]:
            label = places.persistence(lit)
            if label:
                top = "high" if unit.where == "document" else "critical"
                yield _f(unit, text, "LS911", top, m.start(), f"writes {label}")
                return


def _commands(unit: Unit, text: str, pattern: re.Pattern[str]) -> Iterator[Finding]:
    """A literal command handed to a shell: judged by the shell analyser."""
    seen: set[str] = set()
    for m in pattern.finditer(text):
        cmd = m.group("cmd")
        if not cmd or cmd in seen or len(seen) >= 32:
            continue
        seen.add(cmd)
        yield from analyse_unit(unit.inner("sh", cmd, line_offset=text.count("\n", 0, m.start())))


_B64_SITE = re.compile(
    r"""(?:Buffer\.from|atob|base64_decode|Base64\.(?:decode64|strict_decode64|urlsafe_decode64)|decode_base64|"""
    r"""MIME::Base64::decode|unpack\(\s*['"]m0?['"]\s*,|FromBase64String|\.unpack1?\(\s*['"]m0?['"]\s*\))"""
    r"""\s*\(?\s*(['"])([A-Za-z0-9+/=_\-\s]{8,})\1""",
    re.I,
)
_HEX_SITE = re.compile(r"""(?:pack\(\s*['"]H\*['"]\s*,|hex2bin\(|Buffer\.from)\s*\(?\s*(['"])([0-9a-fA-F]{8,})\1""")


def _decoded(unit: Unit, text: str, sink: re.Pattern[str]) -> Iterator[Finding]:
    """Literals decoded in the code: each payload judged again in this language and as a shell
    command; decoding straight into a code sink is LS313."""
    done = 0
    for site, is_hex in [(m, False) for m in _B64_SITE.finditer(text)] + [(m, True) for m in _HEX_SITE.finditer(text)]:
        if done >= 16:
            break
        raw = site.group(2)
        if is_hex:
            try:
                payload = bytes.fromhex(raw).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                continue
        else:
            payload = b64(re.sub(r"\s", "", raw)) or ""
        if not payload or not all(c.isprintable() or c in "\r\n\t" for c in payload):
            continue
        done += 1
        before = text[max(0, site.start() - 120) : site.start()]
        if sink.search(before) or sink.search(text[site.end() : site.end() + 40]):
            yield _f(unit, text, "LS313", "critical", site.start(), "")
        offset = text.count("\n", 0, site.start())
        yield from analyse_unit(unit.inner(unit.lang, payload, line_offset=offset, context="decoded"))


def _common(unit: Unit, text: str) -> Iterator[Finding]:
    for m in re.finditer(r"--dangerously-skip-permissions|bypassPermissions|dangerouslySkipPermissions", text):
        before = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
        if re.search(
            r"(?:includes|indexOf|match|test|contains|Contains|search|=~|-match|-like|==|!=|===|!==|===?)\s*\(?\s*['\"]?$"
            r"|^\s*(?://|#|\*|<#)|\becho\b|\bprint|console\.\w+\(|Write-(?:Host|Output|Warning)",
            before,
        ):
            continue  # looked for, compared or printed: a check, not the bypass
        yield _f(unit, text, "LS912", "critical", m.start(), "")
        break


# --- JavaScript ----------------------------------------------------------------------------

_JS_FETCH = re.compile(
    r"\bfetch\s*\(|\baxios(?:\.get)?\s*\(|\bhttps?\.get\s*\(|\bhttps?\.request\s*\(|\bgot\s*\(|"
    r"require\(\s*['\"]https?['\"]\s*\)\.get|\.(?:get|request)\s*\(\s*['\"`]https?:|\bXMLHttpRequest\b|\bnet\.connect|\.recv\b|\bundici\b"
)
_JS_EXEC = re.compile(
    r"\beval\s*\(|\bnew\s+Function\s*\(|\bFunction\s*\(|\bvm\.run\w*\s*\(|runInNewContext|"
    r"\bimport\s*\(\s*['\"]data:|\bexecSync\s*\(|\bexec\s*\(|\bspawn\w*\s*\(|\bexecFile\w*\s*\("
)
_JS_CODE_SINK = re.compile(
    r"\beval\s*\(|\bnew\s+Function\s*\(|\bFunction\s*\(|\bvm\.run\w*\s*\(|\bexec\w*\s*\(|\bspawn\w*\s*\("
)
_JS_CMD = re.compile(
    r"""\b(?:exec|execSync|spawnSync|spawn|execFile|execFileSync)\s*\(\s*(['"`])(?P<cmd>(?:(?!\1)[^\\]|\\.){1,2000})\1"""
)
_JS_SPAWN_C = re.compile(
    r"""\bspawn(?:Sync)?\s*\(\s*['"](?:/bin/)?(?:ba|z|da)?sh['"]\s*,\s*\[\s*['"]-l?c['"]\s*,\s*(['"`])(?P<cmd>(?:(?!\1)[^\\]|\\.){1,2000})\1"""
)
_JS_SOCK = re.compile(r"\bnet\.(?:connect|createConnection)\s*\(|new\s+net\.Socket\s*\(|\.connect\s*\(\s*\d{2,5}\s*,")
_JS_SHELL = re.compile(
    r"""\bspawn\s*\(\s*['"](?:/bin/)?(?:ba|z|da)?sh['"]|\bspawn\s*\(\s*['"]cmd(?:\.exe)?['"]|"""
    r"""child_process['"]\)\.spawn\(\s*['"](?:/bin/)?(?:ba)?sh"""
)
_JS_READ = re.compile(r"readFileSync|readFile\s*\(|createReadStream|fs\.promises\.readFile|readdirSync|Bun\.file")
_JS_SEND = re.compile(
    r"method\s*:\s*['\"](?:POST|PUT|PATCH)['\"]|\baxios\.(?:post|put|patch)\s*\(|\.write\s*\(|"
    r"https?\.request\s*\(|\bsendBeacon\s*\(|\.send\s*\(|nodemailer|\bFormData\b",
    re.I,
)
_JS_ENV = re.compile(
    r"JSON\.stringify\s*\(\s*process\.env\s*\)|Object\.(?:entries|keys)\s*\(\s*process\.env\s*\)|"
    r"\{\s*\.\.\.process\.env\s*\}"
)
_JS_WRITE = re.compile(r"\b(?:writeFileSync|appendFileSync|writeFile|appendFile|createWriteStream|copyFileSync)\s*\(")
_JS_DOWNLOAD = re.compile(
    r"\.pipe\s*\(\s*fs\.createWriteStream|createWriteStream[^\n]{0,200}\.pipe|"
    r"writeFileSync\s*\([^)]{0,200}(?:await\s+\w+\.(?:arrayBuffer|buffer|text)|\.data\b|body)"
)
_JS_RUNFILE = re.compile(r"\bchmodSync\s*\(|\bchmod\s*\(|\bexecFile\w*\s*\(|\bspawn\w*\s*\(|\bexec\w*\s*\(")


def _js(unit: Unit, text: str) -> Iterator[Finding]:
    hit = _near(_JS_FETCH, _JS_EXEC, text)
    if hit and not _vouched(unit, _snip(text, hit.start())):
        variable = re.match(
            r"(?:exec|execSync|spawn\w*|execFile\w*)\s*\(\s*[A-Za-z_$][\w$.]*\s*[,)]",
            hit.group() + text[hit.end() : hit.end() + 80],
        )
        piped = variable or re.search(
            r"\.pipe\s*\(\s*(?:\w+\.)?stdin|\.pipe\s*\([^;]{0,160}?(?:spawn|exec)\w*\s*\(|\beval\s*\(|Function\s*\(|vm\.run",
            text[max(0, hit.start() - NEAR) : hit.end() + NEAR],
        )
        download = _JS_DOWNLOAD.search(text)
        if piped or (download and _JS_RUNFILE.search(text, download.end())):
            yield _f(unit, text, "LS311", "critical", hit.start(), "")
    elif _JS_DOWNLOAD.search(text) and _JS_FETCH.search(text):
        d = _JS_DOWNLOAD.search(text)
        assert d is not None
        if re.search(r"chmod", text[d.end() :]) and _JS_RUNFILE.search(text, d.end()):
            yield _f(unit, text, "LS311", "critical", d.start(), "downloads a file, then runs it")
    if _JS_SOCK.search(text) and (_JS_SHELL.search(text) or re.search(r"\.pipe\s*\(\s*\w+\.stdin", text)):
        s = _JS_SOCK.search(text)
        assert s is not None
        yield _f(unit, text, "LS312", "critical", s.start(), "")
    yield from _creds(unit, text, _JS_READ, _JS_SEND, _JS_ENV)
    yield from _persistence(unit, text, _JS_WRITE)
    m = re.search(r"rejectUnauthorized\s*:\s*false|NODE_TLS_REJECT_UNAUTHORIZED['\"]?\s*\]?\s*=\s*['\"]?0", text)
    if m:
        yield _f(unit, text, "LS912", "high", m.start(), "TLS verification off")
    yield from _decoded(unit, text, _JS_CODE_SINK)
    yield from _commands(unit, text, _JS_SPAWN_C)
    yield from _commands(unit, text, _JS_CMD)


# --- PowerShell ----------------------------------------------------------------------------

_PS_ENC = re.compile(
    r"(?:^|[\s'\"(,])[-/](?:e|ec|en|enc|enco|encod|encode|encoded|encodedc\w*|EncodedCommand)\s+['\"]?([A-Za-z0-9+/=]{8,})",
    re.I,
)
_PS_FETCH = re.compile(
    r"DownloadString|DownloadData|DownloadFile|\b(?:iwr|irm|curl|wget)\b|Invoke-WebRequest|"
    r"Invoke-RestMethod|Net\.WebClient|Start-BitsTransfer|Net\.Http\.HttpClient|GetStringAsync",
    re.I,
)
_PS_IEX = re.compile(
    r"\b(?:iex|Invoke-Expression)\b|\|\s*&\s*\(|\[ScriptBlock\]::Create|\.Invoke\(\)|&\s*\(\s*\[scriptblock\]", re.I
)
_PS_OUT = re.compile(
    r"(?:-OutFile|DownloadFile\s*\(\s*['\"][^'\"]+['\"]\s*,|Start-BitsTransfer[^\n]*-Destination)\s*['\"]?([^'\"\s)]+)",
    re.I,
)
_PS_RUN = re.compile(r"Start-Process|\bsaps\b|&\s*['\"$]|\bInvoke-Item\b|cmd(?:\.exe)?\s+/c|\.\\\w+\.exe", re.I)
_PS_SOCK = re.compile(r"Net\.Sockets\.TCPClient|Net\.Sockets\.Socket|TcpClient\s*\(", re.I)
_PS_PERSIST = re.compile(
    r"Register-ScheduledTask|New-ScheduledTask|schtasks(?:\.exe)?\s+/create|"
    r"CurrentVersion\\+Run(?:Once)?\b|Start Menu\\+Programs\\+Startup|New-Service\b|"
    r"Register-WmiEvent|__EventFilter",
    re.I,
)
_PS_AV = re.compile(
    r"Set-MpPreference\s+[^\n]*-Disable\w+|Add-MpPreference\s+[^\n]*-Exclusion\w+|"
    r"Set-MpPreference\s+[^\n]*-ExclusionPath|Stop-Service\s+[^\n]*WinDefend|"
    r"\[System\.Net\.ServicePointManager\]::ServerCertificateValidationCallback\s*=\s*\{\s*\$true",
    re.I,
)
_PS_READ = re.compile(
    r"Get-Content|\bgc\b|\bcat\b|ReadAllText|ReadAllBytes|Copy-Item|Compress-Archive|Get-ChildItem", re.I
)
_PS_SEND = re.compile(
    r"-Method\s+['\"]?(?:Post|Put)|UploadString|UploadFile|UploadData|-Body\b|Send-MailMessage|"
    r"\.Write\s*\(|PostAsync",
    re.I,
)
_PS_ENV = re.compile(r"Get-ChildItem\s+env:|\bgci\s+env:|\bls\s+env:|\[Environment\]::GetEnvironmentVariables", re.I)


def _powershell(unit: Unit, text: str) -> Iterator[Finding]:
    for m in _PS_ENC.finditer(text):
        payload = b64(m.group(1))
        if not payload:
            continue
        runs = bool(
            _PS_FETCH.search(payload)
            or _PS_IEX.search(payload)
            or _PS_SOCK.search(payload)
            or re.search(r"Start-Process|Invoke-|Add-MpPreference|Set-MpPreference", payload, re.I)
        )
        yield _f(
            unit, text, "LS313", "critical" if runs else "high", m.start(), f"runs an encoded command ({payload[:40]})"
        )
        yield from analyse_unit(
            unit.inner("powershell", payload, line_offset=text.count("\n", 0, m.start()), context="decoded")
        )
    hit = _near(_PS_FETCH, _PS_IEX, text)
    if hit:
        seg = _snip(text, hit.start())
        yield _f(unit, text, "LS311", "medium" if _vouched(unit, seg) else "critical", hit.start(), "")
    for m in _PS_OUT.finditer(text):
        name = m.group(1).rsplit("\\", 1)[-1].rsplit("/", 1)[-1]
        run = _PS_RUN.search(text, m.end())
        if run and (name.lower() in text[m.end() :].lower()):
            yield _f(unit, text, "LS311", "critical", m.start(), f"downloads {name}, then runs it")
            break
    sock = _PS_SOCK.search(text)
    if (
        sock
        and re.search(r"GetStream\s*\(\)", text)
        and (_PS_IEX.search(text) or re.search(r"cmd(?:\.exe)?|powershell", text, re.I))
    ):
        yield _f(unit, text, "LS312", "critical", sock.start(), "")
    m2 = _PS_PERSIST.search(text)
    if m2:
        payload = bool(_PS_FETCH.search(text) or _PS_IEX.search(text) or _PS_ENC.search(text))
        top = "critical" if payload or unit.where == "script" else "high"
        yield _f(unit, text, "LS911", top, m2.start(), "")
    m3 = _PS_AV.search(text)
    if m3:
        av = "MpPreference" in m3.group() or "WinDefend" in m3.group()
        yield _f(unit, text, "LS912", "critical" if av else "high", m3.start(), "protection turned off")
    yield from _creds(unit, text, _PS_READ, _PS_SEND, _PS_ENV)
    yield from _decoded(unit, text, _PS_IEX)


# --- Ruby, Perl, PHP -----------------------------------------------------------------------

_R_SOCK = re.compile(
    r"\bTCPSocket\.(?:new|open)|\bSocket\.(?:new|tcp)|\bfsockopen\s*\(|\bstream_socket_client\s*\(|"
    r"IO::Socket::INET|\bsocket\s*\(\s*\w+\s*,\s*PF_INET|\bsocket_create\s*\(|\bUDPSocket",
    re.I,
)
_R_SHELL = re.compile(
    r"""/bin/(?:ba|z|da)?sh\b|\bcmd(?:\.exe)?\b|\bsh\s+-i\b|<&\s*\d|>&\s*\d|\bopen\s*\(\s*STD(?:IN|OUT|ERR)|"""
    r"""\$stdin\.reopen|\.reopen\s*\(|proc_open|\bdup2\b|fdopen|\bsystem\s*\$_|popen\s*\(\s*\$_|"""
    r"""\.gets\b[^\n]{0,200}(?:popen|system|exec|`)""",
    re.I,
)
_R_FETCH = re.compile(
    r"URI\.open|open-uri|Net::HTTP|HTTParty|Faraday|RestClient|LWP::Simple|LWP::UserAgent|\bgetstore\b|"
    r"HTTP::Tiny|file_get_contents\s*\(\s*['\"]https?:|curl_exec|\bget\s*\(\s*['\"]https?:|"
    r"fopen\s*\(\s*['\"]https?:|\bopen\s*\(\s*['\"]https?:|\bcopy\s*\(\s*['\"]https?:",
    re.I,
)
_R_EXEC = re.compile(
    r"\beval\s*[\s(]|\binstance_eval\b|\bsystem\s*[\s($]|\bexec\s*[\s(]|`|%x\{|\bqx\s*[{(/]|\bshell_exec\s*\(|"
    r"\bpassthru\s*\(|\bpopen\s*\(|\bproc_open\s*\(|\bassert\s*\(|\bcreate_function\s*\(|"
    r"\bKernel\.(?:exec|system|spawn)|\bspawn\s*\(|\binclude\s*\(?\s*['\"]https?:",
    re.I,
)
_R_CODE_SINK = re.compile(
    r"\beval\s*[\s(]|\bassert\s*\(|\bcreate_function\s*\(|\binstance_eval\b|\bsystem\s*[\s(]|"
    r"\bexec\s*[\s(]|\bshell_exec\s*\(|\bpassthru\s*\(|\bpopen\s*\(|gzinflate|gzuncompress|str_rot13",
    re.I,
)
_R_CMD = re.compile(
    r"""(?:\b(?:system|exec|shell_exec|passthru|popen|proc_open|spawn|Open3\.\w+|IO\.popen)\s*\(?\s*|\bqx\s*|%x)"""
    r"""(['"{(/])(?P<cmd>[^'"\n})/]{2,1000})['"})/]|`(?P<bt>[^`\n]{2,1000})`"""
)
_R_READ = re.compile(
    r"File\.read|File\.open|IO\.read|\bopen\s*\(|file_get_contents|fopen|readfile|Dir\.glob|\bglob\s*\(|"
    r"FileUtils\.cp|\bcopy\s*\(|slurp|read_file",
    re.I,
)
_R_SEND = re.compile(
    r"Net::HTTP\.post|\.post\s*\(|post_form|HTTP::Request->new\(\s*['\"]?POST|->post\s*\(|"
    r"CURLOPT_POSTFIELDS|CURLOPT_UPLOAD|\bmail\s*\(|Net::SMTP|MIME::Lite|\bsend\s*\(|\bprint\s+\$\w*sock|"
    r"\bsyswrite\b|fwrite\s*\(\s*\$\w*(?:sock|fp|conn)|socket_write|\.write\s*\(|\.puts\b",
    re.I,
)
_R_ENV = re.compile(r"ENV\.to_h|ENV\.to_a|ENV\.each|ENV\.inspect|%ENV\b|\bgetenv\s*\(\s*\)|\$_ENV\b|\$_SERVER\b", re.I)
_R_WRITE = re.compile(
    r"File\.(?:write|open)\s*\(|\bopen\s*\(\s*(?:my\s+)?\$?\w*\s*,\s*['\"]?>>?|file_put_contents\s*\(|"
    r"fopen\s*\([^)]*['\"][aw]|FileUtils\.cp",
    re.I,
)
_R_CRON = re.compile(r"\bcrontab\b[^\n]*(?:-\s*['\"`)]|\|)|\|\s*crontab\b")


def _rpp(unit: Unit, text: str) -> Iterator[Finding]:
    sock = _R_SOCK.search(text)
    if sock and _R_SHELL.search(text) and _R_EXEC.search(text):
        yield _f(unit, text, "LS312", "critical", sock.start(), "")
    hit = _near(_R_FETCH, _R_EXEC, text)
    backtick = hit is not None and hit.group().strip() == "`"
    if (
        hit
        and not (backtick and not re.search(r"`[^`\n]*\b(?:sh|bash|ruby|perl|php|python)\b", text))
        and not _vouched(unit, _snip(text, hit.start()))
    ):
        yield _f(unit, text, "LS311", "critical", hit.start(), "")
    m = re.search(
        r"\beval\s*\(?\s*(?:gzinflate|gzuncompress|str_rot13|base64_decode|Base64\.decode64|decode_base64|"
        r"MIME::Base64|pack\s*\(\s*['\"]H|unpack|\[.*\]\.pack|hex2bin|convert_uudecode)",
        text,
        re.I,
    )
    if m:
        yield _f(unit, text, "LS313", "critical", m.start(), "")
    if _R_CRON.search(text):
        c = _R_CRON.search(text)
        assert c is not None
        yield _f(unit, text, "LS911", "high" if unit.where == "document" else "critical", c.start(), "crontab changed")
    yield from _creds(unit, text, _R_READ, _R_SEND, _R_ENV)
    yield from _persistence(unit, text, _R_WRITE)
    m2 = re.search(
        r"VERIFY_NONE|verify_mode\s*=>?\s*OpenSSL::SSL::VERIFY_NONE|CURLOPT_SSL_VERIFYPEER\s*,\s*(?:false|0)|"
        r"verify_peer['\"]?\s*=>\s*false|SSL_verify_mode\s*=>\s*(?:0|SSL_VERIFY_NONE)",
        text,
        re.I,
    )
    if m2:
        yield _f(unit, text, "LS912", "high", m2.start(), "TLS verification off")
    yield from _decoded(unit, text, _R_CODE_SINK)
    seen: set[str] = set()
    for cm in _R_CMD.finditer(text):
        cmd = cm.group("cmd") or cm.group("bt")
        if not cmd or cmd in seen or len(seen) >= 32 or cmd.startswith(("$", "@")):
            continue
        seen.add(cmd)
        yield from analyse_unit(unit.inner("sh", cmd, line_offset=text.count("\n", 0, cm.start())))
    for payload in decodings(text)[:4] if len(text) < 4096 and _R_EXEC.search(text) else []:
        if _R_SOCK.search(payload) or _R_FETCH.search(payload):
            yield from analyse_unit(unit.inner(unit.lang, payload, context="decoded"))
