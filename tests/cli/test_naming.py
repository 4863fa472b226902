"""Skill names as Hermes and Claude Code use them (issue 19, items 1 and 2): a skill whose declared
name differs from its folder is viewed by either name and by its category path, edited with its own
content, and upserted by its declared name, and stays one skill with contiguous versions."""

from __future__ import annotations

import json
from pathlib import Path

from ledger.agent.tools import SkillTools
from ledger.brain import Brain
from tests.harness.brains import make_brain
from tests.harness.cli import run_in_process

VLLM = (
    "---\nname: serving-llms-vllm\ndescription: Serve LLMs with vLLM.\nmetadata:\n  hermes:\n"
    "    tags: [serving]\n---\nRun vllm serve.\n"
)


def _hermes(tmp_path: Path) -> Path:
    src = tmp_path / "hermes"
    (src / "mlops" / "inference" / "vllm").mkdir(parents=True)
    (src / "mlops" / "DESCRIPTION.md").write_text("ML operations.\n")
    (src / "mlops" / "inference" / "vllm" / "SKILL.md").write_text(VLLM)
    (src / "research" / "arxiv").mkdir(parents=True)
    (src / "research" / "arxiv" / "SKILL.md").write_text("---\nname: arxiv\ndescription: Papers.\n---\nSearch.\n")
    return make_brain(tmp_path / "b", via="cli", src=src, layout="hermes")


def test_a_skill_named_otherwise_than_its_folder_stays_one_skill(tmp_path: Path) -> None:
    brain = _hermes(tmp_path)
    b = ("--brain", str(brain))
    for ref in ("vllm", "serving-llms-vllm", "mlops/inference/vllm"):
        view = json.loads(run_in_process(*b, "skill", "view", ref, "--json", check=True).stdout)
        assert view["name"] == "vllm", (ref, view)
    assert "Papers" in run_in_process(*b, "skill", "view", "research/arxiv", check=True).stdout
    missing = run_in_process(*b, "skill", "view", "research/vllm")  # the folder, but not in that category
    assert missing.returncode == 1 and "no skill 'research/vllm'" in missing.stderr
    # Edited with its own content (its declared name kept), by its folder and by its declared name.
    (tmp_path / "v2.md").write_text(VLLM.replace("Run vllm serve.", "Run vllm serve --port 8000."))
    run_in_process(*b, "skill", "edit", "vllm", "--file", str(tmp_path / "v2.md"), check=True)
    (tmp_path / "v3.md").write_text(VLLM.replace("Run vllm serve.", "Run vllm serve --port 9000."))
    run_in_process(*b, "skill", "edit", "serving-llms-vllm", "--file", str(tmp_path / "v3.md"), check=True)
    # Upserted by its declared name: the same skill, not a second one.
    (tmp_path / "v4.md").write_text(VLLM.replace("Run vllm serve.", "Run vllm serve --tp 2."))
    receipt = json.loads(
        run_in_process(*b, "skill", "upsert", "--file", str(tmp_path / "v4.md"), "--json", check=True).stdout
    )
    assert (receipt["skill"], receipt["version"], receipt["operation"]) == ("vllm", 4, "edit")
    run_in_process(*b, "skill", "patch", "mlops/inference/vllm", "--old", "--tp 2", "--new", "--tp 4", check=True)
    listed = json.loads(run_in_process(*b, "skill", "list", "--json", check=True).stdout)
    assert sorted(s["name"] for s in listed) == ["arxiv", "vllm"]
    with Brain.open(brain) as opened:
        assert [e["version"] for e in opened.history("serving-llms-vllm")] == [5, 4, 3, 2, 1]
    text = (brain / "skills" / "vllm" / "SKILL.md").read_text()
    assert "name: serving-llms-vllm" in text and "--tp 4" in text  # never "fixed" to the folder's name


def test_the_agent_tools_take_the_names_hermes_shows(tmp_path: Path) -> None:
    brain = _hermes(tmp_path)
    with Brain.open(brain) as b:
        tools = SkillTools(b)
        assert tools.skill_view("serving-llms-vllm")["name"] == "vllm"
        assert tools.skill_view("mlops/inference/vllm")["name"] == "vllm"
        done = tools.skill_manage("edit", "serving-llms-vllm", content=VLLM.replace("serve.", "serve --x."))
        assert done["receipt"]["skill"] == "vllm" and done["receipt"]["version"] == 2
        done = tools.skill_manage("patch", "mlops/inference/vllm", old_string="--x", new_string="--y")
        assert done["receipt"]["version"] == 3


def test_an_ambiguous_declared_name_is_refused_with_the_candidates(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for folder in ("one", "two"):
        (src / folder).mkdir(parents=True)
        (src / folder / "SKILL.md").write_text("---\nname: shared\ndescription: D.\n---\nx\n")
    brain = tmp_path / "b"
    run_in_process("init", str(brain), check=True)
    run_in_process("--brain", str(brain), "import", str(src), check=True)
    proc = run_in_process("--brain", str(brain), "skill", "view", "shared")
    assert proc.returncode == 1 and "ambiguous" in proc.stderr and "one" in proc.stderr and "two" in proc.stderr
    (tmp_path / "s.md").write_text("---\nname: shared\ndescription: D.\n---\ny\n")
    proc = run_in_process("--brain", str(brain), "skill", "upsert", "--file", str(tmp_path / "s.md"))
    assert proc.returncode == 1 and "one, two" in proc.stderr
