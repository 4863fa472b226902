"""``ledger attest`` and ``ledger verify --attestation`` (issue 37), against the real verifiers.

OMS: the stock ``model_signing`` CLI (PyPI ``model-signing``), in a virtual environment of its own
(``.venv-verify/``, the outside verifiers of docs/verify-without-ledger.md, made on first use from the
hashed lock requirements/verify-without-ledger.txt,
and brought to it again when the lock changes), verifies ``ledger export``'s folder with the
P-256 sibling's PEM taken from the certified ``Ledger-Sibling`` trailer.  Outside CI the OMS
test skips, saying why, when the package cannot be installed; in CI (LEDGER_CI=1) it must run.
in-toto: securesystemslib's own DSSE verification, and the subjects against the exported files.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from blake3 import blake3

from ledger.attestations import intoto, oms
from ledger.attestations.subjects import AttestationError, Attested, canonical, key_id, p256_pem, sslib_key_id
from ledger.brain import Brain
from ledger.protocol.messages import Snapshot
from ledger.signatures.siblings import P256, Siblings
from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger
from tests.harness.venvs import venv_python

VENV = Path(__file__).resolve().parents[2] / ".venv-verify"  # the one outside-verifier venv (verify-without-ledger)
LOCK = VENV.parent / "requirements" / "verify-without-ledger.txt"
VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "attest" / "vectors.json"
SSLIB_VECTOR = VECTORS.with_name("intoto-sslib-keyid.json")


def _model_signing() -> Path:
    """The stock ``model_signing`` console script, installed from the hashed lock on first use."""
    return venv_python(VENV, LOCK, "the tools of docs/verify-without-ledger.md").with_name("model_signing")


@pytest.fixture
def made(tmp_path: Path) -> Path:
    """A brain whose skills sort differently by string and by path component (``a-b/`` and ``a/``),
    with a supporting file and an executable one."""
    with make_brain(tmp_path / "brain", {"a": ("A", "alpha")}) as b:
        b.write_file("a", "b/x.md", b"nested\n")
        b.create("a-b", "AB", "beta")
        b.write_file("a-b", "scripts/run.sh", b"#!/bin/sh\necho hi\n", executable=True)
    return tmp_path / "brain"


def _pem(brain: Path, address_role: str = "user") -> bytes:
    """The P-256 sibling's PEM, from the Ledger-Sibling trailer of the newest snapshot signed in that role."""
    with Brain.open(brain) as b:
        for snap in b.store.lineage():
            if snap.attribution.get("actor") == address_role and snap.trailers.get("Ledger-Sibling"):
                return Siblings.from_trailers(snap.trailers["Ledger-Sibling"]).pem(P256)
    raise AssertionError("no certified sibling")


def _export(brain: Path, dest: Path, *rev: str) -> Path:
    run_ledger("--brain", str(brain), "export", str(dest), *(("--at", rev[0]) if rev else ()), check=True)
    return dest


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_stock_model_signing_cli_verifies_an_oms_attestation(made: Path, tmp_path: Path) -> None:
    script = _model_signing()
    sig = tmp_path / "skills.sig"
    run_ledger("--brain", str(made), "attest", "--format", "oms", "-o", str(sig), check=True)
    one = tmp_path / "a-b.sig"
    run_ledger("--brain", str(made), "attest", "a-b", "--format", "oms", "-o", str(one), check=True)
    folder = _export(made, tmp_path / "out")
    pem = tmp_path / "sibling.pem"
    pem.write_bytes(_pem(made))

    def stock(model: Path, signature: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(script), "verify", "key", str(model), "--signature", str(signature), "--public_key", str(pem)],
            capture_output=True,
            text=True,
            timeout=300,
        )

    ok = stock(folder, sig)
    assert ok.returncode == 0 and "Verification succeeded" in ok.stdout, ok.stdout + ok.stderr
    ok = stock(folder / "a-b", one)
    assert ok.returncode == 0 and "Verification succeeded" in ok.stdout, ok.stdout + ok.stderr
    target = folder / "a-b" / "scripts" / "run.sh"
    data = bytearray(target.read_bytes())
    data[3] ^= 0x01  # one byte of one skill file
    target.write_bytes(bytes(data))
    bad = stock(folder, sig)
    assert bad.returncode != 0 and "a-b/scripts/run.sh" in bad.stdout + bad.stderr, bad.stdout + bad.stderr
    # ours agrees: the statement's folder digest is what 'ledger hash' prints for the untouched export
    stmt = json.loads(base64.b64decode(json.loads(sig.read_bytes())["dsseEnvelope"]["payload"]))
    fresh = _export(made, tmp_path / "again")
    shown = run_ledger("hash", str(fresh), check=True).stdout.split()[0]
    assert shown == "blake3-tree-v1:" + stmt["subject"][0]["digest"]["blake3-tree-v1"]


