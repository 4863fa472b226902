"""Plain git verifies every signed snapshot (issue 37): SSHSIG against OpenSSH's own vectors, the
``gpgsig`` header against git's own layout, and a real brain checked by ``git verify-commit`` and
``git log --show-signature`` with nothing but an allowed_signers file and no ledger on PATH."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.errors import StoreError
from ledger.protocol.signing import SignatureError
from ledger.signatures import siblings, sshsig
from ledger.store import commitsig
from tests.harness import tamper
from tests.harness.cli import run_ledger
from tests.harness.wait import until

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "sshsig" / "vectors.json").read_text())
KEY = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(VECTORS["seed_hex"]))
PUBLIC = siblings.parse_public(VECTORS["public"])[1]


def _tools() -> dict[str, str]:
    """An environment holding git and ssh-keygen and nothing of the ledger: what an outside verifier has."""
    dirs = []
    for tool in ("git", "ssh-keygen"):
        found = shutil.which(tool)
        assert found, f"{tool} is missing: scripts/bootstrap installs Debian's openssh-client for ssh-keygen"
        dirs.append(str(Path(found).parent))
    path = os.pathsep.join(dict.fromkeys(dirs))
    assert shutil.which("ledger", path=path) is None, f"{path} holds a ledger command"
    return {
        "PATH": path,
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }


ENV = _tools()


def _git(
    repo: Path, *args: str, allowed: Path | None = None, input: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    config = ["-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={allowed}"] if allowed else []
    return subprocess.run(
        ["git", *config, f"--git-dir={repo}", *args],
        input=input,
        capture_output=True,
        env=ENV,
        timeout=60,
        **({} if input is not None else {"text": True}),
    )  # type: ignore[call-overload]


# ---------------------------------------------------------------------------------------------- SSHSIG vectors


@pytest.mark.parametrize("vec", VECTORS["signatures"], ids=lambda v: v["name"])
def test_ssh_keygen_signatures_verify_and_ours_are_the_same_bytes(vec: dict, tmp_path: Path) -> None:
    message = bytes.fromhex(vec["message_hex"])
    sshsig.verify(vec["signature"], message, PUBLIC, vec["namespace"])  # ssh-keygen's, checked by our code
    ours = sshsig.sign(KEY, message, vec["namespace"])
    assert ours == vec["signature"]  # Ed25519 and SSHSIG are deterministic: one key, one message, one signature
    # ...and ours checked by ssh-keygen itself, live
    (tmp_path / "allowed").write_text(f'vector namespaces="{vec["namespace"]}" {VECTORS["public"]}\n')
    (tmp_path / "sig").write_text(sshsig.sign(KEY, message, vec["namespace"]))
    proc = subprocess.run(
        [
            "ssh-keygen",
            "-Y",
            "verify",
            "-f",
            str(tmp_path / "allowed"),
            "-I",
            "vector",
            "-n",
            vec["namespace"],
            "-s",
            str(tmp_path / "sig"),
        ],
        input=message,
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert proc.returncode == 0 and b'Good "' in proc.stdout, proc.stderr


def test_ssh_keygen_refuses_our_signature_over_other_bytes(tmp_path: Path) -> None:
    (tmp_path / "allowed").write_text(f'vector namespaces="git" {VECTORS["public"]}\n')
    (tmp_path / "sig").write_text(sshsig.sign(KEY, b"one"))
    proc = subprocess.run(
        [
            "ssh-keygen",
            "-Y",
            "verify",
            "-f",
            str(tmp_path / "allowed"),
            "-I",
            "vector",
            "-n",
            "git",
            "-s",
            str(tmp_path / "sig"),
        ],
        input=b"two",
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert proc.returncode != 0


def _blob(namespace: bytes = b"git", hash_name: bytes = b"sha512", reserved: bytes = b"", tail: bytes = b"") -> str:
    """An SSHSIG with chosen fields, signed properly over them: only the field under test is wrong."""

    def s(b: bytes) -> bytes:
        return struct.pack(">I", len(b)) + b

    digest = hashlib.new(hash_name.decode(), b"m").digest()
    data = b"SSHSIG" + s(namespace) + s(reserved) + s(hash_name) + s(digest)
    sig = s(b"ssh-ed25519") + s(KEY.sign(data))
    blob = b"SSHSIG" + struct.pack(">I", 1) + s(PUBLIC) + s(namespace) + s(reserved) + s(hash_name) + s(sig) + tail
    return sshsig.armor(blob)


@pytest.mark.parametrize(
    ("text", "message", "public", "why"),
    [
        (VECTORS["signatures"][0]["signature"], b"hello, brain-ledger!\n", PUBLIC, "does not verify"),
        (VECTORS["signatures"][3]["signature"], b"hello, brain-ledger\n", PUBLIC, "namespace"),  # 'file', not 'git'
        (
            VECTORS["signatures"][0]["signature"],
            b"hello, brain-ledger\n",
            sshsig.public_blob(b"\x01" * 32),
            "another key",
        ),
        (
            VECTORS["signatures"][0]["signature"].replace("\n", "", 2).replace("-----U", "-----\nU", 1),
            b"hello, brain-ledger\n",
            PUBLIC,
            "canonical armor",
        ),
        (VECTORS["signatures"][0]["signature"].rstrip("\n"), b"hello, brain-ledger\n", PUBLIC, "armored"),
        (_blob(hash_name=b"sha256"), b"m", PUBLIC, "hash sha512"),
        (_blob(reserved=b"x"), b"m", PUBLIC, "reserved"),
        (_blob(tail=b"\0"), b"m", PUBLIC, "trailing"),
    ],
    ids=["other-bytes", "other-namespace", "other-key", "rewrapped", "no-newline", "sha256", "reserved", "trailing"],
)
def test_malformed_or_wrong_signatures_are_refused(text: str, message: bytes, public: bytes, why: str) -> None:
    assert sshsig.verify(_blob(), b"m", PUBLIC) is None  # the control: the helper's blob is a good one
    with pytest.raises(SignatureError, match=why):
        sshsig.verify(text, message, public)


# ------------------------------------------------------------------------------------------ the gpgsig header


def test_the_gpgsig_header_is_laid_out_as_git_lays_it_out() -> None:
    raw = base64.b64decode(VECTORS["commit"]["raw_base64"])  # made by `git commit-tree -S`, gpg.format=ssh
    payload, text = commitsig.split(raw)
    assert text is not None and b"gpgsig" not in payload
    sshsig.verify(text, payload, PUBLIC)  # git's signature, over the payload we rebuilt
    assert commitsig.insert(payload, sshsig.sign(KEY, payload)) == raw  # and we write git's bytes exactly
    assert commitsig.split(payload) == (payload, None)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"tree 1\nauthor a\ncommitter c\ngpgsig A\n B\ngpgsig C\n\nm\n", "given twice"),
        (b"tree 1\nauthor a\ncommitter c\ngpgsig A\n B\nencoding x\n\nm\n", "not the last"),
        (b"tree 1\nauthor a\ncommitter c\ngpgsig-sha256 A\n\nm\n", "other than gpgsig"),
        (b"tree 1\nauthor a\ncommitter c\nmergetag x\n\nm\n", "other than gpgsig"),
        (b"tree 1\nauthor a\n committer c\n\nm\n", "continuation line"),
        (b"tree 1\nauthor a\n committer x\ncommitter c\ngpgsig A\n B\n\nm\n", "continuation line"),
        (b"tree 1\n x\nauthor a\ncommitter c\ngpgsig A\n\nm\n", "continuation line"),
        (b"tree 1\nauthor a\ncommitter c\ngpgsig A", "no blank line"),
    ],
    ids=[
        "twice",
        "not-last",
        "sha256",
        "mergetag",
        "stray-continuation",
        "signed-continuation",
        "signed-continuation-first",
        "no-message",
    ],
)
def test_ambiguous_signature_headers_are_refused(raw: bytes, why: str) -> None:
    with pytest.raises(StoreError, match=why):
        commitsig.split(raw)


def test_a_signed_commit_is_not_signed_again() -> None:
    raw = base64.b64decode(VECTORS["commit"]["raw_base64"])
    with pytest.raises(StoreError, match="no signature yet"):
        commitsig.insert(raw, sshsig.sign(KEY, raw))


# -------------------------------------------------------------------------------------- a real brain, plain git


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two signed copies merged through a remote (user and agent snapshots, a merge), then the agent key
    rotated (the old one revoked) and used: returns the brain and its key directory."""
    root = tmp_path_factory.mktemp("gitsig")
    b = tamper.build_honest_merged(root)[0]
    env = {"LEDGER_KEYS": str(root / "keys")}
    run_ledger("--brain", str(b), "keys", "rotate", "agent", check=True, env=env)
    run_ledger(
        "--brain",
        str(b),
        "skill",
        "patch",
        "u",
        "--old",
        "\nu\n",
        "--new",
        "\nuu\n",
        "--actor",
        "agent",
        check=True,
        env=env,
    )
    return b, root / "keys"


