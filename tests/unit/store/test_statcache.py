"""The stat cache behind status, list and index: it hits when nothing changed, misses on any change,
and is never used to record."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from ledger.brain import Brain
from ledger.errors import TreeError
from ledger.store.statcache import _from_columns, _to_columns, signature
from tests.harness.brains import make_brain

HOUR = 3600 * 10**9


def _cached(brain: Brain) -> dict:
    """The cache file as ``name → entry`` (it is stored in columns)."""
    return _from_columns(json.loads((brain.control / "cache" / "stat-v1.json").read_text()))


def _age(root: Path) -> None:
    """Back-date every mtime an hour, so entries are not racily clean and get cached."""
    old = time.time_ns() - HOUR
    for path in [root, *root.rglob("*")]:
        os.utime(path, ns=(old, old), follow_symlinks=False)


@pytest.fixture
def aged(tmp_path: Path):
    brain = make_brain(tmp_path / "brain", {name: (f"Skill {name}", "body\n") for name in ("a", "b")})
    brain.write_file("b", "references/r.md", b"ref\n")
    _age(brain.skills_dir)
    assert brain.status().clean and [s.name for s in brain.list()] == ["a", "b"]  # fills the cache
    cached = _cached(brain)
    assert set(cached) == {"a", "b"} and all("digest" in e and "info" in e for e in cached.values())
    yield brain
    brain.close()


def _same_size_edit(path: Path, old: bytes, new: bytes) -> None:
    """Change bytes in place keeping size and mtime: only the ctime (and content) tell."""
    st = path.stat()
    data = path.read_bytes()
    assert len(old) == len(new) and old in data
    path.write_bytes(data.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(aged: Brain) -> None:
    _same_size_edit(aged.skills_dir / "a" / "SKILL.md", b"body", b"BODY")
    assert aged.status().changes == {"a/SKILL.md": "modified"}
    _same_size_edit(aged.skills_dir / "b" / "SKILL.md", b"Skill b", b"Skill B")
    assert [s.description for s in aged.list()] == ["Skill a", "Skill B"]


def test_added_removed_and_swapped_entries_miss_the_cache(aged: Brain, tmp_path: Path) -> None:
    (aged.skills_dir / "b" / "references" / "new.md").write_text("x\n")
    (aged.skills_dir / "a" / "SKILL.md").rename(tmp_path / "moved.md")
    assert aged.status().changes == {"a/SKILL.md": "deleted", "b/references/new.md": "new"}
    (tmp_path / "moved.md").rename(aged.skills_dir / "a" / "SKILL.md")
    (aged.skills_dir / "b" / "references" / "new.md").unlink()
    (aged.skills_dir / "b" / "references" / "r.md").unlink()
    (aged.skills_dir / "b" / "references" / "r.md").symlink_to("/etc/hostname")
    with pytest.raises(TreeError, match="symbolic link"):
        aged.status()


def test_a_forged_cache_never_reaches_a_snapshot(aged: Brain) -> None:
    path = aged.control / "cache" / "stat-v1.json"
    entries = _cached(aged)
    _same_size_edit(aged.skills_dir / "b" / "SKILL.md", b"body", b"BODY")
    # Forge the entry for b: the new stat fields, but a's digest, so status believes b is a.
    entries["b"]["stat"] = signature(aged.skills_dir / "b")[1]
    entries["b"]["digest"] = entries["a"]["digest"]
    path.write_text(json.dumps(_to_columns(entries)))
    assert aged.status().changes != {}  # the forgery is what status sees (b's digest now equals a's) ...
    receipt = aged.snapshot()  # ... but a snapshot reads the bytes
    assert receipt.skill == "b" and "BODY" in aged.show("b", receipt.version)


def test_a_corrupt_cache_is_ignored(aged: Brain) -> None:
    (aged.control / "cache" / "stat-v1.json").write_text("{not json")
    assert aged.status().clean and len(aged.list()) == 2


def test_racily_clean_entries_are_not_cached(tmp_path: Path) -> None:
    brain = Brain.init(tmp_path / "brain")
    brain.create("fresh", "F", "now\n")
    assert brain.status().clean
    cache = brain.control / "cache" / "stat-v1.json"
    assert not cache.exists() or "fresh" not in _cached(brain)
    brain.close()


def test_a_clean_status_is_remembered_for_its_head_only(aged: Brain) -> None:
    """The clean record answers the next status without loading the head, but only for that
    head commit, and any change to any skill forgets it."""
    doc = json.loads((aged.control / "cache" / "stat-v1.json").read_text())
    head = aged.status().head_commit
    assert doc["clean"] == {"commit": head, "root": aged.status().head_root}
    receipt = aged.patch("a", "body", "new body")  # the head moves: the record no longer applies
    _age(aged.skills_dir)
    st = aged.status()
    assert st.clean and st.head_commit == receipt.commit and st.head_commit != head and st.head_root == receipt.root
    _same_size_edit(aged.skills_dir / "b" / "SKILL.md", b"body", b"BODY")
    assert aged.status().changes == {"b/SKILL.md": "modified"}
    assert "clean" not in json.loads((aged.control / "cache" / "stat-v1.json").read_text())


def test_a_clean_record_for_another_head_is_not_believed(aged: Brain) -> None:
    path = aged.control / "cache" / "stat-v1.json"
    doc = json.loads(path.read_text())
    doc["clean"] = {"commit": "00" * 20, "root": "blake3-tree-v1:" + "11" * 32}
    path.write_text(json.dumps(doc))
    st = aged.status()
    assert st.clean and st.head_root != doc["clean"]["root"] and st.head_commit != doc["clean"]["commit"]


# --------------------------------------------------------------------------- the CLI's quick path

PROBE = (  # which path answered: click exits through SystemExit, so report from atexit
    "import atexit, sys; from ledger._entry import main; sys.argv = ['ledger'] + sys.argv[1:]; "
    "atexit.register(lambda: print('QUICK' if 'click' not in sys.modules else 'FULL', file=sys.stderr)); main()"
)
READS = (["status"], ["status", "--json"], ["index"], ["skill", "list"])


def _both(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[str, str, str]:
    """(quick-or-full path taken, its stdout, the full path's stdout)."""
    import sys

    base = {**os.environ, **(env or {})}
    base.pop("LEDGER_FULL_PATH", None)
    got = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=cwd, env=base)
    full = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**base, "LEDGER_FULL_PATH": "1"},
    )
    assert got.returncode == full.returncode and full.stderr.split()[-1] == "FULL"
    return got.stderr.split()[-1], got.stdout, full.stdout


