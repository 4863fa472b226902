"""Brain operations on real git and real files."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from skills_ref.validator import validate as skills_ref_validate

from ledger.audit.lineage import audit_repo
from ledger.brain import Brain, NoChangeError
from ledger.bundle.merkle import RootIndex, format_root, hash_path, parse_root, verify_proof
from ledger.errors import LedgerError, LockedError, PatchError, SkillError, SkillExistsError, StoreError
from ledger.store import gitstore as gs
from ledger.store.treehash import DigestCache, bundle_of_tree


def git(brain: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(brain), *args], capture_output=True, text=True, check=True).stdout


def recompute_from_git(repo: Path, rev: str = "main") -> str:
    """Root of a snapshot recomputed from git objects alone, with an empty cache."""
    from ledger.store.gitstore import GitStore

    with GitStore(repo) as store:
        commit = store.resolve(rev)
        return format_root(bundle_of_tree(store, store.skills_tree(commit), DigestCache(None)).digest)


def test_upsert_is_slug_keyed_and_bumps_in_place(brain: Brain) -> None:
    # A display name is no valid skill name: a command may not author it (ADR 19) unless told to.
    with pytest.raises(SkillError, match="must be lowercase"):
        brain.upsert("---\nname: Oracle Manipulation\ndescription: Check oracles\n---\nv1\n")
    brain.allow_invalid = True
    r1 = brain.upsert("---\nname: Oracle Manipulation\ndescription: Check oracles\n---\nv1\n")
    r2 = brain.upsert("---\nname: oracle manipulation!\ndescription: Check oracles\n---\nv2\n")
    assert (r1.skill, r1.version, r1.operation) == ("oracle-manipulation", 1, "create")
    assert (r2.skill, r2.version, r2.operation) == ("oracle-manipulation", 2, "edit")
    assert [s.name for s in brain.list()] == ["oracle-manipulation"]
    assert brain.view("oracle-manipulation")["body"] == "v2\n"


def test_versions_go_1_2_3_and_every_write_is_one_commit(brain: Brain) -> None:
    before = int(git(brain.root, "rev-list", "--count", "main"))
    assert brain.create("a", "A skill", "body\n").version == 1
    assert brain.patch("a", "body", "better body").version == 2
    assert brain.write_file("a", "references/x.md", b"ref\n").version == 3
    assert brain.remove_file("a", "references/x.md").version == 4
    assert brain.edit("a", "---\nname: a\ndescription: New\n---\nnew\n").version == 5
    assert int(git(brain.root, "rev-list", "--count", "main")) == before + 5
    versions = [s.version for s in brain.store.lineage() if s.skill == "a"]
    assert versions == [5, 4, 3, 2, 1]
    assert skills_ref_validate(brain.skills_dir / "a") == []


def test_trailers_carry_lineage_in_plain_git_log(brain: Brain) -> None:
    r1 = brain.create("a", "A", "x\n")
    r2 = brain.patch("a", "x", "y")
    body = git(brain.root, "log", "-1", "--format=%B")
    assert f"Ledger-Root: {r2.root}" in body
    assert f"Ledger-Parent-Root: {r1.root}" in body
    assert "Ledger-Operation: patch" in body and "Ledger-Skill: a" in body and "Ledger-Version: 2" in body


def test_worktree_root_equals_git_snapshot_root_and_clone(brain: Brain, tmp_path: Path) -> None:
    brain.create("a", "A", "x\r\nwindows line endings\r\n")
    brain.write_file("a", "scripts/run.sh", b"#!/bin/sh\n", executable=True)
    brain.write_file("a", "assets/blob.bin", bytes(range(256)))
    head = brain.head().snap
    assert format_root(hash_path(brain.skills_dir)) == format_root(head.root) == recompute_from_git(brain.root)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(brain.root), str(clone)], check=True)
    assert format_root(hash_path(clone / "skills")) == format_root(head.root)
    assert recompute_from_git(clone) == format_root(head.root)


def test_patch_must_match_exactly_once(brain: Brain) -> None:
    brain.create("a", "A", "one two two\n")
    with pytest.raises(PatchError, match="not found"):
        brain.patch("a", "three", "x")
    with pytest.raises(PatchError, match="matches 2 times"):
        brain.patch("a", "two", "x")
    with pytest.raises(PatchError, match="declares name 'b'"):
        brain.patch("a", "name: a", "name: b")
    assert brain.head().snap.operation == "create"


def test_create_refuses_existing_and_edit_refuses_noop(brain: Brain) -> None:
    brain.create("a", "A", "x\n")
    with pytest.raises(SkillExistsError):
        brain.create("a", "B", "y\n")
    with pytest.raises(NoChangeError):
        brain.edit("a", (brain.skills_dir / "a" / "SKILL.md").read_text())


def test_write_file_refuses_symlinked_subdirectory(brain: Brain, tmp_path: Path) -> None:
    brain.create("a", "A", "x\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (brain.skills_dir / "a" / "references").symlink_to(outside)
    with pytest.raises(LedgerError, match="symbolic link"):
        brain.write_file("a", "references/evil.md", b"x")
    assert list(outside.iterdir()) == []


def test_hand_edits_show_in_status_and_snapshot_records_them(brain: Brain) -> None:
    brain.create("a", "A", "x\n")
    brain.create("b", "B", "y\n")
    (brain.skills_dir / "a" / "SKILL.md").write_text((brain.skills_dir / "a" / "SKILL.md").read_text() + "more\n")
    (brain.skills_dir / "b" / "references").mkdir()
    (brain.skills_dir / "b" / "references" / "new.md").write_text("n\n")
    shutil.copytree(brain.skills_dir / "b", brain.skills_dir / "c")
    (brain.skills_dir / "c" / "SKILL.md").write_text("---\nname: c\ndescription: C\n---\nc\n")
    st = brain.status()
    assert st.changes == {
        "a/SKILL.md": "modified",
        "b/references/new.md": "new",
        "c/SKILL.md": "new",
        "c/references/new.md": "new",
    }
    with pytest.raises(StoreError, match="not in a snapshot"):
        brain.patch("a", "x", "z")  # never silently overwrites hand edits
    r = brain.snapshot("hand edits")
    changes = {(c.action, c.skill, c.version) for c in brain.head().snap.changes}
    assert changes == {("update", "a", 2), ("update", "b", 2), ("create", "c", 1)}
    assert brain.status().clean
    assert r.root == recompute_from_git(brain.root)
    with pytest.raises(NoChangeError):
        brain.snapshot()


def test_snapshot_refuses_invalid_hand_made_skill(brain: Brain) -> None:
    (brain.skills_dir / "Bad Name").mkdir()
    (brain.skills_dir / "Bad Name" / "SKILL.md").write_text("---\nname: x\ndescription: y\n---\n")
    head = git(brain.root, "rev-parse", "main")
    with pytest.raises(SkillError):
        brain.snapshot()
    assert git(brain.root, "rev-parse", "main") == head


def test_index_is_sorted_and_byte_identical(brain: Brain) -> None:
    brain.create("zeta", "Last one", "z\n")
    brain.create("alpha", "First\nline two", "a\n")
    assert brain.index() == "▸ alpha: First line two\n▸ zeta: Last one\n"
    again = Brain.open(brain.root)
    assert again.index().encode() == brain.index().encode()
    again.close()


def test_delete_then_recreate(brain: Brain) -> None:
    brain.create("a", "A", "x\n")
    brain.patch("a", "x", "y")
    r = brain.delete("a")
    assert (r.operation, r.version) == ("delete", 2)
    assert not (brain.skills_dir / "a").exists()
    # Versions never repeat: the recreated skill continues above the deleted one's last version.
    assert brain.create("a", "A again", "z\n").version == 3
    assert "A again" in brain.show("a", 3) and "y" in brain.show("a", 2)
    brain.delete("a")
    assert brain.revert("a", 1).version == 4  # a revert of a deleted skill, too
    brain.delete("a")
    doc = "---\nname: a\ndescription: d\nmetadata:\n  version: 2\n---\nbrought v2\n"
    assert brain.upsert(doc).version == 5  # an upsert bringing an old number
    (brain.skills_dir / "a").rename(brain.root / "gone")  # a hand delete, then a hand recreate
    brain.snapshot()
    (brain.root / "gone").rename(brain.skills_dir / "a")
    assert brain.snapshot().version == 6
    seen = [c.version for s in brain.store.lineage() for c in s.changes if c.action != "delete"]
    assert sorted(seen) == sorted(set(seen))
    assert audit_repo(brain.root).ok


def test_audit_refuses_a_recreate_that_repeats_a_version(brain: Brain) -> None:
    brain.create("a", "A", "x\n")
    brain.delete("a")
    head = brain.head()
    text = "---\nname: a\ndescription: A\nmetadata:\n  version: 1\n---\nx\n"
    blob = brain.store.write_blob(text.encode())
    skill = brain.store.write_tree([(blob, gs.MODE_FILE, "SKILL.md")])
    skills = brain.store.write_tree([(skill, gs.MODE_DIR, "a")])
    retired = brain.store.retired(bytes.fromhex(head.snap.tree))[0]
    root = RootIndex({"a": brain.tree_digest(skill, "a")}).root
    msg = gs.format_message("create", root, head.snap.root, [gs.Change("create", "a", 1)], "", attribution={})
    commit = brain.store.write_commit(brain.store.root_tree(skills, None, retired), [head.commit], msg)
    brain.store.move_head(commit, head.commit)
    report = audit_repo(brain.root)
    assert not report.checks["versions"].ok
    assert "a version it had before its deletion" in report.checks["versions"].summary


def test_proof_of_past_snapshot(brain: Brain) -> None:
    brain.create("a", "A", "old\n")
    old = brain.head().snap
    brain.patch("a", "old", "new")
    proof = brain.prove("a/SKILL.md", at=old.commit)
    verify_proof(proof, old.root)
    with pytest.raises(Exception, match="does not verify"):
        verify_proof(proof, brain.head().snap.root)


def test_stale_or_corrupt_cache_cannot_change_a_root(brain: Brain) -> None:
    brain.create("a", "A", "x\n")
    root = brain.head().snap.root
    cache = brain.control / "cache" / "digests-v2.bin"
    brain.close()
    data = bytearray(cache.read_bytes())
    data[8 + 25] ^= 0xFF  # corrupt the digest in the first record of the first block
    cache.write_bytes(bytes(data))
    again = Brain.open(brain.root)
    assert again.head().bundle.root == root
    again.close()


CHILD = textwrap.dedent("""
    import sys
    from ledger.brain import Brain
    b = Brain.open(sys.argv[1])
    b.patch("a", "x", "y")
