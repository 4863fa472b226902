"""The ``supply`` check: each snapshot's supply record against its parents' (docs/lineage/supply.md §1).

Who may change what: an ``install`` adds or replaces the entries of the skills it writes (in
quarantine, unless auto-approved under a clean verdict in a user's or a curator's snapshot), and
the files it writes are the ones the entry pins (SKILL.md with the ledger's counter set aside, its
digests recomputed); an ``approve`` moves entries from quarantine to approved, signed by a user's
or a curator's key, with a reason where the verdict is critical; a ``revoke`` adds revocations and
marks the entries they name.  A delete drops its skill's entry, and nothing else touches the
record.  A ``merge``'s record is derived from its parents': nothing new enters through it.
Revocations never shrink and never change, a revoked digest's entry stays revoked, and no record
declares an older format than its parents'.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ledger.audit.signatures import Signed
from ledger.audit.verdicts import Report
from ledger.audit.walk import Walked
from ledger.bundle import frontmatter
from ledger.bundle.folderhash import folder_sha256
from ledger.bundle.skill import SKILL_MD
from ledger.errors import LedgerError
from ledger.store import gitstore as gs
from ledger.store import supply as sp
from ledger.store import treehash as th
from ledger.store.skilltree import skills_of

__all__ = ["check_supply"]

CLEAN = ("clean", "low")
APPROVERS = sp.APPROVERS  # the roles whose key may approve (rules 6 and 7)


def check_supply(store: gs.GitStore, walked: Walked, report: Report, signed: Sequence[Signed]) -> None:
    chk = report.check("supply")
    signers = {s.commit: s for s in signed}
    records: dict[str, sp.Supply | None] = {}
    blobs: dict[bytes, sp.Supply] = {}
    installed = 0
    for snap in walked.order:
        i = walked.index[snap.commit]
        where = {"snapshot": snap.commit, "index": i}
        label = f"snapshot #{i} ({snap.commit[:12]}, {snap.operation})"
        blob = report.tops.get(snap.commit, {}).get(sp.RECORD)
        try:
            now = _parse(store, blob, blobs) if blob is not None else None
        except LedgerError as exc:
            chk.fail(f"{label}: {exc.message}", path=sp.RECORD, **where)
            records[snap.commit] = None
            continue
        records[snap.commit] = now
        parents = [_parent(store, p, records, blobs) for p in snap.parents]
        try:
            problem = _rules(store, snap, parents, now, signers.get(snap.commit))
        except LedgerError as exc:  # a SKILL.md the rules cannot read is a failure of this snapshot, not a crash
            problem = exc.message
        if problem:
            chk.fail(f"{label}: {problem} (see docs/lineage.md, 'The supply record')", path=sp.RECORD, **where)
        if now is not None and snap.commit == walked.order[-1].commit:
            installed = len(now.skills)
            report.supply = [_credit(n, e) for n, e in sorted(now.skills.items())]
    if chk.ok:
        chk.summary = (
            f"{installed} skill(s) installed from elsewhere: pins, verdicts, approvals and revocations follow the rules"
            if any(records.values())
            else "no skill was installed from elsewhere"
        )


def _credit(name: str, entry: sp.Entry) -> dict[str, Any]:
    """What a report shows of an installed skill: whose it is, from where, and its standing."""
    return {
        "skill": name,
        "state": entry.state,
        "source": entry.source["url"],
        "type": entry.source["type"],
        "pin": entry.pin,
        "signer": entry.signer,
        "derived_from": entry.derived_from,
        "verdict": entry.verdict.get("worst"),
        "approved_by": (entry.approval or {}).get("by"),
    }


def _parse(store: gs.GitStore, blob: bytes, blobs: dict[bytes, sp.Supply]) -> sp.Supply:
    if blob not in blobs:
        blobs[blob] = sp.parse_record(store.read(blob, b"blob"))
    return blobs[blob]


def _parent(
    store: gs.GitStore, commit: str, records: dict[str, sp.Supply | None], blobs: dict[bytes, sp.Supply]
) -> sp.Supply | None:
    if commit not in records:  # outside an incremental audit: read as it stands
        sha, _ = store.supply_record(store.commit_info(bytes.fromhex(commit))[0])
        records[commit] = _parse(store, sha, blobs) if sha is not None else None
    return records[commit]


def _rules(
    store: gs.GitStore, snap: gs.Snapshot, parents: list[sp.Supply | None], now: sp.Supply | None, signer: Signed | None
) -> str | None:
    op = snap.operation
    before = (parents[0] if parents else None) or sp.Supply()
    after = now or sp.Supply()
    declared = [p.format for p in parents if p is not None]
    if now is not None and declared and now.format < max(declared):
        return (
            f"the record declares format {now.format}, older than its parent's {max(declared)}; a record never "
            "goes back to an older format (rule 1)"
        )
    problem = _revocations(before, after) if op != "merge" else _merged_revocations(parents, after)
    if problem:
        return problem
    for name, entry in sorted(after.skills.items()):
        if entry.state != sp.REVOKED and after.is_revoked(*entry.digests()):
            return f"{name}'s digest is revoked, but its entry is {entry.state} (rule 3)"
        if entry.state == sp.APPROVED and entry.blocking and not (entry.approval or {}).get("override"):
            return f"{name} is approved with a critical verdict and no override reason (rule 3)"
    if op == "merge":
        return _merge(store, snap, parents, after)
    deleted = {c.skill for c in snap.changes if c.action == "delete"}
    if op not in ("install", "approve", "revoke"):
        if max([*declared, after.format if now is not None else 1]) >= 2:  # v1.7: withheld entries stay
            problem, deleted = _withheld(snap, before, after, deleted)
            if problem:
                return problem
        if after != before.without(deleted):
            return f"operation {op!r} changes the supply record; only install, approve and revoke may (rule 5)"
        return None
    if set(after.revoked) != set(before.revoked) and op != "revoke":
        return f"operation {op!r} adds a revocation; only revoke may (rule 5)"
    if op == "install":
        return _install(store, snap, before, after, signer)
    changed = {n for n in set(before.skills) | set(after.skills) if before.skills.get(n) != after.skills.get(n)}
    if set(after.skills) != set(before.skills):
        return f"operation {op!r} adds or removes an entry (rule {7 if op == 'approve' else 8})"
    for name in sorted(changed):
        old, new = before.skills[name], after.skills[name]
        if op == "approve":
            if (
                old.state != sp.QUARANTINED
                or new.state != sp.APPROVED
                or _without(old, "state", "approval") != _without(new, "state", "approval")
            ):
                return (
                    f"the approval of {name} changes more than its state (or approves a skill not in quarantine) "
                    "(rule 7)"
                )
            role = signer.role if signer else snap.attribution.get("actor")
            if role not in APPROVERS:
                return (
                    f"{name} is approved by {'an' if role == 'agent' else 'a'} {role or 'unattributed'} "
                    "snapshot; approvals are a user's or a curator's (rule 7)"
                )
            if signer is not None and (new.approval or {}).get("by") != signer.address:
                return (
                    f"{name}'s approval names {(new.approval or {}).get('by') or 'no key'}, not its signer "
                    f"{signer.address} (rule 7)"
                )
        elif (
            new.state != sp.REVOKED
            or _without(old, "state") != _without(new, "state")
            or not after.is_revoked(*new.digests())
        ):
            return f"the revocation changes {name}'s entry beyond marking it revoked (rule 8)"
    if op == "approve" and not changed:
        return "an approve snapshot that approves nothing (rule 7)"
    if op == "revoke" and set(after.revoked) == set(before.revoked):
        return "a revoke snapshot that revokes nothing (rule 8)"
    return None


def _withheld(snap: gs.Snapshot, before: sp.Supply, after: sp.Supply, deleted: set[str]) -> tuple[str | None, set[str]]:
    """Rule 5 (v1.7, format 2): a withheld entry stays when its skill is deleted, and a skill the record
    holds an entry for comes back live only by install. Returns the failure, and the entries to drop."""
    for c in snap.changes:
        if c.action == "create" and c.skill in before.skills:
            return (
                f"{c.skill} comes back live by {snap.operation!r} while the record holds its entry "
                f"({before.skills[c.skill].state}); only install brings back a skill installed from elsewhere "
                "(rule 5)"
            ), deleted
    kept = {n for n in deleted if n in before.skills and before.skills[n].state in sp.WITHHELD}
    for name in sorted(kept):
        if name not in after.skills:
            return (
                f"the delete of {name} drops its {before.skills[name].state} entry; a withheld entry stays "
                "when its skill is deleted (rule 5)"
            ), deleted
    return None, deleted - kept


def _revocations(before: sp.Supply, after: sp.Supply) -> str | None:
    """Rule 2: every revocation of the parent is here, every field byte for byte."""
    for digest, why in sorted(before.revoked.items()):
        if digest not in after.revoked:
            return f"it drops the revocation of {digest} (rule 2)"
        if after.revoked[digest] != why:
            return _rewritten(digest, why, after.revoked[digest])
    return None


def _rewritten(digest: str, was: dict[str, Any], now: dict[str, Any]) -> str:
    field = next(k for k in sorted(set(was) | set(now)) if was.get(k) != now.get(k))

    def shown(value: Any) -> str:  # JSON, as the record holds it; absent when the member is missing
        return "absent" if value is None else json.dumps(value, sort_keys=True)

    return (
        f"it rewrites the revocation of {digest}: its {field} was {shown(was.get(field))}, "
        f"now {shown(now.get(field))}; "
        "a revocation never changes once written (rule 2)"
    )


def _merged_revocations(parents: list[sp.Supply | None], after: sp.Supply) -> str | None:
    """Rules 2 and 4a: a merge's revocations are its parents' together, each as one parent holds it."""
    sides = [p or sp.Supply() for p in parents]
    union = set().union(*(p.revoked for p in sides))
    for digest in sorted(union):
        held = [p.revoked[digest] for p in sides if digest in p.revoked]
        if digest not in after.revoked:
            return f"it drops the revocation of {digest} (rule 2)"
        if after.revoked[digest] not in held:
            return _rewritten(digest, held[0], after.revoked[digest])
    extra = sorted(set(after.revoked) - union)
    if extra:
        return f"it adds the revocation of {extra[0]}, which neither parent holds; a merge adds nothing (rule 4)"
    return None


def _merge(store: gs.GitStore, snap: gs.Snapshot, parents: list[sp.Supply | None], after: sp.Supply) -> str | None:
    """Rule 4: a merge's record is derived from its parents'; no approval, state or pin enters through it."""
    sides = [p or sp.Supply() for p in parents]
    for name, entry in sorted(after.skills.items()):
        held = [p.skills[name] for p in sides if name in p.skills]
        if entry in held:
            continue
        if (
            entry.state == sp.REVOKED
            and after.is_revoked(*entry.digests())
            and any(replace(h, state=sp.REVOKED) == entry for h in held)
        ):
            continue  # revoked by the other side's revocation (rule 3 required it)
        if not held:
            return f"{name} has an entry that neither parent holds; no install enters through a merge (rule 4)"
        return f"{name}'s entry is neither parent's: {_difference(held, entry)}; a merge changes no entry (rule 4)"
    if after.format < 2:
        return None  # v1.6 writers kept rules 4b–4c; the rest of rule 4 holds from format 2 on
    trees = [skills_of(store, store.commit_info(bytes.fromhex(p))[0])[1] for p in snap.parents]
    merged = skills_of(store, bytes.fromhex(snap.tree))[1]
    for name in sorted(set(merged) - set(after.skills)):
        had = [i for i, p in enumerate(sides) if name in p.skills]
        if had and not any(name not in p.skills and trees[i].get(name) == merged[name] for i, p in enumerate(sides)):
            state = sides[had[0]].skills[name].state
            return (
                f"it drops the entry of {name} ({state} in parent {had[0] + 1}) while {name} stays live with files "
                "that are not a parent's own skill; a merge keeps the entries of the skills it keeps (rule 4)"
            )
    return None


def _difference(held: list[sp.Entry], entry: sp.Entry) -> str:
    """What a merge's entry changes against the closest parent entry, in words."""
    base = held[0]
    if entry.state == sp.REVOKED and all(replace(h, state=sp.REVOKED) == entry for h in held):
        return "it is revoked, but neither parent revoked its digest (a revocation through a merge)"
    if entry.state != base.state and all(entry.state != h.state for h in held):
        return f"it is {entry.state}, but {' or '.join(sorted({h.state for h in held}))} in the parents" + (
            " (an approval through a merge)" if entry.state == sp.APPROVED else ""
        )
    if all(entry.pin != h.pin for h in held):
        return "its pin is new"
    keys = sorted(k for k, v in entry.to_json().items() if all(h.to_json().get(k) != v for h in held))
    return f"its {', '.join(keys) or 'fields'} differ"


