"""Three-way merge of a skill's files, with the last synced version as the base.

Each path is merged on its own.  A side that left a file as the base had it takes the
other side's version (a change, an addition or a removal); when both changed it, text
files are merged line by line by ``git merge-file``, git's own merge, not ours. Anything
else (overlapping edits, binary files, a removal against an edit) is a conflict, and a
conflict writes nothing anywhere: the caller keeps both sides as they are.

:func:`union` joins two edits one runtime made of one file (one in a folder an exchange took
away, one in the folder put in its place): neither is the brain's, so both are kept, line by
line, the earlier first (``git merge-file --union``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ledger.store.git import Git

__all__ = ["Merge", "merge", "union"]

Side = Mapping[str, tuple[bytes, bool]]  # path → (bytes, executable)


@dataclass
class Merge:
    files: dict[str, tuple[bytes, bool]] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)  # paths both sides changed in ways that clash

    @property
    def clean(self) -> bool:
        return not self.conflicts


def _text_merge(base: bytes, ours: bytes, theirs: bytes, scratch: Path, *, both: bool = False) -> bytes | None:
    if b"\0" in base + ours + theirs:
        return None  # binary: git merge-file would refuse it too
    paths = []
    for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        p = scratch / name
        p.write_bytes(data)
        paths.append(str(p))
    proc = Git().call("merge-file", "-p", "-q", *(["--union"] if both else []), *paths)
    return proc.stdout if proc.returncode == 0 else None


def union(base: bytes | None, earlier: bytes, later: bytes) -> bytes | None:
    """Two edits of one file by the same writer, each from ``base`` (None: the file was new), joined
    keeping every line of both, ``earlier``'s first where they overlap; None for binary data."""
    if earlier == later or later == base:
        return earlier
    if earlier == base:
        return later
    with tempfile.TemporaryDirectory(prefix="ledger-merge-") as tmp:
        return _text_merge(base or b"", earlier, later, Path(tmp), both=True)


def merge(base: Side, ours: Side, theirs: Side, normalize: Callable[[str, bytes], bytes] | None = None) -> Merge:
    """Merge ``theirs`` (a target's skill) into ``ours`` (the ledger's) from ``base`` (the last sync).

    ``normalize(path, data)`` is applied to each side's text before comparing, so a value the
    ledger maintains (its version counter) never makes a conflict of its own."""
    out = Merge()
    norm = normalize or (lambda _path, data: data)
    with tempfile.TemporaryDirectory(prefix="ledger-merge-") as tmp:
        for path in sorted(set(base) | set(ours) | set(theirs)):
            b, o, t = (
                (norm(path, side[path][0]), side[path][1]) if path in side else None for side in (base, ours, theirs)
            )
            if o == t or t == b:
                if o is not None:
                    out.files[path] = o
            elif o == b:
                if t is not None:
                    out.files[path] = t
            elif o is None or t is None:
                out.conflicts.append(path)  # one side removed it, the other changed it
            else:
                merged = _text_merge(b[0] if b else b"", o[0], t[0], Path(tmp))
                if merged is None:
                    out.conflicts.append(path)
                else:
                    out.files[path] = (merged, t[1] if o[1] == (b[1] if b else o[1]) else o[1])
    return out
