"""The fast path (ledger/fastpath/, issue 51): one table of the command lines answered before click,
each answered byte for byte as the click path answers it (stdout, stderr, exit status).

Every command line runs the real console entry in a subprocess, twice: as it comes, and with the
row's switch set (``LEDGER_PURE_PYTHON=1``, or ``LEDGER_FULL_PATH=1`` for ``mcp``, which the pure
switch leaves alone), which sends it to click.  Which path answered is read from the process itself
(click loaded or not), never from timing.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from ledger.fastpath.table import FULL, PURE, TABLE
from tests.harness.cli import run_ledger
from tests.interop.test_mcp import INIT
from tests.unit.store.test_statcache import _age
from tests.unit.sync.test_sync_instant import _brain as synced_brain

PROBE = (  # which path answered: click exits through SystemExit, so report from atexit (the MCP SDK loads
    # click for its own CLI: the mcp row's mark is that ledger.cli did not load)
    "import atexit, sys; from ledger._entry import main; sys.argv = ['ledger'] + sys.argv[1:]; "
    "atexit.register(lambda: print('\\nCLICK' if 'ledger.cli' in sys.modules else '\\nFAST' if 'click' not in "
    "sys.modules else '\\nFAST+SDK', file=sys.stderr)); main()"
)
SWITCH = {row.name: PURE if PURE in row.off else FULL for row in TABLE}  # what sends each row to click
COVERED = {"hash", "sync", "reads", "mcp"}  # the rows a test below runs both ways


def _run(args: list[str], cwd: Path, env: dict[str, str], stdin: str | None) -> tuple[str, str, str, int]:
    """(FAST or CLICK, stdout, stderr, exit status) of ``ledger ARGS``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**base, **env},
        input=stdin,
        timeout=120,
    )
    err, _, path = proc.stderr.rstrip("\n").rpartition("\n")
    return path, proc.stdout, err, proc.returncode


def _both(
    row: str, args: list[str], cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None, fast: bool = True
) -> str:
    """Run ``args`` as it comes and with ``row``'s switch: the same bytes and status; the first took the
    fast path (or, ``fast=False``, stepped aside).  Its stdout."""
    env = env or {}
    got = _run(args, cwd, env, stdin)
    ref = _run(args, cwd, {**env, SWITCH[row]: "1"}, stdin)
    assert ref[0] == "CLICK", (args, ref)
    assert got[0] == ("CLICK" if not fast else "FAST+SDK" if row == "mcp" else "FAST"), (args, got)
    assert got[1:] == ref[1:], (args, got, ref)
    return got[1]


def test_hash_answers_as_click_does(tmp_path: Path) -> None:
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    run_ledger("--brain", str(brain), "skill", "create", "alpha", "--description", "Alpha.", check=True)
    skills = str(brain / "skills")
    root = _both("hash", ["hash", skills], tmp_path)
    assert root.startswith("blake3-tree-v1:")
    assert json.loads(_both("hash", ["hash", skills, "--json"], tmp_path)) == {"root": root.strip()}
    assert _both("hash", ["hash", str(brain)], tmp_path) == root  # a brain is hashed over its skills/
    assert _both("hash", [f"--brain={brain}", "hash", skills], tmp_path) == root
    assert _both("hash", ["hash", skills], tmp_path, {"LEDGER_BRAIN": str(brain)}) == root
    os.symlink("alpha", brain / "skills" / "link")  # the native hasher hands the tree back: click refuses it
    _both("hash", ["hash", skills], tmp_path, fast=False)
    (tmp_path / "file").write_text("x")  # click refuses a --brain that is a file before any command runs
    _both("hash", ["hash", skills], tmp_path, {"LEDGER_BRAIN": str(tmp_path / "file")}, fast=False)


def test_reads_answer_as_click_does(tmp_path: Path) -> None:
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    for name in ("a", "b"):
        run_ledger("--brain", str(brain), "skill", "create", name, "--description", f"Skill {name}.", check=True)
    _age(brain / "skills")
    for args in (["status"], ["index"], ["skill", "list"]):  # the click path fills the stat cache
        run_ledger("--brain", str(brain), *args, env={PURE: "1"}, check=True)
    assert "a" in _both("reads", ["--brain", str(brain), "index"], tmp_path)
    _both("reads", ["--brain", str(brain), "skill", "list"], tmp_path)
    _both("reads", ["status"], brain / "skills" / "a")  # found by searching up
    assert json.loads(_both("reads", ["status", "--json"], tmp_path, {"LEDGER_BRAIN": str(brain)}))["clean"]
    _both("reads", ["--brain", str(brain), "status", "--porcelain"], tmp_path, fast=False)  # no such flag: click


