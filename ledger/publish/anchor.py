"""The skill anchor: what lets a host verify a served skill offline (docs/lineage/anchor.md).

An MCP Skills entry's digests are unsigned (the spec: "Digests are not a trust anchor"). The
brain holds the anchor they lack: every file is in a bundle root that a signed commit records,
and maybe the chain. This module is that anchor as pure code, bytes in and a verdict out (no
git, no RPC): :func:`build` makes the ``_meta`` object :mod:`ledger.publish.entries` serves,
:func:`verify_anchor` checks one, :func:`verify_entry` checks a whole ``Skill`` entry with it.

The proofs are the bundle hash's own (docs/bundle-hash.md §6, :mod:`ledger.bundle.merkle`): a
file's full inclusion proof is its ``steps`` followed by the folder's, each part checked with
the one :func:`~ledger.bundle.merkle.verify_proof`. The signature is the snapshot's EIP-712 one
(§8.1): the anchor carries the typed data's fields as signed (the message as its keccak-256, so an
anchor's size never depends on the commit message) and the signature, and the signer is recovered
with :func:`ledger.protocol.signing.digest_of`; no commit object is needed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger._json import shown
from ledger.bundle.frontmatter import as_json, whole_number
from ledger.bundle.merkle import (
    KIND_DIR,
    KIND_EXEC,
    KIND_FILE,
    MAX_PATH_BYTES,
    Digest,
    InclusionProof,
    ProofStep,
    check_name,
    file_digest,
    format_root,
    prove,
    tree_of,
    verify_proof,
)
from ledger.errors import LedgerError, ProofError
from ledger.protocol import signing

__all__ = [
    "FORMAT",
    "KEY",
    "MAX_FILES",
    "MAX_TOTAL",
    "VERSIONS",
    "AnchorCheck",
    "FileProof",
    "anchor_of",
    "build",
    "counter_of",
    "is_skill_name",
    "signed_of",
    "skill_uri",
    "verify_anchor",
    "verify_entry",
]

KEY = "dev.brain-ledger/anchor"  # the entry's _meta key (the project's domain is brain-ledger.dev)
FORMAT = "brain-ledger/skill-anchor/1"
MAX_FILES = 512  # the MCP Skills extension's limits per skill: resources...
MAX_TOTAL = 16 * 1024 * 1024  # ...and the sum of their sizes
SCHEME = "skill://"

_KINDS = {"file": KIND_FILE, "exec": KIND_EXEC}
_NAMES = {v: k for k, v in _KINDS.items()}
_KEYS = {
    "format",
    "skill",
    "prefix",
    "version",
    "versions",
    "root",
    "commit",
    "signed",
    "signer",
    "chain",
    "folder",
    "files",
}
_SIGNED_KEYS = ("parentRoot", "parentCommit", "tree", "actor", "message", "signature")
_CHAIN_KEYS = {"chainId", "registry", "agent", "seq", "block", "tx"}
_HEX40 = re.compile(r"[0-9a-f]{40}\Z")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_ROOT = re.compile(r"blake3-tree-v1:[0-9a-f]{64}\Z")
_SKILL = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")  # the Agent Skills name rule (1-64 characters)
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}\Z")
_ROLES = ("agent", "curator", "user", "verifier")
VERSIONS = ("skill-md", "store")  # where the brain keeps its counter at the snapshot (§4.2): the anchor's versions


@dataclass(frozen=True)
class FileProof:
    """One file of an anchor: its path in the skill folder, kind, content digest ``C`` and steps up to the folder."""

    path: str
    kind: int
    content: bytes
    steps: tuple[ProofStep, ...]


@dataclass(frozen=True)
class AnchorCheck:
    """What a verified anchor establishes (docs/lineage/anchor.md §3)."""

    skill: str  # the folder in the bundle
    prefix: str  # the nested skill's folder inside it ("" for the skill itself)
    version: int
    versions: str  # "skill-md" or "store": where the brain kept the counter at that snapshot (§4.2)
    # the served SKILL.md's counter was checked to be version; else version is a claim (lineage/anchor.md §3)
    version_bound: bool
    root: str  # blake3-tree-v1:<hex>
    commit: str
    signer: str | None  # the address the snapshot's signature recovers to (None: unsigned)
    role: str | None
    chain: Mapping[str, Any] | None  # as the anchor states it; checked against a chain only by the caller
    files: tuple[str, ...]  # paths relative to the skill's root (the entry's skill path)
    bytes_checked: bool  # the files' bytes were given and match
    trusted: str | None  # "root" or "signer": what the caller pinned; None when it pinned nothing

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "skill": self.skill,
            "prefix": self.prefix,
            "version": self.version,
            "versions": self.versions,
            "version_bound": self.version_bound,
            "root": self.root,
            "commit": self.commit,
            "signer": self.signer,
            "role": self.role,
            "chain": self.chain,
            "files": list(self.files),
            "bytes_checked": self.bytes_checked,
            "trusted": self.trusted,
        }


def is_skill_name(name: object) -> bool:
    """Whether ``name`` is a skill name by the Agent Skills rules: 1-64 of a-z, 0-9 and single inner hyphens."""
    return isinstance(name, str) and len(name) <= 64 and _SKILL.fullmatch(name) is not None


def skill_uri(skill: str, prefix: str, rel: str = "SKILL.md") -> str:
    """The ``skill://`` URI of file ``rel`` of the skill at ``prefix`` inside bundle folder ``skill``."""
    return f"{SCHEME}{skill}/{prefix + '/' if prefix else ''}{rel}"


