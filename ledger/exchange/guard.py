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

The hook runs on the machine that runs ``git receive-pack`` (for a path remote, the
pusher's own): it tries the interpreter that installed it, then ``python3``; where neither
has the ledger, the push is refused, never let through unchecked (docs/adr/0027).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from ledger.audit.lineage import audit_repo
from ledger.errors import LedgerError, StoreError

__all__ = ["install", "installed", "main"]

HOOK = "pre-receive"
MARK = "# brain-ledger guard"
_ZERO = "0" * 40


def _script() -> str:
    here = shlex.quote(sys.executable)
    return f"""#!/bin/sh
{MARK}: every update of main is audited before git takes it (ledger/exchange/guard.py).
for py in {here} python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import ledger.exchange.guard' 2>/dev/null; then
    exec "$py" -m ledger.exchange.guard
  fi
done
echo "brain-ledger guard: this repository only takes pushes that brain-ledger has audited, and brain-ledger" >&2
echo "is not installed where git runs this hook; nothing was taken (install brain-ledger there)" >&2
exit 1
"""


def install(git_dir: Path) -> Path:
    """Put the guard in the bare repository ``git_dir``; refuses to replace a hook of someone else's."""
    hook = git_dir / "hooks" / HOOK
    if hook.exists() and MARK not in hook.read_text(errors="replace"):
        raise StoreError(f"{hook} is a hook the ledger did not write; it is left as it is",
                         hint="merge the two by hand: the guard runs 'python3 -m ledger.exchange.guard'")  # fmt: skip
    hook.parent.mkdir(exist_ok=True)
    tmp = hook.with_name(f".{HOOK}.{os.getpid()}.tmp")
    tmp.write_text(_script())
    tmp.chmod(0o755)
    os.replace(tmp, hook)
    return hook


def installed(git_dir: Path) -> bool:
    hook = git_dir / "hooks" / HOOK
    return hook.is_file() and MARK in hook.read_text(errors="replace")


def check(git_dir: Path, old: str, new: str) -> list[str]:
    """Why the update of ``main`` from ``old`` to ``new`` is refused; empty when it passes."""
    if new == _ZERO:
        return ["deleting main: a shared brain's lineage is never removed"]
    try:
        report = audit_repo(git_dir, since=(bytes.fromhex(old),) if old != _ZERO else (), tip=bytes.fromhex(new))
    except LedgerError as exc:
        return [exc.message]
    return [f"{c.name}: {c.summary}" for c in report.checks.values() if not c.ok]


def main() -> int:
    git_dir = Path(os.environ.get("GIT_DIR", ".")).absolute()
    refused = False
    for line in sys.stdin:
        parts = line.split()
        if len(parts) != 3 or parts[2] != "refs/heads/main":
            continue  # receipts and other refs: checked by whoever takes them (ledger/exchange/sharing.py)
        old, new, _ref = parts
        problems = check(git_dir, old, new)
        if problems:
            refused = True
            print(f"brain-ledger guard: refused main {old[:12]}..{new[:12]}; nothing was taken:", file=sys.stderr)
            for p in problems:
                print(f"  {p}", file=sys.stderr)
            print("  the remote is unchanged and usable. Make the refused snapshots again with a key the brain trusts\n"
                  "  ('ledger keys show'; the brain's user runs 'ledger keys trust ROLE ADDRESS' for a new machine),\n"
                  "  or drop them: 'ledger pull' from this remote brings a copy back to its head.",
                  file=sys.stderr)  # fmt: skip
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
