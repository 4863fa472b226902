"""The committed lineage vectors (tests/vectors/lineage/, docs/lineage.md): small brains as git bundles,
each audited to the verdict recorded beside it. Regenerate with scripts/gen-lineage-vectors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.harness.cli import run_ledger

HERE = Path(__file__).parents[1] / "vectors" / "lineage"
VERDICTS = json.loads((HERE / "verdicts.json").read_text())


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_each_lineage_vector_gets_its_verdict(name: str, tmp_path: Path) -> None:
    want = VERDICTS[name]
    repo = tmp_path / f"{name}.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    subprocess.run(
        ["git", "--git-dir", str(repo), "fetch", "-q", str(HERE / f"{name}.bundle"), "main:main"], check=True
    )
    proc = run_ledger("audit", str(repo), "--json")
    report = json.loads(proc.stdout)
    failed = sorted(k for k, v in report["checks"].items() if not v["ok"])
    assert proc.returncode == (0 if want["ok"] else 1), proc.stderr
    assert set(want["fails"]) <= set(failed), failed
    for check in want["fails"]:
        assert report["checks"][check]["snapshot"] == want["snapshot"]
    if want["ok"]:
        assert failed == []


@pytest.mark.parametrize("name", [n for n in sorted(VERDICTS) if VERDICTS[n]["ok"]])
def test_honest_vectors_under_require_signatures(name: str, tmp_path: Path) -> None:
    """The signed honest brain (keys rotated) passes --require-signatures; the unsigned one fails it."""
    repo = tmp_path / f"{name}.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    subprocess.run(
        ["git", "--git-dir", str(repo), "fetch", "-q", str(HERE / f"{name}.bundle"), "main:main"], check=True
    )
    proc = run_ledger("audit", str(repo), "--json", "--require-signatures")
    report = json.loads(proc.stdout)
    assert proc.returncode == (0 if VERDICTS[name]["signed"] else 1)
    assert report["checks"]["signatures"]["ok"] == VERDICTS[name]["signed"]
