"""The ``chain`` section of a brain's config: light, so commands can check it before loading web3."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ledger.errors import ChainError

__all__ = ["ChainConfig"]


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
            raise ChainError(
                "this brain has no chain configured", hint="run 'ledger chain up' or 'ledger chain use RPC'"
            )
        fields = {f.name for f in dataclasses.fields(cls)}
        doc = {k: v for k, v in doc.items() if k in fields}
        if isinstance(doc.get("agent_id"), str):
            doc["agent_id"] = int(doc["agent_id"], 16)
        return cls(**doc)

    def save(self, brain: Any) -> None:
        doc = dataclasses.asdict(self)
        if self.agent_id is not None:
            doc["agent_id"] = f"0x{self.agent_id:064x}"
        brain.update_config(chain=doc)

    def require(self, *names: str) -> None:
        for name in names:
            if getattr(self, name) is None:
                step = {"registry": "ledger chain deploy", "agent_id": "ledger chain register"}.get(name, "")
                raise ChainError(f"the chain config has no {name}", hint=f"run '{step}'" if step else None)
