"""`ledger mcp` as a real subprocess, driven by the official MCP SDK's own client."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from tests.harness.brains import make_brain
from tests.harness.cli import LEDGER, run_ledger

REVIEW = "---\nname: review\ndescription: Review a diff for bugs\n---\nStep one: read the diff.\nStep two: run tests.\n"


def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _json(result) -> dict:
    """The tool's JSON result (the SDK prefixes a tool error's text with 'Error executing tool …: ')."""
    text = _text(result)
    return json.loads(text[text.index("{") :])


def _new_server(tmp_path: Path):
    """A new brain, and the parameters that start `ledger mcp` on it for the official client."""
    from mcp import StdioServerParameters

    brain = make_brain(tmp_path / "brain", via="cli")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    return brain, StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env=env)


def test_mcp_server_end_to_end(tmp_path: Path) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    brain, params = _new_server(tmp_path)
    seen: dict[str, object] = {}

    async def session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            assert {"skills_list", "skill_view", "skill_manage", "skill_history", "skill_diff"} <= names
            created = await s.call_tool("skill_manage", {"action": "create", "name": "review", "content": REVIEW})
            assert not created.is_error, _text(created)
            patched = await s.call_tool(
                "skill_manage",
                {"action": "patch", "name": "review", "old_string": "run tests.", "new_string": "run all tests."},
            )
            assert not patched.is_error, _text(patched)
            bad = await s.call_tool(
                "skill_manage",
                {"action": "patch", "name": "review", "old_string": "Step one: read the dif.", "new_string": "x"},
            )
            assert bad.is_error
            failure = _json(bad)
            assert failure["closest"][0]["text"] == "Step one: read the diff."
            twice = await s.call_tool(
                "skill_manage", {"action": "patch", "name": "review", "old_string": "Step", "new_string": "Stage"}
            )
            matches = _json(twice)["matches"]
            assert twice.is_error and [m["context"][:5] for m in matches] == ["Step ", "Step "]
            outside = await s.call_tool(
                "skill_manage",
                {"action": "write_file", "name": "review", "file_path": "notes/x.md", "file_content": "x"},
            )
            assert outside.is_error and "outside the folders" in _text(outside)
            dup = await s.call_tool(
                "skill_manage",
                {"action": "create", "name": "reviews", "content": REVIEW.replace("name: review", "name: reviews")},
            )
            assert dup.is_error and _json(dup)["similar"] == "review"
            history = json.loads(_text(await s.call_tool("skill_history", {"name": "review"})))
            assert [v["version"] for v in history["versions"]] == [2, 1]
            reverted = await s.call_tool("skill_manage", {"action": "revert", "name": "review", "version": 1})
            assert not reverted.is_error, _text(reverted)
            diff = json.loads(_text(await s.call_tool("skill_diff", {"name": "review", "from": 1, "to": 2})))
            assert "+Step two: run all tests." in diff["diff"]
            view = json.loads(_text(await s.call_tool("skill_view", {"name": "review"})))
            seen["view"] = view
            # A CLI writer beside the running server; the server sees its snapshot.
            src = tmp_path / "cli.md"
            src.write_text("---\nname: cli-skill\ndescription: Written by a person at the CLI\n---\nbody\n")
            run_ledger("--brain", str(brain), "skill", "upsert", "--file", str(src), check=True)
            result = await s.call_tool("skills_list", {})
            listed = json.loads(_text(result))
            assert {x["name"] for x in listed["skills"]} == {"review", "cli-skill"}
            assert result.structured_content is None and not result.is_error  # a listing is sent once (ADR 28)
            index = await s.read_resource("ledger://index")
            assert "▸ cli-skill: Written by a person" in index.contents[0].text

    asyncio.run(asyncio.wait_for(session(), timeout=120))
    log = json.loads(run_ledger("--brain", str(brain), "log", "--json", check=True).stdout)
    actors = [(d["operation"], d["attribution"].get("actor")) for d in reversed(log)]
    assert actors == [
        ("init", "user"),
        ("create", "agent"),
        ("patch", "agent"),
        ("revert", "agent"),
        ("create", "user"),
    ]
    view = seen["view"]
    assert isinstance(view, dict)
    receipt = view["receipt"]
    assert receipt["version"] == 3 and receipt["root"] == log[1]["root"]
    proof = tmp_path / "proof.json"
    proof.write_text(json.dumps(receipt["proof"]))
    content = tmp_path / "skill.md"
    content.write_text(view["content"])
    ok = run_ledger("proof", "check", str(proof), "--root", receipt["root"], "--file", str(content))
    assert ok.returncode == 0, ok.stderr
    assert run_ledger("--brain", str(brain), "verify").returncode == 0


def test_tools_list_publishes_exactly_the_library_schemas(tmp_path: Path) -> None:
    """One tool surface: what a client sees is TOOLS and ANNOTATIONS as they are, and the server has a version."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    from ledger.agent.tools import ANNOTATIONS, TOOLS

    _, params = _new_server(tmp_path)
    got: dict[str, object] = {}

    async def session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            init = await s.initialize()
            got["version"] = init.server_info.version
            got["tools"] = [t.model_dump(by_alias=True, exclude_none=True) for t in (await s.list_tools()).tools]
            missing = await s.call_tool("skill_view", {"name": "nosuch"})
            got["missing"] = (missing.is_error, missing.structured_content)
            extra = await s.call_tool("skills_list", {"evil": 1})
            got["extra"] = (extra.is_error, extra.structured_content)

    asyncio.run(asyncio.wait_for(session(), timeout=120))
    published = [{k: t[k] for k in ("name", "description", "inputSchema", "annotations")} for t in got["tools"]]
    library = [
        {
            "name": t["name"],
            "description": t["description"],
            "inputSchema": t["parameters"],
            "annotations": ANNOTATIONS[t["name"]],
        }
        for t in TOOLS
    ]
    assert published == library
    assert got["version"] and got["version"] != "0+unknown"
    is_error, content = got["missing"]
    assert is_error and content["success"] is False and "nosuch" in content["error"]
    assert "ledger " not in content["hint"] and "skills_list" in content["hint"]  # a hint an agent can act on
    is_error, content = got["extra"]
    assert is_error and "evil" in content["error"]


