"""ledger.sources.resolve: every SOURCE form resolved to pinned candidates, from local fixtures only
(git repositories made with plain git, a brain made with the project's API, an HTTP server on loopback)."""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest

from ledger.anchoring.commits import commit_pending
from ledger.brain import Brain
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME
from ledger.chain.registry import Registry
from ledger.errors import SourceError
from ledger.remotes import sharing
from ledger.sources import brainsource
from ledger.sources.lockfile import render_lock
from ledger.sources.resolve import (
    fetch_pinned,
    folder_sha256,
    latest,
    lock_entry,
    read_lock,
    resolve,
    supply_of,
    write_lock,
)
from tests.harness import brains, tamper
from tests.harness.brains import fingerprint, make_brain, publish_index
from tests.harness.cli import run_ledger
from tests.harness.localhttp import serving

_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def sh(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **_ENV},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def skill_md(name: str, body: str = "body\n") -> bytes:
    return brains.skill_md(name, name.upper(), body).encode()


def commit(
    work: Path,
    files: dict[str, bytes],
    message: str = "c",
    *,
    links: dict[str, str] | None = None,
    execs: tuple[str, ...] = (),
) -> str:
    """Write ``files`` (and symlinks) into the work tree ``work`` (made if new) and commit them all."""
    if not (work / ".git").exists():
        work.mkdir(parents=True, exist_ok=True)
        sh(work, "init", "-q")
    for rel, data in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_bytes(data)
        os.chmod(work / rel, 0o755 if rel in execs else 0o644)
    for rel, target in (links or {}).items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, work / rel)
    sh(work, "add", "-A")
    sh(work, "commit", "-q", "-m", message)
    return sh(work, "rev-parse", "HEAD")


# ------------------------------------------------------------------ the skills CLI's hash and lock


def test_folder_sha256_is_the_skills_cli_computed_hash():
    # vercel-labs/skills src/local-lock.ts (d050d784) computeSkillFolderHash, lines 96-115: files sorted by
    # relativePath.localeCompare, then sha256.update(relativePath); sha256.update(content); node_modules skipped.
    # The order below is ICU's (checked with Node 20): '_' < '-', then r < s, 'scripts' < 'SKILL' (c < k), z last.
    files = {
        "SKILL.md": (skill_md("s", "# Hi\n"), False),
        "references/a.md": (b"A", False),
        "scripts/run.sh": (b"#!/bin/sh\n", True),
        "node_modules/x/i.js": (b"x", False),
        "Zeta.md": (b"b", False),
        "a_b.md": (b"c", False),
        "a-b.md": (b"d", False),
    }
    by_hand = hashlib.sha256(
        b"a_b.mdca-b.mddreferences/a.mdAscripts/run.sh#!/bin/sh\nSKILL.md" + skill_md("s", "# Hi\n") + b"Zeta.mdb"
    ).hexdigest()
    assert folder_sha256(files) == by_hand
    # the same folder hashed by that function itself under Node 20 (the file bytes above, on disk):
    assert by_hand == "e5a37e41628aa07b3cbc2eee8143ee2a17b769a88a550ee26bef1061ef4096c1"


