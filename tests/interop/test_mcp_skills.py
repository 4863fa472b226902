"""The MCP Skills extension (``io.modelcontextprotocol/skills``, ext-skills ``specification/stable/skills.mdx``)
on `ledger mcp`: a real subprocess, driven by the official MCP SDK client's low-level request API (the
extension's methods are not in its high-level client). Every server-side MUST of the spec is an assertion
here; each is named in a comment by the spec's section."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.brains import make_brain, skill_md
from tests.harness.cli import LEDGER, run_ledger

EXT = "io.modelcontextprotocol/skills"
INVALID_PARAMS = -32602
NAME = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?!-))*$")  # Agent Skills naming rules (and at most 64 characters)
BINARY = b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary, not UTF-8 \x80\x81"
ALPHA = (
    "---\nname: alpha\ndescription: Alpha does the first thing\nlicense: Apache-2.0\n"
    "metadata:\n  author: someone\n  tags: a, b\nallowed-tools: Bash(git:*)\n---\n"
    "# Alpha\n\nSee references/guide.md.\n"
)
INNER = "---\nname: inner\ndescription: A skill nested inside alpha\n---\nInner body.\n"
BULK = 230  # more than one page (skills_ext.PAGE)
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **ENV})


def _ledger(brain: Path, *args: str) -> str:
    return run_ledger("--brain", str(brain), *args, check=True).stdout


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A brain serving: alpha (supporting files in subfolders, a binary, an executable, a nested skill `inner`),
    BULK plain skills; withholding a quarantined (`translate`) and a revoked (`summarise`) install."""
    tmp = tmp_path_factory.mktemp("skills-ext")
    alpha = {
        "SKILL.md": ALPHA,
        "references/guide.md": "# Guide\r\nCRLF kept.\n",
        "references/inner/SKILL.md": INNER,
        "references/inner/notes.md": "inner notes\n",
        "assets/logo.png": BINARY,
        "scripts/run.sh": "#!/bin/sh\necho hi\n",  # executable
    }
    bulk = {
        f"bulk-{i:03d}": {"SKILL.md": skill_md(f"bulk-{i:03d}", f"Bulk skill {i}", f"Body {i}\n")} for i in range(BULK)
    }
    brain = make_brain(tmp / "brain", {"alpha": alpha, **bulk}, via="cli")
    # Two installs from an upstream repository: one left quarantined, one approved then revoked.
    up, bare = tmp / "up", tmp / "up.git"
    for name in ("summarise", "translate"):
        _write(up / "skills" / name, {"SKILL.md": f"---\nname: {name}\ndescription: Upstream {name}\n---\nDo it.\n"})
    _git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    _git(up, "init", "-q", "-b", "main")
    _git(up, "add", "-A")
    _git(up, "commit", "-qm", "skills")
    _git(up, "push", "-q", str(bare), "main")
    _ledger(brain, "install", str(bare))
    _ledger(brain, "approve", "summarise")
    shown = json.loads(_ledger(brain, "supply", "show", "summarise", "--json"))
    digest = shown.get("blake3") or shown["digests"]["blake3"]
    _ledger(brain, "revoke", digest, "--reason", "exfiltrates the clipboard")
    return brain


def _params(brain: Path):
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    return StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env=env)


