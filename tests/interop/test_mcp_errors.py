"""`ledger mcp` answers every request it cannot serve with the JSON-RPC 2.0 error the
specification names (ADR 16), never answers a notification, and keeps serving; and the
reference pages cannot drift from the code (docs/mcp-tools.md, docs/reference.md).

Each hostile line goes to one real server process over stdio (tests/harness/mcpwire.py); after
each, a ping must be the very next thing answered, so no reply is missing, none is extra,
and the server still reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger
from tests.harness.mcpwire import RawMcp

ROOT = Path(__file__).resolve().parents[2]
INVALID, PARSE, PARAMS = -32600, -32700, -32602
BATCH = "a message is one JSON object (MCP has no JSON-RPC batches since protocol 2025-06-18)"
NOT_A_REQUEST = "not a JSON-RPC 2.0 message: a request has a method and an id"
NOT_AN_ID = "the request's id is not a string or an integer (MCP: a request id is a string or an integer, never null)"
HUGE = "9" * 5000  # more digits than Python (and the SDK) read as an integer


class Raw:
    """A JSON number as the server wrote it: ids the server cannot carry are echoed as sent, byte for byte."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Raw) and other.text == self.text

    def __repr__(self) -> str:
        return f"Raw({self.text[:30]!r})"


def _int(text: str) -> Any:
    return int(text) if len(text) <= 4000 else Raw(text)


def _odd_id(raw: str) -> str:
    shown = raw if len(raw) <= 40 else f"{raw[:20]}…({len(raw)} characters)"
    return (
        f"request id {shown} is not a string or an integer the server can carry: send a string, or an integer "
        "of at most 4300 digits with no fraction or exponent"
    )


def error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


class Peer(RawMcp):
    """RawMcp whose replies keep numbers as written (``1e400`` is not ``inf``, a 5,000-digit id is read)."""

    def frame(self, timeout: float = 20) -> dict[str, Any] | None:
        return self.reply(timeout, loads=lambda line: json.loads(line, parse_float=Raw, parse_int=_int))

    def answer(self, line: bytes) -> list[dict[str, Any]]:
        """Send ``line``, then a ping: every frame that came before the ping's reply (which must come)."""
        self.send_raw(line)
        self.next_id += 1
        ping = self.next_id
        self.send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
        before = []
        while (msg := self.frame()) is not None:
            if msg.get("id") == ping and "result" in msg:
                return before
            before.append(msg)
        raise AssertionError(f"no answer to the ping after {line[:80]!r}: the server stopped serving; {before}")


def _req(ident: str, method: str = "ping", params: str | None = None) -> bytes:
    tail = f',"params":{params}' if params is not None else ""
    return f'{{"jsonrpc":"2.0","id":{ident},"method":"{method}"{tail}}}'.encode()


