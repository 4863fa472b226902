"""A local Anvil node from ``node_modules``, on 127.0.0.1, started and stopped cleanly.

State persists in ``<brain>/.ledger/anvil/`` (``--state``), so ``ledger chain down``
and ``up`` resume the same chain.  Every node runs under ``timeout`` so that it
ends even if whatever started it is killed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ledger._env import child_env
from ledger.errors import ChainError

__all__ = ["Node", "anvil_binary", "free_port", "start", "status", "stop"]

_REPO = Path(__file__).resolve().parents[2]  # the checkout: ledger/chain/anvil.py
HARDFORK = "prague"


@dataclass(frozen=True)
class Node:
    pid: int
    port: int
    url: str


def anvil_binary() -> str:
    for cand in (os.environ.get("LEDGER_ANVIL"), str(_REPO / "node_modules" / ".bin" / "anvil"), shutil.which("anvil")):
        if cand and os.access(cand, os.X_OK):
            return cand
    raise ChainError("anvil not found", hint="run ./scripts/bootstrap (npm ci) or set LEDGER_ANVIL")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_free(port: int, wait: float = 5.0) -> bool:
    """Whether anvil could listen on ``port``; a node stopped a moment ago may hold it briefly."""
    deadline = time.monotonic() + wait
    while True:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as anvil binds: TIME_WAIT is no obstacle
            try:
                sock.bind(("127.0.0.1", port))
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    return False
        time.sleep(0.1)


def rpc_ready(url: str, timeout: float = 0.5) -> bool:
    req = urllib.request.Request(
        url,
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return b"result" in resp.read()
    except OSError:
        return False


def start(
    state_dir: Path,
    *,
    port: int | None = None,
    chain_id: int = 31337,
    lifetime: int = 24 * 3600,
    persist: bool = True,
) -> Node:
    """Start anvil in the background and wait until it answers; returns its pid, port and URL.

    The port is kept in ``state_dir/port``: a node started again comes back at the same
    URL, so an RPC URL handed to an auditor stays valid across restarts.
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    running = status(state_dir)
    if running is not None:
        raise ChainError(f"anvil is already running at {running.url} (pid {running.pid})", hint="ledger chain down")
    kept = state_dir / "port"
    if port is None and kept.exists():
        port = int(kept.read_text())
        if not _port_free(port):
            raise ChainError(
                f"port {port}, kept for this brain's anvil, is in use by another program",
                hint="stop that program, or pass --port to move this brain's node (its RPC URL changes)",
            )
    # A port picked here may be taken by another program before anvil binds it (free_port closes its
    # socket): anvil then exits at once, and another free port is tried.  A port asked for is not moved.
    picked = port is None
    for _attempt in range(5 if picked else 1):
        node = _launch(state_dir, port or free_port(), chain_id, lifetime, persist, retry=picked)
        if node is not None:
            return node
    raise ChainError(f"anvil could not bind a free port on 127.0.0.1 (5 tries); see {state_dir / 'anvil.log'}")


def _launch(state_dir: Path, port: int, chain_id: int, lifetime: int, persist: bool, retry: bool) -> Node | None:
    """Start one anvil on ``port`` and wait until it answers; None when ``retry`` and the port was taken."""
    (state_dir / "port").write_text(f"{port}\n")
    url = f"http://127.0.0.1:{port}"
    args = [
        anvil_binary(),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--chain-id",
        str(chain_id),
        "--hardfork",
        HARDFORK,
        "--silent",
    ]
    if persist:
        args += ["--state", str(state_dir / "state.json"), "--state-interval", "1"]
    timeout_bin = shutil.which("timeout")
    if timeout_bin:
        args = [timeout_bin, "--signal=TERM", "--kill-after=5", str(lifetime), *args]
    logfile = state_dir / "anvil.log"
    mark = logfile.stat().st_size if logfile.exists() else 0
    log = open(logfile, "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, env=child_env()
    )
    log.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(logfile, "rb") as f:
                f.seek(mark)
                said = f.read().decode(errors="replace")
            if retry and "Address already in use" in said:
                return None
            raise ChainError(f"anvil exited at start (code {proc.returncode}); see {logfile}")
        if rpc_ready(url):
            node = Node(proc.pid, port, url)
            (state_dir / "node.json").write_text(json.dumps(node.__dict__))
            return node
        time.sleep(0.05)
    _kill(proc.pid)
    raise ChainError(f"anvil did not answer on {url} within 20 s; see {logfile}")


def status(state_dir: Path) -> Node | None:
    try:
        doc = json.loads((state_dir / "node.json").read_text())
    except (FileNotFoundError, ValueError):
        return None
    node = Node(int(doc["pid"]), int(doc["port"]), str(doc["url"]))
    if not _alive(node.pid):
        (state_dir / "node.json").unlink(missing_ok=True)
        return None
    return node


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs. A killed node whose starter has exited is a zombie until init reaps
    it, which some inits (a container's) do seconds later: ``kill(pid, 0)`` still succeeds then,
    so the process state is read too (Linux ``/proc``; elsewhere the signal alone decides)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process holds the pid: running, and not ours to judge
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def stop(state_dir: Path) -> Node | None:
    node = status(state_dir)
    if node is not None:
        _kill(node.pid)
    (state_dir / "node.json").unlink(missing_ok=True)
    return node


def _kill(pid: int) -> None:
    """Stop the node's whole process group (timeout + anvil), politely first so it saves state."""
    for sig, wait in ((signal.SIGINT, 5.0), (signal.SIGTERM, 3.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    return
            except ChildProcessError:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
            time.sleep(0.05)
