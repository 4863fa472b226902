"""Outcome evidence: record, import and read the signed outcomes of a brain's skill versions.

Outcomes never change a skill or the bundle root: each append is an ``outcome`` snapshot that
changes only ``evidence/`` (docs/lineage/evidence.md), made by the one write path under the writer
lock, so an acknowledged outcome stays in the log and two writers never drop each other's.
Each record is signed by its actor's key (a ``verifier`` key makes it *verified*, any other
trusted key *self-reported*); the snapshot that appends it is signed too.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import ledger.evals.lift as lf  # a module reference, read when called: lift imports ledger.brain (either loads first)
from ledger._fs import EVIDENCE_BATCHES, EVIDENCE_CHECKED, EVIDENCE_FIGURES, EVIDENCE_IDS, REGRESSIONS
from ledger.brain.competence import Tier, VersionStats, best_verified, competence, regression
from ledger.bundle.skill import SKILL_MD, counter_zeroed, parse_skill_md
from ledger.errors import LedgerError, SkillNotFoundError, StoreError
from ledger.protocol.bundlehash import format_root
from ledger.signatures.trust import Trust
from ledger.store import evidence as ev
from ledger.store import gitstore as gs
from ledger.store import outcomes as oc
from ledger.store import treehash as th
from ledger.store.git import WHOLE, Git
from ledger.store.skilltree import skills_of
from ledger.store.state import State
from ledger.write.head import head_evidence
from ledger.write.records import Receipt

if TYPE_CHECKING:
    from ledger.brain.catalog import Catalog
    from ledger.brain.reads import Reads
    from ledger.write.apply import Writer
    from ledger.write.head import Head

PerVersion = dict[str, dict[int, VersionStats]]  # skill -> version -> outcomes by tier
Lifted: TypeAlias = "dict[str, dict[int, dict[str, list[lf.Lift]]]]"  # skill -> version -> tier -> comparisons

__all__ = ["IMPORT_KEYS", "Evidence", "Served", "signed_elsewhere"]

# A row of `ledger outcome import` (docs/reference.md, "Outcome JSONL"): SkillEvolBench-style verifier
# feedback (a task, a pass/fail or a reward, the verifier and its log) maps onto it field by field.
IMPORT_KEYS = {
    "skill",
    "version",
    "task",
    "task_digest",
    "success",
    "score",
    "scale",
    "threshold",
    "evidence",
    "evidence_digest",
    "verifier",
    "time",
    "receipt",
}
_PENDING = {"count": 1, "id": "0" * 64, "index": 0, "prev": None}  # a row's batch until _append signs it
MAX_SKEW = 300  # seconds an outcome's time may run ahead of the snapshot that records it (clock skew)


def _is_signed(doc: object) -> bool:
    """Whether an import line's document is an entry signed elsewhere ({kind, "signature"}), not a row."""
    return isinstance(doc, dict) and "signature" in doc and len(doc) == 2 and bool(set(doc) & set(oc.KINDS))


def signed_elsewhere(line: bytes) -> bool:
    """Whether a line of an outcome import is an entry signed elsewhere (taken as it is, its tier its signer's);
    anything else is a row to sign here (or a line the import refuses)."""
    try:
        return _is_signed(oc.loads(line.strip()))
    except StoreError:
        return False


@dataclass(frozen=True)
class Served:
    """The snapshot that served a skill version: the outcome's usage receipt."""

    skill: str
    version: int
    digest: str  # blake3-tree-v1 digest of the skill's directory there
    commit: str
    root: str
    time: int  # the snapshot's commit time


