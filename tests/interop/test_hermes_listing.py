"""``skills_list`` returns what Hermes's own listing returns for the same home: names, categories,
descriptions and order, and the skills Hermes hides, each with the reason.

A brain of varied skills is written as a Hermes home by the ledger's own commands (``ledger
export --layout hermes``; ``ledger link`` then ``ledger sync`` for a home with a config.yaml).
The PyPI ``hermes-agent`` package lists that home in its own virtual environment
(``.venv-hermes/``, as in tests/interop/test_hermes_compare.py: outside CI the test skips when the package
cannot be installed, in CI it must run), and our ``skills_list`` must agree with it exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ledger.agent import hermes_shapes
from ledger.agent.tools import SkillTools
from ledger.brain import Brain
from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger
from tests.interop.test_hermes_compare import _hermes_python

# Hermes's own code: its skills_list (with and without a category) and its walk over the home,
# each walked SKILL.md named as _find_all_skills names it, to tell which one a listed skill is.
DRIVER = """
import json, sys
from agent.skill_utils import iter_skill_index_files
from hermes_constants import get_skills_dir
import tools.skills_tool as st
root = get_skills_dir()
listing = json.loads(st.skills_list())
by_category = {c: json.loads(st.skills_list(category=c)) for c in listing.get("categories", [])}
walked = []
for md in iter_skill_index_files(root, "SKILL.md"):
    try:
        fm, _ = st._parse_frontmatter(md.read_text(encoding="utf-8")[:4000])
        name = fm.get("name", md.parent.name)[: st.MAX_NAME_LENGTH]
        hash(name)
    except Exception:
        name = None
    walked.append({"dir": str(md.parent.relative_to(root)), "name": name,
                   "category": st._get_category_from_path(md)})
