"""Audit a brain's lineage from public material: a git clone, and optionally the chain.

Checks, each reported OK or FAIL with the first divergence pinpointed:

- ``snapshots``  every snapshot's root, recomputed from git objects, equals its trailer;
- ``lineage``    every trailer parent equals the previous snapshot's root;
- ``trailers``   every message is exactly what the ledger writes for its fields (no trailer added,
                 dropped or rewritten), and each operation records the changes it can make;
- ``versions``   per-skill versions go 1, 2, 3… with deletes recorded, and every change is declared;
- ``skills``     every skill a snapshot writes is valid;
- ``signatures`` every signature recovers to a key the brain trusted, in the role its actor claims,
                 and key changes follow the trust rules (``ledger.audit.signatures``);
- ``receipts``   every chain receipt note is well formed, sits on a snapshot, and records that
                 snapshot's root and position (seq); what needs the chain is ``chain.receipts``;
- ``refs``       every ref beside ``main`` under the ledger's namespaces is one a peer takes whole
                 (``ledger.audit.refs``: what the guard and every peer check as they take it);
- ``worktree``   (brains only) the working tree equals the head snapshot;
- ``chain.*``    the registry's events form an unbroken lineage equal to the snapshots, the head is a
                 snapshot, receipts are still canonical, committers were authorized, and each
                 anchored evidence log is one a snapshot of that head records;
- ``fsck``       ``git fsck`` of the store.

Subtree digests are cached by git tree id (itself content-addressed), so a long
lineage costs about one changed skill per snapshot, not snapshots × skills.

Over 400 lines: every store-side check of docs/lineage.md §10, in the order the
document gives them, so each check reads beside its rule.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ledger.audit.evidencecheck import check_evidence
from ledger.audit.gitsigs import check_siblings
from ledger.audit.refs import check_refs
from ledger.audit.signatures import check_signatures
from ledger.audit.supplycheck import check_supply
from ledger.audit.verdicts import Check, Report
from ledger.audit.walk import Walked, walk
from ledger.bundle.merkle import DirNode, file_entries, format_root, read_tree
from ledger.chain.receipts import read_notes
from ledger.errors import AuditError, LedgerError, StoreError
from ledger.protocol.receipts import note_problems, parse_note, positions
from ledger.protocol.refs import NOTES_REF, REPLACE, UNVERIFIED_REF
from ledger.signatures.siblings import SIBLING_TRAILER
from ledger.signatures.trust import check_address
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.git import WHOLE, Git
from ledger.store.packing import no_repack
from ledger.store.skilltree import skills_of

__all__ = ["Check", "Report", "audit_repo"]

CHECKS = (
    "snapshots",
    "lineage",
    "trailers",
    "signatures",
    "versions",
    "skills",
    "supply",
    "evidence",
    "receipts",
    "refs",
    "worktree",
    "chain.code",
    "chain.events",
    "chain.roots",
    "chain.head",
    "chain.receipts",
    "chain.epochs",
    "chain.committers",
    "chain.signers",
    "chain.evidence",
    "fsck",
)

# What each chain check verifies, said on its SKIP line when an audit is given no chain.
CHAIN_CHECKS = {
    "chain.code": "registry code = a BrainRegistry this ledger knows (docs/lineage.md, 'The registry's code')",
    "chain.events": "registry events unbroken (docs/lineage.md, 'The anchoring rule', rules 1 and 2)",
    "chain.roots": "on-chain roots = snapshots (docs/lineage.md, 'The anchoring rule', rule 3)",
    "chain.head": "registry head = last root (docs/lineage.md, 'The anchoring rule', rule 4)",
    "chain.receipts": "receipts vs the chain's events (docs/lineage.md, 'Checks against the chain')",
    "chain.epochs": "epoch receipts vs the chain and the operator's log",
    "chain.committers": "committers vs CommitterSet (docs/lineage.md, 'The anchoring rule', rule 5)",
    "chain.signers": "agent keys vs CommitterSet (docs/lineage.md, 'Against the chain')",
    "chain.evidence": "anchored evidence logs vs the snapshots' (docs/lineage.md, 'Audit rules (check evidence)')",
}
NO_RPC = ("no --rpc", "pass --rpc URL --registry ADDR --agent ID")


def audit_repo(
    repo: str | Path,
    *,
    rpc: str | None = None,
    registry: str | None = None,
    agent: int | None = None,
    worktree: bool = False,
    from_block: int = 0,
    progress: Callable[[int, int], None] | None = None,
    require_signatures: bool = False,
    founder: str | None = None,
    since: tuple[bytes, ...] = (),
    without_chain: tuple[str, str] = NO_RPC,
    tip: bytes | None = None,
    epoch_logs: Mapping[str, str] | None = None,
) -> Report:
    """Audit the git store at ``repo`` (a brain, a clone, or a bare repository).

    ``require_signatures`` fails unsigned snapshots, which are otherwise a warning; ``founder`` pins
    the user key that founded the trust set (lineage.md §8.6: otherwise trusted on first use).
    ``since`` (commits this copy already holds and trusts) audits only what is new beyond them, as a
    pull or sync does: the store-side rules, signatures included; not receipts, the worktree or fsck.
    Without ``rpc``, each ``chain.*`` check is a SKIP saying why and how to run it: ``without_chain``
    (the reason, what to pass), so that OK never stands for a check not made.  ``tip`` audits from
    that commit instead of ``main`` (a push a guarded remote has not taken yet; with ``since`` only).
    ``epoch_logs`` (operator address → location) says where an operator's epoch log is published when no
    epoch receipt here names it (lineage/epochs.md §7).
    """
    path = Path(repo)
    try:
        store = gs.GitStore(path)
    except StoreError as exc:
        raise AuditError(f"{path} is not a git repository", hint="pass a brain or a clone of one") from exc
    if founder is not None:
        founder = check_address(founder)
    report = Report(repo=str(path.absolute()))
    report.context = _context()
    try:
        walked = walk(store, report, progress, since, tip)
        snaps = walked.mainline
        signed = check_signatures(store, walked, report, require_signatures, founder)
        check_siblings(store, walked, report, signed)
        _skip_siblings_unless_certified(walked, report)
        check_supply(store, walked, report, signed)
        report.evidence = check_evidence(store, walked, report)
        if since:
            return report  # what is new since a trusted head: its receipts are checked as they are taken
        _check_receipts(store, snaps, report)
        check_refs(store, bytes.fromhex(snaps[-1].commit) if snaps else None, report)  # what every peer refuses
        if worktree:
            _check_worktree(path, store, snaps, report)
        if rpc is not None:
            if registry is None or agent is None:
                raise AuditError("--rpc needs --registry and --agent")
            from ledger.audit.chain import check_chain

            if not check_chain(store, snaps, report, rpc, registry, agent, from_block, signed, epoch_logs):
                for name, what in CHAIN_CHECKS.items():  # an unknown contract's answers prove nothing
                    if name != "chain.code":
                        report.check(name).skip(
                            f"not checked, the registry's code is not one this ledger knows: {what}"
                        )
        else:
            _skip_chain(report, *without_chain)
        _check_fsck(path, report)
    finally:
        store.close()
    for name in CHECKS:
        if name in report.checks and report.checks[name].ok and not report.checks[name].summary:
            report.checks[name].summary = "ok"
    return report


def _skip_siblings_unless_certified(walked: Walked, report: Report) -> None:
    """``siblings`` is SKIP, not OK, when no snapshot certifies siblings (unsigned, or signed before v1.5):
    §10, a check with nothing to check never says OK."""
    chk = report.check("siblings")
    if chk.ok and not any(snap.trailers.get(SIBLING_TRAILER) for snap in walked.order):
        chk.skip("no snapshot carries Ledger-Sibling trailers (unsigned, or signed before v1.5): nothing to check")


def _skip_chain(report: Report, reason: str, how: str) -> None:
    report.chain_skipped = reason
    for name, what in CHAIN_CHECKS.items():
        report.check(name).skip(f"not checked, {reason}: {what}; {how}")


# --------------------------------------------------------------------------- receipts


def _check_receipts(store: gs.GitStore, snaps: list[gs.Snapshot], report: Report) -> None:
    """What can be checked of the receipts without a chain: each note, against its snapshot."""
    chk = report.check("receipts")
    position = positions(snaps)
    at = {s.commit: i for i, s in enumerate(snaps)}
    count = 0
    for ref, kind in ((NOTES_REF, "receipt"), (UNVERIFIED_REF, "unverified receipt")):
        try:
            notes = read_notes(store, ref)
        except (StoreError, ValueError, IndexError) as exc:
            chk.fail(f"the notes ref {ref} cannot be read: {exc}")
            continue
        for commit, data in sorted(notes.items()):
            count += 1
            note, why = parse_note(data)
            problems = [f"note {why}"] if note is None else note_problems(note, commit, position)
            if problems:
                index = at.get(commit)
                label = f"{kind} of snapshot {commit[:12]}" + (f" (#{index})" if index is not None else "")
                chk.fail(f"{label}: {'; '.join(problems)}", snapshot=commit, index=index)
    if not count:
        chk.skip("no receipts in this repository (fetch refs/notes/ledger-chain to check them)")
    elif chk.ok:
        chk.summary = (
            f"{count} receipt(s) sit on their snapshots with the snapshot's root and chain sequence; "
            "their blocks, transactions and committers need --rpc (chain.receipts)"
        )


def _context() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        tool = version("brain-ledger")
    except PackageNotFoundError:
        tool = "unknown"
    return {"audited_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "ledger_version": tool}


# --------------------------------------------------------------------------- worktree, fsck


def _check_worktree(path: Path, store: gs.GitStore, snaps: list[gs.Snapshot], report: Report) -> None:
    """The working tree hashed by the bundle rules, against the head snapshot's root, recomputed here
    from git objects: the audit shares no code path with the brain that wrote the tree."""
    chk = report.check("worktree")
    skills_dir = path / "skills"
    head = snaps[-1] if snaps else None
    if head is None:
        chk.fail("the working tree cannot be compared: there is no snapshot")
        return
    try:
        disk = read_tree(skills_dir) if skills_dir.exists() else DirNode({})
        skills = skills_of(store, bytes.fromhex(head.tree))[1] if head.tree else {}
    except LedgerError as exc:
        chk.fail(f"the working tree cannot be compared: {exc.message}")
        return
    if disk.digest == head.root:
        chk.summary = "the working tree equals the head snapshot"
        return
    cache = th.DigestCache(None)
    changes: dict[str, str] = {}
    for name in sorted(set(disk.names) | set(skills), key=str.encode):
        node = disk.entries.get(name)
        if node is not None and name in skills and node.digest == th.tree_digest(store, skills[name], cache, name):
            continue
        old = {
            f"{name}/{rel}": (gs.kind_of_mode(mode, rel), th.blob_digest(store, sha, cache))
            for rel, (mode, sha) in th.files_of(store, skills.get(name)).items()
        }
        new = file_entries(node, name)
        for p in sorted(set(old) | set(new)):
            if old.get(p) != new.get(p):
                changes[p] = "deleted" if p not in new else "new" if p not in old else "modified"
    first = next(iter(changes), "skills")
    shown = list(changes.items())[:10]  # a whole import left unrecorded is 10,000 paths: 'ledger status' lists them
    listing = ", ".join(f"{what} skills/{p}" for p, what in shown)
    if len(changes) > len(shown):
        listing += f", and {len(changes) - len(shown)} more (see 'ledger status')"
    chk.fail(
        f"the working tree differs from the head snapshot: {listing}",
        path=first,
        expected=format_root(head.root),
        computed=format_root(disk.digest),
        snapshot=head.commit,
    )


def _check_fsck(path: Path, report: Report) -> None:
    chk = report.check("fsck")
    git = Git(None, error=AuditError)
    replaced = git.call("-C", str(path), "for-each-ref", "--format=%(refname)", REPLACE).stdout.decode().split()
    if replaced:
        chk.fail(f"{len(replaced)} replace ref(s) make git show substituted objects: {replaced[0]}", path=replaced[0])
    grafts = git.call("-C", str(path), "rev-parse", "--git-path", "info/grafts").stdout.decode().strip()
    if grafts and (path / grafts if not Path(grafts).is_absolute() else Path(grafts)).is_file():
        chk.fail(
            "info/grafts rewrites parents for git's own history commands (see docs/lineage.md, 'The store')",
            path=grafts,
        )
    control = path / ".ledger"  # a brain (not a clone): its background packer must not repack under fsck
    with no_repack(control) if (control / "config.json").is_file() else contextlib.nullcontext():
        proc = git.call("-C", str(path), "fsck", "--no-dangling", "--no-progress", timeout=WHOLE)
    stdout, stderr = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    # fsck exits 0 on warnings such as hasDotgit ("contains '.git'"); for a ledger they are failures.
    warnings = [ln for ln in (stderr + stdout).splitlines() if ln.startswith(("warning", "error"))]
    if proc.returncode != 0 or warnings:
        first = warnings or (stderr or stdout).strip().splitlines()
        chk.fail("git fsck: " + (first[0] if first else f"exit {proc.returncode}"))
    elif chk.ok:
        chk.summary = "git fsck found no problems"
