"""The tamper corpus: one altered brain per class of docs/lineage.md §11, made with plain git.

Each case copies an honest brain's store (a bare mirror), rewrites history as an attacker
with write access to the store would (every later snapshot re-parented, dates kept),
and says which audit check must fail and on which snapshot. ``tests/protocol/test_tamper.py``
runs every case through ``ledger audit``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness.cli import run_ledger

Tree = str  # a git tree id
Message = str


def git(repo: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", "--git-dir", str(repo), *args],
        input=input,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout


def lineage(repo: Path) -> list[str]:
    return git(repo, "rev-list", "--first-parent", "--reverse", "main").split()


def edit_tree(repo: Path, tree: Tree, path: str, data: bytes | None, mode: str = "100644") -> Tree:
    """``tree`` with the blob at ``path`` replaced by ``data`` (or removed when None)."""
    with tempfile.TemporaryDirectory() as d:
        env = {"GIT_INDEX_FILE": str(Path(d) / "index")}
        git(repo, "read-tree", tree, env=env)
        if data is None:
            git(repo, "update-index", "--index-info", input=f"0 {'0' * 40}\t{path}\n", env=env)  # mode 0: remove
        else:
            blob = (
                subprocess.run(
                    ["git", "--git-dir", str(repo), "hash-object", "-w", "--stdin"],
                    input=data,
                    capture_output=True,
                    check=True,
                )
                .stdout.decode()
                .strip()
            )
            git(repo, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        return git(repo, "write-tree", env=env).strip()


def blob_at(repo: Path, commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(repo), "cat-file", "blob", f"{commit}:{path}"], capture_output=True, check=True
    ).stdout


def resign(msg: Message, key: bytes, parent: str | None, tree: Tree) -> Message:
    """``msg`` signed anew by ``key`` over its fields (docs/lineage.md §8.1), with eth-account's own
    EIP-712 encoder: what an attacker holding ``key`` would write."""
    from eth_account import Account
    from eth_account.messages import encode_typed_data

    from ledger.protocol.signing import typed_data

    text = re.sub(r"^Ledger-Signature: .*\n", "", msg, flags=re.M)
    root = bytes.fromhex(re.search(r"^Ledger-Root: blake3-tree-v1:([0-9a-f]{64})$", text, re.M).group(1))
    pr = re.search(r"^Ledger-Parent-Root: (?:blake3-tree-v1:)?(\S+)$", text, re.M).group(1)
    actor = re.search(r"^Ledger-Actor: (.*)$", text, re.M).group(1)
    doc = typed_data(
        root,
        None if pr == "none" else bytes.fromhex(pr),
        bytes.fromhex(parent) if parent else None,
        bytes.fromhex(tree),
        actor,
        text,
    )
    sig = Account.sign_message(encode_typed_data(full_message=doc), key).signature
    return text + f"Ledger-Signature: 0x{bytes(sig).hex()}\n"


def rewrite(
    repo: Path,
    index: int,
    *,
    tree: Callable[[Tree], Tree] | None = None,
    message: Callable[[Message], Message] | None = None,
    extra_parent: str | None = None,
    sign_with: bytes | None = None,
) -> str:
    """Rewrite snapshot ``index`` (and re-parent every later one); return its new commit id.
    ``sign_with`` re-signs the rewritten snapshot with that private key."""
    commits = lineage(repo)
    parent = commits[index - 1] if index else None
    rewritten = ""
    for i in range(index, len(commits)):
        old = commits[i]
        fields = git(repo, "show", "-s", "--format=%T%n%an%n%ae%n%ad%n%cn%n%ce%n%cd", "--date=raw", old).split("\n")
        t, an, ae, ad, cn, ce, cd = fields[:7]
        msg = git(repo, "cat-file", "commit", old).split("\n\n", 1)[1]
        if i == index:
            t = tree(t) if tree else t
            msg = message(msg) if message else msg
            if sign_with is not None:
                msg = resign(msg, sign_with, parent, t)
        parents = ([parent] if parent else []) + ([extra_parent] if extra_parent and i == index else [])
        env = {
            "GIT_AUTHOR_NAME": an,
            "GIT_AUTHOR_EMAIL": ae,
            "GIT_AUTHOR_DATE": ad,
            "GIT_COMMITTER_NAME": cn,
            "GIT_COMMITTER_EMAIL": ce,
            "GIT_COMMITTER_DATE": cd,
        }
        args = ["commit-tree", t] + [x for p in parents for x in ("-p", p)]
        parent = git(repo, *args, input=msg, env=env).strip()
        if i == index:
            rewritten = parent
    git(repo, "update-ref", "refs/heads/main", parent)
    return rewritten


def sub(pattern: str, repl: str) -> Callable[[Message], Message]:
    def f(msg: Message) -> Message:
        out, n = re.subn(pattern, repl, msg, count=1, flags=re.M)
        assert n == 1, (pattern, msg)
        return out

    return f


@dataclass
class Case:
    name: str
    section: str  # of docs/lineage.md in its one-document numbering (verdicts.json keeps it; the core maps it)
    check: str  # the audit check that must fail
    apply: Callable[[Path, dict[str, int]], str]  # (bare copy, snapshot index by label) → the commit to be named
    audit_args: tuple[str, ...] = ()
    also_fails: tuple[str, ...] = ()  # checks that fail beside ``check`` (where a test asserts the whole set)


KEYS: dict[str, bytes] = {}  # the honest brain's private keys by name (build_honest): what an attacker may hold


def _counter_bump(repo: Path, commit: str, skill: str, to: int) -> Callable[[Tree], Tree]:
    text = blob_at(repo, commit, f"skills/{skill}/SKILL.md").decode()
    new = re.sub(r"(\n\s*version: )'?\d+'?", rf"\g<1>'{to}'", text, count=1)
    return lambda t: edit_tree(repo, t, f"skills/{skill}/SKILL.md", new.encode())


def cases() -> list[Case]:
    """One case per class (docs/lineage.md §11). Labels name the honest brain's snapshots (see build_honest)."""

    def at(label: str, **kw: object) -> Callable[[Path, dict[str, int]], str]:
        return lambda repo, idx: rewrite(repo, idx[label], **kw)  # type: ignore[arg-type]

    def versions(label: str, skill: str, old: int, new: int) -> Callable[[Path, dict[str, int]], str]:
        def f(repo: Path, idx: dict[str, int]) -> str:
            commit = lineage(repo)[idx[label]]

            def msg(m: Message) -> Message:
                m = m.replace(f"{skill} v{old}\n", f"{skill} v{new}\n", 1)
                return m.replace(f"Ledger-Version: {old}\n", f"Ledger-Version: {new}\n").replace(
                    f" {skill} {old}\n", f" {skill} {new}\n"
                )

            return rewrite(repo, idx[label], message=msg, tree=_counter_bump(repo, commit, skill, new))

        return f

    def tree_edit(label: str, path: str, data: bytes | None, mode: str = "100644") -> Callable[..., str]:
        return lambda repo, idx: rewrite(repo, idx[label], tree=lambda t: edit_tree(repo, t, path, data, mode))

    def byte(repo: Path, idx: dict[str, int]) -> str:
        commit = lineage(repo)[idx["patch-a"]]
        data = blob_at(repo, commit, "skills/a/SKILL.md") + b"x"
        return rewrite(repo, idx["patch-a"], tree=lambda t: edit_tree(repo, t, "skills/a/SKILL.md", data))

    def merge(label: str) -> Callable[[Path, dict[str, int]], str]:
        def f(repo: Path, idx: dict[str, int]) -> str:
            stray = git(repo, "commit-tree", git(repo, "rev-parse", "main^{tree}").strip(), input="never hashed\n")
            return rewrite(repo, idx[label], extra_parent=stray.strip())

        return f

    def replace_ref(repo: Path, idx: dict[str, int]) -> str:
        commits = lineage(repo)
        git(repo, "update-ref", f"refs/replace/{commits[idx['patch-a']]}", commits[idx["create-a"]])
        return ""  # fsck names no snapshot

    def graft(repo: Path, idx: dict[str, int]) -> str:
        commits = lineage(repo)
        (repo / "info").mkdir(exist_ok=True)
        (repo / "info" / "grafts").write_text(f"{commits[idx['tip']]} {commits[idx['create-a']]}\n")
        return ""

    def retired(repo: Path, idx: dict[str, int]) -> str:
        return rewrite(repo, idx["delete-b"], tree=lambda t: edit_tree(repo, t, "retired", b"b 7\n"))

    return [
        Case("tree-byte", "1.4, bundle-hash.md", "snapshots", byte),
        Case("tree-file-added", "1.4", "snapshots", tree_edit("patch-a", "skills/a/references/x.md", b"x\n")),
        Case(
            "tree-exec-bit",
            "1.4, bundle-hash.md",
            "snapshots",
            lambda repo, idx: rewrite(
                repo,
                idx["patch-a"],
                tree=lambda t: edit_tree(
                    repo,
                    t,
                    "skills/a/SKILL.md",
                    blob_at(repo, lineage(repo)[idx["patch-a"]], "skills/a/SKILL.md"),
                    "100755",
                ),
            ),
        ),
        Case("top-level-entry", "1.2", "snapshots", tree_edit("patch-a", "evil", b"x\n")),
        Case(
            "layout-record-on-a-flat-tree",
            "1.2, 1.3",
            "snapshots",
            tree_edit("patch-a", "layout", b"skills/<first byte of BLAKE3(name), in hex>/<name>/\n"),
        ),
        Case("layout-record-altered", "1.2", "snapshots", tree_edit("patch-a", "layout", b"skills/*/\n")),
        Case(
            "root-trailer",
            "2.1",
            "snapshots",
            at(
                "patch-a", message=sub(r"^Ledger-Root: blake3-tree-v1:\w+$", "Ledger-Root: blake3-tree-v1:" + "ab" * 32)
            ),
        ),
        Case(
            "parent-root-trailer",
            "1.1, 2.1",
            "lineage",
            at(
                "patch-a",
                message=sub(
                    r"^Ledger-Parent-Root: blake3-tree-v1:\w+$", "Ledger-Parent-Root: blake3-tree-v1:" + "cd" * 32
                ),
            ),
        ),
        Case(
            "operation-trailer",
            "2.2, 3",
            "trailers",
            at("patch-a", message=sub(r"^Ledger-Operation: patch$", "Ledger-Operation: edit")),
        ),
        Case("skill-trailer", "2.2", "trailers", at("patch-a", message=sub(r"^Ledger-Skill: a$", "Ledger-Skill: b"))),
        Case(
            "version-trailer",
            "2.2",
            "trailers",
            at("patch-a", message=sub(r"^Ledger-Version: 2$", "Ledger-Version: 3")),
        ),
        Case(
            "change-trailer",
            "2.2, 3",
            "trailers",
            at("patch-a", message=sub(r"^Ledger-Change: update a 2$", "Ledger-Change: create a 2")),
        ),
        Case(
            "actor-trailer-invalid",
            "2.1",
            "trailers",
            at("patch-a", message=sub(r"^Ledger-Actor: user$", "Ledger-Actor: root")),
        ),
        Case("actor-trailer-dropped", "2.2", "trailers", at("patch-a", message=sub(r"^Ledger-Actor: user\n", ""))),
        Case(
            "evidence-trailer-out-of-order",
            "2.1",
            "trailers",
            at("patch-a", message=sub(r"^Ledger-Actor: user$", "Ledger-Task: T-1\nLedger-Actor: user")),
        ),
        Case(
            "nonce-outside-init",
            "2.1",
            "trailers",
            at("patch-a", message=sub(r"^Ledger-Actor: user$", "Ledger-Nonce: " + "0" * 32 + "\nLedger-Actor: user")),
        ),
        Case("subject", "2.1", "trailers", at("patch-a", message=sub(r"^patch a v2$", "patch a v2 (fixed)"))),
        Case(
            "runtime-trailer-out-of-order",
            "2.1",
            "trailers",
            at("sync-a", message=sub(r"^(Ledger-Runtime: .*)\n(Ledger-Target: .*)$", r"\2\n\1")),
        ),
        Case(
            "sync-operation-dropped-change",
            "3",
            "trailers",
            at("sync-a", message=sub(r"^Ledger-Operation: sync$", "Ledger-Operation: keys")),
        ),
        Case(
            "extra-trailer",
            "2.1",
            "trailers",
            at("patch-a", message=sub(r"^Ledger-Actor: user$", "Ledger-Actor: user\nLedger-Evil: 1")),
        ),
        Case("missing-trailer", "2.1", "trailers", at("patch-a", message=sub(r"^Ledger-Skill: a\n", ""))),
        Case(
            "second-trailer-paragraph",
            "2.1",
            "snapshots",
            at("patch-a", message=sub(r"^Ledger-Actor: user$", "Ledger-Actor: user\n\nLedger-Actor: agent")),
        ),
        Case(
            "init-not-first",
            "3",
            "trailers",
            at(
                "patch-a",
                message=lambda m: m.replace("patch a v2", "init: 0 skill(s)", 1).replace(
                    "Ledger-Operation: patch", "Ledger-Operation: init"
                ),
            ),
        ),
        Case("version-skipped", "5.1", "versions", versions("patch-a", "a", 2, 3)),
        Case("version-repeated", "5.1, 5.2", "versions", versions("revert-a", "a", 3, 2)),
        Case("version-reset-after-recreate", "5.1, 5.4", "versions", versions("recreate-b", "b", 2, 1)),
        Case(
            "counter-in-skill-md",
            "4.2",
            "skills",
            lambda repo, idx: rewrite(
                repo, idx["patch-a"], tree=_counter_bump(repo, lineage(repo)[idx["patch-a"]], "a", 9)
            ),
        ),
        Case("retired-record", "5.4", "versions", retired),
        Case("versions-record-added", "4.2", "versions", tree_edit("patch-a", "versions", b"a 2\nb 1\n")),
        Case("merge-at-the-tip", "9", "lineage", merge("tip")),
        Case("merge-inside-the-lineage", "9", "lineage", merge("patch-a")),
        Case("replace-ref", "1", "fsck", replace_ref),
        Case("graft", "1", "fsck", graft),
        *signature_cases(at),
    ]


