"""A Hermes home as Hermes sees it (issue 33): category moves, the same name in two categories,
names Hermes accepts, and category ``DESCRIPTION.md`` files, each kept in step by ``ledger sync``.

The rules come from hermes-agent's own code, cited in docs/layouts.md.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ledger.brain import Brain
from tests.test_sync import _ledger, _setup, _sync
from tests.test_sync_edge import _head, _verify


def _home(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A brain with ``alpha`` in category ``tools`` (and its DESCRIPTION.md), linked to a Hermes home."""
    src = tmp_path / "src"
    (src / "tools/alpha").mkdir(parents=True)
    (src / "tools/DESCRIPTION.md").write_text("---\ndescription: Tools of the trade.\n---\n")
    (src / "tools/alpha/SKILL.md").write_text("---\nname: alpha\ndescription: Do alpha.\n---\n# alpha\n")
    brain, env = _setup(tmp_path)
    _ledger(brain, env, "import", str(src), "--layout", "hermes")
    home = tmp_path / "hermes"
    _ledger(brain, env, "link", str(home), "--layout", "hermes", "--name", "hermes")
    _sync(brain, env)
    return brain, env, home


def _category(brain: Path, name: str) -> str | None:
    with Brain.open(brain) as b:
        return b.categories.of().get(name)


def _category_file(brain: Path, rel: str) -> bytes | None:
    from ledger.exchange.recording import Recorder

    with Brain.open(brain) as b:
        return Recorder(b, lambda *_: None)._category_files().get(rel)


def test_a_category_move_is_recorded_as_one_move(tmp_path: Path) -> None:
    brain, env, home = _home(tmp_path)
    assert (home / "tools/alpha/SKILL.md").exists() and (home / "tools/DESCRIPTION.md").exists()
    (home / "research").mkdir()
    (home / "tools/alpha").rename(home / "research/alpha")
    before = _head(brain)
    report = _sync(brain, env)
    assert [r["action"] for r in report["targets"][0]["recorded"]] == ["moved to research"]
    assert _category(brain, "alpha") == "research"
    with Brain.open(brain) as b:
        snap = b.store.snapshot(b.head().commit)
        assert snap.operation == "sync" and not snap.changes  # no version, no delete and create
        assert list(snap.parents) == [before]  # one snapshot
    assert _sync(brain, env)["targets"][0]["recorded"] == []  # in step
    _verify(brain, env)


def test_the_same_name_in_two_categories_is_a_conflict(tmp_path: Path) -> None:
    brain, env, home = _home(tmp_path)
    (home / "other/alpha").mkdir(parents=True)
    (home / "other/alpha/SKILL.md").write_text("---\nname: alpha\ndescription: Another alpha.\n---\nother\n")
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "# alpha", "--new", "# alpha, v2")
    head = _head(brain)
    report = _sync(brain, env, code=1)
    c = report["targets"][0]["conflicts"]
    assert [x["skill"] for x in c] == ["alpha"] and c[0]["dirs"] == ["other/alpha", "tools/alpha"], c
    assert "alpha, v2" not in (home / "tools/alpha/SKILL.md").read_text()  # nothing projected meanwhile
    assert _head(brain) == head
    status = _ledger(brain, env, "status", check=False).stdout
    assert "alpha" in status and "conflict" in status
    shutil.rmtree(home / "other")
    report = _sync(brain, env)
    assert report["conflicts"] == 0 and "alpha, v2" in (home / "tools/alpha/SKILL.md").read_text()


def test_names_hermes_accepts_are_recorded_under_their_slug(tmp_path: Path) -> None:
    brain, env, home = _home(tmp_path)
    (home / "tools/my_tool.v2").mkdir()
    (home / "tools/my_tool.v2/SKILL.md").write_text("---\nname: my_tool.v2\ndescription: Dotted.\n---\nbody\n")
    (home / "tools/Ünïcode").mkdir()  # Hermes itself refuses this name (^[a-z0-9][a-z0-9._-]*$)
    (home / "tools/Ünïcode/SKILL.md").write_text("---\nname: x\ndescription: x\n---\n")
    (home / "tools/_").mkdir()
    (home / "tools/_/SKILL.md").write_text("---\nname: y\ndescription: y\n---\n")
    report = _sync(brain, env, code=1)
    t = report["targets"][0]
    assert {r["skill"] for r in t["recorded"]} == {"my-tool-v2", "unicode"}, t
    alone = {a["dir"]: a["reason"] for a in t["left_alone"]}
    assert "cannot be a skill key" in alone["tools/_"], alone
    assert _category(brain, "my-tool-v2") == "tools"
    # The folder stays as Hermes named it, and the ledger's edits go there.
    _ledger(brain, env, "skill", "patch", "my-tool-v2", "--old", "body", "--new", "body, edited")
    _sync(brain, env, code=1)
    assert "body, edited" in (home / "tools/my_tool.v2/SKILL.md").read_text()
    assert not (home / "my-tool-v2").exists() and not (home / "tools/my-tool-v2").exists()
    _verify(brain, env)


def test_category_files_are_projected_recorded_and_kept_in_conflict(tmp_path: Path) -> None:
    brain, env, home = _home(tmp_path)
    desc = home / "tools/DESCRIPTION.md"
    assert desc.read_text() == "---\ndescription: Tools of the trade.\n---\n"
    desc.write_text("---\ndescription: Tools, sharpened.\n---\n")  # edited in the home
    report = _sync(brain, env)
    assert [r["action"] for r in report["targets"][0]["recorded"]] == ["category file recorded"]
    assert _category_file(brain, "tools/DESCRIPTION.md") == desc.read_bytes()
    # A second home gets it.
    other = tmp_path / "hermes2"
    _ledger(brain, env, "link", str(other), "--layout", "hermes", "--name", "hermes2")
    _sync(brain, env)
    assert (other / "tools/DESCRIPTION.md").read_bytes() == desc.read_bytes()
    # Both homes edit it: the first is recorded, the second is then in conflict, both copies stay.
    desc.write_text("---\ndescription: One.\n---\n")
    (other / "tools/DESCRIPTION.md").write_text("---\ndescription: Two.\n---\n")
    report = _sync(brain, env, code=1)
    assert report["conflicts"] == 1
    assert (other / "tools/DESCRIPTION.md").read_text() == "---\ndescription: Two.\n---\n"
    assert _category_file(brain, "tools/DESCRIPTION.md") == b"---\ndescription: One.\n---\n"
    done = _ledger(brain, env, "resolve", "categories/tools/DESCRIPTION.md", "--take", "hermes2", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _category_file(brain, "tools/DESCRIPTION.md") == b"---\ndescription: Two.\n---\n"
    _sync(brain, env)
    assert desc.read_text() == "---\ndescription: Two.\n---\n"
    _verify(brain, env)
