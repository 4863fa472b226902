"""The registry client: one BrainRegistry, its custom errors decoded into sentences, and its
events read back as plain values.

Its hot paths (the chain id, code, head, sequence, owner, committers, the agent's logs,
blocks, receipts, and ``commit`` itself) go over :mod:`ledger.chain.rpc` with the registry's
static ABI encoded by hand (:mod:`ledger.chain.abi`), so ``ledger chain status`` and
``ledger chain anchor`` never import web3 (~1 s, issue 35).  web3 stays where it earns its place,
loaded on first use: deploying, registering, authorizing (:meth:`Registry.send`) and the
users' API (:attr:`Registry.w3`, :meth:`Registry.bound`).  Custom-error revert data is decoded
with eth-abi, loaded only when a refusal needs explaining.  It knows nothing of a brain: what
a brain does with the chain is :mod:`ledger.anchoring.commits`.
"""

from __future__ import annotations

import json
import time
from functools import cached_property
from importlib import resources
from typing import Any

from ledger._faults import crashpoint
from ledger.chain.abi import (
    EVIDENCE_COMMITTED,
    ROOT_COMMITTED,
    ZERO,
    call_data,
    checksum,
    decode_evidence_committed,
    decode_root_committed,
    decode_word,
    hexbytes,
    keccak,
    sequenced,
    word,
)
from ledger.chain.rpc import Rpc
from ledger.errors import ChainError, RpcError, RpcUnreachableError

__all__ = ["ZERO", "Registry", "artifact", "onchain_events"]

RECEIPT_TIMEOUT = 120.0


def artifact() -> dict[str, Any]:
    """The registry's ABI and bytecode, shipped inside the package (no compiler at runtime)."""
    return json.loads(resources.files("ledger").joinpath("artifacts/BrainRegistry.json").read_text())


