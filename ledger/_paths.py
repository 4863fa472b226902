"""A brain on disk, read without opening it: where it is, what its refs name, and the ``lstat``
key that tells whether paths changed.  One of each, for every caller: the brain facade and the
click commands, the store, the stat cache, the instant records of ``ledger sync`` and the fast
path that answers before click loads (:mod:`ledger.fastpath`).

Standard library and BLAKE3 only (and the optional C batch, :func:`ledger._native.stat_keys`), and no
:mod:`pathlib` until a caller asks for a ``Path``: the fast path answers in tens of
milliseconds and pays for every import.
"""

from __future__ import annotations

import os
import stat
from array import array
from collections.abc import Iterable, Sequence

from blake3 import blake3

from ledger.errors import StoreError

TYPE_CHECKING = False  # typing itself costs the fast path ~5 ms
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["CONFIG", "CONTROL", "brain_root", "current_keys", "find_brain", "read_ref", "stat_fields", "stat_key"]

CONTROL = ".ledger"  # a brain's control folder; what makes a folder a brain is CONTROL/CONFIG
CONFIG = "config.json"


# ---------------------------------------------------------------------------------------------- the brain


def brain_root(start: str | os.PathLike[str] | None = None, *, search_up: bool = False) -> str | None:
    """The brain at ``start`` (default: the current directory) or, with ``search_up``, at its
    nearest ancestor holding ``.ledger/config.json``, like git; None if there is none.  Relative
    paths are taken from the current directory; nothing is resolved (a link stays as named)."""
    here = os.getcwd() if start is None else os.path.join(os.getcwd(), os.fspath(start))
    while True:
        if os.path.isfile(f"{here}/{CONTROL}/{CONFIG}"):
            return here
        up = os.path.dirname(here)
        if not search_up or up == here:
            return None
        here = up


def find_brain(start: str | os.PathLike[str] | None = None, *, search_up: bool = False) -> Path:
    """:func:`brain_root`, as a ``Path``; a folder that is no brain is refused in words."""
    from pathlib import Path

    root = brain_root(start, search_up=search_up)
    if root is None:
        here = Path(start if start is not None else os.getcwd()).absolute()
        raise StoreError(
            f"{here} is not a brain (no {CONTROL}/{CONFIG})",
            hint="run 'ledger init DIR', or pass --brain / set LEDGER_BRAIN",
        )
    return Path(root)


def read_ref(git_dir: str | os.PathLike[str], ref: str) -> str | None:
    """What ref ``ref`` (``refs/heads/main``, a notes ref…) of the git directory names, as git
    keeps it: its loose file's text, else its line in ``packed-refs``; None if neither has it.
    The text is not checked: a caller that trusts it checks it (``bytes.fromhex``, its length)."""
    base = os.fspath(git_dir)
    try:
        with open(f"{base}/{ref}", "rb") as fh:
            return fh.read().decode().strip()
    except FileNotFoundError:
        pass
    try:
        with open(f"{base}/packed-refs", "rb") as fh:
            lines = fh.read().decode().splitlines()
    except FileNotFoundError:
        return None
    return next((line.split(" ", 1)[0] for line in lines if line.endswith(" " + ref)), None)


# ---------------------------------------------------------------------------------------------- the lstat key


def stat_fields(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What a key covers of one ``lstat``: mode, inode, size (0 for a folder), mtime, ctime
    (git's index compares the same)."""
    return st.st_mode, st.st_ino, 0 if stat.S_ISDIR(st.st_mode) else st.st_size, st.st_mtime_ns, st.st_ctime_ns


def stat_key(rows: Iterable[tuple[int, ...]]) -> str:
    """The key of paths' :func:`stat_fields`, path by path: BLAKE3 over them as native int64s (a
    field of 2**63 or more, an inode on some file systems, taken modulo 2**64 as C's cast takes
    it), the first 16 bytes in hex."""
    flat = array("q", [v if v < 1 << 63 else v - (1 << 64) for row in rows for v in row])
    return blake3(flat.tobytes()).hexdigest()[:32]


def current_keys(
    base: str | os.PathLike[str], names: Sequence[str], groups: Sequence[Sequence[str]], *, native: bool = True
) -> list[str | None]:
    """The :func:`stat_key` of each group ``groups[i]`` of paths under ``base/names[i]`` now (``""``:
    that folder itself; None: a path is gone): in C on several threads when the native module is
    built, ``native`` is left on and ``LEDGER_PURE_PYTHON`` is unset (git's preloaded index does
    the same), else one ``lstat`` at a time."""
    base = os.fspath(base)
    if native and not os.environ.get("LEDGER_PURE_PYTHON"):
        try:
            from ledger import _native
        except ImportError:  # pragma: no cover - the pure-Python build
            pass
        else:
            return _native.stat_keys(base, list(names), [list(g) for g in groups])
    out: list[str | None] = []
    for name, paths in zip(names, groups, strict=True):
        try:
            out.append(
                stat_key(stat_fields(os.lstat(f"{base}/{name}/{rel}" if rel else f"{base}/{name}")) for rel in paths)
            )
        except OSError:
            out.append(None)
    return out
