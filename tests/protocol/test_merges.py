"""Divergent lineages merge skill by skill (docs/lineage.md §9): every merge case, the audit through
both parents, and merges an attacker forged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ledger.agent.tools import SkillTools
from ledger.audit.lineage import audit_repo
from ledger.brain import Brain
from ledger.errors import StoreError
from ledger.remotes import sharing
from ledger.remotes.lineagemerge import conflicts, resolve
from ledger.remotes.sharing import clone
from ledger.store.gitstore import GitStore
from tests.harness import tamper
from tests.harness.brains import hermes, two_copies
from tests.harness.cli import run_ledger


def _git(repo: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, input=input
    ).stdout


@pytest.fixture
def trio(tmp_path: Path):
    """Brain a, pushed to a bare remote, and b cloned from it: two machines on one brain."""
    with two_copies(tmp_path, {"s": "one\ntwo\nthree\n", "t": "tee\n"}) as copies:
        yield copies


def _version(brain: Brain, name: str) -> int:
    return {s.name: s.version for s in brain.list()}[name]


def _body(brain: Brain, name: str) -> str:
    return (brain.skills_dir / name / "SKILL.md").read_text().split("---\n", 2)[2]


def _audit_ok(repo: Path, **kw: object) -> None:
    report = audit_repo(repo, **kw)  # type: ignore[arg-type]
    failed = {n: c.summary for n, c in report.checks.items() if not c.ok}
    assert not failed, failed


def test_one_side_each_takes_both_at_their_versions(trio) -> None:
    a, remote, b = trio
    a.patch("s", "one", "ONE")
    sharing.push(a, str(remote))
    b.patch("t", "tee", "TEE")
    b.create("u", "U", "new\n")
    out = sharing.push(b, str(remote))  # refused by the remote's CAS, merged, pushed again
    assert out["pushed"] and [m["action"] for m in out["merges"]] == ["merge"]
    merge = b.store.snapshot(b.head().commit)
    assert merge.operation == "merge" and len(merge.parents) == 2
    assert merge.parents[0] == a.head().commit.hex()  # the remote's line stays the first parent
    assert sorted(c.trailer() for c in merge.changes) == ["create u 1", "update t 2"]
    assert (_version(b, "s"), _version(b, "t"), _version(b, "u")) == (2, 2, 1)
    assert "ONE" in _body(b, "s") and "TEE" in _body(b, "t")
    assert b.status().clean
    sharing.pull(a, str(remote))
    assert a.head().commit == b.head().commit  # a fast-forwards to the merge
    _audit_ok(remote, require_signatures=True)


def test_both_sides_clean_merge_gets_the_version_after_both(trio) -> None:
    a, remote, b = trio
    a.patch("s", "one", "ONE")
    a.patch("s", "ONE", "ONE!")  # v3 on a
    sharing.push(a, str(remote))
    b.patch("s", "three", "THREE")  # v2 on b
    out = sharing.pull(b, str(remote))
    assert out["action"] == "merge" and out["merge"]["merged"] == ["s"]
    assert _version(b, "s") == 4  # after both sides' versions: never a version either used
    assert _body(b, "s") == "ONE!\ntwo\nTHREE\n"
    sharing.push(b, str(remote))
    _audit_ok(remote, require_signatures=True)


def test_conflict_keeps_both_sides_and_is_settled(trio) -> None:
    a, remote, b = trio
    a.patch("s", "two", "TWO-A")
    sharing.push(a, str(remote))
    b.patch("s", "two", "TWO-B")
    mine = b.head().commit.hex()
    out = sharing.pull(b, str(remote))
    assert out["merge"]["conflicts"] == ["s"]
    assert "TWO-A" in _body(b, "s")  # the remote's version is kept in the tree…
    merge = b.store.snapshot(b.head().commit)
    assert merge.parents[1] == mine and "conflict: s:" in merge.message  # …b's is its second parent, and said so
    found = conflicts(b)
    assert found["s"]["other_version"] == 2 and found["s"]["files"] == ["SKILL.md"]
    status = json.loads(run_ledger("--brain", str(b.root), "status", "--json", check=True).stdout)
    assert [c["skill"] for c in status["merge_conflicts"]] == ["s"]
    tool = SkillTools(b).call("skills_sync_status")  # what an agent sees
    assert [c["skill"] for c in tool["merge_conflicts"]] == ["s"]
    sharing.push(b, str(remote))
    _audit_ok(remote)
    settled = resolve(b, "s", "other")
    assert settled["snapshot"]["version"] == 3 and "TWO-B" in _body(b, "s")  # after v2 on both sides
    assert conflicts(b) == {}
    proc = run_ledger("--brain", str(b.root), "skill", "resolve", "s", "--take", "kept")
    assert proc.returncode == 1 and "no merge conflict" in proc.stderr
    sharing.push(b, str(remote))
    _audit_ok(remote, require_signatures=True)


def test_delete_against_edit_keeps_the_edit_both_ways(trio, tmp_path: Path) -> None:
    a, remote, b = trio
    a.delete("s")
    a.patch("t", "tee", "TEE-A")
    sharing.push(a, str(remote))
    b.patch("s", "one", "ONE-B")  # edited here, deleted there: the edit stays
    b.delete("t")  # deleted here, edited there: the edit stays
    out = sharing.push(b, str(remote))["merges"][0]
    assert len(out["notes"]) == 2
    assert "ONE-B" in _body(b, "s") and "TEE-A" in _body(b, "t")
    assert _version(b, "s") == 2  # s was retired at v1 on a; b's v2 is above it
    _audit_ok(remote, require_signatures=True)


def test_a_version_used_on_the_other_side_is_renumbered(trio) -> None:
    a, remote, b = trio
    a.create("y", "Y", "a's y\n")
    a.delete("y")  # y v1 retired on a
    sharing.push(a, str(remote))
    b.create("y", "Y", "b's y\n")  # y v1 on b: a different v1
    sharing.push(b, str(remote))
    assert _version(b, "y") == 2 and "b's y" in _body(b, "y")
    assert b.store.snapshot(b.head().commit).changes[0].trailer() == "create y 2"
    _audit_ok(remote, require_signatures=True)


def test_categories_merge_per_file_and_membership(tmp_path: Path) -> None:
    src = hermes(tmp_path / "h")
    a = Brain.init(tmp_path / "a")
    run_ledger("--brain", str(a.root), "import", str(src), check=True)
    remote = tmp_path / "r.git"
    sharing.push(a, str(remote))
    b = clone(str(remote), tmp_path / "b")
    cat = next(p for p in src.rglob("DESCRIPTION.md"))
    rel = cat.relative_to(src).as_posix()
    cat.write_text(cat.read_text() + "edited on a\n")
    run_ledger("--brain", str(a.root), "import", str(src), check=True)
    sharing.push(a, str(remote))
    name = sorted(s.name for s in b.list())[0]
    run_ledger("--brain", str(b.root), "skill", "move", name, "merged-cat", check=True)
    sharing.push(b, str(remote))
    top = b.store.commit_info(b.head().commit)[0]
    cats = b.store.categories_tree(top)
    from ledger.store.treehash import files_of

    files = files_of(b.store, cats)
    assert b.store.read(files[rel][1], b"blob").endswith(b"edited on a\n")
    members = json.loads(b.store.read(files[".ledger-categories.json"][1], b"blob"))["skills"]
    assert members[name] == "merged-cat"
    _audit_ok(remote, require_signatures=True)
    a.close()
    b.close()


def test_a_push_never_forces_and_the_remote_refuses_non_fast_forwards(trio, tmp_path: Path) -> None:
    a, remote, b = trio
    assert _git(remote, "config", "receive.denyNonFastForwards").strip() == "true"
    a.patch("s", "one", "ONE")
    sharing.push(a, str(remote))
    b.patch("t", "tee", "TEE")
    proc = subprocess.run(
        ["git", "-C", str(b.root), "push", "-f", str(remote), "main:main"], capture_output=True, text=True
    )
    assert proc.returncode != 0  # even a forced push cannot rewrite the shared branch
    assert _git(remote, "rev-parse", "main").strip() == a.head().commit.hex()


# --------------------------------------------------------------------------- forged merges


def _forged(trio, name: str) -> Path:
    """The remote after a merge, its tip forged as the tamper corpus's class ``name`` (tests/harness/tamper.py)."""
    a, remote, b = trio
    a.patch("s", "one", "ONE")
    sharing.push(a, str(remote))
    b.patch("t", "tee", "TEE")
    sharing.push(b, str(remote))
    case = next(c for c in tamper.merge_cases() if c.name == name)
    case.apply(remote, {"merge": len(tamper.lineage(remote)) - 1})
    return remote


