"""``ledger sync``: the brain projected into runtimes' folders, and their edits recorded back (issue 22).

Every test drives the installed ``ledger`` on real folders; HOME points at a temporary
home, so ``claude`` and ``agents`` resolve to ``HOME/.claude/skills`` and ``HOME/.agents/skills``
as those runtimes document.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ledger.brain import Brain
from tests.harness.brains import make_brain
from tests.harness.cli import LEDGER, run_ledger
from tests.harness.wait import until


def _setup(tmp_path: Path, *skills: str) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    skills_made = {name: (f"Do {name}.", f"# {name}\n\nStep one.\n\nStep two.\n") for name in skills}
    return make_brain(tmp_path / "brain", skills_made, via="cli", env=env), env


def _linked(tmp_path: Path, *skills: str) -> tuple[Path, dict[str, str], Path]:
    """A brain with ``skills``, linked to the folder ``rt`` and synced once."""
    brain, env = _setup(tmp_path, *skills)
    target = tmp_path / "rt"
    _ledger(brain, env, "link", str(target))
    _sync(brain, env)
    return brain, env, target


def _ledger(brain: Path, env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_ledger("--brain", str(brain), *args, env=env, check=check)


def _sync(brain: Path, env: dict[str, str], *args: str, code: int = 0) -> dict:
    proc = _ledger(brain, env, "sync", "--json", *args, check=False)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _body(brain: Path, name: str) -> str:
    with Brain.open(brain) as b:
        return b.committed(name)[1].text


def test_claude_and_agents_layouts_are_projected_and_edits_recorded_back(tmp_path: Path) -> None:
    brain, env = _setup(tmp_path, "alpha", "beta")
    home = Path(env["HOME"])
    (home / ".claude").mkdir()  # Claude Code is "installed" here
    listed = json.loads(_ledger(brain, env, "runtimes", "--json").stdout)
    paths = {r["name"]: r["path"] for r in listed}
    assert paths["claude"] == str(home / ".claude/skills") and paths["agents"] == str(home / ".agents/skills")
    assert next(r for r in listed if r["name"] == "claude")["installed"] is True
    _ledger(brain, env, "link", "claude")
    _ledger(brain, env, "link", "agents")
    report = _sync(brain, env)
    assert {t["name"]: sorted(t["projected"]) for t in report["targets"]} == {
        "claude": ["alpha", "beta"],
        "agents": ["alpha", "beta"],
    }
    claude, agents = home / ".claude/skills", home / ".agents/skills"
    assert (claude / "alpha/SKILL.md").read_bytes() == (agents / "alpha/SKILL.md").read_bytes()
    assert not (claude / "alpha").is_symlink() and not (claude / ".ledger-staging").exists()
    # A person edits alpha in Claude Code's folder and adds a skill in .agents/skills.
    md = claude / "alpha/SKILL.md"
    md.write_text(md.read_text().replace("Step two.", "Step two, carefully."))
    (agents / "gamma/scripts").mkdir(parents=True)
    (agents / "gamma/SKILL.md").write_text("---\nname: gamma\ndescription: Do gamma.\n---\nGamma.\n")
    (agents / "gamma/scripts/run.sh").write_text("#!/bin/sh\necho gamma\n")
    (agents / "gamma/scripts/run.sh").chmod(0o755)
    report = _sync(brain, env)
    by = {t["name"]: t for t in report["targets"]}
    assert by["claude"]["recorded"] == [{"skill": "alpha", "version": 2, "action": "updated"}]
    assert by["agents"]["recorded"] == [{"skill": "gamma", "version": 1, "action": "imported"}]
    assert "Step two, carefully." in _body(brain, "alpha")
    # Each side received the other's change, byte for byte, executable bit included.
    assert (agents / "alpha/SKILL.md").read_bytes() == (claude / "alpha/SKILL.md").read_bytes()
    assert (claude / "gamma/scripts/run.sh").read_text() == "#!/bin/sh\necho gamma\n"
    assert os.access(claude / "gamma/scripts/run.sh", os.X_OK)
    log = _ledger(brain, env, "log", "--json").stdout
    newest = json.loads(log)[0]
    assert newest["operation"] == "sync" and newest["attribution"]["runtime"] == "agents"
    assert newest["attribution"]["target"] == str(agents)
    assert _sync(brain, env)["targets"][0]["projected"] == []  # in step: a no-op
    _ledger(brain, env, "verify")
    # Deleting a skill in a target deletes it in the ledger, and in the other targets.
    import shutil

    shutil.rmtree(agents / "beta")
    _sync(brain, env)
    with Brain.open(brain) as b:
        assert "beta" not in b.head().skills
    assert not (claude / "beta").exists()
    # Unlinking leaves the files alone.
    _ledger(brain, env, "unlink", "claude")
    assert (claude / "alpha/SKILL.md").exists()


def test_a_conflict_overwrites_neither_side_and_is_settled(tmp_path: Path) -> None:
    brain, env, target = _linked(tmp_path, "alpha")
    # A clean merge first: the ledger changes step one, the target step two.
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step one.", "--new", "Step one, ledger.")
    md = target / "alpha/SKILL.md"
    md.write_text(md.read_text().replace("Step two.", "Step two, target."))
    report = _sync(brain, env)
    assert report["conflicts"] == 0 and report["targets"][0]["recorded"][0]["version"] == 3
    assert "Step one, ledger." in md.read_text() and "Step two, target." in md.read_text()
    # Now both change the same line.
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step two, target.", "--new", "Step two, L.")
    md.write_text(md.read_text().replace("Step two, target.", "Step two, T."))
    target_bytes, ledger_body = md.read_bytes(), _body(brain, "alpha")
    report = _sync(brain, env, code=1)
    assert report["conflicts"] == 1 and report["targets"][0]["conflicts"][0]["files"] == ["SKILL.md"]
    assert md.read_bytes() == target_bytes and _body(brain, "alpha") == ledger_body  # neither side touched
    status = _ledger(brain, env, "status", check=False).stdout
    assert "conflict  alpha in target rt" in status
    st = json.loads(_ledger(brain, env, "status", "--json").stdout)
    assert st["sync_conflicts"][0]["skill"] == "alpha"
    from ledger.agent.tools import SkillTools

    with Brain.open(brain) as b:
        tool = SkillTools(b).call("skills_sync_status")
    assert tool["success"] and tool["conflicts"][0]["skill"] == "alpha"
    _sync(brain, env, code=1)  # a second sync keeps it, still touching nothing
    assert md.read_bytes() == target_bytes
    # Settle with the target's copy.
    report = _sync(brain, env, "--take", "rt", "alpha")
    assert report["conflicts"] == 0 and "Step two, T." in _body(brain, "alpha")
    # Another conflict, settled the other way, then one settled by editing the target.
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step two, T.", "--new", "Step two, L2.")
    md.write_text(md.read_text().replace("Step two, T.", "Step two, T2."))
    _sync(brain, env, code=1)
    _sync(brain, env, "--take", "ledger", "alpha")
    assert "Step two, L2." in md.read_text() and "T2" not in md.read_text()
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step two, L2.", "--new", "Step two, L3.")
    md.write_text(md.read_text().replace("Step two, L2.", "Step two, T3."))
    _sync(brain, env, code=1)
    md.write_text(md.read_text().replace("Step two, T3.", "Step two, L3 and T3."))  # merged by hand
    report = _sync(brain, env, code=1)  # an edit on one side never settles it: both copies stay
    assert report["conflicts"] == 1 and "Step two, L3." in _body(brain, "alpha")
    _ledger(brain, env, "resolve", "alpha", "--take", "rt")
    assert "Step two, L3 and T3." in _body(brain, "alpha") and _ledger(brain, env, "status").returncode == 0
    assert _sync(brain, env)["conflicts"] == 0


def test_a_wiped_target_is_not_read_as_deletions(tmp_path: Path) -> None:
    import shutil

    names = [f"s{i}" for i in range(6)]
    brain, env, target = _linked(tmp_path, *names)
    for name in names[:4]:
        shutil.rmtree(target / name)
    report = _sync(brain, env, code=1)
    assert report["targets"][0]["status"] == "refused" and "4 of the 6" in report["targets"][0]["reason"]
    with Brain.open(brain) as b:
        assert sorted(b.head().skills) == names  # nothing deleted
    assert not (target / "s0").exists()  # and nothing written into the wiped folder either
    shutil.rmtree(target)  # an unmounted disk: the folder itself is gone
    report = _sync(brain, env, code=1)
    assert report["targets"][0]["status"] == "refused"
    target.mkdir()
    (target / "s5").mkdir()  # one skill came back
    report = _sync(brain, env, "--confirm-deletions", "rt")
    with Brain.open(brain) as b:
        assert sorted(b.head().skills) == []  # confirmed: the deletions are recorded (s5 had no SKILL.md)


def test_a_symlink_planted_in_a_target_is_not_followed(tmp_path: Path) -> None:
    brain, env, target = _linked(tmp_path, "alpha", "beta")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "SKILL.md").write_text("---\nname: stolen\ndescription: x\n---\nTOP SECRET\n")
    (target / "stolen").symlink_to(secret)  # a skill folder that is a link
    (target / "beta/references").mkdir()
    (target / "beta/references/key.md").symlink_to(secret / "SKILL.md")  # a link inside a skill
    report = _sync(brain, env, code=1)  # something was left alone: the exit status says so
    alone = {a["dir"]: a["reason"] for a in report["targets"][0]["left_alone"]}
    assert "symbolic link" in alone["stolen"] and "symbolic link" in alone["beta"]
    with Brain.open(brain) as b:
        assert "stolen" not in b.head().skills
        assert "references/key.md" not in b.files(b.head().skills["beta"])
    assert (target / "beta/references/key.md").is_symlink()  # left as it is, not replaced
    # The ledger changes beta: its folder holds a link, so it is not replaced (nor written through).
    _ledger(brain, env, "skill", "patch", "beta", "--old", "Step one.", "--new", "Step one!")
    _sync(brain, env, code=1)
    assert "TOP SECRET" in (secret / "SKILL.md").read_text() and "Step one!" not in (secret / "SKILL.md").read_text()
    # The target folder itself swapped for a link: refused, nothing written through it.
    import shutil

    shutil.rmtree(target)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target.symlink_to(elsewhere)
    report = _sync(brain, env, code=1)
    assert report["targets"][0]["status"] == "refused" and "symbolic link" in report["targets"][0]["reason"]
    assert list(elsewhere.iterdir()) == []


def test_an_edit_made_during_a_sync_is_never_lost(tmp_path: Path) -> None:
    """The sync is held just before it replaces a skill; the runtime edits that skill then."""
    brain, env, target = _linked(tmp_path, "alpha")
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step one.", "--new", "Step one, ledger.")
    gate = tmp_path / "gate"
    full = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"},
        **env,
        "LEDGER_PAUSEPOINT": "sync.exchange",
        "LEDGER_PAUSE_FILE": str(gate),
    }
    proc = subprocess.Popen(
        [LEDGER, "--brain", str(brain), "sync", "--json"],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        until(Path(str(gate) + ".ready").exists, timeout=60, what="the pause at sync.exchange", alive=proc)
        md = target / "alpha/SKILL.md"
        md.write_text(md.read_text().replace("Step two.", "Step two, edited mid-sync."))  # as Hermes does: in place
        gate.unlink()
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, out + err
    body = _body(brain, "alpha")
    assert "Step two, edited mid-sync." in body and "Step one, ledger." in body
    text = (target / "alpha/SKILL.md").read_text()
    assert "Step two, edited mid-sync." in text and "Step one, ledger." in text
    assert not (target / ".ledger-rescued").exists()


def test_hermes_layout_places_skills_in_their_categories(tmp_path: Path) -> None:
    brain, env = _setup(tmp_path)
    _ledger(brain, env, "skill", "create", "arxiv", "--description", "Find papers.", "--category", "research")
    hermes = tmp_path / "hermes-home"
    env["HERMES_HOME"] = str(hermes)
    _ledger(brain, env, "link", "hermes")
    _sync(brain, env)
    assert (hermes / "skills/research/arxiv/SKILL.md").is_file()
    (hermes / "skills/mlops/serve").mkdir(parents=True)
    (hermes / "skills/mlops/serve/SKILL.md").write_text("---\nname: serve\ndescription: Serve a model.\n---\nGo.\n")
    report = _sync(brain, env)
    assert report["targets"][0]["recorded"] == [{"skill": "serve", "version": 1, "action": "imported"}]
    with Brain.open(brain) as b:
        assert b.categories.of()["serve"] == "mlops"


@pytest.mark.chain
def test_committed_targets_show_the_root_on_chain(chained) -> None:
    """``--committed`` projects the root last committed on chain, not the head (a draft)."""
    b = chained
    brain = b.root
    env: dict[str, str] = {"HOME": str(brain.parent / "home")}
    _ledger(brain, env, "skill", "create", "alpha", "--description", "Do alpha.", "--body", "v1 body", "--anchor")
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "v1 body", "--new", "draft body", "--no-anchor")
    published, draft = brain.parent / "published", brain.parent / "draft"
    _ledger(brain, env, "target", "add", str(published), "--anchored")
    _ledger(brain, env, "link", str(draft))
    _sync(brain, env)
    assert "v1 body" in (published / "alpha/SKILL.md").read_text()
    assert "draft body" in (draft / "alpha/SKILL.md").read_text()
    _ledger(brain, env, "commit")
    _sync(brain, env)
    assert "draft body" in (published / "alpha/SKILL.md").read_text()


@pytest.mark.chain
def test_a_committed_target_never_gets_a_revoked_version(chained) -> None:
    """A ``--committed`` target shows the root on chain, but not a version whose digest the head's supply
    record revokes since: that skill is taken out of it (``gate.revoked_version``, the rule every surface
    serves an older version by); a target that follows the head keeps the head's version."""
    from ledger.evals import gate
    from ledger.protocol.bundlehash import format_root

    brain = chained.root
    env: dict[str, str] = {"HOME": str(brain.parent / "home")}
    _ledger(brain, env, "skill", "create", "alpha", "--description", "Do alpha.", "--body", "v1 body", "--anchor")
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "v1 body", "--new", "draft body", "--no-anchor")
    published, draft = brain.parent / "published", brain.parent / "draft"
    _ledger(brain, env, "target", "add", str(published), "--anchored")
    _ledger(brain, env, "link", str(draft))
    _sync(brain, env)
    assert "v1 body" in (published / "alpha/SKILL.md").read_text()
    with Brain.open(brain) as b:
        v1 = gate.versions_of(b, ["alpha"])["alpha"][1].tree
        digest = format_root(b.tree_digest(v1, "alpha"))
    _ledger(brain, env, "revoke", digest, "--reason", "v1 leaks")
    _sync(brain, env)
    assert not (published / "alpha").exists()
    assert "draft body" in (draft / "alpha/SKILL.md").read_text()


