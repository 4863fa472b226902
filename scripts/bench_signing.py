"""What signing costs (issue 18): per upsert, and for the audit of a long signed lineage.

Anchors are measured in the same run: the same upserts into an unsigned brain, and the
same audit of an unsigned brain of the same length.  Targets: signing adds at most 2 ms
to an upsert; auditing 1,000 signed snapshots takes at most 2x the unsigned audit.

    .venv/bin/python scripts/bench_signing.py [--snapshots 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scratch import scratch_dir  # scripts/scratch.py: waits for the brains' packers

from ledger.audit.lineage import audit_repo
from ledger.brain import Brain
from ledger.protocol import signing


def _brain(root: Path, signed: bool, snapshots: int) -> tuple[Path, list[float]]:
    """A brain of ``snapshots`` snapshots (one skill patched over and over); each upsert's time."""
    path = root / ("signed" if signed else "unsigned")
    times = []
    with Brain.init(path, sign=signed) as brain:
        brain.create("skill", "A skill", "line 0\n")
        for i in range(1, snapshots - 1):
            t = time.perf_counter()
            receipt = brain.patch("skill", f"line {i - 1}\n", f"line {i}\n")
            times.append(time.perf_counter() - t)
            assert (receipt.signer is not None) == signed
    return path, times


def _audit(path: Path, repeat: int) -> float:
    best = []
    for _ in range(repeat):
        t = time.perf_counter()
        report = audit_repo(path, require_signatures=False)
        best.append(time.perf_counter() - t)
        assert report.ok, {k: v.summary for k, v in report.checks.items() if not v.ok}
    return statistics.median(best)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snapshots", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="bench-out/signing.json")
    args = ap.parse_args()
    with scratch_dir() as d:
        os.environ["LEDGER_KEYS"] = str(Path(d) / "keys")
        root = Path(d)
        unsigned, t_unsigned = _brain(root, False, args.snapshots)
        signed, t_signed = _brain(root, True, args.snapshots)
        key = os.urandom(32)
        text = "patch skill v2\n\n" + "Ledger-Root: x\n" * 8
        sign_only = []
        for _ in range(1000):
            t = time.perf_counter()
            signing.sign(key, signing.digest(b"\1" * 32, b"\2" * 32, b"\3" * 20, b"\4" * 20, "user", text))
            sign_only.append(time.perf_counter() - t)
        a_unsigned = _audit(unsigned, args.repeat)
        a_signed = _audit(signed, args.repeat)
    doc = {
        "snapshots": args.snapshots,
        "upsert_ms_unsigned_median": statistics.median(t_unsigned) * 1e3,
        "upsert_ms_signed_median": statistics.median(t_signed) * 1e3,
        "signing_added_ms": (statistics.median(t_signed) - statistics.median(t_unsigned)) * 1e3,
        "digest_and_sign_ms_median": statistics.median(sign_only) * 1e3,
        "audit_s_unsigned": a_unsigned,
        "audit_s_signed": a_signed,
        "audit_ratio": a_signed / a_unsigned,
        "targets": {"signing_added_ms": "<= 2", "audit_ratio": "<= 2"},
    }
    doc["met"] = doc["signing_added_ms"] <= 2 and doc["audit_ratio"] <= 2
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