class Evidence:
    """The brain's evidence log: what is in it, and the one way to add to it."""

    def __init__(self, writer: Writer, reads: Reads, catalog: Catalog, config: Callable[[], Mapping[str, Any]]) -> None:
        """Built like its siblings, from the parts it reads and writes through: the writer (the store, the head,
        the lock, the sealer), the reads (names, history), the catalog (live versions) and the brain's config."""
        self._writer, self._reads, self._catalog, self._config = writer, reads, catalog, config
        self._store, self._control, self._cache = writer.store, writer.control, writer.cache

    def _head(self) -> Head:
        return self._writer.snapshots.head()

    # ------------------------------------------------------------------ reading

    def entries(self, commit: bytes | None = None) -> list[bytes]:
        """The log's entries at ``commit`` (default: the head), in order."""
        store = self._store
        if commit is None:
            tree = head_evidence(store, self._head())
            return ev.entries_of(store, tree) if tree is not None else []
        return ev.read_entries(store, store.commit_info(commit)[0])

    def parsed(self, commit: bytes | None = None) -> Iterator[oc.Entry]:
        for data in self.entries(commit):
            yield oc.parse_entry(data)

    def size(self) -> int:
        return ev.size_of(self._store, head_evidence(self._store, self._head()))

    @functools.cached_property
    def genesis(self) -> str:
        """Snapshot 0's commit id: the brain's identity in every record it holds."""
        proc = Git(self._store.git_dir).call("rev-list", "--max-parents=0", "main", timeout=WHOLE)
        roots = proc.stdout.decode().split()
        if proc.returncode != 0 or len(roots) != 1:
            raise StoreError("the brain's lineage has no single snapshot 0", hint="run 'ledger verify'")
        return roots[0]

    def agent(self) -> str | None:
        """The registry's agent id, once the brain is registered on a chain."""
        agent = (self._config().get("chain") or {}).get("agent_id")
        if isinstance(agent, str):
            agent = int(agent, 16)
        return f"0x{agent:064x}" if isinstance(agent, int) else None

    def served(self, name: str, version: int | None = None, receipt: Mapping[str, Any] | None = None) -> Served:
        """Where ``name`` at ``version`` (None: the head's) was served: ``receipt`` (a view's ``commit`` and
        ``root``), checked against the lineage, or else the newest snapshot holding that version."""
        name = self._reads.resolve(name)
        store = self._store
        if receipt is not None:
            commit = receipt.get("commit")
            try:
                if not isinstance(commit, str):
                    raise ValueError
                raw = bytes.fromhex(commit)
                if len(raw) != 20 or not Git(store.git_dir).is_ancestor(raw, self._head().commit):
                    raise ValueError
            except (ValueError, LedgerError):
                shown = json.dumps(commit)[:42] if commit is not None else "(none given)"
                raise StoreError(
                    f"receipt commit {shown} is not a snapshot of this brain's lineage",
                    hint="pass the receipt a skill view returned, unchanged",
                ) from None
        elif version is None:
            if name not in self._head().skills:
                raise SkillNotFoundError(
                    f"no skill named {name!r} in the head snapshot",
                    hint="see 'ledger skill list'; NAME@VERSION names a version of the past",
                )
            commit = self._head().commit.hex()
        else:
            commit = self._reads.version_commit(name, version).hex()
        snap, skills = self._snapshot(commit)
        tree = skills.get(name)
        if tree is None:
            raise SkillNotFoundError(f"{name} is not in snapshot {commit[:12]}")
        have = _version_at(store, self._versions(snap), name, tree)
        if version is not None and have != version:
            raise StoreError(f"snapshot {commit[:12]} holds {name} v{have}, not v{version}")
        if receipt is not None and receipt.get("root") not in (None, format_root(snap.root)):
            raise StoreError(
                f"receipt root {json.dumps(receipt.get('root'))[:80]} is not snapshot {commit[:12]}'s root"
            )
        digest = format_root(th.tree_digest(store, tree, self._cache, name))
        return Served(name, have, digest, commit, format_root(snap.root), snap.timestamp)

    def stats(self) -> dict[str, dict[int, VersionStats]]:
        """Every skill's outcomes per version and tier under the head's trust set, from entries whose
        signatures were checked (:meth:`checked`)."""
        return self.figures()[0]

    def lifts(self, entries: Iterable[bytes] | None = None) -> dict[str, dict[int, dict[str, list[lf.Lift]]]]:
        """Every skill's paired lift per version and tier (:mod:`ledger.evals.lift`) under the head's trust set,
        from the checked entries (or ``entries``, checked ones): its eval records (a v3 record whose ``eval`` is
        an object: in RFC 8785 bytes the only place ``"eval":{`` can occur) and its plans."""
        if entries is None:
            return self.figures()[1]
        return self._lifts_of(json.loads(d) if b'"eval":{' in d or oc.kind_of(d) == "plan" else {} for d in entries)

    def _pairing_of(
        self, docs: Iterable[Mapping[str, Any]], pairing: lf.Pairing | None = None, start: int = 0
    ) -> lf.Pairing:
        """``docs`` (parsed entries from log index ``start``) added to ``pairing``: their eval records (``eval``
        an object) and their plans."""
        records: list[Mapping[str, Any]] = []  # one a log entry, so that a run's index is its log index
        plans = []
        for doc in docs:
            records.append(doc.get("record") or {})
            if "plan" in doc:
                plans.append(doc["plan"])
        pairing = pairing if pairing is not None else lf.Pairing()
        pairing.add(records, self._trust().active, plans, start)
        return pairing

    def _lifts_of(self, docs: Iterable[Mapping[str, Any]]) -> Lifted:
        """:meth:`lifts` from parsed entries."""
        return self._pairing_of(docs).result()

    def figures(self, only: str | None = None) -> tuple[PerVersion, Lifted]:
        """:meth:`stats` and :meth:`lifts` together (of skill ``only``, or of every skill), kept in ``.ledger/cache``
        by what they are a function of: the log's tree id (content-addressed: the entries cannot change under
        it) and the head's active keys and roles.  So ``show NAME --stats`` on a log of 100,000 runs reads one
        line of the cache instead of parsing 100,000 entries.  A trust change recomputes them; an append
        (a log whose first entries are the cached log's, checked by chunk id) extends them by its entries."""
        store = self._store
        tree = head_evidence(store, self._head())
        if tree is None:
            return {}, {}
        trust = self._trust()
        roles = json.dumps(sorted(trust.active.items()), separators=(",", ":"))
        digest = hashlib.sha256(roles.encode()).hexdigest()
        state = State(self._control)
        data = state.read(EVIDENCE_FIGURES, bytes) or b""
        first = data.split(b"\n", 1)[0].split()
        if first[:2] == [tree.hex().encode(), digest.encode()]:
            try:
                per, pairing = _load_figures(data, only)
                return per, pairing.result()
            except (ValueError, KeyError, TypeError, IndexError):
                pass  # a damaged cache is recomputed
        entries = self.checked()
        start, per, pairing = 0, {}, lf.Pairing()
        if len(first) == 3 and first[1] == digest.encode():
            with contextlib.suppress(ValueError, KeyError, TypeError, IndexError, LedgerError):
                size = int(first[2])
                if 0 < size <= len(entries) and _extends(store, bytes.fromhex(first[0].decode()), tree, size):
                    per, pairing = _load_figures(data, None)
                    start = size
        docs = [json.loads(data) for data in entries[start:]]  # each entry parsed once, for both figures
        for name, versions in competence(docs, trust).items():
            mine = per.setdefault(name, {})
            for version, stats in versions.items():
                mine[version] = _sum(mine[version], stats) if version in mine else stats
        lifted = self._pairing_of(docs, pairing, start).result()
        state.write(
            EVIDENCE_FIGURES,
            f"{tree.hex()} {digest} {len(entries)}\n".encode()
            + b"".join(
                _figure_line(name, per.get(name, {}), lifted.get(name, {}), pairing)
                for name in sorted(set(per) | set(lifted) | set(pairing.ran) | set(pairing.planned))
            ),
        )
        if only is not None:
            return ({only: per[only]} if only in per else {}), ({only: lifted[only]} if only in lifted else {})
        return per, lifted

    def checked(self) -> list[bytes]:
        """The head's entries, each chunk's signatures verified once and remembered by the chunk's blob id
        (content-addressed: a chunk never changes under its id), so figures never count a forged entry
        and a second look costs a read, not 100,000 signature recoveries."""
        store = self._store
        tree = head_evidence(store, self._head())
        if tree is None:
            return []
        shas = ev.chunk_ids(store, tree)
        known = self._known()
        out: list[bytes] = []
        fresh = []
        for i, (sha, data) in enumerate(zip(shas, store.read_blobs(shas), strict=True)):
            lines = ev.lines_of(data, i == len(shas) - 1, i)
            if sha not in known:
                for k, line in enumerate(lines):
                    try:
                        oc.parse_entry(line)
                    except LedgerError as exc:
                        raise StoreError(
                            f"outcome {i * ev.CHUNK + k} of the head's evidence log does not verify: {exc.message}",
                            hint="run 'ledger verify': the log was altered",
                        ) from None
                fresh.append(sha)
            out.extend(lines)
        self._remember(fresh)
        return out

    def _known(self) -> set[bytes]:
        return (
            State(self._control).read(
                EVIDENCE_CHECKED,
                lambda data: {bytes.fromhex(line) for line in data.decode("ascii").split() if len(line) == 40},
            )
            or set()
        )

    def _remember(self, shas: Iterable[bytes]) -> None:
        lines = "".join(sha.hex() + "\n" for sha in shas)
        if lines:
            State(self._control).append(EVIDENCE_CHECKED, lines.encode())

    def batches(self, signer: str | None = None) -> list[dict[str, Any]]:
        """Each signer's batches in the head's log (docs/lineage/evidence.md §9), oldest first: id, prev, count, the
        log index of its first outcome, and whether it is a **head** (no batch of the signer follows it: the
        end of a chain, which only the signer's own word can show whole or missing); and its v1 records."""
        roles = self._trust().active
        out: dict[str, dict[str, Any]] = {}
        for i, data in enumerate(self.checked()):
            record = oc.loads(data).get("record")
            if record is None:  # an eval plan or an approval: in no batch (docs/lineage/evaluations.md)
                continue
            who = record["signer"]
            if signer is not None and who != signer:
                continue
            role = roles.get(who)
            mine = out.setdefault(
                who,
                {
                    "signer": who,
                    "tier": "verified" if role == "verifier" else "self" if role else "withdrawn",
                    "outcomes": 0,
                    "v1": 0,
                    "batches": {},
                },
            )
            mine["outcomes"] += 1
            batch = record.get("batch")
            if batch is None:
                mine["v1"] += 1
            elif batch["id"] not in mine["batches"]:
                mine["batches"][batch["id"]] = {
                    "id": batch["id"],
                    "prev": batch["prev"],
                    "count": batch["count"],
                    "first": i,
                }
        for mine in out.values():
            followed = {b["prev"] for b in mine["batches"].values()}
            mine["batches"] = [{**b, "head": b["id"] not in followed} for b in mine["batches"].values()]
        return list(out.values())

    def plans(self, skill: str | None = None) -> list[oc.Entry]:
        """The eval plans in the head's log (of ``skill``, or all), in log order (docs/lineage/evaluations.md)."""
        return self._of_kind("plan", skill)

    def approvals(self, skill: str | None = None) -> list[oc.Entry]:
        """The approvals in the head's log (of ``skill``, or all), in log order (docs/lineage/evaluations.md)."""
        return self._of_kind("approval", skill)

    def _of_kind(self, kind: str, skill: str | None) -> list[oc.Entry]:
        out = []
        for data in self.checked():
            if oc.kind_of(data) == kind:
                entry = oc.parse_entry(data)
                if skill is None or entry.body["skill"] == skill:
                    out.append(entry)
        return out

    def skill_stats(
        self,
        name: str,
        per: Mapping[str, Mapping[int, VersionStats]] | None = None,
        lifted: Mapping[str, Mapping[int, Mapping[str, list[lf.Lift]]]] | None = None,
    ) -> dict[str, Any]:
        """``name``'s every version, oldest first, with its outcomes by tier and its lift by tier; its regression,
        if any, and its flagged lifts (:func:`~ledger.evals.lift.lift_regressions`)."""
        name = self._reads.resolve(name)
        if per is None or lifted is None:
            per_, lifted_ = self.figures(only=name)
            per, lifted = (per if per is not None else per_), (lifted if lifted is not None else lifted_)
        found = dict(per.get(name, {}))
        mine = lifted.get(name, {})
        live = None
        try:
            history = self._reads.history(name)
        except SkillNotFoundError:
            history = []
        for h in history:
            if h["action"] != "delete":
                found.setdefault(h["version"], VersionStats(h["version"]))
        if history and history[0]["action"] != "delete":
            live = history[0]["version"]
        return stats_doc(name, live, found, mine, self.regression(name, live, found) if live is not None else None)

    def live(self) -> dict[str, int]:
        """Each skill of the head and its version, from the head's listing (kept per head and per tree)."""
        return {e.name: e.version for e in self._catalog.entries()}

    def regression(self, name: str, live: int, versions: Mapping[int, VersionStats]) -> dict[str, Any] | None:
        """:func:`~ledger.brain.competence.regression`, unless the live version is the content of the version
        it regressed from (the revert the flag asked for; the ledger's version counter aside)."""
        flagged = regression(name, live, versions)
        if flagged is not None and flagged["live"] != flagged["version"] and self._same_as(name, flagged["from"]):
            return None
        return flagged

    def _same_as(self, name: str, version: int) -> bool:
        store = self._store
        now = self._head().skills.get(name)
        try:
            then = skills_of(store, store.commit_info(self._reads.version_commit(name, version))[0])[1].get(name)
        except LedgerError:
            return False
        if now is None or then is None or now == then:
            return now is not None and now == then
        zero = counter_zeroed(True)
        files = [
            {r: (m, zero(r, store.read(sha, b"blob"))) for r, (m, sha) in th.files_of(store, t).items()}
            for t in (now, then)
        ]
        return files[0] == files[1]

    def regressions(self, per: Mapping[str, Mapping[int, VersionStats]] | None = None) -> list[dict[str, Any]]:
        """Each live skill whose live version's verified rate is significantly worse than its predecessor's."""
        head = self._head()
        if per is None and head_evidence(self._store, head) is None:
            per = {}  # no outcome at all: nothing to read
        if per is None:
            per, lifted = self.figures()
        else:
            lifted = self.lifts() if per else {}
        out = []
        for name, version in self.live().items() if per else ():
            flagged = self.regression(name, version, per.get(name, {}))
            if flagged is not None:
                out.append({"kind": "rate", **flagged})
            if name in lifted:
                out += lf.lift_regressions(name, version, lifted[name])
        remembered = {"head": head.commit.hex(), "regressions": len(out)}
        State(self._control).write_json(REGRESSIONS, remembered)  # what `ledger status` answers from the cache
        return out

    def pinned(self, skills: Mapping[str, bytes]) -> dict[str, bytes]:
        """For each of ``skills`` (name → the head's tree) whose best verified version is not the head's,
        that version's tree: the pin-by-evidence policy of a target linked with ``--best-verified``."""
        per = self.stats() if head_evidence(self._store, self._head()) is not None else {}
        live = self.live() if per else {}
        wanted = {
            (n, best)
            for n in skills
            if n in per and n in live and (best := best_verified(per[n])) is not None and best != live[n]
        }
        out: dict[str, bytes] = {}
        store = self._store
        for snap in store.lineage() if wanted else ():  # newest first: each version's newest writer
            for change in snap.changes:
                key = (change.skill, change.version)
                if key in wanted and change.action != "delete":
                    wanted.discard(key)
                    tree = skills_of(store, bytes.fromhex(snap.tree))[1].get(change.skill)
                    if tree is not None:
                        out[change.skill] = tree
            if not wanted:
                break
        return out

    def _snapshot(self, commit: str) -> tuple[gs.Snapshot, dict[str, bytes]]:
        """A snapshot and its skills' trees, kept per commit id (content-addressed): a bulk import of
        outcomes of 1,000 skills served by one snapshot reads its message and tree once, not 1,000 times."""
        cache = self.__dict__.setdefault("_snapshots", {})
        if commit not in cache:
            if len(cache) > 64:
                cache.clear()
            snap = self._store.snapshot(bytes.fromhex(commit))
            cache[commit] = (snap, skills_of(self._store, bytes.fromhex(snap.tree))[1])
        return cache[commit]

    def _versions(self, snap: gs.Snapshot) -> tuple[bytes | None, dict[str, int]]:
        cache = self.__dict__.setdefault("_records", {})
        if snap.tree not in cache:
            cache[snap.tree] = self._store.versions(bytes.fromhex(snap.tree))
        return cache[snap.tree]

    # ------------------------------------------------------------------ writing

    def record(
        self,
        name: str,
        version: int | None = None,
        *,
        result: str,
        task: str | None = None,
        task_digest: str | None = None,
        score: float | None = None,
        scale: tuple[float, float] | None = None,
        threshold: float | None = None,
        evidence: str | None = None,
        evidence_digest: str | None = None,
        verifier: str | None = None,
        receipt: Mapping[str, Any] | None = None,
        when: str | None = None,
        note: str = "",
    ) -> tuple[Receipt, oc.Entry]:
        """Sign one outcome with the acting role's key and append it: one ``outcome`` snapshot."""
        served = self.served(name, version, receipt)
        row = self._unsigned(
            served,
            {
                "task": task,
                "task_digest": task_digest,
                "score": score,
                "scale": scale,
                "threshold": threshold,
                "evidence": evidence,
                "evidence_digest": evidence_digest,
                "verifier": verifier,
                "time": when,
            },
            result,
        )
        receipt_, signed = self._append([row], note or f"outcome: {served.skill} v{served.version} {result}")
        return receipt_, signed[0]

    def record_runs(self, rows: Sequence[Mapping[str, Any]], note: str) -> Receipt:
        """Sign ``rows`` (unsigned v3 records from :meth:`unsigned`, each an evaluation's run) with the acting
        key as ONE batch and append them: one ``outcome`` snapshot (docs/lineage/evidence.md §9,
        docs/lineage/evaluations.md)."""
        if not rows:
            raise StoreError("an evaluation records at least one run")
        return self._append([dict(r) for r in rows], note)[0]

    def add_plan(self, fields: Mapping[str, Any], note: str = "") -> tuple[Receipt, oc.Entry]:
        """Sign an eval plan (``fields``: ``skill``, ``set``, ``cases``, ``baseline``, ``runs``, ``runner``,
        ``grader``, ``min_lift``, and ``time`` optionally) with the acting key and append it
        (lineage/evaluations.md)."""
        key = self._key()
        wanted = {"skill", "set", "cases", "baseline", "runs", "runner", "grader", "min_lift"}
        if not wanted <= set(fields) or not set(fields) <= wanted | {"time"}:
            raise StoreError(f"a plan's fields are {', '.join(sorted(wanted))} and optionally time")
        plan = oc.make_plan(
            brain=self.genesis,
            skill=self._reads.resolve(str(fields["skill"])),
            set=fields["set"],
            cases=fields["cases"],
            baseline=fields["baseline"],
            runs=fields["runs"],
            runner=fields["runner"],
            grader=fields["grader"],
            min_lift=fields["min_lift"],
            signer=key.address,
            when=fields.get("time"),
        )
        entry = oc.sign_body("plan", plan, key.secret, key.address)
        receipt = self._append([entry], note or f"outcome: eval plan of {plan['skill']} ({entry.id.hex()[:12]})")[0]
        return receipt, entry

    def approve(self, skill: str, version: int, reason: str, note: str = "") -> tuple[Receipt, oc.Entry]:
        """Sign an approval of ``skill`` at ``version`` (released without an evaluation, for ``reason``) with the
        acting key, which must be a user or curator key, and append it (lineage/evaluations.md)."""
        served = self.served(skill, version)
        key = self._key()
        approval = oc.make_approval(
            brain=self.genesis,
            skill=served.skill,
            version=served.version,
            digest=served.digest,
            reason=reason,
            signer=key.address,
        )
        entry = oc.sign_body("approval", approval, key.secret, key.address)
        receipt = self._append([entry], note or f"outcome: approval of {served.skill} v{served.version}")[0]
        return receipt, entry

    def import_lines(self, lines: Iterable[bytes], *, note: str = "") -> tuple[Receipt | None, dict[str, int]]:
        """Import a JSONL of outcomes (rows signed here, or entries signed elsewhere) as one snapshot."""
        entries: list[bytes | oc.Entry | dict[str, Any]] = []
        served: dict[str, Served] = {}  # a bulk file names few versions: each is looked up once
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line:
                continue
            try:
                entries.append(self._row(line, served))
            except LedgerError as exc:
                raise type(exc)(
                    f"line {number}: {exc.message}",
                    hint=exc.hint or "fix the line and import again; nothing was written",
                ) from None
        before = len(entries)
        receipt = self._append(entries, note or f"outcome: imported {before} outcome(s)")[0] if entries else None
        return receipt, {"read": before}

    def _row(self, line: bytes, cache: dict[str, Served]) -> oc.Entry | dict[str, Any]:
        try:
            doc = oc.loads(line)
        except StoreError as exc:
            raise StoreError(exc.message.replace("an evidence entry", "the line")) from None
        if _is_signed(doc):
            return oc.parse_entry(line)  # a record, plan or approval signed elsewhere: taken byte for byte, or refused
        if not isinstance(doc, dict) or not set(doc) <= IMPORT_KEYS or "skill" not in doc:
            unknown = sorted(set(doc) - IMPORT_KEYS) if isinstance(doc, dict) else []
            raise StoreError(
                "a row is an object with 'skill' and the keys of docs/reference.md (Outcome JSONL)"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            )
        if not isinstance(doc["skill"], str):
            raise StoreError("a row's 'skill' is the skill's name, a string")
        version = doc.get("version")
        if version is not None and (type(version) is not int or version < 1):
            raise StoreError("a row's 'version' is a version number (1, 2, …), or absent for the head's")
        if not isinstance(doc.get("receipt", {}), dict):
            raise StoreError("a row's 'receipt' is the object a skill view returned (commit, root, …), or absent")
        if ("success" in doc) == ("score" in doc):
            raise StoreError("a row has exactly one of 'success' (true or false) and 'score'")
        if "success" in doc and not isinstance(doc["success"], bool):
            raise StoreError("'success' is true or false")
        result = "score" if "score" in doc else ("success" if doc["success"] else "failure")
        scale = doc.get("scale", [0, 1] if "score" in doc else None)
        if scale is not None and not (isinstance(scale, list) and len(scale) == 2):
            raise StoreError("'scale' is [lowest, highest]")
        key = json.dumps([doc["skill"], doc.get("version"), doc.get("receipt")], sort_keys=True)
        if key not in cache:
            cache[key] = self.served(str(doc["skill"]), doc.get("version"), doc.get("receipt"))
        served = cache[key]
        fields = {
            k: doc.get(k)
            for k in ("task", "task_digest", "score", "threshold", "evidence", "evidence_digest", "verifier", "time")
        }
        fields["scale"] = tuple(scale) if scale is not None else None
        return self._unsigned(served, fields, result)

    def unsigned(self, served: Served, fields: Mapping[str, Any], result: str) -> dict[str, Any]:
        """The record of a row the acting key will sign (:meth:`record_runs` signs rows as one batch).
        ``fields``: ``task``, ``task_digest``, ``score``, ``scale``, ``threshold``, ``evidence``,
        ``evidence_digest``, ``verifier``, ``time``, and ``eval`` (an evaluation's run, lineage/evaluations.md, or
        absent).
        The record names the acting key as its signer: build the rows under the ``Brain.acting`` block
        that records them."""
        return self._unsigned(served, fields, result)

    def _unsigned(self, served: Served, f: Mapping[str, Any], result: str) -> dict[str, Any]:
        """The record of a row the acting key will sign: :meth:`_append` signs a call's rows as one batch."""
        key = self._key()
        agent = self._keyed[2]
        when = f.get("time")
        task = f.get("task")
        if isinstance(task, dict):  # {"id", "digest"} as a record holds it
            task, digest = task.get("id"), task.get("digest")
        else:
            digest = f.get("task_digest")
        record = oc.make_record(
            brain=self.genesis,
            agent=agent,
            skill=served.skill,
            version=served.version,
            digest=served.digest,
            receipt={"commit": served.commit, "root": served.root},
            task_id=task,
            task_digest=digest,
            result=result,
            score=f.get("score"),
            scale=f.get("scale"),
            threshold=f.get("threshold"),
            evidence_uri=f.get("evidence"),
            evidence_digest=f.get("evidence_digest"),
            verifier=f.get("verifier"),
            when=when,
            signer=key.address,
            batch=_PENDING,
            eval=f.get("eval"),
        )
        stamp = oc.parse_time(record["time"])
        if stamp < served.time:
            raise StoreError(
                f"the outcome's time {record['time']} is before {served.skill} v{served.version} was "
                f"served (snapshot {served.commit[:12]}, {oc.format_time(served.time)}): back-dated",
                hint="an outcome comes at or after the snapshot that served the version",
            )
        return record

    def holder_role(self) -> str:
        """The role whose key signs a snapshot that only holds entries signed elsewhere (each entry's tier is
        its own signer's): the verifier's, if this machine holds a key the brain trusts as verifier, else the
        user's, which every brain's writer has."""
        found = self._writer.sealer.key_for(self._trust(), "verifier")
        return "user" if isinstance(found, tuple) else "verifier"

    def _key(self) -> Any:
        """The acting role's key, loaded once per head and role (a bulk import signs thousands)."""
        slot = (self._head().commit, self._writer.attribution["actor"])
        if getattr(self, "_keyed", (None, None))[0] != slot:
            key = self._writer.sealer.key_for(self._trust(), slot[1])
            if isinstance(key, tuple):
                why, fix = key
                raise StoreError(f"an outcome is signed by its actor's key, and {why}", hint=fix)
            self._keyed = (slot, key, self.agent())
        return self._keyed[1]

    def append(self, entries: Sequence[bytes | oc.Entry], note: str) -> Receipt:
        """Append signed entries (each checked, each signer trusted, duplicates of the log's dropped, each
        batch whole, lineage/evidence.md §9) as one ``outcome`` snapshot, under the writer lock, so no concurrent append
        is
        lost.  An :class:`~oc.Entry` is one this process parsed or signed; bytes are parsed here."""
        return self._append(entries, note)[0]

    def _append(
        self, entries: Sequence[bytes | oc.Entry | dict[str, Any]], note: str
    ) -> tuple[Receipt, list[oc.Entry]]:
        """:meth:`append`, where a record (a dict) is a row the acting key signs here: the call's rows are one
        batch, signed under the lock so that it follows the signer's newest batch in the head's log."""
        from ledger.audit.evidencecheck import Plans, Receipts, Tally, batch_problem, entry_problem

        writer = self._writer
        with writer.lock.locked():
            head = self._head()
            trust = self._trust()
            tree = head_evidence(self._store, head)
            seen, log_agent = self._index(tree)
            held, level = self._batches(tree)
            rows = [e for e in entries if isinstance(e, dict)]
            if rows:
                key = self._key()
                prev = held.get(key.address, [None])[-1]
                mine = []
                for start in range(0, len(rows), oc.MAX_BATCH):  # a file past a batch's bound: chained batches
                    mine += oc.sign_batch(rows[start : start + oc.MAX_BATCH], key.secret, prev=prev)
                    prev = mine[-1].batch["id"] if mine[-1].batch else None
                signed = iter(mine)
                entries = [next(signed) if isinstance(e, dict) else e for e in entries]
            else:
                mine = []
            # The audit's own rules (lineage/evidence.md §5), asked before anything is written: an acknowledged outcome
            # is
            # one the audit passes, since the append-only log could never drop it afterwards.
            tally = Tally(agent=log_agent)
            registered = self.agent()
            receipts = Receipts(self._store, None, self._cache)
            now, at = int(time.time()), head.commit.hex()
            plans = Plans(self._plans_in(tree))
            fresh: list[oc.Entry] = []
            for i, given in enumerate(entries):
                assert not isinstance(given, dict)
                entry = given if isinstance(given, oc.Entry) else oc.parse_entry(given)
                _check_signer(entry, trust)
                if entry.kind == "record" and entry.batch is None:
                    raise StoreError(
                        f"outcome {i + 1} of {len(entries)} is a {oc.FORMAT_V1} record: a v1.7 brain "
                        f"appends only {oc.FORMAT} records, each whole in its signer's batch "
                        "(see docs/lineage.md, 'A signer's record is complete: batches'); "
                        "nothing was written",
                        hint="have the verifier sign its outcomes as a batch (ledger.store.outcomes."
                        "sign_batch, or ledger outcome record|import on its own brain)",
                    )
                if registered is not None and entry.kind == "record" and entry.record["agent"] != registered:
                    raise StoreError(
                        f"outcome {i + 1} of {len(entries)} names agent {entry.record['agent']}, but "
                        f"this brain is registered as agent {registered}: an outcome of a registered "
                        "brain names its agent"
                        " (see docs/lineage.md, 'Audit rules (check evidence)', rule 7); "
                        "nothing was written",
                        hint="have the verifier sign the record with the agent id ('ledger chain status' shows it)",
                    )
                if entry.id in seen:  # in the log, or earlier in this batch: appended once
                    continue
                problem = entry_problem(
                    entry,
                    at=at,
                    stamp=now,
                    genesis=self.genesis,
                    trust=trust,
                    seen=seen,
                    receipts=receipts,
                    tally=tally,
                    inclusive=True,
                    plans=plans,
                )
                if problem is not None:
                    raise StoreError(
                        f"outcome {i + 1} of {len(entries)}: {problem}; nothing was written",
                        hint="an outcome is of a version a snapshot of this brain served, dated "
                        "between then and now, naming this brain's agent",
                    )
                fresh.append(entry)
            if not fresh:
                raise StoreError("every outcome given is already in the log; nothing was written")
            size = ev.size_of(self._store, tree)
            known = {(signer, bid) for signer, ids in held.items() for bid in ids}
            problem = batch_problem(
                list(enumerate(fresh, size)),
                v2_before=level >= 2,
                v3_before=level >= 3,
                known=lambda signer, bid: (signer, bid) in known,
                plans=plans,
            )
            if problem is not None:
                raise StoreError(
                    f"{problem}; nothing was written",
                    hint="import every outcome of the verifier's batch, and its earlier batches "
                    "first, as the verifier signed them",
                )
            new_tree = ev.append(self._store, tree, [e.data for e in fresh])
            receipt = writer.apply("outcome", {}, [], note, evidence=new_tree)
            old = ev.chunk_ids(self._store, tree) if tree is not None else []
            assert new_tree is not None
            if not old or old[-1] in self._known():  # every entry of the new chunks was verified here or before
                self._remember(set(ev.chunk_ids(self._store, new_tree)) - set(old))
            self._save_index(new_tree, seen, tally.agent)  # entry_problem added each appended id to ``seen``
            for e in fresh:
                if e.batch is None:  # an eval plan or an approval: in no batch
                    continue
                ids = held.setdefault(e.signer, [])
                if not ids or ids[-1] != e.batch["id"]:
                    ids.append(e.batch["id"])
            self._save_batches(new_tree, held, max([level, *(e.level for e in fresh)]))
            return receipt, mine

    def _plans_in(self, tree: bytes | None) -> Callable[[str], oc.Entry | None]:
        """The plan of an id in ``tree``'s log, read (every plan at once) only when a run names one."""
        found: dict[str, oc.Entry] | None = None

        def plan(pid: str) -> oc.Entry | None:
            nonlocal found
            if found is None:
                found = {}
                for data in ev.entries_of(self._store, tree) if tree is not None else ():
                    if oc.kind_of(data) == "plan":
                        entry = oc.parse_entry(data)
                        found[entry.id.hex()] = entry
            return found.get(pid)

        return plan

    def _batches(self, tree: bytes | None) -> tuple[dict[str, list[str]], int]:
        """Each signer's batch ids in ``tree``'s log, oldest first, and the newest record format it holds
        (0 none, 1, 2 or 3: lineage/evidence.md §9's and lineage/evaluations.md's no-downgrade rule): from
        ``.ledger/cache`` when kept for this
        very tree (content-addressed, as the ids' cache), else read from the log."""
        if tree is None:
            return {}, 0

        def decode(data: bytes) -> tuple[dict[str, list[str]], int] | None:
            if data[:20] != tree or (len(data) - 21) % 52 or data[20] > 3:
                return None
            held: dict[str, list[str]] = {}
            for i in range(21, len(data), 52):
                held.setdefault("0x" + data[i : i + 20].hex(), []).append(data[i + 20 : i + 52].hex())
            return held, data[20]

        kept = State(self._control).read(EVIDENCE_BATCHES, decode)
        if kept is not None:
            return kept
        held: dict[str, list[str]] = {}
        level = 0
        for entry in ev.entries_of(self._store, tree):
            record = oc.loads(entry).get("record")
            if record is None:  # an eval plan or an approval
                continue
            level = max(level, 3 if "eval" in record else 2 if "batch" in record else 1)
            batch = record.get("batch")
            if isinstance(batch, dict):
                ids = held.setdefault(record["signer"], [])
                if not ids or ids[-1] != batch["id"]:
                    ids.append(batch["id"])
        return held, level

    def _save_batches(self, tree: bytes, held: Mapping[str, list[str]], level: int) -> None:
        pairs = b"".join(bytes.fromhex(signer[2:]) + bytes.fromhex(bid) for signer, ids in held.items() for bid in ids)
        State(self._control).write(EVIDENCE_BATCHES, tree + bytes([level]) + pairs)

    def _index(self, tree: bytes | None) -> tuple[set[bytes], str | None]:
        """The ids in ``tree``'s log and the agent its records name: from ``.ledger/cache`` when it was kept
        for this very tree (content-addressed: it cannot be stale), else read from the log, so an append to
        a log of 100,000 does not parse 100,000 entries."""
        if tree is None:
            return set(), None

        def decode(data: bytes) -> tuple[set[bytes], str | None] | None:
            if data[:20] != tree or (len(data) - 86) % 32:
                return None
            agent = data[20:86].decode("ascii") if data[20:22] == b"0x" else None
            return {data[i : i + 32] for i in range(86, len(data), 32)}, agent

        kept = State(self._control).read(EVIDENCE_IDS, decode)
        if kept is not None:
            return kept
        logged = ev.entries_of(self._store, tree)
        return {oc.outcome_id_of(e) for e in logged}, _log_agent(logged)

    def _save_index(self, tree: bytes, ids: set[bytes], agent: str | None) -> None:
        agent_field = (agent or "").encode("ascii").ljust(66, b"\0")
        State(self._control).write(EVIDENCE_IDS, tree + agent_field + b"".join(ids))

    def _trust(self) -> Trust:
        return self._writer._trust(self._head())[1]


