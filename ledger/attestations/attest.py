"""``ledger attest`` and ``ledger verify --attestation``: make and check OMS and in-toto attestations.

Making one: the snapshot's attested folder (:func:`~ledger.attestations.subjects.attested`), the
caller's role key as the writer would pick it at that snapshot, and its P-256 sibling, which
must already be certified by a signed snapshot of the brain (else no verifier could trust it).

Checking one, with no key of our own: the format is told by the document's shape; the key by
its id, found in a ``Ledger-Sibling`` trailer of a snapshot whose EIP-712 signature recovers an
address; the signature over the statement; that address trusted by the snapshot's trust set
(``keys`` record); then every subject against the brain at the snapshot the statement names
(or REV).  Every failure is named.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.attestations import intoto, oms
from ledger.attestations.subjects import (
    AttestationError,
    attested,
    certifier,
    key_id,
    p256_pem,
    signing_key,
    sslib_key_id,
    strict_loads,
)
from ledger.chain.receipts import receipt_of
from ledger.errors import StoreError, UsageError
from ledger.signatures import siblings
from ledger.store.git import Git

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["FORMATS", "attest", "verify_attestation"]

FORMATS = ("oms", "intoto")
MAX_ATTESTATION = 64 << 20  # bytes: a statement lists every file, ~200 bytes each


def _sequence(brain: Brain, commit: bytes) -> int:
    """The in-toto statement's ``sequence``: the snapshot's number (docs/lineage.md §1.1)."""
    try:
        return brain.store.number(commit)
    except StoreError as exc:
        raise AttestationError(exc.message) from exc


def _in_lineage(brain: Brain, commit: bytes, head: bytes) -> None:
    if not Git(brain.store.git_dir).is_ancestor(commit, head):
        raise AttestationError(
            f"{commit.hex()[:12]} is not a snapshot of this brain's lineage",
            hint="verify against the brain the attestation was made from, once it has that snapshot",
        )


def _context(brain: Brain) -> tuple[str, str | None]:
    """``(brain subject name, agent id)``: the registered agent when there is one, else the folder's name."""
    agent_id = (brain.config.get("chain") or {}).get("agent_id")
    agent = (f"0x{agent_id:064x}" if isinstance(agent_id, int) else str(agent_id).lower()) if agent_id else None
    return agent or brain.root.name, agent


def _receipt(brain: Brain, commit: bytes) -> dict[str, Any] | None:
    return receipt_of(brain.store, commit.hex())


