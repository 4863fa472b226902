"""Outcome records, eval plans and approvals: the entries of a brain's evidence log, each signed.

An outcome record (docs/lineage/evidence.md) binds the brain, the skill, its version and content
digest, the snapshot that served it (the usage receipt), a task, an outcome, the evidence and
the time, and is signed by an Ethereum key with EIP-191 over its id.  An **entry** of the
evidence log is the RFC 8785 (JCS) bytes of ``{"record": …, "signature": …}``: one line, no
newline inside (JCS escapes control characters).  A record that is not exactly what this
module writes is refused, so one outcome has one set of bytes and one id.

Who signed it decides its tier: a key the brain trusts as ``verifier`` makes it *verified*,
any other trusted key *self-reported* (:mod:`ledger.audit.evidencecheck`).

Since lineage v1.8 (lineage/evaluations.md) a record (format v3) may be one run of an evaluation (its ``eval``
member), and the log holds two more kinds of entry: an **eval plan** (``{"plan": …, "signature": …}``,
the pre-registered evaluation a run names) and an **approval** (``{"approval": …, "signature": …}``,
a user's or curator's release of a version without an evaluation).  Both belong to no batch and
count in no competence figure.
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

from ledger._json import MAX_INT, depth, no_constant, unique_keys
from ledger.errors import StoreError
from ledger.protocol.jcs import canonical as jcs
from ledger.protocol.signing import SignatureError, keccak, recover, sign

__all__ = [
    "APPROVAL_FORMAT",
    "BASELINES",
    "CONDITIONS",
    "FORMAT",
    "FORMAT_V1",
    "FORMAT_V2",
    "KINDS",
    "MAX_BATCH",
    "MAX_ENTRY",
    "MAX_PLAN",
    "PLAN_FORMAT",
    "Entry",
    "batch_id",
    "canonical",
    "check_approval",
    "check_plan",
    "check_record",
    "format_time",
    "kind_of",
    "make_approval",
    "make_plan",
    "make_record",
    "outcome_id",
    "outcome_id_of",
    "parse_entry",
    "parse_time",
    "sign_batch",
    "sign_body",
    "sign_entry",
    "signed_text",
]

FORMAT = "brain-ledger/outcome/v3"  # lineage v1.8: a record may be a run of an evaluation (lineage/evaluations.md)
# lineage v1.7: a record names its batch (lineage/evidence.md §9); read and audited
FORMAT_V2 = "brain-ledger/outcome/v2"
FORMAT_V1 = "brain-ledger/outcome/v1"  # lineage v1.6: no batch; read and audited, never written
PLAN_FORMAT = "brain-ledger/eval-plan/v1"  # lineage v1.8: a pre-registered evaluation (lineage/evaluations.md)
APPROVAL_FORMAT = "brain-ledger/eval-approval/v1"  # lineage v1.8: a version released without an evaluation
KINDS = ("record", "plan", "approval")  # an entry's one member beside "signature"
MAX_BATCH = 100_000  # outcomes in one batch: a bulk import of 100,000 is one batch
STATEMENT = "brain-ledger outcome v1\n"  # the signed text: this line, the id in hex, a newline
STATEMENTS = {"record": STATEMENT, "plan": "brain-ledger eval-plan v1\n", "approval": "brain-ledger eval-approval v1\n"}
MAX_ENTRY = 8192  # bytes: a record is a few hundred; a log of 100,000 stays well under a gigabyte
MAX_PLAN = 65536  # bytes of a plan entry (one whose bytes begin {"plan":): two commands of 4,096 and its cases
MAX_TEXT = 512  # characters (code points) of a task id, a verifier name or an evidence URI
MAX_COMMAND = 4096  # characters of a plan's runner or grader command
MAX_CASES = 1000  # cases of one plan
MAX_RUNS = 100  # runs of each case and condition in a plan
MAX_RUN = 999  # a record's run index
CONDITIONS = ("with_skill", "without_skill", "old_skill")
BASELINES = {"none": "without_skill", "previous": "old_skill"}  # a plan's baseline → its records' other arm
INTERVAL = "newcombe-paired-95"
MAX_DEPTH = 8  # JSON nesting: an entry needs 4
RESULTS = ("success", "failure", "score")

_KEYS_V1 = (
    "agent",
    "brain",
    "digest",
    "evidence",
    "format",
    "outcome",
    "receipt",
    "signer",
    "skill",
    "task",
    "time",
    "verifier",
    "version",
)
_KEYS_V2 = (*_KEYS_V1, "batch")
_KEYS = (*_KEYS_V2, "eval")
_EVAL_KEYS = ("arm", "case", "condition", "grader", "ms", "plan", "run", "runner", "set", "tokens")
_PLAN_KEYS = (
    "baseline",
    "brain",
    "cases",
    "format",
    "grader",
    "rule",
    "runner",
    "runs",
    "set",
    "signer",
    "skill",
    "time",
)
_APPROVAL_KEYS = ("brain", "digest", "format", "reason", "signer", "skill", "time", "version")
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
    """RFC 8785 bytes of an outcome record: the project's one JCS writer (:func:`ledger.protocol.jcs.canonical`)."""
    try:
        return jcs(value)
    except ValueError as exc:
        raise StoreError(f"an outcome record cannot be written as RFC 8785 JSON: {exc}") from exc


