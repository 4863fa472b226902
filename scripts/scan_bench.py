"""The body of scripts/scan-bench: the scanner's error rates on labelled corpora nobody here wrote.

Each corpus is named on the command line with where its labels come from:

  --labelled NAME=CSV   a table of samples: a label column (``Label``/``label``/``classification``,
                        values ``malicious`` or ``benign``), a path column (``Ground_truth_path``/
                        ``path``), and optionally a family column (``Family``/``family``/``Source``);
                        paths are relative to the CSV's folder or the nearest folder above it where
                        they exist (ShenaoW/MalSkills writes them relative to its repository root).
  --benign NAME=DIR     every skill (a folder holding SKILL.md) under DIR is benign.
  --malicious NAME=DIR  every skill under DIR is malicious, of family NAME.

A sample is one labelled folder; when it holds several skills its rating is the worst of them.
Dataset bookkeeping that is not part of the skill (``_meta.json`` beside SKILL.md, written by
the crawler of ShenaoW/MalSkills) is left out. Samples are read as data, never executed.

For each scanner (ledger's built-in rules, and cisco-ai-skill-scanner's static analyzers when
``--cisco PYTHON`` names the interpreter of a venv it is installed in) it counts malicious samples
rated critical (approval refused) and high or above, benign samples likewise, and prints recall,
false-positive rate and precision with 95% Wilson intervals, per corpus and per family.
``--write-calibration`` writes ledger/scanner/calibration.json (integers only; docs/scanner.md).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ledger.scanner.files import load, skill_dirs
from ledger.scanner.static import SCANNER, scan

ROOT = Path(__file__).resolve().parent.parent
CALIBRATION = ROOT / "ledger" / "scanner" / "calibration.json"
CISCO = "ext:cisco-ai-skill-scanner"
HIGH = ("critical", "high")
Z95 = 1.96
SKIP = frozenset({"_meta.json"})  # crawler bookkeeping beside a sample's SKILL.md, not the skill
# The standard corpora (docs/scanner.md, "Measured error rates", fetches them under one ROOT):
# --standard ROOT names them all, and the line the calibration records.
MALSKILLS = "ShenaoW/MalSkills@46d60f09cef00fd3a9c01272be63dbd273ab4444"
ANTHROPICS = "anthropics/skills@9d2f1ae187231d8199c64b5b762e1bdf2244733d"
HERMES = "hermes-agent==0.19.0"
STANDARD_LINE = (
    f"{MALSKILLS} data/ground_truth/ground_truth_final.csv (100 malicious, 100 benign); "
    f"{ANTHROPICS} skills; {HERMES} sdist skills, optional-skills"
)


def standard(root: Path) -> tuple[list[str], list[str]]:
    """The --labelled and --benign specs of the standard corpora under ``root``."""
    hermes = root / "hermes-sdist" / "hermes_agent-0.19.0"
    labelled = [f"malskills={root / 'malskills' / 'data' / 'ground_truth' / 'ground_truth_final.csv'}"]
    benign = [
        f"anthropics={root / 'anthropics-skills'}",
        f"hermes={hermes / 'skills'}",
        f"hermes-optional={hermes / 'optional-skills'}",
    ]
    return labelled, benign


_LABEL = ("Label", "label", "classification", "Classification")
_PATH = ("Ground_truth_path", "path", "Path")
_FAMILY = ("Family", "family", "Source", "source")


@dataclass
class Sample:
    corpus: str
    path: Path
    label: str  # "malicious" | "benign"
    family: str
    ratings: dict[str, str] = field(default_factory=dict)  # scanner -> worst severity


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials (Wilson 1927); (0, 1) when n is 0."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate(k: int, n: int) -> dict[str, object]:
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": round(k / n, 4) if n else None, "low": round(lo, 4), "high": round(hi, 4)}


# --- the corpora ---------------------------------------------------------------------------


def _split(spec: str, flag: str) -> tuple[str, Path]:
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise SystemExit(f"scan-bench: {flag} wants NAME=PATH, got {spec!r}")
    return name, Path(path)


def _column(header: list[str], names: tuple[str, ...], csv_path: Path, *, required: bool) -> str | None:
    found = next((n for n in names if n in header), None)
    if found is None and required:
        raise SystemExit(f"scan-bench: {csv_path} has none of the columns {', '.join(names)}")
    return found


def labelled(name: str, csv_path: Path) -> list[Sample]:
    """The samples a label table names (see the module's docstring)."""
    if not csv_path.is_file():
        raise SystemExit(f"scan-bench: no label table at {csv_path}")
    with csv_path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    header = list(rows[0]) if rows else []
    label_col = _column(header, _LABEL, csv_path, required=True)
    path_col = _column(header, _PATH, csv_path, required=True)
    family_col = _column(header, _FAMILY, csv_path, required=False)
    bases = [csv_path.parent.resolve(), *csv_path.parent.resolve().parents]
    out = []
    for row in rows:
        label = (row[label_col] or "").strip().lower()
        if label not in ("malicious", "benign"):
            raise SystemExit(f"scan-bench: {csv_path}: label {label!r} is neither malicious nor benign")
        rel = (row[path_col] or "").strip()
        where = next((b / rel for b in bases if rel and (b / rel).is_dir()), None)
        if where is None:
            raise SystemExit(f"scan-bench: {csv_path}: sample {rel!r} is not a folder under {csv_path.parent} or above")
        family = (row[family_col] or "").strip() if family_col and label == "malicious" else ""
        out.append(Sample(name, where, label, family or ("-" if label == "benign" else name)))
    return out


def folder(name: str, root: Path, label: str) -> list[Sample]:
    if not root.is_dir():
        raise SystemExit(f"scan-bench: {root} is not a folder")
    skills = skill_dirs(root)
    if not skills:
        raise SystemExit(f"scan-bench: no SKILL.md under {root}")
    return [Sample(name, s, label, name if label == "malicious" else "-") for s in skills]


# --- the scanners ---------------------------------------------------------------------------

_RANK = {s: i for i, s in enumerate(("critical", "high", "medium", "low", "clean"))}


def _worst(severities: list[str]) -> str:
    return min(severities, key=_RANK.__getitem__, default="clean")


def ledger_rating(sample: Path) -> str:
    """The built-in scanner's worst severity over every skill in one sample folder."""
    worst = []
    for skill in skill_dirs(sample) or [sample]:
        files, links = load(skill)
        files = {p: v for p, v in files.items() if p not in SKIP}
        worst.append(scan(files, symlinks=links).worst)
    return _worst(worst)


# Runs inside the cisco venv: its static analyzers only (no LLM, no network, no behavioural
# dataflow), every sample folder given on stdin, one JSON object out: path -> worst severity.
_CISCO_DRIVER = r"""
import json, sys
from skill_scanner.core.scanner import SkillScanner
scanner = SkillScanner()
out = {}
for path in json.load(sys.stdin):
    try:
        result = scanner.scan_skill(path)
        sevs = [str(getattr(f.severity, "value", f.severity)).lower() for f in result.findings]
        out[path] = sevs
    except Exception as exc:  # a sample it cannot read is reported, not fatal
        out[path] = ["error: " + type(exc).__name__ + ": " + str(exc)[:200]]
json.dump(out, sys.stdout)
"""
_CISCO_SEVERITY = {"critical": "critical", "high": "high", "medium": "medium", "low": "low", "info": "low"}


def cisco_version(python: str) -> str:
    proc = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('cisco-ai-skill-scanner'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        why = proc.stderr.strip()[-300:]
        raise SystemExit(f"scan-bench: cisco-ai-skill-scanner is not importable by {python}: {why}")
    return proc.stdout.strip()


def cisco_ratings(python: str, samples: list[Path]) -> dict[Path, str]:
    """cisco-ai-skill-scanner's worst severity per sample folder, mapped onto ours (info -> low).

    The one place the external scanner is invoked: its static analyzers, offline, in its own venv.
    A sample folder holding several skills is scanned skill by skill; a sample whose scan fails
    is counted ``clean`` and named on stderr."""
    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        # Each skill copied without the crawler's bookkeeping, as the built-in scanner sees it.
        units: dict[str, Path] = {}
        for i, sample in enumerate(samples):
            for j, skill in enumerate(skill_dirs(sample) or [sample]):
                dest = Path(tmp) / f"{i}-{j}" / skill.name
                files, _links = load(skill)
                for rel, (data, executable) in files.items():
                    if rel in SKIP:
                        continue
                    target = dest / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    if executable:
                        target.chmod(0o700)
                units[str(dest)] = sample
        env = dict(os.environ, SKILL_SCANNER_LLM_API_KEY="", OPENAI_API_KEY="", ANTHROPIC_API_KEY="")
        proc = subprocess.run(
            [python, "-c", _CISCO_DRIVER],
            input=json.dumps(sorted(units)),
            capture_output=True,
            text=True,
            check=False,
            env=env,
            cwd=tmp,
        )
        if proc.returncode:
            raise SystemExit(f"scan-bench: cisco-ai-skill-scanner failed: {proc.stderr.strip()[-600:]}")
        raw: dict[str, list[str]] = json.loads(proc.stdout)
    per: dict[Path, list[str]] = {s: [] for s in samples}
    for unit, sevs in raw.items():
        errors = [s for s in sevs if s.startswith("error: ")]
        for e in errors:
            print(f"scan-bench: cisco could not scan {units[unit]}: {e[7:]}", file=sys.stderr)
        per[units[unit]].append(_worst([_CISCO_SEVERITY.get(s, "low") for s in sevs if s not in errors]))
    return {s: _worst(v) for s, v in per.items()}


def scan_seconds(code: Path, dirs: list[Path]) -> float:
    """Wall time of ``scripts/scan-corpus`` (the static scan, as a user runs it) over ``dirs``, with
    the code under ``code`` (this checkout, or another revision's ``ledger/`` and scan_corpus.py)."""
    env = dict(os.environ, PYTHONPATH=str(code))
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(code / "scripts" / "scan_corpus.py"), "--json", *map(str, dirs)],
        capture_output=True,
        text=True,
        check=False,
        cwd=code,
        env=env,
    )
    seconds = time.monotonic() - start
    if proc.returncode:
        raise SystemExit(f"scan-bench: scan-corpus under {code} failed: {proc.stderr.strip()[-600:]}")
    return seconds


