"""`ledger mcp` as a real subprocess, driven by the official MCP SDK's own client."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from tests.conftest import LEDGER, run_ledger

REVIEW = "---\nname: review\ndescription: Review a diff for bugs\n---\nStep one: read the diff.\nStep two: run tests.\n"


def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _json(result) -> dict:
    """The tool's JSON result (the SDK prefixes a tool error's text with 'Error executing tool …: ')."""
    text = _text(result)
    return json.loads(text[text.index("{") :])


def test_mcp_server_end_to_end(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    params = StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env=env)
    seen: dict[str, object] = {}

    async def session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            assert {"skills_list", "skill_view", "skill_manage", "skill_history", "skill_diff"} <= names
            created = await s.call_tool("skill_manage", {"action": "create", "name": "review", "content": REVIEW})
            assert not created.is_error, _text(created)
            patched = await s.call_tool("skill_manage", {"action": "patch", "name": "review",
                                                         "old_string": "run tests.", "new_string": "run all tests."})
            assert not patched.is_error, _text(patched)
            bad = await s.call_tool("skill_manage", {"action": "patch", "name": "review",
                                                     "old_string": "Step one: read the dif.", "new_string": "x"})
            assert bad.is_error
            failure = _json(bad)
            assert failure["closest"][0]["text"] == "Step one: read the diff."
            twice = await s.call_tool("skill_manage", {"action": "patch", "name": "review",
                                                       "old_string": "Step", "new_string": "Stage"})
            matches = _json(twice)["matches"]
            assert twice.is_error and [m["context"][:5] for m in matches] == ["Step ", "Step "]
            outside = await s.call_tool("skill_manage", {"action": "write_file", "name": "review",
                                                         "file_path": "notes/x.md", "file_content": "x"})
            assert outside.is_error and "outside the folders" in _text(outside)
            dup = await s.call_tool("skill_manage", {"action": "create", "name": "reviews", "content":
                                                     REVIEW.replace("name: review", "name: reviews")})
            assert dup.is_error and _json(dup)["similar"] == "review"
            history = json.loads(_text(await s.call_tool("skill_history", {"name": "review"})))
            assert [v["version"] for v in history["versions"]] == [2, 1]
            reverted = await s.call_tool("skill_manage", {"action": "revert", "name": "review", "version": 1})
            assert not reverted.is_error, _text(reverted)
            diff = json.loads(_text(await s.call_tool("skill_diff", {"name": "review", "from_version": 1,
                                                                     "to_version": 2})))
            assert "+Step two: run all tests." in diff["diff"]
            view = json.loads(_text(await s.call_tool("skill_view", {"name": "review"})))
            seen["view"] = view
            # A CLI writer beside the running server; the server sees its snapshot.
            src = tmp_path / "cli.md"
            src.write_text("---\nname: cli-skill\ndescription: Written by a person at the CLI\n---\nbody\n")
            run_ledger("--brain", str(brain), "skill", "upsert", "--file", str(src), check=True)
            listed = json.loads(_text(await s.call_tool("skills_list", {})))
            assert {x["name"] for x in listed["skills"]} == {"review", "cli-skill"}
            index = await s.read_resource("ledger://index")
            assert "▸ cli-skill: Written by a person" in index.contents[0].text

    asyncio.run(asyncio.wait_for(session(), timeout=120))
    log = json.loads(run_ledger("--brain", str(brain), "log", "--json", check=True).stdout)
    actors = [(d["operation"], d["attribution"].get("actor")) for d in reversed(log)]
    assert actors == [("init", "user"), ("create", "agent"), ("patch", "agent"), ("revert", "agent"),
                      ("create", "user")]  # fmt: skip
    view = seen["view"]
    assert isinstance(view, dict)
    receipt = view["receipt"]
    assert receipt["version"] == 3 and receipt["root"] == log[1]["root"]
    proof = tmp_path / "proof.json"
    proof.write_text(json.dumps(receipt["proof"]))
    content = tmp_path / "skill.md"
    content.write_text(view["content"])
    ok = run_ledger("verify-proof", str(proof), "--root", receipt["root"], "--file", str(content))
    assert ok.returncode == 0, ok.stderr
    assert run_ledger("--brain", str(brain), "verify").returncode == 0