def _figure_line(
    name: str, per: Mapping[int, VersionStats], lifted: Mapping[int, Mapping[str, list[lf.Lift]]], pairing: lf.Pairing
) -> bytes:
    """One skill's figures as a line of the figures cache: its name as JSON, a tab, then the figures as JSON
    (outcomes per version, the comparisons with their running sums, the identities staleness is judged by)."""
    doc = {
        "stats": [
            [
                s.version,
                [s.verified.successes, s.verified.failures, s.verified.scores],
                [s.self.successes, s.self.failures, s.self.scores],
                s.withdrawn,
                s.digest,
            ]
            for s in per.values()
        ],
        "lifts": [x.__dict__ for tiers in lifted.values() for found in tiers.values() for x in found],
        "ran": pairing.ran.get(name),
        "planned": pairing.planned.get(name),
    }
    return (json.dumps(name) + "\t" + json.dumps(doc, separators=(",", ":")) + "\n").encode()


def _load_figures(data: bytes, only: str | None) -> tuple[PerVersion, lf.Pairing]:
    """The figures of ``only`` (its one line, found by its name at the start of a line), or of every skill."""
    start = data.index(b"\n") + 1
    if only is not None:
        needle = b"\n" + json.dumps(only).encode() + b"\t"
        at = data.find(needle, start - 1)
        lines = [data[at + 1 : data.index(b"\n", at + 1)]] if at >= 0 else []
    else:
        lines = data[start:].splitlines()
    per: PerVersion = {}
    pairing = lf.Pairing()
    for line in lines:
        head, _, body = line.partition(b"\t")
        name, doc = json.loads(head), json.loads(body)
        for version, verified, own, withdrawn, digest in doc["stats"]:
            per.setdefault(name, {})[version] = VersionStats(version, Tier(*verified), Tier(*own), withdrawn, digest)
        for x in doc["lifts"]:
            pairing.keep(lf.Lift(**x))
        if doc["ran"] is not None:
            pairing.ran[name] = doc["ran"]
        if doc["planned"] is not None:
            pairing.planned[name] = doc["planned"]
    return per, pairing


