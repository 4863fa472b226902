"""Bulk writes go into one git pack (ledger.store.packwrite): git reads it as its own, and a failed or
killed bulk write leaves nothing anyone refers to."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ledger.audit.lineage import audit_repo
from ledger.brain import Brain
from ledger.errors import SkillError
from ledger.store import gitstore as gs
from ledger.store.packwrite import STAGING_PREFIX, PackWriter
from tests.harness.wait import until


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=True)


def _hand_made(brain: Brain, n: int, prefix: str = "s") -> None:
    for i in range(n):
        d = brain.skills_dir / f"{prefix}{i:03d}"
        (d / "scripts").mkdir(parents=True)
        text = f"---\nname: {prefix}{i:03d}\ndescription: skill {i}\n---\n" + f"body {i}\n" * (1 + i % 3)
        (d / "SKILL.md").write_text(text)
        (d / "scripts" / "run.sh").write_bytes(os.urandom(64 * (i % 5)))
        (d / "scripts" / "run.sh").chmod(0o755 if i % 2 else 0o644)


def _packs(git_dir: Path) -> set[str]:
    return {p.name for p in (git_dir / "objects" / "pack").glob("pack-*.pack")}


def test_a_bulk_snapshot_writes_one_pack_git_indexes_identically(tmp_path: Path) -> None:
    brain = Brain.init(tmp_path / "brain")
    brain.update_config(gc={"every": 0})
    _hand_made(brain, 40)
    loose_before = sum(1 for _ in (brain.store.git_dir / "objects").glob("??/*"))
    receipt = brain.snapshot()
    git_dir = brain.store.git_dir
    (pack,) = _packs(git_dir)
    assert sum(1 for _ in (git_dir / "objects").glob("??/*")) == loose_before  # nothing went loose
    # git's own indexer, run on our pack, writes the very index we wrote.
    idx = git_dir / "objects" / "pack" / pack.replace(".pack", ".idx")
    again = tmp_path / "again.idx"
    subprocess.run(
        ["git", "index-pack", "-o", str(again), str(idx.with_suffix(".pack"))], check=True, capture_output=True
    )
    assert again.read_bytes() == idx.read_bytes()
    assert "ok" in _git(git_dir, "verify-pack", "-v", str(idx)).stdout.splitlines()[-1]
    _git(git_dir, "fsck", "--strict", "--no-dangling")
    assert audit_repo(brain.root).ok and receipt.root == brain.status().head_root
    brain.close()
    assert not list(brain.store.staging_dir.glob("*"))


def test_an_import_that_fails_publishes_no_pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    brain = Brain.init(tmp_path / "brain")
    src = tmp_path / "src"
    for i in range(5):
        (src / f"x{i}").mkdir(parents=True)
        (src / f"x{i}" / "SKILL.md").write_text(f"---\nname: x{i}\ndescription: d\n---\nb\n")
    head = brain.store.head()

    def fail(*_a: object, **_k: object) -> None:
        raise SkillError("injected after the objects were written")

    monkeypatch.setattr(type(brain.store), "write_commit", fail)
    from ledger.folders.layouts import read

    with pytest.raises(SkillError, match="injected"):
        brain.import_collection(read(src, "auto", 1 << 20))
    assert brain.store.head() == head and not _packs(brain.store.git_dir)
    assert not list(brain.store.staging_dir.glob("*")) and not (brain.skills_dir / "x0").exists()
    brain.close()


def test_a_killed_writers_staging_pack_is_cleared_and_git_never_sees_it(tmp_path: Path) -> None:
    brain = Brain.init(tmp_path / "brain")
    objects = brain.store.git_dir / "objects"
    staged = PackWriter(objects, brain.store.staging_dir)
    staged.add(b"\x01" * 20, b"blob", b"never published", 1)
    staged._fh.flush()  # a writer killed here leaves the file; nothing refers to its objects
    (brain.store.staging_dir / "tmp_obj_99999_0").write_bytes(b"a loose object half written")
    leftover = list(brain.store.staging_dir.glob("*"))
    assert sorted(p.name[:8] for p in leftover) == [STAGING_PREFIX[:8], "tmp_obj_"]
    fsck = _git(brain.store.git_dir, "fsck", "--strict", "--no-dangling")
    assert fsck.returncode == 0 and "garbage" not in fsck.stderr  # git does not look in ledger-staging/
    brain.create("after", "the next writer clears it", "b\n")
    assert not any(p.exists() for p in leftover)
    brain.close()


def test_objects_read_during_a_bulk_write_are_published_first(tmp_path: Path) -> None:
    store = gs.GitStore.init(tmp_path / "repo")
    with store.bulk():
        sha = store.write_blob(b"read me back\n")
        assert store.read(sha, b"blob") == b"read me back\n"  # the pack was published to serve this
        later = store.write_blob(b"after the publish\n")
    assert store.read(later, b"blob") == b"after the publish\n"
    assert len(_packs(store.git_dir)) == 1
    store.close()


def test_large_objects_and_sizes_across_header_bytes_round_trip(tmp_path: Path) -> None:
    store = gs.GitStore.init(tmp_path / "repo")
    blobs = [b"", b"x" * 15, b"y" * 16, b"z" * 2047, os.urandom(2048), os.urandom(300_000), b"q" * (1 << 21)]
    with store.bulk():
        shas = [store.write_blob(b) for b in blobs]
    for sha, data in zip(shas, blobs, strict=True):
        assert store.read(sha, b"blob") == data
        assert _git(store.git_dir, "cat-file", "-s", sha.hex()).stdout.strip() == str(len(data))
    _git(store.git_dir, "fsck", "--strict", "--no-dangling")
    store.close()


def test_a_bulk_pack_gets_its_deltas_from_the_next_packer(tmp_path: Path) -> None:
    """A bulk pack is written without deltas; the write starts a packer that repacks everything
    once, so similar skills end up stored as deltas, and nothing is lost."""
    import fcntl
    import json

    brain = Brain.init(tmp_path / "brain")
    body = "".join(f"Step {i}: do the thing number {i} carefully and check it twice.\n" for i in range(40))
    for i in range(200):
        d = brain.skills_dir / f"s{i:03d}"
        d.mkdir()
        (d / "SKILL.md").write_text(f"---\nname: s{i:03d}\ndescription: skill {i}\n---\n{body}")
    brain.snapshot()
    (bulk,) = [p.stat().st_size for p in (brain.store.git_dir / "objects" / "pack").glob("pack-*.pack")]
    log = brain.control / "gc.log"
    # the snapshot started a detached packer; it logs when done
    until(lambda: log.exists() and log.read_text().strip(), timeout=60, what="the detached packer's log")
    fd = os.open(brain.control / "gc.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.close(fd)
    packs = [p.stat().st_size for p in (brain.store.git_dir / "objects" / "pack").glob("pack-*.pack")]
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert runs and runs[-1]["full"] and not (brain.control / "gc-full").exists()
    assert len(packs) == 1 and packs[0] < bulk / 2  # 200 near-identical files, as deltas
    assert audit_repo(brain.root, worktree=True).ok
    brain.close()