def _export(brain: Path, keys: Path, out: Path) -> list[str]:
    proc = run_ledger(
        "--brain", str(brain), "keys", "export", "--allowed-signers", "-o", str(out), env={"LEDGER_KEYS": str(keys)}
    )
    assert proc.returncode == 0, proc.stderr
    return out.read_text().splitlines()


def test_git_verifies_every_snapshot_with_the_exported_allowed_signers(brain, tmp_path: Path) -> None:
    b, keys = brain
    allowed = tmp_path / "allowed_signers"
    lines = _export(b, keys, allowed)
    repo = b / ".git"
    commits = _git(repo, "rev-list", "main").stdout.split()
    assert len(commits) >= 9 and any(
        len(_git(repo, "cat-file", "-p", c).stdout.split("\nparent ")) == 3 for c in commits
    )
    agents = [ln for ln in lines if ln.startswith("agent@")]
    assert len(lines) == 3 and len(agents) == 2 and sum(ln.startswith("user@") for ln in lines) == 1, lines
    revoked = [ln for ln in agents if "valid-before=" in ln]
    assert len(revoked) == 1 and re.search(r',valid-before="\d{14}Z" ssh-ed25519 AAAA', revoked[0]), lines
    for commit in commits:
        proc = _git(repo, "verify-commit", "-v", commit, allowed=allowed)
        assert proc.returncode == 0 and 'Good "git" signature for ' in proc.stderr, (commit, proc.stderr)
    log = _git(repo, "log", "--show-signature", "--format=%H %G?", "main", allowed=allowed).stdout
    assert log.count('Good "git" signature for ') == len(commits), log
    assert re.findall(r"^([0-9a-f]{40}) G$", log, re.M) == _git(repo, "rev-list", "main").stdout.split()
    principals = set(re.findall(r'Good "git" signature for (\S+) with', log))
    assert principals == {ln.split(" ")[0] for ln in lines}, principals  # every key signed something


