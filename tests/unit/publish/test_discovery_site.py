"""``ledger export --discovery`` and ``ledger install`` from such a site (issue 50, docs/lineage/anchor.md §5):
a real brain exported with the real CLI, the site served by a loopback HTTP server, installed into a
second brain with its pins; every tamper refused by name with the second brain unchanged.  Also the
Agent Skills Discovery RFC v0.2.0's client rules (ledger/sources/indexsource.py)."""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import io
import json
import shutil
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest

from ledger.brain import Brain
from ledger.errors import SourceError
from ledger.publish.anchor import KEY, verify_anchor
from ledger.publish.entries import Entries
from ledger.publish.site import SCHEMA, tarball
from ledger.sources.resolve import fetch_pinned, resolve
from ledger.store import supply as sp
from tests.harness.brains import fingerprint, make_brain, publish_index
from tests.harness.cli import run_in_process
from tests.harness.localhttp import serving

BASE = ".well-known/agent-skills"
PDF = {
    "SKILL.md": b"---\nname: pdf-tools\ndescription: Work with PDF files.\n---\nRun scripts/run.sh.\n",
    "scripts/run.sh": b"#!/bin/sh\necho pdf\n",
    "references/r.md": b"Reference.\n",
}
NOTES = b"---\nname: notes\ndescription: Take notes.\n---\nWrite it down.\n"


@contextlib.contextmanager
def served(root: Path) -> Iterator[str]:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    with serving(functools.partial(Quiet, directory=str(root))) as url:
        yield url


def ledger(brain: Path, *args: str, check: bool = True):
    return run_in_process("--brain", str(brain), *args, check=check)


