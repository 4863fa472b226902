"""The stdio wire of ``ledger mcp``: every line gets a reply or is forwarded whole, never dropped.

The SDK's own stdio transport hands a line it cannot validate to the session as an
exception, and the client waits forever (a lone surrogate, a deeply nested argument);
a request whose id the SDK cannot read (``1.5``, ``true``) it takes for a notification
and never answers. This transport screens each line first, with bounded work, and
answers what the SDK would not, with the JSON-RPC 2.0 error the specification names:

- a line longer than :data:`MAX_LINE` bytes, or not JSON, is a parse error (-32700, id null);
- a line nested deeper than :data:`MAX_DEPTH` is an invalid request (-32600), with the
  request's id when that can be read at the top level;
- a message that is not a request, notification or response is an invalid request
  (-32600, id null): not an object (a batch: MCP has none since 2025-06-18), no
  ``method`` (``{}``), or an id that is no id (``true``, ``null``, ``{}``, ``[1]``);
- a request (a ``method`` and an ``id``) whose id is a number the SDK cannot carry
  (``1.5``, ``1e400``, over :data:`MAX_DIGITS` digits) is an invalid request answered
  with that id exactly as the client wrote it (ADR 16); one whose envelope is wrong
  (``jsonrpc``, ``method``, ``params``) is answered with its id;
- a string holding a lone UTF-16 surrogate, an integer of more than :data:`MAX_DIGITS`
  digits or a number beyond a double's range (``1e400``) in the params is invalid params
  (-32602): none could be carried on, and positional params are too (MCP names them);
- anything else the SDK's own message model would refuse is refused here, with the id.

Only lines that pass reach the SDK, so the SDK never sees a message it would drop.
A notification (a string ``method`` and no ``id``) is never answered, valid or not, and
neither is a response (``result`` or ``error``), as JSON-RPC 2.0 requires.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio

from ledger._json import STRING, STRINGS
from ledger._json import depth as json_depth

__all__ = ["MAX_DEPTH", "MAX_DIGITS", "MAX_LINE", "Wire", "screen"]

MAX_LINE = 16 * 1024 * 1024  # bytes: a 1 MiB file, escaped, fits many times over
MAX_DEPTH = 64
MAX_DIGITS = 4300  # Python's and pydantic's own bound on an integer's digits (sys.get_int_max_str_digits)
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602

_STRINGS = STRINGS  # a string, whole (ledger._json)
_TOKENS = re.compile(STRING + rb"|[\[\]{}]", re.DOTALL)  # strings whole, so no bracket inside one counts
_KEY_END = re.compile(rb"\s*:\s*")
_SCALAR = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")
_SURROGATE = re.compile("[\ud800-\udfff]")
_TOO_LONG = f"message is over {MAX_LINE} bytes"
_NOT_AN_ID = "the request's id is not a string or an integer (MCP: a request id is a string or an integer, never null)"


class _RawFloat(float):
    """A JSON number written with a fraction or an exponent, with the text the client wrote."""

    raw: str


class _Oversized:
    """An integer of more than :data:`MAX_DIGITS` digits, which Python does not convert: kept as text."""

    def __init__(self, raw: str) -> None:
        self.raw = raw


def _float(text: str) -> float:
    number = _RawFloat(text)
    number.raw = text
    return number


def _int(text: str) -> int | _Oversized:
    if len(text) - text.startswith("-") > MAX_DIGITS:
        return _Oversized(text)
    try:
        return int(text)
    except ValueError:  # a lower sys.set_int_max_str_digits
        return _Oversized(text)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_float=_float, parse_int=_int, parse_constant=_not_json)


def _top_level_id(line: bytes) -> Any:
    """The last ``id`` member of a top-level object (JSON's last-wins, as ``json.loads``), read
    without parsing what is nested: its value if it is a string or a number, else None."""
    found: Any = None
    depth = 0
    for match in _TOKENS.finditer(line):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
        elif token in (b"]", b"}"):
            depth -= 1
        elif depth == 1 and len(token) <= 16 and (colon := _KEY_END.match(line, match.end())):
            try:
                if json.loads(token) != "id":  # a key, decoded: "\u0069d" is "id" too
                    continue
            except ValueError:
                continue
            value = _STRINGS.match(line, colon.end()) or _SCALAR.match(line, colon.end())
            try:
                found = _DECODER.decode(value.group().decode("utf-8", "replace")) if value else None
            except ValueError:
                found = None
    return found


def _id_json(ident: Any) -> str | None:
    """The id as JSON to echo in a reply, if it is one: a number the SDK cannot carry as the client wrote it."""
    if isinstance(ident, (_RawFloat, _Oversized)):
        return ident.raw
    if isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool)):
        return json.dumps(ident, ensure_ascii=False)
    return None


def _error(id_json: str | None, code: int, message: str) -> str:
    """A JSON-RPC error response, as the line to send (the id spliced in as JSON text, so it is echoed as sent)."""
    error = json.dumps({"code": code, "message": message}, ensure_ascii=False, separators=(",", ":"))
    return f'{{"jsonrpc":"2.0","id":{id_json or "null"},"error":{error}}}'


def _unservable(doc: Any) -> str | None:
    """What in ``doc`` could not be carried on (a lone surrogate in a key or a string, an integer
    too long for Python to read, a number a double cannot hold), with its path; walked without recursion."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return f"{path or '(message)'} holds a lone UTF-16 surrogate; send valid Unicode text"
        elif isinstance(node, _Oversized):
            return f"{path} is an integer of {len(node.raw.lstrip('-'))} digits; the server reads at most {MAX_DIGITS}"
        elif isinstance(node, _RawFloat) and not math.isfinite(node):
            return f"{path} is {node.raw[:40]}: a number beyond the range of a double"
        elif isinstance(node, dict):
            for key, value in node.items():
                if _SURROGATE.search(key):
                    return (
                        f"{f'{path}.{key!a}' if path else repr(key)} holds a lone UTF-16 surrogate; "
                        "send valid Unicode text"
                    )
                stack.append((f"{path}.{key}" if path else key, value))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", value) for i, value in enumerate(node))
    return None


def _sdk_refuses(text: str) -> str | None:
    """The first line of the SDK's own refusal of ``text``, or None if its message model takes it."""
    try:
        from mcp_types import jsonrpc_message_adapter

        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception as exc:  # pydantic's ValidationError, or anything its parser raises
        return str(exc).splitlines()[0][:300]
    return None


def _envelope(doc: dict[str, Any]) -> tuple[int, str] | None:
    """What is wrong with a request's envelope, in words a client can act on (else None)."""
    if doc.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'not a valid JSON-RPC 2.0 request: it has "jsonrpc": "2.0"'
    if not isinstance(doc["method"], str):
        return INVALID_REQUEST, "not a valid JSON-RPC 2.0 request: its method is a string"
    if isinstance(doc.get("params"), list):  # by position: JSON-RPC has them, MCP does not
        return INVALID_PARAMS, "params are an object of named members (MCP takes no positional params)"
    if doc.get("params") is not None and not isinstance(doc["params"], dict):
        return INVALID_REQUEST, "not a valid JSON-RPC 2.0 request: its params are an object"
    if _SURROGATE.search(doc["id"]) if isinstance(doc["id"], str) else False:
        return INVALID_REQUEST, "the request's id holds a lone UTF-16 surrogate; send valid Unicode text"
    return None


def screen(line: bytes) -> tuple[str | None, str | None]:
    """``(forward, reply)``: the line to hand to the SDK, or the error line to send back (or neither)."""
    if len(line) > MAX_LINE:
        return None, _error(None, PARSE_ERROR, _TOO_LONG)
    if not line.strip():
        return None, None
    if json_depth(line) > MAX_DEPTH:
        return None, _error(
            _id_json(_top_level_id(line)), INVALID_REQUEST, f"message nests deeper than {MAX_DEPTH} levels"
        )
    try:
        doc = _DECODER.decode(line.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return None, _error(None, PARSE_ERROR, f"not JSON: {exc}"[:300])
    if not isinstance(doc, dict):
        return None, _error(
            None,
            INVALID_REQUEST,
            "a message is one JSON object (MCP has no JSON-RPC batches since protocol 2025-06-18)",
        )
    if ("method" not in doc and ("result" in doc or "error" in doc)) or (
        "id" not in doc and isinstance(doc.get("method"), str)
    ):  # a response, or a notification: forwarded if whole, never answered
        return (None, None) if _unservable(doc) or _sdk_refuses(text := _dump(doc)) else (text, None)
    if "method" not in doc or "id" not in doc:
        return None, _error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message: a request has a method and an id")
    ident = doc["id"]  # a request: its id is echoed if it is one
    id_json = _id_json(ident)
    if id_json is None:
        return None, _error(None, INVALID_REQUEST, _NOT_AN_ID)
    if isinstance(ident, (_RawFloat, _Oversized)):
        shown = id_json if len(id_json) <= 40 else f"{id_json[:20]}…({len(id_json)} characters)"
        return None, _error(
            id_json,
            INVALID_REQUEST,
            f"request id {shown} is not a string or an integer the server "
            f"can carry: send a string, or an integer of at most {MAX_DIGITS} digits with no "
            "fraction or exponent",
        )
    wrong = _envelope(doc)
    if wrong is not None:
        return None, _error(id_json, *wrong)
    bad = _unservable(doc)
    if bad is not None:
        return None, _error(id_json, INVALID_PARAMS, bad)
    text = _dump(doc)
    refusal = _sdk_refuses(text)
    if refusal is not None:
        return None, _error(id_json, INVALID_REQUEST, f"not a valid JSON-RPC 2.0 request: {refusal}")
    return text, None


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False)


class Wire:
    """The process's stdin and stdout as the SDK's async text files, screened (see the module doc).

    fd 0 and fd 1 are moved aside while serving, so stray output from a child cannot
    corrupt a frame; a frame is written whole before the next one starts.
    """

    def __init__(self) -> None:
        self._in = os.fdopen(os.dup(0), "rb", buffering=0)
        self._out = os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        self.replies = 0

    # -- stdin, as the SDK iterates it
    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        reader = _LineReader(self._in)
        while True:
            line, more = await anyio.to_thread.run_sync(reader.next)
            if not more:
                return
            forward, reply = screen(line) if line is not None else (None, _error(None, PARSE_ERROR, _TOO_LONG))
            if reply is not None:
                self.replies += 1
                self._send(reply)
            if forward is not None:
                yield forward

    # -- stdout, as the SDK writes it
    async def write(self, text: str) -> None:
        self._send(text.rstrip("\n"))

    async def flush(self) -> None:
        return None

    def _send(self, frame: str) -> None:
        view = memoryview((frame + "\n").encode("utf-8", "backslashreplace"))
        while view:
            view = view[os.write(self._out, view) :]


class _LineReader:
    """Lines of at most :data:`MAX_LINE` bytes; a longer one is skipped to its end and reported as ``None``."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._buf = bytearray()
        self._eof = False

    def next(self) -> tuple[bytes | None, bool]:
        """``(line, more)``: ``line`` is None for a line over the limit; ``more`` is False at the end."""
        skipping, scanned = False, 0
        while True:
            end = self._buf.find(b"\n", scanned)
            if end >= 0:
                line = bytes(self._buf[:end])
                del self._buf[: end + 1]
                return (None if skipping else line), True
            scanned = len(self._buf)
            if scanned > MAX_LINE:
                skipping, scanned = True, 0
                self._buf.clear()
            if self._eof:
                line = bytes(self._buf)
                self._buf.clear()
                if skipping:
                    return None, True
                return (line, True) if line else (None, False)
            chunk = self._stream.read(1 << 16)
            if chunk:
                self._buf += chunk
            else:
                self._eof = True
