"""The tamper corpus for outcome evidence (issue 38; docs/lineage.md §11, docs/lineage/evidence.md): made with plain
git.

``build_honest_outcomes`` makes a signed brain whose lineage records outcomes (an agent's, a
verifier's, a bulk import) and then an ordinary edit.  Each case of ``outcome_cases`` rewrites
that history as an attacker who holds **every key of the brain** would: the evidence log is
changed in one snapshot and, consistently, in every later one; each rewritten snapshot is
re-parented and re-signed by the key of its actor, both its EIP-712 ``Ledger-Signature`` and its
git signature by the certified Ed25519 sibling.  So every other check passes, and only the
``evidence`` check can tell: the point of the corpus.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.harness.cli import run_ledger
from tests.harness.tamper import Case, git, lineage, resign

__all__ = ["KEYS", "REASONS", "build_honest_outcomes", "outcome_cases", "rewrite_logs"]

KEYS: dict[str, bytes] = {}  # the outcomes brain's private keys by role (build_honest_outcomes)
STRANGER = b"\x07" * 32  # a key the brain never trusted

REASONS = {  # the cause each class's failure must name, not just any failure of the check
    "outcome-forged": r"a key the brain did not trust at this snapshot \(forged\)",
    "outcome-altered": r"signature recovers 0x[0-9a-f]{40}: it was altered or forged",
    "outcome-dropped": r"entry 0 of 2 was dropped or rewritten",
    "outcome-back-dated": r"before snapshot [0-9a-f]{12} served a v2 .*: back-dated",
    "outcome-of-a-version-never-served": r"a v2, which snapshot [0-9a-f]{12} does not hold \(it holds v1\)",
    "outcome-duplicated": r"is already in the log \(an entry appears once\)",
    "outcome-of-another-brain": r"is an outcome of brain abababababab, not this one",
    "outcome-dated-after-its-snapshot": r"after the snapshot that records it",
    "outcome-digest-of-another-version": r"'s digest is not a v2's digest at [0-9a-f]{12}",
    "outcome-receipt-root-forged": r"'s receipt root is not snapshot [0-9a-f]{12}'s root",
    "evidence-changed-outside-an-outcome-snapshot": r", edit\): changes the evidence log, which only an 'outcome' snapshot or a merge may",  # noqa: E501
    "outcome-verifier-failure-dropped-where-appended": r"outcome\): outcome 2: batch [0-9a-f]{12} of 0x[0-9a-f]{40} holds 2 of its 3 outcomes \(index 2 missing\)"  # noqa: E501
    r": a verifier's batch is appended whole",
    "outcome-verifier-failure-dropped-later": r", edit\): changes the evidence log, which only an 'outcome' "
    r"snapshot or a merge may",
    "outcome-verifier-batch-dropped": r"outcome\): outcome 1: [0-9a-f]{12}'s batch [0-9a-f]{12} follows batch "
    r"[0-9a-f]{12} of 0x[0-9a-f]{40}, which is not in the log before it",
}

_EVIDENCE_CHUNK = "evidence/00000000"  # the corpus's logs are small: one chunk (tests assert it)


def _secret(keys: Path, role: str) -> bytes:
    return bytes.fromhex(json.loads((keys / f"{role}.key").read_text())["private_key"][2:])


def build_honest_outcomes(root: Path) -> tuple[Path, dict[str, int]]:
    """A signed brain with a trusted verifier key and skill ``a`` at v1 then v2, whose outcomes come
    from ``ledger outcome record`` (by the agent key, then the verifier key) and ``ledger outcome
    import`` (a verifier's JSONL: a success, a score with a threshold, a failure with its evidence),
    followed by an ordinary ``edit`` snapshot that must keep the log as it is."""
    brain = root / "honest-outcomes"
    keys = root / "keys"
    env = {"LEDGER_KEYS": str(keys)}
    run_ledger("init", str(brain), check=True, env=env)

    def do(*args: str) -> None:
        run_ledger("--brain", str(brain), *args, check=True, env=env)

    do("skill", "create", "a", "--description", "A", "--body", "step one\n")
    do("outcome", "record", "a", "--task", "T-1", "--success")  # the agent's self-report, a v1
    do("skill", "patch", "a", "--old", "step one", "--new", "step two")
    do("keys", "generate", "verifier")  # a key file only: no snapshot
    do("keys", "trust", "verifier")
    do("outcome", "record", "a", "--task", "T-2", "--failure", "--actor", "verifier")  # verified, a v2
    rows = root / "outcomes.jsonl"
    rows.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in (
                {"skill": "a", "version": 1, "task": "T-3", "success": True},
                {"skill": "a", "version": 2, "task": "T-4", "score": 0.75, "threshold": 0.5, "verifier": "unit-tests"},
                {
                    "skill": "a",
                    "version": 2,
                    "task": "T-5",
                    "success": False,
                    "evidence": "https://ci.example/runs/5",
                    "evidence_digest": "sha256:" + "5e" * 32,
                },
            )
        )
    )
    do("outcome", "import", str(rows), "--actor", "verifier")
    md = root / "SKILL.md"
    md.write_text("---\nname: a\ndescription: A, edited\n---\nstep three\n")
    do("skill", "edit", "a", "--file", str(md))
    KEYS.update({role: _secret(keys, role) for role in ("user", "agent", "verifier")})
    labels = [
        "init",
        "create-a",
        "outcome-agent",
        "patch-a",
        "trust-verifier",
        "outcome-verifier",
        "outcome-import",
        "edit-a",
    ]
    assert len(lineage(brain / ".git")) == len(labels), "the honest outcomes brain has an unexpected lineage"
    return brain, {**{label: i for i, label in enumerate(labels)}, "tip": len(labels) - 1}


def _log(repo: Path, commit: str) -> list[bytes]:
    listing = git(repo, "ls-tree", "--name-only", f"{commit}:", "evidence/")
    if not listing.strip():
        return []
    assert listing.split() == [_EVIDENCE_CHUNK], listing  # one chunk of at most 256 entries
    data = subprocess.run(
        ["git", "--git-dir", str(repo), "cat-file", "blob", f"{commit}:{_EVIDENCE_CHUNK}"],
        capture_output=True,
        check=True,
    ).stdout
    return data[:-1].split(b"\n")


def _with_log(repo: Path, tree: str, entries: list[bytes]) -> str:
    """``tree`` with its ``evidence/`` holding exactly ``entries`` (one chunk), or none when empty."""
    assert len(entries) <= 256
    with tempfile.TemporaryDirectory() as d:
        env = {"GIT_INDEX_FILE": str(Path(d) / "index")}
        git(repo, "read-tree", tree, env=env)
        git(repo, "rm", "-q", "-r", "--cached", "--ignore-unmatch", "evidence", env=env)
        if entries:
            blob = (
                subprocess.run(
                    ["git", "--git-dir", str(repo), "hash-object", "-w", "--stdin"],
                    input=b"".join(e + b"\n" for e in entries),
                    capture_output=True,
                    check=True,
                )
                .stdout.decode()
                .strip()
            )
            git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{_EVIDENCE_CHUNK}", env=env)
        return git(repo, "write-tree", env=env).strip()


def rewrite_logs(repo: Path, start: int, change: Callable[[list[bytes]], list[bytes]], *, drop: bool = False) -> str:
    """Replace the evidence log of snapshot ``start`` and of every later one by ``change`` of it, each
    snapshot re-parented and re-signed as its actor's key would sign it; the new id of ``start``.
    ``drop``: snapshot ``start`` is left out of the lineage instead, and the rewrite starts after it
    (the new id returned is its successor's)."""
    from ledger.signatures import siblings, sshsig
    from ledger.store import commitsig

    commits = lineage(repo)
    parent = commits[start - 1] if start else None
    first = ""
    for old in commits[start + 1 if drop else start :]:
        raw = subprocess.run(
            ["git", "--git-dir", str(repo), "cat-file", "commit", old], capture_output=True, check=True
        ).stdout
        payload, gpgsig = commitsig.split(raw)
        head, _, msg = payload.decode().partition("\n\n")
        tree = _with_log(repo, re.search(r"^tree (\S+)$", head, re.M).group(1), change(_log(repo, old)))
        lines = [line for line in head.split("\n") if not line.startswith("parent ")]
        lines[0] = f"tree {tree}"
        head = "\n".join(lines[:1] + ([f"parent {parent}"] if parent else []) + lines[1:])
        key = KEYS[re.search(r"^Ledger-Actor: (\S+)$", msg, re.M).group(1)]
        if "\nLedger-Signature: " in msg:
            msg = resign(msg, key, parent, tree)
        payload_ = f"{head}\n\n{msg}".encode()
        if gpgsig is not None:
            payload_ = commitsig.insert(payload_, sshsig.sign(siblings.ed25519_key(key), payload_))
        parent = (
            subprocess.run(
                ["git", "--git-dir", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
                input=payload_,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        first = first or parent
    git(repo, "update-ref", "refs/heads/main", parent)
    return first


def _time(repo: Path, commit: str) -> int:
    return int(git(repo, "show", "-s", "--format=%ct", commit).strip())


def _entry(
    repo: Path,
    idx: dict[str, int],
    key: bytes,
    *,
    version: int,
    served: str,
    recorded: str,
    task: str = "T-9",
    result: str = "success",
    when: int | None = None,
    edit: Callable[[dict], None] | None = None,
) -> bytes:
    """A well-formed entry of skill ``a`` at ``version`` whose receipt names snapshot ``served``, signed by
    ``key`` and dated ``when`` (default: the time of the snapshot ``recorded`` that records it); ``edit``
    changes the record before it is signed."""
    from eth_account import Account

    from ledger.store import outcomes as oc

    commits = lineage(repo)
    honest = [json.loads(e)["record"] for e in _log(repo, commits[idx["outcome-import"]])]
    digest = next(r["digest"] for r in honest if r["version"] == version)  # the honest writer's digest of it
    commit = commits[idx[served]]
    root = re.search(r"^Ledger-Root: (\S+)$", git(repo, "cat-file", "commit", commit), re.M).group(1)
    record = oc.make_record(
        brain=commits[0],
        agent=None,
        skill="a",
        version=version,
        digest=digest,
        receipt={"commit": commit, "root": root},
        task_id=task,
        task_digest=None,
        result=result,
        when=oc.format_time(when if when is not None else _time(repo, commits[idx[recorded]])),
        signer=Account.from_key(key).address.lower(),
    )
    if edit is not None:
        edit(record)
    # a batch of one, the first of a new chain (lineage/evidence.md §9)
    return oc.sign_batch([record], key, prev=None)[0].data


def outcome_cases() -> list[Case]:
    """One case per class of outcome tampering; labels name the snapshots of ``build_honest_outcomes``."""

    def appended(label: str, make: Callable[[Path, dict[str, int]], bytes]) -> Callable[[Path, dict[str, int]], str]:
        """An entry slipped into snapshot ``label``'s log, and so into every later one's."""

        def apply(repo: Path, idx: dict[str, int]) -> str:
            extra = make(repo, idx)
            return rewrite_logs(repo, idx[label], lambda log: [*log, extra])

        return apply

    def forged(repo: Path, idx: dict[str, int]) -> bytes:
        return _entry(repo, idx, STRANGER, version=2, served="patch-a", recorded="outcome-import")

    def altered(repo: Path, idx: dict[str, int]) -> str:
        """The verifier's failure (the entry that snapshot appended) turned into a success, its signature kept."""
        target = _log(repo, lineage(repo)[idx["outcome-verifier"]])[-1]
        assert b'"result":"failure"' in target
        flipped = target.replace(b'"result":"failure"', b'"result":"success"')
        return rewrite_logs(repo, idx["outcome-verifier"], lambda log: [flipped if e == target else e for e in log])

    def dropped(repo: Path, idx: dict[str, int]) -> str:
        """The agent's self-reported success of v1 (entry 0) gone from the import on."""
        gone = _log(repo, lineage(repo)[idx["outcome-agent"]])[0]
        return rewrite_logs(repo, idx["outcome-import"], lambda log: [e for e in log if e != gone])

    def back_dated(repo: Path, idx: dict[str, int]) -> bytes:
        """Properly signed by the trusted verifier key: v2 judged an hour before it existed."""
        when = _time(repo, lineage(repo)[idx["patch-a"]]) - 3600
        return _entry(repo, idx, KEYS["verifier"], version=2, served="patch-a", recorded="outcome-import", when=when)

    def never_served(repo: Path, idx: dict[str, int]) -> bytes:
        """A v2 outcome whose receipt names create-a, where a is at v1."""
        return _entry(repo, idx, KEYS["verifier"], version=2, served="create-a", recorded="outcome-import")

    def by_verifier(**kw: Any) -> Callable[[Path, dict[str, int]], bytes]:
        """An outcome of a v2 served by patch-a, signed by the trusted verifier key, with ``kw`` for ``_entry``."""
        return lambda repo, idx: _entry(
            repo, idx, KEYS["verifier"], **{"version": 2, "served": "patch-a", "recorded": "outcome-import", **kw}
        )

    def v1_digest(repo: Path, idx: dict[str, int]) -> str:
        return str(json.loads(_log(repo, lineage(repo)[idx["outcome-agent"]])[0])["record"]["digest"])

    def duplicated(repo: Path, idx: dict[str, int]) -> bytes:
        return _log(repo, lineage(repo)[idx["outcome-agent"]])[0]

    def smuggled(repo: Path, idx: dict[str, int]) -> bytes:
        """A valid verifier outcome, slipped into the ordinary edit that follows the outcomes."""
        return _entry(repo, idx, KEYS["verifier"], version=2, served="outcome-import", recorded="edit-a", task="T-6")

    def failure_of_the_import(repo: Path, idx: dict[str, int]) -> bytes:
        """The verifier's failure in the import (T-5): the last of the three outcomes its batch holds."""
        log = _log(repo, lineage(repo)[idx["outcome-import"]])
        target = log[-1]
        record = json.loads(target)["record"]
        assert record["outcome"]["result"] == "failure" and record["batch"]["count"] == 3, record
        return target

    def failure_dropped(label: str) -> Callable[[Path, dict[str, int]], str]:
        """The verifier's failure gone from snapshot ``label``'s log and every later one."""

        def apply(repo: Path, idx: dict[str, int]) -> str:
            gone = failure_of_the_import(repo, idx)
            return rewrite_logs(repo, idx[label], lambda log: [e for e in log if e != gone])

        return apply

    def batch_dropped(repo: Path, idx: dict[str, int]) -> str:
        """The verifier's failure T-2 (a whole batch of one, the snapshot ``outcome-verifier``) dropped with the
        snapshot that appended it and from every later log; the import's batch, its next, names it."""
        gone = _log(repo, lineage(repo)[idx["outcome-verifier"]])[-1]
        assert json.loads(gone)["record"]["outcome"]["result"] == "failure"
        return rewrite_logs(repo, idx["outcome-verifier"], lambda log: [e for e in log if e != gone], drop=True)

    return [
        Case("outcome-verifier-failure-dropped-where-appended", "14.9", "evidence", failure_dropped("outcome-import")),
        Case("outcome-verifier-failure-dropped-later", "14.4, 14.9", "evidence", failure_dropped("edit-a")),
        Case("outcome-verifier-batch-dropped", "14.9", "evidence", batch_dropped),
        Case("outcome-forged", "14.5", "evidence", appended("outcome-import", forged)),
        Case("outcome-altered", "14.1, 14.5", "evidence", altered),
        Case("outcome-dropped", "14.4", "evidence", dropped),
        Case("outcome-back-dated", "14.5", "evidence", appended("outcome-import", back_dated)),
        Case("outcome-of-a-version-never-served", "14.5", "evidence", appended("outcome-import", never_served)),
        Case("outcome-duplicated", "14.5", "evidence", appended("outcome-import", duplicated)),
        Case("evidence-changed-outside-an-outcome-snapshot", "14.4", "evidence", appended("edit-a", smuggled)),
        # Each remaining rule of an added entry (lineage/evidence.md §5), broken by an outcome the trusted verifier key
        # signs:
        Case(
            "outcome-of-another-brain",
            "14.5",
            "evidence",
            appended("outcome-import", by_verifier(edit=lambda r: r.update(brain="ab" * 20))),
        ),
        Case(
            "outcome-dated-after-its-snapshot",
            "14.5",
            "evidence",
            lambda repo, idx: appended(
                "outcome-import", by_verifier(when=_time(repo, lineage(repo)[idx["outcome-import"]]) + 301)
            )(repo, idx),
        ),
        Case(
            "outcome-digest-of-another-version",
            "14.5",
            "evidence",
            lambda repo, idx: appended(
                "outcome-import", by_verifier(edit=lambda r: r.update(digest=v1_digest(repo, idx)))
            )(repo, idx),
        ),
        Case(
            "outcome-receipt-root-forged",
            "14.5",
            "evidence",
            appended(
                "outcome-import", by_verifier(edit=lambda r: r["receipt"].update(root="blake3-tree-v1:" + "00" * 32))
            ),
        ),
    ]
