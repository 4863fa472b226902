"""OpenSSF Model Signing v1.0 (OMS) signatures of an attested folder, as ``model_signing sign key`` writes them.

A Sigstore bundle (media type ``application/vnd.dev.sigstore.bundle.v0.3+json``) holding a
DSSE envelope over an in-toto Statement v1 whose predicate (``https://model_signing/signature/v1.0``)
lists every file with its SHA-256, in model_signing's order (by path components), under the
serialization ``files``/``sha256``; the one subject is the folder, digested as SHA-256 over
the resource digests in that order.  The stock verifier (``model_signing verify key DIR
--signature FILE --public_key PEM``) accepts it: tests/protocol/test_attest.py runs it.

Ours differs from the stock signer's output only where the format leaves a choice: the
statement is serialised canonically (sorted keys, no white space), the subject is named
``skills@<commit>`` or ``skills/<skill>@<commit>`` (model_signing takes the name as
informative only), and its digest carries ``blake3-tree-v1`` beside ``sha256``: the folder's
bundle digest, what ``ledger hash DIR`` prints for the export.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from ledger.attestations.subjects import AttestationError, Attested, b64_strict, canonical, folder_digest, strict_loads

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey

__all__ = ["BUNDLE_MEDIA_TYPE", "IGNORE_PATHS", "PREDICATE_TYPE", "make", "open_bundle", "problems", "subject_name"]

BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
PREDICATE_TYPE = "https://model_signing/signature/v1.0"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
# What model_signing's verifier leaves out at the folder's top whatever the signature says (its hashing.Config).
IGNORE_PATHS = (".git", ".gitattributes", ".github", ".gitignore")
_NAME = re.compile(r"skills(?:/([a-z0-9]+(?:-[a-z0-9]+)*))?@([0-9a-f]{40})")


def pae(payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding of an in-toto payload."""
    return b"DSSEv1 %d %b %d %b" % (len(PAYLOAD_TYPE), PAYLOAD_TYPE.encode(), len(payload), payload)


def _order(rel: str) -> tuple[str, ...]:
    """model_signing sorts resources as ``PurePosixPath`` objects: by path components, not by the string."""
    return tuple(rel.split("/"))


def folder_sha256(files: dict[str, tuple[bytes, bool]]) -> str:
    """A folder's SHA-256 as OMS defines its subject: SHA-256 over the files' SHA-256 digests, in
    model_signing's order.  in-toto attestations use it too, so every subject carries sha256."""
    root = hashlib.sha256()
    for rel in sorted(files, key=_order):
        root.update(hashlib.sha256(files[rel][0]).digest())
    return root.hexdigest()


def subject_name(att: Attested) -> str:
    return ("skills" if att.name is None else f"skills/{att.name}") + "@" + att.commit.hex()


def statement(att: Attested) -> dict[str, Any]:
    """The in-toto statement model_signing verifies, for the attested folder."""
    tops = sorted({rel.split("/")[0] for rel in att.files} & set(IGNORE_PATHS))
    if tops:
        raise AttestationError(
            f"the folder holds {', '.join(tops)} at its top, which model_signing's verifier "
            "always leaves out, so an OMS signature could not cover it",
            hint="attest the whole brain, or use --format intoto",
        )
    resources = [
        {"algorithm": "sha256", "digest": hashlib.sha256(att.files[rel][0]).hexdigest(), "name": rel}
        for rel in sorted(att.files, key=_order)
    ]
    return {
        "_type": STATEMENT_TYPE,
        "predicate": {
            "resources": resources,
            "serialization": {
                "allow_symlinks": False,
                "hash_type": "sha256",
                "ignore_paths": list(IGNORE_PATHS),
                "method": "files",
            },
        },
        "predicateType": PREDICATE_TYPE,
        "subject": [
            {
                "digest": {"blake3-tree-v1": folder_digest(att.files).hex(), "sha256": folder_sha256(att.files)},
                "name": subject_name(att),
            }
        ],
    }


