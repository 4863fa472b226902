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
- ``worktree``   (brains only) the working tree equals the head snapshot;
- ``chain.*``    the registry's events form an unbroken lineage equal to the snapshots, the head is a
                 snapshot, receipts are still canonical, committers were authorized;
- ``fsck``       ``git fsck`` of the store.

Subtree digests are cached by git tree id (itself content-addressed), so a long
lineage costs about one changed skill per snapshot, not snapshots × skills.

Over 400 lines: every store-side check of docs/lineage.md §10, in the order the
document gives them, so each check reads beside its rule.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ledger._env import child_env
from ledger.audit.signatures import check_signatures
from ledger.audit.verdicts import Check, Report
from ledger.bundle.merkle import DirNode, RootIndex, file_entries, format_root, read_tree
from ledger.bundle.skill import SKILL_MD, check_support_path, parse_skill_md
from ledger.chain.receipts import NOTES_REF, UNVERIFIED_REF, note_problems, parse_note, positions, read_notes
from ledger.errors import AuditError, LedgerError, StoreError
from ledger.signatures.trust import check_address
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.gitstore import blob_id
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
    "receipts",
    "worktree",
    "chain.events",
    "chain.roots",
    "chain.head",
    "chain.receipts",
    "chain.committers",
    "chain.signers",
    "fsck",
)


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
) -> Report:
    """Audit the git store at ``repo`` (a brain, a clone, or a bare repository).

    ``require_signatures`` fails unsigned snapshots, which are otherwise a warning; ``founder`` pins
    the user key that founded the trust set (lineage.md §8.6: otherwise trusted on first use).
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
        snaps = _walk(store, report, progress)
        signed = check_signatures(store, snaps, report, require_signatures, founder)
        _check_receipts(store, snaps, report)
        if worktree:
            _check_worktree(path, store, snaps, report)
        if rpc is not None:
            if registry is None or agent is None:
                raise AuditError("--rpc needs --registry and --agent")
            from ledger.audit.chain import check_chain

            check_chain(store, snaps, report, rpc, registry, agent, from_block, signed)
        _check_fsck(path, report)
    finally:
        store.close()
    for name in CHECKS:
        if name in report.checks and report.checks[name].ok and not report.checks[name].summary:
            report.checks[name].summary = "ok"
    return report


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
        chk.summary = (f"{count} receipt(s) sit on their snapshots with the snapshot's root and seq; "
                       "their blocks, transactions and committers need --rpc (chain.receipts)")  # fmt: skip


# --------------------------------------------------------------------------- snapshots


def _head(store: gs.GitStore) -> bytes:
    head = store.head() or store.read_ref("refs/remotes/origin/main")
    if head is None:
        raise AuditError("the repository has no 'main' branch of snapshots")
    return head


def _walk(store: gs.GitStore, report: Report, progress: Callable[[int, int], None] | None) -> list[gs.Snapshot]:
    chain: list[bytes] = []
    commit: bytes | None = _head(store)
    while commit is not None:  # first-parent history, newest first
        chain.append(commit)
        raw = store.read(commit, b"commit")
        parent = next((ln[7:] for ln in raw.split(b"\n\n", 1)[0].split(b"\n") if ln.startswith(b"parent ")), None)
        commit = bytes.fromhex(parent.decode()) if parent else None
    chain.reverse()
    cache = th.DigestCache(None)
    index = RootIndex({})
    snaps_chk, lineage_chk, versions_chk, skills_chk = (
        report.check(n) for n in ("snapshots", "lineage", "versions", "skills")
    )
    live: dict[str, int] = {}
    retired: dict[str, int] = {}  # each deleted name's last version: a new one must start above it
    prev_entries: dict[str, bytes] = {}
    memo: dict[bytes, dict[str, bytes]] = {}  # fan-out bucket listings by tree id (ledger.store.skilltree)
    prev_root: bytes | None = None
    counted_in_store: bool | None = None  # lineage.md §4.2: a versions record from snapshot 0, or an empty brain, on
    attributed = False  # once snapshots record their actor, every later one must
    snaps: list[gs.Snapshot] = []
    for i, commit in enumerate(chain):
        where = {"snapshot": commit.hex(), "index": i}
        try:
            snap = store.snapshot(commit)
        except StoreError as exc:
            snaps_chk.fail(f"snapshot #{i} ({commit.hex()[:12]}) is not a ledger snapshot: {exc.message}", **where)
            continue
        snaps.append(snap)
        label = f"snapshot #{i} ({commit.hex()[:12]}, {_describe(snap)})"
        stray = _stray_entries(store, snap, report.tops)
        if stray:
            snaps_chk.fail(f"{label}: its tree holds {stray}, which a snapshot may not (docs/lineage.md §1.2)",
                           path=stray, **where)  # fmt: skip
        computed: bytes | None = None
        entries: dict[str, bytes] = {}
        try:
            entries = skills_of(store, bytes.fromhex(snap.tree), memo)[1]
            changed = sorted(n for n in set(entries) | set(prev_entries) if entries.get(n) != prev_entries.get(n))
            # Only what changed since the previous snapshot is hashed: subtree digests are cached
            # by git tree id, and the root's Merkle levels are updated along changed paths only.
            index.update({n: th.tree_digest(store, entries[n], cache, n) if n in entries else None for n in changed})
            computed = index.root
        except LedgerError as exc:
            snaps_chk.fail(f"{label}: its tree cannot be hashed: {exc.message}", **where)
            # The listing (if it was read) still serves the version and skill checks; the next
            # snapshot is hashed from scratch.
            index = RootIndex({})
            changed = sorted(n for n in set(entries) | set(prev_entries) if entries.get(n) != prev_entries.get(n))
            prev_for_next: dict[str, bytes] = {}
        else:
            prev_for_next = entries
        declared = {c.skill for c in snap.changes}
        if computed is not None and computed != snap.root:
            path = _divergent_path(store, entries, prev_entries, changed, declared)
            snaps_chk.fail(
                f"{label}: the tree hashes to {format_root(computed)}, not the recorded root",
                path=path,
                expected=format_root(snap.root),
                computed=format_root(computed),
                **where,
            )
        if len(snap.parents) > 1 or (i == 0) != (not snap.parents):
            lineage_chk.fail(
                f"{label}: has {len(snap.parents)} parent commit(s); a lineage is one parent per snapshot "
                "back to a parentless genesis (merges are not part of protocol v1, docs/lineage.md)",
                computed=" ".join(snap.parents) or "none",
                **where,
            )
        if snap.parent_root != prev_root:
            lineage_chk.fail(
                f"{label}: parent root is not the previous snapshot's root "
                "(a snapshot was dropped, reordered or inserted)",
                expected=format_root(prev_root) if prev_root else "none",
                computed=format_root(snap.parent_root) if snap.parent_root else "none",
                **where,
            )
        _check_trailers(snap, i, label, report.check("trailers"), where)
        if "actor" in snap.attribution:
            attributed = True
        elif attributed:
            report.check("trailers").fail(f"{label}: no Ledger-Actor trailer after snapshots that record one", **where)
        in_store = "versions" in report.tops.get(snap.commit, {})
        if counted_in_store is not None and in_store != counted_in_store and (
            not in_store or live or retired
        ):  # the record appears only in snapshot 0 or on an empty brain, and never goes away
            versions_chk.fail(
                f"{label}: its tree {'adds' if in_store else 'drops'} the 'versions' record "
                "(where versions live is fixed once a brain holds skills, docs/lineage.md §4.2)",
                path="versions", **where,
            )  # fmt: skip
        counted_in_store = in_store
        _check_versions(store, snap, label, entries, changed, declared, live, versions_chk, skills_chk, where, report,
                        in_store)  # fmt: skip
        _check_retired(store, snap, label, live, retired, versions_chk, where)
        if in_store:
            _check_versions_record(store, report.tops[snap.commit]["versions"], label, live, versions_chk, where)
        report.timeline.append(
            {
                "index": i,
                "commit": snap.commit,
                "operation": snap.operation,
                "changes": [asdict(c) for c in snap.changes],
                "root": format_root(snap.root),
                "timestamp": snap.timestamp,
                "ok": computed == snap.root and snap.parent_root == prev_root,
                "chain": None,
            }
        )
        prev_entries, prev_root = prev_for_next, snap.root
        if progress is not None and (i % 50 == 0 or i == len(chain) - 1):
            progress(i + 1, len(chain))
    n = len(chain)
    if snaps_chk.ok:
        snaps_chk.summary = f"{n} snapshot(s) recompute to their recorded roots"
    if lineage_chk.ok:
        lineage_chk.summary = f"{n} parent root(s) chain back to genesis"
    if versions_chk.ok:
        versions_chk.summary = f"{len(report.skills)} skill(s), versions consecutive, every change declared"
    if skills_chk.ok:
        skills_chk.summary = "every written skill is valid"
    return snaps


_TOP = {
    "skills": gs.MODE_DIR, "categories": gs.MODE_DIR, "retired": gs.MODE_FILE, "layout": gs.MODE_FILE,
    "keys": gs.MODE_FILE, "versions": gs.MODE_FILE,
}  # fmt: skip


def _stray_entries(store: gs.GitStore, snap: gs.Snapshot, tops: dict[str, dict[str, bytes]]) -> str | None:
    """The first entry of a snapshot's top tree that lineage.md §1.2 does not allow, with its mode.
    Each snapshot's record blobs are kept in ``tops`` for the checks that read them next."""
    if not snap.tree:
        return None
    entries = store.read_tree(bytes.fromhex(snap.tree))
    tops[snap.commit] = {name: sha for sha, mode, name in entries if mode == gs.MODE_FILE}
    for _sha, mode, name in entries:
        if _TOP.get(name) != mode:
            return f"'{name}' (mode {mode:o})"
    return None


