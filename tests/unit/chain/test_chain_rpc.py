"""The light JSON-RPC client (ledger/chain/rpc.py) against a real anvil and against endpoints that
are not nodes: each failure is told apart, with the messages the web3 path gave."""

from __future__ import annotations

import http.server
import socket
from collections.abc import Iterator

import pytest

from ledger.chain.rpc import Rpc
from ledger.errors import ChainError, RpcError, RpcUnreachableError
from tests.harness.localhttp import refused_url, serving


@pytest.fixture
def not_a_node() -> Iterator[str]:
    """An HTTP server that answers every POST with an HTML page, then closes the connection."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            body = b"<html>not json</html>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url


def test_a_closed_port_is_unreachable_with_the_usual_hint() -> None:
    rpc = Rpc(refused_url(), timeout=2)
    with pytest.raises(RpcUnreachableError, match="cannot reach the RPC endpoint") as info:
        rpc.call("eth_chainId")
    assert info.value.hint == "is the node running? ('ledger chain up')"


def test_an_endpoint_that_is_not_a_node_is_unreachable(not_a_node: str) -> None:
    with pytest.raises(RpcUnreachableError, match="no JSON-RPC reply"):
        Rpc(not_a_node).call("eth_chainId")


def test_only_http_urls_are_taken() -> None:
    for url in ("ws://127.0.0.1:8545", "127.0.0.1:8545", "file:///tmp/x"):
        with pytest.raises(ChainError, match="not an http"):
            Rpc(url)


@pytest.mark.chain
def test_a_node_answers_keeps_the_connection_and_reports_its_errors(node) -> None:
    rpc = Rpc(node.url)
    assert int(rpc.call("eth_chainId"), 16) == 31337
    first = rpc._conn
    assert int(rpc.call("eth_blockNumber"), 16) >= 0 and rpc._conn is first, "one kept-alive connection"
    with pytest.raises(RpcError) as info:
        rpc.call("eth_noSuchMethod")
    assert isinstance(info.value.detail["code"], int) and info.value.detail["node_message"]
    rpc._conn.sock.shutdown(socket.SHUT_RDWR)  # as a server closing an idle connection: a read is resent once
    assert int(rpc.call("eth_chainId"), 16) == 31337
    rpc.close()


@pytest.mark.chain
def test_a_commit_is_built_as_web3_builds_it_and_refused_in_the_same_words(chained) -> None:
    from ledger.chain.abi import call_data
    from ledger.chain.config import ChainConfig
    from ledger.chain.keys import dev_account
    from ledger.chain.registry import Registry

    cfg = ChainConfig.of(chained)
    reg = Registry(cfg.rpc, cfg.registry, expected_chain_id=cfg.chain_id)
    owner, parent, root = dev_account(0), reg.head(cfg.agent_id), b"\x42" * 32
    ours = reg.build(owner.address, call_data("commit(uint256,bytes32,bytes32)", cfg.agent_id, parent, root))
    theirs = (
        reg.bound()
        .functions.commit(cfg.agent_id, parent, root)
        .build_transaction(
            {
                "from": owner.address,
                "nonce": reg.w3.eth.get_transaction_count(owner.address, "pending"),
                "chainId": reg.chain_id,
            }
        )
    )
    for field in ("chainId", "nonce", "to", "value", "gas", "maxPriorityFeePerGas", "maxFeePerGas"):
        assert ours[field] == theirs[field], field
    assert "0x" + ours["data"].hex() == theirs["data"]
    stale = b"\x13" * 32  # not the head: the registry refuses, and both paths say so alike
    with pytest.raises(ChainError) as light:
        reg.transact(owner, call_data("commit(uint256,bytes32,bytes32)", cfg.agent_id, stale, root), what="a commit")
    with pytest.raises(ChainError) as web3:
        reg.send(owner, reg.bound().functions.commit(cfg.agent_id, stale, root), what="a commit")
    assert light.value.message == web3.value.message and light.value.hint == web3.value.hint
    assert light.value.message.startswith("the registry refused a commit: StaleParent(")
