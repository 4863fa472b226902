"""An agent's shares: the ERC-1155 token the registry mints (token id = agent id), who holds it, and
its metadata, which the registry builds on chain from the lineage's head (docs/lineage/shares.md).

Everything here reads over the light client (:mod:`ledger.chain.rpc` and the hand-written ABI of
:mod:`ledger.chain.abi`): ``ledger chain status`` shows the shares without importing web3.

- :func:`metadata_json` is the spec's exact bytes, from the values the registry's views answer;
- :func:`decode_uri` takes a ``uri(agentId)`` answer apart and refuses anything but that exact form;
- :func:`read_metadata` reads ``uri`` and checks it against :func:`metadata_json` rebuilt from
  ``headOf``, ``sequenceOf``, ``evidenceOf``, ``locationOf``, ``ownerOf`` at the same block;
- :func:`read_shares` adds the holders (every address in the token's transfer events for this id,
  balances read from state) and the supply.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger.chain.abi import (
    TRANSFER_BATCH,
    TRANSFER_SINGLE,
    call_data,
    checksum,
    decode_string,
    decode_transfer,
    decode_uint_array,
    hexbytes,
)
from ledger.errors import ChainError
from ledger.protocol.bundlehash import VERSION, format_root

if TYPE_CHECKING:
    from ledger.chain.registry import Registry

__all__ = [
    "DATA_URI_PREFIX",
    "DESCRIPTION",
    "Holder",
    "Shares",
    "TokenMetadata",
    "check_location",
    "decode_uri",
    "metadata_json",
    "read_metadata",
    "read_shares",
    "unavailable",
]

DATA_URI_PREFIX = "data:application/json;base64,"
ROOT_PREFIX = VERSION + ":"  # a root as the spec prints it: blake3-tree-v1:<64 hex>
# The registry's fixed description (contracts/BrainRegistry.sol `_DESCRIPTION`, docs/lineage/shares.md).
DESCRIPTION = (
    "One share of this AI agent. A share is a claim on the agent's brain lineage: the head below is the "
    "lineage's current root (exactly which skills) and the evidence root commits to its recorded outcomes. "
    "It is not a claim on money, revenue, keys or control."
)
MAX_LOCATION = 256
_ZERO_ADDRESS = "0x" + "00" * 20
_HINT = "the registry builds this URI itself; see docs/lineage.md, 'The share token'"


@dataclass(frozen=True)
class Holder:
    address: str  # checksummed
    balance: int


@dataclass(frozen=True)
class TokenMetadata:
    uri: str
    json: dict[str, Any]
    head: str | None  # blake3-tree-v1:<64 hex>, None before the first root
    sequence: int
    evidence: tuple[int, str] | None  # (size, "0x" + 64 hex), None before the first evidence root
    location: str | None

    def to_json(self) -> dict[str, Any]:
        ev = None if self.evidence is None else {"size": self.evidence[0], "root": self.evidence[1]}
        return {
            "uri": self.uri,
            "head": self.head,
            "sequence": self.sequence,
            "evidence": ev,
            "location": self.location,
        }


@dataclass(frozen=True)
class Shares:
    token: str  # the registry address (the ERC-1155 contract), checksummed
    id: str  # the agent id, "0x" + 64 hex (chain status's "agent")
    total_supply: int
    owner: str
    owner_balance: int
    holders: tuple[Holder, ...]  # balance > 0 only, largest first, then address
    metadata: TokenMetadata

    def to_json(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "id": self.id,
            "total_supply": self.total_supply,
            "owner": self.owner,
            "owner_balance": self.owner_balance,
            "holders": [{"address": h.address, "balance": h.balance} for h in self.holders],
            "metadata": self.metadata.to_json(),
        }


# --------------------------------------------------------------------------- the exact bytes


def check_location(location: str) -> str:
    """A location as the registry takes it: 0..256 bytes of printable ASCII 0x21-0x7E without ``"``,
    ``\\``, ``{`` or ``}`` (so the JSON holds it unescaped, and ERC-1155 clients substitute no ``{id}``
    in it); anything else is refused, saying which character."""
    if not isinstance(location, str):
        raise ChainError(f"a location is text, got {type(location).__name__}")
    if len(location) > MAX_LOCATION:
        raise ChainError(
            f"the location is {len(location)} characters; at most {MAX_LOCATION} are allowed",
            hint="publish a shorter URL",
        )
    for i, c in enumerate(location, 1):
        if not 0x21 <= ord(c) <= 0x7E or c in '"\\{}':
            named = {
                " ": "a space",
                '"': 'a double quote (")',
                "\\": "a backslash (\\)",
                "{": "a brace ({)",
                "}": "a brace (})",
            }.get(c, f"U+{ord(c):04X}")
            raise ChainError(
                f"the location's character {i} is {named}: only printable ASCII without spaces, "
                "double quotes, backslashes or braces is allowed",
                hint="percent-encode it (%20 for a space)",
            )
    return location


def _shown(value: Any) -> str:
    """A value in an error as JSON writes it (``null``, ``"text"``): what the reader of the URI saw."""
    return json.dumps(value, default=str)[:80]


def _hex(value: Any, size: int, what: str) -> str:
    raw = hexbytes(value) if isinstance(value, str) else bytes(value)
    if isinstance(value, str) and not value.startswith("0x"):
        raise ChainError(f"{what} {_shown(value)} is not 0x-prefixed hex")
    if len(raw) != size:
        raise ChainError(f"{what} is {size} bytes, got {len(raw)}")
    return "0x" + raw.hex()


def _uint(value: Any, bits: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << bits:
        raise ChainError(f"{what} {_shown(value)} is not a uint{bits}")
    return value


def metadata_json(
    *,
    agent_id: int,
    chain_id: int,
    registry: str,
    owner: str,
    head: str | None,
    sequence: int,
    evidence: tuple[int, str] | None,
    location: str | None,
) -> bytes:
    """The token metadata's exact bytes (docs/lineage/shares.md): no whitespace, this key order, lowercase
    hex, decimal integers; ``head`` null iff ``sequence`` is 0, ``evidence`` null iff its size is 0,
    ``location`` null iff unset (None or empty)."""
    _uint(agent_id, 256, "the agent id")
    _uint(chain_id, 256, "the chain id")
    _uint(sequence, 64, "the sequence")
    if (head is None) != (sequence == 0):
        raise ChainError(
            f"the head is {'null' if head is None else head} at sequence {sequence}: "
            "it is null exactly when the sequence is 0"
        )
    if head is not None:
        digits = head.removeprefix(ROOT_PREFIX)
        if not head.startswith(ROOT_PREFIX) or len(digits) != 64 or digits.strip("0123456789abcdef"):
            raise ChainError(f"the head {_shown(head)} is not {ROOT_PREFIX}<64 lowercase hex>")
        head_field = f'"{head}"'
    else:
        head_field = "null"
    if evidence is not None:
        size, root = evidence
        if _uint(size, 64, "the evidence size") == 0:
            raise ChainError("an evidence log of size 0 is written null, not as a size and root")
        evidence_field = f'{{"size":{size},"root":"{_hex(root, 32, "the evidence root")}"}}'
    else:
        evidence_field = "null"
    location_field = f'"{check_location(location)}"' if location else "null"
    text = (
        f'{{"name":"Brain 0x{agent_id >> 224:08x}","description":"{DESCRIPTION}","decimals":0,'
        f'"properties":{{"agent_id":"0x{agent_id:064x}","chain_id":{chain_id},'
        f'"registry":"{_hex(registry, 20, "the registry address")}","owner":"{_hex(owner, 20, "the owner")}",'
        f'"head":{head_field},"sequence":{sequence},"evidence":{evidence_field},"location":{location_field}}}}}'
    )
    return text.encode("ascii")


def token_uri(json_bytes: bytes) -> str:
    """The URI the registry's ``uri`` returns for these bytes."""
    return DATA_URI_PREFIX + base64.b64encode(json_bytes).decode("ascii")


