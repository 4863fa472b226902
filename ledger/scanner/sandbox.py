"""The sandboxed run (``ledger-run/1``): a skill's scripts and Markdown command blocks executed under
bubblewrap and watched by strace, their behaviour turned into findings (docs/scanner.md, "The
sandboxed run"; ADR 56).

Each script and each fenced ``sh``/``bash``/``shell``/``zsh``/``console``/``python`` block runs in
its own sandbox: every namespace unshared (no network: only a loopback), ``/usr`` read-only, a
fake ``/etc`` (``nameserver 127.0.0.1``, so a name lookup is a UDP query to loopback whose bytes
strace records), a fake HOME seeded with canary credentials, the skill read-only at ``/skill``, a
scratch copy of it as the working directory ``/work``, the root read-only, the environment cleared
to a minimal one, a time and an output cap.  strace runs *outside* the sandbox (the traced program
can neither reach nor rewrite its trace) with one file per process.  Nothing runs when bubblewrap
or strace is missing or cannot build the sandbox: :class:`SandboxUnavailable` says why.
"""

from __future__ import annotations

import base64
import contextlib
import os
import posixpath
import re
import resource
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ledger._env import child_env
from ledger.errors import SkillError
from ledger.scanner.meaning.extract import fence_at, prompts
from ledger.scanner.rules import Finding
from ledger.scanner.static import Verdict, _capped
from ledger.scanner.text import detail

__all__ = [
    "OUTPUT_CAP",
    "RUNNER",
    "TIMEOUT",
    "Item",
    "SandboxUnavailable",
    "available",
    "items",
    "run_skill",
    "run_verdict",
]

RUNNER = "ledger-run/1"
TIMEOUT = 10.0  # seconds per script or block
OUTPUT_CAP = 1 << 20  # bytes of stdout+stderr per script before it is stopped
FILE_CAP = 64 << 20  # bytes one file written in the sandbox may reach (RLIMIT_FSIZE; strace's trace files too)
TRACE_CAP = 32 << 20  # bytes of one process's trace read back
PROC_HEADROOM = 256  # processes the sandbox may add to this user's count (RLIMIT_NPROC)
HOME, WORK, SKILL, RUN = "/home/user", "/work", "/skill", "/ledger-run"
_TRACED = (
    "execve,connect,bind,listen,sendto,sendmsg,sendmmsg,openat,open,creat,mkdir,mkdirat,rename,renameat,"
    "renameat2,unlink,unlinkat,symlink,symlinkat,link,linkat,truncate,chdir,fchdir,dup2,dup3,"
    "clone,clone3,fork,vfork"
)