def test_lock_is_read_and_written_exactly_as_the_skills_cli_writes_it(tmp_path: Path):
    # vercel-labs/skills src/local-lock.ts writeLocalLock: JSON.stringify({version, skills sorted}, null, 2) + "\n"
    text = (
        '{\n  "version": 1,\n  "skills": {\n    "alpha": {\n      "source": "o/r",\n      "sourceType": "github",\n'
        '      "ref": "v1",\n      "skillPath": "skills/alpha/SKILL.md",\n      "computedHash": "' + "a" * 64 + '"\n'
        '    },\n    "zeta": {\n      "source": "./x",\n      "sourceType": "local",\n      "computedHash": "'
        + "b" * 64
        + '"\n    }\n  }\n}\n'
    )
    path = tmp_path / "skills-lock.json"
    path.write_text(text)
    alpha, zeta = read_lock(path)
    assert alpha.source == {
        "type": "skills-lock",
        "url": "https://github.com/o/r.git",
        "path": "skills/alpha",
        "ref": "v1",
        "upstream": "o/r",
        "sourceType": "github",
    }
    assert alpha.pin == {"sha256": "a" * 64} and zeta.source["url"] == str((tmp_path / "x").resolve())
    write_lock([zeta, alpha], tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == text
    made = lock_entry(
        "alpha",
        {"type": "git", "url": "https://github.com/o/r.git", "path": "skills/alpha", "ref": "v1"},
        {"commit": "c" * 40},
        "a" * 64,
    )
    assert render_lock([made, zeta]) == text


def write_lock_json(path: Path, entries: dict[str, dict[str, str]]) -> None:
    path.write_text(json.dumps({"version": 1, "skills": entries}, indent=2) + "\n")


# ------------------------------------------------------------------ git repositories


@pytest.fixture
def skills_repo(tmp_path: Path) -> Path:
    work = tmp_path / "skills-src"
    commit(
        work,
        {
            "skills/alpha/SKILL.md": skill_md("alpha"),
            "skills/alpha/scripts/run.sh": b"#!/bin/sh\necho\n",
            "skills/beta/SKILL.md": skill_md("beta"),
            "README.md": b"not a skill\n",
        },
        links={"skills/alpha/references/passwd": "/etc/passwd"},
        execs=("skills/alpha/scripts/run.sh",),
    )
    sh(work, "tag", "v1")
    commit(work, {"skills/alpha/SKILL.md": skill_md("alpha", "two\n")})
    return work


def test_git_source_pins_reads_objects_and_reports_symlinks(skills_repo: Path):
    head = sh(skills_repo, "rev-parse", "HEAD")
    alpha, beta = resolve(str(skills_repo))
    assert (alpha.name, beta.name) == ("alpha", "beta")
    assert alpha.pin == {"commit": head} and alpha.signer is None and alpha.derived_from is None
    assert alpha.source == {"type": "git", "url": str(skills_repo), "path": "skills/alpha", "ref": None}
    assert alpha.files["SKILL.md"] == (skill_md("alpha", "two\n"), False)
    assert alpha.files["scripts/run.sh"] == (b"#!/bin/sh\necho\n", True)
    assert alpha.symlinks == ("references/passwd",) and "references/passwd" not in alpha.files
    assert alpha.link_targets == {"references/passwd": "/etc/passwd"}  # read from the blob, never followed
    (old,) = resolve(f"{skills_repo}#v1", ["alpha"])
    assert old.files["SKILL.md"][0] == skill_md("alpha") and old.source["ref"] == "v1"
    assert old.pin == {"commit": sh(skills_repo, "rev-parse", "v1^{commit}")}
    assert fetch_pinned(old.source, old.pin, "alpha") == old
    assert latest(old.source, "alpha").pin == old.pin  # the tag has not moved


def test_a_named_skill_the_source_lacks_is_refused_with_what_it_has(skills_repo: Path):
    with pytest.raises(SourceError, match=r"no skill named 'gamma'; it has: alpha, beta"):
        resolve(str(skills_repo), ["gamma"])


def test_root_skill_and_runtime_layouts(tmp_path: Path):
    root = tmp_path / "one"
    commit(root, {"SKILL.md": skill_md("solo"), "references/r.md": b"r\n"})
    (solo,) = resolve(str(root))
    assert solo.name == "solo" and solo.source["path"] == "" and set(solo.files) == {"SKILL.md", "references/r.md"}
    claude = tmp_path / "claude"
    commit(claude, {".claude/skills/c1/SKILL.md": skill_md("c1"), ".agents/skills/c2/SKILL.md": skill_md("c2")})
    assert [(c.name, c.source["path"]) for c in resolve(str(claude))] == [
        ("c1", ".claude/skills/c1"),
        ("c2", ".agents/skills/c2"),
    ]


def test_submodules_and_invalid_names_are_refused(tmp_path: Path):
    work = tmp_path / "sub"
    commit(work, {"skills/ok/SKILL.md": skill_md("ok")})
    sh(work, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},skills/ok/vendor")
    sh(work, "commit", "-q", "-m", "submodule")
    with pytest.raises(SourceError, match="submodule"):
        resolve(str(work))
    bad = tmp_path / "bad"
    commit(bad, {"skills/Bad_Name/SKILL.md": skill_md("x")})
    with pytest.raises(SourceError, match="not a valid skill name"):
        resolve(str(bad))


def test_a_force_pushed_source_no_longer_serves_its_old_pin(tmp_path: Path):
    work = tmp_path / "w"
    commit(work, {"skills/alpha/SKILL.md": skill_md("alpha")})
    remote = tmp_path / "remote.git"
    sh(tmp_path, "clone", "-q", "--bare", str(work), str(remote))
    (alpha,) = resolve(f"file://{remote}")
    assert fetch_pinned(alpha.source, alpha.pin, "alpha").files == alpha.files
    sh(work, "commit", "-q", "--amend", "-m", "rewritten")
    sh(work, "push", "-q", "--force", str(remote), "main")
    sh(remote, "reflog", "expire", "--expire=now", "--all")
    sh(remote, "gc", "-q", "--prune=now")
    with pytest.raises(SourceError, match="no longer serves commit"):
        fetch_pinned(alpha.source, alpha.pin, "alpha")
    with pytest.raises(SourceError, match="no longer serves commit"):
        resolve(f"file://{remote}", pin=alpha.pin["commit"])
    assert latest(alpha.source, "alpha").pin != alpha.pin


# ------------------------------------------------------------------ marketplaces and skills-lock.json


def test_marketplace_plugins_and_their_skills(tmp_path: Path):
    market = tmp_path / "market"
    plugins = [{"name": "tools", "source": "./plugins/tools"}, {"name": "npm-one", "source": {"source": "npm"}}]
    doc = {"name": "m", "owner": {"name": "o"}, "plugins": plugins}
    head = commit(
        market,
        {
            ".claude-plugin/marketplace.json": json.dumps(doc).encode(),
            "plugins/tools/skills/lint/SKILL.md": skill_md("lint"),
            "plugins/tools/.claude-plugin/plugin.json": b'{"name": "tools", "skills": "./extra"}',
            "plugins/tools/extra/fmt/SKILL.md": skill_md("fmt"),
        },
    )
    fmt, lint = resolve(str(market))
    assert fmt.source["path"] == "plugins/tools/extra/fmt" and fmt.files == {"SKILL.md": (skill_md("fmt"), False)}
    assert lint.name == "lint" and lint.pin == {"commit": head}
    assert lint.source["type"] == "marketplace" and lint.source["plugin"] == "tools"
    assert lint.source["path"] == "plugins/tools/skills/lint"
    assert resolve(str(market / ".claude-plugin" / "marketplace.json"), ["tools:lint"])[0].files == lint.files
    assert fetch_pinned(lint.source, lint.pin, "lint") == lint
    doc["plugins"].append({"name": "evil", "source": "./../../outside"})
    commit(market, {".claude-plugin/marketplace.json": json.dumps(doc).encode()})
    with pytest.raises(SourceError, match="leaves the repository"):
        resolve(str(market))


def test_skills_lock_installs_the_locked_state_and_refuses_another(tmp_path: Path):
    up = tmp_path / "proj" / "vendor" / "upstream"  # a local source stays inside the lock's own folder
    first = commit(up, {"skills/alpha/SKILL.md": skill_md("alpha")})
    locked = folder_sha256({"SKILL.md": (skill_md("alpha"), False)})
    commit(up, {"skills/alpha/SKILL.md": skill_md("alpha", "changed upstream\n")})
    lock = tmp_path / "proj" / "skills-lock.json"
    write_lock_json(lock, {"alpha": {"source": "vendor/upstream", "sourceType": "local", "computedHash": locked}})
    (alpha,) = resolve(str(lock))
    assert alpha.pin == {"commit": first, "sha256": locked}  # found in history by its hash
    assert alpha.files == {"SKILL.md": (skill_md("alpha"), False)}
    assert fetch_pinned(alpha.source, alpha.pin, "alpha") == alpha
    assert latest(alpha.source, "alpha").pin["sha256"] != locked
    write_lock_json(lock, {"alpha": {"source": "vendor/upstream", "sourceType": "local", "computedHash": "0" * 64}})
    with pytest.raises(SourceError, match=r"locked at computedHash 0{64}"):
        resolve(str(lock))
    write_lock_json(lock, {"../alpha": {"source": "vendor/upstream", "sourceType": "local", "computedHash": locked}})
    with pytest.raises(SourceError):
        resolve(str(lock))


# ------------------------------------------------------------------ an HTTPS index (plain http on loopback)


@contextlib.contextmanager
def served(root: Path, redirect: str | None = None) -> Iterator[str]:
    """``root`` over http on a free loopback port, in a thread, always shut down; ``redirect``
    answers every request with a 302 to that URL prefix instead."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if redirect is None:
                return super().do_GET()
            self.send_response(302)
            self.send_header("Location", redirect + self.path)
            self.end_headers()
            return None

    with serving(functools.partial(Quiet, directory=str(root))) as url:
        yield url


def test_index_source_checks_every_digest(tmp_path: Path):
    site = tmp_path / "site"
    publish_index(site, "web", {"SKILL.md": skill_md("web"), "references/r.md": b"ref\n"})
    with served(site) as url:
        (web,) = resolve(url)
        assert web.files["references/r.md"] == (b"ref\n", False)
        assert web.pin["sha256"] == folder_sha256(web.files) and web.pin["digest"].startswith("sha256:")
        assert web.source == {
            "type": "index",
            "url": f"{url}/.well-known/agent-skills/index.json",
            "path": "web",
            "ref": None,
        }
        assert fetch_pinned(web.source, web.pin, "web") == web
        (site / ".well-known/agent-skills/web/references/r.md").write_bytes(b"altered\n")
        with pytest.raises(SourceError, match="does not match its digest"):
            resolve(url)
        publish_index(site, "web", {"SKILL.md": skill_md("web"), "references/r.md": b"new\n"})
        with pytest.raises(SourceError, match="no longer serves 'web' as pinned"):
            fetch_pinned(web.source, web.pin, "web")
        publish_index(site, "evil", {"SKILL.md": skill_md("evil")}, index_name="../evil")
        with pytest.raises(SourceError, match="not a valid skill name"):
            resolve(url)
    with pytest.raises(SourceError, match="https only"):
        resolve("http://example.com/.well-known/agent-skills/index.json")


def test_v01_index_without_digests_is_pinned_by_its_folder_hash(tmp_path: Path):
    base = tmp_path / "site" / ".well-known" / "skills"
    (base / "old" / "references").mkdir(parents=True)
    (base / "old" / "SKILL.md").write_bytes(skill_md("old"))
    (base / "old" / "references" / "r.md").write_bytes(b"r\n")
    (base / "index.json").write_text(
        json.dumps({"skills": [{"name": "old", "description": "d", "files": ["SKILL.md", "references/r.md"]}]})
    )
    with served(tmp_path / "site") as url:
        (old,) = resolve(url)  # agent-skills/index.json is a 404: the v0.1 location is read
    assert old.pin == {"sha256": folder_sha256(old.files), "version": "0.1.0"}
    assert old.source["url"].endswith("/.well-known/skills/index.json") and "digest" not in old.pin


def test_index_redirects_to_another_host_are_not_followed(tmp_path: Path):
    with served(tmp_path, redirect="http://localhost:9") as url, pytest.raises(SourceError, match="another host"):
        resolve(f"{url}/.well-known/agent-skills/index.json")


def test_index_paths_that_leave_the_skill_are_refused(tmp_path: Path):
    site = tmp_path / "site"
    publish_index(site, "web", {"SKILL.md": skill_md("web")})
    index = site / ".well-known/agent-skills/index.json"
    doc = json.loads(index.read_text())
    doc["skills"][0]["files"].append({"path": "../../etc/passwd", "digest": "sha256:" + "0" * 64})
    index.write_text(json.dumps(doc))
    with served(site) as url, pytest.raises(SourceError, match="no brain may hold"):
        resolve(f"{url}/.well-known/agent-skills/index.json")


# ------------------------------------------------------------------ another brain


@pytest.fixture(scope="module")
def brain_remote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("brainsrc")
    brain = make_brain(root / "a", {"alpha": ("Alpha", "alpha body\n"), "beta": ("Beta", "beta body\n")})
    try:
        sharing.push(brain, str(root / "remote.git"))
    finally:
        brain.close()
    return root / "remote.git"


def _copy(remote: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy.git"
    shutil.copytree(remote, copy)
    return copy


def test_brain_source_is_audited_proven_and_pinned(brain_remote: Path):
    alpha, beta = resolve(str(brain_remote))
    head = tamper.lineage(brain_remote)[-1]
    assert alpha.pin["commit"] == head and alpha.pin["seq"] is None
    assert re.fullmatch(r"blake3-tree-v1:[0-9a-f]{64}", alpha.pin["root"])
    assert alpha.derived_from == {"root": alpha.pin["root"]}
    assert alpha.signer is not None and re.fullmatch(r"0x[0-9a-f]{40}", alpha.signer)
    assert alpha.source == {"type": "brain", "url": str(brain_remote), "path": "skills/alpha", "ref": None}
    assert b"alpha body" in alpha.files["SKILL.md"][0] and beta.name == "beta"
    assert fetch_pinned(alpha.source, alpha.pin, "alpha") == alpha
    assert latest(alpha.source, "alpha") == alpha
    (before,) = resolve(str(brain_remote), ["alpha"], pin="main~1")  # the snapshot before beta was created
    assert before.pin["commit"] == tamper.lineage(brain_remote)[-2] and before.pin["root"] != alpha.pin["root"]
    with pytest.raises(SourceError, match="has no skill named 'beta'; it has: alpha"):
        resolve(str(brain_remote), ["beta"], pin="main~1")
    with pytest.raises(SourceError, match="no skill named 'gamma'; it has: alpha, beta"):
        resolve(str(brain_remote), ["gamma"])


def test_a_brain_that_fails_its_audit_is_refused(brain_remote: Path, tmp_path: Path):
    copy = _copy(brain_remote, tmp_path)
    index = len(tamper.lineage(copy)) - 1
    tamper.rewrite(copy, index, tree=lambda t: tamper.edit_tree(copy, t, "skills/alpha/SKILL.md", b"swapped\n"))
    with pytest.raises(SourceError, match="fails the audit"):
        resolve(str(copy))


def test_a_file_that_does_not_prove_into_the_signed_root_is_refused(
    brain_remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    copy = _copy(brain_remote, tmp_path)
    index = len(tamper.lineage(copy)) - 1
    tamper.rewrite(copy, index, tree=lambda t: tamper.edit_tree(copy, t, "skills/alpha/SKILL.md", b"swapped\n"))
    monkeypatch.setattr(brainsource, "_audited", lambda repo, url: None)  # the proofs are the second line
    with pytest.raises(SourceError, match="does not prove into its signed root"):
        resolve(str(copy), ["alpha"])


@pytest.mark.chain
def test_a_brain_source_root_is_checked_on_chain(chained: Brain, node, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    chained.create("alpha", "Alpha", "alpha\n")
    commit_pending(chained, key=DEV_KEY_NAME)
    remote = tmp_path / "remote.git"
    sharing.push(chained, str(remote))
    cfg = ChainConfig.of(chained)
    (alpha,) = resolve(str(remote), rpc=node.url)
    events = Registry(node.url, cfg.registry).lineage(cfg.agent_id)
    assert alpha.pin["seq"] == len(events) and alpha.pin["root"] == chained.head().snap.to_json()["root"]
    assert alpha.derived_from == {
        "agent": cfg.agent_id,
        "chain": cfg.chain_id,
        "registry": cfg.registry.lower(),
        "root": alpha.pin["root"],
    }
    real = Registry.lineage

    def other_root(self: Registry, agent: int, from_block: int = 0) -> list[dict]:
        return [{**ev, "root": b"\x07" * 32} for ev in real(self, agent, from_block)]  # a registry that disagrees

    monkeypatch.setattr(Registry, "lineage", other_root)
    with pytest.raises(SourceError, match="the chain has root"):
        resolve(str(remote), rpc=node.url)


def _tar(members: list[tuple[str, bytes | None, str | None]]) -> bytes:
    """A .tar.gz of (name, bytes, link target): a file when bytes are given, else a symlink."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data, target in members:
            info = tarfile.TarInfo(name)
            if data is not None:
                info.size, info.mode = len(data), 0o755 if name.endswith(".sh") else 0o644
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type, info.linkname = tarfile.SYMTYPE, target or ""
                tar.addfile(info)
    return buf.getvalue()


def test_published_v02_index_with_skill_md_and_archive_entries(tmp_path: Path):
    site = tmp_path / "site"
    base = site / ".well-known" / "agent-skills"
    (base / "one").mkdir(parents=True)
    (base / "one" / "SKILL.md").write_bytes(skill_md("one"))
    archive = _tar(
        [
            ("two/SKILL.md", skill_md("two"), None),
            ("two/scripts/go.sh", b"#!/bin/sh\n", None),
            ("two/references/link", None, "../SKILL.md"),
        ]
    )
    (base / "two.tar.gz").write_bytes(archive)
    evil = _tar([("SKILL.md", skill_md("evil"), None), ("../../escape", b"x", None)])
    (base / "evil.tar.gz").write_bytes(evil)

    def entry(name: str, kind: str, url: str, data: bytes) -> dict:
        return {
            "name": name,
            "type": kind,
            "description": name,
            "url": url,
            "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
        }

    skills = [
        entry("one", "skill-md", "/.well-known/agent-skills/one/SKILL.md", skill_md("one")),
        entry("two", "archive", "two.tar.gz", archive),
        entry("evil", "archive", "evil.tar.gz", evil),
    ]
    doc = {"$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json", "skills": skills}
    (base / "index.json").write_text(json.dumps(doc))
    with served(site) as url:
        one, two = resolve(url, ["one", "two"])
        assert one.files == {"SKILL.md": (skill_md("one"), False)} and one.pin["version"] == "0.2.0"
        assert two.files["scripts/go.sh"] == (b"#!/bin/sh\n", True) and two.symlinks == ("references/link",)
        assert two.link_targets == {"references/link": "../SKILL.md"}  # inside the skill: kept, reported
        assert two.pin["digest"] == doc["skills"][1]["digest"]
        with pytest.raises(SourceError, match="escape' leaves the skill's folder"):
            resolve(url, ["evil"])
        (base / "two.tar.gz").write_bytes(archive + b"\0")
        with pytest.raises(SourceError, match="does not match its digest"):
            resolve(url, ["two"])


def test_a_brain_source_carries_its_supply_record_and_revocations(skills_repo: Path, tmp_path: Path):
    pytest.importorskip("ledger.scanner.static", reason="'ledger install' needs the scanner, not merged here yet")
    home = tmp_path / "home"
    run_ledger("init", str(home), check=True)
    run_ledger("--brain", str(home), "supply", "install", str(skills_repo), "beta", "alpha", check=True)
    refused = run_ledger("--brain", str(home), "supply", "approve", "alpha")
    assert refused.returncode == 1 and "LS705" in refused.stderr  # its link to /etc/passwd is critical
    run_ledger("--brain", str(home), "supply", "approve", "alpha", "--override", "the fixture's link", check=True)
    with Brain.open(home) as b:
        digest = b.supply().skills["beta"].blake3
    run_ledger("--brain", str(home), "supply", "revoke", digest, "--reason", "bad", check=True)
    remote = tmp_path / "home.git"
    run_ledger("--brain", str(home), "push", str(remote), check=True)
    record = supply_of(str(remote))
    assert record.skills["beta"].source == {"type": "git", "url": str(skills_repo), "path": "skills/beta", "ref": None}
    assert record.revoked[digest]["reason"] == "bad"
    with pytest.raises(SourceError, match=r"beta revoked \(bad\): it does not serve it"):
        resolve(str(remote), ["beta"])  # what a brain withholds from its own agent, it serves to nobody
    (alpha,) = resolve(str(remote))  # what it serves: alpha, carrying the brain's revocations
    assert alpha.name == "alpha" and digest in alpha.revoked


@pytest.mark.parametrize(
    "url",
    [
        "https://alice:ghp_SECRETTOKEN@example.invalid/up.git",
        "https://ghp_SECRETTOKEN@example.invalid/up.git",
        "http://u:p@127.0.0.1:1/x/.well-known/skills/index.json",
    ],
)
def test_a_source_url_with_credentials_is_refused_before_anything_is_fetched(url: str, tmp_path: Path) -> None:
    """The source is recorded in the signed supply record and published in manifests: a token in it would be
    public for ever (review of issue 37). Refused with the fix, nothing written, the secret never echoed."""
    brain = tmp_path / "b"
    run_ledger("init", str(brain), check=True)
    before = fingerprint(brain)
    proc = run_ledger("--brain", str(brain), "supply", "install", url)
    assert proc.returncode == 1 and "carries credentials" in proc.stderr and "credential helper" in proc.stderr
    assert "SECRETTOKEN" not in proc.stdout + proc.stderr and ":p@" not in proc.stderr
    assert fingerprint(brain) == before


def test_an_ssh_url_names_its_user_and_is_not_refused_for_it() -> None:
    from ledger.sources.resolve import _no_credentials

    _no_credentials("ssh://git@example.invalid/org/skills.git")  # the user of an SSH URL is no secret


# ------------------------------------------------------------------ installs read only what they were asked to


def _market(root: Path, plugins: list[dict], files: dict[str, bytes] | None = None) -> Path:
    doc = {"name": "m", "owner": {"name": "o"}, "plugins": plugins}
    commit(root, {".claude-plugin/marketplace.json": json.dumps(doc).encode(), **(files or {})})
    return root


def _objects(repo: Path) -> bytes:
    """Every object of a brain's store, raw: what a push would publish."""
    return subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
    ).stdout


