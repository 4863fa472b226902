"""Standard attestations of a brain's skills (issue 37): OpenSSF Model Signing (OMS) and in-toto.

What is attested is exactly what ``ledger export DIR --at REV`` writes (the agentskills
layout: ``<skill>/<path>``, quarantined or revoked skills left out), or one skill's folder.
A ledger key is secp256k1, which neither format takes, so the caller's role key signs with
its **P-256 sibling** (:mod:`ledger.signatures.siblings`).  A verifier trusts that sibling
because a snapshot signed by a key of the brain's trust set names it in a ``Ledger-Sibling``
trailer inside the EIP-712-signed text; both formats name the key by the SHA-256 of its
PEM (model_signing's own key hint).  The formats are docs/lineage/attestations.md.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger._json import depth, unique_keys
from ledger.bundle.merkle import file_digest, tree_of
from ledger.errors import KeystoreError, LedgerError, SkillNotFoundError
from ledger.protocol import signing
from ledger.protocol.bundlehash import KIND_EXEC, KIND_FILE, Digest
from ledger.protocol.jcs import canonical as jcs
from ledger.signatures import siblings
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.git import WHOLE, Git
from ledger.store.skilltree import skills_of
from ledger.store.supply import parse_record

if TYPE_CHECKING:
    from ledger.brain import Brain
    from ledger.signatures.identity import LocalKey

__all__ = [
    "AttestationError",
    "Attested",
    "attested",
    "b64_strict",
    "canonical",
    "certifier",
    "folder_digest",
    "key_id",
    "key_ids",
    "p256_pem",
    "signing_key",
    "sslib_key_id",
    "strict_loads",
]

_MAX_DEPTH = 16  # our documents nest 5 deep; a deeper one is refused before the parser sees it


class AttestationError(LedgerError):
    """An attestation cannot be made, or does not verify: the message names what failed."""


@dataclass(frozen=True)
class Attested:
    """The attested folder of one snapshot: ``rel → (bytes, executable)``, ``rel`` relative to the folder."""

    commit: bytes
    snapshot: gs.Snapshot
    name: str | None  # one skill, or None for every exported skill
    files: dict[str, tuple[bytes, bool]]
    withheld: list[str]


def attested(store: gs.GitStore, commit: bytes, name: str | None = None) -> Attested:
    """The files ``ledger export`` writes for snapshot ``commit`` (agentskills layout), or one skill's."""
    top = store.commit_info(commit)[0]
    skills = skills_of(store, top)[1]
    blob, record = store.supply_record(top)
    supply = parse_record(record) if blob is not None else None
    held = sorted(supply.withheld() & set(skills)) if supply is not None else []
    if name is not None:
        if name not in skills:
            raise SkillNotFoundError(
                f"snapshot {commit.hex()[:12]} has no skill {name!r}",
                hint="see 'ledger skill list', or pick another revision",
            )
        if name in held:
            assert supply is not None
            state = supply.skills[name].state
            fix = (
                f"review it ('ledger supply show {name}'), then 'ledger approve {name}' and attest again"
                if state == "quarantined"
                else "a revoked skill is never attested: attest one the brain serves"
            )
            raise AttestationError(
                f"skill {name!r} is {state} at {commit.hex()[:12]}, so export leaves it out", hint=fix
            )
        chosen = {name: skills[name]}
    else:
        chosen = {n: t for n, t in skills.items() if n not in held}
    files: dict[str, tuple[bytes, bool]] = {}
    for skill, tree in chosen.items():
        listing = th.files_of(store, tree)
        paths = sorted(listing)
        blobs = store.read_blobs([listing[p][1] for p in paths])
        prefix = "" if name is not None else f"{skill}/"
        for path, data in zip(paths, blobs, strict=True):
            files[prefix + path] = (data, listing[path][0] == gs.MODE_EXEC)
    return Attested(commit, store.snapshot(commit), name, files, held)


def folder_digest(files: dict[str, tuple[bytes, bool]]) -> bytes:
    """The ``blake3-tree-v1`` digest (docs/bundle-hash.md §4) of a folder holding ``files``: what
    ``ledger hash`` prints for the exported folder.  Built bottom-up, with no recursion."""
    return tree_of(
        {
            rel: Digest(KIND_EXEC if executable else KIND_FILE, file_digest(data))
            for rel, (data, executable) in files.items()
        }
    ).digest


def canonical(doc: Any) -> bytes:
    """The one serialisation of a signed statement: RFC 8785 canonical JSON (:func:`ledger.protocol.jcs.canonical`,
    as outcome records and ERC-8239 manifests use), so that no two parsers read one attestation two ways."""
    try:
        return jcs(doc)
    except ValueError as exc:
        raise AttestationError(f"a statement value has no canonical JSON form: {exc}") from exc


def strict_loads(data: bytes, what: str) -> Any:
    """JSON that reads one way only: UTF-8, no duplicate key, no NaN, bounded depth."""
    if depth(data) > _MAX_DEPTH:
        raise AttestationError(f"{what} nests deeper than {_MAX_DEPTH} levels")
    try:
        return json.loads(
            data.decode("utf-8"),
            object_pairs_hook=unique_keys,
            parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)),
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise AttestationError(f"{what} is not valid JSON: {exc}") from None