def _install(
    store: gs.GitStore, snap: gs.Snapshot, before: sp.Supply, after: sp.Supply, signer: Signed | None
) -> str | None:
    written = {c.skill: c for c in snap.changes}
    for name in sorted(set(before.skills) | set(after.skills)):
        if name not in written and before.skills.get(name) != after.skills.get(name):
            return f"it changes the entry of {name}, which it does not install (rule 6)"
    top = bytes.fromhex(snap.tree)
    skills = skills_of(store, top)[1]
    counted = store.versions(top)[0] is None
    for name, change in sorted(written.items()):
        entry = after.skills.get(name)
        if entry is None:
            return f"it installs {name} without an entry (rule 6)"
        if entry.version != change.version:
            return f"{name}'s entry is for v{entry.version}, but the snapshot writes v{change.version} (rule 6)"
        if after.is_revoked(*entry.digests()):
            return f"it installs {name}, whose digest is revoked (rule 6)"
        if entry.approval is None and entry.state != sp.QUARANTINED:
            return f"{name} is installed {entry.state}, not quarantined (rule 6)"
        if entry.approval is not None:
            if not entry.approval.get("auto") or entry.verdict.get("worst") not in CLEAN or not entry.signer:
                return f"{name} is installed approved without a clean verdict from a signed source (rule 6)"
            role = signer.role if signer else snap.attribution.get("actor")
            if after.format >= 2 and role not in APPROVERS:  # a v1.6 writer auto-approved whoever installed
                return (
                    f"{name} is installed approved by {'an' if role == 'agent' else 'a'} {role or 'unattributed'} "
                    "snapshot; an install by an agent's or a verifier's key writes it quarantined: approvals, "
                    "auto-approvals included, are a user's or a curator's (rule 6)"
                )
            if signer is not None and entry.approval.get("by") != signer.address:
                return (
                    f"{name}'s approval names {entry.approval.get('by') or 'no key'}, not its signer "
                    f"{signer.address} (rule 6)"
                )
        if after.format >= 3 and "calibration" not in entry.verdict:
            return f"{name}'s verdict has no 'calibration'; an install writes it from format 3 on (rule 6)"
        if name not in skills:
            return f"it installs {name}, but its tree does not hold {name} (rule 6)"
        files = th.files_of(store, skills[name])
        if after.format < 2:  # v1.6's rule: a create's files other than SKILL.md
            if change.action == "create":
                plain = {r: store.read(sha, b"blob") for r, (_m, sha) in files.items() if r != "SKILL.md"}
                want = {r: d for r, d in entry.files.items() if r != "SKILL.md"}
                if {r: sp.file_sha256(d) for r, d in plain.items()} != want or set(entry.files) != set(files):
                    return f"{name}'s files are not the ones its entry pins (rule 6)"
            continue
        problem = _pinned(store, name, change.action, entry, files, counted)
        if problem:
            return problem
    return None


