"""The MCP Skills extension (``io.modelcontextprotocol/skills``) on ``ledger mcp``: thin handlers over
:class:`ledger.publish.entries.Entries`.

The extension (``specification/stable/skills.mdx`` in ``modelcontextprotocol/ext-skills``) adds
``skills/list`` (paginated), ``skills/get`` and ``resources/directory/read`` to the base protocol, and
serves every file of a skill as a ``skill://<name>/<path>`` resource read with ``resources/read``. The
entries, their bytes and what is withheld (quarantined, revoked, held back by the evaluation gate) are
the publish package's; this module only shapes them for the wire, pages them and turns a URI the brain
does not serve into the spec's ``-32602`` (Invalid params). docs/mcp-tools.md describes the surface,
ADR 63 the choices (page size, cursor form).

Every call runs in the server's one worker, as a tool call does, so the wire keeps answering while a
call reads, and the extension and the tools read the same head.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ledger.errors import LedgerError

__all__ = ["EXTENSION", "PAGE", "SCHEME", "Lazy", "answer", "contents", "read", "register"]

EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
SETTINGS = {"directoryRead": True}  # resources/directory/read is served
PAGE = 200  # skills per skills/list page (ADR 63): a page at 10,000 skills answers well under 25 ms warm
INVALID_PARAMS = -32602  # the spec's code for a URI not served and a cursor not ours (JSON-RPC Invalid params)
TTL_MS = 0  # the brain changes whenever a CLI or agent writes: an entry is current only as it is read
SCOPE = "private"  # a brain is one user's; a shared cache must not serve it to another
_CURSOR_TAG = "skills-after:"  # the cursor: base64url of this tag and the URI the page before ended with


def _text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 that round-trips to the same bytes, else ``None`` (sent as a blob)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def encode_cursor(after: str) -> str:
    return base64.urlsafe_b64encode((_CURSOR_TAG + after).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The URI a cursor continues after; an ``McpInvalid`` for a cursor this server did not write."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raw = ""
    if not raw.startswith(_CURSOR_TAG) or not raw[len(_CURSOR_TAG) :].startswith(SCHEME):
        raise Invalid(
            f"invalid cursor {cursor!r}: not one this server wrote; "
            "start again without a cursor and pass back only the nextCursor a result gave"
        )
    return raw[len(_CURSOR_TAG) :]


class Invalid(LedgerError):
    """A request naming what this server does not serve: answered with -32602 (Invalid params)."""


class _Pages:
    """Pages of a list of dicts keyed by ``uri``, continued after the URI a cursor names (so a listing
    that spans a write neither repeats nor skips an entry that stayed). The sorted keys are kept for the
    last list seen: ``Entries`` keeps its entries per head and skill tree, so the same listing is the same
    objects, and a warm page is an identity check, a bisect and a slice."""

    def __init__(self) -> None:
        self._of: Sequence[dict[str, Any]] | None = None
        self._keys: list[str] = []
        self._order: list[dict[str, Any]] = []

    def page(self, items: Sequence[dict[str, Any]], cursor: str | None, size: int) -> tuple[list, str | None]:
        kept = self._of
        if kept is None or len(items) != len(kept) or any(a is not b for a, b in zip(items, kept, strict=True)):
            self._order = sorted(items, key=lambda e: e["uri"])
            self._keys = [e["uri"] for e in self._order]
            self._of = items
        start = 0 if cursor is None else bisect.bisect_right(self._keys, decode_cursor(cursor))
        chunk = self._order[start : start + size]
        more = start + size < len(self._order)
        return chunk, encode_cursor(chunk[-1]["uri"]) if more and chunk else None


def _cacheable(result: dict[str, Any]) -> dict[str, Any]:
    """The spec's ``resultType`` and ``CacheableResult`` fields, on every extension result."""
    return {"resultType": "complete", **result, "ttlMs": TTL_MS, "cacheScope": SCOPE}