print(json.dumps({"listing": listing, "by_category": by_category, "walked": walked}))
"""
LONG_NAME, LONG_DESCRIPTION = "x" * 70, "d" * 1100
SKILLS = {  # Hermes layout: category/…/folder → SKILL.md
    "devops/deploy": "---\nname: deploy\ndescription: Deploy via the devops pipeline.\n---\nShip.\n",
    "devops/deploy/references/old": "---\nname: old\ndescription: An archived copy, a file of deploy.\n---\nc\n",
    "data/pipeline-deploy": "---\nname: deploy\ndescription: Deploy a data pipeline.\n---\nShip data.\n",
    "data/etl/spark": "---\nname: spark\ndescription: Two category levels deep.\n---\nx\n",
    "vllm": "---\nname: serving-llms-vllm\ndescription: Serve models with vLLM.\n---\nx\n",
    "devops/win-only": "---\nname: win-only\ndescription: Windows only.\nplatforms: [windows]\n---\nw\n",
    "devops/unix": "---\nname: unix\ndescription: Linux and macOS.\nplatforms: [linux, macos]\n---\nu\n",
    "notes": "---\nname: notes\n---\n# Notes\n\nThe first body line becomes the description.\nMore.\n",
    "research/kanban-only": "---\nname: kanban-only\ndescription: Kanban boards.\nenvironments: [kanban]\n---\nk\n",
    "research/long-name": f"---\nname: {LONG_NAME}\ndescription: {LONG_DESCRIPTION}\n---\nb\n",
    "research/numbered": "---\nname: 123\ndescription: A name that is a number.\n---\nb\n",
    "research/big-frontmatter": "---\nname: big-frontmatter\ndescription: Big.\nplatforms: [windows]\nmetadata:\n"
    f"  note: {'n' * 4100}\n---\n# Heading\nBody line.\n",
    "tools/crlf": "---\r\nname: crlf\r\ndescription: Windows line ends.\r\n---\r\nBody.\r\n",
}


def _brain(tmp_path: Path) -> Path:
    skills = {rel: {"SKILL.md": text} for rel, text in SKILLS.items()}
    skills["devops"] = {"DESCRIPTION.md": "---\ndescription: Deployment and ops.\n---\n"}
    return make_brain(tmp_path / "brain", skills, via="cli", layout="hermes")


def _hermes(python: Path, home: Path) -> dict:
    env = {**os.environ, "HERMES_HOME": str(home), "HOME": str(home.parent)}
    proc = subprocess.run([str(python), "-c", DRIVER], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _hidden_by_hermes(home: Path, hermes: dict) -> set[str]:
    """The skills in ``home`` that Hermes does not show, by folder: every skill folder (a SKILL.md in
    no other skill's folder) and every SKILL.md Hermes's walk reached, less the ones it lists."""
    skills = home / "skills"
    dirs = sorted(str(md.parent.relative_to(skills)) for md in skills.rglob("SKILL.md"))
    tops = {d for d in dirs if not any(d.startswith(o + "/") for o in dirs)}
    listed = {(s["name"], s["category"]) for s in hermes["listing"]["skills"]}
    shown = set()
    for w in hermes["walked"]:  # in Hermes's walk order: the first of a (name, category) is the listed one
        if (w["name"], w["category"]) in listed:
            listed.discard((w["name"], w["category"]))
            shown.add(w["dir"])
    assert not listed, f"listed skills the walk did not find: {listed}"
    return (tops | {w["dir"] for w in hermes["walked"]}) - shown


def _hermes_fields(listing: dict) -> list[dict]:
    return [{k: s[k] for k in ("name", "description", "category")} for s in listing["skills"]]


def _agree(ours: dict, theirs: dict) -> None:
    assert ours["success"] is theirs["success"] is True
    assert _hermes_fields(ours) == theirs["skills"]  # names, descriptions, categories, order
    assert ours["categories"] == theirs["categories"]
    assert ours["count"] == theirs["count"] == len(theirs["skills"])
    assert ours["hint"] == theirs["hint"]


def test_skills_list_is_hermes_listing_of_the_exported_home(tmp_path: Path) -> None:
    python = _hermes_python()
    brain = _brain(tmp_path)
    home = tmp_path / "hermes-home"
    run_ledger("--brain", str(brain), "export", str(home / "skills"), "--layout", "hermes", check=True)
    assert (home / "skills" / "devops" / "deploy" / "references" / "old" / "SKILL.md").is_file()
    theirs = _hermes(python, home)
    with Brain.open(brain) as b:
        tools = SkillTools(b)
        ours = tools.call("skills_list")
        _agree(ours, theirs["listing"])
        for category, listing in theirs["by_category"].items():
            _agree(tools.call("skills_list", {"category": category}), listing)
        again = tools.call("skills_list")  # from the cache: the same answer
        assert again == ours and again["skills"] is not ours["skills"]
        # Every skill Hermes does not show is in `hidden`, and nothing else is.
        hidden = {h["path"]: h for h in ours["hidden"]}
        assert set(hidden) == _hidden_by_hermes(home, theirs)
        assert not {s["path"] for s in ours["skills"]} & set(hidden)
        # Each with the reason, and the skill's place.
        assert hidden["devops/deploy"]["reason"] == "duplicate name: hidden behind data/pipeline-deploy/"
        assert hidden["devops/deploy"]["name"] == "deploy" and hidden["devops/deploy"]["category"] == "devops"
        numbered = "its frontmatter name is the int 123, not text, which Hermes skips"
        assert hidden["research/numbered"]["reason"] == numbered
        if not sys.platform.startswith("win32"):
            assert hidden["devops/win-only"]["reason"] == f"platforms [windows] do not include {sys.platform}"
        if not hermes_shapes.environment_active("kanban"):
            assert hidden["research/kanban-only"]["reason"] == "environments [kanban] are not active here"
        # What Hermes shows, by the names it declares, with what skill_view takes beside it.
        by_path = {s["path"]: s for s in ours["skills"]}
        assert by_path["vllm"]["name"] == "serving-llms-vllm" and by_path["vllm"]["category"] is None
        assert by_path["data/etl/spark"]["category"] == "data"
        assert by_path["research/long-name"]["name"] == LONG_NAME[:64]
        assert by_path["research/long-name"]["description"] == LONG_DESCRIPTION[:1021] + "..."
        assert by_path["notes"]["description"] == "The first body line becomes the description."
        assert by_path["tools/crlf"]["description"] == "Windows line ends."
        assert by_path["research/big-frontmatter"]["name"] == "big-frontmatter"  # its folder: no frontmatter read
        assert "devops/deploy/references/old" not in by_path and "devops/deploy/references/old" not in hidden
        assert tools.call("skill_view", {"name": by_path["data/pipeline-deploy"]["path"]})["name"] == "pipeline-deploy"
        assert all(s["version"] == 1 for s in ours["skills"])
        every = tools.call("skills_list", {"all_platforms": True})
        assert {"devops/win-only"} <= {s["path"] for s in every["skills"]}


def test_a_linked_homes_disabled_skills_are_hidden_as_there(tmp_path: Path) -> None:
    """A Hermes home linked and synced: the names its config.yaml disables are hidden on both sides,
    and a disabled skill does not hide a later one of the same name (Hermes's order)."""
    python = _hermes_python()
    brain = _brain(tmp_path)
    home = tmp_path / "hermes-home"
    env = {"HOME": str(tmp_path / "user"), "HERMES_HOME": str(home)}
    run_ledger(
        "--brain",
        str(brain),
        "target",
        "add",
        str(home / "skills"),
        "--layout",
        "hermes",
        "--name",
        "hermes",
        check=True,
        env=env,
    )
    run_ledger("--brain", str(brain), "sync", check=True, env=env)
    (home / "config.yaml").write_text("skills:\n  disabled: [notes, deploy]\n")
    theirs = _hermes(python, home)
    with Brain.open(brain) as b:
        ours = SkillTools(b).call("skills_list")
    _agree(ours, theirs["listing"])
    hidden = {h["path"]: h for h in ours["hidden"]}
    assert set(hidden) == _hidden_by_hermes(home, theirs)
    config = str(home / "config.yaml")
    assert hidden["notes"]["reason"] == hidden["data/pipeline-deploy"]["reason"] == f"disabled in {config}"
    assert hidden["devops/deploy"]["reason"] == f"disabled in {config}"  # not a duplicate: the first was disabled
    (home / "config.yaml").write_text("skills:\n  disabled: []\n")
    with Brain.open(brain) as b:
        assert "notes" in {s["path"] for s in SkillTools(b).call("skills_list")["skills"]}


def test_a_skill_in_a_folder_hermes_never_enters_is_hidden(brain: Brain) -> None:
    """A category named as a folder Hermes's walk skips (venv, node_modules, …): the brain may hold it
    (the export refuses to write it there), and the listing says why Hermes would not show it."""
    tools = SkillTools(brain)
    made = tools.call(
        "skill_manage",
        {
            "action": "create",
            "name": "to-venv",
            "category": "venv",
            "content": "---\nname: to-venv\ndescription: In venv/.\n---\nv\n",
        },
    )
    assert made["success"], made
    listed = tools.call("skills_list")
    assert listed["skills"] == [] and listed["message"] == "No skills found in skills/ directory."
    assert listed["hidden"] == [
        {
            "name": "to-venv",
            "category": "venv",
            "path": "venv/to-venv",
            "version": 1,
            "reason": "it is under venv/, and Hermes never looks inside a folder named venv",
        }
    ]
    assert tools.call("skills_list", {"category": "venv"})["hidden"] == listed["hidden"]


def test_an_empty_brain_lists_nothing_with_hermes_message(brain: Brain) -> None:
    listed = SkillTools(brain).call("skills_list")
    assert listed["skills"] == [] and listed["hidden"] == [] and listed["count"] == 0
    assert listed["message"] == "No skills found in skills/ directory."


def test_hermes_frontmatter_reading() -> None:
    """The reading rules on their own: BOM, an unclosed fence, the key: value fallback, the cut at 4,000."""
    card = hermes_shapes.read_card
    assert card("\ufeff---\nname: bom\ndescription: d\n---\nb\n".encode()).name == "bom"
    unclosed = card(b"---\nname: open\ndescription: d\nbody\n")
    assert unclosed.name is hermes_shapes._ABSENT and unclosed.description == "---"
    fallback = card(b"---\nname: x\ndescription: a: b: [c\nplatforms: [windows]\n---\nb\n")
    assert (fallback.name, fallback.description, fallback.platforms) == ("x", "a: b: [c", "[windows]")
    assert not hermes_shapes.matches_platform({"platforms": fallback.platforms})  # a string matches no host
    assert card(b"---\nname: n\ndescription: 42\n---\nb\n").bad_description.startswith("its description is the int 42")
    assert card(b"---\nname: n\ndescription: 0\n---\nbody line\n").description == "body line"
    assert card(b"\xff\xfe").unreadable == "SKILL.md is not UTF-8 text, which Hermes skips"
    deep = card(("---\nname: deep\nmetadata: " + "[" * 40 + "]" * 40 + "\n---\nb\n").encode())
    assert deep.unreadable and "deeper" in deep.unreadable
