"""Paired, pre-registered evaluations of a skill's versions, recorded as evidence (issue 47).

- :meth:`Evaluations.plan`: the plan (docs/lineage/evaluations.md): the eval set's digest and cases, the
  baseline, the run count, the runner's and grader's commands and declared identities, the decision
  rule; one signed entry of the evidence log, written once (the same parameters again write nothing);
- :meth:`Evaluations.run`: every case × {with_skill, baseline} × run of the skill's current plan, each in
  a fresh sandbox (:mod:`ledger.evals.runner`), written as the agentskills workspace
  (:mod:`ledger.evals.workspace`) and recorded as ONE batch of v3 records, a failed or timed-out run
  included (score 0), never dropped;
- :meth:`Evaluations.import_workspace`: a workspace written elsewhere (skill-creator's, by hand), every run
  recorded under no plan (not pre-registered), its files checked and grading.json hashed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ledger.errors import LedgerError, UsageError
from ledger.evals import workspace as ws
from ledger.evals.evalset import (
    EVALS_DIR,
    EVALS_JSON,
    Case,
    EvalError,
    EvalSet,
    case_text,
    parse_evals,
)
from ledger.evals.runner import Sandbox, contract_env, run_command
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.write.writepath import read_regular

if TYPE_CHECKING:
    from ledger.brain import Brain
    from ledger.brain.evidence import Served

__all__ = ["DEFAULT_GRADER", "DEFAULT_RUNNER", "Evaluations"]

# $PATH starts with the folder of the ledger's own Python in every run (ledger.evals.runner), so these run it
DEFAULT_RUNNER = {"command": "python -m ledger.evals.refrunner", "id": "brain-ledger reference-runner 1"}
DEFAULT_GRADER = {"command": "python -m ledger.evals.refgrader", "id": "brain-ledger reference-grader 1"}
MAX_COMMAND = 4096
DEFAULT_TIMEOUT = 600.0  # seconds per run


@dataclass
class Version:
    """A skill version's files, as a run copies them: rel → (bytes, executable)."""

    served: Served
    files: dict[str, tuple[bytes, bool]]
    set_digest: str | None


