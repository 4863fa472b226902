"""The report base (ledger/reports.py): the document in field order, OMIT, keys, and the schema."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

import jsonschema
import pytest

from ledger.reports import OMIT, Report, key, optional


@dataclass(frozen=True)
class Inner(Report):
    """A nested part."""

    path: str
    status: Literal["added", "modified", "deleted"]


@dataclass(frozen=True)
class Sample(Report):
    """A sample report.

    Only its first paragraph is the schema's description."""

    name: str
    count: int
    signer: str | None
    parts: tuple[Inner, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    source: str = key("from", default="here")
    gate: str = optional()


def test_the_document_keeps_field_order_and_leaves_omitted_keys_out() -> None:
    r = Sample("a", 2, None, (Inner("x", "added"),), {"b": "c"})
    assert json.dumps(r.to_json()) == json.dumps(
        {
            "name": "a",
            "count": 2,
            "signer": None,
            "parts": [{"path": "x", "status": "added"}],
            "files": {"b": "c"},
            "from": "here",
        }
    )
    assert "gate" in Sample("a", 2, None, gate="held").to_json()
    assert not OMIT and repr(OMIT) == "OMIT"


def test_the_schema_accepts_every_document_and_refuses_a_wrong_one() -> None:
    schema = Sample.schema()
    assert schema["required"] == ["name", "count", "signer", "parts", "files", "from"]
    assert schema["description"] == "A sample report."
    jsonschema.Draft202012Validator.check_schema(schema)
    for doc in (Sample("a", 2, None).to_json(), Sample("a", 2, "0x1", gate="g").to_json()):
        jsonschema.validate(doc, schema)
    for bad in (
        {**Sample("a", 2, None).to_json(), "count": "2"},
        {**Sample("a", 2, None).to_json(), "extra": 1},
        {**Sample("a", 2, None, (Inner("x", "added"),)).to_json(), "parts": [{"path": "x", "status": "gone"}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_a_type_with_no_schema_is_refused_not_guessed() -> None:
    @dataclass(frozen=True)
    class Odd(Report):
        when: bytes

    with pytest.raises(TypeError, match="no JSON Schema"):
        Odd.schema()
