"""``ledger mcp``: the skill tools over MCP (stdio), on the official ``mcp`` SDK.

The server holds the brain open, so a call pays no start-up cost. Writes take
the brain's writer lock per call, so CLI writers can run beside it, and since
the head is re-read on each call the server sees their snapshots. A refusal
comes back as a tool error whose text is the JSON result, with the closest
lines or both matches of a failed patch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ledger.agent.tools import TOOLS, SkillTools
from ledger.brain import Brain

__all__ = ["serve"]


def serve(root: Path) -> None:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    brain = Brain.open(root)
    tools = SkillTools(brain)
    server = MCPServer(
        "brain-ledger",
        instructions="The agent's skills, as a verifiable ledger. Prefer improving a skill (patch) to creating one.",
    )

    def run(tool: str, args: dict[str, Any]) -> str:
        result = tools.call(tool, {k: v for k, v in args.items() if v is not None})
        text = json.dumps(result, indent=2, ensure_ascii=False)
        if not result["success"]:
            raise ToolError(text)
        return text

    @server.tool(name="skills_list", description="List every skill: name, description and version.")
    def skills_list() -> str:
        return run("skills_list", {})

    @server.tool(name="skill_view", description="Read a skill (or one file) with a receipt proving the version.")
    def skill_view(name: str, file_path: str | None = None) -> str:
        return run("skill_view", {"name": name, "file_path": file_path})

    @server.tool(name="skill_manage", description=TOOLS[2]["description"])
    def skill_manage(
        action: str,
        name: str,
        content: str | None = None,
        old_string: str | None = None,
        new_string: str | None = None,
        replace_all: bool | None = None,
        file_path: str | None = None,
        file_content: str | None = None,
        version: int | None = None,
        force: bool | None = None,
    ) -> str:
        return run("skill_manage", {"action": action, "name": name, "content": content, "old_string": old_string,
                                    "new_string": new_string, "replace_all": replace_all, "file_path": file_path,
                                    "file_content": file_content, "version": version, "force": force})  # fmt: skip

    @server.tool(name="skill_history", description="A skill's versions with roots, commits, actors and notes.")
    def skill_history(name: str) -> str:
        return run("skill_history", {"name": name})

    @server.tool(name="skill_diff", description="Unified diff of a skill's SKILL.md between two versions.")
    def skill_diff(name: str, from_version: int, to_version: int) -> str:
        return run("skill_diff", {"name": name, "from": from_version, "to": to_version})

    @server.resource("ledger://index", name="index", description="The Level-0 index: '▸ name: description' lines.")
    def index() -> str:
        return brain.index()

    @server.resource("ledger://skill/{name}", name="skill", description="A skill's SKILL.md at the head snapshot.")
    def skill(name: str) -> str:
        return tools.skill_view(name)["content"]

    try:
        server.run("stdio")
    finally:
        brain.close()
