"""A skill's eval set: ``evals/evals.json`` in the agentskills guide's shape, checked, and its digest.

The shape is the guide's ("Evaluating skill output quality"), key for key::

    {"skill_name": TEXT,
     "evals": [{"id": INT | TEXT, "prompt": TEXT, "expected_output": TEXT,
                "files": [PATH, ...]?, "assertions": [TEXT, ...]?}, ...]}

Rules the guide leaves to a careful reader, made explicit (each refused with what to fix):

- ``id``: an integer (not a boolean) or a text; its text form (``1`` → ``"1"``) names the case in records
  and its workspace folder ``eval-ID``, so it is 1..128 of ``A-Z a-z 0-9 . _ -`` starting with a letter or
  digit, and ids are distinct as text (``1`` and ``"1"`` collide);
- ``files``: paths relative to the skill folder, under its ``evals/`` (``evals/files/x.csv``, as the guide's;
  the eval set's digest covers ``evals/`` alone, so an input elsewhere could change under a plan unseen),
  present, distinct by file name (a run's ``$EVAL_INPUTS`` holds each under its file name);
- ``assertions``: non-empty texts; a case without them can be linted but not planned or run (nothing to
  grade);
- no other key: a misspelt key (``expected``) would silently grade nothing.  One exception, read as
  written: ``expectations``, Anthropic's skill-creator's name for ``assertions`` (its references/schemas.md),
  so that a set it wrote imports as it is (the case object, and so ``task.digest``, unchanged); ``ledger skill lint``
  warns that the guide calls it ``assertions``, and a case holding both keys is refused (which one grades?);
- what a run cannot carry, refused before anything runs: nesting deeper than :data:`MAX_DEPTH` (the
  parser would recurse), ``NaN``/``Infinity`` (not JSON), an integer id beyond 2^53 − 1 (JSON readers
  disagree on it, so the case's RFC 8785 digest is not defined), a lone surrogate in any text (not
  Unicode: no RFC 8785 digest, no UTF-8 file), a NUL in the prompt or one longer than
  :data:`MAX_PROMPT` bytes (``$EVAL_PROMPT`` cannot hold it: Linux's 128 KiB for one environment string).

The **eval set's digest** is the bundle digest (docs/bundle-hash.md §4) of the skill's ``evals`` directory:
:func:`ledger.store.treehash.evals_digest` (the same Merkle core as every stored digest).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger._json import MAX_INT, depth, no_constant, unique_keys
from ledger.bundle.skill import check_support_path
from ledger.errors import LedgerError, SkillError
from ledger.store.outcomes import canonical

__all__ = ["EVALS_DIR", "EVALS_JSON", "Case", "EvalError", "EvalSet", "case_text", "lint_evals", "parse_evals"]

EVALS_DIR = "evals"
EVALS_JSON = "evals/evals.json"
MAX_EVALS_JSON = 4 * 1024 * 1024  # bytes
MAX_CASES = 10_000
MAX_PROMPT = 128 * 1024 - len("EVAL_PROMPT=") - 1  # bytes: Linux holds one environment string of 128 KiB
MAX_DEPTH = 16  # JSON nesting: the guide's shape needs 4
_TOP_KEYS = ("skill_name", "evals")
_CASE_KEYS = ("id", "prompt", "expected_output", "files", "assertions")
CREATOR_ASSERTIONS = "expectations"  # skill-creator's name for the guide's "assertions" (read; lint warns)
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_MISSPELT = {"expected": "expected_output", "input_files": "files", "name": "id"}


class EvalError(LedgerError):
    """An eval set that is not the guide's shape, or a case that cannot be run as asked."""


@dataclass(frozen=True)
class Case:
    """One test case: its id's text, the object as evals.json holds it, and what a run needs."""

    key: str  # the id as text: "1" for 1
    prompt: str
    expected_output: str
    files: tuple[str, ...]
    assertions: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def digest(self) -> str:
        """``sha256:`` + SHA-256 of the case object's RFC 8785 bytes: the record's ``task.digest``."""
        return "sha256:" + hashlib.sha256(canonical(dict(self.raw))).hexdigest()


