"""No acknowledged write is lost at the edge (issue 33): ``ledger sync`` racing brain writers, conflicts
that outlive later writes, and hostile entries in a target that are left alone while the rest syncs.

Every test drives the installed ``ledger`` on real folders and real git.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ledger.brain import Brain
from tests.harness.cli import LEDGER
from tests.harness.wait import until
from tests.unit.sync.test_sync import _body, _ledger, _linked, _setup, _sync

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")


def _head(brain: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(brain), "rev-parse", "main"], capture_output=True, text=True, check=True
    ).stdout.strip()


def _files(brain: Path, name: str) -> dict[str, bytes]:
    with Brain.open(brain) as b:
        return {rel: b.read_blob(blob) for rel, (_, blob) in b.files(b.head().skills[name]).items()}


def _verify(brain: Path, env: dict[str, str]) -> None:
    proc = _ledger(brain, env, "verify", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _opened(pid: int, path: Path) -> bool:
    """Whether process ``pid`` holds ``path`` open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            continue
    return False


def _append(path: Path, line: str) -> None:
    """As Hermes writes: a temporary file in the same folder, then ``os.replace``."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(path.read_text() + line)
    os.replace(tmp, path)


def test_a_brain_write_during_a_recording_waits_and_survives(tmp_path: Path) -> None:
    """The recording holds the writer lock from the head it reads to the snapshot it writes: a brain
    write arriving meanwhile waits, then lands on top; the next sync merges, losing neither."""
    brain, env, target = _linked(tmp_path, "alpha")
    _append(target / "alpha/SKILL.md", "\nA line from the runtime.\n")
    gate = tmp_path / "gate"
    sync_env = {**os.environ, **env, "LEDGER_PAUSEPOINT": "sync.record", "LEDGER_PAUSE_FILE": str(gate)}
    sync = subprocess.Popen(
        [LEDGER, "--brain", str(brain), "sync", "--json"],
        env=sync_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        until((tmp_path / "gate.ready").exists, timeout=60, what="the pause at sync.record", alive=sync)
        src = tmp_path / "new.md"
        src.write_text("written while the recording was under way\n")
        write = subprocess.Popen(
            [LEDGER, "--brain", str(brain), "skill", "write-file", "alpha", "references/new.md", "--from", str(src)],
            env={**os.environ, **env, "LEDGER_LOCK_TIMEOUT": "60"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # Until the write has reached the writer lock (it holds .ledger/lock open), or ended; a fixed 1 s sleep
        # stood here.  The lock still names the recording's pid: the write is waiting for it, not holding it.
        lock = brain / ".ledger" / "lock"
        until(lambda: _opened(write.pid, lock) or write.poll() is not None, what="the write to reach the lock")
        assert write.poll() is None, "the write went ahead while the recording held what it decided on"
        assert lock.read_text() == str(sync.pid), "the write took the lock the recording holds"
    finally:
        gate.unlink(missing_ok=True)
    out, err = sync.communicate(timeout=60)
    assert sync.returncode == 0, out + err
    assert write.wait(timeout=60) == 0, write.communicate()
    files = _files(brain, "alpha")
    assert files["references/new.md"] == b"written while the recording was under way\n"
    assert b"A line from the runtime." in files["SKILL.md"]
    _sync(brain, env)
    assert (target / "alpha/references/new.md").read_text() == "written while the recording was under way\n"
    _verify(brain, env)


def _conflicted(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """``alpha`` linked into ``rt``, then one line changed on both sides: a conflict."""
    brain, env, target = _linked(tmp_path, "alpha")
    md = target / "alpha/SKILL.md"
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step two.", "--new", "Step two, L.")
    md.write_text(md.read_text().replace("Step two.", "Step two, T."))
    assert _sync(brain, env, code=1)["conflicts"] == 1
    return brain, env, target


def test_a_conflict_outlives_later_writes_on_either_side(tmp_path: Path) -> None:
    brain, env, target = _conflicted(tmp_path)
    md = target / "alpha/SKILL.md"
    # One more brain write: the runtime's edit must neither be overwritten nor dropped.
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step one.", "--new", "Step one, L2.")
    report = _sync(brain, env, code=1)
    assert report["conflicts"] == 1 and "Step two, T." in md.read_text()
    assert "Step one, L2." in _body(brain, "alpha") and "Step two, L." in _body(brain, "alpha")
    # One more runtime write: the brain's writes stay in the head.
    _append(md, "More from the runtime.\n")
    report = _sync(brain, env, code=1)
    assert report["conflicts"] == 1 and "Step one, L2." in _body(brain, "alpha")
    assert "More from the runtime." in md.read_text() and "Step two, T." in md.read_text()
    status = _ledger(brain, env, "status", "--json", check=False)
    assert json.loads(status.stdout)["sync_conflicts"][0]["skill"] == "alpha"
    # Settled on purpose: the target's copy wins, recorded as one version.
    done = _ledger(brain, env, "resolve", "alpha", "--take", "rt", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "More from the runtime." in _body(brain, "alpha")
    assert _sync(brain, env)["conflicts"] == 0
    _verify(brain, env)


def test_take_ledger_keeps_the_runtime_copy_aside(tmp_path: Path) -> None:
    brain, env, target = _conflicted(tmp_path)
    md = target / "alpha/SKILL.md"
    done = _ledger(brain, env, "resolve", "alpha", "--take", "ledger", "--json", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    kept = json.loads(done.stdout)["targets"][0]["rescued"]
    assert len(kept) == 1 and kept[0]["skill"] == "alpha"
    assert "Step two, L." in md.read_text()
    rescued = list(Path(kept[0]["kept"]).rglob("SKILL.md"))
    assert len(rescued) == 1 and "Step two, T." in rescued[0].read_text()
    assert not (target / ".ledger-rescued").exists()  # never where a runtime scans


def test_a_hostile_hermes_home_is_left_alone_and_the_rest_syncs(tmp_path: Path) -> None:
    brain, env = _setup(tmp_path, "alpha", "beta")
    home = tmp_path / "hermes"
    _ledger(brain, env, "link", str(home), "--layout", "hermes", "--name", "hermes")
    _sync(brain, env)
    before = _head(brain)
    # A YAML alias bomb, a non-UTF-8 file name, a fifo and a symlink, each in its own skill.
    bomb = home / "tools/bomb"
    bomb.mkdir(parents=True)
    (bomb / "SKILL.md").write_text("---\nname: bomb\ndescription: &a [x]\nmetadata: {k: *a}\n---\nbody\n")
    odd = home / "tools/odd"
    odd.mkdir()
    (odd / "SKILL.md").write_text("---\nname: odd\ndescription: Odd names.\n---\nbody\n")
    (odd / os.fsdecode(b"ref-\xff.md")).write_bytes(b"x\n")
    fifo = home / "tools/fifo"
    fifo.mkdir()
    (fifo / "SKILL.md").write_text("---\nname: fifo\ndescription: A fifo.\n---\nbody\n")
    os.mkfifo(fifo / "pipe")
    (home / "tools/linked").symlink_to(home / "alpha")
    # Nothing recordable: no snapshot at all, and verify still passes.
    report = _sync(brain, env, code=1)
    alone = {a["dir"]: a["reason"] for a in report["targets"][0]["left_alone"]}
    assert "alias" in alone["tools/bomb"], alone
    assert "UTF-8" in alone["tools/odd"] and "\\xff" in alone["tools/odd"], alone
    assert "special file" in alone["tools/fifo"], alone
    assert "symbolic link" in alone["tools/linked"], alone
    assert _head(brain) == before
    _verify(brain, env)
    # A good edit beside them is recorded in the same pass.
    _append(home / "alpha/SKILL.md", "A Hermes edit.\n")
    report = _sync(brain, env, code=1)
    assert [r["skill"] for r in report["targets"][0]["recorded"]] == ["alpha"]
    assert "A Hermes edit." in _body(brain, "alpha")
    _verify(brain, env)
    audit = _ledger(brain, env, "audit", str(brain), check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_a_runtime_file_over_the_agent_caps_is_left_alone(tmp_path: Path) -> None:
    brain, env, target = _linked(tmp_path, "alpha", "beta")
    (target / "alpha/references").mkdir()
    (target / "alpha/references/huge.bin").write_bytes(b"\0" * (1024 * 1024 + 1))
    _append(target / "beta/SKILL.md", "Beta grows.\n")
    report = _sync(brain, env, code=1)
    alone = {a["dir"]: a["reason"] for a in report["targets"][0]["left_alone"]}
    assert "1048577 bytes" in alone["alpha"], alone
    assert "references/huge.bin" not in _files(brain, "alpha")
    assert "Beta grows." in _body(brain, "beta")
    assert (target / "alpha/references/huge.bin").stat().st_size == 1024 * 1024 + 1  # never removed


def test_editor_debris_is_never_recorded_nor_deleted(tmp_path: Path) -> None:
    brain, env, target = _linked(tmp_path, "alpha")
    debris = {
        "SKILL.md.swp": b"vim",
        "references/.api.md.swo": b"vim",
        "notes~": b"backup",
        "4913": b"",
        ".DS_Store": b"mac",
        ".#SKILL.md": None,
        ".SKILL.md.tmp.abc123": b"hermes in flight",
    }
    (target / "alpha/references").mkdir()
    for rel, data in debris.items():
        if data is None:
            (target / "alpha" / rel).symlink_to("user@host.1234")  # emacs's lock: a dangling link
        else:
            (target / "alpha" / rel).write_bytes(data)
    (target / "alpha/scratch.log").write_text("mine\n")
    (target / ".ledgerignore").write_text("*.log\n")
    head = _head(brain)
    report = _sync(brain, env)
    assert report["targets"][0]["recorded"] == [] and _head(brain) == head
    # The ledger changes alpha: the folder is replaced whole, and the debris goes across.
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "Step one.", "--new", "Step one, L.")
    _sync(brain, env)
    assert "Step one, L." in (target / "alpha/SKILL.md").read_text()
    for rel, data in debris.items():
        if data is not None and rel != ".SKILL.md.tmp.abc123":
            assert (target / "alpha" / rel).read_bytes() == data, rel
    # A write in flight is not carried: its writer's rename fails rather than put stale bytes in place.
    assert not (target / "alpha/.SKILL.md.tmp.abc123").exists()
    assert (target / "alpha/scratch.log").read_text() == "mine\n"
    assert set(_files(brain, "alpha")) == {"SKILL.md"}
    # A rule of the brain's own un-ignores a default: the file is then recorded.
    (brain / ".ledger/syncignore").write_text("!notes~\n")
    report = _sync(brain, env)
    assert [r["skill"] for r in report["targets"][0]["recorded"]] == ["alpha"]
    assert _files(brain, "alpha")["notes~"] == b"backup"
    _verify(brain, env)


def test_a_wiped_target_is_refused_whatever_its_size_and_restore_puts_it_back(tmp_path: Path) -> None:
    import shutil

    brain, env, target = _linked(tmp_path, "alpha")
    shutil.rmtree(target / "alpha")
    head = _head(brain)
    report = _sync(brain, env, code=1)
    t = report["targets"][0]
    assert t["status"] == "refused" and "ledger sync --restore rt" in t["hint"], t
    assert _head(brain) == head  # nothing read as a deletion
    report = _sync(brain, env, "--restore", "rt")
    assert report["targets"][0]["projected"] == ["alpha"] and (target / "alpha/SKILL.md").exists()
    assert _head(brain) == head
    # The whole folder gone: the same one command makes it again.
    shutil.rmtree(target)
    assert _sync(brain, env, code=1)["targets"][0]["status"] == "refused"
    _sync(brain, env, "--restore", "rt")
    assert (target / "alpha/SKILL.md").exists()
    # Deleted on purpose: recorded only when confirmed.
    shutil.rmtree(target / "alpha")
    _sync(brain, env, code=1)
    report = _sync(brain, env, "--confirm-deletions", "rt")
    assert report["targets"][0]["recorded"][0]["action"] == "deleted"
    with Brain.open(brain) as b:
        assert "alpha" not in b.head().skills
    _verify(brain, env)


def test_one_failing_target_fails_only_itself(tmp_path: Path) -> None:
    brain, env, target = _linked(tmp_path, "alpha")
    onchain = tmp_path / "onchain"
    _ledger(brain, env, "target", "add", str(onchain), "--anchored", "--name", "onchain")  # no chain here: unreadable
    _append(target / "alpha/SKILL.md", "Still recorded.\n")
    proc = _ledger(brain, env, "sync", "--json", check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = {t["name"]: t for t in json.loads(proc.stdout)["targets"]}
    assert report["onchain"]["status"] == "refused" and "chain" in report["onchain"]["reason"]
    assert report["rt"]["status"] == "ok" and report["rt"]["recorded"][0]["skill"] == "alpha"
    assert "Still recorded." in _body(brain, "alpha")
    assert list(onchain.iterdir()) == []  # the head is never shown where the committed root was asked for


def test_a_fleet_sync_projects_the_merged_result_and_exits_1_on_a_merge_conflict(tmp_path: Path) -> None:
    brain, env, target = _linked(tmp_path, "alpha", "beta")
    shared = tmp_path / "shared.git"
    _ledger(brain, env, "remote", "set", "--create", str(shared))
    _sync(brain, env)
    other = tmp_path / "other"
    _ledger(brain, env, "clone", str(shared), str(other))  # another machine's copy
    _ledger(other, env, "skill", "patch", "alpha", "--old", "Step one.", "--new", "Step one, elsewhere.")
    _ledger(other, env, "push", str(shared))
    report = _sync(brain, env)
    assert "Step one, elsewhere." in (target / "alpha/SKILL.md").read_text()  # this run, not the next
    assert "alpha" in report["targets"][0]["projected"]
    # Both machines change one line: the merge keeps this side, and sync says so until resolved.
    _ledger(other, env, "skill", "patch", "beta", "--old", "Step two.", "--new", "Step two, there.")
    _ledger(other, env, "push", str(shared))
    _ledger(brain, env, "skill", "patch", "beta", "--old", "Step two.", "--new", "Step two, here.")
    report = _sync(brain, env, code=1)
    assert report["merge_conflicts"] == ["beta"] and report["conflicts"] == 0
    _sync(brain, env, code=1)  # still there on the next run
    _ledger(brain, env, "resolve", "beta", "--take", "kept")
    assert _sync(brain, env)["merge_conflicts"] == []


def test_taking_the_ledgers_delete_keeps_the_runtimes_edit_aside(tmp_path: Path) -> None:
    """Found by the model (tests/harness/edgemodel.py): a modify/delete conflict settled with --take ledger took the
    target's copy out and deleted it; it is kept aside and named, as for any side chosen away."""
    brain, env, target = _linked(tmp_path, "alpha", "beta")
    _ledger(brain, env, "skill", "delete", "alpha")
    (target / "alpha/references").mkdir()
    (target / "alpha/references/note.md").write_text("my note\n")
    assert _sync(brain, env, code=1)["conflicts"] == 1
    done = _ledger(brain, env, "resolve", "alpha", "--take", "ledger", "--json", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    t = json.loads(done.stdout)["targets"][0]
    assert t["removed"] == ["alpha"] and len(t["rescued"]) == 1, t
    assert (Path(t["rescued"][0]["kept"]) / "references/note.md").read_text() == "my note\n"
    assert not (target / "alpha").exists()
    status = json.loads(_ledger(brain, env, "status", "--json", check=False).stdout)
    assert len(status["sync_rescued"]) == 1


@pytest.mark.parametrize("kind", [".ledgerignore", "syncignore"])
def test_an_ignore_file_never_hides_what_the_brain_holds(tmp_path: Path, kind: str) -> None:
    """Issue 46: a rule (a target's ``.ledgerignore``, or the brain's ``.ledger/syncignore``) naming files the
    ledger projected never records their deletion: they stay in the head and in every other target, an edit
    to them still reaches the head, and each is reported with the rule that would hide it."""
    brain, env = _setup(tmp_path, "alpha", "beta")
    api = tmp_path / "api.md"
    api.write_text("The API.\n")
    _ledger(brain, env, "skill", "write-file", "alpha", "references/api.md", "--from", str(api))
    rt, other = tmp_path / "rt", tmp_path / "other"
    _ledger(brain, env, "link", str(rt))
    _ledger(brain, env, "link", str(other), "--name", "other")
    _sync(brain, env)
    assert (rt / "alpha/references/api.md").read_text() == "The API.\n"
    where = rt / ".ledgerignore" if kind == ".ledgerignore" else brain / ".ledger/syncignore"
    where.write_text("references/\nbeta/\n" if kind == ".ledgerignore" else "api.md\nbeta/\n")
    head = _head(brain)
    report = _sync(brain, env)
    assert _head(brain) == head, report  # nothing recorded: no deletion of a held file or skill
    assert set(_files(brain, "alpha")) == {"SKILL.md", "references/api.md"} and "beta" in _head_skills(brain)
    assert (other / "alpha/references/api.md").read_text() == "The API.\n" and (other / "beta/SKILL.md").exists()
    hidden = {(h["path"], h["rule"], h["source"]) for h in report["targets"][0]["ignored_held"]}
    rule = "references/" if kind == ".ledgerignore" else "api.md"
    assert hidden == {("alpha/references/api.md", rule, str(where)), ("beta/SKILL.md", "beta/", str(where))}, report
    # An edit in the target that planted the rule still reaches the head, then every target.
    _append(rt / "alpha/references/api.md", "Edited there.\n")
    _append(rt / "beta/SKILL.md", "Beta edited there.\n")
    report = _sync(brain, env)
    assert _files(brain, "alpha")["references/api.md"] == b"The API.\nEdited there.\n"
    assert "Beta edited there." in _body(brain, "beta")
    _sync(brain, env)
    assert (other / "alpha/references/api.md").read_text() == "The API.\nEdited there.\n"
    assert "Beta edited there." in (other / "beta/SKILL.md").read_text()
    # A brain write to it reaches the planting target too.
    _ledger(brain, env, "skill", "patch", "beta", "--old", "Step one.", "--new", "Step one, from the brain.")
    _sync(brain, env)
    assert "Step one, from the brain." in (rt / "beta/SKILL.md").read_text()
    # Said in the text output and in 'ledger status', with the path and the rule.
    text = _ledger(brain, env, "sync").stdout
    assert f"rt/alpha/references/api.md: the brain holds it, so the rule '{rule}' in {where}" in text, text
    status = json.loads(_ledger(brain, env, "status", "--json").stdout)
    assert {(h["target"], h["path"], h["rule"]) for h in status["sync_ignored_held"]} == {
        ("rt", "alpha/references/api.md", rule),
        ("rt", "beta/SKILL.md", "beta/"),
    } | (
        {("other", "alpha/references/api.md", rule), ("other", "beta/SKILL.md", "beta/")}
        if kind == "syncignore"
        else set()
    ), status
    assert "rt/alpha/references/api.md" in _ledger(brain, env, "status").stdout
    _verify(brain, env)


def _head_skills(brain: Path) -> set[str]:
    with Brain.open(brain) as b:
        return set(b.head().skills)


def _rescued(brain: Path) -> list[str]:
    return [str(p) for p in (brain / ".ledger").rglob(".ledger-rescued/*")]


def _held_at_exchange(tmp_path: Path, brain: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], Path]:
    """A ``ledger sync`` paused in phase 2, before it replaces a skill: its record has landed, its manifest
    is not saved.  The caller kills it, or makes the exchange fail, then lets it go."""
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
    until(Path(str(gate) + ".ready").exists, timeout=60, what="the pause at sync.exchange", alive=proc)
    return proc, gate


