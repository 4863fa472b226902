"""Fetch-then-execute spellings the shell reader does not follow on its own (issue 49 red team).

Two halves, both judged by behaviour:

* :func:`normalise` rewrites shell tricks that only *rename* a step into the plain spelling the
  shell reader already understands, then the shell reader reads the result again: a globbed
  program path (``/???/b??h``) resolved against the paths an interpreter or fetcher lives at,
  ``"$(which curl)"`` / ``$(command -v sh)``, an array or an ``IFS``-split string holding the
  command, ``. /dev/stdin`` / ``source /dev/stdin`` (a shell reading its input), a function
  defined over one or several lines and called later, ``xargs … sh -c 'BODY'``, a heredoc
  whose body is ``$(curl …)`` fed to a shell, other fetchers (``ssh host cmd``, ``scp``,
  ``rsync``, ``tftp``, ``gh gist view``, ``curl -K config``) rewritten as the ``curl`` they
  stand for.
* :func:`runners` reports code run that no registry vouches for: a package runner (``npx``,
  ``bunx``, ``pnpm dlx``, ``uvx``, ``pipx run``, ``uv run``, ``go run``) pointed at a git repo, a
  URL or a tarball; an install from a git URL or a package index that is not the official one;
  ``docker run`` of an image with the host root or secrets mounted; an archive downloaded,
  unpacked and run; ``Rscript -e 'source(URL)'``.
"""

from __future__ import annotations

import fnmatch
import html
import re
from collections.abc import Callable
from dataclasses import replace

from ledger.scanner.meaning import places
from ledger.scanner.meaning.units import Unit, finding
from ledger.scanner.rules import Finding

__all__ = ["WORTH", "analyse", "normalise", "runners"]

# what :func:`ledger.scanner.meaning.shell.worth` lets through besides its own gate: every spelling here
WORTH = re.compile(
    r"\bgit\s+clone\b|\b(?:npx|bunx|pnpx|dlx|uvx|pipx|Rscript|tftp|scp|sftp|rsync)\b|\buv\s+(?:tool\s+)?run\b|\bgo\s+run\b"
    r"|\bgit\+|--(?:extra-)?index-url|--registry\b|\b(?:docker|podman)\s+(?:container\s+)?run\b"
    r"|\bssh\b[^\n|]*\||\bgh\s+(?:gist|api|release)\b|/dev/stdin|/dev/fd/0|(?:\$\(|`)\s*(?:which|command\s+-v|type\s+-p)\s"
    r"|(?<![\w:/.])/[\w.\[\]/-]*[?*\[][\w.?*\[\]/-]*|\bR\s+(?:--?[\w-]+\s+)*-e\s|\bIFS=|\$\{\w+\[[@*]\]\}|^\s*(?:function\s+)?[A-Za-z_][\w-]*\s*\(\s*\)\s*\{",
    re.M,
)

# where interpreters and fetchers live: a globbed program path is resolved against these
KNOWN_PATHS = tuple(
    f"{d}/{p}"
    for d in ("/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/opt/homebrew/bin")
    for p in (
        "sh",
        "bash",
        "dash",
        "zsh",
        "ksh",
        "ash",
        "busybox",
        "curl",
        "wget",
        "python",
        "python3",
        "perl",
        "ruby",
        "node",
        "php",
        "nc",
        "ncat",
        "socat",
        "base64",
        "openssl",
        "env",
    )
)

