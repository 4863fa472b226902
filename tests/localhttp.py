"""A local HTTP server for tests: 127.0.0.1 on a free port, in a thread, always shut down."""

from __future__ import annotations

import contextlib
import http.server
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