def _check_trailers(snap: gs.Snapshot, i: int, label: str, chk: Check, where: dict[str, Any]) -> None:
    allowed = gs.OPERATIONS.get(snap.operation)
    actions = [c.action for c in snap.changes]
    if allowed is None:
        chk.fail(f"{label}: unknown operation {snap.operation!r}", computed=snap.operation, **where)
    elif (i == 0) != (snap.operation == "init"):
        chk.fail(f"{label}: 'init' must be the first snapshot and only the first", computed=snap.operation, **where)
    elif not _count_ok(snap.operation, len(actions)):
        chk.fail(f"{label}: operation {snap.operation!r} records {len(actions)} change(s)", **where)
    elif any(a not in allowed for a in actions):
        chk.fail(f"{label}: operation {snap.operation!r} cannot {'/'.join(sorted(set(actions)))} a skill", **where)
    elif (canonical := _canonical(snap)) != snap.message:
        chk.fail(
            f"{label}: the commit message is not the one its fields produce "
            "(a trailer was added, dropped or rewritten)",
            expected=canonical,
            computed=snap.message,
            **where,
        )
    if chk.ok:
        chk.summary = "every message is canonical for its fields"


def _canonical(snap: gs.Snapshot) -> str:
    try:
        return gs.canonical_message(snap)
    except LedgerError as exc:
        return f"(no canonical form: {exc.message})"


