"""The gate (issue 47; docs/layouts.md, "The gate"): a version of a skill with evals reaches runtimes only once
an evaluation signed by a verifier (or a user's approval) releases it; an agent's own evaluation never does.

The decisions are checked first over plain entries in the shapes of docs/lineage/evaluations.md; then end to end with
the real CLI, real git, a Claude-layout and a Hermes-layout target, and the official MCP SDK client.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ledger.brain import Brain
from ledger.evals import gate
from ledger.store import outcomes as oc
from ledger.store import treehash as th
from tests.harness.brains import make_brain
from tests.harness.cli import LEDGER, run_ledger

VERIFIER, USER, AGENT = "0x" + "11" * 20, "0x" + "22" * 20, "0x" + "33" * 20
ROLES = {VERIFIER: "verifier", USER: "user", AGENT: "agent"}
SET = "blake3-tree-v1:" + "ee" * 32


def _plan(index: int, pid: str = "p" * 64, baseline: str = "none", skill: str = "s") -> dict[str, Any]:
    return {
        "format": "brain-ledger/eval-plan/v1",
        "skill": skill,
        "set": SET,
        "cases": ["1", "2", "3"],
        "baseline": baseline,
        "runs": 1,
        "rule": {"interval": "newcombe-paired-95", "min_lift": 0},
        "index": index,
        "id": pid,
        "signer": VERIFIER,
    }


def _runs(
    index: int,
    version: int,
    with_: list[bool],
    base: list[bool],
    signer: str = VERIFIER,
    plan: str = "p" * 64,
    batch: str = "b",
) -> list[dict[str, Any]]:
    out = []
    for i, (w, b) in enumerate(zip(with_, base, strict=True)):
        for cond, passed in (("with_skill", w), ("without_skill", b)):
            out.append(
                {
                    "skill": "s",
                    "version": version,
                    "signer": signer,
                    "index": index + len(out),
                    "batch": {"id": batch + str(version)},
                    "outcome": {"result": "score", "score": 2 if passed else 1, "scale": [0, 2], "threshold": 2},
                    "eval": {
                        "plan": plan,
                        "set": SET,
                        "case": str(i + 1),
                        "run": 0,
                        "condition": cond,
                        "arm": version if cond == "with_skill" else None,
                    },
                }
            )
    return out


def _versions(*numbers: int, evals: bool = True) -> dict[int, dict[str, Any]]:
    return {v: {"digest": f"d{v}", "evals": evals, "content": f"c{v}"} for v in numbers}


T, F = True, False


def test_a_harmful_version_is_held_and_a_helpful_one_released_by_a_verifiers_evaluation() -> None:
    records = _runs(10, 1, [T, T, F], [T, F, F]) + _runs(20, 2, [F, T, F], [T, F, F]) + _runs(30, 3, [T] * 3, [T, F, F])
    g = gate.decide("s", _versions(1, 2, 3), [_plan(0)], records, [], ROLES)
    assert g.released == 3 and g.verdicts[1].released and g.verdicts[3].released
    held = g.verdicts[2]
    assert not held.released and held.regressed == ("1",) and "case 1" in held.why and "passed before" in held.why
    assert g.held() == []  # v2 is older than the released v3: nothing newer waits
    g = gate.decide("s", _versions(1, 2), [_plan(0)], records[:12], [], ROLES)
    assert g.released == 1 and [v.version for v in g.held()] == [2]


def test_an_agents_own_evaluation_and_approval_release_nothing() -> None:
    records = _runs(10, 1, [T, T, T], [F, F, F]) + _runs(20, 2, [T, T, T], [F, F, F], signer=AGENT)
    approvals = [{"skill": "s", "version": 2, "digest": "d2", "reason": "I like it", "signer": AGENT, "index": 40}]
    g = gate.decide("s", _versions(1, 2), [_plan(0)], records, approvals, ROLES)
    assert g.released == 1 and "no evaluation under plan" in g.verdicts[2].why
    wrong = [{**approvals[0], "signer": USER, "digest": "d1"}]  # a user's, but of other files than v2's
    assert gate.decide("s", _versions(1, 2), [_plan(0)], records, wrong, ROLES).released == 1
    right = [{**approvals[0], "signer": USER, "reason": "read it; fine"}]
    g = gate.decide("s", _versions(1, 2), [_plan(0)], records, right, ROLES)
    assert g.released == 2 and g.verdicts[2].by == "approval" and "read it; fine" in g.verdicts[2].why


def test_a_new_plan_keeps_what_an_old_one_released_and_ignores_runs_under_the_old_one_after_it() -> None:
    old, new = "a" * 64, "b" * 64
    records = _runs(10, 1, [T] * 3, [F] * 3, plan=old) + _runs(100, 2, [T] * 3, [F] * 3, plan=old)
    g = gate.decide("s", _versions(1, 2), [_plan(0, old), _plan(50, new)], records, [], ROLES)
    assert g.released == 1 and not g.verdicts[2].released  # v2's runs name the superseded plan, after the new one


def test_baseline_none_holds_a_version_whose_lift_is_below_its_predecessors() -> None:
    n = 30
    records = _runs(10, 1, [T] * n, [F] * n) + _runs(1000, 2, [T] * 4 + [F] * (n - 4), [F] * n)
    g = gate.decide("s", _versions(1, 2), [_plan(0)], records, [], ROLES)
    assert g.released == 1 and "below v1's" in g.verdicts[2].why and g.verdicts[2].lift["delta"] > 0
    assert (
        gate.decide(
            "s",
            _versions(1, 2, 3) | {3: {"digest": "d3", "evals": True, "content": "c1"}},
            [_plan(0)],
            records,
            [],
            ROLES,
        ).released
        == 3
    )  # v3 holds v1's files: the revert
    assert gate.decide("s", _versions(1, 2, evals=False), [], [], [], ROLES).released == 2  # nothing to hold to
    dropped = _versions(1, 2) | {3: {"digest": "d3", "evals": False, "content": "c3"}}  # v3 removed evals/
    g = gate.decide("s", dropped, [_plan(0)], records, [], ROLES)
    assert g.released == 1 and "it removed evals/evals.json" in g.verdicts[3].why
    ok = [{"skill": "s", "version": 3, "digest": "d3", "reason": "evals moved", "signer": USER, "index": 2000}]
    assert gate.decide("s", dropped, [_plan(0)], records, ok, ROLES).released == 3


def test_the_paired_interval_is_newcombes_hybrid_score() -> None:
    pairs = [(T, T)] * 12 + [(T, F)] * 9 + [(F, T)] * 2 + [(F, F)] * 4
    lift = gate.paired_lift(pairs)
    assert lift is not None and lift["pairs"] == 27 and lift["delta"] == round(7 / 27, 6)
    lo, hi = lift["interval"]
    assert 0 < lo < 7 / 27 < hi < 1
    assert gate.paired_lift([]) is None
    assert gate.paired_lift([(F, T)] * 20)["interval"][1] < 0  # every case worse with the skill


# ---------------------------------------------------------------------- end to end: real CLI, git, targets, MCP

EVALS = {
    "skill_name": "csv-sum",
    "evals": [
        {
            "id": i,
            "prompt": f"Sum column {i} of data.csv",
            "expected_output": "the sum",
            "files": [],
            "assertions": ["`test -s $EVAL_OUTPUTS/sum.txt`"],
        }
        for i in (1, 2, 3)
    ],
}
BODY = "# csv-sum\n\nStep one: read the file.\n\nStep two: add the column.\n"


def _setup(tmp_path: Path) -> tuple[Path, dict[str, str], Path, Path]:
    """A brain with csv-sum v1 (no evals) and v2 (evals/evals.json added), a trusted verifier key, the gate on,
    and a Claude-layout and a Hermes-layout target that got v1 before the gate was turned on."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    env = {"HOME": str(home), "HERMES_HOME": str(tmp_path / "hermes-home"), "LEDGER_KEYS": str(tmp_path / "keys")}
    brain = make_brain(tmp_path / "brain", via="cli", env=env)
    address = json.loads(_ledger(brain, env, "keys", "generate", "verifier", "--json").stdout)["address"]
    _ledger(brain, env, "keys", "trust", "verifier", address)
    _ledger(brain, env, "skill", "create", "csv-sum", "--description", "Sum a CSV column.", "--body", BODY)
    _ledger(brain, env, "link", "claude")
    _ledger(brain, env, "link", "hermes")
    _ledger(brain, env, "sync")
    (tmp_path / "evals.json").write_text(json.dumps(EVALS))
    _ledger(brain, env, "skill", "write-file", "csv-sum", "evals/evals.json", "--from", str(tmp_path / "evals.json"))
    assert json.loads(_ledger(brain, env, "eval", "gate", "on", "--json").stdout) == {"gate": True, "changed": True}
    assert json.loads((brain / ".ledger/config.json").read_text())["eval"] == {"gate": True}
    return brain, env, home / ".claude/skills/csv-sum", tmp_path / "hermes-home/skills/csv-sum"


