#!/usr/bin/env python3
"""The package's census: the figures a structural change is judged by, read from the source.

Counts what issue 51 named: lines and modules in ``ledger/``, the modules that build ``git``
command lines and the functions that run them, cache files under ``.ledger/cache/``, RFC 8785
writers, Merkle cores, ``find_brain`` and ``ProofError`` definitions, hand-written atomic writes,
and reach-throughs into ``Brain``'s parts from other packages.  AST-based, so comments and
docstrings never count.  Usage: ``scripts/census.py [--json] [ROOT]``.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import Counter
from pathlib import Path


def _modules(pkg: Path) -> dict[str, tuple[Path, ast.Module]]:
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        name = ".".join(path.relative_to(pkg.parent).with_suffix("").parts).removesuffix(".__init__")
        out[name] = (path, ast.parse(path.read_text(), str(path)))
    return out


def _is_git_argv(node: ast.AST) -> bool:
    """A list or tuple display whose first element is the string ``"git"`` (a git command line)."""
    return (
        isinstance(node, (ast.List, ast.Tuple))
        and bool(node.elts)
        and isinstance(node.elts[0], ast.Constant)
        and node.elts[0].value == "git"
    )


def _brain_parts(mods: dict[str, tuple[Path, ast.Module]]) -> set[str]:
    """Attributes ``Brain.__init__`` sets on ``self``: the facade's composed parts."""
    for name, (_, tree) in mods.items():
        for cls in ast.walk(tree):
            if isinstance(cls, ast.ClassDef) and cls.name == "Brain" and name.startswith("ledger.brain"):
                init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
                if init is None:
                    continue
                return {
                    t.attr
                    for n in ast.walk(init)
                    if isinstance(n, (ast.Assign, ast.AnnAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self"
                }
    return set()


def census(root: Path) -> dict[str, object]:
    mods = _modules(root / "ledger")
    lines = sum(len(p.read_text().splitlines()) for p, _ in mods.values())
    git_sites: Counter[str] = Counter()
    runners, find_brain, proof_errors, jcs, merkle, replaces = [], [], [], set(), set(), Counter()
    caches: set[str] = set()
    parts = {p.lstrip("_") for p in _brain_parts(mods)}  # a part made private and shown by a property still counts
    reach: Counter[str] = Counter()
    for name, (path, tree) in mods.items():
        text = path.read_text()
        caches.update(re.findall(r'"([a-z0-9_-]+-v\d+\.(?:json|bin|jsonl))"', text))  # a name written out
        caches.update(
            f"{m[0]}-v{m[2]}{m[1]}"
            for m in re.findall(  # a (name, version) row of the one cache's table
                r'^[A-Z_]+ = \("([a-z0-9_-]+)(\.[a-z]+)", (\d+)\)', text, flags=re.M
            )
        )
        for node in ast.walk(tree):
            if _is_git_argv(node):
                git_sites[name] += 1
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                if node.name == "find_brain":
                    find_brain.append(name)
                if node.name == "ProofError":
                    proof_errors.append(name)
                if (
                    isinstance(node, ast.FunctionDef)
                    and node.args.vararg
                    and "subprocess" in ast.unparse(node)
                    and any(_is_git_argv(n) for n in ast.walk(node))
                ):
                    runners.append(f"{name}.{node.name}")
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.replace":
                replaces[name] += 1
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "rfc8785":
                jcs.add(name)
            outside = not name.startswith("ledger.brain")
            if isinstance(node, ast.Attribute) and node.attr.lstrip("_") in parts and outside:
                base = ast.unparse(node.value)
                if base == "brain" or base.endswith(".brain"):
                    reach[node.attr.lstrip("_")] += 1
        if re.search(r"for i in range\(0, len\((\w+)\) - 1, 2\)", text):
            merkle.add(name)  # a Merkle core: a level's nodes paired into the next
    packages = Counter(n.rsplit(".", 1)[0] if n.count(".") > 1 else n for n in mods)
    return {
        "lines": lines,
        "modules": len(mods),
        "packages": {p: c for p, c in sorted(packages.items()) if p.count(".") == 1 and c > 1},
        "git_argv_sites": sum(git_sites.values()),
        "git_argv_modules": dict(sorted(git_sites.items())),
        "git_runners": sorted(runners),
        "cache_files": sorted(caches),
        "jcs_modules": sorted(jcs),
        "merkle_cores": sorted(merkle),
        "find_brain": find_brain,
        "ProofError": proof_errors,
        "os_replace_sites": dict(sorted(replaces.items())),
        "brain_parts": sorted(parts),
        "brain_reach_throughs": sum(reach.values()),
        "reach_by_part": dict(reach.most_common()),
    }


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    doc = census(Path(args[0]) if args else Path(__file__).resolve().parent.parent)
    if "--json" in sys.argv:
        print(json.dumps(doc, indent=1))
    else:
        for key, value in doc.items():
            print(f"{key}: {value}")