def test_securesystemslib_verifies_an_intoto_attestation_of_every_exported_file(made: Path, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey

    out = tmp_path / "brain.intoto.json"
    run_ledger("--brain", str(made), "attest", "--format", "intoto", "-o", str(out), check=True)
    pem = _pem(made)
    key = SSlibKey.from_crypto(serialization.load_pem_public_key(pem))  # securesystemslib's defaults: no keyid
    env = Envelope.from_dict(json.loads(out.read_bytes()))
    assert env.payload_type == "application/vnd.in-toto+json"
    assert list(env.verify([key], 1)) == [key.keyid]
    stmt = json.loads(env.payload)
    assert stmt["_type"] == "https://in-toto.io/Statement/v1"
    assert stmt["predicateType"] == "https://brain-ledger.dev/attestation/snapshot/v1"
    files = _files(_export(made, tmp_path / "out"))
    subjects = {s["name"]: s["digest"] for s in stmt["subject"]}
    brain = [n for n in subjects if n.startswith("brain:")]
    assert len(brain) == 1
    assert {n: d for n, d in subjects.items() if n not in brain} == {
        f"skills/{rel}": {"sha256": hashlib.sha256(data).hexdigest(), "blake3": blake3(data).hexdigest()}
        for rel, data in files.items()
    }
    with Brain.open(made) as b:
        head = b.store.snapshot(b.head().commit)
        user = b._keys.peek("user")
    # sha256 as OMS digests a folder: SHA-256 over the files' SHA-256 digests, by path components
    folder = hashlib.sha256(
        b"".join(hashlib.sha256(files[rel]).digest() for rel in sorted(files, key=lambda r: r.split("/")))
    ).hexdigest()
    assert subjects[brain[0]] == {"blake3-tree-v1": head.root.hex(), "gitCommit": head.commit, "sha256": folder}
    pred = stmt["predicate"]
    assert (pred["snapshot"]["commit"], pred["snapshot"]["parentCommit"]) == (head.commit, head.parents[0])
    assert (pred["snapshot"]["sequence"], pred["actor"], pred["signer"]) == (4, "user", user)
    assert pred["receipt"] is None and pred["agent"] is None and pred["skill"] is None
    tampered = json.loads(out.read_bytes())
    tampered["payload"] = base64.b64encode(env.payload.replace(b'"actor":"user"', b'"actor":"agent"')).decode()
    with pytest.raises(VerificationError):
        Envelope.from_dict(tampered).verify([key], 1)


def test_verify_attestation_names_what_failed(made: Path, tmp_path: Path) -> None:
    b = ("--brain", str(made))
    paths = {fmt: tmp_path / f"a.{fmt}" for fmt in ("oms", "intoto")}
    for fmt, path in paths.items():
        run_ledger(*b, "attest", "--format", fmt, "-o", str(path), check=True)
    for path in paths.values():
        ok = run_ledger(*b, "verify", "--attestation", str(path))
        assert ok.returncode == 0 and "Verified OK" in ok.stdout, ok.stderr
    with Brain.open(made) as brain:
        brain.patch("a", "alpha", "alpha two")
    for fmt, path in paths.items():
        assert run_ledger(*b, "verify", "--attestation", str(path)).returncode == 0  # it names its snapshot
        moved = run_ledger(*b, "verify", "--attestation", str(path), "HEAD")
        assert moved.returncode == 1 and "changed file a/SKILL.md" in moved.stderr, (fmt, moved.stderr)
    doc = json.loads(paths["intoto"].read_bytes())
    sig = bytearray(base64.b64decode(doc["signatures"][0]["sig"]))
    sig[-1] ^= 1
    doc["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    (tmp_path / "bad-sig.json").write_text(json.dumps(doc))
    bad = run_ledger(*b, "verify", "--attestation", str(tmp_path / "bad-sig.json"))
    assert bad.returncode == 1 and "bad signature" in bad.stderr, bad.stderr
    from cryptography.hazmat.primitives.asymmetric import ec

    with Brain.open(made) as brain:  # a well-formed statement signed by a key no snapshot certifies
        from ledger.attestations.subjects import attested

        att = attested(brain.store, brain.head().commit)
    stranger = ec.generate_private_key(ec.SECP256R1())
    from cryptography.hazmat.primitives import serialization as ser

    spki = stranger.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "stranger.sig").write_bytes(oms.make(att, stranger, key_id(spki)))
    unknown = run_ledger(*b, "verify", "--attestation", str(tmp_path / "stranger.sig"))
    assert unknown.returncode == 1 and "unknown key" in unknown.stderr, unknown.stderr
    usage = run_ledger(*b, "verify", "HEAD")
    assert usage.returncode == 2


def test_an_agent_attests_once_its_key_has_certified_its_siblings(made: Path, tmp_path: Path) -> None:
    b = ("--brain", str(made))
    refused = run_ledger(*b, "attest", "--format", "intoto", "--actor", "agent", "-o", str(tmp_path / "x"))
    assert (
        refused.returncode == 1 and "certified no sibling key" in refused.stderr and "--actor agent" in refused.stderr
    ), refused.stderr
    assert not (tmp_path / "x").exists()
    with Brain.open(made) as brain, brain.acting("agent"):
        brain.patch("a", "alpha", "alpha by the agent")
    run_ledger(
        *b, "attest", "HEAD~1", "a", "--format", "intoto", "--actor", "agent", "-o", str(tmp_path / "x"), check=True
    )
    stmt = json.loads(base64.b64decode(json.loads((tmp_path / "x").read_bytes())["payload"]))
    assert stmt["predicate"]["actor"] == "agent" and stmt["predicate"]["skill"] == "a"
    assert {s["name"] for s in stmt["subject"]} - {
        s["name"] for s in stmt["subject"] if s["name"].startswith("brain:")
    } == {"skills/a/SKILL.md", "skills/a/b/x.md"}
    out = run_ledger(*b, "verify", "--attestation", str(tmp_path / "x"), "--json", check=True)
    assert json.loads(out.stdout)["role"] == "agent"


def test_malformed_and_ambiguous_attestations_are_refused(made: Path, tmp_path: Path) -> None:
    sig = tmp_path / "a.sig"
    run_ledger("--brain", str(made), "attest", "--format", "oms", "-o", str(sig), check=True)
    good = sig.read_text()
    doc = json.loads(good)
    payload = base64.b64decode(doc["dsseEnvelope"]["payload"])
    spaced = {
        **doc,
        "dsseEnvelope": {
            **doc["dsseEnvelope"],
            "payload": base64.b64encode(json.dumps(json.loads(payload), indent=2).encode()).decode(),
        },
    }
    cases = {
        "duplicate key": good.replace('{"mediaType"', '{"mediaType":"x","mediaType"', 1),
        "not canonical": json.dumps(spaced),
        "not json": "{",
        "neither format": "{}",
        "two signatures": good.replace('"signatures":[', '"signatures":[{"sig":"","keyid":""},', 1),
        "base64 with white space": good.replace('"payload":"', '"payload":" ', 1),
    }
    env = tmp_path / "a.intoto"
    run_ledger("--brain", str(made), "attest", "--format", "intoto", "-o", str(env), check=True)
    envelope = env.read_text()
    cases |= {
        "in-toto: base64 with white space": envelope.replace('"sig":"', '"sig":" ', 1),
        "in-toto: a second member": envelope.replace('{"payload"', '{"extra":1,"payload"', 1),
        "in-toto: duplicate keyid": envelope.replace('"keyid":', '"keyid":"x","keyid":', 1),
    }
    for what, text in cases.items():
        path = tmp_path / "case.json"
        path.write_text(text)
        proc = run_ledger("--brain", str(made), "verify", "--attestation", str(path))
        assert proc.returncode == 1 and proc.stderr.startswith("error:"), (what, proc.stderr)


def _vector_attested(vec: dict) -> Attested:
    files = {rel: (base64.b64decode(f["data"]), f["executable"]) for rel, f in vec["files"].items()}
    s = vec["snapshot"]
    snap = Snapshot(
        commit=s["commit"],
        tree=s["tree"],
        parents=(s["parent"],),
        root=bytes.fromhex(s["root"]),
        parent_root=bytes.fromhex(s["parent_root"]),
        operation=s["operation"],
        changes=(),
        message="",
        timestamp=0,
    )
    return Attested(bytes.fromhex(s["commit"]), snap, None, files, [])


def test_committed_vectors() -> None:
    """Exact bytes: the sibling's PEM and key id, both statements, and signatures made once that must verify."""
    vec = json.loads(VECTORS.read_text())
    secret = bytes.fromhex(vec["secret"])
    pem = p256_pem(secret)
    assert pem.decode() == vec["p256_pem"] and key_id(pem) == vec["keyid"]
    att = _vector_attested(vec)
    oms_payload = canonical(oms.statement(att))
    it = intoto.statement(att, brain="vector", sequence=7, agent=None, actor="user", signer=vec["signer"], receipt=None)
    # regenerate: LEDGER_WRITE_VECTORS=1 pytest tests/protocol/test_attest.py
    if os.environ.get("LEDGER_WRITE_VECTORS"):
        from ledger.signatures.siblings import p256_key

        vec.update(
            oms_statement=oms_payload.decode(),
            intoto_statement=canonical(it).decode(),
            oms_bundle=oms.make(att, p256_key(secret), vec["keyid"]).decode(),
            intoto_envelope=intoto.make(it, p256_key(secret), vec["keyid"]).decode(),
        )
        VECTORS.write_text(json.dumps(vec, indent=2, ensure_ascii=False) + "\n")
    assert oms_payload.decode() == vec["oms_statement"]
    assert canonical(it).decode() == vec["intoto_statement"]
    hint, payload, sig, _ = oms.open_bundle(json.loads(vec["oms_bundle"]))
    assert (hint, payload) == (vec["keyid"], oms_payload) and oms.check_signature(pem, payload, sig)
    kid, env, _ = intoto.open_envelope(json.loads(vec["intoto_envelope"]))
    assert kid == vec["keyid"] and env.payload == canonical(it) and intoto.check_signature(env, pem, kid)
    assert not intoto.check_signature(env, p256_pem(b"\x22" * 32), kid)


def test_the_sslib_key_id_vector() -> None:
    """The v1.11 key id, byte for byte as lineage/attestations.md §2 writes it, is securesystemslib's own default; the
    envelope signed
    with it verifies with a stock key, and the pre-v1.11 envelope (PEM key id) does not, but both verify here."""
    from cryptography.hazmat.primitives import serialization
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey

    vec = json.loads(SSLIB_VECTOR.read_text())
    old = json.loads(VECTORS.read_text())
    pem = p256_pem(bytes.fromhex(vec["secret"]))
    # regenerate: LEDGER_WRITE_VECTORS=1 pytest tests/protocol/test_attest.py
    if os.environ.get("LEDGER_WRITE_VECTORS"):
        from ledger.signatures.siblings import p256_key

        obj = b'{"keytype":"ecdsa","keyval":{"public":"' + pem + b'"},"scheme":"ecdsa-sha2-nistp256"}'
        vec.update(
            p256_pem=pem.decode(),
            pem_keyid=key_id(pem),
            key_object=obj.decode(),
            sslib_keyid=hashlib.sha256(obj).hexdigest(),
            intoto_envelope=intoto.make(
                json.loads(old["intoto_statement"]), p256_key(bytes.fromhex(vec["secret"]))
            ).decode(),
        )
        SSLIB_VECTOR.write_text(json.dumps(vec, indent=2, ensure_ascii=False) + "\n")
    assert pem.decode() == vec["p256_pem"] == old["p256_pem"] and key_id(pem) == vec["pem_keyid"] == old["keyid"]
    key_object = b'{"keytype":"ecdsa","keyval":{"public":"' + pem + b'"},"scheme":"ecdsa-sha2-nistp256"}'
    assert vec["key_object"].encode() == key_object
    assert sslib_key_id(pem) == hashlib.sha256(vec["key_object"].encode()).hexdigest() == vec["sslib_keyid"]
    stock = SSlibKey.from_crypto(serialization.load_pem_public_key(pem))
    assert stock.keyid == vec["sslib_keyid"]
    assert list(Envelope.from_dict(json.loads(vec["intoto_envelope"])).verify([stock], 1)) == [stock.keyid]
    with pytest.raises(VerificationError):  # the old form names the key otherwise: a stock key is not found
        Envelope.from_dict(json.loads(old["intoto_envelope"])).verify([stock], 1)
    for doc, kid in ((vec["intoto_envelope"], vec["sslib_keyid"]), (old["intoto_envelope"], old["keyid"])):
        got, env, stmt = intoto.open_envelope(json.loads(doc))
        assert got == kid and canonical(stmt).decode() == old["intoto_statement"]
        assert intoto.check_signature(env, pem, kid) and not intoto.check_signature(env, p256_pem(b"\x22" * 32), kid)


def test_an_envelope_naming_its_key_by_the_pem_key_id_still_verifies(made: Path, tmp_path: Path) -> None:
    """New envelopes carry securesystemslib's key id; one made before v1.11 (PEM key id) verifies all the same,
    and an OMS bundle whose hint is the securesystemslib key id is refused (its hint is the PEM key id)."""
    b = ("--brain", str(made))
    new = tmp_path / "new.intoto"
    shown = json.loads(run_ledger(*b, "attest", "--format", "intoto", "-o", str(new), "--json", check=True).stdout)
    pem = _pem(made)
    assert json.loads(new.read_bytes())["signatures"][0]["keyid"] == shown["keyid"] == sslib_key_id(pem)
    with Brain.open(made) as brain:
        doc = json.loads(new.read_bytes())
        stmt = json.loads(base64.b64decode(doc["payload"]))
        secret = brain._sealer.key_for(
            brain.store.trust_at(brain.store.commit_info(brain.head().commit)[0].hex())[1], "user"
        ).secret
    from ledger.signatures.siblings import p256_key

    old = tmp_path / "old.intoto"
    old.write_bytes(intoto.make(stmt, p256_key(secret), key_id(pem)))
    assert json.loads(old.read_bytes())["signatures"][0]["keyid"] == key_id(pem)
    for path, kid in ((new, sslib_key_id(pem)), (old, key_id(pem))):
        ok = json.loads(run_ledger(*b, "verify", "--attestation", str(path), "--json", check=True).stdout)
        assert ok["ok"] is True and ok["keyid"] == kid, ok
    oms_doc = tmp_path / "a.oms"
    run_ledger(*b, "attest", "--format", "oms", "-o", str(oms_doc), check=True)
    doc = json.loads(oms_doc.read_bytes())
    assert doc["verificationMaterial"]["publicKey"]["hint"] == key_id(pem)  # OMS unchanged
    doc["verificationMaterial"]["publicKey"]["hint"] = sslib_key_id(pem)
    oms_doc.write_text(json.dumps(doc, separators=(",", ":")))
    bad = run_ledger(*b, "verify", "--attestation", str(oms_doc))
    assert bad.returncode == 1 and "hint" in bad.stderr + bad.stdout, bad


def test_an_oms_folder_with_a_top_level_git_file_is_refused() -> None:
    vec = json.loads(VECTORS.read_text())
    att = _vector_attested(vec)
    att.files[".gitignore"] = (b"x\n", False)  # a single skill's folder may hold one; model_signing ignores it
    with pytest.raises(AttestationError, match="always leaves out"):
        oms.statement(att)


def test_a_sibling_certified_by_two_addresses_is_ambiguous(made: Path, tmp_path: Path) -> None:
    """A forged head re-signs the user's signed text, Ledger-Sibling trailers and all, with another key:
    two addresses then certify one sibling, and no attestation by it is believed."""
    from ledger.attestations.attest import attest, verify_attestation
    from ledger.protocol import signing

    with Brain.open(made) as b:
        data, _ = attest(b, None, None, "intoto")
        head = b.head().commit
        snap = b.store.snapshot(head)
        text, _ = signing.split_signature(snap.message)
        tree, parent = bytes.fromhex(snap.tree), bytes.fromhex(snap.parents[0])
        digest = signing.digest(snap.root, snap.parent_root, parent, tree, snap.attribution["actor"], text)
        other = b"\x42" * 32
        forged = b.store.write_commit(tree, [parent], text + f"Ledger-Signature: {signing.sign(other, digest)}\n")
        assert verify_attestation(b, data)["ok"]
        b.store.move_head(forged, head)
    with Brain.open(made) as b, pytest.raises(AttestationError, match=r"is certified by .* and .*ambiguous"):
        verify_attestation(b, data)


def test_withheld_skills_are_left_out_as_export_leaves_them_out(made: Path, tmp_path: Path) -> None:
    from ledger.attestations.subjects import attested
    from ledger.store.supply import QUARANTINED
    from tests.unit.supply.test_quarantine import _mark

    _mark(made, **{"a-b": QUARANTINED})
    folder = _export(made, tmp_path / "out")
    with Brain.open(made) as b:
        att = attested(b.store, b.head().commit)
    assert {rel: data for rel, (data, _) in att.files.items()} == _files(folder) and att.withheld == ["a-b"]
    out = tmp_path / "x.intoto"
    run_ledger("--brain", str(made), "attest", "--format", "intoto", "-o", str(out), check=True)
    stmt = json.loads(base64.b64decode(json.loads(out.read_bytes())["payload"]))
    assert stmt["predicate"]["withheld"] == ["a-b"] and not any("a-b" in s["name"] for s in stmt["subject"])
    refused = run_ledger("--brain", str(made), "attest", "HEAD", "a-b", "--format", "oms")
    assert refused.returncode == 1 and "is quarantined at" in refused.stderr and not refused.stdout
    assert "hint: review it ('ledger supply show a-b'), then 'ledger approve a-b'" in refused.stderr, refused.stderr
    missing = run_ledger("--brain", str(made), "attest", "HEAD", "no-such", "--format", "oms")
    assert missing.returncode == 1 and "see 'ledger skill list'" in missing.stderr, missing.stderr


@pytest.mark.chain
def test_an_anchored_snapshot_carries_its_agent_and_receipt(chained: Brain) -> None:
    """Real anvil: the predicate holds the registered agent and the snapshot's chain receipt."""
    from ledger.anchoring.commits import commit_pending
    from ledger.attestations.attest import attest, verify_attestation
    from ledger.chain.keys import DEV_KEY_NAME
    from ledger.chain.receipts import receipt_of

    chained.create("s", "S", "body")
    commit_pending(chained, key=DEV_KEY_NAME)
    head = chained.head().commit
    receipt = receipt_of(chained.store, head.hex())
    assert receipt is not None and receipt["seq"] >= 1
    data, _ = attest(chained, None, None, "intoto")
    pred = json.loads(base64.b64decode(json.loads(data)["payload"]))["predicate"]
    agent = chained.config["chain"]["agent_id"]  # written as 0x and 64 hex digits (ChainConfig.save)
    assert pred["receipt"] == receipt and pred["agent"] == agent and len(agent) == 66
    assert verify_attestation(chained, data)["ok"]


def _vector_statement() -> dict:
    vec = json.loads(VECTORS.read_text())
    return intoto.statement(
        _vector_attested(vec), brain="vector", sequence=7, agent=None, actor="user", signer=vec["signer"], receipt=None
    )


def _tweak(change) -> dict:
    stmt = json.loads(json.dumps(_vector_statement()))
    change(stmt)
    return stmt


def test_an_intoto_statement_must_equal_the_expected_one_but_for_what_the_spec_lets_differ() -> None:
    """lineage/attestations.md §5.4: only the brain subject's name, ``agent`` and a missing ``receipt`` may differ."""
    want = _vector_statement()
    allowed = {
        "brain name": lambda s: s["subject"][-1].update(name="brain:0x" + "ab" * 32),
        "agent": lambda s: s["predicate"].update(agent="0x" + "cd" * 32),
        "a receipt here only": lambda s: s["predicate"].update(receipt={"seq": 1}),
    }
    for what, change in allowed.items():
        assert intoto.problems(_tweak(change), want) == [], what
    assert intoto.problems(want, _tweak(allowed["a receipt here only"])) == []
    refused = {
        "extra top-level member": (lambda s: s.update(note="x"), "members are"),
        "extra subject member": (lambda s: s["subject"][0].update(annotations={"x": 1}), "other than name and digest"),
        "subjects reordered": (lambda s: s["subject"].reverse(), "order"),
        "brain subject first": (lambda s: s["subject"].insert(0, s["subject"].pop()), "order"),
        "extra digest": (lambda s: s["subject"][0]["digest"].update(md5="00"), "changed file"),
        "extra predicate member": (lambda s: s["predicate"].update(x=1), "predicate's fields"),
        "extra snapshot member": (lambda s: s["predicate"]["snapshot"].update(x=1), "predicate snapshot"),
        "other receipt": (lambda s: s["predicate"].update(receipt={"seq": 2}), None),
        "two brain subjects": (lambda s: s["subject"].append({**s["subject"][-1], "name": "brain:x"}), None),
        "a name not a string": (lambda s: s["subject"][0].update(name=1), "not a brain-ledger"),
        "other _type": (lambda s: s.update(_type="x"), "_type"),
    }
    with_receipt = _tweak(allowed["a receipt here only"])
    for what, (change, says) in refused.items():
        got = intoto.problems(_tweak(change), with_receipt if what == "other receipt" else want)
        assert got, what
        assert says is None or any(says in p for p in got), (what, got)


def test_a_resigned_statement_with_extra_members_fails_verification(made: Path) -> None:
    """End to end, as the review's PoC did it: the user's own sibling signs a statement with members the
    format does not define and its subjects reversed; the signature is good, the statement is refused."""
    from ledger.attestations.attest import attest, verify_attestation
    from ledger.signatures.siblings import p256_key

    with Brain.open(made) as b:
        data, _ = attest(b, None, None, "intoto")
        assert verify_attestation(b, data)["ok"]
        doc = json.loads(data)
        stmt = json.loads(base64.b64decode(doc["payload"]))
        stmt["note"] = "unchecked"
        stmt["subject"][0]["annotations"] = {"x": 1}
        stmt["subject"].reverse()
        keys = b._writer.sealer.keys
        trust = b.store.trust_at(b.store.snapshot(b.head().commit).tree)[1]
        trusted = [a for a, r in trust.active.items() if r == "user"]
        key = keys.load("user", None, keys.find("user", trusted)[1])
        forged = intoto.make(stmt, p256_key(key.secret), doc["signatures"][0]["keyid"])
        with pytest.raises(AttestationError, match=r"members are.*other than name and digest.*order"):
            verify_attestation(b, forged)


def test_an_oms_statement_must_equal_the_expected_one() -> None:
    """The OMS path compares the whole statement: an extra member anywhere is refused too."""
    att = _vector_attested(json.loads(VECTORS.read_text()))
    want = oms.statement(att)
    assert oms.problems(json.loads(json.dumps(want)), att) == []
    for change in (
        lambda s: s.update(note="x"),
        lambda s: s["subject"][0].update(x=1),
        lambda s: s["predicate"]["resources"][0].update(x=1),
        lambda s: s["predicate"]["resources"].reverse(),
    ):
        stmt = json.loads(json.dumps(want))
        change(stmt)
        assert oms.problems(stmt, att), stmt


def test_attest_and_verify_json_share_their_names_and_report_failure(made: Path, tmp_path: Path) -> None:
    b, out = ("--brain", str(made)), tmp_path / "a.intoto"
    usage = run_ledger(*b, "attest", "--format", "intoto", "--json")
    assert usage.returncode == 2 and "--json goes with -o FILE" in usage.stderr and not usage.stdout, usage
    made_doc = json.loads(run_ledger(*b, "attest", "--format", "intoto", "-o", str(out), "--json", check=True).stdout)
    verified = json.loads(run_ledger(*b, "verify", "--attestation", str(out), "--json", check=True).stdout)
    assert made_doc["role"] == verified["role"] == "user" and "actor" not in made_doc and verified["ok"] is True
    assert {k: made_doc[k] for k in ("format", "commit", "signer", "keyid")} == {
        k: verified[k] for k in ("format", "commit", "signer", "keyid")
    }
    with Brain.open(made) as brain:
        brain.patch("a", "alpha", "alpha changed")
    failed = run_ledger(*b, "verify", "--attestation", str(out), "HEAD", "--json")
    doc = json.loads(failed.stdout)
    assert failed.returncode == 1 and doc["ok"] is False and doc["format"] == "intoto", failed
    assert set(doc) == {"ok", "format", "problems"} and "changed file a/SKILL.md" in doc["problems"], doc
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    failed = run_ledger(*b, "verify", "--attestation", str(junk), "--json")
    doc = json.loads(failed.stdout)
    assert failed.returncode == 1 and doc["format"] is None and "neither a Sigstore bundle" in doc["problems"][0], doc
