"""Reduced runs of the reliability harnesses (tests/harness/stress.py); full sizes: scripts/stress."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.stress import hostile_corpus, kill_run, symlink_race, writers_run

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")


def test_random_kills_lose_nothing_and_brick_nothing(tmp_path: Path) -> None:
    res = kill_run(tmp_path, kills=30, seed=7, verify_every=10)
    assert res["acked"] > 0 and res["kills"] == 30
    assert (res["lost"], res["bricked"], res["torn"]) == (0, 0, 0), res["problems"]


def test_random_kills_on_a_fanned_out_brain(tmp_path: Path) -> None:
    """The same, on a brain past ledger.store.skilltree.FANOUT_AT, whose skills/ tree is fanned out."""
    res = kill_run(tmp_path, kills=20, seed=8, verify_every=10, fill=1100)
    assert res["acked"] > 0 and res["kills"] == 20
    assert (res["lost"], res["bricked"], res["torn"]) == (0, 0, 0), res["problems"]


@pytest.mark.parametrize("kind", ["patch", "write-file"])
def test_writers_on_one_skill_keep_every_acknowledged_write(tmp_path: Path, kind: str) -> None:
    res = writers_run(tmp_path, writers=4, ops=5, kind=kind)
    assert res["acked"] == 20, res["failed"]
    assert res["lost"] == 0 and res["duplicate_versions"] == 0 and res["versions_contiguous"]
    assert res["verify_ok"] and res["reader_failures"] == [] and res["reader_runs"] > 0


def test_writers_on_their_own_skills(tmp_path: Path) -> None:
    res = writers_run(tmp_path, writers=3, ops=4, kind="patch", same_skill=False, readers=1)
    assert res["acked"] == 12 and res["lost"] == 0 and res["versions_contiguous"] and res["verify_ok"]


def test_symlink_swapped_during_writes_never_lets_a_byte_out(tmp_path: Path) -> None:
    res = symlink_race(tmp_path, attempts=150)
    assert res["swaps"] > 0 and res["sentinel_unchanged"] and res["status_ok"], res


def test_hostile_corpus_is_refused_cleanly_and_changes_nothing(tmp_path: Path) -> None:
    res = hostile_corpus(tmp_path)
    assert res["failures"] == [] and not res["brain_changed"] and res["verify_ok"], res


def test_every_write_surface_at_once_on_one_skill(tmp_path: Path) -> None:
    """Reduced mixed-surface harness (tests/harness/mixed.py; full size: scripts/stress mixed): each acknowledged
    write is a version, applied to its true base, with no traceback anywhere."""
    from tests.harness.mixed import KINDS, mixed_run

    res = mixed_run(tmp_path, writers=4, ops=12, seed=5)
    assert res["acked"] >= 40 and set(res["by_surface"]) >= set(KINDS) - {"revert"}, res["by_surface"]
    assert res["lost_count"] == 0 and res["stale_count"] == 0, (res["lost"], res["stale_base"])
    assert res["duplicate_versions"] == 0 and res["versions_contiguous"], res
    assert res["tracebacks"] == 0 and res["server_tracebacks"] == 0, res["traceback_examples"]
    assert res["verify_ok"] and res["reader_failures"] == [] and res["reader_runs"] > 0, res


@pytest.mark.parametrize("watch", [False, True], ids=["sync", "sync-watch"])
def test_random_kills_of_sync_lose_nothing_and_tear_nothing(tmp_path: Path, watch: bool) -> None:
    """Reduced tests/harness/synckills.py (full size: scripts/stress sync, sync-watch): ``ledger sync`` (or a
    watcher) SIGKILLed while the ledger and a runtime both write."""
    from tests.harness.synckills import sync_kill_run

    res = sync_kill_run(tmp_path, kills=12 if watch else 20, seed=11, watch=watch)
    assert res["kills"] > 0 and res["runtime_acked"] > 0 and res["ledger_acked"] > 0, res
    assert (res["lost"], res["torn"], res["bricked"], res["conflicts"]) == (0, 0, 0, 0), res["problems"]
    assert res["verify_ok"] and res["final_noop"] and res["staging_left"] == 0 and res["in_target"] == 0, res
