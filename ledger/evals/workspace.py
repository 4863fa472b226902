"""The agentskills workspace: its layout, ``grading.json`` and ``timing.json`` checked, ``benchmark.json`` made.

Layout (the guide's "Workspace structure")::

    WORKSPACE/iteration-K/eval-ID/COND/{outputs/, timing.json, grading.json}        runs = 1
    WORKSPACE/iteration-K/eval-ID/COND/run-R/{outputs/, timing.json, grading.json}  runs > 1, R from 1
    WORKSPACE/iteration-K/benchmark.json

COND is ``with_skill``, ``without_skill`` or ``old_skill``.  The key names are the guide's, exactly:
``assertion_results`` (``text``, ``passed``, ``evidence``) and ``summary`` (``passed``, ``failed``, ``total``,
``pass_rate``) in grading.json; ``total_tokens`` and ``duration_ms`` in timing.json; ``run_summary`` with
``with_skill``, ``without_skill`` or ``old_skill``, and ``delta`` in benchmark.json.  What the ledger
writes is in these names only; ``eval import`` also reads Anthropic's skill-creator's grading.json
(``expectations`` for ``assertion_results``; :func:`parse_grading`'s ``creator``).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger._json import depth, no_constant, unique_keys
from ledger.evals.evalset import EvalError

__all__ = [
    "CONDITIONS",
    "Grading",
    "RunCell",
    "Timing",
    "benchmark",
    "cell_dir",
    "claim_iteration",
    "dump",
    "evidence_uri",
    "iterations",
    "load",
    "next_iteration",
    "parse_grading",
    "parse_timing",
]

CONDITIONS = ("with_skill", "without_skill", "old_skill")
MAX_GRADING = 1024 * 1024  # bytes of a grading.json
MAX_TIMING = 64 * 1024  # bytes of a timing.json
MAX_DEPTH = 16  # JSON nesting of either (the guide's shapes need 3)
MAX_INT = 2**53 - 1  # a record's counts (docs/lineage/evaluations.md: tokens, ms)
MAX_RUNS = 100
_ITERATION = re.compile(r"iteration-([1-9][0-9]{0,5})\Z")
_RUN = re.compile(r"run-([1-9][0-9]{0,2})\Z")


@dataclass(frozen=True)
class Grading:
    passed: int
    failed: int
    total: int
    pass_rate: float
    texts: tuple[str, ...]


@dataclass(frozen=True)
class Timing:
    total_tokens: int | None
    duration_ms: int


@dataclass(frozen=True)
class RunCell:
    """One run's figures, as benchmark.json aggregates them."""

    condition: str
    pass_rate: float
    ms: int
    tokens: int | None


def cell_dir(root: Path, iteration: int, case: str, condition: str, run: int, runs: int) -> Path:
    """Where one run's files go: ``run`` is the repetition index from 0; its folder ``run-R`` counts from 1."""
    return root / _rel(iteration, case, condition, run, runs)


def evidence_uri(iteration: int, case: str, condition: str, run: int, runs: int) -> str:
    """A record's ``evidence.uri``: the grading.json's path relative to the workspace."""
    return _rel(iteration, case, condition, run, runs) + "/grading.json"


def _rel(iteration: int, case: str, condition: str, run: int, runs: int) -> str:
    return f"iteration-{iteration}/eval-{case}/{condition}" + (f"/run-{run + 1}" if runs > 1 else "")


def iterations(root: Path) -> list[int]:
    """The iteration numbers present in a workspace, ascending."""
    if not root.is_dir():
        return []
    return sorted(int(m.group(1)) for p in root.iterdir() if p.is_dir() and (m := _ITERATION.match(p.name)))


def next_iteration(root: Path) -> int:
    """The next free iteration: one past the highest present (never one already written)."""
    have = iterations(root)
    return (have[-1] + 1) if have else 1


def claim_iteration(root: Path) -> int:
    """Make the next free ``iteration-K`` folder and return K: one a concurrent run made first is never
    written into (it takes the next)."""
    root.mkdir(parents=True, exist_ok=True)
    k = next_iteration(root)
    while True:
        try:
            (root / f"iteration-{k}").mkdir()
            return k
        except FileExistsError:
            k += 1


