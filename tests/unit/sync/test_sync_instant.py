"""A no-op ``ledger sync`` answered from metadata alone (issue 35): the instant record a pass leaves
for a target it found wholly in step (ledger/folders/instant.py; docs/layouts.md, "No-op syncs").

Every sync runs the real console entry in a subprocess on real folders.  Which path answered is
read from the process itself (``click`` and ``ledger.cli`` loaded or not), never from timing.  A
record keys only folders and files older than their reading by ``instant.RACY_NS``; a file's
ctime cannot be set back, so the tests wait for that, once per phase, before the pass that saves
the records.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ledger._paths import current_keys
from ledger.brain import Brain
from ledger.folders import instant
from tests.harness.brains import skill_md
from tests.reliability.test_sync_edge import _head
from tests.unit.sync.test_sync import _ledger, _setup

PROBE = (  # which path answered: click exits through SystemExit, so report from atexit
    "import atexit, sys; from ledger._entry import main; sys.argv = ['ledger'] + sys.argv[1:]; "
    "atexit.register(lambda: print('\\nQUICK' if not {'click', 'ledger.cli', 'ledger.sync.projection'} "
    "& set(sys.modules) else '\\nFULL', file=sys.stderr)); main()"
)
NOTES = "Notes.\n" * 8


def _run(
    brain: Path, env: dict[str, str], *args: str, full: bool = False, cwd: Path | None = None
) -> tuple[str, str, int]:
    """(QUICK or FULL, stdout, exit status) of ``ledger --brain BRAIN ARGS``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    base.update(env)
    if full:
        base["LEDGER_FULL_PATH"] = "1"
    argv = [a for a in ("--brain", str(brain)) if cwd is None] + list(args)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        env=base,
        cwd=cwd or brain.parent,
        timeout=120,
    )
    return proc.stderr.split()[-1], proc.stdout, proc.returncode


def _quick(brain: Path, env: dict[str, str], *args: str, cwd: Path | None = None) -> str:
    """The quick path answers ``sync ARGS``, byte for byte as the full path does; its output."""
    path, out, code = _run(brain, env, "sync", *args, cwd=cwd)
    full_path, full_out, full_code = _run(brain, env, "sync", *args, full=True, cwd=cwd)
    assert (path, full_path) == ("QUICK", "FULL"), (args, out, full_out)
    assert out == full_out and code == full_code == 0, (out, full_out)
    return out


def _full(brain: Path, env: dict[str, str], *args: str) -> tuple[str, int]:
    """``sync ARGS``, which the quick path must decline: (its output, exit status)."""
    path, out, code = _run(brain, env, "sync", *args)
    assert path == "FULL", (args, out)
    return out, code


def _report(brain: Path, env: dict[str, str], name: str) -> dict:
    out, _ = _full(brain, env, name, "--json")
    return json.loads(out)["targets"][0]


def _settle(*folders: Path) -> None:
    """Wait until every folder and file under ``folders`` is older than the racily-clean window."""
    newest = max(
        max(st.st_mtime_ns, st.st_ctime_ns) for f in folders for p in [f, *f.rglob("*")] for st in [os.lstat(p)]
    )
    wait = (newest + instant.RACY_NS) / 1e9 + 0.2 - time.time()
    if wait > 0:
        time.sleep(wait)  # the subject: the racy window; a ctime cannot be set back, so it is waited out, exactly


def _in_step(brain: Path, name: str, path: Path, head: str | None = None) -> bool:
    return instant.in_step(str(brain / ".ledger"), name, str(path), head or _head(brain))


def _record(brain: Path, name: str) -> Path:
    return Path(instant.record_file(str(brain / ".ledger"), name))


