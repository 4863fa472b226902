"""Behaviours, not spellings (issue 49, item 1): skills written from public reports (Koi's ClawHavoc,
Snyk's ToxicSkills, OWASP AST10, reverse-shell cheat sheets, MITRE ATT&CK persistence techniques,
Check Point's Claude Code hooks CVEs, symlink escapes fixed in skill installers) by someone who did
not read the analyser.  Every malicious sample must be rated critical, with a critical finding at the
file and lines where the behaviour is written and a detail saying what it saw; every tricky benign
sample must stay below critical.

Samples live in tests/supply/behaviours/<class>/<sample>/ (README.md there).  Each is scanned from a
temporary copy without its label.json, with the symlinks its label names made at run time."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from ledger.scanner.files import load
from ledger.scanner.rules import SEVERITIES
from ledger.scanner.static import Verdict, scan
from ledger.scanner.text import hosts

BEHAVIOURS = Path(__file__).resolve().parents[2] / "supply" / "behaviours"
CLASSES = (
    "fetch-execute",
    "reverse-shell",
    "credential-exfil",
    "persistence",
    "safety-off",
    "symlink-escape",
    "decode-execute",
)
# One sample per class also goes through the real CLI, `ledger scan --json`.
THROUGH_CLI = {
    "fetch-execute": "split-variables",
    "reverse-shell": "python-socket-dup2",
    "credential-exfil": "cloud-creds-tar-nc",
    "persistence": "claude-hooks-shipped",
    "safety-off": "skip-permissions-flag",
    "symlink-escape": "etc-shadow",
    "decode-execute": "base64-to-bash",
    "benign": "ssh-public-key-setup",
}
# The only real hosts a sample may name: vendor installers and documentation hosts, all in benign samples.
VENDOR_HOSTS = {"sh.rustup.rs", "astral.sh", "raw.githubusercontent.com", "bun.sh", "github.com", "ollama.com"}
VENDOR_HOSTS |= {"get.docker.com"}
TEST_NETS = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]


def _samples(kind: str | None = None) -> list[Path]:
    out = sorted(p.parent for p in BEHAVIOURS.glob("*/*/label.json"))
    if kind == "malicious":
        return [p for p in out if p.parent.name != "benign"]
    if kind == "benign":
        return [p for p in out if p.parent.name == "benign"]
    return out


def _id(sample: Path) -> str:
    return f"{sample.parent.name}/{sample.name}"


def _label(sample: Path) -> dict:
    return json.loads((sample / "label.json").read_text())


def _materialise(sample: Path, tmp: Path) -> Path:
    """The skill as an installer would see it: a copy without label.json, with its symlinks made."""
    skill = tmp / sample.name
    shutil.copytree(sample, skill, symlinks=True, ignore=shutil.ignore_patterns("label.json"))
    for path, target in _label(sample).get("links", {}).items():
        link = skill / path
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.expanduser(target) if target.startswith("~/") else target)
    return skill


def _scan(skill: Path) -> Verdict:
    files, links = load(skill)
    return scan(files, symlinks=links)


def _test_net(host: str) -> bool:
    try:
        return any(ipaddress.ip_address(host) in net for net in TEST_NETS)
    except ValueError:
        return False


def _check_evidence(skill: Path, verdict: dict, label: dict) -> None:
    """Each critical finding names a file of the skill, a line inside it (a symlink or a binary has
    none) and a non-empty detail; one of them points at the file and lines the label names."""
    critical = [f for f in verdict["findings"] if f["severity"] == "critical"]
    assert critical, verdict
    for f in critical:
        path = skill / f["file"]
        assert f["detail"].strip(), f
        assert path.is_symlink() or path.is_file(), f"finding names no file of the skill: {f}"
        if f["line"] is not None:
            assert path.is_file() and not path.is_symlink(), f
            assert 1 <= f["line"] <= len(path.read_bytes().split(b"\n")), f
        else:
            assert path.is_symlink() or b"\x00" in path.read_bytes()[:512], f"no line for a text file: {f}"
    want = label["evidence"]
    if want["lines"] is None:
        hits = [f for f in critical if f["file"] == want["file"]]
    else:
        first, last = want["lines"]
        hits = [f for f in critical if f["file"] == want["file"] and f["line"] and first <= f["line"] <= last]
    assert hits, f"no critical finding at {want['file']}:{want['lines']}: {verdict}"


def test_the_samples_are_labelled_harmless_and_cover_every_class() -> None:
    malicious, benign = _samples("malicious"), _samples("benign")
    for cls in CLASSES:
        assert len([s for s in malicious if s.parent.name == cls]) >= 2, cls
    fetch = [s for s in malicious if s.parent.name == "fetch-execute"]
    in_skill_md = [s for s in fetch if _label(s)["evidence"]["file"] == "SKILL.md"]
    assert len(in_skill_md) >= 6, "six 'download and run' spellings in SKILL.md alone"
    assert len(benign) >= 10
    assert not [p for p in BEHAVIOURS.rglob("*") if p.is_symlink()], "symlinks are made by the test, not committed"
    for sample in _samples():
        label = _label(sample)
        assert label["class"] == sample.parent.name and label["source"].strip(), sample
        assert label["expect"] == ("not-critical" if sample.parent.name == "benign" else "critical"), sample
        assert (sample / "SKILL.md").is_file(), sample
        if label["expect"] == "critical":
            want = label["evidence"]
            if want["lines"] is None:
                assert want["file"] in label["links"], sample
            else:
                lines = (sample / want["file"]).read_text().split("\n")
                assert 1 <= want["lines"][0] <= want["lines"][1] <= len(lines), sample
        for path in sample.rglob("*"):
            if not path.is_file() or path.name == "label.json":
                continue
            text = path.read_text()
            for host in hosts(text):
                reserved = host.endswith((".invalid", ".example")) or _test_net(host)
                assert reserved or (sample.parent.name == "benign" and host in VENDOR_HOSTS), (path, host)
            for ip in re.findall(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])", text):
                assert _test_net(ip), (path, ip)


@pytest.mark.parametrize("sample", _samples("malicious"), ids=_id)
def test_malicious_sample_is_critical_with_evidence(sample: Path, tmp_path: Path) -> None:
    skill = _materialise(sample, tmp_path)
    verdict = _scan(skill)
    assert verdict.blocking, f"{_id(sample)} rated {verdict.worst}: {verdict.to_json()}"
    _check_evidence(skill, verdict.to_json(), _label(sample))


@pytest.mark.parametrize("sample", _samples("benign"), ids=_id)
def test_tricky_benign_sample_is_not_critical(sample: Path, tmp_path: Path) -> None:
    verdict = _scan(_materialise(sample, tmp_path))
    assert not verdict.blocking, [f for f in verdict.findings if f.severity == "critical"]


@pytest.mark.parametrize("cls", [*CLASSES, "benign"])
def test_ledger_scan_json_rates_one_sample_per_class(cls: str, tmp_path: Path, ledger) -> None:
    sample = BEHAVIOURS / cls / THROUGH_CLI[cls]
    skill = _materialise(sample, tmp_path)
    proc = ledger("supply", "scan", "--json", str(skill))
    out = json.loads(proc.stdout)
    assert list(out) == [str(skill)], out
    verdict = out[str(skill)]
    assert {"worst", "findings"} <= set(verdict) and verdict["worst"] in SEVERITIES, verdict
    if cls == "benign":
        assert (proc.returncode, verdict["worst"] != "critical") == (0, True), (proc.stderr, verdict)
    else:
        assert (proc.returncode, verdict["worst"]) == (1, "critical"), (proc.stderr, verdict)
        assert "critical finding" in proc.stderr
        _check_evidence(skill, verdict, _label(sample))
