"""The committed vectors pin bundle hash v1; an independent re-implementation checks the spec."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from blake3 import blake3

from ledger.bundle.merkle import InclusionProof, format_root, hash_path, parse_root, prove, read_tree, verify_proof

VECTORS = sorted((Path(__file__).parents[1] / "vectors").glob("*.json"))


def reference_root(files: list[tuple[str, int, bytes]]) -> bytes:
    """docs/bundle-hash.md written out again from scratch, sharing no code with ledger.bundle.merkle."""

    def H(b: bytes) -> bytes:
        return blake3(b).digest()

    def mth(leaves: list[bytes]) -> bytes:
        if not leaves:
            return H(b"")
        if len(leaves) == 1:
            return leaves[0]
        k = 1
        while k * 2 < len(leaves):
            k *= 2
        return H(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))

    def digest(entries: list[tuple[list[str], int, bytes]]) -> bytes:
        groups: dict[str, list] = {}
        leaves: dict[bytes, bytes] = {}
        for parts, kind, data in entries:
            if len(parts) == 1:
                name = parts[0].encode()
                leaves[name] = (kind, H(b"\x02" + data))
            else:
                groups.setdefault(parts[0], []).append((parts[1:], kind, data))
        for name, sub in groups.items():
            leaves[name.encode()] = (3, digest(sub))
        return mth(
            [
                H(b"\x00" + bytes([kind]) + len(n).to_bytes(2, "big") + n + child)
                for n, (kind, child) in sorted(leaves.items())
            ]
        )

    return digest([(p.split("/"), k, d) for p, k, d in files])


def load(path: Path) -> tuple[dict, list[tuple[str, int, bytes]]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    files = [
        (
            f["path"],
            2 if f["mode"] == "exec" else 1,
            bytes.fromhex(f["content_hex"]) if "content_hex" in f else f["content"].encode(),
        )
        for f in doc["files"]
    ]
    return doc, files


def materialize(root: Path, files: list[tuple[str, int, bytes]]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rel, kind, data in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.chmod(p, 0o755 if kind == 2 else 0o644)


def test_vectors_exist() -> None:
    names = {p.stem for p in VECTORS}
    assert {"empty", "unicode-names", "executable", "deep-nesting", "many-siblings"} <= names


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_vector_root(path: Path, tmp_path: Path) -> None:
    doc, files = load(path)
    materialize(tmp_path / "t", files)
    assert format_root(read_tree(tmp_path / "t").digest) == doc["root"]
    assert format_root(hash_path(tmp_path / "t")) == doc["root"], "the one-pass hasher disagrees"
    assert format_root(reference_root(files)) == doc["root"], "spec re-implementation disagrees"


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_vector_proofs(path: Path, tmp_path: Path) -> None:
    doc, files = load(path)
    materialize(tmp_path / "t", files)
    tree = read_tree(tmp_path / "t")
    root = parse_root(doc["root"])
    contents = {p: d for p, _, d in files}
    for expected in doc["proofs"]:
        assert prove(tree, expected["path"]).to_json() == expected
        proof = InclusionProof.from_json(expected)
        verify_proof(proof, root, contents[proof.path])


def test_proof_size_is_logarithmic(tmp_path: Path) -> None:
    files = [(f"s{i:04d}/SKILL.md", 1, b"x%d" % i) for i in range(1000)]
    materialize(tmp_path / "t", files)
    proof = prove(read_tree(tmp_path / "t"), "s0500/SKILL.md")
    # one sibling in the 1-entry skill dir level is none; the root level has ceil(log2(1000)) = 10
    assert sum(len(s.siblings) for s in proof.steps) <= 10


# ------------------------------------------------------------------ the skills CLI's folder sha256

FOLDER_SHA256 = json.loads((Path(__file__).parents[1] / "vectors" / "supply" / "folder-sha256.json").read_text("utf-8"))


def spec_order(paths: list[str]) -> list[str]:
    """docs/lineage/supply.md §3's order, written out again from its text (no code of ledger.supply)."""
    import unicodedata

    punct = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"

    def key(path: str) -> tuple:
        primary, accents, case = [], [], []
        for ch in unicodedata.normalize("NFD", path):
            if unicodedata.combining(ch):
                accents.append(ord(ch))
                continue
            if ch in " \t\n\r\v\f":
                weight = 1
            elif ch in punct:
                weight = 10 + punct.index(ch)
            elif "0" <= ch <= "9":
                weight = 100 + int(ch)
            elif unicodedata.category(ch)[0] == "C":
                continue
            else:
                weight = 1000 + ord(ch.lower())
            primary.append(weight)
            accents.append(0)
            case.append(int(ch != ch.lower()))
        return tuple(primary), tuple(accents), tuple(case), path

    kept = [p for p in paths if not {".git", "node_modules"} & set(p.split("/")[:-1])]
    return sorted(kept, key=key)