def _steps_json(steps: Sequence[ProofStep]) -> list[dict[str, Any]]:
    return [{"index": s.index, "count": s.count, "siblings": [h.hex() for h in s.siblings]} for s in steps]


def signed_of(snap: Any) -> dict[str, str] | None:
    """The anchor's ``signed`` member for a parsed snapshot (:class:`ledger.store.gitstore.Snapshot`): the
    EIP-712 fields its signature covers (§8.1), the message as its keccak-256, and the signature; ``None``
    when the snapshot is unsigned. Its size does not depend on the commit message."""
    if snap.signature is None:
        return None
    text, value = signing.split_signature(snap.message)
    return {
        "parentRoot": (snap.parent_root or bytes(32)).hex(),
        "parentCommit": snap.parents[0] if snap.parents else "0" * 40,
        "tree": snap.tree,
        "actor": snap.attribution.get("actor", ""),
        "message": signing.message_hash(text).hex(),
        "signature": value or "",
    }


def build(
    *,
    skill: str,
    prefix: str,
    version: int,
    versions: str,
    root: bytes,
    commit: bytes,
    signed: Mapping[str, str] | None,
    signer: tuple[str, str] | None,
    chain: Mapping[str, Any] | None,
    folder: bytes,
    folder_step: ProofStep,
    files: Sequence[FileProof],
) -> dict[str, Any]:
    """The anchor object (lineage/anchor.md §1), members in the order the spec writes them; ``files`` in byte order of
    path.
    ``signed`` (from :func:`signed_of`) is used as it is, not copied: the entries of one snapshot share it."""
    return {
        "format": FORMAT,
        "skill": skill,
        "prefix": prefix,
        "version": version,
        "versions": versions,
        "root": format_root(root),
        "commit": commit.hex(),
        "signed": signed,
        "signer": {"address": signer[0], "role": signer[1]} if signer is not None else None,
        "chain": dict(chain) if chain is not None else None,
        "folder": {"content": folder.hex(), "steps": _steps_json([folder_step])},
        "files": [
            {"path": f.path, "kind": _NAMES[f.kind], "content": f.content.hex(), "steps": _steps_json(f.steps)}
            for f in sorted(files, key=lambda f: f.path.encode())
        ],
    }


# ---------------------------------------------------------------------- verification


def anchor_of(doc: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """``(entry, anchor)`` from what a host holds: a ``Skill`` entry, a ``skills/get`` result
    (``{"skill": …}``) or the anchor alone (entry ``None``)."""
    if isinstance(doc, dict) and set(doc) >= {"skill"} and isinstance(doc.get("skill"), dict) and "format" not in doc:
        doc = doc["skill"]
    if not isinstance(doc, dict):
        raise ProofError(f"not a skill entry or anchor: a JSON object was expected, not {shown(doc, 40)}")
    if doc.get("format") == FORMAT:
        return None, doc
    meta = doc.get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get(KEY), dict):
        raise ProofError(
            f"the entry {shown(doc.get('uri'))} carries no anchor (its _meta has no {KEY!r} object)",
            hint="ask the server for the entry again (skills/get)",
        )
    return doc, meta[KEY]


