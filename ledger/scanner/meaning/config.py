"""Configuration a skill writes or ships: agent settings and hooks, crontabs, shell rc files,
systemd units, launchd plists (``config:<kind>`` units).

What persists is LS911: ``critical`` when what it runs carries network or payload code (a fetch,
a socket, a decoded blob, a credential sent out) or when a script writes it, ``high`` otherwise,
``medium`` for an rc file of plain ``export``/``alias`` lines.  What it runs is handed to the
shell analyser as its own unit.  Settings that turn an agent's safety off are LS912 (critical:
permission bypass, every Bash command allowed, hooks or the sandbox turned off; high: TLS
verification off through the environment).
"""

from __future__ import annotations

import json
import plistlib
import re
import shlex
from collections.abc import Iterator
from typing import Any

from ledger.scanner.meaning import places
from ledger.scanner.meaning.python import severity
from ledger.scanner.meaning.units import Unit, finding
from ledger.scanner.meaning.units import analyse as analyse_unit
from ledger.scanner.rules import Finding

__all__ = ["KINDS", "analyse"]

KINDS = ("settings", "crontab", "rc", "systemd", "plist")
_PAYLOAD = re.compile(
    r"\b(?:curl|wget|nc|ncat|netcat|socat|telnet|base64|xxd|openssl\s+s_client|python\d?\s+-c|perl\s+-e|ruby\s+-e"
    r"|node\s+-e|powershell|iex|invoke-expression|bash\s+-i|sh\s+-i)\b|https?://|/dev/(?:tcp|udp)/|\beval\b",
    re.I,
)
_STRONG = ("LS311", "LS312", "LS313", "LS412")
_PLAIN_RC = re.compile(
    r"^\s*(?:export\s+[A-Za-z_]\w*=|alias\s+[\w.-]+=|[A-Za-z_]\w*=|source\s+|\.\s+|#|$|fi\b|if\b|then\b)"
)
_TLS_OFF = {"NODE_TLS_REJECT_UNAUTHORIZED": "0", "PYTHONHTTPSVERIFY": "0", "GIT_SSL_NO_VERIFY": "1"}
_BYPASS_KEYS = re.compile(r"dangerously-?skip-?permissions|skipDangerousModePermissionPrompt", re.I)
_ALLOW_ALL = re.compile(r"^(?:\*|Bash|Bash\(\*\)|Bash\(:\*\)|Bash\(\*:\*\))$")


def analyse(unit: Unit) -> list[Finding]:
    """The behaviour findings of one configuration unit (``unit.lang`` is ``config:<kind>``)."""
    kind = unit.lang.split(":", 1)[1] if ":" in unit.lang else _guess(unit)
    reader = {"settings": _settings, "crontab": _crontab, "rc": _rc, "systemd": _systemd, "plist": _plist}.get(kind)
    return list(reader(unit)) if reader else []


def _guess(unit: Unit) -> str:
    name = unit.path.rsplit("/", 1)[-1].lower()
    if name.endswith(".json"):
        return "settings"
    if name.endswith((".service", ".timer")):
        return "systemd"
    if name.endswith(".plist"):
        return "plist"
    if "cron" in name:
        return "crontab"
    return "rc"


def _run(unit: Unit, cmd: str, line_offset: int) -> tuple[list[Finding], bool]:
    """The shell analyser's findings for ``cmd``, and whether it carries network or payload code."""
    found = analyse_unit(unit.inner("sh", cmd, line_offset=line_offset, context="argument"))
    named = bool(_PAYLOAD.search(cmd)) and not places.backup_job(cmd)  # restic's https:// repository is no payload
    payload = named or any(f.rule in _STRONG or f.severity == "critical" for f in found)
    return found, payload


def _persist(unit: Unit, line_offset: int, what: str, payload: bool, plain: bool = False) -> Finding:
    top = "critical" if payload or unit.where == "script" else "medium" if plain else "high"
    return finding("LS911", severity(unit, top), unit.path, unit.line + line_offset, what)