REASONS = {  # a phrase each signature class's failure must hold: the cause, not just any failure
    "gpgsig-by-another-key": "names another key than the certified one",
    "gpgsig-stripped": "has no gpgsig",
    "sibling-certified-twice": "certifies other sibling keys here than at snapshot",
    "siblings-on-an-unsigned-snapshot": "no Ledger-Signature to certify them",
    "versions-record-added": "adds the 'versions' record",
    "versions-record-altered": "'versions' record does not give",
    "versions-record-dropped": "drops the 'versions' record",
    "version-skipped-in-store": "goes to v3, expected v2",
    "actor-rewritten-in-signed-snapshot": "does not trust",
    "evidence-added-to-signed-snapshot": "does not trust",
    "note-added-to-signed-snapshot": "does not trust",
    "operation-relabelled-with-subject": "does not trust",
    "categories-rewritten": "does not trust",
    "signature-byte": "does not trust|recovers no key",  # another (r, s) recovers another key, or none
    "signature-malleated-high-s": "lower half",
    "signature-stripped": "policy requires every snapshot to be signed",
    "signature-stripped-at-the-tip": "unsigned",
    "signed-by-an-untrusted-key": "does not trust",
    "signed-by-a-revoked-key": "revoked before",
    "agent-key-signs-as-user": "Ledger-Actor is user",
    "key-change-unsigned": "must be signed",
    "key-change-signed-by-an-agent-key": "must be signed by a user key",
    "key-added-outside-a-keys-snapshot": "cannot change keys",
    "keys-record-altered": "'keys' record",
    "unsigned-under-the-signed-policy": "policy requires every snapshot to be signed",
    "policy-dropped-from-the-keys-record": "'keys' record is not the trust set",
    "policy-opened-outside-a-keys-snapshot": "cannot change keys",
    "policy-opened-by-an-agent-key": "must be signed by a user key",
}