def timing(anchor: str, dirs: list[Path], repeat: int) -> dict[str, object]:
    """The static scan of ``dirs`` today against the scanner at revision ``anchor``, in this run;
    the best of ``repeat`` runs each, taken in turn so both see the same machine load."""
    with tempfile.TemporaryDirectory(prefix="scan-bench-anchor-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", anchor, "ledger", "scripts/scan_corpus.py"],
            capture_output=True,
            check=False,
        )
        if archive.returncode:
            raise SystemExit(f"scan-bench: cannot read revision {anchor!r}: {archive.stderr.decode()[-300:]}")
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        now, then = [], []
        for _ in range(repeat):
            then.append(scan_seconds(Path(tmp), dirs))
            now.append(scan_seconds(ROOT, dirs))
    skills = sum(len(skill_dirs(d)) for d in dirs)
    return {
        "skills": skills,
        "seconds": round(min(now), 2),
        "anchor": anchor,
        "anchor_seconds": round(min(then), 2),
        "ratio": round(min(now) / min(then), 2),
    }


# --- the figures ----------------------------------------------------------------------------


def counts(samples: list[Sample], scanner: str) -> dict[str, dict[str, int]]:
    out = {}
    for label in ("malicious", "benign"):
        ours = [s.ratings[scanner] for s in samples if s.label == label]
        out[label] = {
            "samples": len(ours),
            "critical": sum(r == "critical" for r in ours),
            "high": sum(r in HIGH for r in ours),
        }
    return out


