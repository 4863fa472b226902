"""Byte-identical brains (issue 19, item 5; docs/lineage.md §4.2, ADR 20): a brain made with
``--versions store`` keeps every SKILL.md as written, versions living only in the store's
``versions`` record, while ``skill list``, ``skill_view`` and the audit still give versions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ledger.agent.tools import SkillTools
from ledger.brain import Brain
from tests.harness.cli import run_in_process

# CRLF, comments, a flow list, unknown keys, an author's own metadata.version, no final newline.
WILD = (
    b"---\r\nname: wild  # the folder's name\r\ndescription: Kept as written.\r\ntags: [a, b]\r\n"
    b"x-vendor: {deep: [1, 2]}\r\nmetadata:\r\n  version: '1.0'\r\n  author: someone\r\n---\r\n"
    b"# Body\r\n\r\nText with trailing spaces   \r\n"
)
PLAIN = b"---\nname: plain\ndescription: No counter anywhere.\n---\nbody\n"


def _tree(root: Path) -> Path:
    src = root / "src"
    (src / "wild" / "assets").mkdir(parents=True)
    (src / "wild" / "SKILL.md").write_bytes(WILD)
    (src / "wild" / "assets" / "logo.png").write_bytes(bytes(range(256)) * 3)
    (src / "wild" / "LICENSE.txt").write_bytes(b"MIT\r\n")
    (src / "wild" / "scripts").mkdir()
    (src / "wild" / "scripts" / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(src / "wild" / "scripts" / "run.sh", 0o755)
    (src / "plain").mkdir()
    (src / "plain" / "SKILL.md").write_bytes(PLAIN)
    return src


def _ledger(brain: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_in_process("--brain", str(brain), *args, check=check)


def test_import_then_export_is_byte_identical_skill_md_included(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    brain = tmp_path / "b"
    run_in_process("init", str(brain), "--versions", "store", check=True)
    _ledger(brain, "import", str(src))
    _ledger(brain, "export", str(tmp_path / "out"))
    diff = subprocess.run(["diff", "-r", str(src), str(tmp_path / "out")], capture_output=True, text=True)
    assert diff.returncode == 0 and diff.stdout == "", diff.stdout
    assert os.stat(tmp_path / "out" / "wild" / "scripts" / "run.sh").st_mode & 0o100
    assert (brain / "skills" / "wild" / "SKILL.md").read_bytes() == WILD  # the working tree too
    # The default brain inserts its counter: the same import is not byte-identical there.
    other = tmp_path / "default"
    run_in_process("init", str(other), check=True)
    _ledger(other, "import", str(src))
    assert (other / "skills" / "plain" / "SKILL.md").read_bytes() != PLAIN


def test_a_support_file_change_leaves_skill_md_alone_and_versions_still_count(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    brain = tmp_path / "b"
    run_in_process("init", str(brain), "--versions", "store", check=True)
    _ledger(brain, "import", str(src))
    note = tmp_path / "note.md"
    note.write_text("more\n")
    out = _ledger(brain, "skill", "write-file", "wild", "references/note.md", "--from", str(note)).stdout
    assert "write-file wild v2" in out
    git = ["git", "-C", str(brain)]
    blobs = [
        subprocess.run(
            [*git, "rev-parse", f"{rev}:skills/wild/SKILL.md"], capture_output=True, text=True, check=True
        ).stdout
        for rev in ("HEAD~1", "HEAD")
    ]
    assert blobs[0] == blobs[1]
    assert (
        subprocess.run([*git, "cat-file", "blob", "HEAD:versions"], capture_output=True, check=True).stdout
        == b"plain 1\nwild 2\n"
    )
    assert "wild" in _ledger(brain, "skill", "list").stdout.split("v2")[0]
    listed = {s["name"]: s["version"] for s in json.loads(_ledger(brain, "skill", "list", "--json").stdout)}
    assert listed == {"plain": 1, "wild": 2}


def test_a_hand_edit_snapshot_bumps_the_listed_version_without_touching_the_file(tmp_path: Path) -> None:
    """The stat cache's answer for 'skill list' must not outlive the head it was read for: a snapshot
    of a hand edit bumps the version while the files on disk stay as they are."""
    brain = tmp_path / "b"
    run_in_process("init", str(brain), "--versions", "store", check=True)
    _ledger(brain, "skill", "create", "a", "--description", "A.", "--body", "one\n")
    text = (brain / "skills" / "a" / "SKILL.md").read_text()
    assert "version" not in text  # create authors no counter either
    (brain / "skills" / "a" / "SKILL.md").write_text(text.replace("one", "two"))
    assert "v1" in _ledger(brain, "skill", "list").stdout  # listed (and cached) before the snapshot
    edited = (brain / "skills" / "a" / "SKILL.md").read_bytes()
    _ledger(brain, "snapshot")
    assert (brain / "skills" / "a" / "SKILL.md").read_bytes() == edited
    assert "v2" in _ledger(brain, "skill", "list").stdout
    assert json.loads(_ledger(brain, "skill", "view", "a", "--json").stdout)["version"] == 2
    _ledger(brain, "revert", "a", "--to", "1")
    assert "v3" in _ledger(brain, "skill", "list").stdout
    assert _ledger(brain, "audit", str(brain)).returncode == 0


def test_agent_tools_report_the_stored_version(tmp_path: Path) -> None:
    brain = tmp_path / "b"
    run_in_process("init", str(brain), "--versions", "store", check=True)
    with Brain.open(brain) as b:
        tools = SkillTools(b)
        made = tools.skill_manage("create", "fmt", content="---\nname: fmt\ndescription: Format code.\n---\nRun it.\n")
        assert made["success"] and made["receipt"]["version"] == 1
        tools.skill_manage("patch", "fmt", old_string="Run it.", new_string="Run it twice.")
        view = tools.skill_view("fmt")
        assert view["version"] == 2 and view["receipt"]["version"] == 2
        assert view["content"].endswith("Run it twice.\n") and "version" not in view["content"]
        assert [s["version"] for s in tools.skills_list()["skills"]] == [2]
        assert b._versions.mode(b.head()) == "store"


def test_the_setting_is_chosen_on_an_empty_brain_and_kept(tmp_path: Path) -> None:
    src = _tree(tmp_path)
    brain = tmp_path / "b"
    run_in_process("init", str(brain), check=True)
    dry = _ledger(brain, "import", str(src), "--versions", "store", "--dry-run")
    assert dry.returncode == 0
    with Brain.open(brain) as b:
        assert b._versions.mode(b.head()) == "frontmatter"  # a dry run chooses nothing
    _ledger(brain, "import", str(src), "--versions", "store")
    assert (brain / "skills" / "wild" / "SKILL.md").read_bytes() == WILD
    back = _ledger(brain, "import", str(src), "--versions", "frontmatter", check=False)
    assert back.returncode == 1 and "for its whole lineage" in back.stderr
    full = tmp_path / "full"
    run_in_process("init", str(full), check=True)
    _ledger(full, "skill", "create", "x", "--description", "X.")
    late = _ledger(full, "import", str(src), "--versions", "store", check=False)
    assert late.returncode == 1 and "only while the brain is empty" in late.stderr and "hint:" in late.stderr
    assert _ledger(brain, "audit", str(brain)).returncode == 0
    # A clone keeps the setting: it is in the store, not in a local config.
    run_in_process("clone", str(brain), str(tmp_path / "c"), check=True)
    note = tmp_path / "n.md"
    note.write_text("n\n")
    _ledger(tmp_path / "c", "skill", "write-file", "plain", "references/n.md", "--from", str(note))
    assert (tmp_path / "c" / "skills" / "plain" / "SKILL.md").read_bytes() == PLAIN
    assert "v2" in _ledger(tmp_path / "c", "skill", "list").stdout
