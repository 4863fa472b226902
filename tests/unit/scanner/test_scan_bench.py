"""scripts/scan-bench on a tiny committed fixture (tests/bench/labels.csv): the figures it computes."""

from __future__ import annotations

import datetime
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "scripts" / "scan-bench"
LABELS = ROOT / "tests" / "bench" / "labels.csv"


def _module():
    spec = importlib.util.spec_from_file_location("scan_bench", ROOT / "scripts" / "scan_bench.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["scan_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BENCH), *args], capture_output=True, text=True, check=False, cwd=ROOT)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (0, 10, 0.0, 0.2775),  # upper bound z²/(n+z²)
        (5, 10, 0.2366, 0.7634),
        (1, 4, 0.0456, 0.6994),
        (56, 100, 0.4623, 0.6533),
        (10, 10, 0.7225, 1.0),
        (0, 195, 0.0, 0.0193),
    ],
)
def test_wilson_interval_matches_known_values(k: int, n: int, low: float, high: float) -> None:
    lo, hi = _module().wilson(k, n)
    assert (round(lo, 4), round(hi, 4)) == (low, high)


def test_wilson_of_no_samples_is_the_whole_range() -> None:
    assert _module().wilson(0, 0) == (0.0, 1.0)


def test_bench_counts_and_rates_on_the_fixture(tmp_path: Path) -> None:
    proc = _run("--labelled", f"fx={LABELS}", "--json", "--list", "--out", str(tmp_path / "scan.json"))
    assert proc.returncode == 0, proc.stderr
    listing, _, body = proc.stdout.partition("{")
    result = json.loads("{" + body)
    assert json.loads((tmp_path / "scan.json").read_text()) == result
    ratings = {}
    for line in listing.splitlines():
        label, _family, rating, path = line.split(maxsplit=3)
        ratings[Path(path).relative_to(ROOT / "tests").as_posix()] = (label, rating.split("=", 1)[1])
    assert len(ratings) == 8
    # The committed corpus' contract (tests/unit/scanner/test_scanner.py): every malicious sample blocks,
    # no benign one does.
    assert {p: r for p, (_, r) in ratings.items() if r == "critical"}.keys() == {
        "supply/malicious/ssh-key-stealer/skill",
        "supply/malicious/aws-credentials-stealer/skill",
        "supply/malicious/clawhavoc-base64-installer/skill",
        "supply/malicious/symlinked-secret/skill",
    }
    high = {
        lab: sum(1 for lb, r in ratings.values() if lb == lab and r in ("critical", "high"))
        for lab in ("malicious", "benign")
    }
    (name,) = result["total"]  # no --cisco: the built-in scanner alone
    assert name.startswith("ledger-scan/")
    ours = result["total"][name]
    assert ours["malicious"] == {"samples": 4, "critical": 3, "high": high["malicious"]}
    assert ours["benign"] == {"samples": 4, "critical": 1, "high": high["benign"]}
    f = ours["figures"]
    assert f["recall_critical"] == {"k": 3, "n": 4, "rate": 0.75, "low": 0.3006, "high": 0.9544}
    assert f["fpr_critical"] == {"k": 1, "n": 4, "rate": 0.25, "low": 0.0456, "high": 0.6994}
    assert f["precision_critical"] == {"k": 3, "n": 4, "rate": 0.75, "low": 0.3006, "high": 0.9544}
    families = result["families"]
    assert set(families) == {"stealer", "clawhavoc"}
    stealer = next(iter(families["stealer"].values()))
    clawhavoc = next(iter(families["clawhavoc"].values()))
    assert stealer["figures"]["recall_critical"]["k"] == 2 and stealer["malicious"]["samples"] == 2
    assert clawhavoc["figures"]["recall_critical"] == {"k": 1, "n": 2, "rate": 0.5, "low": 0.0945, "high": 0.9055}


def test_write_calibration_writes_integers_in_the_designed_shape(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    earlier = {
        "ledger-scan/0": {
            "version": "ledger-scan/0",
            "measured": "2026-01-01",
            "corpora": "x",
            "malicious": {"samples": 1, "critical": 1, "high": 1},
            "benign": {"samples": 1, "critical": 0, "high": 0},
        }
    }
    out.write_text(json.dumps(earlier))
    proc = _run(
        "--labelled",
        f"fx={LABELS}",
        "--benign",
        f"more={ROOT / 'tests/supply/benign/checksums'}",
        "--write-calibration",
        "--corpora",
        "fixture tests/bench",
        "--calibration-out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    cal = json.loads(out.read_text())
    assert cal.pop("ledger-scan/0") == earlier["ledger-scan/0"]  # a scanner not measured now keeps its entry
    ((name, entry),) = cal.items()
    assert name.startswith("ledger-scan/") and name != "ledger-scan/0"
    assert entry["version"] == name
    assert entry["corpora"] == "fixture tests/bench"
    datetime.date.fromisoformat(entry["measured"])
    assert entry["malicious"]["samples"] == 4 and entry["malicious"]["critical"] == 3
    assert entry["benign"]["samples"] == 5 and entry["benign"]["critical"] == 1
    assert set(entry) == {"version", "measured", "corpora", "malicious", "benign"}
    for side in ("malicious", "benign"):
        assert set(entry[side]) == {"samples", "critical", "high"}
        assert all(type(v) is int for v in entry[side].values())


def test_bad_labels_are_refused_with_what_was_wrong(tmp_path: Path) -> None:
    table = tmp_path / "labels.csv"
    table.write_text("Label,Ground_truth_path\nsuspicious,x\n")
    proc = _run("--labelled", f"fx={table}")
    assert proc.returncode == 1 and "neither malicious nor benign" in proc.stderr
    table.write_text("Label,Ground_truth_path\nbenign,no/such/sample\n")
    proc = _run("--labelled", f"fx={table}")
    assert proc.returncode == 1 and "no/such/sample" in proc.stderr
    proc = _run("--write-calibration", "--labelled", f"fx={LABELS}")
    assert proc.returncode == 2 and "--corpora" in proc.stderr
