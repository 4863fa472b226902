"""A Hermes home as Hermes sees it (issue 33): category moves, the same name in two categories,
names Hermes accepts, and category ``DESCRIPTION.md`` files, each kept in step by ``ledger sync``.

The rules come from hermes-agent's own code, cited in docs/layouts.md.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ledger.brain import Brain
from tests.reliability.test_sync_edge import _append, _head, _verify
from tests.unit.sync.test_sync import _ledger, _setup, _sync

ALPHA = {
    "tools/DESCRIPTION.md": "---\ndescription: Tools of the trade.\n---\n",
    "tools/alpha/SKILL.md": "---\nname: alpha\ndescription: Do alpha.\n---\n# alpha\n",
}


def _home(tmp_path: Path, files: dict[str, str] = ALPHA, *, sync: bool = True) -> tuple[Path, dict[str, str], Path]:
    """A brain imported from ``files`` in Hermes's layout (default: ``alpha`` in category ``tools``, with
    its DESCRIPTION.md), linked to a Hermes home and, with ``sync``, synced once."""
    src = tmp_path / "src"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    brain, env = _setup(tmp_path)
    _ledger(brain, env, "import", str(src), "--layout", "hermes")
    home = tmp_path / "hermes"
    _ledger(brain, env, "link", str(home), "--layout", "hermes", "--name", "hermes")
    if sync:
        _sync(brain, env)
    return brain, env, home


def _category(brain: Path, name: str) -> str | None:
    with Brain.open(brain) as b:
        return b.categories.of().get(name)


def _category_file(brain: Path, rel: str) -> bytes | None:
    from ledger.sync.recording import Recorder

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


def test_hermes_lists_exactly_the_brains_skills_in_a_projected_home(tmp_path: Path) -> None:
    """Hermes's own skills_list, run on a home `ledger sync` keeps, shows the brain's skills and no
    working folder of the ledger's, even while a copy is kept aside and a conflict is open."""
    from tests.interop.test_hermes_compare import _hermes_python
    from tests.interop.test_hermes_listing import _hermes

    python = _hermes_python()
    brain, env, home = _home(tmp_path)
    _ledger(brain, env, "skill", "create", "beta", "--description", "Do beta.", "--body", "# beta\n\nStep.\n")
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "# alpha", "--new", "# alpha, L")
    md = home / "tools/alpha/SKILL.md"
    md.write_text(md.read_text().replace("# alpha", "# alpha, T"))
    _sync(brain, env, code=1)  # alpha in conflict, beta projected
    _ledger(brain, env, "resolve", "alpha", "--take", "ledger")  # the home's copy kept aside, in the brain
    listing = _hermes(python, _as_home(home))["listing"]
    with Brain.open(brain) as b:
        mine = sorted(b.head().skills)
    assert sorted(s["name"] for s in listing["skills"]) == mine == ["alpha", "beta"], listing
    assert listing["categories"] == ["tools"], listing


def _as_home(skills: Path) -> Path:
    """A HERMES_HOME whose ``skills`` is the linked folder (Hermes reads ``$HERMES_HOME/skills``)."""
    home = skills.parent / "hermes-home"
    home.mkdir(exist_ok=True)
    link = home / "skills"
    if not link.exists():
        link.symlink_to(skills)
    return home


def test_link_names_a_runtime_folder_after_the_runtime(tmp_path: Path) -> None:
    brain, env = _setup(tmp_path)
    home = Path(env["HOME"])
    (home / ".hermes/skills").mkdir(parents=True)
    (home / ".claude/skills").mkdir(parents=True)
    (tmp_path / "proj/.codex/skills").mkdir(parents=True)
    for where in (home / ".claude/skills", home / ".hermes/skills", tmp_path / "proj/.codex/skills"):
        _ledger(brain, env, "link", str(where))
    import json

    targets = {t["name"]: t for t in json.loads((brain / ".ledger/targets.json").read_text())["targets"]}
    assert set(targets) == {"claude", "hermes", "codex"}, targets
    assert targets["hermes"]["layout"] == "hermes" and targets["hermes"]["runtime"] == "hermes"
    assert targets["claude"]["runtime"] == "claude-code"


