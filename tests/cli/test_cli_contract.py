"""Issue 11, first items: no-ops exit 0, history like git's, chain commands without footguns, honest audits."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from ledger.chain import anvil
from tests.harness.brains import fingerprint, make_brain
from tests.harness.cli import run_in_process
from tests.harness.localhttp import refused_url


@pytest.fixture
def cli(tmp_path: Path) -> Path:
    return make_brain(tmp_path / "brain", {"s": ("d", "b")}, via="cli")


def test_a_write_that_changes_nothing_exits_0_and_says_so(cli: Path, tmp_path: Path) -> None:
    same = tmp_path / "same.md"
    same.write_text((cli / "skills" / "s" / "SKILL.md").read_text())
    before = fingerprint(cli)
    for args in (
        ["skill", "upsert", "--file", str(same)],
        ["skill", "edit", "s", "--file", str(same)],
        ["revert", "s", "--to", "1"],
        ["snapshot"],
    ):
        proc = run_in_process("--brain", str(cli), *args)
        assert proc.returncode == 0 and "nothing to do" in proc.stderr, (args, proc.stderr)
        js = run_in_process("--brain", str(cli), *args, "--json")
        assert js.returncode == 0 and json.loads(js.stdout)["changed"] is False
    assert fingerprint(cli) == before


def test_log_has_dates_full_roots_and_filters(cli: Path) -> None:
    b = ["--brain", str(cli)]
    run_in_process(*b, "skill", "create", "t", "--description", "d", "--actor", "agent", check=True)
    full = run_in_process(*b, "log", check=True).stdout
    assert re.search(r"^date     \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", full, re.M)
    assert re.search(r"^root     blake3-tree-v1:[0-9a-f]{64}$", full, re.M)
    oneline = run_in_process(*b, "log", "--oneline", "--skill", "s", check=True).stdout.splitlines()
    assert len(oneline) == 1 and re.search(r"create s v1 .* blake3-tree-v1:[0-9a-f]{64}$", oneline[0])
    agent = run_in_process(*b, "log", "--oneline", "--actor", "agent", check=True).stdout.splitlines()
    assert len(agent) == 1 and "create t v1" in agent[0]


@pytest.mark.parametrize("url", ["notaurl", "127.0.0.1:8545", "ftp://x", "http://", "http://host:notaport"])
def test_chain_use_validates_urls(cli: Path, url: str) -> None:
    before = fingerprint(cli)
    proc = run_in_process("--brain", str(cli), "chain", "use", url)
    assert (proc.returncode == 2 and "RPC URL" in proc.stderr) or "port" in proc.stderr
    assert fingerprint(cli) == before
    assert run_in_process("--brain", str(cli), "chain", "use", "http://127.0.0.1:8545").returncode == 0


def test_keys_list_shows_the_dev_key() -> None:
    out = run_in_process("keys", "list", check=True).stdout
    assert "anvil-dev" in out and "chain 31337 only" in out


@pytest.mark.chain
def test_deploy_defaults_to_the_dev_key_on_31337_and_refuses_to_replace(cli: Path, node: anvil.Node) -> None:
    b = ["--brain", str(cli)]
    run_in_process(*b, "chain", "use", node.url, check=True)
    first = run_in_process(*b, "chain", "deploy", "--json")
    assert first.returncode == 0, first.stderr  # no --key: anvil-dev on chain 31337
    registry = json.loads(first.stdout)["registry"]
    again = run_in_process(*b, "chain", "deploy")
    assert again.returncode == 1 and "--force" in again.stderr
    assert json.loads((cli / ".ledger" / "config.json").read_text())["chain"]["registry"] == registry
    forced = run_in_process(*b, "chain", "deploy", "--force", "--json")
    assert forced.returncode == 0 and json.loads(forced.stdout)["registry"] != registry


@pytest.mark.chain
def test_audit_says_skip_for_checks_it_could_not_make(cli: Path, node: anvil.Node) -> None:
    b = ["--brain", str(cli)]
    run_in_process(*b, "chain", "use", node.url, check=True)
    registry = json.loads(run_in_process(*b, "chain", "deploy", "--json", check=True).stdout)["registry"]
    proc = run_in_process("audit", str(cli), "--rpc", node.url, "--registry", registry, "--agent", "0x1234", "--json")
    checks = json.loads(proc.stdout)["checks"]
    assert checks["chain.roots"]["skipped"] and checks["chain.roots"]["ok"]
    assert checks["chain.receipts"]["skipped"]
    text = run_in_process("audit", str(cli), "--rpc", node.url, "--registry", registry, "--agent", "0x1234").stdout
    assert re.search(r"^SKIP chain\.roots", text, re.M) and not re.search(r"^OK   chain\.roots", text, re.M)


STRICT_CASES = {
    # what a user fed in → (command, words the error must hold)
    "unterminated": ("---\nname: s\ndescription: d\nno closing line\n", "never closed"),
    "no frontmatter": ("just a body\n", "must start with a '---' line"),
    "yaml error": ("---\nname: s\ndescription: [unclosed\n---\nbody\n", "YAML error"),
    "another skill's name": ("---\nname: other\ndescription: d\n---\nbody\n", "'other'"),
}


@pytest.mark.parametrize("case", sorted(STRICT_CASES))
@pytest.mark.parametrize("command", ["edit", "upsert"])
def test_edit_and_upsert_parse_strictly(cli: Path, tmp_path: Path, case: str, command: str) -> None:
    text, words = STRICT_CASES[case]
    src = tmp_path / "in.md"
    src.write_text(text)
    args = ["skill", "edit", "s", "--file", str(src)] if command == "edit" else ["skill", "upsert", "--file", str(src)]
    if command == "upsert":
        args += ["--name", "s"]  # the key is given: a file declaring another name is refused, never renamed
    before = fingerprint(cli)
    proc = run_in_process("--brain", str(cli), *args)
    assert proc.returncode == 1 and words in proc.stderr, (case, command, proc.stderr)
    assert fingerprint(cli) == before


def test_upsert_without_a_name_reports_the_yaml_error(cli: Path, tmp_path: Path) -> None:
    src = tmp_path / "in.md"
    src.write_text("---\nname: s\ndescription: [unclosed\n---\nbody\n")
    proc = run_in_process("--brain", str(cli), "skill", "upsert", "--file", str(src))
    assert proc.returncode == 1 and "YAML error" in proc.stderr and "cannot tell" not in proc.stderr


# --------------------------------------------------------------------------- receipts and diffs


def test_receipts_list_every_skill_file_and_version_touched(cli: Path, tmp_path: Path) -> None:
    b = ["--brain", str(cli)]
    (tmp_path / "r.md").write_text("ref\n")
    run_in_process(*b, "skill", "write-file", "s", "references/r.md", "--from", str(tmp_path / "r.md"), check=True)
    revert = run_in_process(*b, "skill", "revert", "s", "--to", "1")
    assert re.search(r"^  deleted  references/r\.md$", revert.stdout, re.M), revert.stdout  # said, not silent
    js = json.loads(run_in_process(*b, "skill", "revert", "s", "--to", "2", "--json", check=True).stdout)
    assert js["changes"] == [
        {"skill": "s", "action": "update", "version": 4, "files": {"SKILL.md": "modified", "references/r.md": "added"}}
    ]
    run_in_process(*b, "skill", "create", "t", "--description", "d", check=True)
    for name in ("s", "t"):
        with open(cli / "skills" / name / "SKILL.md", "a") as fh:
            fh.write("hand edit\n")
    snap = json.loads(run_in_process(*b, "snapshot", "--json", check=True).stdout)
    assert [(c["skill"], c["version"], c["files"]) for c in snap["changes"]] == [
        ("s", 5, {"SKILL.md": "modified"}),
        ("t", 2, {"SKILL.md": "modified"}),
    ]


def test_diff_shows_content_like_git(cli: Path) -> None:
    b = ["--brain", str(cli)]
    run_in_process(*b, "skill", "patch", "s", "--old", "b", "--new", "better", check=True)
    patch = run_in_process(*b, "diff", "main~1", "main", check=True).stdout
    assert "diff --git a/skills/s/SKILL.md b/skills/s/SKILL.md" in patch
    assert re.search(r"^-b$", patch, re.M) and re.search(r"^\+better$", patch, re.M)
    stat = run_in_process(*b, "diff", "main~1", "main", "--stat", check=True).stdout
    assert "1 file changed, 2 insertions(+), 2 deletions(-)" in stat  # the body line and the version line
    (cli / "skills" / "s" / "SKILL.md").write_text((cli / "skills" / "s" / "SKILL.md").read_text() + "\nhand\n")
    work = run_in_process(*b, "diff", check=True).stdout  # head → working tree, as git diff
    assert re.search(r"^\+hand$", work, re.M)
    assert run_in_process(*b, "diff", "main~1", "s", "--name-status", check=True).stdout == "M\tskills/s/SKILL.md\n"
    unknown = run_in_process(*b, "diff", "main~2", "--skill", "t")  # no skill t on either side: a typo, said so
    assert unknown.returncode == 1 and "no skill named 't'" in unknown.stderr
    assert run_in_process(*b, "diff", "main", "main", "main", "s").returncode == 2
    assert run_in_process(*b, "diff", "nosuchrev", "main").returncode == 1


# --------------------------------------------------------------------------- chain contract


def _dead_chain(brain: Path) -> None:
    cfg_path = brain / ".ledger" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["chain"] = {"rpc": refused_url(), "registry": "0x" + "11" * 20, "agent_id": "0x1"}
    cfg_path.write_text(json.dumps(cfg))


def test_a_failed_chain_step_exits_3_and_says_what_stands(cli: Path) -> None:
    _dead_chain(cli)
    b = ["--brain", str(cli)]
    proc = run_in_process(*b, "skill", "patch", "s", "--old", "b", "--new", "second-body", "--anchor")
    assert proc.returncode == 3, proc.stderr
    assert "recorded locally" in proc.stderr and "ledger commit" in proc.stderr and "patch s v2" in proc.stdout
    assert "update s v2" in run_in_process(*b, "log", "--oneline", check=True).stdout  # the snapshot stands
    js = run_in_process(*b, "skill", "patch", "s", "--old", "second-body", "--new", "third-body", "--anchor", "--json")
    assert js.returncode == 3 and json.loads(js.stdout)["chain"]["committed"] is False


def test_an_unreachable_rpc_exits_1_everywhere(cli: Path) -> None:
    _dead_chain(cli)
    url = json.loads((cli / ".ledger" / "config.json").read_text())["chain"]["rpc"]
    for args in (["verify", "--chain"], ["chain", "status"], ["commit"]):
        proc = run_in_process("--brain", str(cli), *args)
        assert proc.returncode == 1, (args, proc.returncode, proc.stderr)
    proc = run_in_process("audit", str(cli), "--rpc", url, "--registry", "0x" + "11" * 20, "--agent", "1")
    assert proc.returncode == 1, proc.stderr


@pytest.mark.chain
def test_chain_up_keeps_its_port_and_is_idempotent(cli: Path) -> None:
    b = ["--brain", str(cli)]
    try:
        first = run_in_process(*b, "chain", "up", check=True).stdout.strip()
        again = run_in_process(*b, "chain", "up")
        assert again.returncode == 0 and again.stdout.strip() == first and "already running" in again.stderr
        run_in_process(*b, "chain", "down", check=True)
        assert run_in_process(*b, "chain", "up", check=True).stdout.strip() == first  # the URL handed out stays valid
    finally:
        run_in_process(*b, "chain", "down")


@pytest.mark.chain
def test_chain_errors_are_decoded_and_proofs_name_their_sequence(cli: Path, node: anvil.Node, tmp_path: Path) -> None:
    b = ["--brain", str(cli)]
    run_in_process(*b, "chain", "use", node.url, check=True)
    run_in_process(*b, "chain", "deploy", check=True)
    run_in_process(*b, "chain", "register", check=True)
    again = run_in_process(*b, "chain", "register")
    assert again.returncode == 1 and re.search(r"AgentAlreadyRegistered\(agentId=0x[0-9a-f]+\)", again.stderr)
    run_in_process(*b, "chain", "anchor", check=True)
    proof = tmp_path / "old.json"
    proof.write_text(run_in_process(*b, "proof", "make", "s/SKILL.md", check=True).stdout)
    run_in_process(*b, "skill", "patch", "s", "--old", "b", "--new", "c", "--anchor", check=True)
    st = json.loads(run_in_process(*b, "chain", "status", "--json", check=True).stdout)
    args = ["--chain", "--rpc", st["rpc"], "--registry", st["registry"], "--agent", st["agent"]]
    ok = run_in_process("proof", "check", str(proof), *args)
    assert ok.returncode == 0 and "committed on chain at seq 2" in ok.stdout and "head is seq 3" in ok.stdout
    head = run_in_process("proof", "check", str(proof), *args, "--head")
    assert head.returncode == 1 and "seq 2" in head.stderr and "head is seq 3" in head.stderr
    html = tmp_path / "r.html"
    run_in_process(*b, "verify", "--chain", "--html", str(html), check=True)
    page = html.read_text()
    assert node.url in page and "block height" in page and "audited <time>" in page
    assert re.search(r"<td>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ</td>", page)  # a time per snapshot


def test_every_command_that_records_skills_takes_actor_and_evidence(cli: Path, tmp_path: Path) -> None:
    """Help matches behaviour (issue 19, item 9): the README says every command that writes skills
    takes --actor and --evidence; import and apply did not. Each lands in the snapshot's trailers."""
    from ledger.cli import main

    def commands(group, path=()):  # type: ignore[no-untyped-def]
        for name, cmd in getattr(group, "commands", {}).items():
            yield from commands(cmd, (*path, name)) if hasattr(cmd, "commands") else [((*path, name), cmd)]

    writers = {
        ("snapshot",),
        ("revert",),
        ("import",),
        ("apply",),
        *[("skill", c) for c in ("create", "upsert", "edit", "patch", "write-file", "remove-file", "delete", "move")],
    }
    for path, cmd in commands(main):
        if path in writers:
            opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
            assert {"--actor", "--evidence"} <= opts, path
    src = tmp_path / "src" / "imp"
    src.mkdir(parents=True)
    (src / "SKILL.md").write_text("---\nname: imp\ndescription: Imported.\n---\nx\n")
    b = ("--brain", str(cli))
    keys = {"LEDGER_KEYS": str(tmp_path / "keys")}  # the session's keys and a curator key the brain trusts
    shutil.copytree(os.environ["LEDGER_KEYS"], keys["LEDGER_KEYS"])
    run_in_process("keys", "generate", "curator", env=keys, check=True)
    run_in_process(*b, "keys", "trust", "curator", env=keys, check=True)
    run_in_process(*b, "import", str(src.parent), "--actor", "curator", "--evidence", "task=T-7", env=keys, check=True)
    msg = run_in_process(*b, "log", "-n", "1", "--json", check=True).stdout
    assert '"actor": "curator"' in msg and "T-7" in msg, msg
    payload = tmp_path / "p.json"
    payload.write_text(
        json.dumps(
            {
                "operation_type": "revise",
                "summary": "tighten",
                "upsert_files": {"imp/SKILL.md": "---\nname: imp\ndescription: Imported, revised.\n---\nx\n"},
            }
        )
    )
    run_in_process(*b, "skill", "apply", str(payload), "--evidence", "session=S-1", check=True)
    msg = run_in_process(*b, "log", "-n", "1", "--json", check=True).stdout
    assert '"actor": "agent"' in msg and "S-1" in msg and "tighten" in msg, msg
