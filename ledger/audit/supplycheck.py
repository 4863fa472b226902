"""The ``supply`` check: each snapshot's supply record against its parent's (docs/lineage.md §1.6).

Who may change what: an ``install`` adds or replaces the entries of the skills it writes (in
quarantine, unless auto-approved under a clean verdict); an ``approve`` moves entries from
quarantine to approved, signed by a key that is not an agent's, with a reason where the
verdict is critical; a ``revoke`` adds revocations and marks the entries they name.  A delete
drops its skill's entry, and nothing else touches the record.  Revocations never shrink, and
a revoked digest's entry stays revoked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger.audit.signatures import Signed
from ledger.audit.verdicts import Report
from ledger.audit.walk import Walked
from ledger.errors import LedgerError
from ledger.store import gitstore as gs
from ledger.store import supply as sp
from ledger.store import treehash as th
from ledger.store.skilltree import skills_of

__all__ = ["check_supply"]

CLEAN = ("clean", "low")


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
        parent = _parent(store, snap, records, blobs)
        problem = _rules(store, snap, parent or sp.Supply(), now or sp.Supply(), signers.get(snap.commit))
        if problem:
            chk.fail(f"{label}: {problem} (docs/lineage.md §1.6)", path=sp.RECORD, **where)
        if now is not None and snap.commit == walked.order[-1].commit:
            installed = len(now.skills)
            report.supply = [_credit(n, e) for n, e in sorted(now.skills.items())]
    if chk.ok:
        chk.summary = (f"{installed} skill(s) installed from elsewhere: pins, verdicts, approvals and revocations "
                       "follow the rules" if any(records.values()) else "no skill was installed from elsewhere")


def _credit(name: str, entry: sp.Entry) -> dict[str, Any]:
    """What a report shows of an installed skill: whose it is, from where, and its standing."""
    return {"skill": name, "state": entry.state, "source": entry.source["url"], "type": entry.source["type"],
            "pin": entry.pin, "signer": entry.signer, "derived_from": entry.derived_from,
            "verdict": entry.verdict.get("worst"), "approved_by": (entry.approval or {}).get("by")}  # fmt: skip


def _parse(store: gs.GitStore, blob: bytes, blobs: dict[bytes, sp.Supply]) -> sp.Supply:
    if blob not in blobs:
        blobs[blob] = sp.parse_record(store.read(blob, b"blob"))
    return blobs[blob]


def _parent(store: gs.GitStore, snap: gs.Snapshot, records: dict[str, sp.Supply | None],
            blobs: dict[bytes, sp.Supply]) -> sp.Supply | None:  # fmt: skip
    if not snap.parents:
        return None
    first = snap.parents[0]
    if first not in records:  # outside an incremental audit: read as it stands
        sha, _ = store.supply_record(store.commit_info(bytes.fromhex(first))[0])
        records[first] = _parse(store, sha, blobs) if sha is not None else None
    return records[first]


def _rules(store: gs.GitStore, snap: gs.Snapshot, before: sp.Supply, after: sp.Supply,
           signer: Signed | None) -> str | None:  # fmt: skip
    op = snap.operation
    gone = set(before.revoked) - set(after.revoked)
    if gone:
        return f"it drops the revocation of {sorted(gone)[0]}"
    for name, entry in after.skills.items():
        if entry.state != sp.REVOKED and after.is_revoked(*entry.digests()):
            return f"{name}'s digest is revoked, but its entry is {entry.state}"
        if entry.state == sp.APPROVED and entry.blocking and not (entry.approval or {}).get("override"):
            return f"{name} is approved with a critical verdict and no override reason"
    if op == "merge":
        return None  # each side was held to these rules; the join is checked by the rules above
    deleted = {c.skill for c in snap.changes if c.action == "delete"}
    if op not in ("install", "approve", "revoke"):
        if after != before.without(deleted):
            return f"operation {op!r} changes the supply record; only install, approve and revoke may"
        return None
    if set(after.revoked) != set(before.revoked) and op != "revoke":
        return f"operation {op!r} adds a revocation; only revoke may"
    if op == "install":
        return _install(store, snap, before, after, signer)
    changed = {n for n in set(before.skills) | set(after.skills) if before.skills.get(n) != after.skills.get(n)}
    if set(after.skills) != set(before.skills):
        return f"operation {op!r} adds or removes an entry"
    for name in sorted(changed):
        old, new = before.skills[name], after.skills[name]
        if op == "approve":
            if old.state != sp.QUARANTINED or new.state != sp.APPROVED or \
                    _without(old, "state", "approval") != _without(new, "state", "approval"):  # fmt: skip
                return f"the approval of {name} changes more than its state (or approves a skill not in quarantine)"
            if (signer.role if signer else snap.attribution.get("actor")) == "agent":
                return f"{name} is approved by an agent; approvals are a user's or a curator's"
            if signer is not None and (new.approval or {}).get("by") != signer.address:
                return f"{name}'s approval names {(new.approval or {}).get('by')}, not its signer {signer.address}"
        elif new.state != sp.REVOKED or _without(old, "state") != _without(new, "state") \
                or not after.is_revoked(*new.digests()):  # fmt: skip
            return f"the revocation changes {name}'s entry beyond marking it revoked"
    if op == "approve" and not changed:
        return "an approve snapshot that approves nothing"
    if op == "revoke" and set(after.revoked) == set(before.revoked):
        return "a revoke snapshot that revokes nothing"
    return None


def _install(store: gs.GitStore, snap: gs.Snapshot, before: sp.Supply, after: sp.Supply,
             signer: Signed | None) -> str | None:  # fmt: skip
    written = {c.skill: c for c in snap.changes}
    for name in set(before.skills) | set(after.skills):
        if name not in written and before.skills.get(name) != after.skills.get(name):
            return f"it changes the entry of {name}, which it does not install"
    skills = skills_of(store, bytes.fromhex(snap.tree))[1]
    for name, change in written.items():
        entry = after.skills.get(name)
        if entry is None:
            return f"it installs {name} without an entry"
        if entry.version != change.version:
            return f"{name}'s entry is for v{entry.version}, but the snapshot writes v{change.version}"
        if after.is_revoked(*entry.digests()):
            return f"it installs {name}, whose digest is revoked"
        if entry.approval is None and entry.state != sp.QUARANTINED:
            return f"{name} is installed {entry.state}, not quarantined"
        if entry.approval is not None:
            if not entry.approval.get("auto") or entry.verdict.get("worst") not in CLEAN or not entry.signer:
                return f"{name} is installed approved without a clean verdict from a signed source"
            if signer is not None and entry.approval.get("by") != signer.address:
                return f"{name}'s approval names {entry.approval.get('by')}, not its signer {signer.address}"
        if change.action == "create":
            files = th.files_of(store, skills[name])
            plain = {r: store.read(sha, b"blob") for r, (_m, sha) in files.items() if r != "SKILL.md"}
            want = {r: d for r, d in entry.files.items() if r != "SKILL.md"}
            if {r: sp.file_sha256(d) for r, d in plain.items()} != want or set(entry.files) != set(files):
                return f"{name}'s files are not the ones its entry pins"
    return None


def _without(entry: sp.Entry, *keys: str) -> dict[str, Any]:
    doc = entry.to_json()
    for key in keys:
        doc.pop(key)
    return doc
