"""The refs beside ``main`` (issue 46; docs/adr/0027, revised): a guarded remote checks every ref the ledger
publishes as a peer would take it, a peer that meets a bad one refuses that ref alone and still takes ``main``,
and ``ledger audit REMOTE`` names it.

Real git, real bare remotes, the real CLI.  The names are read from the modules that write each ref.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ledger.chain import epochlog
from ledger.protocol.refs import EPOCH_NOTES_REF, EPOCHS_REF, EVIDENCE_NOTES_REF, NOTES_REF
from ledger.store import gitstore as gs
from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger

BESIDE_MAIN = (NOTES_REF, EPOCH_NOTES_REF, EVIDENCE_NOTES_REF, EPOCHS_REF)
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


ID = {"GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@x", "GIT_COMMITTER_NAME": "x", "GIT_COMMITTER_EMAIL": "x@x"}


def _run(*args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], capture_output=True, text=True, check=check, input=input, env={**os.environ, **ID}
    )


def _git(git_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return _run(f"--git-dir={git_dir}", *args, check=check)


def _ref(git_dir: Path, ref: str) -> str | None:
    proc = _git(git_dir, "rev-parse", "--verify", "-q", ref, check=False)
    return proc.stdout.strip() or None


def _junk(git_dir: Path, parent: str | None = None) -> str:
    """A commit of someone's stray files, as a mistaken or hostile 'git push' would publish."""
    blob = _run(f"--git-dir={git_dir}", "hash-object", "-w", "--stdin", input="junk\n").stdout.strip()
    tree = _run(f"--git-dir={git_dir}", "mktree", input=f"100644 blob {blob}\tREADME\n").stdout.strip()
    return _git(git_dir, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", "junk").stdout.strip()


def _good(git_dir: Path, ref: str, parent: str | None = None) -> str:
    """A commit a peer takes as ``ref``: an empty notes tree, or an empty epoch log (one more commit of it)."""
    if ref != EPOCHS_REF:
        parents = ["-p", parent] if parent else []
        return _git(git_dir, "commit-tree", EMPTY_TREE, *parents, "-m", "notes").stdout.strip()
    with gs.GitStore(git_dir) as store:
        log = epochlog.read_local(store)
        return epochlog.save(store, log, "log\n").hex()


@pytest.fixture
def shared(tmp_path: Path) -> dict[str, Path]:
    """Brain ``a`` (one skill) pushed to a guarded remote made by the ledger."""
    env = {"LEDGER_KEYS": str(tmp_path / "keys")}
    a, remote = tmp_path / "a", tmp_path / "shared.git"
    make_brain(a, {"deploy": ("Deploys", "safe\n")}, via="cli", env=env)
    run_ledger("--brain", str(a), "remote", "set", "--create", str(remote), env=env, check=True)
    run_ledger("--brain", str(a), "push", str(remote), env=env, check=True)
    return {"a": a, "git": a / ".git", "remote": remote, "tmp": tmp_path, "keys": tmp_path / "keys"}


# ---------------------------------------------------------------------------------------------- the guard


@pytest.mark.parametrize("ref", BESIDE_MAIN)
@pytest.mark.parametrize("how", ["junk", "delete", "rewind"])
def test_a_raw_push_to_a_ref_beside_main_is_refused_by_the_guard(shared: dict[str, Path], ref: str, how: str) -> None:
    git, remote = shared["git"], shared["remote"]
    _git(remote, "config", "receive.denyNonFastForwards", "false")  # the guard alone stands in the way
    first = _good(git, ref)
    _git(git, "push", "-q", str(remote), f"{first}:{ref}")  # a well-formed ref is taken
    grown = _good(git, ref, first)
    _git(git, "push", "-q", str(remote), f"{grown}:{ref}")  # and so is its fast-forward
    assert _ref(remote, ref) == grown
    spec = {"junk": f"+{_junk(git, grown)}:{ref}", "delete": f":{ref}", "rewind": f"+{first}:{ref}"}[how]
    raw = _git(git, "push", str(remote), spec, check=False)
    assert raw.returncode != 0 and f"brain-ledger guard: refused {ref}" in raw.stderr, raw.stderr
    why = {
        "junk": "'README', which is not a note" if ref != EPOCHS_REF else "not log.json",
        "delete": "deleting it",
        "rewind": "non-fast-forward",
    }[how]
    assert why in raw.stderr, raw.stderr
    assert _ref(remote, ref) == grown  # nothing was taken
    audit = run_ledger("audit", str(remote))
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_the_guard_refuses_a_first_junk_value_a_bad_receipt_and_names_outside_the_ledgers(
    shared: dict[str, Path],
) -> None:
    git, remote = shared["git"], shared["remote"]
    for ref in BESIDE_MAIN:
        raw = _git(git, "push", str(remote), f"{_junk(git)}:{ref}", check=False)
        assert raw.returncode != 0 and f"brain-ledger guard: refused {ref}" in raw.stderr, raw.stderr
        assert _ref(remote, ref) is None
    # A note where a receipt belongs (on the head snapshot, so the tree is well formed): not a receipt.
    head = _ref(git, "refs/heads/main")
    _git(git, "notes", "--ref", NOTES_REF, "add", "-m", "not a receipt", head)
    raw = _git(git, "push", str(remote), f"{NOTES_REF}:{NOTES_REF}", check=False)
    assert raw.returncode != 0 and "the chain receipt on" in raw.stderr and "not JSON" in raw.stderr, raw.stderr
    # Names under the ledger's namespaces that it never publishes; a tag or another branch is not the ledger's.
    for ref in ("refs/ledger/elsewhere", "refs/notes/ledger-chain-unverified", "refs/notes/ledger-x"):
        raw = _git(git, "push", str(remote), f"{head}:{ref}", check=False)
        assert raw.returncode != 0 and f"brain-ledger guard: refused {ref}" in raw.stderr, raw.stderr
    _git(git, "push", "-q", str(remote), f"{head}:refs/tags/v1")
    # A replace ref would make every audit of the remote fail (fsck): refused too.
    raw = _git(git, "push", str(remote), f"{head}:refs/replace/{_ref(git, 'main~1')}", check=False)
    assert raw.returncode != 0 and "a replace ref makes git show substituted objects" in raw.stderr, raw.stderr
    # The ledger's own push still goes through, and the remote audits clean.
    env = {"LEDGER_KEYS": str(shared["keys"])}
    run_ledger(
        "--brain",
        str(shared["a"]),
        "skill",
        "create",
        "two",
        "--description",
        "Two",
        "--body",
        "x\n",
        env=env,
        check=True,
    )
    _git(git, "update-ref", "-d", NOTES_REF)
    run_ledger("--brain", str(shared["a"]), "push", str(remote), env=env, check=True)
    audit = run_ledger("audit", str(remote))
    assert audit.returncode == 0 and "OK   refs" in audit.stdout, audit.stdout + audit.stderr


# ---------------------------------------------------------------------------------------------- the peers


@pytest.mark.parametrize("ref", BESIDE_MAIN)
def test_peers_take_main_past_a_bad_ref_and_name_it(shared: dict[str, Path], ref: str) -> None:
    """A remote without the guard (a git host) holding a junk commit as ``ref``: push publishes main,
    clone, pull and sync take it; each names the refused ref, with a hint, and exits 1; the audit names it."""
    a, git, tmp = shared["a"], shared["git"], shared["tmp"]
    env = {"LEDGER_KEYS": str(shared["keys"])}
    loose = tmp / "loose.git"
    _run("init", "-q", "--bare", str(loose))  # no hook: made by hand, as a hosted remote is
    run_ledger("--brain", str(a), "push", str(loose), env=env, check=True)
    b = tmp / "b"
    run_ledger("clone", str(loose), str(b), env=env, check=True)
    run_ledger("--brain", str(b), "remote", "set", str(loose), env=env, check=True)
    _git(git, "push", "-q", str(loose), f"+{_junk(git)}:{ref}")

    run_ledger(
        "--brain", str(a), "skill", "create", "two", "--description", "Two", "--body", "x\n", env=env, check=True
    )
    pushed = run_ledger("--brain", str(a), "push", str(loose), env=env)
    assert pushed.returncode == 1 and f"refused {ref} of {loose}" in pushed.stderr, pushed.stderr
    assert "hint:" in pushed.stderr and "Traceback" not in pushed.stderr
    head = _ref(git, "refs/heads/main")
    assert _ref(loose, "refs/heads/main") == head  # main published all the same

    cloned = run_ledger("clone", str(loose), str(tmp / "c"), env=env)
    assert cloned.returncode == 1 and f"refused {ref} of {loose}" in cloned.stderr, cloned.stderr
    assert _ref(tmp / "c" / ".git", "refs/heads/main") == head and (tmp / "c" / "skills" / "two" / "SKILL.md").exists()
    assert _ref(tmp / "c" / ".git", ref) is None

    pulled = run_ledger("--brain", str(b), "pull", str(loose), env=env)
    assert pulled.returncode == 1 and f"refused {ref} of {loose}" in pulled.stderr, pulled.stderr
    assert _ref(b / ".git", "refs/heads/main") == head and (b / "skills" / "two" / "SKILL.md").exists()
    assert _ref(b / ".git", ref) is None

    run_ledger(
        "--brain", str(a), "skill", "create", "three", "--description", "Three", "--body", "x\n", env=env, check=True
    )
    run_ledger("--brain", str(a), "push", str(loose), env=env)
    synced = run_ledger("--brain", str(b), "sync", env=env)
    out = synced.stdout + synced.stderr
    assert synced.returncode == 1 and f"refused {ref} of {loose}" in out and "main is in step" in out, out
    assert _ref(b / ".git", "refs/heads/main") == _ref(git, "refs/heads/main")
    assert (b / "skills" / "three" / "SKILL.md").exists()

    audit = run_ledger("audit", str(loose), "--json")
    doc = json.loads(audit.stdout)
    assert audit.returncode == 1 and not doc["checks"]["refs"]["ok"], audit.stdout
    assert ref in doc["checks"]["refs"]["summary"] and "README" in doc["checks"]["refs"]["summary"]
    text = run_ledger("audit", str(loose))
    assert text.returncode == 1 and "FAIL refs" in text.stdout and ref in text.stdout, text.stdout
    assert "Verified OK" not in text.stdout


def test_the_audit_names_every_ref_a_peer_refuses(shared: dict[str, Path]) -> None:
    git, tmp = shared["git"], shared["tmp"]
    loose = tmp / "loose.git"
    _run("clone", "-q", "--bare", str(shared["remote"]), str(loose))
    (loose / "hooks" / "pre-receive").unlink(missing_ok=True)
    junk = _junk(git)
    blob = _git(git, "rev-parse", f"{junk}:README").stdout.strip()
    _git(git, "push", "-q", str(loose), f"{junk}:{EPOCHS_REF}", f"{junk}:{NOTES_REF}")
    _git(loose, "update-ref", EPOCH_NOTES_REF, blob)  # not even a commit
    _git(loose, "update-ref", "refs/ledger/stray", junk)
    audit = run_ledger("audit", str(loose), "--json")
    assert audit.returncode == 1, audit.stdout + audit.stderr
    summary = json.loads(audit.stdout)["checks"]["refs"]["summary"]
    for ref in (EPOCHS_REF, NOTES_REF, EPOCH_NOTES_REF, "refs/ledger/stray"):
        assert ref in summary, summary
    assert "not a commit" in summary and "not a ref the ledger publishes" in summary
    mine = run_ledger("audit", str(shared["a"]))
    assert mine.returncode == 0 and "OK   refs" in mine.stdout, mine.stdout


def test_a_guard_installed_before_the_move_to_ledger_remotes_still_guards(shared: dict[str, Path]) -> None:
    """Hooks installed before issue 51 run ``python3 -m ledger.remotes.guard``: that path still loads the
    guard, so a shared remote keeps auditing pushes after an upgrade, rather than refusing every one."""
    git, remote = shared["git"], shared["remote"]
    hook = remote / "hooks" / "pre-receive"
    text = hook.read_text()
    assert "ledger.remotes.guard" in text
    hook.write_text(text.replace("ledger.remotes.guard", "ledger.remotes.guard"))  # as an older install wrote it
    raw = _git(git, "push", str(remote), f"+{_junk(git)}:{NOTES_REF}", check=False)
    assert raw.returncode != 0 and f"brain-ledger guard: refused {NOTES_REF}" in raw.stderr, raw.stderr
    assert "is not installed where git runs this hook" not in raw.stderr