def _line_of(text: str, needle: str) -> int:
    """0-based line of the first occurrence of ``needle`` in ``text`` (0 when absent)."""
    i = text.find(needle)
    return text.count("\n", 0, i) if i >= 0 else 0


# --- agent settings ------------------------------------------------------------------------


def _settings(unit: Unit) -> Iterator[Finding]:
    try:
        doc = json.loads(unit.text)
    except (ValueError, RecursionError):
        yield from _settings_text(unit)
        return
    if not isinstance(doc, dict):
        return
    text = unit.text
    for cmd in _hook_commands(doc.get("hooks")):
        off = _line_of(text, json.dumps(cmd)[1:-1][:60])
        found, payload = _run(unit, cmd, off)
        yield from found
        yield _persist(unit, off, f"agent hook runs: {cmd}", payload)
    perms = doc.get("permissions") if isinstance(doc.get("permissions"), dict) else {}
    mode = perms.get("defaultMode") or doc.get("defaultMode")
    if mode == "bypassPermissions":
        yield _off(unit, _line_of(text, "bypassPermissions"), "critical", "permissions.defaultMode: bypassPermissions")
    for key in _walk_keys(doc):
        if _BYPASS_KEYS.search(key):
            yield _off(unit, _line_of(text, key), "critical", f"agent permission bypass: {key}")
    allow = perms.get("allow") if isinstance(perms.get("allow"), list) else []
    for rule in allow:
        if isinstance(rule, str) and _ALLOW_ALL.match(rule.replace(" ", "")):
            yield _off(unit, _line_of(text, rule), "critical", f"every shell command allowed: {rule}")
    if doc.get("disableAllHooks") is True:
        yield _off(unit, _line_of(text, "disableAllHooks"), "critical", "disableAllHooks: true")
    sandbox = doc.get("sandbox")
    if isinstance(sandbox, dict) and sandbox.get("enabled") is False:
        yield _off(unit, _line_of(text, "sandbox"), "critical", "sandbox turned off")
    env = doc.get("env") if isinstance(doc.get("env"), dict) else {}
    for k, v in env.items():
        if _TLS_OFF.get(k) == str(v).strip().lower() or (k == "GIT_SSL_NO_VERIFY" and str(v).lower() == "true"):
            yield _off(unit, _line_of(text, k), "high", f"TLS verification off: {k}={v}")
    servers = doc.get("mcpServers") if isinstance(doc.get("mcpServers"), dict) else {}
    for name, spec in servers.items():
        if isinstance(spec, dict) and isinstance(spec.get("command"), str):
            args = spec.get("args") if isinstance(spec.get("args"), list) else []
            cmd = shlex.join([spec["command"], *(str(a) for a in args)])
            off = _line_of(text, str(name))
            found, payload = _run(unit, cmd, off)
            yield from found
            if payload:
                yield _persist(unit, off, f"MCP server {name} runs: {cmd}", True)


def _hook_commands(hooks: Any) -> Iterator[str]:
    """Every ``command`` of a Claude Code ``hooks`` mapping (event -> [{matcher, hooks: [{command}]}])."""
    if not isinstance(hooks, dict):
        return
    for entries in hooks.values():
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            inner = entry.get("hooks") if isinstance(entry.get("hooks"), list) else [entry]
            for h in inner:
                if isinstance(h, dict) and isinstance(h.get("command"), str):
                    yield h["command"]


def _walk_keys(doc: Any, depth: int = 0) -> Iterator[str]:
    if depth > 20:
        return
    if isinstance(doc, dict):
        for k, v in doc.items():
            if v is not False and v is not None:
                yield str(k)
            yield from _walk_keys(v, depth + 1)
    elif isinstance(doc, list):
        for v in doc:
            if isinstance(v, str):
                yield v
            else:
                yield from _walk_keys(v, depth + 1)


def _off(unit: Unit, offset: int, top: str, what: str) -> Finding:
    return finding("LS912", severity(unit, top), unit.path, unit.line + offset, what)