def _brain(root: Path, skills: dict[str, dict[str, bytes]]) -> Path:
    return make_brain(root / "brain", skills, via="cli")


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Brain A (pdf-tools: several files and an executable script; notes: a lone SKILL.md; held: installed
    from elsewhere, so quarantined and withheld) and its discovery export."""
    root = tmp_path_factory.mktemp("publisher")
    a = _brain(root, {"pdf-tools": PDF, "notes": {"SKILL.md": NOTES}})
    elsewhere = root / "elsewhere"
    publish_index(elsewhere, "held", {"SKILL.md": b"---\nname: held\ndescription: Held back.\n---\nHeld.\n"})
    with served(elsewhere) as url:
        ledger(a, "install", url, "held")
    out = json.loads(ledger(a, "export", "--discovery", str(root / "site"), "--json").stdout)
    assert [s["name"] for s in out["skills"]] == ["notes", "pdf-tools"]  # held: quarantined, not served
    return a, root / "site"


def _site(published: tuple[Path, Path], tmp_path: Path) -> Path:
    site = tmp_path / "site"
    shutil.copytree(published[1], site)
    return site


def _index(site: Path) -> dict:
    return json.loads((site / BASE / "index.json").read_bytes())


def _republish(site: Path, name: str, data: bytes) -> None:
    """Replace skill ``name``'s artifact with ``data`` and recompute its digest in the index, as an
    attacker who controls the site would."""
    doc = _index(site)
    entry = next(s for s in doc["skills"] if s["name"] == name)
    (site / BASE / entry["url"]).write_bytes(data)
    entry["digest"] = "sha256:" + hashlib.sha256(data).hexdigest()
    (site / BASE / "index.json").write_text(json.dumps(doc))


def _members(data: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return tar.getmembers()


def _served(brain: Path) -> dict[str, dict[str, bytes]]:
    """What brain serves, as Entries reads it: {skill: {path: bytes}} (SKILL.md as the brain holds it)."""
    with Brain.open(brain) as b:
        entries = Entries(b)
        return {
            e["uri"].split("/")[2]: {r["uri"].split("/", 3)[3]: entries.read(r["uri"]) for r in e["resources"]}
            for e in entries.list()
        }


def test_a_brain_exported_as_a_discovery_site_installs_into_another_with_its_pins(
    published: tuple[Path, Path], tmp_path: Path
) -> None:
    a, site = published
    doc = _index(site)
    have = _served(a)
    assert sorted(have) == ["notes", "pdf-tools"] and set(have["pdf-tools"]) == set(PDF)
    assert {k: v for k, v in have["pdf-tools"].items() if k != "SKILL.md"} == {
        k: v for k, v in PDF.items() if k != "SKILL.md"
    }
    assert list(doc) == ["$schema", "skills"] and doc["$schema"] == SCHEMA
    assert doc["skills"] == [
        {
            "description": "Take notes.",
            "digest": "sha256:" + hashlib.sha256(have["notes"]["SKILL.md"]).hexdigest(),
            "name": "notes",
            "type": "skill-md",
            "url": "notes/SKILL.md",
        },
        {
            "description": "Work with PDF files.",
            "name": "pdf-tools",
            "type": "archive",
            "url": "pdf-tools.tar.gz",
            "digest": "sha256:" + hashlib.sha256((site / BASE / "pdf-tools.tar.gz").read_bytes()).hexdigest(),
        },
    ]
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()) == [
        f"{BASE}/index.json",
        f"{BASE}/notes.anchor.json",
        f"{BASE}/notes/SKILL.md",
        f"{BASE}/pdf-tools.anchor.json",
        f"{BASE}/pdf-tools.tar.gz",
    ]
    # The archive: the skill's files at its root, sorted, no folders or links, mtime 0, root's ids, no names.
    archive = (site / BASE / "pdf-tools.tar.gz").read_bytes()
    assert archive[4:8] == b"\0\0\0\0"  # gzip MTIME
    members = _members(archive)
    assert [m.name for m in members] == sorted(PDF) and all(m.isfile() for m in members)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
    assert {m.name: m.mode for m in members} == {"SKILL.md": 0o644, "references/r.md": 0o644, "scripts/run.sh": 0o755}
    # Beside each: the same _meta object as the MCP entry, which proves the site's bytes into A's root.
    with Brain.open(a) as brain:
        metas = {e["uri"]: e["_meta"] for e in Entries(brain).list()}
    for name, files in have.items():
        meta = json.loads((site / BASE / f"{name}.anchor.json").read_bytes())
        assert meta == {KEY: metas[f"skill://{name}/SKILL.md"][KEY]}
        verify_anchor(meta[KEY], files)
    # Installed over loopback into brain B: every file proven, pinned to A's root and commit and signer.
    b = tmp_path / "b"
    run_in_process("init", str(b), check=True)
    with served(site) as url:
        out = json.loads(ledger(b, "install", url + "/", "--json").stdout)
    assert out["installed"] == ["notes", "pdf-tools"]
    with Brain.open(b) as brain:
        record = brain.supply()
    for name, files in have.items():
        anchor = json.loads((site / BASE / f"{name}.anchor.json").read_bytes())[KEY]
        entry = record.skills[name]
        assert entry.source == {"type": "index", "url": f"{url}/{BASE}/index.json", "path": name, "ref": None}
        assert entry.pin["root"] == anchor["root"] and entry.pin["commit"] == anchor["commit"]
        assert entry.pin["digest"] == next(s["digest"] for s in doc["skills"] if s["name"] == name)
        assert entry.signer == anchor["signer"]["address"] and entry.signer.startswith("0x")
        assert entry.files == {rel: sp.file_sha256(data) for rel, data in files.items()}
        assert entry.blake3 == "blake3-tree-v1:" + anchor["folder"]["content"]
        for rel, data in files.items():
            assert (b / "skills" / name / rel).read_bytes() == data
    assert (b / "skills/pdf-tools/scripts/run.sh").stat().st_mode & 0o100


def test_a_site_without_anchors_installs_on_its_digests_alone(published: tuple[Path, Path], tmp_path: Path) -> None:
    site = _site(published, tmp_path)
    with served(site) as url:
        (anchored,) = resolve(url, ["pdf-tools"])
        assert anchored.pin["root"].startswith("blake3-tree-v1:") and anchored.signer is not None
        for anchor in (site / BASE).glob("*.anchor.json"):
            anchor.unlink()
        with pytest.raises(SourceError, match="without the anchor it was pinned to"):
            fetch_pinned(anchored.source, anchored.pin, "pdf-tools")  # a pinned root is not dropped silently
        pdf, notes = resolve(url, ["pdf-tools", "notes"])
    assert "root" not in pdf.pin and "commit" not in pdf.pin and pdf.signer is None
    have = _served(published[0])
    assert {rel: data for rel, (data, _) in pdf.files.items()} == have["pdf-tools"]
    assert notes.files == {"SKILL.md": (have["notes"]["SKILL.md"], False)}


def test_two_exports_of_one_head_are_byte_identical_and_only_an_export_is_replaced(
    published: tuple[Path, Path], tmp_path: Path
) -> None:
    a, site = published
    again = tmp_path / "again"
    ledger(a, "export", "--discovery", str(again))
    assert fingerprint(again) == fingerprint(site)
    ledger(a, "export", "--discovery", str(again))  # over a previous export: replaced whole
    assert fingerprint(again) == fingerprint(site)
    (again / BASE / "notes.html").write_text("mine")  # no longer only an export: refused, nothing changed
    before = fingerprint(again)
    refused = ledger(a, "export", "--discovery", str(again), check=False)
    assert refused.returncode == 1 and "is not a previous discovery export" in refused.stderr
    assert fingerprint(again) == before
    other = tmp_path / "www"
    (other / "docs").mkdir(parents=True)
    (other / "docs" / "index.html").write_text("a web root")
    refused = ledger(a, "export", "--discovery", str(other), check=False)
    assert refused.returncode == 1 and "nothing was written" in refused.stderr
    assert [p.name for p in other.rglob("*")] == ["docs", "index.html"]
    assert tarball({"b": (b"1", False), "a": (b"2", True)}) == tarball({"a": (b"2", True), "b": (b"1", False)})


def _tar(members: list[tuple[str, bytes | None, int, str | None]]) -> bytes:
    """A .tar.gz of (name, bytes, mode, link target): a symlink when bytes is None."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data, mode, target in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.linkname = tarfile.SYMTYPE, target or ""
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), mode
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _pdf(site: Path, **change: bytes) -> list[tuple[str, bytes | None, int, str | None]]:
    """The members of the site's pdf-tools archive as published, with ``change`` ({path: bytes}) made."""
    with tarfile.open(site / BASE / "pdf-tools.tar.gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    files |= change
    return [(rel, data, 0o755 if rel.startswith("scripts/") else 0o644, None) for rel, data in sorted(files.items())]


def _other_brains_anchor(site: Path, tmp_path: Path) -> None:
    c = _brain(tmp_path / "c", {"pdf-tools": {**PDF, "references/r.md": b"Another brain's reference.\n"}})
    ledger(c, "export", "--discovery", str(tmp_path / "c-site"))
    shutil.copy(tmp_path / "c-site" / BASE / "pdf-tools.anchor.json", site / BASE / "pdf-tools.anchor.json")


def _swap_root(site: Path, _tmp: Path) -> None:
    path = site / BASE / "pdf-tools.anchor.json"
    meta = json.loads(path.read_bytes())
    meta[KEY]["root"] = "blake3-tree-v1:" + "ab" * 32
    path.write_text(json.dumps(meta))


TAMPERS: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "a-file-byte-in-the-archive": (
        lambda s, _t: _republish(s, "pdf-tools", _tar(_pdf(s, **{"references/r.md": b"Reference!\n"}))),
        "file 'references/r.md' is not the file the root holds",
    ),
    "a-byte-of-a-lone-skill-md": (
        lambda s, _t: _republish(s, "notes", (s / BASE / "notes/SKILL.md").read_bytes().replace(b"Write", b"Send")),
        "file 'SKILL.md' is not the file",
    ),
    "the-archive-swapped-for-one-with-a-file-more": (
        lambda s, _t: _republish(s, "pdf-tools", _tar(_pdf(s, **{"scripts/steal.sh": b"#!/bin/sh\ncurl x\n"}))),
        "file 'scripts/steal.sh' is not one of the skill's files",
    ),
    "the-exec-bit-dropped": (
        lambda s, _t: _republish(s, "pdf-tools", _tar([(r, d, 0o644, t) for r, d, _m, t in _pdf(s)])),
        'scripts/run.sh is served not executable, but its anchor says "exec"',
    ),
    "the-anchor-root-swapped": (_swap_root, "but its signature is by"),
    "the-anchor-of-another-brain": (_other_brains_anchor, "file 'references/r.md' is not the file the root holds"),
    "a-symlink-member": (
        lambda s, _t: _republish(s, "pdf-tools", _tar([*_pdf(s), ("references/link", None, 0o777, "r.md")])),
        "references/link is a link, which no anchored skill holds",
    ),
    "a-member-that-climbs-out": (
        lambda s, _t: _republish(s, "pdf-tools", _tar([*_pdf(s), ("../escape", b"x", 0o644, None)])),
        "'../escape' leaves the skill's folder",
    ),
    "a-name-that-climbs-out-in-the-index": (
        lambda s, _t: (s / BASE / "index.json").write_text(
            (s / BASE / "index.json").read_text().replace('"name": "notes"', '"name": "../notes"')
        ),
        "not a valid skill name",
    ),
}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_a_tampered_site_is_refused_by_name_and_the_brain_is_unchanged(
    tamper: str, published: tuple[Path, Path], tmp_path: Path
) -> None:
    site = _site(published, tmp_path)
    change, said = TAMPERS[tamper]
    change(site, tmp_path)
    b = tmp_path / "b"
    run_in_process("init", str(b), check=True)
    before = fingerprint(b)
    with served(site) as url:
        refused = ledger(b, "install", url + "/", check=False)
    assert refused.returncode == 1, refused.stdout
    assert said in refused.stderr
    assert fingerprint(b) == before