@pytest.mark.parametrize("args", READS, ids=" ".join)
def test_the_quick_path_prints_what_the_full_path_prints(aged: Brain, tmp_path: Path, args: list[str]) -> None:
    root = str(aged.root)
    for argv, cwd, env in (
        (["--brain", root, *args], tmp_path, None),
        ([f"--brain={root}", *args], tmp_path, None),
        (args, aged.skills_dir / "a", None),  # found by searching up, as git does
        (args, tmp_path, {"LEDGER_BRAIN": root}),
    ):
        path, quick, full = _both(argv, cwd, env)
        assert path == "QUICK" and quick == full and "a" in quick


def test_the_quick_path_steps_aside_whenever_the_cache_cannot_answer(aged: Brain, tmp_path: Path) -> None:
    root = ["--brain", str(aged.root)]
    _same_size_edit(aged.skills_dir / "a" / "SKILL.md", b"body", b"BODY")  # a change: status must read it
    path, quick, full = _both([*root, "status"], tmp_path)
    assert path == "FULL" and "modified  skills/a/SKILL.md" in quick
    aged.snapshot()
    _age(aged.skills_dir)
    assert _both([*root, "status"], tmp_path)[0] == "FULL"  # fills the cache for the new head
    assert _both([*root, "status"], tmp_path)[0] == "QUICK"
    aged.update_config(chain={"rpc": "http://127.0.0.1:9", "chain_id": 31337})  # pending counts need git notes
    path, quick, full = _both([*root, "status"], tmp_path)
    assert path == "FULL" and "chain  " in full  # counted from the notes, and remembered
    path, quick, full = _both([*root, "status", "--json"], tmp_path)
    assert path == "QUICK" and quick == full and json.loads(quick)["pending_chain"] == len(list(aged.store.lineage()))
    subprocess.run(
        [
            "git",
            f"--git-dir={aged.store.git_dir}",
            "notes",
            "--ref",
            "ledger-chain",
            "add",
            "-m",
            "{}",
            aged.store.head().hex(),
        ],
        check=True,
        capture_output=True,
    )
    path, quick, full = _both([*root, "status"], tmp_path)  # a receipt arrived: counted again
    assert path == "FULL" and quick == full
    assert _both([*root, "status"], tmp_path)[0] == "QUICK"
    _both([*root, "index"], tmp_path)  # the snapshot changed a: its index line is read once more
    assert _both([*root, "index"], tmp_path)[0] == "QUICK"
    (aged.control / "journal.json").write_text("{}")  # opening the brain would roll it forward
    assert _both([*root, "index"], tmp_path)[0] == "FULL"
    (aged.control / "journal.json").unlink()
    (aged.skills_dir / "stray.txt").write_text("not a skill")
    path, quick, full = _both([*root, "index"], tmp_path)
    assert path == "FULL" and quick == full