@pytest.mark.parametrize(
    "kind",
    [
        "file-url",
        "absolute-path",
        "dotdot-path",
        "ext-transport",
        "fd-transport",
        "subdir-file-url",
        "string-file-url",
        "string-absolute-path",
        "string-dotdot-path",
    ],
)
def test_a_marketplace_may_not_name_a_source_on_the_installers_disk(kind: str, tmp_path: Path) -> None:
    """A marketplace is a third party's document: its plugins stay on its own origin (a path inside its
    repository, or a remote URL). A private repository on the installer's disk is never read into the lineage."""
    private = tmp_path / "private"
    commit(private, {"skills/secret/SKILL.md": skill_md("secret", "PRIVATE-CONTENT\n")})
    url = {
        "file-url": f"file://{private}",
        "absolute-path": str(private),
        "dotdot-path": "../private",
        "ext-transport": f"ext::git-upload-pack {private}",
        "fd-transport": "fd::3",
        "subdir-file-url": f"file://{private}",
    }.get(kind, "")
    url = {
        "string-file-url": f"file://{private}",
        "string-absolute-path": str(private),
        "string-dotdot-path": "../private",
    }.get(kind, url)
    src = (
        {"source": "git-subdir", "url": url, "path": "skills"}
        if kind == "subdir-file-url"
        else url
        if kind.startswith("string-")
        else {"source": "url", "url": url}
    )
    market = _market(tmp_path / "market", [{"name": "evil", "source": src}], {"README.md": b"a marketplace\n"})
    brain = tmp_path / "b"
    run_ledger("init", str(brain), check=True)
    before = fingerprint(brain)
    proc = run_ledger("--brain", str(brain), "supply", "install", str(market))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "names a source on this machine" in proc.stderr and "evil" in proc.stderr, proc.stderr
    assert "hint" in proc.stderr.lower() or "https" in proc.stderr
    assert fingerprint(brain) == before
    assert b"PRIVATE-CONTENT" not in _objects(brain)