# ------------------------------------------------------------------ the RFC v0.2.0's client rules


def _one(site: Path, entry: dict, artifact: bytes, schema: str = SCHEMA) -> None:
    (site / BASE).mkdir(parents=True, exist_ok=True)
    (site / BASE / entry["url"]).parent.mkdir(parents=True, exist_ok=True)
    (site / BASE / entry["url"]).write_bytes(artifact)
    (site / BASE / "index.json").write_text(json.dumps({"$schema": schema, "skills": [entry]}))


def _entry(name: str, kind: str, url: str, data: bytes) -> dict:
    return {
        "name": name,
        "type": kind,
        "description": "d",
        "url": url,
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
    }


def test_an_index_of_an_unknown_schema_or_with_an_upper_case_digest_is_not_read(tmp_path: Path) -> None:
    _one(
        tmp_path,
        _entry("notes", "skill-md", "notes/SKILL.md", NOTES),
        NOTES,
        schema="https://schemas.agentskills.io/discovery/0.9.0/schema.json",
    )
    with served(tmp_path) as url, pytest.raises(SourceError, match="does not know"):
        resolve(url)
    entry = _entry("notes", "skill-md", "notes/SKILL.md", NOTES)
    _one(tmp_path, entry | {"digest": entry["digest"].upper().replace("SHA256", "sha256")}, NOTES)
    with served(tmp_path) as url, pytest.raises(SourceError, match="lower-case hex"):
        resolve(url)


