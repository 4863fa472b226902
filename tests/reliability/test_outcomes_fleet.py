"""Outcomes across a fleet (issue 38): three machines sharing one remote and one agent on a real anvil
each record outcomes beside skill edits, concurrently; `ledger sync` merges their logs by id, loses
none, and the last sync anchors the merged log's root with the lineage.  Half of them are verified,
signed by one verifier key that every machine holds (lineage v1.7 lineage/evidence.md §9: each is a batch following
the newest batch its machine holds, so the verifier's chain forks and merges, every batch whole)."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from ledger.chain import anvil
from tests.harness import fleet

pytestmark = [pytest.mark.chain, pytest.mark.slow]


def _log(m: fleet.Machine) -> list[str]:
    out = m.ledger("outcome", "list", "--json", check=True).stdout
    return [o["record"]["task"]["id"] for o in json.loads(out)]


def test_a_fleet_merges_outcome_logs_and_anchors_the_union(tmp_path: Path, node: anvil.Node) -> None:
    ms, _chain = fleet.setup(tmp_path, 3, node.url)
    try:
        name = fleet.SHARED[0]
        verifier = json.loads(ms[0].ledger("keys", "generate", "verifier", "--json", check=True).stdout)["address"]
        ms[0].ledger("keys", "trust", "verifier", verifier, check=True)
        assert ms[0].ledger("sync").returncode == 0
        for m in ms[1:]:  # one verifier key on every machine
            shutil.copy2(ms[0].root / "keys" / "verifier.key", m.root / "keys" / "verifier.key")
            assert m.ledger("sync").returncode in (0, 3)
        failures: list[str] = []

        def work(m: fleet.Machine) -> None:
            for i in range(4):
                r = m.ledger(
                    "outcome",
                    "record",
                    name,
                    "--task",
                    f"m{m.k}-{i}",
                    "--success" if i % 2 else "--failure",
                    "--actor",
                    "verifier" if i % 2 else "agent",
                )
                if r.returncode != 0:
                    failures.append(f"m{m.k} record {i}: {r.stderr}")
                if i == 1:  # a skill edit in between: the merges carry versions and outcomes together
                    src = m.root / "edit.md"
                    src.write_text(f"---\nname: {name}\ndescription: Shared skill {name}\n---\nedited on m{m.k}\n")
                    m.ledger("skill", "edit", name, "--file", str(src))
                s = m.ledger("sync", "--json")
                if s.returncode not in (0, 3):
                    remote = json.loads(s.stdout or "{}").get("remote")
                    failures.append(f"m{m.k} sync: {s.stderr} {remote}")

        threads = [threading.Thread(target=work, args=(m,)) for m in ms]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        assert not failures, failures
        for _ in range(3):  # settle: every machine takes every other's merge
            for m in ms:
                assert m.ledger("sync").returncode in (0, 3)
        logs = [_log(m) for m in ms]
        everything = sorted(f"m{k}-{i}" for k in range(3) for i in range(4))
        assert sorted(logs[0]) == everything, logs[0]  # none lost, none repeated
        assert logs[0] == logs[1] == logs[2]  # one order: the merges' (first parent first)
        status = json.loads(ms[0].ledger("chain", "status", "--json", check=True).stdout)
        assert status["evidence"]["chain"]["size"] == len(everything) and status["evidence"]["pending"] == 0, status
        for m in ms:
            assert m.ledger("verify", "--chain").returncode == 0, m.ledger("verify", "--chain").stdout
        batches = {s["signer"]: s for s in json.loads(ms[0].ledger("outcome", "batches", "--json", check=True).stdout)}
        assert batches[verifier]["outcomes"] == 6 and all(b["count"] == 1 for b in batches[verifier]["batches"])
    finally:
        ms[0].children.stop()  # the machines' one set of children: whatever still runs is killed, whole
