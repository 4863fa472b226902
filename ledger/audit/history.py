"""History's use cases: ``ledger diff`` (and the agent's skill_diff), as a typed report (ADR 73).

A brain is passed in (its ``store``, ``head``, ``diff``, ``resolve``, ``version_commit``), so this
stays below the brain (tests/unit/test_layers.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ledger.audit.reports import DiffReport, SkillStatsReport
from ledger.errors import LedgerError, StoreError, UsageError
from ledger.store.skilltree import skills_of

__all__ = ["diff", "skill_stats"]


def diff(brain: Any, args: Sequence[str] = (), skill: str | None = None) -> DiffReport:
    """Changes as git shows them: head → working tree, REV → working tree, or REV → REV.

    ``args`` is ``[REV [REV]] [NAME]`` (a last word that is not a revision is a skill name, limiting
    the diff to that skill) or ``NAME@A [NAME@B]`` (two versions of a skill; ``NAME@A`` alone: that
    version → the working tree); ``skill`` limits the diff to that skill, never read as a revision.
    """
    words, versioned = _versions(brain, list(args))
    if versioned is not None:  # NAME@A [NAME@B]: those versions' snapshots, that skill only
        if skill not in (None, versioned):
            raise UsageError(f"--skill {skill} and {versioned}@… name different skills")
        skill = versioned
    revs, name = _revs_and_name(brain, list(words)) if skill is None else (_revs(list(words)), skill)
    d = brain.diff(*revs, name=name)
    if name is not None and not d.files:
        _require_skill(brain, revs, name)  # a typo is an error, not an empty diff
    return DiffReport.of(d)


def _versions(brain: Any, args: list[str]) -> tuple[list[str], str | None]:
    """``NAME@V`` arguments as the commits that wrote those versions, and the one skill they name."""
    names, out = set(), []
    for arg in args:
        m = re.fullmatch(r"(.+)@(\d+)", arg)
        if m is None or _resolves(brain, arg):
            out.append(arg)
            continue
        name = brain.resolve(m.group(1))
        names.add(name)
        out.append(brain.version_commit(name, int(m.group(2))).hex())
    if len(names) > 1:
        raise UsageError(
            f"NAME@VERSION arguments name different skills: {', '.join(sorted(names))}",
            hint="compare versions of one skill, or two revisions with --skill",
        )
    return out, names.pop() if names else None


def _revs_and_name(brain: Any, args: list[str]) -> tuple[list[str | None], str | None]:
    """Split ``[REV [REV]] [NAME]``: a last word that is not a revision is a skill name."""
    name = None
    if args:
        last = args[-1]
        try:
            brain.store.resolve(last)
            is_rev = True
        except StoreError:
            is_rev = False
        known = last in brain.head().skills or brain.skills_dir.joinpath(last).is_dir()
        if is_rev and known:
            raise UsageError(f"{last!r} is both a revision and a skill", hint=f"write 'ledger diff … --skill {last}'")
        if not is_rev and not known and len(args) > 1 and not _resolves(brain, args[-2]):
            raise LedgerError(f"{args[-2]!r} is not a revision", hint="a commit id, main~N, or a root")
        if not is_rev and not known and not any(_has_skill(brain, r, last) for r in args[:-1]):
            raise LedgerError(
                f"{last!r} is neither a revision nor a skill",
                hint="revisions: a commit id, main~N or a root (see 'ledger log'); skills: 'ledger skill list'",
            )
        if not is_rev:
            args, name = args[:-1], last
    return _revs(args), name


def _resolves(brain: Any, rev: str) -> bool:
    try:
        brain.store.resolve(rev)
    except StoreError:
        return False
    return True


def _has_skill(brain: Any, rev: str | None, name: str) -> bool:
    """Whether snapshot ``rev`` (None: the head and the working tree) holds skill ``name``."""
    if rev is None:
        return name in brain.head().skills or brain.skills_dir.joinpath(name).is_dir()
    try:
        return name in skills_of(brain.store, brain.store.commit_info(brain.store.resolve(rev))[0])[1]
    except StoreError:
        return False


def _require_skill(brain: Any, revs: list[str | None], name: str) -> None:
    if not any(_has_skill(brain, r, name) for r in {*revs, None}):
        raise LedgerError(f"no skill named {name!r} on either side of the diff", hint="see 'ledger skill list'")


def _revs(args: list[str]) -> list[str | None]:
    if len(args) > 2:
        raise UsageError("give at most two revisions", hint="ledger diff [REV [REV]] [NAME]")
    return [*args, None, None][:2]


def skill_stats(brain: Any, name: str, version: int | None = None) -> SkillStatsReport:
    """Skill ``name``'s outcomes and lift per version (``version``: that one only)."""
    doc = brain.evidence.skill_stats(name)
    if version is not None:
        doc["versions"] = [v for v in doc["versions"] if v["version"] == version]
    return SkillStatsReport(**doc)
