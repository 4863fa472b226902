"""The shape of the ``ledger`` command line (issue 52, ADR 74), read from click's own tree.

``ledger --help`` lists at most 32 top-level entries, in sections (first "Start here", then the
noun groups); every old spelling still runs, as a hidden alias that prints one deprecation line on
stderr and then does exactly what the new spelling does (same stdout, same exit code); no visible
option says ``--commit`` for "anchor on chain"; ``-m`` and ``--message`` come together; ``--get FIELD``
prints one field of a command's JSON document.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pytest

from ledger.chain import anvil
from ledger.cli import main
from tests.harness.brains import make_brain
from tests.harness.cli import run_in_process

# Every move of issue 52 (design, section 4): old spelling -> new spelling.
MOVED = {
    "link": "target add",
    "unlink": "target remove",
    "runtimes": "target list",
    "install": "supply install",
    "update": "supply update",
    "outdated": "supply outdated",
    "approve": "supply approve",
    "revoke": "supply revoke",
    "scan": "supply scan",
    "show": "skill show",
    "revert": "skill revert",
    "resolve": "skill resolve",
    "lint": "skill lint",
    "apply": "skill apply",
    "commit": "chain anchor",
    "anchor": "chain epoch",
    "sign": "keys adopt",
    "prove": "proof make",
    "verify-proof": "proof check",
}

SECTIONS = [
    ("Start here", ["init", "skill", "status", "log", "sync", "verify"]),
    ("Skills and snapshots", ["snapshot", "diff", "import", "export", "hash", "index"]),
    ("Runtimes", ["target", "mcp"]),
    ("Sharing", ["clone", "push", "pull", "remote"]),
    ("Worth", ["eval", "outcome"]),
    ("Skills from elsewhere", ["supply"]),
    ("Trust and chain", ["keys", "chain", "audit", "proof"]),
    ("Publishing", ["attest", "manifest", "report"]),
    ("Maintenance", ["gc", "recover"]),
]


def deprecation(old: str, new: str) -> str:
    return f"warning: 'ledger {old}' is deprecated; use 'ledger {new}' (the old spelling keeps working)"


def commands(group: click.Group = main, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command of the tree (hidden ones too), with its path."""
    found = []
    for name, cmd in group.commands.items():
        found.append(((*path, name), cmd))
        if isinstance(cmd, click.Group):
            found += commands(cmd, (*path, name))
    return found


def visible_top() -> list[str]:
    return [name for name, cmd in main.commands.items() if not cmd.hidden]


def sections_of(help_text: str) -> list[tuple[str, list[str]]]:
    """The sections after 'Options:' in ``ledger --help``: (title, the names each lists)."""
    found: list[tuple[str, list[str]]] = []
    for line in help_text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":") and not line.startswith("Usage"):
            found.append((line[:-1], []))
        elif line.startswith("  ") and not line.startswith("   ") and found and found[-1][0] != "Options":
            found[-1][1].append(line.split()[0])
    return [s for s in found if s[0] != "Options"]


def test_help_lists_at_most_32_entries_in_sections_start_here_first() -> None:
    top = visible_top()
    assert len(top) <= 32, f"{len(top)} top-level entries: {sorted(top)}"
    proc = run_in_process("--help")
    assert proc.returncode == 0, proc.stderr
    shown = sections_of(proc.stdout)
    assert shown == SECTIONS, shown
    assert sorted(n for _, names in shown for n in names) == sorted(top)  # help and click's tree agree
    for old in MOVED:
        assert old not in top and f" {old} " not in proc.stdout, f"old spelling {old!r} is listed"


def test_every_moved_command_lives_in_its_group_and_each_group_lists_its_commands() -> None:
    paths = {" ".join(path) for path, cmd in commands() if not cmd.hidden}
    for new in MOVED.values():
        assert new in paths, f"'ledger {new}' is not in the tree"
    for group in ("target", "proof", "supply", "skill", "chain", "keys"):
        cmd = main.commands[group]
        assert isinstance(cmd, click.Group)
        out = run_in_process(group, "--help").stdout
        for sub, subcmd in cmd.commands.items():
            assert subcmd.hidden or f"\n  {sub} " in out, f"'ledger {group} --help' omits {sub}"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_old_spelling_is_hidden_and_runs_the_new_one(old: str) -> None:
    """``ledger OLD --help`` is ``ledger NEW --help`` (same usage line, options, exit), after one line."""
    new = MOVED[old]
    was = run_in_process(old, "--help")
    now = run_in_process(*new.split(), "--help")
    assert was.exit_code == now.exit_code == 0, (was.output, was.stderr)
    assert was.stdout == now.stdout and f"Usage: ledger {new} " in now.stdout
    assert was.stderr == deprecation(old, new) + "\n" + now.stderr
    assert old not in main.commands  # not a command of the tree: no listing can show it