@dataclass(frozen=True)
class EvalSet:
    skill_name: str
    cases: tuple[Case, ...]

    def case(self, key: str) -> Case:
        for c in self.cases:
            if c.key == key:
                return c
        raise EvalError(f"the eval set has no case {key!r}", hint=f"its cases: {', '.join(self.ids())}")

    def ids(self) -> list[str]:
        return [c.key for c in self.cases]

    def gradable(self) -> None:
        """Refuse a set holding a case with no assertion: nothing would grade its runs."""
        bare = [c.key for c in self.cases if not c.assertions]
        if bare:
            raise EvalError(
                f"case(s) {', '.join(bare)} of {EVALS_JSON} have no assertions: nothing would grade their runs",
                hint="add \"assertions\": [...] to each case (the guide's 'Writing assertions'), then plan again",
            )


def case_text(value: Any) -> str:
    """An eval id's text form (an integer id 1 → ``"1"``), or :class:`EvalError`."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise EvalError(f"an eval's id is an integer or a text, not {json.dumps(value)[:40]}")
    if isinstance(value, int) and not 0 <= value <= MAX_INT:
        raise EvalError(
            f"an eval's integer id is 0..2^53 - 1 (JSON readers disagree beyond), not {str(value)[:40]}; "
            "give it as a text"
        )
    text = str(value)
    if not _ID.match(text):
        raise EvalError(
            f"eval id {text[:60]!r} is not 1..128 of A-Z a-z 0-9 . _ - starting with a letter or digit "
            "(it names the run's folder eval-ID)"
        )
    return text


def parse_evals(data: bytes, present: Collection[str] | None = None) -> EvalSet:
    """``evals/evals.json``'s bytes, checked; ``present``: the skill's files (relative paths), to check
    that each case's ``files`` are there (None: not checked).  The first problem is raised."""
    problems = _problems(data, present)
    if isinstance(problems, EvalSet):
        return problems
    raise EvalError(
        f"{EVALS_JSON}: {problems[0]}",
        hint="fix evals/evals.json (the agentskills guide's shape; "
        "docs/reference.md, 'Eval runner contract'); 'ledger skill lint' lists every problem",
    )


def lint_evals(
    data: bytes, present: Collection[str] | None = None, skill: str | None = None, warnings: list[str] | None = None
) -> list[str]:
    """Every problem of ``evals/evals.json`` (empty: it is well formed); ``skill``: the name its
    ``skill_name`` must be (an eval set copied from another skill is one); ``warnings``, when given, gets
    what is read but is not the guide's (skill-creator's ``expectations``)."""
    found = _problems(data, present, warnings)
    if isinstance(found, EvalSet):
        if skill is not None and found.skill_name != skill:
            return [f"{EVALS_JSON}: 'skill_name' is {found.skill_name!r}, not this skill's name {skill!r}"]
        return []
    return [f"{EVALS_JSON}: {p}" for p in found]


