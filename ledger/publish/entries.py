"""The brain's skills as the MCP Skills extension's ``Skill`` entries, each with its anchor (docs/lineage/anchor.md).

:class:`Entries` answers what ``skills/list``, ``skills/get``, ``resources/read`` and
``resources/directory/read`` serve, and nothing more than a runtime may see:

- the head's skills less those its supply record withholds (quarantined, revoked), as the agents'
  listing (:class:`ledger.brain.catalog.Catalog`) has them;
- with the evaluation gate on, a gated skill at its newest **released** version, its files read from
  the snapshot that holds that version (the gate's own :func:`ledger.evals.gate.read` and
  :func:`~ledger.evals.gate.versions_of`, as ``ledger sync`` projects it); one with no released
  version is not served;
- a skill whose SKILL.md the spec's rules refuse (a ``name`` that is not its folder, frontmatter
  with no one JSON rendering, a field the spec types otherwise, such as ``metadata`` that is not
  strings to strings: :func:`ledger.bundle.lint.served_errors`; over the spec's limits) is not
  served, and :meth:`Entries.refused` says why and how to fix it.

Every byte comes from the store (git objects), never the work tree. A nested skill (a descendant
``SKILL.md`` whose folder is its valid ``name``) gets its own flat entry. Entries are kept per skill
tree id (a content hash: never stale) and the listing per head commit, so a warm listing is a lookup.
"""

from __future__ import annotations

import bisect
import hashlib
import mimetypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger.audit.signatures import signer_of
from ledger.brain.memo import files_of_trees
from ledger.bundle.frontmatter import as_json
from ledger.bundle.lint import served_errors
from ledger.bundle.merkle import (
    KIND_DIR,
    TREE,
    Digest,
    DirNode,
    InclusionProof,
    ProofStep,
    file_digest,
    leaf_hash,
    prove,
    tree_of,
    verify_proof,
)
from ledger.chain.receipts import receipt_of
from ledger.errors import LedgerError, SkillNotFoundError
from ledger.evals import gate
from ledger.publish import anchor as an
from ledger.store.gitstore import kind_of_mode, snapshot_of

if TYPE_CHECKING:
    from ledger.brain.facade import Brain

__all__ = ["DIRECTORY", "Entries", "mime_type"]

DIRECTORY = "inode/directory"  # the extension's mimeType of a directory resource


_MIME: mimetypes.MimeTypes | None = None


def mime_type(path: str) -> str:
    """A file's ``mimeType``: ``text/markdown`` for Markdown (SKILL.md first), else by its extension, from
    Python's built-in table only: a ``MimeTypes`` made with no file names holds the module's defaults and
    never the machine's (``/etc/mime.types`` and the like, which the module-level ``guess_type`` reads),
    so every machine serves the same ``mimeType`` for the same file. Unknown: ``application/octet-stream``."""
    global _MIME
    if path.endswith((".md", ".markdown")) or path.rsplit("/", 1)[-1] == "SKILL.md":
        return "text/markdown"
    if _MIME is None:
        _MIME = mimetypes.MimeTypes()
    return _MIME.guess_type(path, strict=False)[0] or "application/octet-stream"


@dataclass(frozen=True)
class _File:
    kind: int
    blob: bytes
    content: bytes  # C(bytes), bundle-hash.md §3
    sha256: str
    size: int


@dataclass
class _Tree:
    """One skill tree's part of its entries: what depends on its files alone (kept by tree id)."""

    files: dict[str, _File]  # rel → file, in byte order of rel
    node: DirNode  # the folder, every directory expanded
    skills: list[tuple[str, dict[str, Any] | None, str | None]]  # (prefix, frontmatter, why not served)
    proofs: dict[str, an.FileProof]  # rel → its proof up to the folder


@dataclass(frozen=True)
class _Pick:
    tree: bytes
    version: int
    commit: bytes