def signature_cases(at: Callable[..., Callable[[Path, dict[str, int]], str]]) -> list[Case]:
    """docs/lineage.md §8: rewrites a signature must catch, and key misuse by someone holding a key."""

    def next_of(label: str, **kw: object) -> Callable[[Path, dict[str, int]], str]:
        def f(repo: Path, idx: dict[str, int]) -> str:
            rewrite(repo, idx[label], **kw)  # type: ignore[arg-type]
            return lineage(repo)[idx[label] + 1]  # the altered one is unsigned; the next no longer binds it

        return f

    def categories(repo: Path, idx: dict[str, int]) -> str:
        return rewrite(
            repo,
            idx["import-c"],
            tree=lambda t: edit_tree(repo, t, "categories/research/DESCRIPTION.md", b"rewritten\n"),
        )

    def high_s(msg: Message) -> Message:
        n = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
        sig = bytes.fromhex(re.search(r"^Ledger-Signature: 0x([0-9a-f]{130})$", msg, re.M).group(1))
        s_ = (n - int.from_bytes(sig[32:64], "big")).to_bytes(32, "big")
        malleated = sig[:32] + s_ + bytes([55 - sig[64]])  # the same key's other valid signature
        return re.sub(r"^Ledger-Signature: .*$", "Ledger-Signature: 0x" + malleated.hex(), msg, count=1, flags=re.M)

    def keys_record(repo: Path, idx: dict[str, int]) -> str:
        commit = lineage(repo)[idx["patch-a"]]
        record = blob_at(repo, commit, "keys") + b"0x" + b"f" * 40 + b" agent\n"
        return rewrite(
            repo, idx["patch-a"], tree=lambda t: edit_tree(repo, t, "keys", record), sign_with=KEYS["user-old"]
        )

    user_old, agent = "user-old", "agent"
    return [
        Case(
            "actor-rewritten-in-signed-snapshot",
            "8.1, 8.3",
            "signatures",
            at("patch-a", message=sub(r"^Ledger-Actor: user$", "Ledger-Actor: agent")),
        ),
        Case(
            "evidence-added-to-signed-snapshot",
            "8.1",
            "signatures",
            at("patch-a", message=sub(r"^Ledger-Actor: user$", "Ledger-Actor: user\nLedger-Task: T-9")),
        ),
        Case(
            "note-added-to-signed-snapshot",
            "8.1",
            "signatures",
            at("patch-a", message=sub(r"^patch a v2\n\n", "patch a v2\n\nwritten by someone else\n\n")),
        ),
        Case(
            "operation-relabelled-with-subject",
            "8.1",
            "signatures",
            at(
                "patch-a",
                message=lambda m: m.replace("patch a v2", "edit a v2", 1).replace(
                    "Ledger-Operation: patch", "Ledger-Operation: edit"
                ),
            ),
        ),
        Case("categories-rewritten", "8.1, 1.5", "signatures", categories),
        Case(
            "signature-byte",
            "8.1",
            "signatures",
            at(
                "patch-a",
                message=lambda m: re.sub(
                    r"^(Ledger-Signature: 0x)(.)",
                    lambda mo: mo.group(1) + ("1" if mo.group(2) != "1" else "2"),
                    m,
                    count=1,
                    flags=re.M,
                ),
            ),
        ),
        Case("signature-malleated-high-s", "8.1", "signatures", at("patch-a", message=high_s)),
        Case(
            "signature-stripped",
            "8.1, 8.4",
            "signatures",  # the policy 'signed' names the stripped one itself
            at("patch-a", message=sub(r"^Ledger-Signature: .*\n", "")),
        ),
        Case(
            "signature-stripped-at-the-tip",
            "8.4",
            "signatures",
            at("tip", message=sub(r"^Ledger-Signature: .*\n", "")),
            ("--require-signatures",),
        ),
        Case(
            "signed-by-an-untrusted-key",
            "8.3",
            "signatures",
            lambda repo, idx: rewrite(repo, idx["patch-a"], sign_with=b"\x01" * 32),
        ),
        Case(
            "signed-by-a-revoked-key",
            "8.3",
            "signatures",
            lambda repo, idx: rewrite(repo, idx["agent-patch-c"], sign_with=KEYS["agent-old"]),
        ),
        Case(
            "agent-key-signs-as-user",
            "8.3",
            "signatures",
            lambda repo, idx: rewrite(
                repo,
                idx["agent-patch-c"],
                message=sub(r"^Ledger-Actor: agent$", "Ledger-Actor: user"),
                sign_with=KEYS[agent],
            ),
        ),
        Case(
            "key-change-unsigned", "8.3", "signatures", at("rotate-agent", message=sub(r"^Ledger-Signature: .*\n", ""))
        ),
        Case(
            "key-change-signed-by-an-agent-key",
            "8.3",
            "signatures",
            lambda repo, idx: rewrite(
                repo,
                idx["rotate-agent"],
                message=sub(r"^Ledger-Actor: user$", "Ledger-Actor: agent"),
                sign_with=KEYS["agent-old"],
            ),
        ),
        Case(
            "key-added-outside-a-keys-snapshot",
            "8.3",
            "signatures",
            lambda repo, idx: rewrite(
                repo,
                idx["patch-a"],
                message=sub(r"^Ledger-Actor: user$", "Ledger-Key: add 0x" + "e" * 40 + " user\nLedger-Actor: user"),
                sign_with=KEYS[user_old],
            ),
        ),
        Case("keys-record-altered", "8.3", "signatures", keys_record),
        # The policy 'signed' (lineage v1.3): a peer can neither write unsigned snapshots nor drop it.
        Case(
            "unsigned-under-the-signed-policy",
            "8.4",
            "signatures",
            at("tip", message=sub(r"^Ledger-Signature: .*\n", "")),
        ),
        Case(
            "policy-dropped-from-the-keys-record",
            "8.3, 8.4",
            "signatures",
            lambda repo, idx: rewrite(
                repo,
                idx["patch-a"],
                tree=lambda t: edit_tree(
                    repo,
                    t,
                    "keys",
                    blob_at(repo, lineage(repo)[idx["patch-a"]], "keys").replace(b"policy signed\n", b""),
                ),
                sign_with=KEYS[user_old],
            ),
        ),
        Case(
            "policy-opened-outside-a-keys-snapshot",
            "8.3",
            "signatures",
            lambda repo, idx: rewrite(
                repo,
                idx["patch-a"],
                message=sub(r"^Ledger-Actor: user$", "Ledger-Key: policy open\nLedger-Actor: user"),
                sign_with=KEYS[user_old],
            ),
        ),
        Case(
            "policy-opened-by-an-agent-key",
            "8.3",
            "signatures",
            lambda repo, idx: rewrite(
                repo,
                idx["rotate-agent"],
                message=sub(r"^Ledger-Actor: user$", "Ledger-Key: policy open\nLedger-Actor: agent"),
                sign_with=KEYS["agent-old"],
            ),
        ),
    ]


