"""Outside review of issue 47 with hostile inputs: eval sets, workspaces and runners that try to make the ledger
write outside its folders, leak its key paths, crash on parse, hang, or lose an evaluation.  Real CLI, real git,
real signatures (the engine's `family` fixture); every test failed on i47-int before its fix."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.harness.cli import LEDGER, run_ledger
from tests.unit.evals.test_evals_engine import (
    FAMILY,
    _entries,
    _hand_workspace,
    _head,
    _ledger,
    _records,
    verifier_brain,
)


@pytest.fixture
def family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A brain holding the example family, with a trusted verifier key (as tests/unit/evals/test_evals_engine.py's)."""
    return verifier_brain(tmp_path, monkeypatch, FAMILY)


def _evals_refused(tmp_path: Path, family_: Path, raw: bytes, said: str) -> None:
    """``raw`` written as word-count's evals/evals.json: ``ledger lint`` names the problem (no traceback), and
    ``eval plan`` refuses it, writing nothing."""
    src = tmp_path / "evals.json"
    src.write_bytes(raw)
    _ledger(family_, "skill", "write-file", "word-count", "evals/evals.json", "--from", str(src))
    lint = run_ledger("--brain", str(family_), "skill", "lint", "word-count")
    _no_trace(lint)
    assert lint.returncode == 1 and said in lint.stdout + lint.stderr, lint.stdout + lint.stderr
    head, log = _head(family_), len(_entries(family_))
    plan = run_ledger("--brain", str(family_), "eval", "plan", "word-count")
    _no_trace(plan)
    assert plan.returncode == 1 and said in plan.stderr, plan.stderr
    assert (_head(family_), len(_entries(family_))) == (head, log)


def _plan_runner(family_: Path, skill: str, runner: str) -> None:
    _ledger(family_, "eval", "plan", skill, "--runner", runner, "--runner-id", "hostile runner 1")


