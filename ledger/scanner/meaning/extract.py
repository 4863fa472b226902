"""Cutting a file into units: every place a skill holds code (docs/scanner.md, "Behaviours").

* a script (by extension, by shebang, or marked executable) is one unit of its language;
* a configuration file known by name (agent settings, crontabs, shell rc files, systemd units,
  launchd plists) is one ``config:<kind>`` unit;
* in Markdown and other documents: each fenced block (its info string gives the language; none
  is shell), each inline code span, and each prose line that reads as a command (``$ cmd``,
  ``Run: cmd``, ``execute cmd``, a numbered step that starts with a command).

Whether the text around a unit *discusses* an attack rather than asks for it reuses the text
rules' own reading (:data:`ledger.scanner.rules._DISCUSS` and ``_WARNED``): in SKILL.md only
a warning counts (a "for example" is too cheap a disguise there), elsewhere either does.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ledger.scanner.meaning.shell import worth
from ledger.scanner.meaning.units import Unit
from ledger.scanner.rules import _DISCUSS, _WARNED
from ledger.scanner.text import TextFile

__all__ = ["FENCE_LANGS", "Fence", "fence_at", "prompts", "steps", "units"]

FENCE_LANGS = {
    **dict.fromkeys(
        ("", "sh", "bash", "zsh", "shell", "console", "shell-session", "shellsession", "terminal", "ksh"), "sh"
    ),
    **dict.fromkeys(("text", "txt", "plaintext", "plain", "cmd", "command", "commands", "fish", "dash", "ash"), "sh"),
    **dict.fromkeys(("bat", "batch", "doscon"), "sh"),  # Windows command lines: netsh, reg, schtasks
    **dict.fromkeys(("python", "py", "python3", "pycon", "ipython"), "python"),
    **dict.fromkeys(("js", "javascript", "node", "nodejs", "mjs", "cjs", "ts", "typescript"), "js"),
    **dict.fromkeys(("powershell", "ps1", "pwsh", "ps", "posh"), "powershell"),
    **dict.fromkeys(("ruby", "rb"), "ruby"),
    **dict.fromkeys(("perl", "pl"), "perl"),
    "php": "php",
    **dict.fromkeys(("crontab", "cron"), "config:crontab"),
    **dict.fromkeys(("systemd", "service"), "config:systemd"),
}
_EXT_LANGS = {
    **dict.fromkeys((".sh", ".bash", ".zsh", ".ksh", ".fish", ".command"), "sh"),
    ".py": "python",
    **dict.fromkeys((".js", ".mjs", ".cjs", ".ts"), "js"),
    **dict.fromkeys((".ps1", ".psm1"), "powershell"),
    ".rb": "ruby",
    ".pl": "perl",
    ".php": "php",
}
_SHEBANG = re.compile(r"#!\s*(?:/usr)?(?:/local)?/bin/(?:env\s+(?:-S\s+)?)?([\w.-]+)")
_SHEBANG_LANGS = (
    (re.compile(r"(?:ba|z|da|k|a|fi)?sh$"), "sh"),
    (re.compile(r"python[\d.]*$"), "python"),
    (re.compile(r"(?:node|nodejs|deno|bun|tsx|ts-node)$"), "js"),
    (re.compile(r"pwsh|powershell"), "powershell"),
    (re.compile(r"ruby"), "ruby"),
    (re.compile(r"perl"), "perl"),
    (re.compile(r"php"), "php"),
)
_RC = {".bashrc", ".zshrc", ".profile", ".bash_profile", ".zprofile", ".zshenv", ".bash_login", ".kshrc"}
_FENCE = re.compile(r"[ \t]*(?:>\s*)?(`{3,}|~{3,})\s*([^`\s]*)")  # indented in a list item or quoted too
_INLINE = re.compile(r"(?<!`)(`{1,2})(?!`)(.+?)(?<!`)\1(?!`)|<code>(.+?)</code>", re.I)
# a prose line that asks for a command: "$ cmd", "Run: cmd", "execute cmd", "1. cmd"
_PROSE = re.compile(
    r"^\s*(?P<lead>(?:\d{1,2}[.)]|[-*+])\s+)?(?:\*\*)?"
    r"(?P<ask>\$\s+|(?:please\s+)?(?:run|execute|exec|type|paste|enter|then\s+run|now\s+run)\b(?:\s+this|\s+the\s+following)?(?:\s+command)?\s*:?\s+)?"
    r"(?P<cmd>.+)$",
    re.I,
)
_COMMAND_START = re.compile(
    r"^(?:sudo\s+|env\s+|nohup\s+|\(|\{)?(?:[\w./-]*/)?(?:curl|wget|fetch|aria2c|http|https|lwp-\w+|bash|sh|zsh|dash|ksh|eval|exec|source|python[\d.]*|node|perl|ruby|php|pwsh|powershell|nc|ncat|netcat|socat|telnet|openssl|base64|xxd|echo|printf|cat|cp|tar|zip|scp|rsync|crontab|systemctl|launchctl|chmod|chattr|xattr|spctl|setenforce|ufw|git|export|unset|set|mkfifo|rm|claude|codex|security|osascript)\b|^\.\s+|^\w+=\S",
)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*)$")
# "To install, run this in a terminal: cmd"
_CLAUSE = re.compile(
    r"^.{0,80}?\b(?:run|execute|paste|type|enter)\b(?:\s+(?:this|the\s+following|it))?(?:\s+command)?"
    r"(?:\s+(?:in|into)\s+(?:your|a|the)\s+(?:terminal|shell|console))?\s*:\s+(?P<cmd>.+)$",
    re.I,
)
_DOCKER_RUN = re.compile(r"^\s*RUN\s+(?!\[)(.*)$", re.I)


def _role(path: str, f: TextFile) -> str:
    if f.instructions:
        return "instructions"
    return "script" if f.script else "document"


def _config_kind(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1].lower()
    if name in ("settings.json", "settings.local.json") or re.search(r"(?:^|/)\.claude/settings[\w.-]*\.json$", path):
        return "settings"
    if name in ("crontab", "cron") or name.endswith(".cron"):
        return "crontab"
    if name in _RC:
        return "rc"
    if name.endswith((".service", ".timer")):
        return "systemd"
    if name.endswith(".plist"):
        return "plist"
    return None


def _script_lang(f: TextFile, text: str) -> str | None:
    lang = _EXT_LANGS.get(f.ext)
    if lang:
        return lang
    m = _SHEBANG.match(text)
    if m:
        for pattern, name in _SHEBANG_LANGS:
            if pattern.match(m.group(1)):
                return name
        return None
    return "sh" if f.script and not f.ext else None


EXACT_SPANS = 8  # inline spans per line whose discussion is judged with only their own code taken out
MAX_INLINE_UNITS = 64  # distinct inline spans per line read one by one; the rest are read as one unit


def _discussed(f: TextFile, lineno: int, heading: str, code: str = "") -> bool:
    """The text near line ``lineno`` (1-based; two lines before it and the line itself, its code
    taken out) or the section heading talks about an attack."""
    near = " ".join(f.lines[max(0, lineno - 3) : lineno])
    if code:
        near = near.replace(code, " ")
    line = f.lines[lineno - 1].lstrip()
    if line.startswith(("|", ">")):
        return True
    patterns = (_WARNED,) if f.instructions else (_WARNED, _DISCUSS)
    return any(p.search(near) or p.search(heading) for p in patterns)


def _discussed_bare(f: TextFile, lineno: int, heading: str) -> bool:
    near = _INLINE.sub(" ", " ".join(f.lines[max(0, lineno - 3) : lineno]))
    line = f.lines[lineno - 1].lstrip()
    patterns = (_WARNED,) if f.instructions else (_WARNED, _DISCUSS)
    return line.startswith(("|", ">")) or any(p.search(near) or p.search(heading) for p in patterns)


def units(path: str, text: str, executable: bool) -> Iterator[Unit]:
    """The code units of one text file."""
    f = TextFile(path, text, executable)
    where = _role(path, f)
    kind = _config_kind(path)
    if kind:
        yield Unit(f"config:{kind}", text, path, 1, "script" if f.script else "document", "file")
        if kind != "rc":
            return
    if f.script or kind == "rc":
        lang = "sh" if kind == "rc" else _script_lang(f, text)
        if lang:
            yield Unit(lang, text, path, 1, "script", "file")
        return
    name = path.rsplit("/", 1)[-1]
    if name == "package.json":
        yield from _npm_scripts(path, text)
        return
    if name in ("Dockerfile", "Containerfile") or name.endswith(".dockerfile"):
        yield from _build_lines(path, text, _DOCKER_RUN)
        return
    if name in ("Makefile", "makefile", "GNUmakefile") or name.endswith(".mk"):
        yield from _build_lines(path, text, re.compile(r"^\t(.*)$"))
        return
    if not f.doc or (text.startswith("#!") and not f.ext):
        lang = _script_lang(f, text) if text.startswith("#!") else None
        if lang:
            yield Unit(lang, text, path, 1, "script", "file")
        return
    if f.ext in (".md", ".markdown", ".mdx"):
        yield Unit("prose", text, path, 1, where, "prose")  # the whole file, read as steps (meaning/prose.py)
    yield from _document(f, where)


# a download to a named file: curl -o F, wget -O F, curl … > F (F is looked for in a later step)
_SAVED = re.compile(
    r"\b(?:curl|wget|aria2c|fetch)\b[^\n|;&]{0,400}?(?:\s-\w*[oO]\s*|\s--output(?:-document)?[=\s]|\s>\s*)([^\s;&|'\"-][^\s;&|'\"]*)"
)


def steps(found: list[Unit]) -> Iterator[Unit]:
    """The shell units of one document that belong together read as one: a file downloaded in one
    step (``wget -O /tmp/p URL``) and run in a later one (``source /tmp/p``) is fetch-then-execute
    however many blocks and sentences lie between.  Yields one unit spanning the steps, its text
    padded with blank lines so each line keeps its number, only when a later step names a file an
    earlier one downloaded (the single units are judged as well)."""
    shell = [u for u in found if u.lang == "sh" and u.where != "script"]
    for i, u in enumerate(shell):
        names = {m.group(1) for m in _SAVED.finditer(u.text)}
        later = [v for v in shell[i + 1 :] if v.line > u.line and any(n in v.text for n in names)]
        if not later:
            continue
        group = [w for w in shell[i:] if w.line <= later[-1].line]
        rows: dict[int, list[str]] = {}
        for w in group:
            for k, row in enumerate(w.text.split("\n")):
                rows.setdefault(w.line - u.line + k, []).append(row)
        text = "\n".join(" ; ".join(rows.get(k, [""])) for k in range(max(rows) + 1))
        context = "fenced" if all(w.context == "fenced" for w in group) else u.context
        yield Unit("sh", text, u.path, u.line, u.where, context, all(w.discussed for w in group))


@dataclass(frozen=True)
class Fence:
    """A fenced code block: ``info`` its info string (lower case), ``body`` its lines (a quoted
    block's ``>`` taken off), ``end`` the index of its closing fence (or of the end of the text)."""

    info: str
    body: list[str]
    end: int


def fence_at(lines: list[str], i: int) -> Fence | None:
    """The fenced block that opens at ``lines[i]``, if one does: the one reading of Markdown fences
    that the analysers and the sandboxed run share (indented in a list item or quoted too; closed by
    a bare fence of the same character, at least as long)."""
    m = _FENCE.match(lines[i])
    if not m:
        return None
    fence, info = m.group(1), m.group(2).lower().strip("{}.")
    j, n = i + 1, len(lines)
    while j < n and not (
        (c := _FENCE.match(lines[j])) and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence) and not c.group(2)
    ):
        j += 1
    body = lines[i + 1 : j]
    if lines[i].lstrip().startswith(">"):
        body = [re.sub(r"^\s*>\s?", "", b) for b in body]
    return Fence(info, body, j)


