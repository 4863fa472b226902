"""A narrow Brain (ADR 72): the store shown read-only, every other part private, one write context."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from ledger.brain import Brain
from ledger.store import gitstore as gs

ROOT = Path(__file__).resolve().parents[3]
PARTS = (
    "writer",
    "snapshots",
    "lock",
    "importer",
    "reads",
    "mutations",
    "versions",
    "sealer",
    "catalog",
    "keyring",
    "keys",
    "cache",
)


def test_only_the_store_and_root_are_parts_a_brain_shows(brain: Brain) -> None:
    for part in PARTS:
        assert not hasattr(brain, part), f"brain.{part} is public"
    assert isinstance(brain.store, gs.GitStore) and brain.root.is_dir()
    with pytest.raises(AttributeError):
        brain.store = brain.store  # type: ignore[misc]  # read-only, as dulwich's Repo.object_store


def test_no_module_outside_the_brain_package_reaches_a_private_part() -> None:
    found = []
    for path in (ROOT / "ledger").rglob("*.py"):
        if path.parent.name == "brain":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr.lstrip("_") in PARTS and node.attr.startswith("_"):
                base = ast.unparse(node.value)
                if base == "brain" or base.endswith(".brain"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_writing_holds_the_lock_and_attributes_the_actor(brain: Brain) -> None:
    md = b"---\nname: beta\ndescription: Do beta.\n---\nBody.\n"
    assert not brain._lock.held
    with brain.writing(actor="agent", task="T-1") as w:
        assert brain._lock.held and w.attribution["actor"] == "agent"
        receipt = w.write_skill("create", "beta", {"SKILL.md": (md, False)})
    assert not brain._lock.held and brain.attribution["actor"] == "user"
    body = subprocess.run(
        ["git", "--git-dir", str(brain.store.git_dir), "log", "-1", "--format=%B", receipt.commit],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Ledger-Actor: agent" in body and "Ledger-Task: T-1" in body and "Ledger-Skill: beta" in body
