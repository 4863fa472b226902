"""in-toto attestations of a snapshot: a Statement v1 in a DSSE envelope, signed with securesystemslib.

Subjects are every attested file, named ``skills/<path>`` as ``ledger export`` lays it out,
with ``sha256`` and ``blake3`` (plain BLAKE3-256 of the bytes: the bundle hash's own file
digest is domain-separated, ``BLAKE3(0x02 ‖ bytes)``, and so is no standard BLAKE3), then the
brain itself, named ``brain:<agent id or folder name>``, digested by its bundle root
(``blake3-tree-v1``), its snapshot commit (``gitCommit``) and ``sha256``, the folder digest
OMS defines (:func:`ledger.attestations.oms.folder_sha256`), so every subject carries sha256.  The predicate
(:data:`PREDICATE_TYPE`) says which snapshot, who attests and what the chain recorded.
securesystemslib's :class:`~securesystemslib.dsse.Envelope` signs and verifies; its
``keyid`` is securesystemslib's default key id of the sibling (lineage/attestations.md §2, v1.11), so a stock
``SSlibKey.from_crypto(public_key)`` verifies it.  Envelopes made before v1.11 name the key by the SHA-256 of
its PEM; they still verify here.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from ledger.attestations.oms import PAYLOAD_TYPE, STATEMENT_TYPE, folder_sha256
from ledger.attestations.subjects import AttestationError, Attested, b64_strict, canonical, strict_loads
from ledger.bundle.merkle import format_root

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey

__all__ = ["PAYLOAD_TYPE", "PREDICATE_TYPE", "STATEMENT_TYPE", "make", "open_envelope", "problems", "statement"]

PREDICATE_TYPE = "https://brain-ledger.dev/attestation/snapshot/v1"
BRAIN_PREFIX = "brain:"


def statement(
    att: Attested,
    *,
    brain: str,
    sequence: int,
    agent: str | None,
    actor: str,
    signer: str,
    receipt: dict[str, Any] | None,
) -> dict[str, Any]:
    """The statement for ``att``; ``brain`` names the brain subject (``brain:`` is prefixed)."""
    from blake3 import blake3

    prefix = "skills/" + (f"{att.name}/" if att.name is not None else "")
    subjects: list[dict[str, Any]] = [
        {
            "name": prefix + rel,
            "digest": {"blake3": blake3(data).hexdigest(), "sha256": hashlib.sha256(data).hexdigest()},
        }
        for rel, (data, _) in sorted(att.files.items(), key=lambda kv: kv[0].encode())
    ]
    snap = att.snapshot
    digest = {"blake3-tree-v1": snap.root.hex(), "gitCommit": snap.commit, "sha256": folder_sha256(att.files)}
    subjects.append({"name": BRAIN_PREFIX + brain, "digest": digest})
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "snapshot": {
                "commit": snap.commit,
                "root": format_root(snap.root),
                "parentCommit": snap.parents[0] if snap.parents else None,
                "parentRoot": format_root(snap.parent_root) if snap.parent_root else None,
                "sequence": sequence,
                "operation": snap.operation,
            },
            "skill": att.name,
            "withheld": att.withheld if att.name is None else [],
            "agent": agent,
            "actor": actor,
            "signer": signer,
            "receipt": receipt,
        },
    }


def make(stmt: dict[str, Any], key: EllipticCurvePrivateKey, kid: str | None = None) -> bytes:
    """The DSSE envelope JSON (one line) over the canonical statement, signed by securesystemslib; its
    ``keyid`` is ``kid`` when given (tests make pre-v1.11 envelopes so), else securesystemslib's default."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import CryptoSigner, SSlibKey

    signer = CryptoSigner(key, SSlibKey.from_crypto(key.public_key(), keyid=kid, scheme="ecdsa-sha2-nistp256"))
    env = Envelope(canonical(stmt), PAYLOAD_TYPE, {})
    env.sign(signer)
    return json.dumps(env.to_dict(), separators=(",", ":")).encode() + b"\n"


def open_envelope(doc: dict[str, Any]) -> tuple[str, Any, dict[str, Any]]:
    """``(keyid, securesystemslib Envelope, statement)`` of an envelope; refuses any other shape."""
    from securesystemslib.dsse import Envelope

    if not isinstance(doc, dict) or set(doc) != {"payload", "payloadType", "signatures"}:
        raise AttestationError("a DSSE envelope is an object with exactly payload, payloadType and signatures")
    if doc["payloadType"] != PAYLOAD_TYPE:
        raise AttestationError(f"the envelope's payloadType is not {PAYLOAD_TYPE}")
    sigs = doc["signatures"]
    if (
        not isinstance(sigs, list)
        or len(sigs) != 1
        or not isinstance(sigs[0], dict)
        or set(sigs[0]) != {"keyid", "sig"}
        or not isinstance(sigs[0]["keyid"], str)
    ):
        raise AttestationError("the envelope must hold exactly one signature, with a keyid and a sig")
    b64_strict(doc["payload"], "the payload")
    b64_strict(sigs[0]["sig"], "the signature")
    try:
        env = Envelope.from_dict(json.loads(json.dumps(doc)))  # from_dict rewrites the dict it is given
    except (ValueError, TypeError, KeyError) as exc:
        raise AttestationError(f"the envelope is malformed: {exc}") from None
    stmt = strict_loads(env.payload, "the statement")
    if canonical(stmt) != env.payload:
        raise AttestationError("the statement is not in canonical form (sorted keys, no white space)")
    return sigs[0]["keyid"], env, stmt