def test_a_tampered_or_foreign_commit_fails_in_git(brain, tmp_path: Path) -> None:
    b, keys = brain
    allowed = tmp_path / "allowed_signers"
    _export(b, keys, allowed)
    repo = tmp_path / "copy.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(b / ".git"), str(repo)], check=True, env=ENV)
    raw = _git(repo, "cat-file", "commit", "main", input=b"").stdout
    assert _git(repo, "verify-commit", "main", allowed=allowed).returncode == 0  # the control
    payload = commitsig.split(raw)[0]
    forged = {  # what git says of each
        "message": (raw.replace(b"\nLedger-Actor: ", b"\nLedger-Actor:  ", 1), "incorrect signature"),
        "other-key": (
            commitsig.insert(payload, sshsig.sign(Ed25519PrivateKey.generate(), payload)),
            "No principal matched",
        ),
        "stripped": (payload, ""),
    }
    for name, (data, says) in forged.items():
        assert data != raw
        made = _git(repo, "hash-object", "-t", "commit", "-w", "--stdin", input=data)
        commit = made.stdout.decode().strip()
        proc = _git(repo, "verify-commit", commit, allowed=allowed)
        assert proc.returncode != 0 and 'Good "git" signature for' not in proc.stderr, (name, proc.stderr)
        assert says in proc.stderr, (name, proc.stderr)