def _settings_text(unit: Unit) -> Iterator[Finding]:
    """Settings that do not parse as JSON (JSONC, a fragment): read line by line."""
    for i, line in enumerate(unit.text.split("\n")):
        if "bypassPermissions" in line or _BYPASS_KEYS.search(line):
            yield _off(unit, i, "critical", f"agent permission bypass: {line.strip()}")
        m = re.search(r'"command"\s*:\s*"((?:[^"\\]|\\.)*)"', line)
        if m:
            try:
                cmd = json.loads(f'"{m.group(1)}"')
            except ValueError:
                cmd = m.group(1)
            found, payload = _run(unit, cmd, i)
            yield from found
            yield _persist(unit, i, f"agent hook runs: {cmd}", payload)


# --- crontab, rc files, systemd, launchd ----------------------------------------------------

_CRON = re.compile(
    r"^\s*(?:@(?:reboot|yearly|annually|monthly|weekly|daily|midnight|hourly)|(?:\S+\s+){4}\S+)\s+(?:(?:root|\w+)\s+)??(.+)$"
)


def _crontab(unit: Unit) -> Iterator[Finding]:
    for i, line in enumerate(unit.text.split("\n")):
        s = line.strip()
        if not s or s.startswith("#") or re.match(r"^[A-Za-z_]\w*\s*=", s):
            continue
        m = _CRON.match(s)
        if not m:
            continue
        cmd = m.group(1)
        found, payload = _run(unit, cmd, i)
        yield from found
        yield _persist(unit, i, f"cron job: {s}", payload)


def _rc(unit: Unit) -> Iterator[Finding]:
    lines = unit.text.split("\n")
    payload_any = False
    first = None
    plain = True
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        first = i if first is None else first
        found, payload = _run(unit, s, i)
        yield from found
        payload_any |= payload
        plain &= bool(_PLAIN_RC.match(s)) and not payload
    if first is not None:
        yield _persist(unit, first, f"shell rc file: {lines[first].strip()}", payload_any, plain=plain)


def _systemd(unit: Unit) -> Iterator[Finding]:
    lines = unit.text.split("\n")
    cmds = []
    for i, line in enumerate(lines):
        m = re.match(r"^\s*Exec(?:Start|StartPre|StartPost|Stop|Reload)\s*=\s*[-@:+!]*(.+)$", line)
        if m:
            cmds.append((i, m.group(1).strip()))
    if not cmds and not re.search(r"^\s*\[(?:Service|Timer|Unit|Install)\]", unit.text, re.M):
        return
    payload_any = False
    for i, cmd in cmds:
        found, payload = _run(unit, cmd, i)
        yield from found
        payload_any |= payload
    at, shown = cmds[0] if cmds else (0, "a systemd unit")
    yield _persist(unit, at, f"systemd unit runs: {shown}", payload_any)


def _plist(unit: Unit) -> Iterator[Finding]:
    argv: list[str] = []
    try:
        doc = plistlib.loads(unit.text.encode("utf-8"))
    except Exception:  # plistlib raises several kinds on hostile input
        doc = None
    if isinstance(doc, dict):
        if isinstance(doc.get("ProgramArguments"), list):
            argv = [str(a) for a in doc["ProgramArguments"]]
        elif isinstance(doc.get("Program"), str):
            argv = [doc["Program"]]
    else:
        m = re.search(r"<key>\s*ProgramArguments\s*</key>\s*<array>(.*?)</array>", unit.text, re.S)
        if m:
            argv = re.findall(r"<string>(.*?)</string>", m.group(1), re.S)
    if not argv:
        return
    if len(argv) >= 3 and argv[1] in ("-c", "-lc") and re.search(r"(?:^|/)(?:ba|z|da)?sh$", argv[0]):
        cmd = argv[2]
    else:
        cmd = shlex.join(argv)
    off = _line_of(unit.text, "ProgramArguments")
    found, payload = _run(unit, cmd, off)
    yield from found
    yield _persist(unit, off, f"launchd job runs: {cmd}", payload)
