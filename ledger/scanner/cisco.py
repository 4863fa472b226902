"""Cisco's ``cisco-ai-skill-scanner`` as a supported external scanner: a second opinion (docs/scanner.md).

It is not a dependency of the ledger.  The first run installs it on demand into a virtual
environment of its own, from the hash-pinned lock shipped beside this module
(``cisco-scanner.txt`` beside this module, made by ``scripts/lock`` from requirements/cisco-scanner.in), with
``pip install --require-hashes --no-deps``: exactly the pinned wheels, nothing resolved at
install time.  Where that cannot be done the scan is refused, never reported clean.

Only its static analyzers run (``skill-scanner scan DIR --format json``, no ``--use-llm``,
``--use-behavioral``, ``--use-virustotal``, ``--use-aidefense``, ``--use-osv`` or
``--use-trigger``): the static, bytecode, pipeline and correlation analyzers, which read the
skill's files and call no model and no network service.  Its own configuration variables
(``SKILL_SCANNER_*``, the API keys it knows) are removed from its environment, so a verdict
depends on the pinned version and the skill's bytes alone.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ledger._env import child_env
from ledger.errors import SkillError
from ledger.scanner import static as scanner
from ledger.scanner.rules import Finding
from ledger.scanner.text import detail

__all__ = ["LOCK", "NAME", "SCANNER", "SEVERITY", "home", "installed", "run", "verdict", "version"]

NAME = "cisco-ai-skill-scanner"  # the name `supply.scanners` and `ledger supply scan --with` accept
SCANNER = "ext:" + NAME  # its Verdict's scanner name
LOCK = Path(__file__).with_name("cisco-scanner.txt")
HOME_VAR = "LEDGER_SCANNERS_DIR"  # where the scanners' venvs live; default $XDG_CACHE_HOME/brain-ledger/scanners
TIMEOUT = 300.0  # seconds per skill
INSTALL_TIMEOUT = 1800.0

# Its severities onto ours (docs/scanner.md, "A second opinion").  INFO is kept as low, so that no
# finding it reports is lost; SAFE is its "nothing found" marker and is not a finding.
SEVERITY = {"CRITICAL": "critical", "HIGH": "high", "MEDIUM": "medium", "LOW": "low", "INFO": "low"}
_NOT_FINDINGS = ("SAFE",)
# Variables it reads for its LLM, VirusTotal and AI Defense analyzers or its own configuration.
_DROP = re.compile(r"(SKILL_SCANNER_|VIRUSTOTAL_|AI_DEFENSE_|ANTHROPIC_|OPENAI_|AZURE_|AWS_|GOOGLE_|GEMINI_).*")


def version() -> str:
    """The version the shipped lock pins."""
    found = re.search(rf"^{re.escape(NAME)}==([^\s\\]+)", _lock_text(), re.M)
    if found is None:
        raise SkillError(f"{LOCK} does not pin {NAME}", hint="reinstall the ledger, or run scripts/lock")
    return found.group(1)


def _lock_text() -> str:
    try:
        return LOCK.read_text()
    except OSError as exc:
        raise SkillError(
            f"the lock of {NAME} is missing from this ledger ({LOCK}: {exc.strerror})",
            hint="reinstall the ledger: the lock ships inside the package",
        ) from exc


def home() -> Path:
    """The virtual environment of the pinned version (``$LEDGER_SCANNERS_DIR`` or the user's cache)."""
    base = os.environ.get(HOME_VAR) or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "brain-ledger" / "scanners"
    )
    return Path(base) / f"{NAME}-{version()}"


def installed() -> Path | None:
    """Its console script when the pinned version is installed, else None (nothing is installed)."""
    venv = home()
    exe = venv / "bin" / "skill-scanner"
    return exe if exe.exists() and _stamp(venv).exists() else None


def _stamp(venv: Path) -> Path:
    return venv / f".lock-{hashlib.sha256(LOCK.read_bytes()).hexdigest()[:16]}"