def _brain(
    tmp_path: Path,
    *targets: tuple[str, str],
    skills: tuple[str, ...] = ("alpha", "beta"),
    then: Callable[[dict[str, Path]], None] = lambda _: None,
) -> tuple[Path, dict[str, str], dict[str, Path]]:
    """A brain with ``skills`` (each with references/notes.md) in category ``tools``, linked to
    ``targets`` (name, layout), synced, ``then`` done to them, and synced again once their files are
    past the racy window: every target has its record."""
    src = tmp_path / "src"
    (src / "tools").mkdir(parents=True)
    (src / "tools/DESCRIPTION.md").write_text("---\ndescription: Tools of the trade.\n---\n")
    for name in skills:
        (src / "tools" / name / "references").mkdir(parents=True)
        (src / "tools" / name / "SKILL.md").write_text(skill_md(name, f"Do {name}.", f"# {name}\n"))
        (src / "tools" / name / "references/notes.md").write_text(NOTES)
    brain, env = _setup(tmp_path)
    _ledger(brain, env, "import", str(src), "--layout", "hermes")
    paths = {}
    for name, layout in targets:
        paths[name] = tmp_path / "targets" / name
        _ledger(brain, env, "link", str(paths[name]), "--layout", layout, "--name", name)
    _ledger(brain, env, "sync")
    then(paths)
    _settle(*paths.values())
    _ledger(brain, env, "sync")
    for name, path in paths.items():
        assert _record(brain, name).is_file() and _in_step(brain, name, path), name
    return brain, env, paths


def test_a_noop_sync_is_answered_from_metadata_as_the_full_path_answers(tmp_path: Path) -> None:
    brain, env, _ = _brain(tmp_path, ("rt", "agentskills"), ("home", "hermes"))
    assert _quick(brain, env) == "rt: in step\nhome: in step\n"
    doc = json.loads(_quick(brain, env, "--json"))
    assert [t["name"] for t in doc["targets"]] == ["rt", "home"] and doc["refused"] == 0
    assert _quick(brain, env, "home") == "home: in step\n"
    _quick(brain, env, "rt", "--json")
    _quick(brain, env, "--json", "home", "rt")
    assert _run(brain, {}, f"--brain={brain}", "sync", cwd=tmp_path)[0] == "QUICK"
    assert _quick(brain, env, cwd=brain / "skills") == "rt: in step\nhome: in step\n"  # found by searching up
    assert _quick(brain, {**env, "LEDGER_BRAIN": str(brain)}, cwd=tmp_path) == "rt: in step\nhome: in step\n"
    assert _quick(brain, env, "--no-remote") == "rt: in step\nhome: in step\n"  # the flag users pass (issue 51)
    _quick(brain, env, "home", "--no-remote", "--json")
    # Whatever the quick path cannot answer goes to click: --full, an unknown target, a name twice,
    # the pure-Python build.
    for args in (["--full"], ["nosuch"], ["rt", "rt"]):
        assert _run(brain, env, "sync", *args)[0] == "FULL", args
    assert _run(brain, {**env, "LEDGER_PURE_PYTHON": "1"}, "sync")[0] == "FULL"
    assert _run(brain, env, "sync", "nosuch")[2] == 1


def test_the_c_and_python_keys_agree(tmp_path: Path) -> None:
    """A record is saved with keys computed in Python and checked with the C batch: one formula."""
    (tmp_path / "s/references").mkdir(parents=True)
    (tmp_path / "s/SKILL.md").write_text("x")
    (tmp_path / "s/references/n.md").write_text("y" * 70000)
    os.symlink("SKILL.md", tmp_path / "s/link")
    groups = [["", "SKILL.md", "references", "references/n.md", "link"], ["SKILL.md"], ["missing"]]
    native = current_keys(str(tmp_path), ["s", "s", "s"], groups)
    assert native == current_keys(str(tmp_path), ["s", "s", "s"], groups, native=False)
    assert native[2] is None and native[0] != native[1]
    group = instant.Group(since=time.time_ns() + 10 * instant.RACY_NS)
    for rel in groups[0]:
        group.add(rel, os.lstat(tmp_path / "s" / rel if rel else tmp_path / "s"))
    assert group.sealed() == (sorted(groups[0]), current_keys(str(tmp_path), ["s"], [sorted(groups[0])])[0])
    assert instant.Group().sealed() is None  # nothing keyed, or keyed within the window: no key