# (line sent, the one reply it must get)
ANSWERED: dict[str, tuple[bytes, dict[str, Any]]] = {
    # ids that are no id: answered with id null
    "id true": (_req("true"), error(None, INVALID, NOT_AN_ID)),
    "id false": (_req("false"), error(None, INVALID, NOT_AN_ID)),
    "id null": (_req("null"), error(None, INVALID, NOT_AN_ID)),
    "id {}": (_req("{}"), error(None, INVALID, NOT_AN_ID)),
    "id [1]": (_req("[1]"), error(None, INVALID, NOT_AN_ID)),
    # ids that are numbers the SDK cannot carry: refused, the id echoed exactly as written
    "id 1.5": (_req("1.5"), error(Raw("1.5"), INVALID, _odd_id("1.5"))),
    "id 1.0": (_req("1.0"), error(Raw("1.0"), INVALID, _odd_id("1.0"))),
    "id 1E2": (_req("1E2"), error(Raw("1E2"), INVALID, _odd_id("1E2"))),
    "id 1e400": (_req("1e400"), error(Raw("1e400"), INVALID, _odd_id("1e400"))),
    "id -2.5e-3": (_req("-2.5e-3"), error(Raw("-2.5e-3"), INVALID, _odd_id("-2.5e-3"))),
    "id of 5000 digits": (_req(HUGE), error(Raw(HUGE), INVALID, _odd_id(HUGE))),
    # not a request at all: id null
    "{}": (b"{}", error(None, INVALID, NOT_A_REQUEST)),
    "no method": (b'{"jsonrpc":"2.0","id":5}', error(None, INVALID, NOT_A_REQUEST)),
    "method 1, no id (the spec's example)": (
        b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}',
        error(None, INVALID, NOT_A_REQUEST),
    ),
    "jsonrpc only": (b'{"jsonrpc":"2.0"}', error(None, INVALID, NOT_A_REQUEST)),
    "batch": (b'[{"jsonrpc":"2.0","id":3,"method":"ping"}]', error(None, INVALID, BATCH)),
    "empty batch": (b"[]", error(None, INVALID, BATCH)),
    "a number": (b"3", error(None, INVALID, BATCH)),
    "a string": (b'"ping"', error(None, INVALID, BATCH)),
    "null": (b"null", error(None, INVALID, BATCH)),
    # not JSON: -32700, id null
    "not JSON": (
        b"{not json",
        error(None, PARSE, "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ),
    "NaN id": (_req("NaN"), error(None, PARSE, "not JSON: NaN is not JSON")),
    "Infinity": (_req("1", params='{"x":Infinity}'), error(None, PARSE, "not JSON: Infinity is not JSON")),
    "not UTF-8": (
        b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
        error(None, PARSE, "not JSON: 'utf-8' codec can't decode byte 0xff in position 34: invalid start byte"),
    ),
    # a request with a readable id and a wrong envelope: answered with its id
    "jsonrpc 1.0": (
        b'{"jsonrpc":"1.0","id":8,"method":"ping"}',
        error(8, INVALID, 'not a valid JSON-RPC 2.0 request: it has "jsonrpc": "2.0"'),
    ),
    "no jsonrpc": (
        b'{"id":"a","method":"ping"}',
        error("a", INVALID, 'not a valid JSON-RPC 2.0 request: it has "jsonrpc": "2.0"'),
    ),
    "method 5": (
        _req("9").replace(b'"ping"', b"5"),
        error(9, INVALID, "not a valid JSON-RPC 2.0 request: its method is a string"),
    ),
    "params 3": (
        _req("10", params="3"),
        error(10, INVALID, "not a valid JSON-RPC 2.0 request: its params are an object"),
    ),
    "positional params": (
        _req('"p"', params="[1]"),
        error("p", PARAMS, "params are an object of named members (MCP takes no positional params)"),
    ),
    "a lone surrogate in the id": (
        _req('"\\ud800"'),
        error("\ud800", INVALID, "the request's id holds a lone UTF-16 surrogate; send valid Unicode text"),
    ),
    # params the server could not carry on: -32602 with the id
    "an argument of 1e400": (
        _req("11", "tools/call", '{"name":"skill_view","arguments":{"name":1e400}}'),
        error(11, PARAMS, "params.arguments.name is 1e400: a number beyond the range of a double"),
    ),
    "an argument of 5000 digits": (
        _req("12", "tools/call", '{"name":"skill_view","arguments":{"name":' + HUGE + "}}"),
        error(12, PARAMS, "params.arguments.name is an integer of 5000 digits; the server reads at most 4300"),
    ),
    "a lone surrogate in an argument": (
        _req("13", "tools/call", '{"name":"skill_view","arguments":{"name":"\\udc00"}}'),
        error(13, PARAMS, "params.arguments.name holds a lone UTF-16 surrogate; send valid Unicode text"),
    ),
    "deep nesting, id read at the top": (
        _req("1.5e3", "x", "[" * 100 + "]" * 100),
        error(Raw("1.5e3"), INVALID, "message nests deeper than 64 levels"),
    ),
    # the SDK's own answer, once the line is whole
    "unknown method": (
        _req('"u"', "nosuch/method"),
        {
            "jsonrpc": "2.0",
            "id": "u",
            "error": {"code": -32601, "message": "Method not found", "data": "nosuch/method"},
        },
    ),
}

# Served: ids the SDK carries, echoed as sent.
SERVED = {
    "a 30-digit id": (_req("1" * 30), int("1" * 30)),
    "a 4000-digit id": (_req("7" * 4000), int("7" * 4000)),
    "a negative id": (_req("-4"), -4),
    "an empty string id": (_req('""'), ""),
}

# Notifications (no id) and responses are never answered, whole or not.
UNANSWERED = {
    "a notification": b'{"jsonrpc":"2.0","method":"notifications/nosuch"}',
    "a notification with params 3": b'{"jsonrpc":"2.0","method":"tools/call","params":3}',
    "a notification with positional params": b'{"jsonrpc":"2.0","method":"tools/call","params":[1]}',
    "a notification with a lone surrogate": b'{"jsonrpc":"2.0","method":"x","params":{"a":"\\ud800"}}',
    "a notification with 1e400": b'{"jsonrpc":"2.0","method":"x","params":{"a":1e400}}',
    "a notification of another version": b'{"jsonrpc":"1.0","method":"ping"}',
    "a notification without jsonrpc": b'{"method":"ping"}',
    "a response": b'{"jsonrpc":"2.0","id":"r","result":{}}',
    "a response with id 1.5": b'{"jsonrpc":"2.0","id":1.5,"result":{}}',
    "an error with id null": b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}',
    "an error without id": b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}',
    "a blank line": b"   ",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    brain = make_brain(tmp_path_factory.mktemp("mcp-errors") / "brain", via="cli")
    peer = Peer(brain)
    peer.initialize()
    try:
        yield peer
    finally:
        stderr = peer.close()
        assert "Traceback" not in stderr, stderr