def test_a_revoked_key_verifies_before_its_revocation_only(brain, tmp_path: Path) -> None:
    """valid-before: the old agent key's snapshots verify; the same key signing a commit dated after the
    revocation does not (git passes the committer time to ssh-keygen as verify-time)."""
    b, keys = brain
    allowed = tmp_path / "allowed_signers"
    _export(b, keys, allowed)
    old = next(p for p in keys.iterdir() if re.fullmatch(r"agent\.0x[0-9a-f]{40}\.key", p.name))
    secret = bytes.fromhex(json.loads(old.read_text())["private_key"][2:])
    sibling = siblings.public_lines(secret)[0]
    repo = tmp_path / "copy.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(b / ".git"), str(repo)], check=True, env=ENV)
    by_old = [
        c
        for c in _git(repo, "rev-list", "main").stdout.split()
        if f"Ledger-Sibling: {sibling}\n" in _git(repo, "cat-file", "commit", c).stdout
    ]
    assert by_old and all(_git(repo, "verify-commit", c, allowed=allowed).returncode == 0 for c in by_old)
    payload = commitsig.split(_git(repo, "cat-file", "commit", by_old[0], input=b"").stdout)[0]
    later = re.sub(
        rb"^(committer .*> )(\d+)", lambda m: m[1] + str(int(m[2]) + 86400 * 365).encode(), payload, count=1, flags=re.M
    )
    data = commitsig.insert(later, sshsig.sign(siblings.ed25519_key(secret), later))
    commit = _git(repo, "hash-object", "-t", "commit", "-w", "--stdin", input=data).stdout.decode().strip()
    proc = _git(repo, "verify-commit", commit, allowed=allowed)
    assert proc.returncode != 0 and "key has expired" in proc.stderr and "signature for" not in proc.stderr, proc.stderr


def test_the_exported_public_key_is_the_certified_sibling(brain) -> None:
    b, keys = brain
    proc = run_ledger("--brain", str(b), "keys", "export", "--public", "agent", env={"LEDGER_KEYS": str(keys)})
    assert proc.returncode == 0, proc.stderr
    tip = _git(b / ".git", "cat-file", "commit", "main").stdout  # the rotated agent key signed the tip
    pair = siblings.Siblings.from_trailers(re.findall(r"^Ledger-Sibling: (.*)$", tip, re.M))
    assert proc.stdout.encode() == pair.pem(siblings.P256)
    assert ser.load_pem_public_key(proc.stdout.encode()) is not None


def test_the_audit_checks_every_git_signature(brain) -> None:
    b, _ = brain
    proc = run_ledger("audit", str(b), "--json", "--require-signatures")
    report = json.loads(proc.stdout)
    chk = report["checks"]["siblings"]
    assert proc.returncode == 0 and chk["ok"], chk
    count = len(_git(b / ".git", "rev-list", "main").stdout.split())
    assert chk["summary"].startswith(f"{count} snapshot(s) carry a git signature"), chk["summary"]


