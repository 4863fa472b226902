"""The native hasher (ledger/_native.c) against the reference (ledger.bundle.merkle), on real files.

It may only ever answer the reference's root or hand the tree back (None);
these tests hunt for a third outcome.  ``scripts/test`` sets
LEDGER_REQUIRE_NATIVE=1, so in CI a missing build is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.bundle import merkle
from ledger.bundle.merkle import format_root, read_tree
from ledger.errors import TreeError
from tests.harness.brains import skill_md
from tests.harness.cli import run_ledger
from tests.protocol.test_vectors import VECTORS, load, materialize

try:
    from ledger import _native
except ImportError:  # pragma: no cover - exercised only on machines without a C build
    if os.environ.get("LEDGER_REQUIRE_NATIVE"):
        raise
    pytest.skip("ledger._native is not built (run ./scripts/bootstrap)", allow_module_level=True)

PURE = {"LEDGER_PURE_PYTHON": "1"}  # the user's switch: the pure-Python hasher, through click


def reference(path: Path) -> bytes:
    return read_tree(path).digest


def test_implements_this_spec_version() -> None:
    assert _native.VERSION == merkle.VERSION


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
@pytest.mark.parametrize("threads", [1, 2, 8])
def test_vectors(path: Path, threads: int, tmp_path: Path) -> None:
    doc, files = load(path)
    materialize(tmp_path / "t", files)
    got = _native.hash_dir(tmp_path / "t", threads=threads)
    if all(p.isascii() for p, _, _ in files):
        assert got is not None and format_root(got) == doc["root"]
    else:
        assert got is None, "non-ASCII names are the reference's to check (NFC, case folding)"


ASCII_NAME = st.text(
    alphabet=st.characters(min_codepoint=1, max_codepoint=127, exclude_characters="/"), min_size=1, max_size=8
).filter(lambda s: s not in (".", "..") and s.lower() != ".git")


def _clash(a: list[str], b: list[str]) -> bool:
    """One path is a prefix of the other (file against directory), or they meet as case-fold twins."""
    for x, y in zip(a, b, strict=False):
        if x != y:
            return x.lower() == y.lower()
    return True


@st.composite
def plain_trees(draw: st.DrawFn) -> dict[str, tuple[bytes, bool]]:
    """ASCII trees that the reference accepts."""
    files: dict[str, tuple[bytes, bool]] = {}
    for _ in range(draw(st.integers(0, 16))):
        parts = draw(st.lists(ASCII_NAME, min_size=1, max_size=4))
        if not any(_clash(parts, k.split("/")) for k in files):
            files["/".join(parts)] = (draw(st.binary(max_size=300)), draw(st.booleans()))
    return files


def write(root: Path, files: dict[str, tuple[bytes, bool]]) -> None:
    root.mkdir(parents=True)
    for rel, (data, exe) in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.chmod(p, 0o755 if exe else 0o644)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=plain_trees(), threads=st.sampled_from([1, 2, 3, 8]))
def test_plain_trees_match_the_reference(files: dict[str, tuple[bytes, bool]], threads: int, tmp_path_factory) -> None:
    root = tmp_path_factory.mktemp("t") / "t"
    write(root, files)
    assert _native.hash_dir(root, threads=threads) == reference(root)


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) + 17])
def test_read_buffer_boundaries(size: int, tmp_path: Path) -> None:
    (tmp_path / "t" / "d").mkdir(parents=True)
    (tmp_path / "t" / "d" / "f").write_bytes(os.urandom(size))
    assert _native.hash_dir(tmp_path / "t") == reference(tmp_path / "t")


def test_names_that_differ_only_in_case_across_directories_are_fine(tmp_path: Path) -> None:
    for rel in ("A/x", "b/X", "C/y/Z", "c2/y/z"):
        (tmp_path / "t" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "t" / rel).write_text(rel)
    assert _native.hash_dir(tmp_path / "t") == reference(tmp_path / "t")


def _symlink(t: Path) -> None:
    (t / "s").mkdir()
    (t / "s" / "f").write_text("x")
    (t / "s" / "link").symlink_to("f")


def _fifo(t: Path) -> None:
    (t / "s").mkdir()
    os.mkfifo(t / "s" / "pipe")


def _empty_dir(t: Path) -> None:
    (t / "s" / "empty").mkdir(parents=True)
    (t / "s" / "f").write_text("x")


def _case_collision(t: Path) -> None:
    (t / "s").mkdir()
    (t / "s" / "Readme").write_text("1")
    (t / "s" / "README").write_text("2")


def _root_case_collision(t: Path) -> None:
    (t / "Skill").mkdir()
    (t / "Skill" / "f").write_text("1")
    (t / "skill").mkdir()
    (t / "skill" / "f").write_text("2")


REFUSED = [_symlink, _fifo, _empty_dir, _case_collision, _root_case_collision]


@pytest.mark.parametrize("make", REFUSED, ids=lambda f: f.__name__.strip("_"))
def test_what_the_reference_refuses_is_handed_back(make, tmp_path: Path) -> None:
    t = tmp_path / "t"
    t.mkdir()
    make(t)
    assert _native.hash_dir(t) is None
    with pytest.raises(TreeError):
        merkle.hash_path(t)
    pure = run_ledger("hash", str(t), env=PURE)
    fast = run_ledger("hash", str(t))
    assert fast.returncode == pure.returncode == 1
    assert fast.stderr == pure.stderr and "error:" in fast.stderr and fast.stdout == ""


def test_non_ascii_names_are_handed_back_and_hashed_by_the_reference(tmp_path: Path) -> None:
    (tmp_path / "t" / "café").mkdir(parents=True)
    (tmp_path / "t" / "café" / "SKILL.md").write_text("x")
    assert _native.hash_dir(tmp_path / "t") is None
    assert merkle.hash_path(tmp_path / "t") == reference(tmp_path / "t")


def test_the_root_itself(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert _native.hash_dir(tmp_path / "empty") == merkle.EMPTY_ROOT
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    assert _native.hash_dir(tmp_path / "link") is None
    assert _native.hash_dir(tmp_path / "missing") is None
    with pytest.raises(ValueError):
        _native.hash_dir(tmp_path / "empty", threads=-1)


def _brain_like(root: Path, n: int) -> Path:
    for i in range(n):
        d = root / "skills" / f"skill-{i:03d}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(skill_md(f"skill-{i:03d}", "d", f"body {i}\n"))
        if i % 3 == 0:
            (d / "scripts").mkdir()
            (d / "scripts" / "run.sh").write_text("#!/bin/sh\n")
            os.chmod(d / "scripts" / "run.sh", 0o755)
    return root / "skills"


@pytest.mark.parametrize("as_json", [False, True])
def test_cli_output_is_byte_identical_with_and_without_it(as_json: bool, tmp_path: Path) -> None:
    skills = _brain_like(tmp_path / "b", 40)
    args = ["hash", str(skills)] + (["--json"] if as_json else [])
    fast = run_ledger(*args)
    pure = run_ledger(*args, env=PURE)
    assert fast.returncode == pure.returncode == 0, fast.stderr + pure.stderr
    assert fast.stdout == pure.stdout
    root = json.loads(fast.stdout)["root"] if as_json else fast.stdout.strip()
    assert root == format_root(reference(skills))


def test_cli_fast_path_skips_click_and_falls_back_for_everything_else(tmp_path: Path) -> None:
    skills = _brain_like(tmp_path / "b", 3)
    probe = (  # click exits through SystemExit, so report from atexit
        "import atexit, sys; from ledger._entry import main; sys.argv = ['ledger'] + sys.argv[1:]; "
        "atexit.register(lambda: print('click' in sys.modules, 'ledger.bundle.merkle' in sys.modules, "
        "file=sys.stderr)); "
        "main()"
    )
    quick = subprocess.run([sys.executable, "-c", probe, "hash", str(skills)], capture_output=True, text=True)
    assert quick.returncode == 0 and quick.stderr.split() == ["False", "False"]
    slow = subprocess.run(
        [sys.executable, "-c", probe, "hash", "--json", "--json", str(skills)], capture_output=True, text=True
    )
    assert slow.returncode == 0 and slow.stderr.split() == ["True", "True"]
    assert json.loads(slow.stdout)["root"] == quick.stdout.strip()


def test_cli_errors_come_from_click(tmp_path: Path) -> None:
    missing = run_ledger("hash", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    (tmp_path / "file").write_text("x")
    env = {"LEDGER_BRAIN": str(tmp_path / "file")}
    bad_default = run_ledger("hash", str(tmp_path), env=env)
    pure = run_ledger("hash", str(tmp_path), env={**env, **PURE})
    assert bad_default.returncode == pure.returncode == 2
    assert bad_default.stderr == pure.stderr


def test_brain_directory_hashes_its_skills(tmp_path: Path) -> None:
    from ledger.brain import Brain

    with Brain.init(tmp_path / "b") as brain:
        receipt = brain.create("alpha", "First skill.", "Body.")
    fast = run_ledger("hash", str(tmp_path / "b"))
    assert fast.returncode == 0 and fast.stdout.strip() == receipt.root


@pytest.mark.parametrize("name", [".git", ".GIT", ".Git"])
def test_dot_git_is_handed_back_and_refused_by_the_reference(tmp_path: Path, name: str) -> None:
    (tmp_path / "t" / "s" / name).mkdir(parents=True)
    (tmp_path / "t" / "s" / name / "config").write_text("x")
    assert _native.hash_dir(tmp_path / "t") is None
    with pytest.raises(TreeError, match=r"'\.git' component"):
        merkle.hash_path(tmp_path / "t")


def test_stat_keys_match_the_python_keys(tmp_path: Path) -> None:
    """The batch lstat the stat cache validates with gives the keys ledger.store.statcache computes."""
    from ledger._paths import current_keys
    from ledger.store.statcache import signature

    for name in ("a", "b"):
        (tmp_path / name / "references").mkdir(parents=True)
        (tmp_path / name / "SKILL.md").write_text(f"skill {name}\n")
        (tmp_path / name / "references" / "r.md").write_text("r\n")
    names, groups = ["a", "b", "gone"], [signature(tmp_path / "a")[0], signature(tmp_path / "b")[0], [""]]
    keys = _native.stat_keys(str(tmp_path), names, groups)
    assert keys[:2] == [
        current_keys(str(tmp_path), [n], [g], native=False)[0] for n, g in zip(names[:2], groups[:2], strict=True)
    ]
    assert keys[2] is None and keys[0] != keys[1]
    (tmp_path / "b" / "references" / "r.md").write_text("R\n")
    assert _native.stat_keys(str(tmp_path), names[:2], groups[:2])[1] != keys[1]
    assert _native.stat_keys(str(tmp_path / "missing"), names[:1], groups[:1]) == [None]
