"""The stdio wire of ``ledger mcp``: every line gets a reply or is forwarded whole, never dropped.

The SDK's own stdio transport hands a line it cannot validate to the session as an
exception, and the client waits forever (a lone surrogate, a deeply nested argument).
This transport screens each line first, with bounded work:

- a line longer than :data:`MAX_LINE` bytes is a parse error (-32700);
- a line nested deeper than :data:`MAX_DEPTH` is an invalid request (-32600), answered
  with the request's id when that can be read at the top level;
- a string holding a lone UTF-16 surrogate is invalid params (-32602): it could not be
  written back out as UTF-8;
- anything the SDK's own message model would refuse is refused here, with the id.

Only lines that pass reach the SDK, so the SDK never sees a message it would drop.
Notifications that fail get no reply, as JSON-RPC 2.0 requires.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio

__all__ = ["MAX_DEPTH", "MAX_LINE", "Wire", "screen"]

MAX_LINE = 16 * 1024 * 1024  # bytes: a 1 MiB file, escaped, fits many times over
MAX_DEPTH = 64
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602

_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_TOO_LONG = f"message is over {MAX_LINE} bytes"


def _depth(line: bytes) -> int:
    """The deepest nesting of ``line``, strings left out: linear, with no recursion."""
    deepest = depth = 0
    for match in _BRACKETS.finditer(_STRINGS.sub(b'""', line)):
        depth += 1 if match.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def _top_level_id(line: bytes) -> Any:
    """The ``id`` member of a top-level object, read without parsing what is nested (else None)."""
    text = _STRINGS.sub(lambda m: b"S" * len(m.group()), line)  # same offsets, no brackets inside strings
    depth = 0
    for at, byte in enumerate(text):
        if byte in b"[{":
            depth += 1
        elif byte in b"]}":
            depth -= 1
        elif depth == 1 and line[at : at + 4] == b'"id"':
            rest = line[at + 4 :].lstrip()
            if rest[:1] != b":":
                continue
            try:
                value, _ = json.JSONDecoder().raw_decode(rest[1:].lstrip().decode("utf-8", "replace"))
            except ValueError:
                return None
            return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    return None


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _lone_surrogate(doc: Any) -> str | None:
    """The path of the first string (key or value) holding a lone surrogate, walked without recursion."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return path or "(message)"
        elif isinstance(node, dict):
            for key, value in node.items():
                if _SURROGATE.search(key):
                    return f"{path}.{key!a}" if path else repr(key)
                stack.append((f"{path}.{key}" if path else key, value))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", value) for i, value in enumerate(node))
    return None


def screen(line: bytes) -> tuple[str | None, dict[str, Any] | None]:
    """``(forward, reply)``: the line to hand to the SDK, or the error to send back (or neither)."""
    if len(line) > MAX_LINE:
        return None, _error(None, PARSE_ERROR, _TOO_LONG)
    if not line.strip():
        return None, None
    if _depth(line) > MAX_DEPTH:
        return None, _error(_top_level_id(line), INVALID_REQUEST, f"message nests deeper than {MAX_DEPTH} levels")
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return None, _error(None, PARSE_ERROR, f"not JSON: {exc}")
    if not isinstance(doc, dict):
        return None, _error(None, INVALID_REQUEST, "a message is one JSON object (batches are not supported)")
    ident = doc.get("id")
    answerable = "method" in doc and isinstance(ident, (str, int)) and not isinstance(ident, bool)
    bad = _lone_surrogate(doc)
    if bad is not None:
        message = f"{bad} holds a lone UTF-16 surrogate; send valid Unicode text"
        return None, _error(ident, INVALID_PARAMS, message) if answerable else None
    text = json.dumps(doc, ensure_ascii=False)
    try:
        from mcp_types import jsonrpc_message_adapter

        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception as exc:  # pydantic's ValidationError, or anything its parser raises
        first = str(exc).splitlines()[0][:300]
        if not answerable:
            return None, _error(None, INVALID_REQUEST, f"not a JSON-RPC 2.0 message: {first}") if "method" in doc \
                and "id" in doc else None  # fmt: skip
        return None, _error(ident, INVALID_REQUEST, f"not a valid JSON-RPC 2.0 request: {first}")
    return text, None


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
                self._send(json.dumps(reply, ensure_ascii=False))
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
