"""docs/verify-without-ledger.md runs as it is: every ``sh`` block marked ``<!-- check: NAME -->``.

The publisher's block runs with the real ``ledger`` on a real brain, anchored on a real anvil; each
auditor's block runs in ``.venv-verify/`` (a fresh venv made from the hashed lock
requirements/verify-without-ledger.txt, which holds exactly what the page's install block names), with
no ``ledger`` on the PATH nor importable, and must pass; then one artifact is tampered with and the same
block must fail.  The blocks are read from the page, so the page and the test cannot drift.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ledger.brain import Brain
from tests.harness.brains import make_brain
from tests.harness.cli import LEDGER, run_ledger
from tests.harness.venvs import venv_python

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "verify-without-ledger.md"
VENV = REPO / ".venv-verify"
LOCK = REPO / "requirements" / "verify-without-ledger.txt"
CAST_DIR = REPO / "node_modules" / ".bin"


def blocks() -> dict[str, str]:
    """The page's checked ``sh`` blocks, by name."""
    found = re.findall(r"^<!-- check: ([a-z-]+) -->\n```sh\n(.*?)^```$", DOC.read_text(), re.M | re.S)
    named = dict(found)
    assert len(named) == len(found), "two blocks share a name"
    return named


def _env(path: list[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LEDGER_", "VIRTUAL_ENV", "PYTHON"))}
    return {**env, "PATH": os.pathsep.join(path)}


def auditor(name: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Block ``name`` as an auditor runs it: the locked venv first on the PATH, then cast, then the system's
    /usr/bin and /bin (git, ssh-keygen); no ledger anywhere."""
    python = venv_python(VENV, LOCK, "the tools of docs/verify-without-ledger.md")
    env = _env([str(python.parent), str(CAST_DIR), "/usr/bin", "/bin"]) | {"VIRTUAL_ENV": str(VENV)}
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", blocks()[name]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, node) -> Path:
    """``for-auditor/`` as the page's publish block writes it, from a brain whose head is anchored."""
    from ledger.anchoring.commits import deploy, register
    from ledger.chain.keys import DEV_KEY_NAME

    root = tmp_path_factory.mktemp("publisher")
    with make_brain(root / "brain") as brain:
        brain.update_config(chain={"rpc": node.url})
        deploy(brain, key=DEV_KEY_NAME)
        register(brain, shares=1000, key=DEV_KEY_NAME)
        brain.create("code-review", "Review a diff before merging", "Read the diff.\n")
        brain.write_file("code-review", "scripts/run.sh", b"#!/bin/sh\necho hi\n", executable=True)
        brain.write_file("code-review", "references/r\u00e9sum\u00e9.md", b"caf\xc3\xa9\r\n")
        brain.create("a", "A", "alpha")
    b = ("--brain", str(root / "brain"))
    run_ledger(*b, "chain", "anchor", "--key", DEV_KEY_NAME, check=True)
    run_ledger(*b, "skill", "patch", "a", "--old", "alpha", "--new", "alpha beta", check=True)
    run_ledger(*b, "chain", "anchor", "--key", DEV_KEY_NAME, check=True)
    env = _env([str(Path(LEDGER).parent), os.environ["PATH"]]) | {"LEDGER_KEYS": os.environ["LEDGER_KEYS"]}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", blocks()["publish"]],
        cwd=root / "brain",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    given = root / "for-auditor"
    from ledger.publish.entries import Entries

    with Brain.open(root / "brain") as brain:  # an entry as `ledger mcp` serves it (skills/get)
        entry = Entries(brain).get("skill://code-review/SKILL.md")
    (given / "code-review.entry.json").write_text(json.dumps(entry, indent=1, ensure_ascii=False))
    shutil.copy(REPO / "scripts" / "verify-entry.py", given / "verify-entry.py")  # as an auditor fetches it
    return given


@pytest.fixture
def given(published: Path, tmp_path: Path) -> Path:
    """A fresh copy of what the publisher handed over, for one test to verify (and tamper with)."""
    return Path(shutil.copytree(published, tmp_path / "for-auditor", symlinks=True))


def _flip(path: Path, at: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def _rewrite_head(bare: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` in the head commit object of ``bare`` (its signature kept), and point main at it."""
    git = ["git", f"--git-dir={bare}"]
    raw = subprocess.run([*git, "cat-file", "commit", "main"], capture_output=True, check=True).stdout
    assert raw.count(old) == 1
    made = (
        subprocess.run(
            [*git, "hash-object", "-t", "commit", "-w", "--stdin"],
            input=raw.replace(old, new),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    subprocess.run([*git, "update-ref", "refs/heads/main", made], check=True)


def test_the_install_block_names_exactly_what_is_locked() -> None:
    """The page's ``pip install`` line and requirements/verify-without-ledger.in name the same packages."""
    line = next(x for x in blocks()["install"].splitlines() if x.startswith("pip install "))
    named = {re.sub(r"\[.*\]", "", w.strip("'\"")).lower() for w in line.split()[2:]}
    src = LOCK.with_suffix(".in").read_text().splitlines()
    locked = {re.split(r"[=<>\[ ]", x, maxsplit=1)[0].lower() for x in src if x and not x.startswith("#")}
    assert named == locked and "pyopenssl" in named
    assert all(f"\n{name}==" in LOCK.read_text() for name in locked), "scripts/lock was not run after the .in changed"


def test_the_auditors_environment_has_no_ledger(tmp_path: Path) -> None:
    (tmp_path / "probe.sh").write_text("")
    python = venv_python(VENV, LOCK, "the tools of docs/verify-without-ledger.md")
    env = _env([str(python.parent), str(CAST_DIR), "/usr/bin", "/bin"])
    probe = subprocess.run(
        ["bash", "-c", "command -v ledger; python3 -c 'import ledger'"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode != 0 and "No module named 'ledger'" in probe.stderr, probe
    assert probe.stdout == "", probe.stdout


@pytest.mark.chain  # the published brain is anchored on anvil
def test_oms_with_the_stock_model_signing_cli(given: Path) -> None:
    ok = auditor("oms", given)
    assert ok.returncode == 0 and "Verification succeeded" in ok.stdout, ok.stdout + ok.stderr
    _flip(given / "skills" / "code-review" / "scripts" / "run.sh", 3)
    bad = auditor("oms", given)
    assert bad.returncode != 0 and "code-review/scripts/run.sh" in bad.stdout + bad.stderr, bad.stdout + bad.stderr


@pytest.mark.chain  # the published brain is anchored on anvil
def test_intoto_with_securesystemslib_defaults(given: Path) -> None:
    ok = auditor("intoto", given)
    assert ok.returncode == 0 and "in-toto: OK, 4 files" in ok.stdout, ok.stdout + ok.stderr
    (given / "skills" / "a" / "SKILL.md").write_bytes((given / "skills" / "a" / "SKILL.md").read_bytes() + b"x")
    bad = auditor("intoto", given)
    assert bad.returncode != 0 and "changed file skills/a/SKILL.md" in bad.stderr, bad.stdout + bad.stderr


def _tamper_payload(envelope: Path) -> None:
    doc = json.loads(envelope.read_bytes())
    payload = base64.b64decode(doc["payload"])
    assert payload.count(b'"actor":"user"') == 1
    doc["payload"] = base64.b64encode(payload.replace(b'"actor":"user"', b'"actor":"agent"')).decode()
    envelope.write_text(json.dumps(doc, separators=(",", ":")) + "\n")


@pytest.mark.chain  # the published brain is anchored on anvil
def test_intoto_signature_with_the_in_toto_package(given: Path) -> None:
    for name in ("intoto", "in-toto"):
        ok = auditor(name, given)
        assert ok.returncode == 0 and ok.stdout.startswith("in-toto: "), ok.stdout + ok.stderr
    _tamper_payload(given / "skills.intoto.json")
    bad = auditor("in-toto", given)
    assert bad.returncode != 0 and "SignatureVerificationError" in bad.stderr, bad.stdout + bad.stderr
    bad = auditor("intoto", given)
    assert bad.returncode != 0 and "VerificationError" in bad.stderr, bad.stdout + bad.stderr


# the P-256 key of the ledger secret 0x11…11 (tests/vectors/attest), which the published lineage never certified
STRANGER = (
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBG25ruTaaMDQIxTnz0PXSsiOtqj3"
    "ojaIfb0KsmSEU+LUMNLp6xFxkMKjipYIzjWv7v80ez3muhQ+xmGaF86PQLw=\n"
)


@pytest.mark.chain  # the published brain is anchored on anvil
def test_git_verify_commit_and_the_certified_p256_key(given: Path, tmp_path: Path) -> None:
    again = Path(shutil.copytree(given, tmp_path / "other"))
    ok = auditor("git", given)
    assert ok.returncode == 0 and 'Good "git" signature for user@0x' in ok.stderr, ok.stdout + ok.stderr
    assert ok.stdout.count(" G user@0x") >= 5, ok.stdout
    shutil.rmtree(given / "brain")
    raw = subprocess.run(
        ["git", f"--git-dir={given / 'brain.git'}", "cat-file", "commit", "main"], capture_output=True, check=True
    ).stdout
    subject = raw.split(b"\n\n", 1)[1].split(b"\n", 1)[0]
    _rewrite_head(given / "brain.git", subject, subject + b"!")  # the message changed, the signature kept
    bad = auditor("git", given)
    assert bad.returncode != 0 and "Good" not in bad.stderr, bad.stdout + bad.stderr
    other = subprocess.run(
        ["ssh-keygen", "-e", "-m", "PKCS8", "-f", "/dev/stdin"],
        input=STRANGER,
        capture_output=True,
        text=True,
        check=True,
    )
    (again / "sibling.pem").write_text(other.stdout)  # a P-256 key the lineage does not certify
    bad = auditor("git", again)
    assert bad.returncode != 0 and "differ" in bad.stdout + bad.stderr, bad.stdout + bad.stderr


@pytest.mark.chain
def test_the_chain_with_cast(given: Path) -> None:
    ok = auditor("chain", given)
    seq = json.loads((given / "chain.json").read_text())["onchain_seq"]
    assert seq >= 2 and ok.returncode == 0, ok.stdout + ok.stderr
    assert f"chain: {seq} roots anchored in order" in ok.stdout and "; 0 pending" in ok.stdout, ok.stdout
    raw = subprocess.run(
        ["git", f"--git-dir={given / 'brain.git'}", "cat-file", "commit", "main"], capture_output=True, check=True
    ).stdout
    root = re.search(rb"Ledger-Root: blake3-tree-v1:([0-9a-f]{64})", raw)
    assert root is not None
    _rewrite_head(given / "brain.git", root.group(1), bytes(reversed(root.group(1))))  # a lineage the chain never saw
    bad = auditor("chain", given)
    assert bad.returncode != 0 and "not the lineage's anchored roots" in bad.stderr, bad.stdout + bad.stderr


@pytest.mark.chain
def test_an_mcp_entry_with_the_stand_alone_verify_entry_script(given: Path) -> None:
    ok = auditor("anchor", given)
    assert ok.returncode == 0 and ok.stdout.startswith("OK: skill://code-review/SKILL.md v"), ok.stdout + ok.stderr
    again = Path(shutil.copytree(given, given.with_name("again")))
    _flip(given / "skills" / "code-review" / "scripts" / "run.sh", 3)
    bad = auditor("anchor", given)
    assert bad.returncode == 1 and "scripts/run.sh" in bad.stderr and "FAIL" in bad.stderr, bad.stdout + bad.stderr
    entry = json.loads((again / "code-review.entry.json").read_text())
    first = entry["_meta"]["dev.brain-ledger/anchor"]["files"][0]
    first["content"] = first["content"][:-1] + ("0" if first["content"][-1] != "0" else "1")
    (again / "code-review.entry.json").write_text(json.dumps(entry))
    bad = auditor("anchor", again)
    assert bad.returncode == 1 and "FAIL" in bad.stderr, bad.stdout + bad.stderr