def _count_ok(operation: str, count: int) -> bool:
    if operation in ("init", "adopt", "keys", "move"):
        return count == 0
    if operation == "import":
        return count >= 0  # an import may change only category files
    if operation in ("apply", "sync"):
        return count >= 1
    return count >= 1 if operation == "snapshot" else count == 1


def _context() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        tool = version("brain-ledger")
    except PackageNotFoundError:
        tool = "unknown"
    return {"audited_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "ledger_version": tool}


def _describe(snap: gs.Snapshot) -> str:
    if snap.skill is not None:
        return f"{snap.operation} {snap.skill} v{snap.version}"
    return f"{snap.operation}, {len(snap.changes)} change(s)"


def _divergent_path(
    store: gs.GitStore, entries: dict[str, bytes], prev: dict[str, bytes], changed: list[str], declared: set[str]
) -> str | None:
    """Name the file most likely tampered with: an undeclared change first, else a declared one."""
    suspects = [n for n in changed if n not in declared] or [n for n in changed if n in declared]
    first: str | None = None
    for name in suspects:
        new = th.files_of(store, entries.get(name))
        old = th.files_of(store, prev.get(name))
        for rel in sorted(set(new) | set(old)):
            if new.get(rel) == old.get(rel):
                continue
            if rel in new and not _object_intact(store, new[rel][1]):
                return f"{name}/{rel}"  # git serves other bytes than the id names: a replace ref or corruption
            first = first or f"{name}/{rel}"
        first = first or name
    return first


def _object_intact(store: gs.GitStore, blob: bytes) -> bool:
    data = store.read(blob, b"blob")
    return blob_id(data) == blob


def _check_versions(
    store: gs.GitStore,
    snap: gs.Snapshot,
    label: str,
    entries: dict[str, bytes],
    changed: list[str],
    declared: set[str],
    live: dict[str, int],
    versions_chk: Check,
    skills_chk: Check,
    where: dict[str, Any],
    report: Report,
    in_store: bool = False,
) -> None:
    for name in changed:
        if name not in declared:
            versions_chk.fail(f"{label}: skill {name!r} changed without a declared change", path=name, **where)
    for change in snap.changes:
        name, version = change.skill, change.version
        history = report.skills.setdefault(name, [])
        history.append({"version": version, "action": change.action, "commit": snap.commit, "index": where["index"]})
        if change.action == "delete":
            if live.get(name) != version:
                versions_chk.fail(
                    f"{label}: deletes {name!r} v{version}, but the live version is {live.get(name)}",
                    path=name,
                    expected=str(live.get(name)),
                    computed=str(version),
                    **where,
                )
            if name in entries:
                versions_chk.fail(f"{label}: declares {name!r} deleted but it is still in the tree", path=name, **where)
            live.pop(name, None)
            continue
        # A create starts at 1, or at the whole-number version the imported file brought
        # (_check_retired holds it above any version a deleted skill of that name had).
        want = max(version, 1) if change.action == "create" else (live.get(name, 0) + 1)
        if change.action == "create" and name in live:
            versions_chk.fail(f"{label}: creates {name!r}, which already exists", path=name, **where)
        if change.action == "update" and name not in live:
            versions_chk.fail(f"{label}: updates {name!r}, which does not exist", path=name, **where)
        if version != want:
            versions_chk.fail(
                f"{label}: {name!r} goes to v{version}, expected v{want}",
                path=name,
                expected=str(want),
                computed=str(version),
                **where,
            )
        live[name] = version
        _check_skill(store, entries.get(name), name, None if in_store else version, label, skills_chk, where)


def _check_retired(
    store: gs.GitStore,
    snap: gs.Snapshot,
    label: str,
    live: dict[str, int],
    retired: dict[str, int],
    chk: Check,
    where: dict[str, Any],
) -> None:
    """Versions never repeat: a recreated name starts above its last version, and the record says so."""
    for change in snap.changes:
        if change.action == "delete":
            retired[change.skill] = max(retired.get(change.skill, 0), change.version)
        elif change.action == "create" and change.version <= retired.get(change.skill, 0):
            chk.fail(
                f"{label}: recreates {change.skill!r} at v{change.version}, a version it had before its deletion",
                path=change.skill,
                expected=f">{retired[change.skill]}",
                computed=str(change.version),
                **where,
            )
    try:
        recorded = store.retired(bytes.fromhex(snap.tree))[1]
    except LedgerError as exc:
        chk.fail(f"{label}: {exc.message}", **where)
        return
    if recorded != retired:
        chk.fail(f"{label}: its 'retired' record does not list the last version of every deleted skill", **where)


def _check_versions_record(
    store: gs.GitStore, blob: bytes, label: str, live: dict[str, int], chk: Check, where: dict[str, Any]
) -> None:
    """A brain that keeps versions in the store: its ``versions`` record is exactly the live skills' versions."""
    try:
        recorded = gs.parse_record(store.read(blob, b"blob"), "versions")
    except LedgerError as exc:
        chk.fail(f"{label}: {exc.message}", path="versions", **where)
        return
    if recorded != live:
        wrong = sorted(n for n in set(recorded) | set(live) if recorded.get(n) != live.get(n))
        chk.fail(
            f"{label}: its 'versions' record does not give every live skill's version (first: {wrong[0]!r})",
            path="versions", expected=str(live.get(wrong[0])), computed=str(recorded.get(wrong[0])), **where,
        )  # fmt: skip


def _check_skill(
    store: gs.GitStore, tree: bytes | None, name: str, version: int | None, label: str, chk: Check,
    where: dict[str, Any],
) -> None:
    """A written skill is valid; where versions live in SKILL.md (``version`` given), it carries this one."""
    if tree is None:
        chk.fail(f"{label}: declares {name!r} written but it is not in the tree", path=name, **where)
        return
    try:
        files = th.files_of(store, tree)
        if SKILL_MD not in files:
            raise LedgerError(f"{name} has no {SKILL_MD}")
        for rel in files:
            if rel != SKILL_MD:
                try:
                    check_support_path(rel)
                except LedgerError as exc:  # name the very path, e.g. a .git component
                    chk.fail(f"{label}: skills/{name}/{rel}: {exc.message}", path=f"{name}/{rel}", **where)
        doc = parse_skill_md(store.read(files[SKILL_MD][1], b"blob").decode("utf-8"), limit=1 << 31)
        if version is not None and doc.version != version:
            raise LedgerError(f"{name}/{SKILL_MD} says version {doc.version}, the trailer says {version}")
    except (LedgerError, UnicodeDecodeError) as exc:
        msg = exc.message if isinstance(exc, LedgerError) else f"{name}/{SKILL_MD} is not UTF-8"
        chk.fail(f"{label}: invalid skill {name!r}: {msg}", path=name, **where)


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
        old = {f"{name}/{rel}": (gs.kind_of_mode(mode, rel), th.blob_digest(store, sha, cache))
               for rel, (mode, sha) in th.files_of(store, skills.get(name)).items()}  # fmt: skip
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


def _git(path: Path, *args: str, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=timeout,
                          env=child_env())  # fmt: skip


def _check_fsck(path: Path, report: Report) -> None:
    chk = report.check("fsck")
    replaced = _git(path, "for-each-ref", "--format=%(refname)", "refs/replace/").stdout.split()
    if replaced:
        chk.fail(f"{len(replaced)} replace ref(s) make git show substituted objects: {replaced[0]}", path=replaced[0])
    grafts = _git(path, "rev-parse", "--git-path", "info/grafts").stdout.strip()
    if grafts and (path / grafts if not Path(grafts).is_absolute() else Path(grafts)).is_file():
        chk.fail("info/grafts rewrites parents for git's own history commands (docs/lineage.md §1)", path=grafts)
    control = path / ".ledger"  # a brain (not a clone): its background packer must not repack under fsck
    with no_repack(control) if (control / "config.json").is_file() else contextlib.nullcontext():
        proc = _git(path, "fsck", "--no-dangling", "--no-progress", timeout=600)
    # fsck exits 0 on warnings such as hasDotgit ("contains '.git'"); for a ledger they are failures.
    warnings = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.startswith(("warning", "error"))]
    if proc.returncode != 0 or warnings:
        first = warnings or (proc.stderr or proc.stdout).strip().splitlines()
        chk.fail("git fsck: " + (first[0] if first else f"exit {proc.returncode}"))
    elif chk.ok:
        chk.summary = "git fsck found no problems"
