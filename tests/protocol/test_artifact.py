"""The ABI and bytecode shipped in the package must be what a fresh `forge build` produces."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ledger.chain.registry import artifact

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.chain
def test_shipped_artifact_matches_fresh_forge_build(tmp_path: Path) -> None:
    subprocess.run(
        [
            str(ROOT / "scripts" / "forge"),
            "build",
            "--force",
            "-q",
            "--out",
            str(tmp_path / "out"),
            "--cache-path",
            str(tmp_path / "cache"),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    fresh = json.loads((tmp_path / "out" / "BrainRegistry.sol" / "BrainRegistry.json").read_text())
    shipped = artifact()
    assert shipped["abi"] == fresh["abi"], "ABI drifted: run scripts/export-artifact"
    assert shipped["bytecode"] == fresh["bytecode"]["object"], "bytecode drifted: run scripts/export-artifact"
    assert shipped["deployedBytecode"] == fresh["deployedBytecode"]["object"]
    # The immutables' offsets (ledger/chain/identity.py checks each in the code on chain), by AST id order.
    from ledger.chain.identity import IMMUTABLES

    refs = fresh["deployedBytecode"]["immutableReferences"]
    assert shipped["immutables"] == {
        name: sorted(r["start"] for r in refs[k]) for name, k in zip(IMMUTABLES, sorted(refs, key=int), strict=True)
    }, "immutables drifted: run scripts/export-artifact"
