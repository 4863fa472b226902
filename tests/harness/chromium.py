"""Open a local HTML file in real headless Chromium and report what happened, over the DevTools protocol.

What a test gets back (:class:`Visit`): every console message, every uncaught exception,
every log entry, every request URL the page made, and the value of one JS expression
evaluated after the load event.  Chromium runs with a throw-away profile, no sandbox, no
GPU and a host resolver that resolves nothing, so a stray external reference fails loudly
instead of quietly fetching; it is always killed (its whole process group), and every
wait is bounded.  The protocol is spoken with ``websockets`` (already locked, via web3):
no browser-automation dependency.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
]


def binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require() -> str:
    """Chromium's path, or skip (fail where ``LEDGER_REQUIRE_BROWSER`` is set, as on CI)."""
    path = binary()
    if path is None:
        if os.environ.get("LEDGER_REQUIRE_BROWSER"):
            pytest.fail("chromium is required here (scripts/test installs Debian's chromium) but is missing")
        pytest.skip("chromium not installed (scripts/test installs Debian's chromium)")
    return path


@dataclass
class Visit:
    console: list[dict[str, Any]] = field(default_factory=list)  # Runtime.consoleAPICalled: type and text
    exceptions: list[str] = field(default_factory=list)  # Runtime.exceptionThrown
    log: list[dict[str, Any]] = field(default_factory=list)  # Log.entryAdded: level, source, text, url
    requests: list[str] = field(default_factory=list)  # Network.requestWillBeSent URLs
    value: Any = None  # the expression's result, by value
    screenshot: bytes | None = None

    def problems(self) -> list[str]:
        """Console errors and warnings, exceptions, error log entries and requests that left file:// or data:."""
        out = [f"console.{c['type']}: {c['text']}" for c in self.console if c["type"] in ("error", "warning", "assert")]
        out += [f"exception: {e}" for e in self.exceptions]
        out += [
            f"log {e['level']} ({e.get('source')}): {e['text']} {e.get('url', '')}"
            for e in self.log
            if e["level"] in ("error", "warning")
        ]
        out += [f"request: {u}" for u in self.requests if not u.startswith(("file://", "data:"))]
        return out


class _Session:
    """One page target, attached in flat mode over the browser's websocket."""

    def __init__(self, ws: Any, deadline: float) -> None:
        self.ws, self.deadline, self.next_id, self.session = ws, deadline, 0, None
        self.events: list[dict[str, Any]] = []

    def _recv(self) -> dict[str, Any]:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("chromium: the visit ran out of time")
        return json.loads(self.ws.recv(timeout=left))

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            reply = self._recv()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"chromium: {method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev["method"] == method:
                return self.events[i]
        while True:
            ev = self._recv()
            if "method" in ev:
                self.events.append(ev)
                if ev["method"] == method:
                    return ev


def _port(profile: Path, proc: subprocess.Popen[bytes], deadline: float) -> tuple[int, str]:
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited with {proc.returncode} before listening")
        try:
            port, path = marker.read_text().split("\n")[:2]
            return int(port), path
        except (FileNotFoundError, ValueError):
            time.sleep(0.05)
    raise TimeoutError("chromium: no DevToolsActivePort")


def visit(
    page: Path,
    expression: str = "null",
    *,
    javascript: bool = True,
    timeout: float = 90.0,
    screenshot: bool = False,
    settle: float = 0.3,
    width: int | None = None,
) -> Visit:
    """Load ``page`` (a local file), evaluate ``expression`` after its load event, and report everything.

    ``width``: lay the page out in a viewport that wide (CSS pixels; under 600 as a phone does, with
    touch-sized text), instead of the window's 1280."""
    from websockets.sync.client import connect

    chromium = require()
    deadline = time.monotonic() + timeout
    result = Visit()
    with tempfile.TemporaryDirectory(prefix="ledger-chromium-", ignore_cleanup_errors=True) as tmp:
        profile = Path(tmp)
        argv = [chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            port, path = _port(profile, proc, deadline)
            with connect(f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=10) as ws:
                s = _Session(ws, deadline)
                target = s.call("Target.createTarget", url="about:blank")["targetId"]
                s.session = s.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
                for domain in ("Runtime", "Log", "Network", "Page"):
                    s.call(f"{domain}.enable")
                if not javascript:
                    s.call("Emulation.setScriptExecutionDisabled", value=True)
                if width is not None:
                    phone = width < 600
                    s.call(
                        "Emulation.setDeviceMetricsOverride",
                        width=width,
                        height=844 if phone else 900,
                        deviceScaleFactor=1,
                        mobile=phone,
                    )
                s.call("Page.navigate", url=page.resolve().as_uri())
                s.wait_for("Page.loadEventFired")
                # A window, not a wait: a request or error the page makes just after load gets to report (the
                # page tests assert there is none, and an absence cannot be polled for).
                time.sleep(settle)
                value = s.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
                if "exceptionDetails" in value:
                    raise RuntimeError(f"chromium: the expression threw: {value['exceptionDetails']}")
                result.value = value["result"].get("value")
                if screenshot:
                    shot = s.call("Page.captureScreenshot", format="png")  # the viewport: what a reader sees first
                    result.screenshot = base64.b64decode(shot["data"])
                s.call("Runtime.evaluate", expression="0")  # drain: events queued before this reply are read
                _collect(s.events, result)
        finally:
            with contextlib.suppress(ProcessLookupError):  # its whole group: renderers, zygote, GPU process
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    return result


def _collect(events: list[dict[str, Any]], out: Visit) -> None:
    for ev in events:
        p, m = ev.get("params", {}), ev["method"]
        if m == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            out.console.append({"type": p["type"], "text": text})
        elif m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            out.exceptions.append(d.get("exception", {}).get("description") or d.get("text", ""))
        elif m == "Log.entryAdded":
            out.log.append(p["entry"])
        elif m == "Network.requestWillBeSent":
            out.requests.append(p["request"]["url"])


def artifacts() -> Path:
    """Where a test run leaves what a person may want to look at (screenshots): ``$LEDGER_TEST_ARTIFACTS``,
    else ``.build/test-artifacts/`` in the repository (git-ignored; never committed)."""
    where = os.environ.get("LEDGER_TEST_ARTIFACTS")
    out = Path(where) if where else Path(__file__).resolve().parents[2] / ".build" / "test-artifacts"
    out.mkdir(parents=True, exist_ok=True)
    return out
