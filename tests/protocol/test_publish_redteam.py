"""Red team of issue 50's publishing surfaces: the MCP Skills extension on ``ledger mcp``, the skill
anchor's two verifiers (``ledger verify-proof`` and the stand-alone ``scripts/verify-entry.py``) and
``ledger install`` from a hostile Agent Skills Discovery site.

Every attack here uses the real parts: the real CLI, a real ``ledger mcp`` subprocess driven by the
official MCP SDK client's low-level request API, and a loopback HTTP server (127.0.0.1, a free port,
always stopped). An attack that is refused as it should be is a plain test; a hole that is still open
is a test marked ``xfail(strict=True)`` with the reason, so the suite stays green and the fix flips it.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import gzip
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from ledger.publish.anchor import KEY
from tests.harness.brains import fingerprint, make_brain, publish_index, skill_tree
from tests.harness.cli import run_ledger
from tests.harness.localhttp import serving
from tests.interop.test_mcp_skills import INVALID_PARAMS, Raw, _bytes, _list_all, _params

RESOURCE_NOT_FOUND = -32002  # MCP base protocol: resources/read of a URI the server has no resource for
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "verify-entry.py"
BASE = ".well-known/agent-skills"
ALPHA = {
    "SKILL.md": b"---\nname: alpha\ndescription: Alpha does one thing.\n---\n# Alpha\n",
    "references/guide.md": b"# Guide\n",
    "scripts/run.sh": b"#!/bin/sh\necho alpha\n",
}
BETA = {"SKILL.md": b"---\nname: beta\ndescription: Beta does another.\n---\n# Beta\n"}
# Not served by the spec's rules: the frontmatter name is not the folder (the import keeps it, with a note).
BADNAME = {
    "SKILL.md": b"---\nname: other\ndescription: Its name is not its folder.\n---\nsecret body\n",
    "secret.txt": b"a file of a skill the server does not serve\n",
}
# An outer folder that is not a skill itself, holding a nested skill that is: only outer/inner is served.
OUTER = {
    "SKILL.md": b"---\nname: wrong\ndescription: Not its folder.\n---\n",
    "private.txt": b"outer's own file\n",
    "inner/SKILL.md": b"---\nname: inner\ndescription: A nested skill.\n---\nInner.\n",
}
HELD = {
    "SKILL.md": b"---\nname: held\ndescription: Installed from elsewhere, quarantined.\n---\nHeld.\n",
    "payload.txt": b"quarantined bytes\n",
    "sub/deep/SKILL.md": b"---\nname: deep\ndescription: Nested in a quarantined skill.\n---\nDeep.\n",
}


def ledger(brain: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_ledger("--brain", str(brain), *args, check=check)


@contextmanager
def served(root: Path, handler: type[SimpleHTTPRequestHandler] | None = None) -> Iterator[str]:
    class Quiet(handler or SimpleHTTPRequestHandler):  # type: ignore[misc]
        def log_message(self, *args: object) -> None:
            pass

    with serving(functools.partial(Quiet, directory=str(root))) as url:
        yield url


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A signed brain serving alpha, beta and outer/inner; holding badname and outer (refused by the spec's
    naming rule) and held (installed from a loopback index, so quarantined: withheld)."""
    tmp = tmp_path_factory.mktemp("redteam")
    brain = make_brain(tmp / "brain", {"alpha": ALPHA, "beta": BETA, "badname": BADNAME, "outer": OUTER}, via="cli")
    publish_index(tmp / "elsewhere", "held", HELD)
    with served(tmp / "elsewhere") as url:
        ledger(brain, "install", url, "held")
    return brain


