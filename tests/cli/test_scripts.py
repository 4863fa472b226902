"""The set-up scripts a new user runs first: the demo is re-runnable and cleans up after itself."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.chain
def test_demo_runs_twice_on_the_same_directory_and_leaves_no_scratch(tmp_path: Path) -> None:
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")} | {"TMPDIR": str(scratch)}
    brain = tmp_path / "demo-brain"
    for run in (1, 2):
        proc = subprocess.run(
            [str(REPO / "scripts" / "demo"), str(brain)], env=env, capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, (run, proc.stderr[-3000:])
        assert "OK: the on-chain head equals the local head" in proc.stdout
        _tells_a_new_user(proc.stdout, proc.stderr, brain)
        assert list(scratch.iterdir()) == [], f"run {run} left {list(scratch.iterdir())}"
    assert "starting it over" in proc.stderr
    _a_shareholder_reads_the_demo_page(brain / ".ledger" / "report" / "index.html")
    other = tmp_path / "not-a-demo"
    other.mkdir()
    (other / "keep.txt").write_text("mine\n")
    refused = subprocess.run(
        [str(REPO / "scripts" / "demo"), str(other)], env=env, capture_output=True, text=True, timeout=600
    )
    assert refused.returncode == 1 and (other / "keep.txt").read_text() == "mine\n"


def _a_shareholder_reads_the_demo_page(page: Path) -> None:
    """The demo's own page, read from the DOM as a shareholder would (tests/unit/audit/test_report.py's reader):
    what can it do, what changed last, is it verified, how many shares, who holds them, where is it anchored."""
    from tests.unit.audit.test_report import _read

    for width in (1280, 390):
        v = _read(page, "demo", width=width)
        can = dict(v["can"])
        assert {"oracle-manipulation", "pdf-extraction", "csv-sum", "title-case"} <= set(can), can
        assert "TWAP" in can["oracle-manipulation"] and "scratch-notes" not in can  # deleted: not something it can do
        assert v["changes"]["lastMessage"] and v["lastChange"], v["changes"]
        assert v["word"] == "PASSING" and v["anchored"]["checked"] == "true"  # the demo reports with --rpc
        assert "helps" in v["howWellText"] and "csv-sum" in v["howWellText"]  # the lift of the eval family
        s = v["shares"]
        assert (s["supply"], s["ownerBalance"], s["holders"], s["checked"]) == ("1000000", "1000000", "1", "true"), s
        assert len(v["holders"]) == 1 and v["holders"][0][1] == 1_000_000
        assert s["headMatch"] == "true" and s["metadataHead"].startswith("blake3-tree-v1:")
        assert v["anchored"]["chain"] == "local test chain" and v["anchored"]["pending"] == "0"


def _argv(line: str) -> list[str]:
    """The words bash reads from an echoed command line, as a user pasting it would run it."""
    out = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True, text=True, check=True)
    return out.stdout.split("\0")[:-1]


def _tells_a_new_user(out: str, err: str, brain: Path) -> None:
    """Each step narrated in one line, its command pasteable, and the last lines: where the page is, what the
    shares are."""
    lines = out.splitlines()
    commands = [i for i, ln in enumerate(lines) if ln.startswith("$ ")]
    assert len(commands) > 30
    for i in commands:  # "# what it does", then "$ the command"
        assert lines[i - 1].startswith("# ") and len(lines[i - 1]) > 10, lines[i - 1 : i + 1]
        assert lines[i - 2] == "", lines[i - 2 : i + 1]
    create = next(lines[i][2:] for i in commands if lines[i].startswith("$ ledger skill create oracle-manipulation"))
    assert _argv(create) == [
        "ledger",
        "skill",
        "create",
        "oracle-manipulation",
        "--description",
        "Check oracle freshness and prefer TWAP over spot price",
        "--body",
        "When a contract reads a price, check staleness.\nPrefer a TWAP; a spot read is manipulable.\n",
    ]
    patch = next(lines[i][2:] for i in commands if lines[i].startswith("$ ledger skill patch pdf-extraction"))
    assert _argv(patch)[5:8] == ["layout first.", "--new", "layout first; fall back to OCR for scans."]
    # the echoed commands name no --brain (the demo sets LEDGER_BRAIN): the last lines say how to paste them back
    assert any(
        ln.startswith("this brain:") and shlex.join(["export", f"LEDGER_BRAIN={brain}"]) in ln for ln in lines[-16:]
    ), lines[-16:]
    page = brain / ".ledger" / "report" / "index.html"
    tail = lines[-8:]
    assert f"report page:        {page}" in tail, tail
    assert f"open it:            {page.as_uri()}" in tail, tail
    assert page.is_file()
    shares = next(ln for ln in tail if ln.startswith("shares: "))
    assert re.search(r"\b1,000,000\b", shares), shares
    assert re.search(r"token 0x[0-9a-fA-F]{40} id 0x[0-9a-f]{64}", shares), shares
    assert "!!" not in err and "Deprecat" not in err  # no setuptools banner from bootstrap