def _same_size_edit(path: Path, old: bytes, new: bytes) -> None:
    """Bytes changed in place, size and mtime as they were: only the ctime tells."""
    st = path.stat()
    data = path.read_bytes()
    assert len(old) == len(new) and old in data
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_every_change_makes_the_next_sync_read_the_target(tmp_path: Path) -> None:
    """One target per change, each to a skill of its own, so that recording one never merges with another."""
    names = [
        "edit",
        "add-file",
        "delete-file",
        "add-skill",
        "remove-skill",
        "rename-skill",
        "chmod",
        "symlink",
        "ignore",
        "racy",
        "control",
    ]

    def debris(paths: dict[str, Path]) -> None:  # each target's own .ledgerignore, and a swap file it ignores
        for name in names:
            (paths[name] / ".ledgerignore").write_text("# nothing\n")
            (paths[name] / f"{name}/.draft.swp").write_text("draft\n")

    brain, env, t = _brain(
        tmp_path, *[(n, "agentskills") for n in names], ("hermes", "hermes"), skills=tuple(names), then=debris
    )
    # One change in each target (the control has none).
    _same_size_edit(t["edit"] / "edit/SKILL.md", b"# edit", b"# EDIT")
    (t["add-file"] / "add-file/references/more.md").write_text("More.\n")
    (t["delete-file"] / "delete-file/references/notes.md").unlink()
    (t["add-skill"] / "gamma").mkdir()
    (t["add-skill"] / "gamma/SKILL.md").write_text("---\nname: gamma\ndescription: Do gamma.\n---\n# gamma\n")
    shutil.rmtree(t["remove-skill"] / "remove-skill")
    os.rename(t["rename-skill"] / "rename-skill", t["rename-skill"] / "renamed")
    os.chmod(t["chmod"] / "chmod/references/notes.md", 0o755)
    notes = t["symlink"] / "symlink/references/notes.md"
    (tmp_path / "outside.md").write_text(NOTES)
    notes.unlink()
    notes.symlink_to(tmp_path / "outside.md")
    (t["ignore"] / ".ledgerignore").write_text("*.bak\n")  # in place (its folder is unchanged); nothing to record
    _same_size_edit(t["hermes"] / "tools/DESCRIPTION.md", b"Tools of", b"TOOLS OF")
    racy = t["racy"] / "racy/references"  # dated as if changed in the clock tick the next pass reads it
    os.utime(racy, ns=(time.time_ns() + 3600 * 10**9,) * 2)
    head = _head(brain)
    assert {n: _in_step(brain, n, p, head) for n, p in t.items()} == {n: n == "control" for n in t}
    assert _quick(brain, env, "control") == "control: in step\n"
    # Each change is read and recorded (or left alone, and said) by the full path.
    reports = {n: _report(brain, env, n) for n in t if n != "control"}
    recorded = {n: [(r["skill"], r["action"]) for r in rep["recorded"]] for n, rep in reports.items()}
    assert recorded == {
        "edit": [("edit", "updated")],
        "add-file": [("add-file", "updated")],
        "delete-file": [("delete-file", "updated")],
        "add-skill": [("gamma", "imported")],
        "remove-skill": [("remove-skill", "deleted")],
        "rename-skill": [("renamed", "imported"), ("rename-skill", "deleted")],
        "chmod": [("chmod", "updated")],
        "symlink": [],
        "ignore": [],
        "racy": [],
        "hermes": [("tools/DESCRIPTION.md", "category file recorded")],
    }, recorded
    assert [a["dir"] for a in reports["symlink"]["left_alone"]] == ["symlink"]
    with Brain.open(brain) as b:
        files = {k: b.files(b.head().skills[k]) for k in ("edit", "add-file", "delete-file", "chmod")}
        assert b"# EDIT" in b.read_blob(files["edit"]["SKILL.md"][1])
    assert "references/more.md" in files["add-file"] and "references/notes.md" not in files["delete-file"]
    assert files["chmod"]["references/notes.md"][0] == 0o100755
    # A file dated within the racy window of a pass (here: in the future) is never keyed, so that
    # pass saves no record; once it is past the window, the next pass does.
    _settle(*(p for n, p in t.items() if n != "racy"), *(p for p in t["racy"].iterdir() if p.name != "racy"))
    assert _full(brain, env, "racy") == ("racy: in step\n", 0) and not _record(brain, "racy").exists()
    os.utime(racy, ns=(time.time_ns() - 3600 * 10**9,) * 2)
    _settle(t["racy"])
    assert _full(brain, env, "racy") == ("racy: in step\n", 0) and _record(brain, "racy").exists()
    assert _quick(brain, env, "racy") == "racy: in step\n"


