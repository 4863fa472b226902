"""The package's layers, read from the source: no import cycles, no import from a lower layer to a higher one.

The order is ADR 22's, bottom-up.  Every import counts: top-level, deferred (inside a
function) and ``TYPE_CHECKING`` ones, since each is a dependency a reader must follow.
A deferred import is also a smell unless it buys start-up time, so each one that stays
is listed in :data:`DEFERRED` with its reason; a new one fails until it is listed.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ledger"

# Bottom-up.  A module may import its own package and any package below it.
LAYERS: list[tuple[str, ...]] = [
    (
        "ledger.errors",
        "ledger._env",
        "ledger._faults",
        "ledger._json",
        "ledger._native",
        "ledger._paths",
        "ledger._fs",
        "ledger.reports",
    ),  # errors, utilities
    ("ledger.protocol",),  # the spec as pure code: bytes in, bytes out; no git, no RPC, no disk
    ("ledger.bundle",),  # the format and its hash
    ("ledger.signatures",),  # EIP-712 signatures, the trust set, this machine's keys
    ("ledger.store",),  # git snapshots, packs, digests of stored trees, proofs
    ("ledger.evals",),  # evals.json, the workspace, the runner sandbox: read by the audit, run by the brain
    ("ledger.chain",),  # the registry client, config, keystores, receipts, anvil
    ("ledger.audit",),  # reads the store and the chain; never the writer
    ("ledger.write",),  # the one write path, the lock, the head in memory
    ("ledger.brain", "ledger.evals.gate", "ledger.evals.decisions", "ledger.evals.lift"),  # the facade; the gate
    # (its reading and its decisions) and lift read its evidence
    ("ledger.publish",),  # skills published to hosts: MCP Skills entries, discovery sites, the skill anchor
    ("ledger.folders",),  # runtimes' skill folders: reached through descriptors, read in a layout, exported
    ("ledger.attestations",),  # OMS and in-toto attestations of a snapshot, made and checked
    ("ledger.anchoring",),  # the brain on chain: deploy, register, commit roots, epochs
    ("ledger.sync",),  # ledger sync: passes over targets, the journal, the three-way file merge
    ("ledger.remotes", "ledger.sync.run", "ledger.sync.status"),  # git remotes: push, pull, clone, the fleet, the
    # guard, lineage merges; the sync use cases, both halves: the targets' passes (and what they left unsettled)
    # and the shared remote's
    ("ledger.scanner",),  # the scanner: static rules, what scripts mean, the sandboxed run, a second opinion
    ("ledger.sources",),  # where skills from elsewhere come from, each read into pinned candidates
    ("ledger.supply",),  # skills from elsewhere installed: pins, review, quarantine, revocation, manifests
    ("ledger.page",),  # the report pages (ledger report, the audit's --html): one renderer of collected data
    ("ledger.overview",),  # ledger status as a use case: the store, sync targets and merges at a glance
    ("ledger.agent",),  # the agent tools and MCP
    ("ledger.cli",),  # the ledger command
    ("ledger", "ledger.__main__", "ledger._entry", "ledger.fastpath", "ledger.exchange", "ledger.api"),  # entry points
]

# Deferred imports that stay, each with its reason.  Keys are (importer, imported); an
# importer ending in ".*" covers its package.
DEFERRED: dict[tuple[str, str], str] = {
    ("ledger", "ledger.brain"): "the package's names load lazily, so 'ledger hash' imports nothing it does not use",
    ("ledger", "ledger.errors"): "the same lazy names",
    ("ledger._entry", "*"): "the console script asks the fast path's table before click loads",
    ("ledger.anchoring.run", "*"): "the committing half (commits, epochs, the registry client, keys, the node) loads "
    "inside the use cases that send: 'chain anchor' with nothing to commit and 'chain status' load none of it",
    ("ledger.fastpath.*", "*"): "each row of the fast path loads what it answers with only for a command line it "
    "takes: 'ledger hash' loads no stat cache, 'ledger index' no MCP server",
    ("ledger.fastpath", "ledger._paths"): "the same: the head reader loads only for a row that reads a brain",
    ("ledger._paths", "ledger._native"): "the C stat batch loads only when keys are checked",
    ("ledger.cli.*", "*"): "each command imports what it runs when it runs: 'ledger --help' loads no web3 or git",
    ("ledger.audit.chain", "ledger.chain.registry"): "the chain client loads only for an audit with --chain",
    ("ledger.page.collect", "ledger.chain.registry"): "the same: a report reads the chain only with --rpc",
    ("ledger.brain.evidence", "ledger.audit.evidencecheck"): "the audit's entry rules load only when outcomes are "
    "appended, not on every brain's start-up",
    ("ledger.audit.lineage", "ledger.audit.chain"): "the same: the chain half of an audit loads only with --chain",
    ("ledger.write.apply", "ledger.bundle.lint"): "the spec lint (PyYAML's loader) loads on a first authored write",
    ("ledger.brain.reads", "ledger.bundle.lint"): "the same, for 'ledger lint' and views that report a verdict",
    ("ledger.brain.reads", "ledger.evals.evalset"): "the same: evals.json is checked only by 'ledger lint'",
    ("ledger.brain.evaluations", "ledger.evals.gate"): "the gate reads the brain (its plans, versions, trust "
    "set): only 'eval run' needs it, to pick the plans and baseline it may run",
    ("ledger.evals.gate", "ledger.audit.signatures"): "a signature is recovered only for a gated skill's runtime "
    "edit (whose machine made it): 'ledger status' loads no signature check",
    ("ledger.remotes.sharing", "*"): "a pull audits and checks receipts on arrival; the chain loads only then",
    ("ledger.agent.mcp_server", "ledger.agent.wire"): "the MCP SDK and anyio load only when the server starts",
    ("ledger.agent.mcp_server", "ledger.agent.skills_ext"): "the Skills extension's handlers load with the SDK, "
    "when the server starts (ADR 32)",
    ("ledger.agent.skills_ext", "ledger.publish.entries"): "the entries and their anchors load on the first "
    "Skills extension call, not on every MCP server's start",
    ("ledger.protocol.receipts", "ledger.protocol.bundlehash"): "receipts' quick count reads no hash; a full "
    "check does",
    ("ledger.chain.config", "ledger.chain.rpc"): "config is read by every chain command before it may touch a node",
    ("ledger.sync.run", "ledger.anchoring.commits"): "the chain client loads only for a target that shows the "
    "committed root",
    ("ledger.sync.run", "ledger.sync.watching"): "watchfiles loads only for 'ledger sync --watch'",
    ("ledger.overview", "ledger.sync.targets"): "sync's state loads only for a brain with sync targets",
    ("ledger.overview", "ledger.remotes.lineagemerge"): "the merge layer loads only for a brain in a fleet",
    ("ledger.remotes.fleet", "ledger.anchoring.commits"): "the chain client loads only for a remote set to --commit",
    ("ledger.signatures.identity", "ledger.signatures.keystore"): "scrypt and AES load only to lock a key on disk",
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    out["ledger._native"] = PACKAGE / "_native.c"
    return out


def _owner(name: str, modules: Iterable[str]) -> str | None:
    known = set(modules)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_graph() -> dict[str, dict[str, str]]:
    """``{importer: {imported: kind}}``, kind ``top``, ``deferred`` or ``typing``, for imports within ledger."""
    modules = _modules()
    graph: dict[str, dict[str, str]] = defaultdict(dict)

    def visit(module: str, path: Path, body: list[ast.stmt], kind: str) -> None:
        for node in body:
            if isinstance(node, ast.If) and _is_type_checking(node):
                visit(module, path, node.body, "typing")
                visit(module, path, node.orelse, kind)
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(module, path, node.body, "deferred")
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: resolve against this module's package
                    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{node.module}" if node.module else package
                else:
                    base = node.module or ""
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        visit(module, path, [n for n in inner if isinstance(n, ast.stmt)], kind)
                        for handler in inner:
                            if isinstance(handler, ast.ExceptHandler):
                                visit(module, path, handler.body, kind)
                if isinstance(node, ast.ClassDef):
                    visit(module, path, node.body, kind)
                continue
            for name in names:
                if not name.startswith("ledger"):
                    continue
                target = _owner(name, modules)
                if target and target != module and not module.startswith(target + "."):
                    previous = graph[module].get(target)
                    if previous is None or previous == "deferred" or kind == "top":
                        graph[module][target] = kind
        return None

    for module, path in modules.items():
        if path.suffix == ".py":
            visit(module, path, ast.parse(path.read_text(), str(path)).body, "top")
    return graph


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for i, layer in enumerate(LAYERS):
        for prefix in layer:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank >= 0, f"{module} is in no layer: add it to LAYERS"
    return rank


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, {})))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def upward(graph: dict[str, dict[str, str]]) -> list[str]:
    return [
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]}), a higher layer [{kind}]"
        for a, targets in sorted(graph.items())
        for b, kind in sorted(targets.items())
        if layer_of(b) > layer_of(a)
    ]


def _listed(importer: str, imported: str) -> bool:
    return any(_listed_by(pair, importer, imported) for pair in DEFERRED)


def unlisted_deferred(graph: dict[str, dict[str, str]]) -> list[str]:
    return [
        f"{a} defers its import of {b}"
        for a, targets in sorted(graph.items())
        for b, kind in sorted(targets.items())
        if kind == "deferred" and not _listed(a, b)
    ]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_no_upward_imports() -> None:
    assert upward(import_graph()) == []


def test_every_deferred_import_has_a_reason() -> None:
    assert unlisted_deferred(import_graph()) == []


def test_every_listed_deferral_is_still_there() -> None:
    graph = import_graph()
    stale = [
        pair
        for pair in DEFERRED
        if not any(_listed_by(pair, a, b) for a, out in graph.items() for b, k in out.items() if k == "deferred")
    ]
    assert stale == [], "these deferrals are gone: drop them from DEFERRED"


def _listed_by(pair: tuple[str, str], importer: str, imported: str) -> bool:
    who, what = pair
    return (who == importer or (who.endswith(".*") and importer.startswith(who[:-1]))) and what in ("*", imported)


def test_the_checks_catch_what_they_claim_to(tmp_path: Path) -> None:
    """The checks themselves: a cycle, an upward import and an unlisted deferral are each reported."""
    graph = {
        "ledger.store.gitstore": {"ledger.brain.facade": "top"},
        "ledger.brain.facade": {"ledger.store.gitstore": "top"},
        "ledger.bundle.skill": {"ledger.write.writer": "deferred"},
    }
    assert cycles(graph) == [["ledger.brain.facade", "ledger.store.gitstore"]]
    assert len(upward(graph)) == 2
    assert unlisted_deferred(graph) == ["ledger.bundle.skill defers its import of ledger.write.writer"]


# The one write path (ADR 22): only the write layer commits to main and publishes packs. The store
# defines them; chain.receipts writes notes commits, on refs/notes/ledger-chain and never on main, and
# chain.epochlog an operator's epoch log, on refs/ledger/epochs and never on main.
COMMITTERS = {
    "write_commit": ("ledger.write", "ledger.store", "ledger.chain.receipts", "ledger.chain.epochlog"),
    "publish": ("ledger.write", "ledger.store"),
    "move_head": ("ledger.write", "ledger.store"),
}


def commit_calls(modules: dict[str, Path] | None = None) -> list[str]:
    """Each call of ``write_commit``, ``publish`` or ``move_head`` outside the modules allowed to make it."""
    out = []
    for module, path in sorted((modules or _modules()).items()):
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in COMMITTERS:
                allowed = COMMITTERS[node.func.attr]
                if not any(module == a or module.startswith(a + ".") for a in allowed):
                    out.append(f"{module}:{node.lineno} calls {node.func.attr}")
    return out


def test_only_the_write_layer_commits_and_publishes(tmp_path: Path) -> None:
    assert commit_calls() == []
    stray = tmp_path / "merges.py"
    stray.write_text("def f(store):\n    store.write_commit(b'', [], '')\n    store.publish()\n")
    assert commit_calls({"ledger.remotes.lineagemerge": stray}) == [
        "ledger.remotes.lineagemerge:2 calls write_commit",
        "ledger.remotes.lineagemerge:3 calls publish",
    ]


TESTS = Path(__file__).resolve().parents[1]
KINDS = {"unit", "cli", "protocol", "reliability", "interop"}  # tests/README.md says what each holds


def test_tests_are_in_folders_by_kind_and_unit_tests_beside_their_layer() -> None:
    """Issue 53: a test file lives under its kind, a unit test under the name of the package it tests, and the
    code the tests share in one package (tests/harness/); nothing else is a module of tests/ itself."""
    top = sorted(p.name for p in TESTS.glob("*.py"))
    assert top == ["__init__.py", "conftest.py"], f"modules directly in tests/: {top}"
    stray = [
        p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py") if p.parts[len(TESTS.parts)] not in KINDS
    ]
    assert stray == [], f"test files outside the folders by kind: {stray}"
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    layers = {p.name for p in (TESTS / "unit").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert layers <= packages, f"unit folders named after no package of ledger/: {sorted(layers - packages)}"
    harness = [p for p in (TESTS / "harness").glob("*.py")]
    assert not [p.name for p in harness if p.name.startswith("test_")], "tests/harness holds no tests"
    for folder in [TESTS / k for k in KINDS] + [TESTS / "unit" / n for n in layers] + [TESTS / "harness"]:
        assert (folder / "__init__.py").is_file(), f"{folder.relative_to(TESTS)} is not a package"
