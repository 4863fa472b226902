"""The head snapshot held in memory, so an upsert touches only what it changes (ADR 15)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace

from ledger.bundle.merkle import RootIndex
from ledger.signatures.trust import Trust
from ledger.store import gitstore as gs
from ledger.store import skilltree
from ledger.store.evidence import evidence_tree
from ledger.store.supply import FORMAT, Supply
from ledger.store.supply import format_record as format_supply
from ledger.store.supply import parse_record as parse_supply

__all__ = ["KEEP", "Head", "head_evidence", "head_supply", "next_supply", "tree_entry"]

KEEP = object()  # a record not read yet; as the writer's ``categories=``: carry the head's tree forward


def tree_entry(name: str, tree: bytes) -> bytes:
    """One serialised git tree entry for a skill directory."""
    return b"40000 " + name.encode() + b"\x00" + tree


class Head:
    """The head snapshot held in memory, so an upsert touches only what it changes.

    ``entries`` holds each skill's serialised git tree entry keyed by ``name/`` (git's
    sort key for a directory).  A flat ``skills/`` tree is kept serialised with each
    entry's offset (:meth:`serialised`); a fanned-out one as its buckets (``fanout``,
    :mod:`ledger.store.skilltree`).  Either way a write touches O(changes) entries.
    """

    def __init__(
        self,
        commit: bytes,
        snap: gs.Snapshot,
        skills: dict[str, bytes],
        bundle: RootIndex,
        entries: dict[str, bytes] | None = None,
        keys: list[str] | None = None,
        ordered: list[bytes] | None = None,
        fanout: skilltree.Fanout | None = None,
    ) -> None:
        self.commit = commit
        self.snap = snap
        self.skills = skills  # name → tree id
        self.bundle = bundle
        if entries is None:  # tree_entry() inlined: 10,000 calls are ~3 ms of every CLI write's start
            entries = {n + "/": b"40000 " + n.encode() + b"\x00" + t for n, t in skills.items()}
        self.entries = entries
        self._keys, self._ordered = keys, ordered
        self.fanout = fanout  # set when skills/ is fanned out
        self.retired: tuple[bytes | None, dict[str, int]] | None = None  # read on first use
        self.versions: tuple[bytes | None, dict[str, int]] | None = None  # ledger.write.versioning, read on first use
        self.categories: bytes | object | None = KEEP  # the categories/ tree id, read on first use
        self.trust: tuple[bytes | None, Trust] | None = None  # the keys record, read on first use
        self.supply: tuple[bytes | None, Supply] | None = None  # the supply record, read on first use
        self.evidence: bytes | object | None = KEEP  # the evidence/ tree id (ledger.store.evidence), read on first use
        self.raw: bytearray | None = None  # the flat skills/ tree serialised, and where each entry starts
        self.offsets: list[int] | None = None

    @property
    def keys(self) -> list[str]:
        if self._keys is None:
            self._keys = sorted(self.entries, key=str.encode)
        return self._keys

    @property
    def ordered(self) -> list[bytes]:
        if self._ordered is None:
            self._ordered = [self.entries[k] for k in self.keys]
        return self._ordered

    def serialised(self) -> tuple[bytearray, list[int]]:
        """The flat ``skills/`` tree's bytes and entry offsets, built once per head in this process.

        An upsert of skills that already exist rewrites their entries in place (a name's
        entry has a fixed length), so at 100,000 skills it neither joins 100,000 entries
        nor copies three maps of them.
        """
        if self.raw is None or self.offsets is None:
            self.raw = bytearray(b"".join(self.ordered))
            self.offsets = list(itertools.accumulate(map(len, self.ordered), initial=0))
        return self.raw, self.offsets


def head_supply(store: gs.GitStore, head: Head) -> tuple[bytes | None, Supply]:
    """The head's ``supply`` record (blob id, parsed), read once per head."""
    if head.supply is None:
        sha, data = store.supply_record(bytes.fromhex(head.snap.tree)) if head.snap.tree else (None, b"")
        head.supply = (sha, parse_supply(data) if sha is not None else Supply())
    return head.supply


def next_supply(
    store: gs.GitStore, head: Head, deleted: Iterable[str], supply: Supply | None
) -> tuple[bytes | None, Supply]:
    """The record after a write: ``supply`` when given, else the head's; a deleted skill's entry goes with it."""
    current = head_supply(store, head)
    after = (supply if supply is not None else current[1]).without(deleted)
    if supply is None and after is current[1] and after.format == FORMAT:
        return current
    # a record is rewritten in the format this ledger writes (lineage/supply.md §1 rule 1)
    after = replace(after, format=FORMAT)
    if after.empty and current[0] is None:
        return None, after
    return store.write_blob(format_supply(after)), after


def head_evidence(store: gs.GitStore, head: Head) -> bytes | None:
    """The head's ``evidence/`` tree id (None: no outcome yet), read once per head."""
    if head.evidence is KEEP:
        head.evidence = evidence_tree(store, bytes.fromhex(head.snap.tree)) if head.snap.tree else None
    assert head.evidence is None or isinstance(head.evidence, bytes)
    return head.evidence
