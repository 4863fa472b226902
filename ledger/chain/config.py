"""The ``chain`` section of a brain's config: light, so commands can check it before loading the chain client."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ledger.errors import ChainError

__all__ = ["HEAD_OF_SELECTOR", "ChainConfig", "onchain_head"]

HEAD_OF_SELECTOR = "5ad8a111"  # keccak256("headOf(uint256)")[:4]; tests/unit/chain/test_chain.py recomputes it


@dataclass(frozen=True)
class ChainConfig:
    """The ``chain`` section of a brain's ``.ledger/config.json``."""

    rpc: str
    chain_id: int | None = None
    registry: str | None = None
    deploy_block: int = 0
    agent_id: int | None = None
    key: str | None = None

    @classmethod
    def of(cls, brain: Any) -> ChainConfig:
        doc = brain.config.get("chain")
        if not doc or not doc.get("rpc"):
            where = f"--brain {brain.root} " if getattr(brain, "root", None) is not None else ""
            raise ChainError(
                f"the brain at {getattr(brain, 'root', '?')} has no chain configured",
                hint=f"run 'ledger {where}chain up' or 'ledger {where}chain use RPC'",
            )
        fields = {f.name for f in dataclasses.fields(cls)}
        doc = {k: v for k, v in doc.items() if k in fields}
        if isinstance(doc.get("agent_id"), str):
            doc["agent_id"] = int(doc["agent_id"], 16)
        cfg = cls(**doc)
        object.__setattr__(cfg, "_root", getattr(brain, "root", None))  # named by require(); not a saved field
        return cfg

    def save(self, brain: Any) -> None:
        doc = dataclasses.asdict(self)
        if self.agent_id is not None:
            doc["agent_id"] = f"0x{self.agent_id:064x}"
        brain.update_config(chain=doc)

    def require(self, *names: str) -> None:
        for name in names:
            if getattr(self, name) is None:
                step = {"registry": "ledger chain deploy", "agent_id": "ledger chain register"}.get(name, "")
                root = getattr(self, "_root", None)
                where, flag = (f" of the brain at {root}", f"--brain {root} ") if root is not None else ("", "")
                raise ChainError(
                    f"the chain config{where} has no {name}",
                    hint=f"run 'ledger {flag}{step.removeprefix('ledger ')}'" if step else None,
                )


def onchain_head(rpc: str, registry: str, agent: int, timeout: float = 5.0) -> bytes:
    """The agent's on-chain head root, by one ``eth_call`` over the light client (``ledger chain anchor``
    asks this first, to say "nothing to commit" from the chain itself, reorgs included)."""
    from ledger.chain.rpc import Rpc
    from ledger.errors import RpcUnreachableError

    data = "0x" + HEAD_OF_SELECTOR + f"{agent:064x}"
    node = Rpc(rpc, timeout=timeout)
    try:
        result = node.call("eth_call", {"to": registry, "data": data}, "latest")
    except RpcUnreachableError as exc:
        raise RpcUnreachableError(f"cannot reach {rpc}: {exc.message}", hint="check 'ledger chain status'") from exc
    except ChainError as exc:
        raise ChainError(f"the registry at {registry} did not answer headOf: {exc.message}") from exc
    finally:
        node.close()
    if not isinstance(result, str) or len(result) != 66:
        raise ChainError(f"the registry at {registry} did not answer headOf: {result!r}")
    return bytes.fromhex(result[2:])