def decode_uri(uri: str) -> TokenMetadata:
    """A ``uri(agentId)`` answer taken apart; refused (ChainError) unless it is exactly
    ``data:application/json;base64,`` and canonical base64 of :func:`metadata_json`'s bytes."""
    if not isinstance(uri, str):
        raise ChainError(f"the token URI is not text but {type(uri).__name__}", hint=_HINT)
    if not uri.startswith(DATA_URI_PREFIX):
        raise ChainError(f"the token URI does not start with {DATA_URI_PREFIX}: {_shown(uri[:60])}", hint=_HINT)
    body = uri[len(DATA_URI_PREFIX) :]
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ChainError(f"the token URI's payload is not base64: {exc}", hint=_HINT) from exc
    if base64.b64encode(raw).decode("ascii") != body:
        raise ChainError("the token URI's base64 is not in its canonical form (padding or trailing bits)", hint=_HINT)

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            twice = sorted({k for k in keys if keys.count(k) > 1})
            raise ChainError(f"a key appears twice: {', '.join(twice)}", hint=_HINT)
        return dict(pairs)

    try:
        doc = json.loads(raw.decode("ascii"), object_pairs_hook=no_duplicates)
        props = doc["properties"]
        ev = props["evidence"]
        evidence = None if ev is None else (ev["size"], ev["root"])
        rebuilt = metadata_json(
            agent_id=int(props["agent_id"], 16),
            chain_id=props["chain_id"],
            registry=props["registry"],
            owner=props["owner"],
            head=props["head"],
            sequence=props["sequence"],
            evidence=evidence,
            location=props["location"],
        )
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ChainError(
            f"the token metadata is not the registry's JSON ({type(exc).__name__}: {exc})", hint=_HINT
        ) from exc
    except ChainError as exc:
        raise ChainError(f"the token metadata is not the registry's JSON: {exc.message}", hint=_HINT) from exc
    if rebuilt != raw:
        raise ChainError("the token metadata is not byte for byte the registry's JSON for its own values", hint=_HINT)
    return TokenMetadata(
        uri=uri, json=doc, head=props["head"], sequence=props["sequence"], evidence=evidence, location=props["location"]
    )