def _document(f: TextFile, where: str) -> Iterator[Unit]:
    lines = f.lines
    # where the document saves a download to a file, shell outside the gate is kept too: a later
    # step may run the file (see :func:`steps`)
    saves = _SAVED.search(f.text) is not None
    heading = ""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        block = fence_at(lines, i)
        if block:
            info, body, j = block.info, block.body, block.end
            lang = FENCE_LANGS.get(info.split(",")[0])
            if info in ("json", "jsonc", "json5") and body:
                yield from _settings_block(f, where, i, body, heading)
            if lang == "sh":
                body = prompts(body)
            if lang and body and (lang != "sh" or saves or worth("\n".join(body))):
                yield Unit(
                    lang, "\n".join(body), f.path, i + 2, where, "fenced", _discussed(f, i + 1, heading + " " + info)
                )
            i = j + 1
            continue
        h = _HEADING.match(line)
        if h:
            heading = h.group(1)
        yield from _line(f, where, i + 1, line, heading, saves)
        i += 1


def prompts(body: list[str]) -> list[str]:
    """A console transcript keeps only its commands: lines after a ``$ `` prompt (others blanked,
    so line numbers hold); a block without prompts is all commands."""
    if not any(ln.lstrip().startswith("$ ") for ln in body):
        return body
    out = []
    for ln in body:
        s = ln.lstrip()
        out.append(s[2:] if s.startswith("$ ") else "")
    return out