def test_a_side_branch_signed_by_a_key_the_mainline_revoked_verifies_in_git(tmp_path: Path) -> None:
    """lineage.md §9.2: a side-branch snapshot is checked against its own first parent's trust set, so a copy
    that has not yet seen the mainline's rotation goes on signing with the old agent key, later than the
    revocation.  The audit accepts it; the exported allowed_signers must let git accept it too."""
    import time

    env = {"LEDGER_KEYS": str(tmp_path / "keys")}
    a, b, remote = tmp_path / "a", tmp_path / "b", tmp_path / "remote.git"

    def do(*args: str) -> None:
        run_ledger(*args, check=True, env=env)

    do("init", str(a))
    do("--brain", str(a), "skill", "create", "s", "--description", "S", "--body", "one\n")
    do("--brain", str(a), "push", str(remote))
    do("clone", str(remote), str(b))
    do("--brain", str(a), "keys", "rotate", "agent")
    do("--brain", str(a), "push", str(remote))
    revoked = int(_git(a / ".git", "log", "-1", "--format=%ct", "main").stdout)  # a's newest: the revocation
    # The side branch's snapshot is dated (git's whole seconds, the ledger's own clock) after the revocation:
    # wait for the clock's second to pass that one, no longer (a fixed 1.2 s slept before).
    until(lambda: int(time.time()) > revoked, timeout=10, what="the clock to pass the revocation's second")
    do("--brain", str(b), "skill", "create", "t", "--description", "T", "--body", "t\n", "--actor", "agent")
    do("--brain", str(b), "push", str(remote))
    audit = run_ledger("audit", str(b), "--require-signatures", env=env)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    repo = b / ".git"
    revoking = next(
        c
        for c in _git(repo, "rev-list", "--first-parent", "main").stdout.split()
        if "\nLedger-Key: revoke " in _git(repo, "cat-file", "commit", c).stdout
    )
    side = _git(repo, "rev-list", "main", f"^{revoking}", "--no-merges").stdout.split()
    when = int(_git(repo, "log", "-1", "--format=%ct", revoking).stdout)
    assert side and all(int(_git(repo, "log", "-1", "--format=%ct", c).stdout) > when for c in side)
    allowed = tmp_path / "allowed_signers"
    lines = _export(b, tmp_path / "keys", allowed)
    assert sum("valid-before=" in ln for ln in lines) == 1, lines
    for commit in _git(repo, "rev-list", "main").stdout.split():
        proc = _git(repo, "verify-commit", "-v", commit, allowed=allowed)
        assert proc.returncode == 0 and 'Good "git" signature for ' in proc.stderr, (commit, proc.stderr)


def test_a_clone_without_keys_exports_the_certified_public_key(brain, tmp_path: Path) -> None:
    """An auditor's copy holds no secret: the key comes from the lineage's Ledger-Sibling trailers."""
    b, keys = brain
    mine = run_ledger("--brain", str(b), "keys", "export", "--public", "user", env={"LEDGER_KEYS": str(keys)})
    theirs = run_ledger(
        "--brain",
        str(b),
        "keys",
        "export",
        "--public",
        "user",
        "--scheme",
        "p256",
        env={"LEDGER_KEYS": str(tmp_path / "no-keys")},
    )
    assert mine.returncode == 0 and theirs.returncode == 0, theirs.stderr
    assert theirs.stdout == mine.stdout and "BEGIN PUBLIC KEY" in theirs.stdout


def test_a_trusted_key_that_certified_no_sibling_is_refused(brain, tmp_path: Path) -> None:
    b = tmp_path / "b"
    shutil.copytree(brain[0], b)
    env = {"LEDGER_KEYS": str(brain[1])}
    run_ledger("--brain", str(b), "keys", "trust", "curator", "0x" + "ab" * 20, check=True, env=env)
    proc = run_ledger("--brain", str(b), "keys", "export", "--public", "curator", env=env)
    assert proc.returncode == 1 and proc.stdout == "", proc
    assert "certified no p256 sibling" in proc.stderr and "make one signed change as curator" in proc.stderr