def build_honest(root: Path, *, signed: bool = True) -> tuple[Path, dict[str, int]]:
    """A small honest brain whose lineage has every operation the corpus tampers with; signed, it
    also rotates its agent and its user key (``signed=False``: an older, unsigned brain, no rotations)."""
    brain = root / ("honest" if signed else "honest-unsigned")
    env = {"LEDGER_KEYS": str(root / "keys")}  # its own keys: the rotations below must not touch the session's
    run_ledger("init", str(brain), *(() if signed else ("--unsigned",)), check=True, env=env)

    def do(*args: str) -> None:
        run_ledger("--brain", str(brain), *args, check=True, env=env)

    do("skill", "create", "a", "--description", "A", "--body", "step one\n")
    do("skill", "create", "b", "--description", "B", "--body", "b\n")
    do("skill", "patch", "a", "--old", "step one", "--new", "step two")
    do("skill", "delete", "b")
    do("skill", "create", "b", "--description", "B again", "--body", "b\n")
    do("revert", "a", "--to", "1")
    hermes = root / "hermes" / "research" / "c"
    hermes.mkdir(parents=True)
    (hermes / "SKILL.md").write_text("---\nname: c\ndescription: C\n---\nc\n")
    (root / "hermes" / "research" / "DESCRIPTION.md").write_text("research\n")
    do("import", str(root / "hermes"), "--layout", "hermes")
    labels = ["init", "create-a", "create-b", "patch-a", "delete-b", "recreate-b", "revert-a", "import-c"]
    if not signed:
        return brain, {**{label: i for i, label in enumerate(labels)}, "tip": len(labels) - 1}
    keys = root / "keys"
    secret = {name: json.loads((keys / f"{name}.key").read_text())["private_key"] for name in ("user", "agent")}
    do("keys", "rotate", "agent")
    do("skill", "patch", "c", "--old", "\nc\n", "--new", "\ncc\n", "--actor", "agent")
    do("keys", "rotate", "user")
    do("skill", "patch", "b", "--old", "\nb\n", "--new", "\nbb\n")
    runtime = root / "runtime"  # a runtime's folder: its edit comes back as a sync snapshot (lineage.md §2.1, §3)
    do("link", str(runtime), "--name", "rt")
    do("sync")
    md = runtime / "a" / "SKILL.md"
    md.write_text(md.read_text() + "edited in the runtime\n")
    do("sync")
    KEYS.update(
        {
            "user-old": bytes.fromhex(secret["user"][2:]),
            "agent-old": bytes.fromhex(secret["agent"][2:]),
            "agent": bytes.fromhex(json.loads((keys / "agent.key").read_text())["private_key"][2:]),
        }
    )
    labels += ["rotate-agent", "agent-patch-c", "rotate-user", "patch-b", "sync-a"]
    idx = {label: i for i, label in enumerate(labels)}
    idx["tip"] = len(labels) - 1
    return brain, idx