class Registry:
    """One BrainRegistry on one node, with custom errors decoded into sentences."""

    def __init__(self, rpc: str, address: str | None = None, *, expected_chain_id: int | None = None) -> None:
        self.rpc = rpc
        self.node = Rpc(rpc, timeout=15)
        self.chain_id = _quantity(self.node.call("eth_chainId"))  # RpcUnreachableError names the endpoint
        if expected_chain_id is not None and self.chain_id != expected_chain_id:
            raise ChainError(
                f"wrong chain: {rpc} serves chain id {self.chain_id}, but this brain is configured for "
                f"{expected_chain_id}",
                hint="point the brain at the right RPC, or re-deploy for this chain",
            )
        self.address = checksum(address) if address else None
        if self.address is not None and not self.has_code(self.address):
            raise ChainError(
                f"there is no contract at {self.address} on chain {self.chain_id}: nothing would answer calls "
                "or receive transactions",
                hint="check the registry address; after a chain reset run 'ledger chain deploy' and 'register' again",
            )

    @cached_property
    def abi(self) -> list[dict[str, Any]]:
        return list(artifact()["abi"])

    @cached_property
    def bytecode(self) -> str:
        return str(artifact()["bytecode"])

    @cached_property
    def w3(self) -> Any:
        """web3 on the same endpoint, loaded on first use (deploy, register, authorize, users' code)."""
        from web3 import Web3

        return Web3(Web3.HTTPProvider(self.rpc, request_kwargs={"timeout": 15}))

    @cached_property
    def contract(self) -> Any:
        return self.w3.eth.contract(address=self.address, abi=self.abi) if self.address else None

    @cached_property
    def _errors(self) -> dict[bytes, dict[str, Any]]:
        return {
            keccak(f"{e['name']}({','.join(i['type'] for i in e['inputs'])})".encode())[:4]: e
            for e in self.abi
            if e["type"] == "error"
        }

    def has_code(self, address: str) -> bool:
        try:
            return len(hexbytes(self.node.call("eth_getCode", address, "latest"))) > 0
        except RpcUnreachableError as exc:
            raise RpcUnreachableError(f"cannot read code at {address} from {self.rpc}: {exc.message}") from exc

    # ------------------------------------------------------------------ transactions

    def explain(self, data: Any) -> str:
        """Decode revert data into ``Name(arg=value, …)`` using the registry ABI."""
        from eth_abi import decode as abi_decode  # only when a refusal needs explaining

        raw = bytes.fromhex(data[2:]) if isinstance(data, str) and data.startswith("0x") else bytes(data or b"")
        err = self._errors.get(raw[:4])
        if err is None:
            return f"reverted with unknown data 0x{raw.hex()}"
        values = abi_decode([i["type"] for i in err["inputs"]], raw[4:])
        args = ", ".join(f"{i['name']}={_shown(i['name'], v)}" for i, v in zip(err["inputs"], values, strict=True))
        return f"{err['name']}({args})"

    def send(self, account: Any, call: Any, *, what: str) -> dict[str, Any]:
        """Build, sign, send and await one transaction of a web3 ``call`` (deploy, register,
        authorize); raise ChainError saying why it failed."""
        from web3.exceptions import ContractCustomError, ContractLogicError, TimeExhausted, Web3RPCError

        try:
            tx = call.build_transaction(
                {
                    "from": account.address,
                    "nonce": self.w3.eth.get_transaction_count(account.address, "pending"),
                    "chainId": self.chain_id,
                }
            )
            local = account.local_account() if hasattr(account, "local_account") else account  # a Signer's
            tx_hash = self.w3.eth.send_raw_transaction(local.sign_transaction(tx).raw_transaction)
            crashpoint("chain-after-send")
            receipt = self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=RECEIPT_TIMEOUT)
        except ContractCustomError as exc:
            reason = self.explain(exc.data)
            raise ChainError(f"the registry refused {what}: {reason}", hint=_hint(reason)) from exc
        except ContractLogicError as exc:
            raise ChainError(f"the registry refused {what}: {exc}") from exc
        except TimeExhausted as exc:
            raise _no_receipt(what) from exc
        except Web3RPCError as exc:
            raise _rejected(what, account.address, str(exc)) from exc
        except (OSError, ConnectionError) as exc:
            raise RpcUnreachableError(f"{what}: lost the RPC endpoint {self.rpc}: {exc}") from exc
        if receipt["status"] != 1:
            raise ChainError(f"{what}: transaction {receipt['transactionHash'].hex()} reverted")
        return dict(receipt)

    def transact(self, account: Any, data: bytes, *, what: str) -> dict[str, Any]:
        """Send ``data`` to the registry as one EIP-1559 transaction and await its receipt, over the
        light client: :meth:`send`'s steps (nonce, gas estimate, fees as web3 fills them, sign, send,
        wait) and its refusals, word for word.  The receipt comes back as JSON-RPC gives it, with
        ``status``, ``gasUsed`` and ``blockNumber`` as ints."""
        if self.address is None:
            raise ChainError("no registry address configured", hint="run 'ledger chain deploy'")
        sender = account.address
        try:
            tx = self.build(sender, data, what=what)
            tx_hash = self.node.call("eth_sendRawTransaction", "0x" + account.sign_transaction(tx).hex())
            crashpoint("chain-after-send")
            receipt = self._await_receipt(tx_hash, what)
        except RpcError as exc:
            revert = exc.detail.get("data")
            if isinstance(revert, dict):  # some nodes nest it: {"data": {"data": "0x…"}}
                revert = revert.get("data")
            if isinstance(revert, str) and len(revert) >= 10:
                reason = self.explain(revert)
                raise ChainError(f"the registry refused {what}: {reason}", hint=_hint(reason)) from exc
            raise _rejected(what, sender, str(exc.detail.get("node_message"))) from exc
        except RpcUnreachableError as exc:
            raise RpcUnreachableError(f"{what}: lost the RPC endpoint {self.rpc}: {exc.message}") from exc
        if receipt["status"] != 1:
            raise ChainError(f"{what}: transaction {receipt['transactionHash']} reverted")
        return receipt

    def build(self, sender: str, data: bytes, *, what: str = "a transaction") -> dict[str, Any]:
        """The EIP-1559 transaction of ``data`` to the registry from ``sender``, its fields filled as
        web3's ``build_transaction`` fills them (pending nonce, ``eth_estimateGas``, the priority fee
        and twice the latest base fee on top): ``tests/unit/chain/test_chain_rpc.py`` compares the two."""
        if self.address is None:
            raise ChainError("no registry address configured", hint="run 'ledger chain deploy'")
        message = {"from": sender, "to": self.address, "data": "0x" + data.hex()}
        nonce = _quantity(self.node.call("eth_getTransactionCount", sender, "pending"))
        gas = _quantity(self.node.call("eth_estimateGas", message))
        tip = self._priority_fee()
        latest = self.node.call("eth_getBlockByNumber", "latest", False) or {}
        if "baseFeePerGas" not in latest:
            raise ChainError(
                f"{what}: chain {self.chain_id} has no EIP-1559 base fee; the registry's commits "
                "are signed as EIP-1559 transactions only"
            )
        base = _quantity(latest["baseFeePerGas"])
        return {
            "type": 2,
            "chainId": self.chain_id,
            "nonce": nonce,
            "to": self.address,
            "value": 0,
            "data": data,
            "gas": gas,
            "maxPriorityFeePerGas": tip,
            "maxFeePerGas": tip + 2 * base,
        }

    def _priority_fee(self) -> int:
        """The node's suggested priority fee; where it has no ``eth_maxPriorityFeePerGas`` (the method
        is not in the spec), web3's own fallback: the mean of the non-zero 5th-percentile rewards of
        the last 10 blocks, kept within 1 and 1.5 gwei."""
        try:
            return _quantity(self.node.call("eth_maxPriorityFeePerGas"))
        except RpcError:
            history = self.node.call("eth_feeHistory", hex(10), "pending", [5.0])
            fees = [_quantity(r[0]) for r in history.get("reward") or [] if r and _quantity(r[0]) != 0]
            return min(max(round(sum(fees) / max(len(fees), 1)), 10**9), 1_500_000_000)

    def _await_receipt(self, tx_hash: str, what: str) -> dict[str, Any]:
        deadline, pause = time.monotonic() + RECEIPT_TIMEOUT, 0.01
        while True:
            receipt = self.node.call("eth_getTransactionReceipt", tx_hash)
            if receipt is not None:
                return {**receipt, **{k: _quantity(receipt[k]) for k in ("status", "gasUsed", "blockNumber")}}
            if time.monotonic() > deadline:
                raise _no_receipt(what)
            time.sleep(pause)
            pause = min(pause * 2, 0.1)  # web3 polls every 0.1 s

    # ------------------------------------------------------------------ reads

    def bound(self) -> Any:
        """The web3 contract at the configured address (a call without one is refused)."""
        if self.contract is None:
            raise ChainError("no registry address configured", hint="run 'ledger chain deploy'")
        return self.contract

    def _view(self, signature: str, kind: str, *args: Any, block: Any = "latest") -> Any:
        if self.address is None:
            raise ChainError("no registry address configured", hint="run 'ledger chain deploy'")
        data = "0x" + call_data(signature, *args).hex()
        result = self.node.call("eth_call", {"to": self.address, "data": data}, _block(block))
        return decode_word(hexbytes(result), kind)

    def head(self, agent: int, block: Any = "latest") -> bytes:
        return bytes(self._view("headOf(uint256)", "bytes32", agent, block=block))

    def sequence(self, agent: int, block: Any = "latest") -> int:
        return int(self._view("sequenceOf(uint256)", "uint64", agent, block=block))

    def owner(self, agent: int, block: Any = "latest") -> str:
        return str(self._view("ownerOf(uint256)", "address", agent, block=block))

    def is_committer(self, agent: int, committer: str, block: Any = "latest") -> bool:
        return bool(self._view("isCommitter(uint256,address)", "bool", agent, committer, block=block))

    def _words(self, signature: str, count: int, *args: Any, block: Any = "latest") -> list[bytes]:
        if self.address is None:
            raise ChainError("no registry address configured", hint="run 'ledger chain deploy'")
        data = "0x" + call_data(signature, *args).hex()
        raw = hexbytes(self.node.call("eth_call", {"to": self.address, "data": data}, _block(block)))
        if len(raw) != 32 * count:
            raise ChainError(f"{signature} answers {count} words, got {len(raw)} bytes")
        return [raw[i : i + 32] for i in range(0, len(raw), 32)]

    def epoch(self, operator: str, epoch: int, block: Any = "latest") -> tuple[int, bytes]:
        """The size and root of ``operator``'s epoch ``epoch`` (0 and zero before it is anchored)."""
        size, root = self._words("epochOf(address,uint64)", 2, operator, epoch, block=block)
        return decode_word(size, "uint64"), root

    def latest_epoch(self, operator: str, block: Any = "latest") -> tuple[int, int, bytes]:
        """``operator``'s last epoch, its size and root (zeros before its first)."""
        epoch, size, root = self._words("latestEpoch(address)", 3, operator, block=block)
        return decode_word(epoch, "uint64"), decode_word(size, "uint64"), root

    def evidence(self, agent: int, block: Any = "latest") -> tuple[int, bytes]:
        """The agent's last anchored evidence log, its size and root (0 and zero before the first)."""
        size, root = self._words("evidenceOf(uint256)", 2, agent, block=block)
        return decode_word(size, "uint64"), root

    def evidence_events(self, agent: int, from_block: int = 0, to_block: Any = "latest") -> list[dict[str, Any]]:
        """The agent's EvidenceCommitted events in (block, log index) order: ``head``, ``size``,
        ``root``, ``tx``, ``block``, ``block_hash``, ``log_index`` (each a log the node answered for
        this agent at this registry, or refused)."""
        out = self._agent_logs(EVIDENCE_COMMITTED, decode_evidence_committed, agent, from_block, to_block)
        return sorted(out, key=lambda e: (e["block"], e["log_index"]))

    def _agent_logs(
        self, topic: bytes, decode: Any, agent: int, from_block: int, to_block: Any
    ) -> list[dict[str, Any]]:
        """The agent's logs of one event, decoded; a log of another agent or registry is the node's lie."""
        out = [decode(log) for log in self.logs([topic, word(agent, "uint256")], from_block, to_block)]
        for ev in out:
            if ev["agent"] != agent or ev["registry"] != self.address:
                raise ChainError(
                    f"the node answered a log of agent {ev['agent']:#x} at {ev['registry']} to a query "
                    f"for agent {agent:#x} at {self.address}"
                )
        return out

    def logs(self, topics: list[bytes | None], from_block: int = 0, to_block: Any = "latest") -> list[dict[str, Any]]:
        """The registry's raw logs matching ``topics`` (None: any), as JSON-RPC gives them."""
        if self.address is None:
            raise ChainError("no registry address configured", hint="run 'ledger chain deploy'")
        query = {
            "address": self.address,
            "topics": [None if t is None else "0x" + t.hex() for t in topics],
            "fromBlock": _block(from_block),
            "toBlock": _block(to_block),
        }
        try:
            return list(self.node.call("eth_getLogs", query))
        except ChainError as exc:
            raise RpcUnreachableError(f"cannot read events from {self.rpc}: {exc.message}") from exc

    def events(self, agent: int, from_block: int = 0, to_block: Any = "latest") -> list[dict[str, Any]]:
        """The agent's RootCommitted events in (block, log index) order, numbered: the on-chain lineage.

        The log holds neither ``seq`` nor ``parent`` (ADR 29): the k-th event from the registry's
        deploy block is sequence k and its parent is the (k-1)-th's root, so ``from_block`` must be
        at or before the agent's first commit.  Callers that rely on the numbering compare the count
        with :meth:`sequence` at ``to_block`` (:meth:`lineage` does)."""
        return sequenced(self._agent_logs(ROOT_COMMITTED, decode_root_committed, agent, from_block, to_block))

    def lineage(self, agent: int, from_block: int = 0) -> list[dict[str, Any]]:
        """:meth:`events` read at one block whose ``sequenceOf`` must equal their count: a node that
        lost logs, or a ``from_block`` after the agent's first commit, would otherwise shift every
        sequence number (ADR 29)."""
        tip = self.block_number()
        events = self.events(agent, from_block, tip)
        seq = self.sequence(agent, tip)
        if len(events) != seq:
            raise ChainError(
                f"the registry's sequence for agent {agent:#x} is {seq} at block {tip}, but the node returned "
                f"{len(events)} RootCommitted event(s) from block {from_block}",
                hint="the node may prune old logs (use an archive RPC), or the deploy block is after the first commit",
            )
        return events

    def block_number(self) -> int:
        """The tip's height: reads pinned to it see one state of the chain."""
        try:
            return _quantity(self.node.call("eth_blockNumber"))
        except ChainError as exc:
            raise RpcUnreachableError(f"cannot read the block height from {self.rpc}: {exc.message}") from exc

    def block(self, ident: Any = "latest") -> dict[str, Any] | None:
        """A block's ``number``, ``hash`` (bytes) and ``timestamp``; None past the tip."""
        block = self.node.call("eth_getBlockByNumber", _block(ident), False)
        if block is None:
            return None
        return {
            "number": _quantity(block["number"]),
            "hash": hexbytes(block["hash"]),
            "timestamp": _quantity(block["timestamp"]),
        }

    def block_hash(self, number: int) -> str | None:
        try:
            block = self.block(number)
        except ChainError:  # a block past the tip after a reorg
            return None
        return "0x" + block["hash"].hex() if block is not None else None


