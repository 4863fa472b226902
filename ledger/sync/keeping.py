"""A runtime's edit that an exchange took out of its folder, merged back into that folder (ADR 26).

A pass reads a skill, records it, then exchanges the ledger's copy into place.  A runtime
that writes in between (a temporary file, then ``os.replace``, as Hermes does) writes into
the folder the exchange then takes away; it may write again into the folder put in its
place before the pass looks.  Both are the runtime's edits and both stay in its folder:

1. what it changed in the folder taken away (``before`` → ``held``) is merged three ways
   with what the ledger's copy changed (``before`` → ``ledger``).  Only lines both changed
   are a true conflict: then nothing is merged, and the caller keeps the copy aside;
2. each file that merge changed is put into the live folder one rename at a time
   (:meth:`TargetFS.put_merged`), joined with whatever the runtime wrote there since
   (:func:`ledger.sync.filemerge.union`: both edits are the runtime's, so both are kept).

The folder then holds the ledger's copy with every runtime edit, and the next pass records
it as any other runtime edit.  A file the runtime was still writing (its temporary file,
whose rename failed once its folder was taken away) is not carried: its writer was told.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ledger.errors import LedgerError
from ledger.folders.folder import STAGING, TargetFS
from ledger.folders.ignoring import IN_FLIGHT
from ledger.sync.filemerge import merge, union

__all__ = ["UNPLACED", "Files", "keep"]

Files = Mapping[str, tuple[bytes, bool]]  # path → (bytes, executable)

UNPLACED = "(the folder)"  # keep()'s answer when the live folder could not take the merge (gone, or binary)
_TEMP = re.compile(r"(\A|/)\.[^/]*\.tmp\Z")  # a dot-file ending in .tmp: a temporary file of an atomic write


def keep(fs: TargetFS, rel: str, staged: str, before: Files, ledger: Files) -> list[str]:
    """Merge what a runtime changed in the folder the exchange displaced (now ``staged``) into the live
    folder at ``rel``; ``before`` is what the pass found there, ``ledger`` the copy it put in.
    Returns the files the runtime and the ledger both changed (a true conflict; nothing merged then),
    or ``[UNPLACED]`` if the folder could not take the merge; ``[]`` once it is in place."""
    if not fs.holds_skill(rel):
        return [UNPLACED]  # the runtime took the skill out meanwhile: nothing is put back half
    try:
        displaced = fs.read(f"{STAGING}/{staged}", work=True)
    except (OSError, LedgerError):
        return [UNPLACED]  # a link or special file in it: kept aside whole, never read through
    held = {r: v for r, v in displaced.items() if r in before or not (IN_FLIGHT.search(r) or _TEMP.search(r))}
    result = merge(before, ledger, held)
    if not result.clean:
        return result.conflicts
    for path in sorted(set(result.files) | set(ledger)):
        want, base = result.files.get(path), ledger.get(path)
        if want == base:
            continue  # not changed by the runtime's earlier edit
        live = fs.read_one(f"{rel}/{path}")
        if live == want:
            continue
        if live != base:  # changed again by the runtime since the exchange: both its edits are kept
            if want is None or live is None:
                want = live  # a removal and a write: the later one stands
            else:
                joined = union(base[0] if base else None, want[0], live[0])
                if joined is None:
                    return [UNPLACED]
                want = (joined, live[1])
            if want == live:
                continue
        if not fs.put_merged(f"{rel}/{path}", want, live, union):
            return [UNPLACED]
    return []
