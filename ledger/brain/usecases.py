"""The brain's use cases: the work of ``ledger init``, ``index``, ``recover``, ``snapshot``, ``log``,
``prove``, ``gc`` and ``skill list/view``, each returning a typed report (:mod:`ledger.brain.reports`).

The CLI (:mod:`ledger.cli.brain`, :mod:`ledger.cli.skills`) parses, calls one of these, and prints
the report's ``to_json()`` with ``--json`` or renders it as text; the MCP tools and the Python API
may call the same functions. No printing, no prompting (a passphrase comes by callback), no exit
codes here: a refusal raises a :class:`~ledger.errors.LedgerError` as the library always has. The
skill writes (create, upsert, edit, patch, delete, move, write-file, remove-file) are the
:class:`~ledger.brain.Brain` methods themselves, each returning a
:class:`~ledger.write.records.Receipt` or raising :class:`~ledger.write.records.NoChangeError`.
``status`` reads sync targets and fleet merges, so it lives above them, in :mod:`ledger.overview`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from ledger.brain.evidence import stats_doc
from ledger.brain.facade import Brain
from ledger.brain.reports import (
    GcReport,
    IndexEntry,
    IndexReport,
    InitReport,
    LogEntry,
    LogReport,
    LogStatsReport,
    ProveReport,
    RecoverReport,
    SkillFileReport,
    SkillListEntry,
    SkillListReport,
    SkillStats,
    SkillViewReport,
    TrustedKey,
    UsageReceipt,
)
from ledger.chain.receipts import read_receipts
from ledger.reports import OMIT
from ledger.signatures.identity import KeyDir, keys_home
from ledger.store.gitstore import split_note
from ledger.store.packing import pack
from ledger.write.records import Receipt

__all__ = ["gc", "index", "init", "log", "log_stats", "prove", "recover", "skill_list", "skill_view", "snapshot"]

Progress = Callable[[int, int], None]


def init(
    directory: str | os.PathLike[str],
    *,
    sign: bool = True,
    passphrase: Callable[[bool], str] | None = None,
    encrypt: bool = False,
    versions: str = "frontmatter",
) -> InitReport:
    """Make an empty brain in ``directory`` whose first snapshot trusts this machine's user and agent
    keys ($LEDGER_KEYS), made there if missing (``sign=False``: an unsigned brain, trusting none)."""
    keys = KeyDir(keys_home())
    made = {r for r in ("user", "agent") if keys.peek(r) is None} if sign else set()
    with Brain.init(directory, sign=sign, passphrase=passphrase, encrypt=encrypt, versions=versions) as brain:
        root = brain.head().snap.to_json()["root"]
        trusted = tuple(
            TrustedKey(k["role"], k["address"], str(keys.path(k["role"])) if k["role"] in made else None)
            for k in brain.trusted_keys()["trusted"]
        )
        return InitReport(
            brain=str(brain.root),
            root=str(root),
            trusted=trusted,
            policy="signed" if sign else "unsigned",
            versions=versions,
        )  # type: ignore[arg-type]


def index(brain: Brain) -> IndexReport:
    """The Level-0 index: every skill an agent may see (none the supply record withholds), sorted."""
    hidden = brain.withheld()
    return IndexReport(tuple(IndexEntry(s.name, s.description) for s in brain.list() if s.name not in hidden))


def recover(brain: Brain, *, move_aside: bool = False) -> RecoverReport:
    """Finish a write a crash interrupted (``move_aside``: keep files changed since under .ledger/rescued/)."""
    return RecoverReport.of(brain.recover(move_aside=move_aside))


def snapshot(brain: Brain, note: str = "", progress: Progress | None = None) -> Receipt:
    """Record hand edits in the working tree as one snapshot (raises NoChangeError when there are none)."""
    return brain.snapshot(note, progress)


def log(brain: Brain, *, max_count: int | None = None, actor: str | None = None, skill: str | None = None) -> LogReport:
    """The lineage, newest first, numbered from the first snapshot: at most ``max_count`` of those by
    ``actor`` (``unsigned``: those no key signed) that change ``skill``."""
    receipts = read_receipts(brain.store) if brain.config.get("chain") else {}
    out: list[LogEntry] = []
    number = brain.store.number() + 1  # the head's number; each first parent is one less
    for snap in brain.store.lineage():
        number -= 1
        if max_count is not None and len(out) >= max_count:
            break
        if actor is not None and snap.shown_actor != actor:
            continue
        if skill is not None and all(c.skill != skill for c in snap.changes):
            continue
        date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(snap.timestamp))
        out.append(LogEntry.of(number, snap.to_json(), receipts.get(snap.commit), date, split_note(snap.message)))
    return LogReport(tuple(out))


def log_stats(brain: Brain, skill: str | None = None) -> LogStatsReport:
    """Competence: each skill with outcomes (or ``skill``), its versions' figures, regressions flagged."""
    per, lifted = brain.evidence.figures()
    live = brain.evidence.live()
    names = [brain.resolve(skill)] if skill else sorted(set(per) | set(live) | set(lifted))
    docs = []
    for name in names:
        found = per.get(name, {})
        flagged = brain.evidence.regression(name, live[name], found) if name in live else None
        docs.append(SkillStats.of(stats_doc(name, live.get(name), found, lifted.get(name, {}), flagged)))
    return LogStatsReport(tuple(docs))


def prove(brain: Brain, rel: str, at: str | None = None) -> ProveReport:
    """The inclusion proof of file ``rel`` (``<skill>/<path>``) in the head, or the snapshot ``at``."""
    return ProveReport.of(brain.prove(rel, at).to_json())


def gc(brain: Brain, *, full: bool = False) -> GcReport:
    """Pack the store now (``full``: into one pack), waiting for a running packer, connectivity checked."""
    return GcReport.of(pack(brain.store.git_dir, brain.control, full=full, wait=True, check=True))


def skill_list(brain: Brain, category: str | None = None) -> SkillListReport:
    """Every skill (name, version, description), without reading bodies; ``category``: only those in it
    or under it. A skill the supply record withholds is listed, marked."""
    skills = brain.list()
    held = brain.withheld()
    cats = brain.categories.of()
    if category:
        members = set(brain.categories.members(category))
        skills = [s for s in skills if s.name in members]
    return SkillListReport(
        tuple(
            SkillListEntry(
                s.name, s.description, s.version, s.license, s.compatibility, cats.get(s.name), held.get(s.name, OMIT)
            )
            for s in skills
        )
    )  # type: ignore[arg-type]


def skill_view(brain: Brain, name: str, file: str | None = None) -> SkillViewReport | SkillFileReport:
    """A skill's body, linked files and usage receipt; or, with ``file``, one supporting file."""
    doc: dict[str, Any] = brain.view(name, file)
    state = brain.withheld().get(doc["name"], OMIT)
    if file is not None:
        return SkillFileReport(
            name=doc["name"],
            file=doc["file"],
            content=doc.get("content", OMIT),
            binary=doc.get("binary", OMIT),
            size=doc.get("size", OMIT),
            supply=state,
        )
    receipt = UsageReceipt.of(doc["receipt"]) if doc["receipt"] is not None else None
    return SkillViewReport(
        name=doc["name"],
        description=doc["description"],
        version=doc["version"],
        body=doc["body"],
        files=doc["files"],
        receipt=receipt,
        supply=state,
    )
