"""``ledger [--brain B] sync [NAME…] [--no-remote] [--json]`` from the instant records
(:mod:`ledger.folders.instant`; docs/layouts.md, "No-op syncs").

Answered when, for every target named (default: all), its record says the whole target was in
step with the head and nothing it depends on has changed since (:func:`ledger.folders.instant.in_step`),
and there is nothing else to do: no remote to sync with (none set, or ``--no-remote``, or targets
named), no merge conflict to list, no killed write, no ``--committed`` target, no sync running.
Then it prints what the full path prints, byte for byte (tests/unit/sync/test_sync_instant.py), and writes
nothing.  Every other option (``--full``, ``--watch``, ``--take``…) goes to click.
"""

from __future__ import annotations

import json
import os

from ledger.fastpath import head, quiet, say

__all__ = ["answer"]

_FLAGS = ("--json", "--no-remote")


def answer(brain: str | None, words: list[str]) -> int | None:
    """The exit status once every target chosen is known to be in step, else None."""
    try:
        text = _answer(brain, words[1:])
    except Exception:
        return None
    return None if text is None else say(text)


def _answer(given: str | None, rest: list[str]) -> str | None:
    names = [a for a in rest if a not in _FLAGS]
    if (
        any(rest.count(f) > 1 for f in _FLAGS)
        or any(n.startswith("-") or not n for n in names)
        or len(set(names)) < len(names)
    ):
        return None
    import fcntl

    from ledger._paths import brain_root
    from ledger.folders.instant import LISTS, in_step

    root = brain_root(given, search_up=given is None)
    if root is None or not quiet(root):
        return None  # opening the brain would refuse, or roll a killed write forward
    control = f"{root}/.ledger"
    if os.path.lexists(f"{control}/fleet/conflicts.json"):
        return None  # merge conflicts are listed by the full path
    with open(f"{control}/config.json", "rb") as fh:
        remote = json.loads(fh.read()).get("remote")
    if not names and "--no-remote" not in rest and isinstance(remote, dict) and remote.get("url"):
        return None  # the remote half runs in the full path
    with open(f"{control}/targets.json", "rb") as fh:
        targets = json.loads(fh.read())["targets"]
    by_name = {t["name"]: t for t in targets}
    chosen = [by_name[n] for n in names] if names else targets
    if not chosen or any(t.get("committed") for t in chosen):
        return None
    commit = head(root)
    if commit is None:
        return None
    fd = os.open(f"{control}/sync.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # a sync is running: the full path waits its turn
        if not all(in_step(control, t["name"], t["path"], commit) for t in chosen):
            return None
    finally:
        os.close(fd)
    if "--json" not in rest:
        return "\n".join(f"{t['name']}: in step" for t in chosen)
    empty = {k: [] for k in LISTS}
    doc = {
        "targets": [{"name": t["name"], "path": t["path"], "status": "ok", **empty} for t in chosen],
        "conflicts": 0,
        "refused": 0,
        "merge_conflicts": [],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)
