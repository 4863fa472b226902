"""The chain, sharing and keys commands as use cases (issue 52): each returns a typed report whose
``to_json()`` is the command's ``--json`` document and validates against the report's schema;
the commands that printed no JSON before (chain up/down/use/authorize, clone, keys new/import/export)
print ONE document with ``--json``, and nothing else on stdout.  Real anvil, real git, the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ledger.anchoring import run as chain_run
from ledger.anchoring.reports import (
    AnchorReport,
    AuthorizeReport,
    ChainDownReport,
    ChainStatusReport,
    ChainUpReport,
    ChainUseReport,
    DeployReport,
    EpochReport,
    LocationReport,
    RegisterReport,
)
from ledger.brain import Brain
from ledger.brain import trustset as keys_run
from ledger.chain import committers
from ledger.chain.keys import DEV_KEY_NAME
from ledger.chain.reports import CommitterKeyReport, CommitterKeysReport
from ledger.cli import main
from ledger.cli.common import reports_of
from ledger.remotes import run as sharing_run
from ledger.remotes.reports import CloneReport, PullReport, PushReport
from ledger.signatures.identity import KeyDir
from ledger.signatures.reports import KeyExportReport, KeyReport, KeysReport, TrustUnchanged
from tests.harness.brains import copy_brain
from tests.harness.cli import run_in_process

# anvil's second dev account: a committer to authorize (a public address, nothing secret)
OTHER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
# a throwaway private key for 'keys import' (generated for this test, holds nothing)
THROWAWAY = "0x" + "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"


def _one_doc(proc: subprocess.CompletedProcess[str]) -> Any:
    """stdout is exactly one JSON document (json.loads refuses anything after it)."""
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _valid(report_type: type, doc: Any) -> None:
    schema = report_type.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema)


def _skill(brain: Path, name: str) -> None:
    run_in_process(
        "--brain", str(brain), "skill", "create", name, "--description", f"the {name} skill", "--body", "hi", check=True
    )


# --------------------------------------------------------------------------- the chain


def test_chain_reads_from_python_are_the_cli_json(chained: Brain) -> None:
    root = str(chained.root)
    _skill(chained.root, "alpha")
    status = chain_run.chain_status(chained)
    assert isinstance(status, ChainStatusReport) and status.pending == 2 and status.shares is not None
    cli = _one_doc(run_in_process("--brain", root, "chain", "status", "--json"))
    assert status.to_json() == cli  # anvil mines only on a transaction: the same block
    _valid(ChainStatusReport, cli)
    where = chain_run.location(chained)
    assert isinstance(where, LocationReport) and where.tx is None
    assert where.to_json() == _one_doc(run_in_process("--brain", root, "chain", "location", "--json"))
    _valid(LocationReport, where.to_json())


def test_anchor_and_epoch_from_python_match_the_cli(chained: Brain, tmp_path: Path) -> None:
    root = str(chained.root)
    _skill(chained.root, "alpha")
    report = chain_run.anchor(chained, key=DEV_KEY_NAME)
    assert isinstance(report, AnchorReport) and report.committed == 2 and "evidence" in report.to_json()
    _valid(AnchorReport, report.to_json())
    again = chain_run.anchor(chained, key=DEV_KEY_NAME)  # nothing to do: the quick path, no "evidence" key
    cli = _one_doc(run_in_process("--brain", root, "commit", "--json", "--key", DEV_KEY_NAME))
    assert again.to_json() == cli and "evidence" not in cli and cli["committed"] == 0
    _valid(AnchorReport, cli)
    epoch = chain_run.epoch(chained, [chained], key=DEV_KEY_NAME)
    assert isinstance(epoch, EpochReport) and epoch.tx is not None and epoch.heads == 2
    assert list(epoch.to_json()) == [
        "epoch",
        "tx",
        "gasUsed",
        "heads",
        "size",
        "root",
        "brains",
        "gasPerHead",
        "evidence",
    ]
    _valid(EpochReport, epoch.to_json())
    cli = _one_doc(run_in_process("--brain", root, "anchor", root, "--json", "--key", DEV_KEY_NAME))
    assert cli["tx"] is None and list(cli) == list(epoch.to_json())  # nothing new since the epoch just made
    _valid(EpochReport, cli)


def test_deploy_and_register_from_python_give_the_cli_document(tmp_path: Path, node) -> None:
    with Brain.init(tmp_path / "py") as brain:
        brain.update_config(chain={"rpc": node.url})
        deployed = chain_run.deploy(brain, key=DEV_KEY_NAME)
        registered = chain_run.register(brain, shares=500, key=DEV_KEY_NAME)
    assert isinstance(deployed, DeployReport) and isinstance(registered, RegisterReport)
    assert registered.shares is not None and registered.shares.total_supply == 500
    other = Brain.init(tmp_path / "cli")
    other.close()
    cli = str(tmp_path / "cli")
    assert run_in_process("--brain", cli, "chain", "use", node.url).returncode == 0
    dep = _one_doc(run_in_process("--brain", cli, "chain", "deploy", "--json", "--key", DEV_KEY_NAME))
    reg = _one_doc(
        run_in_process("--brain", cli, "chain", "register", "--shares", "500", "--json", "--key", DEV_KEY_NAME)
    )
    assert list(dep) == list(deployed.to_json()) == ["registry", "chain_id", "block"]
    assert list(reg) == list(registered.to_json()) == ["agent", "registry", "shares"]  # no key the text alone needs
    for kind, doc in (
        (DeployReport, dep),
        (RegisterReport, reg),
        (DeployReport, deployed.to_json()),
        (RegisterReport, registered.to_json()),
    ):
        _valid(kind, doc)


def test_chain_authorize_json_is_one_document(chained: Brain) -> None:
    root = str(chained.root)
    granted = _one_doc(run_in_process("--brain", root, "chain", "authorize", OTHER, "--json", "--key", DEV_KEY_NAME))
    assert granted["address"] == OTHER and granted["authorized"] is True and granted["tx"].startswith("0x")
    _valid(AuthorizeReport, granted)
    revoked = chain_run.authorize(chained, OTHER, revoke=True, key=DEV_KEY_NAME)
    assert revoked.authorized is False and list(revoked.to_json()) == list(granted)
    text = run_in_process("--brain", root, "chain", "authorize", OTHER, "--revoke", "--key", DEV_KEY_NAME)
    assert text.stdout == f"revoked {OTHER}\n"  # the text is as it was


def test_chain_up_down_use_json_are_one_document_each(tmp_path: Path, node) -> None:
    root = tmp_path / "brain"
    Brain.init(root).close()
    b = str(root)
    try:
        up = run_in_process("--brain", b, "chain", "up", "--json")
        doc = _one_doc(up)
        _valid(ChainUpReport, doc)
        assert doc["started"] is True and doc["rpc"] == f"http://127.0.0.1:{doc['port']}"
        again = _one_doc(run_in_process("--brain", b, "chain", "up", "--json"))  # already running: still one document
        assert again == {**doc, "started": False}
        assert json.loads((root / ".ledger" / "config.json").read_text())["chain"]["rpc"] == doc["rpc"]
    finally:
        down = run_in_process("--brain", b, "chain", "down", "--json")
    stopped = _one_doc(down)
    assert stopped == {"stopped": True, "pid": doc["pid"]}
    _valid(ChainDownReport, stopped)
    assert _one_doc(run_in_process("--brain", b, "chain", "down", "--json")) == {"stopped": False, "pid": None}
    used = _one_doc(run_in_process("--brain", b, "chain", "use", node.url, "--json"))
    assert used == {"rpc": node.url, "registry": None, "chain_id": None}
    _valid(ChainUseReport, used)
    with Brain.open(root) as brain:
        assert chain_run.chain_use(brain, node.url).to_json() == used
    bad = run_in_process("--brain", b, "chain", "use", "not-a-url", "--json")
    assert bad.returncode == 2 and bad.stdout == ""  # a usage error prints no document


# --------------------------------------------------------------------------- sharing


def test_push_pull_clone_from_python_are_the_cli_json(tmp_path: Path) -> None:
    src = tmp_path / "src"
    Brain.init(src).close()
    _skill(src, "alpha")
    twin = tmp_path / "twin"
    copy_brain(src, twin)
    with Brain.open(src) as brain:
        pushed = sharing_run.push(brain, str(tmp_path / "r1.git"))
    cli = _one_doc(run_in_process("--brain", str(twin), "push", str(tmp_path / "r2.git"), "--json"))
    assert pushed.to_json() == {**cli, "remote": str(tmp_path / "r1.git")} and pushed.snapshots >= 1
    _valid(PushReport, cli)
    cloned = _one_doc(run_in_process("clone", str(tmp_path / "r1.git"), str(tmp_path / "c1"), "--json"))
    assert cloned["skills"] == 1 and cloned["refused_refs"] == {} and cloned["path"] == str(tmp_path / "c1")
    _valid(CloneReport, cloned)
    py = sharing_run.clone(str(tmp_path / "r1.git"), tmp_path / "c2")
    assert py.to_json() == {**cloned, "path": str(tmp_path / "c2")}
    _skill(tmp_path / "c1", "beta")
    assert run_in_process("--brain", str(tmp_path / "c1"), "push", str(tmp_path / "r1.git")).returncode == 0
    mirror = tmp_path / "c3"
    shutil.copytree(tmp_path / "c2", mirror, symlinks=True)
    with Brain.open(tmp_path / "c2") as brain:
        pulled = sharing_run.pull(brain, str(tmp_path / "r1.git"))
    cli = _one_doc(run_in_process("--brain", str(mirror), "pull", str(tmp_path / "r1.git"), "--json"))
    assert pulled.to_json() == cli and list(cli)[:2] == ["remote", "from"] and cli["moved"] is True
    _valid(PullReport, cli)
    text = run_in_process("clone", str(tmp_path / "r1.git"), str(tmp_path / "c4"))
    assert text.stdout.startswith(f"cloned {tmp_path / 'r1.git'} into {tmp_path / 'c4'} (2 skill(s), audited)\nroot ")


# --------------------------------------------------------------------------- keys


def test_signing_keys_from_python_are_the_cli_json(brain: Brain) -> None:
    root = str(brain.root)
    shown = keys_run.show(brain)
    assert isinstance(shown, KeysReport)
    assert shown.to_json() == _one_doc(run_in_process("--brain", root, "keys", "show", "--json"))
    _valid(KeysReport, shown.to_json())
    made = keys_run.generate(KeyDir(Path(shown.keys_dir)), "user")
    assert isinstance(made, KeyReport) and made.created is False  # init made it
    assert made.to_json() == _one_doc(run_in_process("--brain", root, "keys", "generate", "user", "--json"))
    _valid(KeyReport, made.to_json())
    user = shown.local[0].address
    assert user is not None
    same = keys_run.trust(brain, "user", user)
    assert isinstance(same, TrustUnchanged)
    assert same.to_json() == _one_doc(run_in_process("--brain", root, "keys", "trust", "user", user, "--json"))
    _valid(TrustUnchanged, same.to_json())


def test_keys_export_json_says_where_the_public_key_went(brain: Brain, tmp_path: Path) -> None:
    root = str(brain.root)
    text = run_in_process("--brain", root, "keys", "export", "--public", "user")
    assert text.returncode == 0 and text.stdout.startswith("-----BEGIN PUBLIC KEY-----")
    doc = _one_doc(run_in_process("--brain", root, "keys", "export", "--public", "user", "--json"))
    assert doc["exported"] == "public" and doc["output"] is None and doc["text"] == text.stdout  # as text prints it
    assert doc["scheme"] == "p256" and doc["role"] == "user" and doc["address"].startswith("0x")
    _valid(KeyExportReport, doc)
    out = tmp_path / "user.pem"
    doc = _one_doc(run_in_process("--brain", root, "keys", "export", "--public", "user", "-o", str(out), "--json"))
    assert doc["output"] == str(out) and "text" not in doc and out.read_text() == text.stdout
    _valid(KeyExportReport, doc)
    _skill(brain.root, "alpha")  # a signed snapshot certifies the siblings
    signers = run_in_process("--brain", root, "keys", "export", "--allowed-signers")
    doc = _one_doc(run_in_process("--brain", root, "keys", "export", "--allowed-signers", "--json"))
    assert doc["exported"] == "allowed-signers" and doc["text"] == signers.stdout and doc["signers"] >= 1
    _valid(KeyExportReport, doc)


def test_committer_keystores_json_never_hold_the_secret(tmp_path: Path) -> None:
    env = {"LEDGER_KEYSTORE": str(tmp_path / "ks"), "LEDGER_KEY_PASSWORD": "a test password"}
    new = run_in_process("keys", "new", "first", "--json", env=env)
    doc = _one_doc(new)
    assert list(doc) == ["name", "address", "path"] and doc["path"] == str(tmp_path / "ks" / "first.json")
    _valid(CommitterKeyReport, doc)
    imported = run_in_process("keys", "import", "second", "--json", env=env, input=THROWAWAY + "\n")
    doc = _one_doc(imported)
    assert doc["name"] == "second" and Path(doc["path"]).is_file()
    assert THROWAWAY[2:] not in imported.stdout + imported.stderr  # the secret is never printed
    _valid(CommitterKeyReport, doc)
    text = run_in_process("keys", "import", "third", env=env, input=THROWAWAY + "\n")
    assert text.stdout == doc["address"] + "\n"  # the text is as it was: the address alone
    listed = _one_doc(run_in_process("keys", "list", "--json", env=env))
    _valid(CommitterKeysReport, listed)
    assert [k["name"] for k in listed] == ["first", "second", "third", DEV_KEY_NAME]


def test_committer_use_cases_from_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_KEYSTORE", str(tmp_path / "ks"))
    made = committers.new_committer("py", lambda confirm: "a test password")
    assert made.path == str(tmp_path / "ks" / "py.json") and Path(made.path).is_file()
    listed = committers.list_committers()
    cli = run_in_process("keys", "list", "--json", env={"LEDGER_KEYSTORE": str(tmp_path / "ks")})
    assert listed.to_json() == _one_doc(cli)
    assert listed.to_json()[0] == {"name": "py", "address": made.address, "path": made.path}


def test_every_command_here_names_its_reports() -> None:
    owned = {("chain", c) for c in ("up", "down", "use", "status", "deploy", "register", "location", "authorize")}
    owned |= {
        ("keys", c)
        for c in ("show", "generate", "export", "trust", "revoke", "rotate", "policy", "new", "import", "list")
    }
    for group, name in sorted(owned):
        cmd = main.commands[group].commands[name]  # type: ignore[attr-defined]
        assert reports_of(cmd), f"{group} {name}"
        assert any(p.name == "as_json" for p in cmd.params), f"{group} {name} has no --json"
    for name in ("chain anchor", "chain epoch", "push", "pull", "clone", "skill resolve", "keys adopt"):
        cmd = main
        for word in name.split():
            cmd = cmd.commands[word]  # type: ignore[attr-defined]
        assert reports_of(cmd), name
        assert any(p.name == "as_json" for p in cmd.params), name