def ensure() -> Path:
    """Its console script, installed from the hashed lock on first use; a :class:`SkillError` that says
    what failed and how to fix it when it cannot be installed (nothing half-installed is left)."""
    exe = installed()
    if exe is not None:
        return exe
    venv = home()
    try:
        venv.parent.mkdir(parents=True, exist_ok=True)
        guard = open(venv.with_name(venv.name + ".lock"), "a")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise SkillError(
            f"cannot install {NAME} {version()} into {venv}: {exc.strerror or exc}", hint=_INSTALL_HINT
        ) from exc
    with guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # another ledger may be installing it: wait for that one
        exe = installed()
        if exe is not None:
            return exe
        shutil.rmtree(venv, ignore_errors=True)
        python = venv / "bin" / "python"
        steps = (
            [sys.executable, "-m", "venv", str(venv)],
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--require-hashes",
                "--no-deps",
                "-r",
                str(LOCK),
            ],
        )
        for argv in steps:
            try:
                done = subprocess.run(
                    argv,
                    env=child_env(),
                    capture_output=True,
                    timeout=INSTALL_TIMEOUT,
                    stdin=subprocess.DEVNULL,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                shutil.rmtree(venv, ignore_errors=True)
                raise SkillError(f"cannot install {NAME} {version()} into {venv}: {exc}", hint=_INSTALL_HINT) from exc
            if done.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                tail = detail(done.stderr.decode("utf-8", "replace").strip()[-300:] or "no stderr", 160)
                raise SkillError(
                    f"cannot install {NAME} {version()} into {venv} (exit {done.returncode}): {tail}",
                    hint=_INSTALL_HINT,
                )
        _stamp(venv).touch()
    exe = venv / "bin" / "skill-scanner"
    if not exe.exists():
        raise SkillError(f"{NAME} installed into {venv} but has no skill-scanner script", hint=_INSTALL_HINT)
    return exe


_INSTALL_HINT = (
    f"it is installed from PyPI with pip --require-hashes (Linux, Python 3.11+); check the network "
    f"and PyPI, or set {HOME_VAR} to a writable folder; or drop it from supply.scanners"
)


def run(skill_dir: Path, *, timeout: float = TIMEOUT) -> scanner.Verdict:
    """Its static verdict on ``skill_dir``, installing it first when needed."""
    exe = ensure()
    root = Path(skill_dir).resolve()
    env = {k: v for k, v in child_env().items() if not _DROP.fullmatch(k)}
    with tempfile.TemporaryDirectory(prefix="ledger-cisco-") as cwd:
        out = Path(cwd) / "report.json"
        argv = [str(exe), "scan", str(root), "--format", "json", "--output-json", str(out), "--compact"]
        code, _stdout, stderr = scanner._run(argv, cwd, timeout, NAME, env=env)
        if code != 0:
            tail = detail(stderr.decode("utf-8", "replace")[-200:] or "no stderr", 120)
            raise SkillError(f"external scanner {NAME} exited with status {code}: {tail}")
        try:
            report = json.loads(out.read_bytes())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SkillError(f"external scanner {NAME} wrote no JSON report: {detail(str(exc))}") from exc
    return verdict(report, root)


def verdict(report: Any, root: Path) -> scanner.Verdict:
    """Our verdict from its JSON report of one skill (``ScanResult.to_dict``): each finding's
    ``rule_id`` as ``ext:<rule_id>``, its severity mapped by :data:`SEVERITY`, its file made
    relative to the skill (a finding on no file, or on one outside it, is filed under SKILL.md
    with no line), ``title`` (else ``description``) as the detail."""
    if not isinstance(report, dict) or not isinstance(report.get("findings"), list):
        raise SkillError(f"external scanner {NAME}: its report has no findings list")
    if report.get("analyzers_failed"):
        raise SkillError(
            f"external scanner {NAME}: analyzers failed: {detail(str(report['analyzers_failed']))}",
            hint="a scanner that failed has not said clean",
        )
    findings = []
    for x in report["findings"]:
        if not isinstance(x, dict):
            raise SkillError(f"external scanner {NAME}: a finding is not an object")
        raw = str(x.get("severity", "")).upper()
        if raw in _NOT_FINDINGS:
            continue
        if raw not in SEVERITY:
            raise SkillError(
                f"external scanner {NAME}: unknown severity {detail(raw)!r}",
                hint=f"this adapter knows {', '.join(SEVERITY)}; a newer scanner needs a newer ledger",
            )
        rule = str(x.get("rule_id") or x.get("id") or "unnamed")
        line = x.get("line_number")
        file = _relative(x.get("file_path"), root)
        if file is None:
            file, line = "SKILL.md", None
        text = str(x.get("title") or x.get("description") or rule)
        findings.append(
            Finding(
                "ext:" + detail(rule),
                SEVERITY[raw],
                file,
                line if isinstance(line, int) and not isinstance(line, bool) and line >= 1 else None,
                detail(text),
            )
        )
    return scanner.Verdict(scanner._capped(findings), SCANNER)


def _relative(path: Any, root: Path) -> str | None:
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(root)
        except ValueError:
            return None
    parts = p.as_posix().split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return p.as_posix()
