"""Inclusion proofs at the head in O(log n): the skill's own tree, plus one path of the root index.

A view hands the agent a proof that the SKILL.md it read is in the head's root.  Building
the whole skills-level tree for that (``treehash.expand_skills``) costs a leaf hash per
skill: 113 ms a view at 10,000 skills.  The head already holds that level as Merkle levels
(:class:`ledger.bundle.merkle.RootIndex`, loaded from ``.ledger/cache`` or rebuilt from git), so
a proof needs only the skill's subtree and one audit path.

The levels come from a cache, so they are checked, not trusted (ADR 13's rule): every
proof is verified against the root the head commit records before it is served.  One
that fails means the cached levels (or digests) are wrong; they are rebuilt from git
objects alone and the proof made again.  A proof that still fails is an error, never
an answer.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping

from ledger.bundle.merkle import TREE, InclusionProof, ProofStep, RootIndex, prove, verify_proof
from ledger.errors import ProofError, StoreError
from ledger.store import treehash as th
from ledger.store.gitstore import GitStore

__all__ = ["prove_at"]


def prove_at(
    store: GitStore,
    cache: th.DigestCache,
    skills: Mapping[str, bytes],
    bundle: RootIndex,
    root: bytes,
    rel: str,
    rebuilt: Callable[[], RootIndex],
) -> InclusionProof:
    """The proof of bundle path ``rel`` in ``root``, from ``bundle``'s levels; ``rebuilt`` makes
    the index again from git objects when a proof from the cached one does not verify."""
    name, _, inner = rel.partition("/")
    if name not in skills:
        raise ProofError(f"{rel!r} is not a file in this tree")
    if not inner:
        raise ProofError(f"{rel!r} is a directory; proofs are for files", hint="name a file: <skill>/<path>")
    proof = _prove(store, cache, skills[name], bundle, root, name, rel)  # a path that names no file raises here
    try:
        verify_proof(proof, root)
        return proof
    except ProofError:
        pass  # the cached levels or digests are wrong: rebuild them, never serve this proof
    fresh = th.DigestCache(None)  # the digests too: nothing read from .ledger/cache
    proof = _prove(store, fresh, skills[name], rebuilt(), root, name, rel)
    try:
        verify_proof(proof, root)
    except ProofError as exc:
        raise StoreError(
            f"the head's objects do not hash to its recorded root ({exc.message})", hint="run 'ledger verify'"
        ) from None
    return proof


def _prove(
    store: GitStore, cache: th.DigestCache, tree: bytes, bundle: RootIndex, root: bytes, name: str, rel: str
) -> InclusionProof:
    parts = rel.split("/")
    skill = th.expand(store, tree, cache, parts[1:])
    within = prove(skill, "/".join(parts[1:]))  # its last step is the skill's own directory
    i = bisect.bisect_left(bundle.names, name)  # the head checked its index lists exactly its skills
    top = ProofStep(i, len(bundle.names), tuple(TREE.path(bundle.levels, i)))
    return InclusionProof(rel, within.kind, within.content, (*within.steps, top), root)
