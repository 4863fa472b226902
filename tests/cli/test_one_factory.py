"""One brain factory: no test module outside tests/harness/ makes a brain in a helper of its own.

Every helper or fixture that needs a brain calls ``tests.harness.brains.make_brain``; the differences
between tests are its parameters.  A module-level function, fixture or method (not a ``test_*``
function, whose own setup is its business) that calls ``Brain.init`` or runs ``ledger init`` is a new
copy of the factory, and this test names it.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# Helpers whose subject is the making itself (a test of ``ledger init``), as "path::function": none today.
ALLOWED: frozenset[str] = frozenset()


def _name(node: ast.expr) -> str:
    """The called name: ``run_ledger`` for ``run_ledger(...)``, ``init`` for ``Brain.init(...)``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _strings(nodes: list[ast.expr]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _makes_a_brain(fn: ast.AST) -> bool:
    """``Brain.init(...)``, or ``ledger init`` run through any runner (``run_ledger("init", ...)``,
    ``[LEDGER, "init", ...]``); ``git init`` (a ``git`` callee or argv, ``-q``, ``--bare``) is not one."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "init" and _name(func.value) == "Brain":
                return True
            words = _strings(node.args)
            if words[:1] == ["init"] and "git" not in _name(func) and not {"-q", "--bare"} & set(words):
                return True
        is_argv = isinstance(node, ast.List) and len(node.elts) > 1 and _name(node.elts[0]) == "LEDGER"
        if is_argv and _strings(node.elts[1:2]) == ["init"]:
            return True
    return False


def factories(root: Path) -> list[str]:
    """Every helper under ``root`` (tests/harness/ aside) that makes a brain itself, as "path::name"."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("harness/"):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        scopes = [(n, n.name) for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            scopes += [(m, f"{cls.name}.{m.name}") for m in cls.body if isinstance(m, ast.FunctionDef)]
        for fn, name in scopes:
            if fn.name.startswith("test_") or f"{rel}::{name}" in ALLOWED:
                continue
            if _makes_a_brain(fn):
                found.append(f"{rel}::{name}")
    return found


def test_no_test_module_defines_a_brain_factory_of_its_own() -> None:
    found = factories(TESTS)
    assert found == [], (
        "these helpers make a brain themselves; call tests.harness.brains.make_brain (add a parameter there "
        f"if it lacks one): {found}"
    )


def test_the_scan_finds_a_copy_and_passes_git_init(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "brains.py").write_text("def make_brain(p):\n    return Brain.init(p)\n")
    (tmp_path / "test_x.py").write_text(
        "import subprocess\n"
        "def _brain(p):\n    run_ledger('init', str(p), check=True)\n"
        "def made(p):\n    return Brain.init(p)\n"
        "class Place:\n    def __init__(self, p):\n        subprocess.run([LEDGER, 'init', str(p)])\n"
        "def _remote(p):\n    subprocess.run(['git', 'init', '-q', '--bare', str(p)])\n    _git(p, 'init')\n"
        "def test_init_itself(p):\n    run_ledger('init', str(p))\n"
    )
    assert factories(tmp_path) == ["test_x.py::_brain", "test_x.py::made", "test_x.py::Place.__init__"]
