"""The body of scripts/scan-corpus: scan every skill directory under the given roots, count."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from ledger.scanner.files import load, skill_dirs
from ledger.scanner.static import RULES, Verdict, scan

HIGH = ("critical", "high")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scan-corpus", description=__doc__)
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.add_argument("--list", action="store_true", help="name each skill with a finding of high or above")
    args = parser.parse_args(argv)
    verdicts: dict[str, Verdict] = {}
    for root in args.dirs:
        for skill in skill_dirs(root):
            if skill.name == "vetted" and (skill.parent / "skill").is_dir():
                continue  # tests/supply's layout: the approved version of the update beside it
            files, links = load(skill)
            vetted = skill.parent / "vetted" if skill.name == "skill" else None
            before = load(vetted)[0] if vetted and vetted.is_dir() else None
            verdicts[str(skill)] = scan(files, vetted=before, symlinks=links)
    per_rule: Counter[tuple[str, str]] = Counter()
    for verdict in verdicts.values():
        per_rule.update({(f.rule, f.severity) for f in verdict.findings})
    total = len(verdicts)
    high = sorted(k for k, v in verdicts.items() if v.worst in HIGH)
    counts = {
        "skills": total,
        "any_finding": sum(bool(v.findings) for v in verdicts.values()),
        "high_or_above": len(high),
        "critical": sum(v.blocking for v in verdicts.values()),
        "rules": {f"{r}/{s}": n for (r, s), n in sorted(per_rule.items())},
    }
    if args.json:
        json.dump(counts | {"high_or_above_skills": high}, sys.stdout, indent=2)
        print()
        return 0
    pct = (lambda n: f"{100 * n / total:.1f}%") if total else (lambda n: "-")
    print(f"skills: {total}")
    for key in ("any_finding", "high_or_above", "critical"):
        print(f"{key.replace('_', ' ')}: {counts[key]} ({pct(counts[key])})")
    for (rule, severity), n in sorted(per_rule.items()):
        print(f"  {rule} {severity:<8} {n:4d} skills ({pct(n)})  {RULES[rule].title if rule in RULES else ''}")
    if args.list:
        for name in high:
            worst = [f for f in verdicts[name].findings if f.severity in HIGH]
            print(f"{name}: " + "; ".join(f"{f.rule} {f.severity} {f.file}:{f.line} {f.detail}" for f in worst[:4]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # scan-corpus … | head
        sys.exit(0)