def _problems(data: bytes, present: Collection[str] | None, warnings: list[str] | None = None) -> EvalSet | list[str]:
    if len(data) > MAX_EVALS_JSON:
        return [f"{len(data)} bytes; at most {MAX_EVALS_JSON}"]
    if depth(data) > MAX_DEPTH:
        return [f"nests deeper than {MAX_DEPTH} levels (the guide's shape needs 4)"]
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=unique_keys, parse_constant=no_constant)
    except UnicodeDecodeError as exc:
        return [f"not UTF-8 (byte {exc.start})"]
    except ValueError as exc:  # a JSON error, NaN/Infinity, or a key given twice (unique_keys)
        return [f"not JSON: {exc}"]
    if not isinstance(doc, dict):
        return ['the top level is an object {"skill_name", "evals"}']
    out: list[str] = []
    for key in sorted(set(doc) - set(_TOP_KEYS)):
        out.append(f"unknown top-level key {key!r} (the guide's are skill_name and evals)")
    name = doc.get("skill_name")
    if not isinstance(name, str) or not name:
        out.append("'skill_name' is the skill's name, a non-empty text")
    cases = doc.get("evals")
    if not isinstance(cases, list) or not cases:
        out.append("'evals' is a non-empty array of test cases")
        return out
    if len(cases) > MAX_CASES:
        return [*out, f"{len(cases)} cases; at most {MAX_CASES}"]
    parsed: list[Case] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(cases):
        where = f"evals[{i}]"
        if not isinstance(raw, dict):
            out.append(f"{where} is an object with id, prompt and expected_output")
            continue
        before = len(out)
        for key in sorted(set(raw) - {*_CASE_KEYS, CREATOR_ASSERTIONS}):
            better = f"; the guide calls it {_MISSPELT[key]!r}" if key in _MISSPELT else ""
            out.append(
                f"{where}: unknown key {key!r} (a case has id, prompt, expected_output, files, assertions){better}"
            )
        key = None
        if "id" not in raw:
            out.append(f"{where}: no 'id'")
        else:
            try:
                key = case_text(raw["id"])
            except EvalError as exc:
                out.append(f"{where}: {exc.message}")
            if key is not None and key in seen:
                out.append(f"{where}: id {key!r} is also evals[{seen[key]}]'s (ids are distinct as text)")
            elif key is not None:
                seen[key] = i
        where = f"eval {key}" if key is not None else where
        for text_key in ("prompt", "expected_output"):
            if not isinstance(raw.get(text_key), str) or (text_key == "prompt" and not raw[text_key].strip()):
                out.append(f"{where}: {text_key!r} is {'a non-empty' if text_key == 'prompt' else 'a'} text")
        files = raw.get("files", [])
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            out.append(f"{where}: 'files' is an array of paths relative to the skill folder")
            files = []
        names: dict[str, str] = {}
        for rel in files:
            problem = _file_problem(rel, present)
            if problem:
                out.append(f"{where}: file {rel!r} {problem}")
                continue
            base = rel.rsplit("/", 1)[-1]
            if base in names:
                out.append(
                    f"{where}: files {names[base]!r} and {rel!r} have the same file name (a run's "
                    "$EVAL_INPUTS holds each under its file name)"
                )
            names[base] = rel
        named = "assertions"
        if CREATOR_ASSERTIONS in raw:
            if "assertions" in raw:
                out.append(
                    f"{where}: both 'assertions' and 'expectations' (skill-creator's name for them): which "
                    "one grades is ambiguous; keep 'assertions' (the guide's) alone"
                )
            else:
                named = CREATOR_ASSERTIONS
                if warnings is not None:
                    warnings.append(
                        f"{EVALS_JSON}: {where}: 'expectations' is skill-creator's name; the agentskills "
                        "guide calls it 'assertions' (read as them; rename it to be portable)"
                    )
        assertions = raw.get(named, [])
        if not isinstance(assertions, list) or not all(isinstance(a, str) and a.strip() for a in assertions):
            out.append(f"{where}: {named!r} is an array of non-empty texts")
            assertions = []
        if len(out) == before:
            out.extend(f"{where}: {p}" for p in _unencodable(raw))
        if len(out) == before and key is not None:
            parsed.append(Case(key, raw["prompt"], raw["expected_output"], tuple(files), tuple(assertions), raw))
    if out:
        return out
    return EvalSet(name, tuple(parsed))


def _unencodable(raw: Mapping[str, Any]) -> list[str]:
    """What a run could not carry of a well-typed case: a lone surrogate (a ``\\ud800`` escape) in any text,
    a NUL in the prompt."""
    out = []
    texts = [("prompt", raw["prompt"]), ("expected_output", raw["expected_output"])]
    texts += [("id", raw["id"])] if isinstance(raw["id"], str) else []
    texts += [("a file path", f) for f in raw.get("files", [])]
    texts += [("an assertion", a) for a in raw.get("assertions", [])]
    for what, text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            out.append(
                f"{what} holds a lone surrogate (\\u{ord(text[exc.start]):04x}): not Unicode text, so the "
                "case has no RFC 8785 digest"
            )
    with contextlib.suppress(UnicodeEncodeError):
        if len(raw["prompt"].encode("utf-8")) > MAX_PROMPT:
            out.append(
                f"'prompt' is {len(raw['prompt'].encode('utf-8'))} bytes; $EVAL_PROMPT holds at most "
                f"{MAX_PROMPT} (Linux's 128 KiB for one environment string): put the long part in a file of "
                "'files'"
            )
    if "\x00" in raw["prompt"]:
        out.append("'prompt' holds a NUL (\\u0000), which $EVAL_PROMPT cannot carry")
    return out


def _file_problem(rel: str, present: Collection[str] | None) -> str | None:
    if rel.startswith("/") or rel.startswith("./"):
        return "is not a plain path relative to the skill folder (no leading / or ./)"
    try:
        parts = check_support_path(rel)
    except SkillError as exc:
        return f"is not a path inside the skill folder: {exc.message}"
    if parts[0] != EVALS_DIR or len(parts) < 2:
        return "is not under evals/: a case's input files are part of the eval set, whose digest covers evals/ alone"
    if present is not None and rel not in present:
        return "is not a file of the skill"
    return None
