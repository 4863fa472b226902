"""Skills from a plain git repository, read from git objects at one commit.

A repository is fetched (``git fetch`` of the one ref or commit read, ``--depth 1``, objects
checked with ``fetch.fsckObjects``, stopped past :func:`fetch_cap` bytes: :func:`mirrored`)
into a temporary bare repository that is removed afterwards;
nothing is checked out, so no file of the source ever lands on disk as a file and a
symlink in it is never followed.  Its skills are found, in this order:

1. a ``SKILL.md`` at the root: the repository is one skill, named by its frontmatter
   ``name`` (else the repository's own name);
2. ``<home>/<name>/SKILL.md`` for each runtime home of :data:`ledger.folders.layouts.HOMES`
   (``.claude/skills``, ``.agents/skills``, ``.codex/skills``, ``skills``); the first home
   that has a name wins.

Blobs of mode 100644/100755 become files (the second with the executable bit), mode
120000 (a symlink) is reported in ``symlinks`` and not read, and a submodule (160000) is
refused: its content is another repository's, at a commit this one cannot vouch for.
A pin is the commit id; a commit the source no longer holds (a force-push, then ``gc``)
is one the source "no longer serves".
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ledger.bundle.skill import MAX_SUPPORT_FILE, SKILL_MD, declared_name
from ledger.errors import SourceError
from ledger.folders.layouts import HOMES
from ledger.sources.candidates import MAX_SKILL_BYTES, Candidate, candidate, git, pick, source_doc, source_git
from ledger.store.git import LOCAL

__all__ = [
    "MAX_FETCH_BYTES",
    "Listing",
    "commit_of",
    "fetch_cap",
    "git_candidates",
    "listing",
    "mirrored",
    "pinned",
    "read_candidate",
    "read_dir",
    "read_links",
    "skill_dirs",
    "split_ref",
]

Listing = list[tuple[str, str, str]]  # (mode, blob id, path) of every entry of a commit's tree
_HEX40 = re.compile(r"[0-9a-f]{40}\Z")


def split_ref(source: str) -> tuple[str, str | None]:
    """``url#ref`` → (url, ref); the ref is None when none is given."""
    url, sep, ref = source.rpartition("#") if "#" in source else (source, "", "")
    return (url, ref or None) if sep else (source, None)


def _url(source: str) -> str:
    """A local path made absolute (git resolves relative ones against the temp repo's own cwd otherwise)."""
    if "://" in source or source.startswith("git@") or re.match(r"[\w.-]+@[\w.-]+:", source):
        return source
    return str(Path(source).absolute())


MAX_FETCH_BYTES = 1024 * 1024 * 1024  # what one fetch of a source may write; LEDGER_MAX_FETCH_BYTES lowers or raises it


def fetch_cap() -> int:
    """The most bytes one fetch of a source may write: ``LEDGER_MAX_FETCH_BYTES``, else :data:`MAX_FETCH_BYTES`."""
    raw = os.environ.get("LEDGER_MAX_FETCH_BYTES", "")
    if not raw:
        return MAX_FETCH_BYTES
    if not raw.isdigit() or int(raw) <= 0:
        raise SourceError(
            f"LEDGER_MAX_FETCH_BYTES={raw!r} is not a positive number of bytes",
            hint="unset it, or give a byte count such as 1073741824",
        )
    return int(raw)


