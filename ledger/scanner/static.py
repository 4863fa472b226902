"""The built-in static scanner for skills installed from elsewhere, and the protocol for
running an external one (docs/scanner.md).

A :class:`Verdict` goes into the lineage, so its JSON is exact and deterministic; a
scanner that fails is an error, never a clean verdict.  The text rules live in
:mod:`ledger.scanner.rules`; this module adds the whole-skill rules: files that are
programs, symlinks, and what an update widens against the version last approved.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger._env import child_env
from ledger.bundle import frontmatter
from ledger.errors import SkillError
from ledger.scanner.meaning import analyse_skill
from ledger.scanner.rules import RULES, SEVERITIES, Finding, Rule, check_text
from ledger.scanner.text import ARCHIVES as _ARCHIVES
from ledger.scanner.text import MAGIC as _MAGIC
from ledger.scanner.text import TextFile, decoded, detail, hosts

__all__ = ["RULES", "SCANNER", "Finding", "Rule", "Verdict", "merge", "run_external", "scan"]

SCANNER = "ledger-scan/2"
MAX_PER_RULE = 25  # findings kept per file and rule; the rest become one "and N more" finding
_RANK = {s: i for i, s in enumerate(SEVERITIES)}
_FIELDS = {"rule": str, "severity": str, "file": str, "line": (int, type(None)), "detail": str}


def _key(f: Finding) -> tuple[str, int, str, str, str]:
    return (f.file, f.line or 0, f.rule, f.severity, f.detail)


@dataclass(frozen=True)
class Verdict:
    """The findings of one or more scanners over one skill version."""

    findings: tuple[Finding, ...]
    scanner: str = SCANNER

    @property
    def worst(self) -> str:
        return min((f.severity for f in self.findings), key=_RANK.__getitem__, default="clean")

    @property
    def blocking(self) -> bool:
        """Any critical finding: the install is refused until someone overrides it by name."""
        return any(f.severity == "critical" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        findings = sorted(self.findings, key=_key)
        return {
            "scanner": self.scanner,
            "worst": self.worst,
            "findings": [
                {"rule": f.rule, "severity": f.severity, "file": f.file, "line": f.line, "detail": f.detail}
                for f in findings
            ],
        }

    @classmethod
    def from_json(cls, d: object) -> Verdict:
        """The verdict ``to_json`` wrote; refuses unknown keys, wrong types and a ``worst`` that disagrees."""
        if not isinstance(d, dict) or set(d) != {"scanner", "worst", "findings"}:
            raise SkillError(
                "verdict: expected keys scanner, worst, findings; "
                f"got {', '.join(sorted(d)) if isinstance(d, dict) else type(d).__name__}"
            )
        if not isinstance(d["scanner"], str) or not d["scanner"] or not isinstance(d["findings"], list):
            raise SkillError("verdict: scanner must be a non-empty string and findings a list")
        verdict = cls(tuple(_finding(x) for x in d["findings"]), d["scanner"])
        if d["worst"] != verdict.worst:
            raise SkillError(f"verdict: worst is {d['worst']!r} but the findings say {verdict.worst!r}")
        return verdict


def _finding(x: object, *, prefix: str = "") -> Finding:
    if not isinstance(x, dict) or set(x) != set(_FIELDS):
        raise SkillError(
            f"finding: expected keys {', '.join(sorted(_FIELDS))}; "
            f"got {', '.join(sorted(x)) if isinstance(x, dict) else type(x).__name__}"
        )
    for key, kind in _FIELDS.items():
        if not isinstance(x[key], kind) or isinstance(x[key], bool):
            raise SkillError(f"finding: {key} has the wrong type ({type(x[key]).__name__})")
    if x["severity"] not in _RANK:
        raise SkillError(f"finding: unknown severity {x['severity']!r}", hint=f"one of {', '.join(SEVERITIES)}")
    if x["line"] is not None and x["line"] < 1:
        raise SkillError(f"finding: line {x['line']} is not a 1-based line number")
    parts = x["file"].split("/")
    if not x["file"] or x["file"].startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in x["file"]:
        raise SkillError(f"finding: file {detail(x['file'])!r} is not a path inside the skill")
    if not x["rule"]:
        raise SkillError("finding: empty rule")
    rule = prefix + x["rule"]
    if not prefix and rule not in RULES and not rule.startswith("ext:"):
        raise SkillError(f"finding: unknown rule {rule!r}")
    if prefix:
        return Finding(rule, x["severity"], x["file"], x["line"], detail(x["detail"]))
    if x["detail"] != detail(x["detail"]):
        raise SkillError("finding: detail is not one printable line of at most 80 characters")
    return Finding(rule, x["severity"], x["file"], x["line"], x["detail"])


def merge(*verdicts: Verdict) -> Verdict:
    """One verdict from several scanners: every distinct finding, the scanners named together."""
    names = list(dict.fromkeys(v.scanner for v in verdicts)) or [SCANNER]
    findings = sorted({_key(f): f for v in verdicts for f in v.findings}.values(), key=_key)
    return Verdict(tuple(findings), "+".join(names))


# --- the whole-skill rules -----------------------------------------------------------

_OFFICE = frozenset({"docx", "xlsx", "pptx", "odt", "ods", "odp", "potx", "dotx", "xltx", "epub"})


def _binary_kind(data: bytes) -> str | None:
    """The executable format ``data`` starts with, if any."""
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    if data.startswith(b"MZ") and len(data) >= 0x40:
        at = int.from_bytes(data[0x3C:0x40], "little")
        if data[at : at + 4] == b"PE\x00\x00":
            return "PE"
    return None


def _program(data: bytes, executable: bool) -> bool:
    return executable or _binary_kind(data) is not None


def _tools(files: Mapping[str, tuple[bytes, bool]]) -> tuple[set[str] | None, str | None]:
    """The ``allowed-tools`` of SKILL.md as a set (``None`` when absent), or why it cannot be read."""
    entry = files.get("SKILL.md")
    if entry is None:
        return None, None
    try:
        fm, _ = frontmatter.load(entry[0].decode("utf-8-sig"))
    except (UnicodeDecodeError, SkillError) as exc:
        return None, detail(str(exc).split("\n")[0])
    value = fm.get("allowed-tools")
    if value is None:
        return None, None
    if isinstance(value, str):
        return set(_split_tools(value)), None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return {t for v in value for t in _split_tools(v)}, None
    return None, "allowed-tools is neither a string nor a list of strings"


def _split_tools(value: str) -> list[str]:
    """Tool names from ``Read Bash(git add:*) Grep`` or ``Read, Grep``: split outside parentheses."""
    out, depth, token = [], 0, ""
    for c in value:
        depth += (c == "(") - (c == ")")
        if depth <= 0 and (c.isspace() or c == ","):
            out.append(token)
            token, depth = "", 0
        else:
            token += c
    return [t for t in (*out, token) if t]


def _unrestricted_bash(tool: str) -> bool:
    return re.fullmatch(r"Bash(?:\(\s*(?:\*|\*\s*:\s*\*|:\s*\*)?\s*\))?", tool) is not None


def _widening(files: Mapping[str, tuple[bytes, bool]], vetted: Mapping[str, tuple[bytes, bool]]) -> list[Finding]:
    out: list[Finding] = []
    new, problem = _tools(files)
    old, _ = _tools(vetted)
    if problem:
        out.append(Finding("LS802", "medium", "SKILL.md", 1, problem))
    text = files["SKILL.md"][0].decode("utf-8", "replace") if "SKILL.md" in files else ""
    at = next((i for i, ln in enumerate(text.split("\n"), 1) if ln.startswith("allowed-tools")), 1)
    for tool in sorted((new or set()) - (old or set())):
        bash = _unrestricted_bash(tool) and not any(_unrestricted_bash(t) for t in old or ())
        out.append(Finding("LS801", "critical" if bash else "high", "SKILL.md", at, detail(f"newly granted: {tool}")))
    for path, (data, executable) in sorted(files.items()):
        if _program(data, executable) and not (path in vetted and _program(*vetted[path])):
            out.append(Finding("LS803", "high", path, None, "executable that the approved version did not have"))
    before = {h for data, _ in vetted.values() for h in hosts(data.decode("utf-8", "replace"))}
    for path, (data, _) in sorted(files.items()):
        for line, text in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
            for host in sorted(hosts(text) - before):
                out.append(Finding("LS804", "low", path, line, detail(f"new host {host}")))
                before.add(host)
    return out


def scan(
    files: Mapping[str, tuple[bytes, bool]],
    *,
    vetted: Mapping[str, tuple[bytes, bool]] | None = None,
    symlinks: Sequence[str] | Mapping[str, str | None] = (),
) -> Verdict:
    """The built-in rules over one skill: ``files`` maps a path relative to the skill
    directory to ``(bytes, executable bit)``; ``vetted`` is the approved version's files
    (``None`` on a first install), ``symlinks`` the paths that were links in the source."""
    out: list[Finding] = [Finding("LS701", "high", path, None, "symlink in the source") for path in symlinks]
    for path, (data, executable) in sorted(files.items()):
        kind = _binary_kind(data)
        if kind:
            out.append(Finding("LS703", "critical", path, None, f"{kind} executable"))
            continue
        archive = next((name for magic, name in _ARCHIVES if data.startswith(magic)), None)
        if archive and path.rsplit(".", 1)[-1].lower() not in _OFFICE:
            out.append(Finding("LS704", "medium", path, None, f"{archive} archive, contents not scanned"))
        if executable:
            out.append(Finding("LS702", "medium", path, None, "executable bit set"))
        text_bad = decoded(data)
        if text_bad is None:
            continue  # binary (a NUL byte): only the magic numbers above apply
        text, bad = text_bad
        if bad is not None:
            f = TextFile(path, text, executable)
            severity = "medium" if f.instructions or f.script or f.doc else "low"
            out.append(Finding("LS105", severity, path, f.line_of(bad), "invalid UTF-8 byte, read as U+FFFD"))
        out.extend(check_text(path, text, executable))
    targets = dict(symlinks) if isinstance(symlinks, Mapping) else dict.fromkeys(symlinks)
    out.extend(analyse_skill(files, targets))
    if vetted is not None:
        out.extend(_widening(files, vetted))
    return Verdict(_capped(out))


def _capped(findings: list[Finding]) -> tuple[Finding, ...]:
    """Sorted, distinct, and at most :data:`MAX_PER_RULE` per file and rule, the rest summed up in
    one finding at the worst of their severities: a hostile file cannot bloat the lineage."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in sorted(set(findings), key=_key):
        groups.setdefault((f.file, f.rule), []).append(f)
    out: list[Finding] = []
    for (file, rule), group in groups.items():
        out.extend(group[:MAX_PER_RULE])
        rest = group[MAX_PER_RULE:]
        if rest:
            worst = min((f.severity for f in rest), key=_RANK.__getitem__)
            out.append(Finding(rule, worst, file, rest[0].line, f"and {len(rest)} more like this"))
    return tuple(sorted(set(out), key=_key))