def figures(c: dict[str, dict[str, int]]) -> dict[str, object]:
    m, b = c["malicious"], c["benign"]
    return {
        "recall_critical": rate(m["critical"], m["samples"]),
        "recall_high": rate(m["high"], m["samples"]),
        "fpr_critical": rate(b["critical"], b["samples"]),
        "fpr_high": rate(b["high"], b["samples"]),
        "precision_critical": rate(m["critical"], m["critical"] + b["critical"]),
        "precision_high": rate(m["high"], m["high"] + b["high"]),
    }


def report(samples: list[Sample], scanners: list[str]) -> dict[str, object]:
    def block(group: list[Sample]) -> dict[str, object]:
        return {sc: (c := counts(group, sc)) | {"figures": figures(c)} for sc in scanners}

    names = dict.fromkeys(s.corpus for s in samples)
    corpora = {name: block([s for s in samples if s.corpus == name]) for name in names}
    families = {
        fam: block([s for s in samples if s.family == fam])
        for fam in sorted({s.family for s in samples if s.label == "malicious"})
    }
    return {"total": block(samples), "corpora": corpora, "families": families}


def _pct(r: dict[str, object]) -> str:
    if not r["n"]:
        return "-"
    return f"{r['k']}/{r['n']} {100 * r['rate']:.1f}% [{100 * r['low']:.1f}-{100 * r['high']:.1f}]"


