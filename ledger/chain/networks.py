"""Chains by id, as a reader knows them: a plain name, whether it is a local test chain, and the
block explorer where a public one can be looked at (for the report page's "where anchored")."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Network", "network"]

LOCAL_IDS = frozenset({31337, 1337})  # anvil's and Hardhat's / Ganache's default chain ids

# chain id → (name, explorer base URL): public chains only, explorers that serve /address/, /tx/ and /token/.
KNOWN: dict[int, tuple[str, str]] = {
    1: ("Ethereum mainnet", "https://etherscan.io"),
    11155111: ("Sepolia (Ethereum test network)", "https://sepolia.etherscan.io"),
    17000: ("Holesky (Ethereum test network)", "https://holesky.etherscan.io"),
    10: ("OP Mainnet", "https://optimistic.etherscan.io"),
    8453: ("Base", "https://basescan.org"),
    84532: ("Base Sepolia (test network)", "https://sepolia.basescan.org"),
    42161: ("Arbitrum One", "https://arbiscan.io"),
    137: ("Polygon PoS", "https://polygonscan.com"),
}


@dataclass(frozen=True)
class Network:
    chain_id: int
    name: str
    local: bool
    explorer: str | None


def network(chain_id: int) -> Network:
    """What to call chain ``chain_id``: "local test chain" for a development id, the public chain's
    name and explorer when known, else "chain <id>" with no explorer (never a guessed link)."""
    if chain_id in LOCAL_IDS:
        return Network(chain_id, "local test chain", True, None)
    if chain_id in KNOWN:
        name, explorer = KNOWN[chain_id]
        return Network(chain_id, name, False, explorer)
    return Network(chain_id, f"chain {chain_id}", False, None)