def test_a_user_may_still_name_a_local_source_on_the_command_line(skills_repo: Path) -> None:
    assert [c.name for c in resolve(f"file://{skills_repo}")] == ["alpha", "beta"]
    assert [c.name for c in resolve(str(skills_repo), ["beta"])] == ["beta"]


@pytest.mark.parametrize("asked", [["lint"], ["tools:lint"]])
def test_only_the_plugin_that_holds_the_named_skill_is_fetched(asked: list[str], tmp_path: Path) -> None:
    """The other plugin's repository does not exist: naming one skill must not read it (nor fail on it)."""
    far = {"name": "far", "source": {"source": "url", "url": "https://example.invalid/does-not-exist.git"}}
    market = _market(
        tmp_path / "market",
        [far, {"name": "tools", "source": "./plugins/tools"}],
        {"plugins/tools/skills/lint/SKILL.md": skill_md("lint")},
    )
    (lint,) = resolve(str(market), asked)
    assert lint.name == "lint" and lint.source["plugin"] == "tools"
    assert fetch_pinned(lint.source, lint.pin, "lint") == lint
    assert latest(lint.source, "lint").pin == lint.pin
    with pytest.raises(SourceError, match=r"example\.invalid"):
        resolve(str(market))  # every skill asked for: every plugin is read, and the missing one is reported