def print_table(result: dict[str, object], scanners: list[str]) -> None:
    cols = ("recall_critical", "recall_high", "fpr_critical", "fpr_high", "precision_critical")
    print("group | scanner | " + " | ".join(cols))
    rows = [("all", result["total"])]
    rows += [(f"corpus {k}", v) for k, v in result["corpora"].items()]
    rows += [(f"family {k}", v) for k, v in result["families"].items()]
    for name, block in rows:
        for sc in scanners:
            f = block[sc]["figures"]
            print(f"{name} | {sc} | " + " | ".join(_pct(f[c]) for c in cols))


def _cell(r: dict[str, object]) -> str:
    if not r["n"]:
        return "–"
    return f"{r['k']}/{r['n']} ({100 * r['rate']:.1f}%, {100 * r['low']:.1f}–{100 * r['high']:.1f})"


def markdown(result: dict[str, object], scanners: list[str]) -> list[str]:
    """The results table of docs/scanner.md, "Measured error rates" (rate, 95% Wilson interval)."""
    lines = [
        "| group | scanner | malicious refused (critical) | malicious high or above "
        "| benign refused (critical) | benign high or above | precision at critical |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    rows = [("all corpora", result["total"])]
    rows += [(f"corpus `{k}`", v) for k, v in result["corpora"].items()]
    rows += [(f"family {k}", v) for k, v in result["families"].items()]
    for name, block in rows:
        for sc in scanners:
            f = block[sc]["figures"]
            label = f"`{sc}` {result['versions'][sc]}" if sc.startswith("ext:") else f"`{sc}`"
            cells = [_cell(f[c]) for c in ("recall_critical", "recall_high", "fpr_critical", "fpr_high")]
            cells.append("–" if name.startswith("family") else _cell(f["precision_critical"]))  # no benign in a family
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return lines


def calibration(samples: list[Sample], scanners: dict[str, str], corpora_line: str, day: str) -> dict[str, object]:
    return {
        sc: {"version": version, "measured": day, "corpora": corpora_line} | counts(samples, sc)
        for sc, version in scanners.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scan-bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--labelled", action="append", default=[], metavar="NAME=CSV")
    parser.add_argument("--benign", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--malicious", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--standard", type=Path, metavar="ROOT", help="the standard corpora fetched under ROOT")
    parser.add_argument("--cisco", metavar="PYTHON", help="the python of a venv holding cisco-ai-skill-scanner")
    parser.add_argument("--corpora", default="", help="one line naming the corpora and their commits (calibration)")
    parser.add_argument("--anchor", metavar="REV", help="also time the static scan of the --benign dirs against REV")
    parser.add_argument("--repeat", type=int, default=1, help="timing runs each (--anchor); the best is kept")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the table docs/scanner.md shows")
    parser.add_argument("--out", type=Path, metavar="FILE", help="also write the JSON to FILE (bench-out/scan.json)")
    parser.add_argument("--list", action="store_true", help="name each sample and its ratings")
    parser.add_argument("--write-calibration", action="store_true", help=f"write {CALIBRATION.relative_to(ROOT)}")
    parser.add_argument("--calibration-out", type=Path, default=CALIBRATION, help=argparse.SUPPRESS)  # tests
    args = parser.parse_args(argv)
    if args.standard:
        more_labelled, more_benign = standard(args.standard)
        args.labelled, args.benign = more_labelled + args.labelled, more_benign + args.benign
        if not args.corpora and not (args.malicious or len(args.labelled) > 1 or len(args.benign) > 3):
            args.corpora = STANDARD_LINE
    samples: list[Sample] = []
    for spec in args.labelled:
        samples += labelled(*_split(spec, "--labelled"))
    for spec in args.benign:
        samples += folder(*_split(spec, "--benign"), "benign")
    for spec in args.malicious:
        samples += folder(*_split(spec, "--malicious"), "malicious")
    if not samples:
        parser.error("name at least one corpus (--labelled, --benign or --malicious)")
    if args.write_calibration and not args.corpora:
        parser.error("--write-calibration needs --corpora (the line that names what was measured)")
    versions = {SCANNER: SCANNER}
    seconds: dict[str, float] = {}
    start = time.monotonic()
    for s in samples:
        s.ratings[SCANNER] = ledger_rating(s.path)
    seconds[SCANNER] = round(time.monotonic() - start, 2)
    if args.cisco:
        versions[CISCO] = cisco_version(args.cisco)
        start = time.monotonic()
        rated = cisco_ratings(args.cisco, [s.path for s in samples])
        seconds[CISCO] = round(time.monotonic() - start, 2)
        for s in samples:
            s.ratings[CISCO] = rated[s.path]
    scanners = list(versions)
    result = report(samples, scanners) | {"versions": versions, "seconds": seconds}
    if args.anchor:
        dirs = [_split(spec, "--benign")[1] for spec in args.benign]
        if not dirs:
            parser.error("--anchor times the static scan of the --benign folders: name at least one")
        result["timing"] = timing(args.anchor, dirs, max(1, args.repeat))
    if args.write_calibration:
        day = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
        # Scanners measured before and not in this run keep their entry: their verdicts stay calibrated.
        old = json.loads(args.calibration_out.read_text(encoding="utf-8")) if args.calibration_out.is_file() else {}
        cal = old | calibration(samples, versions, args.corpora, day)
        args.calibration_out.write_text(json.dumps(cal, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.list:
        for s in samples:
            family = s.family.replace(" ", "_")  # one word: the listing splits on blanks
            print(f"{s.label:9} {family:24} " + " ".join(f"{sc}={s.ratings[sc]}" for sc in scanners) + f"  {s.path}")
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    elif args.markdown:
        print("\n".join(markdown(result, scanners)))
    else:
        print_table(result, scanners)
        print("seconds: " + ", ".join(f"{k} {v}" for k, v in seconds.items()))
        if "timing" in result:
            t = result["timing"]
            print(
                f"static scan of {t['skills']} skills: {t['seconds']} s; at {t['anchor']}: {t['anchor_seconds']} s "
                f"({t['ratio']}x)"
            )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