def _ledger(brain: Path, env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = run_ledger("--brain", str(brain), *args, env=env)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def _version(folder: Path) -> str:
    return (folder / "SKILL.md").read_text()


def _mcp(brain: Path, env: dict[str, str], calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, dict]]:
    """Each call's (is_error, JSON body), over stdio with the official MCP SDK client, as an agent calls."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    params = StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env={**full_env, **env})
    out: list[tuple[bool, dict]] = []

    async def session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            for tool, args in calls:
                result = await s.call_tool(tool, args)
                text = "".join(getattr(c, "text", "") for c in result.content)
                out.append((bool(result.is_error), json.loads(text[text.index("{") :])))

    asyncio.run(asyncio.wait_for(session(), timeout=60))
    return out


def test_with_nothing_released_targets_keep_what_they_have_and_a_runtimes_own_edit_stays(tmp_path: Path) -> None:
    brain, env, claude, hermes = _setup(tmp_path)
    _ledger(brain, env, "sync")
    for folder in (claude, hermes):  # v2 added evals and nothing evaluated it: both keep v1
        assert not (folder / "evals").exists() and "Step one: read the file." in _version(folder)
    again = json.loads(_ledger(brain, env, "sync", "--json").stdout)["targets"]
    assert [(t["projected"], t["recorded"], t["removed"]) for t in again] == [([], [], [])] * 2  # in step, held
    assert [t["held"] for t in again] == [
        [
            {
                "skill": "csv-sum",
                "version": 2,
                "shows": 1,
                "kept": True,
                "why": "no plan yet: run 'ledger eval plan csv-sum', then 'ledger eval run csv-sum'",
            }
        ]
    ] * 2
    assert "held      csv-sum v2 from claude (it keeps v1): no plan yet" in _ledger(brain, env, "sync").stdout
    [(err, patched)] = _mcp(
        brain,
        env,
        [
            (
                "skill_manage",
                {
                    "action": "patch",
                    "name": "csv-sum",
                    "old_string": "Step one: read the file.",
                    "new_string": "Step one: guess.",
                },
            )
        ],
    )
    wait = "gate: csv-sum v3 waits for its evaluation (ledger eval run csv-sum) before runtimes get it"
    assert not err and patched["gate"] == wait and patched["message"].endswith(wait)
    status = json.loads(_ledger(brain, env, "status", "--json").stdout)["gate"]
    assert status["on"] and [
        (g["skill"], g["released"], [v["version"] for v in g["held"]]) for g in status["held"]
    ] == [("csv-sum", 1, [2, 3])]
    text = _ledger(brain, env, "status").stdout
    assert "held      csv-sum v3 (runtimes keep v1): no plan yet" in text and "ledger eval approve csv-sum@3" in text
    # The runtime edits its own copy: the version it makes is its own, and its folder keeps it.
    (claude / "SKILL.md").write_text(_version(claude).replace("Step two: add the column.", "Step two: by hand."))
    report = json.loads(_ledger(brain, env, "sync", "--json").stdout)
    assert [r["version"] for t in report["targets"] if t["name"] == "claude" for r in t["recorded"]] == [4]
    assert "Step two: by hand." in _version(claude)  # merged with the head: its edit stays where it was made
    assert "by hand" not in _version(hermes) and "guess" not in _version(hermes)  # the other runtime: still v1
    assert "Step one: guess." in _version(claude)  # the merge holds the head's changes too, as any record does
    new = tmp_path / "incoming/word-count"  # a new skill that has evals from its first version: not projected
    (new / "evals").mkdir(parents=True)
    (new / "SKILL.md").write_text("---\nname: word-count\ndescription: Count words.\n---\nCount them.\n")
    (new / "evals/evals.json").write_text(json.dumps({**EVALS, "skill_name": "word-count"}))
    _ledger(brain, env, "import", str(new.parent))
    report = json.loads(_ledger(brain, env, "sync", "--json").stdout)["targets"]
    assert [h for t in report for h in t["held"] if h["skill"] == "word-count"] == [
        {
            "skill": "word-count",
            "version": 1,
            "shows": None,
            "kept": False,
            "why": "no plan yet: run 'ledger eval plan word-count', then 'ledger eval run word-count'",
        }
    ] * 2
    assert not (claude.parent / "word-count").exists() and not (hermes.parent / "word-count").exists()
    assert "held      word-count v1 from hermes (not projected)" in _ledger(brain, env, "sync").stdout
    refused = _ledger(brain, env, "eval", "approve", "csv-sum@3", "--reason", "mine", "--actor", "agent", code=1)
    assert "an agent's key may not approve" in refused.stderr
    _ledger(brain, env, "eval", "gate", "off")
    _ledger(brain, env, "sync")
    assert "Step two: by hand." in _version(hermes) and (hermes / "evals/evals.json").is_file()
    assert (claude.parent / "word-count/SKILL.md").is_file() and (hermes.parent / "word-count/SKILL.md").is_file()
    assert "gate" not in json.loads(_ledger(brain, env, "status", "--json").stdout)
    assert _ledger(brain, env, "verify").returncode == 0


RUNNER, GRADER = "brain-ledger reference-runner 1", "brain-ledger reference-grader 1"


def _plan_it(brain: Path) -> str:
    """The skill's plan, signed by the verifier: every case of evals.json once, against no skill."""
    with Brain.open(brain) as b, b.acting("verifier"):
        tree = b.head().skills["csv-sum"]
        digest = th.evals_digest(b.store, tree)
        _, entry = b.evidence.add_plan(
            {
                "skill": "csv-sum",
                "set": digest,
                "cases": ["1", "2", "3"],
                "baseline": "none",
                "runs": 1,
                "min_lift": 0,
                "runner": {"command": "python -m ledger.evals.refrunner", "id": RUNNER},
                "grader": {"command": "python -m ledger.evals.refgrader", "id": GRADER},
            }
        )
    return entry.id.hex()


