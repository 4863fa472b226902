"""Issue 35 (start-up): no heavy module on the start-up path of a light command.

Each light command runs as a user runs it (the installed console script, in a subprocess,
through :func:`tests.conftest.run_ledger`) with ``PYTHONPROFILEIMPORTTIME=1``, so the
interpreter itself reports every module the process imports, on stderr.  A module of
:data:`HEAVY` in that report fails the test, with the chain of imports that pulled it in.
Nothing here is timed: which modules load is deterministic, how long they take is not.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger

# Top-level packages a light (local, read-only) command must never import, and why.
# (Costs: `python -c 'import X'` less `python -c pass`, medians of 5, measured for issue 35.)
HEAVY: dict[str, str] = {
    "web3": "the chain client, ~0.7 s to import; only chain commands (commit, chain ...) need it",
    "eth_abi": "web3's ABI codec, imported with it; nothing local encodes ABI",
    "eth_account": "~0.5 s; snapshot signing uses coincurve + safe-pysha3 instead (ledger/protocol/signing.py)",
    "mcp": "the MCP SDK, ~0.6 s (its __init__ loads the client too); only `ledger mcp` serving needs it",
    "mcp_types": "the MCP SDK's protocol models, ~0.2 s; imported by ledger.agent.mcp_server.serve only",
    "anyio": "the MCP server's async runtime; no CLI command is async",
    "pydantic": "~40 ms; comes with mcp and eth_account, nothing local validates with it",
    "pydantic_core": "pydantic's compiled core; same reason as pydantic",
    "jsonschema": "~70 ms; tool-argument validation for the agent surface only",
    "watchfiles": "the file watcher of long-running sync; a one-shot command never watches",
    "matplotlib": "bench plots only (scripts/bench, extra 'bench')",
    "hypothesis": "~0.1 s; a test-only dependency that must never be reachable from the package",
    # Our own modules, named in full: a light command reads no snapshot signature.
    "ledger.brain.signers": "~7 ms with what it imports; only `keys export` reads every snapshot's siblings",
    "ledger.audit.signatures": "the audit's signature checks; no light command recovers a signer",
}


def heavy_name(module: str) -> str | None:
    """The :data:`HEAVY` entry ``module`` falls under (its top-level package, or a listed module), or None."""
    return next((h for h in HEAVY if module == h or module.startswith(h + ".")), None)


SKILL = "alpha"

# (id, argv after --brain BRAIN or as given, extra environment).  LEDGER_FULL_PATH sends
# status / skill list / index through click instead of the stat-cache answer (ledger/fastpath/reads.py);
# LEDGER_PURE_PYTHON sends hash through click instead of the native hasher (ledger/_entry.py).
FULL, PURE = {"LEDGER_FULL_PATH": "1"}, {"LEDGER_PURE_PYTHON": "1"}
LIGHT: list[tuple[str, list[str], dict[str, str]]] = [
    ("help", ["--help"], {}),
    ("version", ["--version"], {}),
    ("mcp-help", ["mcp", "--help"], {}),
    ("chain-help", ["chain", "--help"], {}),
    ("status", ["status"], {}),
    ("status-full", ["status"], FULL),
    ("status-json-full", ["status", "--json"], FULL),
    ("log-oneline", ["log", "--oneline"], {}),
    ("skill-list", ["skill", "list"], {}),
    ("skill-list-full", ["skill", "list"], FULL),
    ("index-full", ["index"], FULL),
    ("hash-brain", ["hash", "{brain}"], {}),
    ("hash-skills-json", ["hash", "{brain}/skills", "--json"], {}),
    ("hash-pure", ["hash", "{brain}"], PURE),
    ("show", ["show", SKILL], {}),
    ("show-version", ["show", f"{SKILL}@1"], {}),
    ("keys-show", ["keys", "show"], {}),
    ("diff", ["diff"], {}),
]


def imports_of(stderr: str) -> list[tuple[int, str]]:
    """(depth, module) for every ``-X importtime`` line, in the order Python printed them
    (a module's line comes after the lines of everything it imported, one level deeper)."""
    out = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        name = line.split("|", 2)[2]
        module = name.strip()
        if module == "imported package":  # the header line
            continue
        out.append(((len(name) - len(name.lstrip()) - 1) // 2, module))
    return out


def chain_to(imports: list[tuple[int, str]], index: int) -> list[str]:
    """``[top, ..., imports[index]]``: who imported the module at ``index``, outermost first."""
    depth, module = imports[index]
    path = [module]
    for d, m in imports[index + 1 :]:
        if d < depth:
            path.append(m)
            depth = d
    return path[::-1]


def heavy_imports(stderr: str) -> tuple[list[str], set[str]]:
    """(each distinct way a heavy module got in, cut at the first heavy module; the heavy packages loaded)."""
    imports = imports_of(stderr)
    ways, packages = set(), set()
    for i, (_, module) in enumerate(imports):
        name = heavy_name(module)
        if name is None:
            continue
        packages.add(name)
        path = chain_to(imports, i)
        first = next(n for n, m in enumerate(path) if heavy_name(m))
        ways.add(" -> ".join(path[: first + 1]))
    return sorted(ways), packages


@pytest.fixture(scope="module")
def small_brain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A signed brain with one skill, whose stat cache can answer status, index and skill list."""
    root = make_brain(tmp_path_factory.mktemp("startup") / "brain", {SKILL: "Alpha skill"}, via="cli")
    # The stat cache does not trust files modified within two seconds of caching them
    # (ledger/store/statcache.py, "racily clean"): age them instead of sleeping.
    old = time.time() - 3600
    for path in sorted((root / "skills").rglob("*"), reverse=True):
        os.utime(path, (old, old), follow_symlinks=False)
    for args in (["status"], ["skill", "list"], ["index"]):  # the full path fills the cache
        run_ledger("--brain", str(root), *args, env={"LEDGER_FULL_PATH": "1"}, check=True)
    return root


@pytest.mark.parametrize(("args", "env"), [pytest.param(a, e, id=i) for i, a, e in LIGHT])
def test_light_commands_import_nothing_heavy(small_brain: Path, args: list[str], env: dict[str, str]) -> None:
    argv = [a.replace("{brain}", str(small_brain)) for a in args]
    if argv[0] != "hash" and not argv[0].startswith("-"):
        argv = ["--brain", str(small_brain), *argv]
    proc = run_ledger(*argv, env={**env, "PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, (argv, proc.stdout, proc.stderr[-3000:])
    seen = {m for _, m in imports_of(proc.stderr)}
    assert "ledger._entry" in seen, "no import report: is PYTHONPROFILEIMPORTTIME honoured?"
    if "LEDGER_FULL_PATH" in env or "LEDGER_PURE_PYTHON" in env:
        assert "ledger.cli" in seen, f"{env} did not force the click path"
    elif args in (["status"], ["skill", "list"]) or args[0] == "hash":
        assert "click" not in seen, "the quick path (ledger/fastpath/, ledger/_entry.py) did not answer"
    ways, packages = heavy_imports(proc.stderr)
    assert not packages, (
        f"`ledger {' '.join(argv)}` imports heavy modules on its start-up path:\n  "
        + "\n  ".join(ways)
        + "\nheavy packages loaded, and why each is heavy:\n  "
        + "\n  ".join(f"{m}: {HEAVY[m]}" for m in sorted(packages))
    )


# What `ledger mcp` must not load: the SDK's client half and its high-level server (the package
# __init__ modules import them; ledger.agent.mcp_server loads the server's submodules only), and
# the CLI (ledger._entry starts the server without it: ADR 32; click itself comes with the SDK's uvicorn).
MCP_UNUSED = ("mcp.client", "mcp.server.mcpserver", "pycryptodome", "Crypto", "ledger.cli")


def test_mcp_server_loads_only_the_server_half_of_the_sdk(small_brain: Path) -> None:
    init = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"startup-test","version":"0"}}}\n'
    )
    proc = run_ledger("--brain", str(small_brain), "mcp", input=init, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "brain-ledger", reply
    seen = {m for _, m in imports_of(proc.stderr)}
    assert "mcp.server.lowlevel.server" in seen, "no import report, or the SDK's server was not loaded"
    loaded = sorted(m for m in seen if any(m == u or m.startswith(u + ".") for u in MCP_UNUSED))
    assert not loaded, f"`ledger mcp` loads parts of the SDK it never uses: {loaded[:10]}"


def test_the_detector_sees_a_heavy_import() -> None:
    """The parser finds a heavy module nested under ledger code, and names who pulled it in."""
    report = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:        10 |         10 |       eth_abi.codec\n"
        "import time:        20 |         30 |     eth_abi\n"
        "import time:        40 |         70 |   web3\n"
        "import time:         5 |         75 | ledger.cli.brain\n"
        "import time:         5 |          5 | click\n"
    )
    assert heavy_imports(report) == (["ledger.cli.brain -> web3"], {"web3", "eth_abi"})
    assert heavy_imports("import time:         5 |          5 | click\n") == ([], set())
    ours = (
        "import time:        10 |         10 |     ledger.audit.signatures\n"
        "import time:        10 |         20 |   ledger.brain.signers\n"
        "import time:         5 |         25 | ledger.brain.keyring\n"
    )
    assert heavy_imports(ours) == (
        ["ledger.brain.keyring -> ledger.brain.signers"],
        {"ledger.brain.signers", "ledger.audit.signatures"},
    )


# The chain's libraries, none of which a chain command's hot path may load (issue 35): reads and
# commits go over ledger/chain/rpc.py, abi.py and signer.py.  Deploy and register keep web3.
CHAIN_HEAVY = ("web3", "eth_abi", "eth_account", "eth_utils", "eth_keys", "eth_keyfile", "rlp", "hexbytes")

CHAIN_LIGHT: list[tuple[str, list[str]]] = [
    ("chain-status", ["chain", "status"]),
    ("chain-status-json", ["chain", "status", "--json"]),
    ("commit", ["commit"]),  # a pending snapshot: reads the events, signs and sends one transaction
    ("commit-nothing", ["commit"]),
    ("patch-commit", ["skill", "patch", SKILL, "--old", "Alpha", "--new", "Beta", "--anchor"]),
    ("verify-chain", ["verify", "--chain"]),
]


@pytest.mark.chain
def test_chain_commands_load_no_chain_library(tmp_path: Path, node) -> None:
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    for step in (["chain", "use", node.url], ["chain", "deploy"], ["chain", "register"]):
        run_ledger("--brain", str(brain), *step, check=True)
    run_ledger("--brain", str(brain), "skill", "create", SKILL, "--description", "Alpha skill", check=True)
    for name, args in CHAIN_LIGHT:
        proc = run_ledger("--brain", str(brain), *args, env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert proc.returncode == 0, (name, proc.stdout, proc.stderr[-3000:])
        imports = imports_of(proc.stderr)
        assert any(m == "ledger.chain.rpc" for _, m in imports), f"{name}: no import report, or no chain read"
        loaded = sorted({m.split(".")[0] for _, m in imports} & {*CHAIN_HEAVY, *HEAVY})
        ways = sorted(
            {
                " -> ".join(chain_to(imports, i))
                for i, (_, m) in enumerate(imports)
                if m.split(".")[0] in loaded and "." not in m
            }
        )
        assert not loaded, f"`ledger {' '.join(args)}` ({name}) loads {loaded}:\n  " + "\n  ".join(ways)
    status = json.loads(run_ledger("--brain", str(brain), "chain", "status", "--json", check=True).stdout)
    assert status["in_sync"] and status["onchain_seq"] == 3, status  # init, create, patch: all anchored


# What a command may load of the report modules (ADR 73: a report module loads when a command that
# returns its reports runs).  `status` returns ledger.brain.reports' StatusReport; reading the eval
# gate's settings loads no eval report (issue 53: ledger.evals.gate had loaded them, 14 ms of dataclasses).
STATUS_REPORTS = {"ledger.reports", "ledger.brain.reports"}


def test_click_status_loads_only_its_own_reports(small_brain: Path) -> None:
    proc = run_ledger("--brain", str(small_brain), "status", env={**FULL, "PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, (proc.stdout, proc.stderr[-3000:])
    imports = imports_of(proc.stderr)
    assert any(m == "ledger.cli" for _, m in imports), "LEDGER_FULL_PATH did not force the click path"
    reports = {m for _, m in imports if m == "ledger.reports" or m.endswith(".reports")}
    ways = sorted(" -> ".join(chain_to(imports, i)) for i, (_, m) in enumerate(imports) if m in reports)
    assert reports == STATUS_REPORTS, "\n  ".join(["`ledger status` loads:", *ways])


# The committing half of the chain commands: the registry client, the transaction sender, the epochs,
# the keys and the node.  `ledger chain anchor` (and its old spelling `ledger commit`) with nothing to
# commit asks one raw call and loads none of it, as its help says ("the registry client is never
# loaded"); issue 52's use case had loaded all of it at start (ledger/anchoring/run.py), 30 ms.
COMMITTING_HALF = (
    "ledger.anchoring.commits",
    "ledger.anchoring.epochs",
    "ledger.chain.registry",
    "ledger.chain.keys",
    "ledger.chain.anvil",
)


@pytest.mark.chain
def test_nothing_to_commit_loads_no_committing_half(tmp_path: Path, node) -> None:
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    for step in (["chain", "use", node.url], ["chain", "deploy"], ["chain", "register"], ["chain", "anchor"]):
        run_ledger("--brain", str(brain), *step, check=True)
    for args in (["chain", "anchor"], ["commit"]):
        proc = run_ledger("--brain", str(brain), *args, env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr[-3000:])
        assert proc.stdout.startswith("nothing to commit: the on-chain head is the local head"), proc.stdout
        imports = imports_of(proc.stderr)
        assert any(m == "ledger.chain.rpc" for _, m in imports), f"{args}: no import report, or no chain read"
        ways = sorted(" -> ".join(chain_to(imports, i)) for i, (_, m) in enumerate(imports) if m in COMMITTING_HALF)
        assert not ways, "\n  ".join([f"`ledger {' '.join(args)}` with nothing to commit loads:", *ways])
