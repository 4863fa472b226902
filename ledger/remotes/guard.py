"""A shared remote that holds every push to the brain's own rules: git's ``pre-receive`` hook.

A fleet shares a bare git repository, and anyone who can write to it can push with plain
git, past every check a ledger makes on its own side.  The guard is git's own answer: a
``pre-receive`` hook in the remote (installed when the ledger creates a remote, or by
``ledger remote guard PATH``) audits each update of ``main`` before git takes it, exactly
as a pull would (:func:`ledger.audit.lineage.audit_repo` on what is new beyond the old
head, read from git's quarantine of the pushed objects), so the brain's signature
policy, trust set and lineage rules hold on the remote itself.  A refused push changes
nothing: git drops the quarantined objects and the branch stays where it was, and the
pusher is told what was refused and what to run.  ``main`` is never deleted.

The refs beside ``main`` that a peer takes (the three notes refs of receipts, an operator's epoch
log) are held to the checks a peer applies on arrival (:mod:`ledger.audit.refs`): each update must be
a commit of the right shape, a fast-forward, never a deletion, and every receipt it adds must hold up
against ``main`` as the push leaves it; a log must keep every epoch it anchored.  Any other name under
the ledger's namespaces (``refs/ledger/``, ``refs/notes/ledger-``) is refused, and so is a replace ref
(``refs/replace/``), which would make every audit of the remote fail; other refs (tags, other branches)
are not the ledger's and pass.  One refused ref refuses the whole push.

The hook runs on the machine that runs ``git receive-pack`` (for a path remote, the
pusher's own): it tries the interpreter that installed it, then ``python3``; where neither
has the ledger, the push is refused, never let through unchecked (docs/adr/0027).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from ledger._fs import atomic_write
from ledger.audit import refs
from ledger.audit.lineage import audit_repo
from ledger.errors import LedgerError, StoreError
from ledger.protocol.refs import BRANCH, REPLACE
from ledger.store.git import Git, reason
from ledger.store.gitstore import GitStore

__all__ = ["install", "installed", "main"]

HOOK = "pre-receive"
MARK = "# brain-ledger guard"
_ZERO = "0" * 40


def _script() -> str:
    here = shlex.quote(sys.executable)
    return f"""#!/bin/sh
{MARK}: every update of main and of the ledger's other refs is audited before git takes it (ledger/remotes/guard.py).
for py in {here} python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import ledger.remotes.guard' 2>/dev/null; then
    exec "$py" -m ledger.remotes.guard
  fi
