"""Python read with ``ast`` and judged by behaviour (docs/scanner.md, "Behaviours").

A unit of Python (a script, a fenced block, a ``python -c`` argument, a decoded payload) is
parsed; constants are resolved (concatenation, f-strings, ``''.join``, ``chr`` chains,
``[::-1]``, ``bytes.fromhex``, base64/base32/base16, rot13, ``zlib.decompress``, names
assigned in the module), and values are followed by name through the module: what came from
the network, what was decoded, what was read from a credential store, which object is a socket.
Behaviours are then judged from sinks: code run (``exec``, ``eval``, ``compile``), commands run
(``subprocess``, ``os.system``, ``pty.spawn``: the command goes to the shell analyser), files
read and written, data sent out.

Code that does not parse (Python 2, a fragment) is read line by line with patterns
(:func:`_tolerant`): a parse failure never makes a unit clean.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import re
import shlex
import textwrap
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from ledger.scanner.meaning import places
from ledger.scanner.meaning.units import Unit, finding
from ledger.scanner.meaning.units import analyse as analyse_unit
from ledger.scanner.rules import Finding

__all__ = ["analyse", "severity"]


def _to_issuer(credential: str, ev: str) -> bool:
    """Whether the send ``ev`` goes (over HTTPS) to the service that issued ``credential``."""
    m = re.search(r"https://[^\s'\"]+", ev)
    return bool(m) and places.issuer(credential, m.group())


MAX_PARSE = 512 * 1024  # characters: a bigger file is read with the line patterns only
MAX_VALUE = 64 * 1024  # a resolved constant longer than this is not followed
MAX_STEPS = 400_000  # expressions resolved in one unit; past it, values are unknown (never an error)
_GATE = re.compile(
    r"exec|eval|compile|__import__|subprocess|system|popen|spawn|socket|urlopen|urlretrieve|requests|httpx|urllib"
    r"|aiohttp|ssl|verify|b64decode|fromhex|codecs|zlib|marshal|smtplib|ftplib|crontab|dup2|execv|execl|dangerously"
    r"|bypassPermissions|\.ssh|\.aws|environ|expanduser|home|open|shutil|glob|write|sqlite|getattr|Path|winreg|os\."
)

_NET_MODULES = (
    "requests.",
    "httpx.",
    "urllib3.",
    "urllib.request.",
    "urllib2.",
    "urllib.",
    "aiohttp.",
    "http.client.",
    "pycurl.",
    "wget.",
)
_FETCH_TAILS = (".urlopen", ".recv", ".recv_into", ".recvfrom", ".getresponse", ".urlretrieve")
_RUN = {
    "subprocess.run",
    "subprocess.call",
    "subprocess.Popen",
    "subprocess.check_output",
    "subprocess.check_call",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "os.system",
    "os.popen",
    "os.popen2",
    "os.popen3",
    "commands.getoutput",
    "pty.spawn",
    "asyncio.create_subprocess_shell",
    "asyncio.create_subprocess_exec",
    "os.startfile",
    "os.posix_spawn",
    "os.posix_spawnp",
}
_RUN_PREFIX = ("os.exec", "os.spawn")
_EXEC = {
    "exec",
    "eval",
    "compile",
    "builtins.exec",
    "builtins.eval",
    "__builtins__.exec",
    "execfile",
    "marshal.loads",
    "pickle.loads",
    "types.FunctionType",
    "runpy.run_path",
    "runpy.run_module",
}
_DECODERS = {
    "base64.b64decode",
    "base64.urlsafe_b64decode",
    "base64.b32decode",
    "base64.b16decode",
    "base64.b85decode",
    "base64.a85decode",
    "base64.decodebytes",
    "base64.decodestring",
    "binascii.a2b_base64",
    "binascii.unhexlify",
    "binascii.a2b_hex",
    "bytes.fromhex",
    "codecs.decode",
    "zlib.decompress",
    "gzip.decompress",
    "bz2.decompress",
    "lzma.decompress",
    "marshal.loads",
}
_SEND_TAILS = (
    ".post",
    ".put",
    ".patch",
    ".sendmail",
    ".send_message",
    ".send",
    ".sendall",
    ".sendto",
    ".storbinary",
    ".storlines",
    ".upload_file",
    ".put_object",
)
_SHELLS = re.compile(r"(?:^|/)(?:sh|bash|zsh|dash|ksh|ash|fish|csh|tcsh|cmd(?:\.exe)?|powershell(?:\.exe)?|pwsh)$")
_SECRETISH = re.compile(r"dangerously-?skip-?permissions|bypassPermissions", re.I)
_PIP_URL = re.compile(r"\bpip3?\s+install\b[^\n]*?(?:https?://|git\+|\b\d{1,3}(?:\.\d{1,3}){3}\b)")
_SEV = ("info", "low", "medium", "high", "critical")


def severity(unit: Unit, top: str) -> str:
    """The severity a behaviour of at most ``top`` reports in ``unit``: a script runs unread and
    SKILL.md is obeyed, so both keep ``top``; in another document, code quoted while the text
    discusses the attack is ``high`` at most."""
    if unit.discussed and unit.where != "instructions" and _SEV.index(top) > _SEV.index("high"):
        return "high"
    return top


@dataclass
class _Val:
    """What is known of an expression: its constant value, if any, and where it came from."""

    const: object = None
    tags: set[str] = field(default_factory=set)  # net, decoded, sock, env, cred:<label>, listen


@dataclass
class _State:
    unit: Unit
    src: str
    aliases: dict[str, str] = field(default_factory=dict)
    names: dict[str, _Val] = field(default_factory=dict)
    out: list[Finding] = field(default_factory=list)
    creds: list[tuple[int, str, str]] = field(default_factory=list)  # (line, label, evidence)
    sends: list[tuple[int, str]] = field(default_factory=list)
    env_dumps: list[tuple[int, str]] = field(default_factory=list)
    connects: list[tuple[int, str]] = field(default_factory=list)
    dup2: list[int] = field(default_factory=list)
    shells: list[tuple[int, str]] = field(default_factory=list)
    downloads: list[tuple[int, str]] = field(default_factory=list)  # (line, path or name)
    chmods: list[int] = field(default_factory=list)
    sock_stdio: bool = False  # a child's stdin/stdout given a socket
    runs: list[tuple[int, str, set[str]]] = field(default_factory=list)  # (line, evidence, names it mentions)
    file_execs: list[tuple[int, str]] = field(default_factory=list)
    inner_seen: set[str] = field(default_factory=set)
    funcs: dict[str, list[ast.expr]] = field(default_factory=dict)  # a local function's return values
    calling: set[str] = field(default_factory=set)
    returns: dict[str, set[str]] = field(default_factory=dict)  # memo: the tags a local function returns
    steps: int = 0  # expressions resolved: bounded work on hostile input (MAX_STEPS)
    _lines: list[bytes] | None = None

    def line(self, node: ast.AST) -> int:
        return self.unit.line + getattr(node, "lineno", 1) - 1

    def ev(self, node: ast.AST) -> str:
        """The source text of ``node``, at most a few hundred characters (the evidence shown)."""
        if self._lines is None:
            self._lines = [ln.encode("utf-8") for ln in self.src.split("\n")]
        lo, hi = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        c0, c1 = getattr(node, "col_offset", 0), getattr(node, "end_col_offset", None)
        if lo is None or hi is None or c1 is None or hi > len(self._lines):
            return ast.unparse(node)[:400]
        if lo == hi:
            seg = self._lines[lo - 1][c0:c1]
        else:
            middle = self._lines[lo : min(hi - 1, lo + 4)]
            seg = b"\n".join([self._lines[lo - 1][c0:], *middle, self._lines[hi - 1][:c1]])
        return seg.decode("utf-8", "replace")[:400]

    def add(self, rule: str, top: str, node: ast.AST | int, text: str) -> None:
        line = node if isinstance(node, int) else self.line(node)
        self.out.append(finding(rule, severity(self.unit, top), self.unit.path, line, text))


def analyse(unit: Unit) -> list[Finding]:
    """The behaviour findings of one unit of Python."""
    text = unit.text
    if not text.strip() or not _GATE.search(text):
        return []
    if len(text) > MAX_PARSE:
        return list(_tolerant(unit))
    tree = _parse(text)
    if tree is None:
        return list(_tolerant(unit))
    st = _State(unit, text)
    try:
        _read(tree, st)
    except RecursionError:
        return list(_tolerant(unit))
    _conclude(st)
    return st.out


def _parse(text: str) -> ast.Module | None:
    """``text`` parsed; a REPL transcript (``>>>``/``...`` prompts) or indented block is read as the code
    it shows, line numbers kept.  None when it still does not parse."""
    tries = [text]
    if re.search(r"^\s*>>>", text, re.M):
        prompt = re.compile(r"^\s*(?:>>>|\.\.\.)(?: |$)")
        tries.append("\n".join(prompt.sub("", ln) if prompt.match(ln) else "" for ln in text.split("\n")))
    elif text[:1] in (" ", "\t"):
        tries.append(textwrap.dedent(text))
    for t in tries:
        try:
            return ast.parse(t)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


# --- names, constants, taint -----------------------------------------------------------


def _qual(node: ast.AST, st: _State) -> str:
    """A dotted name for a callee: ``subprocess.run``, ``requests.get``, ``s.connect``; imports
    resolved through their aliases, ``__import__('os').system`` and ``getattr(os, 'system')`` too."""
    if isinstance(node, ast.Name):
        return st.aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        return f"{_qual(node.value, st)}.{node.attr}"
    if isinstance(node, ast.Call):
        inner = _qual(node.func, st)
        if inner in ("__import__", "importlib.import_module") and node.args:
            mod = _const(node.args[0], st).const
            if isinstance(mod, str):
                return mod
        if inner == "getattr" and len(node.args) >= 2:
            attr = _const(node.args[1], st).const
            if isinstance(attr, str):
                base = _qual(node.args[0], st)
                return attr if base in ("__builtins__", "builtins") else f"{base}.{attr}"
        if inner in ("pathlib.Path", "Path", "pathlib.PosixPath"):
            return "Path()"
        return inner + "()"
    if isinstance(node, ast.Subscript):
        return _qual(node.value, st) + "[]"
    return "?"


def _is_fetch(q: str) -> bool:
    return q.startswith(_NET_MODULES) or q.endswith(_FETCH_TAILS) or q in ("urlopen", "urlretrieve")


def _text(v: object) -> str | None:
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return v if isinstance(v, str) else None


def _join_path(a: object, b: object) -> object:
    a, b = _text(a), _text(b)
    if a is None or b is None:
        return None
    if b.startswith(("/", "~")):
        return b
    return a.rstrip("/") + "/" + b if a else b


def _const(node: ast.AST, st: _State, depth: int = 0) -> _Val:
    """The constant ``node`` resolves to (str, bytes, int, list) and the tags of what it holds."""
    st.steps += 1
    if depth > 40 or st.steps > MAX_STEPS:
        return _Val()
    d = depth + 1
    if isinstance(node, ast.Constant):
        return _Val(node.value if isinstance(node.value, (str, bytes, int)) else None)
    if isinstance(node, ast.Name):
        v = st.names.get(node.id)
        if v is not None:
            return _Val(v.const, set(v.tags))
        return _Val()
    if isinstance(node, (ast.List, ast.Tuple)):
        parts = [_const(e, st, d) for e in node.elts]
        tags = set().union(*(p.tags for p in parts)) if parts else set()
        vals = [p.const for p in parts]
        return _Val(vals if all(v is not None for v in vals) else None, tags)
    if isinstance(node, ast.JoinedStr):
        out, tags = [], set()
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(str(part.value))
            elif isinstance(part, ast.FormattedValue):
                v = _const(part.value, st, d)
                tags |= v.tags
                t = _text(v.const) if not isinstance(v.const, int) else str(v.const)
                if t is None:
                    return _Val(None, tags)
                out.append(t)
        return _Val("".join(out), tags)
    if isinstance(node, ast.BinOp):
        a, b = _const(node.left, st, d), _const(node.right, st, d)
        tags = a.tags | b.tags
        try:
            if isinstance(node.op, ast.Add) and type(a.const) is type(b.const) and a.const is not None:
                r = a.const + b.const  # type: ignore[operator]
                return (
                    _Val(r if len(r) <= MAX_VALUE else None, tags)
                    if isinstance(r, (str, bytes, list))
                    else _Val(r, tags)
                )
            if isinstance(node.op, ast.Div):
                return _Val(_join_path(a.const, b.const), tags)
            if isinstance(node.op, ast.Mod) and isinstance(a.const, str) and b.const is not None:
                r = a.const % (tuple(b.const) if isinstance(b.const, list) else b.const)
                return _Val(r, tags)
        except (TypeError, ValueError, OverflowError):
            pass
        return _Val(None, tags)
    if isinstance(node, ast.Subscript):
        base = _const(node.value, st, d)
        sl = node.slice
        if isinstance(sl, ast.Slice) and isinstance(base.const, (str, bytes, list)):
            try:
                lo = _const(sl.lower, st, d).const if sl.lower else None
                hi = _const(sl.upper, st, d).const if sl.upper else None
                step = _const(sl.step, st, d).const if sl.step else None
                r = base.const[slice(lo, hi, step)]  # type: ignore[misc]
                tags = base.tags | ({"decoded"} if step == -1 else set())
                return _Val(r, tags)
            except (TypeError, ValueError):
                return _Val(None, base.tags)
        q = _qual(node.value, st)
        if q in ("os.environ",):
            key = _const(sl, st, d).const
            return _Val("~" if key in ("HOME", "USERPROFILE") else None)
        return _Val(None, base.tags)
    if isinstance(node, ast.Attribute):
        q = _qual(node, st)
        if q == "os.environ":
            return _Val(None, {"environ"})
        base = _const(node.value, st, d)
        return _Val(None, base.tags)
    if isinstance(node, ast.Call):
        return _call_value(node, st, d)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _const(node.operand, st, d)
        return _Val(-v.const if isinstance(v.const, int) else None, v.tags)
    if isinstance(node, (ast.Await, ast.Starred)):
        return _const(node.value, st, d)
    if isinstance(node, ast.IfExp):
        a, b = _const(node.body, st, d), _const(node.orelse, st, d)
        return _Val(a.const if a.const is not None else b.const, a.tags | b.tags)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return _comprehension(node, st, d)
    tags: set[str] = set()
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            tags |= _const(child, st, d).tags
    return _Val(None, tags)


def _comprehension(node: ast.ListComp | ast.GeneratorExp, st: _State, d: int) -> _Val:
    """``[chr(c) for c in [104, 105]]``: one generator over a constant list, element evaluated per item."""
    if len(node.generators) != 1 or not isinstance(node.generators[0].target, ast.Name) or node.generators[0].ifs:
        return _Val()
    gen = node.generators[0]
    seq = _const(gen.iter, st, d)
    if not isinstance(seq.const, (list, str, bytes)) or len(seq.const) > 4096:
        return _Val(None, seq.tags)
    name = gen.target.id  # type: ignore[union-attr]
    saved = st.names.get(name)
    out = []
    try:
        for item in seq.const:
            st.names[name] = _Val(item)
            v = _const(node.elt, st, d)
            if v.const is None:
                return _Val(None, seq.tags | v.tags)
            out.append(v.const)
    finally:
        if saved is None:
            st.names.pop(name, None)
        else:
            st.names[name] = saved
    return _Val(out, seq.tags | {"decoded"} if isinstance(node.elt, ast.Call) else seq.tags)


def _call_value(node: ast.Call, st: _State, d: int) -> _Val:
    q = _qual(node.func, st)
    args = [_const(a, st, d) for a in node.args]
    kw = {k.arg: _const(k.value, st, d) for k in node.keywords if k.arg}
    tags: set[str] = set()
    for v in [*args, *kw.values()]:
        tags |= v.tags
    a0 = args[0].const if args else None
    if isinstance(node.func, ast.Attribute) and not q.startswith(tuple(m for m in _NET_MODULES)):
        base = _const(node.func.value, st, d)
        tags |= base.tags
        meth = node.func.attr
        b = base.const
        try:
            if meth == "join" and isinstance(b, (str, bytes)) and isinstance(a0, list):
                parts = [x if isinstance(x, type(b)) else None for x in a0]
                if None not in parts:
                    return _Val(b.join(parts), tags)  # type: ignore[arg-type]
            if meth == "decode" and isinstance(b, bytes):
                enc = a0 if isinstance(a0, str) else "utf-8"
                if enc.replace("-", "_").lower() in ("rot13", "rot_13"):
                    return _Val(None, tags)
                return _Val(b.decode(enc, "replace"), tags)
            if meth == "encode" and isinstance(b, str):
                return _Val(b.encode("utf-8", "replace"), tags)
            if meth in ("replace",) and isinstance(b, (str, bytes)) and len(args) >= 2:
                x, y = args[0].const, args[1].const
                if isinstance(x, type(b)) and isinstance(y, type(b)):
                    return _Val(b.replace(x, y), tags)  # type: ignore[arg-type]
            if meth in ("strip", "lower", "upper") and isinstance(b, str) and not args:
                return _Val(getattr(b, meth)(), tags)
            if meth in ("expanduser", "resolve", "absolute") and isinstance(b, str):
                return _Val(b, tags)
            if meth == "joinpath" and isinstance(b, str):
                r: object = b
                for a in args:
                    r = _join_path(r, a.const)
                return _Val(r, tags)
            if meth == "home" and q.endswith("Path.home"):
                return _Val("~", tags)
            if meth == "get" and q == "os.environ.get" and a0 in ("HOME", "USERPROFILE"):
                return _Val("~", tags)
            if meth == "json" and "net" in tags:
                return _Val(None, (tags - {"net"}) | {"netdata"})  # parsed data, not code
            if meth == "copy" and q == "os.environ.copy":
                return _Val(None, tags | {"env"})
            if meth == "items" and q == "os.environ.items":
                return _Val(None, tags | {"env"})
        except (LookupError, TypeError, ValueError):
            return _Val(None, tags)
    if q in st.returns:
        tags |= st.returns[q]
    elif q in st.funcs and q not in st.calling and len(st.calling) < 8:
        st.calling.add(q)  # a local function: what it returns, read with the names as the module leaves them
        got: set[str] = set()
        try:
            for ret in st.funcs[q]:
                got |= _const(ret, st, d).tags
        finally:
            st.calling.discard(q)
        st.returns[q] = got
        tags |= got
    if _is_fetch(q):
        tags.add("net")
    if q in ("socket.socket", "socket.create_connection", "socket.fromfd"):
        tags.add("sock")
    if q.endswith(".accept"):
        tags.add("sock")
    try:
        if q in ("chr", "builtins.chr") and isinstance(a0, int):
            return _Val(chr(a0), tags)
        if q in ("str",) and a0 is not None:
            return _Val(
                _text(a0) if isinstance(a0, bytes) and len(args) > 1 else (a0 if isinstance(a0, str) else None),
                tags | ({"env"} if "environ" in tags else set()),
            )
        if q in ("dict", "repr") and "environ" in tags:
            return _Val(None, tags | {"env"})
        if q == "json.dumps" and ("environ" in tags or "env" in tags):
            return _Val(None, tags | {"env"})
        if q in ("bytes", "bytearray") and isinstance(a0, list) and all(isinstance(x, int) for x in a0):
            return _Val(bytes(x & 0xFF for x in a0), tags | {"decoded"})  # type: ignore[union-attr]
        if q in ("bytes",) and isinstance(a0, str) and len(args) > 1:
            return _Val(a0.encode("utf-8", "replace"), tags)
        if q in (
            "Path",
            "pathlib.Path",
            "pathlib.PosixPath",
            "os.path.expanduser",
            "os.path.expandvars",
            "os.path.abspath",
            "os.path.realpath",
            "os.path.normpath",
            "os.fspath",
        ):
            if not args:
                return _Val(".", tags)
            r2: object = a0
            for a in args[1:]:
                r2 = _join_path(r2, a.const)
            return _Val(r2, tags)
        if q in ("os.path.join", "posixpath.join", "ntpath.join"):
            r3: object = a0
            for a in args[1:]:
                r3 = _join_path(r3, a.const)
            return _Val(r3, tags)
        if q in ("Path.home", "pathlib.Path.home", "os.path.expanduser") or (
            q in ("os.getenv", "os.environ.get") and a0 in ("HOME", "USERPROFILE")
        ):
            return _Val("~", tags)
        if q in _DECODERS or q.endswith(("b64decode", "b32decode", "b16decode", "unhexlify", ".decompress")):
            tags.add("decoded")
            return _Val(_decode(q, a0, args[1].const if len(args) > 1 else kw.get("encoding", _Val()).const), tags)
    except (ValueError, TypeError, LookupError, OverflowError, binascii.Error, zlib.error):
        return _Val(None, tags | ({"decoded"} if q in _DECODERS else set()))
    if q.endswith((".read", ".read_text", ".read_bytes", ".readlines", ".readline")) or q in ("open", "io.open"):
        path = _path_of_read(node, st)
        if path is not None:
            label = places.credential(path)
            if label:
                tags.add("cred:" + label)
    if q not in _ENV_CARRIERS and not q.endswith((".encode", ".format", ".dumps", "b64encode", ".urlencode")):
        tags -= {"env", "environ"}  # what a call returns is not the environment it was given (env=os.environ)
    return _Val(None, tags)


_ENV_CARRIERS = {"dict", "str", "repr", "bytes", "list", "json.dumps", "pickle.dumps", "urllib.parse.urlencode"}


def _decode(q: str, a0: object, how: object) -> object:
    data = a0.encode() if isinstance(a0, str) else a0
    if not isinstance(data, bytes) or len(data) > MAX_VALUE:
        return None
    if q in ("codecs.decode",):
        if isinstance(how, str) and how.replace("-", "_").lower() in ("rot13", "rot_13"):
            return codecs.decode(data.decode("utf-8", "replace"), "rot13")
        if isinstance(how, str) and how.lower() in ("base64", "base_64", "hex", "zlib", "zip", "bz2"):
            return codecs.decode(data, how.lower())
        return None
    if q.endswith("urlsafe_b64decode"):
        return base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))
    if q.endswith("b32decode"):
        return base64.b32decode(data + b"=" * (-len(data) % 8))
    if q.endswith("b16decode"):
        return base64.b16decode(data, casefold=True)
    if q.endswith(("b85decode",)):
        return base64.b85decode(data)
    if q.endswith(("a85decode",)):
        return base64.a85decode(data)
    if q.endswith(("b64decode", "decodebytes", "decodestring", "a2b_base64")):
        return base64.b64decode(data + b"=" * (-len(data) % 4))
    if q.endswith(("fromhex", "unhexlify", "a2b_hex")):
        return (
            bytes.fromhex(data.decode("ascii", "replace").strip())
            if q.endswith("fromhex")
            else binascii.unhexlify(data)
        )
    if q.endswith("zlib.decompress") or q == "zlib.decompress":
        return zlib.decompressobj().decompress(data, MAX_VALUE)
    if q.endswith("gzip.decompress"):
        return zlib.decompressobj(31).decompress(data, MAX_VALUE)
    return None


def _path_of_read(node: ast.Call, st: _State) -> str | None:
    """The path a read names: ``open(P)``, ``Path(P).read_text()``, ``open(P).read()``."""
    q = _qual(node.func, st)
    if q in ("open", "io.open", "codecs.open"):
        if not node.args:
            return None
        mode = _mode(node, st)
        if any(c in mode for c in "wax+"):
            return None
        return _text(_const(node.args[0], st).const)
    if isinstance(node.func, ast.Attribute):
        base = node.func.value
        if isinstance(base, ast.Call):
            return _path_of_read(base, st)
        v = _const(base, st)
        return _text(v.const)
    return None


def _mode(node: ast.Call, st: _State) -> str:
    m: object = None
    if len(node.args) > 1:
        m = _const(node.args[1], st).const
    for k in node.keywords:
        if k.arg == "mode":
            m = _const(k.value, st).const
    return m if isinstance(m, str) else "r"


# --- the walk ---------------------------------------------------------------------------


def _imports(every: list[ast.AST], st: _State) -> None:
    for node in every:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    st.aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                st.aliases[a.asname or a.name] = f"{node.module}.{a.name}"


def _targets(t: ast.AST) -> Iterator[str]:
    if isinstance(t, ast.Name):
        yield t.id
    elif isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            yield from _targets(e)


def _read(tree: ast.AST, st: _State) -> None:
    every = list(ast.walk(tree))  # one walk, read four times: the nodes of a big script are many
    _imports(every, st)
    for fn in every:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            rets = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None]
            st.funcs.setdefault(fn.name, []).extend(rets[:8])
    quiet = _checked_only(every)
    nodes = sorted((n for n in every if hasattr(n, "lineno")), key=lambda n: (n.lineno, n.col_offset))
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
            v = _const(node.value, st)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and _qual(t, st) == "ssl._create_default_https_context":
                    st.add("LS912", "high", node, "TLS verification off: " + st.ev(node))
                if isinstance(t, ast.Name) and isinstance(node.value, (ast.Name, ast.Attribute, ast.Call)):
                    alias = _qual(node.value, st)  # y = getattr(__builtins__, 'exec'): y is exec
                    alias = alias.removeprefix("__builtins__.").removeprefix("builtins.")
                    if alias in _EXEC or alias in _RUN or alias in _DECODERS or alias.startswith(_RUN_PREFIX):
                        st.aliases[t.id] = alias
                for name in _targets(t):
                    if isinstance(node, ast.AugAssign) and name in st.names:
                        old = st.names[name]
                        c = (
                            old.const + v.const
                            if (type(old.const) is type(v.const) and isinstance(v.const, (str, bytes)))
                            else None
                        )  # type: ignore[operator]
                        st.names[name] = _Val(c, old.tags | v.tags)
                    else:
                        st.names[name] = v
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    v = _const(item.context_expr, st)
                    for name in _targets(item.optional_vars):
                        st.names[name] = v
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            v = _const(node.iter, st)
            st.names[node.target.id] = _Val(None, v.tags)
        elif isinstance(node, ast.Call):
            _call(node, st)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in quiet
            and _SECRETISH.search(node.value)
        ):
            st.add("LS912", "critical", node, node.value)


def _checked_only(every: list[ast.AST]) -> set[int]:
    """Constants that are compared, tested for, printed or documented, not set: a security check that
    looks for ``bypassPermissions`` in a settings file does not turn it on."""
    out: set[int] = set()
    for node in every:
        inside: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            inside = [node.left, *node.comparators]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            inside = [node.value]
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if name in (
                "print",
                "warn",
                "warning",
                "info",
                "debug",
                "error",
                "echo",
                "write",
                "search",
                "match",
                "findall",
                "compile",
                "startswith",
                "endswith",
                "count",
                "find",
                "index",
                "get",
            ):
                inside = [*node.args]
        for sub in inside:
            out.update(id(n) for n in ast.walk(sub) if isinstance(n, ast.Constant))
    return out


def _cmd_text(v: object) -> str | None:
    if isinstance(v, (str, bytes)):
        return _text(v)
    if isinstance(v, list) and v and all(isinstance(x, (str, bytes)) for x in v):
        parts = [_text(x) for x in v]
        if None in parts:
            return None
        return " ".join(p if p and not re.search(r"[\s'\"$`\\|;&<>()]", p) else shlex.quote(p or "") for p in parts)  # type: ignore[arg-type]
    return None


def _inner(st: _State, lang: str, text: str, node: ast.AST, context: str) -> None:
    key = f"{lang}\0{text}"
    if key in st.inner_seen or len(text) > MAX_VALUE:
        return
    st.inner_seen.add(key)
    st.out.extend(analyse_unit(st.unit.inner(lang, text, line_offset=getattr(node, "lineno", 1) - 1, context=context)))


def _call(node: ast.Call, st: _State) -> None:
    q = _qual(node.func, st)
    tail = "." + q.rsplit(".", 1)[-1] if "." in q else q
    argv = [*node.args, *(k.value for k in node.keywords)]
    vals = [_const(a, st) for a in argv]
    tags: set[str] = set().union(*(v.tags for v in vals)) if vals else set()
    a0 = vals[0] if node.args else _Val()
    ev = st.ev(node)

    # TLS verification off
    for k in node.keywords:
        if (
            k.arg in ("verify", "check_hostname", "ssl")
            and isinstance(k.value, ast.Constant)
            and k.value.value is False
        ):
            st.add("LS912", "high", node, "TLS verification off: " + ev)
        if k.arg in ("context", "ssl_context") and "_create_unverified_context" in ast.unparse(k.value):
            st.add("LS912", "high", node, "TLS verification off: " + ev)

    # code run
    if q in _EXEC or (q in ("exec", "eval") and not node.args):
        if "net" in tags:
            st.add("LS311", "critical", node, ev)
        elif "sock" in tags:
            st.add("LS312", "critical", node, "read from a socket: " + ev)
        elif "decoded" in tags:
            st.add("LS313", "critical", node, ev)
        if node.args and isinstance(node.args[0], ast.Call) and _qual(node.args[0].func, st).endswith(".read"):
            inner = node.args[0].func.value  # type: ignore[attr-defined]
            if isinstance(inner, ast.Call):
                p = _const(inner.args[0], st) if inner.args else _Val()
                st.file_execs.append(
                    (st.line(node), _text(p.const) or ast.unparse(inner.args[0]) if inner.args else "?")
                )
        code = _text(a0.const)
        if (code and not isinstance(node.args[0], ast.Constant)) or (code and "decoded" in tags):
            _inner(st, "python", code, node, "decoded")  # type: ignore[arg-type]
        elif code and isinstance(node.args[0], ast.Constant) and q in ("exec", "eval"):
            _inner(st, "python", code, node, "argument")
        return

    # commands run
    if q in _RUN or q.startswith(_RUN_PREFIX):
        cmdv = a0 if node.args else next((_const(k.value, st) for k in node.keywords if k.arg == "args"), _Val())
        if q.startswith(("os.exec", "os.spawn", "os.posix_spawn")) and node.args:
            pos = 1 if q.startswith("os.spawn") else 0
            cmdv = _const(node.args[pos], st) if len(node.args) > pos else _Val()
            rest = [_const(a, st).const for a in node.args[pos + 1 :]]
            flat = [x for r in rest for x in (r if isinstance(r, list) else [r])]
            if isinstance(cmdv.const, str) and all(isinstance(x, str) for x in flat) and flat:
                cmdv = _Val([cmdv.const, *flat[1:]], cmdv.tags)
        cmd = _cmd_text(cmdv.const)
        if _cmd_tainted(node, st, "sock"):
            st.add("LS312", "critical", node, "read from a socket: " + ev)
        elif _cmd_tainted(node, st, "net") and not _PIP_URL.search(cmd or ""):
            st.add("LS311", "critical", node, ev)
        elif "decoded" in cmdv.tags:
            st.add("LS313", "critical", node, ev)
        if any(k.arg in ("stdin", "stdout", "stderr") and "sock" in _const(k.value, st).tags for k in node.keywords):
            st.sock_stdio = True
        mentioned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if cmd:
            mentioned |= set(cmd.split())
            first = cmd.split()[0] if cmd.split() else ""
            if _SHELLS.search(first.strip("'\"")) or (q == "pty.spawn" and "sh" in first):
                st.shells.append((st.line(node), ev))
            if re.search(r"\bsecurity\s+(?:find-generic-password|find-internet-password|dump-keychain)\b", cmd):
                st.creds.append((st.line(node), "keychain", ev))
            if _PIP_URL.search(cmd):
                st.add("LS311", "medium", node, "pip install from a URL: " + cmd)
            if re.search(r"\bcrontab\b", cmd) and not re.search(r"crontab\s+-l\s*$", cmd):
                st.add("LS911", "critical" if st.unit.where != "document" else "high", node, "crontab changed: " + cmd)
            _inner(st, "sh", cmd, node, "decoded" if "decoded" in cmdv.tags else "argument")
        elif q in ("pty.spawn",) or q.startswith("os.exec"):
            st.shells.append((st.line(node), ev))
        st.runs.append((st.line(node), ev, mentioned))
        return

    # sockets
    if tail in (".connect", ".connect_ex") or q == "socket.create_connection":
        st.connects.append((st.line(node), ev))
    if tail in (".bind",) and (
        "sock" in _const(node.func.value, st).tags if isinstance(node.func, ast.Attribute) else False
    ):
        st.connects.append((st.line(node), ev))
    if q == "os.dup2":
        st.dup2.append(st.line(node))
    if q in ("os.chmod", "os.fchmod") or tail == ".chmod":
        st.chmods.append(st.line(node))

    # downloads to a file
    if q.endswith("urlretrieve") or q in ("wget.download",):
        dest = _text(vals[1].const) if len(node.args) > 1 else None
        name = ast.unparse(node.args[1]) if len(node.args) > 1 else "?"
        st.downloads.append((st.line(node), dest or name))
    if tail in (".write", ".write_bytes", ".write_text", ".writelines") and "net" in tags:
        target = node.func.value if isinstance(node.func, ast.Attribute) else node
        path = _write_path(target, st)
        st.downloads.append((st.line(node), path or ast.unparse(target)))
    if q in ("shutil.copyfileobj",) and "net" in tags:
        st.downloads.append((st.line(node), ast.unparse(node.args[1]) if len(node.args) > 1 else "?"))

    # files written: persistence
    wpath = None
    if q in ("open", "io.open", "codecs.open") and node.args and any(c in _mode(node, st) for c in "wax+"):
        wpath = _text(a0.const)
    elif tail in (".write_text", ".write_bytes") and isinstance(node.func, ast.Attribute):
        wpath = _write_path(node.func.value, st)
    elif (
        q
        in (
            "shutil.copy",
            "shutil.copy2",
            "shutil.copyfile",
            "shutil.move",
            "os.rename",
            "os.replace",
            "os.symlink",
            "os.link",
        )
        and len(node.args) > 1
    ):
        wpath = _text(vals[1].const)
    elif (
        tail == ".open" and isinstance(node.func, ast.Attribute) and any(c in _mode_path_open(node, st) for c in "wax+")
    ):
        wpath = _write_path(node.func.value, st)
    if wpath:
        label = places.persistence(wpath)
        if label:
            top = "high" if st.unit.where == "document" and not _payload_nearby(st) else "critical"
            st.add("LS911", top, node, f"writes {label} {wpath}")
    if q.startswith("winreg.SetValue") and re.search(r"CurrentVersion\\+Run", st.src):
        st.add("LS911", "critical", node, "Run registry key set: " + ev)

    # credential reads
    rpaths: list[str] = []
    if q in (
        "open",
        "io.open",
        "codecs.open",
        "sqlite3.connect",
        "glob.glob",
        "glob.iglob",
        "os.listdir",
        "os.scandir",
        "os.walk",
        "shutil.copy",
        "shutil.copy2",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.make_archive",
        "zipfile.ZipFile.write",
        "tarfile.open",
    ) or tail in (".read_text", ".read_bytes", ".glob", ".rglob", ".iterdir"):
        if q in ("open", "io.open", "codecs.open") and any(c in _mode(node, st) for c in "wax+"):
            pass
        elif (
            tail in (".read_text", ".read_bytes", ".glob", ".rglob", ".iterdir")
            and isinstance(node.func, ast.Attribute)
            and not q.startswith("glob.")
        ):
            base = _text(_const(node.func.value, st).const)
            if base is not None:
                sub = _text(a0.const) if tail in (".glob", ".rglob") else None
                rpaths.append(_join_path(base, sub) if sub else base)  # type: ignore[arg-type]
        elif node.args:
            t0 = _text(a0.const)
            if t0:
                rpaths.append(t0)
    for p in rpaths:
        label = places.credential(p)
        if label:
            st.creds.append((st.line(node), label, ev))

    # sends
    send = False
    if tail in _SEND_TAILS or q in ("smtplib.SMTP", "smtplib.SMTP_SSL", "ftplib.FTP"):
        send = True
    elif q.endswith((".urlopen", ".Request")) or q in ("urlopen", "Request"):
        send = len(node.args) > 1 or any(k.arg == "data" for k in node.keywords)
    elif q.endswith(".request") and node.args and _text(a0.const) in ("POST", "PUT", "PATCH"):
        send = True
    if send:
        st.sends.append((st.line(node), ev))
        leaked = sorted(t for t in tags if (t.startswith("cred:") and not _to_issuer(t[5:], ev)) or t == "env")
        if leaked:
            what = "the environment" if leaked[0] == "env" else leaked[0][5:]
            st.add("LS412", "critical", node, f"{what} sent out: {ev}")
    child_env = {id(k.value) for k in node.keywords if k.arg == "env"}
    passed = [v for a, v in zip(argv, vals, strict=True) if id(a) not in child_env]
    if any("env" in v.tags for v in passed) and q not in _RUN and not q.startswith(_RUN_PREFIX):
        st.env_dumps.append((st.line(node), ev))  # the environment handed to a child process is not a dump


def _cmd_tainted(node: ast.Call, st: _State, tag: str) -> bool:
    """Whether the command itself (a string, an argv's program, or what ``-c``/``-e`` runs) carries ``tag``;
    a fetched value passed as one argument among others (a URL to ``git clone``) does not count."""
    arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
    if arg is None:
        return False
    if isinstance(arg, (ast.List, ast.Tuple)):
        elts = arg.elts
        if not elts:
            return False
        if tag in _const(elts[0], st).tags:
            return True
        for i, e in enumerate(elts[:-1]):
            if isinstance(e, ast.Constant) and e.value in ("-c", "-e", "-Command", "/c", "-r"):
                return tag in _const(elts[i + 1], st).tags
        return False
    return tag in _const(arg, st).tags


def _mode_path_open(node: ast.Call, st: _State) -> str:
    m: object = None
    if node.args:
        m = _const(node.args[0], st).const
    for k in node.keywords:
        if k.arg == "mode":
            m = _const(k.value, st).const
    return m if isinstance(m, str) else "r"


def _write_path(target: ast.AST, st: _State) -> str | None:
    """The path an object writes to: ``open(P, 'w')``, ``Path(P)``, a name bound to either."""
    if isinstance(target, ast.Call) and _qual(target.func, st) in ("open", "io.open") and target.args:
        return _text(_const(target.args[0], st).const)
    return _text(_const(target, st).const)


def _payload_nearby(st: _State) -> bool:
    return any(f.rule in ("LS311", "LS312", "LS313") for f in st.out)


def _conclude(st: _State) -> None:
    u = st.unit
    # reverse or bind shell: a connection, descriptors duplicated onto it (or its fileno given as stdin), a shell
    fileno = "fileno()" in st.src
    if st.connects and st.shells and (st.dup2 or fileno or st.sock_stdio):
        line, ev = st.connects[0]
        st.add("LS312", "critical", line, f"shell over a socket: {ev}; {st.shells[0][1]}")
    # download then run
    if st.downloads:
        dl_line, dest = st.downloads[0]
        names = {dest, dest.rsplit("/", 1)[-1]}
        ran = [r for r in st.runs if r[0] >= dl_line and (names & r[2] or st.chmods)]
        ran += [(ln, f"exec(open({p}).read())", set()) for ln, p in st.file_execs if ln >= dl_line]
        if ran:
            st.add("LS311", "critical", dl_line, f"downloads {dest}, then runs it: {ran[0][1]}")
    # credentials read and sent out
    already = any(f.rule == "LS412" for f in st.out)
    if st.creds:
        line, label, ev = st.creds[0]
        strong = [c for c in st.creds if c[1] != "env file"]
        # a .env file alone is every API client's: only its flow out counts; a credential sent to
        # the service that issued it (a refresh at its token endpoint) is used, not stolen
        out = [s for s in st.sends if not all(_to_issuer(c[1], s[1]) for c in strong)]
        if out and strong and not already:
            c = strong[0]
            st.add("LS412", "critical", c[0], f"{c[1]} read ({c[2]}), sent out: {out[0][1]}")
        for c in strong[:1]:
            st.add("LS411", "high", c[0], f"{c[1]} read: {c[2]}")
        if not strong:
            st.add("LS411", "medium", line, f"{label} read: {ev}")
    if st.env_dumps and st.sends and not any(f.rule == "LS412" for f in st.out):
        st.add("LS412", "critical", st.env_dumps[0][0], f"the environment sent out: {st.sends[0][1]}")
    del u


# --- when the code does not parse --------------------------------------------------------

_T_FETCH = re.compile(r"urlopen|urlretrieve|requests\.(?:get|post)|httpx\.|urllib3|\.recv\(")
_T_EXEC = re.compile(r"\b(?:exec|eval)\s*[\s(]|subprocess\.|os\.system|os\.popen")
_T_DECODE = re.compile(r"b64decode|fromhex|unhexlify|['\"]rot_?13['\"]|zlib\.decompress|marshal\.loads|\[::-1\]")
_T_CONNECT = re.compile(r"\.connect\s*\(\s*\(|create_connection")
_T_SHELL = re.compile(
    r"pty\.spawn|/bin/(?:ba)?sh|os\.exec[lv]|subprocess\.(?:call|Popen)\(\s*\[?\s*['\"](?:/bin/)?(?:ba)?sh"
)
_T_PATH = re.compile(r"""['"]([^'"\n]{2,200})['"]""")
_T_SEND = re.compile(r"requests\.(?:post|put)|\.sendall?\(|smtplib|ftplib|urlopen\([^)\n]*data=|httpx\.(?:post|put)")


def _tolerant(unit: Unit) -> Iterator[Finding]:
    """Line patterns over code that did not parse: the same behaviours, read coarsely."""
    text = unit.text[: MAX_PARSE * 2]

    def at(m: re.Match[str]) -> int:
        return unit.line + text.count("\n", 0, m.start())

    def f(rule: str, top: str, m: re.Match[str], what: str) -> Finding:
        line_text = text[text.rfind("\n", 0, m.start()) + 1 : text.find("\n", m.start()) % (len(text) + 1) or None]
        evidence = f"{what}: {line_text.strip()}" if what else line_text
        return finding(rule, severity(unit, top), unit.path, at(m), evidence)

    fetch, execm = _T_FETCH.search(text), _T_EXEC.search(text)
    if fetch and execm:
        for line in text.split("\n"):
            if _T_FETCH.search(line) and _T_EXEC.search(line):
                m = _T_EXEC.search(text[text.find(line) :])
                yield (f("LS311", "critical", fetch, "") if m is None else f("LS311", "critical", execm, ""))
                break
    dec = re.search(
        r"(?:\bexec|\beval|system|popen|subprocess\.\w+)\s*\(?[^\n]{0,200}?(?:" + _T_DECODE.pattern + ")", text
    )
    if dec:
        yield f("LS313", "critical", dec, "")
    con, sh = _T_CONNECT.search(text), _T_SHELL.search(text)
    if con and sh and ("dup2" in text or "fileno" in text):
        yield f("LS312", "critical", con, "")
    send = _T_SEND.search(text)
    for m in _T_PATH.finditer(text):
        label = places.credential(m.group(1))
        line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
        if label and label != "env file" and re.search(r"open|read|copy|glob|Path|listdir|connect|=\s*$", line):
            yield f("LS412" if send else "LS411", "critical" if send else "high", m, f"{label} read")
            break
    for m in _T_PATH.finditer(text):
        label = places.persistence(m.group(1))
        if label and re.search(r"open\([^)]*['\"][wa]", text):
            yield f("LS911", "critical" if unit.where != "document" else "high", m, f"writes {label}")
            break
    for m in _SECRETISH.finditer(text):
        yield f("LS912", "critical", m, "")
        break
    m2 = re.search(r"verify\s*=\s*False|_create_unverified_context", text)
    if m2:
        yield f("LS912", "high", m2, "TLS verification off")