def test_an_index_of_a_big_brain_reads_back_and_one_over_the_cap_is_refused(tmp_path: Path) -> None:
    """An index of 6,000 skills with long descriptions (over 1 MiB, what a big brain's own export writes) is read;
    one over :data:`MAX_INDEX` is refused, naming the cap."""
    from ledger.sources.indexsource import MAX_INDEX

    _one(tmp_path, _entry("notes", "skill-md", "notes/SKILL.md", NOTES), NOTES)
    doc = json.loads((tmp_path / BASE / "index.json").read_bytes())
    doc["skills"] += [
        _entry(f"s-{i}", "skill-md", f"s-{i}/SKILL.md", NOTES) | {"description": "x" * 300} for i in range(6000)
    ]
    body = json.dumps(doc).encode()
    assert 1 << 20 < len(body) < MAX_INDEX
    (tmp_path / BASE / "index.json").write_bytes(body)
    with served(tmp_path) as url:
        (notes,) = resolve(url, ["notes"])
        assert notes.name == "notes"
    (tmp_path / BASE / "index.json").write_bytes(body[:-1] + b" " * (MAX_INDEX - len(body) + 1) + b"}")
    with served(tmp_path) as url, pytest.raises(SourceError, match=r"over|cap|limit|bytes"):
        resolve(url, ["notes"])


