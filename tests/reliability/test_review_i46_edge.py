"""Red-team review of issue 46 (docs/lineage/evidence.md §9 batches; the edge never deletes or displaces): each
attack that got through, as a test that fails on the code it was found on.

Outcome attacks rewrite the honest outcomes brain (tests/harness/tamper_outcomes.py) as a holder of every key would,
re-signing each snapshot, so that only the ``evidence`` check can tell.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.harness import tamper, tamper_outcomes
from tests.harness.cli import run_ledger

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")


@pytest.fixture(scope="module")
def honest_outcomes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    return tamper_outcomes.build_honest_outcomes(tmp_path_factory.mktemp("red3-outcomes"))


def _copy(honest: tuple[Path, dict[str, int]], tmp_path: Path) -> Path:
    copy = tmp_path / "copy.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(honest[0] / ".git"), str(copy)], check=True)
    return copy


def _audit(repo: Path) -> tuple[int, dict]:
    proc = run_ledger("audit", str(repo), "--json", "--require-signatures")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _v1(entry: bytes, key: bytes, task: str) -> bytes:
    """``entry``'s record as a v1 record (no batch) for another task, signed by ``key``."""
    from ledger.store import outcomes as oc

    record = json.loads(entry)["record"]
    record = {k: v for k, v in record.items() if k not in ("batch", "eval")}
    record.update(format=oc.FORMAT_V1, task={"id": task, "digest": None})
    return oc.sign_entry(record, key)


def test_a_v1_record_after_a_v2_one_in_the_same_snapshot_fails_the_audit(honest_outcomes, tmp_path: Path) -> None:
    """lineage/evidence.md §9's table: 'a v1 record after a v2 one' fails.  The first outcome snapshot appends the
    agent's v2
    record; a v1 record slipped in after it, in the same snapshot, is appended after the log's first v2
    record, and escapes rule 1 only if rule 1 looks at the parent's log alone."""
    keys = honest_outcomes[0].parent / "keys"  # the honest brain's keys: tamper_outcomes.KEYS re-signs with them
    brain = tmp_path / "fresh"
    env = {"LEDGER_KEYS": str(keys)}
    run_ledger("init", str(brain), check=True, env=env)
    run_ledger(
        "--brain", str(brain), "skill", "create", "a", "--description", "A", "--body", "x\n", check=True, env=env
    )
    run_ledger("--brain", str(brain), "outcome", "record", "a", "--task", "T-1", "--success", check=True, env=env)
    copy = tmp_path / "copy.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(brain / ".git"), str(copy)], check=True)
    assert _audit(copy)[0] == 0
    at = len(tamper.lineage(copy)) - 1  # the first outcome snapshot, the tip
    first = tamper_outcomes._log(copy, tamper.lineage(copy)[at])
    assert len(first) == 1 and b'"batch"' in first[0]
    extra = _v1(first[0], tamper_outcomes.KEYS["agent"], "T-1b")

    def change(log: list[bytes]) -> list[bytes]:
        return [*log, extra]

    named = tamper_outcomes.rewrite_logs(copy, at, change)
    code, report = _audit(copy)
    chk = report["checks"]["evidence"]
    assert code == 1 and not chk["ok"], chk
    assert chk["snapshot"] == named, chk
    assert "is a v1 record (brain-ledger/outcome/v1), appended after the log's first v2 record" in chk["summary"]


def test_a_skill_the_brain_deletes_keeps_the_files_the_targets_ignore_rules_keep_out(tmp_path: Path) -> None:
    """The edge never deletes what the runtime wrote: a target's ``.ledgerignore`` keeps ``notes/`` out of
    the ledger, so no version holds the runtime's ``alpha/notes/mine.md``.  When the brain deletes ``alpha``
    and the sync takes its folder out, that file must stay where the runtime wrote it, not be discarded
    with the ledger's copy."""
    from tests.unit.sync.test_sync import _ledger, _linked, _sync

    brain, env, target = _linked(tmp_path, "alpha", "beta")
    (target / ".ledgerignore").write_text("notes/\n")
    (target / "alpha/notes").mkdir()
    (target / "alpha/notes/mine.md").write_text("the runtime's own notes\n")
    (target / "alpha/.DS_Store").write_bytes(b"debris")  # the ledger's defaults: debris, may go with the folder
    assert _sync(brain, env)["targets"][0]["recorded"] == []  # ignored: nothing to record
    _ledger(brain, env, "skill", "delete", "alpha")
    report = _sync(brain, env)["targets"][0]
    assert report["removed"] == ["alpha"], report
    assert not (target / "alpha/SKILL.md").exists()
    assert (target / "alpha/notes/mine.md").read_text() == "the runtime's own notes\n"
    assert _sync(brain, env)["targets"][0]["status"] == "ok"  # and the next pass is quiet about it
    assert (target / "alpha/notes/mine.md").read_text() == "the runtime's own notes\n"
