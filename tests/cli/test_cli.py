"""The real ``ledger`` command: contract names, JSON shapes, exit codes, refusals that change nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.harness.brains import fingerprint, make_brain
from tests.harness.cli import run_in_process


@pytest.fixture
def cli_brain(tmp_path: Path) -> Path:
    root = make_brain(tmp_path / "brain", {"pdf": ("Work with PDFs", "Use pdftotext twice. twice.\n")}, via="cli")
    run_in_process(
        "--brain",
        str(root),
        "skill",
        "write-file",
        "pdf",
        "references/api.md",
        "--from",
        str(_file(tmp_path / "api.md", b"API notes\n")),
        check=True,
    )
    return root


def _file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_receipts_and_log_json(cli_brain: Path, tmp_path: Path) -> None:
    env = {"LEDGER_BRAIN": str(cli_brain)}
    r = run_in_process("skill", "patch", "pdf", "--old", "Use", "--new", "Prefer", "--json", env=env, check=True)
    receipt = json.loads(r.stdout)
    assert set(receipt) == {"skill", "version", "root", "commit", "operation", "changes", "signer", "signed"}
    assert receipt["signed"] is True
    from ledger.signatures import identity

    assert receipt["signer"] == identity.KeyDir(identity.keys_home()).peek("user")  # signed by this machine's user key
    assert receipt["changes"] == [{"skill": "pdf", "action": "update", "version": 3, "files": {"SKILL.md": "modified"}}]
    assert (receipt["skill"], receipt["version"], receipt["operation"]) == ("pdf", 3, "patch")
    log = json.loads(run_in_process("log", "--json", env=env, check=True).stdout)
    assert [e["operation"] for e in log] == ["patch", "write-file", "create", "init"]
    assert log[0]["root"] == receipt["root"] and log[0]["commit"] == receipt["commit"]
    assert log[0]["parent_root"] == log[1]["root"]
    for entry in log:
        assert {"commit", "root", "parent_root", "operation", "skill", "version"} <= set(entry)
    hashed = json.loads(run_in_process("hash", str(cli_brain), "--json", check=True).stdout)
    assert hashed == {"root": receipt["root"]}


def test_brain_defaults_to_cwd_and_parents(cli_brain: Path) -> None:
    out = run_in_process("index", cwd=cli_brain / "skills" / "pdf", check=True).stdout
    assert out == "▸ pdf: Work with PDFs\n"


def test_list_view_status(cli_brain: Path) -> None:
    b = ["--brain", str(cli_brain)]
    listed = json.loads(run_in_process(*b, "skill", "list", "--json", check=True).stdout)
    assert listed == [
        {
            "name": "pdf",
            "description": "Work with PDFs",
            "version": 2,
            "license": None,
            "compatibility": None,
            "category": None,
        }
    ]
    view = json.loads(run_in_process(*b, "skill", "view", "pdf", "--json", check=True).stdout)
    assert view["body"] == "Use pdftotext twice. twice.\n" and view["files"] == {"references": ["references/api.md"]}
    assert run_in_process(*b, "skill", "view", "pdf", "--file", "references/api.md", check=True).stdout == "API notes\n"
    assert json.loads(run_in_process(*b, "status", "--json", check=True).stdout)["clean"] is True
    (cli_brain / "skills" / "pdf" / "references" / "api.md").write_text("edited\n")
    st = json.loads(run_in_process(*b, "status", "--json", check=True).stdout)
    assert st["changes"] == {"pdf/references/api.md": "modified"}
    snap = json.loads(run_in_process(*b, "snapshot", "-m", "fix", "--json", check=True).stdout)
    assert (snap["operation"], snap["skill"], snap["version"]) == ("snapshot", "pdf", 3)


def test_prove_and_verify_proof(cli_brain: Path, tmp_path: Path) -> None:
    b = ["--brain", str(cli_brain)]
    old_root = json.loads(run_in_process("hash", str(cli_brain), "--json", check=True).stdout)["root"]
    run_in_process(
        *b, "skill", "patch", "pdf", "--old", "API", "--new", "Api", "--file", "references/api.md", check=True
    )
    proof = run_in_process(*b, "proof", "make", "pdf/references/api.md", "--at", "main~1", check=True).stdout
    pf = _file(tmp_path / "proof.json", proof.encode())
    ok = run_in_process(
        "proof", "check", str(pf), "--root", old_root, "--file", str(_file(tmp_path / "c", b"API notes\n"))
    )
    assert ok.returncode == 0 and ok.stdout.startswith("OK: pdf/references/api.md")
    new_root = json.loads(run_in_process("hash", str(cli_brain), "--json", check=True).stdout)["root"]
    bad = run_in_process("proof", "check", str(pf), "--root", new_root)
    assert bad.returncode == 1 and "FAIL" in bad.stderr
    wrong_content = run_in_process(
        "proof", "check", str(pf), "--root", old_root, "--file", str(_file(tmp_path / "d", b"x"))
    )
    assert wrong_content.returncode == 1
    assert run_in_process("proof", "check", str(pf)).returncode == 2


def _bad_inputs(tmp_path: Path) -> dict[str, list[str]]:
    big = _file(tmp_path / "big.bin", b"x" * (1024 * 1024 + 1))
    small = _file(tmp_path / "small.md", b"small\n")
    link = tmp_path / "link.md"
    link.symlink_to(small)
    malformed = _file(tmp_path / "bad.md", b"---\nname: pdf\ndescription: [unclosed\n---\nbody\n")
    other = _file(tmp_path / "other.md", b"---\nname: docx\ndescription: d\n---\n")
    return {
        "traversal": ["skill", "write-file", "pdf", "references/../../../etc/x", "--from", str(small)],
        "dotdot-first": ["skill", "write-file", "pdf", "../x.md", "--from", str(small)],
        "absolute": ["skill", "write-file", "pdf", "/etc/passwd", "--from", str(small)],
        "backslash": ["skill", "write-file", "pdf", "references\\x.md", "--from", str(small)],
        "dot-git": ["skill", "write-file", "pdf", "notes/.git/config", "--from", str(small)],
        "skill-md-as-file": ["skill", "write-file", "pdf", "SKILL.md", "--from", str(small)],
        "symlink-source": ["skill", "write-file", "pdf", "references/l.md", "--from", str(link)],
        "invalid-name-upper": ["skill", "create", "PDF", "--description", "x"],
        "invalid-name-traversal": ["skill", "create", "../pdf", "--description", "x"],
        "invalid-name-long": ["skill", "create", "a" * 65, "--description", "x"],
        "oversized-file": ["skill", "write-file", "pdf", "assets/big.bin", "--from", str(big)],
        "oversized-body": ["skill", "create", "other", "--description", "d", "--body", "b" * 100_001],
        "malformed-frontmatter": ["skill", "edit", "pdf", "--file", str(malformed)],
        "other-skills-name": ["skill", "edit", "pdf", "--file", str(other)],
        "patch-0-matches": ["skill", "patch", "pdf", "--old", "absent", "--new", "x"],
        "patch-2-matches": ["skill", "patch", "pdf", "--old", "twice.", "--new", "x"],
        "patch-breaks-frontmatter": ["skill", "patch", "pdf", "--old", "description:", "--new", "description: ["],
        "create-collision": ["skill", "create", "pdf", "--description", "again"],
        "missing-skill": ["skill", "delete", "nope"],
        "remove-missing-file": ["skill", "remove-file", "pdf", "references/none.md"],
    }


def test_bad_input_exits_1_with_message_and_changes_nothing(cli_brain: Path, tmp_path: Path) -> None:
    config = cli_brain / ".ledger" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "limits": {"file": 1 << 20, "skill_md": 100_000}}))
    cases = _bad_inputs(tmp_path)
    before = fingerprint(cli_brain)
    for label, args in cases.items():
        proc = run_in_process("--brain", str(cli_brain), *args)
        assert proc.returncode == 1, (label, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("error: ") and len(proc.stderr.strip()) > 15, (label, proc.stderr)
        assert "Traceback" not in proc.stderr, (label, proc.stderr)
        assert fingerprint(cli_brain) == before, label


def test_symlink_in_brain_is_refused(cli_brain: Path) -> None:
    (cli_brain / "skills" / "pdf" / "assets").mkdir()
    os.symlink("/etc/passwd", cli_brain / "skills" / "pdf" / "assets" / "pw")
    before = fingerprint(cli_brain)
    for args in (["snapshot"], ["status"], ["skill", "patch", "pdf", "--old", "Use", "--new", "x"]):
        proc = run_in_process("--brain", str(cli_brain), *args)
        assert proc.returncode == 1 and "symbolic link" in proc.stderr, (args, proc.stderr)
    assert fingerprint(cli_brain) == before


def test_usage_errors_exit_2(cli_brain: Path) -> None:
    assert run_in_process("--brain", str(cli_brain), "skill", "frobnicate").returncode == 2
    assert run_in_process("--brain", str(cli_brain), "skill", "create", "x").returncode == 2  # missing --description
    assert (
        run_in_process(
            "--brain",
            str(cli_brain),
            "skill",
            "create",
            "x",
            "--description",
            "d",
            "--body",
            "b",
            "--body-file",
            "-",
            input="",
        ).returncode
        == 2
    )


def test_not_a_brain(tmp_path: Path) -> None:
    proc = run_in_process("--brain", str(tmp_path), "status")
    assert proc.returncode == 1 and "not a brain" in proc.stderr and "ledger init" in proc.stderr


def test_local_commands_do_not_import_web3(cli_brain: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from ledger.cli import main\n"
        "try:\n    main(['--brain', sys.argv[1], 'skill', 'list'])\nexcept SystemExit:\n    pass\n"
        "assert 'web3' not in sys.modules, 'web3 imported'\n"
    )
    subprocess.run([sys.executable, "-c", code, str(cli_brain)], check=True, capture_output=True)


def test_small_things_a_new_user_trips_on(tmp_path: Path) -> None:
    """Issue 19, item 9 (part): a typo in diff is an error, refusals exit 1 not 2, verify-proof takes a receipt."""
    import json

    brain = tmp_path / "brain"
    run_in_process("init", str(brain), check=True)
    run_in_process("--brain", str(brain), "skill", "create", "a", "--description", "A", check=True)
    for args in (["diff", "mian"], ["diff", "--skill", "nosuch"], ["diff", "main~1", "main", "nosuch"]):
        proc = run_in_process("--brain", str(brain), *args)
        assert proc.returncode == 1 and proc.stderr.startswith("error: "), (args, proc.returncode, proc.stderr)
    assert "a/SKILL.md" in run_in_process("--brain", str(brain), "diff", "main~1", "a", check=True).stdout
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine\n")
    (tmp_path / "nothing").mkdir()
    for args in (["export", str(full)], ["import", str(tmp_path / "nothing")]):
        proc = run_in_process("--brain", str(brain), *args)
        assert proc.returncode == 1, (args, proc.returncode, proc.stderr)
    assert run_in_process("clone", str(brain), str(full)).returncode == 1
    assert (full / "keep.txt").read_text() == "mine\n"
    view = tmp_path / "view.json"
    view.write_text(run_in_process("--brain", str(brain), "skill", "view", "a", "--json", check=True).stdout)
    root = json.loads(view.read_text())["receipt"]["root"]
    ok = run_in_process("proof", "check", str(view), "--root", root)
    assert ok.returncode == 0, ok.stderr


def test_diff_compares_two_versions_of_a_skill(tmp_path: Path) -> None:
    """Issue 19, item 9: `diff NAME@A NAME@B`, as `show NAME@V` and MCP skill_diff take versions."""
    brain = tmp_path / "b"
    run_in_process("init", str(brain), check=True)
    b = ("--brain", str(brain))
    run_in_process(*b, "skill", "create", "code-review", "--description", "Review", "--body", "one\n", check=True)
    run_in_process(*b, "skill", "patch", "code-review", "--old", "one", "--new", "two", check=True)
    run_in_process(*b, "skill", "create", "other", "--description", "Other", "--body", "x\n", check=True)
    run_in_process(*b, "skill", "patch", "code-review", "--old", "two", "--new", "three", check=True)
    out = run_in_process(*b, "diff", "code-review@1", "code-review@3", check=True).stdout
    assert "-one\n+three\n" in out and "other" not in out
    assert run_in_process(*b, "diff", "code-review@3", check=True).stdout == ""  # v3 is the working tree
    missing = run_in_process(*b, "diff", "code-review@1", "code-review@9")
    assert missing.returncode == 1 and "no snapshot wrote code-review v9" in missing.stderr
    mixed = run_in_process(*b, "diff", "code-review@1", "other@1")
    assert mixed.returncode == 2 and "different skills" in mixed.stderr
