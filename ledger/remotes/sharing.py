"""Sharing a brain: push to a remote, pull from one, clone one, and fetch one for an audit.

What travels is what an auditor needs: the ``main`` lineage of snapshots and the chain
receipts (``refs/notes/ledger-chain``), which ``git clone`` leaves behind, and, where a
brain holds them, its epoch receipts and an operator's log (:mod:`ledger.remotes.epochrefs`).

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
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ledger.brain import Brain
from ledger.chain.receipts import join_receipts, notes_of, read_notes, write_receipts
from ledger.errors import LedgerError, StoreError
from ledger.protocol.receipts import note_problems, parse_note, positions
from ledger.protocol.refs import (
    BRANCH,
    EPOCHS_REF,
    INCOMING_BRANCH,
    INCOMING_NOTES,
    NOTES_REF,
    PUBLISHED,
    UNVERIFIED_REF,
)
from ledger.protocol.refs import EPOCH_NOTES_REF as _EPOCH_NOTES
from ledger.protocol.refs import EPOCHS_REF as _EPOCH_LOG
from ledger.protocol.refs import EVIDENCE_NOTES_REF as _EVIDENCE_NOTES
from ledger.store import gitstore as gs
from ledger.store.git import WHOLE, Git, reason

__all__ = ["audit_target", "clone", "fetched", "init_remote", "pull", "push"]

_FETCH = [
    f"+{BRANCH}:{BRANCH}",
    f"+{NOTES_REF}:{NOTES_REF}",
    f"+{_EPOCH_NOTES}:{_EPOCH_NOTES}",
    f"+{_EVIDENCE_NOTES}:{_EVIDENCE_NOTES}",
    f"+{_EPOCH_LOG}:{_EPOCH_LOG}",
]
_CLONE_NOTES = f"+{NOTES_REF}:{UNVERIFIED_REF}"  # a clone has no chain to check receipts against yet


def init_remote(remote: str) -> bool:
    """Make ``remote`` a bare repository when it is a local path that does not exist; whether it did."""
    if "://" in remote or ":" in remote.split("/")[0] or Path(remote).exists():
        return False
    _init_bare(Path(remote))
    return True


def _init_bare(path: Path) -> None:
    Git().run(
        "init", "-q", "--bare", "--initial-branch=main", str(path), what=f"cannot make a bare repository at {path}"
    )
    from ledger.remotes.guard import install

    # The branch moves only forward, even for a client that forces (docs/lineage.md §9; the guard sets
    # receive.denyNonFastForwards and refuses a rewind itself), and only audited snapshots land (ADR 27).
    install(path)


def _remote_refs(remote: str) -> dict[str, str]:
    out = Git().ls_remote(
        remote,
        BRANCH,
        NOTES_REF,
        _EPOCH_NOTES,
        _EVIDENCE_NOTES,
        _EPOCH_LOG,
        what=f"cannot read the remote {remote!r}",
        hint="check the path or URL",
    )
    return {ref: sha for sha, ref in (ln.split("\t") for ln in out.decode().splitlines())}


def _fetch_into(git_dir: Path, remote: str) -> None:
    refs = _remote_refs(remote)
    if BRANCH not in refs:
        raise StoreError(f"{remote!r} holds no brain (it has no 'main' branch of snapshots)")
    specs = [s for s in _FETCH if s.split(":")[1] in refs]
    Git(git_dir).fetch(remote, *specs, options=["-c", "fetch.fsckObjects=true"], what=f"fetching {remote}")


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


def _audited(repo: Path, remote: str, since: tuple[bytes, ...] = ()) -> None:
    """Refuse what fails the audit; with ``since`` (this brain's head), only what is new beyond it.

    The audit applies the policy the lineage records (docs/lineage.md §8.4): under ``signed``, a
    snapshot that is unsigned, or signed by a key the trust set does not hold, is refused here,
    before any object is taken or any ref moves."""
    from ledger.audit.lineage import audit_repo

    report = audit_repo(repo, since=since)
    failed = [c for c in report.checks.values() if not c.ok and c.name != "refs"]  # each ref is checked as taken
    if failed:
        named = next((c.snapshot for c in failed if c.snapshot), None)
        raise StoreError(
            f"what {remote!r} holds fails the audit, so nothing was taken from it:"
            + "".join(f"\n  {c.name}: {c.summary}" for c in failed),
            hint=f"run 'ledger audit {remote}' for the full report"
            + (
                f"; the remote's owner drops the refused snapshot {named[:12]} and those after it by moving "
                "the remote's main back to the last one that passes (on the remote's host: git update-ref "
                "refs/heads/main GOOD BAD), and 'ledger remote guard' keeps it from happening again"
                if named and since
                else ""
            ),
        )


def _publishable(brain: Brain, remote: str, theirs: str | None) -> None:
    """Refuse to publish snapshots a peer would refuse: what ``main`` holds beyond the remote's head,
    audited as a pull would (the lineage's policy included).  The remote is left as it is."""
    from ledger.audit.lineage import audit_repo

    head = brain.store.head()
    if head is None or (theirs is not None and head.hex() == theirs):
        return
    report = audit_repo(brain.root, since=(bytes.fromhex(theirs),) if theirs else ())
    failed = [c for c in report.checks.values() if not c.ok and c.name not in ("worktree", "receipts")]
    if failed:
        raise StoreError(
            f"refusing to publish to {remote!r}: this brain holds snapshots its own audit refuses, so no peer "
            "would take them; the remote is unchanged:" + "".join(f"\n  {c.name}: {c.summary}" for c in failed),
            hint="'ledger audit .' names them; under the policy 'signed', each must be made by a key the brain "
            "trusts ('ledger keys show')",
        )


PUSH_ATTEMPTS = 8  # fetch-merge-push rounds before a push gives up on a busy remote


def push(brain: Brain, remote: str, *, attempts: int = PUSH_ATTEMPTS, create: bool = True) -> dict[str, Any]:
    """Publish ``main`` and the receipts to ``remote``; a local path that does not exist becomes a bare repo.

    The remote's branch moves only by compare-and-swap: git's push sends the old value it
    was shown and the remote refuses the update if its branch moved since, and a push is
    never forced.  When the remote holds snapshots this brain lacks, they are fetched,
    audited and merged (:mod:`ledger.remotes.lineagemerge`), and the push tried again.  Receipts
    are merged, never replaced.  ``create=False`` (a fleet's sync) never makes a missing remote:
    a path that is gone is a remote that cannot be reached.
    """
    from ledger.remotes import epochrefs

    store = brain.store
    target = Path(remote)
    if create and "://" not in remote and ":" not in remote.split("/")[0] and not target.exists():
        _init_bare(target)
    merges: list[dict[str, Any]] = []
    receipts: dict[str, Any] = {}
    for _attempt in range(max(1, attempts)):
        refs = _remote_refs(remote)  # no lock held while the network is used: writers go on
        theirs = refs.get(BRANCH)
        ours_notes = store.read_ref(NOTES_REF)
        notes_moved = NOTES_REF in refs and refs[NOTES_REF] != (ours_notes.hex() if ours_notes else None)
        notes_moved = notes_moved or epochrefs.differs(store, refs)
        if theirs is not None and (theirs != brain.store.head().hex() or notes_moved):  # type: ignore[union-attr]
            merged, receipts = _take(brain, remote)
            if merged["action"] != "nothing":
                merges.append(merged)
        refused = receipts.get("refused_refs", {})  # left as they are on the remote, and not published over
        head = brain.store.head().hex()  # type: ignore[union-attr]
        notes = store.read_ref(NOTES_REF) if NOTES_REF not in refused else None
        specs = [f"{head}:{BRANCH}"] + ([f"{notes.hex()}:{NOTES_REF}"] if notes is not None else [])
        extra = {ref: sha for ref, sha in epochrefs.push_specs(store).items() if ref not in refused}
        # epoch receipts, an operator's log: checked by _take against theirs
        specs += [f"{sha}:{ref}" for ref, sha in extra.items()]
        if (
            theirs == head
            and (notes is None or refs.get(NOTES_REF) == notes.hex())
            and all(refs.get(ref) == sha for ref, sha in extra.items())
        ):
            return _pushed(remote, head, theirs, False, receipts, merges)
        _publishable(brain, remote, theirs)
        proc = Git(store.git_dir).push(remote, *specs, options=["--atomic", "--porcelain", "-q"])
        said, stderr = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
        if proc.returncode == 0:
            out = _pushed(remote, head, theirs, True, receipts, merges)
            if theirs is None:  # the remote had no lineage: it now holds all of this one
                out["snapshots"] = int(
                    Git(store.git_dir).run(
                        "rev-list",
                        "--count",
                        "--first-parent",
                        head,
                        timeout=WHOLE,
                        what="counting the snapshots pushed",
                    )
                )
            return out
        if not _raced(said + stderr) or "brain-ledger guard" in stderr:
            guard = [ln.removeprefix("remote: ") for ln in stderr.splitlines() if ln.startswith("remote: ")]
            detail = "\n".join(guard) if guard else reason(stderr)
            raise StoreError(
                f"pushing to {remote}: {detail}", hint="the remote is unchanged; nothing of this brain was lost"
            )
    raise StoreError(
        f"{remote!r} kept moving: {attempts} fetch-merge-push rounds all lost the race",
        hint="run 'ledger push' again (nothing is lost: this brain holds its snapshots)",
    )


def _raced(output: str) -> bool:
    """Whether a refused push lost a compare-and-swap (the remote moved), as git reports it."""
    return any(
        w in output
        for w in (
            "[rejected]",
            "fetch first",
            "non-fast-forward",
            "stale info",
            "failed to update ref",
            "cannot lock ref",
            "atomic push failed",
        )
    )


def _pushed(
    remote: str, head: str, was: str | None, moved: bool, receipts: dict[str, Any], merges: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "remote": remote,
        "head": head,
        "was": was,
        "pushed": moved,
        "incoming_receipts": receipts,
        "merges": merges,
    }


def pull(brain: Brain, remote: str) -> dict[str, Any]:
    """Take ``remote``'s snapshots and receipts once they pass the audit; merge where the lineages diverged.

    The working tree is brought to the new head by the writer's journaled roll-forward; a
    skill with changes not in a snapshot refuses the pull and nothing changes.
    """
    with brain.writing():
        local = brain.head().commit.hex()
        merged, receipts = _take(brain, remote)
        to = brain.head().commit.hex()
    return {
        "remote": remote,
        "from": local,
        "to": to,
        "moved": to != local,
        "action": merged["action"],
        "merge": merged if merged["action"] == "merge" else None,
        "incoming_receipts": receipts,
    }


def _differing(q: Path, a: bytes, b: bytes) -> list[str]:
    """Skills whose trees differ between two snapshots of the quarantine ``q`` (which borrows this brain's
    objects): a merge or fast-forward changes no other skill in the working tree."""
    from ledger.store.skilltree import skills_of

    with gs.GitStore(q) as qs:
        sa, sb = (skills_of(qs, qs.commit_info(c)[0])[1] for c in (a, b))
    return sorted(n for n in set(sa) | set(sb) if sa.get(n) != sb.get(n))


def _clear_stale(parent: Path, age: float = 3600.0) -> None:
    """Quarantines a killed fetch left behind: any older than ``age`` seconds (a live one is minutes old)."""
    with contextlib.suppress(FileNotFoundError), os.scandir(parent) as it:
        for entry in it:
            with contextlib.suppress(OSError):
                if time.time() - entry.stat(follow_symlinks=False).st_mtime > age:
                    shutil.rmtree(entry.path, ignore_errors=True)


def _take(brain: Brain, remote: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fetch ``remote`` into quarantine, audit it, take its objects and receipts, and bring its head in:
    nothing, a fast-forward or a merge (:func:`ledger.remotes.lineagemerge.merge_into`). Under the lock."""
    from ledger.remotes import epochrefs
    from ledger.remotes.lineagemerge import merge_into

    store = brain.store
    incoming = brain.control / "incoming"  # not tmp/: a writer clears that under the lock we do not hold here
    _clear_stale(incoming)
    with fetched(remote, store.git_dir, incoming) as q:
        head = store.head()
        # Outside the lock: writers go on while the remote is read and checked.
        _audited(q, remote, (head,) if head is not None else ())
        theirs = (q / "refs" / "heads" / "main").read_text().strip()
        refused = _refuse_refs(q)  # a bad ref beside main is refused whole, named, and main still taken
        with brain.writing() as w:
            if head is not None:  # a refusal changes nothing, not even the object store
                w.require_unchanged(_differing(q, head, bytes.fromhex(theirs)), "nothing was taken", "pull again")
            log = _checked_log(store, q, remote, refused)  # a rewritten log is neither taken nor published
            Git(store.git_dir).fetch(str(q), f"+{BRANCH}:{INCOMING_BRANCH}", what="taking the fetched objects")
            try:
                merged = merge_into(brain, bytes.fromhex(theirs))
                receipts = _take_receipts(brain, q)
                epochs = epochrefs.take_receipts(store, q, *_chain_of(brain))
                if epochs is not None:
                    receipts["epochs"] = epochs
                if log is not None:
                    epochrefs.take_log(store, q, log)
            finally:
                Git(store.git_dir).run("update-ref", "-d", INCOMING_BRANCH, what="cleaning up")
    receipts["refused_refs"] = refused
    return merged, receipts


def _refuse_refs(q: Path) -> dict[str, str]:
    """The refs beside ``main`` that the fetched copy ``q`` holds and no copy takes whole (not a commit, not a
    notes tree, not a log: :func:`ledger.audit.refs.shape`), each → why; each is dropped from the quarantine,
    so nothing after reads it, and the rest (``main`` first) is taken as it would be without it."""
    from ledger.audit.refs import shape

    out: dict[str, str] = {}
    with gs.GitStore(q) as qs:
        for ref in PUBLISHED:
            commit = qs.read_ref(ref) if ref != BRANCH else None
            why = shape(qs, ref, commit) if commit is not None else None
            if why is not None:
                out[ref] = why
    for ref in out:
        Git(q).run("update-ref", "-d", ref, what="setting a refused ref aside")
    return out


def _checked_log(store: gs.GitStore, q: Path, remote: str, refused: dict[str, str]) -> bytes | None:
    """:func:`ledger.remotes.epochrefs.check_log`, a refusal recorded in ``refused`` (and the fetched log set
    aside) rather than raised: the log stays where it is on both sides, and the rest is taken."""
    from ledger.remotes import epochrefs

    try:
        return epochrefs.check_log(store, q, remote)
    except StoreError as exc:
        refused[EPOCHS_REF] = exc.message
        Git(q).run("update-ref", "-d", EPOCHS_REF, what="setting a refused ref aside")
        return None


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
    Git(store.git_dir).fetch(str(q), f"+{NOTES_REF}:{INCOMING_NOTES}", what="taking the fetched receipts")
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
        Git(store.git_dir).run("update-ref", "-d", INCOMING_NOTES, what="cleaning up")
    return counts


def _chain_of(brain: Brain) -> tuple[int | None, Any]:
    """This brain's agent id and chain settings, for checking epoch receipts on arrival (None, None without)."""
    from ledger.chain.config import ChainConfig

    doc = brain.config.get("chain") or {}
    if not doc.get("registry"):
        return None, None
    cfg = ChainConfig.of(brain)
    return cfg.agent_id, cfg


def _positions(store: gs.GitStore, q: Path) -> dict[str, tuple[int, bytes]]:
    """Each anchored snapshot commit of the fetched lineage (hex) → its position and root, for receipts."""
    head = (q / "refs" / "heads" / "main").read_text().strip()
    commits = (
        Git(q)
        .run("rev-list", "--first-parent", "--reverse", head, timeout=WHOLE, what="reading the fetched lineage")
        .decode()
        .split()
    )
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
        events = {ev["seq"]: ev for ev in reg.lineage(cfg.agent_id or 0, cfg.deploy_block)}
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
            claimed = (
                note["root"],
                note["tx"],
                note["block"],
                note["block_hash"],
                note["log_index"],
                note["committer"].lower(),
            )
            actual = (
                format_root(ev["root"]),
                ev["tx"],
                ev["block"],
                ev["block_hash"],
                ev["log_index"],
                ev["committer"].lower(),
            )
            out[commit] = "ok" if claimed == actual else f"does not match the registry's event seq {note['seq']}"
    return out


def clone(remote: str, dest: str | Path, report: dict[str, str] | None = None) -> Brain:
    """A new brain at ``dest`` holding ``remote``'s snapshots and receipts, audited before it is used.

    A ref beside ``main`` that no copy takes whole is left behind; ``report`` (when given) gets each one → why."""
    from ledger.remotes import epochrefs

    root = Path(os.path.abspath(dest))
    if root.exists() and any(root.iterdir()):
        raise LedgerError(f"{root} is not an empty directory", hint="clone into a new directory")
    created = not root.exists()
    try:
        Brain.create_empty(root)
        with fetched(remote) as q:
            refused = _refuse_refs(q)  # a bad ref beside main is refused whole, named, and main still taken
            _audited(q, remote)
            git_dir = gs.GitStore(root).git_dir
            notes = [_CLONE_NOTES] if (q / NOTES_REF).exists() else []
            with gs.GitStore(root) as store:
                log = _checked_log(store, q, remote, refused)  # a clone has no log: a malformed one is refused
                Git(git_dir).fetch(str(q), *_FETCH[:1], *notes, what="taking the fetched snapshots")
                epochs = epochrefs.take_receipts(store, q, None)
                if epochs and epochs["refused"]:
                    raise StoreError(
                        f"what {remote!r} holds fails the audit, so nothing was cloned from it: "
                        "epoch receipts that do not hold up:" + "".join(f"\n  {why}" for why in epochs["refused"]),
                        hint=f"run 'ledger audit {remote}' with --rpc for the full report",
                    )
                if log is not None:
                    epochrefs.take_log(store, q, log)
        brain = Brain(root)
        brain.checkout_all()
        if report is not None:
            report.update(refused)
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