def store_cases() -> list[Case]:
    """docs/lineage.md §4.2: a brain that keeps its versions in the store (``build_honest_store``)."""

    def tree_edit(label: str, path: str, data: bytes | None) -> Callable[[Path, dict[str, int]], str]:
        return lambda repo, idx: rewrite(repo, idx[label], tree=lambda t: edit_tree(repo, t, path, data))

    def skipped(repo: Path, idx: dict[str, int]) -> str:
        def msg(m: Message) -> Message:
            return (
                m.replace("patch a v2\n", "patch a v3\n")
                .replace("Ledger-Version: 2\n", "Ledger-Version: 3\n")
                .replace("Ledger-Change: update a 2\n", "Ledger-Change: update a 3\n")
            )

        return rewrite(repo, idx["patch-a"], message=msg, tree=lambda t: edit_tree(repo, t, "versions", b"a 3\nb 1\n"))

    return [
        Case("versions-record-altered", "4.2", "versions", tree_edit("patch-a", "versions", b"a 3\nb 1\n")),
        Case("versions-record-dropped", "4.2", "versions", tree_edit("write-a", "versions", None)),
        Case("version-skipped-in-store", "4.2, 5.1", "versions", skipped),
    ]


def build_honest_store(root: Path) -> tuple[Path, dict[str, int]]:
    """An honest brain made with ``init --versions store``: no SKILL.md carries the ledger's counter,
    and an imported file's own ``metadata.version`` is the author's, not a version."""
    brain = root / "honest-store"
    env = {"LEDGER_KEYS": str(root / "keys")}
    run_ledger("init", str(brain), "--versions", "store", check=True, env=env)

    def do(*args: str) -> None:
        run_ledger("--brain", str(brain), *args, check=True, env=env)

    do("skill", "create", "a", "--description", "A", "--body", "step one\n")
    do("skill", "create", "b", "--description", "B", "--body", "b\n")
    do("skill", "patch", "a", "--old", "step one", "--new", "step two")
    note = root / "note.md"
    note.write_text("a note\n")
    do("skill", "write-file", "a", "references/note.md", "--from", str(note))
    do("skill", "delete", "b")
    src = root / "src" / "c"
    src.mkdir(parents=True)
    (src / "SKILL.md").write_bytes(
        b"---\r\nname: c\r\ndescription: C  # kept\r\nmetadata:\r\n  version: '7'\r\n---\r\nc\r\n"
    )
    do("import", str(root / "src"))
    labels = ["init", "create-a", "create-b", "patch-a", "write-a", "delete-b", "import-c"]
    return brain, {**{label: i for i, label in enumerate(labels)}, "tip": len(labels) - 1}


