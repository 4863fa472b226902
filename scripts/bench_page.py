"""What the report page costs (issue 38, item 5): rendering 1,000 skills x 10 versions, and its size.

The anchor is measured in the same run on the same document: ``json.dumps`` of the page's
input, the least any renderer must do (visit every value once and write it out).  Targets:
render (validation included) at most 10x ``json.dumps``; the HTML at most 2x the JSON's bytes
(every outcome is drawn as an SVG mark with its test hooks, so it cannot be much smaller).

    .venv/bin/python scripts/bench_page.py [--skills 1000] [--versions 10] [--snapshots 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ledger.page import render_page
from ledger.page.model import validate
from tests.harness.pagedata import brain


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skills", type=int, default=1000)
    ap.add_argument("--versions", type=int, default=10)
    ap.add_argument("--snapshots", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="bench-out/page.json")
    args = ap.parse_args()
    data = brain(skills=args.skills, versions=args.versions, snapshots=args.snapshots)
    page = render_page(data)  # warm, and the bytes measured below
    text = json.dumps(data)
    render_s = _median(lambda: render_page(data), args.repeat)
    validate_s = _median(lambda: validate(data), args.repeat)
    dumps_s = _median(lambda: json.dumps(data), args.repeat)
    html_bytes, json_bytes = len(page.encode()), len(text.encode())
    doc = {
        "skills": args.skills,
        "versions": args.versions,
        "snapshots": args.snapshots,
        "render_s": render_s,
        "validate_s": validate_s,
        "json_dumps_s": dumps_s,
        "render_ratio": render_s / dumps_s,
        "html_bytes": html_bytes,
        "html_gzip_bytes": len(zlib.compress(page.encode(), 6)),
        "json_bytes": json_bytes,
        "size_ratio": html_bytes / json_bytes,
        "targets": {"render_ratio": "<= 10", "size_ratio": "<= 2"},
    }
    doc["met"] = doc["render_ratio"] <= 10 and doc["size_ratio"] <= 2
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