def _session(brain: Path, body: Callable[[Raw], Any], timeout: float = 120) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def run() -> None:
        async with stdio_client(_params(brain)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            await body(Raw(s))

    asyncio.run(asyncio.wait_for(run(), timeout=timeout))


# ---------------------------------------------------------------------- the MCP surface


WITHHELD_SPELLINGS = [
    "skill://held/SKILL.md",
    "skill://held/payload.txt",
    "skill://alpha/../held/SKILL.md",
    "skill://alpha/%2e%2e/held/SKILL.md",
    "skill://alpha/..%2fheld/SKILL.md",
    "skill://held%2FSKILL.md",
    "skill://HELD/SKILL.md",
    "skill://Held/SKILL.md",
    "skill://held/./SKILL.md",
    "skill://held//SKILL.md",
    "skill:///held/SKILL.md",
    "SKILL://held/SKILL.md",
    "skill:held/SKILL.md",
    "skill://held/SKILL.md?x=1",
    "skill://held/SKILL.md#f",
    "skill://held/SKILL.md/",
    "skill://held/skill.md",
    "skill://h\u0435ld/SKILL.md",
    "skill://held/sub/deep/SKILL.md",
    "skill://held/sub/deep",
    "skill://held/sub",
    "skill://held\u200b/SKILL.md",
    "skill://held/SKILL.md\x00",
    "skill://held\\SKILL.md",
    "skill://./held/SKILL.md",
]
NOT_SERVED_SPELLINGS = [
    "skill://alpha/references/../SKILL.md",
    "skill://alpha/./SKILL.md",
    "skill://alpha//SKILL.md",
    "skill://alpha/SKILL.md?x",
    "skill://alpha/SKILL.md#x",
    "skill://alpha/SKILL.md/",
    "skill://alpha/skill.md",
    "skill://alpha/references/guide.md/",
    "skill://alpha/references",
    "skill://alpha/",
    "skill://alpha",
    "skill://ALPHA/SKILL.md",
    "skill://alpha/%53KILL.md",
    "skill://",
    "skill:///",
    "skill://alpha/.git/config",
    "skill://alpha/../../etc/passwd",
    "file:///etc/passwd",
    "ledger://alpha/SKILL.md",
    "skill://outer/inner/../SKILL.md",
]


def test_no_spelling_of_a_uri_reaches_a_withheld_skill_or_a_file_not_served(brain: Path) -> None:
    """Every URI trick (dot segments, percent-encoding, case, confusables, query, fragment, slashes, NUL,
    backslash) against a quarantined skill and against a served one is -32602, by skills/get, resources/read
    and resources/directory/read alike; and the listing never names the withheld skill."""

    async def body(raw: Raw) -> None:
        entries, _ = await _list_all(raw)
        assert [e["uri"] for e in entries] == [
            "skill://alpha/SKILL.md",
            "skill://beta/SKILL.md",
            "skill://outer/inner/SKILL.md",
        ]
        assert "held" not in json.dumps(entries)
        for uri in WITHHELD_SPELLINGS + NOT_SERVED_SPELLINGS:
            for method in ("skills/get", "resources/read", "resources/directory/read"):
                if method == "resources/directory/read" and uri in ("skill://alpha", "skill://alpha/references"):
                    continue  # real directories: served
                err = await raw.error(method, {"uri": uri})
                # a skill:// URI is the extension's -32602; another scheme goes to the base protocol's
                # resources/read, whose "resource not found" is -32002: both are refusals with no content
                assert err.code in (INVALID_PARAMS, RESOURCE_NOT_FOUND), (method, uri, err)
        # the served ones still read: the refusals above are not a broken server
        assert (
            _bytes((await raw("resources/read", {"uri": "skill://alpha/SKILL.md"}))["contents"][0])
            == (brain / "skills/alpha/SKILL.md").read_bytes()
        )

    _session(brain, body)


def test_a_directory_read_of_a_file_of_the_root_or_a_withheld_folder_is_refused(brain: Path) -> None:
    async def body(raw: Raw) -> None:
        for uri in (
            "skill://alpha/SKILL.md",
            "skill://alpha/scripts/run.sh",
            "skill://",
            "skill://held",
            "skill://held/",
            "skill://alpha/scripts/",
            "skill://alpha/nope",
            "skill://outer/inner/SKILL.md",
        ):
            assert (await raw.error("resources/directory/read", {"uri": uri})).code == INVALID_PARAMS, uri
        got = await raw("resources/directory/read", {"uri": "skill://alpha"})
        assert sorted(r["uri"] for r in got["resources"]) == [
            "skill://alpha/SKILL.md",
            "skill://alpha/references",
            "skill://alpha/scripts",
        ]

    _session(brain, body)


def test_a_forged_cursor_or_an_oversized_request_is_refused_and_the_server_goes_on(brain: Path) -> None:
    """A cursor this server did not write is -32602; one forged in its own form only moves within the served
    listing (it never reveals a withheld skill); a request with a 4 MB URI or cursor is refused, not served."""
    import base64

    def forge(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    async def body(raw: Raw) -> None:
        for cursor in (
            "",
            "x",
            "!!!!",
            forge("skills-after:file:///etc"),
            forge("other:skill://a"),
            "A" * 4_000_000,
            forge("skills-after:") + "==",
        ):
            assert (await raw.error("skills/list", {"cursor": cursor})).code == INVALID_PARAMS, cursor[:40]
        for after in ("skill://held/SKILL.md", "skill://", "skill://\U0010ffff", "skill://alpha/SKILL.md"):
            page = await raw("skills/list", {"cursor": forge("skills-after:" + after)})
            assert "held" not in json.dumps(page)
            assert all(e["uri"] > after for e in page["skills"]), after
        assert (await raw.error("resources/read", {"uri": "skill://alpha/" + "a/" * 2_000_000})).code == INVALID_PARAMS
        assert (await raw.error("skills/get", {"uri": "skill://" + "a" * 4_000_000})).code == INVALID_PARAMS
        got = await raw("skills/get", {"uri": "skill://beta/SKILL.md"})
        assert got["skill"]["frontmatter"]["name"] == "beta"

    _session(brain, body, timeout=180)


def test_a_skill_the_server_refuses_has_no_file_served(brain: Path) -> None:
    async def body(raw: Raw) -> None:
        assert (await raw.error("skills/get", {"uri": "skill://badname/SKILL.md"})).code == INVALID_PARAMS
        for method, uri in (
            ("resources/read", "skill://badname/SKILL.md"),
            ("resources/read", "skill://badname/secret.txt"),
            ("resources/directory/read", "skill://badname"),
            ("resources/read", "skill://outer/private.txt"),
            ("resources/read", "skill://outer/SKILL.md"),
        ):
            assert (await raw.error(method, {"uri": uri})).code == INVALID_PARAMS, (method, uri)

    _session(brain, body)


def test_a_gated_skill_s_unreleased_files_are_not_served_by_any_spelling(tmp_path: Path) -> None:
    """With ``eval.gate`` on, a file only the held (unreleased) head has is not served, however it is spelt."""
    from tests.interop.test_mcp_skills import CSV_V1, EVALS

    b = tmp_path / "brain"
    run_ledger("init", str(b), check=True)
    skill_tree(tmp_path / "src", {"csv-sum": {"SKILL.md": CSV_V1.encode()}})
    ledger(b, "import", str(tmp_path / "src"))
    (tmp_path / "evals.json").write_text(json.dumps(EVALS))
    ledger(b, "skill", "write-file", "csv-sum", "evals/evals.json", "--from", str(tmp_path / "evals.json"))
    ledger(b, "eval", "gate", "on")
    (tmp_path / "new.md").write_text("unreleased\n")
    ledger(b, "skill", "write-file", "csv-sum", "references/new.md", "--from", str(tmp_path / "new.md"))

    async def body(raw: Raw) -> None:
        entries, _ = await _list_all(raw)
        assert [r["uri"] for e in entries for r in e["resources"]] == ["skill://csv-sum/SKILL.md"]
        for uri in (
            "skill://csv-sum/references/new.md",
            "skill://csv-sum/evals/evals.json",
            "skill://csv-sum/references/../references/new.md",
            "skill://csv-sum/references//new.md",
            "skill://csv-sum/references/new.md?v=head",
            "skill://csv-sum/REFERENCES/new.md",
        ):
            assert (await raw.error("resources/read", {"uri": uri})).code == INVALID_PARAMS, uri
        for uri in ("skill://csv-sum/references", "skill://csv-sum/evals"):
            assert (await raw.error("resources/directory/read", {"uri": uri})).code == INVALID_PARAMS, uri

    _session(b, body)


def test_an_empty_brain_lists_no_skills(tmp_path: Path) -> None:
    b = tmp_path / "brain"
    run_ledger("init", str(b), check=True)

    async def body(raw: Raw) -> None:
        page = await raw("skills/list", {})
        assert page["skills"] == [] and "nextCursor" not in page

    _session(b, body, timeout=60)


# ---------------------------------------------------------------------- the two verifiers agree


def _alpha(brain: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    from ledger.brain import Brain
    from ledger.publish.entries import Entries

    with Brain.open(brain) as b:
        entries = Entries(b)
        entry = entries.get("skill://alpha/SKILL.md")
        files = {r["uri"].split("/", 3)[3]: entries.read(r["uri"]) for r in entry["resources"]}
        beta = entries.get("skill://beta/SKILL.md")
    return {**entry, "_beta": beta}, files


def _anchor(e: dict[str, Any]) -> dict[str, Any]:
    return e["_meta"][KEY]


def _swap_sibling(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    step = next(s for x in _anchor(e)["files"] for s in x["steps"] if s["siblings"])
    step["siblings"][0] = "00" * 32


def _proof_of_another_file(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    files = _anchor(e)["files"]
    guide = next(x for x in files if x["path"] == "references/guide.md")
    run = next(x for x in files if x["path"] == "scripts/run.sh")
    guide["content"], guide["steps"] = run["content"], run["steps"]


def _drop_file(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    _anchor(e)["files"] = [x for x in _anchor(e)["files"] if x["path"] != "references/guide.md"]
    e["resources"] = [r for r in e["resources"] if not r["uri"].endswith("guide.md")]
    _f.pop("references/guide.md")


def _twice(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    files = _anchor(e)["files"]
    files.insert(0, copy.deepcopy(files[0]))
    e["resources"].insert(0, copy.deepcopy(e["resources"][0]))


def _path(bad: str) -> Callable[[dict[str, Any], dict[str, bytes]], None]:
    def change(e: dict[str, Any], _f: dict[str, bytes]) -> None:
        x = next(x for x in _anchor(e)["files"] if x["path"] == "references/guide.md")
        x["path"] = bad
        r = next(r for r in e["resources"] if r["uri"].endswith("guide.md"))
        r["uri"] = "skill://alpha/" + bad

    return change


def _folder_of_beta(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    _anchor(e)["folder"] = copy.deepcopy(_anchor(e["_beta"])["folder"])


def _lying_signer(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    _anchor(e)["signer"]["address"] = "0x" + "11" * 20


def _lying_role(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    s = _anchor(e)["signer"]
    s["role"] = "curator" if s["role"] != "curator" else "agent"


def _unsigned(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    _anchor(e)["signer"] = None


def _checksummed_signer(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    from eth_utils import to_checksum_address

    s = _anchor(e)["signer"]
    s["address"] = to_checksum_address(s["address"])
    assert s["address"] != s["address"].lower()


def _resource_swapped(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    e["resources"][0], e["resources"][1] = e["resources"][1], e["resources"][0]


def _resource_digest(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    e["resources"][-1]["digest"] = "sha256:" + "00" * 32


def _resource_size(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    e["resources"][-1]["size"] += 1


def _extra_resource(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    e["resources"].append({"uri": "skill://alpha/evil.sh", "digest": "sha256:" + "00" * 32, "size": 1})


def _count(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    step = _anchor(e)["files"][0]["steps"][0]
    step["count"], step["index"] = step["count"] + 1, step["index"]


def _index(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    step = _anchor(e)["folder"]["steps"][0]
    step["index"] = step["count"] + 7


def _oversize(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    one = _anchor(e)["files"][0]
    _anchor(e)["files"] = [dict(one, path=f"f{i:04d}") for i in range(513)]


def _uri(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    e["uri"] = "skill://beta/SKILL.md"


def _description(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    e["frontmatter"]["description"] = "Harmless. (The SKILL.md the host loads says otherwise.)"


def _allowed_tools(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    e["frontmatter"]["allowed-tools"] = "Read"  # what a host shows the user for approval: the bytes say nothing


def _frontmatter_name(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    e["frontmatter"]["name"] = "beta"


def _file_byte(e: dict[str, Any], f: dict[str, bytes]) -> None:
    f["scripts/run.sh"] = f["scripts/run.sh"].replace(b"alpha", b"pwned")


def _extra_file(e: dict[str, Any], f: dict[str, bytes]) -> None:
    f["scripts/evil.sh"] = b"#!/bin/sh\ncurl evil\n"


def _version(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    _anchor(e)["version"] = 99


def _prefix(e: dict[str, Any], _f: dict[str, bytes]) -> None:
    _anchor(e)["prefix"] = "references"


# name: (change, the verdict both verifiers must give; "xfail: why" when they do not agree today)
ATTACKS: dict[str, tuple[Callable[[dict[str, Any], dict[str, bytes]], None], str]] = {
    "untouched": (lambda e, f: None, "ok"),
    "a-sibling-swapped": (_swap_sibling, "refuse"),
    "the-proof-of-another-file": (_proof_of_another_file, "refuse"),
    "a-file-dropped-from-anchor-and-resources": (_drop_file, "refuse"),
    "a-file-listed-twice": (_twice, "refuse"),
    "a-path-with-dotdot": (_path("references/../guide.md"), "refuse"),
    "a-path-with-backslash": (_path("references\\guide.md"), "refuse"),
    "a-path-with-nul": (_path("references/guide\x00.md"), "refuse"),
    "a-path-in-another-case": (_path("References/guide.md"), "refuse"),
    "a-path-in-nfd": (_path("references/gu\u0069\u0308de.md"), "refuse"),
    "the-folder-proof-of-another-skill": (_folder_of_beta, "refuse"),
    "a-signer-that-lies": (_lying_signer, "refuse"),
    "a-role-that-lies": (_lying_role, "refuse"),
    "a-signed-commit-said-unsigned": (_unsigned, "refuse"),
    "resources-in-another-order": (_resource_swapped, "refuse"),
    "a-resource-more": (_extra_resource, "refuse"),
    "a-resource-digest-that-lies": (_resource_digest, "refuse"),
    "a-resource-size-that-lies": (_resource_size, "refuse"),
    "a-step-count-inflated": (_count, "refuse"),
    "a-folder-index-out-of-range": (_index, "refuse"),
    "513-files": (_oversize, "refuse"),
    "the-entry-uri-of-another-skill": (_uri, "refuse"),
    "a-prefix-into-a-supporting-folder": (_prefix, "refuse"),
    "a-file-byte-changed": (_file_byte, "refuse"),
    "a-file-more-on-disk": (_extra_file, "refuse"),
    "a-version-the-signed-skill-md-contradicts": (_version, "refuse"),
    "the-frontmatter-name-of-another-skill": (_frontmatter_name, "refuse"),
    "a-frontmatter-description-not-the-skill-md-s": (_description, "refuse"),
    "a-frontmatter-field-added": (_allowed_tools, "refuse"),
    "a-signer-address-in-checksum-case": (_checksummed_signer, "refuse"),
}


def _verdicts(tmp: Path, entry: dict[str, Any], files: dict[str, bytes], signer: str) -> tuple[int, int, str]:
    tmp.mkdir(parents=True, exist_ok=True)
    doc, folder = tmp / "entry.json", tmp / "files"
    doc.write_text(json.dumps(entry))
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    folder.mkdir(exist_ok=True)
    script = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(doc), "--signer", signer, "--files", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    mine = run_ledger("proof", "check", str(doc), "--signer", signer, "--files", str(folder), check=False)
    out, err = script.communicate(timeout=120)
    return mine.returncode, script.returncode, f"ledger: {mine.stdout}{mine.stderr}\nscript: {out}{err}"


def _cases() -> list[Any]:
    out = []
    for name, (_, want) in sorted(ATTACKS.items()):
        marks = [pytest.mark.xfail(strict=True, reason=want[7:])] if want.startswith("xfail") else []
        out.append(pytest.param(name, id=name, marks=marks))
    return out


@pytest.mark.parametrize("attack", _cases())
def test_both_verifiers_give_the_same_right_verdict_on_a_forged_entry(attack: str, brain: Path, tmp_path: Path) -> None:
    """A real served entry, forged one way, checked with a trusted signer and the files: ``ledger verify-proof``
    and ``scripts/verify-entry.py`` must both refuse it (exit 1), or both accept the untouched one (exit 0)."""
    entry, files = _alpha(brain)
    signer = _anchor(entry)["signer"]["address"]
    change, want = ATTACKS[attack]
    change(entry, files)
    entry.pop("_beta")
    mine, script, said = _verdicts(tmp_path, entry, files, signer)
    if want == "ok":
        assert (mine, script) == (0, 0), said
    else:
        assert (mine, script) == (1, 1), said


def test_an_untrusted_signer_or_another_root_is_refused_by_both(brain: Path, tmp_path: Path) -> None:
    entry, files = _alpha(brain)
    entry.pop("_beta")
    other = "0x" + "22" * 20
    assert _verdicts(tmp_path / "a", entry, files, other)[:2] == (1, 1)
    doc = tmp_path / "a" / "entry.json"
    root = "blake3-tree-v1:" + "ab" * 32
    mine = run_ledger("proof", "check", str(doc), "--root", root, check=False)
    script = subprocess.run(
        [sys.executable, str(SCRIPT), str(doc), "--root", root], capture_output=True, text=True, timeout=120
    )
    assert (mine.returncode, script.returncode) == (1, 1), (mine.stderr, script.stdout)
    unpinned = run_ledger("proof", "check", str(doc), check=False)  # no pin: only self-consistent, so refused
    assert unpinned.returncode == 2 and "say what you trust" in unpinned.stderr


def test_an_entry_with_a_member_named_twice_is_refused_by_both(brain: Path, tmp_path: Path) -> None:
    entry, files = _alpha(brain)
    entry.pop("_beta")
    signer = _anchor(entry)["signer"]["address"]
    _verdicts(tmp_path, entry, files, signer)
    doc = tmp_path / "entry.json"
    text = doc.read_text()
    doc.write_text(text.replace('"format": ', '"version": 7, "format": ', 1))  # "version" twice in the anchor
    mine = run_ledger("proof", "check", str(doc), "--signer", signer, check=False)
    script = subprocess.run(
        [sys.executable, str(SCRIPT), str(doc), "--signer", signer], capture_output=True, text=True, timeout=120
    )
    assert (mine.returncode, script.returncode) == (1, 1), (mine.stderr, script.stdout, script.stderr)


# ---------------------------------------------------------------------- a hostile discovery site


PDF = {
    "SKILL.md": b"---\nname: pdf-tools\ndescription: Work with PDF files.\n---\nRun scripts/run.sh.\n",
    "scripts/run.sh": b"#!/bin/sh\necho pdf\n",
    "references/r.md": b"Reference.\n",
}
NOTES = b"---\nname: notes\ndescription: Take notes.\n---\nWrite it down.\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    a = make_brain(root / "a", {"pdf-tools": PDF, "notes": {"SKILL.md": NOTES}}, via="cli")
    ledger(a, "export", "--discovery", str(root / "site"))
    return root / "site"


def _copy(site: Path, tmp: Path) -> Path:
    out = tmp / "site"
    shutil.copytree(site, out)
    return out


def _doc(site: Path) -> dict[str, Any]:
    return json.loads((site / BASE / "index.json").read_bytes())


def _republish(site: Path, name: str, data: bytes) -> None:
    doc = _doc(site)
    entry = next(s for s in doc["skills"] if s["name"] == name)
    (site / BASE / entry["url"]).write_bytes(data)
    entry["digest"] = "sha256:" + hashlib.sha256(data).hexdigest()
    (site / BASE / "index.json").write_text(json.dumps(doc))


def _pdf_files(site: Path) -> dict[str, bytes]:
    with tarfile.open(site / BASE / "pdf-tools.tar.gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def _tar(members: list[tarfile.TarInfo | tuple[str, bytes]], gz: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tar:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tar.addfile(m)
            else:
                info = tarfile.TarInfo(m[0])
                info.size, info.mode = len(m[1]), 0o755 if m[0].startswith("scripts/") else 0o644
                tar.addfile(info, io.BytesIO(m[1]))
    return buf.getvalue()


def _info(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def _with(site: Path, *extra: tarfile.TarInfo | tuple[str, bytes]) -> bytes:
    return _tar([*sorted(_pdf_files(site).items()), *extra])


def _gzip_bomb(site: Path, _t: Path) -> None:
    """A gzip of a few hundred kilobytes that inflates to 200 MB: the skill's own members, then one whose
    header claims 200 MB, then its zeros (no end-of-archive blocks before it)."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as gz:
        for rel, data in sorted(_pdf_files(site).items()):
            info = tarfile.TarInfo(rel)
            info.size, info.mode = len(data), 0o755 if rel.startswith("scripts/") else 0o644
            gz.write(info.tobuf(tarfile.GNU_FORMAT) + data + b"\0" * (-len(data) % 512))
        info = tarfile.TarInfo("references/huge.md")
        info.size = 200 * 1024 * 1024
        gz.write(info.tobuf(tarfile.GNU_FORMAT))
        zero = b"\0" * (1 << 20)
        for _ in range(200):
            gz.write(zero)
    _republish(site, "pdf-tools", out.getvalue())


def _many_members(site: Path, _t: Path) -> None:
    _republish(site, "pdf-tools", _with(site, *[(f"references/m{i:05d}.md", b"") for i in range(10_050)]))


def _anchor_of_the_other_skill(site: Path, _t: Path) -> None:
    shutil.copy(site / BASE / "notes.anchor.json", site / BASE / "pdf-tools.anchor.json")


def _anchor_renamed_inside(site: Path, _t: Path) -> None:
    path = site / BASE / "pdf-tools.anchor.json"
    doc = json.loads(path.read_bytes())
    doc[KEY]["skill"] = "notes"
    path.write_text(json.dumps(doc))


def _skill_md_named_otherwise(site: Path, _t: Path) -> None:
    (site / BASE / "notes.anchor.json").unlink()  # unanchored: the index and the file are all there is
    _republish(site, "notes", NOTES.replace(b"name: notes", b"name: pdf-tools"))


SITE_ATTACKS: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "an-absolute-member": (
        lambda s, _t: _republish(s, "pdf-tools", _with(s, ("/etc/cron.d/x", b"x"))),
        "leaves the skill's folder",
    ),
    "a-dotdot-member-deep": (
        lambda s, _t: _republish(s, "pdf-tools", _with(s, ("references/../../x", b"x"))),
        "leaves the skill's folder",
    ),
    "a-hardlink-to-etc-passwd": (
        lambda s, _t: _republish(s, "pdf-tools", _with(s, _info("references/pw", tarfile.LNKTYPE, "/etc/passwd"))),
        "references/pw",
    ),
    "a-hardlink-inside": (
        lambda s, _t: _republish(
            s, "pdf-tools", _with(s, _info("references/r2.md", tarfile.LNKTYPE, "references/r.md"))
        ),
        "references/r2.md is a link, which no anchored skill holds",
    ),
    "a-symlink-out": (
        lambda s, _t: _republish(s, "pdf-tools", _with(s, _info("references/out", tarfile.SYMTYPE, "../../../etc"))),
        "references/out",
    ),
    "a-character-device": (
        lambda s, _t: _republish(s, "pdf-tools", _with(s, _info("references/tty", tarfile.CHRTYPE))),
        "is not a file, folder or link",
    ),
    "a-fifo": (
        lambda s, _t: _republish(s, "pdf-tools", _with(s, _info("references/fifo", tarfile.FIFOTYPE))),
        "is not a file, folder or link",
    ),
    "a-member-twice": (lambda s, _t: _republish(s, "pdf-tools", _with(s, ("references/r.md", b"second\n"))), "twice"),
    "a-name-in-another-case": (
        lambda s, _t: _republish(s, "pdf-tools", _with(s, ("references/R.md", b"x\n"))),
        "references/R.md",
    ),
    "a-gzip-bomb": (_gzip_bomb, "references/huge.md is 209715200 bytes"),
    "over-ten-thousand-members": (_many_members, "more than 10000 entries"),
    "the-anchor-of-the-other-skill": (_anchor_of_the_other_skill, 'its anchor is for the skill "notes"'),
    "the-anchor-s-skill-renamed": (_anchor_renamed_inside, 'its anchor is for the skill "notes"'),
}


def _install(
    site: Path, tmp: Path, handler: type[SimpleHTTPRequestHandler] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, str], dict[str, str], Path]:
    b = tmp / "b"
    if not b.exists():
        make_brain(b, via="cli")
    before = fingerprint(b)
    with served(site, handler) as url:
        got = ledger(b, "install", url + "/", check=False)
    return got, before, fingerprint(b), b


@pytest.mark.parametrize("attack", sorted(SITE_ATTACKS))
def test_a_hostile_site_is_refused_by_name_and_the_brain_is_unchanged(attack: str, site: Path, tmp_path: Path) -> None:
    s = _copy(site, tmp_path)
    change, said = SITE_ATTACKS[attack]
    change(s, tmp_path)
    got, before, after, _ = _install(s, tmp_path)
    assert got.returncode == 1, got.stdout + got.stderr
    assert said in got.stderr, got.stderr
    assert after == before


def test_a_redirect_to_another_host_is_not_followed(site: Path, tmp_path: Path) -> None:
    """The archive's URL answers 302 to ``localhost`` (another host name for the same machine): not followed."""

    class Redirecting(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.endswith(".tar.gz"):
                port = self.server.server_address[1]
                self.send_response(302)
                self.send_header("Location", f"http://localhost:{port}{self.path}")
                self.end_headers()
                return
            super().do_GET()

    got, before, after, _ = _install(_copy(site, tmp_path), tmp_path, Redirecting)
    assert got.returncode == 1 and "redirects to another host" in got.stderr, got.stderr
    assert after == before


def test_a_body_in_a_transport_encoding_is_refused(site: Path, tmp_path: Path) -> None:
    """A server that gzips the index behind ``Content-Encoding`` (a transport bomb's carrier) is refused."""

    class Encoding(SimpleHTTPRequestHandler):
        def end_headers(self) -> None:
            if self.path.endswith("index.json"):
                self.send_header("Content-Encoding", "gzip")
            super().end_headers()

    got, before, after, _ = _install(_copy(site, tmp_path), tmp_path, Encoding)
    assert got.returncode == 1 and "Content-Encoding" in got.stderr, got.stderr
    assert after == before


def test_a_skill_md_that_names_another_skill_is_refused_at_install(site: Path, tmp_path: Path) -> None:
    s = _copy(site, tmp_path)
    _skill_md_named_otherwise(s, tmp_path)
    got, before, after, _ = _install(s, tmp_path)
    assert got.returncode == 1, got.stdout
    assert "pdf-tools" in got.stderr and after == before


def test_an_anchor_with_a_member_named_twice_is_refused_at_install(site: Path, tmp_path: Path) -> None:
    s = _copy(site, tmp_path)
    path = s / BASE / "pdf-tools.anchor.json"
    text = path.read_text()
    head = f'"{KEY}": {{'
    path.write_text(text.replace(head, head + '"commit": "' + "0" * 40 + '", ', 1))  # the first of two: not read
    assert text.count('"commit"') + 1 == path.read_text().count('"commit"')
    got, before, after, _ = _install(s, tmp_path)
    assert got.returncode == 1, got.stdout
    assert after == before


def test_a_valid_anchor_of_another_brain_for_the_same_name_pins_that_brain(site: Path, tmp_path: Path) -> None:
    """A site may serve another brain's (valid) anchor and files for the same skill name: that is the other
    brain's skill, proven into its root, and the install records that root and that signer, not the first
    brain's: a host that trusts a signer must compare the recorded signer (the anchor proves, it does not vouch)."""
    other = tmp_path / "other"
    run_ledger("init", str(other / "brain"), check=True)
    theirs = {**PDF, "references/r.md": b"The other brain's reference.\n"}
    ledger(other / "brain", "import", str(skill_tree(other / "src", {"pdf-tools": theirs})))
    ledger(other / "brain", "export", "--discovery", str(other / "site"))
    s = _copy(site, tmp_path)
    for name in ("pdf-tools.tar.gz", "pdf-tools.anchor.json"):
        shutil.copy(other / "site" / BASE / name, s / BASE / name)
    _republish(s, "pdf-tools", (s / BASE / "pdf-tools.tar.gz").read_bytes())
    got, _, _, b = _install(s, tmp_path)
    assert got.returncode == 0, got.stderr
    from ledger.brain import Brain

    with Brain.open(b) as brain:
        pin = brain.supply().skills["pdf-tools"]
    theirs_anchor = json.loads((other / "site" / BASE / "pdf-tools.anchor.json").read_bytes())[KEY]
    mine_anchor = json.loads((site / BASE / "pdf-tools.anchor.json").read_bytes())[KEY]
    assert pin.pin["root"] == theirs_anchor["root"] != mine_anchor["root"]
    assert pin.signer == theirs_anchor["signer"]["address"]  # (the suite's brains share one test key)
    assert (b / "skills/pdf-tools/references/r.md").read_bytes() == theirs["references/r.md"]


def _index_of(site: Path, name: str, data: bytes) -> None:
    """A v0.2.0 index at ``site`` of one archive skill ``name`` (no anchor): what any site may serve."""
    (site / BASE).mkdir(parents=True, exist_ok=True)
    (site / BASE / f"{name}.tar.gz").write_bytes(data)
    from ledger.publish.site import SCHEMA

    entry = {
        "name": name,
        "type": "archive",
        "description": "d",
        "url": f"{name}.tar.gz",
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
    }
    (site / BASE / "index.json").write_text(json.dumps({"$schema": SCHEMA, "skills": [entry]}))


SK = b"---\nname: pdf\ndescription: d\n---\nbody\n"


@pytest.mark.parametrize(
    "members",
    [
        [("SKILL.md", SK), ("references/r.md", b"good\n"), ("references/R.md", b"evil\n")],
        [("SKILL.md", SK), ("skill.md", b"---\nname: pdf\ndescription: another\n---\n")],
    ],
    ids=["two-names-in-one-case", "skill-md-in-two-cases"],
)
def test_an_unanchored_archive_with_case_colliding_names_is_refused(members: list, tmp_path: Path) -> None:
    _index_of(tmp_path / "site", "pdf", _tar(members))
    got, before, after, _ = _install(tmp_path / "site", tmp_path)
    assert got.returncode == 1 and "collide on a case-insensitive filesystem" in got.stderr, got.stderr
    assert after == before


def test_an_archive_with_a_file_and_a_folder_of_one_name_is_refused_clearly(tmp_path: Path) -> None:
    _index_of(
        tmp_path / "site", "pdf", _tar([("SKILL.md", SK), ("references", b"file\n"), ("references/r.md", b"x\n")])
    )
    got, before, after, _ = _install(tmp_path / "site", tmp_path)
    assert after == before and got.returncode == 1
    assert "Traceback" not in got.stderr and "references" in got.stderr, got.stderr


def _installed_from(site: Path, tmp: Path, url: str) -> Path:
    b = make_brain(tmp / "b", via="cli")
    ledger(b, "install", url + "/", "pdf-tools")
    return b


def test_an_update_that_drops_the_anchor_is_refused(site: Path, tmp_path: Path) -> None:
    s = _copy(site, tmp_path)
    with served(s) as url:
        b = _installed_from(s, tmp_path, url)
        (s / BASE / "pdf-tools.anchor.json").unlink()
        files = _pdf_files(s) | {"references/r.md": b"Reference, quietly changed.\n"}
        _republish(s, "pdf-tools", _tar(sorted(files.items())))
        before = fingerprint(b)
        got = ledger(b, "update", "pdf-tools", "--yes", check=False)
    assert got.returncode == 1, got.stdout
    assert fingerprint(b) == before


def test_a_revoked_version_is_not_served_as_the_gate_s_released_one(tmp_path: Path) -> None:
    from tests.interop.test_mcp_skills import CSV_V1, EVALS

    b = tmp_path / "brain"
    run_ledger("init", str(b), check=True)
    v1 = {"SKILL.md": CSV_V1.encode()}
    v2 = {
        "SKILL.md": CSV_V1.encode().replace(b"read the file", b"read the file twice"),
        "evals/evals.json": json.dumps(EVALS).encode(),
    }
    publish_index(tmp_path / "up", "csv-sum", v1)
    with served(tmp_path / "up") as url:
        ledger(b, "install", url, "csv-sum")
        ledger(b, "approve", "csv-sum")
        revoked = json.loads(ledger(b, "supply", "show", "csv-sum", "--json").stdout)["blake3"]
        ledger(b, "eval", "gate", "on")
        shutil.rmtree(tmp_path / "up")
        publish_index(tmp_path / "up", "csv-sum", v2)
        ledger(b, "update", "csv-sum", "--yes")
    ledger(b, "approve", "csv-sum")
    assert b"read the file twice" in (b / "skills/csv-sum/SKILL.md").read_bytes()  # the head is v2
    ledger(b, "revoke", revoked, "--reason", "v1 sends the CSV elsewhere")
    from ledger.brain import Brain
    from ledger.evals import gate

    with Brain.open(b) as brain:
        assert {n: (g.head, g.released) for n, g in gate.read(brain).items()} == {"csv-sum": (2, 1)}
    served_v1: list[str] = []

    async def body(raw: Raw) -> None:
        entries, _ = await _list_all(raw)
        for e in entries:
            for r in e["resources"]:
                data = _bytes((await raw("resources/read", {"uri": r["uri"]}))["contents"][0])
                if r["uri"].endswith("/SKILL.md") and b"read the file twice" not in data:
                    served_v1.append(r["uri"])

    _session(b, body)
    ledger(b, "export", "--discovery", str(tmp_path / "site"))
    exported = tmp_path / "site" / BASE / "csv-sum/SKILL.md"
    assert not served_v1, served_v1
    assert not (exported.exists() and b"read the file twice" not in exported.read_bytes())


def test_sync_takes_a_revoked_released_version_out_of_a_runtime_and_entries_say_why(tmp_path: Path) -> None:
    """``ledger sync`` picks a gated skill's released version by the same rule (``gate.releases``): a runtime
    folder that got v1 loses it once v1's digest is revoked while v2 waits for the gate, and is given nothing
    else; ``Entries.refused`` names the revocation and the fix."""
    from tests.interop.test_mcp_skills import CSV_V1, EVALS

    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    env = {"HOME": str(home), "HERMES_HOME": str(tmp_path / "hermes")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        got = run_ledger("--brain", str(b), *args, env=env)
        assert got.returncode == 0, got.stdout + got.stderr
        return got

    b = tmp_path / "brain"
    run_ledger("init", str(b), check=True, env=env)
    run("link", "claude")
    folder = home / ".claude/skills/csv-sum"
    v2 = {
        "SKILL.md": CSV_V1.encode().replace(b"read the file", b"read the file twice"),
        "evals/evals.json": json.dumps(EVALS).encode(),
    }
    publish_index(tmp_path / "up", "csv-sum", {"SKILL.md": CSV_V1.encode()})
    with served(tmp_path / "up") as url:
        run("install", url, "csv-sum")
        run("approve", "csv-sum")
        revoked = json.loads(run("supply", "show", "csv-sum", "--json").stdout)["blake3"]
        run("eval", "gate", "on")
        run("sync")
        assert b"read the file." in (folder / "SKILL.md").read_bytes()  # the runtime has v1
        shutil.rmtree(tmp_path / "up")
        publish_index(tmp_path / "up", "csv-sum", v2)
        run("update", "csv-sum", "--yes")
    run("approve", "csv-sum")
    run("sync")
    assert b"read the file twice" not in (folder / "SKILL.md").read_bytes()  # v2 is held: the runtime keeps v1
    run("revoke", revoked, "--reason", "v1 sends the CSV elsewhere")
    report = json.loads(run("sync", "--json").stdout)["targets"]
    assert not folder.exists()  # the revoked v1 is taken out, and the held v2 is not put in its place
    [held] = [h for t in report for h in t["held"]]
    assert held["shows"] is None and not held["kept"] and "revoked" in held["why"], held
    from ledger.brain import Brain
    from ledger.publish.entries import Entries

    with Brain.open(b) as brain:
        entries = Entries(brain)
        assert entries.list() == []
        why = entries.refused()["skill://csv-sum/SKILL.md"]
    assert "v1, is revoked" in why and "v1 sends the CSV elsewhere" in why and "ledger eval approve csv-sum@2" in why


def test_only_the_served_nested_skill_s_part_of_an_unserved_outer_folder_is_listed(brain: Path) -> None:
    """``resources/directory/read`` of an outer folder that is not a skill names only the way to the nested
    skill it serves, never the outer folder's own files."""

    async def body(raw: Raw) -> None:
        top = await raw("resources/directory/read", {"uri": "skill://outer"})
        assert [c["uri"] for c in top["resources"]] == ["skill://outer/inner"], top
        inner = await raw("resources/directory/read", {"uri": "skill://outer/inner"})
        assert [c["uri"] for c in inner["resources"]] == ["skill://outer/inner/SKILL.md"]

    _session(brain, body)


def test_an_update_to_an_older_signed_snapshot_is_refused(tmp_path: Path) -> None:
    a = tmp_path / "a"
    run_ledger("init", str(a), check=True)
    ledger(a, "import", str(skill_tree(tmp_path / "src", {"pdf-tools": PDF})))
    ledger(a, "export", "--discovery", str(tmp_path / "v1"))
    (tmp_path / "r.md").write_text("Reference, version 2: the fixed one.\n")
    ledger(a, "skill", "write-file", "pdf-tools", "references/r.md", "--from", str(tmp_path / "r.md"))
    ledger(a, "export", "--discovery", str(tmp_path / "v2"))
    versions = [
        json.loads((tmp_path / v / BASE / "pdf-tools.anchor.json").read_bytes())[KEY]["version"] for v in ("v1", "v2")
    ]
    assert versions == [1, 2]
    www = tmp_path / "www"
    shutil.copytree(tmp_path / "v2", www)
    with served(www) as url:
        b = _installed_from(www, tmp_path, url)
        shutil.rmtree(www)
        shutil.copytree(tmp_path / "v1", www)  # the site now serves the older, validly signed snapshot
        before = fingerprint(b)
        got = ledger(b, "update", "pdf-tools", "--yes", check=False)
    assert got.returncode == 1, got.stdout
    assert fingerprint(b) == before


def test_a_files_folder_holding_a_link_is_refused_by_both(brain: Path, tmp_path: Path) -> None:
    """The files a host checks are read as they are: a symlink standing in for a file (even to the right
    bytes) is refused by ``ledger verify-proof --files`` and by the stand-alone script."""
    entry, files = _alpha(brain)
    entry.pop("_beta")
    signer = _anchor(entry)["signer"]["address"]
    assert _verdicts(tmp_path, entry, files, signer)[:2] == (0, 0)
    guide = tmp_path / "files" / "references" / "guide.md"
    (tmp_path / "elsewhere.md").write_bytes(guide.read_bytes())
    guide.unlink()
    guide.symlink_to(tmp_path / "elsewhere.md")
    doc, folder = tmp_path / "entry.json", tmp_path / "files"
    mine = run_ledger("proof", "check", str(doc), "--signer", signer, "--files", str(folder), check=False)
    script = subprocess.run(
        [sys.executable, str(SCRIPT), str(doc), "--signer", signer, "--files", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (mine.returncode, script.returncode) == (1, 1), (mine.stderr, script.stdout)


def test_a_redirect_loop_on_the_same_host_is_cut(site: Path, tmp_path: Path) -> None:
    class Looping(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if "index.json" in self.path:
                self.send_response(302)
                self.send_header("Location", self.path + ("x" if "?" in self.path else "?x"))
                self.end_headers()
                return
            super().do_GET()

    got, before, after, _ = _install(_copy(site, tmp_path), tmp_path, Looping)
    assert got.returncode == 1 and "redirects more than 3 times" in got.stderr, got.stderr
    assert after == before


def _zip(members: list[tuple[str, bytes, int]]) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            zf.writestr(info, data)
    return buf.getvalue()


ZIPS: dict[str, tuple[list[tuple[str, bytes, int]], str]] = {
    "an-absolute-member": ([("SKILL.md", SK, 0o100644), ("/etc/x", b"x", 0o100644)], "leaves the skill's folder"),
    "a-dotdot-member": ([("SKILL.md", SK, 0o100644), ("a/../../x", b"x", 0o100644)], "leaves the skill's folder"),
    "a-symlink-out": ([("SKILL.md", SK, 0o100644), ("out", b"../../../etc/passwd", 0o120777)], "outside the skill"),
    "a-device": ([("SKILL.md", SK, 0o100644), ("tty", b"", 0o020666)], "is not a file, folder or link"),
    "a-member-twice": ([("SKILL.md", SK, 0o100644), ("SKILL.md", SK + b"more", 0o100644)], "twice"),
}


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize("attack", sorted(ZIPS))
def test_a_hostile_zip_archive_is_refused_and_the_brain_is_unchanged(attack: str, tmp_path: Path) -> None:
    members, said = ZIPS[attack]
    _index_of(tmp_path / "site", "pdf", _zip(members))
    got, before, after, _ = _install(tmp_path / "site", tmp_path)
    assert got.returncode == 1 and said in got.stderr, got.stderr
    assert after == before


def test_an_update_signed_by_another_key_is_refused_or_said(tmp_path: Path) -> None:
    a, c = tmp_path / "a", tmp_path / "c"
    run_ledger("init", str(a), check=True)
    ledger(a, "import", str(skill_tree(tmp_path / "src-a", {"pdf-tools": PDF})))
    ledger(a, "export", "--discovery", str(tmp_path / "site-a"))
    env = {"LEDGER_KEYS": str(tmp_path / "mallory-keys")}  # another machine's keys: another signer
    run_ledger("init", str(c), env=env, check=True)
    theirs = {**PDF, "references/r.md": b"Mallory's reference.\n"}
    src = skill_tree(tmp_path / "src-c", {"pdf-tools": theirs})
    run_ledger("--brain", str(c), "import", str(src), env=env, check=True)
    run_ledger("--brain", str(c), "export", "--discovery", str(tmp_path / "site-c"), env=env, check=True)
    old, new = (
        json.loads((tmp_path / s / BASE / "pdf-tools.anchor.json").read_bytes())[KEY]["signer"]["address"]
        for s in ("site-a", "site-c")
    )
    assert old != new
    www = tmp_path / "www"
    shutil.copytree(tmp_path / "site-a", www)
    with served(www) as url:
        b = _installed_from(www, tmp_path, url)
        shutil.rmtree(www)
        shutil.copytree(tmp_path / "site-c", www)
        before = fingerprint(b)
        got = ledger(b, "update", "pdf-tools", "--yes", check=False)
    said = old in got.stdout + got.stderr and new in got.stdout + got.stderr
    assert (got.returncode == 1 and fingerprint(b) == before) or said, got.stdout


SAMPLE = b"---\nname: a-sample\ndescription: A sample SKILL.md the scanner's tests read; not a skill.\n---\nSample.\n"


def test_an_anchor_carved_from_a_sub_folder_that_is_not_a_skill_is_refused(tmp_path: Path) -> None:
    a = tmp_path / "a"
    run_ledger("init", str(a), check=True)
    folder = {
        "SKILL.md": b"---\nname: scanner-tests\ndescription: Tests of a scanner.\n---\nSee fixtures/.\n",
        "fixtures/evil-sample/SKILL.md": SAMPLE,
    }
    ledger(a, "import", str(skill_tree(tmp_path / "src", {"scanner-tests": folder})))
    ledger(a, "export", "--discovery", str(tmp_path / "published"))
    outer = json.loads((tmp_path / "published" / BASE / "scanner-tests.anchor.json").read_bytes())[KEY]
    from ledger.brain import Brain
    from ledger.publish.entries import Entries

    with Brain.open(a) as brain:  # the brain does not serve the sample as a skill
        assert [e["uri"] for e in Entries(brain).list()] == ["skill://scanner-tests/SKILL.md"]
    carved = dict(
        outer,
        prefix="fixtures/evil-sample",
        files=[f for f in outer["files"] if f["path"].startswith("fixtures/evil-sample/")],
    )
    from ledger.errors import ProofError
    from ledger.publish.anchor import verify_anchor

    # without the bytes, only this: the sub-folder is whole and in the signed root (lineage/anchor.md §3)
    verify_anchor(carved)
    with pytest.raises(
        ProofError,
        match=r"'fixtures/evil-sample/SKILL\.md' names the skill \"a-sample\", not "
        r"'evil-sample'",
    ):
        verify_anchor(carved, {"SKILL.md": SAMPLE})  # its SKILL.md says which skill it is: not the prefix's
    site = tmp_path / "site"
    (site / BASE / "evil-sample").mkdir(parents=True)
    (site / BASE / "evil-sample/SKILL.md").write_bytes(SAMPLE)
    (site / BASE / "evil-sample.anchor.json").write_text(json.dumps({KEY: carved}))
    from ledger.publish.site import SCHEMA

    entry = {
        "name": "evil-sample",
        "type": "skill-md",
        "description": "d",
        "url": "evil-sample/SKILL.md",
        "digest": "sha256:" + hashlib.sha256(SAMPLE).hexdigest(),
    }
    (site / BASE / "index.json").write_text(json.dumps({"$schema": SCHEMA, "skills": [entry]}))
    b = tmp_path / "b"
    run_ledger("init", str(b), check=True)
    config = json.loads((b / ".ledger/config.json").read_text())
    config["supply"] = {"auto_approve": [outer["signer"]["address"]]}  # B trusts A's signer's clean skills
    (b / ".ledger/config.json").write_text(json.dumps(config))
    got, before, after, _ = _install(site, tmp_path)
    assert got.returncode == 1, got.stdout + got.stderr
    assert after == before


def _anchor_for_a_withheld_skill(
    public: dict[str, Any], name: str, files: dict[str, bytes], neighbour: str
) -> dict[str, Any]:
    """What anyone can build from a brain's PUBLIC anchor of ``neighbour`` and the bytes of a skill ``name`` they
    wrote (so know) which the brain installed and holds in quarantine: the withheld folder's digest and proofs
    by the bundle hash's public algorithm, and its one step to the root from the neighbour's published folder
    (the root has the two folders only, so each is the other's one sibling)."""
    from ledger.bundle.merkle import KIND_DIR, KIND_FILE, Digest, file_digest, leaf_hash, prove, tree_of

    node = tree_of({rel: Digest(KIND_FILE, file_digest(data)) for rel, data in files.items()})
    steps = public["folder"]["steps"]
    assert steps[0]["count"] == 2 and steps[0]["index"] == (0 if neighbour < name else 1)
    sibling = leaf_hash(KIND_DIR, neighbour, bytes.fromhex(public["folder"]["content"]))

    def steps_json(path: str) -> list[dict[str, Any]]:
        return [
            {"index": s.index, "count": s.count, "siblings": [h.hex() for h in s.siblings]}
            for s in prove(node, path).steps
        ]

    return dict(
        public,
        skill=name,
        prefix="",
        version=1,
        folder={
            "content": node.digest.hex(),
            "steps": [{"index": 1 - steps[0]["index"], "count": 2, "siblings": [sibling.hex()]}],
        },
        files=[
            {"path": rel, "kind": "file", "content": file_digest(files[rel]).hex(), "steps": steps_json(rel)}
            for rel in sorted(files, key=str.encode)
        ],
    )


def test_an_anchor_of_a_skill_the_signer_withholds_does_not_earn_its_trust(tmp_path: Path) -> None:
    a = tmp_path / "a"
    run_ledger("init", str(a), check=True)
    ledger(a, "import", str(skill_tree(tmp_path / "src", {"notes": {"SKILL.md": NOTES}})))
    evil = {"SKILL.md": b"---\nname: zz-helper\ndescription: Helps.\n---\nHelp the user.\n"}
    publish_index(tmp_path / "mallory", "zz-helper", evil)
    with served(tmp_path / "mallory") as url:
        ledger(a, "install", url, "zz-helper")  # A quarantines it: A never approves nor serves it
    assert json.loads(ledger(a, "supply", "show", "zz-helper", "--json").stdout)["state"] == "quarantined"
    ledger(a, "export", "--discovery", str(tmp_path / "published"))
    public = json.loads((tmp_path / "published" / BASE / "notes.anchor.json").read_bytes())[KEY]
    held = {
        p.relative_to(a / "skills/zz-helper").as_posix(): p.read_bytes()
        for p in (a / "skills/zz-helper").rglob("*")
        if p.is_file()
    }  # (bytes Mallory predicts)
    forged = _anchor_for_a_withheld_skill(public, "zz-helper", held, "notes")
    from ledger.publish.anchor import verify_anchor

    assert verify_anchor(forged, held).signer == public["signer"]["address"]  # valid: it IS in A's signed root
    site = tmp_path / "site"
    (site / BASE / "zz-helper").mkdir(parents=True)
    (site / BASE / "zz-helper/SKILL.md").write_bytes(held["SKILL.md"])
    (site / BASE / "zz-helper.anchor.json").write_text(json.dumps({KEY: forged}))
    from ledger.publish.site import SCHEMA

    entry = {
        "name": "zz-helper",
        "type": "skill-md",
        "description": "d",
        "url": "zz-helper/SKILL.md",
        "digest": "sha256:" + hashlib.sha256(held["SKILL.md"]).hexdigest(),
    }
    (site / BASE / "index.json").write_text(json.dumps({"$schema": SCHEMA, "skills": [entry]}))
    b = tmp_path / "b"
    run_ledger("init", str(b), check=True)
    config = json.loads((b / ".ledger/config.json").read_text())
    config["supply"] = {"auto_approve": [public["signer"]["address"]]}  # B trusts A's signer's clean skills
    (b / ".ledger/config.json").write_text(json.dumps(config))
    got, _, _, _ = _install(site, tmp_path)
    state = json.loads(ledger(b, "supply", "show", "zz-helper", "--json", check=False).stdout or "{}").get("state")
    assert got.returncode == 1 or state != "approved", got.stdout
