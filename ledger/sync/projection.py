"""``ledger sync``: the brain projected into every target, and what changed there recorded back.

A pass over a target reads it (:mod:`ledger.sync.reading`), then has two phases
(docs/layouts.md, "Projection"):

1. **Record** (:mod:`ledger.sync.recording`): what the target changed becomes versions,
   merged three ways with what the brain changed; a conflict writes nothing on either side.
2. **Project** (here): each skill the ledger changed is written whole and renamed into place
   (:mod:`ledger.folders.folder`); a skill the ledger deleted is taken out.  Nothing is
   replaced unless it is what the manifest says the ledger last wrote, or what was just
   recorded, so an edit is never overwritten unread.

Every target's changes are recorded before any is projected; one failing target fails only
itself.  A target that lost its skills is refused, not read as deletions.  A pass that found its
target wholly in step leaves an instant record (:mod:`ledger.folders.instant`), so that the next
``ledger sync`` can answer from metadata alone; every pass deletes the old record first.

A skill the head's supply record withholds (quarantined or revoked, :mod:`ledger.brain.withholding`)
is never projected, and a copy the ledger projected before is taken out; a folder of its name that
is not that copy is left alone and reported (:mod:`ledger.sync.reading`), never recorded.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger._faults import crashpoint, pausepoint
from ledger.brain.withholding import states
from ledger.errors import LedgerError
from ledger.evals import gate
from ledger.folders import instant
from ledger.folders.folder import TargetError, TargetFS
from ledger.folders.ignoring import IGNORE_FILE, IN_FLIGHT, Held, brain_rules
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.gitstore import blob_id
from ledger.store.skilltree import skills_of
from ledger.sync import reading
from ledger.sync.recording import Recorder
from ledger.sync.settling import Pass, Settler, binmap, hexmap, state_of
from ledger.sync.targets import Target, Targets
from ledger.write.importer import CATEGORY_INDEX

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["Projection"]

_ROUNDS = 3  # passes per sync while a target keeps changing under it


class Projection:
    """Keeps one brain and its targets in step; a brain's ``ledger sync``, ``import`` and ``export``."""

    def __init__(self, brain: Brain, targets: Targets | None = None) -> None:
        self.brain = brain
        self.targets = targets or Targets(brain.control)
        self.config = instant.read_file(str(brain.control / "config.json"))  # about what the brain was opened with
        self.recorder = Recorder(brain, lambda p, entries: self.settler.journal(p, entries))
        self.settler = Settler(self.targets, self.recorder.landed)
        self._gates: tuple[bytes | None, dict[str, gate.Release]] | None = None  # per head (ledger.evals.gate)

    @contextlib.contextmanager
    def _sync_lock(self) -> Iterator[None]:
        """One sync at a time per brain (a watcher and a manual run take turns)."""
        self.brain.control.mkdir(exist_ok=True)
        fd = os.open(self.brain.control / "sync.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def sync(
        self,
        names: Sequence[str] = (),
        *,
        take: tuple[str, str] | None = None,
        confirm_deletions: Sequence[str] = (),
        committed: bytes | None = None,
        restore: Sequence[str] = (),
        full: bool = False,
    ) -> dict[str, Any]:
        """One sync of ``names`` (default: every target); ``take=(side, skill)`` settles a conflict with
        ``side`` = ``ledger`` or a target's name; ``committed`` is the commit that committed targets show;
        a target in ``restore`` lost its files: the brain's skills are put back, no deletion recorded;
        ``full`` reads every file, trusting no stat entry (``ledger sync --full``)."""
        targets = [self.targets.get(n) for n in names] if names else self.targets.all()
        with self._sync_lock():
            reports: dict[str, dict[str, Any]] = {}
            for _ in range(_ROUNDS):
                passes, again = [], False
                try:
                    for target in targets:  # every target's changes are recorded before any is projected
                        wiped = (
                            "confirm"
                            if target.name in confirm_deletions
                            else "restore"
                            if target.name in restore
                            else None
                        )
                        result = self._guarded(target, lambda t=target, w=wiped: self._open(t, w, committed, full))
                        if isinstance(result, Pass):
                            passes.append(result)
                            failed = self._guarded(target, lambda p=result, k=take: self.recorder.record(p, k))
                            if failed is not None:
                                passes.remove(result)
                                result.fs.close()
                                result = failed
                        report = result.report if isinstance(result, Pass) else result
                        if target.name in reports:
                            _merge_reports(reports[target.name], report)
                        else:
                            reports[target.name] = report
                    for p in passes:
                        failed = self._guarded(p.target, lambda p=p: self._finish(p, committed))
                        if failed is not None:  # its journal stays: the next pass settles what was under way
                            reports[p.target.name].update(
                                status="refused", reason=failed["reason"], hint=failed["hint"]
                            )
                        else:
                            reports[p.target.name]["conflicts"] = p.report["conflicts"]
                        again |= p.changed
                finally:
                    for p in passes:
                        p.fs.close()
                take = None
                if not again:
                    break
        out = list(reports.values())
        return {
            "targets": out,
            "conflicts": sum(len(r["conflicts"]) for r in out),
            "refused": sum(r["status"] != "ok" for r in out),
        }

    # ------------------------------------------------------------------ one target

    @staticmethod
    def _guarded(target: Target, step: Any) -> Any:
        """Run one target's step; a failure fails that target alone, reported with its reason."""
        try:
            return step()
        except (LedgerError, OSError) as exc:
            why = exc.message if isinstance(exc, LedgerError) else f"{exc.strerror}: {exc.filename}"
            hint = (exc.hint if isinstance(exc, LedgerError) else None) or "run 'ledger sync' again once it is fixed"
            report: dict[str, Any] = {
                "name": target.name,
                "path": target.path,
                "status": "refused",
                "reason": why,
                "hint": hint,
            }
            report.update({k: [] for k in instant.LISTS})
            return report

    def _finish(self, p: Pass, committed: bytes | None) -> None:
        """Phase 2 for one target, then its manifest saved and its journal cleared."""
        self._project(p, committed)
        plan = p.category_plan
        for rel, data in sorted(plan.project.items()) if plan is not None else ():
            t = p.categories.get(rel)
            if p.fs.put_file(rel, data, blob_id(t).hex() if t is not None else None):
                p.manifest.categories[rel], p.manifest.dirty = plan.in_step[rel], True
                p.report["projected"].append(f"{rel} (category file)")
            else:
                p.changed = True  # edited meanwhile: left as it is, and read again next pass
        p.fs.tidy()
        self.targets.save_manifest(p.target.name, p.manifest)
        if p.manifest.pending:
            self.settler.journal(p, dict.fromkeys(list(p.manifest.pending)))  # all settled and saved
        p.report["conflicts"] = [{"skill": k, **v} for k, v in sorted(p.manifest.conflicts.items())]
        with contextlib.suppress(OSError, LedgerError):  # bookkeeping: without it, the next sync reads the target
            self._remember(p)

    def _open(
        self, target: Target, wiped: str | None, committed: bytes | None, full: bool = False
    ) -> Pass | dict[str, Any]:
        """The target opened and read, its killed exchanges settled; or a report of why it is refused."""
        Path(self._record_file(target)).unlink(missing_ok=True)  # first: no record outlives what it claims
        report: dict[str, Any] = {"name": target.name, "path": target.path, "status": "ok"}
        report.update({k: [] for k in instant.LISTS})
        if target.committed and committed is None:
            report.update(
                status="refused",
                reason="it shows the root committed on chain, and the chain could not be read",
                hint="start the chain (or check --rpc), then run 'ledger sync' again",
            )
            return report
        try:
            if wiped == "restore":
                os.makedirs(target.path, exist_ok=True)  # a folder that went away entirely is made again
            work = str(self.targets.work(target.name))
            fs = TargetFS(target.path, target.layout, self.brain.limits["file"], work=work)
        except (TargetError, OSError) as exc:
            why = exc.message if isinstance(exc, LedgerError) else f"cannot open it: {exc.strerror}"
            report.update(
                status="refused",
                reason=why,
                hint=f"mount it, or put the brain's skills back: ledger sync --restore {target.name} "
                "(a missing target is never read as deletions)",
            )
            return report
        ignore = fs.read_top(IGNORE_FILE)
        controls = instant.controls(str(self.brain.control), ignore)  # before the files it digests are read
        fs.ignore = brain_rules(self.brain.control).then(
            (ignore or b"").decode("utf-8", "replace"), f"{target.path}/{IGNORE_FILE}"
        )
        head = self.brain.head()
        p = Pass(
            target,
            fs,
            self.targets.manifest(target.name),
            report=report,
            full=full,
            controls=controls,
            commit=head.commit,
            withheld=states(self.brain.supply(head)),
        )
        fs.held = Held(p.manifest.skills, reading.key_of, self.recorder.paths)  # no rule hides what the brain holds
        if target.layout == "hermes":  # a folder in a skill that the brain holds as its files stays its files
            held = {e["dir"]: e["files"] for e in p.manifest.skills.values()}
            fs.owns = lambda outer, inner: any(f.startswith(inner[len(outer) + 1 :] + "/") for f in held.get(outer, ()))
        try:
            self.settler.settle_all(p)
            if reading.read(p, wiped):
                return p
        except BaseException:
            fs.close()
            raise
        fs.close()
        return report

    def _record_file(self, target: Target) -> str:
        return instant.record_file(str(self.brain.control), target.name)

    def _remember(self, p: Pass) -> None:
        """The instant record of a pass that found its target wholly in step, with nothing it depends
        on changed since it began, and every folder and file it read older than its reading."""
        if p.commit is None or p.scan is None or self.brain.head().commit != p.commit or not self._in_step(p):
            return
        control = str(self.brain.control)
        if (
            instant.read_file(f"{control}/config.json") != self.config
            or p.controls != instant.controls(control, p.fs.read_top(IGNORE_FILE))
            or self.targets.get(p.target.name) != p.target
        ):
            return  # changed since the pass (or the brain) read it: this pass may not have seen it
        scan, skills = p.scan.sealed(), {}
        for key, group in p.groups.items():  # a skill's own folder is keyed as the scan saw it, first
            sealed = (group.without([""]) if p.dirs[key] in p.scan.rows else group).sealed()
            if sealed is None or scan is None:
                return  # racily clean: read again next time
            skills[key] = (p.dirs[key], *sealed)
        if scan is None:
            return
        manifest = instant.digest_of(instant.read_file(str(self.targets.dir / f"{p.target.name}.json")))
        instant.Record(p.controls, manifest, p.commit.hex(), scan, skills).save(self._record_file(p.target))

    def _in_step(self, p: Pass) -> bool:
        """Whether the pass found (and left) the target exactly as the manifest says, the manifest in
        step with the head, and nothing done, refused, left alone, in conflict or under way."""
        r, m = p.report, p.manifest
        if r["status"] != "ok" or any(r[k] for k in instant.LISTS):
            return False
        if (
            p.changed
            or p.dupes
            or m.conflicts
            or m.pending
            or p.target.committed
            or p.target.best_verified
            or p.scan is None
        ):
            return False
        head = self._visible(self.brain.head().skills)
        for key in {k for k in head if p.target.includes(k)} | set(m.skills) | set(p.state) | set(p.dirs):
            entry, lt = m.skills.get(key), head.get(key)
            if (
                entry is None
                or lt is None
                or key not in p.state
                or key not in p.groups
                or entry.get("tree") != lt.hex()
                or entry["dir"] != p.dirs.get(key)
                or p.state[key][0] != m.files(key)
            ):
                return False
        if p.target.layout == "hermes":
            plan = p.category_plan
            if plan is None or plan.project or plan.record:
                return False
            found = {rel: blob_id(data).hex() for rel, data in p.categories.items()}
            if found != {rel: b for rel, b in m.categories.items() if b is not None}:
                return False
        return True

    def _source(self, committed: bytes | None, p: Pass) -> dict[str, bytes]:
        """What the target is to hold: the head's skills (or those ``committed``, or each skill's best
        verified version), less the withheld."""
        head = self.brain.head().skills
        if p.target.committed and committed is not None:
            source = self._visible(skills_of(self.brain.store, self.brain.store.commit_info(committed)[0])[1])
            for name in self._revoked({n: (t, committed.hex()) for n, t in source.items() if t != head.get(n)}):
                del source[name]  # a version the head's record revokes: never projected (gate.revoked_version)
            return source
        source = self._visible(head)
        if p.target.best_verified:
            pinned = self.brain.evidence.pinned(source)
            if pinned:
                found = gate.versions_of(self.brain, pinned)
                at = {n: next((x.commit for x in found[n].values() if x.tree == t), None) for n, t in pinned.items()}
                for name in self._revoked({n: (t, at[n]) for n, t in pinned.items()}):
                    del pinned[name]  # its best verified version is revoked: the head's, as with no pin
            source.update(pinned)
        self._gate(source, p)
        return source

    def _revoked(self, versions: Mapping[str, tuple[bytes, str | None]]) -> list[str]:
        """Those of ``versions`` (name → tree and the snapshot holding it) the head's supply record revokes:
        the one rule (:func:`ledger.evals.gate.revoked_version`) by which no surface serves a revoked version."""
        if not versions:
            return []
        supply = gate.head_supply_record(self.brain)
        return [
            n
            for n, (tree, commit) in versions.items()
            if gate.revoked_version(self.brain, supply, n, tree, commit) is not None
        ]

    def _gate(self, source: dict[str, bytes], p: Pass) -> None:
        """With the gate on (ledger.evals.gate), each gated skill at its newest released version; or at the
        version this target's own edit made, if newer (its edit is never replaced in its own folder); with
        neither, the target keeps what it has and a skill it does not hold is not projected."""
        head = self.brain.head().commit
        if self._gates is None or self._gates[0] != head:  # decided once per head, for every target
            self._gates = (head, gate.releases(self.brain))  # the one rule: Entries serves by it, too
        _, held = self._gates
        mine = p.target.path if len(p.target.path) <= 200 else "…" + p.target.path[-199:]  # as recording writes it
        for name, r in held.items():
            if name not in source:
                continue
            g, versions = r.gate, r.versions
            floor = g.released or 0
            own = [
                v
                for v, x in versions.items()
                if v > floor
                and x.operation == "sync"
                and v not in r.revoked
                and x.attribution.get("target") == mine
                and self._signed_here(x.signer, p.target.actor)
            ]
            pick = max(own) if own else r.served
            entry = p.manifest.skills.get(name)
            said = p.report.setdefault("held", [])
            if pick != g.head and not any(h["skill"] == name for h in said):  # said once per target and sync
                gone = pick is None and g.released in r.revoked
                said.append(
                    {
                        "skill": name,
                        "version": g.head,
                        "shows": pick,
                        "kept": pick is not None or (not gone and entry is not None and bool(entry.get("tree"))),
                        "why": r.refusal() if gone else g.verdicts[g.head].why,
                    }
                )
            if pick is not None:
                source[name] = versions[pick].tree
            elif g.released in r.revoked:
                del source[name]  # its released version is revoked: taken out of a target that holds it
            elif entry is not None and entry.get("tree"):
                source[name] = bytes.fromhex(entry["tree"])  # nothing released: it keeps what it has
            else:
                del source[name]  # a new skill with nothing released: not projected

    def _signed_here(self, signer: str | None, actor: str) -> bool:
        """Whether a runtime edit's sync snapshot was signed by this machine's ``actor`` key (current or kept):
        machines of a fleet share target paths (/home/alice/.claude/skills), so the path alone does not say
        whose runtime made it.  An unsigned brain's snapshots say nothing more than the path."""
        if signer is None:
            return True
        return bool(signer) and self.brain.has_key(actor, {signer, signer.lower()})

    def _visible(self, skills: Mapping[str, bytes]) -> dict[str, bytes]:
        """``skills`` less those the head's supply record withholds: no runtime gets them."""
        hidden = self.brain.supply().withheld()
        return {k: t for k, t in skills.items() if k not in hidden}

    # ------------------------------------------------------------------ phase 2: project

    def _project(self, p: Pass, committed: bytes | None) -> None:
        m, source = p.manifest, self._source(committed, p)
        index = self._category_index() if p.target.layout == "hermes" else {}
        steps: dict[str, dict[str, Any]] = {}
        for key in sorted({k for k in source if p.target.includes(k)} | set(m.skills)):
            if key in m.conflicts or (key in p.dirs and key not in p.state):
                continue  # in conflict, or unreadable (a link inside): never replaced
            lt, entry = source.get(key), m.skills.get(key)
            t = p.state[key][0] if key in p.state else None
            may = key in p.may_replace or (entry is not None and t == m.files(key))
            if entry is not None and lt is not None and entry.get("tree") == lt.hex() and t == m.files(key):
                if key in p.state and p.state[key][1] != m.stats.get(key):
                    m.stats_dirty = True
                    m.stats[key] = p.state[key][1]  # re-hashed this pass: keep the fresher stat entries
                continue
            if lt is None:
                if entry is not None and t is not None and may:
                    steps[p.fs.new_name()] = {
                        "key": key,
                        "dir": p.dirs[key],
                        "old": hexmap(t),
                        "new": None,
                        "tree": None,
                        **({"keep": True} if key in p.keep_displaced else {}),
                    }
                elif entry is not None and t is None:
                    p.manifest.dirty = True
                    m.skills.pop(key)
                continue
            l_files = self.brain.files(lt)
            rel = p.dirs.get(key) or (f"{index[key]}/{key}" if key in index else key)
            if t == l_files:
                p.manifest.dirty = True
                m.skills[key] = {"dir": rel, "tree": lt.hex(), "files": hexmap(t)}
                m.stats[key], m.stats_dirty = p.state[key][1], True
            elif t is not None and any(d.startswith(rel + "/") for d in p.dirs.values()):
                # A skill whose folder holds other skills (a Hermes category inside it): replacing the folder
                # whole would carry them away, so it is not replaced, and that is said.
                p.report["left_alone"].append(
                    {
                        "dir": rel,
                        "reason": f"skill {key} is not projected: its folder "
                        "holds other skills, which a whole-folder exchange would take "
                        "away; move them to a category folder of their own",
                    }
                )
            elif t is None or may:  # else an edit not recorded (refused, or unmanaged): left as it is
                steps[p.fs.new_name()] = {
                    "key": key,
                    "dir": rel,
                    "old": hexmap(t) if t is not None else None,
                    "new": hexmap(l_files),
                    "tree": lt.hex(),
                    **({"keep": True} if key in p.keep_displaced else {}),
                }
        if not steps:
            return
        self.settler.journal(p, steps)  # one durable write names every step before any is taken
        order = sorted(steps.items(), key=lambda kv: kv[1]["dir"])  # a skill folder before any folder inside it
        for i in range(0, len(order), 128):  # blobs read 128 skills at a time, in one pipelined request
            chunk = order[i : i + 128]
            shas = sorted({bytes.fromhex(b) for _, info in chunk for _, b in (info["new"] or {}).values()})
            blobs = dict(zip(shas, self.brain.store.read_blobs(shas), strict=True))
            for staged, info in chunk:
                self._step(p, staged, info, blobs)

    def _category_index(self) -> dict[str, str]:
        cats = self.brain.categories_tree(self.brain.head())
        if not cats:
            return {}
        files = th.files_of(self.brain.store, cats)
        if CATEGORY_INDEX not in files:
            return {}
        return json.loads(self.brain.store.read(files[CATEGORY_INDEX][1], b"blob"))["skills"]

    def _step(self, p: Pass, staged: str, info: dict[str, Any], blobs: Mapping[bytes, bytes]) -> None:
        """Write one skill whole and rename it into place, or take one out; then settle what moved."""
        key, rel = info["key"], info["dir"]
        stats: dict[str, list] = {}
        race: tuple[dict[str, tuple[bytes, bool]], dict[str, tuple[bytes, bool]]] | None = None
        if info["new"] is None:
            p.fs.take_out(rel, staged)
        else:
            data = {path: (blobs[blob], mode == gs.MODE_EXEC) for path, (mode, blob) in binmap(info["new"]).items()}
            if info["old"] is not None:
                with contextlib.suppress(OSError, LedgerError):  # an editor's swap file goes across, never deleted
                    data = {
                        **{r: d for r, d in p.fs.read(rel, ignored=True).items() if not IN_FLIGHT.search(r)},
                        **data,
                    }
            stats = p.fs.stage(data, staged)
            if info["old"] is None:
                if p.fs.place_new(staged, rel):  # renamed whole, replacing nothing: done, nothing to settle
                    p.manifest.skills[key], p.manifest.dirty = (
                        {"dir": rel, "tree": info["tree"], "files": info["new"]},
                        True,
                    )
                    p.manifest.stats[key], p.manifest.stats_dirty = stats, True
                    p.report["projected"].append(key)
                    return
                if p.fs.holds_skill(rel):
                    p.changed = True  # a skill appeared there meanwhile: the next pass reads it
                else:  # a folder that is no skill (a Hermes category of the same name): said, never merged into
                    p.report["left_alone"].append(
                        {
                            "dir": rel,
                            "reason": f"skill {key} is not projected: {rel}/ "
                            "is already a folder that holds no SKILL.md (a category?)",
                        }
                    )
            else:
                # What is in place is read just before the exchange: edited since the pass read it, it is
                # not replaced (the next round records it); else a runtime edit landing from here to the
                # exchange is merged back three ways against these bytes (ledger.sync.keeping).
                before = _read_or_none(p, rel)
                if before is not None and state_of(before) == binmap(info["old"]):
                    race = (before, {r: data[r] for r in info["new"]})
                    pausepoint("sync.exchange")  # tests edit the target here: the edit must survive
                    p.fs.exchange(staged, rel)
                    crashpoint("sync.exchanged")
                    pausepoint("sync.exchanged")  # tests edit both folders here: the displaced one, and the new
                else:
                    p.changed = True
        outcome = self.settler.settle(p, staged, info, race)
        if outcome == "rescued" and info["new"] is not None and info["old"] is not None:
            # Exchanged in this step, and edited on both sides of the exchange: what it displaced is kept
            # aside (named), and what is in place grew from the ledger's copy, which is the base from now on.
            p.manifest.dirty = True
            p.manifest.skills[key] = {"dir": rel, "tree": info["tree"], "files": info["new"]}
            p.manifest.stats[key], p.manifest.stats_dirty = stats, True
            p.report["projected"].append(key)
        elif outcome == "done" and info["new"] is not None:
            p.manifest.dirty = True
            p.manifest.stats[key], p.manifest.stats_dirty = stats, True
            p.report["projected"].append(key)
        elif outcome == "done":
            p.report["removed"].append(key)
        elif key in p.recorded and info["old"] is not None and info["new"] is not None:
            # Edited again meanwhile.  The state just recorded is the base from now on, with the tree that
            # holds exactly it: that record's own (never a later head: a brain write landed since must not
            # look like the target's to undo), or for a merged record, the target's state kept as a tree.
            rec = p.recording.get(key, {})
            tree = rec.get("base_tree") if rec.get("merged") else rec.get("tree")
            if tree is not None and binmap(rec["state"]) == binmap(info["old"]):
                p.manifest.dirty = True
                p.manifest.skills[key] = {"dir": rel, "tree": tree, "files": info["old"]}


def _read_or_none(p: Pass, rel: str) -> dict[str, tuple[bytes, bool]] | None:
    try:
        return p.fs.read(rel)
    except (OSError, LedgerError):
        return None


def _merge_reports(into: dict[str, Any], more: dict[str, Any]) -> None:
    """A later round's report of a target into the first round's (``more`` may still be filled in)."""
    for key in ("recorded", "projected", "removed", "rescued"):
        into[key] += more[key]
        more[key] = into[key]
    into["left_alone"] = more["left_alone"]
    into["ignored_held"] = more["ignored_held"]
    into["status"] = more["status"]
    for key in ("reason", "hint"):
        if key in more:
            into[key] = more[key]
