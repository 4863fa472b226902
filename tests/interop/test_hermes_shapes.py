"""Results a Hermes caller consumes unchanged (issue 19, item 7, in part): Hermes's skill_view fields
(tags, related_skills, path, skill_dir, linked_files grouped by folder, readiness, metadata), file
views with file and file_type or is_binary, platform filtering, and a task that lands in attribution.
The field names and types are those of hermes-agent 0.19's tools/skills_tool.py."""

from __future__ import annotations

import sys
from pathlib import Path

from ledger.agent.tools import SkillTools
from ledger.brain import Brain
from tests.harness.brains import make_brain

REVIEW = (
    "---\nname: code-review\ndescription: Review a diff.\nplatforms: [linux, macos]\nmetadata:\n  hermes:\n"
    "    tags: [review, quality]\n    related_skills: [testing]\n---\nRead the diff.\n"
)


def _brain(tmp_path: Path) -> Path:
    src = tmp_path / "src" / "software-development" / "code-review"
    (src / "templates").mkdir(parents=True)
    (src / "SKILL.md").write_text(REVIEW)
    (src / "templates" / "checklist.md").write_text("- [ ] tests\n")
    (src / "assets").mkdir()
    (src / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    (src / "scripts").mkdir()
    (src / "scripts" / "run.sh").write_text("#!/bin/sh\n")
    (src / "scripts" / "notes.txt").write_text("not a script Hermes lists\n")
    only_windows = tmp_path / "src" / "win-only"
    only_windows.mkdir(parents=True)
    (only_windows / "SKILL.md").write_text("---\nname: win-only\ndescription: W.\nplatforms: [windows]\n---\nw\n")
    return make_brain(tmp_path / "b", via="cli", src=tmp_path / "src", layout="hermes")


def test_skill_view_has_hermes_fields(tmp_path: Path) -> None:
    with Brain.open(_brain(tmp_path)) as b:
        tools = SkillTools(b)
        view = tools.skill_view("code-review")
        assert view["success"] is True and view["tags"] == ["review", "quality"]
        assert view["related_skills"] == ["testing"]
        assert view["path"] == "software-development/code-review/SKILL.md"
        assert view["skill_dir"] == str(b.skills_dir / "code-review")
        assert view["linked_files"] == {
            "templates": ["templates/checklist.md"],
            "assets": ["assets/logo.png"],
            "scripts": ["scripts/run.sh"],
        }
        assert view["readiness_status"] == "available" and view["setup_needed"] is False
        # metadata as the file holds it, the ledger's version counter included (docs/layouts.md)
        assert view["metadata"] == {
            "hermes": {"tags": ["review", "quality"], "related_skills": ["testing"]},
            "version": "1",
        }
        assert view["version"] == 1 and view["receipt"]["proof"]  # ours, beside Hermes's
        text = tools.skill_view("code-review", "templates/checklist.md")
        assert (text["file"], text["file_type"], text["content"]) == ("templates/checklist.md", ".md", "- [ ] tests\n")
        binary = tools.skill_view("code-review", "assets/logo.png")
        assert binary["is_binary"] is True and binary["content"] == "[Binary file: logo.png, size: 10 bytes]"


def test_skills_list_hides_other_platforms_as_hermes_does(tmp_path: Path) -> None:
    with Brain.open(_brain(tmp_path)) as b:
        tools = SkillTools(b)
        listed = tools.skills_list()
        names = [s["name"] for s in listed["skills"]]
        assert ("win-only" in names) == sys.platform.startswith("win32") and "code-review" in names
        assert listed["success"] is True and listed["count"] == len(names)
        assert listed["categories"] == ["software-development"]
        every = tools.skills_list(all_platforms=True)
        assert sorted(s["name"] for s in every["skills"]) == ["code-review", "win-only"]


def test_a_tool_call_names_its_task(tmp_path: Path) -> None:
    with Brain.open(_brain(tmp_path)) as b:
        tools = SkillTools(b)
        done = tools.skill_manage(
            "patch", "code-review", old_string="Read the diff.", new_string="Read it all.", task="T-42"
        )
        assert done["success"] is True and done["message"] == "Patched skill 'code-review' (v2)."
        snap = b.store.snapshot(bytes.fromhex(done["receipt"]["commit"]))
        assert snap.attribution == {"actor": "agent", "task": "T-42"}
