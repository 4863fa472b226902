"""The rules each snapshot is held to, one function per rule of docs/lineage.md.

:mod:`ledger.audit.walk` calls them in lineage order for every snapshot, with the state
its parents leave (live versions, deleted names); each failure is recorded on its check.
"""

from __future__ import annotations

from typing import Any

from ledger.audit.verdicts import Check, Report
from ledger.bundle.skill import SKILL_MD, check_support_path, parse_skill_md
from ledger.errors import LedgerError
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.gitstore import blob_id

_TOP = {
    "skills": gs.MODE_DIR,
    "categories": gs.MODE_DIR,
    "retired": gs.MODE_FILE,
    "layout": gs.MODE_FILE,
    "keys": gs.MODE_FILE,
    "versions": gs.MODE_FILE,
    "supply": gs.MODE_FILE,
    "evidence": gs.MODE_DIR,
}


def stray_entries(store: gs.GitStore, snap: gs.Snapshot, tops: dict[str, dict[str, bytes]]) -> str | None:
    """The first entry of a snapshot's top tree that lineage.md §1.2 does not allow, with its mode.
    Each snapshot's top entries (record blobs, trees) are kept in ``tops`` for the checks that read them next."""
    if not snap.tree:
        return None
    entries = store.read_tree(bytes.fromhex(snap.tree))
    tops[snap.commit] = {name: sha for sha, mode, name in entries}  # records, and the trees beside them
    for _sha, mode, name in entries:
        if _TOP.get(name) != mode:
            return f"'{name}' (mode {mode:o})"
    return None


def check_trailers(snap: gs.Snapshot, genesis: bool, label: str, chk: Check, where: dict[str, Any]) -> None:
    allowed = gs.OPERATIONS.get(snap.operation)
    actions = [c.action for c in snap.changes]
    if allowed is None:
        chk.fail(f"{label}: unknown operation {snap.operation!r}", computed=snap.operation, **where)
    elif genesis != (snap.operation == "init"):
        chk.fail(f"{label}: 'init' must be the first snapshot and only the first", computed=snap.operation, **where)
    elif not _count_ok(snap.operation, len(actions)):
        chk.fail(f"{label}: operation {snap.operation!r} records {len(actions)} change(s)", **where)
    elif (snap.operation == "merge") != (snap.merged() is not None):
        chk.fail(
            f"{label}: Ledger-Merge-Parent and Ledger-Merge-Root belong to a merge snapshot, and a merge "
            "needs both (see docs/lineage.md, 'Merges')",
            **where,
        )
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
    if operation in ("init", "adopt", "keys", "move", "approve", "revoke", "outcome"):
        return count == 0
    if operation in ("import", "merge", "sync"):
        return count >= 0  # an import or a sync may change only categories/; a merge may take nothing
    if operation in ("apply", "install"):
        return count >= 1
    return count >= 1 if operation == "snapshot" else count == 1


def describe(snap: gs.Snapshot) -> str:
    if snap.skill is not None:
        return f"{snap.operation} {snap.skill} v{snap.version}"
    return f"{snap.operation}, {len(snap.changes)} change(s)"


def divergent_path(
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


def check_versions(
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
        if snap.operation == "resolve" and version > live.get(name, 0):
            want = version  # a settled conflict goes after both sides' versions (docs/lineage.md §9.4)
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
        check_skill(store, entries.get(name), name, None if in_store else version, label, skills_chk, where)


def check_retired(
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


def check_versions_record(
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
            path="versions",
            expected=str(live.get(wrong[0])),
            computed=str(recorded.get(wrong[0])),
            **where,
        )


def check_skill(
    store: gs.GitStore,
    tree: bytes | None,
    name: str,
    version: int | None,
    label: str,
    chk: Check,
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


def check_merge_versions(
    store: gs.GitStore,
    snap: gs.Snapshot,
    label: str,
    entries: dict[str, bytes],
    first: Any,
    second: Any,
    versions_chk: Check,
    skills_chk: Check,
    where: dict[str, Any],
    report: Report,
    in_store: bool,
) -> None:
    """docs/lineage.md §9.3: each change of a merge takes the second parent's skill at its own version,
    or records one after every version either parent has had; ``first.live`` becomes the merge's."""
    live = first.live
    for change in snap.changes:
        name, version = change.skill, change.version
        report.skills.setdefault(name, []).append(
            {"version": version, "action": change.action, "commit": snap.commit, "index": where["index"]}
        )
        known = max(
            first.live.get(name, 0), first.retired.get(name, 0), second.live.get(name, 0), second.retired.get(name, 0)
        )
        taken = entries.get(name) == second.entries.get(name) and version == second.live.get(name)
        if change.action == "delete":
            ok = live.get(name) == version and name not in second.live and name not in entries
            why = f"deletes {name!r} v{version}, which is not the first parent's live version deleted on the second"
            live.pop(name, None) if ok else None
        else:
            fresh = version == known + 1
            above = version > max(first.live.get(name, 0), first.retired.get(name, 0))
            ok = (change.action == "create") == (name not in live) and (fresh or (taken and above))
            why = (
                f"{change.action}s {name!r} at v{version}: neither the second parent's skill at its version "
                f"nor v{known + 1}, after both parents"
            )
            if ok:
                live[name] = version
                check_skill(store, entries.get(name), name, None if in_store else version, label, skills_chk, where)
        if not ok:
            versions_chk.fail(f"{label}: {why}", path=name, computed=str(version), **where)


def merged_retired(first: dict[str, int], second: dict[str, int]) -> dict[str, int]:
    """A merge's ``retired`` record before its own deletes: each name's highest on either side."""
    out = dict(first)
    for name, version in second.items():
        out[name] = max(out.get(name, 0), version)
    return out