def run_folders(cond_dir: Path) -> list[tuple[int, Path]]:
    """A condition folder's runs as ``(index from 0, folder)``: its ``run-R`` folders, else itself."""
    runs = sorted((int(m.group(1)), p) for p in cond_dir.iterdir() if p.is_dir() and (m := _RUN.match(p.name)))
    if not runs:
        return [(0, cond_dir)]
    loose = sorted(n for n in ("outputs", "timing.json", "grading.json") if os.path.lexists(cond_dir / n))
    if loose:
        raise EvalError(
            f"{cond_dir} holds both run-R folders and a run's {', '.join(loose)}: which is the run is ambiguous",
            hint="keep one layout: run-1/ .. run-N/ (runs > 1) or the run's files alone",
        )
    numbers = [n for n, _ in runs]
    if numbers != list(range(1, len(numbers) + 1)):
        raise EvalError(f"{cond_dir}: run folders {', '.join(f'run-{n}' for n in numbers)} are not run-1..run-N")
    return [(n - 1, p) for n, p in runs]


def load(data: bytes, what: str) -> Any:
    """JSON measured first (its nesting: never a RecursionError), NaN and Infinity refused (not JSON), a key
    named twice refused."""
    if depth(data) > MAX_DEPTH:
        raise EvalError(f"{what} nests deeper than {MAX_DEPTH} levels (the guide's shapes need 3)")
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=unique_keys, parse_constant=no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise EvalError(f"{what} is not JSON: {exc}") from None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT


def parse_grading(
    data: bytes, what: str = "grading.json", expected: Sequence[str] | None = None, *, creator: bool = False
) -> Grading:
    """A grading.json in the guide's shape, its summary consistent with its results; ``expected``: the
    case's assertions, which the results must grade one for one, in order.  With ``creator`` (``eval
    import``; a grader of ``eval run`` prints the guide's shape), skill-creator's dialect (its
    references/schemas.md, agents/grader.md) is read as written: ``expectations`` in place of
    ``assertion_results`` (the same ``text``/``passed``/``evidence`` items), and its other members
    (``execution_metrics``, ``timing``, ``claims``, ``user_notes_summary``, ``eval_feedback``) carried by the
    file's hash, not read; a file holding both keys is refused (which one grades?)."""
    if len(data) > MAX_GRADING:
        raise EvalError(f"{what} is {len(data)} bytes; at most {MAX_GRADING}")
    doc = load(data, what)
    hint = (
        'grading.json is {"assertion_results": [{"text", "passed", "evidence"}, ...], "summary": '
        '{"passed", "failed", "total", "pass_rate"}} (the agentskills guide; skill-creator\'s '
        '"expectations" in place of "assertion_results" is read too)'
    )
    if isinstance(doc, dict) and {"assertion_results", "expectations"} <= set(doc):
        raise EvalError(
            f"{what} holds both 'assertion_results' and 'expectations' (skill-creator's name for them): "
            "which one grades the run is ambiguous",
            hint=hint,
        )
    key = "expectations" if creator and isinstance(doc, dict) and "expectations" in doc else "assertion_results"
    if not isinstance(doc, dict) or not {key, "summary"} <= set(doc):
        raise EvalError(f"{what} lacks 'assertion_results' (or skill-creator's 'expectations') or 'summary'", hint=hint)
    results = doc[key]
    if not isinstance(results, list) or not results:
        raise EvalError(f"{what}: {key!r} is a non-empty array", hint=hint)
    texts = []
    for i, r in enumerate(results):
        if not (
            isinstance(r, dict)
            and isinstance(r.get("text"), str)
            and isinstance(r.get("passed"), bool)
            and isinstance(r.get("evidence"), str)
        ):
            raise EvalError(
                f'{what}: {key}[{i}] is {{"text": TEXT, "passed": true|false, "evidence": TEXT}}', hint=hint
            )
        texts.append(r["text"])
    s = doc["summary"]
    if (
        not isinstance(s, dict)
        or not all(_count(s.get(k)) for k in ("passed", "failed", "total"))
        or not isinstance(s.get("pass_rate"), (int, float))
        or isinstance(s.get("pass_rate"), bool)
        or not math.isfinite(s["pass_rate"])
    ):
        raise EvalError(
            f'{what}: \'summary\' is {{"passed", "failed", "total": counts, "pass_rate": number}}', hint=hint
        )
    passed = sum(1 for r in results if r["passed"])
    if (s["passed"], s["failed"], s["total"]) != (passed, len(results) - passed, len(results)) or abs(
        s["pass_rate"] - passed / len(results)
    ) > 0.005:
        raise EvalError(
            f"{what}: the summary ({s['passed']} passed, {s['failed']} failed, {s['total']} total, "
            f"pass_rate {s['pass_rate']}) is not what its {key} say ({passed} of "
            f"{len(results)})",
            hint="a summary counts its assertion_results",
        )
    if expected is not None and tuple(texts) != tuple(expected):
        raise EvalError(
            f"{what} grades other assertions than the case's in evals/evals.json "
            f"({len(texts)} graded, {len(expected)} in the set)",
            hint="grade the eval set's assertions, each once, in its order",
        )
    return Grading(passed, len(results) - passed, len(results), passed / len(results), tuple(texts))