def attest(brain: Brain, rev: str | None, name: str | None, fmt: str, actor: str = "user") -> tuple[bytes, dict]:
    """``(file bytes, summary)``: an attestation of the snapshot ``rev`` (default: head), signed by the
    P-256 sibling of this machine's ``actor`` key."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", hint="one of " + ", ".join(FORMATS))
    head = brain.head().commit
    commit = brain.store.resolve(rev) if rev else head
    att = attested(brain.store, commit, name)
    key = signing_key(brain, commit, actor)
    pem = p256_pem(key.secret)
    kid = key_id(pem)
    found = certifier(brain.store, head, kid)
    if found is None or found[0] != key.address:
        raise AttestationError(
            f"the {actor} key {key.address} has certified no sibling key in a signed snapshot of this brain, so "
            "no verifier could trust the attestation",
            hint=f"make one signed change as {actor} (any write with --actor {actor}), then attest again",
        )
    sibling = siblings.p256_key(key.secret)
    if fmt == "oms":
        data = oms.make(att, sibling, kid)
    else:
        brain_name, agent = _context(brain)
        stmt = intoto.statement(
            att,
            brain=brain_name,
            sequence=_sequence(brain, commit),
            agent=agent,
            actor=actor,
            signer=key.address,
            receipt=_receipt(brain, commit),
        )
        kid = sslib_key_id(pem)  # the envelope's keyid: securesystemslib's default (lineage/attestations.md §2)
        data = intoto.make(stmt, sibling)
    summary = {
        "format": fmt,
        "commit": commit.hex(),
        "skill": name,
        "files": len(att.files),
        "signer": key.address,
        "role": actor,
        "keyid": kid,
        "certified_by": found[1],
        "withheld": att.withheld,
    }
    return data, summary


def read_attestation(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_ATTESTATION + 1)
    except OSError as exc:
        raise AttestationError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_ATTESTATION:
        raise AttestationError(f"{path} is larger than {MAX_ATTESTATION >> 20} MiB")
    return data


def verify_attestation(brain: Brain, data: bytes, rev: str | None = None) -> dict[str, Any]:
    """Check an attestation against this brain; a summary of what was verified, or
    :class:`AttestationError` naming every failure, with ``detail["format"]`` (``None`` when the document
    is of no known format) and ``detail["problems"]`` (each failure alone) for ``--json``."""
    doc = strict_loads(data, "the attestation")
    fmt = (
        "oms"
        if isinstance(doc, dict) and "mediaType" in doc
        else "intoto"
        if isinstance(doc, dict) and "payloadType" in doc
        else None
    )
    try:
        return _verify(brain, doc, rev)
    except AttestationError as exc:
        exc.detail.setdefault("format", fmt)
        exc.detail.setdefault("problems", [exc.message])
        raise


def _verify(brain: Brain, doc: Any, rev: str | None) -> dict[str, Any]:
    if isinstance(doc, dict) and "mediaType" in doc:
        fmt = "oms"
        kid, payload, sig, stmt = oms.open_bundle(doc)
        claim = oms.named(stmt)
        name, claimed = claim if claim else (None, None)
    elif isinstance(doc, dict) and "payloadType" in doc:
        fmt = "intoto"
        kid, env, stmt = intoto.open_envelope(doc)
        pred = stmt.get("predicate") if isinstance(stmt, dict) else None
        snap = pred.get("snapshot") if isinstance(pred, dict) else None
        claimed = snap.get("commit") if isinstance(snap, dict) else None
        name = pred.get("skill") if isinstance(pred, dict) else None
        if not isinstance(claimed, str) or (name is not None and not isinstance(name, str)):
            raise AttestationError("the statement names no snapshot (predicate.snapshot.commit)")
    else:
        raise AttestationError(
            "not an attestation this ledger knows: neither a Sigstore bundle (OMS) nor a DSSE envelope (in-toto)"
        )
    head = brain.head().commit
    found = certifier(brain.store, head, kid)
    if found is None:
        raise AttestationError(
            f"unknown key {kid[:16]}…: no signed snapshot of this brain certifies it",
            hint="the attestation was signed by a key this brain never named",
        )
    address, cert_commit, certified = found
    pem = certified.pem(siblings.P256)
    # model_signing's hint is the PEM key id alone (lineage/attestations.md §4.1)
    if fmt == "oms" and kid != key_id(pem):
        raise AttestationError(f"unknown key {kid[:16]}…: an OMS hint is the SHA-256 of the key's PEM")
    good = oms.check_signature(pem, payload, sig) if fmt == "oms" else intoto.check_signature(env, pem, kid)
    if not good:
        raise AttestationError(f"bad signature: the statement was not signed by {address}'s sibling key {kid[:16]}…")
    if claimed is not None and not rev and not (len(claimed) == 40 and all(c in "0123456789abcdef" for c in claimed)):
        raise AttestationError("the statement's snapshot is not a 40-hex commit id")
    commit = brain.store.resolve(rev if rev else claimed) if (rev or claimed) else head
    _in_lineage(brain, commit, head)
    trust = brain.store.trust_at(brain.store.commit_info(commit)[0].hex())[1]
    role = trust.active.get(address)
    if role is None:
        raise AttestationError(
            f"unknown key: {address} signed it, and the brain's trust set does not trust that "
            f"address at {commit.hex()[:12]}"
        )
    att = attested(brain.store, commit, name)
    if fmt == "oms":
        failures = oms.problems(stmt, att)
    else:
        brain_name, agent = _context(brain)
        expected = intoto.statement(
            att,
            brain=brain_name,
            sequence=_sequence(brain, commit),
            agent=agent,
            actor=role,
            signer=address,
            receipt=_receipt(brain, commit),
        )
        failures = intoto.problems(stmt, expected)
    if failures:
        shown = "; ".join(failures[:20]) + (f"; and {len(failures) - 20} more" if len(failures) > 20 else "")
        raise AttestationError(
            f"the attestation does not match the brain at {commit.hex()[:12]}: {shown}",
            hint="the skills changed since it was made, or it names another snapshot",
            problems=failures,
        )
    return {
        "ok": True,
        "format": fmt,
        "commit": commit.hex(),
        "skill": name,
        "files": len(att.files),
        "signer": address,
        "role": role,
        "keyid": kid,
        "certified_by": cert_commit,
    }
