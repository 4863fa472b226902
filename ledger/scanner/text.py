"""The decoded file the scanner's text rules read: its lines, code fences and role, cheap
word gates, and the two helpers every rule shares (a finding's printable detail, the hosts
a text names).  Kept apart from the patterns so each module reads on its own."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator

from ledger.errors import printable

__all__ = ["DOC_EXT", "SCRIPT_EXT", "URL", "TextFile", "detail", "hosts", "words"]


def detail(text: str, limit: int = 80) -> str:
    """A finding's detail: printable, one line, never more than ``limit`` characters of payload."""
    one = printable(" ".join(text.split()))
    return one if len(one) <= limit else one[: limit - 1] + "…"


URL = re.compile(r"\b(?:https?|ftp)://(?:[^\s/@'\"<>()\[\]`]{0,100}@)?([A-Za-z0-9._\-\[\]:]+)", re.I)


def hosts(text: str) -> set[str]:
    """Host names of the URLs in ``text``, lower-case, without port or user."""
    out = set()
    for m in URL.finditer(text):
        host = m.group(1).lower().rstrip(".")
        if not host.startswith("["):
            host = host.split(":", 1)[0]
        if host and not host.startswith(("$", "{", "<")):
            out.add(host)
    return out


def words(text: str) -> tuple[str, ...]:
    """A tuple of the words in ``text``: long word lists stay readable and short."""
    return tuple(text.split())


SCRIPT_EXT = frozenset(words(".sh .bash .zsh .fish .py .js .mjs .cjs .ts .ps1 .psm1 .rb .pl .php .lua .bat .cmd"))
DOC_EXT = frozenset({".md", ".markdown", ".mdx", ".txt", ".rst", ".html", ".htm"})


MAGIC = (  # executables (LS703)
    (b"\x7fELF", "ELF"),
    (b"\xfe\xed\xfa\xce", "Mach-O"),
    (b"\xfe\xed\xfa\xcf", "Mach-O"),
    (b"\xce\xfa\xed\xfe", "Mach-O"),
    (b"\xcf\xfa\xed\xfe", "Mach-O"),
    (b"\xca\xfe\xba\xbe", "Mach-O universal or Java class"),
)
ARCHIVES = (  # archives (LS704)
    (b"PK\x03\x04", "zip"),
    (b"\x1f\x8b", "gzip"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"Rar!", "rar"),
    (b"\xfd7zXZ\x00", "xz"),
)


def decoded(data: bytes) -> tuple[str, int | None] | None:
    """The text of a file and the offset (in the text) of its first invalid UTF-8 byte (``None``
    when it is all valid), or ``None`` when the file looks binary: an executable's or archive's magic
    number (:data:`MAGIC`, :data:`ARCHIVES`) or a NUL byte in its first 8 KiB.
    A text file with a stray invalid byte is still text: it is decoded with U+FFFD for each bad
    byte and every rule reads it (one ``<!-- \\xff -->`` must not switch the text rules off)."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        if b"\x00" in data[:8192] or any(data.startswith(m) for m, _ in MAGIC + ARCHIVES):
            return None
        return data.decode("utf-8", "replace"), len(data[: e.start].decode("utf-8"))


class TextFile:
    """One decoded file and what the rules ask of it: lines, code fences, its role."""

    def __init__(self, path: str, text: str, executable: bool) -> None:
        self.path = path
        self.text = text
        self.executable = executable
        name = path.rsplit("/", 1)[-1]
        self.ext = ("." + name.rsplit(".", 1)[-1].lower()) if "." in name else ""
        self.instructions = path == "SKILL.md"
        self.script = executable or self.ext in SCRIPT_EXT or (path.startswith("scripts/") and not self.ext)
        self.doc = not self.script and self.ext in DOC_EXT | {""}
        self.low = text.lower()  # for cheap gates only: its offsets need not match text's
        self._starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.lines = text.split("\n")
        self.fenced = self._fences() if self.doc else [self.script] * len(self.lines)

    def _fences(self) -> list[bool]:
        inside, fence, out = False, "", []
        for line in self.lines:
            m = re.match(r"\s{0,3}(`{3,}|~{3,})", line)
            if m and (not inside or (m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence))):
                out.append(True)
                inside, fence = (not inside), m.group(1)
                continue
            out.append(inside)
        return out

    @functools.cached_property
    def low_lines(self) -> list[str]:
        """The lines of :attr:`low`: lower() keeps every line feed, so they line up with :attr:`lines`."""
        return self.low.split("\n")

    def has(self, words: tuple[str, ...]) -> bool:
        """Whether any of ``words`` (lower case) occurs: a gate that spares most files a slow pattern."""
        return any(w in self.low for w in words)

    def spans(self, words: tuple[str, ...]) -> Iterator[tuple[int, int]]:
        """Offsets of each logical line (joined at a trailing backslash) that holds one of ``words``."""
        if not self.has(words):
            return
        low = self.low_lines
        i, n = 0, len(self.lines)
        while i < n:
            j = i
            while self.lines[j].rstrip("\r").endswith("\\") and j + 1 < n:
                j += 1
            if any(w in low[k] for k in range(i, j + 1) for w in words):
                yield self._starts[i], self._starts[j] + len(self.lines[j])
            i = j + 1

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)

    @property
    def critical_place(self) -> bool:
        """SKILL.md and code: what the agent reads as instructions or runs."""
        return self.instructions or self.script
