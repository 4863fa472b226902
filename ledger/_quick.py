"""``ledger status``, ``ledger index`` and ``ledger skill list`` answered from the stat cache alone.

An agent reads the index at the start of every task, and a clean ``status`` is what
scripts poll.  On a 10,000-skill brain the work is 25 ms of ``lstat`` calls; importing
click and the brain's write engine took longer than that.  So, as for ``ledger hash``
(:mod:`ledger._entry`), these exact command lines are answered here when the stat
cache (:mod:`ledger.store.statcache`) can answer them alone:

- the brain is found as the CLI finds it, and has no journal and no ref lock (opening
  it would roll a write forward);
- every skill directory on disk has a cache entry whose ``lstat`` still matches;
- ``status``: the cache's clean record names the head commit and, with a chain
  configured, the pending count remembered by the full path is for this head and these
  receipts (:func:`ledger.chain.receipts.remembered_pending`), and the full path found no
  regression at this head (``regressions-v1.json``, written by ``brain.evidence.regressions``);
  ``index`` and ``skill list``:
  every entry holds its index line, and what the head's ``supply`` record withholds is known
  without loading the brain (:func:`ledger.store.statcache.withheld_at`): ``index`` leaves those
  skills out, and ``skill list``, which marks them, leaves any such brain to the full path.

Anything else returns ``None`` and the click CLI does the whole job, so the output is
byte-identical either way (tests/test_statcache.py runs both).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ledger.bundle import render
from ledger.protocol.refs import BRANCH, NOTES_REF
from ledger.store.refs import PENDING_CACHE, REGRESSIONS_CACHE, pending_key

__all__ = ["answer"]

_COMMANDS = {("status",): "status", ("status", "--json"): "status-json", ("index",): "index",
             ("skill", "list"): "list"}  # fmt: skip
_OWN_REF_LOCKS = (f"{BRANCH}.lock", f"{NOTES_REF}.lock")


def _brain(given: str | None) -> Path | None:
    here = Path(given if given is not None else os.getcwd()).absolute()
    for cand in [here] if given is not None else [here, *here.parents]:
        if (cand / ".ledger" / "config.json").is_file():
            return cand
    return None


def _head(git_dir: Path) -> str | None:
    try:
        text = (git_dir / "refs" / "heads" / "main").read_text().strip()
    except FileNotFoundError:
        return None  # packed, or no snapshot yet: the full path reads it
    return text if len(text) == 40 else None


def _packed_head(git_dir: Path) -> str | None:
    """``refs/heads/main`` from ``packed-refs`` (a cloned brain's), when it is not loose."""
    try:
        lines = (git_dir / "packed-refs").read_text().splitlines()
    except FileNotFoundError:
        return None
    found = [line[:40] for line in lines if line.endswith(" refs/heads/main") and len(line.split(" ", 1)[0]) == 40]
    return found[0] if found and not (git_dir / "refs" / "heads" / "main").exists() else None


def _pending(control: Path, git_dir: Path, head: str, chain: dict) -> int | None:
    """The count :func:`ledger.chain.receipts.remembered_pending` kept, if it is still for this head,
    these receipts and these chain settings."""
    try:
        notes = (git_dir / NOTES_REF).read_text().strip()
    except FileNotFoundError:
        packed = git_dir / "packed-refs"
        if packed.exists() and NOTES_REF in packed.read_text():
            return None
        notes = ""
    doc = json.loads((control / "cache" / PENDING_CACHE).read_text())
    key = pending_key(head, notes, chain)
    return doc["pending"] if doc.get("key") == key and isinstance(doc.get("pending"), int) else None


def _no_regression(control: Path, head: str) -> bool:
    """Whether the full path found no regression at this very head (a head fixes its outcomes and trust set)."""
    try:
        doc = json.loads((control / "cache" / REGRESSIONS_CACHE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("head") == head and doc.get("regressions") == 0


def answer(args: list[str]) -> str | None:
    """The full output of ``args`` (without its last newline) if the stat cache answers it, else ``None``."""
    try:
        return _answer(args)
    except Exception:
        return None


def _answer(args: list[str]) -> str | None:
    given = None
    if args[:1] == ["--brain"] and len(args) > 1:
        given, args = args[1], args[2:]
    elif args[:1] and args[0].startswith("--brain="):
        given, args = args[0].split("=", 1)[1], args[1:]
    else:
        given = os.environ.get("LEDGER_BRAIN") or None
    command = _COMMANDS.get(tuple(args))
    if command is None or os.environ.get("LEDGER_PURE_PYTHON") or (given is not None and not given):
        return None
    root = _brain(given)
    if root is None:
        return None
    control, skills_dir, git_dir = root / ".ledger", root / "skills", root / ".git"
    if skills_dir.is_symlink() or (control / "journal.json").exists():
        return None
    if any((git_dir / lock).exists() for lock in _OWN_REF_LOCKS):
        return None
    from ledger.store.statcache import StatCache, withheld_at

    cache = StatCache(control / "cache" / "stat-v1.json")
    try:
        with os.scandir(skills_dir) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return None
    if not entries or not all(is_dir for _, is_dir in entries):
        return None
    if not cache.validate(skills_dir, [n for n, _ in entries]):
        return None
    if command.startswith("status"):
        if (control / "targets.json").exists() or (control / "fleet").is_dir():
            return None  # the full path shows sync and merge conflicts too
        commit = _head(git_dir)
        root_text = cache.is_clean(commit) if commit else None
        if commit is None or root_text is None:
            return None
        config = json.loads((control / "config.json").read_text())
        if (config.get("eval") or {}).get("gate"):
            return None  # the full path shows the versions the gate holds back
        chain = config.get("chain")
        pending = _pending(control, git_dir, commit, chain) if chain else None
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
    commit = _head(git_dir) or _packed_head(git_dir)
    hidden = withheld_at(control, git_dir, commit) if commit else None
    if hidden is None or (hidden and command != "index"):
        return None  # not known cheaply, or skills to mark: the full path reads the head's supply record
    infos = [(name, info) for name, info in infos if name not in hidden]
    if command == "index":
        return "".join(render.index_line(name, info[0]) for name, info in infos).removesuffix("\n")
    if any(info[1] is None for _, info in infos):
        return None  # versions kept in the store (ledger.write.versioning): the full path reads the head's record
    return "".join(render.list_line(name, info[1], info[0]) for name, info in infos).removesuffix("\n")