""")


@pytest.mark.parametrize("point", ["after-objects", "after-journal", "after-worktree", "after-ref"])
def test_crash_leaves_old_or_new_state(brain: Brain, point: str) -> None:
    brain.create("a", "A", "x\n")
    old = brain.head().snap
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(brain.root)],
        env={**os.environ, "LEDGER_CRASHPOINT": point},
        capture_output=True,
    )
    assert proc.returncode == 86, proc.stderr
    again = Brain.open(brain.root)  # recovery runs here
    try:
        head = again.head().snap
        assert head.root in (old.root, head.root)
        assert again.status().clean, again.status().changes
        assert format_root(head.root) == recompute_from_git(brain.root)
        expected_new = point != "after-objects"
        assert (head.commit != old.commit) == expected_new
        assert ("y" in (brain.skills_dir / "a" / "SKILL.md").read_text()) == expected_new
        assert not (brain.control / "journal.json").exists()
    finally:
        again.close()


def test_second_writer_waits_or_fails_clearly(brain: Brain) -> None:
    brain.create("a", "A", "x\n")
    with brain.locked():
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(brain.root)],
            env={**os.environ, "LEDGER_LOCK_TIMEOUT": "0.3"},
            capture_output=True,
            text=True,
        )
    assert proc.returncode != 0 and "locked by another writer" in proc.stderr
    assert brain.head().snap.operation == "create"


def test_concurrent_writers_never_interleave(brain: Brain) -> None:
    for i in range(4):
        brain.create(f"s{i}", "S", "n=0\n")
    script = textwrap.dedent("""
        import sys
        from ledger.brain import Brain
        b = Brain.open(sys.argv[1])
        for k in range(5):
            b.patch(sys.argv[2], f"n={k}", f"n={k + 1}")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(brain.root), f"s{i}"]) for i in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    snaps = list(brain.store.lineage())
    assert len(snaps) == 1 + 4 + 20
    for newer, older in itertools.pairwise(snaps):
        assert newer.parent_root == older.root
    assert format_root(snaps[0].root) == recompute_from_git(brain.root) == format_root(hash_path(brain.skills_dir))


