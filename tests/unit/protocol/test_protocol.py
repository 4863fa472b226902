"""ledger.protocol is the spec as pure code: one Merkle core for both trees, and no git, no RPC, no disk."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from ledger.errors import ProofError
from ledger.protocol import bundlehash, tlog
from ledger.protocol.merkle import Merkle

PROTOCOL = Path(__file__).resolve().parents[3] / "ledger" / "protocol"
TREES = {"bundle hash v1 (BLAKE3)": bundlehash.TREE, "epoch log (SHA-256)": tlog.TREE}


def _mth(tree: Merkle, leaves: list[bytes]) -> bytes:
    """RFC 6962 §2.1's MTH, as the RFC writes it: split at the largest power of two below n."""
    if not leaves:
        return tree.empty
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return tree.node(_mth(tree, leaves[:k]), _mth(tree, leaves[k:]))


@pytest.mark.parametrize("name", TREES)
def test_one_core_builds_proves_and_verifies_each_tree_as_rfc_6962_defines_it(name: str) -> None:
    tree, rng = TREES[name], random.Random(51)
    for n in range(34):
        leaves = [rng.randbytes(32) for _ in range(n)]
        levels = tree.levels(leaves)
        root = tree.top(levels)
        assert root == tree.root(leaves) == _mth(tree, leaves), n
        for i in range(n):
            path = tree.path(levels, i)
            assert tree.root_from_path(i, n, leaves[i], path) == root
            if path:  # a changed sibling leads elsewhere, and is refused
                bad = [bytes([path[0][0] ^ 1]) + path[0][1:], *path[1:]]
                with pytest.raises(ProofError):
                    tree.verify_inclusion(i, n, leaves[i], bad, root)
            with pytest.raises(ProofError):  # one hash short
                tree.root_from_path(i, n, leaves[i], path[:-1] if path else [root])
        for m in range(1, n + 1):
            tree.verify_consistency(m, n, _mth(tree, leaves[:m]), root, tree.consistency(levels, m))
        if n:
            i = rng.randrange(n)
            new = rng.randbytes(32)
            tree.update(levels, i, new)
            assert tree.top(levels) == _mth(tree, [*leaves[:i], new, *leaves[i + 1 :]])


def test_the_two_trees_differ_only_in_their_hashes() -> None:
    """Domain separation: the same leaves make different roots under BLAKE3 and SHA-256, each the empty
    string's hash for no leaves."""
    leaves = [bytes([i]) * 32 for i in range(5)]
    assert bundlehash.TREE.root(leaves) != tlog.TREE.root(leaves)
    assert bundlehash.TREE.root([]) == bundlehash.EMPTY_ROOT
    assert tlog.TREE.root([]).hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


_IO_MODULES = {"subprocess", "os", "pathlib", "tempfile", "shutil", "socket", "urllib", "http", "sqlite3", "io"}
_ABOVE = ("ledger.store", "ledger.chain", "ledger.bundle", "ledger.signatures", "ledger.brain", "ledger.write")


def test_the_protocol_package_reads_no_disk_runs_no_git_and_calls_no_node() -> None:
    """Bytes in, bytes out: no module of ledger.protocol imports a way to the disk, a process or the network,
    or a package that has one; none opens a file."""
    modules = sorted(PROTOCOL.glob("*.py"))
    assert len(modules) > 1, "ledger/protocol holds the spec's modules"
    found = []
    for path in modules:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                    found.append(f"{path.name}: open()")
                continue
            for name in names:
                if name.split(".")[0] in _IO_MODULES or name.startswith(_ABOVE):
                    found.append(f"{path.name}: import {name}")
    assert found == []