def _extends(store: gs.GitStore, old: bytes, new: bytes, size: int) -> bool:
    """Whether the log of ``new`` begins with the ``size`` entries of the log of ``old``: the same chunks up to
    the last, whose bytes begin the new log's chunk of that index (chunks are content-addressed;
    lineage/evidence.md §2)."""
    before, after = ev.chunk_ids(store, old), ev.chunk_ids(store, new)
    full, part = divmod(size, ev.CHUNK)
    if len(before) != full + (1 if part else 0) or after[:full] != before[:full]:
        return False
    if not part:
        return True
    if len(after) <= full:
        return False
    was, now = store.read_blobs([before[full], after[full]])
    return bool(now.startswith(was))


def _sum(a: VersionStats, b: VersionStats) -> VersionStats:
    """One version's outcomes from two parts of the log."""
    for mine, more in ((a.verified, b.verified), (a.self, b.self)):
        mine.successes += more.successes
        mine.failures += more.failures
        mine.scores.extend(more.scores)
    a.withdrawn += b.withdrawn
    return a


def stats_doc(
    name: str,
    live: int | None,
    found: Mapping[int, VersionStats],
    lifted: Mapping[int, Mapping[str, list[lf.Lift]]],
    regressed: dict[str, Any] | None,
) -> dict[str, Any]:
    """One skill's ``--stats`` document: every version with outcomes or a lift (and the live one), oldest first."""
    versions = sorted(set(found) | set(lifted) | ({live} if live is not None else set()))
    return {
        "skill": name,
        "live": live,
        "versions": [
            {**(found.get(v) or VersionStats(v)).to_json(), "lift": lf.version_json(lifted.get(v))} for v in versions
        ],
        "regression": regressed,
        "lift_regressions": lf.lift_regressions(name, live, lifted) if live is not None else [],
    }


