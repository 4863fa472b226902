"""The ``supply`` record: where each installed skill came from, who vetted it, and what is revoked.

A snapshot's top tree holds ``supply`` (mode ``100644``) from the first ``install`` on
(docs/lineage.md §1.2, docs/supply-chain.md).  The snapshot's signature binds its tree, so
the record is signed with the snapshot that changes it: an install's pin and scan verdict,
a curator's approval (and an override's reason), a revocation.  Everything in it is plain
data; this module only reads, checks and writes the bytes, and the rules of who may change
what live in :mod:`ledger.audit.supplycheck` and the supply services.

The bytes are canonical: JSON with keys sorted, two-space indent, ASCII only (``\\uXXXX``
escapes), a final newline.  A record of any other bytes is refused, so two writers that
mean the same record write the same blob.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ledger._json import depth
from ledger.bundle.frontmatter import COUNTER_LINE
from ledger.errors import StoreError
from ledger.protocol.bundlehash import KIND_EXEC, KIND_FILE, Digest, DirNode, file_digest, format_root

__all__ = [
    "APPROVED",
    "APPROVERS",
    "QUARANTINED",
    "RECORD",
    "REVOKED",
    "STATES",
    "WITHHELD",
    "Entry",
    "Supply",
    "calibration_problem",
    "file_sha256",
    "format_record",
    "is_digest",
    "parse_record",
    "skill_blake3",
]

RECORD = "supply"  # the top-tree entry's name
FORMAT = 3  # what this ledger writes (lineage v1.10: verdicts carry `calibration`; v1.7's format 2: `counter`)
FORMATS = (1, 2, 3)  # what it reads; a record never declares a format below its parent's (lineage/supply.md §1)
QUARANTINED, APPROVED, REVOKED = "quarantined", "approved", "revoked"
STATES = (QUARANTINED, APPROVED, REVOKED)
# the roles whose snapshot may make an entry approved (lineage/supply.md §1 rules 6 and 7)
APPROVERS = ("user", "curator")
WITHHELD = (QUARANTINED, REVOKED)  # these entries stay when their skill is deleted (lineage/supply.md §1 rule 5, v1.7)
MAX_RECORD = 64 << 20  # bytes: far above any real record (a few KiB per installed skill), far below memory
MAX_DEPTH = 32  # JSON nesting: a record needs 6
SOURCE_TYPES = ("brain", "git", "marketplace", "skills-lock", "index")

_HEX40 = re.compile(r"[0-9a-f]{40}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_ROOT = re.compile(r"blake3-tree-v1:[0-9a-f]{64}")
_ADDRESS = re.compile(r"0x[0-9a-f]{40}")
_DIGEST = re.compile(r"(blake3-tree-v1|sha256):[0-9a-f]{64}")  # what a revocation names
_SHA256 = re.compile(r"sha256:[0-9a-f]{64}")
_RULE = re.compile(r"LS[0-9]{3}|ext:.+", re.S)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DATE = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])")
_COUNTS = ("samples", "critical", "high")
SEVERITIES = ("critical", "high", "medium", "low")  # most severe first (docs/scanner.md)


@dataclass(frozen=True)
class Entry:
    """One installed skill: its source and pin, its digests when vetted, and its standing."""

    source: dict[str, Any]  # {"type", "url", "path", "ref"}
    pin: dict[str, Any]  # {"commit"} | {"commit", "root", "seq"} | {"sha256"}
    version: int  # the brain's version of the skill these digests are of
    blake3: str  # blake3-tree-v1:… of the skill's directory (bundle-hash.md §4), as installed
    sha256: str  # the `skills` CLI's folder hash of the same files (docs/supply-chain.md §3)
    files: dict[str, str]  # path → sha256 of its bytes, for naming what drifted
    signer: str | None  # the upstream signer's key id, when the source signs
    derived_from: dict[str, Any] | None  # the upstream agent and root (credit; ERC-8239 vocabulary)
    state: str  # quarantined | approved | revoked
    verdict: dict[str, Any]  # the scanner's verdict (docs/scanner.md), every scanner merged
    approval: dict[str, Any] | None = None  # {"by", "auto", "override"} once approved
    # The counter line of SKILL.md as the source served it (None: it had none), so the installed SKILL.md
    # can be held to its pin with the ledger's counter set aside (lineage/supply.md §1); "" = the key is absent
    # (an entry of a format-1 record, or carried over from one).
    counter: str | None = ""

    def to_json(self) -> dict[str, Any]:
        doc = {
            "source": self.source,
            "pin": self.pin,
            "version": self.version,
            "blake3": self.blake3,
            "sha256": self.sha256,
            "files": self.files,
            "signer": self.signer,
            "derived_from": self.derived_from,
            "state": self.state,
            "verdict": self.verdict,
            "approval": self.approval,
        }
        if self.counter != "":
            doc["counter"] = self.counter
        return doc

    @property
    def blocking(self) -> bool:
        """A critical finding: approval needs an override with a reason."""
        return self.verdict.get("worst") == "critical"

    def digests(self) -> tuple[str, str]:
        return self.blake3, "sha256:" + self.sha256


@dataclass(frozen=True)
class Supply:
    """A brain's supply record: installed skills by name, and revoked digests with their reasons."""

    skills: dict[str, Entry] = field(default_factory=dict)
    revoked: dict[str, dict[str, Any]] = field(default_factory=dict)  # digest → {"reason", "source", "pin"}
    format: int = field(default=FORMAT, compare=False)  # declared; not part of what the record says

    @property
    def empty(self) -> bool:
        return not self.skills and not self.revoked

    def withheld(self) -> frozenset[str]:
        """Names no runtime, index or listing may see: quarantined or revoked."""
        return frozenset(n for n, e in self.skills.items() if e.state != APPROVED)

    def is_revoked(self, *digests: str) -> str | None:
        """The first of ``digests`` revoked here, or None."""
        return next((d for d in digests if d in self.revoked), None)

    def with_entry(self, name: str, entry: Entry | None) -> Supply:
        skills = dict(self.skills)
        if entry is None:
            skills.pop(name, None)
        else:
            skills[name] = entry
        return replace(self, skills=skills)

    def without(self, names: Iterable[str]) -> Supply:
        drop = set(names) & set(self.skills)
        return replace(self, skills={n: e for n, e in self.skills.items() if n not in drop}) if drop else self

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "revoked": self.revoked,
            "skills": {n: e.to_json() for n, e in self.skills.items()},
        }


