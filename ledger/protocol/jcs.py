"""The project's one RFC 8785 (JCS) writer.

Outcome records, attestation statements and ERC-8239 manifests are all written by
:func:`canonical`, each caller adding only its own domain rules and error type.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ledger._json import MAX_INT

__all__ = ["canonical"]


def canonical(value: Any) -> bytes:
    """RFC 8785 (JCS) bytes of ``value``; a ``ValueError`` when it has none (a NaN, a lone surrogate, an
    integer past 2^53, a key that is not a string).

    Trail of Bits' ``rfc8785`` is the reference and writes anything unusual. Values whose
    ``json.dumps`` bytes are the same as RFC 8785's (ASCII keys, strings, integers within 2^53,
    non-integral floats in [1e-4, 1e16): same escapes, same shortest round-trip digits, and ASCII keys
    sort the same by code point as by UTF-16 unit) are written by ``json.dumps`` at a tenth of the cost,
    since a bulk import writes 100,000 outcome records (tests/unit/evals/test_outcomes.py checks the two agree).
    """
    if _plain(value):
        try:
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
                "utf-8"
            )
        except UnicodeEncodeError as exc:
            raise ValueError(str(exc)) from exc
    import rfc8785

    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, UnicodeError, TypeError) as exc:
        raise ValueError(str(exc)) from exc


def _plain(value: Any) -> bool:
    """Whether ``json.dumps`` writes ``value`` exactly as RFC 8785 does."""
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return abs(value) <= MAX_INT
    if isinstance(value, float):
        return math.isfinite(value) and not value.is_integer() and 1e-4 <= abs(value) < 1e16
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and k.isascii() and _plain(v) for k, v in value.items())
    return False