def _fail(what: str, hint: str | None = None) -> ProofError:
    return ProofError(f"the anchor does not verify: {what}", hint=hint)


def _path(path: Any, where: str) -> str:
    """A file path in the skill folder: ``/``-separated names the bundle hash accepts, no ``\\``, within bounds."""
    if not isinstance(path, str) or not path:
        raise _fail(f"{where} has the path {shown(path)}, not a relative path")
    if "\\" in path or len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise _fail(f"{where} has the path {shown(path)}: a '\\' or longer than {MAX_PATH_BYTES} bytes")
    try:
        for part in path.split("/"):
            check_name(part)
    except LedgerError as exc:
        raise _fail(
            f"{where} has the path {shown(path)}, which is not a path in a skill ({exc.message})",
            hint="a path never holds '..', '.', an empty name or '.git'",
        ) from None
    return path


def _hex(value: Any, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise _fail(f"{what} is {shown(value)}, not {pattern.pattern.rstrip(chr(92) + 'Z')} (lower-case hex)")
    return value


def _int(value: Any, what: str, low: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise _fail(f"{what} is {shown(value)}, not a whole number ≥ {low}")
    return value


def _steps(value: Any, what: str) -> tuple[ProofStep, ...]:
    if not isinstance(value, list) or len(value) > 256:
        raise _fail(f"{what} has steps {shown(value, 40)}, not a list")
    out = []
    for s in value:
        if not isinstance(s, dict) or set(s) != {"index", "count", "siblings"}:
            raise _fail(f"{what} has a step {shown(s, 40)} that is not {{index, count, siblings}}")
        sib = s["siblings"]
        if not isinstance(sib, list) or len(sib) > 64:
            raise _fail(f"{what} has a step whose siblings {shown(sib, 40)} are not a list of at most 64")
        out.append(
            ProofStep(
                _int(s["index"], f"{what}'s step index"),
                _int(s["count"], f"{what}'s step count", 1),
                tuple(bytes.fromhex(_hex(h, _HEX64, f"a sibling in {what}")) for h in sib),
            )
        )
    return tuple(out)


def _recover(signed: Any, root: bytes) -> tuple[str | None, str | None]:
    """(address, role) that the ``signed`` member's signature recovers to over root ``root`` (lineage/anchor.md §3 step
    2)."""
    if signed is None:
        return None, None
    if not isinstance(signed, dict) or set(signed) != set(_SIGNED_KEYS):
        raise _fail(f"its signed member {shown(signed, 60)} is not null or exactly {list(_SIGNED_KEYS)}")
    words = [
        bytes.fromhex(_hex(signed[k], p, f"its signed {k}"))
        for k, p in (("parentRoot", _HEX64), ("parentCommit", _HEX40), ("tree", _HEX40), ("message", _HEX64))
    ]
    if not isinstance(signed["actor"], str) or not isinstance(signed["signature"], str):
        raise _fail("its signed actor or signature is not a string")
    try:
        digest = signing.digest_of(root, words[0], words[1], words[2], signed["actor"], words[3])
        return signing.recover(digest, signed["signature"]), signed["actor"]
    except LedgerError as exc:
        raise _fail(f"its signature is malformed ({exc.message})") from None


def counter_of(fm: Mapping[str, Any]) -> int | None:
    """The ledger's version counter a SKILL.md's frontmatter carries (§4.2: ``metadata.version`` when a whole
    number, else ``metadata.ledger-version`` when one), or ``None`` when it carries none."""
    meta = fm.get("metadata")
    found = [whole_number(meta.get(k)) for k in ("version", "ledger-version")] if isinstance(meta, dict) else []
    return next((n for n in found if n is not None), None)


def _which_skill(data: bytes, path: str, name: str, version: int | None) -> None:
    """lineage/anchor.md §3 step 10: the SKILL.md the anchor ends at is the skill it names (its frontmatter ``name`` is
    the
    last segment of ``skill/prefix``) and, with ``version`` (a folder's own SKILL.md where the brain counts
    there), at that version (§4.2: no counter is 0). Else the file's ``metadata.version`` is the author's."""
    try:
        fm = as_json(data.decode("utf-8"))
    except (LedgerError, UnicodeDecodeError) as exc:
        raise _fail(f"file {path!r} has no frontmatter that renders as JSON ({exc})") from None
    if fm.get("name") != name or not is_skill_name(name):
        raise _fail(
            f"file {path!r} names the skill {shown(fm.get('name'))}, not {name!r}: it is not the skill "
            "the anchor names",
            hint="a sub-folder of a skill is not a skill unless its SKILL.md says so",
        )
    found = counter_of(fm) or 0
    if version is not None and found != version:
        raise _fail(
            f"file {path!r} is at version {found}, not the anchor's {version}",
            hint="the anchor's version was altered, or belongs to another snapshot",
        )


def verify_anchor(
    anchor: Mapping[str, Any],
    files: Mapping[str, bytes] | None = None,
    *,
    root: bytes | None = None,
    signer: str | None = None,
) -> AnchorCheck:
    """Check an anchor by docs/lineage/anchor.md §3; raise :class:`ProofError` naming the file and the fix.

    ``files`` (paths relative to the skill's root, the prefix removed) are checked byte for byte and must be
    exactly the anchor's. ``root`` and ``signer`` pin what the caller trusts: the anchor's root must be it,
    the snapshot's signature must recover to it.
    """
    if not isinstance(anchor, Mapping) or set(anchor) != _KEYS:
        got = sorted(anchor) if isinstance(anchor, Mapping) else shown(anchor, 40)
        raise _fail(f"its members are {got}, not exactly {sorted(_KEYS)}")
    if anchor["format"] != FORMAT:
        raise _fail(f"its format is {shown(anchor['format'])}, not {FORMAT!r}", hint="a newer ledger may read it")
    skill, prefix = anchor["skill"], anchor["prefix"]
    if not is_skill_name(skill):
        raise _fail(f"its skill {shown(skill)} is not a skill folder name")
    if prefix != "":
        _path(prefix, "its prefix")
        if not is_skill_name(prefix.rsplit("/", 1)[-1]):
            raise _fail(f"its prefix {shown(prefix)} does not end in a skill name")
    version = _int(anchor["version"], "its version", 1)
    versions = anchor["versions"]
    if versions not in VERSIONS:
        raise _fail(
            f"its versions is {shown(versions)}, not 'skill-md' or 'store'",
            hint="it says where the brain keeps the version counter (docs/lineage.md §4.2)",
        )
    if not isinstance(anchor["root"], str) or not _ROOT.fullmatch(anchor["root"]):
        raise _fail(f"its root {shown(anchor['root'])} is not blake3-tree-v1:<64 lower-case hex>")
    have_root = bytes.fromhex(anchor["root"].split(":", 1)[1])
    if root is not None and have_root != root:
        raise _fail(
            f"it is for root {anchor['root']}, not the trusted {format_root(root)}",
            hint="the server serves another snapshot than the one you pinned",
        )
    # 1. the signature: the signer that vouches for root (with its tree and parent)
    commit = _hex(anchor["commit"], _HEX40, "its commit")
    recovered, role = _recover(anchor["signed"], have_root)
    stated = anchor["signer"]
    if recovered is None:
        if stated is not None:
            raise _fail(f"it names signer {shown(stated, 60)} but carries no signature")
    elif (
        not isinstance(stated, dict)
        or set(stated) != {"address", "role"}
        or stated["address"] != recovered
        or stated["role"] != role
    ):  # the address exactly as recovered: 0x and 40 lower-case hex digits
        raise _fail(f"it names signer {shown(stated, 80)} but its signature is by {recovered} as {role!r}")
    if signer is not None:
        if not _ADDRESS.fullmatch(signer):
            raise ProofError(f"the trusted signer {signer!r} is not an address (0x and 40 hex digits)")
        if recovered != signer.lower():
            raise _fail(
                f"root {anchor['root']} is {'unsigned' if recovered is None else 'signed by ' + recovered}, "
                f"not by the trusted {signer.lower()}",
                hint="do not load it; ask its publisher",
            )
    chain = anchor["chain"]
    if chain is not None:
        if not isinstance(chain, dict) or set(chain) != _CHAIN_KEYS:
            raise _fail(f"its chain {shown(chain, 60)} is not null or exactly {sorted(_CHAIN_KEYS)}")
        for k in ("chainId", "block"):
            _int(chain[k], f"its chain {k}")
        _int(chain["seq"], "its chain seq", 1)
        if not isinstance(chain["registry"], str) or not _ADDRESS.fullmatch(chain["registry"]):
            raise _fail(f"its chain registry {shown(chain['registry'])} is not an address")
        for k in ("agent", "tx"):
            if not isinstance(chain[k], str) or not re.fullmatch(r"0x[0-9a-f]{64}", chain[k]):
                raise _fail(f"its chain {k} {shown(chain[k])} is not 0x and 64 lower-case hex digits")
    # 2. the files: their proofs to the folder, completeness of the skill's directory
    folder = anchor["folder"]
    if not isinstance(folder, dict) or set(folder) != {"content", "steps"}:
        raise _fail(f"its folder {shown(folder, 60)} is not {{content, steps}}")
    folder_content = bytes.fromhex(_hex(folder["content"], _HEX64, "its folder content"))
    listed = anchor["files"]
    if not isinstance(listed, list) or not listed or len(listed) > MAX_FILES:
        raise _fail(f"its files are not a list of 1 to {MAX_FILES} files", hint="a skill this large is not served")
    proofs: list[FileProof] = []
    for i, f in enumerate(listed):
        if not isinstance(f, dict) or set(f) != {"path", "kind", "content", "steps"}:
            raise _fail(f"file {i} {shown(f, 60)} is not {{path, kind, content, steps}}")
        path = _path(f["path"], f"file {i}")
        if f["kind"] not in _KINDS:
            raise _fail(f"file {path!r} has kind {shown(f['kind'])}, not 'file' or 'exec'")
        content = bytes.fromhex(_hex(f["content"], _HEX64, f"file {path!r}'s content"))
        proofs.append(FileProof(path, _KINDS[f["kind"]], content, _steps(f["steps"], f"file {path!r}")))
    paths = [p.path for p in proofs]
    for a, b in itertools.pairwise(paths):
        if a.encode() >= b.encode():
            what = "twice" if a == b else "out of order (files are in byte order of path)"
            raise _fail(f"file {b!r} is listed {what}")
    inner = prefix + "/" if prefix else ""
    outside = [p for p in paths if not p.startswith(inner)]
    if outside:
        raise _fail(f"file {outside[0]!r} is not in the skill's directory {prefix!r}")
    if f"{inner}SKILL.md" not in paths:
        raise _fail(f"it lists no {inner}SKILL.md", hint="every skill has a SKILL.md at its root")
    for p in proofs:
        try:
            verify_proof(InclusionProof(p.path, p.kind, p.content, p.steps, folder_content), folder_content)
        except LedgerError as exc:
            raise _fail(
                f"file {p.path!r} is not in the skill folder ({exc.message})",
                hint="the file, its kind or its proof was altered",
            ) from None
    try:
        tree = tree_of({p.path[len(inner) :]: Digest(p.kind, p.content) for p in proofs})
    except LedgerError as exc:
        raise _fail(f"its files do not form a directory ({exc.message})") from None
    here = tree.digest
    if not prefix:
        if here != folder_content:
            raise _fail(
                "its files are not the whole skill folder (their directory digest is not the folder's)",
                hint="a file was dropped or added",
            )
    else:
        depth = prefix.count("/") + 1
        upper = proofs[0].steps[len(proofs[0].path.split("/")) - depth :]
        try:
            verify_proof(InclusionProof(prefix, KIND_DIR, here, upper, folder_content), folder_content)
        except LedgerError as exc:
            raise _fail(
                f"its files are not the whole directory {prefix!r} ({exc.message})", hint="a file was dropped or added"
            ) from None
    # below the skill's directory every (index, count) is known: one accepted form (lineage/anchor.md §3 step 7)
    for p in proofs:
        exact = prove(tree, p.path[len(inner) :]).steps
        if [(s.index, s.count) for s in p.steps[: len(exact)]] != [(s.index, s.count) for s in exact]:
            raise _fail(
                f"file {p.path!r} has a step whose index or count is not its place in the listed files",
                hint="the proof was altered",
            )
    # 3. the folder in the root
    try:
        verify_proof(
            InclusionProof(skill, KIND_DIR, folder_content, _steps(folder["steps"], "the folder"), have_root), have_root
        )
    except LedgerError as exc:
        raise _fail(
            f"the folder {skill!r} is not in root {anchor['root']} ({exc.message})",
            hint="the anchor mixes two snapshots, or was altered",
        ) from None
    # 4. the bytes
    if files is not None:
        want = {p.path[len(inner) :]: p for p in proofs}
        extra = sorted(set(files) - set(want))
        if extra:
            raise _fail(f"file {extra[0]!r} is not one of the skill's files", hint="load no file it does not list")
        total = 0
        for rel, p in want.items():
            if rel not in files:
                raise _fail(f"file {rel!r} was not given", hint="read every file the entry lists")
            data = files[rel]
            total += len(data)
            if total > MAX_TOTAL:
                raise _fail(f"the files reach {total} bytes at {rel!r}, over the {MAX_TOTAL} of a skill")
            if file_digest(data) != p.content:
                raise _fail(
                    f"file {rel!r} is not the file the root holds (its content digest differs)",
                    hint="do not load it: it was altered, or belongs to another snapshot",
                )
    # the version is bound where the skill's own SKILL.md carries the counter: in a brain that counts there, and
    # not for a nested skill (its folder's SKILL.md does, which is not one of its files); else it is a claim
    bound = files is not None and versions == "skill-md" and not prefix
    if files is not None:
        _which_skill(
            files["SKILL.md"], f"{inner}SKILL.md", (prefix or skill).rsplit("/", 1)[-1], version if bound else None
        )
    return AnchorCheck(
        skill,
        prefix,
        version,
        versions,
        bound,
        anchor["root"],
        commit,
        recovered,
        role,
        chain,
        tuple(p.path[len(inner) :] for p in proofs),
        files is not None,
        "signer" if signer is not None else "root" if root is not None else None,
    )


def verify_entry(
    doc: Any,
    files: Mapping[str, bytes] | None = None,
    *,
    root: bytes | None = None,
    signer: str | None = None,
    frontmatter: bool = True,
) -> AnchorCheck:
    """Check an entry as it comes (a ``Skill``, a ``skills/get`` result or the anchor alone) by lineage/anchor.md §3:
    the anchor, and that the entry's ``uri``, ``resources`` and (with the bytes) ``frontmatter`` are the
    anchor's. ``files`` are keyed by path relative to the skill's root."""
    entry, anchor = anchor_of(doc)
    check = verify_anchor(anchor, files, root=root, signer=signer)
    if entry is None:
        return check
    skill, prefix = check.skill, check.prefix
    if entry.get("uri") != skill_uri(skill, prefix):
        raise _fail(f"the entry's uri {shown(entry.get('uri'))} is not {skill_uri(skill, prefix)!r}")
    resources = entry.get("resources")
    if not isinstance(resources, list) or len(resources) != len(check.files):
        raise _fail("the entry's resources are not exactly the anchor's files", hint="a file was dropped or added")
    sizes = 0
    for rel, res in zip(check.files, resources, strict=True):
        uri = skill_uri(skill, prefix, rel)
        if not isinstance(res, dict) or set(res) != {"uri", "digest", "size"} or res["uri"] != uri:
            raise _fail(
                f"the entry's resource {shown(res, 80)} is not {uri!r} with its digest and size",
                hint="resources list the anchor's files, in its order",
            )
        if not isinstance(res["digest"], str) or not _DIGEST.fullmatch(res["digest"]):
            raise _fail(f"the entry's resource {uri} has digest {shown(res['digest'])}, not sha256:<64 lower hex>")
        size = _int(res["size"], f"the size of {uri}")
        sizes += size
        if files is not None:
            data = files[rel]
            if len(data) != size or "sha256:" + hashlib.sha256(data).hexdigest() != res["digest"]:
                raise _fail(f"file {rel!r} is not the entry's {uri} (its size or sha256 differs)")
    if sizes > MAX_TOTAL:
        raise _fail(f"the entry's files total {sizes} bytes, over the {MAX_TOTAL} of a skill")
    fm = entry.get("frontmatter")
    name = prefix.rsplit("/", 1)[-1] if prefix else skill
    if not isinstance(fm, dict) or fm.get("name") != name or not isinstance(fm.get("description"), str):
        raise _fail(f"the entry's frontmatter does not name the skill {name!r} with a description")
    if files is not None and frontmatter:
        try:
            stated = as_json(files["SKILL.md"].decode("utf-8"))
        except (LedgerError, UnicodeDecodeError) as exc:
            raise _fail(f"file 'SKILL.md' has no frontmatter that renders as JSON ({exc})") from None
        if json.dumps(stated, sort_keys=True) != json.dumps(fm, sort_keys=True):
            raise _fail("the entry's frontmatter is not file 'SKILL.md''s", hint="do not load it")
    return check