def test_a_marketplace_plugin_url_with_a_token_is_refused_without_echoing_it(tmp_path: Path) -> None:
    src = {"source": "url", "url": "https://example.invalid/x.git?access_token=SECRETTOKEN"}
    market = _market(tmp_path / "market", [{"name": "p", "source": src}], {"README.md": b"m\n"})
    with pytest.raises(SourceError, match="carries credentials") as err:
        resolve(str(market), ["p:x"])
    assert "SECRETTOKEN" not in str(err.value) + (err.value.hint or "")


def test_a_lock_line_may_not_name_a_path_outside_the_locks_folder(tmp_path: Path) -> None:
    up = tmp_path / "upstream"
    commit(up, {"skills/alpha/SKILL.md": skill_md("alpha")})
    locked = folder_sha256({"SKILL.md": (skill_md("alpha"), False)})
    lock = tmp_path / "proj" / "skills-lock.json"
    lock.parent.mkdir()
    for source in ("../upstream", str(up)):
        write_lock_json(lock, {"alpha": {"source": source, "sourceType": "local", "computedHash": locked}})
        with pytest.raises(SourceError, match="names a source on this machine"):
            resolve(str(lock))
    write_lock_json(
        lock,
        {"alpha": {"source": f"file://{up}", "sourceUrl": f"file://{up}", "sourceType": "git", "computedHash": locked}},
    )
    with pytest.raises(SourceError, match="names a source on this machine"):
        resolve(str(lock))


