"""Sibling keys (docs/lineage.md §8.7): the committed vectors, an independent HKDF, and the certification trailers."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ledger.brain import Brain
from ledger.protocol.signing import SignatureError, address_of
from ledger.signatures import siblings

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "siblings" / "derivation.json").read_text())["vectors"]
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def _hkdf(secret: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869 as cryptography implements it: an independent check of ours."""
    return HKDF(hashes.SHA256(), length, salt=b"brain-ledger/sibling/v1", info=info).derive(secret)


@pytest.mark.parametrize("v", VECTORS, ids=[v["address"] for v in VECTORS])
def test_vectors_match_an_independent_derivation(v: dict[str, str]) -> None:
    secret = bytes.fromhex(v["secret"])
    assert address_of(secret) == v["address"]
    seed = _hkdf(secret, b"ssh-ed25519", 32)
    assert seed.hex() == v["ed25519_seed"] == siblings.derive(secret, siblings.ED25519, 32).hex()
    okm = _hkdf(secret, b"ecdsa-sha2-nistp256", 48)
    assert okm.hex() == v["p256_okm"]
    scalar = int.from_bytes(okm, "big") % (N - 1) + 1
    ssh = (serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    p256 = ec.derive_private_key(scalar, ec.SECP256R1()).public_key().public_bytes(*ssh).decode()
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    ed = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(*ssh).decode()
    assert (ed, p256) == (v["ssh-ed25519"], v["ecdsa-sha2-nistp256"]) == siblings.public_lines(secret)


def test_every_signed_snapshot_certifies_its_signers_siblings(tmp_path: Path) -> None:
    brain = Brain.init(tmp_path / "b")
    try:
        brain.create("s", "The s skill", "one")
        store = brain._writer.store
        certified: dict[str, siblings.Siblings] = {}
        for snap in store.lineage():
            pair = siblings.Siblings.from_trailers(snap.trailers.get(siblings.SIBLING_TRAILER, []))
            assert pair.ed25519 and pair.p256, snap.message
            assert snap.message.index("Ledger-Sibling") < snap.message.index("Ledger-Signature")
            signer = snap.trailers["Ledger-Actor"][0]
            assert certified.setdefault(signer, pair) == pair  # one pair per key, every time
        with brain._writer.acting("agent"):
            brain.create("t", "The t skill", "two")
        last = next(store.lineage())
        assert last.trailers["Ledger-Actor"] == ["agent"]
        key = brain._writer.sealer.keys.load("agent")
        agent = siblings.Siblings.from_trailers(last.trailers[siblings.SIBLING_TRAILER])
        assert agent == siblings.Siblings(*siblings.public_lines(key.secret)) != certified["user"]
        assert agent.pem(siblings.P256).startswith(b"-----BEGIN PUBLIC KEY-----")
    finally:
        brain.close()


@pytest.mark.parametrize(
    "value",
    [
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQ==",  # another scheme
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAkHPtEnbXJ67CIqPPc/awM9Y38vXLQJjoGaiwuX2elj comment",  # a comment
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAkHPtEnbXJ67CIqPPc/awM9Y38vXLQJjoGaiwuX2el",  # bad base64
        "ssh-ed25519 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBD7Xoo7GSO3OXVt+JS9rKq+7RINRFKJLPKqPcQ9kmTvCVxGj"  # noqa: E501
        "TNySKQgLY58Jl3/rfKkezOFkm/6orYXHKyBq3n4=",  # a P-256 blob named Ed25519
        "ssh-ed25519  AAAAC3NzaC1lZDI1NTE5AAAAIAkHPtEnbXJ67CIqPPc/awM9Y38vXLQJjoGaiwuX2elj",  # two spaces
    ],
)
def test_malformed_sibling_lines_are_refused(value: str) -> None:
    with pytest.raises(SignatureError):
        siblings.Siblings.from_trailers([value])


def test_two_keys_of_one_scheme_are_refused() -> None:
    line = VECTORS[0]["ssh-ed25519"]
    other = VECTORS[1]["ssh-ed25519"]
    with pytest.raises(SignatureError, match="two ssh-ed25519"):
        siblings.Siblings.from_trailers([line, other])


def _blob_line(*fields: bytes) -> str:
    return f"{fields[0].decode()} " + base64.b64encode(b"".join(len(f).to_bytes(4, "big") + f for f in fields)).decode()


_POINT = base64.b64decode(VECTORS[0]["ecdsa-sha2-nistp256"].split(" ")[1])[-65:]


@pytest.mark.parametrize(
    "value",
    [
        _blob_line(b"ecdsa-sha2-nistp256", b"nistp384", _POINT),  # another curve inside a P-256 key
        _blob_line(b"ecdsa-sha2-nistp256", b"nistp256", b"\x04" + b"\xff" * 64),  # not a point on the curve
        _blob_line(b"ecdsa-sha2-nistp256", b"nistp256", b"\x04" + _POINT[1:33] + bytes(32)),  # x on it, y wrong
        _blob_line(b"ecdsa-sha2-nistp256", b"nistp256", b"\x02" + _POINT[1:33] + bytes(32)),  # not uncompressed
        "ssh-ed25519 " + base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0\x21" + bytes(32)).decode(),  # 33-byte key field
    ],
)
def test_sibling_keys_with_wrong_inner_fields_or_off_curve_points_are_refused(value: str) -> None:
    """Every refused line is the canonical length, so only the inner checks catch it; pem() never sees it."""
    with pytest.raises(SignatureError):
        siblings.Siblings.from_trailers([value])


def test_every_committed_vector_loads_and_gives_a_pem() -> None:
    for v in VECTORS:
        pair = siblings.Siblings.from_trailers([v["ssh-ed25519"], v["ecdsa-sha2-nistp256"]])
        assert pair.pem(siblings.P256).startswith(b"-----BEGIN PUBLIC KEY-----")


def test_siblings_is_skip_not_ok_when_no_snapshot_certifies_any(tmp_path: Path) -> None:
    """lineage.md §10: a check with nothing to check is SKIP, never OK.  An unsigned brain has no trailers."""
    from tests.harness.cli import run_ledger

    unsigned, signed = tmp_path / "u", tmp_path / "s"
    run_ledger("init", "--unsigned", str(unsigned), check=True)
    run_ledger("init", str(signed), check=True)
    for brain, status in ((unsigned, "SKIP"), (signed, "OK")):
        run_ledger("--brain", str(brain), "skill", "create", "a", "--description", "A", "--body", "x", check=True)
        proc = run_ledger("audit", str(brain), "--json")
        doc = json.loads(proc.stdout)
        chk = doc["checks"]["siblings"]
        assert proc.returncode == 0 and chk["ok"], proc.stdout
        assert ("SKIP" if chk["skipped"] else "OK") == status, chk
        assert ("siblings" in doc["skipped"]) == (status == "SKIP") and doc["verdict"].startswith("Verified OK")
