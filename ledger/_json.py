"""JSON from a peer, measured before a parser sees it: how deep it nests, in linear time, no recursion.

Python's json recurses in C per level; a hostile document nested deep enough exhausts the stack
(a segfault where a test raised the recursion limit).  The MCP wire and the supply record both
refuse depth first, with this one function.  :func:`unique_keys` is the ``object_pairs_hook`` for
documents two readers must not read two ways (attestations, epoch receipts): a key named twice is refused.
:data:`MAX_INT` bounds every integer an RFC 8785 write takes (:mod:`ledger.protocol.jcs`).
"""

from __future__ import annotations

import json
import re
import sys

TYPE_CHECKING = False  # typing stays out of the fast path's start: every annotation here is a string
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_INT", "STRING", "STRINGS", "depth", "loads_local", "no_constant", "shown", "unique_keys"]

MAX_INT = 2**53 - 1  # I-JSON's safe integers (RFC 7493 §2.2), all RFC 8785 writes

# A string, whole: an unterminated one runs to the end of the input, so no scan starts again inside it
# (a required closing quote made a line of escaped quotes take quadratic time).
STRING = rb'"(?:[^"\\]|\\.)*"?'
STRINGS = re.compile(STRING, re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def depth(data: bytes) -> int:
    """The deepest nesting of ``data``'s brackets, strings left out."""
    deepest = level = 0
    for match in _BRACKETS.finditer(STRINGS.sub(b'""', data)):
        level += 1 if match.group() in (b"[", b"{") else -1
        deepest = max(deepest, level)
    return deepest


_SAFE_LIMIT = 2000  # nesting json's C decoder can reach on any thread's stack; Python's default is 1000


def loads_local(data: bytes | str) -> Any:
    """``json.loads`` of a file this machine wrote (a cache), which a crash or a hand may have damaged.

    py_ecc (imported with eth-account) raises the recursion limit to 100,000 on import, past what the C
    stack holds, so a deeply nested file would crash the process instead of raising RecursionError.  Too
    big to measure with :func:`depth` on every read (a 10,000-skill stat cache is 2.6 MB), it is parsed
    under a limit the stack holds; any failure is the caller's miss."""
    limit = sys.getrecursionlimit()
    if limit <= _SAFE_LIMIT:
        return json.loads(data)
    sys.setrecursionlimit(_SAFE_LIMIT)
    try:
        return json.loads(data)
    finally:
        sys.setrecursionlimit(limit)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads(..., object_pairs_hook=unique_keys)``: an object that names a key twice is a ValueError
    (Python keeps the last value, other readers the first)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice")
        out[key] = value
    return out


def no_constant(name: str) -> Any:
    """``json.loads(..., parse_constant=no_constant)``: ``NaN``, ``Infinity`` and ``-Infinity``, which
    Python's json reads and RFC 8259 does not have, are a ValueError."""
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def shown(value: Any, most: int = 80) -> str:
    """A value from a document, in a message, as JSON writes it (``null``, ``["a"]``, ``"text"``): what the
    user's file says, never a Python repr (``None``, ``['a']``); cut to ``most`` characters."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= most else text[: most - 1] + "…"
