"""Shell commands parsed with bashlex, normalised, and judged by behaviour (docs/scanner.md, "Behaviours").

A unit is read in three steps:

1. **Gate.**  Most shell in a skill is ``pip install`` and ``git status``; only a unit that names a
   fetcher, a network word, a credential or persistence place, a decoder, ``eval``/``exec`` or an
   interpreter's inline code is parsed at all (:data:`GATE`).
2. **Parse and normalise.**  bashlex gives the command tree (quotes and escapes removed:
   ``c''url``, ``"cu"rl`` and ``\\c\\u\\r\\l`` are all ``curl``); where bashlex refuses the syntax the
   unit is read line by line, and a line it still refuses is split by a ``shlex`` tokeniser, so a
   parse failure never reads as "clean".  Words are expanded against the assignments made earlier
   in the unit (``u=http://x; curl $u``, ``c=cur; ${c}l``), ``$'\\x63url'`` is decoded, prefixes
   are peeled (``sudo``, ``env``, ``nohup``, ``setsid``, ``exec``, ``xargs``, ``timeout`` …), and a
   full path names its program (``/usr/bin/curl`` is ``curl``).
3. **Judge.**  Each pipeline is run abstractly: what flows between its stages carries *taints*
   (fetched from the network, decoded, read from a credential store, the environment) and, when it
   is a literal, its text.  A shell or interpreter that runs fetched text is fetch-then-execute; one
   that runs decoded text is decoded-then-executed (the text is decoded and read again); a shell
   wired to a socket is a network shell; a credential read that meets a send is exfiltration.
   ``bash -c``, ``eval`` and decoded payloads are parsed again as shell; ``python -c``, ``node -e``,
   ``perl -e``, ``ruby -e``, ``php -r``, ``powershell -c``/``-enc`` and heredocs fed to them go to
   :func:`ledger.scanner.meaning.units.analyse` in their own language.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import functools
import itertools
import posixpath
import re
import shlex
import signal
import threading
import time
from dataclasses import dataclass, field

import bashlex

from ledger.scanner.meaning import classes, decode, places
from ledger.scanner.meaning.fetchrun import WORTH as _FETCHRUN_WORTH
from ledger.scanner.meaning.flow import Flow as _Flow
from ledger.scanner.meaning.units import Unit, finding
from ledger.scanner.meaning.units import analyse as analyse_unit
from ledger.scanner.rules import _CRED, _SEND, Finding
from ledger.scanner.text import words

__all__ = ["GATE", "analyse", "worth"]

# a unit matching none of these is not parsed: none of the behaviours can be spelled without one
GATE = re.compile(
    r"\b(?:curl|wget|aria2c|lwp-\w+|fetch\s+-|s_client|ncat|netcat|socat|telnet|mkfifo)\b|\bnc(?:\.\w+)?\s|/dev/(?:tcp|udp)/|/inet/(?:tcp|udp)/|\bcertutil\b|\bcmd(?:\.exe)?\s+/[ckr]\b|\b(?:mshta|regsvr32|rundll32)\b|\bdeno\s+(?:run|eval)\b[^\n]{0,200}?https?://|export-secret|hookspath|\$\{?(?:SHELL|BASH)\b|\binstall\b[^\n]{0,300}?(?:http://|://\d)"
    r"|^\s*(?:sudo\s+)?https?\s+(?:GET|POST|PUT|-)|urllib"
    r"|\b(?:base64|base32|basenc|xxd|uudecode)\b|\brev\b|\btr\s+['\"]?\[?[a-z]-|\bprintf\s+['\"]?[^'\"\n]{0,200}?\\[x0-7u]|\becho\s+-\w*e"
    r"|\$'|\beval\b|\bexec\b|\bsource\s|(?:^|[;&|(]\s*)\.\s+\S|<\(|\bxargs\b"
    r"|\b(?:ba|z|da|k|a)?sh\s+-\w*c|\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?(?:ba|z|da|k|a)?sh\b|\b(?:ba|z|da|k)?sh\s+-\w*[is]\b"
    r"|\b(?:python[\d.]*|node|nodejs|deno|bun)\s+(?:-\w+\s+)*-(?:c|e|p|-eval)\b|\b(?:perl|ruby|php|node|lua)\b[^\n|;]{0,80}\s-\w*[eEr]"
    r"|\b(?:pwsh|powershell|osascript)\b|\|\s*(?:sudo\s+)?(?:python[\d.]*|perl|ruby|node|php)\b"
    r"|crontab|/etc/cron|/var/spool/cron|systemctl|launchctl|launch(?:agents|daemons)|autostart|update-rc\.d|chkconfig|schtasks"
    r"|\.(?:bashrc|zshrc|zshenv|zprofile|bash_profile|bash_login|profile)\b|/etc/(?:profile|bash\.bashrc|rc\.local|ld\.so)"
    r"|authorized_keys|\.claude/|\.git/hooks|\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)|\.aws\b|gcloud|\.kube/|wallet|keystore"
    r"|login\s+data|cookies|keychain|\.env\b|\.netrc|git-credentials|\.gnupg|\.docker/config|/etc/shadow|\.electrum|solana"
    r"|dangerously|--yolo|bypasspermissions|setenforce|\bufw\b|sslverify|tls_reject|httpsverify|ssl_no_verify|strict-ssl"
    r"|\bhist(?:file|size|filesize)\b|\bhistory\b|chattr|spctl|csrutil|quarantine|\bsecurity\s+(?:find|dump)"
    r"|\b(?:scp|rsync)\b[^\n]{0,300}?@|git\s+clone\s+\S*(?:\d{1,3}\.){3}\d",
    re.I | re.M,
)


# curl's and wget's long options that send data, and every long option that takes a value
_SEND_OPTS = frozenset(
    words(
        "--data --data-binary --data-raw --data-urlencode --form --upload-file --post-file"
        " --post-data --json --body-data --body-file"
    )
)
_VALUED_OPTS = _SEND_OPTS | frozenset(
    words("--output --output-document --url --header --user-agent --request --output-dir --directory-prefix")
)


@functools.lru_cache(maxsize=8192)
def worth(text: str) -> bool:
    """Whether a shell unit is worth parsing (:data:`GATE`, :data:`classes.GATE`); remembered per text,
    since the same span is asked about by the extractor and again by the reader, and recurs across skills."""
    if GATE.search(text) or classes.GATE.search(text):
        return True
    bare = _BARE.sub("", text)  # c''url, "cu"rl, \c\u\r\l
    if bare != text and GATE.search(bare) is not None:
        return True
    return _assembled(text) is not None or _more(text) or bool(decode.respelled(text))


def _more(text: str) -> bool:
    """The spellings :mod:`ledger.scanner.meaning.fetchrun` reads (its ``WORTH`` gate)."""
    return _FETCHRUN_WORTH.search(text) is not None


_ASSIGN = re.compile(r"(?:^|[\s;&|(])(\w+)=(?:\"([^\"$`\n]*)\"|'([^'\n]*)'|([^\s;&|'\"$`]*))")


def _assembled(text: str) -> str | None:
    """The text with literal assignments made earlier put into the ``$name`` that use them, when that
    spells something :data:`GATE` knows (``a=cu; b="rl -s"; $a$b URL | $s$t``), else ``None``: a
    command assembled from variables is the same command."""
    if "=" not in text or "$" not in text:
        return None
    values = {m.group(1): next(g for g in m.groups()[1:] if g is not None) for m in _ASSIGN.finditer(text)}
    if not values:
        return None
    spelled = _VAR.sub(lambda m: values.get(m.group(1) or m.group(2), m.group(0)), text)
    return spelled if spelled != text and GATE.search(_ASSIGN.sub(" ", spelled)) else None


_BARE = re.compile(r"[\"'\\]|\$\{?\w+\}?(?=\w)")


_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "tcsh", "csh"}
_LANG_FLAGS = {  # interpreter -> (language, flags that take inline code)
    "python": ("python", ("-c",)),
    "node": ("js", ("-e", "--eval", "-p", "--print")),
    "deno": ("js", ("eval",)),
    "bun": ("js", ("-e", "--eval")),
    "perl": ("perl", ("-e", "-E")),
    "ruby": ("ruby", ("-e",)),
    "php": ("php", ("-r",)),
    "pwsh": ("powershell", ("-c", "-command", "-commandwithargs")),
    "osascript": ("applescript", ("-e",)),
    "lua": ("lua", ("-e",)),
    "cmd": ("sh", ("/c", "/k", "/r")),
}
_FETCHERS = {"curl", "wget", "fetch", "aria2c", "http", "https", "lwp-download", "lwp-request", "lwp-mirror", "GET"}
_NETTOOLS = {"nc", "ncat", "netcat", "socat", "telnet", "openssl", "cryptcat", "pwncat"}
_DECODERS = {"base64", "base32", "basenc", "xxd", "rev", "uudecode", "openssl", "gunzip", "zcat", "gzip", "bzip2", "xz"}
_PREFIXES = {
    "sudo",
    "doas",
    "env",
    "nohup",
    "setsid",
    "exec",
    "time",
    "nice",
    "ionice",
    "stdbuf",
    "timeout",
    "command",
    "builtin",
    "xargs",
    "unbuffer",
    "torsocks",
    "proxychains",
    "proxychains4",
    "caffeinate",
    "chroot",
    "runuser",
    "su",
    "watch",
    "busybox",
    "flock",
}
_PS_VALUE_FLAGS = {
    "-ep",
    "-ex",
    "-exec",
    "-executionpolicy",
    "-w",
    "-win",
    "-windowstyle",
    "-version",
    "-inputformat",
    "-outputformat",
    "-configurationname",
    "-settingsfile",
    "-workingdirectory",
    "-wd",
}
_AGENTS = {"claude", "codex", "gemini", "agy", "hermes", "cursor-agent", "aider", "opencode", "amp", "goose", "qwen"}
_RESOLVERS = {"dig", "nslookup", "host", "drill", "resolvectl", "kdig", "ping", "getent"}
_UNPACKERS = {"unzip", "tar", "bsdtar", "7z", "7za", "unrar"}
_UNPACK_VALUE = (["-P"], ["-d"], ["-C"], ["--directory"], ["-p"])  # options whose value follows
_READERS = {  # commands that read the files they are given (a credential path among them is a read)
    "cat",
    "tac",
    "less",
    "more",
    "head",
    "tail",
    "cp",
    "tar",
    "zip",
    "7z",
    "7za",
    "gzip",
    "bzip2",
    "xz",
    "zstd",
    "scp",
    "rsync",
    "base64",
    "base32",
    "basenc",
    "xxd",
    "od",
    "hexdump",
    "strings",
    "sqlite3",
    "gpg",
    "openssl",
    "dd",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "awk",
    "gawk",
    "jq",
    "yq",
    "sort",
    "uniq",
    "cut",
    "nl",
    "zcat",
    "tee",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "uuencode",
    "split",
    "install",
    "mail",
    "sendmail",
    "mutt",
    "python",
    "perl",
}
_URLISH = re.compile(r"^(?:[a-z][\w+.-]*://|www\.|(?:\d{1,3}\.){3}\d{1,3}\b|[\w-]+(?:\.[\w-]+)+(?::\d+)?/)", re.I)
_VAR = re.compile(r"\$(?:\{(\w+)(?::?[-=?+][^}]*)?\}|(\w+))")
_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'")
_ESC = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{4}|[0-7]{1,3}|[abefnrtv\\'\"])")
_NETWORK_WORDS = re.compile(
    r"\b(?:curl|wget|nc|ncat|netcat|socat|telnet|aria2c|fetch|python\d?\s+-c|perl\s+-e|base64|/dev/tcp|/dev/udp)\b"
    r"|\|\s*(?:ba|z)?sh\b",
    re.I,
)
_BENIGN_RC = re.compile(
    r"^\s*(?:export\s+(?:PATH|[A-Z_][A-Z0-9_]*)=|alias\s+(?!(?:sudo|su|doas|ssh|passwd|login|git)=)\w+=|(?:source|\.)\s+\S+|eval\s+\"?\$\(\s*[\w.-]+\s+(?:init|env|shellenv|activate|hook)\b|#|$)",
)
_CROSS_FETCH = re.compile(
    r"require\(\s*['\"]https?['\"]\s*\)|urlopen|urllib\.request|requests\.(?:get|post)|httpx\.|http\.client|fetch\(|https?\.get\(|XMLHttpRequest|"
    r"Net\.WebClient|DownloadString|Invoke-WebRequest|\biwr\b|\birm\b|Invoke-RestMethod|LWP::|HTTP::Tiny|open-uri|"
    r"Net::HTTP|file_get_contents\(\s*['\"]https?:|\bcurl\b|\bwget\b",
    re.I,
)
_CROSS_EXEC = re.compile(
    r"\bexec\s*\(|\beval\s*\(|\bnew\s+Function\b|\bFunction\s*\(|Invoke-Expression|\biex\b|\bsystem\s*\(|os\.system|"
    r"subprocess|child_process|execSync|\bspawn\(|\|\s*(?:ba|z)?sh\b|\bsh\s+-c\b|`[^`]*`|\beval\b",
    re.I,
)
_STRING = re.compile(r'"((?:[^"\\\n]|\\.){0,2000})"|\'((?:[^\'\\\n]|\\.){0,2000})\'')
_CROSS_SOCKET = re.compile(r"socket|TCPSocket|fsockopen|IO::Socket|net\.Socket|net\.connect|Sockets\.TCPClient", re.I)
_CROSS_SHELL = re.compile(
    r"/bin/(?:ba|z)?sh|cmd\.exe|pty\.spawn|\bdup2\b|sh\s+-i|powershell|\bsystem\b|\bexec\b|popen|spawn", re.I
)


# --- the normalised form -------------------------------------------------------------


@dataclass
class _W:
    """A word: its text (quotes removed) and the pipelines of the substitutions inside it."""

    s: str
    subs: list[list[_Pipe]] = field(default_factory=list)
    proc: bool = False  # the whole word is a process substitution <(…)


@dataclass
class _Cmd:
    words: list[_W]
    assigns: list[_W]
    redirs: list[tuple[str, _W | int | None, str | None]]  # (type, target, heredoc body)
    pos: int
    group: list[_Pipe] | None = None  # ( … ) or { … }: its pipelines, in order


@dataclass
class _Pipe:
    cmds: list[_Cmd]
    background: bool = False


@dataclass
class _Fetch:
    ev: str  # "curl http://host/x"
    url: str
    insecure: bool = False


def _words(node: bashlex.ast.node) -> _W:
    subs: list[list[_Pipe]] = []
    proc = False
    for part in getattr(node, "parts", []) or []:
        if part.kind in ("commandsubstitution", "processsubstitution"):
            inner: list[_Pipe] = []
            _walk(part.command, inner)
            subs.append(inner)
            proc = proc or (part.kind == "processsubstitution" and part.pos[0] == node.pos[0])
    return _W(node.word, subs, proc)


def _command(node: bashlex.ast.node) -> _Cmd:
    words, assigns, redirs = [], [], []
    for part in node.parts:
        if part.kind == "word":
            words.append(_words(part))
        elif part.kind == "assignment":
            (words if words else assigns).append(_words(part))
        elif part.kind == "redirect":
            out = part.output
            target = _words(out) if hasattr(out, "kind") and out.kind == "word" else out
            body = None
            if getattr(part, "heredoc", None) is not None:
                body = part.heredoc.value.rsplit("\n", 1)[0] if "\n" in part.heredoc.value else ""
            redirs.append((part.type, target, body))
    return _Cmd(words, assigns, redirs, node.pos[0])


def _walk(node: bashlex.ast.node, out: list[_Pipe]) -> None:
    kind = node.kind
    if kind == "command":
        out.append(_Pipe([_command(node)]))
    elif kind == "pipeline":
        cmds: list[_Cmd] = []
        for part in node.parts:
            if part.kind == "command":
                cmds.append(_command(part))
            elif part.kind != "pipe":
                inner: list[_Pipe] = []
                _walk(part, inner)
                cmds.append(_Cmd([], [], _group_redirs(part), part.pos[0], inner))
        out.append(_Pipe(cmds))
    elif kind == "list":
        for part in node.parts:
            if part.kind == "operator":
                if part.op == "&" and out:
                    out[-1].background = True
            else:
                _walk(part, out)
    elif kind == "compound":
        inner = []
        for part in node.list:
            if part.kind not in ("reservedword", "operator"):
                _walk(part, inner)
        redirs = _group_redirs(node)
        if redirs:
            out.append(_Pipe([_Cmd([], [], redirs, node.pos[0], inner)]))
        else:
            out.extend(inner)
    elif kind in ("if", "for", "while", "until", "function"):
        if kind == "for":  # for c in WORDS: c holds what WORDS expand to (and carries their taint)
            ws = [p for p in node.parts if p.kind == "word"]
            if len(ws) >= 2:
                items = [_words(w) for w in ws[1:]]
                value = _W(f"{ws[0].word}=" + " ".join(w.s for w in items), [p for w in items for p in w.subs])
                out.append(_Pipe([_Cmd([], [value], [], node.pos[0])]))
        for part in node.parts:
            if part.kind in ("list", "pipeline", "command", "compound", "if", "for", "while", "until"):
                _walk(part, out)


def _group_redirs(node: bashlex.ast.node) -> list[tuple[str, _W | int | None, str | None]]:
    out = []
    for part in getattr(node, "redirects", []) or []:
        target = _words(part.output) if hasattr(part.output, "kind") and part.output.kind == "word" else part.output
        out.append((part.type, target, None))
    return out


def _ansi_c(text: str) -> tuple[str, bool]:
    """``$'\\x63url'`` spelled out as ``'curl'`` (bashlex reads ``$'…'`` as a parameter)."""
    if "$'" not in text:
        return text, False

    def one(m: re.Match[str]) -> str:
        s = _unescape(m.group(1))
        return "'" + s.replace("'", "'\\''") + "'"

    return _ANSI_C.sub(one, text), True


def _unescape(s: str) -> str:
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xu":
            return chr(int(e[1:], 16))
        if e[0].isdigit():
            return chr(int(e, 8) & 0xFF)
        return {"a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}.get(e, e)

    return _ESC.sub(one, s)


_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")


def _heredocs(text: str) -> tuple[str, list[str]]:
    """Here-documents lifted out before parsing: each ``<<WORD`` becomes ``<<< __heredocN__`` and its
    body lines are blanked (line numbers hold), so neither bashlex nor the tokeniser reads a body
    as commands; the body is what the command reads on stdin."""
    if "<<" not in text:
        return text, []
    lines = text.split("\n")
    bodies: list[str] = []
    out: list[str] = []
    i = 0
    while i < len(lines):
        found = list(_HEREDOC.finditer(lines[i]))
        if not found:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        line = lines[i]
        for m in found:
            body = []
            while j < len(lines) and (lines[j].lstrip("\t") if m.group(1) else lines[j]).rstrip() != m.group(3):
                body.append(lines[j])
                j += 1
            j += 1
            bodies.append("\n".join(body))
            line = line.replace(m.group(0), f"<<< __heredoc{len(bodies) - 1}__", 1)
        out.append(line)
        out.extend([""] * (min(j, len(lines)) - i - 1))
        i = j
    return "\n".join(out), bodies


# bashlex loops forever on a ``${`` its word does not close (``PS1='${curl'``: subst._paramexpand's
# ``find('}')`` returns -1 and the scan restarts at 0), so such text never reaches it; and a budget
# bounds any other loop: BASHLEX_SECONDS of wall time per unit (SIGALRM via setitimer, main thread
# only; elsewhere, and where an outer timer is running, no call gets more than BASHLEX_MAX_CHARS).
# Text refused or out of time is read by the tolerant tokeniser, never taken as clean.
_UNCLOSED_PARAM = re.compile(r"\$\{(?![^}\n]*\})")
BASHLEX_SECONDS = 1.0
BASHLEX_MAX_CHARS = 20_000  # unguarded calls only
BASHLEX_MAX_PIPES = 256  # a text with more `|` than this is read by the tokeniser (bashlex is slow on it)


_DEADLINE: list[float] = []  # when the unit being read runs out of bashlex time (set by analyse)


class _OutOfTime(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _OutOfTime


def _bashlex_safe(text: str) -> bool:
    return _UNCLOSED_PARAM.search(text) is None and text.count("|") <= BASHLEX_MAX_PIPES


def _bashlex(text: str) -> list[_Pipe] | None:
    if not _bashlex_safe(text):
        return None
    timed = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
    if not timed and len(text) > BASHLEX_MAX_CHARS:
        return None
    left = _DEADLINE[0] - time.monotonic() if _DEADLINE else BASHLEX_SECONDS
    if left <= 0:
        return None
    old = signal.signal(signal.SIGALRM, _alarm) if timed else None
    try:
        try:
            if timed:
                signal.setitimer(signal.ITIMER_REAL, left)
            pipes: list[_Pipe] = []
            for node in bashlex.parse(text):
                _walk(node, pipes)
            return pipes
        finally:
            if timed:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except Exception:  # bashlex raises many kinds (ParsingError, NotImplementedError, IndexError…), _OutOfTime
        return None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


_OPEN_QUOTE = re.compile(r"""^(?:[^'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")*+['"]""", re.S)
JOIN_LINES = 40  # a quoted string left open on one line is looked for this many lines further


MAX_STAGES = 64  # stages kept of one pipeline line with more than BASHLEX_MAX_PIPES `|`


def _bound_stages(text: str) -> str:
    """A line of more than BASHLEX_MAX_PIPES ``|`` (``curl … | cat | cat … | sh``, 33,000 stages) with
    repeated stages read once, and past MAX_STAGES only its first and last stages and those that
    name a fetcher, shell, decoder or network tool kept: what flows from a fetch to a shell still
    flows, in linear time."""
    if text.count("|") <= BASHLEX_MAX_PIPES:
        return text
    out = []
    for line in text.split("\n"):
        if line.count("|") <= BASHLEX_MAX_PIPES:
            out.append(line)
            continue
        parts: list[str] = []
        for part in line.split("|"):
            if not parts or part.strip() != parts[-1].strip():
                parts.append(part)
        if len(parts) > MAX_STAGES:
            keep = MAX_STAGES // 2
            middle = [p for p in parts[keep:-keep] if _KEY_STAGE.search(p)][:MAX_STAGES]
            parts = parts[:keep] + middle + parts[-keep:]
        out.append("|".join(parts))
    return "\n".join(out)


_KEY_STAGE = re.compile(
    r"\b(?:curl|wget|nc|ncat|socat|base64|xxd|eval|exec|(?:ba|z|da|k)?sh|python[\d.]*|perl|ruby|node|php)\b|/dev/"
)


def _parse(text: str) -> list[tuple[int, list[_Pipe]]]:
    """``(offset, pipelines)`` pieces of ``text``: one piece when bashlex reads it whole, else one per
    logical line (a line that opens a quote it does not close is joined with the lines that close
    it, as in a multi-line ``python -c "…"``), a piece bashlex refuses split by :func:`_tolerant`."""
    text = _bound_stages(text)
    whole = _bashlex(text)
    if whole is not None:
        return [(0, whole)]
    out: list[tuple[int, list[_Pipe]]] = []
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    i = 0
    while i < len(lines):
        j = i
        while lines[j].endswith("\\") and j + 1 < len(lines):
            j += 1
        logical = "\n".join(lines[i : j + 1])
        if not logical.strip() or logical.lstrip().startswith("#"):
            i = j + 1
            continue
        pipes = _bashlex(logical)
        if pipes is None and _OPEN_QUOTE.match(logical):
            for k in range(j + 1, min(len(lines), j + 1 + JOIN_LINES)):
                if not _OPEN_QUOTE.match("\n".join(lines[i : k + 1])):
                    joined = _bashlex("\n".join(lines[i : k + 1]))
                    if joined is not None:
                        pipes, j = joined, k
                    break
        if pipes is None:
            pipes = _tolerant(logical.replace("\\\n", " "))
        out.append((starts[i], pipes))
        i = j + 1
    return out


@functools.lru_cache(maxsize=512)  # a script of 7,000 equal lines is tokenised once (the result is not changed)
def _tolerant(line: str) -> list[_Pipe]:
    """A line bashlex refused, split with ``shlex``: substitutions first lifted out and read on their own."""
    subs: list[list[_Pipe]] = []
    procs: set[int] = set()

    def lift(m: re.Match[str]) -> str:
        inner = m.group(2) or m.group(3) or m.group(4) or ""
        pipes: list[_Pipe] = []
        for _, p in _parse(inner):
            pipes.extend(p)
        subs.append(pipes)
        if m.group(1) == "<(":
            procs.add(len(subs) - 1)
        return f" __sub{len(subs) - 1}__ "

    line = re.sub(r"(\$\(|<\(|`)(?:(?<=\$\()([^()]*)\)|(?<=<\()([^()]*)\)|(?<=`)([^`]*)`)", lift, line)
    try:
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
        lex.whitespace_split = True
        lex.commenters = ""
        tokens = list(lex)
    except ValueError:
        tokens = line.replace("|", " | ").replace(";", " ; ").split()
    pipes: list[_Pipe] = []
    cmds: list[_Cmd] = []
    cur = _Cmd([], [], [], 0)
    it = iter(tokens)
    for tok in it:
        if tok in (";", "&&", "||", "&", ";;"):
            cmds.append(cur)
            pipes.append(_Pipe([c for c in cmds if c.words or c.redirs], tok == "&"))
            cmds, cur = [], _Cmd([], [], [], 0)
        elif tok in ("|", "|&"):
            cmds.append(cur)
            cur = _Cmd([], [], [], 0)
        elif tok and set(tok) <= set("<>&") and tok not in ("&",):
            target = next(it, "")
            cur.redirs.append((tok, _sub_word(target, subs, procs), None))
        else:
            w = _sub_word(tok, subs, procs)
            (cur.assigns if not cur.words and re.match(r"^\w+=", tok) else cur.words).append(w)
    cmds.append(cur)
    pipes.append(_Pipe([c for c in cmds if c.words or c.redirs]))
    for p in pipes:
        for c in p.cmds:
            _unwrap(c)
    return [p for p in pipes if p.cmds]


_RESERVED = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac", "{", "}", "!", "(", ")"}


def _unwrap(cmd: _Cmd) -> None:
    """A command the tokeniser cut out of a compound (``case x in p) cmd``, ``then cmd``): its
    reserved words and case patterns dropped."""
    words = cmd.words
    while words:
        w = words[0].s
        if w == "case" and "in" in [x.s for x in words]:
            words = words[[x.s for x in words].index("in") + 1 :]
        elif w in _RESERVED or (w.endswith(")") and not w.startswith(("$(", "__sub"))):
            words = words[1:]
        else:
            break
    cmd.words = words


def _sub_word(tok: str, subs: list[list[_Pipe]], procs: set[int]) -> _W:
    found = [int(i) for i in re.findall(r"__sub(\d+)__", tok)]
    return _W(
        tok, [subs[i] for i in found if i < len(subs)], any(i in procs for i in found) and tok.startswith("__sub")
    )


# --- judging ---------------------------------------------------------------------------


MAX_VAR_CHARS = 4096  # a variable's value is kept up to this many characters (a="$a$a" doubles it)
MAX_UNIT_VAR_CHARS = 65536  # all the variables of one unit together
MAX_REPEATS = 32  # an identical line under identical variables is judged this many times per unit


class _Vars(dict[str, tuple[str, dict[str, object]]]):
    """The variables a unit assigned, each value capped at MAX_VAR_CHARS and all of them together at
    MAX_UNIT_VAR_CHARS: past the cap a value is cut (its start, what names a command, is kept)."""

    total = 0
    version = 0  # changes with every assignment

    def __setitem__(self, name: str, item: tuple[str, dict[str, object]]) -> None:
        value, taint = item
        old = self.get(name)
        self.total -= len(old[0]) if old else 0
        value = value[: max(0, min(MAX_VAR_CHARS, MAX_UNIT_VAR_CHARS - self.total))]
        self.total += len(value)
        self.version += 1
        super().__setitem__(name, (value, taint))


class _Reader:
    """One unit's abstract run: assignments, files written, reads and sends, and the findings."""

    def __init__(self, unit: Unit, obfuscated: bool) -> None:
        self.unit = unit
        self.obfuscated = obfuscated
        self.vars = _Vars()
        self.files: dict[str, _Flow] = {}
        self.netfds: set[str] = set()
        self.heredocs: list[str] = []
        self.cwd = ""
        self.creds: list[tuple[int, str]] = []
        self.sends: list[tuple[int, str]] = []
        self.exfil = False
        self.findings: dict[tuple[str, int, str], Finding] = {}
        self.line = unit.line

    # findings
    def add(self, rule: str, severity: str, evidence: str) -> None:
        f = finding(rule, severity, self.unit.path, self.line, evidence)
        self.findings.setdefault((rule, self.line, f.detail), f)

    def sev(self, *, vouched: bool = False, floor: str = "critical", always: bool = False) -> str:
        """The severity of a behaviour here (docs/scanner.md, severity policy); ``always``: a
        behaviour no honest SKILL.md asks for (network shells, decoded payloads, exfiltration),
        critical there even when the text around it discusses it."""
        u = self.unit
        if u.where == "script" or u.context == "file":
            return "high" if vouched else floor
        if vouched:
            return "medium"
        if always and u.where == "instructions":
            return floor
        return "high" if u.discussed else floor

    # words
    def expand(self, w: _W) -> tuple[str, dict[str, object]]:
        taint: dict[str, object] = {}

        def var(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(2)
            if name in self.vars:
                value, t = self.vars[name]
                taint.update(t)
                return value
            return m.group(0)

        s = _VAR.sub(var, w.s) if "$" in w.s else w.s
        for pipes in w.subs:
            flow = self.run(pipes, capture=True)
            taint.update(flow.taint)
            if flow.text and len(w.subs) == 1 and re.fullmatch(r"\s*(?:\$\(.*\)|`.*`)\s*", w.s, re.S):
                s = flow.text
        return s, taint

    def norm(self, path: str) -> str:
        p = places.home(path)
        return posixpath.normpath(p) if p else p

    # runs
    def run(self, pipes: list[_Pipe], capture: bool = False, stdin: _Flow | None = None) -> _Flow:
        out = _Flow()
        for pipe in pipes:
            flow = stdin or _Flow()
            netstage = False
            stages: list[str] = []
            for cmd in pipe.cmds:
                if cmd.pos and not capture:
                    self.line = self.unit.line + self.text.count("\n", 0, cmd.pos) + self.base_line
                flow, name = self.command(cmd, flow, pipe, netstage, stages)
                netstage = netstage or name in _NETTOOLS or name == "/dev/tcp"
                stages.append(name)
            out = out.merged(flow)
        return out

    text = ""
    base_line = 0

    def command(self, cmd: _Cmd, tin: _Flow, pipe: _Pipe, netstage: bool, stages: list[str]) -> tuple[_Flow, str]:
        if cmd.group is not None:
            flow = _Flow()
            for p in cmd.group:
                flow = flow.merged(self.run([p], capture=True, stdin=tin))
            self.redirects(cmd, "(group)", flow, False)
            return flow, "(group)"
        for a in cmd.assigns:
            self.assign(a)
        argv: list[str] = []
        taint: dict[str, object] = {}
        ws: list[_W] = []
        for w in cmd.words:
            s, t = self.expand(w)
            argv.append(s)
            taint.update(t)
            ws.append(w)
        if argv and "$" in ws[0].s and re.search(r"\s", argv[0].strip()):
            # an unquoted expansion in command position is split into words: $a$b with b="rl -s"
            head = argv[0].split()
            argv[:1] = head
            ws[:1] = [_W(h) for h in head]
        tin = self.stdin(cmd, tin)
        if not argv:
            if any(isinstance(t, _W) and "/dev/tcp/" in t.s and k == "<>" for k, t, _ in cmd.redirs):
                self.add("LS312", self.sev(always=True), "exec <>/dev/tcp: a descriptor on a socket")
            return tin, ""
        cron = _cron_fields(argv)
        if cron:
            rest = " ".join(argv[cron:])
            self.persist(f"cron line: {' '.join(argv)}", _Flow(dict(taint), rest), "crontab")
            argv, ws = argv[cron:], ws[cron:]
        argv, ws, prefix = self.peel(argv, ws, tin)
        if not argv:
            out = self.redirects(cmd, "", tin, False)
            return out, ""
        path0 = argv[0]
        name = _name(path0)
        args = argv[1:]
        flow = self.judge(name, path0, args, ws[1:] if len(ws) > 1 else [], tin, taint, pipe, netstage, stages, prefix)
        is_shell = name in _SHELLS or name in _LANG_FLAGS or name in ("powershell",)
        return self.redirects(cmd, name, flow, is_shell), name

    def assign(self, w: _W) -> None:
        name, _, _ = w.s.partition("=")
        value, taint = self.expand(_W(w.s[len(name) + 1 :], w.subs))
        self.vars[name] = (value, taint)
        self.safety_env(name, value)

    def stdin(self, cmd: _Cmd, tin: _Flow) -> _Flow:
        for kind, target, body in cmd.redirs:
            if body is not None:
                tin = _Flow(tin.taint, body)
            elif kind == "<<<" and isinstance(target, _W):
                s, t = self.expand(target)
                m = re.fullmatch(r"__heredoc(\d+)__", s)
                tin = (
                    _Flow({}, self.heredocs[int(m.group(1))])
                    if m and int(m.group(1)) < len(self.heredocs)
                    else _Flow(t, s)
                )
            elif kind in ("<", "<&") and isinstance(target, _W):
                s, t = self.expand(target)
                p = self.norm(s)
                if s.startswith(("/dev/tcp/", "/dev/udp/")):
                    tin = _Flow({"fetch": _Fetch(f"< {s}", s)})
                elif s in self.netfds:
                    tin = _Flow({"fetch": _Fetch(f"<&{s} (socket)", "")})
                elif p in self.files:
                    tin = self.files[p]
                elif places.credential(s):
                    self.creds.append((self.line, s))
                    tin = _Flow({"cred": s})
                elif t:
                    tin = _Flow(t)
        return tin

    def redirects(self, cmd: _Cmd, name: str, flow: _Flow, is_shell: bool) -> _Flow:
        out = flow
        for kind, target, body in cmd.redirs:
            if body is not None or not isinstance(target, _W) or kind in ("<", "<<<", "<<", "<<-"):
                if isinstance(target, int) and kind in (">&", "<&") and str(target) in self.netfds and is_shell:
                    self.add("LS312", self.sev(always=True), f"{name} on descriptor {target} (a socket)")
                continue
            s, _ = self.expand(target)
            if s.startswith(("/dev/tcp/", "/dev/udp/")):
                if kind == "<>" and name in ("", "exec"):
                    self.add("LS312", self.sev(always=True), f"exec <>{s}: a descriptor on a socket")
                    continue
                if is_shell:
                    self.add("LS312", self.sev(always=True), f"{name} >& {s}")
                else:
                    self.send(f"{name} > {s}", flow)
                continue
            if s in self.netfds and is_shell:
                self.add("LS312", self.sev(always=True), f"{name} on descriptor {s} (a socket)")
            if kind in (">", ">>", "&>", ">|", "&>>", ">&"):
                p = self.norm(s)
                if s in ("/dev/null", "&1", "1", "2") or s.startswith("/dev/std"):
                    continue
                self.files[p] = flow
                if places.persistence(p):
                    self.persist(f"{name} {'>>' if '>>' in kind else '>'} {s}", flow, p)
                out = _Flow()
        return out

    def peel(self, argv: list[str], ws: list[_W], tin: _Flow) -> tuple[list[str], list[_W], list[str]]:
        prefix: list[str] = []
        while argv:
            name = _name(argv[0])
            if name not in _PREFIXES or (name == "exec" and len(argv) == 1):
                break
            prefix.append(name)
            i = 1
            if name == "env":
                if all(a.startswith("-") or "=" in a for a in argv[1:]):
                    prefix.pop()
                    break
                while i < len(argv) and (argv[i].startswith("-") or "=" in argv[i]):
                    if "=" in argv[i] and not argv[i].startswith("-"):
                        k, _, v = argv[i].partition("=")
                        self.vars[k] = (v, {})
                        self.safety_env(k, v)
                    elif argv[i] in ("-u", "-C", "-S"):
                        i += 1
                    i += 1
            elif name in ("sudo", "doas", "su", "runuser"):
                while i < len(argv) and argv[i].startswith("-"):
                    if argv[i] in ("-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-c") and name != "su":
                        i += 1
                    elif name == "su" and argv[i] == "-c":
                        return (["sh", "-c", *argv[i + 1 :]], [_W("sh"), *ws[i:]], prefix)
                    i += 1
                if name in ("su", "runuser") and i < len(argv) and not argv[i].startswith("-"):
                    i += 1
            elif name == "timeout":
                while i < len(argv) and argv[i].startswith("-"):
                    i += 2 if argv[i] in ("-s", "-k", "--signal", "--kill-after") else 1
                i += 1  # the duration
            elif name in ("nice", "ionice", "stdbuf", "flock", "chroot", "watch"):
                while i < len(argv) and argv[i].startswith("-"):
                    i += 2 if argv[i] in ("-n", "-c", "-i", "-o", "-e", "-w") else 1
                if name in ("flock", "chroot"):
                    i += 1
            elif name == "xargs":
                while i < len(argv) and argv[i].startswith("-"):
                    i += 2 if argv[i] in ("-I", "-n", "-P", "-L", "-d", "-s", "-E", "-a") else 1
            else:
                while i < len(argv) and argv[i].startswith("-"):
                    i += 1
            argv, ws = argv[i:], ws[i:]
        return argv, ws, prefix

    # the behaviours
    def judge(
        self,
        name: str,
        path0: str,
        args: list[str],
        ws: list[_W],
        tin: _Flow,
        taint: dict[str, object],
        pipe: _Pipe,
        netstage: bool,
        stages: list[str],
        prefix: list[str],
    ) -> _Flow:
        hidden = pipe.background or bool({"nohup", "setsid"} & set(prefix))
        p0 = self.norm(path0)
        ran = self.files.get(p0)
        if ran is None and "/" not in path0:
            ran = next((f for k, f in self.files.items() if "/" in k and posixpath.basename(k) == path0), None)
        if ran is not None and "fetch" in ran.taint:
            self.fetch_exec(ran.taint["fetch"], path0, hidden)
        if "xargs" in prefix and tin.taint:
            taint = {**taint, **tin.taint}
        self.safety(name, args)
        classed = self.classes(name, args, tin, taint, stages)
        if classed is not None:
            return classed
        read = self.creds_read(name, args)
        if read:
            taint = {**taint, "cred": read}
        if name in _RESOLVERS and ("cred" in taint or "env" in taint):
            # a name looked up is a name sent to whoever serves its domain: a secret in it is sent out
            self.send(f"{name} {' '.join(args)}", _Flow(dict(taint)))
            return _Flow()
        token = self.token(name, args)
        if token:
            return _Flow({"cred": token})
        if name in _FETCHERS or (name == "python" and args[:2] == ["-m", "urllib.request"]):
            return self.fetch(name, args, tin, taint)
        if name in _NETTOOLS and not (name == "openssl" and args[:1] != ["s_client"]):
            return self.nettool(name, args, tin, stages)
        if name in ("mshta", "regsvr32", "rundll32") and any("http" in a.lower() for a in args):
            url = next(re.search(r"https?://\S+", a).group(0) for a in args if re.search(r"https?://\S+", a))
            self.fetch_exec(_Fetch(f"{name} {url}", url), name, hidden)
            return _Flow()
        if name == "deno" and args[:1] in (["run"], ["eval"]):
            url = next((a for a in args[1:] if a.startswith(("http://", "https://"))), "")
            if url and not re.match(r"https://(?:deno\.land/(?:x|std)\b|jsr\.io/|esm\.sh/)", url):
                self.fetch_exec(_Fetch(f"deno run {url}", url), "deno", hidden)
            if url:
                return _Flow()
        if name == "certutil" and any(a.lower() in ("-urlcache", "/urlcache") for a in args):
            urls = [a for a in args if "://" in a]
            if urls:
                target = args[-1] if args[-1] != urls[0] else posixpath.basename(urls[0])
                self.files[self.norm(target)] = _Flow({"fetch": _Fetch(f"certutil {urls[0]}", urls[0])})
            return _Flow()
        if name in ("pip", "pip3", "uv", "pipx", "npm", "pnpm", "yarn", "gem") and any(
            a in ("install", "add", "i") for a in args[:3]
        ):
            for a in args:
                url = a.split("+", 1)[-1] if a.startswith(("git+", "hg+")) else a
                if "://" in url and (
                    url.lower().startswith("http://")
                    or places.drop_host(url)
                    or any(places.ip_host(h) for h in _hosts(url))
                ):
                    self.fetch_exec(_Fetch(f"{name} install {url}", url), f"{name} install", hidden)
            return _Flow()
        if name == "git" and args[:1] == ["clone"]:
            urls = [a for a in args[1:] if "://" in a or "@" in a]
            if urls and (places.drop_host(urls[0]) or any(places.ip_host(h) for h in _hosts(urls[0]))):
                rest = [a for a in args[1:] if not a.startswith("-") and a != urls[0]]
                target = rest[0] if rest else posixpath.basename(urls[0].rstrip("/")).removesuffix(".git")
                self.files[self.norm(target)] = _Flow({"fetch": _Fetch(f"git clone {urls[0]}", urls[0])})
                self.dirs_fetched = (*getattr(self, "dirs_fetched", ()), self.norm(target))
            return _Flow()
        if name in _UNPACKERS:
            self.unpack(name, args)
        if name == "cd" and args:
            self.cwd = self.norm(args[0])
        for d in getattr(self, "dirs_fetched", ()):
            inside = self.cwd == d and (
                path0.startswith("./") or name == "make" or (name in _SHELLS and args and not args[0].startswith("-"))
            )
            if inside or p0.startswith(d + "/") or any(a.startswith((d + "/", "./" + d + "/")) for a in args[:1]):
                self.fetch_exec(self.files[d].taint["fetch"], f"{path0} {' '.join(args)}".strip(), hidden)
        if name in _SHELLS or name in _LANG_FLAGS or name in ("powershell", "source", ".", "eval"):
            return self.interpreter(name, args, ws, tin, taint, netstage, stages, hidden)
        if (
            name in _DECODERS
            or name == "tr"
            or name == "printf"
            or (name == "echo" and args[:1] and args[0].startswith("-") and "e" in args[0])
        ):
            return self.decoder(name, args, tin, taint)
        if name in ("echo", "printf", "cat"):
            return self.emit(name, args, tin, taint)
        if name == "tee":
            for a in args:
                if not a.startswith("-"):
                    p = self.norm(a)
                    self.files[p] = tin
                    if places.persistence(p):
                        self.persist(f"tee {a}", tin, p)
            return tin
        if name in ("env", "printenv") or (name == "set" and not args) or (name == "export" and args == ["-p"]):
            return _Flow({"env": "environment"})
        if name in ("scp", "rsync", "sftp", "ftp"):
            if any(re.match(r"^(?:[\w.-]+@)?[\w.-]+:", a) and not a.startswith("-") for a in args[1:] or args):
                self.send(f"{name} {' '.join(args)}", _Flow(taint))
            return _Flow()
        if name in ("crontab",):
            return self.crontab(args, tin)
        if name in ("cp", "mv", "install", "ln") and len([a for a in args if not a.startswith("-")]) >= 2:
            files = [a for a in args if not a.startswith("-")]
            dest = self.norm(files[-1])
            src = self.files.get(self.norm(files[0]), _Flow())
            self.files[dest] = src
            if places.persistence(dest) or places.persistence(dest + "/" + posixpath.basename(files[0])):
                # copied=True only for a file of the skill itself (a path beside the script, not one
                # the unit fetched or wrote); a copy of anything else is judged by what is known of it
                shipped = not src.taint and not src.text and _skill_path(files[0])
                self.persist(f"{name} {files[0]} {files[-1]}", src, dest, copied=shipped)
            return _Flow()
        if name == "sed" and any(a.startswith("-i") for a in args):
            target = next((a for a in reversed(args) if not a.startswith("-")), "")
            if places.persistence(self.norm(target)):
                self.persist(f"sed -i … {target}", _Flow(taint, " ".join(args)), self.norm(target))
        if name in ("systemctl", "launchctl", "update-rc.d", "chkconfig", "rc-update", "schtasks"):
            return self.service(name, args)
        if name in ("awk", "gawk") and any("/inet/tcp/" in a or "/inet/udp/" in a for a in args):
            self.add("LS312", self.sev(always=True), f"{name} /inet/tcp")
        if name == "mkfifo":
            return _Flow()
        if name == "chmod" and args and any("x" in a or a.lstrip("0").startswith(("7", "5")) for a in args[:1]):
            return _Flow()
        return _Flow({**tin.taint, **taint}) if (tin.taint or taint) else _Flow()

    def unpack(self, name: str, args: list[str]) -> None:
        """An archive that was fetched, unpacked: what comes out of it is fetched too (``curl -o a.zip``,
        ``unzip -P pw a.zip -d out``, then ``out/agent`` runs what was downloaded)."""
        operands = [a for i, a in enumerate(args) if not a.startswith("-") and args[i - 1 : i] not in _UNPACK_VALUE]
        archive = next((a for a in operands if self.norm(a) in self.files), None)
        if archive is None or "fetch" not in self.files[self.norm(archive)].taint:
            return
        out = self.cwd
        for i, a in enumerate(args[:-1]):
            if (name in ("unzip",) and a == "-d") or (name != "unzip" and a in ("-C", "--directory", "-o")):
                out = self.norm(args[i + 1])
            elif name == "7z" and a.startswith("-o") and len(a) > 2:
                out = self.norm(a[2:])
        self.files[out] = self.files[self.norm(archive)]
        self.dirs_fetched = (*getattr(self, "dirs_fetched", ()), out)

    def fetch(self, name: str, args: list[str], tin: _Flow, taint: dict[str, object]) -> _Flow:
        url, out, insecure, data = "", None, False, []
        stdout = True
        i = 0
        takes = {"-H", "-X", "-u", "-A", "-e", "-x", "-m", "-w", "-b", "-c", "-K", "-r", "-z", "-E", "-U", "-Y", "-y"}
        while i < len(args):
            a = args[i]
            nxt = args[i + 1] if i + 1 < len(args) else ""
            if name == "curl" and a.startswith("-") and not a.startswith("--") and len(a) > 1:
                flags = a[1:]
                for j, c in enumerate(flags):
                    rest = flags[j + 1 :]
                    if c == "k":
                        insecure = True
                    elif c == "O":
                        out, stdout = "", False
                    elif c in "odFT" or "-" + c in takes:
                        val = rest or nxt
                        if not rest:
                            i += 1
                        if c == "o":
                            out, stdout = val, val == "-"
                        elif c in "dFT":
                            data.append(val)
                        break
            elif name == "wget" and a.startswith("-") and not a.startswith("--") and len(a) > 1:
                flags = a[1:]
                for j, c in enumerate(flags):
                    rest = flags[j + 1 :]
                    if c in "OPo":
                        val = rest or nxt
                        if not rest:
                            i += 1
                        if c == "O":
                            out, stdout = val, val == "-"
                        elif c == "P":
                            out, stdout = val.rstrip("/") + "/", False
                        break
            elif a.startswith("--"):
                key, eq, val = a.partition("=")
                if not eq and key in _VALUED_OPTS:
                    val = nxt
                    i += 1
                if key in ("--insecure", "--no-check-certificate", "--verify") and (
                    key != "--verify" or val in ("no", "false")
                ):
                    insecure = True
                elif key in ("--output", "--output-document"):
                    out, stdout = val, val == "-"
                elif key in ("--remote-name", "--remote-name-all", "--download"):
                    out, stdout = "", False
                elif key in _SEND_OPTS:
                    data.append(val)
                elif key == "--url":
                    url = val
                elif key in ("--directory-prefix", "--output-dir"):
                    out, stdout = val.rstrip("/") + "/", False
            elif name in ("aria2c", "fetch") and a in ("-o", "-d", "--dir"):
                out, stdout = nxt, nxt == "-"
                i += 1
            elif (
                not a.startswith("-")
                and not url
                and (
                    _URLISH.match(a)
                    or a.startswith("$")
                    or ("$" in a and "/" in a)
                    or (name in ("http", "https") and a not in ("GET", "POST", "PUT") and "." in a)
                )
            ):
                url = a
            elif name in ("http", "https") and re.match(r"^[\w-]+(?:=|:=|@)", a):
                data.append(a)
            elif name == "lwp-download" and url and not a.startswith("-"):
                out, stdout = a, False
            i += 1
        if name in ("wget", "aria2c", "lwp-download", "lwp-mirror") and out is None:
            stdout = False
            out = ""
        if name == "lwp-download" and out is None:
            stdout = False
        if not url:
            if data:
                self.send_data(name, data, tin, taint)
            return _Flow()
        ev = f"{name}{' -k' if insecure else ''} {url}"
        fetched = _Fetch(ev, url, insecure or "decode" in taint or self.obfuscated)
        if data:
            self.send_data(name, data, tin, taint, url)
        elif "cred" in taint and not places.issuer(str(taint["cred"]), url):
            self.send(f"{name} {url} (in a header or the URL)", _Flow(dict(taint)))
        if stdout:
            return _Flow({"fetch": fetched})
        target = out or posixpath.basename(url.split("?")[0].rstrip("/")) or "index.html"
        if out and out.endswith("/"):
            target = out + posixpath.basename(url.split("?")[0].rstrip("/"))
        self.files[self.norm(target)] = _Flow({"fetch": fetched})
        if places.persistence(self.norm(target)):
            self.persist(f"{ev} -o {target}", _Flow({"fetch": fetched}), self.norm(target))
        return _Flow()

    def send_data(self, name: str, data: list[str], tin: _Flow, taint: dict[str, object], url: str = "") -> None:
        flow = _Flow(dict(taint))
        if "cred" in flow.taint and places.issuer(str(flow.taint["cred"]), url):
            del flow.taint["cred"]  # a token sent to the service that issued it
        for d in data:
            for m in re.finditer(r"@([^\s;]+)|^([~/$][^\s=]*)$|=@?([~/$][^\s;]+)", d):
                f = m.group(1) or m.group(2) or m.group(3) or ""
                if f in ("-", "/dev/stdin"):
                    flow.taint.update(tin.taint)
                elif places.credential(f):
                    self.creds.append((self.line, f))
                    flow.taint["cred"] = f
                elif self.norm(f) in self.files:
                    flow.taint.update(self.files[self.norm(f)].taint)
        self.send(f"{name} {' '.join(data)[:30]} {url}".strip(), flow)

    def send(self, ev: str, flow: _Flow) -> None:
        self.sends.append((self.line, ev))
        what = flow.taint.get("cred") or flow.taint.get("env")
        if what:
            self.exfil = True
            self.add("LS412", self.sev(always=True), f"{what} sent: {ev}")

    def nettool(self, name: str, args: list[str], tin: _Flow, stages: list[str]) -> _Flow:
        low = [a.lower() for a in args]
        joined = " ".join(args)
        if name in ("nc", "ncat", "netcat", "cryptcat", "pwncat") and any(
            a in ("-e", "-c", "--exec", "--sh-exec", "--lua-exec") or (re.match(r"^-\w*e$", a) and len(a) <= 5)
            for a in args
        ):
            self.add("LS312", self.sev(always=True), f"{name} {joined}")
        if (
            name == "socat"
            and any(a.startswith(("exec:", "system:")) for a in low)
            and any(re.match(r"^(?:tcp|udp|openssl|ssl)[\w-]*[:-]", a) for a in low)
        ):
            self.add("LS312", self.sev(always=True), f"socat {joined}")
        if any(s in _SHELLS or s in ("python", "perl", "ruby") for s in stages) and (
            stages[-1:] and (stages[-1] in _SHELLS)
        ):
            self.add("LS312", self.sev(always=True), f"{' | '.join(stages)} | {name} {joined}")
        hosts = [a for a in args if not a.startswith("-") and (("." in a or ":" in a) and not a.startswith("/"))]
        if tin.taint or tin.text:
            self.send(f"{name} {joined}", tin)
        return _Flow({"fetch": _Fetch(f"{name} {joined}", hosts[0] if hosts else "")})

    def interpreter(
        self,
        name: str,
        args: list[str],
        ws: list[_W],
        tin: _Flow,
        taint: dict[str, object],
        netstage: bool,
        stages: list[str],
        hidden: bool,
    ) -> _Flow:
        lang, code_flags = ("sh", ("-c",)) if name in _SHELLS else _LANG_FLAGS.get(name, ("powershell", ()))
        if name == "powershell":
            code_flags = ("-c", "-command", "-commandwithargs")
        if name == "eval":
            body_t: dict[str, object] = dict(taint)
            self.run_code("sh", " ".join(args), body_t, f"eval {' '.join(args)}", hidden)
            return _Flow()
        if name in ("source", "."):
            if args:
                self.run_file(name, args[0], ws[0] if ws else None, hidden)
            return _Flow()
        i = 0
        while i < len(args):
            a = args[i]
            low = a.lower()
            if (
                lang == "powershell"
                and low in ("-e", "-ec", "-enc", "-encodedcommand", "-en", "-enco")
                and i + 1 < len(args)
            ):
                payload = _ps_decode(args[i + 1])
                self.add("LS313", self.sev(always=True), f"{name} -enc {payload or args[i + 1]}")
                if payload:
                    self.inner("powershell", payload, "decoded")
                return _Flow()
            attached = next((f for f in code_flags if len(f) == 2 and low.startswith(f) and len(a) > 2), "")
            if attached and lang != "sh":
                self.run_code(lang, a[2:], dict(taint), f"{name} {a}", hidden)
                return _Flow()
            if low in code_flags and i + 1 < len(args):
                body = args[i + 1]
                _, t = self.expand(ws[i + 1]) if i + 1 < len(ws) else ("", {})
                self.run_code(lang, body, {**t}, f"{name} {a} {body}", hidden)
                return _Flow()
            if lang == "python" and a == "-m":
                return _Flow()
            if a in ("-", "-s", "/dev/stdin") or (
                a.startswith("-") and lang == "sh" and "s" in a[1:] and not a.startswith("--")
            ):
                break
            if a.startswith("-"):
                if lang in ("python", "perl", "ruby") and a in ("-W", "-X", "-I", "-r", "-M") and i + 1 < len(args):
                    i += 1
                if lang == "powershell" and low in _PS_VALUE_FLAGS:
                    i += 1
                i += 1
                continue
            self.run_file(name, a, ws[i] if i < len(ws) else None, hidden)
            return _Flow()
        # reads its program from stdin
        if (netstage or (stages and stages[0] in _NETTOOLS)) and lang == "sh":
            self.add("LS312", self.sev(always=True), f"{' | '.join(stages)} | {name}")
        self.run_code(lang, tin.text, dict(tin.taint), f"… | {name}", hidden, piped=True)
        return _Flow()

    def run_file(self, name: str, path: str, w: _W | None, hidden: bool) -> None:
        flow = _Flow()
        if w is not None and w.subs and (w.proc or path.startswith("__sub") or path.startswith("<(")):
            flow = self.run(w.subs[0], capture=True)
        elif self.norm(path) in self.files:
            flow = self.files[self.norm(path)]
        else:
            for d in getattr(self, "dirs_fetched", ()):
                if self.norm(path).startswith(d + "/"):
                    flow = self.files[d]
        if "fetch" in flow.taint:
            self.fetch_exec(
                flow.taint["fetch"],
                f"{name} {path if not path.startswith('<(') else '<(…)'}",
                hidden,
                decoded="decode" in flow.taint,
            )
        elif "decode" in flow.taint:
            self.add("LS313", self.sev(always=True), f"{name} {path} ({flow.taint['decode']})")
            if flow.text:
                self.inner("sh", flow.text, "decoded")
        elif flow.text and name in _SHELLS | {"source", "."}:
            self.inner("sh", flow.text, "decoded")  # a script the unit wrote itself, then ran

    def run_code(
        self, lang: str, body: str, taint: dict[str, object], ev: str, hidden: bool, piped: bool = False
    ) -> None:
        if "fetch" in taint:
            self.fetch_exec(
                taint["fetch"],
                ev.split(" ", 1)[0] if not piped else ev.removeprefix("… | "),
                hidden,
                decoded="decode" in taint,
            )
            return
        if "decode" in taint:
            self.add(
                "LS313",
                self.sev(always=True),
                f"{taint['decode']} → {body[:40]} | {ev.split(' ')[-1] if piped else ev}",
            )
            if body:
                self.inner(lang, body, "decoded")
            return
        if body:
            self.inner(lang, body, "decoded" if piped else "argument")

    def inner(self, lang: str, body: str, context: str) -> None:
        unit = self.unit.inner(lang, body, line_offset=self.line - self.unit.line, context=context)
        found = analyse_unit(unit)
        for f in found:
            self.findings.setdefault((f.rule, f.line or 0, f.detail), f)
        if lang != "sh" and not any(f.rule in ("LS311", "LS312", "LS313", "LS412") for f in found):
            self.cross_language(lang, body)

    def cross_language(self, lang: str, body: str) -> None:
        """A cheap reading of inline code in another language, kept until its own analyser says more:
        string literals that read as shell (``os.system("…")``, ``exec("…")``) are read as shell."""
        before = len(self.findings)
        for m in _STRING.finditer(body):
            lit = m.group(1) if m.group(1) is not None else m.group(2)
            if len(lit) >= 6 and worth(lit):
                self.inner("sh", lit, "argument")
        if len(self.findings) > before:
            return
        if _CROSS_FETCH.search(body) and _CROSS_EXEC.search(body):
            urls = re.findall(r"https?://[^\s'\")]+", body)
            self.add("LS311", self.sev(vouched=bool(urls) and all(places.vendor(u) for u in urls)), f"{lang}: {body}")
        elif _CROSS_SOCKET.search(body) and _CROSS_SHELL.search(body):
            self.add("LS312", self.sev(always=True), f"{lang}: {body}")
        elif _CRED.search(body) and _SEND.search(body):
            self.add("LS412", self.sev(always=True), f"{lang}: {body}")

    def fetch_exec(self, fetched: object, sink: str, hidden: bool, decoded: bool = False) -> None:
        f = fetched if isinstance(fetched, _Fetch) else _Fetch(str(fetched), "")
        url = f.url
        host_names = _hosts(url)
        bad = (
            f.insecure
            or decoded
            or hidden
            or url.lower().startswith(("http://", "ftp://"))
            or ("://" not in url and bool(url) and not url.startswith("$") and bool(_URLISH.match(url)))
            or any(places.ip_host(h) for h in host_names)
            or places.drop_host(url)
        )
        vouched = not bad and places.vendor(url)
        u = self.unit
        if not bad and ("$" in url or not url):
            # an origin the unit never spells (an unset variable): no host to weigh
            severity = "critical" if u.where == "script" else ("high" if url else "medium")
        elif bad or vouched or u.where != "document":
            severity = self.sev(vouched=vouched)
        else:
            # an HTTPS installer of a named host in a reference document: how vendors document their
            # CLIs, and text cannot tell it from a fake one (tests/supply/benign/vendor-cli-install)
            severity = "high"
        self.add("LS311", severity, f"{f.ev} | {sink}")

    def decoder(self, name: str, args: list[str], tin: _Flow, taint: dict[str, object]) -> _Flow:
        text = tin.text
        kind = ""
        if name in ("printf", "echo"):
            body = " ".join(a for a in args if not (name == "echo" and a.startswith("-")))
            if name == "printf" and args:
                body = args[0] if len(args) == 1 or "%" not in args[0] else args[0].replace("%s", " ".join(args[1:]), 1)
                if "%b" in body and len(args) > 1:  # %b expands the escapes of its argument
                    body = body.replace("%b", " ".join(args[1:]), 1)
            if not re.search(r"\\(?:x[0-9a-f]{2}|[0-7]{3}|u[0-9a-f]{4})", body, re.I):
                return _Flow({**taint}, body)
            return _Flow({**taint, "decode": f"{name} escapes"}, _unescape(body))
        if name in ("base64", "base32", "basenc") and any(
            a in ("-d", "--decode", "-D") or (a.startswith("-") and not a.startswith("--") and "d" in a) for a in args
        ):
            kind = name + " -d"
            text = _b64(text) if name != "base32" else _b32(text)
        elif name == "openssl" and any(a in ("base64", "enc") for a in args) and "-d" in args:
            kind = "openssl base64 -d"
            text = _b64(text)
        elif name == "xxd" and any(a.startswith("-r") for a in args):
            kind = "xxd -r"
            text = _hex(text)
        elif name == "rev":
            kind = "rev"
            text = "\n".join(ln[::-1] for ln in text.split("\n")) if text else ""
        elif name == "tr" and len(args) >= 2 and re.search(r"n-za-m|N-ZA-M", " ".join(args[:2])):
            kind = "rot13"
            text = codecs.decode(text, "rot13") if text else ""
        elif name in ("gunzip", "zcat", "uudecode") or (name in ("gzip", "bzip2", "xz") and "-d" in args):
            kind = name
            text = ""
        else:
            return _Flow({**tin.taint, **taint}, tin.text if name == "tr" else "")
        if not text and tin.text:
            text = next(iter(decode.decodings(tin.text)), "")
        return _Flow({**tin.taint, **taint, "decode": kind}, text)

    def emit(self, name: str, args: list[str], tin: _Flow, taint: dict[str, object]) -> _Flow:
        if name == "cat":
            flow = _Flow(dict(taint))
            files = [a for a in args if not a.startswith("-")]
            if not files:
                return tin
            for a in files:
                p = self.norm(a)
                if p in self.files:
                    flow = flow.merged(self.files[p])
                elif places.credential(a):
                    flow.taint["cred"] = a
            return flow
        body = " ".join(a for a in args if not (name == "echo" and a in ("-n", "-E")))
        return _Flow(dict(taint), body)

    def token(self, name: str, args: list[str]) -> str:
        """The credential a command prints (``gh auth token``, ``aws configure export-credentials``,
        ``gcloud auth print-access-token`` …), "" when none."""
        words = [a for a in args if not a.startswith("-")]
        for cli, verbs in places.TOKEN_COMMANDS.items():
            if name == cli and any(tuple(words[: len(v)]) == v for v in verbs):
                return f"{name} {' '.join(words[:3])}".strip()  # a read only when it is sent on
        return ""

    def creds_read(self, name: str, args: list[str]) -> str:
        """What secret store this command reads ("" when none), noted for the unit."""
        if (
            name == "security"
            and args[:1]
            and re.match(r"(?:find|dump)-(?:generic|internet)-password|dump-keychain|find-certificate", args[0])
        ):
            self.creds.append((self.line, f"keychain ({args[0]})"))
            return "keychain"
        if name == "gpg" and any(a.startswith("--export-secret") for a in args):
            self.creds.append((self.line, "gpg --export-secret-keys"))
            return "gpg secret keys"
        if name not in _READERS:
            return ""
        files = [a for a in args if not a.startswith("-")]
        if name in ("cp",) and len(files) >= 2:
            files = files[:-1]
        for a in files:
            if places.credential(a):
                self.creds.append((self.line, f"{name} {a}"))
                return a
        return ""

    def crontab(self, args: list[str], tin: _Flow) -> _Flow:
        if "-l" in args or "-r" in args:
            return _Flow(text="")
        if "-e" in args:
            self.add("LS911", "medium" if self.unit.where != "script" else "high", "crontab -e")
            return _Flow()
        files = [a for a in args if not a.startswith("-") or a == "-"]
        content = tin if not files or files[0] == "-" else self.files.get(self.norm(files[0]), _Flow())
        self.persist(f"crontab {' '.join(args) or '-'} ← {content.text}", content, "crontab")
        return _Flow()

    def service(self, name: str, args: list[str]) -> _Flow:
        verbs = {"enable", "load", "bootstrap", "submit", "defaults", "on", "add", "/create", "link"}
        if any(a.lower() in verbs for a in args):
            unit = " ".join(a for a in args if not a.startswith("-"))
            self.add("LS911", self.sev(floor="high"), f"{name} {unit}")
        if (
            name == "systemctl"
            and any(a in ("stop", "disable", "mask") for a in args)
            and any(re.match(r"(?:firewalld|apparmor|ufw|auditd|selinux|clamav|falcon|osquery)", a) for a in args)
        ):
            self.add("LS912", self.sev(), f"systemctl {' '.join(args)}")
        return _Flow()

    def persist(self, ev: str, content: _Flow, place: str, copied: bool = False) -> None:
        text = content.text
        payload = "fetch" in content.taint or "decode" in content.taint or bool(_NETWORK_WORDS.search(text))
        if not payload and self.unit.where == "script" and places.inert(text, place, shipped=copied and not text):
            severity = "high"  # a PATH line, a service running a local program, a file the skill ships
        elif payload or self.unit.where == "script":
            severity = self.sev(floor="critical") if payload else "critical"
            if self.unit.where != "script" and self.unit.discussed:
                severity = "high"
        elif (
            text
            and all(_BENIGN_RC.match(ln) for ln in text.split("\n"))
            and places.persistence(place)
            and "rc" in _kind(place)
        ):
            severity = "medium"
        else:
            severity = "high"
        self.add("LS911", severity, ev)
        self.preload(ev, content, place)
        if re.search(r"settings[\w.-]*\.json$", place) and re.search(
            r"bypassPermissions|dangerously|disableAllHooks\W+true|\"sandbox\W+(?:false|off)", text, re.I
        ):
            self.add("LS912", self.sev(), f"{ev}: {text}")

    def safety(self, name: str, args: list[str]) -> None:
        low = [a.lower() for a in args]
        joined = " ".join(args)
        off = places.AGENT_SAFETY_OFF & set(low)
        if (
            off - {"--yolo", "bypasspermissions", "danger-full-access"}
            or ("--yolo" in off and name in _AGENTS)
            or ("bypasspermissions" in off and "--permission-mode" in low)
            or ("danger-full-access" in off and {"--sandbox", "-s"} & set(low))
        ):
            # an agent started with its prompts or sandbox off: critical unless the skill documents
            # the flag among the CLI's options (a skill about driving that CLI) or discusses it
            told = off <= self.unit.documented and self.unit.where != "script" and self.unit.context != "file"
            self.add("LS912", "high" if told or _contained(name, args) else self.sev(), f"{name} {joined}")
        if (
            (name == "setenforce" and low[:1] in (["0"], ["permissive"]))
            or (name == "ufw" and "disable" in low)
            or (name == "spctl" and any(a in ("--master-disable", "--global-disable") for a in low))
            or (name == "csrutil" and "disable" in low)
        ):
            self.add("LS912", self.sev(), f"{name} {joined}")
        if (
            (name == "iptables" and ("-F" in args or "--flush" in low or args[-2:] == ["INPUT", "ACCEPT"]))
            or (name == "defaults" and "lsquarantine" in " ".join(low) and any(v in low for v in ("no", "false", "0")))
            or (name == "sed" and "/etc/selinux/config" in args and "disabled" in joined.lower())
        ):
            self.add("LS912", self.sev(), f"{name} {joined}")
        if name == "git" and "config" in low and "core.hookspath" in low:
            self.add("LS911", self.sev(floor="high"), f"git {joined}")
        if name == "git" and "config" in low and re.search(r"http\.sslverify\s+(?:false|0|no)", joined, re.I):
            self.add("LS912", "high", f"git {joined}")
        if name in ("npm", "yarn", "pnpm") and "strict-ssl" in joined and "false" in low:
            self.add("LS912", "high", f"{name} {joined}")
        if (
            (name == "unset" and any(a in ("histfile", "histsize") for a in low))
            or (name == "set" and low[:2] == ["+o", "history"])
            or (name == "history" and "-c" in low)
        ):
            self.add("LS912", "high", f"{name} {joined}")
        if name == "export" or name in ("declare", "local"):
            for a in args:
                k, eq, v = a.partition("=")
                if eq:
                    self.vars[k] = (v, {})
                    self.safety_env(k, v)
        if name == "chattr" and any(re.match(r"^[+-]\w*[ia]", a) for a in args):
            self.add("LS912", "high", f"chattr {joined}")
        if (name == "xattr" and any("com.apple.quarantine" in a for a in args)) or (name == "xattr" and "-c" in low):
            target = args[-1] if args else ""
            fetched = "fetch" in self.files.get(self.norm(target), _Flow()).taint
            self.add("LS912", self.sev() if fetched else "high", f"xattr {joined}")

    def classes(
        self, name: str, args: list[str], tin: _Flow, taint: dict[str, object], stages: list[str]
    ) -> _Flow | None:
        """Remote shells, credential sends, persistence and safety-off spellings judged in
        :mod:`ledger.scanner.meaning.classes`; a flow when the command's output is decided there."""
        return classes.judge(self, name, args, tin, taint, stages)

    def preload(self, ev: str, content: _Flow, place: str) -> None:
        classes.preload(self, ev, content, place)

    def safety_env(self, name: str, value: str) -> None:
        v = value.strip("'\"").lower()
        if (
            (name == "NODE_TLS_REJECT_UNAUTHORIZED" and v == "0")
            or (name == "PYTHONHTTPSVERIFY" and v == "0")
            or (name == "GIT_SSL_NO_VERIFY" and v in ("1", "true", "yes"))
            or (name in ("CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE") and v == "")
        ):
            self.add("LS912", "high", f"{name}={value}")
        if (name in ("HISTFILE",) and v in ("/dev/null", "")) or (
            name in ("HISTSIZE", "HISTFILESIZE", "SAVEHIST") and v == "0"
        ):
            self.add("LS912", "high", f"{name}={value}")


_CRON_FIELD = re.compile(r"^(?:\*|\d{1,2}|\*/\d{1,2}|\d{1,2}(?:[-,/]\d{1,2})+|[a-z]{3}(?:-[a-z]{3})?)$", re.I)


_HOST_REACH = re.compile(
    r"^--privileged$|^--(?:pid|ipc|uts|userns)=?host$|docker\.sock|^(?:-v|--volume|--mount)?=?\s*(?:/|~|\$HOME|\$\{HOME\}|/home/[^/:]*|/root|/etc|/Users/[^/:]*)(?::|$|,)"
    r"|(?:source|src)=(?:/|~|\$HOME|/home/[^/,]*|/root|/etc)(?:,|$)|^--cap-add=?(?:ALL|SYS_ADMIN)$",
    re.I,
)


def _contained(name: str, args: list[str]) -> bool:
    """Whether ``name args`` starts its command inside a container (``docker``/``podman run|exec``,
    ``devcontainer exec``) that reaches none of the host: not privileged, no host namespace, no
    mount of the home directory, ``/``, ``/etc`` or the container engine's socket.  An agent with
    its prompts off in there is what a devcontainer is for: high, not critical."""
    engine = name in ("docker", "podman", "nerdctl") and args[:1] in (["run"], ["exec"], ["container"])
    if not (engine or (name == "devcontainer" and args[:1] == ["exec"])):
        return False
    words = [a for a in args if a != "-v"] + [a + b for a, b in itertools.pairwise(args) if a == "-v"]
    return not any(_HOST_REACH.search(w) for w in words)


def _skill_path(path: str) -> bool:
    """Whether ``path`` names a file of the skill: relative, or beside the running script."""
    p = re.sub(r"^\$\(\s*dirname\s+\S*\$\{?0\}?\S*\s*\)|^\$\{?(?:SCRIPT_DIR|HERE|DIR|SKILL_DIR)\}?", ".", path.strip())
    return not p.startswith(("/", "~", "$", "-")) and "://" not in p and ".." not in p.split("/")


def _cron_fields(argv: list[str]) -> int:
    """How many leading words are a cron schedule (``*/5 * * * *``, ``@reboot``): 0 when none."""
    if argv and argv[0] in ("@reboot", "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually", "@midnight"):
        return 1 if len(argv) > 1 else 0
    if len(argv) > 5 and all(_CRON_FIELD.match(a) for a in argv[:5]) and any(c in argv[0] + argv[1] for c in "*/"):
        return 5
    return 0


_DOTENV = re.compile(r"(?:^|[\s/])\.env(?:\.\w+)?$")


def _kind(place: str) -> str:
    return "rc" if re.search(r"(?:rc|profile|zshenv|zlogin|bash_login|config\.fish|environment)$", place) else "other"


def _name(path0: str) -> str:
    name = posixpath.basename(path0.replace("\\", "/")) or path0
    name = name.removesuffix(".exe")
    if re.fullmatch(r"python[\d.]*|pypy\d?", name):
        return "python"
    if name in ("nodejs",):
        return "node"
    if name.lower() in ("powershell", "pwsh"):
        return "powershell" if name.lower() == "powershell" else "pwsh"
    if name in ("$SHELL", "${SHELL}", "$BASH", "${BASH}"):
        return "sh"
    if name.startswith(("nc.", "netcat.")):
        return "nc"
    return name


def _hosts(url: str) -> list[str]:
    m = re.match(r"^(?:[a-z][\w+.-]*://)?(?:[^/@\s]*@)?(\[[^\]]+\]|[^/:\s?#]+)", url, re.I)
    return [m.group(1).strip("[]").lower()] if m and m.group(1) else []


def _b64(text: str) -> str:
    s = re.sub(r"\s", "", text)
    if not s:
        return ""
    for fn in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = fn(s + "=" * (-len(s) % 4))
            return raw.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
    return ""


def _b32(text: str) -> str:
    s = re.sub(r"\s", "", text).upper()
    try:
        return base64.b32decode(s + "=" * (-len(s) % 8)).decode("utf-8")
    except (binascii.Error, ValueError):
        return ""


def _hex(text: str) -> str:
    s = re.sub(r"[\s:]|\\x|0x", "", text)
    try:
        return bytes.fromhex(s).decode("utf-8")
    except ValueError:
        return ""


def _ps_decode(payload: str) -> str:
    try:
        raw = base64.b64decode(payload + "=" * (-len(payload) % 4))
        return raw.decode("utf-16-le")
    except (binascii.Error, ValueError):
        return ""


def analyse(unit: Unit) -> list[Finding]:
    """The behaviour findings of one shell unit (docs/scanner.md, "Behaviours").  bashlex gets at
    most BASHLEX_SECONDS for the whole unit (nested ``eval``/``bash -c`` readings included)."""
    if _DEADLINE:
        return _analyse(unit)
    _DEADLINE.append(time.monotonic() + BASHLEX_SECONDS)
    try:
        return _analyse(unit)
    finally:
        _DEADLINE.clear()


def _analyse(unit: Unit) -> list[Finding]:
    if not worth(unit.text):
        return []
    text, obfuscated = _ansi_c(unit.text)
    text, bodies = _heredocs(text)
    reader = _Reader(unit, obfuscated)
    reader.heredocs = bodies
    pieces = _parse(text)
    base, at = 0, 0  # newlines before the piece, counted once over the text (linear)
    repeats: dict[tuple[str, int], int] = {}
    for k, (offset, pipes) in enumerate(pieces):
        reader.text = text[offset : pieces[k + 1][0] if k + 1 < len(pieces) else len(text)]
        base, at = base + text.count("\n", at, offset), offset
        reader.base_line = base
        seen = repeats[key] = repeats.get(key := (reader.text.strip(), reader.vars.version), 0) + 1
        if seen > MAX_REPEATS:
            continue  # the same line, with the same variables, judged MAX_REPEATS times already
        reader.line = unit.line + reader.base_line
        reader.run(pipes)
    # a read and a send in one unit meet even when no pipe joins them (tar to a file, then curl -T
    # it); a .env file is loaded by every API client, so only a flow from it counts
    secrets = [(line, what) for line, what in reader.creds if not _DOTENV.search(what)]
    if secrets and reader.sends and not reader.exfil:
        line, what = secrets[0]
        reader.line = reader.sends[0][0]
        reader.add("LS412", reader.sev(always=True), f"{what} read, sent: {reader.sends[0][1]}")
    elif reader.creds and not reader.exfil:
        for line, what in reader.creds[:3]:
            reader.line = line
            severity = "high" if unit.where in ("script", "instructions") else "medium"
            reader.add("LS411", severity, what)
    return list(reader.findings.values())