def test_several_trusted_keys_of_a_role_need_the_held_one_or_address(brain, tmp_path: Path) -> None:
    b = tmp_path / "b"
    shutil.copytree(brain[0], b)
    env = {"LEDGER_KEYS": str(brain[1])}
    held = run_ledger("--brain", str(b), "keys", "export", "--public", "agent", env=env, check=True).stdout
    other = "0x" + "cd" * 20
    run_ledger("--brain", str(b), "keys", "trust", "agent", other, check=True, env=env)
    assert run_ledger("--brain", str(b), "keys", "export", "--public", "agent", env=env).stdout == held
    away = {"LEDGER_KEYS": str(tmp_path / "no-keys")}
    proc = run_ledger("--brain", str(b), "keys", "export", "--public", "agent", env=away)
    assert proc.returncode == 1 and other in proc.stderr and "--address ADDR" in proc.stderr, proc.stderr
    agent = json.loads(run_ledger("--brain", str(b), "keys", "show", "--json", env=env, check=True).stdout)
    mine = next(k["address"] for k in agent["local"] if k["role"] == "agent")
    picked = run_ledger("--brain", str(b), "keys", "export", "--public", "agent", "--address", mine, env=away)
    assert picked.returncode == 0 and picked.stdout == held, picked.stderr
    proc = run_ledger("--brain", str(b), "keys", "export", "--public", "agent", "--address", "0x" + "ef" * 20, env=away)
    assert proc.returncode == 1 and "does not trust" in proc.stderr, proc.stderr


def test_an_unsigned_brain_has_no_certified_key(tmp_path: Path) -> None:
    env = {"LEDGER_KEYS": str(tmp_path / "keys")}
    run_ledger("init", "--unsigned", str(tmp_path / "u"), check=True, env=env)
    proc = run_ledger("--brain", str(tmp_path / "u"), "keys", "export", "--public", "user", env=env)
    assert proc.returncode == 1 and "ledger sign --adopt" in proc.stderr, proc.stderr


def test_a_lineage_that_predates_siblings_exports_no_empty_allowed_signers(tmp_path: Path) -> None:
    """A v1.4 lineage: signed snapshots without Ledger-Sibling trailers (re-signed here by the same key)."""
    from ledger.signatures.identity import KeyDir

    keys, b = tmp_path / "keys", tmp_path / "b"
    env = {"LEDGER_KEYS": str(keys)}
    run_ledger("init", str(b), check=True, env=env)
    assert len(tamper.lineage(b / ".git")) == 1
    secret = KeyDir(keys).load("user").secret
    strip = tamper.sub(r"^Ledger-Sibling: ssh-ed25519 .*\n", "")
    tamper.rewrite(
        b / ".git", 0, message=lambda m: tamper.sub(r"^Ledger-Sibling: ecdsa.*\n", "")(strip(m)), sign_with=secret
    )
    out = tmp_path / "allowed"
    proc = run_ledger("--brain", str(b), "keys", "export", "--allowed-signers", "-o", str(out), env=env)
    assert proc.returncode == 1 and "make one signed change" in proc.stderr and not out.exists(), proc.stderr
    proc = run_ledger("--brain", str(b), "keys", "export", "--public", "user", env=env)
    assert proc.returncode == 1 and "make one signed change as user" in proc.stderr, proc.stderr


def test_an_unwritable_output_names_the_path_and_the_os_error(brain, tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "allowed"
    proc = run_ledger(
        "--brain",
        str(brain[0]),
        "keys",
        "export",
        "--allowed-signers",
        "-o",
        str(target),
        env={"LEDGER_KEYS": str(brain[1])},
    )
    assert proc.returncode == 1 and f"cannot write {target}: No such file or directory" in proc.stderr, proc.stderr
    assert "changed while" not in proc.stderr
