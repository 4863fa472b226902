"""Typed results of the use cases: what a command prints with ``--json``, what an MCP tool returns.

A use case (``ledger.sync.run.sync``, ``ledger.audit…``) returns a report: a frozen
dataclass deriving from :class:`Report`. The CLI renders it and picks the exit code; the
MCP tools and the Python API get the same object. ``to_json()`` is the document, keys in
field order, so a command typed after the fact prints the bytes it printed before; a key
the document carries only sometimes is a field whose default is :data:`OMIT`.
``schema()`` is the document's JSON Schema (draft 2020-12), derived from the type hints:
the one schema ``--json``, ``docs/json.md`` and the MCP tools share (ADR 73).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, ClassVar, Literal, Union


class _Omitted:
    """The value of a key the document leaves out (as ``None`` would print ``null``)."""

    _one: ClassVar[_Omitted | None] = None

    def __new__(cls) -> _Omitted:
        if cls._one is None:
            cls._one = super().__new__(cls)
        return cls._one

    def __repr__(self) -> str:
        return "OMIT"

    def __bool__(self) -> bool:
        return False


OMIT: Any = _Omitted()


def optional(key: str | None = None) -> Any:
    """A field the document carries only when it is set (default :data:`OMIT`)."""
    return dataclasses.field(default=OMIT, metadata={"key": key} if key else {})


def key(name: str, **kw: Any) -> Any:
    """A field whose JSON key is not a Python name (``from``, ``tool-calls``)."""
    return dataclasses.field(metadata={"key": name}, **kw)


def plain(value: Any) -> Any:
    """``value`` as JSON data: reports and objects with ``to_json`` become dicts, tuples lists."""
    if isinstance(value, Report) or (hasattr(value, "to_json") and not isinstance(value, type)):
        return value.to_json()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class Report:
    """The base of every typed result; subclasses are ``@dataclass(frozen=True)``."""

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is OMIT:
                continue
            doc[f.metadata.get("key", f.name)] = plain(value)
        return doc

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """The JSON Schema of ``to_json()``'s document."""
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": cls.__name__, **_object_schema(cls)}


class Listing(Report):
    """A report whose document is a JSON array: the items of its first field, in order.

    ``ledger index``, ``log``, ``skill list``, ``target list``, ``skill lint``, ``supply outdated``,
    ``outcome list`` … have always printed a list; a field after the first (``strict``) is for the
    CLI's rendering, not the document."""

    def _items(self) -> Any:
        return getattr(self, dataclasses.fields(self)[0].name)  # type: ignore[arg-type]

    def to_json(self) -> list[Any]:  # type: ignore[override]
        return [plain(e) for e in self._items()]

    @classmethod
    def schema(cls) -> dict[str, Any]:
        first = dataclasses.fields(cls)[0].name  # type: ignore[arg-type]
        out: dict[str, Any] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": cls.__name__,
            **_type_schema(typing.get_type_hints(cls)[first]),
        }
        if (cls.__doc__ or "").strip():
            out["description"] = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
        return out


def _object_schema(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        name = f.metadata.get("key", f.name)
        props[name] = _type_schema(hints[f.name])
        if f.default is not OMIT:
            required.append(name)
    out: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if (cls.__doc__ or "").strip():
        out["description"] = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
    out["additionalProperties"] = bool(getattr(cls, "open_keys", False))
    return out


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _type_schema(tp: Any) -> dict[str, Any]:
    if tp is Any or tp is object:
        return {}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_type_schema(a) for a in args]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {"type": "array", "prefixItems": [_type_schema(a) for a in args], "items": False}
        return {"type": "array", "items": _type_schema(args[0]) if args else {}}
    if origin is dict or tp is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1]) if args else {}}
    if isinstance(tp, type) and hasattr(tp, "json_schema"):  # a type that is not a report says its own
        return dict(tp.json_schema())
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _object_schema(tp)
    raise TypeError(
        f"no JSON Schema for {tp!r}: use str, int, float, bool, None, list, dict, Literal, "
        "a union of them, or a dataclass"
    )


@dataclasses.dataclass(frozen=True)
class NoChange(Report):
    """A write that would change nothing: not a failure (exit 0).

    A script re-applying the same content sees success."""

    changed: Literal[False] = False
    reason: str = ""
