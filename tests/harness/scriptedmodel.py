"""A scripted model behind a local OpenAI-compatible endpoint, for driving a real agent runtime in tests.

The endpoint (``/v1/chat/completions``, streamed or not, and ``/v1/models``) serves 127.0.0.1 on a free port
through :func:`tests.harness.localhttp.serving`, so it is always shut down.  Every chat request is kept, whole, in
:attr:`ScriptedModel.requests`, so a test can read exactly the conversation the runtime sent.  The model's
turns come from a policy (a function of the request's messages); :func:`skill_policy` is the one the eval
runner tests use: it behaves like a model that follows the runtime's skill index.  The usage each answer
reports is a fixed function of the bytes exchanged, so a runner's token count can be checked against it.
It answers at most ``limit`` chat requests, then only a final text, so a runtime that loops stops.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from tests.harness.localhttp import serving

Message = dict[str, Any]
Policy = Callable[[list[Message]], Message]

_SKILLS = re.compile(r"<available_skills>\n(.*?)</available_skills>", re.DOTALL)
_LISTED = re.compile(r"^\s+- ([A-Za-z0-9][A-Za-z0-9._-]*)(?::|$)", re.MULTILINE)
_FENCE = re.compile(r"```(?:sh|bash)\n(.*?)```", re.DOTALL)
_SOLVE = re.compile(r"^solve:\s*(scripts/[A-Za-z0-9._/-]+)\s*$", re.MULTILINE)


def listed_skills(messages: list[Message]) -> list[str]:
    """The skill names a runtime's system prompt offers in its ``<available_skills>`` block (Hermes's index)."""
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    if isinstance(system, list):
        system = "".join(part.get("text", "") for part in system if isinstance(part, dict))
    block = _SKILLS.search(system)
    return _LISTED.findall(block.group(1)) if block else []


def _tool_call(name: str, arguments: dict[str, Any], n: int) -> Message:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def _called(messages: list[Message], tool_message: Message) -> str:
    """The name of the tool a tool result answers."""
    for m in messages:
        for call in m.get("tool_calls") or ():
            if call.get("id") == tool_message.get("tool_call_id"):
                return call["function"]["name"]
    return ""


def skill_policy(naive: str) -> Policy:
    """A model that loads a listed skill and runs the command its SKILL.md gives; with no skill listed, ``naive``.

    Turn 1: if the system prompt lists a skill, call ``skill_view`` on it; otherwise run ``naive`` with the
    ``terminal`` tool.  After a ``skill_view`` result: run the first ```` ```sh ```` block of the skill's text
    *as the runtime returned it* (so ``${HERMES_SKILL_DIR}`` is whatever the runtime put there), or else the
    script its ``solve: scripts/NAME`` line names, in the ``skill_dir`` the runtime reported.  After any
    other tool result: a final answer quoting it.
    """

    def policy(messages: list[Message]) -> Message:
        turn = sum(1 for m in messages if m.get("role") == "assistant") + 1
        last = messages[-1] if messages else {}
        if last.get("role") != "tool":
            skills = listed_skills(messages)
            if skills:
                return _tool_call("skill_view", {"name": skills[0]}, turn)
            return _tool_call("terminal", {"command": naive}, turn)
        if _called(messages, last) == "skill_view":
            try:
                viewed = json.loads(last["content"])
            except (TypeError, ValueError):
                viewed = {}
            content = str(viewed.get("content", ""))
            fence, solve = _FENCE.search(content), _SOLVE.search(content)
            if fence is not None:
                return _tool_call("terminal", {"command": fence.group(1).strip()}, turn)
            if solve is not None and viewed.get("skill_dir"):
                return _tool_call("terminal", {"command": f"python3 {viewed['skill_dir']}/{solve.group(1)}"}, turn)
            return {"role": "assistant", "content": "The skill gives no command to run."}
        return {"role": "assistant", "content": f"Done. The last tool said: {str(last.get('content'))[:300]}"}

    return policy


def _usage(messages: list[Message], answer: Message) -> dict[str, int]:
    prompt = len(json.dumps(messages, sort_keys=True)) // 4 + 1
    completion = len(json.dumps(answer, sort_keys=True)) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class ScriptedModel:
    """The model: a policy, the requests it was sent, and the usage it reported (thread-safe)."""

    def __init__(self, policy: Policy, *, name: str = "scripted", limit: int = 12) -> None:
        self.policy, self.name, self.limit = policy, name, limit
        self.requests: list[dict[str, Any]] = []
        self.usage: list[dict[str, int]] = []  # usage[i] is what requests[i] was answered with
        self._lock = threading.Lock()
        self._seen = 0

    def answer(self, request: dict[str, Any]) -> tuple[Message, dict[str, int]]:
        messages = request.get("messages") or []
        with self._lock:
            self._seen += 1
            over = self._seen > self.limit
        stop = {"role": "assistant", "content": "Stopping: the script's turn limit."}
        answer = stop if over else self.policy(messages)
        usage = _usage(messages, answer)
        with self._lock:
            self.requests.append(request)
            self.usage.append(usage)
        return answer, usage

    def total_tokens(self) -> int:
        with self._lock:
            return sum(u["total_tokens"] for u in self.usage)

    def tool_results(self) -> list[str]:
        """Every tool result the runtime sent back, in order (from the last request, which holds them all)."""
        with self._lock:
            last = self.requests[-1]["messages"] if self.requests else []
        return [str(m.get("content")) for m in last if m.get("role") == "tool"]

    def conversations(self) -> list[tuple[list[Message], int]]:
        """Each conversation the runtime held (one per run, runs one after another): its last request's
        messages and the tokens the endpoint reported over all its requests, in order.  A request with no
        assistant turn begins a conversation; any other continues the latest with the same opening two
        messages (system and user)."""
        with self._lock:
            pairs = [
                (r.get("messages") or [], u["total_tokens"]) for r, u in zip(self.requests, self.usage, strict=True)
            ]
        out: list[tuple[list[Message], int]] = []
        for messages, tokens in pairs:
            opening = messages[:2]
            if any(m.get("role") == "assistant" for m in messages):
                for i in range(len(out) - 1, -1, -1):
                    if out[i][0][:2] == opening:
                        out[i] = (messages, out[i][1] + tokens)
                        break
                else:
                    raise AssertionError(f"a request continues no conversation: {opening}")
            else:
                out.append((messages, tokens))
        return out

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        """Every tool call the model made, as the runtime sent them back, in order."""
        with self._lock:
            last = self.requests[-1]["messages"] if self.requests else []
        return [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in last
            for c in m.get("tool_calls") or ()
        ]


def _handler(model: ScriptedModel) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _json(self, obj: object, code: int = 200) -> None:
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json({"object": "list", "data": [{"id": model.name, "object": "model", "owned_by": "tests"}]})
            elif self.path.rstrip("/").endswith(f"/models/{model.name}"):
                self._json({"id": model.name, "object": "model", "owned_by": "tests"})
            else:
                self._json({"error": {"message": f"no {self.path}"}}, 404)

        def do_POST(self) -> None:
            # The runtime may be stopped while the model answers (the timeout test): then nobody is listening.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._post()

        def _post(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json({"error": {"message": f"no {self.path}"}}, 404)
                return
            request = json.loads(body or b"{}")
            answer, usage = model.answer(request)
            finish = "tool_calls" if answer.get("tool_calls") else "stop"
            head = {"id": f"chatcmpl-{len(model.requests)}", "created": 0, "model": model.name}
            if not request.get("stream"):
                self._json(
                    {
                        **head,
                        "object": "chat.completion",
                        "usage": usage,
                        "choices": [{"index": 0, "message": answer, "finish_reason": finish}],
                    }
                )
                return
            delta: dict[str, Any] = {"role": "assistant", "content": answer.get("content") or ""}
            if answer.get("tool_calls"):
                delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(answer["tool_calls"])]
            chunks = [
                {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                {"choices": [], "usage": usage},
            ]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(
                    b"data: " + json.dumps({**head, "object": "chat.completion.chunk", **chunk}).encode() + b"\n\n"
                )
            self.wfile.write(b"data: [DONE]\n\n")

    return Handler


@contextlib.contextmanager
def endpoint(model: ScriptedModel) -> Iterator[str]:
    """Serve ``model``; yield its OpenAI base URL (``http://127.0.0.1:PORT/v1``)."""
    with serving(_handler(model)) as url:
        yield f"{url}/v1"
