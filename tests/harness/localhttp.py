"""A local HTTP server for tests: 127.0.0.1 on a free port, in a thread, always shut down; and a URL that
refuses every connection."""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def serving(handler: Callable[..., Any]) -> Iterator[str]:
    """Serve with ``handler`` (a request handler class or factory); yield the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


_HELD: list[socket.socket] = []


def refused_url() -> str:
    """``http://127.0.0.1:PORT`` where nothing answers, for as long as this process lives: the port is bound
    here and never listened on, so a connection is refused and no other program can take the port (a port
    that ``anvil.free_port()`` found free may be taken by another suite's anvil before the test connects)."""
    if not _HELD:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        _HELD.append(sock)
    return f"http://127.0.0.1:{_HELD[0].getsockname()[1]}"