_GLOB_PATH = re.compile(r"(?<![\w:/$.-])((?:/[\w.?*\[\]-]+)+)")
_WHICH = re.compile(
    r"\"?(?:\$\(\s*(?:which|command\s+-v|type\s+-p|whereis\s+-b)\s+([\w.+-]+)\s*\)|`\s*(?:which|command\s+-v|type\s+-p)\s+([\w.+-]+)\s*`)\"?"
)
_STDIN_SRC = re.compile(
    r"(?:(?<=^)|(?<=[\s;&|(]))(?:\.|source)\s+(?:/dev/stdin|/dev/fd/0|/proc/self/fd/0|-)(?=\s|$|[;&|)])", re.M
)
_ARRAY = re.compile(r"(?:^|(?<=[\s;&|(]))(\w+)=\(([^()\n]*)\)")
_IFS = re.compile(r"(?:^|(?<=[\s;&|(]))IFS=(?:'([^'\n]{1,3})'|\"([^\"\n]{1,3})\"|([^\s;'\"$]{1,3}))")
_FUNC = re.compile(
    r"(?m)^[ \t]*(?:function\s+([A-Za-z_][\w-]*)\s*(?:\(\s*\))?|([A-Za-z_][\w-]*)\s*\(\s*\))\s*\{[ \t]*\n((?:[^\n]*\n){0,40}?)[ \t]*\}[ \t]*;?[ \t]*$"  # noqa: E501
)
_FUNC_ONE = re.compile(r"(?:^|(?<=[\s;&|]))(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\s*\)\s*\{([^{}\n]*)\}")
_XARGS = re.compile(
    r"(?:echo|printf)\s+([^|\n]*?)\s*\|\s*xargs\b[^|\n]*?\b(?:sh|bash|zsh|dash)\s+-c\s+(?:'([^'\n]*)'|\"([^\"\n]*)\")"
)
_XARGS_ANY = re.compile(r"\bxargs\b[^|\n]*?\b(?:sh|bash|zsh|dash)\s+-c\s+(?:'([^'\n]*)'|\"([^\"\n]*)\")")
_HEREDOC_SHELL = re.compile(
    r"\b(?:sh|bash|zsh|dash|ksh|source|\.)\s*(?:-s\s*)?<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n(.*?)\n\s*\1\s*$", re.S | re.M
)
_SUBST_FETCH = re.compile(r"\$\(\s*((?:curl|wget|fetch|aria2c)\b[^()\n]*)\)")
_SSH = re.compile(
    r"\bssh\s+((?:-\w+(?:\s+[^-\s]\S*)?\s+)*)([\w.-]+@)?([\w.-]+)\s+(?:'([^'\n]*)'|\"([^\"\n]*)\"|([^|;&\n]+?))\s*(?=\|)"
)
_SCP = re.compile(r"\b(?:scp|sftp)\s+(?:-\S+\s+)*(?:[\w.-]+@)?([\w.-]+):(\S+)\s+([^\s;&|]+)")
_RSYNC = re.compile(r"\brsync\s+(?:-\S+\s+)*((?:rsync://\S+)|(?:[\w.-]+@)?[\w.-]+::?\S+)\s+([^\s;&|]+)")
_TFTP = re.compile(r"\btftp\s+(\S+)\s+(?:-m\s+\S+\s+)?-c\s+get\s+([^\s;&|]+)(?:[ \t]+([^\s;&|]+))?")
_GH = re.compile(r"\bgh\s+(?:gist\s+view\s+(\S+)|api\s+(\S+)|release\s+download\b[^|;&\n]*)[^|;&\n]*")
_CURL_K = re.compile(r"\bcurl\s+(?:-[A-Za-z]*K\s*|--config[= ])(\S+)")
_CFG_URL = re.compile(r"""(?:\b|(?<=\\n))url\s*=\s*["']?([^"'\s\\]+)""")
_CFG_OUT = re.compile(r"""(?:\b|(?<=\\n))output\s*=\s*["']?([^"'\s\\]+)""")


LINE_CAP = 2000  # these passes read at most this much of a line (linear time on hostile input)


def _cut(text: str) -> str:
    """``text`` with each line cut to :data:`LINE_CAP` characters: the regular expressions here
    scan forward from each fetcher's name, so an unbounded line would cost its length squared."""
    if len(text) <= LINE_CAP or all(len(row) <= LINE_CAP for row in text.split("\n")):
        return text
    return "\n".join(row[:LINE_CAP] for row in text.split("\n"))


