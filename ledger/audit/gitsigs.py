"""The audit's ``siblings`` check: the sibling keys each signed snapshot certifies, and its git signature.

docs/lineage.md §8.7 and §8.8.  A signed snapshot names its signer's sibling
keys in ``Ledger-Sibling`` trailers, inside the text its EIP-712 signature covers, and its commit
object carries a ``gpgsig`` header (git's SSH signature) made by the Ed25519 one.  Plain git checks
that header with an ``allowed_signers`` file (``ledger keys export --allowed-signers``); this check
holds the lineage to the rules that make such a file mean something:

* the trailers parse: exactly two, ``ssh-ed25519`` then ``ecdsa-sha2-nistp256``;
* only a snapshot with a ``Ledger-Signature`` certifies anything;
* an address certifies the same siblings in every snapshot it signs, and no other address certifies them;
* the commit's ``gpgsig`` is an SSHSIG in the namespace ``git`` by the certified Ed25519 key over the
  commit without that header, exactly the bytes ``git verify-commit`` checks.

Snapshots without trailers (written before siblings existed, or unsigned) are not held to it; a
``gpgsig`` on such a snapshot is certified by nothing and carries no weight here.
"""

from __future__ import annotations

from ledger.audit.signatures import Signed
from ledger.audit.verdicts import Report
from ledger.audit.walk import Walked
from ledger.errors import LedgerError
from ledger.protocol.signing import SignatureError
from ledger.signatures import siblings, sshsig
from ledger.store import commitsig
from ledger.store import gitstore as gs

__all__ = ["check_siblings"]


_BATCH = 512  # commits read per pipelined request


def check_siblings(store: gs.GitStore, walked: Walked, report: Report, signed: list[Signed]) -> None:
    """Check every snapshot's ``Ledger-Sibling`` trailers and ``gpgsig`` (merged branches included).

    The trailers are checked first, in lineage order; the commits that pass are then read in
    pipelined batches and their git signatures verified; failures are reported in lineage order."""
    chk = report.check("siblings")
    signer = {s.commit: s.address for s in signed}
    certified: dict[str, tuple[siblings.Siblings, str]] = {}  # address → what it certified, and where first
    owners: dict[str, str] = {}  # sibling public key → the address that certified it first
    todo: list[tuple[gs.Snapshot, bytes | None, str | None]] = []  # (snapshot, Ed25519 key blob, or why not)
    for snap in walked.order:
        values = snap.trailers.get(siblings.SIBLING_TRAILER, [])
        if values:
            try:
                todo.append((snap, _certified(snap, values, signer.get(snap.commit), certified, owners), None))
            except LedgerError as exc:
                todo.append((snap, None, exc.message))
    count = 0
    for at in range(0, len(todo), _BATCH):
        batch = todo[at : at + _BATCH]
        raws = store.read_commits([bytes.fromhex(snap.commit) for snap, key, _ in batch if key is not None])
        raw = iter(raws)
        for snap, key, why in batch:
            if key is not None:
                try:
                    _verify(next(raw), key)
                    count += 1
                    continue
                except LedgerError as exc:
                    why = exc.message
            i = walked.index[snap.commit]
            label = (
                f"snapshot {snap.commit[:12]} (merged at #{i}, {snap.operation})"
                if snap.commit in walked.side
                else f"snapshot #{i} ({snap.commit[:12]}, {snap.operation})"
            )
            chk.fail(f"{label}: {why}", snapshot=snap.commit, index=i)
    if chk.ok:
        chk.summary = (
            f"{count} snapshot(s) carry a git signature by the Ed25519 sibling their signer certifies; "
            f"{len(certified)} address(es), each with one pair of siblings"
        )


def _certified(
    snap: gs.Snapshot,
    values: list[str],
    address: str | None,
    certified: dict[str, tuple[siblings.Siblings, str]],
    owners: dict[str, str],
) -> bytes:
    """The Ed25519 key blob a snapshot certifies, by rules 1–3; ``address`` is its accepted signer, if any."""
    if snap.signature is None:
        raise SignatureError("it carries Ledger-Sibling trailers but no Ledger-Signature to certify them")
    certifies = siblings.Siblings.from_trailers(values)
    if [v.split(" ")[0] for v in values] != list(siblings.SCHEMES):
        raise SignatureError(
            f"its Ledger-Sibling trailers are {len(values)}; a signed snapshot names exactly "
            f"two, {siblings.ED25519} then {siblings.P256}"
            " (see docs/lineage.md, 'Sibling keys')"
        )
    if address is not None:
        first = certified.setdefault(address, (certifies, snap.commit))
        if first[0] != certifies:
            raise SignatureError(
                f"{address} certifies other sibling keys here than at snapshot {first[1][:12]}; "
                "an address has one pair of siblings"
            )
        for line in values:  # a key names one signer: another address may not claim it (lineage.md §8.7 rule 3)
            owner = owners.setdefault(line, address)
            if owner != address:
                raise SignatureError(
                    f"{address} certifies the {line.split(' ')[0]} sibling that {owner} certified "
                    "before; a sibling key belongs to one address"
                )
    return siblings.parse_public(certifies.ed25519)[1]


def _verify(raw: bytes, key: bytes) -> None:
    """Rule 4: the commit's ``gpgsig`` is an SSHSIG in namespace ``git`` by ``key`` over the commit without it."""
    payload, armored = commitsig.split(raw)
    if armored is None:
        raise SignatureError("it certifies sibling keys but its commit has no gpgsig (git signature)")
    sshsig.verify(armored, payload, key)