def b64_strict(value: Any, what: str) -> bytes:
    """Standard base64 with padding, in its one canonical spelling (no white space, no stray bits)."""
    import base64

    try:
        raw = base64.b64decode(value, validate=True) if isinstance(value, str) else None
    except ValueError:
        raw = None
    if raw is None or base64.b64encode(raw).decode() != value:
        raise AttestationError(f"{what} is not canonical base64")
    return raw


def key_id(pem: bytes) -> str:
    """The PEM key id of a P-256 sibling: SHA-256 of its SubjectPublicKeyInfo PEM, in hex
    (model_signing's ``verificationMaterial.publicKey.hint``; the DSSE ``keyid`` of in-toto envelopes
    made before lineage v1.11, which verifiers still accept: docs/lineage/attestations.md §2)."""
    return hashlib.sha256(pem).hexdigest()


def sslib_key_id(pem: bytes) -> str:
    """securesystemslib's default key id of a P-256 sibling (lineage/attestations.md §2, v1.11), the DSSE ``keyid`` of
    in-toto envelopes: SHA-256 of the OLPC canonical JSON of its key object.  That JSON escapes only ``"``
    and backslash, which no PEM holds, so the PEM's bytes (line feeds included) stand in it as they are."""
    key = b'{"keytype":"ecdsa","keyval":{"public":"' + pem + b'"},"scheme":"ecdsa-sha2-nistp256"}'
    return hashlib.sha256(key).hexdigest()


def key_ids(pem: bytes) -> tuple[str, str]:
    """Every key id a verifier accepts for a P-256 sibling: securesystemslib's default, then the PEM key id."""
    return sslib_key_id(pem), key_id(pem)


def p256_pem(secret: bytes) -> bytes:
    from cryptography.hazmat.primitives import serialization as ser

    public = siblings.p256_key(secret).public_key()
    return public.public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)


def signing_key(brain: Brain, commit: bytes, role: str) -> LocalKey:
    """This machine's ``role`` key that the trust set at ``commit`` names (the writer's own choice, ADR 26)."""
    trust = brain.store.trust_at(brain.store.commit_info(commit)[0].hex())[1]
    key = brain.key_for(trust, role)
    if isinstance(key, tuple):
        why, fix = key
        raise KeystoreError(f"cannot attest as {role}: {why} at {commit.hex()[:12]}", hint=fix)
    return key


def _signer(snap: gs.Snapshot) -> str | None:
    """The address a snapshot's ``Ledger-Signature`` recovers, or None (unsigned, or not canonical)."""
    if snap.signature is None or len(snap.trailers.get(signing.SIGNATURE_TRAILER, [])) != 1:
        return None
    text, last = signing.split_signature(snap.message)
    if last != snap.signature:
        return None
    parent = bytes.fromhex(snap.parents[0]) if snap.parents else None
    try:
        digest = signing.digest(
            snap.root, snap.parent_root, parent, bytes.fromhex(snap.tree), snap.attribution.get("actor", ""), text
        )
        return signing.recover(digest, last)
    except LedgerError:
        return None


def certifier(store: gs.GitStore, head: bytes, kid: str) -> tuple[str, str, siblings.Siblings] | None:
    """``(address, snapshot commit, its siblings)`` of the newest signed snapshot reachable from ``head``
    whose ``Ledger-Sibling`` P-256 key has key id ``kid``; None when no snapshot certifies it.  A key
    that two addresses certify is refused: whose attestation it signs would be ambiguous."""
    fmt = f"%H%x1f%(trailers:key={siblings.SIBLING_TRAILER},valueonly,separator=%x1f)%x1e"
    proc = Git(store.git_dir).call("log", f"--format={fmt}", head.hex(), "--", timeout=WHOLE)
    if proc.returncode != 0:
        raise AttestationError(f"cannot read the brain's history: {proc.stderr.decode(errors='replace')[-200:]}")
    ids: dict[str, tuple[str, ...]] = {}
    found: dict[str, tuple[str, str, siblings.Siblings]] = {}  # address → its newest certification
    for record in proc.stdout.decode("utf-8", "replace").split("\x1e"):
        commit, *values = record.strip("\n").split("\x1f")
        for value in (v.strip() for v in values):
            if not value.startswith(siblings.P256 + " "):
                continue
            if value not in ids:
                try:
                    ids[value] = key_ids(siblings.Siblings(None, value).pem(siblings.P256))
                except (LedgerError, ValueError):
                    ids[value] = ()
            if kid not in ids[value]:
                continue
            snap = store.snapshot(bytes.fromhex(commit))
            try:
                certified = siblings.Siblings.from_trailers(snap.trailers.get(siblings.SIBLING_TRAILER, []))
            except LedgerError:
                continue
            address = _signer(snap)  # the certification is the EIP-712 signature over the trailer
            if address is not None and certified.p256 == value:
                found.setdefault(address, (address, commit, certified))
    if len(found) > 1:
        raise AttestationError(
            f"the key {kid[:16]}… is certified by {' and '.join(sorted(found))}, so whose "
            "attestation it signs is ambiguous",
            hint="run 'ledger audit'",
        )
    return next(iter(found.values()), None)
