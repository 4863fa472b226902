"""Receipt.to_json is asdict's document, built without asdict's deep copy (0.3 s of a 10k-skill import)."""

from __future__ import annotations

from dataclasses import asdict

from ledger.write.records import Receipt

CHANGES = [{"skill": f"s{i}", "action": "create", "version": 1, "files": {"SKILL.md": "added"}} for i in range(3)]


def expected(receipt: Receipt) -> dict:
    out = asdict(receipt)
    out["signed"] = receipt.signer is not None
    if receipt.chain is None:
        del out["chain"]
    if not receipt.keys:
        del out["keys"]
    return out


def test_the_same_document_as_asdict() -> None:
    full = Receipt(
        "s0",
        1,
        "blake3-tree-v1:00",
        "ab",
        "import",
        {"tx": "0x1", "receipt": {"gas": 1}},
        CHANGES,
        "0xabc",
        ["add 0x1 agent"],
    )
    bare = Receipt("s0", 1, "blake3-tree-v1:00", "ab", "patch")
    for receipt in (full, bare):
        assert receipt.to_json() == expected(receipt)


def test_the_document_is_a_copy() -> None:
    receipt = Receipt("s0", 1, "r", "c", "import", {"receipt": {"gas": 1}}, CHANGES, None, ["k"])
    doc = receipt.to_json()
    doc["changes"][0]["files"]["evil"] = "added"
    doc["chain"]["receipt"]["gas"] = 2
    doc["keys"].append("x")
    assert receipt.to_json() == expected(receipt) and "evil" not in CHANGES[0]["files"]
