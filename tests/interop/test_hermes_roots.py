"""Hermes's two bundled roots, `skills/` and `optional-skills/`, in and out of a brain.

Hermes's own `skills/dogfood/` is a skill that also holds skills (`dogfood/wrap-up/SKILL.md`), and
`optional-skills/dogfood/` is a category, so a brain holding both lays them out in one folder, as a
Hermes home that installed both does. Importing the roots in either order, or at once, gives one
brain; export writes it as Hermes lays it out and re-import gives the same brain again. What cannot
be one Hermes tree is refused before anything is written (import: before any snapshot; export:
before DEST exists), and an export that fails part-way leaves nothing in DEST, staging included.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.harness.brains import make_brain, skill_md
from tests.harness.cli import LEDGER, run_ledger
from tests.harness.wait import until
from tests.interop.test_hermes_compare import _hermes_python

WALK = """
import json, sys
from pathlib import Path
from agent.skill_utils import iter_skill_index_files
root = Path(sys.argv[1])
print(json.dumps(sorted([p.parent.name, "/".join(p.relative_to(root).parts[:-2]) or None]
                        for p in iter_skill_index_files(root, "SKILL.md"))))
"""


def _skill(path: Path, body: str = "") -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(skill_md(path.name, f"The {path.name} skill.", f"{body}\n"))


def _description(folder: Path, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "DESCRIPTION.md").write_text(f"---\ndescription: {text}\n---\n")


def _roots(home: Path, dogfood: str = "top") -> tuple[Path, Path]:
    """Hermes's trees as the repository ships them: `skills/dogfood` a skill holding skills (or, with
    ``dogfood="testing"``, one inside category `testing`), and `optional-skills/dogfood` a category."""
    skills, optional = home / "skills", home / "optional-skills"
    base = skills if dogfood == "top" else skills / dogfood
    if dogfood != "top":
        _description(base, "Testing.")
    _skill(base / "dogfood", "Dogfood the agent.")
    (base / "dogfood" / "references").mkdir()
    (base / "dogfood" / "references" / "issue-taxonomy.md").write_text("# Issues\n")
    (base / "dogfood" / "templates").mkdir()
    (base / "dogfood" / "templates" / "report.md").write_text("# Report\n")
    _skill(base / "dogfood" / "references" / "old" / "pkg")  # in a support folder: the skill's file, never a skill
    _skill(base / "dogfood" / "wrap-up")
    _skill(base / "dogfood" / "continue-sessions")
    _description(skills / "research", "Research.")
    _skill(skills / "research" / "arxiv")
    (skills / "DESCRIPTION.md").write_text("---\ndescription: Bundled skills.\n---\n")  # Hermes's "general"
    _description(optional / "dogfood", "Dogfooding.")
    _skill(optional / "dogfood" / "adversarial-ux-test")
    _skill(optional / "research" / "papers")
    return skills, optional


def _brain(path: Path) -> Path:
    return make_brain(path, via="cli")


def _ledger(brain: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_ledger("--brain", str(brain), *args, env=env)


def _commits(brain: Path) -> int:
    out = subprocess.run(["git", "-C", str(brain), "rev-list", "--count", "main"], capture_output=True, text=True)
    return int(out.stdout)


def _state(brain: Path) -> tuple[list, list, dict[str, bytes]]:
    """What a brain holds, as its user sees it: the skill list, each category's members, and the
    category files byte for byte."""
    listing = json.loads(_ledger(brain, "skill", "list", "--json").stdout)
    members = sorted((s["category"] or "", s["name"]) for s in listing)
    git = ["git", "-C", str(brain)]
    paths = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", "main", "categories"], capture_output=True, text=True, check=True
    ).stdout.split()
    files = {p: subprocess.run([*git, "show", f"main:{p}"], capture_output=True, check=True).stdout for p in paths}
    return listing, members, files


def _files(tree: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(tree).as_posix(): (p.read_bytes(), p.stat().st_mode) for p in tree.rglob("*") if p.is_file()}


def _debris(out: Path) -> list[str]:
    """Anything an export may leave behind: staging inside DEST, a build folder beside it."""
    inside = [str(p) for p in out.rglob(".ledger-*")] if out.exists() else []
    return inside + [str(p) for p in out.parent.glob(f".{out.name}.ledger-export-*")]


def _hermes_sees(tree: Path) -> list:
    """Every skill Hermes's own walker finds under ``tree`` (folder name, category path)."""
    proc = subprocess.run(
        [str(_hermes_python()), "-c", WALK, str(tree)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HERMES_HOME": str(tree.parent / "hermes-home")},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


EXPECTED = [
    ("", "dogfood"),
    ("dogfood", "adversarial-ux-test"),
    ("dogfood", "continue-sessions"),
    ("dogfood", "wrap-up"),
    ("research", "arxiv"),
    ("research", "papers"),
]


@pytest.mark.parametrize("order", ["skills-first", "optional-first", "at-once"])
def test_both_roots_in_any_order_give_one_brain_that_exports_as_hermes_lays_it_out(tmp_path: Path, order: str) -> None:
    skills, optional = _roots(tmp_path / "hermes-agent")
    brain = _brain(tmp_path / "b")
    sources = {
        "skills-first": [[skills], [optional]],
        "optional-first": [[optional], [skills]],
        "at-once": [[skills, optional]],
    }[order]
    for batch in sources:
        proc = _ledger(brain, "import", *map(str, batch))
        assert proc.returncode == 0, proc.stderr
    listing, members, files = _state(brain)
    assert members == EXPECTED
    assert sorted(files) == [
        "categories/.ledger-categories.json",
        "categories/DESCRIPTION.md",
        "categories/dogfood/DESCRIPTION.md",
        "categories/research/DESCRIPTION.md",
    ]
    stored = sorted(
        p.relative_to(brain / "skills" / "dogfood").as_posix()
        for p in (brain / "skills" / "dogfood").rglob("*")
        if p.is_file()
    )
    assert stored == ["SKILL.md", "references/issue-taxonomy.md", "references/old/pkg/SKILL.md", "templates/report.md"]

    out = tmp_path / "out"
    proc = _ledger(brain, "export", str(out), "--layout", "hermes")
    assert proc.returncode == 0, proc.stderr
    assert _debris(out) == []
    for rel in (
        "dogfood/SKILL.md",
        "dogfood/DESCRIPTION.md",
        "dogfood/wrap-up/SKILL.md",
        "dogfood/adversarial-ux-test/SKILL.md",
        "dogfood/references/old/pkg/SKILL.md",
        "DESCRIPTION.md",
    ):
        assert (out / rel).is_file(), rel
    seen = _hermes_sees(out)
    assert sorted((c or "", n) for n, c in seen) == EXPECTED

    again = _brain(tmp_path / "again")
    proc = _ledger(again, "import", str(out))
    assert proc.returncode == 0, proc.stderr
    assert _state(again) == (listing, members, files)
    out2 = tmp_path / "out2"
    assert _ledger(again, "export", str(out2), "--layout", "hermes").returncode == 0
    assert _files(out2) == _files(out)


def test_the_orders_agree_and_a_categorised_dogfood_round_trips(tmp_path: Path) -> None:
    roots = set()
    for n, order in enumerate(([0], [1], [0, 1])):  # skills/ first, optional-skills/ first, both at once
        pair = [str(p) for p in _roots(tmp_path / f"src{n}", dogfood="testing")]
        brain = _brain(tmp_path / f"b{n}")
        for batch in ([pair[order[0]]], [pair[1 - order[0]]]) if len(order) == 1 else (pair,):
            assert _ledger(brain, "import", *batch).returncode == 0
        _, members, _ = _state(brain)
        assert ("testing", "dogfood") in members and ("testing/dogfood", "wrap-up") in members
        assert ("dogfood", "adversarial-ux-test") in members
        roots.add(json.loads(_ledger(brain, "log", "--json").stdout)[0]["root"])
        out = tmp_path / f"out{n}"
        assert _ledger(brain, "export", str(out), "--layout", "hermes").returncode == 0
        assert (out / "testing" / "dogfood" / "wrap-up" / "SKILL.md").is_file() and _debris(out) == []
        back = _brain(tmp_path / f"back{n}")
        assert _ledger(back, "import", str(out)).returncode == 0
        assert _state(back) == _state(brain)
    assert len(roots) == 1


def _conflicting(home: Path) -> tuple[Path, Path]:
    """Two roots that cannot be one Hermes tree: skill `dogfood` carries its own DESCRIPTION.md and a
    folder `wrap-up/` of its files, where the other root's category `dogfood` has its description and
    skill `wrap-up`; and a category skill inside the skill's `references/`, which Hermes never lists."""
    skills, optional = home / "skills", home / "optional-skills"
    _skill(skills / "dogfood")
    (skills / "dogfood" / "DESCRIPTION.md").write_text("the skill's own notes\n")
    (skills / "dogfood" / "wrap-up").mkdir()
    (skills / "dogfood" / "wrap-up" / "notes.md").write_text("notes\n")
    _description(optional / "dogfood", "Dogfooding.")
    _skill(optional / "dogfood" / "wrap-up")
    _skill(optional / "dogfood" / "references" / "hidden")
    return skills, optional


def test_roots_that_cannot_be_one_tree_are_refused_before_any_snapshot_or_write(tmp_path: Path) -> None:
    skills, optional = _conflicting(tmp_path / "src")
    brain = _brain(tmp_path / "b")
    before = _commits(brain)
    proc = _ledger(brain, "import", str(skills), str(optional))
    assert proc.returncode == 1 and _commits(brain) == before
    for words in ("dogfood/DESCRIPTION.md", "dogfood/wrap-up/", "references/ folder", str(skills / "dogfood")):
        assert words in proc.stderr, (words, proc.stderr)
    assert "nothing was imported" in proc.stderr

    # One at a time, each root is a tree of its own; the brain they make together is refused by export
    # before DEST exists, naming both sides, and a move settles it.
    assert _ledger(brain, "import", str(skills)).returncode == 0
    assert _ledger(brain, "import", str(optional)).returncode == 0
    out = tmp_path / "out"
    proc = _ledger(brain, "export", str(out), "--layout", "hermes")
    assert proc.returncode == 1 and not out.exists() and _debris(out) == []
    assert "nothing was written" in proc.stderr and "ledger skill move" in proc.stderr
    assert "dogfood/DESCRIPTION.md would be both skill dogfood's file DESCRIPTION.md and category file" in proc.stderr
    assert "skill dogfood's file wrap-up/notes.md would be inside skill wrap-up's folder" in proc.stderr
    assert "skill hidden would be written at dogfood/references/hidden/" in proc.stderr
    out.mkdir()  # an empty DEST made by the user stays as it was
    assert _ledger(brain, "export", str(out), "--layout", "hermes").returncode == 1
    assert list(out.iterdir()) == [] and _debris(out) == []

    assert _ledger(brain, "skill", "move", "dogfood", "testing").returncode == 0
    assert _ledger(brain, "export", str(out), "--layout", "hermes").returncode == 0
    assert (out / "testing" / "dogfood" / "wrap-up" / "notes.md").is_file()
    assert (out / "dogfood" / "wrap-up" / "SKILL.md").is_file() and _debris(out) == []
    back = _brain(tmp_path / "back")
    assert _ledger(back, "import", str(out)).returncode == 0
    assert _state(back) == _state(brain)


def test_a_skill_two_roots_hold_is_refused_whole_naming_both(tmp_path: Path) -> None:
    skills, optional = tmp_path / "skills", tmp_path / "optional-skills"
    _skill(skills / "research" / "arxiv")
    _skill(skills / "research" / "papers")
    _skill(optional / "science" / "papers")
    brain = _brain(tmp_path / "b")
    before = _commits(brain)
    proc = _ledger(brain, "import", str(skills), str(optional))
    assert proc.returncode == 1 and _commits(brain) == before
    assert str(skills / "research" / "papers") in proc.stderr and str(optional / "science" / "papers") in proc.stderr


def test_an_export_failing_part_way_leaves_nothing_in_dest(tmp_path: Path) -> None:
    skills, optional = _roots(tmp_path / "src")
    brain = _brain(tmp_path / "b")
    assert _ledger(brain, "import", str(skills), str(optional)).returncode == 0
    gate = tmp_path / "gate"

    def paused(out: Path, meddle) -> subprocess.CompletedProcess[str]:
        """Export to ``out``, and ``meddle`` while it has placed its first skill."""
        env = {"LEDGER_PAUSEPOINT": "export-placed", "LEDGER_PAUSE_FILE": str(gate)}
        proc = subprocess.Popen(
            [LEDGER, "--brain", str(brain), "export", str(out), "--layout", "hermes"],
            env={**os.environ, **env},
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        until(Path(f"{gate}.ready").exists, timeout=60, what="the pause at export-placed", alive=proc)
        meddle()
        os.unlink(f"{gate}.ready")
        gate.unlink()
        stdout, stderr = proc.communicate(timeout=120)
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)

    # DEST made by someone else while the export runs: it is left as they made it, with nothing of ours.
    out = tmp_path / "out"
    proc = paused(out, lambda: (out.mkdir(), (out / "theirs.txt").write_text("x")))
    assert proc.returncode == 1 and "appeared while exporting" in proc.stderr
    assert [p.name for p in out.iterdir()] == ["theirs.txt"] and _debris(out) == []

    # Something appears where the next skill goes: nothing is left, DEST is never made.
    out = tmp_path / "out2"

    def plant() -> None:
        (build,) = out.parent.glob(f".{out.name}.ledger-export-*")
        (build / "dogfood" / "continue-sessions").write_text("in the way\n")

    proc = paused(out, plant)
    assert proc.returncode == 1 and "appeared while exporting" in proc.stderr, proc.stderr
    assert not out.exists() and _debris(out) == []

    # Killed part-way: DEST is never half written; the next export clears what the killed one left.
    out = tmp_path / "out3"
    killed = _ledger(brain, "export", str(out), "--layout", "hermes", env={"LEDGER_CRASHPOINT": "export-placed"})
    assert killed.returncode == 86 and not out.exists()
    assert len(list(out.parent.glob(f".{out.name}.ledger-export-*"))) == 1
    assert _ledger(brain, "export", str(out), "--layout", "hermes").returncode == 0
    assert _debris(out) == [] and (out / "dogfood" / "wrap-up" / "SKILL.md").is_file()

    # An empty DEST the user made keeps its mode.
    out = tmp_path / "out4"
    out.mkdir(mode=0o750)
    os.chmod(out, 0o750)
    assert _ledger(brain, "export", str(out), "--layout", "agentskills").returncode == 0
    assert (out.stat().st_mode & 0o777) == 0o750 and (out / "wrap-up" / "SKILL.md").is_file() and _debris(out) == []


def test_a_skill_holding_another_skill_md_is_refused_for_hermes_not_listed_twice(tmp_path: Path) -> None:
    """A skill recorded whole from a flat folder (`examples/demo/SKILL.md` among its files) would be two
    skills to Hermes; export refuses it for that layout and writes it in the others."""
    src = tmp_path / "flat"
    _skill(src / "guide")
    _skill(src / "guide" / "examples" / "demo")
    brain = _brain(tmp_path / "b")
    assert _ledger(brain, "import", str(src), "--layout", "agentskills").returncode == 0
    out = tmp_path / "out"
    proc = _ledger(brain, "export", str(out), "--layout", "hermes")
    assert proc.returncode == 1 and not out.exists() and _debris(out) == []
    assert "skill guide's file examples/demo/SKILL.md would be listed by Hermes as a skill of its own" in proc.stderr
    assert _ledger(brain, "export", str(out), "--layout", "agentskills").returncode == 0


def test_a_hermes_home_holding_both_roots_and_an_optional_root_alone(tmp_path: Path) -> None:
    """`ledger import ~/.hermes` reads its skills/ and says what it passed over; optional-skills/ (no
    category DESCRIPTION.md, as most of Hermes's have none) is found as a Hermes tree by itself, and the
    ledger's own staging in a home is never a category."""
    home = tmp_path / "hermes-agent"
    skills, optional = _roots(home)
    (optional / "dogfood" / "DESCRIPTION.md").unlink()
    _skill(skills / ".ledger-staging" / "0123abcd" / "stale")
    brain = _brain(tmp_path / "b")
    proc = _ledger(brain, "import", str(home), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert sorted(r["skill"] for r in report["skills"]) == ["arxiv", "continue-sessions", "dogfood", "wrap-up"]
    assert any(str(optional) in s and "holds skills" in s for s in report["skipped"]), report["skipped"]
    proc = _ledger(brain, "import", str(optional), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["layout"] == "hermes" and sorted(r["skill"] for r in report["skills"]) == [
        "adversarial-ux-test",
        "papers",
    ]
    _, members, files = _state(brain)
    assert members == EXPECTED and not any(".ledger-staging" in p for p in files)


def test_an_export_written_in_place_removes_only_its_own_on_failure(tmp_path: Path, monkeypatch) -> None:
    """DEST a mount point, or in a folder the user cannot write: the export is written into DEST itself
    (the one case without a build folder beside it), and a failure part-way removes what it made there,
    staging included, and nothing another process put there meanwhile."""
    from ledger.brain import Brain
    from ledger.folders import export as exporting
    from ledger.folders.folder import TargetFS

    skills, optional = _roots(tmp_path / "src")
    brain = _brain(tmp_path / "b")
    assert _ledger(brain, "import", str(skills), str(optional)).returncode == 0
    out = tmp_path / "out"
    out.mkdir()
    real_access, real_place = os.access, TargetFS.place_new
    monkeypatch.setattr(exporting.os, "access", lambda p, m: False if Path(p) == tmp_path else real_access(p, m))
    calls = []

    def place_new(fs: TargetFS, staged: str, rel: str) -> bool:
        calls.append(rel)
        assert fs.path == os.path.realpath(out)  # in DEST itself, not beside it
        if len(calls) == 3:
            (out / "theirs.txt").write_text("someone else's\n")
            raise OSError(28, "No space left on device")
        return real_place(fs, staged, rel)

    monkeypatch.setattr(TargetFS, "place_new", place_new)
    with Brain.open(brain) as b, pytest.raises(Exception, match="No space left on device"):
        exporting.export(b.store, b.head().commit, out, "hermes")
    assert [p.name for p in out.iterdir()] == ["theirs.txt"] and _debris(out) == []
    monkeypatch.setattr(TargetFS, "place_new", real_place)
    (out / "theirs.txt").unlink()
    with Brain.open(brain) as b:
        exporting.export(b.store, b.head().commit, out, "hermes")
    assert (out / "dogfood" / "wrap-up" / "SKILL.md").is_file() and _debris(out) == []