class Entries:
    """The served skills of ``brain`` as spec ``Skill`` entries (docs/lineage/anchor.md)."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self._trees: dict[tuple[str, bytes], _Tree] = {}
        self._snaps: dict[
            bytes, tuple[Any, dict[str, str] | None, tuple[str, str] | None, dict[str, Any] | None, str]
        ] = {}
        self._at: tuple[tuple[bytes, bool], _Served] | None = None
        self.generation = 0  # how many listings were made: it changes when the head (or the gate) does

    # ------------------------------------------------------------------ the API

    def list(self) -> list[dict[str, Any]]:
        """Every served skill's entry, outer skills in byte order of name, each followed by its nested ones."""
        return list(self._served().listing)

    def get(self, uri: str) -> dict[str, Any]:
        """The entry whose ``uri`` (a SKILL.md's) is ``uri``; :class:`SkillNotFoundError` when none is served."""
        served = self._served()
        found = served.by_uri.get(uri)
        if found is None:
            why = served.refused.get(uri)
            raise SkillNotFoundError(
                f"no skill is served at {uri}" + (f": {why}" if why else ""),
                hint="skills/list names the served skills' URIs",
            )
        return found

    def read(self, uri: str) -> bytes:
        """The exact bytes of file ``uri``, from the snapshot its skill's entry names: a file one of the
        served entries lists in its ``resources``, and no other."""
        name, rel, _, tree, files, _ = self._locate(uri)
        f = tree.files.get(rel) if rel in files else None
        if f is None:
            raise SkillNotFoundError(
                f"{uri} is not a file the brain serves", hint=f"skills/get skill://{name}/SKILL.md lists its files"
            )
        return self.brain.store.read(f.blob, b"blob")

    def children(self, uri: str) -> list[dict[str, Any]]:
        """The direct children of directory ``uri`` (``skill://<name>`` or a directory in it), as the
        extension's ``Resource`` objects, in byte order of name."""
        name, rel, _, tree, files, dirs = self._locate(uri, directory=True)
        node: Any = tree.node if rel in dirs else None
        for part in rel.split("/") if rel and node is not None else ():
            node = node.entries.get(part) if isinstance(node, DirNode) else None
        if not isinstance(node, DirNode):
            what = "a file, not a directory resource" if rel in files else "not a directory the brain serves"
            raise SkillNotFoundError(f"{uri} is {what}", hint=f"skills/get skill://{name}/SKILL.md lists its files")
        out = []
        inner = rel + "/" if rel else ""
        for child in node.names:
            if inner + child not in files and inner + child not in dirs:
                continue  # a file of no served entry (an unserved outer skill's own): not even named
            sub = node.entries[child]
            mime = DIRECTORY if isinstance(sub, DirNode) else mime_type(child)
            out.append({"uri": f"{uri}/{child}", "name": child, "mimeType": mime})
        return out

    def refused(self) -> dict[str, str]:
        """Each skill ``uri`` in the head that is not served for a reason of the spec, and the reason."""
        return dict(self._served().refused)

    # ------------------------------------------------------------------ what is served

    def _served(self) -> _Served:
        head = self.brain.head()
        key = (head.commit, gate.enabled(self.brain.config))
        if self._at is not None and self._at[0] == key:
            return self._at[1]
        served = _Served()
        picks = self._picks(head, key[1], served.refused)
        self._prefetch(picks)
        levels = head.bundle.levels  # the head's root index, checked once here, then one leaf per skill
        sound = (
            bool(levels) and bool(levels[0]) and TREE.levels(levels[0]) == levels and levels[-1][0] == head.snap.root
        )
        for name, pick in picks.items():
            try:
                tree = self._tree(name, pick.tree)
            except LedgerError as exc:
                served.refused[an.skill_uri(name, "")] = exc.message
                continue
            step = None
            files: set[str] = set()
            for prefix, fm, why in tree.skills:
                uri = an.skill_uri(name, prefix)
                if fm is None:
                    served.refused[uri] = why or "it is not a skill"
                    continue
                if step is None:
                    step = self._folder_step(name, tree.node.digest, pick, head, sound)
                entry = self._entry(name, prefix, fm, pick, tree, step)
                served.by_uri[uri] = entry
                served.listing.append(entry)
                files.update(r["uri"][len(an.SCHEME) + len(name) + 1 :] for r in entry["resources"])
            if files:  # only a served entry's files, and the directories on the way to them, are readable
                ways: set[str] = set()
                for rel in files:
                    d = rel.rsplit("/", 1)[0] if "/" in rel else ""
                    while d not in ways:
                        ways.add(d)
                        d = d.rsplit("/", 1)[0] if "/" in d else ""
                served.picks[name] = (pick, tree, frozenset(files), frozenset(ways))
        self._at = (key, served)
        self.generation += 1
        if len(self._trees) > 2 * len(head.skills) + 1024:  # trees of skills long since rewritten
            live = {(n, p.tree) for n, p in picks.items()}
            self._trees = {k: t for k, t in self._trees.items() if k in live}
        return served

    def _picks(self, head: Any, gated: bool, refused: dict[str, str]) -> dict[str, _Pick]:
        """Each served skill's tree, version and snapshot: the head's, less the withheld (the catalog's
        rule), and with the gate on a held skill's newest released version unless it is revoked (else none:
        why goes in ``refused``)."""
        out = {e.name: _Pick(head.skills[e.name], e.version, head.commit) for e in self.brain.listing()}
        if not gated:
            return out
        for name, r in gate.releases(self.brain).items():  # the one rule ledger sync projects by, too
            if name not in out:
                continue
            v = r.versions.get(r.served) if r.served is not None else None
            if v is None:
                del out[name]  # nothing released, or the released version is revoked: no runtime gets it
                refused[an.skill_uri(name, "")] = r.refusal()
            else:
                out[name] = _Pick(v.tree, v.version, bytes.fromhex(v.commit))
        return out

    def _locate(
        self, uri: str, directory: bool = False
    ) -> tuple[str, str, _Pick, _Tree, frozenset[str], frozenset[str]]:
        if not isinstance(uri, str) or not uri.startswith(an.SCHEME):
            raise SkillNotFoundError(f"{uri!r} is not a skill:// URI the brain serves")
        name, _, rel = uri[len(an.SCHEME) :].partition("/")
        found = self._served().picks.get(name)
        if found is None or (not rel and not directory) or uri.endswith("/"):
            raise SkillNotFoundError(
                f"{uri} is not a resource the brain serves", hint="skills/list names the served skills"
            )
        return name, rel, *found

    # ------------------------------------------------------------------ a skill tree

    def _tree(self, name: str, tree_id: bytes) -> _Tree:
        key = (name, tree_id)
        kept = self._trees.get(key)
        if kept is None:
            kept = self._trees[key] = self._read_tree(name, tree_id)
        return kept

    def _prefetch(self, picks: dict[str, _Pick]) -> None:
        """Read the skill trees not yet kept, many at once: their listings level by level and their blobs in
        pipelined requests of about a thousand trees (a first listing of 10,000 skills is not 10,000 round
        trips). A tree that fails here is left to :meth:`_tree`, which names what is wrong with it."""
        missing = [(n, p.tree) for n, p in picks.items() if (n, p.tree) not in self._trees]
        for i in range(0, len(missing), 1024):
            chunk = missing[i : i + 1024]
            try:
                listings = files_of_trees(self.brain.store, [t for _, t in chunk])
                blobs = iter(self.brain.store.read_blobs([sha for _, t in chunk for _, sha in listings[t].values()]))
            except LedgerError:
                continue
            for name, tree in chunk:
                listing = sorted(listings[tree].items(), key=lambda kv: kv[0].encode())
                data = dict(zip(listings[tree], (next(blobs) for _ in listings[tree]), strict=True))
                try:
                    self._trees[(name, tree)] = self._build(name, listing, [data[rel] for rel, _ in listing])
                except LedgerError:
                    continue

    def _read_tree(self, name: str, tree_id: bytes) -> _Tree:
        listing = sorted(self.brain.files(tree_id).items(), key=lambda kv: kv[0].encode())
        return self._build(name, listing, self.brain.store.read_blobs([sha for _, (_, sha) in listing]))

    def _build(self, name: str, listing: list[tuple[str, tuple[int, bytes]]], blobs: list[bytes]) -> _Tree:
        files = {}
        for (rel, (mode, sha)), data in zip(listing, blobs, strict=True):
            kind = kind_of_mode(mode, f"{name}/{rel}")
            files[rel] = _File(kind, sha, file_digest(data), hashlib.sha256(data).hexdigest(), len(data))
        node = tree_of({rel: Digest(f.kind, f.content) for rel, f in files.items()})
        proofs = {rel: an.FileProof(rel, f.kind, f.content, prove(node, rel).steps) for rel, f in files.items()}
        named = [(rel, data) for (rel, _), data in zip(listing, blobs, strict=True)]
        text = {rel: data for rel, data in named if rel.rsplit("/", 1)[-1] == "SKILL.md"}
        skills = []
        for rel in sorted(text, key=lambda r: (r.count("/"), r.encode())):
            prefix = rel[: -len("/SKILL.md")] if "/" in rel else ""
            fm, why = _frontmatter(text[rel], prefix.rsplit("/", 1)[-1] if prefix else name)
            if prefix and fm is None:
                continue  # not a nested skill: an ordinary supporting file of the skill around it
            inner = prefix + "/" if prefix else ""
            mine = [f for r, f in files.items() if r.startswith(inner)]
            if fm is not None and len(mine) > an.MAX_FILES:
                fm, why = None, f"it has {len(mine)} files, over the {an.MAX_FILES} a host must accept"
            elif fm is not None and sum(f.size for f in mine) > an.MAX_TOTAL:
                fm, why = None, f"its files total over the {an.MAX_TOTAL} bytes a host must accept"
            skills.append((prefix, fm, why))
        if "SKILL.md" not in files:
            skills.append(("", None, "it has no SKILL.md at its root"))
        skills.sort(key=lambda s: s[0].encode())
        return _Tree(files, node, skills, proofs)

    # ------------------------------------------------------------------ an entry

    def _entry(
        self, name: str, prefix: str, fm: dict[str, Any], pick: _Pick, tree: _Tree, folder_step: ProofStep
    ) -> dict[str, Any]:
        snap, signed, signer, chain, versions = self._snapshot(pick.commit)
        inner = prefix + "/" if prefix else ""
        mine = [rel for rel in tree.files if rel.startswith(inner)]
        anchor = an.build(
            skill=name,
            prefix=prefix,
            version=pick.version,
            versions=versions,
            root=snap.root,
            commit=pick.commit,
            signed=signed,
            signer=signer,
            chain=chain,
            folder=tree.node.digest,
            folder_step=folder_step,
            files=[tree.proofs[rel] for rel in mine],
        )
        resources = [
            {
                "uri": an.skill_uri(name, "", rel),
                "digest": "sha256:" + tree.files[rel].sha256,
                "size": tree.files[rel].size,
            }
            for rel in sorted(mine, key=str.encode)
        ]
        return {"uri": an.skill_uri(name, prefix), "frontmatter": fm, "resources": resources, "_meta": {an.KEY: anchor}}

    def _snapshot(
        self, commit: bytes
    ) -> tuple[Any, dict[str, str] | None, tuple[str, str] | None, dict[str, Any] | None, str]:
        """A snapshot's per-commit part of its anchors, made once and shared by all its entries: the parsed
        snapshot, the anchor's ``signed`` member, its signer (address, role), its chain receipt, if any, and
        where the brain kept its counter there (``versions``: "store" when its tree holds a ``versions``
        record, lineage.md §4.2, else "skill-md")."""
        kept = self._snaps.get(commit)
        if kept is not None:
            return kept
        raw = self.brain.store.read(commit, b"commit")
        snap = snapshot_of(commit, raw)
        address = signer_of(snap)
        signer = (address, snap.attribution.get("actor", "")) if address is not None else None
        note = receipt_of(self.brain.store, commit.hex())
        chain = None
        if note is not None:
            chain = {
                "chainId": note["chain_id"],
                "registry": note["registry"],
                "agent": note["agent"],
                "seq": note["seq"],
                "block": note["block"],
                "tx": note["tx"],
            }
        if len(self._snaps) >= 64:
            self._snaps.pop(next(iter(self._snaps)))
        versions = "store" if self.brain.store.versions(bytes.fromhex(snap.tree))[0] is not None else "skill-md"
        self._snaps[commit] = (snap, an.signed_of(snap), signer, chain, versions)
        return self._snaps[commit]

    def _folder_step(self, name: str, folder: bytes, pick: _Pick, head: Any, sound: bool) -> ProofStep:
        """The one step from skill folder ``name`` (digest ``folder``) to its snapshot's root, checked: at the
        head from its root index (``sound``: its levels hash to the head's root), the folder's leaf compared;
        elsewhere, or when that fails, proven afresh from the snapshot's objects and verified."""
        if pick.commit == head.commit and sound:
            names = head.bundle.names
            i = bisect.bisect_left(names, name)
            if i < len(names) and names[i] == name and head.bundle.levels[0][i] == leaf_hash(KIND_DIR, name, folder):
                return ProofStep(i, len(names), tuple(TREE.path(head.bundle.levels, i)))
        step = self.brain.prove(f"{name}/SKILL.md", pick.commit.hex()).steps[-1]
        root = self._snapshot(pick.commit)[0].root
        try:
            verify_proof(InclusionProof(name, KIND_DIR, folder, (step,), root), root)
        except LedgerError:
            raise LedgerError(
                f"skill {name!r} does not hash into the root of snapshot {pick.commit.hex()[:12]}",
                hint="run 'ledger verify'",
            ) from None
        return step


