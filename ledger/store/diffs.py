"""Content diffs between two states of a brain, printed as ``git diff`` prints them.

A side is a snapshot (its ``skills/`` tree) or the working tree, read through
:mod:`ledger.write.writepath` like every other read.  Output is git's extended unified
format (``diff --git``, mode lines, ``/dev/null``, ``\\ No newline at end of file``),
so pagers, ``git apply`` and review tools read it as they read git's.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ledger.store.gitstore import FileMap

__all__ = ["Diff", "FileDiff", "Side", "compare", "render_patch", "render_stat"]


@dataclass(frozen=True)
class Side:
    """One state of a brain: a skill's file map (empty when absent), and a file's bytes."""

    files: Callable[[str], FileMap]
    read: Callable[[str, str, bytes], bytes]  # (skill, rel, blob id) → bytes


@dataclass(frozen=True)
class FileDiff:
    path: str  # skills/<name>/<rel>
    status: str  # added | deleted | modified | mode
    old_mode: int | None
    new_mode: int | None
    old: bytes | None
    new: bytes | None

    @property
    def binary(self) -> bool:
        return any(_binary(d) for d in (self.old, self.new) if d is not None)

    def counts(self) -> tuple[int, int]:
        """Lines added and removed (0, 0 for binary files), as ``git diff --stat`` counts them."""
        if self.binary:
            return 0, 0
        plus = minus = 0
        for line in self._lines():
            if line.startswith("+") and not line.startswith("+++"):
                plus += 1
            elif line.startswith("-") and not line.startswith("---"):
                minus += 1
        return plus, minus

    def _lines(self) -> list[str]:
        a = _text(self.old).splitlines(keepends=True)
        b = _text(self.new).splitlines(keepends=True)
        out: list[str] = []
        for line in difflib.unified_diff(a, b, n=3):
            if line.startswith(("---", "+++")):
                continue
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return out


@dataclass(frozen=True)
class Diff:
    """What differs between two states: ``old``/``new`` name them (a commit id, or ``working tree``)."""

    old: str
    new: str
    files: list[FileDiff]

    @property
    def skills(self) -> dict[str, str]:
        """Each changed skill: added, deleted or modified."""
        out: dict[str, set[str]] = {}
        for d in self.files:
            out.setdefault(d.path.split("/")[1], set()).add(d.status)
        return {n: s.pop() if s <= {"added"} or s <= {"deleted"} else "modified" for n, s in out.items()}

    def to_json(self) -> dict[str, object]:
        return {
            "from": self.old,
            "to": self.new,
            "skills": self.skills,
            "files": [_file_json(d) for d in self.files],
            "patch": render_patch(self.files),
        }


def _file_json(d: FileDiff) -> dict[str, object]:
    plus, minus = d.counts()
    return {"path": d.path, "status": d.status, "binary": d.binary, "insertions": plus, "deletions": minus}


def compare(old: Side, new: Side, names: Iterable[str]) -> list[FileDiff]:
    """Every file of the skills ``names`` that differs between two sides, in path order."""
    out: list[FileDiff] = []
    for skill in sorted(names):
        fa, fb = old.files(skill), new.files(skill)
        for rel in sorted(set(fa) | set(fb)):
            a, b = fa.get(rel), fb.get(rel)
            if a == b:
                continue
            da = old.read(skill, rel, a[1]) if a else None
            db = new.read(skill, rel, b[1]) if b else None
            status = "added" if a is None else "deleted" if b is None else "modified" if a[1] != b[1] else "mode"
            out.append(FileDiff(f"skills/{skill}/{rel}", status, a and a[0], b and b[0], da, db))
    return out


def render_patch(diffs: Iterable[FileDiff]) -> str:
    parts: list[str] = []
    for d in diffs:
        parts.append(f"diff --git a/{d.path} b/{d.path}\n")
        if d.status == "added":
            parts.append(f"new file mode {d.new_mode:o}\n")
        elif d.status == "deleted":
            parts.append(f"deleted file mode {d.old_mode:o}\n")
        elif d.old_mode != d.new_mode:
            parts.append(f"old mode {d.old_mode:o}\nnew mode {d.new_mode:o}\n")
        if d.status == "mode":
            continue
        a = "/dev/null" if d.old is None else f"a/{d.path}"
        b = "/dev/null" if d.new is None else f"b/{d.path}"
        if d.binary:
            parts.append(f"Binary files {a} and {b} differ\n")
            continue
        parts.append(f"--- {a}\n+++ {b}\n")
        parts.extend(d._lines())
    return "".join(parts)


def render_stat(diffs: list[FileDiff]) -> str:
    """``git diff --stat``: one line a file, then the totals."""
    if not diffs:
        return ""
    width = max(len(d.path) for d in diffs)
    lines, plus, minus = [], 0, 0
    for d in diffs:
        p, m = d.counts()
        plus, minus = plus + p, minus + m
        shown = "Bin" if d.binary else str(p + m)
        lines.append(f" {d.path:<{width}} | {shown:>5} {'+' * min(p, 40)}{'-' * min(m, 40)}".rstrip())
    lines.append(f" {_n(len(diffs), 'file')} changed, {_n(plus, 'insertion')}(+), {_n(minus, 'deletion')}(-)")
    return "\n".join(lines) + "\n"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _binary(data: bytes) -> bool:
    if b"\0" in data[:8000]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8")