def _evaluate(brain: Path, version: int, with_: list[bool], base: list[bool], actor: str = "verifier") -> None:
    """One evaluation of csv-sum at ``version`` under its plan (each case with and without the skill), signed as
    one batch by ``actor``'s key with ``brain.evidence.record_runs``, as ``ledger eval run`` records one."""
    with Brain.open(brain) as b, b.acting(actor):
        plan = b.evidence.plans("csv-sum")[-1]
        served = b.evidence.served("csv-sum", version)
        rows = []
        for i, (w, x) in enumerate(zip(with_, base, strict=True)):
            case = EVALS["evals"][i]
            for cond, passed in (("with_skill", w), ("without_skill", x)):
                grading = json.dumps({"summary": {"passed": int(passed), "failed": 1 - int(passed), "total": 1}})
                run = {
                    "plan": plan.id.hex(),
                    "set": plan.body["set"],
                    "case": str(case["id"]),
                    "run": 0,
                    "condition": cond,
                    "arm": version if cond == "with_skill" else None,
                    "runner": RUNNER,
                    "grader": GRADER,
                    "tokens": None,
                    "ms": 5,
                }
                fields = {
                    "task": {
                        "id": str(case["id"]),
                        "digest": "sha256:" + hashlib.sha256(oc.canonical(case)).hexdigest(),
                    },
                    "score": int(passed),
                    "scale": (0, 1),
                    "threshold": 1,
                    "verifier": GRADER,
                    "evidence": f"iteration-1/eval-{case['id']}/{cond}/grading.json",
                    "evidence_digest": "sha256:" + hashlib.sha256(grading.encode()).hexdigest(),
                    "eval": run,
                }
                rows.append(b.evidence.unsigned(served, fields, "score"))
        b.evidence.record_runs(rows, note=f"eval csv-sum v{version}")