class Raw:
    """The SDK client's low-level request API: any method, the result as the server sent it (a dict)."""

    def __init__(self, session: Any) -> None:
        self.s = session

    async def __call__(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        import mcp_types as types
        from pydantic import TypeAdapter

        request = types.Request[dict[str, Any], str](method=method, params=params or {})
        return await self.s.send_request(request, TypeAdapter(dict[str, Any]))

    async def error(self, method: str, params: dict[str, Any]) -> Any:
        from mcp.shared.exceptions import MCPError

        try:
            result = await self(method, params)
        except MCPError as exc:
            return exc.error
        raise AssertionError(f"{method} {params} answered {str(result)[:200]}, not an error")


def _frontmatter(text: str) -> dict[str, Any]:
    assert text.startswith("---\n"), text[:40]
    return yaml.safe_load(text[4 : text.index("\n---", 3)])


def _bytes(content: dict[str, Any]) -> bytes:
    return content["text"].encode() if "text" in content else base64.b64decode(content["blob"])


async def _list_all(raw: Raw) -> tuple[list[dict[str, Any]], int]:
    entries, cursor, pages = [], None, 0
    while True:
        page = await raw("skills/list", {"cursor": cursor} if cursor else {})
        pages += 1
        # Listing Skills: resultType "complete"; CacheableResult: ttlMs and cacheScope REQUIRED
        assert page["resultType"] == "complete" and isinstance(page["ttlMs"], int) and page["ttlMs"] >= 0
        assert page["cacheScope"] in ("public", "private")
        entries += page["skills"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return entries, pages
        assert isinstance(cursor, str) and cursor


def _served_files(brain: Path, skill: str) -> dict[str, bytes]:
    """The files of a served skill, as the brain's checked-out head has them (the brain is clean)."""
    folder = brain / "skills" / skill
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_host_reads_every_skill_and_file_as_the_spec_requires(brain: Path) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def session() -> None:
        async with stdio_client(_params(brain)) as (read, write), ClientSession(read, write) as s:
            init = await s.initialize()
            raw = Raw(s)
            caps = init.capabilities.model_dump(by_alias=True, exclude_none=True)
            # Capability Negotiation: the extension with directoryRead, and the resources capability (MUST)
            assert caps["extensions"][EXT] == {"directoryRead": True}
            assert "resources" in caps and "tools" in caps  # the tools stay

            entries, pages = await _list_all(raw)
            assert pages >= 2  # paginated: more skills than one page
            uris = [e["uri"] for e in entries]
            assert len(uris) == len(set(uris))  # an entry is atomic and listed once across pages
            listed = {e["uri"] for e in entries}
            expected = {f"skill://bulk-{i:03d}/SKILL.md" for i in range(BULK)} | {
                "skill://alpha/SKILL.md",
                "skill://alpha/references/inner/SKILL.md",
            }
            assert listed == expected  # withheld (quarantined translate, revoked summarise) not served
            names = [e["frontmatter"]["name"] for e in entries]
            tools_list = json.loads((await s.call_tool("skills_list", {})).content[0].text)
            assert {x["name"] for x in tools_list["skills"]} <= set(names)  # both surfaces: the same head

            for entry in entries:
                uri, fm, resources = entry["uri"], entry["frontmatter"], entry["resources"]
                # Resource Mapping: skill://<skill-path>/SKILL.md, final segment == frontmatter.name, naming rules
                assert uri.startswith("skill://") and uri.endswith("/SKILL.md")
                skill_path = uri[len("skill://") : -len("/SKILL.md")]
                assert skill_path.split("/")[-1] == fm["name"]
                assert NAME.match(fm["name"]) and len(fm["name"]) <= 64
                assert re.fullmatch(r"[A-Za-z0-9._~-]+", skill_path.split("/")[0])  # a reg-name (SHOULD)
                assert isinstance(fm["description"], str) and fm["description"]
                # Resources: an array, complete, each exactly once, including SKILL.md's own uri
                assert isinstance(resources, list)
                r_uris = [r["uri"] for r in resources]
                assert len(r_uris) == len(set(r_uris)) and uri in r_uris
                assert all(r.startswith(f"skill://{skill_path}/") for r in r_uris)
                # The trust anchor (docs/lineage/anchor.md) names exactly the files of `resources`
                anchor = entry["_meta"]["dev.brain-ledger/anchor"]
                assert anchor["format"] == "brain-ledger/skill-anchor/1" and uri.startswith(
                    f"skill://{anchor['skill']}/"
                )
                assert {f"skill://{anchor['skill']}/{f['path']}" for f in anchor["files"]} == set(r_uris)
                # Limits: a served skill stays within 512 resources and 16 MiB (SHOULD NOT exceed)
                assert len(resources) <= 512 and sum(r["size"] for r in resources) <= 16 * 1024 * 1024
                # skills/get: the same entry, resultType complete, cacheable, no cursor
                got = await raw("skills/get", {"uri": uri})
                assert got["resultType"] == "complete" and "ttlMs" in got and "cacheScope" in got
                assert "nextCursor" not in got and got["skill"] == entry
                for r in resources:
                    # Integrity: digest sha256:<64 lowercase hex> of the raw bytes, size their length
                    assert re.fullmatch(r"sha256:[0-9a-f]{64}", r["digest"]) and isinstance(r["size"], int)
                    result = await raw("resources/read", {"uri": r["uri"]})
                    [content] = result["contents"]
                    data = _bytes(content)
                    assert content["uri"] == r["uri"]
                    assert "sha256:" + hashlib.sha256(data).hexdigest() == r["digest"] and len(data) == r["size"]
                    if r["uri"].endswith(".md"):
                        assert content["mimeType"] == "text/markdown" and "text" in content
                    if r["uri"] == uri:
                        # Frontmatter: identical in content to the SKILL.md's
                        assert fm == _frontmatter(data.decode())
            by_uri = {e["uri"]: e for e in entries}
            # Completeness against the brain's own files; nested content is supporting content of alpha
            alpha = by_uri["skill://alpha/SKILL.md"]
            files = _served_files(brain, "alpha")
            assert {r["uri"] for r in alpha["resources"]} == {f"skill://alpha/{p}" for p in files}
            for r in alpha["resources"]:
                got = _bytes((await raw("resources/read", {"uri": r["uri"]}))["contents"][0])
                assert got == files[r["uri"][len("skill://alpha/") :]]  # exact bytes (CRLF, binary)
            logo = (await raw("resources/read", {"uri": "skill://alpha/assets/logo.png"}))["contents"][0]
            assert "blob" in logo and logo["mimeType"] == "image/png"
            assert alpha["frontmatter"]["allowed-tools"] == "Bash(git:*)"  # verbatim: every field the author wrote
            meta = alpha["frontmatter"]["metadata"]  # the author's keys kept (the ledger adds its version)
            assert (meta["author"], meta["tags"]) == ("someone", "a, b")
            # Nested Skills: published flat, its own entry with its own files only
            inner = by_uri["skill://alpha/references/inner/SKILL.md"]
            assert {r["uri"] for r in inner["resources"]} == {
                "skill://alpha/references/inner/SKILL.md",
                "skill://alpha/references/inner/notes.md",
            }

            # Reading Directories: every direct child, subdirectories as inode/directory; recursion finds all files
            async def walk(directory: str) -> set[str]:
                found: set[str] = set()
                result = await raw("resources/directory/read", {"uri": directory})
                assert result["resultType"] == "complete" and "nextCursor" not in result
                for child in result["resources"]:
                    assert child["uri"].startswith(directory + "/") and "/" not in child["uri"][len(directory) + 1 :]
                    assert child["name"] == child["uri"].rsplit("/", 1)[1]
                    if child["mimeType"] == "inode/directory":
                        found |= await walk(child["uri"])
                    else:
                        found.add(child["uri"])
                return found

            assert await walk("skill://alpha") == {r["uri"] for r in alpha["resources"]}
            assert await walk("skill://bulk-007") == {"skill://bulk-007/SKILL.md"}

            # Error Handling: -32602 for what is not served
            for method, params in (
                ("skills/get", {"uri": "skill://nosuch/SKILL.md"}),
                ("skills/get", {"uri": "skill://alpha/references/guide.md"}),  # not a SKILL.md
                ("skills/get", {"uri": "skill://translate/SKILL.md"}),  # quarantined
                ("skills/get", {"uri": "skill://summarise/SKILL.md"}),  # revoked
                ("resources/read", {"uri": "skill://translate/SKILL.md"}),
                ("resources/read", {"uri": "skill://summarise/SKILL.md"}),
                ("resources/read", {"uri": "skill://alpha/references/nosuch.md"}),
                ("resources/read", {"uri": "skill://nosuch/SKILL.md"}),
                ("resources/directory/read", {"uri": "skill://alpha/SKILL.md"}),  # a file, not a directory
                ("resources/directory/read", {"uri": "skill://alpha/nosuch"}),
                ("resources/directory/read", {"uri": "skill://translate"}),
                ("skills/list", {"cursor": "not-a-cursor"}),
                ("skills/list", {"cursor": base64.urlsafe_b64encode(b"skills-after:x").decode()}),
            ):
                err = await raw.error(method, params)
                assert err.code == INVALID_PARAMS and err.message, (method, params, err)
            unknown = await raw.error("skills/get", {"uri": "skill://nosuch/SKILL.md"})
            assert "skill://nosuch/SKILL.md" in unknown.message  # says what was not found
            # The ledger:// resources are unchanged
            index = await s.read_resource("ledger://index")
            assert "▸ alpha: Alpha does the first thing" in index.contents[0].text

    asyncio.run(asyncio.wait_for(session(), timeout=240))


def test_a_write_at_the_cli_shows_in_the_next_listing_and_a_cursor_spans_it(tmp_path: Path) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    src = tmp_path / "src"
    for i in range(BULK):
        _write(src, {f"s-{i:03d}/SKILL.md": f"---\nname: s-{i:03d}\ndescription: Skill {i}\n---\nBody\n"})
    _ledger(brain, "import", str(src))

    async def session() -> None:
        async with stdio_client(_params(brain)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            raw = Raw(s)
            first = await raw("skills/list", {})
            assert "nextCursor" in first
            _ledger(brain, "skill", "create", "a-new", "--description", "Written at the CLI", "--body", "x\n")
            _ledger(brain, "skill", "delete", "s-000")
            rest = await raw("skills/list", {"cursor": first["nextCursor"]})
            # the cursor continues after the last URI the page before gave: nothing repeated, nothing skipped
            before = [e["uri"] for e in first["skills"]]
            after = [e["uri"] for e in rest["skills"]]
            assert not set(before) & set(after) and after[-1] == f"skill://s-{BULK - 1:03d}/SKILL.md"
            entries, _ = await _list_all(raw)
            names = {e["frontmatter"]["name"] for e in entries}
            assert "a-new" in names and "s-000" not in names and len(names) == BULK
            got = await raw("skills/get", {"uri": "skill://a-new/SKILL.md"})
            assert got["skill"]["frontmatter"]["description"] == "Written at the CLI"
            gone = await raw.error("skills/get", {"uri": "skill://s-000/SKILL.md"})
            assert gone.code == INVALID_PARAMS

    asyncio.run(asyncio.wait_for(session(), timeout=180))


CASE = {
    "id": 1,
    "prompt": "Sum column 1",
    "expected_output": "the sum",
    "files": [],
    "assertions": ["`test -s $EVAL_OUTPUTS/sum.txt`"],
}
EVALS = {"skill_name": "csv-sum", "evals": [CASE]}
CSV_V1 = "---\nname: csv-sum\ndescription: Sum a CSV column.\n---\n# csv-sum\n\nStep one: read the file.\n"


def test_the_gate_serves_the_released_version_and_hides_a_skill_with_none(tmp_path: Path) -> None:
    """With ``eval.gate`` on, a host gets what a runtime gets: csv-sum's released v1 (its files, not v2's
    evals/evals.json, nor v3's patch), and word-count, whose first version waits for its evaluation, not at all."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    src = tmp_path / "src"
    _write(src, {"csv-sum/SKILL.md": CSV_V1})
    _ledger(brain, "import", str(src))
    v1 = (brain / "skills/csv-sum/SKILL.md").read_bytes()
    (tmp_path / "evals.json").write_text(json.dumps(EVALS))
    _ledger(brain, "skill", "write-file", "csv-sum", "evals/evals.json", "--from", str(tmp_path / "evals.json"))
    _ledger(brain, "eval", "gate", "on")
    _ledger(brain, "skill", "patch", "csv-sum", "--old", "Step one: read the file.", "--new", "Step one: guess.")
    new = tmp_path / "incoming"
    _write(
        new,
        {
            "word-count/SKILL.md": "---\nname: word-count\ndescription: Count words.\n---\nCount them.\n",
            "word-count/evals/evals.json": json.dumps({**EVALS, "skill_name": "word-count"}),
        },
    )
    _ledger(brain, "import", str(new))

    async def session() -> None:
        async with stdio_client(_params(brain)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            raw = Raw(s)
            entries, _ = await _list_all(raw)
            assert [e["uri"] for e in entries] == ["skill://csv-sum/SKILL.md"]
            [entry] = entries
            assert [r["uri"] for r in entry["resources"]] == ["skill://csv-sum/SKILL.md"]
            content = (await raw("resources/read", {"uri": "skill://csv-sum/SKILL.md"}))["contents"][0]
            assert _bytes(content) == v1
            assert entry["resources"][0]["digest"] == "sha256:" + hashlib.sha256(v1).hexdigest()
            for method, uri in (
                ("resources/read", "skill://csv-sum/evals/evals.json"),
                ("skills/get", "skill://word-count/SKILL.md"),
                ("resources/read", "skill://word-count/SKILL.md"),
                ("resources/directory/read", "skill://csv-sum/evals"),
            ):
                assert (await raw.error(method, {"uri": uri})).code == INVALID_PARAMS, (method, uri)

    asyncio.run(asyncio.wait_for(session(), timeout=120))


def test_the_2026_07_28_wire_carries_the_same_extension(tmp_path: Path) -> None:
    """The spec is written against protocol revision 2026-07-28; the SDK reaches it through ``server/discover``
    (the per-request envelope), where the declaration is the SDK's own and results carry ``resultType``."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    _ledger(brain, "skill", "create", "demo", "--description", "A demo skill", "--body", "Hello.\n")

    async def session() -> None:
        async with stdio_client(_params(brain)) as (read, write), ClientSession(read, write) as s:
            found = await s.discover()
            assert s.protocol_version == "2026-07-28"
            caps = found.capabilities.model_dump(by_alias=True, exclude_none=True)
            assert caps["extensions"][EXT] == {"directoryRead": True} and "resources" in caps
            raw = Raw(s)
            [entry] = (await raw("skills/list", {}))["skills"]
            got = await raw("skills/get", {"uri": entry["uri"]})
            assert got["skill"] == entry and got["resultType"] == "complete"
            read_ = await raw("resources/read", {"uri": entry["uri"]})
            assert read_["resultType"] == "complete" and {"ttlMs", "cacheScope"} <= read_.keys()
            data = _bytes(read_["contents"][0])
            assert entry["resources"][0]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
            children = await raw("resources/directory/read", {"uri": "skill://demo"})
            assert children["resultType"] == "complete"
            assert children["resources"] == [
                {"uri": "skill://demo/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown"}
            ]

    asyncio.run(asyncio.wait_for(session(), timeout=60))


REPO = Path(__file__).resolve().parents[2]


def test_the_official_typescript_host_reads_and_verifies_every_skill(brain: Path) -> None:
    """An outside implementation of the extension: the MCP TypeScript SDK's own ``SkillsClient``
    (``@modelcontextprotocol/client/ext/skills``, pinned in package-lock.json) lists every page, gets each
    entry, reads every file with its own size, digest and frontmatter checks, reads each skill's directory,
    refuses a forged digest, and gets -32602 for what the brain withholds."""
    host = REPO / "tests/js/skills_host.mjs"
    assert (REPO / "node_modules/@modelcontextprotocol/client/package.json").is_file(), "run scripts/bootstrap"
    withheld = ["skill://translate/SKILL.md", "skill://summarise/SKILL.md", "skill://nosuch/SKILL.md"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    proc = subprocess.run(
        ["node", str(host), LEDGER, str(brain), *withheld],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # It negotiates the handshake (2025-11-25) and still sees the declaration (ADR 63)
    assert out["protocolVersion"] == "2025-11-25" and out["supported"] and out["directoryRead"]
    assert out["invalid"] == [] and out["forged"] == "digest"
    uris = {s["uri"] for s in out["skills"]}
    assert len(uris) == BULK + 2 and "skill://alpha/references/inner/SKILL.md" in uris
    alpha_files = _served_files(brain, "alpha")
    for skill in out["skills"]:
        assert skill["same"] and skill["anchor"] == ["dev.brain-ledger/anchor"]
        assert skill["files"] and all(f["verified"] for f in skill["files"])
        [own] = [f for f in skill["files"] if f["uri"] == skill["uri"]]
        assert own["frontmatter"]["name"] == skill["uri"].split("/")[-2]  # the SDK's parse equals the entry's
        if skill["uri"] == "skill://alpha/SKILL.md":
            got = {f["uri"]: (f["size"], f["sha256"]) for f in skill["files"]}
            assert got == {
                f"skill://alpha/{p}": (len(d), "sha256:" + hashlib.sha256(d).hexdigest())
                for p, d in alpha_files.items()
            }
            assert ["skill://alpha/assets", "inode/directory"] in skill["children"]
    assert out["refused"] == dict.fromkeys(withheld, INVALID_PARAMS)


def test_the_wire_answers_every_malformed_extension_request(tmp_path: Path) -> None:
    """The extension's methods go through the same screened wire (ledger/agent/wire.py): each malformed
    request gets its error, with its id, and the server goes on serving."""
    from tests.harness.mcpwire import RawMcp

    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    _ledger(brain, "skill", "create", "demo", "--description", "A demo skill", "--body", "Hello.\n")
    with RawMcp(brain) as server:
        server.initialize()
        for method, params in (
            ("skills/get", None),
            ("skills/get", {"uri": 5}),
            ("skills/list", {"cursor": 5}),
            ("resources/directory/read", {}),
            ("skills/get", {"uri": "skill://d\ud800/SKILL.md"}),
            ("resources/read", {"uri": "skill://demo"}),
        ):
            got = server.request(method, params)
            assert got is not None and got["error"]["code"] == INVALID_PARAMS, (method, params, got)
        ok = server.request("skills/get", {"uri": "skill://demo/SKILL.md"})
        assert ok is not None and ok["result"]["skill"]["frontmatter"]["name"] == "demo"
        stderr = server.close()
    assert "Traceback" not in stderr, stderr


def test_the_operator_sees_each_skill_not_served_on_stderr(tmp_path: Path) -> None:
    """A skill the extension does not serve (spec-invalid frontmatter, a scalar YAML reads two ways) is one
    stderr line on the first listing, with its reason and fix; after a head change, the newly refused one."""
    from tests.harness.mcpwire import RawMcp

    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    src = tmp_path / "src"
    _write(
        src,
        {
            "good/SKILL.md": "---\nname: good\ndescription: Good.\n---\nGood.\n",
            "bad-meta/SKILL.md": "---\nname: bad-meta\ndescription: Bad.\nmetadata:\n  build: 7\n---\nBad.\n",
        },
    )
    _ledger(brain, "import", str(src))
    with RawMcp(brain) as server:
        server.initialize()
        got = server.request("skills/list", {})
        assert got is not None and [e["uri"] for e in got["result"]["skills"]] == ["skill://good/SKILL.md"]
        assert server.request("skills/list", {}) is not None  # the same head: nothing said twice
        _write(tmp_path / "more", {"two-ways/SKILL.md": "---\nname: two-ways\ndescription: Two.\non: yes\n---\n"})
        _ledger(brain, "import", str(tmp_path / "more"))
        assert server.request("skills/list", {}) is not None
        stderr = server.close()
    said = [ln for ln in stderr.splitlines() if ln.startswith("ledger mcp: not serving ")]
    assert said == [
        "ledger mcp: not serving skill://bad-meta/SKILL.md: its frontmatter does not conform to the Agent Skills "
        "spec: Field 'metadata.build' must be a string, not 7 (fix: quote it: build: '7')",
        next(ln for ln in said if ln.startswith("ledger mcp: not serving skill://two-ways/SKILL.md: ")),
    ], stderr
    assert "quote" in said[1]