PRESIGNED = [
    "https://example.invalid/skills.git?access_token=SECRETTOKEN",
    "https://example.invalid/skills.git?private_token=SECRETTOKEN",
    "https://example.invalid/skills.git#access_token=SECRETTOKEN",
    "https://bucket.s3.amazonaws.com/site/.well-known/agent-skills/index.json?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIASECRETTOKEN%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z"
    "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=SECRETTOKEN",
    "https://bucket.s3.amazonaws.com/site/index.json?AWSAccessKeyId=AKIAEXAMPLE&Expires=1900000000"
    "&Signature=SECRETTOKEN",
    "https://storage.googleapis.com/b/.well-known/agent-skills/index.json?X-Goog-Algorithm=GOOG4-RSA-SHA256"
    "&X-Goog-Credential=svc%40p.iam.gserviceaccount.com&X-Goog-Signature=SECRETTOKEN",
    "https://acct.blob.core.windows.net/c/.well-known/agent-skills/index.json?sv=2022-11-02&ss=b&srt=o&sp=r"
    "&se=2030-01-01T00:00:00Z&sig=SECRETTOKEN",
    "https://example.invalid/.well-known/agent-skills/index.json?api_key=SECRETTOKEN",
    "https://example.invalid/org/ghp_SECRETTOKEN0123456789abcdefghijklmn/skills.git",
]


