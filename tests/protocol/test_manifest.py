"""ERC-8239 skill manifests (issue 37): ``ledger manifest NAME[@V]``.

The ERC (ethereum/ERCs PR 1704, ERCS/erc-8239.md) defines ``manifestHash`` as ``keccak256`` of
the manifest's exact published bytes.  Every hash here is recomputed from that definition by
code that is not the ledger's: pycryptodome's Keccak and foundry's ``cast keccak`` over the
bytes the command wrote.  Canonical bytes are held to RFC 8785 vectors written by others.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from ledger.anchoring.commits import commit_pending
from ledger.brain import Brain
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME
from ledger.errors import LedgerError
from ledger.remotes import sharing
from ledger.sources.candidates import Candidate, candidate, source_doc
from ledger.supply.installer import Installer
from ledger.supply.manifest import (
    LEDGER_KEYS,
    ManifestError,
    build,
    canonical_json,
    ledger_bytes,
    manifest_hash,
    parse_manifest,
    public_location,
)
from tests.harness.brains import make_brain
from tests.harness.cli import run_in_process
from tests.unit.supply.test_supply import GOOD, Upstream, record

ROOT = Path(__file__).resolve().parents[2]
VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "erc8239" / "vectors.json").read_text())
CAST = ROOT / "node_modules" / ".bin" / "cast"


def keccak(data: bytes) -> str:
    """keccak256 as the ERC names it, by pycryptodome (the ledger hashes with safe-pysha3)."""
    from Crypto.Hash import keccak as k

    return "0x" + k.new(digest_bits=256, data=data).hexdigest()


def cast_keccak(data: bytes) -> str:
    """keccak256 by foundry's cast, the tool a registrant would use beside ``registerSkill``."""
    return subprocess.run(
        [str(CAST), "keccak", "0x" + data.hex()], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def ledger(brain: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_in_process("--brain", str(brain), *args, check=check)


def printed(brain: Path, ref: str) -> tuple[bytes, str]:
    """The manifest's bytes (the first line) and the manifestHash line of ``ledger manifest REF``."""
    out = ledger(brain, "manifest", ref).stdout
    first, hash_line, rest = out.split("\n", 2)
    assert rest == "" and hash_line.startswith("manifestHash 0x")
    return first.encode("utf-8"), hash_line.split(" ", 1)[1]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = make_brain(tmp_path / "brain", {"s": ("The s skill", "body-one")}, via="cli")
    (tmp_path / "r.md").write_text("ref\n")
    ledger(path, "skill", "write-file", "s", "references/r.md", "--from", str(tmp_path / "r.md"))
    return path


def test_manifest_hash_is_keccak256_of_the_published_bytes(home: Path, tmp_path: Path) -> None:
    data, shown = printed(home, "s@1")
    assert shown == keccak(data) == cast_keccak(data)
    # --out writes exactly those bytes; --json names the same hash and holds the same object.
    out = ledger(home, "manifest", "s@1", "--out", str(tmp_path / "m.json")).stdout
    assert (tmp_path / "m.json").read_bytes() == data and f"manifestHash {shown}" in out
    doc = json.loads(ledger(home, "manifest", "s@1", "--json").stdout)
    assert doc["manifestHash"] == shown and doc["manifest"] == json.loads(data) and doc["version"] == 1
    # The ERC's required fields, and the version as a string.
    m = json.loads(data)
    assert m["type"] == "https://eips.ethereum.org/EIPS/eip-8239#skill-v1"
    assert (m["name"], m["description"], m["image"], m["version"]) == ("s", "The s skill", None, "1")
    assert not {"supersedes", "dependencies"} & (set(m) | set(m["brainLedger"]))
    assert m["brainLedger"]["format"] == 2 and set(m) <= LEDGER_KEYS
    # The bytes are their own canonical form, and parse back to the object.
    assert parse_manifest(data) == m


def test_supersedes_links_each_version_to_the_one_before(home: Path) -> None:
    v1, h1 = printed(home, "s@1")
    v2, h2 = printed(home, "s@2")
    # The chain is the ledger's own (the ERC's top-level supersedes is {skillId, skillRegistry}, a token).
    assert "supersedes" not in json.loads(v2)
    assert json.loads(v2)["brainLedger"]["supersedes"] == {"manifestHash": keccak(v1), "version": "1"}
    assert h1 != h2 and h2 == keccak(v2)
    ledger(home, "skill", "patch", "s", "--old", "body-one", "--new", "body-two")
    v3, h3 = printed(home, "s@3")
    assert json.loads(v3)["brainLedger"]["supersedes"]["manifestHash"] == keccak(v2) == h2
    # NAME alone is the head's version; an older version's manifest does not change as history grows.
    assert printed(home, "s") == (v3, h3)
    assert printed(home, "s@1") == (v1, h1)


def test_digests_are_the_skill_at_that_version(home: Path, tmp_path: Path) -> None:
    m = json.loads(printed(home, "s@2")[0])["brainLedger"]
    # blake3: the bundle hash of the skill's folder (docs/bundle-hash.md §4), as 'ledger hash' computes it.
    assert m["digests"]["blake3"] == run_in_process("hash", str(home / "skills" / "s"), check=True).stdout.strip()
    # sha256: the skills CLI's folder hash: each file's path then bytes, in localeCompare order (r < S).
    skill_md = (home / "skills" / "s" / "SKILL.md").read_bytes()
    folder = hashlib.sha256(b"references/r.md" + b"ref\n" + b"SKILL.md" + skill_md).hexdigest()
    assert m["digests"]["sha256"] == "sha256:" + folder
    # The snapshot that wrote v2: its commit, its root, and the key that signed it.
    log = json.loads(ledger(home, "log", "--json").stdout)
    wrote = next(e for e in log if e["skill"] == "s" and e["version"] == 2)
    user = next(
        k["address"] for k in json.loads(ledger(home, "keys", "show", "--json").stdout)["local"] if k["role"] == "user"
    )
    assert m["snapshot"] == {"commit": wrote["commit"], "root": wrote["root"], "signer": user}
    # v1's digests are of v1's files: the snapshot that wrote v1, exported and hashed.
    v1 = json.loads(printed(home, "s@1")[0])["brainLedger"]
    ledger(home, "export", str(tmp_path / "at-v1"), "--at", v1["snapshot"]["commit"])
    assert v1["digests"]["blake3"] == run_in_process("hash", str(tmp_path / "at-v1" / "s"), check=True).stdout.strip()
    assert (
        v1["digests"]["sha256"]
        == "sha256:" + hashlib.sha256(b"SKILL.md" + (tmp_path / "at-v1" / "s" / "SKILL.md").read_bytes()).hexdigest()
    )
    assert v1["digests"]["blake3"] != m["digests"]["blake3"]


def test_frontmatter_fills_the_fields_the_erc_names(tmp_path: Path) -> None:
    path = tmp_path / "brain"
    run_in_process("init", str(path), check=True)
    text = (
        '---\nname: t\ndescription: Résumé "quoted" text\nlicense: Apache-2.0\n'
        "allowed-tools: Read Bash(git:*)\nmetadata:\n  image: https://example.invalid/t.png\n"
        "  homepage: https://example.invalid/t\n  repository: https://example.invalid/t.git\n"
        "  author: Example Org\n---\nBody.\n"
    )
    (tmp_path / "t.md").write_text(text)
    ledger(path, "skill", "upsert", "--file", str(tmp_path / "t.md"))
    data, shown = printed(path, "t@1")
    m = json.loads(data)
    assert (m["description"], m["license"], m["image"]) == (
        'Résumé "quoted" text',
        "Apache-2.0",
        "https://example.invalid/t.png",
    )
    assert (m["homepage"], m["repository"], m["author"]) == (
        "https://example.invalid/t",
        "https://example.invalid/t.git",
        {"name": "Example Org"},
    )
    assert m["requirements"] == {"tools": ["Read", "Bash(git:*)"]}
    assert "Résumé".encode() in data and shown == keccak(data)  # UTF-8 as is, not \u escapes (RFC 8785)


def test_an_installed_skill_names_its_upstream_as_a_dependency(tmp_path: Path) -> None:
    up = Upstream(tmp_path)
    up.put(
        "summarise",
        {
            "SKILL.md": GOOD.format(name="summarise", desc="Summarise a document"),
            "references/style.md": "Short sentences.\n",
        },
    )
    commit = up.publish()
    home = tmp_path / "store-brain"  # versions in the store: the installed bytes are the source's, unchanged
    run_in_process("init", "--versions", "store", str(home), check=True)
    ledger(home, "install", str(up.bare), "summarise")
    data, shown = printed(home, "summarise@1")
    assert printed(home, "summarise") == (data, shown)  # NAME alone: the store's version of the head
    assert "is quarantined here" in ledger(home, "manifest", "summarise").stderr
    m = json.loads(data)
    entry = record(home).skills["summarise"]
    # Provenance, in the extension: the ERC's dependencies are {skillId, skillRegistry, version} entries.
    assert "dependencies" not in m and set(m) <= LEDGER_KEYS
    # The upstream is a path on this machine: published as its basename, never the path.
    assert entry.source["url"] == str(up.bare) and str(tmp_path) not in data.decode()
    assert m["brainLedger"]["dependencies"] == [
        {
            "source": {"type": "git", "url": "local:up.git", "path": "skills/summarise", "ref": None},
            "pin": {"commit": commit},
            "integrity": [entry.blake3, "sha256:" + entry.sha256],
        }
    ]
    # What the manifest says of the skill is what the installer computed from the source's bytes.
    assert m["brainLedger"]["digests"] == {"blake3": entry.blake3, "sha256": "sha256:" + entry.sha256}
    assert shown == keccak(data) == cast_keccak(data)
    # An approval changes the brain, not the version: v1's manifest stays as it was.
    ledger(home, "approve", "summarise")
    assert printed(home, "summarise@1") == (data, shown)


@pytest.mark.chain
def test_a_skill_from_an_anchored_brain_credits_its_agent(chained: Brain, tmp_path: Path) -> None:
    chained.create("alpha", "Alpha", "alpha\n")
    commit_pending(chained, key=DEV_KEY_NAME)  # a real anvil: the upstream's root has a receipt
    sharing.push(chained, str(tmp_path / "remote.git"))
    cfg = ChainConfig.of(chained)
    home = tmp_path / "home"
    run_in_process("init", str(home), check=True)
    ledger(home, "install", str(tmp_path / "remote.git"), "alpha")
    data, shown = printed(home, "alpha@1")
    (dep,) = json.loads(data)["brainLedger"]["dependencies"]
    root = chained.head().snap.to_json()["root"]
    # The agent id is a uint256: a hex string as receipts write it, never a JSON number past 2**53.
    assert cfg.agent_id is not None and cfg.agent_id > 2**53
    assert dep["derivedFrom"] == {
        "agent": f"0x{cfg.agent_id:064x}",
        "chain": cfg.chain_id,
        "registry": cfg.registry.lower(),
        "root": root,
    }
    entry = record(home).skills["alpha"]
    assert dep["source"] == {**entry.source, "url": "local:remote.git"} and dep["source"]["type"] == "brain"
    assert dep["pin"] == entry.pin and entry.pin["root"] == root and entry.pin["seq"] >= 1
    assert shown == keccak(data) == cast_keccak(data)


def test_refusals(home: Path) -> None:
    missing = ledger(home, "manifest", "s@7", check=False)
    assert missing.returncode == 1 and "no snapshot wrote s v7" in missing.stderr
    unknown = ledger(home, "manifest", "nosuch", check=False)
    assert unknown.returncode == 1 and "no skill named" in unknown.stderr
    # A deleted skill: its versions keep their manifests; NAME alone names nothing in the head.
    before = printed(home, "s@2")
    ledger(home, "skill", "delete", "s")
    gone = ledger(home, "manifest", "s", check=False)
    assert gone.returncode == 1 and "ledger manifest s@N" in gone.stderr
    assert printed(home, "s@2") == before
    # Created again, the name goes on above its last version (ADR 9), superseding it across the delete.
    ledger(home, "skill", "create", "s", "--description", "Again")
    again = json.loads(printed(home, "s")[0])
    assert again["version"] == "3" and again["brainLedger"]["supersedes"] == {"manifestHash": before[1], "version": "2"}
    # ASCII digits only: str.isdigit() holds for '²' (int() then fails) and '١' (int() reads 1).
    for bad in ("s@", "@1", "s@0", "s@x", "s@²", "s@١", "s@٣", "s@01", "s@-1", "s@+1", "s@ 1", "s@1 "):
        usage = ledger(home, "manifest", bad, check=False)
        assert usage.returncode == 2 and "ASCII digits" in usage.stderr and "Traceback" not in usage.stderr, bad


@pytest.mark.parametrize("case", VECTORS["jcs"], ids=[c["name"] for c in VECTORS["jcs"]])
def test_canonical_bytes_are_rfc8785(case: dict) -> None:
    assert canonical_json(json.loads(case["input"])) == case["output"].encode("utf-8")


def test_the_committed_manifest_vector() -> None:
    vec = VECTORS["manifest"]
    data = canonical_json(json.loads(vec["input"]))
    assert data == vec["canonical"].encode("utf-8")
    assert manifest_hash(data) == keccak(data) == vec["manifestHash"]
    assert parse_manifest(data) == json.loads(vec["input"])
    # The manifest of docs/interop.md §2.7: ERC fields in ERC shapes only, the ledger's chain in its extension.
    doc = json.loads(data)
    assert doc["brainLedger"]["format"] == 2 and set(doc) <= LEDGER_KEYS
    assert set(doc["brainLedger"]) == {"format", "digests", "snapshot", "supersedes", "dependencies"}
    # The same version as a publisher who minted a token publishes it: another hash, the same ledger bytes.
    pub = VECTORS["published"]
    published = pub["canonical"].encode("utf-8")
    assert manifest_hash(published) == keccak(published) == cast_keccak(published) == pub["manifestHash"]
    assert set(parse_manifest(published)["supersedes"]) == {"skillId", "skillRegistry"}
    assert ledger_bytes(parse_manifest(published)) == data and pub["manifestHash"] != vec["manifestHash"]


@pytest.mark.parametrize("case", VECTORS["sources"], ids=[c["recorded"] for c in VECTORS["sources"]])
def test_published_source_locations(case: dict) -> None:
    published = public_location(case["recorded"])
    assert published == case["published"]
    assert "@" not in published.split("/", 3)[2] if "://" in published else "@" not in published.split(":")[0]
    for secret in ("s3cret", "ghp_", "alice", "pw@", "/home/"):
        assert secret not in published


@pytest.mark.parametrize(
    "data, why",
    [
        (b'{"b":1, "a":2}', "canonical"),  # whitespace
        (b'{"b":1,"a":2}', "canonical"),  # key order
        (b'{"a":"\\u00e9"}', "canonical"),  # an escape JCS does not write
        (b'{"a":1,"a":2}', "repeats a key"),
        (b'{"a":1.5}', "integers only"),
        (b'{"a":NaN}', "integers only"),
        (b'{"a":1e5}', "integers only"),
        (b'{"a":-0}', "canonical"),  # parses to 0, which RFC 8785 writes "0"
        (b'{"a":01}', "not JSON"),
        (b'{"a":9007199254740992}', r"2\*\*53"),
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        (b'{"a":"\xff"}', "not UTF-8"),
        (b"[]", "JSON object"),
        (b'{"a":' * 40 + b"1" + b"}" * 40, "deeper"),
        (b'{"a":', "not JSON"),
    ],
)
def test_non_canonical_or_malformed_manifests_are_refused(data: bytes, why: str) -> None:
    with pytest.raises(ManifestError, match=why) as info:
        parse_manifest(data)
    assert isinstance(info.value, LedgerError)


def test_values_jcs_cannot_write_exactly_are_refused() -> None:
    for value, why in (
        ({"a": 0.5}, "integers only"),
        ({"a": 2**53}, "2\\*\\*53"),
        ({"a": "\ud800"}, "surrogate"),
        ({1: "a"}, "not a string"),
        ({"a": {1, 2}}, "set"),
    ):
        with pytest.raises(ManifestError, match=why):
            canonical_json(value)


def test_a_recorded_credential_or_local_path_is_not_published(tmp_path: Path) -> None:
    """Records written before install refused credentials may hold them: the manifest, meant to be
    published, names each location without userinfo, and a local path by its basename only."""
    home = tmp_path / "brain"
    run_in_process("init", str(home), check=True)

    def cand(name: str, source: dict) -> Candidate:
        return candidate(
            name, {"SKILL.md": (GOOD.format(name=name, desc="D").encode(), False)}, source, {"commit": "ab" * 20}
        )

    recorded = {
        "tok": source_doc("git", "https://ghp_tok3n@example.invalid/up.git", "skills/tok", "main"),
        "pass": source_doc(
            "index", "https://alice:s3cret@example.invalid/.well-known/agent-skills/index.json", "pass", None
        ),
        "mkt": source_doc(
            "marketplace",
            "https://bob:pw1@example.invalid/m.git",
            "plugins/mkt",
            None,
            plugin="p",
            repo="/home/alice/private/m.git",
            file=".claude-plugin/marketplace.json",
        ),
        "lock": source_doc(
            "skills-lock",
            str(tmp_path / "secret-dir" / "up"),
            "skills/lock",
            None,
            upstream="../secret-dir/up",
            sourceType="local",
        ),
        "scp": source_doc("git", "carol@example.invalid:o/r.git", "skills/scp", None),
    }
    with Brain.open(home) as brain:  # the installer's own write path, given what an older resolve returned
        Installer(brain)._write([cand(n, src) for n, src in recorded.items()], "older records")
        assert {n: e.source for n, e in brain.supply().skills.items()} == recorded
    published = {}
    for name in recorded:
        data, shown = printed(home, f"{name}@1")
        assert shown == keccak(data)
        for secret in ("ghp_tok3n", "alice", "s3cret", "bob", "pw1", "carol", "secret-dir", str(tmp_path)):
            assert secret not in data.decode(), (name, secret)
        (dep,) = json.loads(data)["brainLedger"]["dependencies"]
        published[name] = dep["source"]
    assert published["tok"]["url"] == "https://example.invalid/up.git" and published["tok"]["ref"] == "main"
    assert published["pass"]["url"] == "https://example.invalid/.well-known/agent-skills/index.json"
    assert published["mkt"] == {**recorded["mkt"], "url": "https://example.invalid/m.git", "repo": "local:m.git"}
    assert published["lock"] == {**recorded["lock"], "url": "local:up", "upstream": "local:up"}
    assert published["scp"]["url"] == "example.invalid:o/r.git"


def test_the_chain_is_over_the_ledgers_own_bytes(home: Path) -> None:
    """A publisher who mints tokens adds the ERC's own supersedes and dependencies; the ledger's chain
    still verifies, over the ledger's bytes recovered from what was published (docs/interop.md §2.6)."""
    with Brain.open(home) as brain:
        v1, v2 = build(brain, "s", 1), build(brain, "s", 2)
    registry = "eip155:31337:0x" + "12" * 20
    published = canonical_json({**v1.doc, "dependencies": [{"skillId": 7, "skillRegistry": registry, "version": "^1"}]})
    assert keccak(published) != v1.hash  # the registry's manifestHash is of the published bytes
    assert ledger_bytes(parse_manifest(published)) == v1.data
    assert v2.doc["brainLedger"]["supersedes"]["manifestHash"] == keccak(ledger_bytes(json.loads(published)))
    republished = {**v2.doc, "supersedes": {"skillId": 8, "skillRegistry": registry}}
    assert ledger_bytes(republished) == v2.data and manifest_hash(ledger_bytes(republished)) == v2.hash
    # A publisher who alters a byte the ledger wrote breaks the chain: the recovered bytes are not the ledger's.
    altered = {**v1.doc, "description": "Another"}
    assert keccak(ledger_bytes(altered)) != v2.doc["brainLedger"]["supersedes"]["manifestHash"]