def test_no_visible_option_says_commit_and_m_comes_with_message() -> None:
    for path, cmd in commands():
        for param in cmd.params:
            if not isinstance(param, click.Option):
                continue
            names = set(param.opts) | set(param.secondary_opts)
            if not param.hidden:
                assert not names & {"--commit", "--no-commit", "--committed"}, (path, names)
            assert ("-m" in names) == ("--message" in names), (path, names)
    anchors = [path for path, cmd in commands() for p in cmd.params if "--anchor" in getattr(p, "opts", ())]
    assert ("snapshot",) in anchors and ("skill", "patch") in anchors and ("remote", "set") in anchors


@pytest.fixture
def brain(tmp_path: Path) -> Path:
    b = make_brain(tmp_path / "brain", {"a": ("A", "one")}, via="cli")
    run_in_process("--brain", str(b), "skill", "patch", "a", "--old", "one", "--new", "two", check=True)
    return b


def same(old: tuple[str, ...], new: tuple[str, ...], said: tuple[str, str], *, code: int) -> None:
    """``ledger OLD…`` and ``ledger NEW…``: the same stdout and exit code; stderr one line longer."""
    was, now = run_in_process(*old), run_in_process(*new)
    assert now.returncode == code, (new, now.stdout, now.stderr)
    assert was.returncode == now.returncode and was.stdout == now.stdout, (old, was.stdout, was.stderr)
    assert was.stderr == deprecation(*said) + "\n" + now.stderr, was.stderr


def test_old_spellings_do_what_the_new_ones_do_on_a_real_brain(brain: Path, tmp_path: Path) -> None:
    b = ("--brain", str(brain))
    same((*b, "show", "a@1"), (*b, "skill", "show", "a@1"), ("show", "skill show"), code=0)
    same((*b, "show", "a@9"), (*b, "skill", "show", "a@9"), ("show", "skill show"), code=1)
    same((*b, "commit"), (*b, "chain", "anchor"), ("commit", "chain anchor"), code=1)  # no chain configured
    same((*b, "anchor", str(brain)), (*b, "chain", "epoch", str(brain)), ("anchor", "chain epoch"), code=1)
    same((*b, "runtimes", "--json"), (*b, "target", "list", "--json"), ("runtimes", "target list"), code=0)
    same(("scan", str(brain / "skills")), ("supply", "scan", str(brain / "skills")), ("scan", "supply scan"), code=0)
    same((*b, "lint", "--json"), (*b, "skill", "lint", "--json"), ("lint", "skill lint"), code=0)
    same(
        (*b, "revert", "a", "--to", "2"), (*b, "skill", "revert", "a", "--to", "2"), ("revert", "skill revert"), code=0
    )
    same((*b, "sign", "--adopt"), (*b, "keys", "adopt"), ("sign", "keys adopt"), code=1)  # already signed
    same((*b, "unlink", "nosuch"), (*b, "target", "remove", "nosuch"), ("unlink", "target remove"), code=1)
    proof = run_in_process(*b, "prove", "a/SKILL.md")
    assert proof.stderr == deprecation("prove", "proof make") + "\n"
    assert proof.stdout == run_in_process(*b, "proof", "make", "a/SKILL.md").stdout and proof.returncode == 0
    (tmp_path / "proof.json").write_text(proof.stdout)
    root = run_in_process(*b, "status", "--get", "root").stdout.strip()
    check = ("--root", root)
    proof_file = str(tmp_path / "proof.json")
    same(
        ("verify-proof", proof_file, *check),
        ("proof", "check", proof_file, *check),
        ("verify-proof", "proof check"),
        code=0,
    )
    assert run_in_process("sign").returncode == 2  # 'sign' alone was a usage error, and stays one