@pytest.mark.parametrize("case", FOLDER_SHA256["cases"], ids=lambda c: c["name"])
def test_folder_sha256_vectors(case: dict) -> None:
    from hashlib import sha256

    from ledger.sources.lockfile import folder_sha256

    files = {f["path"]: (f["utf8"].encode(), f["executable"]) for f in case["files"]}
    assert spec_order(list(files)) == case["order"], "the spec's order"
    by_hand = sha256(b"".join(p.encode() + files[p][0] for p in case["order"])).hexdigest()
    assert by_hand == case["sha256"]
    assert folder_sha256(files) == case["sha256"], "the tool, fed the files in the vector's order"
    assert folder_sha256(dict(reversed(list(files.items())))) == case["sha256"], "the tool, fed them reversed"


# ------------------------------------------------------------------ RFC 8785 numbers in outcome records

NUMBERS = json.loads((Path(__file__).parents[1] / "vectors" / "outcomes" / "numbers.json").read_text("utf-8"))


def spec_number(x: float) -> str:
    """docs/lineage/evidence.md §1's Numbers paragraph written out again (ECMA-262 Number::toString): the
    shortest digits *s* (k of them) with x = 0.s × 10^n, then the placement the paragraph gives."""
    from decimal import Decimal

    if x == 0:
        return "0"
    sign, (_, digits, exp) = ("-" if x < 0 else ""), Decimal(repr(abs(x))).normalize().as_tuple()
    s = "".join(map(str, digits))
    k, n = len(s), exp + len(s)
    if k <= n <= 21:
        return sign + s + "0" * (n - k)
    if 0 < n <= 21:
        return sign + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + s
    e = f"e{'+' if n - 1 > 0 else '-'}{abs(n - 1)}"
    return sign + (s if k == 1 else s[0] + "." + s[1:]) + e


@pytest.mark.parametrize("case", NUMBERS["cases"], ids=lambda c: c["name"])
def test_outcome_number_vectors(case: dict) -> None:
    import struct

    import rfc8785

    from ledger.errors import StoreError
    from ledger.protocol.signing import address_of
    from ledger.store import outcomes as oc

    (value,) = struct.unpack(">d", bytes.fromhex(case["double"]))
    assert spec_number(value) == case["jcs"], "the spec's rule"
    assert rfc8785.dumps(value).decode() == case["jcs"], "the reference RFC 8785 library"
    assert oc.canonical(value).decode() == case["jcs"], "the ledger's JCS"
    secret = bytes(range(1, 33))
    fields = {
        "brain": "9" * 40,
        "agent": None,
        "skill": "s",
        "version": 1,
        "digest": "blake3-tree-v1:" + "0" * 64,
        "receipt": {"commit": "1" * 40, "root": "blake3-tree-v1:" + "2" * 64},
        "task_id": "t",
        "task_digest": None,
        "result": "score",
        "scale": (-1.7976931348623157e308, 1.7976931348623157e308),
        "when": "2026-01-01T00:00:00Z",
        "signer": address_of(secret),
    }
    if not case["accepted"]:
        with pytest.raises(StoreError, match="2\\^53"):
            oc.make_record(score=value, **fields)  # type: ignore[arg-type]
        return
    entry = oc.sign_entry(oc.make_record(score=value, **fields), secret)  # type: ignore[arg-type]
    assert f'"score":{case["jcs"]},'.encode() in entry
    assert oc.parse_entry(entry).id == oc.outcome_id(oc.make_record(score=value, **fields)), "read back, the same"
