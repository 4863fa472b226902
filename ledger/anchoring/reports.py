"""What the chain commands return (ADR 73): the node, the registry, the agent, its anchors and epochs.

Each report's ``to_json()`` is the document the command prints with ``--json``, in the
bytes it printed before these were typed; the nested parts (the share token, the evidence
log's state) are reports too, so the schema names every key.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from ledger.reports import OMIT, Report, key


class _Unprinted(Report):
    """A report carrying fields its text needs but its document leaves out (named in ``unprinted``)."""

    unprinted: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        doc = super().to_json()
        for name in self.unprinted:
            doc.pop(name, None)
        return doc

    @classmethod
    def schema(cls) -> dict[str, Any]:
        out = super().schema()
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name in cls.unprinted:
                out["properties"].pop(f.name, None)
                out["required"] = [r for r in out["required"] if r != f.name]
        return out


# --------------------------------------------------------------------------- the local node, the endpoint


@dataclass(frozen=True)
class ChainUpReport(Report):
    """The brain's local anvil: its URL (now the brain's rpc), process and port; whether this run started it."""

    rpc: str
    pid: int
    port: int
    started: bool  # False: it was already running (the text says so on stderr)


@dataclass(frozen=True)
class ChainDownReport(Report):
    """The brain's local anvil stopped (its state kept for the next 'chain up'), or it was not running."""

    stopped: bool
    pid: int | None  # the process stopped; None when none was running


@dataclass(frozen=True)
class ChainUseReport(Report):
    """The RPC endpoint the brain now uses, and with --registry the registry it uses there."""

    rpc: str
    registry: str | None  # None: no --registry given (the configured one, if any, is left as it is)
    chain_id: int | None


# --------------------------------------------------------------------------- the registry and the agent


@dataclass(frozen=True)
class Holder(Report):
    """One holder of the agent's shares (balance > 0)."""

    address: str
    balance: int


@dataclass(frozen=True)
class EvidenceRoot(Report):
    """The evidence log's anchored size and root, as the token's metadata names them."""

    size: int
    root: str


@dataclass(frozen=True)
class TokenMetadata(Report):
    """The share token's metadata: the agent's on-chain head, sequence, evidence root and location."""

    uri: str
    head: str | None
    sequence: int
    evidence: EvidenceRoot | None
    location: str | None

    @classmethod
    def of(cls, doc: dict[str, Any]) -> TokenMetadata:
        ev = doc["evidence"]
        return cls(
            doc["uri"], doc["head"], doc["sequence"], None if ev is None else EvidenceRoot(**ev), doc["location"]
        )


@dataclass(frozen=True)
class ShareToken(Report):
    """The agent's ERC-1155 share token: supply, owner, holders (largest first), metadata."""

    token: str
    id: str
    total_supply: int
    owner: str
    owner_balance: int
    holders: tuple[Holder, ...]
    metadata: TokenMetadata

    @classmethod
    def of(cls, doc: dict[str, Any] | None) -> ShareToken | None:
        if doc is None:
            return None
        return cls(
            doc["token"],
            doc["id"],
            doc["total_supply"],
            doc["owner"],
            doc["owner_balance"],
            tuple(Holder(**h) for h in doc["holders"]),
            TokenMetadata.of(doc["metadata"]),
        )


@dataclass(frozen=True)
class EvidenceLogState(Report):
    """An evidence log's size and root (None while it is empty)."""

    size: int
    root: str | None


@dataclass(frozen=True)
class EvidenceStatus(Report):
    """The evidence log here and as anchored; pending None when the anchored one is not a prefix of it."""

    local: EvidenceLogState
    chain: EvidenceLogState
    pending: int | None


@dataclass(frozen=True)
class ChainStatusReport(Report):
    """The on-chain head of this brain's agent next to the local head, its evidence and shares, at one block."""

    rpc: str
    chain_id: int
    registry: str
    agent: str
    onchain_head: str | None
    onchain_seq: int
    local_head: str
    pending: int | None
    diverged: bool
    stale_receipts: int
    in_sync: bool
    evidence: EvidenceStatus
    block: int
    shares: ShareToken | None
    shares_unavailable: str | None

    @classmethod
    def of(cls, doc: dict[str, Any]) -> ChainStatusReport:
        ev = doc["evidence"]
        evidence = EvidenceStatus(EvidenceLogState(**ev["local"]), EvidenceLogState(**ev["chain"]), ev["pending"])
        return cls(**{**doc, "evidence": evidence, "shares": ShareToken.of(doc["shares"])})


@dataclass(frozen=True)
class DeployReport(Report):
    """The registry deployed (with its share token) and recorded in the brain's config."""

    registry: str
    chain_id: int
    block: int


@dataclass(frozen=True)
class RegisterReport(_Unprinted):
    """This brain's agent registered, and its share token (None: not shown; the text says why)."""

    agent: str
    registry: str
    shares: ShareToken | None
    shares_unavailable: str | None = None
    unprinted: ClassVar[tuple[str, ...]] = ("shares_unavailable",)


@dataclass(frozen=True)
class LocationReport(Report):
    """Where this brain is published, as the share token's metadata shows it; tx: the change sent, if any."""

    agent: str
    registry: str
    location: str | None
    tx: str | None


@dataclass(frozen=True)
class AuthorizeReport(Report):
    """A committer key granted or revoked for this brain's agent (the owner's transaction)."""

    address: str
    authorized: bool  # False: revoked
    agent: str
    registry: str
    tx: str


# --------------------------------------------------------------------------- anchoring roots, epochs


@dataclass(frozen=True)
class EvidenceSent(Report):
    """The evidence log committed in this run, as its EvidenceCommitted event names it."""

    size: int
    root: str
    head: str
    tx: str
    block: int
    gas_used: int


@dataclass(frozen=True)
class AnchorReport(Report):
    """Every snapshot not yet on chain committed, in order and batched ('ledger chain anchor')."""

    committed: int  # roots sent in this run
    transactions: tuple[str, ...]
    reconciled: int  # receipts recovered from chain events
    head: str | None
    seq: int | None  # None: the chain's head is the local one and no receipt names its sequence here
    evidence: EvidenceSent | None = field(default=OMIT)  # absent when the chain already had the local head


@dataclass(frozen=True)
class EpochReport(Report):
    """One epoch of this operator's log anchoring the new heads of several brains ('ledger chain epoch')."""

    epoch: int
    tx: str | None  # None: nothing to anchor
    gas_used: int = key("gasUsed")
    heads: int  # heads added
    size: int  # log entries
    root: str  # the log's root
    brains: int  # brains given receipts
    gas_per_head: float = key("gasPerHead")  # gas per entry added (heads and evidence)
    evidence: int  # evidence entries added