def test_old_options_do_what_the_new_ones_do(brain: Path, tmp_path: Path) -> None:
    b = ("--brain", str(brain))
    # nothing to snapshot: both say so and exit 0; the old spelling says one more line first
    same(
        (*b, "snapshot", "--no-commit"),
        (*b, "snapshot", "--no-anchor"),
        ("snapshot --no-commit", "snapshot --no-anchor"),
        code=0,
    )
    same((*b, "snapshot", "--commit"), (*b, "snapshot", "--anchor"), ("snapshot --commit", "snapshot --anchor"), code=0)
    rt = tmp_path / "rt"
    rt.mkdir()
    was = run_in_process(*b, "link", str(rt), "--committed", "--json")
    run_in_process(*b, "target", "remove", "rt", check=True)
    now = run_in_process(*b, "target", "add", str(rt), "--anchored", "--json")
    assert was.returncode == now.returncode == 0 and was.stdout == now.stdout, (was.stderr, now.stderr)
    assert was.stderr == (
        deprecation("link", "target add")
        + "\n"  # one line per old spelling
        + deprecation("target add --committed", "target add --anchored")
        + "\n"
        + now.stderr
    )
    assert json.loads(now.stdout)["committed"] is True, now.stdout  # the pin is the anchored root
    # a write: the same receipt but for its commit and time, and exit 3 (recorded, the chain step failed)
    copy = tmp_path / "copy"
    shutil.copytree(brain, copy, symlinks=True)
    args = ("skill", "patch", "a", "--old", "two", "--new", "three", "--json")
    was, now = run_in_process("--brain", str(copy), *args, "--commit"), run_in_process(*b, *args, "--anchor")
    assert was.returncode == now.returncode == 3, (was.stderr, now.stderr)
    old_doc, new_doc = json.loads(was.stdout), json.loads(now.stdout)
    keep = ("root", "skill", "version", "changes")
    assert {k: old_doc.get(k) for k in keep} == {k: new_doc.get(k) for k in keep}
    assert old_doc["chain"]["committed"] is new_doc["chain"]["committed"] is False  # it tried: no chain here
    assert was.stderr.splitlines()[0] == deprecation("skill patch --commit", "skill patch --anchor")
    assert was.stderr.count("deprecated") == 1 and "deprecated" not in now.stderr


def test_get_prints_one_field_and_refuses_a_missing_one(brain: Path) -> None:
    b = ("--brain", str(brain))
    doc = json.loads(run_in_process(*b, "status", "--json").stdout)
    assert run_in_process(*b, "status", "--get", "root").stdout == doc["root"] + "\n"  # a string: raw
    assert run_in_process(*b, "status", "--get", "clean").stdout == "true\n"  # anything else: compact JSON
    assert run_in_process(*b, "status", "--get", "changes", "--json").stdout == "{}\n"
    missing = run_in_process(*b, "status", "--get", "nosuch")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("error: the JSON document has no field 'nosuch'") and "root" in missing.stderr
    assert run_in_process(*b, "status", "--get", "root.deeper").returncode == 1
    assert run_in_process(*b, "status", "--get", "").returncode == 2


@pytest.mark.chain
def test_get_on_chain_status_and_the_chain_spellings(tmp_path: Path, node: anvil.Node) -> None:
    brain = tmp_path / "brain"
    b = ("--brain", str(brain))
    run_in_process("init", str(brain), check=True)
    for step in (("chain", "use", node.url), ("chain", "deploy"), ("chain", "register")):
        run_in_process(*b, *step, check=True)
    anchored = run_in_process(*b, "chain", "anchor")
    assert anchored.returncode == 0 and "deprecated" not in anchored.stderr, anchored.stderr
    doc = json.loads(run_in_process(*b, "chain", "status", "--json").stdout)
    for field in ("rpc", "registry", "agent"):
        got = run_in_process(*b, "chain", "status", "--get", field)
        assert got.returncode == 0 and got.stdout == f"{doc[field]}\n", (field, got.stderr)
    assert run_in_process(*b, "chain", "status", "--get", "in_sync").stdout == json.dumps(doc["in_sync"]) + "\n"
    same((*b, "commit"), (*b, "chain", "anchor"), ("commit", "chain anchor"), code=0)  # nothing to anchor
    assert run_in_process(*b, "chain", "status", "--get", "nosuch").returncode == 1
