"""ERC-8239 skill manifests: one per skill version, read from the lineage, hashed as the ERC says.

ERC-8239 (Agent Skill Registry, ethereum/ERCs PR 1704) registers a skill as an ERC-721 token
whose ``tokenURI`` points at a JSON manifest and whose ``manifestHash`` is ``keccak256`` of
that manifest's exact published bytes; byte stability is the author's job.  The ledger
publishes RFC 8785 (JCS) bytes, so anyone holding the parsed manifest gets the same bytes
and the same hash back, and :func:`parse_manifest` refuses any other spelling.

A manifest is a function of the lineage alone (the snapshot that wrote the version, the
supply record in it, and the manifests of the versions before it): a clone computes the same
bytes, and nothing this machine holds (config, keys, the working tree) enters them.  The
ledger writes an ERC field only in the shape the ERC defines: its own version chain and an
installed skill's provenance live in the ``brainLedger`` extension, and a manifest is meant to
be published, so a recorded source is written without credentials or local paths
(:func:`public_location`).  The protocol text is docs/interop.md §2.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger._json import depth
from ledger.bundle.skill import SKILL_MD, parse_skill_md
from ledger.errors import LedgerError, SkillNotFoundError
from ledger.protocol import signing
from ledger.protocol.bundlehash import KIND_EXEC, format_root
from ledger.protocol.jcs import canonical as jcs
from ledger.sources import origins
from ledger.sources.lockfile import folder_sha256
from ledger.store import gitstore as gs
from ledger.store.skilltree import skills_of
from ledger.store.supply import parse_record, skill_blake3

__all__ = [
    "ERC8239_TYPE",
    "EXTENSION",
    "FORMAT",
    "LEDGER_KEYS",
    "Manifest",
    "ManifestError",
    "build",
    "canonical_json",
    "ledger_bytes",
    "manifest_hash",
    "parse_manifest",
    "public_location",
]

ERC8239_TYPE = "https://eips.ethereum.org/EIPS/eip-8239#skill-v1"  # the ERC's example ``type`` URL
EXTENSION = "brainLedger"  # the one author-specific key the ledger adds (the ERC allows any)
FORMAT = 2  # of the extension object: a change to any byte the ledger writes is a new number (2: supersedes and
# dependencies moved into the extension, sources written without credentials or local paths)
# Every top-level key the ledger may write (docs/interop.md §2.2): a publisher's additions are outside it.
LEDGER_KEYS = frozenset(
    {
        "type",
        "name",
        "description",
        "image",
        "version",
        "license",
        "homepage",
        "repository",
        "author",
        "requirements",
        EXTENSION,
    }
)
MAX_MANIFEST = 4 << 20  # bytes: a SKILL.md's frontmatter is bounded by limits.skill_md (1 M characters)
MAX_DEPTH = 16  # a ledger manifest nests 6 levels
MAX_SAFE_INTEGER = 2**53 - 1  # RFC 8785 serialises numbers as IEEE 754 doubles: larger integers are ambiguous


class ManifestError(LedgerError):
    """A manifest that cannot be built, or bytes that are not a canonical manifest."""


@dataclass(frozen=True)
class Manifest:
    """One skill version's manifest: the object, its exact bytes, and ``keccak256`` of them."""

    name: str
    version: int
    commit: str  # the snapshot that wrote this version
    doc: dict[str, Any]
    data: bytes  # RFC 8785 bytes: what is published and hashed

    @property
    def hash(self) -> str:
        return manifest_hash(self.data)

    def to_json(self) -> dict[str, Any]:
        return {
            "skill": self.name,
            "version": self.version,
            "commit": self.commit,
            "manifestHash": self.hash,
            "manifest": self.doc,
        }


# --------------------------------------------------------------------------- bytes


def manifest_hash(data: bytes) -> str:
    """ERC-8239's ``manifestHash``: ``keccak256`` of the manifest's bytes, as ``0x`` and 64 lowercase hex."""
    from sha3 import keccak_256  # safe-pysha3, the signer's own keccak (ledger.protocol.signing)

    return "0x" + keccak_256(data).hexdigest()


