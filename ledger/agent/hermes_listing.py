"""Hermes's ``skills_list`` of the home a brain projects to, kept for the brain's head.

:func:`ledger.agent.hermes_shapes.list_home` holds Hermes's listing rules, statement for
statement; this keeps its answer per head, so the listing an agent calls constantly reads only
what the last write changed. What it reads of each git object (a skill tree's SKILL.md files,
what Hermes reads of each SKILL.md) is also kept on disk by object id
(:class:`ledger.brain.memo.ObjectMemo`, ``.ledger/cache/hermes-listing-v1.json``), so the first
listing of a fresh ``ledger mcp`` reads from the store only the skills it has never seen.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
from pathlib import Path
from typing import Any

from ledger._fs import HERMES_LISTING
from ledger.agent.hermes_shapes import (
    MAX_DESCRIPTION,
    Card,
    Found,
    environment_active,
    home_config,
    list_home,
    matches_environment,
    read_card,
)
from ledger.brain.memo import ObjectMemo, files_of_trees, plain
from ledger.bundle.skill import SKILL_MD
from ledger.errors import LedgerError, StoreError
from ledger.store import gitstore as gs
from ledger.store.state import State
from ledger.sync.targets import Targets

__all__ = ["Listing"]

_ABSENT = Card().name  # a card's name when the frontmatter has none
_CARD_KEYS = {
    "n": "name",
    "d": "description",
    "p": "platforms",
    "e": "environments",
    "u": "unreadable",
    "b": "bad_description",
}


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
        # skill tree id → its SKILL.md files, and SKILL.md blob id → its card, for the next process too
        sources = ("ledger.agent.hermes_listing", "ledger.agent.hermes_shapes", "ledger.bundle.frontmatter")
        self.memo = ObjectMemo(State(brain.control).path(HERMES_LISTING), sources)

    def __call__(self, all_platforms: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(shown, hidden) for the head; ``all_platforms``: as if every ``platforms:`` held this host."""
        head = self.brain.head()
        disabled, kanban, configs = self._homes_config()
        env = tuple(map(os.environ.get, ("HERMES_KANBAN_TASK", "HERMES_KANBAN_BOARD", "TERMUX_VERSION", "PREFIX")))
        key = (head.commit, all_platforms, sys.platform, configs, env)
        if self._listing is not None and self._listing[0] == key:
            return self._listing[1], self._listing[2]
        versions = {e.name: e.version for e in self.brain.listing()}
        try:
            found = self._found(head)
        except StoreError:  # an object the memo names is missing (a damaged file): read all from the store
            if not self.memo.forget():
                raise
            self._trees.clear()
            self._cards.clear()
            found = self._found(head)
        gate = (lambda _p: True) if all_platforms else None
        active = functools.partial(environment_active, kanban_toolset=kanban)
        shown, hidden = list_home(
            found, disabled=disabled, platform_ok=gate, environment_ok=lambda e: matches_environment(e, active)
        )

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
        self.memo.save(itertools.chain(head.skills.values(), (f.blob for f in found)))
        return self._listing[1], self._listing[2]

    def _found(self, head: Any) -> list[Found]:
        """Every SKILL.md Hermes would find in the home: each skill's that the supply record does not
        withhold (``ledger sync`` never projects one), and any in the categories tree."""
        categories = self.brain.categories.of()
        hidden = self.brain.supply(head).withheld()
        skills = {n: t for n, t in head.skills.items() if n not in hidden} if hidden else head.skills
        self._fill(skills)
        found = []
        for name, tree in skills.items():
            where = f"{categories[name]}/{name}" if name in categories else name
            for rel, blob in self._skill_mds(tree):
                found.append(Found(f"{where}/{rel}", name, rel, self._card(blob), blob))
        cats = self.brain.categories_tree(head)
        for rel, (_, blob) in (self.brain.files(cats) if cats else {}).items():
            if rel.rpartition("/")[2] == SKILL_MD:  # Hermes would read one there as a skill too
                found.append(Found(rel, None, rel, self._card(blob), blob))
        return found

    def _fill(self, skills: dict[str, bytes]) -> None:
        """Learn the SKILL.md files of the skill trees not yet known, and the cards of those files:
        from the memo, else from the store in one pipelined request per tree level and one for
        the files. Anything unusual (a link's mode, a missing object) is left to the one-by-one
        reads, which report it as they always have."""
        rest = []
        for tree in dict.fromkeys(t for t in skills.values() if t not in self._trees):
            mds = _tree_entry(self.memo.get(tree))
            if mds is None:
                rest.append(tree)
            else:
                self._trees[tree] = mds
        store = self.brain.store
        if rest:
            try:
                read = files_of_trees(store, rest)
                for files in read.values():
                    for rel, (mode, _) in files.items():
                        gs.kind_of_mode(mode, rel)
            except LedgerError:
                read = {}
            for tree, files in read.items():
                mds = self._trees[tree] = sorted(
                    (rel, blob) for rel, (_, blob) in files.items() if rel.rpartition("/")[2] == SKILL_MD
                )
                self.memo.put(tree, [[rel, blob.hex()] for rel, blob in mds])
        wanted = []
        for tree in dict.fromkeys(skills.values()):
            for _, blob in self._trees.get(tree, ()):
                if blob not in self._cards:
                    card = _card_entry(self.memo.get(blob))
                    if card is None:
                        wanted.append(blob)
                    else:
                        self._cards[blob] = card
        wanted = list(dict.fromkeys(wanted))
        try:
            blobs = store.read_blobs(wanted)
        except LedgerError:
            return
        for blob, data in zip(wanted, blobs, strict=True):
            card = self._cards[blob] = read_card(data)
            self.memo.put(blob, _card_json(card))

    def _skill_mds(self, tree: bytes) -> list[tuple[str, bytes]]:
        """The SKILL.md files of a skill tree, as (path in the skill, blob id)."""
        known = self._trees.get(tree)
        if known is None:
            files = self.brain.files(tree)
            known = self._trees[tree] = sorted(
                (rel, blob) for rel, (_, blob) in files.items() if rel.rpartition("/")[2] == SKILL_MD
            )
        return known

    def _card(self, blob: bytes) -> Card:
        card = self._cards.get(blob)
        if card is None:
            card = _card_entry(self.memo.get(blob))
        if card is None:
            card = read_card(self.brain.store.read(blob, b"blob"))
            self.memo.put(blob, _card_json(card))
        self._cards[blob] = card
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
            paths = [
                Path(t.path).parent / "config.yaml"
                for t in targets
                if t.layout == "hermes" and Path(t.path).name == "skills"
            ]
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