def test_a_harmful_version_is_held_an_approval_releases_it_and_a_helpful_one_passes_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain, env, claude, hermes = _setup(tmp_path)
    monkeypatch.setenv("LEDGER_KEYS", env["LEDGER_KEYS"])
    _plan_it(brain)
    _evaluate(brain, 2, [T, T, T], [F, F, F])  # v2 helps on every case: released by the verifier's evaluation
    _ledger(brain, env, "sync")
    for folder in (claude, hermes):
        assert (folder / "evals/evals.json").is_file() and "Step one: read the file." in _version(folder)
    # The agent makes v3 over MCP, and is told it waits; a verifier's evaluation shows it harms case 1.
    [(err, patched)] = _mcp(
        brain,
        env,
        [
            (
                "skill_manage",
                {
                    "action": "patch",
                    "name": "csv-sum",
                    "old_string": "Step one: read the file.",
                    "new_string": "Step one: guess.",
                },
            )
        ],
    )
    assert not err and patched["gate"].startswith("gate: csv-sum v3 waits for its evaluation")
    _evaluate(brain, 3, [F, T, T], [T, F, F])
    _ledger(brain, env, "sync")
    for folder in (claude, hermes):  # held back from both layouts: they keep v2, the last passing version
        assert "Step one: read the file." in _version(folder) and "guess" not in _version(folder)
    [held] = json.loads(_ledger(brain, env, "status", "--json").stdout)["gate"]["held"]
    assert (held["released"], held["held"][0]["version"], held["held"][0]["regressed"]) == (2, 3, ["1"])
    assert "case 1 passed before and fails now" in held["held"][0]["why"]
    # A user approves it, with a reason: released, signed, and both layouts get it.
    approved = json.loads(
        _ledger(brain, env, "eval", "approve", "csv-sum@3", "--reason", "case 1 is obsolete", "--json").stdout
    )
    assert approved["operation"] == "outcome" and len(approved["approval"]) == 64
    _ledger(brain, env, "sync")
    assert all("Step one: guess." in _version(f) for f in (claude, hermes))
    assert json.loads(_ledger(brain, env, "status", "--json").stdout)["gate"]["held"] == []
    # A helpful v4 passes on its own once its evaluation is recorded.
    _ledger(brain, env, "skill", "patch", "csv-sum", "--old", "Step one: guess.", "--new", "Step one: parse it.")
    _ledger(brain, env, "sync")
    assert all("Step one: guess." in _version(f) for f in (claude, hermes))  # not evaluated yet: held
    _evaluate(brain, 4, [T, T, T], [T, F, F])
    _ledger(brain, env, "sync")
    assert all("Step one: parse it." in _version(f) for f in (claude, hermes))
    # The agent's v5, and its own passing evaluation signed with its own key: still held.
    [(err, patched)] = _mcp(
        brain,
        env,
        [
            (
                "skill_manage",
                {
                    "action": "patch",
                    "name": "csv-sum",
                    "old_string": "Step two: add the column.",
                    "new_string": "Step two: skip it.",
                },
            )
        ],
    )
    assert patched["gate"].startswith("gate: csv-sum v5 waits")
    _evaluate(brain, 5, [T, T, T], [F, F, F], actor="agent")
    _ledger(brain, env, "sync")
    assert all("Step two: add the column." in _version(f) for f in (claude, hermes))  # they keep v4
    [held] = json.loads(_ledger(brain, env, "status", "--json").stdout)["gate"]["held"]
    assert (held["released"], [v["version"] for v in held["held"]]) == (4, [5])
    assert "signed by a verifier, user or curator key" in held["held"][0]["why"]
    # eval revert: back to v4's files as v6, released with them; nothing held.
    reverted = json.loads(_ledger(brain, env, "eval", "revert", "csv-sum", "--json").stdout)
    assert reverted["version"] == 6 and reverted["operation"] == "revert"
    assert json.loads(_ledger(brain, env, "status", "--json").stdout)["gate"]["held"] == []
    _ledger(brain, env, "eval", "revert", "csv-sum", code=1)  # nothing to revert now
    _ledger(brain, env, "sync")
    assert all("Step two: add the column." in _version(f) for f in (claude, hermes))
    assert _ledger(brain, env, "verify").returncode == 0