def _failed(repo: Path, **kw: object) -> set[str]:
    return {n for n, c in audit_repo(repo, **kw).checks.items() if not c.ok}  # type: ignore[arg-type]


def test_forged_second_parent_root_fails_lineage(trio) -> None:
    remote = _forged(trio, "merge-root-forged")
    assert "lineage" in _failed(remote)
    with pytest.raises(StoreError, match="fails the audit"):  # a pull audits what is new to it, and refuses
        sharing.pull(trio[0], str(remote))


def test_unhashed_second_parent_fails(trio) -> None:
    remote = _forged(trio, "merge-parent-unhashed")
    failed = _failed(remote)
    assert {"snapshots", "lineage"} <= failed
    with pytest.raises(StoreError, match="fails the audit"):
        sharing.pull(trio[0], str(remote))


def test_unsigned_merge_fails_under_the_signed_policy(trio) -> None:
    remote = _forged(trio, "merge-unsigned")
    assert _failed(remote) == {"signatures"}  # the brain's policy 'signed' (lineage.md §8.4), with no flag
    with pytest.raises(StoreError, match="policy requires every snapshot to be signed"):
        sharing.pull(trio[0], str(remote))


def test_merge_relabelled_as_patch_fails(trio) -> None:
    remote = _forged(trio, "merge-relabelled")
    assert {"lineage", "trailers"} <= _failed(remote)