def _log_agent(entries: Sequence[bytes]) -> str | None:
    """The registry agent id the log's records name (lineage/evidence.md §5 rule 7), read without parsing each entry: an
    entry's bytes begin ``{"record":{"agent":`` and then ``null`` or the id (RFC 8785 key order)."""
    head = b'{"record":{"agent":"'
    for entry in entries:
        if entry.startswith(head):
            return entry[len(head) : len(head) + 66].decode("ascii", "replace")
    return None


def _check_signer(entry: oc.Entry, trust: Trust) -> None:
    role = trust.active.get(entry.signer)
    what = "outcome" if entry.kind == "record" else entry.kind
    if role is None:
        raise StoreError(
            f"{what} {entry.id.hex()[:12]} is signed by {entry.signer}, a key this brain does not trust",
            hint="trust the verifier first: 'ledger keys trust verifier ADDRESS'",
        )


def _version_at(store: gs.GitStore, versions: tuple[bytes | None, dict[str, int]], name: str, tree: bytes) -> int:
    """``name``'s version in a snapshot: its ``versions`` record's, or its SKILL.md counter (lineage.md §4.2)."""
    vsha, record = versions
    if vsha is not None:
        return record[name]
    blob = th.files_of(store, tree)[SKILL_MD][1]
    return parse_skill_md(store.read(blob, b"blob").decode("utf-8"), limit=1 << 31).version
