"""Outcome records: did version N of a skill work on a task, signed by whoever judged it.

An outcome record (docs/lineage.md §14) binds the brain, the skill, its version and content
digest, the snapshot that served it (the usage receipt), a task, an outcome, the evidence and
the time, and is signed by an Ethereum key with EIP-191 over its id.  An **entry** of the
evidence log is the RFC 8785 (JCS) bytes of ``{"record": …, "signature": …}``: one line, no
newline inside (JCS escapes control characters).  A record that is not exactly what this
module writes is refused, so one outcome has one set of bytes and one id.

Who signed it decides its tier: a key the brain trusts as ``verifier`` makes it *verified*,
any other trusted key *self-reported* (:mod:`ledger.audit.evidencecheck`).
"""

from __future__ import annotations

import calendar
import datetime
import hashlib
import json
import math
import re
import time
from dataclasses import dataclass
from typing import Any

from ledger._json import depth, unique_keys
from ledger.errors import StoreError
from ledger.signatures.signing import SignatureError, recover, sign

__all__ = [
    "FORMAT",
    "FORMAT_V1",
    "MAX_BATCH",
    "MAX_ENTRY",
    "Entry",
    "batch_id",
    "canonical",
    "format_time",
    "make_record",
    "outcome_id",
    "outcome_id_of",
    "parse_entry",
    "parse_time",
    "sign_batch",
    "sign_entry",
    "signed_text",
]  # fmt: skip

FORMAT = "brain-ledger/outcome/v2"  # lineage v1.7: a record names its batch (docs/lineage.md §14.9)
FORMAT_V1 = "brain-ledger/outcome/v1"  # lineage v1.6: no batch; read and audited, never written
MAX_BATCH = 100_000  # outcomes in one batch: a bulk import of 100,000 is one batch
STATEMENT = "brain-ledger outcome v1\n"  # the signed text: this line, the id in hex, a newline
MAX_ENTRY = 8192  # bytes: a record is a few hundred; a log of 100,000 stays well under a gigabyte
MAX_TEXT = 512  # characters (code points) of a task id, a verifier name or an evidence URI
MAX_INT = 2**53 - 1  # I-JSON's safe integers (RFC 7493 §2.2), all RFC 8785 writes
MAX_DEPTH = 8  # JSON nesting: an entry needs 4
RESULTS = ("success", "failure", "score")

_KEYS_V1 = ("agent", "brain", "digest", "evidence", "format", "outcome", "receipt", "signer", "skill", "task", "time",
            "verifier", "version")  # fmt: skip
_KEYS = (*_KEYS_V1, "batch")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_HEX40 = re.compile(r"[0-9a-f]{40}\Z")
_ADDRESS = re.compile(r"0x[0-9a-f]{40}\Z")
_AGENT = re.compile(r"0x[0-9a-f]{64}\Z")
_ROOT = re.compile(r"blake3-tree-v1:[0-9a-f]{64}\Z")
_SHA256 = re.compile(r"sha256:[0-9a-f]{64}\Z")
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\Z")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]*\Z")


def canonical(value: Any) -> bytes:
    """RFC 8785 bytes of ``value``.

    The ``rfc8785`` library (as attestations and manifests use) is the reference; a record's
    values (ASCII keys, strings, integers within 2^53, non-integral floats in [1e-4, 1e16)) are
    written by ``json.dumps``, whose output is the same bytes for them (same escapes, same
    shortest round-trip digits; tests/test_outcomes.py checks the two against each other), at a
    tenth of the cost: a bulk import writes 100,000 of them.
    """
    if _plain(value):
        try:
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False).encode("utf-8")  # fmt: skip
        except (ValueError, UnicodeEncodeError) as exc:
            raise StoreError(f"an outcome record cannot be written as RFC 8785 JSON: {exc}") from exc
    import rfc8785

    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, UnicodeError, ValueError, TypeError) as exc:
        raise StoreError(f"an outcome record cannot be written as RFC 8785 JSON: {exc}") from exc


def _plain(value: Any) -> bool:
    """Whether ``json.dumps`` writes ``value`` exactly as RFC 8785 does."""
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return abs(value) <= MAX_INT
    if isinstance(value, float):
        return math.isfinite(value) and not value.is_integer() and 1e-4 <= abs(value) < 1e16
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and k.isascii() and _plain(v) for k, v in value.items())
    return False


def outcome_id(record: dict[str, Any]) -> bytes:
    """SHA-256 of the record's RFC 8785 bytes: what is signed, and what the log deduplicates by."""
    return hashlib.sha256(canonical(record)).digest()


def signed_text(oid: bytes) -> str:
    return STATEMENT + oid.hex() + "\n"


