"""The registry client: one BrainRegistry over web3, its custom errors decoded into sentences,
and its events read back as plain values.

Imported only by chain commands and chain audits (web3 takes ~1 s to import).  It knows
nothing of a brain: what a brain does with the chain (deploy, register, commit) is
:mod:`ledger.exchange.anchoring`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from eth_abi import decode as abi_decode
from eth_account.signers.local import LocalAccount
from eth_utils import keccak, to_checksum_address
from web3 import Web3
from web3.exceptions import ContractCustomError, ContractLogicError, TimeExhausted, Web3RPCError

from ledger._faults import crashpoint
from ledger.chain.abi import ROOT_COMMITTED, ZERO, decode_root_committed, sequenced, word
from ledger.errors import ChainError, RpcUnreachableError

__all__ = ["ZERO", "Registry", "artifact", "onchain_events"]

def artifact() -> dict[str, Any]:
    """The registry's ABI and bytecode, shipped inside the package (no compiler at runtime)."""
    return json.loads(resources.files("ledger").joinpath("artifacts/BrainRegistry.json").read_text())


class Registry:
    """A web3 handle on one BrainRegistry, with custom errors decoded into sentences."""

    def __init__(self, rpc: str, address: str | None = None, *, expected_chain_id: int | None = None) -> None:
        self.rpc = rpc
        self.w3 = Web3(Web3.HTTPProvider(rpc, request_kwargs={"timeout": 15}))
        try:
            self.chain_id = int(self.w3.eth.chain_id)
        except Exception as exc:  # requests / connection errors of every kind
            raise RpcUnreachableError(
                f"cannot reach the RPC endpoint {rpc}: {type(exc).__name__}",
                hint="is the node running? ('ledger chain up')",
            ) from exc
        if expected_chain_id is not None and self.chain_id != expected_chain_id:
            raise ChainError(
                f"wrong chain: {rpc} serves chain id {self.chain_id}, but this brain is configured for "
                f"{expected_chain_id}",
                hint="point the brain at the right RPC, or re-deploy for this chain",
            )
        art = artifact()
        self.abi = art["abi"]
        self.bytecode = art["bytecode"]
        self.address = to_checksum_address(address) if address else None
        self.contract = self.w3.eth.contract(address=self.address, abi=self.abi) if address else None
        if self.address is not None and not self.has_code(self.address):
            raise ChainError(
                f"there is no contract at {self.address} on chain {self.chain_id}: nothing would answer calls "
                "or receive transactions",
                hint="check the registry address; after a chain reset run 'ledger chain deploy' and 'register' again",
            )
        self._errors = {
            keccak(text=f"{e['name']}({','.join(i['type'] for i in e['inputs'])})")[:4]: e
            for e in self.abi
            if e["type"] == "error"
        }

    def has_code(self, address: str) -> bool:
        try:
            return len(self.w3.eth.get_code(address)) > 0
        except Exception as exc:  # connection errors of every kind
            raise RpcUnreachableError(f"cannot read code at {address} from {self.rpc}: {type(exc).__name__}") from exc

    # ------------------------------------------------------------------ transactions

    def explain(self, data: Any) -> str:
        """Decode revert data into ``Name(arg=value, …)`` using the registry ABI."""
        raw = bytes.fromhex(data[2:]) if isinstance(data, str) and data.startswith("0x") else bytes(data or b"")
        err = self._errors.get(raw[:4])
        if err is None:
            return f"reverted with unknown data 0x{raw.hex()}"
        values = abi_decode([i["type"] for i in err["inputs"]], raw[4:])
        args = ", ".join(f"{i['name']}={_shown(i['name'], v)}" for i, v in zip(err["inputs"], values, strict=True))
        return f"{err['name']}({args})"

    def send(self, account: LocalAccount, call: Any, *, what: str) -> dict[str, Any]:
        """Build, sign, send and await one transaction; raise ChainError saying why it failed."""
        try:
            tx = call.build_transaction(
                {
                    "from": account.address,
                    "nonce": self.w3.eth.get_transaction_count(account.address, "pending"),
                    "chainId": self.chain_id,
                }
            )
            signed = account.sign_transaction(tx)
            tx_hash = self.w3.eth.send_raw_transaction(signed.raw_transaction)
            crashpoint("chain-after-send")
            receipt = self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=120)
        except ContractCustomError as exc:
            reason = self.explain(exc.data)
            raise ChainError(f"the registry refused {what}: {reason}", hint=_hint(reason)) from exc
        except ContractLogicError as exc:
            raise ChainError(f"the registry refused {what}: {exc}") from exc
        except TimeExhausted as exc:
            raise ChainError(
                f"{what}: no receipt within 120 s", hint="re-run; the commit reconciles from events"
            ) from exc
        except Web3RPCError as exc:
            text = str(exc)
            if "insufficient funds" in text.lower():
                raise ChainError(
                    f"{what}: the key {account.address} cannot pay for gas (insufficient funds)",
                    hint="fund the committer address, or use a funded key with --key",
                ) from exc
            raise ChainError(f"{what}: the node rejected the transaction: {text}") from exc
        except (OSError, ConnectionError) as exc:
            raise RpcUnreachableError(f"{what}: lost the RPC endpoint {self.rpc}: {exc}") from exc
        if receipt["status"] != 1:
            raise ChainError(f"{what}: transaction {receipt['transactionHash'].hex()} reverted")
        return dict(receipt)

    # ------------------------------------------------------------------ reads

    def bound(self) -> Any:
        """The web3 contract at the configured address (a call without one is refused)."""
        if self.contract is None:
            raise ChainError("no registry address configured", hint="run 'ledger chain deploy'")
        return self.contract

    def head(self, agent: int, block: Any = "latest") -> bytes:
        return bytes(self.bound().functions.headOf(agent).call(block_identifier=block))

    def sequence(self, agent: int, block: Any = "latest") -> int:
        return int(self.bound().functions.sequenceOf(agent).call(block_identifier=block))

    def owner(self, agent: int, block: Any = "latest") -> str:
        return str(self.bound().functions.ownerOf(agent).call(block_identifier=block))

    def is_committer(self, agent: int, committer: str, block: Any = "latest") -> bool:
        return bool(self.bound().functions.isCommitter(agent, committer).call(block_identifier=block))

    def events(self, agent: int, from_block: int = 0, to_block: Any = "latest") -> list[dict[str, Any]]:
        """The agent's RootCommitted events in (block, log index) order, numbered: the on-chain lineage.

        The log holds neither ``seq`` nor ``parent`` (ADR 29): the k-th event from the registry's
        deploy block is sequence k and its parent is the (k-1)-th's root, so ``from_block`` must be
        at or before the agent's first commit.  Callers that rely on the numbering compare the count
        with :meth:`sequence` at ``to_block`` (:meth:`lineage` does)."""
        query = {
            "address": self.bound().address,
            "topics": ["0x" + ROOT_COMMITTED.hex(), "0x" + word(agent, "uint256").hex()],
            "fromBlock": from_block,
            "toBlock": to_block,
        }
        try:
            logs = self.w3.eth.get_logs(query)
        except Exception as exc:
            raise RpcUnreachableError(f"cannot read events from {self.rpc}: {exc}") from exc
        out = [decode_root_committed(log) for log in logs]
        for ev in out:
            if ev["agent"] != agent or ev["registry"] != self.address:
                raise ChainError(f"the node answered a log of agent {ev['agent']:#x} at {ev['registry']} to a query "
                                 f"for agent {agent:#x} at {self.address}")  # fmt: skip
        return sequenced(out)

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
            return int(self.w3.eth.block_number)
        except Exception as exc:
            raise RpcUnreachableError(f"cannot read the block height from {self.rpc}: {exc}") from exc

    def block_hash(self, number: int) -> str | None:
        try:
            block = self.w3.eth.get_block(number)
        except Exception:  # a block past the tip after a reorg
            return None
        return "0x" + bytes(block["hash"]).hex()


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
    if reason.startswith("UnauthorizedCommitter"):
        return "ask the agent owner to authorize this key ('ledger chain authorize')"
    return None

def onchain_events(rpc: str, registry: str, agent: str | int) -> list[dict[str, Any]]:
    """Every root the agent ever committed, oldest first, with its sequence, block and tx."""
    agent_id = int(agent, 0) if isinstance(agent, str) else agent
    reg = Registry(rpc, registry)
    return reg.lineage(agent_id)