def _record_then_interrupt(tmp_path: Path, how: str) -> tuple[Path, dict[str, str], Path]:
    """The runtime edits alpha and the brain edits beta; a sync records alpha, then is interrupted in phase 2,
    before it replaces alpha with the recorded copy (``kill``: killed; ``fail``: alpha's folder is away then,
    so phase 2 fails; it is put back as it was); then the brain builds on what was recorded: it changes the
    runtime's line again, and adds one after it."""
    brain, env, target = _linked(tmp_path, "alpha", "beta")
    md = target / "alpha/SKILL.md"
    md.write_text(md.read_text().replace("Step two.", "Step two, runtime."))
    _ledger(brain, env, "skill", "patch", "beta", "--old", "Step one.", "--new", "Step one, brain.")
    proc, gate = _held_at_exchange(tmp_path, brain, env)
    try:
        assert "Step two, runtime." in _body(brain, "alpha")  # the record landed; the manifest is not saved
        if how == "kill":
            proc.kill()
        else:
            (target / "alpha").rename(tmp_path / "alpha-aside")
    finally:
        gate.unlink()
    out, err = proc.communicate(timeout=60)
    if how == "kill":
        assert proc.returncode == -9
    else:
        assert proc.returncode == 1 and json.loads(out)["targets"][0]["status"] == "refused", out + err
        (tmp_path / "alpha-aside").rename(target / "alpha")
    _ledger(
        brain,
        env,
        "skill",
        "patch",
        "alpha",
        "--old",
        "Step two, runtime.",
        "--new",
        "Step two, runtime, then brain.\n\nStep three, brain.",
    )
    return brain, env, target


@pytest.mark.parametrize("how", ["kill", "fail"])
def test_an_interrupted_sync_is_settled_against_its_record_not_a_later_head(tmp_path: Path, how: str) -> None:
    """Issue 46: a sync killed (or failing) after its record landed and before it saved the manifest, then a
    brain write to the same skill: the next passes settle against what the record wrote, not the head that
    moved since, so nothing is in conflict, both edits are in the head and the target, nothing is rescued."""
    brain, env, target = _record_then_interrupt(tmp_path, how)
    md = target / "alpha/SKILL.md"
    for _ in range(2):
        report = _sync(brain, env)
        assert report["conflicts"] == 0 and not report["targets"][0]["conflicts"], report
        assert report["targets"][0]["rescued"] == [], report
    body = _body(brain, "alpha")
    assert "Step two, runtime, then brain." in body and "Step three, brain." in body, body
    assert "Step two, runtime, then brain." in md.read_text() and "Step three, brain." in md.read_text()
    assert "Step one, brain." in (target / "beta/SKILL.md").read_text()
    assert _rescued(brain) == [] and json.loads(_ledger(brain, env, "status", "--json").stdout)["sync_conflicts"] == []
    _verify(brain, env)