def _no_trace(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, proc.stderr[-2000:]


# ---------------------------------------------------------------- a runner that writes outside its folders


@pytest.mark.parametrize("planted", ["timing.json", "grading.json"])
def test_a_runner_cannot_make_the_ledger_write_through_a_link_it_planted(
    family: Path, tmp_path: Path, planted: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    # the runner leaves a link where i47-int's ledger then wrote the run's file, and writes no timing itself
    runner = f'ln -s {victim} "$EVAL_OUTPUTS/../{planted}"; env -u EVAL_TIMING python -m ledger.evals.refrunner'
    _plan_runner(family, "word-count", runner)
    ws = tmp_path / "ws"
    proc = run_ledger("--brain", str(family), "eval", "run", "word-count", "--workspace", str(ws), "--json")
    _no_trace(proc)
    assert victim.read_text() == "precious\n"  # i47-int wrote the run's timing/grading JSON into it
    assert not victim.is_symlink()
    if proc.returncode == 0:  # the workspace holds the ledger's own files, never a runner's link
        for p in (ws / "iteration-1").rglob("*"):
            if p.name in ("timing.json", "grading.json"):
                assert not p.is_symlink(), p


def test_the_runner_and_grader_see_no_ledger_variable_key_path_or_secret(family: Path, tmp_path: Path) -> None:
    dump = 'env > "$EVAL_OUTPUTS/env-$EVAL_ID.txt"; '
    _plan_runner(family, "word-count", dump + "python -m ledger.evals.refrunner")
    ws = tmp_path / "ws"
    env = {"LEDGER_KEY_PASSPHRASE": "hunter2-secret", "LEDGER_KEYSTORE": str(tmp_path / "keystore")}
    proc = run_ledger("--brain", str(family), "eval", "run", "word-count", "--workspace", str(ws), env=env)
    assert proc.returncode == 0, proc.stderr
    seen = list((ws / "iteration-1").rglob("env-*.txt"))
    assert seen
    keys = os.environ["LEDGER_KEYS"]
    for f in seen:
        text = f.read_text()
        assert "hunter2-secret" not in text
        assert keys not in text, f"{f}: the runner is told where the signing keys are (LEDGER_KEYS)"
        assert not [line for line in text.splitlines() if line.startswith("LEDGER_")], text


def test_a_runner_whose_timing_json_is_a_fifo_or_dev_zero_is_a_failed_run_not_a_hang(
    family: Path, tmp_path: Path
) -> None:
    runner = (
        'case "$EVAL_ID" in 1) rm -f "$EVAL_TIMING"; mkfifo "$EVAL_TIMING";; '
        '2) ln -sf /dev/zero "$EVAL_TIMING";; *) python -m ledger.evals.refrunner;; esac'
    )
    _plan_runner(family, "word-count", runner)
    ws = tmp_path / "ws"
    try:
        proc = run_ledger(
            "--brain", str(family), "eval", "run", "word-count", "--workspace", str(ws), "--json", timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("ledger eval run hung reading a runner's timing.json (a FIFO, or /dev/zero)")
    assert proc.returncode == 0, proc.stderr
    runs = {(r["case"], r["condition"]): r for r in json.loads(proc.stdout)["runs"]}
    assert "timing.json" in runs["1", "with_skill"]["failure"] and "timing.json" in runs["2", "with_skill"]["failure"]


def test_a_runner_timing_beyond_2_53_is_a_failed_run_not_a_lost_evaluation(family: Path, tmp_path: Path) -> None:
    runner = (
        'python -m ledger.evals.refrunner; [ "$EVAL_ID" = 1 ] && '
        'echo \'{"total_tokens": 100000000000000000000, "duration_ms": 5}\' > "$EVAL_TIMING"; true'
    )
    _plan_runner(family, "word-count", runner)
    proc = run_ledger(
        "--brain", str(family), "eval", "run", "word-count", "--workspace", str(tmp_path / "ws"), "--json"
    )
    assert proc.returncode == 0, proc.stderr  # i47-int: every run was lost to a StoreError at record time
    assert len(_records(family, "word-count")) == 6
    runs = {(r["case"], r["condition"]): r for r in json.loads(proc.stdout)["runs"]}
    assert "timing.json" in runs["1", "with_skill"]["failure"]


# ---------------------------------------------------------------- hostile evals/evals.json


def _one_case(**case: object) -> bytes:
    base = {
        "id": 1,
        "prompt": "count the words",
        "expected_output": "a number",
        "files": ["evals/files/lines.txt"],
        "assertions": ["answer.txt is written: `test -s answer.txt`"],
    }
    base.update(case)
    return json.dumps({"skill_name": "word-count", "evals": [base]}).encode()


@pytest.mark.parametrize(
    "raw, said",
    [
        (_one_case(id=12345678901234567890), "2^53"),  # a JSON reader that reads numbers as doubles sees another id
        (_one_case(prompt="count\u0000the words"), "NUL"),  # cannot go into $EVAL_PROMPT: Popen raised ValueError
        (_one_case(prompt="count \ud800 words"), "surrogate"),  # not Unicode: no RFC 8785 task digest
        (_one_case(assertions=["a lone \udfff: `true`"]), "surrogate"),
    ],
    ids=["id-beyond-2^53", "nul-in-prompt", "lone-surrogate-prompt", "lone-surrogate-assertion"],
)
def test_an_eval_set_no_run_can_carry_is_refused(family: Path, tmp_path: Path, raw: bytes, said: str) -> None:
    _evals_refused(tmp_path, family, raw, said)  # i47-int wrote it; a run then crashed or lost it all


def test_a_deeply_nested_eval_set_is_a_clear_refusal_not_a_recursion_error(family: Path, tmp_path: Path) -> None:
    raw = b'{"skill_name": "word-count", "evals": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    _evals_refused(tmp_path, family, raw, "nests deeper")


# ---------------------------------------------------------------- hostile workspaces for `eval import`


def _workspace(tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    cases = json.loads((FAMILY / "csv-sum/evals/evals.json").read_text())["evals"][:2]
    return _hand_workspace(tmp_path / "ws", "csv-sum", cases, {"with_skill": True, "without_skill": False}), cases


def _refused(family_: Path, ws: Path, said: str) -> None:
    head, log = _head(family_), len(_entries(family_))
    proc = run_ledger("--brain", str(family_), "eval", "import", str(ws), "--actor", "verifier", "--skill", "csv-sum")
    _no_trace(proc)
    assert proc.returncode == 1, f"accepted:\n{proc.stdout}"
    assert said in proc.stderr, proc.stderr
    assert (_head(family_), len(_entries(family_))) == (head, log)


@pytest.mark.parametrize("what", ["grading.json", "timing.json", "outputs", "eval-1", "with_skill"])
def test_import_refuses_a_link_in_the_workspace(family: Path, tmp_path: Path, what: str) -> None:
    ws, _ = _workspace(tmp_path)
    cell = ws / "iteration-1/eval-1/with_skill"
    target = {"eval-1": cell.parent, "with_skill": cell}.get(what, cell / what)
    outside = tmp_path / "outside" / what
    outside.parent.mkdir()
    target.rename(outside)
    target.symlink_to(outside)  # the same bytes, read from outside the workspace the record's uri names
    _refused(family, ws, "link")


def test_import_refuses_a_huge_grading_json_without_reading_it_whole(family: Path, tmp_path: Path) -> None:
    ws, _ = _workspace(tmp_path)
    timing = ws / "iteration-1/eval-1/with_skill/timing.json"
    with open(timing, "wb") as f:  # a sparse file: 8 GiB that a read_bytes() would hold in memory
        f.truncate(8 << 30)
    _refused(family, ws, "bytes; at most")


@pytest.mark.parametrize(
    "doc, said",
    [
        (
            '{"assertion_results": [{"text": "T", "passed": true, "evidence": ""}], "summary": {"passed": 1, '
            '"failed": 0, "total": 1, "pass_rate": NaN}}',
            "NaN",
        ),
        ("[" * 100_000 + "]" * 100_000, "nests deeper"),
    ],
    ids=["pass-rate-nan", "deep"],
)
def test_import_refuses_a_grading_json_with_nan_or_deep_nesting(
    family: Path, tmp_path: Path, doc: str, said: str
) -> None:
    ws, cases = _workspace(tmp_path)
    grading = ws / "iteration-1/eval-1/with_skill/grading.json"
    # every assertion of case 1 passed, the summary's pass_rate NaN: i47-int's |NaN - 1.0| > 0.005 is False
    results = [{"text": a, "passed": True, "evidence": ""} for a in cases[0]["assertions"]]  # type: ignore[union-attr]
    n = len(results)
    grading.write_text(
        doc.replace('[{"text": "T", "passed": true, "evidence": ""}]', json.dumps(results)).replace(
            '"passed": 1, "failed": 0, "total": 1', f'"passed": {n}, "failed": 0, "total": {n}'
        )
    )
    _refused(family, ws, said)


def test_import_refuses_a_timing_json_beyond_what_a_record_holds(family: Path, tmp_path: Path) -> None:
    ws, _ = _workspace(tmp_path)  # (NaN and Infinity were refused already, as counts that are not integers)
    (ws / "iteration-1/eval-1/with_skill/timing.json").write_text(
        '{"total_tokens": 100000000000000000000, "duration_ms": 5}'
    )
    _refused(family, ws, "timing.json")


def test_import_refuses_a_condition_folder_holding_both_one_run_and_run_folders(family: Path, tmp_path: Path) -> None:
    ws, _ = _workspace(tmp_path)
    cell = ws / "iteration-1/eval-1/with_skill"
    (cell / "run-1").mkdir()
    for name in ("outputs", "grading.json", "timing.json"):
        src = cell / name
        if src.is_dir():
            (cell / "run-1" / name).mkdir()
        else:
            (cell / "run-1" / name).write_bytes(src.read_bytes())
    # which is the run, with_skill/grading.json or with_skill/run-1/grading.json? i47-int took one silently
    _refused(family, ws, "both")


# ---------------------------------------------------------------- a runner that prints gigabytes, or outlives its run


def test_a_runner_printing_more_than_the_disk_allows_is_not_kept(family: Path, tmp_path: Path) -> None:
    """The ledger runs with a 64 MiB file-size limit (RLIMIT_FSIZE, inherited by the runner): i47-int spooled
    the runner's stderr into a file, so 100 MB of it killed the runner (SIGXFSZ) and failed a run that
    worked; a run's output is drained and only its tail kept, so the disk never holds it."""
    import resource

    runner = "head -c 100000000 /dev/zero >&2; head -c 100000000 /dev/zero; python -m ledger.evals.refrunner"
    _plan_runner(family, "word-count", runner)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))

    proc = subprocess.run(
        [LEDGER, "--brain", str(family), "eval", "run", "word-count", "--workspace", str(tmp_path / "ws"), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = json.loads(proc.stdout)["runs"]
    assert [r["failure"] for r in runs] == [None] * len(runs), [r["failure"] for r in runs]


def test_a_child_that_leaves_the_runs_session_does_not_outlive_the_run(family: Path, tmp_path: Path) -> None:
    runner = "setsid sleep 37.2113 </dev/null >/dev/null 2>&1 & python -m ledger.evals.refrunner"
    _plan_runner(family, "word-count", runner)
    try:
        proc = run_ledger("--brain", str(family), "eval", "run", "word-count", "--workspace", str(tmp_path / "ws"))
        assert proc.returncode == 0, proc.stderr
        ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
        assert "sleep 37.2113" not in ps, "a runner's child that called setsid outlived the run"
    finally:
        for line in subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout.splitlines():
            if "sleep 37.2113" in line and "setsid" not in line.split(None, 1)[1][:6]:
                os.kill(int(line.split()[0]), 9)  # this test's own stray children, by pid


# ---------------------------------------------------------------- a plan signed elsewhere


def test_a_plan_whose_cases_are_not_its_sets_is_refused_before_anything_runs(family: Path, tmp_path: Path) -> None:
    """A plan entry is any signed list of case ids (outcome import takes one byte for byte): one naming a subset of
    its set's cases (case "2" alone) made i47-int run every case, then refuse the batch at the end, every run
    lost; the run must be refused first, nothing run, no iteration made."""
    from ledger.brain import Brain
    from ledger.brain.evaluations import DEFAULT_GRADER, DEFAULT_RUNNER, Evaluations

    with Brain.open(family) as brain, brain.acting("user"):
        v = Evaluations(brain).version("word-count")
        brain.evidence.add_plan(
            {
                "skill": "word-count",
                "set": v.set_digest,
                "cases": ["2"],
                "baseline": "none",
                "runs": 1,
                "runner": DEFAULT_RUNNER,
                "grader": DEFAULT_GRADER,
                "min_lift": 0.0,
            }
        )
    ws = tmp_path / "ws"
    head, log = _head(family), len(_entries(family))
    proc = run_ledger("--brain", str(family), "eval", "run", "word-count", "--workspace", str(ws))
    _no_trace(proc)
    assert proc.returncode == 1 and "cases" in proc.stderr, proc.stderr
    assert not (ws / "iteration-1").exists(), "the runs were made, then thrown away"
    assert (_head(family), len(_entries(family))) == (head, log)


@pytest.mark.parametrize(
    "command",
    [
        "OPENAI_API_KEY=sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c hermes-runner",
        "hermes-runner --api-key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
        "env GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789 runner",
        "runner --password=hunter2hunter2",
    ],
    ids=["env-assignment", "api-key-flag", "env-token", "password-flag"],
)
def test_a_secret_written_into_a_runner_command_is_refused_not_signed_into_a_plan(
    family: Path, tmp_path: Path, command: str
) -> None:
    head, log = _head(family), len(_entries(family))
    proc = run_ledger("--brain", str(family), "eval", "plan", "word-count", "--runner", command, "--runner-id", "r 1")
    _no_trace(proc)
    assert proc.returncode == 2 and "secret" in proc.stderr, proc.stdout + proc.stderr  # a plan is signed, anchored
    assert (_head(family), len(_entries(family))) == (head, log)
    ok = run_ledger(
        "--brain",
        str(family),
        "eval",
        "plan",
        "word-count",
        "--runner",
        'OPENAI_API_KEY="$MY_KEY" hermes-runner --api-key "$OTHER"',
        "--runner-id",
        "r 1",
    )
    assert ok.returncode == 0, ok.stderr  # a reference to the environment is no secret


def test_a_prompt_longer_than_an_environment_variable_holds_is_refused_by_lint_and_plan(
    family: Path, tmp_path: Path
) -> None:
    """Linux holds at most 128 KiB in one environment string (MAX_ARG_STRLEN): i47-int planned such a case, then
    every run of it failed to start (E2BIG), the evaluation refused after the runs before it were made."""
    _evals_refused(tmp_path, family, _one_case(prompt="word " * 30_000), "128 KiB")


def test_a_workspace_inside_a_skill_of_the_brain_is_refused(family: Path, tmp_path: Path) -> None:
    """The runs' outputs written into a skill folder would become the skill's files at its next write."""
    _ledger(family, "eval", "plan", "word-count")
    inside = family / "word-count" / "ws"
    proc = run_ledger("--brain", str(family), "eval", "run", "word-count", "--workspace", str(inside))
    _no_trace(proc)
    assert proc.returncode in (1, 2) and "workspace" in proc.stderr, proc.stdout + proc.stderr
    assert not inside.exists()
    status = run_ledger("--brain", str(family), "status", "--json")
    assert status.returncode == 0 and "word-count" not in status.stdout, status.stdout


def test_import_refuses_a_deeply_nested_eval_metadata_json(family: Path, tmp_path: Path) -> None:
    ws, _ = _workspace(tmp_path)
    (ws / "iteration-1/eval-units-total/eval_metadata.json").write_text("[" * 30_000 + "]" * 30_000)
    _refused(family, ws, "nests deeper")


def test_the_same_workspace_imported_twice_is_not_counted_twice(family: Path, tmp_path: Path) -> None:
    """A second import of the same runs (same grading.json bytes, same cells) would double every pair of the lift
    and narrow its interval with no new evidence: refused, naming the records that hold them."""
    ws, _ = _workspace(tmp_path)
    _ledger(family, "eval", "import", str(ws), "--actor", "verifier", "--skill", "csv-sum")
    head, log = _head(family), len(_entries(family))
    proc = run_ledger("--brain", str(family), "eval", "import", str(ws), "--actor", "verifier", "--skill", "csv-sum")
    _no_trace(proc)
    assert proc.returncode == 1 and "already" in proc.stderr, proc.stdout + proc.stderr
    assert (_head(family), len(_entries(family))) == (head, log)
    assert len(_records(family, "csv-sum")) == 4


def test_a_runner_whose_outputs_nest_thousands_deep_is_recorded(family: Path, tmp_path: Path) -> None:
    """Outputs nested 1,500 folders deep (each name one letter): copied to a depth, never a RecursionError."""
    runner = (
        "python -c \"import os\\nfor _ in range(1500):\\n    os.mkdir('d'); os.chdir('d')\" "
        '&& cd "$EVAL_INPUTS"; cd "$EVAL_OUTPUTS" && python -c "import os\\nfor _ in range(1500):\\n'
        "    os.mkdir('d'); os.chdir('d')\"; cd \"$EVAL_INPUTS\"; python -m ledger.evals.refrunner"
    )
    _plan_runner(family, "word-count", runner)
    proc = run_ledger("--brain", str(family), "eval", "run", "word-count", "--workspace", str(tmp_path / "ws"))
    _no_trace(proc)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert len(_records(family, "word-count")) == 6


def test_a_workspace_eval_run_recorded_is_not_imported_again(family: Path, tmp_path: Path) -> None:
    _ledger(family, "eval", "plan", "word-count")
    ws = tmp_path / "ws"
    _ledger(family, "eval", "run", "word-count", "--workspace", str(ws))
    head, log = _head(family), len(_entries(family))
    proc = run_ledger("--brain", str(family), "eval", "import", str(ws), "--actor", "verifier", "--skill", "word-count")
    _no_trace(proc)
    assert proc.returncode == 1 and "already" in proc.stderr, proc.stdout + proc.stderr
    assert (_head(family), len(_entries(family))) == (head, log)


def test_a_workspace_that_cannot_be_made_is_said_so(family: Path, tmp_path: Path) -> None:
    _ledger(family, "eval", "plan", "word-count")
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = run_ledger("--brain", str(family), "eval", "run", "word-count", "--workspace", str(blocker / "ws"))
    _no_trace(proc)
    assert proc.returncode == 1 and "workspace" in proc.stderr and "changed while" not in proc.stderr, proc.stderr