def _eip191(text: str) -> bytes:
    from ledger.signatures.signing import _keccak

    data = text.encode()
    return _keccak(b"\x19Ethereum Signed Message:\n" + str(len(data)).encode() + data)


def format_time(stamp: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(stamp if stamp is not None else time.time())))


def parse_time(text: str) -> int:
    """Seconds since the epoch of a ``YYYY-MM-DDTHH:MM:SSZ`` time (UTC, whole seconds only)."""
    if not isinstance(text, str) or not _TIME.match(text):
        raise StoreError(f"time {text!r} is not YYYY-MM-DDTHH:MM:SSZ (UTC, whole seconds)")
    try:
        when = datetime.datetime(int(text[:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]),
                                 int(text[14:16]), int(text[17:19]))  # fmt: skip
    except ValueError as exc:
        raise StoreError(f"time {text!r} is not a real date: {exc}") from exc
    return calendar.timegm(when.timetuple())


def make_record(
    *, brain: str, agent: str | None, skill: str, version: int, digest: str, receipt: dict[str, str],
    task_id: str | None, task_digest: str | None, result: str, score: float | None = None,
    scale: tuple[float, float] | None = None, threshold: float | None = None, evidence_uri: str | None = None,
    evidence_digest: str | None = None, verifier: str | None = None, when: str | None = None, signer: str,
    batch: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A record from its fields, checked as :func:`parse_entry` checks a stored one: a v2 record naming
    ``batch`` (``{"id", "prev", "index", "count"}``, §14.9), or with ``batch`` None a v1 record, which only
    tests of old brains write (the writer signs v2 alone; :func:`sign_batch` fills the batch in)."""
    record = {
        "format": FORMAT, "brain": brain, "agent": agent, "skill": skill, "version": version, "digest": digest,
        "receipt": dict(receipt), "task": {"id": task_id, "digest": task_digest},
        "outcome": {"result": result, "score": score, "scale": list(scale) if scale is not None else None,
                    "threshold": threshold},
        "verifier": verifier, "evidence": {"uri": evidence_uri, "digest": evidence_digest},
        "time": when or format_time(), "signer": signer,
    }  # fmt: skip
    if batch is None:
        record["format"] = FORMAT_V1
    else:
        record["batch"] = dict(batch)
    check_record(record)
    return record


def batch_id() -> str:
    """A fresh batch id: 32 random bytes in hex (unique among a signer's batches, §14.9)."""
    import os

    return os.urandom(32).hex()


def sign_batch(records: list[dict[str, Any]], secret: bytes, *, prev: str | None,
               bid: str | None = None) -> list[Entry]:  # fmt: skip
    """Sign ``records`` (one signer, any ``batch`` member replaced) as one whole batch (docs/lineage.md §14.9):
    each names the batch's id, ``prev`` (the id of the signer's batch it follows, or None for its first),
    its index and the count.  What a verifier on its own machine runs; the brain's writer too."""
    if not records:
        raise StoreError("a batch holds at least one outcome")
    if len(records) > MAX_BATCH:
        raise StoreError(f"a batch holds at most {MAX_BATCH} outcomes; sign more batches, each naming the last")
    from ledger.signatures.signing import address_of

    bid = bid or batch_id()
    address = address_of(secret)
    out = []
    for i, record in enumerate(records):
        signed = {**record, "format": FORMAT, "batch": {"count": len(records), "id": bid, "index": i, "prev": prev}}
        out.append(signed_entry(signed, secret, address))
    return out


def sign_entry(record: dict[str, Any], secret: bytes) -> bytes:
    """The entry's bytes: the record and its EIP-191 signature over :func:`signed_text`, as RFC 8785."""
    return signed_entry(record, secret).data


def signed_entry(record: dict[str, Any], secret: bytes, address: str | None = None) -> Entry:
    """:func:`sign_entry`, parsed: the entry as :func:`parse_entry` would give it back.  ``address``:
    the key's, when the caller already knows it (a bulk import signs thousands with one key)."""
    from ledger.signatures.signing import address_of

    check_record(record)
    if (address or address_of(secret)) != record["signer"]:
        raise StoreError(f"the record names signer {record['signer']}, not the key that signs it")
    body = canonical(record)
    oid = hashlib.sha256(body).digest()
    signature = sign(secret, _eip191(signed_text(oid)))
    return Entry(_entry_bytes(body, signature), record, signature, oid)


def _entry_bytes(record_jcs: bytes, signature: str) -> bytes:
    """JCS of ``{"record": …, "signature": …}``: keys in order, the signature a plain ASCII string."""
    return _HEAD + record_jcs + b',"signature":' + json.dumps(signature).encode() + b"}"


@dataclass(frozen=True)
class Entry:
    """One entry of an evidence log, parsed and its signature recovered."""

    data: bytes  # the entry's bytes (the log's leaf)
    record: dict[str, Any]
    signature: str
    id: bytes  # outcome_id(record)

    @property
    def signer(self) -> str:
        return str(self.record["signer"])

    @property
    def batch(self) -> dict[str, Any] | None:
        """The record's batch (``{"id", "prev", "index", "count"}``), or None for a v1 record."""
        return self.record.get("batch")

    @property
    def success(self) -> bool | None:
        """True or False when the outcome counts towards a success rate; None for a score without threshold."""
        out = self.record["outcome"]
        if out["result"] != "score":
            return bool(out["result"] == "success")
        return None if out["threshold"] is None else bool(out["score"] >= out["threshold"])


def parse_entry(data: bytes) -> Entry:
    """An entry, refused unless it is exactly what :func:`sign_entry` writes and its signature is its signer's."""
    doc = loads(data)
    if not isinstance(doc, dict) or set(doc) != {"record", "signature"}:
        raise StoreError("an evidence entry is an object of exactly 'record' and 'signature'")
    record, signature = doc["record"], doc["signature"]
    check_record(record)
    if not isinstance(signature, str):
        raise StoreError("an evidence entry's signature is a string")
    body = canonical(record)
    if _entry_bytes(body, signature) != data:
        raise StoreError("an evidence entry is not in RFC 8785 canonical form (key order, spacing or numbers)")
    oid = hashlib.sha256(body).digest()
    try:
        signer = recover(_eip191(signed_text(oid)), signature)
    except SignatureError as exc:
        raise StoreError(f"outcome {oid.hex()[:12]}: {exc.message}") from exc
    if signer != record["signer"]:
        raise StoreError(f"outcome {oid.hex()[:12]} claims signer {record['signer']} but its signature "
                         f"recovers {signer}: it was altered or forged")  # fmt: skip
    return Entry(data, record, signature, oid)


def loads(data: bytes) -> Any:
    """An entry's JSON, measured before the parser sees it: size and nesting (``ledger._json.depth``),
    so a hostile line is a refusal, never a RecursionError; a key named twice is refused too."""
    if len(data) > MAX_ENTRY:
        raise StoreError(f"an evidence entry is {len(data)} bytes; at most {MAX_ENTRY}")
    if depth(data) > MAX_DEPTH:
        raise StoreError(f"an evidence entry nests deeper than {MAX_DEPTH}; a record nests 4 deep")
    try:
        return json.loads(data, object_pairs_hook=unique_keys, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"an evidence entry is not JSON: {exc}") from exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _text(value: Any, what: str, *, null: bool = True) -> None:
    if value is None and null:
        return
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT or not _PRINTABLE.match(value):
        raise StoreError(f"{what} is a non-empty line of at most {MAX_TEXT} printable characters"
                         + (", or null" if null else ""))  # fmt: skip


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StoreError(f"{what} is a finite number")
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise StoreError(f"{what} is beyond 2^53 - 1, which JSON readers disagree on (RFC 8785 refuses it)")
    if isinstance(value, float) and value.is_integer() and MAX_INT < abs(value) < 1e21:
        # RFC 8785 writes it as an integer (1e16 is 10000000000000000), which a reader refuses as above
        # (docs/lineage.md §14.1, Numbers): refused here too, so nothing is written that cannot be read back.
        raise StoreError(f"{what} {value:g} is written in RFC 8785 as an integer beyond 2^53 - 1, which JSON "
                         "readers disagree on", hint="use a smaller scale (below 2^53), or one of 1e21 or more")
    return float(value)


def _exact(obj: Any, keys: tuple[str, ...], what: str) -> dict[str, Any]:
    if not isinstance(obj, dict) or set(obj) != set(keys):
        raise StoreError(f"{what} is an object of exactly {', '.join(repr(k) for k in keys)}")
    return obj


def check_record(record: Any) -> None:
    """Refuse a record that breaks the schema of docs/lineage.md §14.1 (every key, no other; a v2 record's
    ``batch`` as §14.9 has it)."""
    v1 = isinstance(record, dict) and record.get("format") == FORMAT_V1
    rec = _exact(record, _KEYS_V1 if v1 else _KEYS, f"an outcome record of format {FORMAT_V1 if v1 else FORMAT}")
    checks = (
        (rec["format"] in (FORMAT, FORMAT_V1), f"format is {FORMAT!r} (or {FORMAT_V1!r} before lineage v1.7)"),
        (isinstance(rec["brain"], str) and _HEX40.match(rec["brain"]), "brain is the 40-hex id of snapshot 0"),
        (rec["agent"] is None or (isinstance(rec["agent"], str) and _AGENT.match(rec["agent"])),
         "agent is null or 0x and 64 lower-case hex digits"),
        (isinstance(rec["skill"], str) and len(rec["skill"]) <= 64 and _NAME.match(rec["skill"]),
         "skill is a skill name (a-z, 0-9, single hyphens, at most 64)"),
        (type(rec["version"]) is int and 1 <= rec["version"] <= MAX_INT, "version is an integer from 1 to 2^53 - 1"),
        (isinstance(rec["digest"], str) and _ROOT.match(rec["digest"]), "digest is blake3-tree-v1: and 64 hex"),
        (isinstance(rec["signer"], str) and _ADDRESS.match(rec["signer"]), "signer is 0x and 40 lower-case hex"),
    )  # fmt: skip
    for ok, rule in checks:
        if not ok:
            raise StoreError(f"an outcome record's {rule}")
    receipt = _exact(rec["receipt"], ("commit", "root"), "receipt")
    if not (isinstance(receipt["commit"], str) and _HEX40.match(receipt["commit"])
            and isinstance(receipt["root"], str) and _ROOT.match(receipt["root"])):  # fmt: skip
        raise StoreError("an outcome record's receipt is the serving snapshot's commit (40 hex) and root")
    task = _exact(rec["task"], ("digest", "id"), "task")
    _text(task["id"], "task.id")
    if task["digest"] is not None and not (isinstance(task["digest"], str) and _SHA256.match(task["digest"])):
        raise StoreError("task.digest is sha256: and 64 lower-case hex digits, or null")
    if task["id"] is None and task["digest"] is None:
        raise StoreError("an outcome names its task: task.id, task.digest or both")
    _check_outcome(_exact(rec["outcome"], ("result", "scale", "score", "threshold"), "outcome"))
    _text(rec["verifier"], "verifier")
    ev = _exact(rec["evidence"], ("digest", "uri"), "evidence")
    _text(ev["uri"], "evidence.uri")
    if ev["digest"] is not None and not (isinstance(ev["digest"], str) and _SHA256.match(ev["digest"])):
        raise StoreError("evidence.digest is sha256: and 64 lower-case hex digits, or null")
    parse_time(rec["time"])
    if not v1:
        _check_batch(_exact(rec["batch"], ("count", "id", "index", "prev"), "batch"))


def _check_batch(batch: dict[str, Any]) -> None:
    count, index = batch["count"], batch["index"]
    if not (type(count) is int and 1 <= count <= MAX_BATCH):
        raise StoreError(f"batch.count is an integer from 1 to {MAX_BATCH}")
    if not (type(index) is int and 0 <= index < count):
        raise StoreError("batch.index is an integer from 0 to batch.count - 1")
    if not (isinstance(batch["id"], str) and _HEX64.match(batch["id"])):
        raise StoreError("batch.id is 64 lower-case hex digits")
    prev = batch["prev"]
    if prev is not None and not (isinstance(prev, str) and _HEX64.match(prev) and prev != batch["id"]):
        raise StoreError("batch.prev is null or another batch's id (64 lower-case hex digits)")


def _check_outcome(out: dict[str, Any]) -> None:
    result = out["result"]
    if result not in RESULTS:
        raise StoreError(f"outcome.result is one of {', '.join(RESULTS)}")
    if result != "score":
        if (out["score"], out["scale"], out["threshold"]) != (None, None, None):
            raise StoreError(f"a {result} outcome has a null score, scale and threshold")
        return
    score = _number(out["score"], "outcome.score")
    scale = out["scale"]
    if not isinstance(scale, list) or len(scale) != 2:
        raise StoreError("outcome.scale is [lowest, highest]")
    lo, hi = _number(scale[0], "the scale's lowest"), _number(scale[1], "the scale's highest")
    if not lo < hi or not lo <= score <= hi:
        raise StoreError(f"outcome.score {score} must lie on its scale [{lo}, {hi}], lowest below highest")
    if out["threshold"] is not None and not lo <= _number(out["threshold"], "outcome.threshold") <= hi:
        raise StoreError("outcome.threshold lies on the scale, or is null")


_HEAD, _TAIL = b'{"record":', len(b',"signature":"0x') + 130 + len(b'"}')


def outcome_id_of(entry: bytes) -> bytes:
    """The id of a stored entry's record.  A canonical entry is ``{"record":`` ‖ JCS(record) ‖
    ``,"signature":"0x…"}`` (keys sorted), so the id is a hash of a slice; an entry of any other
    shape is parsed in full (and refused when it is not an entry)."""
    if entry.startswith(_HEAD) and entry[-_TAIL:].startswith(b',"signature":"0x') and entry.endswith(b'"}'):
        return hashlib.sha256(entry[len(_HEAD) : -_TAIL]).digest()
    return parse_entry(entry).id