def test_sync_and_sync_no_remote_answer_as_click_does(tmp_path: Path) -> None:
    brain, env, _ = synced_brain(tmp_path, ("rt", "agentskills"), ("home", "hermes"))
    b = ["--brain", str(brain)]
    assert _both("sync", [*b, "sync"], tmp_path, env) == "rt: in step\nhome: in step\n"
    assert _both("sync", [*b, "sync", "--no-remote"], tmp_path, env) == "rt: in step\nhome: in step\n"
    _both("sync", [*b, "sync", "--json", "--no-remote", "home"], tmp_path, env)
    run_ledger(*b, "remote", "set", str(tmp_path / "shared.git"), "--create", env=env, check=True)
    run_ledger(*b, "sync", "--no-remote", env=env, check=True)  # config.json changed: the records again
    # With a remote set, a plain sync has a remote half (click's); --no-remote leaves it out.
    doc = json.loads(_both("sync", [*b, "sync", "--no-remote", "--json"], tmp_path, env))
    assert [t["name"] for t in doc["targets"]] == ["rt", "home"] and "remote" not in doc
    assert _run([*b, "sync", "--no-remote", "--no-remote"], tmp_path, env, None)[0] == "CLICK"
    assert _run([*b, "sync", "--no-remote", "--full"], tmp_path, env, None)[0] == "CLICK"


def test_mcp_serves_as_click_does(tmp_path: Path) -> None:
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    out = _both("mcp", ["--brain", str(brain), "mcp"], tmp_path, stdin=INIT)
    assert json.loads(out.splitlines()[0])["result"]["serverInfo"]["name"] == "brain-ledger"
    _both("mcp", ["mcp"], tmp_path, stdin=INIT, fast=False)  # no brain here: click reports it


def test_every_row_of_the_table_is_run_both_ways_above() -> None:
    """A row added to the table without a test above fails here; so does a row that turns off by
    neither switch (its answer could not be checked against click's)."""
    assert {row.name for row in TABLE} == COVERED
    assert all(set(row.off) & {PURE, FULL} for row in TABLE)


def test_the_lstat_key_folds_fields_of_2_63_and_more_as_c_does(tmp_path: Path) -> None:
    """One key for the stat cache and the instant records, its fields taken modulo 2**64 as C's
    ``int64_t`` cast takes them (an inode of 2**63 or more, as some file systems hand out), never an
    overflow; the C batch computes the same key on real paths."""
    from ledger._paths import current_keys, stat_key

    assert stat_key([(2**64 - 5, 2**63, 0, 1, 2)]) == stat_key([(-5, -(2**63), 0, 1, 2)])
    assert stat_key([(1, 2, 3, 4, 5)]) != stat_key([(1, 2, 3, 4, 6)])
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "f").write_text("x")
    keys = current_keys(str(tmp_path), ["s"], [["", "f"]])
    assert keys == current_keys(str(tmp_path), ["s"], [["", "f"]], native=False) and keys[0] is not None


_SETTERS = ("environ.setdefault", "environ.update", "putenv")


def test_no_code_of_ours_sets_the_users_switches() -> None:
    """``LEDGER_PURE_PYTHON`` and ``LEDGER_FULL_PATH`` are the user's: the package only reads them
    (the fast path once set the first to tell click what the native hasher had declined)."""
    package = Path(__file__).resolve().parents[2] / "ledger"
    names = {"'LEDGER_PURE_PYTHON'", "'LEDGER_FULL_PATH'", "PURE", "FULL"}
    found = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if (
                        isinstance(t, ast.Subscript)
                        and "environ" in ast.unparse(t.value)
                        and ast.unparse(t.slice) in names
                    ):
                        found.append(f"{path.relative_to(package)}:{node.lineno}: {ast.unparse(t)}")
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(_SETTERS):
                text = ast.unparse(node)
                if (
                    "LEDGER_PURE_PYTHON" in text
                    or "LEDGER_FULL_PATH" in text
                    or any(ast.unparse(a) in names for a in node.args)
                ):
                    found.append(f"{path.relative_to(package)}:{node.lineno}: {text}")
    assert found == []
