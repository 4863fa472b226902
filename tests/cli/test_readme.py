"""The README's CLI section is a script: every ``sh`` block under "## CLI" runs as it is."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.chain
def test_the_readme_cli_section_runs_top_to_bottom() -> None:
    proc = subprocess.run([str(REPO / "scripts" / "readme-walkthrough")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "every step of the README's CLI section ran" in proc.stderr
    for shown in ("pushed", "cloned", "committed on chain at seq", "Verified OK"):
        assert shown in proc.stdout + proc.stderr, shown


def test_the_readme_lists_every_command() -> None:
    from ledger.cli import main

    readme = (REPO / "README.md").read_text()
    listing = readme[readme.index("Every command") :]
    names = set(main.commands)
    for group in ("skill", "chain", "keys"):
        names |= {f"{group} {sub}" for sub in main.commands[group].commands}  # type: ignore[attr-defined]
    missing = sorted(n for n in names if not re.search(rf"(^|[ |]){re.escape(n.split()[-1])}( |$)", listing, re.M))
    assert not missing, f"README's command list omits: {missing}"