@pytest.mark.parametrize("url", PRESIGNED)
def test_a_token_in_a_query_fragment_or_presigned_url_is_refused_without_echoing_it(url: str) -> None:
    with pytest.raises(SourceError, match="carries credentials") as err:
        resolve(url)
    assert "SECRETTOKEN" not in str(err.value) + (err.value.hint or "")
    assert "--strip-credentials" in (err.value.hint or "")


def test_a_token_in_a_query_string_never_reaches_the_record_the_manifest_or_a_message(tmp_path: Path) -> None:
    site = tmp_path / "site"
    base_dir = site / ".well-known" / "skills"  # a v0.1 index: its pin is {sha256, version}
    (base_dir / "web").mkdir(parents=True)
    (base_dir / "web" / "SKILL.md").write_bytes(skill_md("web"))
    (base_dir / "index.json").write_text(
        json.dumps({"skills": [{"name": "web", "description": "d", "files": ["SKILL.md"]}]})
    )
    brain = tmp_path / "b"
    run_ledger("init", str(brain), check=True)
    before = fingerprint(brain)
    with served(site) as base:
        url = f"{base}/.well-known/skills/index.json?access_token=SECRETTOKEN&v=2"
        refused = run_ledger("--brain", str(brain), "supply", "install", url)
        assert refused.returncode == 1 and "carries credentials" in refused.stderr, refused.stderr
        assert "access_token" in refused.stderr and "SECRETTOKEN" not in refused.stdout + refused.stderr
        assert fingerprint(brain) == before
        done = run_ledger("--brain", str(brain), "supply", "install", url, "--strip-credentials", check=True)
    assert "SECRETTOKEN" not in done.stdout + done.stderr and "access_token" in done.stderr  # says what it removed
    shown = run_ledger("--brain", str(brain), "supply", "show", "web", "--json", check=True).stdout
    assert json.loads(shown)["source"]["url"] == f"{base}/.well-known/skills/index.json?v=2"
    manifest = run_ledger("--brain", str(brain), "manifest", "web", "--json", check=True).stdout
    log = subprocess.run(
        ["git", "-C", str(brain), "log", "--all", "--format=%B"], capture_output=True, text=True, check=True
    ).stdout
    assert "SECRETTOKEN" not in shown + manifest + log
    assert b"SECRETTOKEN" not in _objects(brain)


def test_the_manifest_never_publishes_a_token_an_older_record_holds() -> None:
    from ledger.supply.manifest import public_location

    assert (
        public_location("https://h.example/i.json?access_token=SECRETTOKEN&v=2#sig=SECRET")
        == "https://h.example/i.json?v=2"
    )
    assert (
        public_location("https://a.blob.core.windows.net/c/i.json?sv=1&se=2&sp=r&sig=SECRETTOKEN")
        == "https://a.blob.core.windows.net/c/i.json"
    )


_PEAK = """
import resource, sys, json
from ledger.errors import SourceError
from ledger.sources import candidates
from ledger.sources import indexsource
from ledger.sources.resolve import resolve
if len(sys.argv) > 2:
    indexsource.MAX_SKILL_BYTES = candidates.MAX_SKILL_BYTES = int(sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    resolve(sys.argv[1])
    err = None
except SourceError as exc:
    err = exc.message
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_kib": after - before, "error": err}))
"""


