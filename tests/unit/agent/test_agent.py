"""The agent surface in process: Hermes's skill_manage arguments, evolution payloads, synthesis, prompts."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from ledger.agent.evolution import apply_payload, render_index, render_skill_turn, synthesis_advice
from ledger.agent.tools import SkillTools
from ledger.brain import Brain
from ledger.bundle.merkle import InclusionProof, parse_root, verify_proof
from ledger.errors import SkillError
from tests.harness.brains import fingerprint
from tests.harness.cli import run_ledger

SKILL = "---\nname: {n}\ndescription: {d}\n---\n{b}\n"


def _msg(brain: Brain) -> str:
    return subprocess.run(
        ["git", "-C", str(brain.root), "log", "-1", "--format=%B"], capture_output=True, text=True
    ).stdout


def test_every_hermes_action_with_hermes_argument_names(brain: Brain) -> None:
    tools = SkillTools(brain, task="T-1")
    ok = lambda r: r["success"] or pytest.fail(json.dumps(r))  # noqa: E731
    ok(
        tools.call(
            "skill_manage",
            {
                "action": "create",
                "name": "pdf",
                "content": SKILL.format(n="pdf", d="Fill PDF forms", b="Use fill.\nUse fill again."),
            },
        )
    )
    ok(
        tools.call(
            "skill_manage",
            {"action": "patch", "name": "pdf", "old_string": "fill", "new_string": "merge", "replace_all": True},
        )
    )
    assert brain.view("pdf")["body"].count("merge") == 2
    ok(
        tools.call(
            "skill_manage",
            {"action": "write_file", "name": "pdf", "file_path": "references/api.md", "file_content": "# API\n"},
        )
    )
    ok(
        tools.call(
            "skill_manage",
            {
                "action": "patch",
                "name": "pdf",
                "file_path": "references/api.md",
                "old_string": "# API",
                "new_string": "# The API",
            },
        )
    )
    ok(
        tools.call(
            "skill_manage",
            {
                "action": "edit",
                "name": "pdf",
                "content": SKILL.format(n="pdf", d="Fill and merge PDF forms", b="Rewritten."),
            },
        )
    )
    ok(tools.call("skill_manage", {"action": "remove_file", "name": "pdf", "file_path": "references/api.md"}))
    assert "Ledger-Actor: agent" in _msg(brain) and "Ledger-Task: T-1" in _msg(brain)
    ok(tools.call("skill_manage", {"action": "delete", "name": "pdf"}))
    assert [s.name for s in brain.list()] == []
    refused = tools.call("skill_manage", {"action": "write_file", "name": "x", "file_path": "../x", "file_content": ""})
    assert not refused["success"]
    nulls = {
        "content": None,
        "old_string": None,
        "new_string": None,
        "replace_all": None,
        "file_path": None,
        "file_content": None,
    }
    ok(
        tools.call(
            "skill_manage",
            {
                "action": "create",
                "name": "nully",
                **nulls,
                "content": SKILL.format(n="nully", d="Accepts null arguments", b="x"),
            },
        )
    )


def test_api_view_returns_a_receipt_that_verifies(brain: Brain) -> None:
    brain.create("s", "d", "body\n")
    doc = brain.view("s")
    receipt = doc["receipt"]
    assert receipt["matches"] and receipt["version"] == 1
    text = (brain.skills_dir / "s" / "SKILL.md").read_bytes()
    verify_proof(InclusionProof.from_json(receipt["proof"]), parse_root(receipt["root"]), text)
    (brain.skills_dir / "s" / "SKILL.md").write_text(text.decode() + "hand edit\n")
    assert brain.view("s")["receipt"]["matches"] is False


def _payload(op: str, files: dict[str, str], summary: str = "learned from task 7") -> dict:
    return {"summary": summary, "operation_type": op, "upsert_files": files}


def test_payload_create_then_revise_then_verbatim_noop(tmp_path: Path, brain: Brain) -> None:
    md = SKILL.format(n="oracle", d="Check an oracle before trusting it", b="Run scripts/check.py.")
    r = apply_payload(brain, _payload("create", {"oracle/SKILL.md": md, "oracle/scripts/check.py": "print(1)\n"}))
    assert r["snapshot"] and "Ledger-Evolution: create" in _msg(brain) and "learned from task 7" in _msg(brain)
    md2 = md.replace("Run scripts/check.py.", "Run scripts/check.py, then references/why.md.")
    r2 = apply_payload(brain, _payload("revise", {"oracle/SKILL.md": md2, "oracle/references/why.md": "because\n"}))
    assert r2["skills"][0]["version"] == 2
    assert (brain.skills_dir / "oracle" / "scripts" / "check.py").read_text() == "print(1)\n"  # revise keeps files
    payload = tmp_path / "p.json"
    payload.write_text(json.dumps(_payload("revise", {"oracle/SKILL.md": md2})))
    before = fingerprint(brain.root)
    again = run_ledger("--brain", str(brain.root), "skill", "apply", str(payload))
    assert again.returncode == 0 and "nothing to apply" in again.stdout
    assert fingerprint(brain.root) == before
    assert run_ledger("--brain", str(brain.root), "verify").returncode == 0


REFUSALS = {
    "name differs from slug": {"a/SKILL.md": SKILL.format(n="b", d="d", b="x")},
    "description over 1024": {"a/SKILL.md": SKILL.format(n="a", d="d" * 1025, b="x")},
    "tier-3 file not cited": {"a/SKILL.md": SKILL.format(n="a", d="d", b="x"), "a/scripts/run.sh": "echo\n"},
    "path leaves the skill": {"a/SKILL.md": SKILL.format(n="a", d="d", b="x"), "a/references/../../x": "x"},
    "dotdot slug": {"../a/SKILL.md": SKILL.format(n="a", d="d", b="x")},
    "second skill invalid (atomic)": {
        "a/SKILL.md": SKILL.format(n="a", d="d", b="x"),
        "b/SKILL.md": SKILL.format(n="c", d="d", b="x"),
    },
}


@pytest.mark.parametrize("files", REFUSALS.values(), ids=REFUSALS.keys())
def test_payload_refusals_change_nothing(brain: Brain, files: dict[str, str]) -> None:
    before = fingerprint(brain.root)
    with pytest.raises(SkillError, match="payload refused"):
        apply_payload(brain, _payload("create", files))
    assert fingerprint(brain.root) == before


def test_payload_refuses_wrong_operation_for_the_state(brain: Brain) -> None:
    brain.create("a", "d", "x\n")
    with pytest.raises(SkillError, match="which exists"):
        apply_payload(brain, _payload("create", {"a/SKILL.md": SKILL.format(n="a", d="d", b="y")}))
    with pytest.raises(SkillError, match="does not exist"):
        apply_payload(brain, _payload("revise", {"b/SKILL.md": SKILL.format(n="b", d="d", b="y")}))


def test_synthesis_trigger(brain: Brain) -> None:
    brain.create("oracle-check", "Check a price oracle's heartbeat and deviation before trusting it", "x\n")
    assert synthesis_advice(brain, tool_calls=2)["skill_worthy"] is False
    assert synthesis_advice(brain, tool_calls=3, recovered_from_error=True)["skill_worthy"] is True
    advice = synthesis_advice(brain, tool_calls=6, task="check the price oracle heartbeat before trusting it")
    assert advice["skill_worthy"] and advice["closest"][0]["name"] == "oracle-check"
    assert advice["advice"] == "patch the closest skill"
    assert synthesis_advice(brain, tool_calls=6, min_tool_calls=10)["skill_worthy"] is False


def test_system_block_is_byte_identical_across_turns_with_different_skills(brain: Brain) -> None:
    for name in ("alpha", "beta", "gamma"):
        brain.create(name, f"Skill {name}", f"Body of {name}.\n" * 20)
    system = [hashlib.sha256(render_index(brain).encode()).hexdigest() for _ in range(3)]
    turns = [render_skill_turn(brain, names, 400) for names in (["alpha"], ["beta", "gamma"], ["gamma"])]
    assert len(set(system)) == 1 and len({t["content"] for t in turns}) == 3
    assert all(t["role"] == "user" and t["content"].startswith("<skill name=") for t in turns)
    small = render_skill_turn(brain, ["alpha", "beta"], 40)
    assert len(small["content"]) <= 160 and "truncated" in small["content"]
