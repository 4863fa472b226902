"""Calibrated verdicts: the error rates measured for the scanner versions a verdict names
(docs/scanner.md, "Calibrated verdicts"; docs/lineage/supply.md §2, v1.10).

``calibration.json`` beside this module (``scripts/scan-bench --write-calibration`` writes it)
maps a scanner name to its measurement, in integers only, so that its bytes are exact:

    {SCANNER: {"version", "measured", "corpora", "malicious": {"samples", "critical", "high"},
               "benign": {"samples", "critical", "high"}}, ...}

An install records, in each entry's verdict, ``calibration``: one member per scanner the
verdict names, the measurement of that scanner at the version that ran, or null when that
version was never measured.  Readers compute the rates and their 95% Wilson intervals
(:func:`rates`); nothing computed is ever recorded.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from ledger.errors import SkillError
from ledger.scanner import cisco
from ledger.store.supply import calibration_problem

__all__ = ["FILE", "attach", "describe", "load", "rates", "wilson"]

FILE = Path(__file__).with_name("calibration.json")
ENV = "LEDGER_CALIBRATION"  # another calibration file, in the same format (a site's own measurements)
Z = 1.96  # 95%


def load(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The measurements by scanner name, checked (a malformed file is refused, never half-read)."""
    where = Path(path or os.environ.get(ENV) or FILE)
    try:
        doc = json.loads(where.read_bytes())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SkillError(
            f"cannot read the scanners' calibration {where}: {exc}",
            hint="scripts/scan-bench --write-calibration writes it",
        ) from exc
    problem = calibration_problem(doc, None)
    if problem is not None:
        raise SkillError(
            f"the scanners' calibration {where} is not valid: {problem}",
            hint="see docs/scanner.md, 'Calibrated verdicts'",
        )
    return doc


def _version(name: str) -> str | None:
    """The version of scanner ``name`` that runs here, when the ledger knows it."""
    if name.startswith("ledger-"):
        return name  # the built-in scanners' names carry their version (ledger-scan/2, ledger-run/1)
    return cisco.version() if name == cisco.SCANNER else None


def attach(verdict: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    """``verdict`` (``Verdict.to_json()``) with its ``calibration``: each scanner it names, the
    measurement of the version that ran, or null (not measured, or measured at another version)."""
    known = load(path)
    cal = {}
    for name in verdict["scanner"].split("+"):
        one = known.get(name)
        cal[name] = one if one is not None and one["version"] == _version(name) else None
    return {**verdict, "calibration": cal}


def wilson(k: int, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def rates(cal: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Recall at critical, recall at high, the false-positive rate (refused: critical) and precision,
    each ``{"k", "n", "rate", "low", "high"}`` with its 95% Wilson interval."""
    mal, ben = cal["malicious"], cal["benign"]
    pairs = {
        "recall_critical": (mal["critical"], mal["samples"]),
        "recall_high": (mal["high"], mal["samples"]),
        "refused": (ben["critical"], ben["samples"]),
        "flagged_high": (ben["high"], ben["samples"]),
        "precision": (mal["critical"], mal["critical"] + ben["critical"]),
    }
    out = {}
    for key, (k, n) in pairs.items():
        low, high = wilson(k, n)
        out[key] = {"k": k, "n": n, "rate": k / n if n else None, "low": low, "high": high}
    return out


def _pct(x: float) -> str:
    """A percentage with no more digits than it means: 93%, 0.5%, 0%."""
    v = 100 * x
    if v == 0 or v >= 10 or v == round(v):
        return f"{v:.0f}%"
    return f"{v:.1f}%" if v >= 1 else f"{v:.2g}%"


def describe(name: str, cal: dict[str, Any] | None) -> str:
    """One line: ``recall at critical 93% (95% CI 88–96%) on N malicious samples; refused 0.5% of M
    public skills`` (measured YYYY-MM-DD), or that this version was not measured."""
    if cal is None:
        return f"{name}: not measured (no error rates recorded for this version)"
    r = rates(cal)
    rc, fp = r["recall_critical"], r["refused"]
    named = name if cal["version"] == name else f"{name} {cal['version']}"
    return (
        f"{named}: recall at critical {_pct(rc['rate'])} (95% CI {_pct(rc['low'])[:-1]}–"
        f"{_pct(rc['high'])}) on {rc['n']} malicious samples; refused {_pct(fp['rate'])} (95% CI "
        f"{_pct(fp['low'])[:-1]}–{_pct(fp['high'])}) of {fp['n']} public skills; measured {cal['measured']} "
        f"on {cal['corpora']}"
    )