def format_record(supply: Supply) -> bytes:
    """The canonical bytes of a record (module docstring)."""
    return (json.dumps(supply.to_json(), sort_keys=True, indent=2, ensure_ascii=True) + "\n").encode()


def parse_record(data: bytes) -> Supply:
    """A record from its bytes, refusing anything but the canonical form of a valid record."""
    if len(data) > MAX_RECORD:
        raise StoreError(f"the supply record is {len(data)} bytes; a record may hold at most {MAX_RECORD}")
    if depth(data) > MAX_DEPTH:  # before the parser: deep nesting is a stack to exhaust, not a record
        raise StoreError(f"the supply record nests deeper than {MAX_DEPTH} levels; no record does")
    try:
        doc = json.loads(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # a peer's record may be hostile
        raise StoreError(f"the supply record is not ASCII JSON within bounds: {str(exc)[:200]}") from exc
    _keys(doc, {"format", "revoked", "skills"}, "the supply record")
    if type(doc["format"]) is not int or doc["format"] not in FORMATS:
        raise StoreError(
            f"the supply record's format {doc['format']!r} is not one of {', '.join(map(str, FORMATS))}",
            hint="a newer ledger wrote it; upgrade",
        )
    revoked = _dict(doc["revoked"], "revoked")
    for digest, why in revoked.items():
        _check(_DIGEST.fullmatch(digest) is not None, f"revoked digest {digest!r}")
        _keys(why, {"reason", "source", "pin"}, f"revocation of {digest}")
        _check(_text(why["reason"]) and why["reason"].strip() != "", f"revocation of {digest}: reason")
        _check(why["source"] is None or _text(why["source"]), f"revocation of {digest}: source")
        _check(why["pin"] is None or _text(why["pin"]), f"revocation of {digest}: pin")
    skills = {name: _entry(name, raw, doc["format"]) for name, raw in _dict(doc["skills"], "skills").items()}
    supply = Supply(skills, revoked, doc["format"])
    if format_record(supply) != data:
        raise StoreError("the supply record is not in canonical form (see docs/lineage.md, 'The supply record')")
    return supply


def _entry(name: str, raw: Any, fmt: int) -> Entry:
    where = f"supply entry {name!r}"
    keys = {
        "source",
        "pin",
        "version",
        "blake3",
        "sha256",
        "files",
        "signer",
        "derived_from",
        "state",
        "verdict",
        "approval",
    }
    _keys(raw, keys | {"counter"} if fmt >= 2 and isinstance(raw, dict) and "counter" in raw else keys, where)
    counter = raw.get("counter", "")
    _check(
        counter is None
        or (counter == "" and "counter" not in raw)
        or (isinstance(counter, str) and COUNTER_LINE.match(counter) is not None),
        f"{where}: counter",
    )
    source = _dict(raw["source"], f"{where}: source")
    _check(
        {"type", "url", "path", "ref"} <= set(source)
        and source["type"] in SOURCE_TYPES
        and all(v is None or _text(v) for v in source.values())
        and _text(source["url"])
        and _text(source["path"]),
        f"{where}: source",
    )
    pin = _dict(raw["pin"], f"{where}: pin")
    _check(
        bool(pin) and set(pin) <= {"commit", "root", "seq", "sha256", "version", "digest", "upstream"}, f"{where}: pin"
    )
    _check("upstream" not in pin or (_int(pin["upstream"]) and pin["upstream"] >= 1), f"{where}: pin upstream")
    _check("version" not in pin or _text(pin["version"]), f"{where}: pin version")
    _check("commit" not in pin or _HEX40.fullmatch(str(pin["commit"])) is not None, f"{where}: pin commit")
    _check("root" not in pin or _ROOT.fullmatch(str(pin["root"])) is not None, f"{where}: pin root")
    _check("seq" not in pin or pin["seq"] is None or (_int(pin["seq"]) and pin["seq"] >= 1), f"{where}: pin seq")
    _check("sha256" not in pin or _HEX64.fullmatch(str(pin["sha256"])) is not None, f"{where}: pin sha256")
    _check("digest" not in pin or _SHA256.fullmatch(str(pin["digest"])) is not None, f"{where}: pin digest")
    _check(_int(raw["version"]) and raw["version"] >= 1, f"{where}: version")
    _check(_ROOT.fullmatch(str(raw["blake3"])) is not None, f"{where}: blake3")
    _check(_HEX64.fullmatch(str(raw["sha256"])) is not None, f"{where}: sha256")
    files = _dict(raw["files"], f"{where}: files")
    _check(bool(files) and all(_HEX64.fullmatch(str(v)) for v in files.values()), f"{where}: files")
    _check(raw["signer"] is None or (_text(raw["signer"]) and raw["signer"] != ""), f"{where}: signer")
    _check(raw["derived_from"] is None or _derived(raw["derived_from"]), f"{where}: derived_from")
    _check(raw["state"] in STATES, f"{where}: state")
    verdict = _verdict(raw["verdict"], f"{where}: verdict", fmt)
    approval = raw["approval"]
    if approval is not None:
        _keys(approval, {"by", "auto", "override"}, f"{where}: approval")
        _check(approval["by"] is None or _ADDRESS.fullmatch(str(approval["by"])) is not None, f"{where}: approval")
        _check(isinstance(approval["auto"], bool), f"{where}: approval auto")
        _check(
            approval["override"] is None or (_text(approval["override"]) and approval["override"].strip() != ""),
            f"{where}: approval override",
        )
    _check((approval is not None) == (raw["state"] == APPROVED) or raw["state"] == REVOKED, f"{where}: approval")
    return Entry(
        source,
        pin,
        raw["version"],
        raw["blake3"],
        raw["sha256"],
        files,
        raw["signer"],
        raw["derived_from"],
        raw["state"],
        verdict,
        approval,
        counter,
    )


def _derived(raw: Any) -> bool:
    """``{"root"}`` or ``{"agent", "chain", "registry", "root"}`` (docs/lineage/supply.md §2)."""
    if not isinstance(raw, dict) or set(raw) not in ({"root"}, {"agent", "chain", "registry", "root"}):
        return False
    if _ROOT.fullmatch(str(raw["root"])) is None or not isinstance(raw["root"], str):
        return False
    registry = raw.get("registry")
    return "agent" not in raw or (
        _int(raw["agent"])
        and _int(raw["chain"])
        and raw["chain"] >= 1
        and isinstance(registry, str)
        and _ADDRESS.fullmatch(registry) is not None
    )


def _verdict(raw: Any, where: str, fmt: int = FORMAT) -> dict[str, Any]:
    """The scanners' verdict, held to docs/lineage/supply.md §2 (the schema of docs/scanner.md): every member
    typed, the findings sorted and distinct, and ``worst`` the one the findings give; from format 3 it
    MAY carry ``calibration`` (lineage/supply.md §2, v1.10), one member per scanner it names."""
    keys = {"scanner", "worst", "findings"}
    _keys(raw, keys | {"calibration"} if fmt >= 3 and isinstance(raw, dict) and "calibration" in raw else keys, where)
    _check(_text(raw["scanner"]) and raw["scanner"] != "" and isinstance(raw["findings"], list), where)
    if "calibration" in raw:
        problem = calibration_problem(raw["calibration"], raw["scanner"])
        _check(problem is None, f"{where}: calibration ({problem})")
    keys = []
    for i, f in enumerate(raw["findings"]):
        _keys(f, {"rule", "severity", "file", "line", "detail"}, f"{where}: finding {i}")
        parts = f["file"].split("/") if _text(f["file"]) else [""]
        ok = (
            _text(f["rule"])
            and _RULE.fullmatch(f["rule"]) is not None
            and f["severity"] in SEVERITIES
            and not any(p in ("", ".", "..") for p in parts)
            and "\x00" not in f["file"]
            and (f["line"] is None or (_int(f["line"]) and f["line"] >= 1))
            and _text(f["detail"])
            and len(f["detail"]) <= 80
            and _CONTROL.search(f["detail"]) is None
        )
        _check(ok, f"{where}: finding {i}")
        keys.append((f["file"], f["line"] or 0, f["rule"], f["severity"], f["detail"]))
    _check(all(a < b for a, b in itertools.pairwise(keys)), f"{where}: findings (sorted, each once)")
    worst = min((f["severity"] for f in raw["findings"]), key=SEVERITIES.index, default="clean")
    _check(raw["worst"] == worst, f"{where}: worst (the findings say {worst})")
    return raw


def calibration_problem(cal: Any, scanner: str | None) -> str | None:
    """Why ``cal`` is not a verdict's ``calibration`` (docs/lineage/supply.md §2, v1.10), or None when it is:
    an object with exactly one member per name of ``scanner`` split on ``+``, each null or a CAL.  With
    ``scanner`` None, the members' names are not checked (ledger/scanner/calibration.json's shape)."""
    if not isinstance(cal, dict):
        return "not an object"
    if scanner is not None:
        names = scanner.split("+")
        if "" in names or len(set(names)) != len(names):
            return f"the scanner name {scanner!r} does not split on '+' into distinct names"
        if set(cal) != set(names):
            return f"its keys ({', '.join(sorted(cal)) or 'none'}) are not the scanners named ({', '.join(names)})"
    for name, one in cal.items():
        if one is None and scanner is not None:
            continue
        why = _cal_problem(one)
        if why is not None:
            return f"{name}: {why}"
    return None


def _cal_problem(one: Any) -> str | None:
    if not isinstance(one, dict) or set(one) != {"version", "measured", "corpora", "malicious", "benign"}:
        return "expected exactly the members version, measured, corpora, malicious, benign"
    if not _text(one["version"]) or not one["version"] or _CONTROL.search(one["version"]):
        return "version must be non-empty printable text"
    if not _text(one["measured"]) or _DATE.fullmatch(one["measured"]) is None:
        return "measured must be a date YYYY-MM-DD"
    if not _text(one["corpora"]) or not one["corpora"].strip() or _CONTROL.search(one["corpora"]):
        return "corpora must be one non-blank line of text"
    for side in ("malicious", "benign"):
        counts = one[side]
        if not isinstance(counts, dict) or set(counts) != set(_COUNTS) or not all(_int(counts[k]) for k in _COUNTS):
            return f"{side} must be {{samples, critical, high}}, each an integer >= 0"
        if not 0 <= counts["critical"] <= counts["high"] <= counts["samples"] or counts["samples"] < 1:
            return f"{side} must have 0 <= critical <= high <= samples and samples >= 1"
    return None


def _keys(obj: Any, keys: set[str], where: str) -> None:
    if not isinstance(obj, dict) or set(obj) != keys:
        have = (", ".join(sorted(obj)) or "none") if isinstance(obj, dict) else f"a {type(obj).__name__}"
        raise StoreError(f"{where} must have exactly the keys {', '.join(sorted(keys))}, not {have}")


def _dict(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise StoreError(f"{where} must be a JSON object")
    return obj


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise StoreError(f"the supply record's {what} is not valid (see docs/supply-chain.md, 'Pins and digests')")


def is_digest(text: str) -> bool:
    """Whether ``text`` names a digest a revocation can hold: ``blake3-tree-v1:<hex>`` or ``sha256:<hex>``."""
    return _DIGEST.fullmatch(text) is not None


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def skill_blake3(files: Mapping[str, tuple[bytes, bool]]) -> str:
    """The bundle-hash digest of a skill's directory (bundle-hash.md §4) from its files in memory."""
    tree: dict[str, Any] = {}
    for rel, (data, exe) in files.items():
        *dirs, leaf = rel.split("/")
        level = tree
        for d in dirs:
            level = level.setdefault(d, {})
        level[leaf] = Digest(KIND_EXEC if exe else KIND_FILE, file_digest(data))

    def node(level: dict[str, Any], where: str) -> DirNode:
        return DirNode({k: node(v, f"{where}/{k}") if isinstance(v, dict) else v for k, v in level.items()}, where)

    return format_root(node(tree, "").digest)
