"""A small JSON-RPC 2.0 client over HTTP(S): what the chain's hot paths need of a node, without web3.

One keep-alive connection per client (``http.client``), a timeout on every request, and two
failures told apart: the endpoint did not answer (:class:`~ledger.errors.RpcUnreachableError`),
or it answered with a JSON-RPC error (:class:`~ledger.errors.RpcError`: its code, message and
revert data, for :mod:`ledger.chain.registry` to explain).  web3 takes about a second to import
(issue 35); the registry keeps it only for deploying and the users' API (ADR 33).
"""

from __future__ import annotations

import base64
import http.client
import json
from typing import Any
from urllib.parse import unquote, urlsplit

from ledger.errors import ChainError, RpcError, RpcUnreachableError

__all__ = ["Rpc"]

# Methods whose request may be sent again on a fresh connection when a kept-alive one turns out
# closed by the server (its answer never came): reads.  A transaction is never sent twice.
_RESENDABLE = frozenset(
    {
        "eth_chainId",
        "eth_blockNumber",
        "eth_call",
        "eth_getCode",
        "eth_getLogs",
        "eth_getBlockByNumber",
        "eth_getTransactionReceipt",
        "eth_getTransactionCount",
        "eth_estimateGas",
        "eth_maxPriorityFeePerGas",
        "eth_gasPrice",
    }
)


class Rpc:
    """One node, by URL (``http://`` or ``https://``; a ``user:password@`` part is sent as basic auth)."""

    def __init__(self, url: str, *, timeout: float = 15.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ChainError(f"the RPC endpoint {url!r} is not an http(s) URL", hint="see 'ledger chain use --help'")
        self.url = url
        self.timeout = timeout
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if parts.username is not None:
            token = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            self._headers["Authorization"] = "Basic " + base64.b64encode(token).decode()
        self._conn: http.client.HTTPConnection | None = None
        self._id = 0

    def call(self, method: str, *params: Any) -> Any:
        """The ``result`` of one request; raises RpcError for a JSON-RPC error, RpcUnreachableError
        when no answer came (refused, timed out, closed, not JSON-RPC)."""
        self._id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": list(params)}).encode()
        reused = self._conn is not None
        try:
            status, raw = self._post(body)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
            self.close()
            if not (reused and method in _RESENDABLE):
                raise self._unreachable(exc) from exc
            try:  # the server closed an idle kept-alive connection: one fresh attempt
                status, raw = self._post(body)
            except (OSError, http.client.HTTPException) as again:
                self.close()
                raise self._unreachable(again) from again
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise self._unreachable(exc) from exc
        try:
            reply = json.loads(raw)
        except ValueError as exc:
            raise RpcUnreachableError(
                f"{self.url} answered HTTP {status} with no JSON-RPC reply: {raw[:120]!r}",
                hint="is this URL a node's JSON-RPC endpoint?",
            ) from exc
        if not isinstance(reply, dict) or ("result" not in reply and "error" not in reply):
            raise RpcUnreachableError(f"{self.url} answered HTTP {status} with no JSON-RPC reply: {raw[:120]!r}")
        error = reply.get("error")
        if error is not None:
            error = error if isinstance(error, dict) else {"message": str(error)}
            raise RpcError(
                f"{method}: {error.get('message', 'error')}",
                code=error.get("code"),
                data=error.get("data"),
                node_message=str(error.get("message", "")),
            )
        return reply["result"]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _post(self, body: bytes) -> tuple[int, bytes]:
        if self._conn is None:
            if self._https:
                self._conn = http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout)
            else:
                self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        self._conn.request("POST", self._path, body, self._headers)
        response = self._conn.getresponse()
        raw = response.read()
        if response.will_close:
            self.close()
        return response.status, raw

    def _unreachable(self, exc: BaseException) -> RpcUnreachableError:
        return RpcUnreachableError(
            f"cannot reach the RPC endpoint {self.url}: {type(exc).__name__}",
            hint="is the node running? ('ledger chain up')",
        )