# canary credentials: path under HOME (or WORK for .env) -> a template holding {token}
_CANARIES = {
    f"{HOME}/.ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n{token}\n-----END OPENSSH PRIVATE KEY-----\n",
    f"{HOME}/.ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\n{token}\n-----END OPENSSH PRIVATE KEY-----\n",
    f"{HOME}/.aws/credentials": "[default]\naws_access_key_id = AKIA{token}\naws_secret_access_key = {token}\n",
    f"{HOME}/.config/gcloud/application_default_credentials.json": '{{"type": "authorized_user", "client_secret": "{token}", "refresh_token": "{token}"}}\n',  # noqa: E501
    f"{HOME}/.bitcoin/wallet.dat": "wallet {token}\n",
    f"{HOME}/.config/Exodus/exodus.wallet/seed.seco": "seed {token}\n",
    f"{HOME}/.config/google-chrome/Default/Login Data": "SQLite format 3\x00 {token}\n",
    f"{HOME}/.mozilla/firefox/default/logins.json": '{{"logins": [{{"password": "{token}"}}]}}\n',
    f"{HOME}/.docker/config.json": '{{"auths": {{"registry": {{"auth": "{token}"}}}}}}\n',
    f"{HOME}/.kube/config": "users:\n- user:\n    token: {token}\n",
    f"{HOME}/.npmrc": "//registry.npmjs.org/:_authToken={token}\n",
    f"{HOME}/.git-credentials": "https://user:{token}@github.com\n",
    f"{HOME}/.netrc": "machine github.com login user password {token}\n",
    f"{WORK}/.env": "API_KEY={token}\nDATABASE_URL=postgres://app:{token}@db/app\n",
}
# the host's tools that read a canary as their own configuration: such a read is reported low (the token
# leaving the sandbox or being copied is still critical); matched on the reading process's program (the
# execve'd file, or the script an interpreter from /usr runs), which must live under /usr: never the skill's
_OWNERS = {
    f"{HOME}/.npmrc": frozenset({"npm", "npx", "npm-cli.js", "npx-cli.js", "pnpm", "yarn", "bun"}),
    f"{HOME}/.docker/config.json": frozenset({"docker", "podman", "buildah", "skopeo"}),
    f"{HOME}/.kube/config": frozenset({"kubectl", "helm", "k9s"}),
    f"{HOME}/.git-credentials": frozenset({"git", "git-credential-store"}),
    f"{HOME}/.netrc": frozenset({"curl", "git", "git-remote-https", "wget", "ftp", "pip", "pip3"}),
    f"{HOME}/.aws/credentials": frozenset({"aws"}),
    f"{HOME}/.ssh/id_rsa": frozenset({"ssh", "scp", "sftp", "ssh-add"}),
    f"{HOME}/.ssh/id_ed25519": frozenset({"ssh", "scp", "sftp", "ssh-add"}),
}
_CACHES = re.compile(
    r"^/home/user/(?:\.cache|\.npm|\.yarn|\.pnpm-store|\.bun/install/cache|\.cargo/registry"
    r"|\.local/share/pnpm|\.node-gyp|\.config/configstore)(?:/|$)"
)
_WALKERS = frozenset({"git", "tar", "zip", "rsync", "cp", "grep", "rg", "find", "du", "ls", "fd", "zstd", "7z"})
_RESOLVER = ("127.0.0.1:53", "[::1]:53")  # the fake /etc/resolv.conf's nameserver
_ENV_CANARY = "GITHUB_TOKEN"  # a secret in the environment, so sending the environment out shows too
_ALLOWED = (WORK, "/tmp", "/dev/null", "/dev/tty", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/fd", "/proc/self")
_PERSIST = re.compile(
    r"^(?:/home/user/(?:\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|zlogin|kshrc|cshrc|tcshrc"
    r"|xprofile|xinitrc|config/fish/|config/autostart/|config/systemd/|local/share/systemd/|ssh/authorized_keys"
    r"|ssh/config|ssh/rc|claude/|cursor/|codex/|gemini/|vscode/|config/Code/|pam_environment)|Library/Launch)"
    r"|/etc/(?:cron|systemd/|init\.d/|rc\.local|profile|bash\.bashrc|environment|ld\.so\.preload|sudoers|xdg/autostart)"
    r"|/var/spool/cron|/usr/lib/systemd/|/lib/systemd/|/Library/Launch)"
)
_PERSIST_TOOLS = frozenset({"crontab", "systemctl", "launchctl", "at", "schtasks", "update-rc.d", "chkconfig"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "busybox"})
_INTERPRETERS = re.compile(r"^(?:python[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|php[0-9.]*|lua[0-9.]*|pwsh)$")
_NET_TOOLS = frozenset({"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "telnet", "openssl"})
_BY_EXT = {
    ".sh": ["sh"],
    ".bash": ["bash"],
    ".zsh": ["zsh"],
    ".py": ["python3"],
    ".js": ["node"],
    ".mjs": ["node"],
    ".cjs": ["node"],
    ".pl": ["perl"],
    ".rb": ["ruby"],
    ".php": ["php"],
    ".ps1": ["pwsh", "-File"],
}
_BLOCKS = {
    "sh": "sh",
    "shell": "bash",
    "bash": "bash",
    "zsh": "bash",
    "console": "bash",
    "shell-session": "bash",
    "python": "python3",
    "py": "python3",
    "python3": "python3",
}
_ETC_BINDS = ("alternatives", "ld.so.cache", "ssl")  # read from the host's /etc: commands need them


class SandboxUnavailable(SkillError):
    """The sandbox cannot be built here: the run is off, and nothing ran."""


@dataclass(frozen=True)
class Item:
    """One thing to run: a script (``line`` None) or a Markdown block (``line`` its first line)."""

    file: str
    line: int | None
    argv: tuple[str, ...]  # inside the sandbox
    label: str  # what a finding names: the script, or the block's first line
    block: str | None = None  # the block's text, written to RUN/block and run by argv


# --------------------------------------------------------------------------- what runs


def items(files: Mapping[str, tuple[bytes, bool]]) -> list[Item]:
    """Every script of the skill and every command block of its Markdown, in path order."""
    out: list[Item] = []
    for path, (data, executable) in sorted(files.items()):
        if path.lower().endswith((".md", ".markdown")):
            out.extend(_blocks(path, data.decode("utf-8", "replace")))
            continue
        argv = _interpreter(path, data, executable)
        if argv is not None:
            out.append(Item(path, None, (*argv, f"{SKILL}/{path}"), path))
    return out


def _interpreter(path: str, data: bytes, executable: bool) -> list[str] | None:
    if data.startswith(b"#!"):
        words = data[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
        if words and words[0].endswith("/env"):
            words = [w for w in words[1:] if w != "-S"]
        return words or None
    if executable and data[:4] == b"\x7fELF":
        return []
    ext = posixpath.splitext(path)[1].lower()
    return list(_BY_EXT[ext]) if ext in _BY_EXT else None


def _blocks(path: str, text: str) -> Iterator[Item]:
    """The command blocks of a Markdown file, read as the static analysers read them
    (:func:`ledger.scanner.meaning.extract.fence_at`); a console transcript keeps its commands."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        block = fence_at(lines, i)
        if block is None:
            i += 1
            continue
        start, i = i + 2, block.end + 1
        lang = block.info.split(",")[0]
        if lang not in _BLOCKS:
            continue
        body = prompts(block.body) if _BLOCKS[lang] != "python3" else block.body
        code = "\n".join(body).strip("\n")
        if not code.strip():
            continue
        first = next(ln.strip() for ln in code.split("\n") if ln.strip())
        yield Item(path, start, (_BLOCKS[lang],), first, code + "\n")


# --------------------------------------------------------------------------- availability

_checked: dict[tuple[str, str], str | None] = {}


def _tools() -> tuple[str, str]:
    bwrap, strace = shutil.which("bwrap"), shutil.which("strace")
    if not bwrap:
        raise SandboxUnavailable(
            "sandboxed run is off: bubblewrap (bwrap) is not on PATH; nothing was run",
            hint="apt-get install -y bubblewrap strace (Debian's packages)",
        )
    if not strace:
        raise SandboxUnavailable(
            "sandboxed run is off: strace is not on PATH; nothing was run",
            hint="install Debian's strace: apt-get install -y strace",
        )
    return bwrap, strace


def available() -> tuple[str, str]:
    """bwrap's and strace's paths once a trial sandbox ran ``true`` under strace (the options a run uses);
    :class:`SandboxUnavailable` otherwise."""
    tools = _tools()
    if tools not in _checked:
        with tempfile.TemporaryDirectory(prefix="ledger-run-") as tmp:
            try:
                argv = [
                    tools[1],
                    "-f",
                    "-qq",
                    "-o",
                    os.devnull,
                    "--seccomp-bpf",
                    "--decode-pids=pidns",
                    "-e",
                    "trace=execve",
                    tools[0],
                    *_base_args(Path(tmp), empty=True),
                    "--",
                    "/usr/bin/true",
                ]
                proc = subprocess.run(argv, env={"PATH": "/usr/bin:/bin"}, capture_output=True, timeout=20, check=False)
                _checked[tools] = None if proc.returncode == 0 else detail(proc.stderr.decode("utf-8", "replace"), 160)
            except (OSError, subprocess.TimeoutExpired) as exc:
                _checked[tools] = detail(str(exc), 160)
    why = _checked[tools]
    if why is not None:
        raise SandboxUnavailable(
            f"sandboxed run is off: bubblewrap under strace cannot build the sandbox here ({why}); nothing was run",
            hint="unprivileged user namespaces and ptrace must be "
            "allowed (sysctl kernel.unprivileged_userns_clone=1; in a container, a seccomp "
            "profile that permits ptrace)",
        )
    return tools


def _base_args(tmp: Path, *, empty: bool = False) -> list[str]:
    # --cap-drop ALL: run by root, bwrap would keep every capability inside, and a script could remount a
    # read-only bind writable and write through it to the host (tests/unit/scanner/test_sandbox_run.py tries)
    args = ["--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "bin", "sbin"):
        if Path(f"/usr/{name}").is_dir():
            args += ["--symlink", f"usr/{name}", f"/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    if empty:
        return [*args, "--tmpfs", "/tmp", "--remount-ro", "/"]
    args += ["--ro-bind", str(tmp / "etc"), "/etc"]
    for extra in _ETC_BINDS:
        if Path("/etc", extra).exists():
            args += ["--ro-bind", f"/etc/{extra}", f"/etc/{extra}"]
    args += [
        "--bind",
        str(tmp / "home"),
        HOME,
        "--bind",
        str(tmp / "work"),
        WORK,
        "--bind",
        str(tmp / "tmp"),
        "/tmp",
        "--ro-bind",
        str(tmp / "skill"),
        SKILL,
        "--ro-bind",
        str(tmp / "run"),
        RUN,
        "--chdir",
        WORK,
        "--remount-ro",
        "/",
    ]
    return args


# --------------------------------------------------------------------------- one run


@dataclass
class _Run:
    item: Item
    token: str  # in every canary file
    env_token: str = ""  # in the environment's canary: a skill may pass it to its own API, so less severe
    status: int | None = None
    tail: bytes = b""
    timed_out: bool = False
    output_capped: bool = False
    trace_cut: bool = False
    persisted: set[str] = field(default_factory=set)
    file_capped: bool = False
    findings: list[Finding] = field(default_factory=list)


def run_skill(
    files: Mapping[str, tuple[bytes, bool]], *, timeout: float = TIMEOUT, output_cap: int = OUTPUT_CAP
) -> list[Finding]:
    """Run every script and command block of the skill in its own sandbox; the findings of all.

    Raises :class:`SandboxUnavailable` (nothing ran) when the sandbox cannot be built here."""
    bwrap, strace = available()
    out: list[Finding] = []
    for item in items(files):
        out.extend(_run_one(item, files, bwrap, strace, timeout, output_cap))
    return out


def run_verdict(
    files: Mapping[str, tuple[bytes, bool]], *, timeout: float = TIMEOUT, output_cap: int = OUTPUT_CAP
) -> Verdict:
    """The run's own verdict (scanner ``ledger-run/1``), merged after the static one like an external scanner's."""
    return Verdict(_capped(run_skill(files, timeout=timeout, output_cap=output_cap)), RUNNER)


def _seed(tmp: Path, files: Mapping[str, tuple[bytes, bool]], item: Item, token: str) -> None:
    for name in ("etc", "home", "work", "tmp", "skill", "run", "trace"):
        (tmp / name).mkdir()
    etc = tmp / "etc"
    (etc / "resolv.conf").write_text("nameserver 127.0.0.1\n")
    (etc / "nsswitch.conf").write_text("passwd: files\ngroup: files\nhosts: files dns\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
    (etc / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    (etc / "group").write_text("root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n")
    (etc / "hostname").write_text("sandbox\n")
    for extra in _ETC_BINDS:  # mount points for the host's, made here: /etc is read-only once bound
        if Path("/etc", extra).is_dir():
            (etc / extra).mkdir()
        elif Path("/etc", extra).exists():
            (etc / extra).touch()
    for rel, (data, exe) in files.items():
        for root in ("skill", "work"):
            path = tmp / root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(0o755 if exe else 0o644)
    for where, template in _CANARIES.items():
        host = _canary_host_path(tmp, where)
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(template.format(token=token))
    if item.block is not None:
        (tmp / "run" / "block").write_text(item.block)
    for d in ("skill", "run"):
        for p in (tmp / d).rglob("*"):
            p.chmod(p.stat().st_mode & ~0o222)


def _canary_host_path(tmp: Path, where: str) -> Path:
    return tmp / "home" / where[len(HOME) + 1 :] if where.startswith(HOME) else tmp / "work" / where[len(WORK) + 1 :]


def _limits() -> None:  # runs in the child before exec
    uid = os.getuid()
    mine = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError):
                mine += os.stat(f"/proc/{d}").st_uid == uid
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NPROC, (mine + PROC_HEADROOM, mine + PROC_HEADROOM))
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_CAP, FILE_CAP))


def _run_one(
    item: Item, files: Mapping[str, tuple[bytes, bool]], bwrap: str, strace: str, timeout: float, output_cap: int
) -> list[Finding]:
    token = "lgcanary" + secrets.token_hex(12)
    run = _Run(item, token, "lgenv" + secrets.token_hex(12))
    with tempfile.TemporaryDirectory(prefix="ledger-run-") as name:
        tmp = Path(name)
        _seed(tmp, files, item, token)
        argv = (*item.argv, f"{RUN}/block") if item.block is not None else item.argv
        if not argv:
            return []
        env = {k: v for k, v in child_env().items() if k in ("LANG", "LC_ALL", "TZ")}
        env.update(
            PATH="/usr/local/bin:/usr/bin:/bin",
            HOME=HOME,
            USER="user",
            LOGNAME="user",
            SHELL="/bin/sh",
            TERM="dumb",
            PWD=WORK,
            TMPDIR="/tmp",
            PYTHONDONTWRITEBYTECODE="1",
        )
        env[_ENV_CANARY] = "ghp_" + run.env_token
        sets = [a for k, v in sorted(env.items()) for a in ("--setenv", k, v)]
        cmd = [
            strace,
            "-ff",
            "-qq",
            "-xx",
            "-yy",
            "-s",
            "4096",
            "--seccomp-bpf",
            "--decode-pids=pidns",
            "-e",
            f"trace={_TRACED}",
            "-o",
            str(tmp / "trace" / "t"),
            bwrap,
            *_base_args(tmp),
            "--clearenv",
            *sets,
            "--",
            *argv,
        ]
        _execute(cmd, run, timeout, output_cap)
        run.findings.extend(_read_trace(tmp / "trace", run))
        run.findings.extend(_copied(tmp, run))
        run.findings = _settled(tmp, run)
    if run.timed_out:
        run.findings.append(_f(run, "LS955", "medium", f"stopped at the time cap ({timeout:g} s)"))
    if run.output_capped:
        run.findings.append(_f(run, "LS955", "medium", f"stopped at the output cap ({output_cap} bytes)"))
    if run.file_capped or run.status == -signal.SIGXFSZ:
        run.findings.append(_f(run, "LS955", "medium", f"stopped at the file size cap ({FILE_CAP} bytes)"))
    if run.trace_cut:
        run.findings.append(_f(run, "LS955", "medium", f"trace read up to {TRACE_CAP} bytes per process"))
    return run.findings


def _execute(cmd: list[str], run: _Run, timeout: float, output_cap: int) -> None:
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={"PATH": "/usr/bin:/bin"},
        start_new_session=True,
        preexec_fn=_limits,
    )
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    deadline, seen = time.monotonic() + timeout, 0
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                run.timed_out = True
                break
            with contextlib.suppress(BlockingIOError):
                chunk = proc.stdout.read(65536)
                if chunk == b"":
                    break
                if chunk:
                    seen += len(chunk)
                    run.tail = (run.tail + chunk)[-2048:]
                    if seen > output_cap:
                        run.output_capped = True
                        break
                    continue
            time.sleep(min(0.01, left))
    finally:
        if run.timed_out or run.output_capped:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # strace dies; bwrap dies with its parent, and the sandbox
        try:
            run.status = proc.wait(timeout=timeout + 5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            run.status = proc.wait()
        proc.stdout.close()


# --------------------------------------------------------------------------- the trace

_LINE = re.compile(r"^(\w+)\((.*)\)\s+= (-?\d+|\?)(.*)$")
_STR = re.compile(r'"((?:\\x[0-9a-f]{2})*)"(\.\.\.)?')
_DECOR = re.compile(r"<((?:\\x[0-9a-f]{2})+)>")
_CHILD = re.compile(r"^(\d+)(?: /\* (\d+) in strace's PID NS \*/)?")
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")


def _hex(s: str) -> bytes:
    return bytes.fromhex(s.replace("\\x", ""))


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _strings(args: str) -> list[bytes]:
    return [_hex(m.group(1)) for m in _STR.finditer(args)]


def _pid_files(trace: Path, run: _Run) -> dict[int, list[tuple[str, str, str, str]]]:
    """Each process's calls, from its trace file; a file past :data:`TRACE_CAP` is read that far."""
    out: dict[int, list[tuple[str, str, str, str]]] = {}
    for f in sorted(trace.iterdir()):
        rows = []
        with f.open("rb") as fh:
            data = fh.read(TRACE_CAP + 1)
        if len(data) > TRACE_CAP:
            data = data[: data.rfind(b"\n", 0, TRACE_CAP) + 1]
            run.trace_cut = True
        for line in data.decode("ascii", "replace").splitlines():
            m = _LINE.match(line)
            if m:
                rows.append((m.group(1), m.group(2), m.group(3), m.group(4)))
            elif line.startswith("--- SIGXFSZ"):
                run.file_capped = True
        out[int(f.name.rsplit(".", 1)[1])] = rows
    return out


def _programs(strs: list[bytes]) -> set[str]:
    """The program names an execve runs, from the host's own folders only (never a file of the skill)."""
    return {posixpath.basename(_text(a)) for a in strs[:3] if _text(a).startswith(("/usr/", "/bin/", "/sbin/"))}


def _inherited(
    per_pid: dict[int, list[tuple[str, str, str, str]]], parent: dict[int, tuple[int, int]]
) -> dict[int, tuple[set[str], str]]:
    """Each process's program when it started: its parent's at the clone (a thread or a fork runs what
    its parent ran until it execs), as the host-tool names :func:`_programs` gives and as a plain name."""
    memo: dict[int, tuple[set[str], str]] = {}

    def at(pid: int, depth: int = 0) -> tuple[set[str], str]:
        if pid not in memo:
            memo[pid] = (set(), "")
            if pid in parent and depth < 64:
                ppid, index = parent[pid]
                names = at(ppid, depth + 1)
                for call, args, ret, _ in per_pid.get(ppid, [])[:index]:
                    if call == "execve" and ret == "0":
                        strs = _strings(args)
                        names = (_programs(strs), posixpath.basename(_text(strs[0])) if strs else "")
                memo[pid] = names
        return memo[pid]

    return {pid: at(pid) for pid in per_pid}


def _parents(per_pid: dict[int, list[tuple[str, str, str, str]]]) -> dict[int, tuple[int, int]]:
    parent: dict[int, tuple[int, int]] = {}
    for pid, rows in per_pid.items():
        for i, (call, _args, ret, rest) in enumerate(rows):
            if call in ("clone", "clone3", "fork", "vfork") and ret.isdigit():
                m = _CHILD.match(ret + rest)
                child = int(m.group(2) or m.group(1)) if m else int(ret)
                parent[child] = (pid, i)
    return parent


def _payload(per_pid: dict[int, list[tuple[str, str, str, str]]], parent: dict[int, tuple[int, int]]) -> dict[int, int]:
    """For each process of the run, the index of its first row that is the skill's (not bwrap's)."""
    start: dict[int, int] = {}

    def first(pid: int, depth: int = 0) -> int | None:
        if pid in start:
            return start[pid]
        rows = per_pid.get(pid, [])
        own = next(
            (
                i
                for i, (call, args, ret, _) in enumerate(rows)
                if call == "execve"
                and ret == "0"
                and not _text(_strings(args)[0] if _strings(args) else b"").endswith("/bwrap")
            ),
            None,
        )
        at = None
        if pid in parent and depth < 64:
            ppid, index = parent[pid]
            pstart = first(ppid, depth + 1)
            if pstart is not None and index >= pstart:
                at = 0
        if at is None:
            at = own
        if at is not None:
            start[pid] = at
        return at

    for pid in per_pid:
        first(pid)
    return start


def _needles(token: str) -> list[bytes]:
    raw = token.encode()
    out = [raw, raw.hex().encode(), raw[::-1]]
    for shift in range(3):
        enc = base64.b64encode(b"\x00" * shift + raw)[4 if shift else 0 :]
        out.append(enc[: len(enc) - 4])
    return out


def _has_token(data: bytes, run: _Run, *, env: bool = False) -> bool:
    """A canary file's token in ``data`` (``env``: or the environment canary's)."""
    tokens = (run.token, run.env_token) if env else (run.token,)
    return any(n and n in data for t in tokens for n in _needles(t))


def _dns_name(data: bytes) -> str | None:
    """The name a DNS query asks for, or None when ``data`` is not one query."""
    if len(data) < 17 or data[4:6] != b"\x00\x01":
        return None
    labels, i = [], 12
    while i < len(data) and data[i]:
        n = data[i]
        if n > 63 or i + 1 + n > len(data):
            return None
        labels.append(data[i + 1 : i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    return ".".join(labels) if labels and i + 5 == len(data) else None


def _address(args: str) -> str | None:
    m = re.search(r'sin6?_port=htons\((\d+)\).*?(?:inet_addr\(|inet_pton\(AF_INET6, )"((?:\\x[0-9a-f]{2})*)"', args)
    if not m:
        return None
    host = _text(_hex(m.group(2)))
    return f"[{host}]:{m.group(1)}" if ":" in host else f"{host}:{m.group(1)}"


def _f(run: _Run, rule: str, severity: str, what: str) -> Finding:
    label = "" if run.item.line is None else f"`{detail(run.item.label, 30)}`: "
    return Finding(rule, severity, run.item.file, run.item.line, detail(label + what))


def _read_trace(trace: Path, run: _Run) -> list[Finding]:
    per_pid = _pid_files(trace, run)
    parent = _parents(per_pid)
    start = _payload(per_pid, parent)
    started_as = _inherited(per_pid, parent)
    if not start and not run.timed_out:
        raise SandboxUnavailable(
            f"sandboxed run of {run.item.file}: the sandbox did not start (status "
            f"{run.status}): {detail(_text(run.tail), 160)}; nothing ran"
        )
    canaries = {p: p for p in _CANARIES}
    out: list[Finding] = []
    reads: list[tuple[str, bool]] = []  # canary reads: path, by a network tool
    sent_dns: set[str] = set()
    for pid in sorted(start):
        cwd = WORK
        sockets: dict[str, str] = {}
        programs, current = started_as[pid]  # the process's program: its latest execve's
        for call, args, ret, rest in per_pid[pid][start[pid] :]:
            strs = _strings(args)
            ok = ret != "?" and not ret.startswith("-")
            m = re.match(r"AT_FDCWD<((?:\\x[0-9a-f]{2})+)>", args)
            if m:
                cwd = _text(_hex(m.group(1)))
            if call == "execve":
                out.extend(_exec(run, strs, ok, current))
                if ok:
                    programs, current = _programs(strs), posixpath.basename(_text(strs[0])) if strs else ""
            elif call in ("chdir", "fchdir") and ok:
                d = _DECOR.search(args)
                cwd = (
                    _text(_hex(d.group(1)))
                    if call == "fchdir" and d
                    else posixpath.normpath(posixpath.join(cwd, _text(strs[0]) if strs else ""))
                )
            elif call in ("openat", "open", "creat"):
                resolved = _DECOR.search(rest)
                path = (
                    _text(_hex(resolved.group(1)))
                    if resolved
                    else posixpath.normpath(posixpath.join(cwd, _text(strs[0]) if strs else ""))
                )
                if path in canaries:
                    owner = sorted(programs & _OWNERS.get(path, frozenset()))
                    walker = sorted(programs & _WALKERS) if path == f"{WORK}/.env" else []
                    if owner:
                        out.append(_f(run, "LS952", "low", f"{owner[0]} read its own {path.replace(HOME, '~')}"))
                    elif walker:
                        out.append(_f(run, "LS952", "low", f"{walker[0]} read the work dir's .env with the rest"))
                    else:
                        reads.append((path, bool(programs & _NET_TOOLS)))
                if call == "creat" or any(flag in args for flag in _WRITE_FLAGS):
                    out.extend(_write(run, path, ok))
            elif call in (
                "mkdir",
                "mkdirat",
                "rename",
                "renameat",
                "renameat2",
                "unlink",
                "unlinkat",
                "symlink",
                "symlinkat",
                "link",
                "linkat",
                "truncate",
            ):
                for path in _targets(call, args, strs, cwd):
                    out.extend(_write(run, path, ok))
            elif call == "connect":
                addr = _address(args)
                if addr is None:
                    continue
                fd = args.split("<", 1)[0]
                sockets[fd] = addr
                if addr not in _RESOLVER:
                    out.append(_f(run, "LS951", "high", f"connect {addr}" + ("" if ok else f" ({rest.split()[0]})")))
            elif call in ("bind", "listen"):
                addr = _address(args)
                loopback = addr is None or addr.startswith(("127.", "[::1]", "localhost"))
                if call == "bind" and addr and not loopback and not addr.endswith(":0"):
                    out.append(_f(run, "LS951", "high", f"listen on {addr} (a bind shell waits here)"))
            elif call in ("sendto", "sendmsg", "sendmmsg"):
                fd = args.split("<", 1)[0]
                addr = _address(args) or sockets.get(fd)
                iov = [_hex(m.group(1)) for m in re.finditer(r'iov_base="((?:\\x[0-9a-f]{2})*)"', args)]
                for data in iov if call != "sendto" else strs[:1]:
                    name = _dns_name(data) or _dns_name(data[2:])  # UDP, or TCP's two-byte length first
                    if name is None and addr in _RESOLVER and not _has_token(data, run, env=True):
                        continue  # to the fake resolver, not a query: a TCP length alone, a retry
                    if name is not None:
                        if name not in sent_dns:
                            sent_dns.add(name)
                            sev = "critical" if _has_token(data, run, env=True) else "high"
                            out.append(_f(run, "LS951", sev, f"DNS lookup {name}"))
                    elif addr and data:
                        sev = "critical"
                        what = "canary credential" if _has_token(data, run, env=True) else f"{len(data)} bytes"
                        out.append(_f(run, "LS951", sev, f"sent {what} to {addr}"))
            elif call in ("dup2", "dup3") and ok:
                src = args.split("<", 1)[0]
                dst = args.split(", ", 1)[1].split("<", 1)[0] if ", " in args else ""
                if src in sockets and dst.strip() in ("0", "1", "2"):
                    out.append(_f(run, "LS951", "critical", f"socket to {sockets[src]} made stdin/stdout (a shell)"))
    # a script's read is critical; a Markdown block's (an agent following docs) is high, unless the block also
    # reached for the network or the reader is a network tool: read and send, the stealer's pattern
    networked = any(f.rule == "LS951" for f in out)
    for path, by_net_tool in dict.fromkeys(reads):
        sev = "critical" if run.item.line is None or networked or by_net_tool else "high"
        out.append(_f(run, "LS952", sev, f"read canary credential {path.replace(HOME, '~')}"))
    return out


def _targets(call: str, args: str, strs: list[bytes], cwd: str) -> list[str]:
    dirs = [_text(_hex(m.group(1))) for m in re.finditer(r"(?:AT_FDCWD|\d+)<((?:\\x[0-9a-f]{2})+)>", args)]
    paths = [_text(s) for s in strs]
    if call in ("symlink", "symlinkat"):
        paths = paths[1:]  # the link, not what it points at
    out = []
    for k, p in enumerate(paths):
        base = dirs[min(k, len(dirs) - 1)] if dirs else cwd
        out.append(posixpath.normpath(posixpath.join(base, p)))
    return out


def _write(run: _Run, path: str, ok: bool) -> list[Finding]:
    if path == WORK or any(path == a or path.startswith(a + "/") for a in _ALLOWED):
        return []
    place = path.replace(HOME, "~")
    how = "" if ok else " (refused)"
    if _PERSIST.match(path):  # a script's: critical; a Markdown block's (install docs): high, or less below
        if ok and path.startswith(HOME + "/"):
            run.persisted.add(path)
        sev = "critical" if run.item.line is None else "high"
        return [_f(run, "LS953", sev, f"write to a persistence place {place}{how}")]
    if _CACHES.match(path):
        return [_f(run, "LS953", "low", f"write to a package cache {place}{how}")]
    if path == SKILL or path.startswith(SKILL + "/"):
        return [_f(run, "LS953", "high", f"write into the skill itself {place}{how}")]
    return [_f(run, "LS953", "high", f"write outside the scratch dir {place}{how}")]


def _exec(run: _Run, strs: list[bytes], ok: bool, parent: str = "") -> list[Finding]:
    if not strs:
        return []
    prog = posixpath.basename(_text(strs[0]))
    line = " ".join(_text(s) for s in strs[1:])
    top = run.item.argv and (strs[0] == run.item.argv[0].encode() or prog == posixpath.basename(run.item.argv[0]))
    out = []
    if any(_has_token(s, run) for s in strs[1:]):
        out.append(_f(run, "LS952", "critical", f"canary credential in the arguments of {prog}"))
    elif any(_has_token(s, run, env=True) for s in strs[1:]):
        out.append(_f(run, "LS952", "low", f"canary ${_ENV_CANARY} passed to {prog}"))
    if prog in _PERSIST_TOOLS:
        sev = "critical" if run.item.line is None else "high"
        out.append(_f(run, "LS953", sev, f"ran {line}" + ("" if ok else " (not installed here)")))
    elif prog in _NET_TOOLS:
        out.append(_f(run, "LS954", "low", f"{parent or 'it'} ran {line}" + ("" if ok else " (not installed here)")))
    elif ok and not top and (prog in _SHELLS or _INTERPRETERS.match(prog)):
        out.append(_f(run, "LS954", "low", f"{parent or 'it'} spawned {line}"))
    return out


_RC = re.compile(r"^/home/user/\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|zlogin|kshrc)$")
_ASSIGN = re.compile(
    r"^\s*(?:#.*|(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*="
    r"(?:[^`$();|&<>]|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)*)?$"
)  # NAME=value, $VAR only: no code
_PAYLOAD = re.compile(r"curl|wget|\bnc\b|ncat|socat|/dev/tcp|base64|python[0-9.]*\s+-c|\beval\b|\bsh\s+-c|bash\s+-c")


def _settled(tmp: Path, run: _Run) -> list[Finding]:
    """A Markdown block's persistence judged by what it left (install docs add a PATH line to an rc file):
    a rc file holding only variable assignments is medium; anything persisted that fetches, decodes or
    opens a shell is critical."""
    verdict: dict[str, str] = {}
    for path in run.persisted:
        try:
            text = (tmp / "home" / path[len(HOME) + 1 :]).read_text("utf-8", "replace")
        except OSError:
            continue
        if _PAYLOAD.search(text):
            verdict[path.replace(HOME, "~")] = "critical"
        elif _RC.match(path) and all(_ASSIGN.match(ln) for ln in text.splitlines()):
            verdict[path.replace(HOME, "~")] = "medium"
    out = []
    for f in run.findings:
        place = f.detail.rsplit("write to a persistence place ", 1)[-1] if f.rule == "LS953" else ""
        if run.item.line is not None and place in verdict:
            f = Finding(f.rule, verdict[place], f.file, f.line, f.detail)
        out.append(f)
    return out


def _copied(tmp: Path, run: _Run) -> list[Finding]:
    """A canary token found in a file the run wrote (a staged copy, an encoded dump)."""
    originals = {_canary_host_path(tmp, w) for w in _CANARIES}
    out = []
    for root, inside in (("work", WORK), ("home", HOME), ("tmp", "/tmp")):
        for p in sorted((tmp / root).rglob("*")):
            if p in originals or p.is_symlink() or not p.is_file():
                continue
            with contextlib.suppress(OSError):
                data = p.read_bytes()[: 8 << 20]
                where = f"{inside}/{p.relative_to(tmp / root).as_posix()}".replace(HOME, "~")
                if _has_token(data, run):
                    out.append(_f(run, "LS952", "critical", f"canary credential copied into {where}"))
                elif _has_token(data, run, env=True):
                    out.append(_f(run, "LS952", "medium", f"${_ENV_CANARY} (a canary) written into {where}"))
    return out
