"""The fanned-out skills/ layout (ledger.store.skilltree): same roots, same history, every reader, and
refusal of anything not canonical.  The threshold is lowered so small brains cross it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ledger.audit.lineage import audit_repo
from ledger.brain import Brain
from ledger.bundle.merkle import InclusionProof, format_root, hash_path, verify_proof
from ledger.errors import LedgerError
from ledger.store import skilltree
from tests.harness.cli import run_ledger


def _git(git_dir: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], input=stdin, capture_output=True, check=True
    ).stdout.decode()


@pytest.fixture
def low(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(skilltree, "FANOUT_AT", 6)
    return 6


def _top(brain: Brain) -> list[str]:
    return _git(brain.store.git_dir, "ls-tree", "--name-only", "main").split()


def test_a_brain_fans_out_past_the_threshold_and_back(tmp_path: Path, low: int) -> None:
    brain = Brain.init(tmp_path / "b")
    for i in range(low):
        brain.create(f"s{i}", f"skill {i}", f"body {i}\n")
    assert "layout" not in _top(brain)  # flat up to the threshold
    flat_status = brain.status()
    brain.create("s-last", "one more", "body\n")  # crosses it: every bucket written once
    assert "layout" in _top(brain)
    buckets = _git(brain.store.git_dir, "ls-tree", "--name-only", "main:skills/").split()
    assert all(len(b) == 2 for b in buckets) and len(buckets) <= low + 1
    assert _git(brain.store.git_dir, "show", f"main:skills/{skilltree.bucket('s3')}/s3/SKILL.md").endswith("body 3\n")
    # The bundle hash knows nothing of the layout: the root is the working tree's.
    assert brain.status().clean and brain.status().head_root == format_root(hash_path(brain.skills_dir))
    brain.create("s-extra", "and another", "body\n")
    receipts = [brain.patch("s2", "body 2" if n == 0 else f"rev {n - 1}", f"rev {n}") for n in range(3)]
    brain.write_file("s4", "references/r.md", b"ref\n")
    brain.delete("s0")
    assert "layout" in _top(brain) and brain.show("s2", 1).endswith("body 2\n")
    proof = brain.prove("s4/references/r.md")
    verify_proof(InclusionProof.from_json(proof.to_json()), brain.head().bundle.root, b"ref\n")
    old = brain.prove("s2/SKILL.md", at=receipts[0].commit)
    assert old.to_json()["root"] == receipts[0].root
    brain.delete("s1")
    brain.delete("s-extra")  # back to the threshold: flat again
    assert "layout" not in _top(brain) and flat_status.head_root != brain.status().head_root
    brain.revert("s0", 1)
    report = audit_repo(brain.root, worktree=True)
    assert report.ok, {k: c.summary for k, c in report.checks.items() if not c.ok}
    brain.close()
    fresh = Brain.open(tmp_path / "b")  # a head loaded from git, in either layout, writes the same way
    fresh.create("s-again", "again", "x\n")
    fresh.patch("s2", "rev 2", "rev 3")
    assert audit_repo(fresh.root, worktree=True).ok
    fresh.close()


def test_every_reader_and_sharing_work_on_a_fanned_out_brain(tmp_path: Path, low: int) -> None:
    brain = Brain.init(tmp_path / "b")
    for i in range(low + 4):
        brain.create(f"k{i}", f"skill {i}", f"body {i}\n")
    brain.patch("k3", "body 3", "body three")
    root = str(brain.root)
    brain.close()
    for args in (
        ["log", "--skill", "k3"],
        ["diff", "main~1", "main"],
        ["verify"],
        ["show", "k3@1"],
        ["prove", "k5/SKILL.md"],
        ["status"],
        ["index"],
    ):
        run_ledger("--brain", root, *args, check=True)
    assert "body three" in run_ledger("--brain", root, "diff", "main~1", "main", check=True).stdout
    out = tmp_path / "export"
    run_ledger("--brain", root, "export", str(out), check=True)
    assert (out / "k7" / "SKILL.md").read_text().endswith("body 7\n")
    run_ledger("clone", root, str(tmp_path / "copy"), check=True)  # audited in quarantine first
    assert (tmp_path / "copy" / "skills" / "k3" / "SKILL.md").read_text().endswith("body three\n")


def test_a_skill_in_the_wrong_bucket_or_an_unknown_layout_is_refused(tmp_path: Path, low: int) -> None:
    brain = Brain.init(tmp_path / "b")
    for i in range(low + 2):
        brain.create(f"w{i}", f"skill {i}", f"body {i}\n")
    git_dir = brain.store.git_dir
    brain.close()
    wrong = next(b for b in (f"{n:02x}" for n in range(256)) if b != skilltree.bucket("w1"))
    skill = _git(git_dir, "rev-parse", f"main:skills/{skilltree.bucket('w1')}/w1").strip()
    bucket_tree = _git(git_dir, "mktree", stdin=f"040000 tree {skill}\tw1\n".encode()).strip()
    top = _git(git_dir, "ls-tree", "main").replace(
        _git(git_dir, "rev-parse", "main:skills").strip(),
        _git(git_dir, "mktree", stdin=f"040000 tree {bucket_tree}\t{wrong}\n".encode()).strip(),
    )
    forged = _git(
        git_dir, "commit-tree", _git(git_dir, "mktree", stdin=top.encode()).strip(), "-p", "main", "-m", "forged"
    ).strip()
    _git(git_dir, "update-ref", "refs/heads/forged", forged)
    from ledger.store.skilltree import skills_of

    with pytest.raises(LedgerError, match="wrong fan-out directory"):
        skills_of(brain.store, bytes.fromhex(_git(git_dir, "rev-parse", "forged^{tree}").strip()))
    layout = _git(git_dir, "hash-object", "-w", "--stdin", stdin=b"skills/<something else>/\n").strip()
    top2 = _git(git_dir, "ls-tree", "main").replace(_git(git_dir, "rev-parse", "main:layout").strip(), layout)
    with pytest.raises(LedgerError, match="layout record"):
        skills_of(brain.store, bytes.fromhex(_git(git_dir, "mktree", stdin=top2.encode()).strip()))


def _parse_by_loop(data: bytes) -> list | str:
    """parse_tree's entry loop alone: the reference its one-regex split must agree with."""
    out, i, n = [], 0, len(data)
    try:
        while i < n:
            sp = data.index(b" ", i)
            nul = data.index(b"\x00", sp)
            if nul + 21 > n:
                raise ValueError("truncated entry")
            name = data[sp + 1 : nul].decode("utf-8", "surrogateescape")
            out.append((data[nul + 1 : nul + 21], int(data[i:sp], 8), name))
            i = nul + 21
    except ValueError as exc:
        return f"git tree  is malformed: {exc}"
    return out