@pytest.mark.parametrize("name", list(ANSWERED))
def test_a_request_it_cannot_serve_gets_the_named_error(server: Peer, name: str) -> None:
    line, want = ANSWERED[name]
    assert server.answer(line) == [want]


@pytest.mark.parametrize("name", list(SERVED))
def test_an_id_the_sdk_carries_is_served_and_echoed(server: Peer, name: str) -> None:
    line, ident = SERVED[name]
    assert server.answer(line) == [{"jsonrpc": "2.0", "id": ident, "result": {}}]


@pytest.mark.parametrize("name", list(UNANSWERED))
def test_a_notification_or_a_response_is_never_answered(server: Peer, name: str) -> None:
    assert server.answer(UNANSWERED[name]) == []


def test_hostile_lines_before_initialize_are_answered_and_the_session_still_starts(tmp_path: Path) -> None:
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    with Peer(brain) as peer:
        peer.send_raw(_req("1e400"))
        assert peer.frame() == error(Raw("1e400"), INVALID, _odd_id("1e400"))
        peer.send_raw(b"{}")
        assert peer.frame() == error(None, INVALID, NOT_A_REQUEST)
        assert peer.initialize()["serverInfo"]["name"] == "brain-ledger"
        listed = peer.request("tools/list")
        assert listed is not None and listed["result"]["tools"], listed
        stderr = peer.close()
    assert "Traceback" not in stderr, stderr


# --------------------------------------------------------------------------- the reference pages


def _documented_tools() -> dict[str, str]:
    """docs/mcp-tools.md: each tool's section (a '### `name`' heading), by name."""
    text = (ROOT / "docs" / "mcp-tools.md").read_text()
    parts = re.split(r"^### `([^`]+)`[^\n]*\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_tool_reference_lists_exactly_the_advertised_tools(server: Peer) -> None:
    """The doc cannot drift: the tools tools/list advertises, in its order, each with every argument named."""
    listed = server.request("tools/list")
    assert listed is not None and "result" in listed, listed
    tools = listed["result"]["tools"]
    documented = _documented_tools()
    assert list(documented) == [t["name"] for t in tools]
    for tool in tools:
        section = documented[tool["name"]]
        for arg in tool["inputSchema"].get("properties", {}):
            assert f"`{arg}`" in section, f"docs/mcp-tools.md: {tool['name']} does not document {arg!r}"
        for arg in tool["inputSchema"].get("required", []):
            assert re.search(rf"`{arg}`[^\n]*\| *required", section), f"{tool['name']}.{arg} is not marked required"


def _variables_in_code() -> set[str]:
    found = set()
    for top in ("ledger", "scripts"):
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".so", ".pyc", ".c"):
                found |= set(re.findall(r"\bLEDGER_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(errors="replace")))
    return found


def test_every_ledger_variable_in_the_code_is_in_the_reference() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text()
    named = _variables_in_code()
    assert {"LEDGER_KEYS", "LEDGER_BRAIN", "LEDGER_KEY_PASSPHRASE"} <= named  # the scan finds them
    missing = sorted(v for v in named if f"`{v}`" not in reference)
    assert not missing, f"docs/reference.md does not document {missing}"
    stale = sorted(set(re.findall(r"`(LEDGER_[A-Z0-9_]*[A-Z0-9])`", reference)) - named)
    assert not stale, f"docs/reference.md documents variables no code reads: {stale}"