def _glob(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        path = m.group(1)
        if not any(c in path for c in "?*["):
            return path
        hits = [p for p in KNOWN_PATHS if fnmatch.fnmatchcase(p, path)]
        return hits[0].rsplit("/", 1)[1] if hits else path

    return _GLOB_PATH.sub(one, text)


def _arrays(text: str) -> str:
    for m in _ARRAY.finditer(text):
        name, body = m.group(1), m.group(2).strip()
        text = re.sub(r"\"?\$\{" + re.escape(name) + r"\[[@*]\]\}\"?", lambda _m, b=body: b, text)
    return text


def _ifs(text: str) -> str:
    m = _IFS.search(text)
    if not m:
        return text
    seps = next(g for g in m.groups() if g is not None)
    seps = seps.replace("\\n", "").replace("\\t", "")
    if not seps.strip():
        return text
    rest = text[m.end() :]
    for ch in set(seps):
        if ch.isspace():
            continue
        # the values assigned after the IFS change split on it: "curl,-fsSL,URL" reads as three words
        rest = re.sub(
            r"(\w+=)(\"[^\"\n]*\"|'[^'\n]*')",
            lambda a, c=ch: a.group(1) + a.group(2).replace(c, " "),
            rest,
        )
    return text[: m.start()] + "true" + rest


def _functions(text: str) -> str:
    defs: dict[str, str] = {}
    for pattern in (_FUNC, _FUNC_ONE):
        for m in pattern.finditer(text):
            name, raw = (m.group(1) or m.group(2), m.group(3)) if pattern is _FUNC else (m.group(1), m.group(2))
            body = " ; ".join(s.strip().rstrip(";") for s in raw.strip().splitlines() if s.strip())
            if body and name not in ("if", "then", "do", "while", "for"):
                defs.setdefault(name, body)
    if not defs:
        return text
    names = "|".join(re.escape(n) for n in sorted(defs, key=len, reverse=True))
    call = re.compile(r"(?m)(^|[;&|(]\s*|&&\s*|\|\|\s*)(" + names + r")\b(?!\s*\()([^|;&\n]*)")

    def one(m: re.Match[str]) -> str:
        args = m.group(3).split()
        body = defs[m.group(2)]
        body = re.sub(
            r"\"?\$\{?([1-9])\}?\"?", lambda a: args[int(a.group(1)) - 1] if int(a.group(1)) <= len(args) else "", body
        )
        body = re.sub(r"\"?\$[@*]\"?", lambda _a: " ".join(args), body)
        return m.group(1) + "{ " + body.strip().rstrip(";") + " ; } "

    out = []
    for line in text.split("\n"):
        if _FUNC_ONE.search(line) or re.match(r"^\s*(?:function\s+[A-Za-z_][\w-]*|[A-Za-z_][\w-]*\s*\(\s*\))", line):
            out.append(line)
            continue
        out.append(call.sub(one, line))
    return "\n".join(out)


def _xargs(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        words = m.group(1).split()
        item = words[-1].strip("'\"") if words else ""
        opt = re.search(r"\s(?:-I\s*|--replace[= ]|-i)(\S+)", m.group(0).split("xargs", 1)[1])
        holder = opt.group(1).strip("'\"") if opt else ""
        body = m.group(2) if m.group(2) is not None else m.group(3)
        if holder:
            body = body.replace(holder, item)
        else:
            body = body.replace('"$1"', item).replace("$1", item) if "$1" in body else f"{body} {item}"
        return body

    text = _XARGS.sub(one, text)
    return _XARGS_ANY.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)


def _heredoc(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        subs = _SUBST_FETCH.findall(m.group(2))
        if not subs:
            return m.group(0)
        return "\n".join(f"{s} | sh" for s in subs)

    return _HEREDOC_SHELL.sub(one, text)


def _fetchers(text: str) -> str:
    """Other programs that bring a file or a stream from another host, spelled as the curl they are."""

    def ssh(m: re.Match[str]) -> str:
        cmd = next((g for g in m.groups()[3:] if g is not None), "").strip()
        path = cmd.split()[-1] if cmd else "x"
        return f"curl -fsSL http://{m.group(3)}/{path.lstrip('/')} "

    text = _SSH.sub(ssh, text)
    text = _SCP.sub(lambda m: f"curl -fsSL -o {m.group(3)} http://{m.group(1)}/{m.group(2).lstrip('/')}", text)

    def rsync(m: re.Match[str]) -> str:
        src = m.group(1)
        url = src if "://" in src else "http://" + re.sub(r"^[\w.-]+@", "", src).replace("::", "/").replace(":", "/")
        return f"curl -fsSL -o {m.group(2)} {url}"

    text = _RSYNC.sub(rsync, text)
    text = _TFTP.sub(
        lambda m: f"curl -fsSL -o {m.group(3) or m.group(2)} http://{m.group(1)}/{m.group(2).lstrip('/')}", text
    )
    text = _GH.sub(lambda m: f"curl -fsSL https://gist.github.com/{m.group(1) or m.group(2) or 'release'} ", text)

    def curl_k(m: re.Match[str]) -> str:
        url, out = _CFG_URL.search(text), _CFG_OUT.search(text)
        if not url:
            return m.group(0)
        return f"curl -fsSL {url.group(1)}" + (f" -o {out.group(1)}" if out else "")

    return _CURL_K.sub(curl_k, text)


def normalise(text: str) -> str:
    """``text`` with renaming tricks spelled plainly (the module docstring lists them)."""
    text = _cut(text)
    text = _WHICH.sub(lambda m: m.group(1) or m.group(2), text)
    text = _glob(text)
    text = _STDIN_SRC.sub("sh", text)
    text = _arrays(text)
    text = _ifs(text)
    text = _functions(text)
    text = _xargs(text)
    text = _heredoc(text)
    return _fetchers(text)


# --- code from outside a registry ----------------------------------------------------------

FORGES = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "huggingface.co", "git.sr.ht")
OFFICIAL_INDEXES = (
    "pypi.org",
    "pypi.python.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "npm.pkg.github.com",
    "download.pytorch.org",
    "test.pypi.org",
    "wheels.vllm.ai",
    "pypi.nvidia.com",
    "pypi.ngc.nvidia.com",
    "data.pyg.org",
    "flashinfer.ai",
)
_RUNNER = re.compile(
    r"\b(npx|bunx|pnpx|(?:pnpm|yarn|bun)\s+(?:dlx|x)|uvx|pipx\s+run|uv\s+(?:tool\s+)?run|go\s+run)\b((?:\s+(?:-[-\w]+(?:[= ](?:git\+|https?://)\S+)?))*)\s+([^\s;&|]+)"  # noqa: E501
)
_SPEC_FLAG = re.compile(r"(?:--from|--spec|-p|--package)[= ]((?:git\+|https?://)\S+)")
_INSTALL = re.compile(
    r"\b(?:pip3?|python3?\s+-m\s+pip|uv\s+pip|uv\s+tool|pipx|npm|pnpm|yarn|bun)\s+(?:install|add|i|tool\s+install)\b([^;&|\n]*)"
)
_INDEX = re.compile(r"(?:--(?:extra-)?index-url|-i|--registry|--find-links|-f)[= ]\s*[\"']?(https?://[^\s\"']+)")
_GIT_SPEC = re.compile(
    r"(?:^|\s)[\"']?((?:git\+)[^\s\"']+|git@[\w.-]+:\S+|(?:https?|ftp)://[^\s\"']+\.(?:tar\.gz|tgz|whl|zip|git)\b)"
)
_DOCKER = re.compile(r"\b(?:docker|podman)\s+(?:container\s+)?run\b([^;&|\n]*)")
_MOUNT = re.compile(r"(?:-v|--volume|--mount)[= ]\s*[\"']?(?:type=bind,\s*)?(?:source|src)?=?([^\s:,\"']+)")
_HOST_ROOT = re.compile(r"^(?:/|~/?|\$HOME/?|\$\{HOME\}/?|/home/?|/Users/?|/root/?|/etc/?|/var/run/docker\.sock)$")
_SECRET_MOUNT = re.compile(r"(?:~|\$HOME|\$\{HOME\})/\.(?:ssh|aws|gnupg|kube|docker|config/gcloud|netrc)|/\.ssh\b")
_ARCHIVE_FETCH = re.compile(
    r"\b(?:curl|wget|aria2c)\b[^\n;&]{0,300}?((?:https?|ftp)://[^\s\"'|;&]+)[^\n]{0,300}?\b(?:tar|bsdtar|unzip|7z|7za)\b[^;&|\n]{0,200}?(?:-C|-d|--directory)[= ]?\s*(\S+)"  # noqa: E501
    r"[^\n]{0,300}?(?:&&|;|\n)\s*(?:sudo\s+)?(?:(?:sh|bash|python3?|node|\.|source)\s+)?[\"']?(\2[^\s\"';&|]*)",
)
_RSOURCE = re.compile(
    r"\b(?:Rscript|R)\b[^\n]*?-e\s+[\"'][^\n]*?\b(?:source|source_url|eval\s*\(\s*parse)\s*\(\s*(?:file\s*=\s*|text\s*=\s*)?(?:url\s*\(\s*)?\\?[\"']((?:https?|ftp)://[^\"'\\\s]+)"
)


_CLONE = re.compile(
    r"\bgit\s+clone\s+(?:-\S+(?:\s+\d+)?\s+)*[\"']?((?:https?|git|ssh)://\S+?|git@\S+?)[\"']?(?:\s+([^\s;&|]+))?\s*(?:&&|;|\n)"
)
_CLONE_RUN = re.compile(
    r"(?:^|[;&|]\s*|\n\s*)(?:sudo\s+)?(?:(?:ba|z|da)?sh|python3?|node|perl|ruby|source|\.|make)\s+(\S+)|(?:^|[;&|]\s*|\n\s*)(\.?/\S+)"
)
_PIPE_EVAL = re.compile(
    r"\b(?:curl|wget|aria2c)\b[^|\n]*\|\s*(?:sudo\s+)?(?:python[\d.]*|node|perl|ruby|php)\s+-\w*[cer]\s+(?:'([^'\n]*)'|\"([^\"\n]*)\")"
)
_EVAL_WORD = re.compile(
    r"\b(?:exec|eval|compile|system|Function|execSync|spawn|popen|check_output)\s*\(|\bsubprocess\b|child_process"
)


def _clones(unit: Unit, add: Callable[[int, str, str], None]) -> None:
    """A repository cloned from a host no forge vouches for (or over plain HTTP, or by IP), then a
    script from it run: fetch-then-execute.  A forge-hosted clone then ``make`` is ordinary."""
    text = _cut(unit.text)
    for m in _CLONE.finditer(text):
        url = m.group(1)
        if not _aggravated(url):
            continue
        name = m.group(2) or url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        rest = text[m.end() : m.end() + 2000].lstrip()
        for r in _CLONE_RUN.finditer(rest):
            target = (r.group(1) or r.group(2) or "").strip("\"'")
            if name and (name in target or target.startswith("./") or target == "install"):
                add(m.start(), _sev(unit, True), f"git clone {_host(url)} then {target} run: fetch-then-execute")
                return
            if re.match(r"^cd\s", rest.lstrip()) and name in rest.split("\n", 1)[0]:
                add(m.start(), _sev(unit, True), f"git clone {_host(url)} then its code run: fetch-then-execute")
                return


def _host(url: str) -> str:
    m = re.match(r"(?:git\+)?[a-z][\w+.-]*://(?:[^@/\s]*@)?([^/\s:]+)", url, re.I) or re.match(r"git@([\w.-]+):", url)
    return m.group(1).lower().rstrip(".") if m else ""


def _aggravated(url: str) -> bool:
    host = _host(url)
    return (
        url.startswith(("http://", "git://", "git+http://", "ftp://"))
        or bool(re.match(r"^[\d.]+$|^\[", host))
        or host.endswith((".invalid", ".onion"))
        or not any(host == f or host.endswith("." + f) for f in FORGES)
    )


def _sev(unit: Unit, critical: bool) -> str:
    """Critical when nothing vouches (``critical``); a forge-hosted source is high; a warned document high."""
    if not critical:
        return "high"
    if unit.where != "script" and unit.context != "file" and unit.discussed and unit.where != "instructions":
        return "high"
    return "critical"


def runners(unit: Unit) -> list[Finding]:
    """Code run or installed from outside a registry, and containers given the host (module docstring)."""
    out: list[Finding] = []
    text = _cut(unit.text)

    def add(offset: int, severity: str, evidence: str) -> None:
        line = unit.line + text.count("\n", 0, offset)
        out.append(finding("LS311", severity, unit.path, line, evidence))

    for m in _RUNNER.finditer(text):
        runner, flags, spec = m.group(1), m.group(2) or "", m.group(3).strip("\"'")
        src = _SPEC_FLAG.search(flags)
        target = src.group(1) if src else spec
        remote = bool(re.match(r"(?:git\+|https?://|ftp://|github:|gitlab:|bitbucket:|git@|git://)", target))
        if runner.startswith(("npx", "bunx", "pnpx", "pnpm", "yarn", "bun")) and re.match(
            r"^[\w.-]+/[\w.-]+(?:#\S+)?$", target
        ):
            remote = True  # npx user/repo runs a GitHub repository, not a published package
        if runner.startswith("go") and "@" in target and "/" in target and not target.startswith((".", "/")):
            host = target.split("/", 1)[0]
            remote = host not in ("golang.org", "google.golang.org", "go.dev", "k8s.io", "sigs.k8s.io")
        if not remote:
            continue
        add(m.start(), _sev(unit, True), f"{runner} {target}: code from outside a registry run")
    for m in _INSTALL.finditer(text):
        args = m.group(1)
        for i in _INDEX.finditer(args):
            host = _host(i.group(1))
            if host and not any(host == h or host.endswith("." + h) for h in OFFICIAL_INDEXES):
                # an alternate HTTPS index named in a reference document is a documented choice: high
                bad = not i.group(1).startswith("https://") or "--trusted-host" in args
                bad = bad or bool(re.match(r"^[\d.]+$", host))
                documented = unit.where == "document" and not bad
                add(m.start(), _sev(unit, not documented), f"package index {host}: unvetted packages installed")
                break
        else:
            for g in _GIT_SPEC.finditer(_INDEX.sub(" ", args)):
                url = g.group(1)
                add(m.start(), _sev(unit, _aggravated(url)), f"install from {url}: setup code from outside a registry")
                break
    for m in _DOCKER.finditer(text):
        args = m.group(1)
        mounts = _MOUNT.findall(args)
        root = any(_HOST_ROOT.match(v) for v in mounts)
        secret = any(_SECRET_MOUNT.search(v) for v in mounts) or ("--privileged" in args and bool(mounts))
        if root or secret:
            image = next(
                (w for w in reversed(args.split()) if not w.startswith("-") and "/" in w and ":" not in w[:2]), ""
            )
            registry = image.split("/", 1)[0] if "." in image.split("/", 1)[0] else "docker.io"
            unknown = registry.endswith((".invalid", ".example")) or not any(
                registry == r or registry.endswith("." + r)
                for r in (
                    "docker.io",
                    "ghcr.io",
                    "quay.io",
                    "gcr.io",
                    "mcr.microsoft.com",
                    "public.ecr.aws",
                    "amazonaws.com",
                )
            )
            add(m.start(), _sev(unit, root or unknown), "container run with the host's files mounted")
    for m in _ARCHIVE_FETCH.finditer(text):
        url = m.group(1)
        if places.vendor(url) and not _aggravated(url.replace("https://", "https://github.com/", 0)):
            continue
        add(m.start(), _sev(unit, not places.vendor(url)), f"{url} unpacked and run: fetch-then-execute")
    for m in _PIPE_EVAL.finditer(text):
        if _EVAL_WORD.search(m.group(1) or m.group(2) or ""):
            add(m.start(), _sev(unit, True), "fetched data executed by an interpreter's inline code")
    _clones(unit, add)
    for m in _RSOURCE.finditer(text):
        add(m.start(), _sev(unit, True), f"R source({m.group(1)}): fetch-then-execute")
    return out


def analyse(unit: Unit, first: list[Finding], read: Callable[[Unit], list[Finding]]) -> list[Finding]:
    """Findings beyond ``first`` (what the shell reader found in ``unit`` as written): the shell
    reader's verdict on the normalised text, and :func:`runners`."""
    seen = {(f.rule, f.line) for f in first}
    out: list[Finding] = []
    plain = normalise(unit.text)
    if plain != unit.text:
        out.extend(f for f in read(replace(unit, text=plain)) if (f.rule, f.line) not in seen)
    out.extend(f for f in runners(unit) if (f.rule, f.line) not in seen)
    return out


# --- across files: Makefile recipes, a download in a document run by a shipped script --------

_MAKE_ASSIGN = re.compile(r"(?m)^[ \t]*(?:export\s+|override\s+)?([A-Za-z_][\w.-]*)\s*(?:::?=|\?=|\+=|=)[ \t]*(.*)$")
_MAKE_REF = re.compile(r"\$[({]([A-Za-z_][\w.-]*)[)}]")
_SAVED = re.compile(
    r"\b(?:curl|wget|aria2c)\b[^\n|;&]*?(?:\s-\w*[oO]\s*|\s--output(?:-document)?[=\s]|\s>\s*)([^\s;&|'\"-][^\s;&|'\"]*)"
)


def makefile_unit(path: str, text: str) -> Unit | None:
    """A Makefile's recipes as one shell script, its variables expanded (``$(FETCH) $(SRC) | $(RUN)``)."""
    name = path.rsplit("/", 1)[-1]
    if name not in ("Makefile", "makefile", "GNUmakefile") and not name.endswith(".mk"):
        return None
    values: dict[str, str] = {}
    for m in _MAKE_ASSIGN.finditer(text):
        values[m.group(1)] = m.group(2).strip()
    rows = []
    for line in text.split("\n"):
        if line.startswith("\t"):
            body = line[1:].lstrip("@-+ ")
            for _ in range(4):  # nested variables, a few levels
                body = _MAKE_REF.sub(lambda r: values.get(r.group(1), r.group(0)), body)
            rows.append(body.replace("$$", "$"))
        else:
            rows.append("")
    if not any(rows):
        return None
    return Unit("sh", "\n".join(rows), path, 1, "script", "file")


def cross(texts: dict[str, str]) -> list[Finding]:
    """A file a document downloads (``curl URL -o /tmp/x``) and a script the skill ships runs or
    sources (``. /tmp/x``): fetch-then-execute split across two files."""
    saved: list[tuple[str, int, str]] = []
    texts = {path: _cut(text) for path, text in texts.items()}
    for path, text in texts.items():
        if path.lower().endswith(".md"):
            for m in _SAVED.finditer(text):
                target = m.group(1)
                if len(target) > 3 and "/" in target:
                    saved.append((path, text.count("\n", 0, m.start()) + 1, target))
    out: list[Finding] = []
    for path, text in texts.items():
        if path.lower().endswith(".md"):
            continue
        for doc, line, target in saved:
            runs = re.compile(
                r"(?:^|[\s;&|(\[,\"'])(?:\.|source|sh|bash|zsh|dash|python3?|node|perl|ruby|exec|eval|chmod\s+\+x)[\"']?[\s\"',]+"
                + re.escape(target)
                + r"(?:[\"'\s;&|)]|$)",
                re.M,
            )
            if runs.search(text):
                out.append(finding("LS311", "critical", doc, line, f"{target} downloaded, run by {path}"))
    return out


# --- Markdown the extractor does not cut: HTML code blocks, table cells ------------------------

_HTML_CODE = re.compile(r"<(pre|code)\b[^>]*>(.*?)</\1>", re.S | re.I)
_TABLE_CODE = re.compile(r"^\s*\|.*$", re.M)
_INLINE = re.compile(r"`((?:[^`\\]|\\.)+)`")


def markup_units(path: str, text: str) -> list[Unit]:
    """Shell in an HTML ``<pre>``/``<code>`` block (entities decoded: ``&#124;`` is ``|``) and in a
    table cell's inline code (``\\|`` is ``|``): what a reader copies from the rendered page."""

    where = "instructions" if path.rsplit("/", 1)[-1].lower() == "skill.md" else "document"
    text = _cut(text)
    out: list[Unit] = []
    for m in _HTML_CODE.finditer(text):
        body = html.unescape(re.sub(r"<[^>]+>", "", m.group(2)))
        if body.strip():
            out.append(Unit("sh", body, path, text.count("\n", 0, m.start()) + 1, where, "fenced"))
    for row in _TABLE_CODE.finditer(text):
        for c in _INLINE.finditer(row.group(0)):
            body = c.group(1).replace("\\|", "|")
            if "|" in body or "&" in body or ";" in body:
                out.append(Unit("sh", body, path, text.count("\n", 0, row.start()) + 1, where, "inline"))
    return out


# --- scripts that hand fetched code to a shell or to exec -------------------------------------

_PY_FETCH = re.compile(
    r"urlopen|urlretrieve|requests\.(?:get|post)|httpx\.|\bfetch\s*\(|https?\.get\s*\(|axios|"
    r"""\[\s*['"](?:curl|wget)['"]|['"](?:url|URL)['"]\s*\+|['"]url['"]\s*\+\s*['"]open['"]"""
)
_SHELL_FED = re.compile(
    r"""\[\s*['"](?:/bin/|/usr/bin/)?(?:sh|bash|zsh|dash)['"]\s*(?:,\s*['"]-s['"]\s*)?\]\s*,[^)\n]*\binput\s*="""
    r"""|(?:execSync|spawnSync|execFileSync)\s*\(\s*['"](?:sh|bash|zsh|dash)['"]\s*,\s*(?:\[[^\]]*\]\s*,\s*)?\{[^}\n]*\binput\b"""
    r"""|getattr\s*\([^)\n]*['"]ex['"]\s*\+\s*['"]ec['"]|['"]ex['"]\s*\+\s*['"]ec['"]|['"]ev['"]\s*\+\s*['"]al['"]"""
)
_PTH_WRITE = re.compile(r"""['"][\w-]*\.pth['"]|sitecustomize\.py|usercustomize\.py""")
_PTH_BODY = re.compile(r"import\s[^\n]*(?:urlopen|urllib|requests|exec\s*\(|eval\s*\(|subprocess|os\.system|base64)")


def script_sinks(path: str, text: str) -> list[Finding]:
    """A Python or JavaScript script that fetches and hands what it fetched to a shell's standard
    input or to an ``exec`` it spells in pieces, or writes a ``.pth``/``sitecustomize`` line that
    fetches or executes code at every interpreter start."""
    if not path.endswith((".py", ".js", ".mjs", ".cjs", ".ts")):
        return []
    out: list[Finding] = []
    text = _cut(text)
    fetch = _PY_FETCH.search(text)
    sink = _SHELL_FED.search(text)
    if fetch and sink:
        line = text.count("\n", 0, sink.start()) + 1
        out.append(finding("LS311", "critical", path, line, f"fetched code handed to {sink.group(0)[:30]}"))
    if _PTH_WRITE.search(text) and _PTH_BODY.search(text):
        m = _PTH_WRITE.search(text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        out.append(finding("LS311", "critical", path, line, "startup hook (.pth/sitecustomize) that runs fetched code"))
    return out