def _bomb(members: list[tuple[str, int]]) -> bytes:
    """A .tar.gz of files of zeros (name, size), written as a stream: cheap to make, small on the wire."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w|gz") as tar:
        for name, size in members:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, _Zeros(size))
    return buf.getvalue()


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return bytes(n)


def _long_name_bomb(size: int) -> bytes:
    """A .tar.gz whose first header is a GNU long name of ``size`` bytes: no file, only a header to inflate."""
    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = tarfile.GNUTYPE_LONGNAME, size
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb") as gz:
        gz.write(info.tobuf(format=tarfile.GNU_FORMAT))
        for _ in range(size // (1 << 20)):
            gz.write(b"a" * (1 << 20))
        gz.write(tarfile.TarInfo("x/SKILL.md").tobuf() + bytes(1024))
    return buf.getvalue()


@pytest.mark.parametrize("shape", ["one-huge-file", "many-files-over-the-total", "a-huge-long-name"])
def test_an_archive_bomb_is_refused_with_bounded_memory(shape: str, tmp_path: Path) -> None:
    """The archive is read as a stream: the caps apply as bytes are decompressed, not after."""
    if shape == "one-huge-file":  # 320 MiB of zeros in one member: over the per-file cap
        archive, cap = _bomb([("bomb/SKILL.md", 320 * 1024 * 1024)]), None
    elif shape == "many-files-over-the-total":  # 24 members of 4 MiB with the skill's total lowered to 8 MiB
        archive, cap = _bomb([("bomb/SKILL.md", 10)] + [(f"bomb/r/{i}.md", 4 << 20) for i in range(24)]), 8 << 20
    else:  # a 200 MiB header, which no per-file check sees
        archive, cap = _long_name_bomb(200 << 20), None
    assert len(archive) < 400_000
    site = tmp_path / "site"
    base = site / ".well-known" / "agent-skills"
    base.mkdir(parents=True)
    (base / "bomb.tar.gz").write_bytes(archive)
    doc = {
        "$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
        "skills": [
            {
                "name": "bomb",
                "type": "archive",
                "description": "b",
                "url": "bomb.tar.gz",
                "digest": "sha256:" + hashlib.sha256(archive).hexdigest(),
            }
        ],
    }
    (base / "index.json").write_text(json.dumps(doc))
    with served(site) as url:
        args = [sys.executable, "-c", _PEAK, url] + ([str(cap)] if cap else [])
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["error"] and re.search(r"limit|refused", out["error"]), out
    assert out["grew_kib"] < 48 * 1024, out  # bounded: nowhere near the archive's decompressed size


def _counting_git_config(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A git config whose upload-pack reports every pack it sends, by size: a counter on the source's side."""
    log = tmp_path / "sent.log"
    hook = tmp_path / "count-pack.py"
    hook.write_text(
        f"#!{sys.executable}\nimport subprocess, sys\np = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)\n"
        "n = 0\nwhile chunk := p.stdout.read(65536):\n    n += len(chunk)\n    sys.stdout.buffer.write(chunk)\n"
        f"sys.stdout.flush()\nopen({str(log)!r}, 'a').write(f'{{n}}\\n')\nsys.exit(p.wait())\n"
    )
    hook.chmod(0o755)
    cfg = tmp_path / "gitconfig"
    cfg.write_text(f"[uploadpack]\n\tpackObjectsHook = {hook}\n")
    return {"GIT_CONFIG_GLOBAL": str(cfg)}, log


def _sent(log: Path) -> int:
    return sum(int(n) for n in log.read_text().split()) if log.exists() else 0


@pytest.fixture
def big_branch_repo(tmp_path: Path) -> Path:
    """A one-skill repository whose other branch holds a 24 MiB blob that does not compress."""
    work = tmp_path / "big"
    commit(work, {"skills/tiny/SKILL.md": skill_md("tiny")})
    sh(work, "checkout", "-q", "-b", "other")
    commit(work, {"blob.bin": os.urandom(24 << 20)})
    sh(work, "checkout", "-q", "main")
    sh(work, "tag", "v1")
    return work


def test_installing_one_skill_fetches_only_its_ref_not_a_huge_blob_on_another_branch(
    big_branch_repo: Path, tmp_path: Path
) -> None:
    env, log = _counting_git_config(tmp_path)
    brain = tmp_path / "b"
    run_ledger("init", str(brain), check=True)
    run_ledger("--brain", str(brain), "supply", "install", f"file://{big_branch_repo}", "tiny", env=env, check=True)
    assert 0 < _sent(log) < 1 << 20, _sent(log)
    log.unlink()
    run_ledger("--brain", str(brain), "verify", "--frozen", env=env, check=True)
    assert 0 < _sent(log) < 1 << 20, _sent(log)


def test_a_fetch_larger_than_its_cap_is_refused(tmp_path: Path) -> None:
    work = tmp_path / "heavy"
    commit(work, {"skills/tiny/SKILL.md": skill_md("tiny"), "blob.bin": os.urandom(12 << 20)})
    brain = tmp_path / "b"
    run_ledger("init", str(brain), check=True)
    before = fingerprint(brain)
    proc = run_ledger(
        "--brain",
        str(brain),
        "supply",
        "install",
        f"file://{work}",
        "tiny",
        env={"LEDGER_MAX_FETCH_BYTES": str(4 << 20)},
    )
    assert proc.returncode == 1 and "more than" in proc.stderr and "LEDGER_MAX_FETCH_BYTES" in proc.stderr, proc.stderr
    assert fingerprint(brain) == before