def parse_timing(data: bytes, what: str = "timing.json") -> Timing:
    """A timing.json: ``total_tokens`` (a count, or null when the runner could not tell) and ``duration_ms``,
    each at most 2^53 - 1 (what a record holds)."""
    if len(data) > MAX_TIMING:
        raise EvalError(f"{what} is {len(data)} bytes; at most {MAX_TIMING}")
    doc = load(data, what)
    if not isinstance(doc, dict) or "duration_ms" not in doc or "total_tokens" not in doc:
        raise EvalError(f'{what} is {{"total_tokens": N, "duration_ms": N}} (the agentskills guide)')
    ms, tokens = _whole(doc["duration_ms"]), _whole(doc["total_tokens"])
    if not _count(ms) or not (tokens is None or _count(tokens)):
        raise EvalError(
            f"{what}: 'duration_ms' and 'total_tokens' are numbers from 0 to 2^53 - 1 (total_tokens may be null)"
        )
    return Timing(tokens, ms)


def _whole(value: Any) -> Any:
    """A finite non-negative float rounded to the whole number a record holds (23332.6 ms → 23333)."""
    if isinstance(value, float) and math.isfinite(value) and 0 <= value <= 2**53:
        return round(value)
    return value


def timing_bytes(tokens: int | None, ms: int) -> bytes:
    return dump({"total_tokens": tokens, "duration_ms": ms})


def dump(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _stats(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n − 1; 0 for one value)."""
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return mean, sd


def benchmark(cells: Iterable[RunCell], baseline: str) -> dict[str, Any]:
    """benchmark.json's document: ``run_summary`` per condition (``with_skill`` and ``baseline``:
    ``without_skill`` or ``old_skill``) with ``pass_rate``, ``time_seconds`` and ``tokens`` as mean and
    sample stddev over the runs, and ``delta`` (with − baseline of each mean); every figure rounded to 4
    places (as skill-creator's aggregate), the delta from the unrounded means.  A run's pass_rate is its
    grading.json's; tokens average the runs that reported them (0 when none did)."""
    if baseline not in ("without_skill", "old_skill"):
        raise EvalError(f"a baseline condition is without_skill or old_skill, not {baseline!r}")
    per: dict[str, list[RunCell]] = {"with_skill": [], baseline: []}
    for c in cells:
        per[c.condition].append(c)
    means: dict[str, dict[str, float]] = {}
    summary: dict[str, Any] = {}
    for cond in ("with_skill", baseline):
        runs = per[cond]
        figures = {
            "pass_rate": _stats([c.pass_rate for c in runs]),
            "time_seconds": _stats([c.ms / 1000 for c in runs]),
            "tokens": _stats([c.tokens for c in runs if c.tokens is not None]),
        }
        means[cond] = {k: m for k, (m, _) in figures.items()}
        summary[cond] = {k: {"mean": round(m, 4), "stddev": round(sd, 4)} for k, (m, sd) in figures.items()}
    summary["delta"] = {
        k: round(means["with_skill"][k] - means[baseline][k], 4) for k in ("pass_rate", "time_seconds", "tokens")
    }
    return {"run_summary": summary}
