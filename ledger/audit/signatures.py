"""The audit's ``signatures`` check: who signed each snapshot, replayed against the trust set.

docs/lineage.md §8.  Each signature is recovered from the snapshot's EIP-712 digest; the
trust set is replayed from genesis with the same :class:`ledger.signatures.trust.Trust` rules the
writer applies, and each snapshot's ``keys`` record must equal it.  Unsigned snapshots
are a warning, or a failure under ``require``; those before an ``adopt`` snapshot are
attested by it (its signature binds the head it adopted, and so every commit before).
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.audit.verdicts import Check, Report
from ledger.audit.walk import Walked
from ledger.errors import LedgerError
from ledger.protocol import signing
from ledger.signatures.trust import KEY_TRAILER, Trust, TrustError, format_record, parse_key_change, parse_record
from ledger.store import gitstore as gs

__all__ = ["Signed", "check_signatures", "signer_of"]


@dataclass(frozen=True)
class Signed:
    index: int
    commit: str
    address: str
    role: str


def check_signatures(
    store: gs.GitStore, walked: Walked, report: Report, require: bool, founder: str | None = None
) -> list[Signed]:
    """Verify every signature and key change, merged branches included; return who signed what, for
    ``chain.signers``.  ``founder``: the address that must have signed the snapshot founding the trust set.

    Each snapshot is checked against the trust set its first parent leaves.  A merge keeps its first
    parent's set, and a merged branch may not change it (docs/lineage.md §9.2): key changes travel on
    the mainline, so the set at any snapshot is a line's, not a join's."""
    chk = report.check("signatures")
    trusts: dict[str, Trust] = {}
    signed: list[Signed] = []
    unsigned: list[tuple[int, str]] = []
    adopted_at: int | None = None
    seen: dict[bytes, bytes] = {}  # keys record blob id → its bytes: a record changes only with the set
    final = Trust()
    shown = {t["commit"]: t for t in report.timeline}
    for snap in walked.order:
        i = walked.index[snap.commit]
        side = snap.commit in walked.side
        trust = _trust_of(store, trusts, snap.parents[0]) if snap.parents else Trust()
        label = (
            f"snapshot {snap.commit[:12]} (merged at #{i}, {snap.operation})"
            if side
            else f"snapshot #{i} ({snap.commit[:12]}, {snap.operation})"
        )
        where = {"snapshot": snap.commit, "index": i}
        trusts[snap.commit] = trust
        try:
            changes = [parse_key_change(v) for v in snap.trailers.get(KEY_TRAILER, [])]
            if changes and side:
                raise TrustError(
                    "a merged branch changes the trust set; key changes travel on the mainline "
                    "(see docs/lineage.md, 'Merges', 'Trust')"
                )
            signer = signer_of(snap)
            actor = snap.attribution.get("actor")
            trust.authorize(snap.operation, changes, signer, actor)
            after = trust.apply(changes)
        except LedgerError as exc:
            chk.fail(f"{label}: {exc.message}", **where)
            if snap.commit in shown:
                shown[snap.commit]["actor"] = "refused" if snap.signature is None else "bad signature"
            continue
        trusts[snap.commit] = after
        if signer is None:
            unsigned.append((i, snap.commit))
        else:
            signed.append(Signed(i, snap.commit, signer, after.active.get(signer) or trust.active[signer]))
            if snap.commit in shown:
                shown[snap.commit]["actor"], shown[snap.commit]["signer"] = signed[-1].role, signer
        if snap.operation == "adopt":
            adopted_at = i
        if (
            founder is not None
            and signer is not None
            and not trust.established
            and after.established
            and signer != founder.lower()
        ):
            chk.fail(
                f"{label}: the trust set was founded by {signer}, not by the expected {founder.lower()}",
                expected=founder.lower(),
                computed=signer,
                **where,
            )
        _check_record(store, snap, after, label, chk, where, report.tops.get(snap.commit), seen)
        if not side:
            final = after
    trust = final
    snaps = walked.order
    if founder is not None and chk.ok and not trust.established:
        chk.fail(f"--founder {founder} was given, but no snapshot founds a trust set (the brain is unsigned)")
    if not chk.ok:
        return signed
    loose = [(i, c) for i, c in unsigned if adopted_at is None or i > adopted_at]
    attested = f"; #0–#{adopted_at - 1} attested by the adoption at #{adopted_at}" if adopted_at else ""
    if loose:
        first_i, first = loose[0]
        what = "the brain is unsigned: no snapshot carries a signature"
        if trust.established or signed:
            what = f"{len(loose)} of {len(snaps)} snapshot(s) are unsigned (first: #{first_i}, {first[:12]})"
        if require:
            chk.fail(what + " and --require-signatures is set", snapshot=first, index=first_i)
        else:
            chk.warn(what + " (ledger sign --adopt signs an older brain; --require-signatures fails this)")
        return signed
    chk.summary = f"{len(signed)} snapshot(s) signed by keys the brain trusted when each was made{attested}"
    return signed


def _trust_of(store: gs.GitStore, trusts: dict[str, Trust], commit: str) -> Trust:
    """The set after ``commit``: replayed, or read from its ``keys`` record when an incremental audit
    starts there (a snapshot this copy already trusts)."""
    if commit not in trusts:
        trusts[commit] = store.trust_at(store.commit_info(bytes.fromhex(commit))[0].hex())[1]
    return trusts[commit]


def signer_of(snap: gs.Snapshot) -> str | None:
    """The address a snapshot's EIP-712 signature recovers to (None: unsigned); raises when it is malformed."""
    if snap.signature is None:
        return None
    text, last = signing.split_signature(snap.message)
    if last != snap.signature or len(snap.trailers.get(signing.SIGNATURE_TRAILER, [])) != 1:
        raise TrustError("its Ledger-Signature is not the message's one and last line")
    parent = bytes.fromhex(snap.parents[0]) if snap.parents else None
    digest = signing.digest(
        snap.root, snap.parent_root, parent, bytes.fromhex(snap.tree), snap.attribution.get("actor", ""), text
    )
    return signing.recover(digest, last)


def _check_record(
    store: gs.GitStore,
    snap: gs.Snapshot,
    trust: Trust,
    label: str,
    chk: Check,
    where: dict,
    top: dict[str, bytes] | None,
    seen: dict[bytes, bytes],
) -> None:
    try:
        if top is None:
            record = format_record(store.trust_at(snap.tree)[1])
        elif "keys" not in top:
            record = b""
        else:
            sha = top["keys"]
            if sha not in seen:
                seen[sha] = format_record(parse_record(store.read(sha, b"blob")))
            record = seen[sha]
    except LedgerError as exc:
        chk.fail(f"{label}: {exc.message}", **where)
        return
    if record != format_record(trust):
        chk.fail(
            f"{label}: its 'keys' record is not the trust set its lineage gives",
            path="keys",
            expected=format_record(trust).decode() or "(none)",
            computed=record.decode() or "(none)",
            **where,
        )