def merge_cases() -> list[Case]:
    """docs/lineage.md §9: the tip of ``build_honest_merged`` is a merge; each case forges it."""

    def parents(repo: Path, commit: str) -> list[str]:
        return git(repo, "rev-list", "--parents", "-n1", commit).split()[1:]

    def forged_root(repo: Path, idx: dict[str, int]) -> str:
        tip = lineage(repo)[idx["merge"]]
        first_root = re.search(r"^Ledger-Parent-Root: (.*)$", git(repo, "cat-file", "commit", tip), re.M).group(1)
        forged = sub(r"^Ledger-Merge-Root: .*$", f"Ledger-Merge-Root: {first_root}")
        return rewrite(repo, idx["merge"], message=forged, extra_parent=parents(repo, tip)[1])

    def unhashed(repo: Path, idx: dict[str, int]) -> str:
        tip = lineage(repo)[idx["merge"]]
        p1, p2 = parents(repo, tip)
        tree = git(repo, "rev-parse", f"{p2}^{{tree}}").strip()
        env = {
            "GIT_AUTHOR_NAME": "x",
            "GIT_AUTHOR_EMAIL": "x@x",
            "GIT_COMMITTER_NAME": "x",
            "GIT_COMMITTER_EMAIL": "x@x",
        }
        plain = git(repo, "commit-tree", tree, "-p", p1, input="not a snapshot\n", env=env).strip()
        return rewrite(repo, idx["merge"], message=lambda m: m.replace(p2, plain), extra_parent=plain)

    def unsigned(repo: Path, idx: dict[str, int]) -> str:
        tip = lineage(repo)[idx["merge"]]

        def stripped(m: Message) -> Message:  # as an unsigned writer writes it: no signature, no siblings
            return re.sub(r"^Ledger-Sibling: .*\n", "", sub(r"^Ledger-Signature: .*\n", "")(m), flags=re.M)

        return rewrite(repo, idx["merge"], message=stripped, extra_parent=parents(repo, tip)[1])

    def relabelled(repo: Path, idx: dict[str, int]) -> str:
        tip = lineage(repo)[idx["merge"]]

        def msg(m: Message) -> Message:
            relabel = sub(r"^Ledger-Operation: merge$", "Ledger-Operation: snapshot")
            return relabel(m.replace("merge: ", "snapshot: ", 1))

        return rewrite(repo, idx["merge"], message=msg, extra_parent=parents(repo, tip)[1])

    return [
        Case("merge-root-forged", "9.1", "lineage", forged_root),
        Case("merge-parent-unhashed", "1.1, 9.1", "lineage", unhashed),
        Case("merge-unsigned", "8.4", "signatures", unsigned, ("--require-signatures",)),
        Case("merge-relabelled", "9.1", "lineage", relabelled),
    ]