def signed_text(oid: bytes, kind: str = "record") -> str:
    """What an entry's key signs (EIP-191): the kind's statement line, the id in hex, a newline."""
    return STATEMENTS[kind] + oid.hex() + "\n"


def _eip191(text: str) -> bytes:
    data = text.encode()
    return keccak(b"\x19Ethereum Signed Message:\n" + str(len(data)).encode() + data)


def format_time(stamp: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(stamp if stamp is not None else time.time())))


def parse_time(text: str) -> int:
    """Seconds since the epoch of a ``YYYY-MM-DDTHH:MM:SSZ`` time (UTC, whole seconds only)."""
    if not isinstance(text, str) or not _TIME.match(text):
        raise StoreError(f"time {text!r} is not YYYY-MM-DDTHH:MM:SSZ (UTC, whole seconds)")
    try:
        when = datetime.datetime(
            int(text[:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]), int(text[17:19])
        )
    except ValueError as exc:
        raise StoreError(f"time {text!r} is not a real date: {exc}") from exc
    return calendar.timegm(when.timetuple())


def make_record(
    *,
    brain: str,
    agent: str | None,
    skill: str,
    version: int,
    digest: str,
    receipt: dict[str, str],
    task_id: str | None,
    task_digest: str | None,
    result: str,
    score: float | None = None,
    scale: tuple[float, float] | None = None,
    threshold: float | None = None,
    evidence_uri: str | None = None,
    evidence_digest: str | None = None,
    verifier: str | None = None,
    when: str | None = None,
    signer: str,
    batch: dict[str, Any] | None = None,
    eval: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A record from its fields, checked as :func:`parse_entry` checks a stored one: a v3 record naming
    ``batch`` (``{"id", "prev", "index", "count"}``, lineage/evidence.md §9) and ``eval`` (None, or one run of an
    evaluation,
    lineage/evaluations.md), or with ``batch`` None a v1 record, which only tests of old brains write (the writer signs
    v3
    alone; :func:`sign_batch` fills the batch in)."""
    record = {
        "format": FORMAT,
        "brain": brain,
        "agent": agent,
        "skill": skill,
        "version": version,
        "digest": digest,
        "receipt": dict(receipt),
        "task": {"id": task_id, "digest": task_digest},
        "outcome": {
            "result": result,
            "score": score,
            "scale": list(scale) if scale is not None else None,
            "threshold": threshold,
        },
        "verifier": verifier,
        "evidence": {"uri": evidence_uri, "digest": evidence_digest},
        "time": when or format_time(),
        "signer": signer,
    }
    if batch is None:
        if eval is not None:
            raise StoreError("a run of an evaluation is a v3 record, which names its batch")
        record["format"] = FORMAT_V1
    else:
        record["batch"] = dict(batch)
        record["eval"] = dict(eval) if eval is not None else None
    check_record(record)
    return record


def make_plan(
    *,
    brain: str,
    skill: str,
    set: str,
    cases: list[str],
    baseline: str,
    runs: int,
    runner: dict[str, str],
    grader: dict[str, str],
    min_lift: float,
    signer: str,
    when: str | None = None,
) -> dict[str, Any]:
    """An eval plan (docs/lineage/evaluations.md) from its members, checked as :func:`parse_entry` checks one."""
    plan = {
        "format": PLAN_FORMAT,
        "brain": brain,
        "skill": skill,
        "set": set,
        "cases": list(cases),
        "baseline": baseline,
        "runs": runs,
        "runner": dict(runner),
        "grader": dict(grader),
        "rule": {"interval": INTERVAL, "min_lift": min_lift},
        "time": when or format_time(),
        "signer": signer,
    }
    check_plan(plan)
    return plan


def make_approval(
    *, brain: str, skill: str, version: int, digest: str, reason: str, signer: str, when: str | None = None
) -> dict[str, Any]:
    """An approval (docs/lineage/evaluations.md): ``skill`` at ``version`` (its directory ``digest``) released
    without an evaluation, for ``reason``, by ``signer`` (the audit holds its role to user or curator)."""
    approval = {
        "format": APPROVAL_FORMAT,
        "brain": brain,
        "skill": skill,
        "version": version,
        "digest": digest,
        "reason": reason,
        "time": when or format_time(),
        "signer": signer,
    }
    check_approval(approval)
    return approval


def batch_id() -> str:
    """A fresh batch id: 32 random bytes in hex (unique among a signer's batches, lineage/evidence.md §9)."""
    import os

    return os.urandom(32).hex()


def sign_batch(
    records: list[dict[str, Any]], secret: bytes, *, prev: str | None, bid: str | None = None
) -> list[Entry]:
    """Sign ``records`` (one signer, any ``batch`` member replaced) as one whole batch (docs/lineage/evidence.md §9):
    each names the batch's id, ``prev`` (the id of the signer's batch it follows, or None for its first),
    its index and the count.  Each is signed as a v3 record (``eval`` kept, or null), unless it says it is
    a v2 one (a vector of lineage v1.7 does).  What a verifier on its own machine runs; the brain's writer too."""
    if not records:
        raise StoreError("a batch holds at least one outcome")
    if len(records) > MAX_BATCH:
        raise StoreError(f"a batch holds at most {MAX_BATCH} outcomes; sign more batches, each naming the last")
    from ledger.protocol.signing import address_of

    bid = bid or batch_id()
    address = address_of(secret)
    out = []
    for i, record in enumerate(records):
        batch = {"count": len(records), "id": bid, "index": i, "prev": prev}
        if record.get("format") == FORMAT_V2:
            signed = {**record, "batch": batch}
        else:
            signed = {**record, "format": FORMAT, "batch": batch, "eval": record.get("eval")}
        out.append(signed_entry(signed, secret, address))
    return out


def sign_entry(record: dict[str, Any], secret: bytes) -> bytes:
    """The entry's bytes: the record and its EIP-191 signature over :func:`signed_text`, as RFC 8785."""
    return signed_entry(record, secret).data


def signed_entry(record: dict[str, Any], secret: bytes, address: str | None = None) -> Entry:
    """:func:`sign_entry`, parsed: the entry as :func:`parse_entry` would give it back.  ``address``:
    the key's, when the caller already knows it (a bulk import signs thousands with one key)."""
    return sign_body("record", record, secret, address)


def sign_body(kind: str, body: dict[str, Any], secret: bytes, address: str | None = None) -> Entry:
    """An entry of ``kind`` (``record``, ``plan`` or ``approval``) holding ``body``, signed by ``secret``
    (whose address must be the body's ``signer``), as :func:`parse_entry` would give it back."""
    from ledger.protocol.signing import address_of

    _CHECKS[kind](body)
    if (address or address_of(secret)) != body["signer"]:
        raise StoreError(f"the {kind} names signer {body['signer']}, not the key that signs it")
    jcs = canonical(body)
    oid = hashlib.sha256(jcs).digest()
    signature = sign(secret, _eip191(signed_text(oid, kind)))
    data = _entry_bytes(jcs, signature, kind)
    if len(data) > _limit(kind):
        raise StoreError(f"the {kind} entry would be {len(data)} bytes; at most {_limit(kind)}")
    return Entry(data, body, signature, oid, kind)


def _entry_bytes(body_jcs: bytes, signature: str, kind: str = "record") -> bytes:
    """JCS of ``{KIND: …, "signature": …}``: keys in order (each kind sorts before "signature"), the
    signature a plain ASCII string."""
    return _HEADS[kind] + body_jcs + b',"signature":' + json.dumps(signature).encode() + b"}"


def _limit(kind: str) -> int:
    return MAX_PLAN if kind == "plan" else MAX_ENTRY


@dataclass(frozen=True)
class Entry:
    """One entry of an evidence log, parsed and its signature recovered: an outcome record (``kind``
    ``record``), an eval plan (``plan``) or an approval (``approval``); ``body`` is the signed object."""

    data: bytes  # the entry's bytes (the log's leaf)
    body: dict[str, Any]
    signature: str
    id: bytes  # SHA-256 of JCS(body): outcome_id(record) for a record
    kind: str = "record"

    @property
    def record(self) -> dict[str, Any]:
        """The outcome record (a plan's or an approval's body for those: check :attr:`kind` first)."""
        return self.body

    @property
    def signer(self) -> str:
        return str(self.body["signer"])

    @property
    def batch(self) -> dict[str, Any] | None:
        """The record's batch (``{"id", "prev", "index", "count"}``), or None for a v1 record, a plan or an
        approval (which belong to no batch)."""
        return self.body.get("batch") if self.kind == "record" else None

    @property
    def eval(self) -> dict[str, Any] | None:
        """The run of an evaluation a v3 record is, or None (a plain outcome, an older record, not a record)."""
        return self.body.get("eval") if self.kind == "record" else None

    @property
    def level(self) -> int:
        """A record's format version (1, 2 or 3); 0 for a plan or an approval."""
        return 0 if self.kind != "record" else 3 if "eval" in self.body else 2 if "batch" in self.body else 1

    @property
    def counts(self) -> bool:
        """Whether the entry counts towards its version's competence (lineage/evidence.md §6, lineage/evaluations.md): a
        record that is not
        an evaluation's baseline arm."""
        if self.kind != "record":
            return False
        run = self.body.get("eval")
        return run is None or run.get("condition") == "with_skill"

    @property
    def success(self) -> bool | None:
        """True or False when the outcome counts towards a success rate; None for a score without threshold."""
        out = self.body["outcome"]
        if out["result"] != "score":
            return bool(out["result"] == "success")
        return None if out["threshold"] is None else bool(out["score"] >= out["threshold"])


def parse_entry(data: bytes) -> Entry:
    """An entry, refused unless it is exactly what :func:`sign_body` writes and its signature is its signer's."""
    doc = loads(data)
    kinds = [k for k in KINDS if isinstance(doc, dict) and k in doc]
    if not isinstance(doc, dict) or len(kinds) != 1 or set(doc) != {kinds[0], "signature"}:
        raise StoreError(
            "an evidence entry is an object of exactly 'signature' and one of 'record', 'plan' or 'approval'"
        )
    kind = kinds[0]
    body, signature = doc[kind], doc["signature"]
    _CHECKS[kind](body)
    if not isinstance(signature, str):
        raise StoreError("an evidence entry's signature is a string")
    jcs = canonical(body)
    if _entry_bytes(jcs, signature, kind) != data:
        raise StoreError("an evidence entry is not in RFC 8785 canonical form (key order, spacing or numbers)")
    oid = hashlib.sha256(jcs).digest()
    what = "outcome" if kind == "record" else kind
    try:
        signer = recover(_eip191(signed_text(oid, kind)), signature)
    except SignatureError as exc:
        raise StoreError(f"{what} {oid.hex()[:12]}: {exc.message}") from exc
    if signer != body["signer"]:
        raise StoreError(
            f"{what} {oid.hex()[:12]} claims signer {body['signer']} but its signature "
            f"recovers {signer}: it was altered or forged"
        )
    return Entry(data, body, signature, oid, kind)


def kind_of(data: bytes) -> str:
    """An entry's kind from its first bytes (a canonical entry begins ``{"KIND":``); ``record`` for any other."""
    for kind in ("plan", "approval"):
        if data.startswith(_HEADS[kind]):
            return kind
    return "record"


def loads(data: bytes) -> Any:
    """An entry's JSON, measured before the parser sees it: size (a plan entry, which begins ``{"plan":``,
    up to :data:`MAX_PLAN`; any other up to :data:`MAX_ENTRY`) and nesting (``ledger._json.depth``),
    so a hostile line is a refusal, never a RecursionError; a key named twice is refused too."""
    limit = MAX_PLAN if data.startswith(_HEADS["plan"]) else MAX_ENTRY
    if len(data) > limit:
        raise StoreError(f"an evidence entry is {len(data)} bytes; at most {limit}")
    if depth(data) > MAX_DEPTH:
        raise StoreError(f"an evidence entry nests deeper than {MAX_DEPTH}; a record nests 4 deep")
    try:
        return json.loads(data, object_pairs_hook=unique_keys, parse_constant=no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"an evidence entry is not JSON: {exc}") from exc


def _text(value: Any, what: str, *, null: bool = True, most: int = MAX_TEXT) -> None:
    if value is None and null:
        return
    if not isinstance(value, str) or not value or len(value) > most or not _PRINTABLE.match(value):
        raise StoreError(
            f"{what} is a non-empty line of at most {most} printable characters" + (", or null" if null else "")
        )


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StoreError(f"{what} is a finite number")
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise StoreError(f"{what} is beyond 2^53 - 1, which JSON readers disagree on (RFC 8785 refuses it)")
    if isinstance(value, float) and value.is_integer() and MAX_INT < abs(value) < 1e21:
        # RFC 8785 writes it as an integer (1e16 is 10000000000000000), which a reader refuses as above
        # (docs/lineage/evidence.md §1, Numbers): refused here too, so nothing is written that cannot be read back.
        raise StoreError(
            f"{what} {value:g} is written in RFC 8785 as an integer beyond 2^53 - 1, which JSON readers disagree on",
            hint="use a smaller scale (below 2^53), or one of 1e21 or more",
        )
    return float(value)


def _exact(obj: Any, keys: tuple[str, ...], what: str) -> dict[str, Any]:
    if not isinstance(obj, dict) or set(obj) != set(keys):
        raise StoreError(f"{what} is an object of exactly {', '.join(repr(k) for k in keys)}")
    return obj


def check_record(record: Any) -> None:
    """Refuse a record that breaks the schema of docs/lineage/evidence.md §1 (every key, no other; a v2 or v3
    record's ``batch`` as lineage/evidence.md §9 has it, a v3 record's ``eval`` as lineage/evaluations.md has it)."""
    fmt = record.get("format") if isinstance(record, dict) else None
    v1, v2 = fmt == FORMAT_V1, fmt == FORMAT_V2
    keys = _KEYS_V1 if v1 else _KEYS_V2 if v2 else _KEYS
    rec = _exact(record, keys, f"an outcome record of format {fmt if v1 or v2 else FORMAT}")
    checks = (
        (
            rec["format"] in (FORMAT, FORMAT_V2, FORMAT_V1),
            f"format is {FORMAT!r} (or {FORMAT_V2!r} or {FORMAT_V1!r} before lineage v1.8)",
        ),
        (isinstance(rec["brain"], str) and _HEX40.match(rec["brain"]), "brain is the 40-hex id of snapshot 0"),
        (
            rec["agent"] is None or (isinstance(rec["agent"], str) and _AGENT.match(rec["agent"])),
            "agent is null or 0x and 64 lower-case hex digits",
        ),
        (
            isinstance(rec["skill"], str) and len(rec["skill"]) <= 64 and _NAME.match(rec["skill"]),
            "skill is a skill name (a-z, 0-9, single hyphens, at most 64)",
        ),
        (type(rec["version"]) is int and 1 <= rec["version"] <= MAX_INT, "version is an integer from 1 to 2^53 - 1"),
        (isinstance(rec["digest"], str) and _ROOT.match(rec["digest"]), "digest is blake3-tree-v1: and 64 hex"),
        (isinstance(rec["signer"], str) and _ADDRESS.match(rec["signer"]), "signer is 0x and 40 lower-case hex"),
    )
    for ok, rule in checks:
        if not ok:
            raise StoreError(f"an outcome record's {rule}")
    receipt = _exact(rec["receipt"], ("commit", "root"), "receipt")
    if not (
        isinstance(receipt["commit"], str)
        and _HEX40.match(receipt["commit"])
        and isinstance(receipt["root"], str)
        and _ROOT.match(receipt["root"])
    ):
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
    if not (v1 or v2) and rec["eval"] is not None:
        _check_eval(rec)


def _check_eval(rec: dict[str, Any]) -> None:
    """A v3 record's ``eval`` (lineage/evaluations.md): one run of one case under one condition, and the record's other
    members as an evaluation writes them (the task is the case, the outcome the grading's score)."""
    run = _exact(rec["eval"], _EVAL_KEYS, "eval")
    if run["plan"] is not None and not (isinstance(run["plan"], str) and _HEX64.match(run["plan"])):
        raise StoreError("eval.plan is the plan entry's id (64 lower-case hex digits), or null")
    if not (isinstance(run["set"], str) and _ROOT.match(run["set"])):
        raise StoreError("eval.set is blake3-tree-v1: and 64 hex (the digest of the skill's evals directory)")
    _text(run["case"], "eval.case", null=False)
    if not (type(run["run"]) is int and 0 <= run["run"] <= MAX_RUN):
        raise StoreError(f"eval.run is an integer from 0 to {MAX_RUN}")
    condition, arm, version = run["condition"], run["arm"], rec["version"]
    if condition not in CONDITIONS:
        raise StoreError(f"eval.condition is one of {', '.join(CONDITIONS)}")
    if arm is not None and not (type(arm) is int and 1 <= arm <= MAX_INT):
        raise StoreError("eval.arm is a version (an integer from 1 to 2^53 - 1), or null")
    if condition == "with_skill" and arm != version:
        raise StoreError(f"a with_skill run's eval.arm is the record's version ({version}), not {arm}")
    if condition == "without_skill" and arm is not None:
        raise StoreError("a without_skill run's eval.arm is null (no version ran)")
    if condition == "old_skill" and not (arm is not None and arm < version):
        raise StoreError(f"an old_skill run's eval.arm is the baseline version, from 1 to {version - 1}")
    _text(run["runner"], "eval.runner", null=False)
    _text(run["grader"], "eval.grader", null=False)
    if run["tokens"] is not None and not (type(run["tokens"]) is int and 0 <= run["tokens"] <= MAX_INT):
        raise StoreError("eval.tokens is an integer from 0 to 2^53 - 1, or null")
    if not (type(run["ms"]) is int and 0 <= run["ms"] <= MAX_INT):
        raise StoreError("eval.ms is an integer from 0 to 2^53 - 1")
    task, out, ev = rec["task"], rec["outcome"], rec["evidence"]
    if task["id"] != run["case"] or task["digest"] is None:
        raise StoreError("a run's task is its case: task.id is eval.case and task.digest the case's sha256")
    total = out["threshold"]
    if not (
        out["result"] == "score"
        and type(total) is int
        and total >= 1
        and out["scale"] == [0, total]
        and type(out["score"]) is int
    ):
        raise StoreError(
            "a run's outcome is its grading: result 'score', score the assertions passed (an "
            "integer), scale [0, TOTAL] and threshold TOTAL (an integer, at least 1)"
        )
    if rec["verifier"] != run["grader"]:
        raise StoreError("a run's verifier is its grader (eval.grader)")
    if ev["uri"] is None or ev["digest"] is None:
        raise StoreError("a run's evidence is its grading.json: evidence.uri and evidence.digest are not null")


def check_plan(plan: Any) -> None:
    """Refuse an eval plan that breaks the schema of docs/lineage/evaluations.md (every key, no other)."""
    p = _exact(plan, _PLAN_KEYS, f"an eval plan of format {PLAN_FORMAT}")
    if p["format"] != PLAN_FORMAT:
        raise StoreError(f"an eval plan's format is {PLAN_FORMAT!r}")
    _common(p, "an eval plan")
    if not (isinstance(p["set"], str) and _ROOT.match(p["set"])):
        raise StoreError("an eval plan's set is blake3-tree-v1: and 64 hex (the skill's evals directory)")
    cases = p["cases"]
    if not (isinstance(cases, list) and 1 <= len(cases) <= MAX_CASES):
        raise StoreError(f"an eval plan's cases is a list of 1 to {MAX_CASES} case ids")
    for case in cases:
        _text(case, "an eval plan's case id", null=False)
    if len(set(cases)) != len(cases):
        raise StoreError("an eval plan's cases are distinct")
    if p["baseline"] not in BASELINES:
        raise StoreError(f"an eval plan's baseline is one of {', '.join(BASELINES)}")
    if not (type(p["runs"]) is int and 1 <= p["runs"] <= MAX_RUNS):
        raise StoreError(f"an eval plan's runs is an integer from 1 to {MAX_RUNS}")
    if len(cases) * p["runs"] * 2 > MAX_BATCH:
        raise StoreError(
            f"an eval plan's grid (cases × runs × 2 conditions) is at most {MAX_BATCH} runs: its "
            "evaluation is one batch"
        )
    for role in ("runner", "grader"):
        tool = _exact(p[role], ("command", "id"), f"an eval plan's {role}")
        _text(tool["command"], f"{role}.command", null=False, most=MAX_COMMAND)
        _text(tool["id"], f"{role}.id", null=False)
    rule = _exact(p["rule"], ("interval", "min_lift"), "an eval plan's rule")
    if rule["interval"] != INTERVAL:
        raise StoreError(f"an eval plan's rule.interval is {INTERVAL!r}")
    if not -1 <= _number(rule["min_lift"], "rule.min_lift") <= 1:
        raise StoreError("an eval plan's rule.min_lift lies in [-1, 1]")


def check_approval(approval: Any) -> None:
    """Refuse an approval that breaks the schema of docs/lineage/evaluations.md (every key, no other)."""
    a = _exact(approval, _APPROVAL_KEYS, f"an approval of format {APPROVAL_FORMAT}")
    if a["format"] != APPROVAL_FORMAT:
        raise StoreError(f"an approval's format is {APPROVAL_FORMAT!r}")
    _common(a, "an approval")
    if not (type(a["version"]) is int and 1 <= a["version"] <= MAX_INT):
        raise StoreError("an approval's version is an integer from 1 to 2^53 - 1")
    if not (isinstance(a["digest"], str) and _ROOT.match(a["digest"])):
        raise StoreError("an approval's digest is blake3-tree-v1: and 64 hex")
    _text(a["reason"], "an approval's reason", null=False)


def _common(body: dict[str, Any], what: str) -> None:
    if not (isinstance(body["brain"], str) and _HEX40.match(body["brain"])):
        raise StoreError(f"{what}'s brain is the 40-hex id of snapshot 0")
    if not (isinstance(body["skill"], str) and len(body["skill"]) <= 64 and _NAME.match(body["skill"])):
        raise StoreError(f"{what}'s skill is a skill name (a-z, 0-9, single hyphens, at most 64)")
    if not (isinstance(body["signer"], str) and _ADDRESS.match(body["signer"])):
        raise StoreError(f"{what}'s signer is 0x and 40 lower-case hex")
    parse_time(body["time"])


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


_HEADS = {kind: b'{"' + kind.encode() + b'":' for kind in KINDS}
_HEAD, _TAIL = _HEADS["record"], len(b',"signature":"0x') + 130 + len(b'"}')
_CHECKS = {"record": check_record, "plan": check_plan, "approval": check_approval}


def outcome_id(record: dict[str, Any]) -> bytes:
    """SHA-256 of the record's RFC 8785 bytes: what is signed, and what the log deduplicates by (a plan's
    or an approval's id is the same hash of its body)."""
    return hashlib.sha256(canonical(record)).digest()


def outcome_id_of(entry: bytes) -> bytes:
    """The id of a stored entry's body.  A canonical entry is ``{"KIND":`` ‖ JCS(body) ‖
    ``,"signature":"0x…"}`` (keys sorted), so the id is a hash of a slice; an entry of any other
    shape is parsed in full (and refused when it is not an entry)."""
    if entry[-_TAIL:].startswith(b',"signature":"0x') and entry.endswith(b'"}'):
        for head in _HEADS.values():
            if entry.startswith(head):
                return hashlib.sha256(entry[len(head) : -_TAIL]).digest()
    return parse_entry(entry).id