def test_lock_is_not_taken_by_readers(brain: Brain) -> None:
    with brain.locked():
        assert brain.index() == ""


def test_locked_error_type() -> None:
    assert issubclass(LockedError, StoreError)


def test_parse_root_of_receipt(brain: Brain) -> None:
    r = brain.create("a", "A", "x\n")
    assert parse_root(r.root) == brain.head().snap.root


def test_saved_root_index_is_used_and_a_forged_one_is_ignored(brain: Brain) -> None:
    from blake3 import blake3

    for i in range(300):
        (brain.skills_dir / f"s{i:03d}").mkdir()
        (brain.skills_dir / f"s{i:03d}" / "SKILL.md").write_text(f"---\nname: s{i:03d}\ndescription: d\n---\n")
    brain.snapshot()
    root = brain.head().snap.root
    brain.close()
    index = brain.control / "cache" / "root-index-v1.bin"
    assert index.exists()
    data = bytearray(index.read_bytes())
    data[-33 - 32 * 10] ^= 0x01  # flip a bit in the levels, then re-seal the checksum like a forger would
    data[-32:] = blake3(bytes(data[:-32])).digest()
    index.write_bytes(bytes(data))
    again = Brain.open(brain.root)
    try:
        assert again.head().bundle.root == root
        r = again.patch("s007", "description: d", "description: seven")
        assert r.root == recompute_from_git(brain.root)
    finally:
        again.close()