def sync_cases() -> list[Case]:
    """docs/lineage.md §3 (v1.2): a sync of no change must change categories/ (``build_honest_hermes_sync``)."""

    def nothing(repo: Path, idx: dict[str, int]) -> str:
        parent = lineage(repo)[idx["move"] - 1]
        return rewrite(repo, idx["move"], tree=lambda _: git(repo, "rev-parse", f"{parent}^{{tree}}").strip())

    return [Case("sync-changes-nothing", "3", "trailers", nothing)]


def build_honest_hermes_sync(root: Path) -> tuple[Path, dict[str, int]]:
    """A signed brain linked to a Hermes home, where the home moved a skill to another category and
    edited a category's DESCRIPTION.md: two ``sync`` snapshots that change only ``categories/``
    (lineage v1.2, §3), then a runtime's skill edit recorded as an ordinary ``sync``."""
    env = {"LEDGER_KEYS": str(root / "keys"), "HOME": str(root)}
    brain, src, home = root / "hermes-sync", root / "src", root / "home"
    (src / "tools/a").mkdir(parents=True)
    (src / "tools/DESCRIPTION.md").write_text("---\ndescription: Tools.\n---\n")
    (src / "tools/a/SKILL.md").write_text("---\nname: a\ndescription: A\n---\nstep one\n")
    run_ledger("init", str(brain), check=True, env=env)

    def do(*args: str, ok: int = 0) -> None:
        proc = run_ledger("--brain", str(brain), *args, env=env)
        assert proc.returncode == ok, proc.stdout + proc.stderr

    do("import", str(src), "--layout", "hermes")
    do("link", str(home), "--layout", "hermes", "--name", "hermes")
    do("sync")
    (home / "research").mkdir()
    (home / "tools/a").rename(home / "research/a")  # a category move: membership only
    do("sync")
    (home / "tools/DESCRIPTION.md").write_text("---\ndescription: Tools, sharpened.\n---\n")  # a category file
    do("sync")
    md = home / "research/a/SKILL.md"
    md.write_text(md.read_text() + "step two\n")
    do("sync")
    n = len(lineage(brain / ".git"))
    return brain, {"move": n - 3, "category-file": n - 2, "tip": n - 1}


