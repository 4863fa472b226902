"""Sharing a brain: push to a remote, pull from one, clone one, and fetch one for an audit.

What travels is what an auditor needs: the ``main`` lineage of snapshots and the chain
receipts (``refs/notes/ledger-chain``), which ``git clone`` leaves behind.

Nothing fetched is trusted before it is checked.  A pull or clone fetches into a
quarantine repository (borrowing this brain's objects through git's alternates, so
only what is new travels), audits it exactly as ``ledger audit`` would, and checks that
it extends this brain's lineage; only then are its objects brought in and ``main``
moved, through the same journal and roll-forward as every other write.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ledger._env import child_env
from ledger.brain import Brain
from ledger.chain.receipts import (
    NOTES_REF,
    UNVERIFIED_REF,
    join_receipts,
    note_problems,
    notes_of,
    parse_note,
    positions,
    read_notes,
    write_receipts,
)
from ledger.errors import LedgerError, StoreError
from ledger.store import gitstore as gs

__all__ = ["audit_target", "clone", "fetched", "pull", "push"]

_FETCH = ["+refs/heads/main:refs/heads/main", f"+{NOTES_REF}:{NOTES_REF}"]
_CLONE_NOTES = f"+{NOTES_REF}:{UNVERIFIED_REF}"  # a clone has no chain to check receipts against yet


def _git(git_dir: Path, *args: str, what: str) -> str:
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, env=child_env(), timeout=600
    )
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["git failed"])[-1]
        raise StoreError(f"{what}: {detail}")
    return proc.stdout


def _init_bare(path: Path) -> None:
    args = ["git", "init", "-q", "--bare", "--initial-branch=main", str(path)]
    subprocess.run(args, check=True, env=child_env(), capture_output=True)


def _remote_refs(remote: str) -> dict[str, str]:
    proc = subprocess.run(
        ["git", "ls-remote", "--", remote, "refs/heads/main", NOTES_REF],
        capture_output=True, text=True, env=child_env(), timeout=120,
    )  # fmt: skip
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["no answer"])[-1]
        raise StoreError(f"cannot read the remote {remote!r}: {detail}", hint="check the path or URL")
    return {ref: sha for sha, ref in (ln.split("\t") for ln in proc.stdout.splitlines())}


def _fetch_into(git_dir: Path, remote: str) -> None:
    refs = _remote_refs(remote)
    if "refs/heads/main" not in refs:
        raise StoreError(f"{remote!r} holds no brain (it has no 'main' branch of snapshots)")
    specs = [s for s in _FETCH if s.split(":")[1] in refs]
    _git(git_dir, "fetch", "--no-tags", "--no-write-fetch-head", "-q", "--", remote, *specs, what=f"fetching {remote}")


@contextlib.contextmanager
def fetched(remote: str, borrow: Path | None = None, parent: Path | None = None) -> Iterator[Path]:
    """A temporary bare repository holding ``remote``'s snapshots and receipts; removed on exit.

    With ``borrow`` (a git directory), objects it already has are not fetched again.  A
    brain passes its ``.ledger/tmp`` as ``parent``, which the next writer clears should
    this process be killed.
    """
    if parent is not None:
        parent.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="incoming-", dir=parent))
    try:
        _init_bare(tmp)
        if borrow is not None:
            (tmp / "objects" / "info" / "alternates").write_text(str((borrow / "objects").absolute()) + "\n")
        _fetch_into(tmp, remote)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _audited(repo: Path, remote: str) -> None:
    from ledger.audit.lineage import audit_repo

    report = audit_repo(repo)
    failed = [c for c in report.checks.values() if not c.ok]
    if failed:
        raise StoreError(
            f"what {remote!r} holds fails the audit, so nothing was taken from it:"
            + "".join(f"\n  {c.name}: {c.summary}" for c in failed),
            hint=f"run 'ledger audit {remote}' for the full report",
        )


def _is_ancestor(git_dir: Path, a: str, b: str) -> bool:
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", "merge-base", "--is-ancestor", a, b], capture_output=True, env=child_env()
    )
    return proc.returncode == 0


def push(brain: Brain, remote: str) -> dict[str, Any]:
    """Publish ``main`` and the receipts to ``remote``; a local path that does not exist becomes a bare repo.

    Refused when the remote holds snapshots this brain lacks (pull first): a push never
    rewrites a published lineage.  Receipts are merged, never replaced.
    """
    store = brain.store
    target = Path(remote)
    if "://" not in remote and ":" not in remote.split("/")[0] and not target.exists():
        _init_bare(target)
    with brain.locked():
        head = brain.head().commit.hex()
        refs = _remote_refs(remote)
        theirs = refs.get("refs/heads/main")
        receipts: dict[str, Any] = {}
        if theirs is not None:
            with fetched(remote, store.git_dir, brain.control / "tmp") as q:
                if not _is_ancestor(q, theirs, head):
                    raise StoreError(
                        f"{remote!r} holds snapshots this brain does not have; nothing was pushed",
                        hint=f"run 'ledger pull {remote}' first (a push never rewrites a published lineage)",
                    )
                receipts = _take_receipts(brain, q)
        specs = ["refs/heads/main:refs/heads/main"]
        if store.read_ref(NOTES_REF) is not None:
            specs.append(f"{NOTES_REF}:{NOTES_REF}")
        _git(store.git_dir, "push", "-q", "--", remote, *specs, what=f"pushing to {remote}")
    return {"remote": remote, "head": head, "was": theirs, "receipts": NOTES_REF in specs[-1],
            "incoming_receipts": receipts}  # fmt: skip


def pull(brain: Brain, remote: str) -> dict[str, Any]:
    """Take ``remote``'s snapshots and receipts, when they pass the audit and extend this lineage.

    The working tree is brought to the new head by the writer's journaled roll-forward; a
    skill with changes not in a snapshot refuses the pull and nothing changes.
    """
    store = brain.store
    with brain.locked():
        local = brain.head().commit.hex()
        with fetched(remote, store.git_dir, brain.control / "tmp") as q:
            _audited(q, remote)
            theirs = (q / "refs" / "heads" / "main").read_text().strip()
            if theirs == local or _is_ancestor(q, theirs, local):
                moved = False
            elif _is_ancestor(q, local, theirs):
                moved = True
            else:
                raise StoreError(
                    f"{remote!r} and this brain have diverged: neither lineage extends the other",
                    hint="a ledger never merges lineages; audit both and keep one ('ledger audit REMOTE')",
                )
            names = _changed_skills(q, local, theirs) if moved else []
            brain.writer.require_unchanged(names, "nothing was pulled", "pull again")  # a refusal changes nothing
            _git(store.git_dir, "fetch", "-q", "--no-write-fetch-head", "--", str(q),
                 "+refs/heads/main:refs/ledger/incoming", what="taking the fetched objects")  # fmt: skip
            try:
                receipts = _take_receipts(brain, q)
                if moved:
                    brain.writer.journal.fast_forward(bytes.fromhex(theirs), names)
            finally:
                _git(store.git_dir, "update-ref", "-d", "refs/ledger/incoming", what="cleaning up")
    return {"remote": remote, "from": local, "to": theirs if moved else local, "moved": moved,
            "incoming_receipts": receipts}  # fmt: skip


def _take_receipts(brain: Brain, q: Path) -> dict[str, Any]:
    """Take the receipts of the fetched copy ``q`` that hold up; never believe one unchecked.

    Each new receipt is checked against its snapshot (fields, root, seq, position);
    one that fails is refused. With a chain configured and reachable, the rest are
    checked against the registry's events and taken; otherwise they are kept apart
    under ``UNVERIFIED_REF``, where nothing counts them as anchored.
    """
    store = brain.store
    notes = (q / NOTES_REF).read_text().strip() if (q / NOTES_REF).exists() else None
    counts: dict[str, Any] = {"taken": 0, "unverified": 0, "refused": []}
    if notes is None:
        return counts
    _git(store.git_dir, "fetch", "-q", "--no-write-fetch-head", "--", str(q),
         f"+{NOTES_REF}:refs/ledger/incoming-notes", what="taking the fetched receipts")  # fmt: skip
    try:
        theirs = bytes.fromhex(notes)
        ours = read_notes(store)
        incoming = {c: blob for c, blob in notes_of(store, theirs).items() if c not in ours}
        position = _positions(store, q)
        checked: dict[str, dict[str, Any]] = {}
        refused: list[str] = []
        for commit, blob in incoming.items():
            note, why = parse_note(store.read(blob, b"blob"))
            problems = [f"note {why}"] if note is None else note_problems(note, commit, position)
            if problems:
                refused.append(f"{commit[:12]}: {'; '.join(problems)}")
            else:
                checked[commit] = note  # type: ignore[assignment]
        verdicts = _on_chain(brain, checked)
        refused += [f"{c[:12]}: {why}" for c, why in verdicts.items() if why not in ("ok", "unknown")]
        unverified = {c: n for c, n in checked.items() if verdicts.get(c, "unknown") == "unknown"}
        write_receipts(store, unverified, UNVERIFIED_REF)
        taken = {c: incoming[c] for c, why in verdicts.items() if why == "ok"}
        join_receipts(store, theirs, taken)
        counts.update(taken=len(taken), unverified=len(unverified), refused=refused)
    finally:
        _git(store.git_dir, "update-ref", "-d", "refs/ledger/incoming-notes", what="cleaning up")
    return counts


def _positions(store: gs.GitStore, q: Path) -> dict[str, tuple[int, bytes]]:
    """Each anchored snapshot commit of the fetched lineage (hex) → its position and root, for receipts."""
    head = (q / "refs" / "heads" / "main").read_text().strip()
    commits = _git(q, "rev-list", "--first-parent", "--reverse", head, what="reading the fetched lineage").split()
    snaps = []
    for commit in commits:
        try:
            snaps.append(store.snapshot(bytes.fromhex(commit)))
        except (StoreError, ValueError):
            continue  # not a snapshot: the audit names it; no receipt can sit on it
    return positions(snaps)


def _on_chain(brain: Brain, notes: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each note → "ok" when the brain's chain holds exactly that event, "unknown" when it cannot
    be asked (no chain configured, another registry's receipt, the RPC down), else why not."""
    cfg_doc = brain.config.get("chain") or {}
    if not notes or not cfg_doc.get("registry") or not cfg_doc.get("agent_id"):
        return dict.fromkeys(notes, "unknown")
    from ledger.bundle.merkle import format_root
    from ledger.chain.config import ChainConfig
    from ledger.errors import ChainError

    cfg = ChainConfig.of(brain)
    mine = ((cfg.registry or "").lower(), f"0x{cfg.agent_id:064x}")
    try:
        from ledger.chain.registry import Registry

        reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
        events = {ev["seq"]: ev for ev in reg.events(cfg.agent_id or 0, cfg.deploy_block)}
    except ChainError:
        return dict.fromkeys(notes, "unknown")  # checked later, when the chain answers
    out = {}
    for commit, note in notes.items():
        ev = events.get(note["seq"])
        if (note["registry"].lower(), note["agent"]) != mine or note["chain_id"] != reg.chain_id:
            out[commit] = "unknown"  # another registry's receipt: kept apart, never counted
        elif ev is None:
            out[commit] = f"seq {note['seq']} is not among the registry's events for this agent"
        else:
            claimed = (note["root"], note["tx"], note["block"], note["block_hash"], note["log_index"],
                       note["committer"].lower())  # fmt: skip
            actual = (format_root(ev["root"]), ev["tx"], ev["block"], ev["block_hash"], ev["log_index"],
                      ev["committer"].lower())  # fmt: skip
            out[commit] = "ok" if claimed == actual else f"does not match the registry's event seq {note['seq']}"
    return out


