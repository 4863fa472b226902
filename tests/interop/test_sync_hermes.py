"""A real runtime's own tool edits a linked Hermes folder: the PyPI ``hermes-agent`` package's
``skill_manage`` (in its own virtual environment, as in tests/interop/test_hermes_compare.py) patches a
skill the ledger projected; ``ledger sync`` records exactly that change as a new version,
attributed to Hermes, and carries it to the other targets (issue 22)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ledger.brain import Brain
from tests.harness.cli import run_ledger
from tests.interop.test_hermes_compare import _hermes_python

DRIVER = """
import json, sys
from tools.skill_manager_tool import skill_manage
print(json.dumps([json.loads(skill_manage(**kw)) for kw in json.load(sys.stdin)]))
"""


def test_hermes_skill_manage_edits_become_versions(tmp_path: Path) -> None:
    python = _hermes_python()
    hermes_home = tmp_path / "hermes-home"
    env = {"HOME": str(tmp_path / "home"), "HERMES_HOME": str(hermes_home)}
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True, env=env)
    run_ledger(
        "--brain",
        str(brain),
        "skill",
        "create",
        "arxiv",
        "--description",
        "Find papers on arXiv.",
        "--body",
        "Search arXiv.\n\nRead the abstract.\n",
        "--category",
        "research",
        check=True,
        env=env,
    )
    run_ledger("--brain", str(brain), "target", "add", "hermes", check=True, env=env)
    run_ledger(
        "--brain", str(brain), "target", "add", str(tmp_path / "claude"), "--name", "claude", check=True, env=env
    )
    run_ledger("--brain", str(brain), "sync", check=True, env=env)
    md = hermes_home / "skills/research/arxiv/SKILL.md"
    assert md.is_file()
    with Brain.open(brain) as b:
        before = b.committed("arxiv")[1]
    calls = [
        {
            "action": "patch",
            "name": "arxiv",
            "old_string": "Read the abstract.",
            "new_string": "Read the abstract, then the method.",
        },
        {"action": "write_file", "name": "arxiv", "file_path": "references/api.md", "file_content": "# arXiv API\n"},
    ]
    proc = subprocess.run(
        [str(python), "-c", DRIVER],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert all(r.get("success") for r in results), results
    hermes_md = md.read_text()
    out = json.loads(run_ledger("--brain", str(brain), "sync", "--json", check=True, env=env).stdout)
    by = {t["name"]: t for t in out["targets"]}
    assert by["hermes"]["recorded"] == [{"skill": "arxiv", "version": before.version + 1, "action": "updated"}]
    with Brain.open(brain) as b:
        files, doc = b.committed("arxiv")
        snap = next(iter(b.store.lineage()))
        # Exactly Hermes's change: its SKILL.md with the ledger's version value, and its new file.
        assert doc.text == b.version_doc(b.head(), hermes_md).with_counter(before.version + 1)
        assert sorted(files) == ["SKILL.md", "references/api.md"]
        assert b.read_blob(files["references/api.md"][1]) == b"# arXiv API\n"
    assert snap.operation == "sync" and snap.changes[0].skill == "arxiv"
    assert snap.attribution["runtime"] == "hermes" and snap.attribution["actor"] == "agent"
    assert snap.attribution["target"] == str(hermes_home / "skills")
    claude = tmp_path / "claude/arxiv"
    assert "then the method." in (claude / "SKILL.md").read_text()
    assert (claude / "references/api.md").read_text() == "# arXiv API\n"
    run_ledger("--brain", str(brain), "verify", check=True, env=env)