def test_what_a_pass_depends_on_beside_the_target_makes_the_next_sync_read_it(tmp_path: Path) -> None:
    brain, env, t = _brain(tmp_path, ("a", "agentskills"), ("b", "agentskills"))
    rec = _record(brain, "a")
    good = rec.read_bytes()
    for bad in (b"{not json", good[: len(good) // 2], good.replace(b'"format":1', b'"format":2'), b""):
        rec.write_bytes(bad)  # corrupt, truncated, of another format, empty: no record
        assert not _in_step(brain, "a", t["a"]) and _in_step(brain, "b", t["b"])
        assert _full(brain, env) == ("a: in step\nb: in step\n", 0)
        assert rec.read_bytes() == good  # the full pass saved it again: nothing moved in the target
    (brain / ".ledger/syncignore").write_text("*.bak\n")  # the brain's own ignore rules
    assert not _in_step(brain, "a", t["a"]) and not _in_step(brain, "b", t["b"])
    assert _full(brain, env) == ("a: in step\nb: in step\n", 0)
    assert _quick(brain, env) == "a: in step\nb: in step\n"
    _ledger(brain, env, "link", str(tmp_path / "c"), "--name", "c")  # targets.json changes
    assert not _in_step(brain, "a", t["a"])
    out, code = _full(brain, env)
    assert code == 0 and "projected alpha → c" in out and "projected beta → c" in out
    _ledger(brain, env, "unlink", "c")
    assert not _in_step(brain, "a", t["a"]) and not _record(brain, "c").exists()
    assert _full(brain, env) == ("a: in step\nb: in step\n", 0)
    assert _quick(brain, env) == "a: in step\nb: in step\n"
    # The head moves (a CLI write) and the next pass is killed while it projects: no record it
    # began with survives it, and a stale one put back is not believed while its journal is there.
    stale, old = rec.read_bytes(), _head(brain)
    _ledger(brain, env, "skill", "patch", "alpha", "--old", "# alpha", "--new", "# Alpha")
    assert not _in_step(brain, "a", t["a"])
    killed = _ledger(brain, {**env, "LEDGER_CRASHPOINT": "sync.exchanged"}, "sync", check=False)
    assert killed.returncode == 86 and (brain / ".ledger/sync/a.pending.json").exists()
    assert not rec.exists() and not _record(brain, "b").exists()
    rec.write_bytes(stale)
    assert not _in_step(brain, "a", t["a"], old) and not _in_step(brain, "a", t["a"])
    out, code = _full(brain, env)
    assert code == 0 and "projected alpha → b" in out and not (brain / ".ledger/sync/a.pending.json").exists()
    assert "# Alpha" in (t["a"] / "alpha/SKILL.md").read_text()
    _settle(t["a"], t["b"])
    assert _full(brain, env) == ("a: in step\nb: in step\n", 0)
    assert _quick(brain, env, "--json")


def test_full_reads_every_file(tmp_path: Path) -> None:
    """What no lstat field shows is read by --full: it trusts neither the record nor a stat entry
    (.ledger/cache/sync-a.json: each file's fields and blob, and when it was hashed, last)."""
    brain, env, _ = _brain(tmp_path, ("a", "agentskills"))
    stats = brain / ".ledger/cache/sync-a.json"
    hashed = {(k, f): e[6] for k, entries in json.loads(stats.read_text()).items() for f, e in entries.items()}
    assert len(hashed) == 4
    assert _quick(brain, env) == "a: in step\n"  # a full pass without --full reads no file either
    assert {(k, f): e[6] for k, entries in json.loads(stats.read_text()).items() for f, e in entries.items()} == hashed
    assert _run(brain, env, "sync", "--full")[:2] == ("FULL", "a: in step\n")
    again = {(k, f): e[6] for k, entries in json.loads(stats.read_text()).items() for f, e in entries.items()}
    assert again.keys() == hashed.keys() and all(again[k] > hashed[k] for k in hashed)  # every file hashed again
    assert _record(brain, "a").exists() and _quick(brain, env) == "a: in step\n"