def _pinned(
    store: gs.GitStore, name: str, action: str, entry: sp.Entry, files: dict[str, tuple[int, bytes]], counted: bool
) -> str | None:
    """Rule 6, from format 2: every file the install writes is the one its entry pins, SKILL.md with the
    ledger's counter set aside, and the entry's digests are those of these files."""
    if entry.counter == "":
        return f"{name}'s entry has no 'counter'; an install writes it from format 2 on (rule 6)"
    if set(entry.files) != set(files):
        extra, missing = sorted(set(files) - set(entry.files)), sorted(set(entry.files) - set(files))
        return (
            f"{name} ({action}) holds {'files its entry does not pin: ' + ', '.join(extra) if extra else ''}"
            f"{'; ' if extra and missing else ''}{'lacks pinned files: ' + ', '.join(missing) if missing else ''}"
            " (rule 6)"
        )
    served: dict[str, tuple[bytes, bool]] = {}
    for rel, (mode, sha) in sorted(files.items()):
        data = store.read(sha, b"blob")
        if rel == SKILL_MD and counted:
            try:
                data = frontmatter.set_aside(data.decode("utf-8"), entry.counter).encode("utf-8")
            except (LedgerError, UnicodeDecodeError) as exc:
                why = exc.message if isinstance(exc, LedgerError) else "it is not UTF-8"
                return f"{name}'s installed SKILL.md cannot have its counter set aside: {why} (rule 6)"
        elif rel == SKILL_MD and entry.counter is not None:
            return f"{name}'s entry records a served counter, but this brain keeps versions in the store (rule 6)"
        served[rel] = (data, mode == gs.MODE_EXEC)
        if sp.file_sha256(data) != entry.files[rel]:
            aside = " with the counter set aside" if rel == SKILL_MD and counted else ""
            return f"{name}'s {rel} ({action}){aside} is not the file its entry pins (rule 6)"
    if sp.skill_blake3(served) != entry.blake3:
        return f"{name}'s entry blake3 is not the digest of the files it pins (rule 6)"
    if folder_sha256(served) != entry.sha256:
        return f"{name}'s entry sha256 is not the folder hash of the files it pins (rule 6)"
    return None


def _without(entry: sp.Entry, *keys: str) -> dict[str, Any]:
    doc = entry.to_json()
    for key in keys:
        doc.pop(key)
    return doc