def _tree_entry(kept: Any) -> list[tuple[str, bytes]] | None:
    """A skill tree's SKILL.md files as the memo keeps them (``[[path, blob id hex], ...]``), or
    ``None`` for a miss or anything else."""
    if type(kept) is not list:
        return None
    out = []
    for item in kept:
        if type(item) is not list or len(item) != 2 or type(item[0]) is not str or type(item[1]) is not str:
            return None
        try:
            blob = bytes.fromhex(item[1])
        except ValueError:
            return None
        if len(blob) != 20 or item[1] != blob.hex():
            return None
        out.append((item[0], blob))
    return out if out == sorted(out) else None


def _card_json(card: Card) -> dict[str, Any] | None:
    """A card as the memo keeps it: its fields under short keys, the absent name and default
    fields left out; ``None`` when a field is not :func:`plain` (the card is not kept)."""
    out = {key: getattr(card, field) for key, field in _CARD_KEYS.items()}
    if card.name is _ABSENT:
        del out["n"]
    for key in ("p", "e", "u", "b"):
        if out[key] is None:
            del out[key]
    return out if plain(out) else None


def _card_entry(kept: Any) -> Card | None:
    """:func:`_card_json` read back, or ``None`` for a miss or anything :func:`read_card` cannot
    return: an unreadable card holds nothing else; a bad description is ``None``; a good one is
    text, a list or a map (what has a length) of at most Hermes's 1,024 characters or items."""
    if type(kept) is not dict or "d" not in kept or not kept.keys() <= _CARD_KEYS.keys():
        return None
    if any(key in kept and type(kept[key]) is not str for key in ("u", "b")):
        return None
    description = kept["d"]
    if "u" in kept:
        shaped = kept.keys() == {"d", "u"} and description == ""
    elif "b" in kept:
        shaped = description is None
    else:
        shaped = type(description) in (str, list, dict) and len(description) <= MAX_DESCRIPTION
    if not shaped:
        return None
    return Card(**{_CARD_KEYS[key]: value for key, value in kept.items()})