def test_every_request_gets_an_answer_and_nothing_unchecked_runs(tmp_path: Path) -> None:
    """Requests the SDK alone left unanswered, arguments outside the schema, and missing resources."""
    from tests.harness.mcpwire import RawMcp

    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    src = tmp_path / "foo.md"
    src.write_text("---\nname: foo\ndescription: A skill to keep\n---\nbody\n")
    run_ledger("--brain", str(brain), "skill", "upsert", "--file", str(src), check=True)
    with RawMcp(brain) as server:
        server.initialize()
        server.send_raw(
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "skill_view", '
            b'"arguments": {"name": "\\ud800"}}}'
        )
        surrogate = server.reply_to(7)
        assert surrogate is not None and surrogate["error"]["code"] == -32602, surrogate
        deep = b"[" * 1000 + b"]" * 1000
        server.send_raw(
            b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "skill_view", '
            b'"arguments": {"name": ' + deep + b"}}}"
        )
        nested = server.reply_to(8)
        assert nested is not None and nested["error"]["code"] == -32600, nested
        server.send_raw(b"{not json")
        parse = server.reply()
        assert parse is not None and parse["id"] is None and parse["error"]["code"] == -32700
        evil = server.request(
            "tools/call", {"name": "skill_manage", "arguments": {"action": "delete", "name": "foo", "evil": 1}}
        )
        assert evil is not None and evil["result"]["isError"], evil
        assert "evil" in evil["result"]["structuredContent"]["error"]
        missing = server.request("resources/read", {"uri": "ledger://skill/nosuch"})
        assert missing is not None and missing["error"]["code"] == -32002, missing
        assert "nosuch" in missing["error"]["message"]
        found = server.request("resources/read", {"uri": "ledger://skill/foo"})
        assert found is not None and "A skill to keep" in found["result"]["contents"][0]["text"]
        assert server.request("ping") is not None  # still serving
        stderr = server.close()
    assert "Traceback" not in stderr, stderr
    # the extra property deleted nothing
    assert run_ledger("--brain", str(brain), "skill", "view", "foo").returncode == 0


def test_fuzzed_server_answers_every_request(tmp_path: Path) -> None:
    """Reduced: scripts/fuzz-mcp runs 10,000 and more (docs/RELIABILITY.md)."""
    from tests.harness.mcpwire import fuzz

    (tmp_path / "sentinel").write_text("outside the brain\n")
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    report = fuzz(brain, 600, seed=11, restart_every=300)
    assert report["unanswered"] == 0 and report["crashes"] == 0, report
    assert report["tracebacks"] == 0 and report["internal_errors"] == 0, report
    assert report["writes_outside"] == [], report
    assert run_ledger("--brain", str(brain), "verify").returncode == 0