def test_status_shows_held_versions_on_every_path_and_gate_off_leaves_projection_as_it_was(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "LEDGER_KEYS": str(tmp_path / "keys")}
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True, env=env)
    _ledger(brain, env, "skill", "create", "csv-sum", "--description", "Sum a CSV column.", "--body", BODY)
    (tmp_path / "evals.json").write_text(json.dumps(EVALS))
    _ledger(brain, env, "skill", "write-file", "csv-sum", "evals/evals.json", "--from", str(tmp_path / "evals.json"))
    for _ in range(2):  # the first fills the stat cache's clean record; the second would be answered from it
        assert "held" not in _ledger(brain, env, "status").stdout
    # the gate is off until turned on: 'gate off' on a brain that never had one changes nothing
    assert json.loads(_ledger(brain, env, "eval", "gate", "off", "--json").stdout) == {"gate": False, "changed": False}
    assert "gate off (it already was)" in _ledger(brain, env, "eval", "gate", "off").stdout
    _ledger(brain, env, "eval", "gate", "on")
    for _ in range(2):
        assert "held      csv-sum v2 (runtimes keep v1): no plan yet" in _ledger(brain, env, "status").stdout
    assert json.loads(_ledger(brain, env, "status", "--json").stdout)["gate"]["held"][0]["released"] == 1
    usage = _ledger(brain, env, "eval", "approve", "csv-sum", "--reason", "x", code=2)
    assert "name the version to approve" in usage.stderr
    _ledger(brain, env, "eval", "approve", "csv-sum@2", "--reason", "", code=2)
    out = _ledger(brain, env, "eval", "approve", "csv-sum@2", "--reason", "read it myself").stdout
    assert out.startswith("approved csv-sum v2: read it myself")
    assert "held" not in _ledger(brain, env, "status").stdout
    assert (
        "nothing to revert: csv-sum v2 is released" in _ledger(brain, env, "eval", "revert", "csv-sum", code=1).stderr
    )
    _ledger(brain, env, "eval", "approve", "csv-sum@2", "--reason", "again", "--actor", "agent", code=1)