def register(server: Any, entries: Any, in_worker: Callable[..., Awaitable[Any]], *, page: int = PAGE) -> None:
    """Declare the extension on ``server`` (``mcp.server.lowlevel.Server``) and add its three methods.
    ``entries`` is the brain's :class:`~ledger.publish.entries.Entries`; ``in_worker`` runs a call in the
    server's one worker (the tools' limiter). ``resources/read`` of a ``skill://`` URI is :func:`read`,
    which the server's own read handler calls."""
    import mcp_types as types
    from pydantic import Field

    server.extensions[EXTENSION] = SETTINGS

    async def declare_on_the_handshake(ctx: Any, call_next: Any) -> Any:
        """The SDK advertises ``server.extensions`` on the 2026-07-28 wire (``server/discover``) only: its
        2025-11-25 surface has no ``extensions`` and sieves it out of ``initialize``. A host on the
        handshake must see the declaration before it calls ``skills/list`` (the spec), so it is put
        back into that answer's capabilities, exactly as the newer wire carries it."""
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict) and isinstance(result.get("capabilities"), dict):
            result["capabilities"].setdefault("extensions", {}).setdefault(EXTENSION, dict(SETTINGS))
        return result

    server.middleware.append(declare_on_the_handshake)

    class GetSkillParams(types.RequestParams):
        uri: str = Field(description="URI of the skill's SKILL.md")

    class DirectoryParams(types.PaginatedRequestParams):
        uri: str = Field(description="URI of the directory resource to read")

    skills, children = _Pages(), _Pages()
    told: set[tuple[str, str]] = set()
    seen = [-1]

    def tell_refused() -> None:
        """One stderr line per skill the brain does not serve for a reason of the spec (with the fix), on the
        first listing and again after the head changes, for what is newly refused: never silent."""
        if entries.generation == seen[0]:
            return
        seen[0] = entries.generation
        for uri, why in entries.refused().items():
            if (uri, why) not in told:
                told.add((uri, why))
                print(f"ledger mcp: not serving {uri}: {why}", file=sys.stderr, flush=True)

    def list_page(cursor: str | None) -> dict[str, Any]:
        listed = entries.list()
        tell_refused()
        chunk, after = skills.page(listed, cursor, page)
        return _cacheable({"skills": chunk, **({"nextCursor": after} if after else {})})

    def directory_page(uri: str, cursor: str | None) -> dict[str, Any]:
        if not uri.startswith(SCHEME):
            raise Invalid(f"{uri} is not a directory resource this server serves (only {SCHEME} ones)")
        found = entries.children(uri)
        chunk, after = children.page(found, cursor, page)
        return {"resultType": "complete", "resources": chunk, **({"nextCursor": after} if after else {})}

    async def on_list(_ctx: Any, params: types.PaginatedRequestParams) -> dict[str, Any]:
        return await answer(in_worker, list_page, params.cursor)

    async def on_get(_ctx: Any, params: GetSkillParams) -> dict[str, Any]:
        return await answer(in_worker, lambda uri: _cacheable({"skill": entries.get(uri)}), params.uri)

    async def on_directory(_ctx: Any, params: DirectoryParams) -> dict[str, Any]:
        return await answer(in_worker, directory_page, params.uri, params.cursor)

    server.add_request_handler("skills/list", types.PaginatedRequestParams, on_list)
    server.add_request_handler("skills/get", GetSkillParams, on_get)
    server.add_request_handler("resources/directory/read", DirectoryParams, on_directory)


async def answer(in_worker: Callable[..., Awaitable[Any]], fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in the worker; a :class:`LedgerError` (a URI or cursor the brain does not serve)
    becomes the spec's -32602 with the error's message and hint."""
    from mcp.shared.exceptions import MCPError

    try:
        return await in_worker(fn, *args)
    except LedgerError as exc:
        data = {"hint": exc.hint} if getattr(exc, "hint", None) else None
        raise MCPError(INVALID_PARAMS, exc.message, data) from None


class Lazy:
    """The brain's :class:`~ledger.publish.entries.Entries`, made on the first extension call (in the worker),
    so the entries and their anchors' code load then, not on every server's start (ADR 32)."""

    def __init__(self, brain: Any) -> None:
        self.brain = brain
        self._entries: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._entries is None:
            from ledger.publish.entries import Entries

            self._entries = Entries(self.brain)
        return getattr(self._entries, name)


def read(entries: Any, uri: str) -> tuple[str | None, bytes, str]:
    """``resources/read`` of a ``skill://`` file: (text, bytes, mimeType); ``text`` is ``None`` for bytes
    that are not UTF-8, which go as a base64 blob. Raises :class:`LedgerError` for a file not served."""
    from ledger.publish.entries import mime_type

    data = entries.read(uri)
    text = _text(data)
    return text, data, mime_type(uri)


def contents(uri: str, text: str | None, data: bytes, mime: str) -> Any:
    """The one ``contents`` item of a ``resources/read`` result: the exact bytes, as text or as a blob."""
    import mcp_types as types

    if text is not None:
        return types.TextResourceContents(uri=uri, text=text, mime_type=mime)
    return types.BlobResourceContents(uri=uri, blob=base64.b64encode(data).decode("ascii"), mime_type=mime)
