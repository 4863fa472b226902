"""Reads at agent speed (issue 20): a view's proof comes from the head's root index in O(log n),
and that cached index is checked by verifying every proof, never served on trust; listings and
the index come from the head snapshot, kept per head and per skill tree."""

from __future__ import annotations

import json
import random
from pathlib import Path

from blake3 import blake3

from ledger.agent.tools import SkillTools
from ledger.brain import Brain
from ledger.bundle.merkle import InclusionProof, verify_proof
from tests.harness.brains import make_brain, skill_md
from tests.harness.cli import run_ledger

N = 300  # above the 256 skills from which the root index is saved in .ledger/cache


def _brain(tmp_path: Path) -> Path:
    root = make_brain(tmp_path / "b", via="cli")
    with Brain.open(root) as b:
        for i in range(N):
            d = b.skills_dir / f"s-{i:03d}"
            d.mkdir()
            (d / "SKILL.md").write_text(skill_md(f"s-{i:03d}", f"Skill {i}.", f"Step {i}.\n"))
        b.snapshot("bulk")
    return root


def _check_with_cli(tmp_path: Path, brain: Path, receipt: dict, content: bytes) -> None:
    """`ledger verify-proof` (a separate process) against the root `ledger log` shows for the head."""
    logged = json.loads(run_ledger("--brain", str(brain), "log", "-n", "1", "--json", check=True).stdout)[0]["root"]
    assert receipt["root"] == logged
    (tmp_path / "receipt.json").write_text(json.dumps(receipt))
    (tmp_path / "content").write_bytes(content)
    run_ledger(
        "proof",
        "check",
        str(tmp_path / "receipt.json"),
        "--root",
        logged,
        "--file",
        str(tmp_path / "content"),
        check=True,
    )


def test_view_proofs_verify_after_mixed_writes_reads_and_a_gc(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    rng = random.Random(20)
    with Brain.open(brain) as b:
        tools = SkillTools(b)
        for step in range(100):
            live = sorted(b.head().skills)
            name = live[rng.randrange(len(live))]
            kind = rng.choice(["patch", "write", "view", "list", "create", "delete"])
            if kind == "patch":
                tools.skill_manage("patch", name, old_string="Step", new_string=f"Step{step}", replace_all=True)
            elif kind == "write":
                tools.skill_manage("write_file", name, file_path=f"references/r{step}.md", file_content=f"{step}\n")
            elif kind == "create":
                tools.skill_manage(
                    "create",
                    f"new-{step}",
                    content=f"---\nname: new-{step}\ndescription: New {step}.\n---\nStep new.\n",
                    force=True,
                )
            elif kind == "delete" and len(b.head().skills) > N // 2:
                tools.skill_manage("delete", name)
            elif kind == "list":
                listed = tools.skills_list()
                assert listed["count"] == len(b.head().skills)
            view = tools.skill_view(sorted(b.head().skills)[rng.randrange(len(b.head().skills))])
            proof = InclusionProof.from_json(view["receipt"]["proof"])
            verify_proof(proof, b.head().snap.root, view["content"].encode())
            if step == 60:
                run_ledger("--brain", str(brain), "gc", "--full", check=True)
    b2 = Brain.open(brain)  # a new process's view: the index saved at close, then loaded
    view = SkillTools(b2).skill_view(sorted(b2.head().skills)[0])
    b2.close()
    _check_with_cli(tmp_path, brain, view["receipt"], view["content"].encode())


def test_a_corrupted_root_index_is_detected_and_rebuilt_never_served(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    cached = brain / ".ledger" / "cache" / "root-index-v1.bin"
    assert cached.exists()
    # Flip a hash in the second level and reseal the file's checksum: it still loads, and its top
    # level still matches the head's root, so only verifying a proof can find it.
    data = bytearray(cached.read_bytes()[:-32])
    n = int.from_bytes(data[24:28], "big")
    level1 = 32 + int.from_bytes(data[28:32], "big") + 32 * n + 32 * n
    data[level1 + 5] ^= 0xFF
    cached.write_bytes(bytes(data) + blake3(bytes(data)).digest())
    with Brain.open(brain) as b:
        bad = bytes(data[level1 : level1 + 32])
        assert bad in {h for h in b.head().bundle.levels[1]}, "the test's corruption was not loaded"
        view = SkillTools(b).skill_view("s-002")  # its audit path's second sibling is the flipped hash
        proof = InclusionProof.from_json(view["receipt"]["proof"])
        verify_proof(proof, b.head().snap.root, view["content"].encode())
        assert bad not in set(b.head().bundle.levels[1])  # rebuilt from git objects
    _check_with_cli(tmp_path, brain, view["receipt"], view["content"].encode())
    # The rebuilt index was saved over the bad one: the next process loads a good index.
    with Brain.open(brain) as b:
        assert bad not in set(b.head().bundle.levels[1])


def test_listing_and_index_follow_the_head(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    with Brain.open(brain) as b:
        tools = SkillTools(b)
        first = tools.skills_list()
        assert first["count"] == N and b.listing_index().count("\n") == N
        tools.skill_manage("patch", "s-007", old_string="Step 7.", new_string="Step seven.")
        tools.skill_manage("edit", "s-008", content="---\nname: s-008\ndescription: Eight, renamed.\n---\nB.\n")
        listed = {s["name"]: s for s in tools.skills_list()["skills"]}
        assert listed["s-007"]["version"] == 2 and listed["s-008"]["description"] == "Eight, renamed."
        assert "▸ s-008: Eight, renamed.\n" in b.listing_index()
        # A hand edit not yet snapshotted is not what the head records: the agent's listing is the head's.
        (b.skills_dir / "s-009" / "SKILL.md").write_text("---\nname: s-009\ndescription: Hand.\n---\nx\n")
        assert {s["name"]: s for s in tools.skills_list()["skills"]}["s-009"]["description"] == "Skill 9."


def test_reading_thousands_of_blobs_in_one_request_never_deadlocks(tmp_path: Path) -> None:
    """``GitStore.read_blobs`` pipelines requests to one ``git cat-file --batch``: 6,000 requests (246 KB)
    and their answers both overflow a pipe's buffer, which deadlocked both processes when every request
    was written before any answer was read (a synced skill with thousands of files hit it)."""
    import threading

    from ledger.store.gitstore import GitStore

    brain = Brain.init(tmp_path / "b")
    try:
        shas = [brain.store.write_blob(f"blob {i}\n".encode() * 20) for i in range(6000)]
        got: list[list[bytes]] = []
        with GitStore(brain.root) as store:
            reader = threading.Thread(target=lambda: got.append(store.read_blobs(shas)), daemon=True)
            reader.start()
            reader.join(timeout=60)
            stuck = reader.is_alive()
            if stuck and store._cat._proc is not None:
                store._cat._proc.kill()  # unblocks both ends, so the failure is reported, not hung
            assert not stuck, "read_blobs deadlocked on the cat-file pipes"
        assert got[0][5999] == b"blob 5999\n" * 20 and len(got[0]) == 6000
    finally:
        brain.close()
