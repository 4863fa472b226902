"""Paired, pre-registered evaluations of a skill's versions, recorded as evidence (issue 47).

- :meth:`Evaluations.plan`: the plan (docs/lineage.md §14.10): the eval set's digest and cases, the
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger._json import unique_keys
from ledger.errors import UsageError
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
        files = {rel: (store.read(sha, b"blob"), mode == gs.MODE_EXEC)
                 for rel, (mode, sha) in th.files_of(store, tree).items()}  # fmt: skip
        return Version(served, files, th.evals_digest(store, tree, self.brain.cache))

    def evalset(self, v: Version) -> EvalSet:
        if v.set_digest is None or EVALS_JSON not in v.files:
            raise EvalError(f"{v.served.skill} v{v.served.version} has no {EVALS_JSON}",
                            hint="add the skill's test cases (the agentskills guide's shape): 'ledger skill "
                                 f"write-file {v.served.skill} {EVALS_JSON} --from evals.json'")  # fmt: skip
        return parse_evals(v.files[EVALS_JSON][0], set(v.files))

    def current_plan(self, name: str) -> Any | None:
        """The skill's newest plan entry (the one its runs go under), or None."""
        plans = self.brain.evidence.plans(name)
        return plans[-1] if plans else None

    # ------------------------------------------------------------------ plan

    def plan(self, name: str, *, runner: str | None = None, grader: str | None = None, runner_id: str | None = None,
             grader_id: str | None = None, baseline: str = "none", runs: int = 1,
             min_lift: float = 0.0) -> tuple[Any | None, Any, bool]:  # fmt: skip
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
            "skill": v.served.skill, "set": v.set_digest, "cases": cases.ids(), "baseline": baseline, "runs": runs,
            "runner": _party("runner", runner, runner_id, DEFAULT_RUNNER),
            "grader": _party("grader", grader, grader_id, DEFAULT_GRADER),
            "min_lift": min_lift,
        }  # fmt: skip
        current = self.current_plan(v.served.skill)
        if current is not None:
            held = {k: current.body[k] for k in fields if k != "min_lift"}
            if {**held, "min_lift": current.body["rule"]["min_lift"]} == fields:
                return None, current, False
        receipt, entry = self.brain.evidence.add_plan(fields)
        return receipt, entry, True

    # ------------------------------------------------------------------ run

    def run(self, name: str, version: int | None = None, *, runner: str | None = None, grader: str | None = None,
            baseline: str | None = None, runs: int | None = None, workspace: Path | None = None,
            timeout: float = DEFAULT_TIMEOUT, note: str = "",
            progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:  # fmt: skip
        """Run the current plan on ``name`` at ``version`` (None: the head's) and record it as one batch."""
        v = self.version(name, version)
        skill, under = v.served.skill, v.served.version
        cases = self.evalset(v)
        cases.gradable()
        plan = self.current_plan(skill)
        if plan is None:
            raise EvalError(f"{skill} has no plan: runs are recorded under a plan made before them",
                            hint=f"run 'ledger eval plan {skill}' first (pre-registration)")  # fmt: skip
        p = plan.body
        pid = plan.id.hex()
        if p["set"] != v.set_digest:
            raise EvalError(f"{skill} v{under}'s eval set ({v.set_digest}) is not the one plan {pid[:12]} registered "
                            f"({p['set']}): results under a changed eval set need a new plan",
                            hint=f"run 'ledger eval plan {skill}' to register the changed set, then run "
                                 "again")  # fmt: skip
        for what, given, party in (("runner", runner, p["runner"]), ("grader", grader, p["grader"])):
            if given is not None and given != party["command"]:
                raise EvalError(f"--{what} is not plan {pid[:12]}'s {what} ({party['command'][:120]!r}): results "
                                f"under another {what} need a new plan",
                                hint=f"run 'ledger eval plan {skill} --{what} CMD --{what}-id TEXT' first")  # fmt: skip
        if runs is not None and runs != p["runs"]:
            raise EvalError(f"plan {pid[:12]} registered {p['runs']} run(s) per case and condition, not {runs}",
                            hint="omit --runs, or register a new plan with 'ledger eval plan --runs N'")  # fmt: skip
        condition, arm, base = self._baseline(skill, under, p["baseline"], baseline, pid)
        self.brain.evidence._key()  # the acting key signs every run: refused now, before anything runs or is written
        root = (workspace or self.brain.control / "evals" / f"{skill}-workspace").resolve()
        iteration = ws.claim_iteration(root)
        n = p["runs"]
        grid = [(c, cond, r) for c in cases.cases for r in range(n) for cond in ("with_skill", condition)]
        rows, cells, shown = [], [], []
        for done, (case, cond, r) in enumerate(grid):
            arm_v = v if cond == "with_skill" else base
            figures = self._cell(root, iteration, v, case, cond, r, n, arm_v, p, timeout)
            cells.append(ws.RunCell(cond, figures["grading"].pass_rate, figures["ms"], figures["tokens"]))
            g = figures["grading"]
            shown.append({"case": case.key, "condition": cond, "run": r, "passed": g.passed, "total": g.total,
                          "pass": g.passed == g.total, "failure": figures["failure"], "ms": figures["ms"],
                          "tokens": figures["tokens"], "grading": figures["uri"]})  # fmt: skip
            rows.append(self._row(v.served, case, g, figures, {
                "plan": pid, "set": v.set_digest, "case": case.key, "run": r, "condition": cond,
                "arm": under if cond == "with_skill" else arm, "runner": p["runner"]["id"], "grader": p["grader"]["id"],
                "tokens": figures["tokens"], "ms": figures["ms"]}))  # fmt: skip
            if progress:
                progress(done + 1, len(grid))
        bench = ws.benchmark(cells, condition)
        (root / f"iteration-{iteration}" / "benchmark.json").write_bytes(ws.dump(bench))
        receipt = self.brain.evidence.record_runs(
            rows, note or f"eval: {skill} v{under} under plan {pid[:12]} ({len(rows)} runs)")
        return {"skill": skill, "version": under, "plan": pid, "baseline": condition, "arm": arm,
                "workspace": str(root), "iteration": iteration, "runs": shown, "benchmark": bench,
                "receipt": receipt}  # fmt: skip

    def stale(self, name: str) -> list[int]:
        """The versions of ``name`` whose evaluations all declare another runner or grader identity than the
        skill's current plan (evidence kept, never summed with the new: docs/lineage.md §14.10), oldest first."""
        plan = self.current_plan(self.brain.resolve(name))
        if plan is None:
            raise EvalError(f"{name} has no plan, so nothing of it is stale",
                            hint=f"run 'ledger eval plan {name}' first")  # fmt: skip
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

    def _baseline(self, skill: str, under: int, planned: str, given: str | None,
                  pid: str) -> tuple[str, int | None, Version | None]:  # fmt: skip
        if planned == "none":
            if given not in (None, "none"):
                raise EvalError(f"plan {pid[:12]} compares with the skill absent (baseline none), not with a version",
                                hint="omit --baseline, or register a plan with '--baseline previous'")  # fmt: skip
            return "without_skill", None, None
        if given == "none":
            raise EvalError(f"plan {pid[:12]} compares with a previous version, not with the skill absent",
                            hint="omit --baseline, or register a plan with '--baseline none'")  # fmt: skip
        if given is None:
            older = [h["version"] for h in self.brain.history(skill)
                     if h["action"] != "delete" and h["version"] < under]  # fmt: skip
            if not older:
                raise EvalError(f"{skill} v{under} has no earlier version to compare with (plan {pid[:12]}: previous)",
                                hint="evaluate a later version, or plan with '--baseline none'")  # fmt: skip
            arm = max(older)
        else:
            try:
                arm = int(given)
            except ValueError:
                raise UsageError(f"--baseline is none or a VERSION number, not {given!r}") from None
            if not 1 <= arm < under:
                raise EvalError(f"the baseline version is earlier than v{under}, not v{arm}")
        return "old_skill", arm, self.version(skill, arm)

    def _cell(self, root: Path, iteration: int, v: Version, case: Case, cond: str, r: int, n: int,
              arm: Version | None, p: Mapping[str, Any], timeout: float) -> dict[str, Any]:  # fmt: skip
        where = ws.cell_dir(root, iteration, case.key, cond, r, n)
        outputs = where / "outputs"
        outputs.mkdir(parents=True)
        failure = None
        with Sandbox() as box:
            box.add_inputs({rel: v.files[rel][0] for rel in case.files})
            skill_dir = box.add_folder("skill", _without_evals(arm.files)) if arm is not None else None
            env = contract_env(inputs=box.inputs, prompt=case.prompt, case=case.key, outputs=outputs,
                               skill=skill_dir, timing=box.timing)  # fmt: skip
            done = run_command(p["runner"]["command"], env, box.inputs, timeout, box.root / "runner.log")
            tokens, ms = None, done.ms
            if done.ok and box.timing.exists():
                try:
                    t = ws.parse_timing(box.timing.read_bytes(), "the runner's timing.json")
                    tokens, ms = t.total_tokens, t.duration_ms
                except EvalError as exc:
                    failure = f"the runner wrote a bad timing.json: {exc.message}"
            elif not done.ok:
                failure = f"the runner {done.why(timeout)}"
            (where / "timing.json").write_bytes(ws.timing_bytes(tokens, ms))
            if failure is None:
                evals = {rel[len(EVALS_DIR) + 1 :]: f for rel, f in v.files.items() if rel.startswith(EVALS_DIR + "/")}
                genv = dict(env, EVAL_SET=str(box.add_folder("evals", evals)),
                            EVAL_ASSERTIONS=str(box.root / "assertions.json"))  # fmt: skip
                (box.root / "assertions.json").write_text(json.dumps(list(case.assertions), ensure_ascii=False))
                graded = run_command(p["grader"]["command"], genv, box.inputs, timeout, box.root / "grader.log")
                what = f"the grader's output for eval {case.key} ({cond}, run {r + 1})"
                if not graded.ok:
                    raise EvalError(f"the grader {graded.why(timeout)} on eval {case.key} ({cond}, run {r + 1}): "
                                    "nothing was recorded", hint=f"fix the grader; the runs so far are in {root}/"
                                    f"iteration-{iteration}; run again (a new iteration)")  # fmt: skip
                data = graded.stdout
                try:
                    grading = ws.parse_grading(data, what, case.assertions)
                except EvalError as exc:
                    raise EvalError(f"{exc.message}; nothing was recorded", hint=exc.hint) from None
            else:
                results = [{"text": a, "passed": False, "evidence": failure} for a in case.assertions]
                data = ws.dump({"assertion_results": results, "summary": {"passed": 0, "failed": len(results),
                                "total": len(results), "pass_rate": 0.0}})  # fmt: skip
                grading = ws.parse_grading(data)
        (where / "grading.json").write_bytes(data)
        return {"grading": grading, "ms": ms, "tokens": tokens, "failure": failure,
                "uri": ws.evidence_uri(iteration, case.key, cond, r, n),
                "digest": "sha256:" + hashlib.sha256(data).hexdigest()}  # fmt: skip

    def _row(self, served: Served, case: Case, g: ws.Grading, figures: Mapping[str, Any],
             eval_: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        fields = {"task": case.key, "task_digest": case.digest, "score": g.passed, "scale": (0, g.total),
                  "threshold": g.total, "evidence": figures["uri"], "evidence_digest": figures["digest"],
                  "verifier": eval_["grader"], "time": None, "eval": eval_}  # fmt: skip
        return self.brain.evidence.unsigned(served, fields, "score")

    # ------------------------------------------------------------------ import

    def import_workspace(self, path: Path, name: str, version: int | None = None, *, iteration: int | None = None,
                         runner_id: str = "undeclared", grader_id: str = "undeclared", baseline: int | None = None,
                         set_digest: str | None = None, note: str = "") -> dict[str, Any]:  # fmt: skip
        """Record every run of ``path``'s iteration (default: its newest) as one batch under no plan."""
        v = self.version(name, version)
        skill, under = v.served.skill, v.served.version
        cases = self.evalset(v)
        if set_digest is not None and set_digest != v.set_digest:
            raise EvalError(f"the workspace was run against eval set {set_digest}, but {skill} v{under}'s is "
                            f"{v.set_digest}: its results are not of this version's cases",
                            hint="import it against the version whose evals/ it ran")  # fmt: skip
        for what, text in (("--runner-id", runner_id), ("--grader-id", grader_id)):
            _text(what, text, 512)
        self.brain.evidence._key()  # the acting key signs every run: refused before anything is read
        have = ws.iterations(path)
        if not have:
            raise EvalError(f"{path} holds no iteration-K folder: not an agentskills workspace",
                            hint="give the workspace folder (it holds iteration-1/, …)")  # fmt: skip
        k = iteration if iteration is not None else have[-1]
        it = path / f"iteration-{k}"
        if k not in have:
            raise EvalError(f"{path} has no iteration-{k}", hint=f"its iterations: {', '.join(map(str, have))}")
        evals = sorted(p for p in it.iterdir() if p.is_dir() and p.name.startswith("eval-"))
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
            base = [c for c in present if c != "with_skill"]
            if "with_skill" not in present or len(base) != 1:
                raise EvalError(f"{d}: a pair is with_skill/ and one of without_skill/, old_skill/ "
                                f"(found: {', '.join(present) or 'neither'})")  # fmt: skip
            conds.add(base[0])
            if len(conds) > 1:
                raise EvalError(f"{it} mixes without_skill/ and old_skill/ baselines: one iteration, one baseline")
            if base[0] == "old_skill" and arm is None:
                arm = self._old_arm(skill, under, baseline)
            runs = {c: ws.run_folders(d / c) for c in ("with_skill", base[0])}
            if len(runs["with_skill"]) != len(runs[base[0]]):
                raise EvalError(f"{d}: with_skill has {len(runs['with_skill'])} run(s), {base[0]} "
                                f"{len(runs[base[0]])}: every run has its pair")  # fmt: skip
            for cond, folders in runs.items():
                for r, folder in folders:
                    g, t, data = self._read_run(folder, case)
                    uri = (folder / "grading.json").relative_to(path).as_posix()
                    figures = {"uri": uri, "digest": "sha256:" + hashlib.sha256(data).hexdigest()}
                    rows.append(self._row(v.served, case, g, figures, {
                        "plan": None, "set": v.set_digest, "case": case.key, "run": r, "condition": cond,
                        "arm": under if cond == "with_skill" else arm, "runner": runner_id, "grader": grader_id,
                        "tokens": t.total_tokens, "ms": t.duration_ms}))  # fmt: skip
                    cells.append(ws.RunCell(cond, g.pass_rate, t.duration_ms, t.total_tokens))
                    shown.append({"case": case.key, "condition": cond, "run": r, "passed": g.passed, "total": g.total,
                                  "pass": g.passed == g.total, "grading": uri})  # fmt: skip
        (condition,) = conds
        receipt = self.brain.evidence.record_runs(
            rows, note or f"eval: imported {len(rows)} runs of {skill} v{under} from a workspace (no plan)")
        return {"skill": skill, "version": under, "plan": None, "baseline": condition, "arm": arm, "iteration": k,
                "workspace": str(path), "runs": shown, "benchmark": ws.benchmark(cells, condition),
                "receipt": receipt}  # fmt: skip

    @staticmethod
    def _case_of(d: Path, cases: EvalSet, what: str) -> Case:
        """The case of an ``eval-…`` folder: ``eval-ID``, or (skill-creator names them descriptively, as the
        guide's ``eval-top-months-chart``) the ``eval_id`` of its ``eval_metadata.json`` (skill-creator writes
        one per eval folder: ``eval_id``, ``eval_name``, ``prompt``, ``assertions``); a folder named for one
        case whose metadata names another is refused."""
        key = d.name[len("eval-") :]
        meta = d / "eval_metadata.json"
        if meta.is_file():
            try:
                doc = json.loads(meta.read_bytes().decode("utf-8"), object_pairs_hook=unique_keys)
                named = case_text(doc["eval_id"])
            except (ValueError, KeyError, TypeError, UnicodeDecodeError, EvalError) as exc:
                raise EvalError(f"{meta} does not name its case ({{\"eval_id\": ID}}): {exc}") from None
            if key in cases.ids() and key != named:
                raise EvalError(f"{d.name} is case {key}, but its eval_metadata.json says eval_id {named}: which "
                                "case it ran is ambiguous; nothing was recorded",
                                hint="make the folder name and eval_metadata.json agree")  # fmt: skip
            key = named
        if key not in cases.ids():
            raise EvalError(f"{d.name}: {what}'s eval set has no case {key!r}",
                            hint=f"its cases: {', '.join(cases.ids())}; name the folder eval-ID, or give it an "
                                 "eval_metadata.json {\"eval_id\": ID}")  # fmt: skip
        return cases.case(key)

    def _old_arm(self, skill: str, under: int, given: int | None) -> int:
        if given is not None:
            if not 1 <= given < under:
                raise EvalError(f"the baseline version is earlier than v{under}, not v{given}")
            return given
        older = [h["version"] for h in self.brain.history(skill) if h["action"] != "delete" and h["version"] < under]
        if not older:
            raise EvalError(f"the workspace's old_skill/ runs need an earlier version of {skill} than v{under}",
                            hint="import against a later version, or name it with --baseline VERSION")  # fmt: skip
        return max(older)

    @staticmethod
    def _read_run(folder: Path, case: Case) -> tuple[ws.Grading, ws.Timing, bytes]:
        for need, is_dir in (("outputs", True), ("timing.json", False), ("grading.json", False)):
            p = folder / need
            if not (p.is_dir() if is_dir else p.is_file()):
                raise EvalError(f"{p} is missing: every run of a workspace holds outputs/, timing.json and "
                                "grading.json; nothing was recorded",
                                hint="import a complete workspace (the agentskills guide's layout)")  # fmt: skip
        data = (folder / "grading.json").read_bytes()
        g = ws.parse_grading(data, str(folder / "grading.json"), case.assertions, creator=True)
        t = ws.parse_timing((folder / "timing.json").read_bytes(), str(folder / "timing.json"))
        return g, t, data


def _without_evals(files: Mapping[str, tuple[bytes, bool]]) -> dict[str, tuple[bytes, bool]]:
    """A skill's files less its ``evals/``: the runner with the skill must not read the assertions and
    graders that the runner without it cannot (the comparison would not be of the skill alone)."""
    return {rel: f for rel, f in files.items() if not rel.startswith(EVALS_DIR + "/")}


def _party(what: str, command: str | None, ident: str | None, default: Mapping[str, str]) -> dict[str, str]:
    if command is None:
        if ident is not None:
            raise UsageError(f"--{what}-id declares the identity of a --{what} you give; the reference {what} "
                             f"declares its own ({default['id']!r})")  # fmt: skip
        return dict(default)
    _text(f"--{what}", command, MAX_COMMAND)
    if ident is None:
        raise UsageError(f"--{what} needs --{what}-id: the {what}'s declared identity (runtime, model, harness and "
                         "their versions, e.g. 'claude-code 2.1 / claude-sonnet-4-5'), which every record "
                         "binds")  # fmt: skip
    _text(f"--{what}-id", ident, 512)
    return {"command": command, "id": ident}


def _text(what: str, text: str, limit: int) -> None:
    if not text.strip() or len(text) > limit or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise UsageError(f"{what} is one printable line of 1..{limit} characters")