def _line(f: TextFile, where: str, lineno: int, line: str, heading: str, saves: bool = False) -> Iterator[Unit]:
    if "`" in line or "<code>" in line.lower():
        seen: set[str] = set()
        rest: list[str] = []
        bare: list[bool] = []  # past EXACT_SPANS: judged once for the line, all its code taken out (linear)
        for m in _INLINE.finditer(line):
            code = html.unescape(m.group(2) or m.group(3) or "").strip().removeprefix("$ ")
            if not code or code in seen or not (saves or worth(code)):
                continue
            seen.add(code)
            if len(seen) > MAX_INLINE_UNITS:
                rest.append(code)
                continue
            if len(seen) <= EXACT_SPANS:
                discussed = _discussed(f, lineno, heading, m.group(0))
            else:
                bare = bare or [_discussed_bare(f, lineno, heading)]
                discussed = bare[0]
            yield Unit("sh", code, f.path, lineno, where, "inline", discussed)
        if rest:  # the spans past the cap are read together, one per line, never skipped
            bare = bare or [_discussed_bare(f, lineno, heading)]
            yield Unit("sh", "\n".join(rest), f.path, lineno, where, "inline", bare[0])
    prose = _INLINE.sub(" ", line) if "`" in line or "<code>" in line.lower() else line
    prose = re.sub(r"^\s*>\s?", "", prose)  # a quoted line reads like any other
    m = _PROSE.match(prose)
    c = None if m and (m.group("lead") or m.group("ask")) else _CLAUSE.match(prose)
    if not (m and (m.group("lead") or m.group("ask"))) and not c and prose.startswith(("    ", "\t")):
        c = re.match(r"\s+(?P<cmd>.+)$", prose)  # an indented code block
    m = c or m
    if m and (c or m.group("lead") or m.group("ask")):
        cmd = m.group("cmd").strip().rstrip(".").strip("*").strip()
        if _COMMAND_START.match(cmd) and worth(cmd):
            yield Unit("sh", cmd, f.path, lineno, where, "prose", _discussed(f, lineno, heading, cmd))


