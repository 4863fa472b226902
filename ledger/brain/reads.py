"""Reading a brain: the skill index, views, status against the head, proofs, and history.

Every read of the working tree goes through :mod:`ledger.write.writepath`, so a read refuses a
symbolic link exactly as a write does, and never prints a file from outside the brain.

Over 400 lines: ``status`` has three paths (the stat cache's clean record, cached
digests, a full walk), each needed for its speed target; views and proofs sit beside it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ledger._fs import STAT
from ledger.brain.withholding import states
from ledger.bundle import naming
from ledger.bundle.merkle import (
    MAX_PATH_BYTES,
    Digest,
    DirNode,
    InclusionProof,
    RootIndex,
    file_entries,
    format_root,
    prove,
    read_tree,
)
from ledger.bundle.render import index_line
from ledger.bundle.skill import (
    MAX_SKILL_MD,
    SKILL_MD,
    SUPPORT_DIRS,
    SkillDoc,
    check_name,
    check_support_path,
    parse_skill_md,
)
from ledger.errors import (
    LedgerError,
    SkillError,
    SkillNotFoundError,
    StoreError,
    TreeError,
)
from ledger.store import gitstore as gs
from ledger.store import treehash as th
from ledger.store.diffs import Diff, Side, compare
from ledger.store.proofs import prove_at
from ledger.store.skilltree import skills_of
from ledger.store.statcache import StatCache, remember_withheld, signature
from ledger.store.state import State
from ledger.write import writepath as wp
from ledger.write.head import head_supply
from ledger.write.records import SkillInfo, Status
from ledger.write.snapshots import Snapshots
from ledger.write.versioning import Versions

__all__ = ["Reads"]


class Reads:
    """The read-only operations of a brain (``brain._reads``): the working tree and the head, never the writer."""

    def __init__(self, root: Path, control: Path, snapshots: Snapshots, versions: Versions) -> None:
        self.root, self.control, self.skills_dir = root, control, root / "skills"
        self.snapshots, self.versions = snapshots, versions
        self.store, self.cache, self.limits = snapshots.store, snapshots.cache, snapshots.limits
        self._declared_memo: dict[bytes, str | None] = {}  # skill tree id → its declared name

    def list(self) -> list[SkillInfo]:
        """Skills in the working tree, from frontmatter only (bodies are not parsed).

        A skill whose files are unchanged since the last call (by lstat, see
        :mod:`ledger.store.statcache`) is answered from the stat cache.
        """
        out = []
        cache = self._stat_cache()
        record = self.versions.record(self.snapshots.head())  # None: counted in SKILL.md
        with wp.WorkTree(self.root, self.control) as tree:
            names = self.skill_names(tree)
            cache.validate(self.skills_dir, names)
            for name in names:
                info = cache.get(name, "info")
                if info is None:
                    started, sig = time.time_ns(), signature(self.skills_dir / name)
                    data = tree.read((name, SKILL_MD), 4 * MAX_SKILL_MD)
                    if data is None:
                        continue
                    doc = parse_skill_md(_frontmatter_only(data, f"skills/{name}/{SKILL_MD}"), limit=4 * MAX_SKILL_MD)
                    info = [doc.description, doc.version if record is None else None, doc.license, doc.compatibility]
                    cache.put(name, sig, started, info=info)  # a stored version is the head's, not the file's
                if record is not None:
                    info = [info[0], record.get(name, 0), *info[2:]]
                out.append(SkillInfo(name, *info))
        cache.save()
        return out

    def _stat_cache(self) -> StatCache:
        return StatCache(State(self.control).path(STAT))

    def _cached_digests(self, cache: StatCache, read: dict[str, DirNode]) -> tuple[dict[str, bytes], bool] | None:
        """Each skill's bundle digest, from the stat cache where its tree is unchanged, and whether
        every one came from it; ``None`` when skills/ holds anything but plain skill directories
        (the full walk explains it).  Skills read afresh are kept in ``read``."""
        try:
            entries = list(os.scandir(self.skills_dir))
        except OSError:
            return None
        if not all(entry.is_dir(follow_symlinks=False) for entry in entries):
            return None
        all_cached = cache.validate(self.skills_dir, [entry.name for entry in entries])
        out: dict[str, bytes] = {}
        for entry in entries:
            hit = cache.get(entry.name, "digest")
            if hit is not None:
                out[entry.name] = bytes.fromhex(hit)
                continue
            all_cached = False
            started, sig = time.time_ns(), signature(Path(entry.path))
            if sig is None or any(len(f"{entry.name}/{rel}".encode()) > MAX_PATH_BYTES for rel in sig[0]):
                return None
            try:
                node = read_tree(entry.path)
            except TreeError:
                return None
            out[entry.name] = node.digest
            read[entry.name] = node  # status lists a changed skill's files from this, not a second read
            cache.put(entry.name, sig, started, digest=node.digest.hex())
        return out, all_cached

    def resolve(self, ref: str) -> str:
        """The folder (the key) of the skill a runtime names by its folder, its ``category/…/folder``
        path, or the name its SKILL.md declares; an ambiguous name is refused with the candidates."""
        head = self.snapshots.head()
        return naming.resolve(ref, head.skills, lambda: self.declared_names(head), lambda: self.categories_of(head))

    def declared_names(self, head: Any) -> dict[str, str]:
        """Each skill's declared ``name`` in the head snapshot. Parsed once per skill tree id (trees are
        content-addressed), so after a write only the skills it changed are read again."""
        memo = self._declared_memo
        out = {}
        for folder, tree in head.skills.items():
            if tree not in memo:
                memo[tree] = self._declared_name(folder, tree)
            if memo[tree] is not None:
                out[folder] = memo[tree]
        return out

    def _declared_name(self, folder: str, tree: bytes) -> str | None:
        doc = self._head_doc(folder, tree)
        return doc.name if doc is not None else None

    def _head_doc(self, folder: str, tree: bytes) -> Any:
        """The frontmatter of the skill tree's SKILL.md (None when it has none or it does not parse)."""
        files = self.snapshots.files(tree)
        if SKILL_MD not in files:
            return None
        try:
            text = self.snapshots.text(files[SKILL_MD][1], folder)
            return parse_skill_md(_frontmatter_only(text.encode(), folder), limit=1 << 31)
        except LedgerError:
            return None

    def described(self, head: Any) -> dict[str, tuple[str, str | None]]:
        """Each skill of snapshot ``head``: (its SKILL.md description, its Hermes category or None)."""
        cats = self.categories_of(head)
        out = {}
        for folder, tree in head.skills.items():
            doc = self._head_doc(folder, tree)
            out[folder] = (doc.description if doc is not None else "", cats.get(folder))
        return out

    def categories_of(self, head: Any) -> dict[str, str]:
        tree = self.snapshots.categories_tree(head)
        if tree is None:
            return {}
        files = th.files_of(self.store, tree)
        entry = files.get(naming.CATEGORY_INDEX)
        return naming.categories_of(lambda: self.store.read(entry[1], b"blob") if entry else None)

    def index(self) -> str:
        """The Level-0 index: ``▸ <name>: <description>`` per skill, sorted, one line each; a skill the
        head's supply record withholds (quarantined or revoked) is not in it."""
        hidden = self.withheld()
        return "".join(index_line(s.name, s.description) for s in self.list() if s.name not in hidden)

    def withheld(self) -> dict[str, str]:
        """Each skill the head's supply record withholds → its state (:mod:`ledger.brain.withholding`),
        remembered per head for the quick path (:func:`ledger.store.statcache.withheld_at`)."""
        head = self.snapshots.head()
        blob, supply = head_supply(self.store, head)
        out = states(supply)
        remember_withheld(self.control, head.commit.hex(), blob.hex() if blob is not None else None, list(out))
        return out

    def view(self, name: str, file: str | None = None) -> dict[str, Any]:
        """A skill's body and its linked files, or one supporting file's text.

        Reads go through the same descriptor-relative path as writes: a symbolic link
        anywhere in the skill is refused, never followed out of the brain.
        """
        name = self.resolve(name)
        with wp.WorkTree(self.root, self.control) as tree:
            text = tree.read((name, SKILL_MD), 4 * self.limits["skill_md"])
            if text is None:
                raise SkillNotFoundError(f"no skill named {name!r}", hint="see 'ledger skill list'")
            if file is not None:
                parts = check_support_path(file)
                data = tree.read((name, *parts), self.limits["file"])
                if data is None:
                    raise SkillNotFoundError(f"skill {name!r} has no file {file!r}")
                try:
                    return {"name": name, "file": file, "content": data.decode("utf-8")}
                except UnicodeDecodeError:
                    return {"name": name, "file": file, "binary": True, "size": len(data)}
            files, _ = tree.scan(name)
        doc = parse_skill_md(_decode(text, f"skills/{name}/{SKILL_MD}"), limit=4 * MAX_SKILL_MD)
        linked: dict[str, list[str]] = {}
        for rel in sorted(files):
            top = rel.split("/", 1)[0]
            if top in SUPPORT_DIRS and "/" in rel:
                linked.setdefault(top, []).append(rel)
        return {
            "name": name,
            "description": doc.description,
            "version": self._head_version(name, doc),
            "body": doc.body,
            "files": linked,
            "receipt": self._usage_receipt(name, text),
        }

    def _usage_receipt(self, name: str, shown: bytes) -> dict[str, Any] | None:
        """What a runtime stores beside its output: the version, head root, commit and a proof of SKILL.md.

        ``None`` when the skill is not in the head snapshot; ``matches`` says whether the
        text shown is the proven one (a hand edit not yet snapshotted is not).
        """
        head = self.snapshots.head()
        if name not in head.skills:
            return None
        files = self.snapshots.files(head.skills[name])
        proof = self.prove(f"{name}/{SKILL_MD}")
        return {
            "skill": name,
            "version": self._head_version(name, parse_skill_md(self.store.read(files[SKILL_MD][1], b"blob").decode())),
            "root": format_root(head.snap.root),
            "commit": head.commit.hex(),
            "proof": proof.to_json(),
            "matches": files[SKILL_MD][1] == gs.blob_id(shown),
        }

    def _head_version(self, name: str, doc: SkillDoc) -> int:
        """Skill ``name``'s version in the head: its SKILL.md's counter, or the store's record
        (:mod:`ledger.write.versioning`)."""
        return self.versions.version(self.snapshots.head(), name, doc)

    def history(self, name: str) -> list[dict[str, Any]]:
        """Every version ``name`` ever had, newest first: version, action, root, commit, time, actor, note."""
        name = self.resolve(name)
        out = []
        for snap in self.store.lineage():
            for change in snap.changes:
                if change.skill == name:
                    out.append(
                        {
                            "version": change.version,
                            "action": change.action,
                            "operation": snap.operation,
                            "root": format_root(snap.root),
                            "commit": snap.commit,
                            "time": snap.timestamp,
                            "attribution": snap.attribution,
                            "note": gs.split_note(snap.message),
                        }
                    )
        if not out:
            raise SkillNotFoundError(f"no history for skill {name!r}", hint="see 'ledger log'")
        return out

    def lint(self, names: list[str] | None = None) -> list[Any]:
        """Each skill's :class:`ledger.bundle.lint.Verdict` (the working tree): spec rules and Hermes's limits."""
        from ledger.bundle.lint import lint_skill
        from ledger.evals.evalset import EVALS_JSON, MAX_EVALS_JSON, lint_evals

        out = []
        with wp.WorkTree(self.root, self.control) as tree:
            present = self.skill_names(tree)
            for name in names or present:
                if name not in present:
                    raise SkillNotFoundError(f"no skill named {name!r}", hint="see 'ledger skill list'")
                data = tree.read((name, SKILL_MD), 4 * self.limits["skill_md"])
                sizes: dict[str, int] = {}
                tree.scan(name, sizes)
                verdict = lint_skill(name, data.decode("utf-8", "replace") if data is not None else None, sizes)
                if EVALS_JSON in sizes:  # the skill's eval set: the agentskills guide's shape (issue 47)
                    raw = tree.read((name, *EVALS_JSON.split("/")), MAX_EVALS_JSON + 1) or b""
                    for problem in lint_evals(raw, set(sizes), name, verdict.warnings):
                        verdict.error("evals", problem)
                    verdict.valid = not verdict.errors
                    verdict.strict_valid = verdict.valid and not verdict.extra_fields
                out.append(verdict)
        return out

    def skill_names(self, tree: wp.WorkTree) -> list[str]:
        return sorted(name for name, is_dir in tree.listdir() if is_dir)

    def status(self) -> Status:
        """Compare the working tree with the head snapshot: ``{path: modified|new|deleted}``.

        Unchanged skills are recognised by the stat cache (:mod:`ledger.store.statcache`); only
        skills whose files changed since the last call are read and hashed.
        """
        cache = self._stat_cache()
        try:
            return self._status(cache)
        finally:
            cache.save()

    def _status(self, cache: StatCache) -> Status:
        read: dict[str, DirNode] = {}
        found = self._cached_digests(cache, read) if self.skills_dir.exists() else None
        commit = self.store.head()
        if found is not None and found[1] and commit is not None:
            root = cache.is_clean(commit.hex())  # every skill unchanged since it equalled this head
            if root is not None:
                return Status(commit.hex(), root, root, {})
        head = self.snapshots.head()
        digests = found[0] if found is not None else None
        if (
            digests is not None
            and digests.keys() == head.bundle.digests.keys()
            and all(d == head.bundle.digests[n] for n, d in digests.items())
        ):
            root = format_root(head.bundle.root)
            cache.mark_clean(head.commit.hex(), root)
            return Status(head.commit.hex(), root, root, {})
        if digests is not None:
            try:
                disk_root = RootIndex(digests).root
            except TreeError:
                digests = None  # a name the bundle refuses: the full walk names it
        if digests is not None:
            changes: dict[str, str] = {}
            for name in sorted(set(digests) | set(head.skills)):
                if digests.get(name) == head.bundle.digests.get(name):
                    continue
                old = self._committed_files(name) if name in head.skills else {}
                node = (read.get(name) or read_tree(self.skills_dir / name)) if name in digests else None
                new = file_entries(node, name) if node is not None else {}
                for path in sorted(set(old) | set(new)):
                    if old.get(path) != new.get(path):
                        changes[path] = "deleted" if path not in new else "new" if path not in old else "modified"
            return Status(head.commit.hex(), format_root(head.bundle.root), format_root(disk_root), changes)
        try:
            disk = read_tree(self.skills_dir) if self.skills_dir.exists() else DirNode({})
        except TreeError:
            raise self.every_problem() from None
        changes: dict[str, str] = {}
        if disk.digest != head.bundle.root:
            names = set(disk.names) | set(head.skills)
            for name in sorted(names):
                on_disk = disk.entries.get(name)
                digest = head.bundle.digests.get(name)
                if on_disk is not None and digest is not None and on_disk.digest == digest:
                    continue
                old = self._committed_files(name) if digest is not None else {}
                new = file_entries(on_disk, name)
                for path in sorted(set(old) | set(new)):
                    if path not in new:
                        changes[path] = "deleted"
                    elif path not in old:
                        changes[path] = "new"
                    elif old[path] != new[path]:
                        changes[path] = "modified"
        return Status(head.commit.hex(), format_root(head.bundle.root), format_root(disk.digest), changes)

    def every_problem(self) -> TreeError:
        """One error naming every skill (and file) that cannot be hashed, not just the first."""
        problems = []
        for entry in sorted(os.scandir(self.skills_dir), key=lambda e: e.name):
            try:
                if entry.is_symlink() or not entry.is_dir():
                    raise TreeError(f"{'a symbolic link' if entry.is_symlink() else 'a file'}, not a skill directory")
                read_tree(entry.path)
            except TreeError as exc:
                problems.append(f"skills/{entry.name}: {exc.message}")
        return TreeError(
            f"{len(problems)} skill(s) cannot be hashed:" + "".join(f"\n  {p}" for p in problems),
            hint="fix each (links and special files are not allowed in a brain), then run 'ledger status' again",
        )

    def prove(self, rel: str, at: str | None = None) -> InclusionProof:
        """Inclusion proof of bundle path ``rel`` (``<skill>/<file>``) in a snapshot (default: head)."""
        if at is None:  # the head: its root index's levels, checked by verifying the proof (ledger.store.proofs)
            head = self.snapshots.head()
            return prove_at(
                self.store, self.cache, head.skills, head.bundle, head.snap.root, rel, lambda: self._rebuilt_index(head)
            )
        commit = self.store.resolve(at)
        snap = self.store.snapshot(commit)
        parts = tuple(p for p in rel.split("/"))
        tree = th.expand_skills(self.store, skills_of(self.store, bytes.fromhex(snap.tree))[1], self.cache, parts)
        if tree.digest != snap.root:
            raise StoreError(f"snapshot {commit.hex()[:12]} does not hash to its recorded root; run 'ledger verify'")
        return prove(tree, rel)

    def _rebuilt_index(self, head: Any) -> RootIndex:
        """The head's root index made again from git objects alone, replacing a cached one that
        gave a proof that does not verify."""
        fresh = th.DigestCache(None)
        head.bundle = RootIndex({n: th.tree_digest(self.store, t, fresh, n) for n, t in head.skills.items()})
        self.snapshots.index_saved = None  # the next close saves the rebuilt one over the bad file
        return head.bundle

    def diff(self, old: str | None = None, new: str | None = None, name: str | None = None) -> Diff:
        """What changed from snapshot ``old`` (default: the head) to ``new`` (default: the working tree).

        As ``git diff``: no revision compares the head with the working tree (hand edits
        not yet recorded), one compares that snapshot with the working tree, two compare
        two snapshots.  ``name`` limits it to one skill.
        """
        if name is not None:
            name = self.resolve(name)
        a = self.store.resolve(old) if old is not None else self.snapshots.head().commit
        old_side, old_skills = self._snapshot_side(a)
        if new is not None:
            b = self.store.resolve(new)
            new_side, new_skills = self._snapshot_side(b)
            changed = {n for n in set(old_skills) | set(new_skills) if old_skills.get(n) != new_skills.get(n)}
            return Diff(a.hex(), b.hex(), compare(old_side, new_side, _only(changed, name)))
        try:
            disk = read_tree(self.skills_dir) if self.skills_dir.exists() else DirNode({})
        except TreeError:
            raise self.every_problem() from None
        digests = {n: th.tree_digest(self.store, t, self.cache, n) for n, t in old_skills.items()}
        changed = {n for n in set(digests) | set(disk.names) if digests.get(n) != _digest(disk.entries.get(n))}
        with wp.WorkTree(self.root, self.control) as tree:
            return Diff(a.hex(), "working tree", compare(old_side, self._disk_side(tree), _only(changed, name)))

    def _snapshot_side(self, commit: bytes) -> tuple[Side, dict[str, bytes]]:
        skills = skills_of(self.store, self.store.commit_info(commit)[0])[1]
        side = Side(
            lambda n: self.snapshots.files(skills[n]) if n in skills else {},
            lambda _n, _rel, sha: self.store.read(sha, b"blob"),
        )
        return side, skills

    def _disk_side(self, tree: wp.WorkTree) -> Side:
        def files(name: str) -> gs.FileMap:
            found, problems = tree.scan(name)
            if problems:
                raise TreeError(f"skills/{name} cannot be read: {problems[0]}")
            return found

        def read(name: str, rel: str, _sha: bytes) -> bytes:
            data = tree.read((name, *rel.split("/")), 1 << 31)
            if data is None:
                raise StoreError(f"skills/{name}/{rel} vanished while it was being read; try again")
            return data

        return Side(files, read)

    def version_commit(self, name: str, version: int) -> bytes:
        """The newest snapshot that wrote ``name`` at ``version`` (a deleted and recreated name reuses numbers)."""
        check_name(name)
        for snap in self.store.lineage():
            for change in snap.changes:
                if change.skill == name and change.version == version and change.action != "delete":
                    return bytes.fromhex(snap.commit)
        raise SkillNotFoundError(f"no snapshot wrote {name} v{version}", hint=f"see 'ledger log' for {name}'s versions")

    def show(self, name: str, version: int | None = None) -> str:
        """``SKILL.md`` of ``name`` exactly as it was at ``version`` (None: as the head snapshot holds it)."""
        name = self.resolve(name)
        if version is None:
            tree = self.snapshots.head().skills
            if name not in tree:
                raise SkillNotFoundError(
                    f"no skill named {name!r} in the head snapshot",
                    hint=f"a deleted skill's versions: 'ledger log --skill {name}', then 'ledger show {name}@N'",
                )
        else:
            tree = skills_of(self.store, self.store.commit_info(self.version_commit(name, version))[0])[1]
        return self.snapshots.text(self.snapshots.files(tree[name])[SKILL_MD][1], f"{name}/{SKILL_MD}")

    def _committed_files(self, name: str) -> dict[str, tuple[int, bytes]]:
        return {
            f"{name}/{rel}": (gs.kind_of_mode(mode, rel), th.blob_digest(self.store, sha, self.cache))
            for rel, (mode, sha) in self.snapshots.files(self.snapshots.head().skills[name]).items()
        }


def _only(changed: set[str], name: str | None) -> set[str]:
    return changed if name is None else changed & {name}


def _digest(node: Digest | DirNode | None) -> bytes | None:
    return None if node is None else node.digest


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillError(f"{where} is not valid UTF-8") from exc


def _frontmatter_only(data: bytes, where: str) -> str:
    """SKILL.md cut after its frontmatter, so listing never parses bodies."""
    text = _decode(data, where)
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return text  # let the parser report the malformed file
    for i, line in enumerate(lines[1:], 1):
        if line.rstrip("\r\n").rstrip() == "---":
            return "".join(lines[: i + 1])
    return text
