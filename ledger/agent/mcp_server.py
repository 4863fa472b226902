"""``ledger mcp``: the skill tools over MCP (stdio), on the official ``mcp`` SDK's low-level server.

One tool surface: ``tools/list`` publishes :data:`ledger.agent.tools.TOOLS` exactly (the
same input schemas, enums, descriptions and ``additionalProperties: false``) with
:data:`~ledger.agent.tools.ANNOTATIONS`, and every call goes through the same
dispatcher, which checks the arguments against that schema before anything runs.
A result carries its JSON both as text and as ``structuredContent`` (``skills_list``'s,
megabytes at 10,000 skills, as text only: ADR 28); a refusal is a tool error
(``isError``) with the same structure, whose hints name MCP tools.

The server holds the brain open, so a call pays no start-up cost. Calls run one at a
time in a worker thread, so the wire keeps answering (see :mod:`ledger.agent.wire`)
while a write waits for the brain's writer lock; each write takes that lock, so CLI
writers can run beside the server, and it sees their snapshots.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from ledger.agent.tools import ANNOTATIONS, TOOLS, SkillTools
from ledger.brain import Brain
from ledger.errors import LedgerError

__all__ = ["serve"]

RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for a resource that does not exist
_INDEX_URI, _SKILL_PREFIX = "ledger://index", "ledger://skill/"


def _version() -> str:
    try:
        return metadata.version("brain-ledger")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _report_signer(brain: Brain, failed: list[BaseException]) -> None:
    """Say on stderr, once at start-up, which key signs this server's writes, or why none can and
    whether writes are then refused (the policy ``signed``) or written unsigned (``open``).
    Run in a thread: what it raises is put in ``failed``, for the server to raise before it serves."""
    import sys

    try:
        who = brain.signer("agent")
    except BaseException as exc:  # raised again by the server before it serves
        failed.append(exc)
        return
    if who["address"] is not None:
        line = f"signing as agent {who['address']} (keys: {brain.keys_home}; policy {who['policy']})"
    elif who["policy"] == "signed":
        line = f"writes will be REFUSED: {who['why']} (policy signed). Fix: {who['hint']}"
    else:
        line = f"writes will be UNSIGNED: {who['why']} (policy open). Fix: {who['hint']}"
    print(f"ledger mcp: {brain.root}: {line}", file=sys.stderr, flush=True)


def _server_half_of_the_sdk() -> None:
    """Let ``mcp.server.*`` import without running the ``mcp`` and ``mcp.server`` package
    ``__init__`` modules, which load the SDK's client and its high-level ``MCPServer``
    (about 70 ms of the 430 ms the SDK takes to import, on every agent session's start).

    Each package is registered as a bare module with the installed package's search path,
    so its submodules are the SDK's own, unmodified.  A process that imported ``mcp``
    already keeps it.  ADR 16 (addendum) says why; the MCP tests drive this server
    with the official SDK client, so a release that breaks it fails them.
    """
    import importlib.util
    import sys
    import types as pytypes

    for name in ("mcp", "mcp.server"):
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            raise LedgerError(
                f"the MCP SDK is not installed ({name} not found)",
                hint="reinstall brain-ledger with its dependencies (scripts/bootstrap)",
            )
        shell = pytypes.ModuleType(name)
        shell.__path__ = list(spec.submodule_search_locations)
        shell.__spec__, shell.__file__ = spec, spec.origin
        sys.modules[name] = shell


def quick_serve(root: str) -> bool:
    """Serve the brain found at ``root`` by the fast path's ``mcp`` row (:mod:`ledger.fastpath.serve`),
    without click (ADR 32).  ``False``, with nothing read from stdin and nothing started, for a
    brain that does not open: click then does it again and reports as usual."""
    import sys

    try:
        brain = Brain.open(root)
    except (LedgerError, OSError, ValueError):
        return False
    try:
        serve(brain.root, brain)
    except LedgerError as exc:  # as the click group reports one
        print(exc.report(), file=sys.stderr)
        sys.exit(1)
    return True


def serve(root: Path, brain: Brain | None = None) -> None:
    """Serve ``root`` (or ``brain``, already open) until stdin ends; the brain is closed after."""
    import threading

    brain = brain or Brain.open(root)
    # The signer report reads the head and the keys: in a thread, while the SDK imports (ADR 32).
    failed: list[BaseException] = []
    signer = threading.Thread(target=_report_signer, args=(brain, failed), daemon=True)
    signer.start()
    try:
        _serve(brain, signer, failed)
    finally:
        signer.join()
        brain.close()


def _serve(brain: Brain, signer: Any, failed: list[BaseException]) -> None:
    _server_half_of_the_sdk()
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError

    from ledger.agent import skills_ext
    from ledger.agent.wire import Wire

    tools = SkillTools(brain)
    entries = skills_ext.Lazy(brain)  # the Skills extension's entries, of the same head the tools read
    one_at_a_time = anyio.CapacityLimiter(1)

    async def in_worker(fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args, limiter=one_at_a_time)

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t["name"],
                    description=t["description"],
                    input_schema=t["parameters"],
                    annotations=types.ToolAnnotations.model_validate(ANNOTATIONS[t["name"]]),
                )
                for t in TOOLS
            ]
        )

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result, text = await in_worker(tools.call_json, params.name, dict(params.arguments or {}))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=result,  # None (left out) for a listing, sent once as text (ADR 28)
            is_error=result is not None and not result["success"],
        )

    async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=_INDEX_URI,
                    name="index",
                    mime_type="text/plain",
                    description="The Level-0 index: '▸ name: description' lines.",
                ),
            ]
        )

    async def list_templates(_ctx: Any, _params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=_SKILL_PREFIX + "{name}",
                    name="skill",
                    mime_type="text/markdown",
                    description="A skill's SKILL.md at the head snapshot.",
                ),
            ]
        )

    def read(uri: str) -> tuple[str, str]:
        if uri == _INDEX_URI:
            return brain.listing_index(), "text/plain"  # the head's, as every agent read
        if uri.startswith(_SKILL_PREFIX):
            result = tools.call("skill_view", {"name": uri[len(_SKILL_PREFIX) :]})
            if result["success"] and "content" in result:
                return result["content"], "text/markdown"
            raise MCPError(
                RESOURCE_NOT_FOUND,
                f"no resource {uri}: {result.get('error', 'not text')}",
                {"uri": uri, "hint": "list the skills with skills_list"},
            )
        raise MCPError(RESOURCE_NOT_FOUND, f"no resource {uri}", {"uri": uri, "hint": f"read {_INDEX_URI}"})

    async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri.startswith(skills_ext.SCHEME):  # a skill's file: the Skills extension's, -32602 if not served
            text, data, mime = await skills_ext.answer(in_worker, skills_ext.read, entries, uri)
            return types.ReadResourceResult(contents=[skills_ext.contents(uri, text, data, mime)])
        try:
            text, mime = await in_worker(read, uri)
        except LedgerError as exc:
            raise MCPError(RESOURCE_NOT_FOUND, f"{uri}: {exc.message}", {"uri": uri}) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime)])

    server: Server[Any] = Server(
        "brain-ledger",
        version=_version(),
        instructions="The agent's skills, as a verifiable ledger. Prefer improving a skill (patch) to creating one.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
    skills_ext.register(server, entries, in_worker)

    async def main() -> None:
        wire = Wire()
        async with stdio_server(stdin=wire, stdout=wire) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, server.create_initialization_options())

    signer.join()  # before the first frame is read: a call may write, and its report came first
    if failed:
        raise failed[0]
    anyio.run(main)