def test_categories_through_the_mcp_client(tmp_path: Path) -> None:
    """Issue 19, item 3: Hermes's category argument lists, creates into and moves; absorbed_into is taken;
    the export places the skill by category; every write is signed by the agent runtime's key."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    from ledger.signatures import identity

    brain, params = _new_server(tmp_path)
    arxiv = "---\nname: arxiv\ndescription: Find papers on arXiv\n---\nSearch.\n"
    other = "---\nname: deploy\ndescription: Ship a release to production\n---\nShip.\n"

    async def session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            made = _json(
                await s.call_tool(
                    "skill_manage", {"action": "create", "name": "arxiv", "content": arxiv, "category": "research"}
                )
            )
            assert made["receipt"]["signer"] == identity.KeyDir(identity.keys_home()).peek("agent")
            await s.call_tool("skill_manage", {"action": "create", "name": "deploy", "content": other})
            listed = _json(await s.call_tool("skills_list", {"category": "research"}))
            assert [(x["name"], x["category"]) for x in listed["skills"]] == [("arxiv", "research")]
            moved = _json(
                await s.call_tool("skill_manage", {"action": "move", "name": "arxiv", "category": "research/papers"})
            )
            assert moved["receipt"]["operation"] == "move"
            assert [x["name"] for x in _json(await s.call_tool("skills_list", {"category": "research"}))["skills"]] == [
                "arxiv"
            ]  # research holds research/papers
            view = _json(await s.call_tool("skill_view", {"name": "research/papers/arxiv"}))
            assert view["name"] == "arxiv"
            bad = await s.call_tool("skill_manage", {"action": "move", "name": "arxiv", "category": "../x"})
            assert bad.is_error and "invalid category" in _text(bad)
            nowhere = await s.call_tool(
                "skill_manage", {"action": "delete", "name": "deploy", "absorbed_into": "nosuch"}
            )
            assert nowhere.is_error and "absorbed_into names no other skill" in _text(nowhere)
            gone = _json(
                await s.call_tool("skill_manage", {"action": "delete", "name": "deploy", "absorbed_into": "arxiv"})
            )
            assert gone["receipt"]["operation"] == "delete"

    asyncio.run(session())
    out = tmp_path / "out"
    run_ledger("--brain", str(brain), "export", str(out), "--layout", "hermes", check=True)
    assert (out / "research" / "papers" / "arxiv" / "SKILL.md").is_file() and not (out / "deploy").exists()
    log = run_ledger("--brain", str(brain), "log", "-n", "1", check=True).stdout
    assert "absorbed into arxiv" in log
    audit = run_ledger("audit", str(brain), "--require-signatures")
    assert audit.returncode == 0, audit.stdout


INIT = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
)


def test_ledger_mcp_starts_without_click_as_the_cli_would(tmp_path: Path) -> None:
    """`ledger [--brain DIR] mcp` is served before click loads (ADR 32): every spelling of the brain
    serves it, and a brain that does not open is reported exactly as the click command reports it."""
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    (brain / "skills" / "sub").mkdir()
    spellings = [
        (("--brain", str(brain), "mcp"), None, {}),
        ((f"--brain={brain}", "mcp"), None, {}),
        (("mcp",), brain / "skills" / "sub", {}),
        (("mcp",), tmp_path, {"LEDGER_BRAIN": str(brain)}),
    ]
    for args, cwd, env in spellings:
        proc = run_ledger(*args, cwd=cwd, env=env, input=INIT)
        assert proc.returncode == 0, (args, proc.stderr)
        assert json.loads(proc.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "brain-ledger", args
        assert f"ledger mcp: {brain}: " in proc.stderr  # the signer report
    (tmp_path / "a-file").write_text("x")
    refused = [
        (("--brain", str(tmp_path / "nope"), "mcp"), None, {}),
        (("--brain", str(tmp_path / "a-file"), "mcp"), None, {}),
        (("mcp",), tmp_path, {}),
        (("mcp",), tmp_path, {"LEDGER_BRAIN": ""}),
        (("--brain", str(brain), "--brain", str(brain), "mcp"), None, {}),
    ]
    for args, cwd, env in refused:
        quick = run_ledger(*args, cwd=cwd, env=env, input=INIT)
        full = run_ledger(*args, cwd=cwd, env={**env, "LEDGER_FULL_PATH": "1"}, input=INIT)
        assert (quick.returncode, quick.stdout, quick.stderr) == (full.returncode, full.stdout, full.stderr), args