def make(att: Attested, key: EllipticCurvePrivateKey, hint: str) -> bytes:
    """The signature file: a Sigstore bundle as model_signing's key signer writes it (compact JSON)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    payload = canonical(statement(att))
    sig = key.sign(pae(payload), ec.ECDSA(hashes.SHA256()))
    bundle = {
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": hint}, "tlogEntries": []},
        "dsseEnvelope": {
            "payload": base64.b64encode(payload).decode(),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"sig": base64.b64encode(sig).decode(), "keyid": ""}],
        },
    }
    return json.dumps(bundle, separators=(",", ":")).encode()


def _exact(doc: Any, keys: set[str], what: str) -> dict[str, Any]:
    if not isinstance(doc, dict) or set(doc) != keys:
        raise AttestationError(f"{what} must be an object with exactly {', '.join(sorted(keys))}")
    return doc


def open_bundle(doc: dict[str, Any]) -> tuple[str, bytes, bytes, dict[str, Any]]:
    """``(key hint, payload, DER signature, statement)`` of a bundle; refuses any other shape."""
    _exact(doc, {"mediaType", "verificationMaterial", "dsseEnvelope"}, "an OMS bundle")
    if doc["mediaType"] != BUNDLE_MEDIA_TYPE:
        raise AttestationError(f"the bundle's mediaType is not {BUNDLE_MEDIA_TYPE}")
    material = _exact(doc["verificationMaterial"], {"publicKey", "tlogEntries"}, "verificationMaterial")
    hint = _exact(material["publicKey"], {"hint"}, "verificationMaterial.publicKey")["hint"]
    if material["tlogEntries"] != [] or not isinstance(hint, str) or not re.fullmatch(r"[0-9a-f]{64}", hint):
        raise AttestationError("verificationMaterial must name the key by a 64-hex hint, with no tlog entries")
    env = _exact(doc["dsseEnvelope"], {"payload", "payloadType", "signatures"}, "dsseEnvelope")
    if env["payloadType"] != PAYLOAD_TYPE:
        raise AttestationError(f"the envelope's payloadType is not {PAYLOAD_TYPE}")
    if not isinstance(env["signatures"], list) or len(env["signatures"]) != 1:
        raise AttestationError("the envelope must hold exactly one signature")
    one = _exact(env["signatures"][0], {"sig", "keyid"}, "the signature")
    if one["keyid"] != "":
        raise AttestationError("an OMS signature's keyid is empty (the key is named by the hint)")
    payload = b64_strict(env["payload"], "the payload")
    stmt = strict_loads(payload, "the statement")
    if canonical(stmt) != payload:
        raise AttestationError("the statement is not in canonical form (sorted keys, no white space)")
    return hint, payload, b64_strict(one["sig"], "the signature"), stmt


def check_signature(pem: bytes, payload: bytes, sig: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    public = serialization.load_pem_public_key(pem)
    assert isinstance(public, ec.EllipticCurvePublicKey)
    try:
        public.verify(sig, pae(payload), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def named(stmt: dict[str, Any]) -> tuple[str | None, str] | None:
    """``(skill or None, commit hex)`` from the subject's name, or None when it names no snapshot."""
    try:
        m = _NAME.fullmatch(stmt["subject"][0]["name"])
    except (KeyError, IndexError, TypeError):
        return None
    return (m[1], m[2]) if m else None


def problems(stmt: dict[str, Any], att: Attested) -> list[str]:
    """What differs between a verified statement and the attested folder at its snapshot (empty: none)."""
    if stmt != statement(att):
        try:
            signed = {r["name"]: r["digest"] for r in stmt["predicate"]["resources"]}
        except (KeyError, TypeError):
            return ["the statement is not an OMS v1.0 statement of a folder"]
        here = {rel: hashlib.sha256(data).hexdigest() for rel, (data, _) in att.files.items()}
        out = [f"changed file {rel}" for rel in sorted(set(signed) & set(here)) if signed[rel] != here[rel]]
        out += [f"missing file {rel} (signed, not in the brain)" for rel in sorted(set(signed) - set(here))]
        out += [f"extra file {rel} (in the brain, not signed)" for rel in sorted(set(here) - set(signed))]
        return out or ["the statement differs from the one this snapshot gives (its subject or serialization)"]
    return []
