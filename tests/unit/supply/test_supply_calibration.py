"""Calibrated verdicts: supply record format 3 (docs/lineage/supply.md §1–§2, v1.10; docs/scanner.md,
"Calibrated verdicts"): the vector's bytes, what an install records, what `supply show` prints, and what
the audit refuses."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from ledger.audit.lineage import audit_repo
from ledger.brain import Brain
from ledger.errors import StoreError
from ledger.scanner import calibration
from ledger.scanner.static import SCANNER
from ledger.store import supply as sp
from ledger.supply import installer as installer_mod
from ledger.supply.installer import Installer
from tests.harness import tamper_supply as ts
from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger
from tests.harness.spec import EXTENSIONS
from tests.unit.supply.test_supply import GOOD, Upstream

VECTOR = json.loads((Path(__file__).parents[2] / "vectors" / "supply" / "calibrated-verdict.json").read_text("utf-8"))


def _cal(version: str, mal: tuple[int, int, int], ben: tuple[int, int, int]) -> dict:
    return {
        "version": version,
        "measured": "2026-11-28",
        "corpora": "a site's own corpus at commit 0123abc",
        "malicious": dict(zip(("samples", "critical", "high"), mal, strict=True)),
        "benign": dict(zip(("samples", "critical", "high"), ben, strict=True)),
    }


@pytest.fixture
def up(tmp_path: Path) -> Upstream:
    u = Upstream(tmp_path)
    u.put("summarise", {"SKILL.md": GOOD.format(name="summarise", desc="Summarise a document")})
    u.publish()
    return u


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_brain(tmp_path / "brain", via="cli")


def _record(path: Path) -> sp.Supply:
    with Brain.open(path) as b:
        return b.supply()


def test_the_calibrated_verdict_vector() -> None:
    """The accepted format-3 record parses to exactly its bytes, the rates a reader computes are the vector's,
    and every refused record is refused."""
    good = VECTOR["accepted"]
    data = good["record"].encode()
    assert hashlib.sha256(data).hexdigest() == good["sha256"]
    record = sp.parse_record(data)
    assert record.format == 3 and sp.format_record(record) == data
    cal = record.skills["summarise"].verdict["calibration"]
    assert set(cal) == set(record.skills["summarise"].verdict["scanner"].split("+"))
    for name, want in good["rates"].items():
        got = calibration.rates(cal[name])
        for key, r in want.items():
            assert got[key]["k"] == r["k"] and got[key]["n"] == r["n"], key
            for part in ("rate", "low", "high"):
                assert f"{got[key][part]:.6f}" == r[part], (key, part)
    assert VECTOR["refused"]
    for case in VECTOR["refused"]:
        with pytest.raises(StoreError):
            sp.parse_record(case["record"].encode())


def test_wilson_interval_and_the_line_a_curator_reads() -> None:
    low, high = calibration.wilson(93, 100)
    assert (round(low, 4), round(high, 4)) == (0.8625, 0.9657)
    assert calibration.wilson(0, 10)[0] == 0.0 and calibration.wilson(10, 10)[1] == 1.0
    line = calibration.describe("ext:cisco-ai-skill-scanner", _cal("2.3.2", (100, 93, 97), (200, 1, 9)))
    assert "recall at critical 93% (95% CI 86–97%) on 100 malicious samples" in line, line
    assert "refused 0.5% (95% CI 0.088–2.8%) of 200 public skills" in line, line
    assert "not measured" in calibration.describe("ledger-run/1", None)


def test_an_install_writes_format_3_with_one_calibration_per_scanner(up: Upstream, home: Path) -> None:
    """The committed calibration measures nothing yet for this scanner: its member is null, and the audit passes."""
    run_ledger("--brain", str(home), "supply", "install", str(up.bare), "summarise", check=True)
    record = _record(home)
    verdict = record.skills["summarise"].verdict
    assert record.format == sp.FORMAT == 3
    assert verdict["calibration"] == {SCANNER: calibration.load().get(SCANNER)}
    report = audit_repo(home)
    assert report.ok, [(n, c.summary) for n, c in report.checks.items() if not c.ok]
    shown = run_ledger("--brain", str(home), "supply", "show", "summarise", check=True).stdout
    assert "calibration" in shown


def test_a_measured_scanner_is_recorded_and_shown(up: Upstream, home: Path, tmp_path: Path) -> None:
    """With a calibration that measured this scanner's version (LEDGER_CALIBRATION: a site's own figures), the
    install records its integers, `supply show` prints the rates with their intervals; another version is null."""
    cal = tmp_path / "calibration.json"
    cal.write_text(
        json.dumps(
            {
                SCANNER: _cal(SCANNER, (100, 93, 97), (200, 1, 9)),
                "ext:cisco-ai-skill-scanner": _cal("0.0.1", (10, 1, 5), (10, 0, 4)),
            }
        )
    )
    env = {"LEDGER_CALIBRATION": str(cal)}
    run_ledger("--brain", str(home), "supply", "install", str(up.bare), "summarise", check=True, env=env)
    verdict = _record(home).skills["summarise"].verdict
    assert verdict["calibration"][SCANNER]["malicious"] == {"samples": 100, "critical": 93, "high": 97}
    shown = run_ledger("--brain", str(home), "supply", "show", "summarise", check=True).stdout
    assert "recall at critical 93% (95% CI 86–97%) on 100 malicious samples" in shown, shown
    assert "refused 0.5% (95% CI 0.088–2.8%) of 200 public skills" in shown, shown
    assert audit_repo(home).ok


def test_a_malformed_calibration_file_refuses_the_install(up: Upstream, home: Path, tmp_path: Path) -> None:
    cal = tmp_path / "calibration.json"
    cal.write_text(json.dumps({SCANNER: {**_cal(SCANNER, (100, 93, 97), (200, 1, 9)), "recall": 0.93}}))
    proc = run_ledger(
        "--brain", str(home), "supply", "install", str(up.bare), "summarise", env={"LEDGER_CALIBRATION": str(cal)}
    )
    assert proc.returncode == 1 and "calibration" in proc.stderr, proc.stderr
    assert "summarise" not in _record(home).skills


def test_the_audit_refuses_a_format_3_install_without_calibration(up: Upstream, home: Path) -> None:
    """A rogue build that writes format 3 but leaves the calibration out: rule 6 fails it."""
    with ts._patched(installer_mod.calibration, "attach", lambda v, path=None: v), Brain.open(home) as b:
        Installer(b).install(str(up.bare), ["summarise"])
    assert "calibration" not in _record(home).skills["summarise"].verdict
    report = audit_repo(home)
    assert not report.checks["supply"].ok and "calibration" in report.checks["supply"].summary


def test_the_audit_refuses_calibration_keys_that_are_not_the_scanners(up: Upstream, home: Path) -> None:
    """A calibration for a scanner that did not run (or none for one that did) is refused wherever it appears."""
    run_ledger("--brain", str(home), "supply", "install", str(up.bare), "summarise", check=True)
    entry = _record(home).skills["summarise"]
    forged = {**entry.verdict, "calibration": {"ext:cisco-ai-skill-scanner": None}}
    with pytest.raises(StoreError, match="not the scanners named"):
        sp.parse_record(sp.format_record(sp.Supply({"summarise": replace(entry, verdict=forged)})))
    with Brain.open(home) as b, b.acting("user"):
        s = b.supply()
        b._writer.apply(
            "approve",
            {},
            [],
            "forged",
            supply=s.with_entry("summarise", replace(s.skills["summarise"], verdict=forged)),
        )
    report = audit_repo(home)
    assert not report.checks["supply"].ok and "calibration" in report.checks["supply"].summary


def test_the_spec_names_every_member_of_a_recorded_calibration() -> None:
    """lineage/supply.md §2's CAL and COUNTS name exactly the members of the vector's recorded calibration, and the
    verdict's
    table marks `calibration` optional (absent in formats 1 and 2)."""
    import re

    text = EXTENSIONS["supply"].read_text("utf-8")
    spec = text[text.index("## 2.") : text.index("## 3.")]
    block = spec[spec.index("CAL = {") : spec.index("```", spec.index("CAL = {"))]
    cal_part, counts_part = block.split("COUNTS =")
    cal = next(
        iter(
            v
            for v in sp.parse_record(VECTOR["accepted"]["record"].encode())
            .skills["summarise"]
            .verdict["calibration"]
            .values()
            if v is not None
        )
    )
    assert set(re.findall(r'"([a-z]+)":', cal_part)) == set(cal)
    assert set(re.findall(r'"([a-z]+)":', counts_part)) == set(cal["malicious"]) == set(cal["benign"])
    row = next(ln for ln in spec.splitlines() if ln.startswith("| `calibration` |"))
    assert "*optional*" in row and "format 3" in row