def test_every_recording_path_writes_what_verify_accepts(tmp_path: Path) -> None:
    """Each way a sync records (or declines to), followed by `ledger verify` and `ledger audit`: no
    snapshot the ledger writes can fail its own checks, and a pass that records nothing writes none."""
    import subprocess

    brain, env, home = _home(tmp_path)
    for name in ("b1", "b2", "b3", "b4"):
        _ledger(
            brain,
            env,
            "skill",
            "create",
            name,
            "--description",
            f"Do {name}.",
            "--body",
            "Step one.\n\nStep two.\n\nStep three.\n",
        )
    _sync(brain, env)

    def count() -> int:
        return int(
            subprocess.run(
                ["git", "-C", str(brain), "rev-list", "--count", "main"], capture_output=True, text=True, check=True
            ).stdout
        )

    def step(what: str, expect: int, *args: str, code: int = 0) -> None:
        before = count()
        _sync(brain, env, *args, code=code)
        assert count() - before == expect, what
        _verify(brain, env)
        audit = _ledger(brain, env, "audit", str(brain), check=False)
        assert audit.returncode == 0, (what, audit.stdout + audit.stderr)

    (home / "tools/new").mkdir()
    (home / "tools/new/SKILL.md").write_text("---\nname: new\ndescription: Adopted.\n---\nx\n")
    step("a skill made in the home is adopted", 1)
    _append(home / "b1/SKILL.md", "Verbatim.\n")
    step("an edit recorded as it is", 1)
    _ledger(brain, env, "skill", "patch", "b2", "--old", "Step one.", "--new", "Step one, L.")
    _append(home / "b2/SKILL.md", "Merged.\n")
    step("both sides, merged", 1)
    shutil.rmtree(home / "b3")
    step("a deletion", 1)
    (home / "b4/SKILL.md").write_text("---\nname: b4\ndescription: &x y\nmetadata: {a: *x}\n---\n")
    step("a malformed edit: left alone, nothing written", 0, code=1)
    (home / "b4/SKILL.md").write_text("---\nname: b4\ndescription: Fixed.\n---\nStep one.\n")
    (home / "b4/.SKILL.md.swp").write_bytes(b"debris")
    step("fixed, and the debris beside it ignored", 1)
    (home / "b4/notes~").write_bytes(b"more debris")
    step("debris alone: no snapshot", 0)
    (home / "misc").mkdir()
    (home / "b1").rename(home / "misc/b1")
    step("a category move", 1)
    (home / "tools/DESCRIPTION.md").write_text("---\ndescription: Edited.\n---\n")
    step("a category file", 1)
    (home / "tools/DESCRIPTION.md").unlink()
    step("a category file removed", 1)
    _ledger(brain, env, "skill", "patch", "b2", "--old", "Step one, L.", "--new", "Step one, L2.")
    md = home / "b2/SKILL.md"
    md.write_text(md.read_text().replace("Step one, L.", "Step one, T2."))
    step("a conflict: nothing written", 0, code=1)
    step("the target's side taken", 1, "--take", "hermes", "b2")
    shutil.rmtree(home / "b2")
    shutil.rmtree(home / "b4")
    shutil.rmtree(home / "misc")
    shutil.rmtree(home / "tools")
    step("a wiped home: refused, nothing read as deletions", 0, code=1)
    step("put back", 0, "--restore", "hermes")
    shutil.rmtree(home / "b2")
    shutil.rmtree(home / "misc")
    step("deletions confirmed", 1, "--confirm-deletions", "hermes")


def test_a_skill_and_a_category_of_one_name_are_projected_or_said(tmp_path: Path) -> None:
    """`dogfood` is a skill and a category (Hermes's bundled and optional skills): the skill folder is
    placed before the skills inside it; where a category folder is already in the way, it is said."""
    brain, env, home = _home(
        tmp_path,
        {
            "dogfood/SKILL.md": "---\nname: dogfood\ndescription: Eat it.\n---\nx\n",
            "dogfood/inner/SKILL.md": "---\nname: inner\ndescription: Inside.\n---\ny\n",
        },
        sync=False,
    )
    report = _sync(brain, env)
    assert sorted(report["targets"][0]["projected"]) == ["dogfood", "inner"], report
    assert (home / "dogfood/SKILL.md").exists() and (home / "dogfood/inner/SKILL.md").exists()
    report = _sync(brain, env)
    assert report["targets"][0]["recorded"] == [], report  # the nested skill is never read as dogfood's files
    _append(home / "dogfood/inner/SKILL.md", "An edit inside.\n")
    report = _sync(brain, env)
    assert [r["skill"] for r in report["targets"][0]["recorded"]] == ["inner"], report
    # The brain changes dogfood: its folder holds inner, so it is said and left, never carried away.
    _ledger(brain, env, "skill", "patch", "dogfood", "--old", "x", "--new", "x, edited")
    report = _sync(brain, env, code=1)
    alone = {a["dir"]: a["reason"] for a in report["targets"][0]["left_alone"]}
    assert "holds other skills" in alone["dogfood"] and (home / "dogfood/inner/SKILL.md").exists(), report
    other = tmp_path / "hermes2"
    (other / "dogfood").mkdir(parents=True)  # the category is already there, the skill is not
    _ledger(brain, env, "link", str(other), "--layout", "hermes", "--name", "hermes2")
    report = _sync(brain, env, "hermes2", code=1)
    alone = {a["dir"]: a["reason"] for a in report["targets"][0]["left_alone"]}
    assert "holds no SKILL.md" in alone["dogfood"], report
