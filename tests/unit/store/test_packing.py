"""Packing: automatic and explicit, beside writers, and never losing what a snapshot, note or proof needs."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from ledger.audit.lineage import audit_repo
from ledger.brain import Brain
from ledger.bundle.merkle import InclusionProof, parse_root, verify_proof
from ledger.folders.layouts import read
from ledger.store.packing import pack, store_size
from tests.harness.cli import run_ledger
from tests.harness.wait import until


def _settle(brain: Brain, timeout: float = 60) -> None:
    """Wait until no detached packer holds the packer lock."""
    until(
        lambda: "skipped" not in pack(brain.store.git_dir, brain.control, wait=False),
        timeout,
        "the detached packer to let go of its lock",
    )


def test_writes_pack_in_the_background_and_gc_loses_nothing(tmp_path: Path) -> None:
    brain = Brain.init(tmp_path / "brain")
    brain.update_config(gc={"every": 8})
    brain.close()
    brain = Brain.open(tmp_path / "brain")
    proofs = []
    for i in range(40):
        name = f"skill-{i % 5}"
        if i < 5:
            brain.create(name, f"Skill {i}", f"revision {i}\n")
        else:
            brain.upsert(f"---\nname: {name}\ndescription: Skill\n---\nrevision {i}\n")
        if i % 7 == 0:
            proofs.append((brain.prove(f"{name}/SKILL.md"), brain.head().snap.root))
        if i == 20:  # a bulk write: its objects arrive as a pack of their own (ledger.store.packwrite)
            src = tmp_path / "collection"
            for j in range(6):
                (src / f"bulk-{j}").mkdir(parents=True)
                (src / f"bulk-{j}" / "SKILL.md").write_text(f"---\nname: bulk-{j}\ndescription: B\n---\nb{j}\n")
            brain.import_collection(read(src, "auto", 1 << 20))
            proofs.append((brain.prove("bulk-3/SKILL.md"), brain.head().snap.root))
    _settle(brain)
    packed = store_size(brain.store.git_dir)
    assert packed["packs"] >= 1, packed  # the writer started packers on its own
    assert '"after"' in (brain.control / "gc.log").read_text()  # the packer logs what it did
    gc = json.loads(run_ledger("--brain", str(brain.root), "gc", "--full", "--json", check=True).stdout)
    assert gc["after"]["loose"] == 0 and gc["after"]["packs"] == 1 and gc["connectivity"] == "ok"
    # Every proof, every version of every skill, the receipts notes and the audit survive.
    for proof, root in proofs:
        verify_proof(InclusionProof.from_json(json.loads(json.dumps(proof.to_json()))), root)
    for name in [f"skill-{i}" for i in range(5)] + [f"bulk-{j}" for j in range(6)]:
        versions = [h["version"] for h in brain.history(name)]
        for v in versions:
            assert brain.show(name, v).startswith("---")
    old = list(brain.store.lineage())[-2]
    proof = brain.prove("skill-0/SKILL.md", at=old.commit)
    verify_proof(proof, parse_root(proof.to_json()["root"]))
    report = audit_repo(brain.root, worktree=True)
    assert report.ok, {k: v.summary for k, v in report.checks.items() if not v.ok}
    brain.close()


def test_packing_beside_a_writer_loses_no_write(tmp_path: Path) -> None:
    brain = Brain.init(tmp_path / "brain")
    brain.create("s", "S", "r0\n")
    acknowledged: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        i = 1
        while not stop.is_set():
            brain.patch("s", f"r{i - 1}\n", f"r{i}\n")
            acknowledged.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for full in (False, True, False, True):
            out = pack(brain.store.git_dir, brain.control, full=full, wait=True, check=True)
            assert out.get("connectivity", "ok") == "ok"
    finally:
        stop.set()
        thread.join()
    assert len(acknowledged) > 0
    assert brain.show("s", acknowledged[-1] + 1) == (brain.skills_dir / "s" / "SKILL.md").read_text()
    assert audit_repo(brain.root, worktree=True).ok
    brain.close()


def test_the_automatic_packer_waits_for_a_pause_in_the_writes(tmp_path: Path) -> None:
    """A pack does not share the disk with a burst of upserts: the detached packer holds off
    while the write counter keeps changing, and no longer than the loose bytes allow."""
    from ledger.store.packing import QUIET_S, _await_quiet

    counter = tmp_path / "gc-writes"
    counter.write_text("1 100")

    class Burst:
        """The packer's clock: while it sleeps, a writer touches the counter every 0.05 s for the clock's first
        second (each write dated by this clock, with os.utime).  No wall time passes: a thread writing for a
        real second, and the packer sleeping through it, stood here."""

        def __init__(self) -> None:
            self.now = self.start = self.next = time.time()
            self.n = 1

        def monotonic(self) -> float:
            return self.now

        def time(self) -> float:
            return self.now

        def sleep(self, seconds: float) -> None:
            end = self.now + seconds
            while self.next <= end and self.next < self.start + 1.0:
                self.n += 1
                counter.write_text(f"{self.n} {self.n * 100}")
                os.utime(counter, (self.next, self.next))
                self.next += 0.05
            self.now = end

    waited = _await_quiet(tmp_path, 10**9, Burst())
    assert waited >= 1.0 + QUIET_S * 0.5  # through the burst, and a pause after it
    counter.write_text("90 5000")  # writes still coming, but 5,000 loose bytes waiting: pack now
    assert _await_quiet(tmp_path, 4000) < QUIET_S


def test_a_fingerprint_does_not_change_when_the_packer_moves_objects(tmp_path: Path) -> None:
    """Tests that compare a brain before and after a refusal must not flake on a packer running beside
    them (issue 17, item 6): packing moves objects from loose files into packs and changes no object."""
    from tests.harness.brains import fingerprint
    from tests.harness.cli import run_ledger

    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    for i in range(5):
        run_ledger("--brain", str(brain), "skill", "create", f"s{i}", "--description", f"skill {i}", check=True)
    loose = list((brain / ".git" / "objects").glob("[0-9a-f][0-9a-f]/*"))
    before = fingerprint(brain)
    run_ledger("--brain", str(brain), "gc", "--full", check=True)
    assert loose and not any(p.exists() for p in loose)  # the objects did move into a pack
    assert fingerprint(brain) == before