# --------------------------------------------------------------------------- reading the chain


def _call(reg: Registry, signature: str, *args: Any, block: Any) -> bytes:
    if reg.address is None:
        raise ChainError("no registry address configured", hint="run 'ledger chain deploy'")
    data = "0x" + call_data(signature, *args).hex()
    block_tag = hex(block) if isinstance(block, int) else str(block)
    return hexbytes(reg.node.call("eth_call", {"to": reg.address, "data": data}, block_tag))


def unavailable(reg: Registry, agent_id: int, *, block: Any = "latest") -> str | None:
    """Why this registry shows no shares for the agent, or None when it does: the agent is not
    registered there, or the registry predates the share token's metadata (its ``uri`` is empty)."""
    if int(reg.owner(agent_id, block), 16) == 0:
        return f"agent 0x{agent_id:064x} is not registered on the registry {reg.address}"
    if decode_string(_call(reg, "uri(uint256)", agent_id, block=block), "uri(agentId)") == "":
        return (
            f"the registry {reg.address} was deployed before share tokens had metadata (its uri is empty); "
            "a registry deployed by this version has it"
        )
    return None


def read_metadata(reg: Registry, agent_id: int, *, block: Any = "latest") -> TokenMetadata:
    """``uri(agentId)`` decoded, and checked equal to :func:`metadata_json` rebuilt from the registry's
    own views at the same block; a mismatch is an error (the token would show another head)."""
    owner = reg.owner(agent_id, block)
    if int(owner, 16) == 0:
        raise ChainError(
            f"agent 0x{agent_id:064x} is not registered on {reg.address}", hint="run 'ledger chain register'"
        )
    meta = decode_uri(decode_string(_call(reg, "uri(uint256)", agent_id, block=block), "uri(agentId)"))
    head, seq = reg.head(agent_id, block), reg.sequence(agent_id, block)
    size, root = reg.evidence(agent_id, block)
    location = decode_string(_call(reg, "locationOf(uint256)", agent_id, block=block), "locationOf(agentId)")
    expected = metadata_json(
        agent_id=agent_id,
        chain_id=reg.chain_id,
        registry=str(reg.address),
        owner=owner,
        head=format_root(head) if seq else None,
        sequence=seq,
        evidence=(size, "0x" + root.hex()) if size else None,
        location=location or None,
    )
    if expected != base64.b64decode(meta.uri[len(DATA_URI_PREFIX) :]):
        raise ChainError(
            f"the share token's metadata at {reg.address} does not match the registry's own views "
            f"(head, sequence, evidence, location, owner) for agent 0x{agent_id:064x}",
            hint="this is not the BrainRegistry of docs/lineage.md; check its address",
        )
    return meta