def _npm_scripts(path: str, text: str) -> Iterator[Unit]:
    """``package.json`` lifecycle and run scripts: npm runs ``preinstall``/``postinstall`` unread."""
    try:
        doc = json.loads(text)
    except ValueError:
        return
    scripts = doc.get("scripts") if isinstance(doc, dict) else None
    if not isinstance(scripts, dict):
        return
    for key, value in scripts.items():
        if isinstance(value, str) and worth(value):
            at = text.find(json.dumps(key))
            line = text.count("\n", 0, at) + 1 if at >= 0 else 1
            yield Unit("sh", value, path, line, "script", "argument")


def _build_lines(path: str, text: str, pattern: re.Pattern[str]) -> Iterator[Unit]:
    """Dockerfile ``RUN`` lines and Makefile recipe lines (joined at a trailing backslash): build
    steps a user runs without reading them."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = pattern.match(lines[i])
        if not m:
            i += 1
            continue
        start, body = i, [m.group(1)]
        while body[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            body[-1] = body[-1].rstrip()[:-1]
            body.append(lines[i].strip())
        cmd = " ".join(body).strip().lstrip("@-")
        if worth(cmd):
            yield Unit("sh", cmd, path, start + 1, "script", "argument")
        i += 1


_SETTINGS_NEAR = re.compile(r"settings(?:\.local)?\.json|\.claude/|\bhooks?\b", re.I)
_HOOK_COMMAND = re.compile(r'"command"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _settings_block(f: TextFile, where: str, fence: int, body: list[str], heading: str) -> Iterator[Unit]:
    """A JSON block shown as agent settings (``settings.json`` or hooks named just before it): the
    settings as a ``config:settings`` unit, and each hook ``command`` as shell."""
    near = " ".join(f.lines[max(0, fence - 3) : fence]) + " " + heading
    text = "\n".join(body)
    if not (_SETTINGS_NEAR.search(near) or '"hooks"' in text):
        return
    discussed = _discussed(f, fence + 1, heading)
    yield Unit("config:settings", text, f.path, fence + 2, where, "fenced", discussed)
    for k, line in enumerate(body):
        for m in _HOOK_COMMAND.finditer(line):
            try:
                cmd = json.loads('"' + m.group(1) + '"')
            except ValueError:
                continue
            if worth(cmd):
                yield Unit("sh", cmd, f.path, fence + 2 + k, where, "fenced", discussed)