def _changed_skills(git_dir: Path, old: str, new: str) -> list[str]:
    """Skills whose tree differs between two snapshots (``skills/`` entries by tree id)."""

    def trees(commit: str) -> dict[str, str]:
        out = _git(git_dir, "ls-tree", "-z", f"{commit}:skills", what="reading the fetched snapshot")
        return {e.split("\t", 1)[1]: e.split()[2] for e in out.split("\0") if e}

    try:
        a = trees(old)
    except StoreError:
        a = {}  # the empty brain has no skills/ tree
    try:
        b = trees(new)
    except StoreError:
        b = {}
    return sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))


def clone(remote: str, dest: str | Path) -> Brain:
    """A new brain at ``dest`` holding ``remote``'s snapshots and receipts, audited before it is used."""
    root = Path(os.path.abspath(dest))
    if root.exists() and any(root.iterdir()):
        raise LedgerError(f"{root} is not an empty directory", hint="clone into a new directory")
    created = not root.exists()
    try:
        Brain.create_empty(root)
        with fetched(remote) as q:
            _audited(q, remote)
            git_dir = gs.GitStore(root).git_dir
            notes = [_CLONE_NOTES] if (q / NOTES_REF).exists() else []
            _git(git_dir, "fetch", "-q", "--no-write-fetch-head", "--", str(q), *_FETCH[:1], *notes,
                 what="taking the fetched snapshots")  # fmt: skip
        brain = Brain(root)
        brain.checkout_all()
        return brain
    except BaseException:
        if created:
            shutil.rmtree(root, ignore_errors=True)
        else:
            for child in root.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        raise


def audit_target(repo: str) -> contextlib.AbstractContextManager[Path]:
    """``ledger audit``'s argument as a local repository: a path as it is, a URL fetched with its receipts."""
    path = Path(repo)
    if path.is_dir():
        return contextlib.nullcontext(path)
    if "://" in repo or repo.startswith("git@") or path.suffix == ".git":
        return fetched(repo)
    raise LedgerError(f"{repo!r} is neither a directory nor a URL", hint="pass a brain, a clone of one, or its URL")
