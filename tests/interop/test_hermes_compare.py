"""Our agent tools against Hermes's own, on the same tree (issue 19, item 7).

The PyPI `hermes-agent` package runs in a virtual environment of its own (`.venv-hermes/`,
made on first use from the hashed lock requirements/hermes.txt, and brought to it again when the lock
changes), with `HERMES_HOME` pointing at a Hermes home; our tools run on a brain
that imported the same skills. Every field a Hermes result has must be in ours with the same
JSON type, except the gaps listed below, each with its reason. Outside CI the test skips, saying
why, when the package cannot be installed; in CI (LEDGER_CI=1) it must run.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ledger.agent.tools import SkillTools
from ledger.brain import Brain
from tests.harness.cli import run_ledger
from tests.harness.venvs import venv_python

HERMES = "hermes-agent==0.19.0"  # requirements/hermes.in; scripts/lock pins its dependencies in LOCK
VENV = Path(__file__).resolve().parents[2] / ".venv-hermes"
LOCK = VENV.parent / "requirements" / "hermes.txt"
REVIEW = (
    "---\nname: code-review\ndescription: Review a diff.\nplatforms: [linux, macos]\nmetadata:\n  hermes:\n"
    "    tags: [review, quality]\n    related_skills: [testing]\n---\nRead the diff.\n"
)
ARXIV = "---\nname: arxiv\ndescription: Find papers.\n---\nSearch.\n"
CALLS = [  # (tool, kwargs): reads first, then writes, in the same order on both sides
    ("skills_list", {}),
    ("skills_list", {"category": "software-development"}),
    ("skill_view", {"name": "code-review"}),
    ("skill_view", {"name": "code-review", "file_path": "templates/checklist.md"}),
    ("skill_view", {"name": "code-review", "file_path": "assets/logo.png"}),
    ("skill_manage", {"action": "create", "name": "arxiv", "content": ARXIV, "category": "research"}),
    ("skill_manage", {"action": "patch", "name": "arxiv", "old_string": "Search.", "new_string": "Search well."}),
    (
        "skill_manage",
        {"action": "write_file", "name": "arxiv", "file_path": "references/api.md", "file_content": "# API\n"},
    ),
    ("skill_manage", {"action": "edit", "name": "arxiv", "content": ARXIV.replace("Search.", "Search twice.")}),
    ("skill_manage", {"action": "delete", "name": "arxiv"}),
]
# Fields of Hermes's results that ours lack, and why. Anything else missing fails the test.
GAPS: dict[str, set[str]] = {}  # none: skill_manage's path, skill_md, _change, hint, category came in issue 19
DRIVER = """
import json, sys
from tools.skills_tool import skill_view, skills_list
from tools.skill_manager_tool import skill_manage
tools = {"skills_list": skills_list, "skill_view": skill_view, "skill_manage": skill_manage}
print(json.dumps([json.loads(tools[t](**kw)) for t, kw in json.load(sys.stdin)]))
"""


def _hermes_python() -> Path:
    return venv_python(VENV, LOCK, HERMES)


def _tree(home: Path) -> None:
    review = home / "skills" / "software-development" / "code-review"
    (review / "templates").mkdir(parents=True)
    (review / "assets").mkdir()
    (review / "SKILL.md").write_text(REVIEW)
    (review / "templates" / "checklist.md").write_text("- [ ] tests\n")
    (review / "assets" / "logo.png").write_bytes(b"\x89PNG\x00\xff")
    (home / "skills" / "software-development" / "DESCRIPTION.md").write_text("Code skills.\n")


def _type(value: object) -> str:
    return type(value).__name__


def test_our_tools_return_every_field_hermes_returns(tmp_path: Path) -> None:
    python = _hermes_python()
    home = tmp_path / "hermes-home"
    _tree(home)
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    run_ledger("--brain", str(brain), "import", str(home), check=True)  # before Hermes writes into it
    proc = subprocess.run(
        [str(python), "-c", DRIVER],
        input=json.dumps(CALLS),
        capture_output=True,
        text=True,
        env={**os.environ, "HERMES_HOME": str(home)},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    with Brain.open(brain) as b:
        tools = SkillTools(b)
        ours = [getattr(tools, t)(**kw) for t, kw in CALLS]
    problems = []
    for (tool, kw), h, o in zip(CALLS, theirs, ours, strict=True):
        assert h.get("success") is True, (tool, kw, h)
        for key, value in h.items():
            if key in GAPS.get(tool, ()):
                continue
            if key not in o:
                problems.append(f"{tool}({kw}): no {key!r}")
            elif value is not None and o[key] is not None and _type(o[key]) != _type(value):
                problems.append(f"{tool}({kw}): {key!r} is {_type(o[key])}, Hermes's is {_type(value)}")
        if tool == "skills_list":
            for hs, os_ in zip(h["skills"], o["skills"], strict=True):
                assert {k: os_[k] for k in hs} == hs, (hs, os_)
            assert (o["categories"], o["count"]) == (h["categories"], h["count"])
    assert not problems, "\n".join(problems)
    view_h, view_o = theirs[2], ours[2]
    for key in ("name", "description", "tags", "related_skills", "path", "linked_files", "readiness_status"):
        assert view_o[key] == view_h[key], key
    assert {k: ours[3][k] for k in ("file", "content", "file_type")} == {
        k: theirs[3][k] for k in ("file", "content", "file_type")
    }
    assert (ours[4]["is_binary"], ours[4]["content"]) == (theirs[4]["is_binary"], theirs[4]["content"])
    create_h, create_o, patch_h, patch_o = theirs[5], ours[5], theirs[6], ours[6]
    for key in ("path", "category", "hint", "_change"):  # the same values, not only the same types
        assert create_o[key] == create_h[key], (key, create_o[key], create_h[key])
    assert patch_o["_change"] == patch_h["_change"]
    assert ours[8]["_change"] == theirs[8]["_change"]  # edit
    assert Path(create_o["skill_md"]).name == "SKILL.md" and Path(ours[7]["path"]).name == "api.md"
