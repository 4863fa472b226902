"""Decoders an attacker wraps a payload in: base64, hex, rot13, ``xxd -r -p``, ``printf`` escapes (skeleton)."""

from __future__ import annotations

__all__ = ["decodings"]


def decodings(text: str) -> list[str]:
    """Every printable text ``text`` decodes to under one decoder (skeleton)."""
    return []