def check_signature(env: Any, pem: bytes, kid: str) -> bool:
    """securesystemslib's own verification of the envelope with the certified key."""
    from cryptography.hazmat.primitives import serialization
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey

    key = SSlibKey.from_crypto(serialization.load_pem_public_key(pem), keyid=kid, scheme="ecdsa-sha2-nistp256")
    try:
        env.verify([key], 1)
    except VerificationError:
        return False
    return True


def _normal(stmt: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """``stmt`` with what lineage/attestations.md §5.4 lets differ set aside: each brain subject's name, ``agent``,
    and ``receipt`` when either side has none.  Two statements that attest the same are then equal."""
    out = json.loads(json.dumps(stmt))
    for subject in out["subject"]:
        if (
            isinstance(subject, dict)
            and isinstance(subject.get("name"), str)
            and subject["name"].startswith(BRAIN_PREFIX)
        ):
            subject["name"] = BRAIN_PREFIX
    pred = out["predicate"]
    if "agent" in pred:
        pred["agent"] = None
    if pred.get("receipt") is None or other["predicate"].get("receipt") is None:
        pred["receipt"] = None
    return out


def problems(stmt: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """What differs between a verified statement and the one the brain gives at its snapshot (empty: none).

    The statement must equal the expected one exactly, bar the fields lineage/attestations.md §5.4 lets differ: anything
    else
    (a member this format does not define, subjects in another order) is named, never passed over."""
    if stmt == expected:
        return []
    try:
        if not isinstance(stmt["predicate"], dict) or not isinstance(stmt["subject"], list):
            raise TypeError
        if _normal(stmt, expected) == _normal(expected, stmt):
            return []
        signed = {s["name"]: s["digest"] for s in stmt["subject"]}
        if not all(isinstance(n, str) for n in signed):
            raise TypeError
    except (KeyError, TypeError):
        return ["the statement is not a brain-ledger snapshot attestation"]
    pred = stmt["predicate"]
    if len(signed) != len(stmt["subject"]):
        return ["two subjects have the same name"]
    out = []
    if set(stmt) != set(expected):
        out.append(
            f"the statement's members are {', '.join(sorted(stmt))}, not this format's {', '.join(sorted(expected))}"
        )
    if stmt.get("_type") != STATEMENT_TYPE or stmt.get("predicateType") != PREDICATE_TYPE:
        out.append("the statement's _type or predicateType is not ours")
    odd = [str(s.get("name"))[:80] for s in stmt["subject"] if set(s) != {"name", "digest"}]
    if odd:
        out.append(f"subject(s) {', '.join(odd)} have members other than name and digest")
    here = {s["name"]: s["digest"] for s in expected["subject"]}
    # The brain subject's name says where it was made (agent id, or folder): its digest is what counts.
    order = {}
    for subjects in (signed, here):
        brains = [n for n in subjects if n.startswith(BRAIN_PREFIX)]
        order[id(subjects)] = [BRAIN_PREFIX if n.startswith(BRAIN_PREFIX) else n for n in subjects]
        subjects[BRAIN_PREFIX] = subjects.pop(brains[0]) if len(brains) == 1 else None

    def file(n: str) -> str:
        return n.removeprefix("skills/")

    out += [
        "changed brain (its root or commit)" if n == BRAIN_PREFIX else f"changed file {file(n)}"
        for n in sorted(set(signed) & set(here))
        if signed[n] != here[n]
    ]
    out += [f"missing file {file(n)} (signed, not in the brain)" for n in sorted(set(signed) - set(here))]
    out += [f"extra file {file(n)} (in the brain, not signed)" for n in sorted(set(here) - set(signed))]
    if set(signed) == set(here) and order[id(signed)] != order[id(here)]:
        out.append("the subjects are not in this format's order (files by path bytes, then the brain)")
    want = expected["predicate"]
    if set(pred) != set(want):
        out.append("the predicate's fields are not this format's")
    for k in sorted(set(pred) & set(want)):
        mine, theirs = pred[k], want[k]
        if k == "agent" or (k == "receipt" and (mine is None or theirs is None)):
            continue  # where it was registered, and receipts, are this copy's knowledge, not the brain's
        if mine != theirs:
            out.append(f"predicate {k}: signed {json.dumps(mine)[:120]}, the brain gives {json.dumps(theirs)[:120]}")
    return out or ["the statement differs from the one this snapshot gives (its subjects' or predicate's members)"]