def test_an_entry_of_an_unknown_type_is_skipped_and_a_name_listed_twice_refused(tmp_path: Path) -> None:
    base = tmp_path / BASE
    _one(tmp_path, _entry("notes", "skill-md", "notes/SKILL.md", NOTES), NOTES)
    doc = json.loads((base / "index.json").read_bytes())
    doc["skills"].append(
        {"name": "future", "type": "wheel", "description": "d", "url": "future.whl", "digest": "sha256:" + "0" * 64}
    )
    (base / "index.json").write_text(json.dumps(doc))
    with served(tmp_path) as url:
        (notes,) = resolve(url)
        assert notes.name == "notes"
        with pytest.raises(SourceError, match='of type "wheel"'):
            resolve(url, ["future"])
    doc["skills"].append(doc["skills"][0])
    (base / "index.json").write_text(json.dumps(doc))
    with served(tmp_path) as url, pytest.raises(SourceError, match="lists the skill 'notes' twice"):
        resolve(url)


def test_a_zip_archive_is_read_and_a_link_out_of_the_skill_is_refused(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for rel, data in sorted(PDF.items()):
            info = zipfile.ZipInfo(rel)
            info.external_attr = (0o100755 if rel.startswith("scripts/") else 0o100644) << 16
            zf.writestr(info, data)
    _one(tmp_path, _entry("pdf-tools", "archive", "pdf-tools.zip", buf.getvalue()), buf.getvalue())
    with served(tmp_path) as url:
        (pdf,) = resolve(url)
    assert pdf.files == {rel: (data, rel.startswith("scripts/")) for rel, data in PDF.items()}
    plain = [(rel, data, 0o755 if rel.startswith("scripts/") else 0o644, None) for rel, data in sorted(PDF.items())]
    out = _tar([*plain, ("references/passwd", None, 0o777, "/etc/passwd")])
    _one(tmp_path, _entry("pdf-tools", "archive", "pdf-tools.tar.gz", out), out)
    with served(tmp_path) as url, pytest.raises(SourceError, match="'references/passwd' is a symlink to"):
        resolve(url)
    up = _tar([*plain, ("references/up", None, 0o777, "../../x")])
    _one(tmp_path, _entry("pdf-tools", "archive", "pdf-tools.tar.gz", up), up)
    with served(tmp_path) as url, pytest.raises(SourceError, match="outside the skill's folder"):
        resolve(url)


def test_the_archive_is_a_gzip_stream_with_no_time_in_it() -> None:
    data = tarball({"SKILL.md": (NOTES, False)})
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
        gz.read()
        assert gz.mtime == 0


def test_a_nested_skill_is_published_flat_and_proven_with_its_prefix(tmp_path: Path) -> None:
    kit = {
        "SKILL.md": b"---\nname: kit\ndescription: A kit.\n---\nKit.\n",
        "helper/x.md": b"x\n",
        "helper/SKILL.md": b"---\nname: helper\ndescription: Helps.\n---\nHelp.\n",
    }
    a = _brain(tmp_path / "a", {"kit": kit})
    ledger(a, "export", "--discovery", str(tmp_path / "site"))
    helper = _members((tmp_path / "site" / BASE / "helper.tar.gz").read_bytes())
    assert [m.name for m in helper] == ["SKILL.md", "x.md"]  # the nested folder's files, at the archive's root
    anchor = json.loads((tmp_path / "site" / BASE / "helper.anchor.json").read_bytes())[KEY]
    assert anchor["skill"] == "kit" and anchor["prefix"] == "helper"
    with served(tmp_path / "site") as url:
        (found,) = resolve(url, ["helper"])
        assert found.pin["root"] == anchor["root"] and found.files["x.md"] == (b"x\n", False)
        _republish(
            tmp_path / "site",
            "helper",
            _tar([("SKILL.md", helper_md := found.files["SKILL.md"][0], 0o644, None), ("x.md", b"y\n", 0o644, None)]),
        )
        with pytest.raises(SourceError, match=r"file 'x\.md' is not the file the root holds"):
            resolve(url, ["helper"])
    assert helper_md.startswith(b"---\nname: helper")


def test_an_export_names_every_skill_it_does_not_publish_and_why(tmp_path: Path) -> None:
    """A skill whose frontmatter breaks the spec (or reads two ways) is not on the site, and the export says so
    in its text and its --json report, with the reason and the fix: never silently left out."""
    a = _brain(
        tmp_path / "a",
        {
            "good": {"SKILL.md": b"---\nname: good\ndescription: Good.\n---\nGood.\n"},
            "bad-meta": {"SKILL.md": b"---\nname: bad-meta\ndescription: Bad.\nmetadata:\n  build: 7\n---\nBad.\n"},
            "two-ways": {"SKILL.md": b"---\nname: two-ways\ndescription: Two.\nuser-invocable: on\n---\nTwo.\n"},
        },
    )
    text = ledger(a, "export", "--discovery", str(tmp_path / "site")).stdout
    assert (
        "not published: skill://bad-meta/SKILL.md: its frontmatter does not conform to the Agent Skills spec: "
        "Field 'metadata.build' must be a string, not 7 (fix: quote it: build: '7')" in text
    ), text
    assert "not published: skill://two-ways/SKILL.md: " in text and "quote" in text
    assert "published 1 skill(s) with their anchors" in text and "; 2 not published (above)" in text
    out = json.loads(ledger(a, "export", "--discovery", str(tmp_path / "site"), "--json").stdout)
    assert [s["name"] for s in out["skills"]] == ["good"]
    assert [r["uri"] for r in out["refused"]] == ["skill://bad-meta/SKILL.md", "skill://two-ways/SKILL.md"]
    assert all(r["reason"] for r in out["refused"])


def test_an_anchor_s_signer_on_the_auto_approve_list_does_not_approve_the_install(
    published: tuple[Path, Path], tmp_path: Path
) -> None:
    """A genuine anchor proves the files are in the signer's signed root, not that the signer serves or approves
    them (lineage/anchor.md §4; a quarantined skill is in that root too): only a brain source, whose audited supply
    record shows
    the skill served, lets the policy approve. The skill is installed quarantined, pinned to the anchor's version,
    and the output says why it was not approved."""
    site = _site(published, tmp_path)
    signer = json.loads((site / BASE / "notes.anchor.json").read_bytes())[KEY]["signer"]["address"]
    b = tmp_path / "b"
    run_in_process("init", str(b), check=True)
    config = json.loads((b / ".ledger/config.json").read_text())
    config["supply"] = {"auto_approve": [signer]}
    (b / ".ledger/config.json").write_text(json.dumps(config))
    with served(site) as url:
        got = ledger(b, "install", url + "/", "notes")
    with Brain.open(b) as brain:
        entry = brain.supply().skills["notes"]
    assert entry.signer == signer and entry.state == "quarantined" and entry.approval is None
    assert entry.pin["upstream"] == 1
    assert "notes: not auto-approved: auto-approval trusts a signer only for a skill from its brain" in got.stderr


def test_outdated_says_what_update_would_refuse_of_an_anchored_pin(
    published: tuple[Path, Path], tmp_path: Path
) -> None:
    """``ledger outdated`` applies update's rule for an anchored pin (lineage/anchor.md §5): a version served without
    its anchor is not listed as a newer version to take, but as an error naming the pinned root."""
    site = _site(published, tmp_path)
    b = tmp_path / "b"
    run_in_process("init", str(b), check=True)
    with served(site) as url:
        ledger(b, "install", url + "/", "pdf-tools")
        (site / BASE / "pdf-tools.anchor.json").unlink()
        changed = {**PDF, "references/r.md": b"Changed.\n"}
        _republish(site, "pdf-tools", tarball({rel: (data, rel.endswith(".sh")) for rel, data in changed.items()}))
        rows = json.loads(ledger(b, "outdated", "--json").stdout)
        before = fingerprint(b)
        got = ledger(b, "update", "pdf-tools", "--yes", check=False)
    (row,) = rows
    assert "latest" not in row and "without the anchor it was pinned to" in row["error"], row
    assert got.returncode == 1 and "without the anchor it was pinned to" in got.stderr and fingerprint(b) == before
