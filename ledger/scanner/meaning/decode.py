"""Decoders an attacker wraps a payload in: base64, hex, rot13, ``xxd -r -p``, ``printf`` escapes.

:func:`decodings` tries each decoder once on a token; what it returns is judged again as code by
the analyser that asked.  The work is linear in the input and capped (:data:`MAX_INPUT`), and
only printable text comes back: a decoder that yields bytes no one could read has found nothing.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re

__all__ = ["MAX_INPUT", "b64", "decodings", "looks_like_code", "printable_text", "respelled"]

MAX_INPUT = 256 * 1024  # characters of one token tried: a payload is a few kilobytes, not a megabyte
MIN_TOKEN = 8  # shorter runs are words, not payloads

_B64 = re.compile(r"[A-Za-z0-9+/_\-]{8,}={0,2}")  # MIN_TOKEN characters or more
_HEX = re.compile(r"(?:[0-9a-fA-F]{2}){4,}")
_ESC = re.compile(r"(?:\\x[0-9a-fA-F]{2}|\\[0-7]{1,3}|\\u[0-9a-fA-F]{4})")
_CODEY = re.compile(
    r"https?://|\b(?:curl|wget|bash|sh|python\d?|perl|ruby|node|nc|ncat|socat|eval|exec|import|require|"
    r"powershell|iex|invoke-expression|system|subprocess|socket|chmod|base64|cat|echo|rm|from|def|function|"
    r"fetch|open|dev/tcp)\b|[|;&$(){}]|/etc/|~/\.|/bin/",
    re.I,
)

_STRONG = re.compile(r"https?://|\b(?:curl|wget|bash|python\d?|exec|eval|import|powershell|socket|subprocess)\b", re.I)


def printable_text(data: bytes, *, utf16: bool = False) -> str | None:
    """``data`` as text when every character is printable (tabs and newlines allowed), else None."""
    try:
        text = data.decode("utf-16-le" if utf16 else "utf-8")
    except UnicodeDecodeError:
        return None
    if not text.strip() or any(not (c.isprintable() or c in "\t\r\n") for c in text):
        return None
    return text


def looks_like_code(text: str) -> bool:
    """True when ``text`` reads like a command, a URL or a program rather than a word."""
    return bool(_CODEY.search(text))


def b64(token: str) -> str | None:
    """``token`` decoded as base64 (standard or URL-safe, padded or not) into printable text, else None."""
    t = token.strip()
    if len(t) < MIN_TOKEN or len(t) > MAX_INPUT:
        return None
    t = t.rstrip("=")
    alt = "-_" if ("-" in t or "_" in t) else None
    t += "=" * (-len(t) % 4)
    if len(t.rstrip("=")) % 4 == 1:
        return None
    try:
        raw = base64.b64decode(t, altchars=alt.encode() if alt else None, validate=True)
    except (binascii.Error, ValueError):
        return None
    text = printable_text(raw)
    if text is None and len(raw) >= 4 and raw[1:2] == b"\0":
        text = printable_text(raw, utf16=True)  # PowerShell -EncodedCommand: UTF-16LE
    return text


def _hex(token: str) -> str | None:
    t = token.strip()
    if t[:2].lower() == "0x":
        t = t[2:]
    t = re.sub(r"[\s:]", "", t)
    if len(t) < MIN_TOKEN or len(t) % 2 or not re.fullmatch(r"[0-9a-fA-F]+", t):
        return None
    return printable_text(bytes.fromhex(t))


def _escapes(text: str) -> str | None:
    if len(_ESC.findall(text)) < 3:
        return None
    out = bytearray()
    i = 0
    while i < len(text):
        m = _ESC.match(text, i)
        if m:
            tok = m.group()
            if tok[1] == "x":
                out.append(int(tok[2:], 16))
            elif tok[1] == "u":
                out.extend(chr(int(tok[2:], 16)).encode())
            else:
                out.append(int(tok[1:], 8) & 0xFF)
            i = m.end()
        else:
            out.extend(text[i].encode())
            i += 1
    return printable_text(bytes(out))


def decodings(text: str) -> list[str]:
    """Every printable text ``text`` decodes to under one decoder: base64 (std/URL, padded or not,
    and UTF-16LE for PowerShell), hex, ``\\xNN``/octal escapes, rot13 (only when the result reads
    like code or a URL and the input did not).  Longest tokens are tried; at most 16 results."""
    text = text[:MAX_INPUT]
    out: list[str] = []

    def add(s: str | None) -> None:
        if s and s.strip() and s != text and s not in out:
            out.append(s)

    whole = text.strip()
    add(_escapes(whole))
    if _HEX.fullmatch(whole.removeprefix("0x")):
        add(_hex(whole))
    tokens = sorted({m.group() for m in _B64.finditer(text)}, key=len, reverse=True)[:8]
    for tok in tokens:
        if tok.isdigit() or (tok.isalpha() and tok.islower()):
            continue  # a number or a plain word
        if _HEX.fullmatch(tok):
            add(_hex(tok))
            continue
        add(b64(tok))
    if re.search(r"[A-Za-z]", whole) and not _STRONG.search(whole):
        rot = codecs.decode(whole, "rot13")
        if _STRONG.search(rot):
            add(rot)
    return out[:16]


_CODES = re.compile(r"(?:fromCharCode|chr|bytes|pack)\W{0,40}?[(\[]\s*(\d{1,3}(?:\s*,\s*\d{1,3}){5,})\s*,?\s*[)\]]")
_SINK = re.compile(r"\b(?:system|exec\w*|eval|spawn\w*|popen|Function|subprocess|run|call)\b|\|\s*(?:ba|z|da|k)?sh\b")
_ASSIGN = re.compile(r"\b([A-Za-z_]\w*)=(['\"]?)([^\s'\";|&]{8,})\2")
_QASSIGN = re.compile(r"\b([A-Za-z_]\w*)=(['\"])([^'\"\n]*\\[x0-7u][^'\"\n]*)\2")
_SLICE = re.compile(r"\$\{([A-Za-z_]\w*):(\d{1,4}):(\d{1,4})\}")
_TR = re.compile(
    r"(?:echo|printf)\s+(['\"])([^'\"\n]{4,})\1\s*\|\s*tr\s+(['\"]?)(\S+?)\3\s+(['\"]?)(\S+?)\5"
    r"(\s*\|\s*(?:ba|z|da|k)?sh\b)"
)


def _expand(spec: str) -> str:
    out, i = [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-" and spec[i] <= spec[i + 2]:
            out.extend(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(out)


def respelled(text: str) -> list[str]:
    """Payloads spelled so that no decoder above sees them, read back as the text that runs: a list
    of character codes (``String.fromCharCode(…)``, ``map(chr, […])``, ``bytes([…])``) in a unit
    that executes something; ``${a:N:M}`` slices of a string variable; ``echo X | tr SET1 SET2 | sh``
    with any mapping.  Only results that read like code come back (the caller judges them)."""
    text = text[:MAX_INPUT]
    out: list[str] = []

    def add(s: str) -> None:
        if s and s not in out and _STRONG.search(s):
            out.append(s)

    if _SINK.search(text):
        for m in list(_CODES.finditer(text))[:8]:
            codes = [int(n) for n in m.group(1).split(",")]
            if all(9 <= c <= 126 for c in codes):
                add("".join(map(chr, codes)))
    slices = list(_SLICE.finditer(text))
    if len(slices) >= 3:
        values = {m.group(1): m.group(3) for m in _ASSIGN.finditer(text)}
        if any(s.group(1) in values for s in slices):
            add(
                _SLICE.sub(
                    lambda s: (
                        values[s.group(1)][int(s.group(2)) : int(s.group(2)) + int(s.group(3))]
                        if s.group(1) in values
                        else s.group(0)
                    ),
                    text,
                )
            )
    for m in list(_QASSIGN.finditer(text))[:8]:
        name, value = m.group(1), m.group(3)
        expands = (
            rf"(?:printf\s+['\"]?[^'\"\s]*%b\S*|echo\s+-\w*e\w*)\s+\"?\$\{{?{name}\b"
            r"[^\n|]*\|\s*(?:ba|z|da|k)?sh\b"
        )
        if re.search(expands, text):
            add(_escapes(value) or "")
    for m in list(_TR.finditer(text))[:8]:
        src, dst = _expand(m.group(4)), _expand(m.group(6))
        if src and dst:
            dst = dst + dst[-1] * (len(src) - len(dst))
            add(m.group(2).translate(str.maketrans(src, dst[: len(src)])))
    return out[:16]