done
echo "brain-ledger guard: this repository only takes pushes that brain-ledger has audited, and brain-ledger" >&2
echo "is not installed where git runs this hook; nothing was taken (install brain-ledger there)" >&2
exit 1
"""


def install(git_dir: Path) -> Path:
    """Put the guard in the bare repository ``git_dir``; refuses to replace a hook of someone else's.

    Also sets ``receive.denyNonFastForwards``: the hook refuses a rewind of ``main`` itself, and git's
    own setting refuses one too, for a remote whose hook cannot run (defence in depth, ADR 27)."""
    hook = git_dir / "hooks" / HOOK
    if hook.exists() and MARK not in hook.read_text(errors="replace"):
        raise StoreError(
            f"{hook} is a hook the ledger did not write; it is left as it is",
            hint="merge the two by hand: the guard runs 'python3 -m ledger.remotes.guard'",
        )
    proc = Git(git_dir).call("config", "receive.denyNonFastForwards", "true")
    if proc.returncode != 0:
        raise StoreError(
            f"cannot set receive.denyNonFastForwards in {git_dir}: {reason(proc.stderr)}; the guard is not installed",
            hint="check that the path is a bare git repository you can write to",
        )
    hook.parent.mkdir(exist_ok=True)
    atomic_write(hook, _script().encode(), mode=0o755)
    return hook


def installed(git_dir: Path) -> bool:
    hook = git_dir / "hooks" / HOOK
    return hook.is_file() and MARK in hook.read_text(errors="replace")


def check(git_dir: Path, old: str, new: str) -> list[str]:
    """Why the update of ``main`` from ``old`` to ``new`` is refused; empty when it passes."""
    if new == _ZERO:
        return ["deleting main: a shared brain's lineage is never removed"]
    if old != _ZERO and old != new and not Git(git_dir).is_ancestor(bytes.fromhex(old), bytes.fromhex(new)):
        return [
            f"main does not extend {old[:12]} (a non-fast-forward): a shared brain's lineage only grows, and "
            "a rewind would drop its newest snapshots (a revocation among them) from every fresh clone"
        ]
    try:
        report = audit_repo(git_dir, since=(bytes.fromhex(old),) if old != _ZERO else (), tip=bytes.fromhex(new))
    except LedgerError as exc:
        return [exc.message]
    return [f"{c.name}: {c.summary}" for c in report.checks.values() if not c.ok]


def main() -> int:
    git_dir = Path(os.environ.get("GIT_DIR", ".")).absolute()
    updates = [parts for parts in (line.split() for line in sys.stdin) if len(parts) == 3]
    refused = False
    for old, new, ref in updates:
        if ref != BRANCH:
            continue
        problems = check(git_dir, old, new)
        if problems:
            refused = True
            print(f"brain-ledger guard: refused main {old[:12]}..{new[:12]}; nothing was taken:", file=sys.stderr)
            for p in problems:
                print(f"  {p}", file=sys.stderr)
            print(
                "  the remote is unchanged and usable. Make the refused snapshots again with a key the brain trusts\n"
                "  ('ledger keys show'; the brain's user runs 'ledger keys trust ROLE ADDRESS' for a new machine),\n"
                "  or drop them: 'ledger pull' from this remote brings a copy back to its head.",
                file=sys.stderr,
            )
    for _old, new, ref in updates:
        if ref.startswith(REPLACE) and new != _ZERO:  # removing one is a repair, and passes
            refused = True
            print(
                f"brain-ledger guard: refused {ref}: a replace ref makes git show substituted objects, and an "
                "audit fails a repository that holds one"
                " (see docs/lineage.md, 'The audit's verdicts', fsck); nothing was taken",
                file=sys.stderr,
            )
    others = [(old, new, ref) for old, new, ref in updates if ref != BRANCH and refs.owned(ref)]
    if others:
        refused = _check_others(git_dir, updates, others) or refused
    return 1 if refused else 0


def _check_others(git_dir: Path, updates: list[list[str]], others: list[tuple[str, str, str]]) -> bool:
    """The refs beside ``main`` under the ledger's namespaces, each checked as a peer checks it on arrival
    (:func:`ledger.audit.refs.update_problems`) against ``main`` as this push leaves it; whether one is refused.
    Refs outside the namespaces (tags, other branches) are not the ledger's and pass."""
    refused = False
    with GitStore(git_dir) as store:
        main = next((new for old, new, ref in updates if ref == BRANCH), None)
        tip = store.head() if main is None else None if main == _ZERO else bytes.fromhex(main)
        lineage = refs.Lineage(store, tip)
        for old, new, ref in others:
            try:
                problems = refs.update_problems(
                    store,
                    ref,
                    None if old == _ZERO else bytes.fromhex(old),
                    None if new == _ZERO else bytes.fromhex(new),
                    lineage,
                )
            except LedgerError as exc:
                problems = [exc.message]
            if not problems:
                continue
            refused = True
            print(f"brain-ledger guard: refused {ref} {old[:12]}..{new[:12]}; nothing was taken:", file=sys.stderr)
            for p in problems:
                print(f"  {p}", file=sys.stderr)
            print(
                f"  the remote is unchanged and usable. {ref} is published by 'ledger push' (or sync) from a brain\n"
                "  that holds it, and only grows; a peer takes nothing of a ref it refuses (docs/adr/0027).",
                file=sys.stderr,
            )
    return refused


if __name__ == "__main__":
    sys.exit(main())
