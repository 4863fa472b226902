"""A raw JSON-RPC peer for ``ledger mcp``: sends any bytes, and waits (bounded) for each reply.

The official client cannot send a malformed message, so the wire tests and the fuzzer
(``scripts/fuzz-mcp``) use this instead; everything else uses the SDK's own client.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.harness import procs

LEDGER = str(Path(sys.executable).with_name("ledger"))


class RawMcp:
    def __init__(self, brain: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
        self.proc = subprocess.Popen(
            [LEDGER, "--brain", str(brain), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        self._buf = b""
        self.next_id = 1000

    def __enter__(self) -> RawMcp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> str:
        """Stop the server (its whole group, if closing its input did not); its stderr."""
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        procs.kill(self.proc, close=False)  # a no-op once it has exited
        return self.proc.stderr.read().decode(errors="replace")  # type: ignore[union-attr]

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def send(self, doc: dict[str, Any]) -> None:
        self.send_raw(json.dumps(doc).encode())

    def reply(self, timeout: float = 20, loads: Callable[[bytes], Any] = json.loads) -> dict[str, Any] | None:
        """The next message from the server (read by ``loads``), or None if none came in ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)  # type: ignore[union-attr]
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return loads(line)

    def reply_to(self, ident: Any, timeout: float = 20) -> dict[str, Any] | None:
        """The reply with this id (notifications and other replies in between are skipped)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            msg = self.reply(left)
            if msg is None:
                return None
            if msg.get("id") == ident and ("result" in msg or "error" in msg):
                return msg
        return None

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 20) -> dict[str, Any] | None:
        self.next_id += 1
        doc: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            doc["params"] = params
        self.send(doc)
        return self.reply_to(self.next_id, timeout)

    def initialize(self) -> dict[str, Any]:
        from mcp_types.version import LATEST_HANDSHAKE_VERSION

        got = self.request(
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        assert got is not None and "result" in got, got
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return got["result"]


# --------------------------------------------------------------------------- fuzzing

_TOOLS = ["skills_list", "skill_view", "skill_manage", "skill_history", "skill_diff", "nosuch", ""]
_ACTIONS = ["create", "edit", "patch", "delete", "write_file", "remove_file", "revert", "nuke", ""]
_KEYS = [
    "name",
    "content",
    "old_string",
    "new_string",
    "replace_all",
    "file_path",
    "file_content",
    "version",
    "force",
    "from",
    "to",
    "action",
    "evil",
    "__proto__",
    "",
]
_PATHS = [
    "references/a.md",
    "../../outside.md",
    "/etc/passwd",
    "references/../../x",
    "scripts/x.sh",
    "",
    "references/" + "a" * 300,
    "references/\x00.md",
    "SKILL.md",
    "assets/\u202e.md",
]


def _value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(14)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, -1, 1, 2, 2**63, 10**30, 1.5, float("1e308")])
    if pick == 3:
        return rng.choice(_PATHS)
    if pick == 4:
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0, 0x2FFFF)])) for _ in range(8))
    if pick == 5:
        return "---\nname: fz\ndescription: fuzzed\n---\n" + "x" * rng.randrange(0, 3000)
    if pick == 6 and depth < 3:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    if pick == 7 and depth < 3:
        return {rng.choice(_KEYS): _value(rng, depth + 1) for _ in range(rng.randrange(3))}
    if pick == 8:
        return rng.choice(["fz", "shared", "a" * 200, "UPPER", "-x", "a/b", ".", "..", "fz\n"])
    return rng.choice(["fz", "shared", "<!-- end -->", "step", ""])


def _plausible(rng: random.Random) -> dict[str, Any]:
    name = rng.choice(["fz", "fz", "fy", "nosuch"])
    skill_md = f"---\nname: {name}\ndescription: fuzzed skill {rng.randrange(10**6)}\n---\nstep <!-- end -->\nstep\n"
    action = rng.choice(["create", "edit", "patch", "patch", "write_file", "remove_file", "revert", "delete"])
    args: dict[str, Any] = {"action": action, "name": name}
    if action in ("create", "edit"):
        args["content"] = skill_md
        args["force"] = action == "create" or None
    elif action == "patch":
        args.update(
            old_string=rng.choice(["<!-- end -->", "step", "missing"]),
            new_string=f"x{rng.random()} <!-- end -->",
            replace_all=rng.random() < 0.5,
            file_path=rng.choice([None, None, "references/a.md"]),
        )
    elif action in ("write_file", "remove_file"):
        args["file_path"] = rng.choice(_PATHS[:3])
        if action == "write_file":
            args["file_content"] = "step\n" * rng.randrange(1, 5)
    elif action == "revert":
        args["version"] = rng.randrange(1, 6)
    if rng.random() < 0.3:
        return {
            "name": rng.choice(["skill_view", "skills_list", "skill_history", "skill_diff"]),
            "arguments": {"name": name} if rng.random() < 0.5 else {"name": name, "from": 1, "to": 2},
        }
    return {"name": "skill_manage", "arguments": {k: v for k, v in args.items() if v is not None}}


def fuzz_message(rng: random.Random, ident: int) -> tuple[bytes, bool]:
    """One random message and whether it expects a reply (a request with a usable id)."""
    kind = rng.randrange(20)
    if kind == 0:  # not JSON at all
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))).replace(b"\n", b" "), True
    if kind == 1:  # deep nesting in the arguments
        depth = rng.choice([70, 1000, 5000])
        args = b'{"name": ' + b"[" * depth + b"]" * depth + b"}"
        return (
            b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "skill_view", '
            b'"arguments": %s}}' % (ident, args)
        ), True
    if kind == 2:  # a lone surrogate
        return (
            b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "skill_view", '
            b'"arguments": {"name": "\\ud800"}}}' % ident
        ), True
    if kind == 3:  # a notification: never answered
        return json.dumps(
            {"jsonrpc": "2.0", "method": rng.choice(["notifications/x", "tools/call"]), "params": _value(rng)}
        ).encode(), False
    if kind == 4:  # a batch, or a bare value
        batch = [{"jsonrpc": "2.0", "id": ident, "method": "ping"}]
        return json.dumps(rng.choice([batch, 3, "x", None])).encode(), True
    if kind == 5:  # a malformed envelope
        doc: dict[str, Any] = {
            "jsonrpc": rng.choice(["2.0", "1.0", 2]),
            "id": ident,
            "method": rng.choice(["tools/call", "tools/list", "nosuch/method", "resources/read", 7]),
        }
        if rng.random() < 0.7:
            doc["params"] = _value(rng)
        return json.dumps(doc).encode(), doc["jsonrpc"] == "2.0" and isinstance(doc["method"], str)
    if kind in (6, 7):
        uri = rng.choice(
            [
                "ledger://index",
                "ledger://skill/fz",
                "ledger://skill/nosuch",
                "ledger://skill/../x",
                "file:///etc/passwd",
                "ledger://skill/" + "a" * 500,
                "x",
            ]
        )
        doc = {"jsonrpc": "2.0", "id": ident, "method": "resources/read", "params": {"uri": uri}}
        return json.dumps(doc).encode(), True
    if kind in (8, 9, 10, 11, 12, 13):  # well formed: reaches the write path and the reads
        doc = {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": _plausible(rng)}
        return json.dumps(doc).encode(), True
    tool = rng.choice(_TOOLS)
    args: dict[str, Any] = {}
    if tool == "skill_manage" or rng.random() < 0.2:
        args["action"] = rng.choice(_ACTIONS)
    for _ in range(rng.randrange(5)):
        args[rng.choice(_KEYS)] = _value(rng)
    if rng.random() < 0.8:
        args.setdefault("name", rng.choice(["fz", "shared", "nosuch"]))
    if rng.random() < 0.3:
        args["file_path"] = rng.choice(_PATHS)
    params: Any = {"name": tool, "arguments": args} if rng.random() < 0.95 else _value(rng)
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}).encode(), True


def _listing(top: Path, skip: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``top`` but ``skip``, with its size and mtime: what a write outside the brain would change."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip]
        for f in filenames:
            st = os.lstat(os.path.join(dirpath, f))
            out[os.path.join(dirpath, f)] = (st.st_size, st.st_mtime_ns)
    return out


def fuzz(brain: Path, count: int, seed: int = 1, restart_every: int = 2000) -> dict[str, Any]:
    """``count`` random messages to a running server: how many requests got no reply, and any crash."""
    rng = random.Random(seed)
    around = _listing(brain.parent, skip=brain)
    sent = answered = unanswered = crashes = internal = 0
    examples: list[str] = []
    server = RawMcp(brain)
    try:
        server.initialize()
        for i in range(count):
            if i and i % restart_every == 0:  # fresh servers too, so start-up paths are fuzzed beside long runs
                server.close()
                server = RawMcp(brain)
                server.initialize()
            ident = 10_000 + i
            data, expects = fuzz_message(rng, ident)
            server.send_raw(data)
            sent += 1
            # A ping after each message proves the server still reads; replies may come in any order.
            server.next_id += 1
            ping = server.next_id
            server.send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
            got_ping, got_reply = False, not expects
            deadline = time.monotonic() + 30
            while not (got_ping and got_reply) and (left := deadline - time.monotonic()) > 0:
                msg = server.reply(left)
                if msg is None:
                    break
                got_ping = got_ping or msg.get("id") == ping
                if '"internal": true' in json.dumps(msg.get("result", {}).get("structuredContent", {})):
                    internal += 1
                    examples.append("internal error: " + data[:200].decode(errors="replace"))
                got_reply = got_reply or msg.get("id") in (ident, None)
            answered += expects and got_reply
            if not (got_ping and got_reply):
                unanswered += 1
                if len(examples) < 5:
                    examples.append(("no ping reply: " if not got_ping else "") + data[:200].decode(errors="replace"))
            if server.proc.poll() is not None:
                crashes += 1
                examples.append(f"server exited {server.proc.returncode}: " + server.close()[-500:])
                server = RawMcp(brain)
                server.initialize()
    finally:
        stderr = server.close()
    outside = sorted(set(_listing(brain.parent, skip=brain).items()) ^ set(around.items()))
    return {
        "writes_outside": [p for p, _ in outside][:10],
        "messages": sent,
        "answered": answered,
        "unanswered": unanswered,
        "crashes": crashes,
        "tracebacks": stderr.count("Traceback"),
        "internal_errors": internal,
        "examples": examples,
    }


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description="Fuzz a running 'ledger mcp' with random JSON-RPC (docs/RELIABILITY.md)")
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ledger-fuzz-mcp-") as d:
        work = Path(d)
        (work / "sentinel").write_text("outside the brain\n")
        brain = work / "brain"
        subprocess.run([LEDGER, "init", str(brain)], check=True, capture_output=True)
        started = time.monotonic()
        report = fuzz(brain, args.messages, args.seed)
        verify = subprocess.run([LEDGER, "--brain", str(brain), "verify"], capture_output=True, text=True)
        commits = subprocess.run(
            ["git", "-C", str(brain), "rev-list", "--count", "main"], capture_output=True, text=True
        ).stdout.strip()
        report.update(
            verify_ok=verify.returncode == 0, snapshots=int(commits or 0), seconds=round(time.monotonic() - started, 1)
        )
    print(json.dumps(report, indent=2))
    bad = report["unanswered"] or report["crashes"] or report["tracebacks"] or report["internal_errors"]
    return 1 if bad or report["writes_outside"] or not report["verify_ok"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