def test_tree_parsing_agrees_with_the_entry_loop_on_any_bytes() -> None:
    """The fast split (issue 35) returns what the loop returns, and a malformed tree fails with the loop's error."""
    import random

    from ledger.errors import StoreError
    from ledger.store.objectdb import parse_tree

    rnd = random.Random(35)
    alphabet = [b" ", b"\x00", b"1", b"0", b"4", b"7", b"8", b"a", b"\t", b"_", b"+", b"\xff"]
    for _ in range(20_000):
        entries = []
        for _ in range(rnd.randint(0, 4)):
            mode = rnd.choice([b"40000", b"100644", b"100755", b"", b"9", b"0_4", b"+7", b"\t10"])
            name = b"".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 5)))
            entries.append(mode + b" " + name + b"\x00" + bytes(rnd.choice([0, 32, 48, 255]) for _ in range(20)))
        data = b"".join(entries)
        if data and rnd.random() < 0.5:  # damage it: bytes inserted, dropped or replaced
            at = rnd.randint(0, len(data))
            junk = b"".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 3)))
            data = data[:at] + junk + data[at + rnd.randint(0, 3) :]
        try:
            got: list | str = parse_tree(data)
        except StoreError as exc:
            got = exc.message
        assert got == _parse_by_loop(data), data