def _quantity(value: Any) -> int:
    """A JSON-RPC quantity (``0x``-hex) as an int."""
    if not isinstance(value, str) or not value.startswith("0x"):
        raise ChainError(f"the node answered {str(value)[:80]!r} where a quantity (0x-hex) was expected")
    return int(value, 16)


def _block(ident: Any) -> str:
    """A block number (int) or tag (``latest``…) as JSON-RPC takes it."""
    return hex(ident) if isinstance(ident, int) else str(ident)


def _no_receipt(what: str) -> ChainError:
    return ChainError(
        f"{what}: no receipt within {RECEIPT_TIMEOUT:.0f} s", hint="re-run; the commit reconciles from events"
    )


def _rejected(what: str, sender: str, text: str) -> ChainError:
    if "insufficient funds" in text.lower():
        return ChainError(
            f"{what}: the key {sender} cannot pay for gas (insufficient funds)",
            hint="fund the committer address, or use a funded key with --key",
        )
    return ChainError(f"{what}: the node rejected the transaction: {text}")


def _shown(name: str, value: Any) -> str:
    """An error argument as a user will paste it: ids and hashes in hex (as the CLI prints them)."""
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, int) and name.endswith("Id"):
        return hex(value)
    return str(value)


def _hint(reason: str) -> str | None:
    if reason.startswith("AgentAlreadyRegistered"):
        return "this brain's agent is registered already ('ledger chain status'); a new agent needs a new brain"
    if reason.startswith("StaleParent"):
        return "the on-chain head moved (another writer, or a fork); run 'ledger commit' again to reconcile"
    if reason.startswith("InconsistentEvidence") or reason.startswith("InvalidEvidence"):
        return (
            "the anchored evidence log is not a prefix of this one (an outcome was rewritten or dropped); "
            "run 'ledger chain status' and 'ledger verify --chain'"
        )
    if reason.startswith("UnauthorizedCommitter"):
        return "ask the agent owner to authorize this key ('ledger chain authorize')"
    return None


def onchain_events(rpc: str, registry: str, agent: str | int) -> list[dict[str, Any]]:
    """Every root the agent ever committed, oldest first, with its sequence, block and tx."""
    agent_id = int(agent, 0) if isinstance(agent, str) else agent
    reg = Registry(rpc, registry)
    return reg.lineage(agent_id)
