"""One test per defect in issue 8: races, bricking inputs, writes outside the brain, hostile input.

Each test ran red against the code before the fix (see docs/RELIABILITY.md for the commands).
Concurrency and random-kill runs at scale live in tests/harness/stress.py (reduced in tests/reliability/test_stress.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.brain import Brain
from ledger.errors import LedgerError, SkillError, TreeError
from ledger.store.gitstore import GitStore
from tests.harness.brains import fingerprint
from tests.harness.cli import run_ledger

pytestmark = pytest.mark.slow  # a reliability harness (pyproject.toml, "slow")


def _sentinel(tmp_path: Path) -> tuple[Path, str]:
    """A directory outside the brain with a checksum of every file in it."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "target.txt").write_text("precious\n")
    return out, _checksum(out)


def _checksum(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        h.update(p.relative_to(path).as_posix().encode() + b"\0")
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def _verify(root: Path) -> subprocess.CompletedProcess[str]:
    return run_ledger("--brain", str(root), "verify")


# --------------------------------------------------------------------------- 1. concurrent writers


def test_patch_and_write_file_read_their_base_under_the_lock(brain: Brain) -> None:
    """Two API handles interleave exactly as two processes did: the second must see the first's write."""
    brain.create("s", "shared", "<!-- end -->\n")
    other = Brain.open(brain.root)
    try:
        brain.patch("s", "<!-- end -->", "one\n<!-- end -->")
        r = other.patch("s", "<!-- end -->", "two\n<!-- end -->")
        r2 = other.write_file("s", "references/a.md", b"a\n")
        r3 = brain.write_file("s", "references/b.md", b"b\n")
    finally:
        other.close()
    assert (r.version, r2.version, r3.version) == (3, 4, 5)
    text = (brain.skills_dir / "s" / "SKILL.md").read_text()
    assert "one\n" in text and "two\n" in text
    assert {p.name for p in (brain.skills_dir / "s" / "references").iterdir()} == {"a.md", "b.md"}


# --------------------------------------------------------------------------- 2. inputs that bricked a brain


def test_support_path_longer_than_the_rule_is_refused_before_the_journal(brain: Brain) -> None:
    brain.create("s", "d", "x\n")
    rel = "references/" + "/".join(["d" * 200] * 25) + "/f.md"  # every part valid, the whole ~5 KB
    before = fingerprint(brain.root)
    with pytest.raises(SkillError, match="limited to"):
        brain.write_file("s", rel, b"x")
    assert fingerprint(brain.root) == before
    assert not (brain.control / "journal.json").exists()


def test_deep_path_within_the_rule_works_wherever_the_brain_lives(tmp_path: Path) -> None:
    """3,900-byte bundle paths under a long brain path: beyond PATH_MAX absolute, fine relative."""
    home = tmp_path / ("p" * 200) / ("q" * 200)
    home.mkdir(parents=True)
    with Brain.init(home / "brain") as b:
        b.create("s", "d", "x\n")
        rel = "references/" + "/".join(["d" * 120] * 31) + "/f.md"
        assert 3700 < len(f"s/{rel}") <= 4000
        r = b.write_file("s", rel, b"deep\n")
        assert b.status().clean
        assert b.prove(f"s/{rel}").root.hex() == r.root.split(":")[1]
    proc = _verify(home / "brain")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dangling_symlink_at_a_skill_name_is_refused_and_reads_still_work(brain: Brain, tmp_path: Path) -> None:
    os.symlink(tmp_path / "nowhere", brain.skills_dir / "ghost")
    with pytest.raises(LedgerError, match="already exists"):
        brain.create("ghost", "d", "x\n")
    assert not (brain.control / "journal.json").exists()
    for args in (["skill", "list"], ["index"], ["log"]):
        proc = run_ledger("--brain", str(brain.root), *args)
        assert proc.returncode == 0, (args, proc.stderr)


# --------------------------------------------------------------------------- 3. writes outside the brain


def test_planted_hard_link_is_replaced_not_written_through(brain: Brain, tmp_path: Path) -> None:
    outside, digest = _sentinel(tmp_path)
    brain.create("s", "d", "x\n")
    brain.write_file("s", "references/a.md", b"precious\n")  # same bytes as the outside file
    target = brain.skills_dir / "s" / "references" / "a.md"
    target.unlink()
    os.link(outside / "target.txt", target)  # content equal to the snapshot: the tree still counts as clean
    brain.write_file("s", "references/a.md", b"overwritten\n")
    assert _checksum(outside) == digest
    assert target.read_bytes() == b"overwritten\n"


def test_roll_forward_never_writes_through_a_planted_temp_link(brain: Brain, tmp_path: Path) -> None:
    outside, digest = _sentinel(tmp_path)
    brain.create("s", "d", "x\n")
    proc = run_ledger(
        "--brain",
        str(brain.root),
        "skill",
        "patch",
        "s",
        "--old",
        "x",
        "--new",
        "y",
        env={"LEDGER_CRASHPOINT": "after-journal"},
    )
    assert proc.returncode == 86
    # Hard links to the outside file where a writer might put its temp file: the old name beside
    # the target, and the new place, .ledger/tmp/.
    os.link(outside / "target.txt", brain.skills_dir / "s" / ".SKILL.md.ledger-tmp")
    (brain.control / "tmp").mkdir(exist_ok=True)
    os.link(outside / "target.txt", brain.control / "tmp" / ("0" * 24))
    status = run_ledger("--brain", str(brain.root), "status")
    assert status.returncode == 0 and "added by hand" in status.stderr
    assert _checksum(outside) == digest
    done = run_ledger("--brain", str(brain.root), "recover", "--move-aside")
    assert done.returncode == 0, done.stderr
    assert _checksum(outside) == digest
    assert "y" in (brain.skills_dir / "s" / "SKILL.md").read_text()
    assert _verify(brain.root).returncode == 0


@pytest.mark.parametrize(
    "args", [["skill", "view", "s"], ["skill", "view", "s", "--file", "references/a.md"], ["skill", "list"], ["index"]]
)
def test_reads_refuse_symlinks_like_writes(brain: Brain, tmp_path: Path, args: list[str]) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: s\ndescription: TOP SECRET\n---\nTOP SECRET BODY\n")
    brain.create("s", "d", "x\n")
    (brain.skills_dir / "s" / "references").mkdir()
    os.symlink(secret, brain.skills_dir / "s" / "references" / "a.md")
    (brain.skills_dir / "s" / "SKILL.md").unlink()
    os.symlink(secret, brain.skills_dir / "s" / "SKILL.md")
    proc = run_ledger("--brain", str(brain.root), *args)
    assert "TOP SECRET" not in proc.stdout
    assert proc.returncode == 1 and "symbolic link" in proc.stderr


# --------------------------------------------------------------------------- 4. stale ref locks


@pytest.mark.parametrize("ref", ["refs/heads/main", "refs/notes/ledger-chain"])
def test_stale_ref_lock_left_by_a_kill_is_cleared_under_the_writer_lock(brain: Brain, ref: str) -> None:
    brain.create("s", "d", "x\n")
    lock = brain.store.git_dir / (ref + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("0" * 40 + "\n")
    proc = run_ledger("--brain", str(brain.root), "skill", "patch", "s", "--old", "x", "--new", "y")
    assert proc.returncode == 0, proc.stderr
    assert not lock.exists()


# --------------------------------------------------------------------------- 5. roll-forward and hand edits


def test_roll_forward_refuses_to_discard_a_hand_edit_and_recover_settles_it(brain: Brain) -> None:
    brain.create("s", "d", "x\n")
    brain.write_file("s", "references/a.md", b"a\n")
    root = str(brain.root)
    proc = run_ledger(
        "--brain", root, "skill", "patch", "s", "--old", "x", "--new", "y", env={"LEDGER_CRASHPOINT": "after-journal"}
    )
    assert proc.returncode == 86
    edited = brain.skills_dir / "s" / "references" / "a.md"
    edited.write_text("my hand edit\n")
    status = run_ledger("--brain", root, "status")
    assert status.returncode == 0 and "ledger recover" in status.stderr
    assert edited.read_text() == "my hand edit\n"
    write = run_ledger("--brain", root, "skill", "create", "t", "--description", "d")
    assert write.returncode == 1 and "references/a.md was edited by hand" in write.stderr
    shown = run_ledger("--brain", root, "recover")
    assert shown.returncode == 1 and "references/a.md" in shown.stderr
    assert edited.read_text() == "my hand edit\n"
    done = run_ledger("--brain", root, "recover", "--move-aside")
    assert done.returncode == 0, done.stderr
    kept = list((brain.control / "rescued").rglob("a.md"))
    assert [p.read_text() for p in kept] == ["my hand edit\n"]
    assert "y" in (brain.skills_dir / "s" / "SKILL.md").read_text()
    assert _verify(brain.root).returncode == 0


# --------------------------------------------------------------------------- 6. hostile YAML


DEEP = "---\nname: deep\ndescription: " + "[" * 40_000 + "\n---\nbody\n"


def test_deep_yaml_is_refused_by_writes_reads_and_audit(brain: Brain, tmp_path: Path) -> None:
    src = tmp_path / "deep.md"
    src.write_text(DEEP)
    proc = run_ledger("--brain", str(brain.root), "skill", "upsert", "--file", str(src), "--name", "deep")
    assert proc.returncode == 1 and "nested deeper" in proc.stderr
    (brain.skills_dir / "deep").mkdir()
    (brain.skills_dir / "deep" / "SKILL.md").write_text(DEEP)
    for args in (["skill", "list"], ["index"], ["snapshot"]):
        proc = run_ledger("--brain", str(brain.root), *args)
        assert proc.returncode == 1 and "nested deeper" in proc.stderr, (args, proc.returncode, proc.stderr)
    # A hostile clone: the same SKILL.md committed with plain git, then audited.
    (brain.skills_dir / "deep").rename(tmp_path / "deep-skill")
    clone = _hostile_clone(brain.root, tmp_path, "deep", DEEP.encode())
    proc = run_ledger("audit", str(clone))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "nested deeper" in proc.stdout


def _hostile_clone(brain: Path, tmp_path: Path, name: str, skill_md: bytes, message: str | None = None) -> Path:
    """A clone whose newest commit was made by hand with git plumbing."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--bare", str(brain), str(clone)], check=True)

    def git(*args: str, data: bytes | None = None) -> str:
        return (
            subprocess.run(["git", "--git-dir", str(clone), *args], input=data, capture_output=True, check=True)
            .stdout.decode()
            .strip()
        )

    blob = git("hash-object", "-w", "--stdin", data=skill_md)
    skill = git("mktree", data=f"100644 blob {blob}\tSKILL.md\n".encode())
    skills = git("mktree", data=f"040000 tree {skill}\t{name}\n".encode())
    top = git("mktree", data=f"040000 tree {skills}\tskills\n".encode())
    from ledger.bundle.merkle import KIND_DIR, KIND_FILE, Digest, DirNode, file_digest, format_root

    root = DirNode({name: Digest(KIND_DIR, DirNode({"SKILL.md": Digest(KIND_FILE, file_digest(skill_md))}).digest)})
    with GitStore(clone) as store:
        parent = store.snapshot(store.head())
    msg = message or (
        f"create {name} v1\n\nLedger-Root: {format_root(root.digest)}\nLedger-Parent-Root: "
        f"{format_root(parent.root)}\nLedger-Operation: create\nLedger-Skill: {name}\nLedger-Version: 1\n"
        f"Ledger-Change: create {name} 1\n"
    )
    commit = git("commit-tree", top, "-p", parent.commit, "-m", msg.rstrip("\n"))
    git("update-ref", "refs/heads/main", commit)
    return clone


def test_complex_keys_and_aliases_are_refused_without_a_traceback(brain: Brain, tmp_path: Path) -> None:
    cases = {
        "complex": "---\n? [a, b]\n: c\nname: s\ndescription: d\n---\n",
        "alias": "---\nname: s\ndescription: &d hi\nlicense: *d\n---\n",
        "laughs": "---\nname: s\ndescription: d\nmetadata: {a: &a [x,x,x,x], b: &b [*a,*a,*a,*a]}\n---\n",
    }
    for label, text in cases.items():
        src = tmp_path / f"{label}.md"
        src.write_text(text)
        proc = run_ledger("--brain", str(brain.root), "skill", "upsert", "--file", str(src))
        assert proc.returncode == 1 and proc.stderr.startswith("error:"), (label, proc.stderr)


# --------------------------------------------------------------------------- 7. forged digest cache


def test_forged_digest_cache_record_cannot_shape_a_snapshot_root(brain: Brain) -> None:
    brain.create("s", "d", "x\n")
    brain.write_file("s", "references/a.md", b"a\n")
    blob = bytes.fromhex(
        subprocess.run(
            ["git", "-C", str(brain.root), "rev-parse", "main:skills/s/references/a.md"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    brain.close()
    cache = brain.control / "cache" / "digests-v2.bin"
    from blake3 import blake3

    block = b"LDC1" + (1).to_bytes(4, "big") + blob + b"\x66" * 32
    with open(cache, "ab") as fh:
        fh.write(block + blake3(block).digest())
    with Brain.open(brain.root) as again:
        again.patch("s", "x", "y")
    proc = _verify(brain.root)
    assert proc.returncode == 0, proc.stdout


# --------------------------------------------------------------------------- 8. other defects (local half)


def test_two_brains_made_in_the_same_second_have_distinct_genesis(tmp_path: Path) -> None:
    a, b = Brain.init(tmp_path / "a"), Brain.init(tmp_path / "b")
    try:
        assert a.head().commit != b.head().commit
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.replace("Ledger-Version: 2", "Ledger-Version: 9"),
        lambda m: m.replace("Ledger-Operation: patch", "Ledger-Operation: edit"),
        lambda m: m.replace("Ledger-Skill: s", "Ledger-Skill: t"),
        lambda m: m + "Ledger-Extra: 1\n",
    ],
)
def test_verify_checks_every_trailer(brain: Brain, tmp_path: Path, edit) -> None:
    brain.create("s", "d", "x\n")
    brain.patch("s", "x", "y")
    git = ["git", "-C", str(brain.root)]
    msg = subprocess.run([*git, "log", "-1", "--format=%B"], capture_output=True, text=True, check=True).stdout
    forged = edit(msg.rstrip("\n") + "\n")
    assert forged != msg
    tree = subprocess.run([*git, "rev-parse", "main^{tree}"], capture_output=True, text=True).stdout.strip()
    parent = subprocess.run([*git, "rev-parse", "main~1"], capture_output=True, text=True).stdout.strip()
    new = subprocess.run(
        [*git, "commit-tree", tree, "-p", parent, "-m", forged.rstrip("\n")], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run([*git, "update-ref", "refs/heads/main", new], check=True)
    proc = run_ledger("--brain", str(brain.root), "verify")
    assert proc.returncode == 1 and "FAIL" in proc.stdout and "trailers" in proc.stdout, proc.stdout


# --------------------------------------------------------------------------- 9. hashing edge cases


def _make_deep(base: Path, parts: list[str], name: str, data: bytes) -> None:
    """Create base/<parts…>/name with directory descriptors: the absolute path may exceed PATH_MAX."""
    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    for part in parts:
        os.mkdir(part, dir_fd=fd)
        child = os.open(part, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    out = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, data)
    os.close(out)
    os.close(fd)


@pytest.fixture
def deep_brain(brain: Brain) -> Iterator[Brain]:
    """A brain whose tree will be too deep for shutil.rmtree (pytest's cleanup): removed with rm -rf."""
    try:
        yield brain
    finally:
        subprocess.run(["rm", "-rf", str(brain.skills_dir)], check=False)
        subprocess.run(["rm", "-rf", str(brain.root / ".ledger" / "rescued")], check=False)


def test_trees_deeper_than_the_recursion_limit_hash_snapshot_and_verify(deep_brain: Brain) -> None:
    brain = deep_brain
    rel = "/".join(["d"] * 1500)
    _make_deep(brain.skills_dir / "s" / "references", ["d"] * 1500, "f.md", b"deep\n")
    (brain.skills_dir / "s" / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\nx\n")
    native = run_ledger("hash", str(brain.skills_dir))
    pure = run_ledger("hash", str(brain.skills_dir), env={"LEDGER_PURE_PYTHON": "1"})
    assert native.returncode == pure.returncode == 0 and native.stdout == pure.stdout, pure.stderr[-500:]
    snap = run_ledger("--brain", str(brain.root), "snapshot")
    assert snap.returncode == 0, snap.stderr[-500:]
    proof = run_ledger("--brain", str(brain.root), "proof", "make", f"s/references/{rel}/f.md")
    assert proof.returncode == 0, proof.stderr[-500:]
    assert _verify(brain.root).returncode == 0


@pytest.mark.parametrize("pure", ["", "1"])
@pytest.mark.parametrize("spelling", ["lnk", "lnk/", "lnk//"])
def test_symlink_operand_is_refused_on_both_paths(tmp_path: Path, spelling: str, pure: str) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("x")
    os.symlink(tmp_path / "real", tmp_path / "lnk")
    proc = run_ledger("hash", str(tmp_path / spelling), env={"LEDGER_PURE_PYTHON": pure} if pure else {})
    assert proc.returncode == 1 and "symbolic link" in proc.stderr


def test_unreadable_file_is_refused_with_a_message_not_a_traceback() -> None:
    """As an unprivileged user (root reads everything), in a forked child: refused, never skipped.

    The child calls the hasher in-process, so it needs no access to this checkout.
    """
    import tempfile

    from ledger.bundle.merkle import hash_path

    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        tree = Path(d) / "t"
        tree.mkdir()
        (tree / "ok").write_text("x")
        (tree / "secret").write_text("x")
        (tree / "secret").chmod(0)
        for pure in ("", "1"):
            rfd, wfd = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: drop to nobody, hash, report the error text
                os.close(rfd)
                try:
                    if os.geteuid() == 0:
                        os.setgroups([])
                        os.setgid(65534)
                        os.setuid(65534)
                    os.environ["LEDGER_PURE_PYTHON"] = pure
                    try:
                        hash_path(tree)
                        out = b"no error"
                    except LedgerError as exc:
                        out = exc.message.encode()
                    except BaseException as exc:
                        out = f"{type(exc).__name__}: {exc}".encode()
                    os.write(wfd, out)
                finally:
                    os._exit(0)
            os.close(wfd)
            with os.fdopen(rfd, "rb") as fh:
                message = fh.read().decode()
            os.waitpid(pid, 0)
            assert "cannot read 'secret'" in message, (pure, message)


def test_prove_refuses_a_directory(brain: Brain) -> None:
    brain.create("s", "d", "x\n")
    brain.write_file("s", "references/a.md", b"a\n")
    for rel in ("s", "s/references"):
        proc = run_ledger("--brain", str(brain.root), "proof", "make", rel)
        assert proc.returncode == 1 and "directory" in proc.stderr and proc.stdout == ""


# --------------------------------------------------------------------------- 10. input handling


def test_non_utf8_input_and_argv_and_devices_get_an_error_not_a_traceback(brain: Brain, tmp_path: Path) -> None:
    brain.create("s", "d", "x\n")
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"---\nname: s\ndescription: \xff\xfe\n---\n")
    root = str(brain.root)
    cases: list[list[str | bytes]] = [
        ["skill", "upsert", "--file", str(bad)],
        ["skill", "edit", "s", "--file", str(bad)],
        ["skill", "create", b"caf\xe9", "--description", "d"],
        ["skill", "create", "t", "--description", b"\xff\xfe"],
        ["skill", "patch", "s", "--old", b"\xff", "--new", "y"],
        ["skill", "write-file", "s", "references/z.md", "--from", "/dev/zero"],
        ["skill", "edit", "s", "--file", "/dev/zero"],
        ["skill", "upsert", "--file", "/dev/zero"],
    ]
    before = fingerprint(brain.root)
    ledger = str(Path(run_ledger.__globals__["LEDGER"]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    for args in cases:
        proc = subprocess.run([ledger, "--brain", root, *args], capture_output=True, timeout=60, env=env)
        err = proc.stderr.decode(errors="replace")
        assert proc.returncode in (1, 2) and "Traceback" not in err and err.startswith("error:"), (args, err)
    assert fingerprint(brain.root) == before


@pytest.mark.parametrize("name", ["con", "nul", "aux", "com1", "lpt9", "prn"])
def test_windows_device_names_are_refused_as_skill_names(brain: Brain, name: str) -> None:
    with pytest.raises(SkillError, match="device name"):
        brain.create(name, "d", "x\n")


@pytest.mark.parametrize(
    "rel",
    [
        "references/con",
        "references/NUL.md",
        "references/a.",
        "references/a ",
        "references/\x1b[2Jx.md",
        "references/tab\there.md",
        "references/.git/config",
        "references/.GIT/x",
        "references/git~1/x",
        "references/.g\u200cit/x",
        "references/a:b.md",
        "references/q?.md",
    ],
)
def test_support_paths_that_break_portable_checkouts_are_refused(brain: Brain, rel: str) -> None:
    brain.create("s", "d", "x\n")
    before = fingerprint(brain.root)
    with pytest.raises(SkillError):
        brain.write_file("s", rel, b"x")
    assert fingerprint(brain.root) == before


def test_hostile_proofs_are_refused_cleanly(brain: Brain, tmp_path: Path) -> None:
    brain.create("s", "d", "x\n")
    good = json.loads(run_ledger("--brain", str(brain.root), "proof", "make", "s/SKILL.md").stdout)
    root = good["root"]
    cases = {
        "deep": "[" * 100_000,
        "not-json": "\xff\xfe",
        "dir-kind": json.dumps({**good, "kind": "dir"}),
        "huge-index": json.dumps({**good, "steps": [{"index": 10**100, "count": 1, "siblings": []}]}),
        "bad-hex": json.dumps({**good, "content": "zz"}),
        "list": "[]",
    }
    for label, text in cases.items():
        f = tmp_path / f"{label}.json"
        f.write_text(text, errors="surrogateescape")
        proc = run_ledger("proof", "check", str(f), "--root", root)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, (label, proc.stderr[-300:])


def test_tree_error_is_a_ledger_error() -> None:
    assert issubclass(TreeError, LedgerError)
