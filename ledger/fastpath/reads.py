"""``ledger status [--json]``, ``ledger index`` and ``ledger skill list`` from the stat cache alone.

An agent reads the index at the start of every task, and a clean ``status`` is what scripts
poll.  On a 10,000-skill brain the work is 25 ms of ``lstat`` calls; importing click and the
brain's write engine took longer than that.  So these command lines are answered here when the
stat cache (:mod:`ledger.store.statcache`) can answer them alone:

- the brain is found as the CLI finds it (:func:`ledger._paths.brain_root`), and nothing is
  under way in it (:func:`ledger.fastpath.quiet`: opening it would roll a write forward);
- every skill directory on disk has a cache entry whose ``lstat`` still matches;
- ``status``: the cache's clean record names the head commit and, with a chain configured,
  the pending count remembered by the full path is for this head and these receipts
  (:func:`ledger.chain.receipts.remembered_pending`), and the full path found no regression at
  this head (``regressions-v1.json``, written by ``brain.evidence.regressions``);
  ``index`` and ``skill list``: every entry holds its index line, and what the head's ``supply``
  record withholds is known without loading the brain (:func:`ledger.store.statcache.withheld_at`):
  ``index`` leaves those skills out, and ``skill list``, which marks them, leaves any such brain
  to the full path.

Anything else returns None and the click CLI does the whole job, so the output is byte-identical
either way (tests/unit/store/test_statcache.py, tests/cli/test_fastpath.py).
"""

from __future__ import annotations

import json
import os

from ledger.fastpath import head, quiet, say

TYPE_CHECKING = False  # typing costs the fast path ~5 ms
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["answer", "takes"]

_COMMANDS = {("status",): "status", ("status", "--json"): "status-json", ("index",): "index", ("skill", "list"): "list"}


def takes(words: list[str]) -> bool:
    return tuple(words) in _COMMANDS


def answer(brain: str | None, words: list[str]) -> int | None:
    """The exit status once the stat cache has answered ``words``, else None."""
    try:
        text = _answer(brain, _COMMANDS[tuple(words)])
    except Exception:
        return None
    return None if text is None else say(text)


def _answer(given: str | None, command: str) -> str | None:
    from pathlib import Path

    from ledger._fs import STAT, cache_path
    from ledger._paths import brain_root
    from ledger.bundle import render
    from ledger.store.statcache import StatCache, withheld_at

    found = brain_root(given, search_up=given is None)
    if found is None or not quiet(found):
        return None
    root = Path(found)
    control, skills_dir, git_dir = root / ".ledger", root / "skills", root / ".git"
    cache = StatCache(cache_path(control, *STAT))
    try:
        with os.scandir(skills_dir) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return None
    if not entries or not all(is_dir for _, is_dir in entries):
        return None
    if not cache.validate(skills_dir, [n for n, _ in entries]):
        return None
    commit = head(found)
    if commit is None:
        return None
    if command.startswith("status"):
        if (control / "targets.json").exists() or (control / "fleet").is_dir():
            return None  # the full path shows sync and merge conflicts too
        root_text = cache.is_clean(commit)
        if root_text is None:
            return None
        config = json.loads((control / "config.json").read_text())
        if (config.get("eval") or {}).get("gate"):
            return None  # the full path shows the versions the gate holds back
        chain = config.get("chain")
        pending = _pending(control, found, commit, chain) if chain else None
        if chain and pending is None:
            return None  # not counted for this head and these notes yet: the full path counts
        if not _no_regression(control, commit):
            return None  # outcomes may flag a regression at this head: the full path weighs them
        if command == "status-json":
            doc = {**render.status_doc(commit, root_text, root_text, {}, pending), "regressions": []}
            return json.dumps(doc, indent=2, ensure_ascii=False)
        return "\n".join(render.status_lines(commit, root_text, root_text, {}, pending))
    infos = [(name, cache.get(name, "info")) for name in sorted(n for n, _ in entries)]
    if any(info is None for _, info in infos):
        return None
    hidden = withheld_at(control, git_dir, commit)
    if hidden is None or (hidden and command != "index"):
        return None  # not known cheaply, or skills to mark: the full path reads the head's supply record
    infos = [(name, info) for name, info in infos if name not in hidden]
    if command == "index":
        return "".join(render.index_line(name, info[0]) for name, info in infos).removesuffix("\n")
    if any(info[1] is None for _, info in infos):
        return None  # versions kept in the store (ledger.write.versioning): the full path reads the head's record
    return "".join(render.list_line(name, info[1], info[0]) for name, info in infos).removesuffix("\n")


def _pending(control: Path, root: str, head: str, chain: dict) -> int | None:
    """The count :func:`ledger.chain.receipts.remembered_pending` kept, if it is still for this head,
    these receipts and these chain settings."""
    from ledger._fs import PENDING, cache_path, read_cache_json
    from ledger._paths import read_ref
    from ledger.protocol.refs import NOTES_REF
    from ledger.store.refs import pending_key

    notes = read_ref(f"{root}/.git", NOTES_REF)
    key = pending_key(head, bytes.fromhex(notes).hex() if notes else "", chain)
    return read_cache_json(
        cache_path(control, *PENDING),
        lambda doc: doc["pending"] if doc.get("key") == key and type(doc.get("pending")) is int else None,
    )


def _no_regression(control: Path, head: str) -> bool:
    """Whether the full path found no regression at this very head (a head fixes its outcomes and trust set)."""
    from ledger._fs import REGRESSIONS, cache_path, read_cache_json

    return (
        read_cache_json(
            cache_path(control, *REGRESSIONS),
            lambda doc: doc.get("head") == head and type(doc.get("regressions")) is int and doc["regressions"] == 0,
        )
        is True
    )
