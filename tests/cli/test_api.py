"""The Python API of the commands (ledger/api.py): every name is a use case returning a typed report,
and a program calling it gets the document the command prints."""

from __future__ import annotations

import inspect
import json
import re
import typing
from pathlib import Path

from ledger import api
from ledger.reports import Report
from tests.harness.cli import run_in_process


def _reports_in(fn: typing.Callable[..., object]) -> list[type]:
    """The report classes a use case's return annotation names (read in its module, as written)."""
    ann = inspect.signature(fn).return_annotation
    names = re.findall(r"[A-Za-z_][A-Za-z_0-9.]*", ann if isinstance(ann, str) else getattr(ann, "__name__", ""))
    found = [fn.__globals__.get(n) for n in names]  # type: ignore[attr-defined]
    return [c for c in found if isinstance(c, type) and issubclass(c, Report)]


def test_every_name_is_a_use_case_that_returns_a_report() -> None:
    assert api.__all__ and set(api.__all__) == set(api.USE_CASES)
    for name in api.__all__:
        fn = getattr(api, name)
        assert callable(fn), name
        if name == "watch":  # a stream: each pass's report goes to a callback
            assert "on_report" in inspect.signature(fn).parameters
            continue
        assert _reports_in(fn), f"{name}: {inspect.signature(fn).return_annotation!r} names no report"


def test_a_program_gets_the_document_the_command_prints(tmp_path: Path) -> None:
    from ledger.brain import Brain

    run_in_process("init", "--unsigned", str(tmp_path / "b"), check=True)
    run_in_process(
        "--brain",
        str(tmp_path / "b"),
        "skill",
        "create",
        "alpha",
        "--description",
        "Alpha. Use when a.",
        "--body",
        "# Alpha",
        check=True,
    )
    printed = {
        c: json.loads(run_in_process("--brain", str(tmp_path / "b"), *c.split(), "--json", check=True).stdout)
        for c in ("status", "skill list", "log", "index")
    }
    with Brain.open(tmp_path / "b") as brain:
        assert api.status(brain).to_json() == printed["status"]
        assert api.skill_list(brain).to_json() == printed["skill list"]
        assert api.log(brain).to_json() == printed["log"]
        assert api.index(brain).to_json() == printed["index"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        api.no_such_use_case  # noqa: B018
    except AttributeError as exc:
        assert "no_such_use_case" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")