# --- external scanners ---------------------------------------------------------------


def run_external(command: Sequence[str], skill_dir: Path, *, timeout: float = 60) -> Verdict:
    """Run an external scanner over ``skill_dir`` and read its findings.

    The protocol (docs/scanner.md): ``command`` runs with the skill directory appended as
    its last argument, without a shell, in an empty temporary directory, with the
    ledger's secrets removed from its environment.  It prints one JSON object on stdout,
    ``{"findings": [{"rule", "severity", "file", "line", "detail"}, ...]}``, and exits 0.
    Rule ids come back as ``ext:<its id>``.  A non-zero exit, a timeout or output that is
    not that JSON raises :class:`SkillError`: a scanner that failed has not said "clean".
    """
    if not command:
        raise SkillError("external scanner: no command given")
    argv = [*command, str(Path(skill_dir).resolve())]
    name = Path(command[0]).name
    with tempfile.TemporaryDirectory(prefix="ledger-scan-") as cwd:
        returncode, stdout, stderr = _run(argv, cwd, timeout, name)
    if returncode != 0:
        tail = detail(stderr.decode("utf-8", "replace")[-200:] or "no stderr", 120)
        raise SkillError(f"external scanner {name} exited with status {returncode}: {tail}")
    try:
        out = json.loads(stdout)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SkillError(f"external scanner {name} printed no JSON: {detail(str(exc))}") from exc
    if not isinstance(out, dict) or set(out) != {"findings"} or not isinstance(out["findings"], list):
        raise SkillError(f'external scanner {name}: expected {{"findings": [...]}} and nothing else')
    root = str(Path(skill_dir).resolve()) + "/"
    for x in out["findings"]:  # a scanner may name files by the absolute path it was given
        if isinstance(x, dict) and isinstance(x.get("file"), str) and x["file"].startswith(root):
            x["file"] = x["file"][len(root) :]
    try:
        findings = [_finding(x, prefix="ext:") for x in out["findings"]]
    except SkillError as exc:
        raise SkillError(f"external scanner {name}: {exc.message}", hint=exc.hint) from exc
    return Verdict(_capped(findings), f"ext:{name}")


def _run(
    argv: list[str], cwd: str, timeout: float, name: str, env: dict[str, str] | None = None
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` in its own process group, so a timeout kills whatever it started too."""
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=child_env() if env is None else env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise SkillError(f"external scanner {name} could not start: {exc.strerror or exc}") from exc
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise SkillError(
            f"external scanner {name} timed out after {timeout:g} s", hint="raise the timeout or fix the scanner"
        ) from exc
    return proc.returncode, stdout, stderr