def read_shares(
    client: Registry | str, registry: str, agent_id: int, *, from_block: int = 0, block: Any = None
) -> Shares:
    """The agent's shares on ``registry``: holders from every TransferSingle/TransferBatch log of this id
    since ``from_block`` (the registry's deploy block, where the config has it), balances from state
    (``balanceOfBatch``), all read at one block (the tip unless ``block``), and the checked metadata."""
    from ledger.chain.registry import Registry

    if isinstance(client, str):
        reg = Registry(client, registry)
    elif client.address is not None and client.address.lower() == registry.lower():
        reg = client
    else:
        reg = Registry(client.rpc, registry)
    at = reg.block_number() if block is None else block
    metadata = read_metadata(reg, agent_id, block=at)
    owner = reg.owner(agent_id, at)
    seen: dict[str, None] = {owner: None}
    minted = 0  # the shares the logs create (from the zero address) less those they destroy (to it)
    for log in reg.logs([TRANSFER_SINGLE], from_block, at) + reg.logs([TRANSFER_BATCH], from_block, at):
        for sender, receiver, token_id, value in decode_transfer(log):
            if token_id == agent_id:
                seen.update({a: None for a in (sender, receiver) if a.lower() != _ZERO_ADDRESS})
                minted += (value if sender.lower() == _ZERO_ADDRESS else 0) - (
                    value if receiver.lower() == _ZERO_ADDRESS else 0
                )
    accounts = list(seen)
    reply = _call(reg, "balanceOfBatch(address[],uint256[])", accounts, [agent_id] * len(accounts), block=at)
    balances = decode_uint_array(reply, 0, "balanceOfBatch")
    if len(balances) != len(accounts):
        raise ChainError(f"balanceOfBatch answered {len(balances)} balances for {len(accounts)} accounts")
    by_account = dict(zip(accounts, balances, strict=True))
    if sum(by_account.values()) != minted:  # a holder the logs never named holds the rest: the list is incomplete
        raise ChainError(
            f"the transfer logs of token 0x{agent_id:064x} from block {from_block} mint {minted:,} "
            f"share(s), but the addresses they name hold {sum(by_account.values()):,}: some logs are "
            "missing, so the holders and supply would be wrong",
            hint="the config's deploy_block must not be after the agent's registration; or use a node "
            "that keeps every log (an archive node)",
        )
    holders = sorted(
        (Holder(checksum(a), b) for a, b in by_account.items() if b > 0), key=lambda h: (-h.balance, h.address.lower())
    )
    return Shares(
        token=str(reg.address),
        id=f"0x{agent_id:064x}",
        total_supply=sum(by_account.values()),
        owner=owner,
        owner_balance=by_account[owner],
        holders=tuple(holders),
        metadata=metadata,
    )