@dataclass
class _Served:
    listing: list[dict[str, Any]]
    by_uri: dict[str, dict[str, Any]]
    picks: dict[str, tuple[_Pick, _Tree, frozenset[str], frozenset[str]]]  # name → (…, its served files, dirs)
    refused: dict[str, str]

    def __init__(self) -> None:
        self.listing, self.by_uri, self.picks, self.refused = [], {}, {}, {}


def _frontmatter(data: bytes, folder: str) -> tuple[dict[str, Any] | None, str | None]:
    """A SKILL.md's frontmatter as JSON when it makes a skill the spec serves at ``folder``; else why not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "its SKILL.md is not UTF-8"
    if text.startswith("\ufeff"):
        return None, "its SKILL.md starts with a byte-order mark"
    try:
        fm = as_json(text)
    except (LedgerError, RecursionError) as exc:
        if not isinstance(exc, LedgerError):
            return None, "its frontmatter nests too deep"
        return None, exc.message + (f" (fix: {exc.hint})" if exc.hint else "")
    name = fm.get("name")
    if name != folder:
        return None, f"its frontmatter name {name!r} is not its folder {folder!r} (the spec: the URI ends in the name)"
    if not an.is_skill_name(name):
        return None, f"its name {name!r} breaks the Agent Skills naming rules"
    errors = served_errors(folder, fm)  # the lint's spec rules, over the frontmatter as served
    if errors:
        return None, "its frontmatter does not conform to the Agent Skills spec: " + "; ".join(errors)
    return fm, None
