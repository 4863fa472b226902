"""``ledger hash DIR [--json]`` from the native hasher (:func:`ledger._native.hash_dir`).

Scripts and CI call it in loops, and on a 10,000-skill brain the native hasher takes less time
than importing click and :mod:`ledger.bundle.merkle`.  Any tree the native hasher hands back
(an unusual name, a link, a file that grew while read, an error: see ledger/_native.c) goes to
the click command, whose reference hasher decides and reports (tests/unit/bundle/test_native.py).
"""

from __future__ import annotations

import os

from ledger.fastpath import say

__all__ = ["answer"]


def answer(brain: str | None, words: list[str]) -> int | None:
    if brain is not None and os.path.exists(brain) and not os.path.isdir(brain):
        return None  # click rejects that --brain (or $LEDGER_BRAIN) before any command runs
    rest = words[1:]
    as_json = "--json" in rest
    operands = [a for a in rest if a != "--json"]
    if len(operands) != 1 or operands[0].startswith("-") or len(rest) - len(operands) > 1:
        return None
    try:
        from ledger import _native
    except ImportError:  # pragma: no cover - the pure-Python build
        return None
    directory = operands[0].rstrip("/") or "/"
    if os.path.islink(directory):
        return None  # refused by the reference in every spelling ("lnk", "lnk/")
    # Same rule as ledger.cli.hash_cmd: a brain is hashed over its skills/.
    if os.path.isfile(os.path.join(directory, ".ledger", "config.json")):
        directory = os.path.join(directory, "skills")
        if not os.path.lexists(directory):
            return None  # a brain with no skills/ holds the empty bundle: the click path says so
    # While the GIL is released Python cannot raise KeyboardInterrupt, so let Ctrl-C end
    # the process at once, as it does for b3sum.  (_signal: the signal module's enum
    # wrappers would add 4 ms to a 120 ms command.)
    import _signal

    previous = _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    try:
        root = _native.hash_dir(directory)
    finally:
        _signal.signal(_signal.SIGINT, previous)
    if root is None:
        return None  # the native hasher handed the tree back: the reference decides
    text = f"{_native.VERSION}:{root.hex()}"
    if as_json:
        import json

        text = json.dumps({"root": text}, indent=2, ensure_ascii=False)
    return say(text)