def canonical_json(value: Any) -> bytes:
    """RFC 8785 (JCS) bytes of ``value``, by the project's one JCS writer (:func:`ledger.protocol.jcs.canonical`,
    Trail of Bits' ``rfc8785`` for anything unusual), within the domain a manifest holds:
    objects with string keys, arrays, strings, integers within ±(2**53 - 1), booleans and null.
    A float is refused here (the ledger writes integers only, and a frontmatter float would
    otherwise hash by ECMAScript's number formatting), as are larger integers and lone surrogates."""
    _domain(value, 0)
    try:
        return jcs(value)
    except ValueError as exc:
        raise ManifestError(
            f"a manifest value has no RFC 8785 form: {exc}", hint="fix the SKILL.md frontmatter value"
        ) from exc


def _domain(value: Any, level: int) -> None:
    if level > MAX_DEPTH:
        raise ManifestError(f"a manifest nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, float):
        raise ManifestError(
            f"a manifest holds the number {value!r}; the ledger writes integers only",
            hint="quote it as a string in the frontmatter",
        )
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        raise ManifestError(f"integer {value} is beyond ±(2**53 - 1); RFC 8785 cannot write it exactly")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ManifestError(
                "a manifest string holds a lone surrogate, which UTF-8 cannot encode",
                hint="fix the SKILL.md frontmatter value",
            ) from exc
    elif isinstance(value, (list, tuple)):
        for item in value:
            _domain(item, level + 1)
    elif isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise ManifestError("a manifest object has a key that is not a string")
        for key, item in value.items():
            _domain(key, level + 1)
            _domain(item, level + 1)
    elif value is not None and not isinstance(value, (bool, int)):
        raise ManifestError(f"a manifest cannot hold a {type(value).__name__}")


def parse_manifest(data: bytes) -> dict[str, Any]:
    """A manifest from its bytes, refusing anything but the canonical (RFC 8785) bytes of a JSON object:
    so two parties holding the same object agree on its ``manifestHash``."""
    if len(data) > MAX_MANIFEST:
        raise ManifestError(f"the manifest is {len(data)} bytes; at most {MAX_MANIFEST} are read")
    if depth(data) > MAX_DEPTH:  # before the parser, as the supply record does
        raise ManifestError(f"the manifest nests deeper than {MAX_DEPTH} levels")
    if data.startswith(b"\xef\xbb\xbf"):
        raise ManifestError("the manifest starts with a byte-order mark", hint="RFC 8785 bytes carry none")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"the manifest is not UTF-8 (byte {exc.start})") from exc

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            raise ManifestError("the manifest repeats a key in one object", hint="JSON keys must be unique")
        return dict(items)

    def no_float(literal: str) -> Any:
        raise ManifestError(f"the manifest holds the number {literal}; a ledger manifest holds integers only")

    try:
        doc = json.loads(text, object_pairs_hook=pairs, parse_float=no_float, parse_constant=no_float)
    except ValueError as exc:  # the hooks' ManifestError is no ValueError: it passes as it is
        raise ManifestError(f"the manifest is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ManifestError("a manifest is a JSON object")
    if canonical_json(doc) != data:
        raise ManifestError(
            "the manifest's bytes are not its RFC 8785 canonical form",
            hint="publish exactly the bytes 'ledger manifest --out FILE' writes",
        )
    return doc


def ledger_bytes(doc: Mapping[str, Any]) -> bytes:
    """The ledger's own manifest bytes inside a published manifest ``doc``: its keys of :data:`LEDGER_KEYS`,
    canonical.  A publisher who mints a token adds ERC fields the ledger cannot write (``supersedes``,
    ``dependencies``, ``targets``); the version chain (``brainLedger.supersedes``) is over these bytes."""
    return canonical_json({k: v for k, v in doc.items() if k in LEDGER_KEYS})


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


def public_location(value: str) -> str:
    """A recorded source location as a published manifest may name it: a URL without its userinfo
    (``user:pass@``, ``token@``, ``git@``: the ledger cannot tell a login from a secret) and without a query
    parameter or fragment that carries a credential (:func:`~ledger.sources.origins.credentials`), an scp-like
    ``user@host:path`` as ``host:path``, and a local path or ``file://`` URL as ``local:<basename>``
    (where a machine keeps a repository says nothing to a reader and may name a person)."""
    scheme, sep, rest = value.partition("://")
    if sep and _SCHEME.fullmatch(scheme):
        if scheme.lower() == "file":
            return _local(rest)
        end = min([i for i in (rest.find(c) for c in "/?#") if i >= 0] or [len(rest)])  # RFC 3986 §3.2, as git reads it
        public = f"{scheme}://{rest[:end].rpartition('@')[2]}{rest[end:]}"
        return origins.scrubbed(public) if origins.credentials(public) else public  # a token a record still holds
    colon, slash = value.find(":"), value.find("/")
    if colon > 1 and (slash < 0 or colon < slash):  # git's scp-like syntax; a one-letter 'C:' is a drive
        return value[:colon].rpartition("@")[2] + value[colon:]
    return _local(value)


def _local(path: str) -> str:
    return "local:" + re.split(r"[/\\]", path.rstrip("/\\"))[-1]


def _public_source(source: Mapping[str, Any]) -> dict[str, Any]:
    """A supply record's ``source`` with every location in it made public (:func:`public_location`)."""
    out = dict(source)
    for key in ("url", "repo"):  # every kind's repository or index, and a marketplace's repository
        if isinstance(out.get(key), str):
            out[key] = public_location(out[key])
    upstream, kind = out.get("upstream"), out.get("sourceType")  # a skills-lock entry's own 'source' string
    if isinstance(upstream, str):
        if kind == "local":
            out["upstream"] = _local(upstream)
        elif not (kind in ("github", "gitlab") and "://" not in upstream and "@" not in upstream):  # owner/repo
            out["upstream"] = public_location(upstream)
    return out


# --------------------------------------------------------------------------- building


def build(brain: Any, name: str, version: int | None = None) -> Manifest:
    """The manifest of skill ``name`` at ``version`` (None: the head snapshot's version).

    ``brainLedger.supersedes`` chains each version to the one before it by ``manifestHash``, so the
    manifests of every earlier version are built too, oldest first (one read of each)."""
    name = brain.resolve(name)  # as 'ledger skill show' resolves it
    if version is None:
        if name not in brain.head().skills:
            raise SkillNotFoundError(
                f"no skill named {name!r} in the head snapshot",
                hint=f"a deleted skill's versions: 'ledger log --skill {name}', then 'ledger manifest {name}@N'",
            )
        version = brain.committed(name)[1].version  # the store's version in a store-mode brain
    history = brain.history(name)  # refuses a name with no history
    written: dict[int, str] = {}
    for row in history:  # newest first: a version written twice is the newest snapshot's, as 'show' reads it
        if row["action"] != "delete":
            written.setdefault(row["version"], row["commit"])
    if version not in written:
        raise SkillNotFoundError(f"no snapshot wrote {name} v{version}", hint=f"see 'ledger log' for {name}'s versions")
    previous: Manifest | None = None
    for v in sorted(x for x in written if x <= version):
        previous = _one(brain, name, v, written[v], previous)
    assert previous is not None
    return previous


def _one(brain: Any, name: str, version: int, commit: str, previous: Manifest | None) -> Manifest:
    store: gs.GitStore = brain.store
    top = store.commit_info(bytes.fromhex(commit))[0]
    tree = skills_of(store, top)[1].get(name)
    if tree is None:
        raise ManifestError(
            f"snapshot {commit[:12]} records {name} v{version} but holds no such skill",
            hint="run 'ledger audit': the lineage is inconsistent",
        )
    listing = brain.files(tree)
    rels = sorted(listing)
    blobs = store.read_blobs([listing[r][1] for r in rels])
    files = {r: (data, gs.kind_of_mode(listing[r][0], r) == KIND_EXEC) for r, data in zip(rels, blobs, strict=True)}
    if SKILL_MD not in files:
        raise ManifestError(f"{name} v{version} has no {SKILL_MD}", hint="run 'ledger audit'")
    try:
        text = files[SKILL_MD][0].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{name} v{version}: {SKILL_MD} is not UTF-8") from exc
    fm = parse_skill_md(text, limit=brain.limits["skill_md"])
    snap = store.snapshot(bytes.fromhex(commit))
    doc: dict[str, Any] = {
        "type": ERC8239_TYPE,
        "name": name,
        "description": fm.description,
        "image": _meta(fm.metadata, "image"),
        "version": str(version),
    }
    if fm.license:
        doc["license"] = fm.license
    for key in ("homepage", "repository"):
        if _meta(fm.metadata, key) is not None:
            doc[key] = _meta(fm.metadata, key)
    if _meta(fm.metadata, "author") is not None:
        doc["author"] = {"name": _meta(fm.metadata, "author")}
    if fm.allowed_tools and fm.allowed_tools.split():
        doc["requirements"] = {"tools": fm.allowed_tools.split()}
    ext: dict[str, Any] = {
        "format": FORMAT,
        "digests": {"blake3": skill_blake3(files), "sha256": "sha256:" + folder_sha256(files)},
        "snapshot": {"commit": commit, "root": format_root(snap.root), "signer": _signer(snap)},
    }
    dependency = _dependency(store, top, name)
    if dependency is not None:  # provenance, not the ERC's run-time {skillId, skillRegistry, version}
        ext["dependencies"] = [dependency]
    if previous is not None:  # the ERC's supersedes is {skillId, skillRegistry}: a token the ledger has not
        ext["supersedes"] = {"manifestHash": previous.hash, "version": str(previous.version)}
    doc[EXTENSION] = ext
    data = canonical_json(doc)
    if len(data) > MAX_MANIFEST:
        raise ManifestError(f"{name} v{version}'s manifest would be {len(data)} bytes; at most {MAX_MANIFEST}")
    return Manifest(name, version, commit, doc, data)


def _meta(metadata: Mapping[str, Any], key: str) -> str | None:
    """A frontmatter ``metadata`` value the ERC has a field for: a non-empty string, or nothing."""
    value = metadata.get(key)
    return value if isinstance(value, str) and value.strip() else None


def _dependency(store: gs.GitStore, top: bytes, name: str) -> dict[str, Any] | None:
    """The upstream an installed skill came from, as the supply record in that snapshot names it."""
    sha, data = store.supply_record(top)
    if sha is None:
        return None
    entry = parse_record(data).skills.get(name)
    if entry is None:
        return None
    out: dict[str, Any] = {
        "source": _public_source(entry.source),
        "pin": entry.pin,
        "integrity": [entry.blake3, "sha256:" + entry.sha256],
    }
    if entry.derived_from:
        credit = dict(entry.derived_from)
        if isinstance(credit.get("agent"), int) and not isinstance(credit["agent"], bool):
            # an agent id is a uint256 (a keccak), past what a JSON number carries exactly: written as the
            # receipts write it (lineage.md §6.1), 0x and 64 hex digits
            if not 0 <= credit["agent"] < 2**256:
                raise ManifestError(
                    f"the supply record of {name} credits agent {credit['agent']}, not a uint256",
                    hint="run 'ledger audit'",
                )
            credit["agent"] = f"0x{credit['agent']:064x}"
        out["derivedFrom"] = credit
    return out


def _signer(snap: gs.Snapshot) -> str | None:
    """The address the snapshot's ``Ledger-Signature`` recovers to (lineage.md §8); None when unsigned.
    Whether that key was trusted is the audit's question, not the manifest's."""
    if snap.signature is None:
        return None
    text, last = signing.split_signature(snap.message)
    if last != snap.signature:
        raise ManifestError(
            f"snapshot {snap.commit[:12]}'s Ledger-Signature is not its message's last line", hint="run 'ledger audit'"
        )
    parent = bytes.fromhex(snap.parents[0]) if snap.parents else None
    digest = signing.digest(
        snap.root, snap.parent_root, parent, bytes.fromhex(snap.tree), snap.attribution.get("actor", ""), text
    )
    return signing.recover(digest, last)