class Evaluations:
    def __init__(self, brain: Brain) -> None:
        self.brain = brain

    # ------------------------------------------------------------------ reading

    def version(self, name: str, version: int | None = None) -> Version:
        ev = self.brain.evidence
        served = ev.served(name, version)
        store = self.brain.store
        tree = ev._snapshot(served.commit)[1][served.skill]
        files = {
            rel: (store.read(sha, b"blob"), mode == gs.MODE_EXEC)
            for rel, (mode, sha) in th.files_of(store, tree).items()
        }
        return Version(served, files, self.brain.evals_digest(tree))

    def evalset(self, v: Version) -> EvalSet:
        if v.set_digest is None or EVALS_JSON not in v.files:
            raise EvalError(
                f"{v.served.skill} v{v.served.version} has no {EVALS_JSON}",
                hint="add the skill's test cases (the agentskills guide's shape): 'ledger skill "
                f"write-file {v.served.skill} {EVALS_JSON} --from evals.json'",
            )
        return parse_evals(v.files[EVALS_JSON][0], set(v.files))

    def current_plan(self, name: str) -> Any | None:
        """The skill's newest plan entry (the one its runs go under), or None.  Acting with any key but an
        agent's, only a plan a verifier, user or curator key signed (ledger.evals.gate.trusted_plans): an
        agent's plan names the runner and grader commands this key would run and sign."""
        from ledger.evals import gate  # the gate reads the brain: imported when used, as the CLI does

        plans = self.brain.evidence.plans(name)
        if self.brain.attribution["actor"] != "agent":
            roles = self.brain.trust().active
            plans = [p for p in plans if roles.get(p.body["signer"]) in gate.RELEASERS]
        return plans[-1] if plans else None

    # ------------------------------------------------------------------ plan

    def plan(
        self,
        name: str,
        *,
        runner: str | None = None,
        grader: str | None = None,
        runner_id: str | None = None,
        grader_id: str | None = None,
        baseline: str = "none",
        runs: int = 1,
        min_lift: float = 0.0,
    ) -> tuple[Any | None, Any, bool]:
        """Register the plan of ``name``'s evaluations (its head version's eval set): ``(receipt or None,
        entry, written)``; the same parameters as the current plan return it and write nothing."""
        v = self.version(name)
        cases = self.evalset(v)
        cases.gradable()
        if baseline not in ("none", "previous"):
            raise UsageError(f"--baseline is none or previous, not {baseline!r}")
        if not 1 <= runs <= ws.MAX_RUNS:
            raise UsageError(f"--runs is 1..{ws.MAX_RUNS}, not {runs}")
        if not -1 <= min_lift <= 1:
            raise UsageError(f"--min-lift is a pass-rate difference in [-1, 1], not {min_lift}")
        fields = {
            "skill": v.served.skill,
            "set": v.set_digest,
            "cases": cases.ids(),
            "baseline": baseline,
            "runs": runs,
            "runner": _party("runner", runner, runner_id, DEFAULT_RUNNER),
            "grader": _party("grader", grader, grader_id, DEFAULT_GRADER),
            "min_lift": min_lift,
        }
        current = self.current_plan(v.served.skill)
        if current is not None:
            held = {k: current.body[k] for k in fields if k != "min_lift"}
            if {**held, "min_lift": current.body["rule"]["min_lift"]} == fields:
                return None, current, False
        receipt, entry = self.brain.evidence.add_plan(fields)
        return receipt, entry, True

    # ------------------------------------------------------------------ run

    def run(
        self,
        name: str,
        version: int | None = None,
        *,
        runner: str | None = None,
        grader: str | None = None,
        baseline: str | None = None,
        runs: int | None = None,
        workspace: Path | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        note: str = "",
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Run the current plan on ``name`` at ``version`` (None: the head's) and record it as one batch."""
        v = self.version(name, version)
        skill, under = v.served.skill, v.served.version
        cases = self.evalset(v)
        cases.gradable()
        plan = self.current_plan(skill)
        if plan is None:
            raise EvalError(
                f"{skill} has no plan a verifier, user or curator key signed: runs are recorded under "
                "a plan made before them (an agent's plan is not run with another key)",
                hint=f"run 'ledger eval plan {skill}' first (pre-registration)",
            )
        p = plan.body
        pid = plan.id.hex()
        if p["set"] != v.set_digest:
            raise EvalError(
                f"{skill} v{under}'s eval set ({v.set_digest}) is not the one plan {pid[:12]} registered "
                f"({p['set']}): results under a changed eval set need a new plan",
                hint=f"run 'ledger eval plan {skill}' to register the changed set, then run again",
            )
        if p["cases"] != cases.ids():
            # a plan is any signed list (outcome import takes one made elsewhere): its grid is what gets recorded,
            # so a plan that is not of this set's cases would have every run made, then the batch refused
            raise EvalError(
                f"plan {pid[:12]} registers case(s) {', '.join(p['cases'])[:300]}, but {skill} v{under}'s "
                f"eval set has {', '.join(cases.ids())[:300]}: a plan's cases are its eval set's, in "
                "order; nothing was run",
                hint=f"run 'ledger eval plan {skill}' to register the set's cases, then run again",
            )
        for what, given, party in (("runner", runner, p["runner"]), ("grader", grader, p["grader"])):
            if given is not None and given != party["command"]:
                raise EvalError(
                    f"--{what} is not plan {pid[:12]}'s {what} ({party['command'][:120]!r}): results "
                    f"under another {what} need a new plan",
                    hint=f"run 'ledger eval plan {skill} --{what} CMD --{what}-id TEXT' first",
                )
        if runs is not None and runs != p["runs"]:
            raise EvalError(
                f"plan {pid[:12]} registered {p['runs']} run(s) per case and condition, not {runs}",
                hint="omit --runs, or register a new plan with 'ledger eval plan --runs N'",
            )
        condition, arm, base = self._baseline(skill, under, p["baseline"], baseline, pid)
        self.brain.evidence._key()  # the acting key signs every run: refused now, before anything runs or is written
        root = (workspace or self.brain.control / "evals" / f"{skill}-workspace").resolve()
        brain_root, control = self.brain.root.resolve(), self.brain.control.resolve()
        if root.is_relative_to(brain_root) and not root.is_relative_to(control):
            raise UsageError(
                f"--workspace {root} is inside the brain's working tree, where its runs' files would "
                "become a skill's at the next write",
                hint=f"give a folder outside the brain, or omit --workspace (.ledger/evals/{skill}-workspace)",
            )
        try:
            iteration = ws.claim_iteration(root)
        except OSError as exc:
            raise EvalError(
                f"cannot make the workspace's next iteration in {root}: {exc.strerror}; nothing was run",
                hint="give --workspace a folder this user can write",
            ) from None
        n = p["runs"]
        grid = [(c, cond, r) for c in cases.cases for r in range(n) for cond in ("with_skill", condition)]
        rows, cells, shown = [], [], []
        for done, (case, cond, r) in enumerate(grid):
            arm_v = v if cond == "with_skill" else base
            figures = self._cell(root, iteration, v, case, cond, r, n, arm_v, p, timeout)
            cells.append(ws.RunCell(cond, figures["grading"].pass_rate, figures["ms"], figures["tokens"]))
            g = figures["grading"]
            shown.append(
                {
                    "case": case.key,
                    "condition": cond,
                    "run": r,
                    "passed": g.passed,
                    "total": g.total,
                    "pass": g.passed == g.total,
                    "failure": figures["failure"],
                    "ms": figures["ms"],
                    "tokens": figures["tokens"],
                    "grading": figures["uri"],
                }
            )
            rows.append(
                self._row(
                    v.served,
                    case,
                    g,
                    figures,
                    {
                        "plan": pid,
                        "set": v.set_digest,
                        "case": case.key,
                        "run": r,
                        "condition": cond,
                        "arm": under if cond == "with_skill" else arm,
                        "runner": p["runner"]["id"],
                        "grader": p["grader"]["id"],
                        "tokens": figures["tokens"],
                        "ms": figures["ms"],
                    },
                )
            )
            if progress:
                progress(done + 1, len(grid))
        bench = ws.benchmark(cells, condition)
        _put(root / f"iteration-{iteration}" / "benchmark.json", ws.dump(bench))
        receipt = self.brain.evidence.record_runs(
            rows, note or f"eval: {skill} v{under} under plan {pid[:12]} ({len(rows)} runs)"
        )
        return {
            "skill": skill,
            "version": under,
            "plan": pid,
            "baseline": condition,
            "arm": arm,
            "workspace": str(root),
            "iteration": iteration,
            "runs": shown,
            "benchmark": bench,
            "receipt": receipt,
        }

    def stale(self, name: str) -> list[int]:
        """The versions of ``name`` whose evaluations all declare another runner or grader identity than the
        skill's current plan (evidence kept, never summed with the new: docs/lineage/evaluations.md), oldest first."""
        plan = self.current_plan(self.brain.resolve(name))
        if plan is None:
            raise EvalError(
                f"{name} has no plan, so nothing of it is stale", hint=f"run 'ledger eval plan {name}' first"
            )
        now = (plan.body["runner"]["id"], plan.body["grader"]["id"])
        seen: dict[int, bool] = {}
        for entry in self.brain.evidence.parsed():
            rec = entry.body if entry.kind == "record" else None
            if rec is None or rec["skill"] != plan.body["skill"] or not rec.get("eval"):
                continue
            e = rec["eval"]
            seen[rec["version"]] = seen.get(rec["version"], False) or (e["runner"], e["grader"]) == now
        return sorted(v for v, current in seen.items() if not current)

    def rerun_stale(self, name: str, **options: Any) -> dict[str, Any]:
        """:meth:`run` each :meth:`stale` version under the current plan (one batch each); a version whose
        eval set is not the plan's is skipped, said why (it needs a plan of its own set)."""
        skill = self.brain.resolve(name)
        done, skipped = [], []
        pid = self.current_plan(skill).id.hex()  # stale() refused a skill without one
        for version in self.stale(skill):
            v = self.version(skill, version)
            if v.set_digest != self.current_plan(skill).body["set"]:
                skipped.append({"version": version, "reason": f"its eval set is not plan {pid[:12]}'s"})
                continue
            done.append(self.run(skill, version, **options))
        return {"skill": skill, "plan": pid, "rerun": done, "skipped": skipped}

    def _baseline(
        self, skill: str, under: int, planned: str, given: str | None, pid: str
    ) -> tuple[str, int | None, Version | None]:
        if planned == "none":
            if given not in (None, "none"):
                raise EvalError(
                    f"plan {pid[:12]} compares with the skill absent (baseline none), not with a version",
                    hint="omit --baseline, or register a plan with '--baseline previous'",
                )
            return "without_skill", None, None
        if given == "none":
            raise EvalError(
                f"plan {pid[:12]} compares with a previous version, not with the skill absent",
                hint="omit --baseline, or register a plan with '--baseline none'",
            )
        if given is None:
            older = [
                h["version"] for h in self.brain.history(skill) if h["action"] != "delete" and h["version"] < under
            ]
            if not older:
                raise EvalError(
                    f"{skill} v{under} has no earlier version to compare with (plan {pid[:12]}: previous)",
                    hint="evaluate a later version, or plan with '--baseline none'",
                )
            arm = max(older)
            from ledger.evals import gate

            found = gate.read(self.brain, [skill]).get(skill)  # with the gate on: the released predecessor, never a
            if found is not None and found.released is not None and found.released < under:  # held version
                arm = found.released
        else:
            try:
                arm = int(given)
            except ValueError:
                raise UsageError(f"--baseline is none or a VERSION number, not {given!r}") from None
            if not 1 <= arm < under:
                raise EvalError(f"the baseline version is earlier than v{under}, not v{arm}")
        return "old_skill", arm, self.version(skill, arm)

    def _cell(
        self,
        root: Path,
        iteration: int,
        v: Version,
        case: Case,
        cond: str,
        r: int,
        n: int,
        arm: Version | None,
        p: Mapping[str, Any],
        timeout: float,
    ) -> dict[str, Any]:
        where = ws.cell_dir(root, iteration, case.key, cond, r, n)
        failure = None
        with Sandbox() as box:
            box.add_inputs({rel: v.files[rel][0] for rel in case.files})
            skill_dir = box.add_folder("skill", _without_evals(arm.files)) if arm is not None else None
            env = contract_env(
                inputs=box.inputs,
                prompt=case.prompt,
                case=case.key,
                outputs=box.outputs,
                skill=skill_dir,
                timing=box.timing,
            )
            done = run_command(p["runner"]["command"], env, box.inputs, timeout)
            tokens, ms = None, done.ms
            if done.ok and os.path.lexists(box.timing):
                try:
                    raw = read_regular(box.timing, ws.MAX_TIMING, "the runner's timing.json")
                    t = ws.parse_timing(raw, "the runner's timing.json")
                    tokens, ms = t.total_tokens, t.duration_ms
                except LedgerError as exc:
                    failure = f"the runner wrote a bad timing.json: {exc.message}"
            elif not done.ok:
                failure = f"the runner {done.why(timeout)}"
            if failure is None:
                graded = self._grade(v, case, env, p, timeout)
                what = f"the grader's output for eval {case.key} ({cond}, run {r + 1})"
                if not graded.ok:
                    raise EvalError(
                        f"the grader {graded.why(timeout)} on eval {case.key} ({cond}, run {r + 1}): "
                        "nothing was recorded",
                        hint=f"fix the grader; the runs so far are in {root}/"
                        f"iteration-{iteration}; run again (a new iteration)",
                    )
                data = graded.stdout
                try:
                    grading = ws.parse_grading(data, what, case.assertions)
                except EvalError as exc:
                    raise EvalError(f"{exc.message}; nothing was recorded", hint=exc.hint) from None
            else:
                results = [{"text": a, "passed": False, "evidence": failure} for a in case.assertions]
                data = ws.dump(
                    {
                        "assertion_results": results,
                        "summary": {"passed": 0, "failed": len(results), "total": len(results), "pass_rate": 0.0},
                    }
                )
                grading = ws.parse_grading(data)
            # the run's folder in the workspace is made only now, by the ledger, and written without following
            # anything: the runner was never told where it is
            _new_cell(root, where)
            _copy_tree(box.outputs, where / "outputs")
            _put(where / "timing.json", ws.timing_bytes(tokens, ms))
            _put(where / "grading.json", data)
        return {
            "grading": grading,
            "ms": ms,
            "tokens": tokens,
            "failure": failure,
            "uri": ws.evidence_uri(iteration, case.key, cond, r, n),
            "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
        }

    def _grade(self, v: Version, case: Case, env: Mapping[str, str], p: Mapping[str, Any], timeout: float) -> Any:
        """Run the plan's grader in a sandbox of its own, made after the runner ended: its working directory an
        empty fresh folder, $EVAL_SET and the assertions beside it.  The runner ran the skill under test's code,
        which may have written anything into the run's sandbox (a ``ledger/evals/refgrader.py`` in the working
        directory shadows the one ``python -m`` would find); nothing of it may become the instrument."""
        evals = {rel[len(EVALS_DIR) + 1 :]: f for rel, f in v.files.items() if rel.startswith(EVALS_DIR + "/")}
        with Sandbox() as g:
            genv = dict(
                env, EVAL_SET=str(g.add_folder("evals", evals)), EVAL_ASSERTIONS=str(g.root / "assertions.json")
            )
            (g.root / "assertions.json").write_text(json.dumps(list(case.assertions), ensure_ascii=False))
            return run_command(p["grader"]["command"], genv, g.inputs, timeout)

    def _row(
        self, served: Served, case: Case, g: ws.Grading, figures: Mapping[str, Any], eval_: dict[str, Any]
    ) -> dict[str, Any]:
        fields = {
            "task": case.key,
            "task_digest": case.digest,
            "score": g.passed,
            "scale": (0, g.total),
            "threshold": g.total,
            "evidence": figures["uri"],
            "evidence_digest": figures["digest"],
            "verifier": eval_["grader"],
            "time": None,
            "eval": eval_,
        }
        return self.brain.evidence.unsigned(served, fields, "score")

    # ------------------------------------------------------------------ import

    def import_workspace(
        self,
        path: Path,
        name: str,
        version: int | None = None,
        *,
        iteration: int | None = None,
        runner_id: str = "undeclared",
        grader_id: str = "undeclared",
        baseline: int | None = None,
        set_digest: str | None = None,
        note: str = "",
    ) -> dict[str, Any]:
        """Record every run of ``path``'s iteration (default: its newest) as one batch under no plan."""
        v = self.version(name, version)
        skill, under = v.served.skill, v.served.version
        cases = self.evalset(v)
        if set_digest is not None and set_digest != v.set_digest:
            raise EvalError(
                f"the workspace was run against eval set {set_digest}, but {skill} v{under}'s is "
                f"{v.set_digest}: its results are not of this version's cases",
                hint="import it against the version whose evals/ it ran",
            )
        for what, text in (("--runner-id", runner_id), ("--grader-id", grader_id)):
            _text(what, text, 512)
        self.brain.evidence._key()  # the acting key signs every run: refused before anything is read
        have = ws.iterations(path)
        if not have:
            raise EvalError(
                f"{path} holds no iteration-K folder: not an agentskills workspace",
                hint="give the workspace folder (it holds iteration-1/, …)",
            )
        k = iteration if iteration is not None else have[-1]
        it = path / f"iteration-{k}"
        if k not in have:
            raise EvalError(f"{path} has no iteration-{k}", hint=f"its iterations: {', '.join(map(str, have))}")
        _no_link(it)
        evals = sorted(p for p in it.iterdir() if p.is_dir() and p.name.startswith("eval-"))
        for d in evals:
            _no_link(d)
        if not evals:
            raise EvalError(f"{it} holds no eval-ID folder")
        arm = None
        rows, cells, shown, conds = [], [], [], set()
        taken: dict[str, str] = {}
        for d in evals:
            case = self._case_of(d, cases, f"{skill} v{under}")
            if case.key in taken:
                raise EvalError(f"{d.name} and {taken[case.key]} are both case {case.key}: one folder per case")
            taken[case.key] = d.name
            present = sorted(c for c in ws.CONDITIONS if (d / c).is_dir())
            other = sorted(p.name for p in d.iterdir() if p.is_dir() and p.name not in ws.CONDITIONS)
            if other:  # a run of a condition this ledger does not know (skill-creator's new_skill/): never ignored
                raise EvalError(
                    f"{d}: {', '.join(other)}/ is no condition of the guide (with_skill/, "
                    "without_skill/, old_skill/): its runs would be left out; nothing was recorded",
                    hint="import a workspace whose eval folders hold the guide's conditions only",
                )
            for c in present:
                _no_link(d / c)
            base = [c for c in present if c != "with_skill"]
            if "with_skill" not in present or len(base) != 1:
                raise EvalError(
                    f"{d}: a pair is with_skill/ and one of without_skill/, old_skill/ "
                    f"(found: {', '.join(present) or 'neither'})"
                )
            conds.add(base[0])
            if len(conds) > 1:
                raise EvalError(f"{it} mixes without_skill/ and old_skill/ baselines: one iteration, one baseline")
            if base[0] == "old_skill" and arm is None:
                arm = self._old_arm(skill, under, baseline)
            runs = {c: ws.run_folders(d / c) for c in ("with_skill", base[0])}
            if len(runs["with_skill"]) != len(runs[base[0]]):
                raise EvalError(
                    f"{d}: with_skill has {len(runs['with_skill'])} run(s), {base[0]} "
                    f"{len(runs[base[0]])}: every run has its pair"
                )
            for cond, folders in runs.items():
                for r, folder in folders:
                    g, t, data = self._read_run(folder, case)
                    uri = (folder / "grading.json").relative_to(path).as_posix()
                    figures = {"uri": uri, "digest": "sha256:" + hashlib.sha256(data).hexdigest()}
                    rows.append(
                        self._row(
                            v.served,
                            case,
                            g,
                            figures,
                            {
                                "plan": None,
                                "set": v.set_digest,
                                "case": case.key,
                                "run": r,
                                "condition": cond,
                                "arm": under if cond == "with_skill" else arm,
                                "runner": runner_id,
                                "grader": grader_id,
                                "tokens": t.total_tokens,
                                "ms": t.duration_ms,
                            },
                        )
                    )
                    cells.append(ws.RunCell(cond, g.pass_rate, t.duration_ms, t.total_tokens))
                    shown.append(
                        {
                            "case": case.key,
                            "condition": cond,
                            "run": r,
                            "passed": g.passed,
                            "total": g.total,
                            "pass": g.passed == g.total,
                            "grading": uri,
                        }
                    )
        (condition,) = conds
        self._not_imported(rows)
        receipt = self.brain.evidence.record_runs(
            rows, note or f"eval: imported {len(rows)} runs of {skill} v{under} from a workspace (no plan)"
        )
        return {
            "skill": skill,
            "version": under,
            "plan": None,
            "baseline": condition,
            "arm": arm,
            "iteration": k,
            "workspace": str(path),
            "runs": shown,
            "benchmark": ws.benchmark(cells, condition),
            "receipt": receipt,
        }

    def _not_imported(self, rows: list[dict[str, Any]]) -> None:
        """Refuse runs already recorded (imported, or recorded by 'eval run' under a plan): the same cell of
        the same version (case, run, condition), the same grading.json (path and digest) and timing.  Imported
        again they would double the lift's pairs, and narrow its interval, with no new evidence."""

        def key(rec: Mapping[str, Any]) -> tuple[Any, ...]:
            e = rec["eval"]
            return (
                rec["skill"],
                rec["version"],
                e["case"],
                e["run"],
                e["condition"],
                rec["evidence"]["uri"],
                rec["evidence"]["digest"],
                e["ms"],
                e["tokens"],
            )

        mine = {key(r) for r in rows}
        for entry in self.brain.evidence.parsed():
            if entry.kind == "record" and entry.eval is not None and key(entry.body) in mine:
                rec = entry.body
                raise EvalError(
                    f"the workspace's {rec['evidence']['uri']} is already recorded for "
                    f"{rec['skill']} v{rec['version']} (outcome {entry.id.hex()[:12]}): imported "
                    "again, its runs would count twice; nothing was recorded",
                    hint="import only new iterations (--iteration K)",
                )

    @staticmethod
    def _case_of(d: Path, cases: EvalSet, what: str) -> Case:
        """The case of an ``eval-…`` folder: ``eval-ID``, or (skill-creator names them descriptively, as the
        guide's ``eval-top-months-chart``) the ``eval_id`` of its ``eval_metadata.json`` (skill-creator writes
        one per eval folder: ``eval_id``, ``eval_name``, ``prompt``, ``assertions``); a folder named for one
        case whose metadata names another is refused."""
        key = d.name[len("eval-") :]
        meta = d / "eval_metadata.json"
        if meta.is_file():
            _no_link(meta)
            try:
                doc = ws.load(_read(meta, 64 * 1024), str(meta))
                named = case_text(doc["eval_id"])
            except (ValueError, KeyError, TypeError, UnicodeDecodeError, EvalError) as exc:
                raise EvalError(f'{meta} does not name its case ({{"eval_id": ID}}): {exc}') from None
            if key in cases.ids() and key != named:
                raise EvalError(
                    f"{d.name} is case {key}, but its eval_metadata.json says eval_id {named}: which "
                    "case it ran is ambiguous; nothing was recorded",
                    hint="make the folder name and eval_metadata.json agree",
                )
            key = named
        if key not in cases.ids():
            raise EvalError(
                f"{d.name}: {what}'s eval set has no case {key!r}",
                hint=f"its cases: {', '.join(cases.ids())}; name the folder eval-ID, or give it an "
                'eval_metadata.json {"eval_id": ID}',
            )
        return cases.case(key)

    def _old_arm(self, skill: str, under: int, given: int | None) -> int:
        if given is not None:
            if not 1 <= given < under:
                raise EvalError(f"the baseline version is earlier than v{under}, not v{given}")
            return given
        older = [h["version"] for h in self.brain.history(skill) if h["action"] != "delete" and h["version"] < under]
        if not older:
            raise EvalError(
                f"the workspace's old_skill/ runs need an earlier version of {skill} than v{under}",
                hint="import against a later version, or name it with --baseline VERSION",
            )
        return max(older)

    @staticmethod
    def _read_run(folder: Path, case: Case) -> tuple[ws.Grading, ws.Timing, bytes]:
        _no_link(folder)
        for need, is_dir in (("outputs", True), ("timing.json", False), ("grading.json", False)):
            p = folder / need
            _no_link(p)
            if not (p.is_dir() if is_dir else p.is_file()):
                raise EvalError(
                    f"{p} is missing: every run of a workspace holds outputs/, timing.json and "
                    "grading.json; nothing was recorded",
                    hint="import a complete workspace (the agentskills guide's layout)",
                )
        data = _read(folder / "grading.json", ws.MAX_GRADING)
        g = ws.parse_grading(data, str(folder / "grading.json"), case.assertions, creator=True)
        t = ws.parse_timing(_read(folder / "timing.json", ws.MAX_TIMING), str(folder / "timing.json"))
        return g, t, data


def _no_link(path: Path) -> None:
    """Refuse a symbolic link inside an imported workspace: its runs are read where the records' evidence
    URIs say, never through a link to elsewhere."""
    if path.is_symlink():
        raise EvalError(
            f"{path} is a symbolic link: a workspace's runs are read inside it, never through a "
            "link; nothing was recorded",
            hint="copy what the link points to into the workspace",
        )


def _read(path: Path, limit: int) -> bytes:
    """A workspace file's bytes: a regular file of at most ``limit`` bytes (never a link, FIFO or device)."""
    try:
        return read_regular(path, limit, str(path))
    except LedgerError as exc:
        raise EvalError(f"{exc.message}; nothing was recorded") from None


def _new_cell(root: Path, where: Path) -> None:
    """Make a run's folder under ``root`` (existing parents: real folders, never links); the folder itself is
    new (an existing one is something else's)."""
    rel = where.relative_to(root).parts
    for i in range(1, len(rel)):
        parent = root.joinpath(*rel[:i])
        if parent.is_symlink():
            raise EvalError(
                f"{parent} is a symbolic link: something other than the ledger wrote into the "
                "workspace during the run; nothing was recorded"
            )
        parent.mkdir(exist_ok=True)
    try:
        where.mkdir()
    except FileExistsError:
        raise EvalError(
            f"{where} exists already: something other than the ledger wrote into the workspace "
            "during the run; nothing was recorded"
        ) from None


def _put(path: Path, data: bytes | BinaryIO, mode: int = 0o644) -> None:
    """Write a new file of the workspace: created here (``O_EXCL``), never through a link (``O_NOFOLLOW``)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except FileExistsError:
        raise EvalError(
            f"{path} exists already: something other than the ledger wrote into the workspace "
            "during the run; nothing was recorded"
        ) from None
    with os.fdopen(fd, "wb") as f:
        if isinstance(data, bytes):
            f.write(data)
        else:
            shutil.copyfileobj(data, f)


MAX_OUTPUT_DEPTH = 64  # folder levels of a run's outputs copied into the workspace


def _copy_tree(src: Path, dest: Path) -> None:
    """Copy a run's outputs into the workspace: folders (to :data:`MAX_OUTPUT_DEPTH` levels) and regular files,
    a link as a link (never followed), anything else (a FIFO, a socket, a device, what cannot be read) left
    out.  Iterative: a runner's folder nested thousands deep is no RecursionError."""
    dest.mkdir()
    if src.is_symlink() or not src.is_dir():
        return
    stack = [(src, dest, 0)]
    while stack:
        here, there, level = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            to = there / entry.name
            try:
                if entry.is_symlink():
                    os.symlink(os.readlink(entry.path), to)
                elif entry.is_dir(follow_symlinks=False):
                    if level + 1 < MAX_OUTPUT_DEPTH:
                        to.mkdir()
                        stack.append((Path(entry.path), to, level + 1))
                elif entry.is_file(follow_symlinks=False):
                    fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
                    with os.fdopen(fd, "rb") as f:
                        st = os.fstat(fd)
                        if stat.S_ISREG(st.st_mode):
                            _put(to, f, 0o755 if st.st_mode & 0o111 else 0o644)
            except OSError:  # swapped since the scan, or a name too long: left out
                continue


def _without_evals(files: Mapping[str, tuple[bytes, bool]]) -> dict[str, tuple[bytes, bool]]:
    """A skill's files less its ``evals/``: the runner with the skill must not read the assertions and
    graders that the runner without it cannot (the comparison would not be of the skill alone)."""
    return {rel: f for rel, f in files.items() if not rel.startswith(EVALS_DIR + "/")}


def _party(what: str, command: str | None, ident: str | None, default: Mapping[str, str]) -> dict[str, str]:
    if command is None:
        if ident is not None:
            raise UsageError(
                f"--{what}-id declares the identity of a --{what} you give; the reference {what} "
                f"declares its own ({default['id']!r})"
            )
        return dict(default)
    _text(f"--{what}", command, MAX_COMMAND)
    _no_secret(f"--{what}", command)
    if ident is None:
        raise UsageError(
            f"--{what} needs --{what}-id: the {what}'s declared identity (runtime, model, harness and "
            "their versions, e.g. 'claude-code 2.1 / claude-sonnet-4-5'), which every record "
            "binds"
        )
    _text(f"--{what}-id", ident, 512)
    return {"command": command, "id": ident}


# A command is signed into a plan, anchored and replicated: a literal secret in it would be published for good.
# A secret-named variable or flag given a literal value, or a token with a known secret prefix, is refused; a
# reference to the environment ("$VAR", "${VAR}") is what a command should hold instead.
_SECRET_NAME = r"(?:[A-Za-z0-9]+_)*(?:KEY|TOKEN|SECRET|PASSWORD|PASSPHRASE|PASSWD|CREDENTIALS?)(?:_[A-Za-z0-9]+)*"
_SECRETS = re.compile(
    rf"(?:^|[\s;&|(])(?:{_SECRET_NAME})=(?![\"']?\$)\S"  # NAME=literal
    r"|--?[A-Za-z0-9-]*(?:key|token|secret|password|passphrase|passwd)(?:=|\s+)(?![\"']?\$)[^\s-]"  # --api-key x
    r"|\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|glpat-[A-Za-z0-9_-]{16,})",
    re.IGNORECASE,
)


def _no_secret(what: str, command: str) -> None:
    m = _SECRETS.search(command)
    if m:
        found = m.group().strip().lstrip(";&|(")
        name = re.split(r"[=\s]", found)[0]
        said = name if name != found else found[:3] + "…"  # the name, or a token's kind: never the secret
        raise UsageError(
            f"{what} seems to hold a secret (at {said!r}): a command is signed into the "
            "plan, anchored and replicated, so a secret in it is published for good",
            hint='pass it through the environment instead: export it, and write "$NAME" in the command',
        )


def _text(what: str, text: str, limit: int) -> None:
    if not text.strip() or len(text) > limit or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise UsageError(f"{what} is one printable line of 1..{limit} characters")