def retip(repo: Path, edit: Callable[[bytes], bytes]) -> str:
    """Replace the tip's commit object by ``edit`` of it (parents kept: a merge stays a merge); its new id."""
    raw = subprocess.run(
        ["git", "--git-dir", str(repo), "cat-file", "commit", "main"], capture_output=True, check=True
    ).stdout
    made = (
        subprocess.run(
            ["git", "--git-dir", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
            input=edit(raw),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    git(repo, "update-ref", "refs/heads/main", made)
    return made


def sibling_cases() -> list[Case]:
    """docs/lineage.md §8.8: the tip of ``build_honest_merged`` (a merge
    signed by the user key) forged in its git signature or in the siblings it certifies."""
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from ledger.signatures import sshsig
    from ledger.store import commitsig

    def other_key(repo: Path, idx: dict[str, int]) -> str:
        stranger = Ed25519PrivateKey.generate()
        return retip(repo, lambda raw: commitsig.insert(p := commitsig.split(raw)[0], sshsig.sign(stranger, p)))

    def stripped(repo: Path, idx: dict[str, int]) -> str:
        return retip(repo, lambda raw: commitsig.split(raw)[0])

    def unsigned_with_siblings(repo: Path, idx: dict[str, int]) -> str:
        return retip(repo, lambda raw: re.sub(rb"\nLedger-Signature: [^\n]*\n", b"\n", raw, count=1))

    def certified_twice(repo: Path, idx: dict[str, int]) -> str:
        """The user key (an attacker holding it) certifies a second Ed25519 sibling, and signs everything
        properly with it: the EIP-712 signature and the gpgsig both verify; only the rule catches it."""
        stranger = Ed25519PrivateKey.generate()
        line = stranger.public_key().public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH).decode()

        def edit(raw: bytes) -> bytes:
            payload = commitsig.split(raw)[0]
            head, _, msg = payload.decode().partition("\n\n")
            tree = re.search(r"^tree (\S+)$", head, re.M).group(1)
            parent = re.search(r"^parent (\S+)$", head, re.M).group(1)
            msg = re.sub(r"^Ledger-Sibling: ssh-ed25519 .*$", f"Ledger-Sibling: {line}", msg, count=1, flags=re.M)
            payload = f"{head}\n\n{resign(msg, KEYS['merged-user'], parent, tree)}".encode()
            return commitsig.insert(payload, sshsig.sign(stranger, payload))

        return retip(repo, edit)

    return [
        Case("gpgsig-by-another-key", "8.8", "siblings", other_key),
        Case("gpgsig-stripped", "8.8", "siblings", stripped),
        Case("sibling-certified-twice", "8.8", "siblings", certified_twice),
        Case(
            "siblings-on-an-unsigned-snapshot", "8.8", "siblings", unsigned_with_siblings, also_fails=("signatures",)
        ),  # the signature stripped, trailers and gpgsig kept
    ]


def build_honest_merged(root: Path) -> tuple[Path, dict[str, int]]:
    """Two copies of one signed brain publish to one remote: the second's push is merged (a skill taken,
    a skill created, and a conflict kept with the other side as second parent). Returns the second copy."""
    env = {"LEDGER_KEYS": str(root / "keys")}
    a, b, remote = root / "a", root / "b", root / "remote.git"
    run_ledger("init", str(a), check=True, env=env)

    def do(brain: Path, *args: str) -> None:
        run_ledger("--brain", str(brain), *args, check=True, env=env)

    do(a, "skill", "create", "s", "--description", "S", "--body", "one\ntwo\nthree\n")
    do(a, "skill", "create", "t", "--description", "T", "--body", "tee\n")
    do(a, "push", str(remote))
    run_ledger("clone", str(remote), str(b), check=True, env=env)
    do(a, "skill", "patch", "s", "--old", "two", "--new", "TWO-A")
    do(a, "push", str(remote))
    do(b, "skill", "patch", "s", "--old", "two", "--new", "TWO-B", "--actor", "agent")
    do(b, "skill", "patch", "t", "--old", "tee", "--new", "TEE", "--actor", "agent")
    do(b, "skill", "create", "u", "--description", "U", "--body", "u\n", "--actor", "agent")
    do(b, "push", str(remote))
    n = len(lineage(b / ".git"))
    KEYS["merged-user"] = bytes.fromhex(json.loads((root / "keys" / "user.key").read_text())["private_key"][2:])
    return b, {"merge": n - 1, "tip": n - 1}


def fork_operator(operator: Any, victim: Any) -> None:
    """The forked operator (docs/lineage.md "Epochs", issue 37): one that anchors two roots for one
    (agent, seq). bypassing the service's compare-and-swap, it appends a second root for the
    victim's seq 1 and anchors that epoch.  The chain accepts it (the log only grew), and the operator
    publishes the log, since the chain's roots must replay from it."""
    from ledger.chain.config import ChainConfig
    from ledger.chain.registry import ZERO
    from ledger.protocol import tlog

    agent = ChainConfig.of(victim).agent_id
    assert agent is not None
    anchor_raw(operator, [tlog.entry(agent, 1, ZERO, b"\x66" * 32)], "a forked epoch\n")


def anchor_raw(operator: Any, entries: list[bytes], message: str) -> None:
    """Append ``entries`` to the operator brain's log as they are (no compare-and-swap, no receipt), anchor
    that epoch with the dev key and publish it: what a dishonest operator can do, since the chain checks
    only that the log grew."""
    from ledger.chain import epochlog
    from ledger.chain.abi import call_data
    from ledger.chain.config import ChainConfig
    from ledger.chain.keys import DEV_KEY_NAME, load_account
    from ledger.chain.registry import Registry
    from ledger.protocol import notes, tlog
    from ledger.signatures.siblings import ed25519_key

    cfg = ChainConfig.of(operator)
    reg = Registry(cfg.rpc, cfg.registry)
    account = load_account(DEV_KEY_NAME, reg.chain_id)
    log = epochlog.read_local(operator.store)
    old = log.size()
    log.entries.extend(entries)
    tree = tlog.Tree(log.leaves())
    reg.transact(
        account,
        call_data("anchorEpoch(uint64,bytes32,bytes32[])", tree.size, tree.root(), tree.consistency(old)),
        what="a raw epoch",
    )
    origin = log.header["origin"]
    cp = notes.sign_note(notes.checkpoint_text(origin, tree.size, tree.root()), origin, ed25519_key(account.key))
    log.epochs.append(
        {
            "epoch": len(log.epochs) + 1,
            "size": tree.size,
            "root": tree.root().hex(),
            "checkpoint": cp,
            "tx": None,
            "block": None,
        }
    )
    epochlog.save(operator.store, log, message)


def fork_two_operators(root: Path, operator: Any, member: Callable[[Path, Any, str], Any]) -> tuple[Any, Any, Any]:
    """The two-operator fork (review 2, finding 1): the owner authorizes a second address Y; operator X
    anchors fork A of an agent, Y fork B (same seq, another root).  Each operator's log is unforked, so
    only an audit that replays every committer's log sees it.  Returns (a, b, y), Y's operator brain
    (its key ``opy`` in ``$LEDGER_KEYSTORE``, which the caller sets)."""
    import shutil

    from ledger.anchoring.commits import authorize
    from ledger.anchoring.epochs import anchor_epoch
    from ledger.brain import Brain
    from ledger.chain import keys
    from ledger.chain.config import ChainConfig

    second = keys.dev_account(1)
    keys.import_key("opy", "0x" + bytes(second.key).hex())
    a = member(root, operator, "a")
    a.close()
    shutil.copytree(a.root, root / "b", symlinks=True)
    a, b = Brain.open(root / "a"), Brain.open(root / "b")
    a.create("second", "fork A", "A's next snapshot\n")
    b.create("second", "fork B", "B's next snapshot\n")
    authorize(a, second.address, True, key=keys.DEV_KEY_NAME)
    y = Brain.init(root / "opy")
    cfg = ChainConfig.of(operator)
    y.update_config(
        chain={"rpc": cfg.rpc, "chain_id": cfg.chain_id, "registry": cfg.registry, "deploy_block": cfg.deploy_block}
    )
    anchor_epoch(operator, [a], key=keys.DEV_KEY_NAME)
    anchor_epoch(y, [b], key="opy")
    return a, b, y
