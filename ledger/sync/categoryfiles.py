"""Hermes category files (``<category>/DESCRIPTION.md``) kept in step between a brain and a target.

A Hermes home holds, beside its skills, one file per category folder that Hermes's prompt index
reads (``agent/prompt_builder.py``; docs/layouts.md cites it).  The brain keeps them byte for
byte in ``categories/`` beside the bundle (docs/lineage.md §1.5).  Each is compared three ways,
as skills are: the target (``t``), what the manifest says was last in step (``b``) and the brain
(``l``):

- ``t == b``: the target did not change it; the brain's copy is projected if it moved;
- ``l == b``: only the target changed it; recorded (a removal is recorded as one);
- both changed, differently: a conflict, kept until one side is taken; nothing is written.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ledger.store.gitstore import blob_id
from ledger.sync.settling import Pass

__all__ = ["CategoryPlan", "conflict_key", "plan"]

PREFIX = "categories/"  # a category file's conflicts sit beside skills' in the manifest, under this prefix


def conflict_key(rel: str) -> str:
    return PREFIX + rel


@dataclass
class CategoryPlan:
    """What one pass does with category files: ``record`` into the brain (``None`` removes one),
    ``project`` into the target (``None`` removes one), and the new in-step blob of each."""

    record: dict[str, bytes | None] = field(default_factory=dict)
    project: dict[str, bytes | None] = field(default_factory=dict)
    in_step: dict[str, str | None] = field(default_factory=dict)


def plan(p: Pass, brain: Mapping[str, bytes], take: tuple[str, str] | None) -> CategoryPlan:
    """Compare every category file three ways; conflicts go into the manifest (and stay there)."""
    out = CategoryPlan()
    if p.target.layout != "hermes":
        return out
    m = p.manifest
    target = p.categories
    for rel in sorted(set(target) | set(m.categories) | set(brain)):
        t = blob_id(target[rel]).hex() if rel in target else None
        b = m.categories.get(rel)
        l_ = blob_id(brain[rel]).hex() if rel in brain else None
        key = conflict_key(rel)
        chosen = take[0] if take and take[1] in (key, rel) and key in m.conflicts else None
        if chosen is not None:
            m.conflicts.pop(key)
            m.dirty = True
            if chosen == "ledger":
                out.project[rel], out.in_step[rel] = brain.get(rel), l_
            elif chosen == p.target.name:
                out.record[rel], out.in_step[rel] = target.get(rel), t
            continue
        if t == l_:
            if b != t:
                out.in_step[rel] = t
            if key in m.conflicts:
                m.conflicts.pop(key)
                m.dirty = True
            continue
        if key in m.conflicts and (t, l_) == (m.conflicts[key]["target_blob"], m.conflicts[key]["ledger_blob"]):
            continue  # still in conflict: nothing written on either side
        if t == b:
            out.project[rel], out.in_step[rel] = brain.get(rel), l_
        elif l_ == b:
            out.record[rel], out.in_step[rel] = target.get(rel), t
        else:
            m.dirty = True
            m.conflicts[key] = {
                "kind": "category-file",
                "target_blob": t,
                "ledger_blob": l_,
                "target_state": None,
                "ledger_tree": None,
                "files": [rel],
                "since": m.conflicts.get(key, {}).get("since") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "hint": f"ledger resolve {rel} --take ledger|{p.target.name}; both copies stay until then",
            }
    return out