@pytest.mark.chain
def test_receipts_from_both_machines_merge_and_the_chain_orders_commits(tmp_path: Path, node) -> None:
    """Two machines anchor: the second gets StaleParent, merges, and commits the merge on top; the
    receipt notes of both are joined on the remote, none replaced."""
    from ledger.anchoring.commits import deploy, register
    from ledger.chain.keys import DEV_KEY_NAME
    from ledger.chain.receipts import read_receipts
    from ledger.remotes.fleet import sync_remote

    a = Brain.init(tmp_path / "a")
    a.create("s", "S", "one\n")
    a.update_config(chain={"rpc": node.url})
    deploy(a, key=DEV_KEY_NAME)
    register(a, shares=10, key=DEV_KEY_NAME)
    remote = tmp_path / "r.git"
    sharing.push(a, str(remote))
    b = clone(str(remote), tmp_path / "b")
    b.update_config(chain=dict(a.config["chain"]))
    a.create("t", "T", "a's\n")
    first = sync_remote(a, str(remote), commit=True, key=DEV_KEY_NAME)
    assert first["status"] == "ok" and first["committed"] == 3  # genesis, s, t: one batch
    b.create("u", "U", "b's\n")
    second = sync_remote(b, str(remote), commit=True, key=DEV_KEY_NAME)
    assert second["status"] == "ok" and [m["action"] for m in second["merges"]] == ["merge"]
    assert second["committed"] == 1  # the merge's root, on top of a's: b's own snapshot is its second parent
    with GitStore(remote) as store:
        notes = read_receipts(store)
    assert {a.head().commit.hex(), b.head().commit.hex()} <= set(notes)  # both machines' receipts
    assert [n["seq"] for n in sorted(notes.values(), key=lambda n: n["seq"])] == [1, 2, 3, 4]
    cfg = b.config["chain"]
    _audit_ok(
        remote, rpc=node.url, registry=cfg["registry"], agent=int(str(cfg["agent_id"]), 0), require_signatures=True
    )
    sync_remote(a, str(remote), commit=True, key=DEV_KEY_NAME)
    assert read_receipts(a.store) == notes  # a takes b's receipt: checked against the chain
    a.close()
    b.close()