def _written(tmp: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(tmp / "objects"):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _fetch(tmp: Path, url: str, specs: Sequence[str], *, depth: bool, what: str) -> None:
    """``git fetch`` of ``specs`` into ``tmp``, objects checked, stopped and refused as soon as what it has
    written passes :func:`fetch_cap` (the source's size is learned as its bytes arrive, not trusted)."""
    cap = fetch_cap()

    def within_cap() -> None:
        if _written(tmp) > cap:
            raise SourceError(
                f"{what}: the source sent more than {cap} bytes for one ref; refused",
                hint="a skill's source is read one ref at a time; if this one is that large "
                "and trusted, raise LEDGER_MAX_FETCH_BYTES",
            )

    source_git(tmp).fetch(
        url,
        *specs,
        options=["-c", "fetch.fsckObjects=true", *(["--depth=1"] if depth else [])],
        what=what,
        hint="check the path or URL and the ref",
        watch=within_cap,
    )
    if _written(tmp) > cap:
        raise SourceError(
            f"{what}: the source sent more than {cap} bytes for one ref; refused",
            hint="raise LEDGER_MAX_FETCH_BYTES if this source is trusted and that large",
        )


def _advertised(url: str, patterns: Sequence[str], what: str) -> dict[str, str]:
    """{ref: commit id} of the refs ``patterns`` name that ``url`` has (``ref: …`` lines of ``--symref`` as
    ``"ref: HEAD"`` → the branch HEAD points to)."""
    out = git("ls-remote", "--symref", "--", url, *patterns, what=f"reading {what}").decode()
    refs: dict[str, str] = {}
    for line in out.splitlines():
        left, _, right = line.partition("\t")
        if left.startswith("ref: "):
            refs[f"ref: {right}"] = left[5:]
        elif right:
            refs[right] = left
    return refs


@contextlib.contextmanager
def mirrored(source: str, want: str | None = None, *, history: bool = False) -> Iterator[Path]:
    """A temporary bare copy holding only the one ref or commit ``want`` of ``source`` (None: its default
    branch, which becomes the copy's ``HEAD``), fetched with ``--depth 1`` unless ``history`` is asked for,
    and capped (:func:`fetch_cap`).

    A branch or tag name is fetched as that ref; a full commit id as that commit (protocol v2 serves any
    commit the source holds; a server that refuses is fetched whole instead, still capped); anything else
    (``main~1``, an abbreviated id) needs the source's branches and tags, fetched whole, capped."""
    url = _url(source)
    tmp = Path(tempfile.mkdtemp(prefix="ledger-source-"))
    try:
        git("init", "-q", "--bare", str(tmp), what="making a temporary repository")
        depth = not history
        if want is None:
            refs = _advertised(url, ["HEAD"], source)
            branch = refs.get("ref: HEAD")
            if branch and "HEAD" in refs:
                _fetch(tmp, url, [f"+{branch}:{branch}"], depth=depth, what=f"fetching {source}")
                git("symbolic-ref", "HEAD", branch, what="recording the default branch", git_dir=str(tmp))
            elif "HEAD" in refs:  # a detached HEAD: its commit
                _fetch(tmp, url, [f"+{refs['HEAD']}:refs/ledger/head"], depth=depth, what=f"fetching {source}")
                git("update-ref", "--no-deref", "HEAD", refs["HEAD"], what="recording HEAD", git_dir=str(tmp))
            else:
                raise SourceError(f"{source} has no default branch", hint="name a branch, tag or commit: SOURCE#REF")
        elif _HEX40.match(want):
            try:
                _fetch(tmp, url, [f"+{want}:refs/ledger/pin"], depth=depth, what=f"fetching {source}")
            except SourceError as exc:
                if "more than" in exc.message:
                    raise
                _everything(tmp, url, source)  # a server that serves only its advertised refs
        else:
            refs = _advertised(url, [f"refs/heads/{want}", f"refs/tags/{want}"], source)
            ref = next((r for r in (f"refs/heads/{want}", f"refs/tags/{want}") if r in refs), None)
            if ref is not None:
                _fetch(tmp, url, [f"+{ref}:{ref}"], depth=depth, what=f"fetching {source}")
            else:
                _everything(tmp, url, source)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _everything(tmp: Path, url: str, source: str) -> None:
    """Every branch and tag of ``url``, whole (a ref this module cannot name on its own), capped."""
    heads = _advertised(url, ["HEAD"], source)
    _fetch(tmp, url, ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"], depth=False, what=f"fetching {source}")
    if heads.get("ref: HEAD"):
        git("symbolic-ref", "HEAD", heads["ref: HEAD"], what="recording the default branch", git_dir=str(tmp))


def commit_of(repo: Path, ref: str | None, where: str) -> str:
    """The commit id ``ref`` names in ``repo`` (None: the default branch's head)."""
    rev = ref or "HEAD"
    for candidate_rev in [rev] if ref is None else [f"refs/heads/{ref}", f"refs/tags/{ref}", ref]:
        try:
            out = git(
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                f"{candidate_rev}^{{commit}}",
                what="resolving",
                git_dir=str(repo),
            )
        except SourceError:
            continue
        return out.decode().strip()
    if ref is not None and _HEX40.match(ref):
        raise SourceError(
            f"{where} no longer serves commit {ref}: no branch or tag of it reaches that commit",
            hint="the source was rewritten (force-pushed); pick a new pin with 'latest'",
        )
    raise SourceError(f"{where} has no branch, tag or commit {rev!r}", hint="name a branch, tag or commit id it has")


def reachable(repo: Path, commit: str) -> bool:
    """Whether a branch or tag of the fetched copy reaches ``commit`` (it was fetched at all)."""
    try:
        git("cat-file", "-e", f"{commit}^{{commit}}", what="looking up", git_dir=str(repo))
    except SourceError:
        return False
    return True


def listing(repo: Path, commit: str) -> Listing:
    out = git("ls-tree", "-r", "-z", "--full-tree", commit, what="listing the commit", git_dir=str(repo))
    rows = []
    for row in out.split(b"\0"):
        if row:
            meta, _, path = row.partition(b"\t")
            mode, _kind, sha = meta.decode().split()
            rows.append((mode, sha, path.decode("utf-8", "surrogateescape")))
    return rows


def _blobs(repo: Path, shas: Sequence[str]) -> dict[str, bytes]:
    """Blob contents by id, in one ``git cat-file --batch``."""
    if not shas:
        return {}
    asked = "".join(f"{s}\n" for s in shas).encode()
    out = git("cat-file", "--batch", what="reading blobs", git_dir=str(repo), data=asked)
    found, pos = {}, 0
    for sha in shas:
        end = out.index(b"\n", pos)
        head = out[pos:end].split()
        if len(head) != 3 or head[1] != b"blob":
            raise SourceError(f"blob {sha} is missing from the fetched source")
        size = int(head[2])
        found[sha] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return found


def _sizes_within(repo: Path, files: dict[str, str], where: str) -> None:
    """Refuse a file over the per-file limit, or a skill over its total, before any blob is read."""
    if not files:
        return
    asked = "".join(f"{s}\n" for s in files.values()).encode()
    out = git("cat-file", "--batch-check=%(objectsize)", what="sizing blobs", git_dir=str(repo), data=asked)
    sizes = [int(n) if n.isdigit() else -1 for n in out.decode().split("\n")[: len(files)]]
    if -1 in sizes:
        raise SourceError(f"{where}: a blob of the skill is missing from the fetched source")
    for rel, size in zip(files, sizes, strict=True):
        if size > MAX_SUPPORT_FILE:
            raise SourceError(f"{where}: {rel} is {size} bytes; the limit is {MAX_SUPPORT_FILE}")
    if sum(sizes) > MAX_SKILL_BYTES:
        raise SourceError(f"{where}: the skill holds {sum(sizes)} bytes; one skill is limited to {MAX_SKILL_BYTES}")


def skill_dirs(rows: Listing) -> dict[str, str]:
    """{skill name: its folder in the tree} by the rules of this module's docstring; a root skill is
    returned under the name ``""`` (:func:`root_name` names it)."""
    paths = {path: sha for mode, sha, path in rows}
    if SKILL_MD in paths:
        return {"": ""}
    found: dict[str, str] = {}
    for home in HOMES:
        for path in paths:
            parts = path.split("/")
            if path.startswith(home + "/") and len(parts) == home.count("/") + 3 and parts[-1] == SKILL_MD:
                found.setdefault(parts[-2], "/".join(parts[:-1]))
    return found


def read_dir(repo: Path, rows: Listing, folder: str, where: str) -> tuple[dict[str, tuple[bytes, bool]], list[str]]:
    """(files, symlinks) under ``folder`` of a listing, read from git objects."""
    prefix = f"{folder}/" if folder else ""
    files: dict[str, str] = {}
    modes: dict[str, bool] = {}
    links: list[str] = []
    for mode, sha, path in rows:
        if not path.startswith(prefix):
            continue
        rel = path[len(prefix) :]
        if mode == "160000":
            raise SourceError(
                f"{where}: {path} is a submodule, whose content this source does not hold",
                hint="a skill must hold its files itself; submodules are refused",
            )
        if mode == "120000":
            links.append(rel)
        elif mode in ("100644", "100755"):
            files[rel], modes[rel] = sha, mode == "100755"
        else:
            raise SourceError(f"{where}: {path} has git mode {mode}, which no skill file has")
    _sizes_within(repo, files, where)
    data = _blobs(repo, sorted(set(files.values())))
    return {rel: (data[sha], modes[rel]) for rel, sha in files.items()}, links


def signer_of(repo: Path, commit: str) -> str | None:
    """The key id of the commit's signature when git judges it good (``%G?`` ``G`` or ``U``), else None
    (docs/lineage/supply.md §2).  git names a key for a bad or unverifiable OpenPGP signature too, taken from
    the signature packet, which anyone can write: such a key id is never recorded as the signer."""
    raw = git("cat-file", "commit", commit, what="reading the commit", git_dir=str(repo))
    if b"\ngpgsig " not in raw.partition(b"\n\n")[0] and b"\ngpgsig-sha256 " not in raw.partition(b"\n\n")[0]:
        return None
    out = git("log", "-1", "--format=%G?%n%GK", commit, what="reading the signature", git_dir=str(repo)).decode()
    verdict, _, key = out.partition("\n")
    return (key.strip() or None) if verdict.strip() in ("G", "U") else None


def root_name(repo: Path, rows: Listing, url: str) -> str:
    """A root skill's name: its frontmatter's, else the repository's own name."""
    sha = next(sha for mode, sha, path in rows if path == SKILL_MD)
    declared = declared_name(_blobs(repo, [sha])[sha].decode("utf-8", "replace"))
    if declared:
        return declared
    return Path(url.rstrip("/")).name.removesuffix(".git")


def read_candidate(repo: Path, rows: Listing, commit: str, folder: str, name: str, doc: dict[str, Any]) -> Candidate:
    """The candidate ``name`` whose files are ``folder`` of ``commit``, with the source record ``doc``."""
    where = f"{doc['url']}@{commit[:12]}"
    files, links = read_dir(repo, rows, folder, where)
    return candidate(
        name,
        files,
        doc,
        {"commit": commit},
        symlinks=links,
        signer=signer_of(repo, commit),
        link_targets=read_links(repo, rows, folder, where),
    )


def read_links(repo: Path, rows: Listing, folder: str, where: str) -> dict[str, str]:
    """The targets of the symlinks (mode 120000) under ``folder``, as written in their blobs, never followed;
    the scanner judges where they point (LS705).  A target that is not UTF-8 is left out."""
    prefix = f"{folder}/" if folder else ""
    shas = {path[len(prefix) :]: sha for mode, sha, path in rows if mode == "120000" and path.startswith(prefix)}
    if not shas:
        return {}
    _sizes_within(repo, shas, where)
    data = _blobs(repo, sorted(set(shas.values())))
    out = {}
    for rel, sha in shas.items():
        try:
            out[rel] = data[sha][:4096].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return out


def git_candidates(source: str, names: Sequence[str] = (), pin: str | None = None) -> list[Candidate]:
    """The skills of the git repository ``source`` (``url#ref``) at ``pin`` (default: the ref's head)."""
    url, ref = split_ref(source)
    with mirrored(url, pin or ref) as repo:
        return candidates_at(repo, url, ref, commit_of(repo, pin or ref, url), names)


def candidates_at(repo: Path, url: str, ref: str | None, commit: str, names: Sequence[str]) -> list[Candidate]:
    """The skills of the fetched ``repo`` at ``commit`` (by the rules of this module's docstring)."""
    rows = listing(repo, commit)
    dirs = skill_dirs(rows)
    if "" in dirs:
        dirs = {root_name(repo, rows, url): ""}
    return [
        read_candidate(repo, rows, commit, dirs[name], name, source_doc("git", url, dirs[name], ref))
        for name in pick(dirs, names, f"{url}@{commit[:12]}")
    ]


def is_repo(source: str) -> bool:
    """Whether git can read ``source`` as a repository (one ``ls-remote``, nothing fetched)."""
    try:
        git("ls-remote", "--", _url(source), "HEAD", what=f"reading {source}", timeout=LOCAL)  # a probe: quick or not
    except SourceError:
        return False
    return True


def pinned(source: dict[str, Any], commit: str, name: str, repo_url: str | None = None) -> Candidate:
    """Exactly ``commit`` of a recorded git source (read from ``repo_url`` when the skill's repository
    is not the source's own, as for a marketplace's plugin), or :class:`SourceError` when it is gone."""
    url = repo_url or source["url"]
    with mirrored(url, commit) as repo:
        if not reachable(repo, commit):
            raise SourceError(
                f"{url} no longer serves commit {commit}: it no longer holds it",
                hint="the source was rewritten (force-pushed); 'ledger supply outdated' shows its current version",
            )
        rows = listing(repo, commit)
        prefix = f"{source['path']}/" if source["path"] else ""
        if not any(p.startswith(prefix) for _, _, p in rows):
            raise SourceError(f"{url}@{commit[:12]} no longer serves {source['path']}")
        return read_candidate(repo, rows, commit, source["path"], name, dict(source))
