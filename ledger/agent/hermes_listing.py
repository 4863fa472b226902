"""Hermes's ``skills_list`` of the home a brain projects to, kept for the brain's head.

:func:`ledger.agent.hermes_shapes.list_home` holds Hermes's listing rules, statement for
statement; this keeps its answer per head, so the listing an agent calls constantly reads only
what the last write changed.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

from ledger.agent.hermes_shapes import (
    Card,
    Found,
    environment_active,
    home_config,
    list_home,
    matches_environment,
    read_card,
)
from ledger.bundle.skill import SKILL_MD
from ledger.errors import LedgerError
from ledger.exchange.targets import Targets

__all__ = ["Listing"]


class Listing:
    """Hermes's ``skills_list`` of the home a brain projects to (:func:`list_home`), from its head
    snapshot, with the ledger's fields: each entry's ``version``, and ``in_skill``/``file_path`` for a
    SKILL.md inside another skill's folder. Kept per head, platform gate and the linked Hermes
    homes' configs; each SKILL.md is read once per blob id and each skill's files once per tree id
    (both content-addressed), so a listing after a write reads only what the write changed."""

    def __init__(self, brain: Any) -> None:
        self.brain = brain
        self._listing: tuple[Any, list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._cards: dict[bytes, Card] = {}  # SKILL.md blob id → what Hermes reads of it
        self._trees: dict[bytes, list[tuple[str, bytes]]] = {}  # skill tree id → its SKILL.md files
        self._homes: tuple[Any, list[Path]] | None = None  # (targets.json's stat, the homes' config.yaml)
        self._configs: dict[Any, tuple[set[str], bool]] = {}  # (config, stat, platform) → what it says

    def __call__(self, all_platforms: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(shown, hidden) for the head; ``all_platforms``: as if every ``platforms:`` held this host."""
        head = self.brain.head()
        disabled, kanban, configs = self._homes_config()
        env = tuple(map(os.environ.get, ("HERMES_KANBAN_TASK", "HERMES_KANBAN_BOARD", "TERMUX_VERSION", "PREFIX")))
        key = (head.commit, all_platforms, sys.platform, configs, env)
        if self._listing is not None and self._listing[0] == key:
            return self._listing[1], self._listing[2]
        categories = self.brain.categories.of()
        versions = {e.name: e.version for e in self.brain.catalog.entries()}
        found = []
        for name, tree in head.skills.items():
            where = f"{categories[name]}/{name}" if name in categories else name
            for rel, blob in self._skill_mds(tree):
                found.append(Found(f"{where}/{rel}", name, rel, self._card(blob), blob))
        cats = self.brain.snapshots.categories_tree(head)
        for rel, (_, blob) in (self.brain.snapshots.files(cats) if cats else {}).items():
            if rel.rpartition("/")[2] == SKILL_MD:  # Hermes would read one there as a skill too
                found.append(Found(rel, None, rel, self._card(blob), blob))
        gate = (lambda _p: True) if all_platforms else None
        active = functools.partial(environment_active, kanban_toolset=kanban)
        shown, hidden = list_home(
            found, disabled=disabled, platform_ok=gate,
            environment_ok=lambda e: matches_environment(e, active))  # fmt: skip

        def ours(f: Found, entry: dict[str, Any]) -> dict[str, Any]:
            if f.skill is not None:
                entry["version"] = versions.get(f.skill)
            if f.file != SKILL_MD:  # a SKILL.md inside another skill, which Hermes lists as a skill
                entry.update(in_skill=f.skill, file_path=f.file)
            return entry

        self._listing = (key, [ours(*x) for x in shown], [ours(*x) for x in hidden])
        if len(self._trees) + len(self._cards) > 4 * len(found) + 2048:  # of skills long since rewritten
            trees = set(head.skills.values())
            self._trees = {t: v for t, v in self._trees.items() if t in trees}
            live = {blob for mds in self._trees.values() for _, blob in mds} | {f.blob for f in found}
            self._cards = {b: c for b, c in self._cards.items() if b in live}
        return self._listing[1], self._listing[2]

    def _skill_mds(self, tree: bytes) -> list[tuple[str, bytes]]:
        """The SKILL.md files of a skill tree, as (path in the skill, blob id)."""
        known = self._trees.get(tree)
        if known is None:
            files = self.brain.snapshots.files(tree)
            known = self._trees[tree] = sorted(
                (rel, blob) for rel, (_, blob) in files.items() if rel.rpartition("/")[2] == SKILL_MD)
        return known

    def _card(self, blob: bytes) -> Card:
        card = self._cards.get(blob)
        if card is None:
            card = self._cards[blob] = read_card(self.brain.store.read(blob, b"blob"))
        return card

    def _homes_config(self) -> tuple[dict[str, str], bool, tuple[Any, ...]]:
        """From the config.yaml of each linked Hermes home (a hermes target's ``skills`` folder's parent):
        disabled name → where, whether kanban is a toolset, and the files' signature (path, mtime, size)."""
        try:
            st = os.stat(Targets(self.brain.control).file)
            stamp: Any = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if self._homes is None or self._homes[0] != stamp:
            try:
                targets = Targets(self.brain.control).all() if stamp else []
            except LedgerError:
                targets = []
            paths = [Path(t.path).parent / "config.yaml" for t in targets
                     if t.layout == "hermes" and Path(t.path).name == "skills"]  # fmt: skip
            self._homes = (stamp, paths)
        sig, disabled, kanban = [], {}, False
        for path in self._homes[1]:
            try:
                st = os.stat(path)
            except OSError:
                continue
            sig.append((str(path), st.st_mtime_ns, st.st_size, os.environ.get("HERMES_PLATFORM")))
            cached = self._configs.get(sig[-1])
            if cached is None:
                if len(self._configs) > 64:
                    self._configs.clear()
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    text = ""
                cached = self._configs[sig[-1]] = home_config(text)
            names, toolset = cached
            kanban = kanban or toolset
            for n in sorted(names):
                disabled.setdefault(n, str(path))
        return disabled, kanban, tuple(sig)
