"""The tamper corpus (tests/tamper.py, docs/lineage.md §11) through `ledger audit`: every class fails,
naming the snapshot; the honest brain passes."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests import tamper
from tests.conftest import run_ledger


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    return tamper.build_honest(tmp_path_factory.mktemp("tamper"))


def _audit(repo: Path, *args: str) -> tuple[int, dict]:
    proc = run_ledger("audit", str(repo), "--json", *args)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_the_honest_brain_passes(honest) -> None:
    brain, _ = honest
    code, report = _audit(brain, "--require-signatures")
    assert code == 0 and report["ok"], {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}
    assert "signed by keys the brain trusted" in report["checks"]["signatures"]["summary"]


@pytest.mark.parametrize("case", tamper.cases(), ids=lambda c: c.name)
def test_every_tamper_class_fails_the_audit_naming_the_snapshot(honest, case: tamper.Case, tmp_path: Path) -> None:
    brain, idx = honest
    copy = tmp_path / "copy.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(brain / ".git"), str(copy)], check=True)
    named = case.apply(copy, idx)
    code, report = _audit(copy, *case.audit_args)
    chk = report["checks"][case.check]
    assert code == 1 and not chk["ok"], (case.name, {k: v["summary"] for k, v in report["checks"].items()})
    if named:
        assert chk["snapshot"] == named, (case.name, chk)
    assert re.search(tamper.REASONS.get(case.name, ""), chk["summary"]), (case.name, chk["summary"])
    cited = (Path(__file__).parent.parent / "docs" / "lineage.md").read_text()
    assert f"`{case.name}`" in cited, f"docs/lineage.md §11 does not list {case.name}"
