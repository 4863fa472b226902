"""Skill names as the runtimes use them: the folder (the key), the name SKILL.md declares, and the
``category/name`` path Hermes shows (issue 19).

A skill is keyed by its folder. Hermes's own ``skill_view`` also finds ``vllm/`` (which
declares ``name: serving-llms-vllm``) by that declared name, and by ``mlops/inference/vllm``
when the skill sits in that category. :func:`resolve` accepts all three and refuses an
ambiguous one by listing the candidates; it never guesses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from ledger.bundle.skill import check_name
from ledger.errors import SkillError, SkillNotFoundError

__all__ = ["CATEGORY_INDEX", "categories_of", "resolve"]

CATEGORY_INDEX = ".ledger-categories.json"  # in categories/: {"format": 1, "skills": {key: "cat/sub"}}


def categories_of(read_index: Callable[[], bytes | None]) -> dict[str, str]:
    """Each categorised skill's category, from the snapshot's category index (empty when none)."""
    data = read_index()
    if not data:
        return {}
    try:
        skills = json.loads(data)["skills"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SkillError(f"categories/{CATEGORY_INDEX} is malformed") from exc
    return {str(k): str(v) for k, v in skills.items()}


def resolve(
    ref: str,
    folders: Mapping[str, object],
    declared: Callable[[], Mapping[str, str]],
    categories: Callable[[], Mapping[str, str]],
) -> str:
    """The folder a runtime's ``ref`` names: the folder itself, ``category/…/folder``, or the name a
    SKILL.md declares.  ``declared`` (folder → declared name) and ``categories`` (folder → category)
    are called only when the cheaper forms miss."""
    if ref in folders:
        return ref
    if "/" in ref:
        category, _, leaf = ref.rstrip("/").rpartition("/")
        cats = categories()
        if leaf in folders and cats.get(leaf) == category:
            return leaf
        hits = sorted(k for k, v in declared().items() if v == leaf and cats.get(k) == category)
        return _one(ref, hits, folders)
    check = None
    try:
        check_name(ref)
    except SkillError as exc:
        check = exc
    hits = sorted(k for k, v in declared().items() if v == ref)
    if not hits:
        if check is not None:
            raise check  # a malformed name says so before "not found"
        return ref  # a well-formed name that is no skill: the caller says "not found" in its own words
    return _one(ref, hits, folders)


def _one(ref: str, hits: list[str], folders: Mapping[str, object]) -> str:
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise SkillError(
            f"{ref!r} is ambiguous: skills {', '.join(hits)} all declare it",
            hint="name the skill by its folder: " + " or ".join(hits),
        )
    near = sorted(n for n in folders if ref.rpartition("/")[2] in n or n in ref)[:5]
    raise SkillNotFoundError(
        f"no skill {ref!r}", hint=("did you mean " + ", ".join(near) + "?") if near else "see 'ledger skill list'"
    )