def test_watch_records_an_edit_and_projects_a_snapshot(tmp_path: Path) -> None:
    """``--watch`` is event-driven: an edit in a target becomes a version, a snapshot reaches the targets."""
    brain, env = _setup(tmp_path, "alpha")
    a, b = tmp_path / "a", tmp_path / "b"
    _ledger(brain, env, "link", str(a))
    _ledger(brain, env, "link", str(b))
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}, **env}
    proc = subprocess.Popen(
        [LEDGER, "--brain", str(brain), "sync", "--watch", "--debounce", "0.1"],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def wait_for(check, what: str) -> None:  # generous: a loaded 2-core machine; it returns as soon as it holds
        until(check, timeout=120, what=f"--watch to {what}", alive=proc)

    try:
        wait_for(lambda: (b / "alpha/SKILL.md").exists(), "project the brain")
        md = a / "alpha/SKILL.md"
        md.write_text(md.read_text().replace("Step two.", "Step two, watched."))
        wait_for(lambda: "watched" in (b / "alpha/SKILL.md").read_text(), "carry an edit to the other target")
        assert "Step two, watched." in _body(brain, "alpha")
        _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step one.", "--new", "Step one, from the ledger.")
        wait_for(lambda: "from the ledger" in (a / "alpha/SKILL.md").read_text(), "project a new snapshot")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _killed_mid_exchange(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A sync held before it replaces alpha (the runtime edits alpha then), and killed just after the
    exchange, before it looks at what it displaced."""
    brain, env, target = _linked(tmp_path, "alpha")
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step one.", "--new", "Step one, ledger.")
    gate = tmp_path / "gate"
    full = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"},
        **env,
        "LEDGER_PAUSEPOINT": "sync.exchange",
        "LEDGER_PAUSE_FILE": str(gate),
        "LEDGER_CRASHPOINT": "sync.exchanged",
    }
    proc = subprocess.Popen(
        [LEDGER, "--brain", str(brain), "sync"], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    until(Path(str(gate) + ".ready").exists, timeout=60, what="the pause at sync.exchange", alive=proc)
    md = target / "alpha/SKILL.md"
    md.write_text(md.read_text().replace("Step two.", "Step two, edit one."))
    gate.unlink()
    proc.communicate(timeout=60)
    assert proc.returncode == 86  # the crash point: killed after the exchange
    assert "edit one" not in md.read_text()  # the displaced copy holds the edit, out of the runtime's sight
    return brain, env, target


def test_an_edit_displaced_by_a_killed_exchange_is_put_back_and_recorded(tmp_path: Path) -> None:
    brain, env, target = _killed_mid_exchange(tmp_path)
    _sync(brain, env)
    assert "Step two, edit one." in (target / "alpha/SKILL.md").read_text()
    assert "Step two, edit one." in _body(brain, "alpha") and "Step one, ledger." in _body(brain, "alpha")


def test_an_edit_that_cannot_be_put_back_is_kept_and_shown(tmp_path: Path) -> None:
    """The runtime wrote over the ledger's copy before the next sync: both edits exist, neither is deleted."""
    brain, env, target = _killed_mid_exchange(tmp_path)
    md = target / "alpha/SKILL.md"
    md.write_text(md.read_text() + "Edit two.\n")
    report = _sync(brain, env)
    rescued = report["targets"][0]["rescued"]
    assert [r["skill"] for r in rescued] == ["alpha"]
    kept = target / rescued[0]["kept"] / "SKILL.md"
    assert "Step two, edit one." in kept.read_text()
    assert "Edit two." in _body(brain, "alpha")  # the live copy's edit is recorded
    st = json.loads(_ledger(brain, env, "status", "--json").stdout)
    assert st["sync_rescued"][0]["path"] == str(kept.parent)
    assert "rescued" in _ledger(brain, env, "status").stdout
