"""Is the contract at a brain's registry address a BrainRegistry built from this repository?

Every other chain check asks the contract questions (``headOf``, ``sequenceOf``, ``uri``, the logs)
and believes its answers; a look-alike that answers them consistently would pass them all.  This
check reads the code itself (``eth_getCode``) and compares it with the builds this ledger knows
(docs/lineage.md, 'The registry's code'; ADR 54):

- this release's registry: the runtime bytecode shipped in ``ledger/artifacts/BrainRegistry.json``
  (``deployedBytecode``, whose immutable slots the compiler leaves zero; ``immutables`` names them);
- the previous release's (lineage v1.8, commit bc838ee): pinned below by the keccak-256 of its runtime
  code with its immutable slots zeroed, and those slots' offsets.

The registry's only immutables are OpenZeppelin EIP712's seven, each a 32-byte word in the code, and
each has exactly one value a deployment at ``address`` on chain ``chain_id`` can give it; all seven are
checked (nothing is merely masked):

==========================  ===============================================================
``_cachedDomainSeparator``  keccak256(TYPEHASH ‖ keccak256("BrainRegistry") ‖ keccak256("1")
                            ‖ chainId ‖ address), TYPEHASH = keccak256("EIP712Domain(string
                            name,string version,uint256 chainId,address verifyingContract)")
``_cachedChainId``          the chain id, a uint256
``_cachedThis``             the address, left-padded to 32 bytes
``_hashedName``             keccak256("BrainRegistry")
``_hashedVersion``          keccak256("1")
``_name``                   ShortString "BrainRegistry": its 13 bytes, zeros, then the byte 13
``_version``                ShortString "1": its 1 byte, zeros, then the byte 1
==========================  ===============================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.chain.abi import checksum, hexbytes
from ledger.chain.registry import artifact
from ledger.errors import ChainError, RpcUnreachableError
from ledger.protocol.signing import keccak

__all__ = ["KnownBuild", "check_registry_code", "expected_immutables", "known_builds", "masked_hash"]

NAME, VERSION = b"BrainRegistry", b"1"
_TYPEHASH = keccak(b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")

# OpenZeppelin EIP712's immutables in their declaration order (utils/cryptography/EIP712.sol), which is
# the order of their AST ids in the compiler's immutableReferences (scripts/export-artifact names them so).
IMMUTABLES = (
    "_cachedDomainSeparator",
    "_cachedChainId",
    "_cachedThis",
    "_hashedName",
    "_hashedVersion",
    "_name",
    "_version",
)


@dataclass(frozen=True)
class KnownBuild:
    name: str  # how a message names it
    size: int  # runtime code length in bytes
    masked: bytes  # keccak256 of the runtime code with every immutable slot zeroed
    immutables: dict[str, tuple[int, ...]]  # each immutable's byte offsets (32 bytes each)


# Lineage v1.8's registry (tests/fixtures/BrainRegistry-v1.8.json deployed; offsets found by deploying it).
_V1_8 = KnownBuild(
    name="BrainRegistry of lineage v1.8",
    size=13656,
    masked=bytes.fromhex("16d49bbd3c277fa26d25c99881aca737a650a62c462fd72d3699e4559ae5ea11"),
    immutables={
        "_cachedDomainSeparator": (10265,),
        "_cachedChainId": (10223,),
        "_cachedThis": (10181,),
        "_hashedName": (10346,),
        "_hashedVersion": (10386,),
        "_name": (6182,),
        "_version": (6230,),
    },
)


def _short_string(text: bytes) -> bytes:
    return text.ljust(31, b"\0") + bytes([len(text)])


def expected_immutables(chain_id: int, address: str) -> dict[str, bytes]:
    """The value each immutable must hold in a registry deployed at ``address`` on ``chain_id``."""
    chain = chain_id.to_bytes(32, "big")
    this = bytes.fromhex(checksum(address)[2:]).rjust(32, b"\0")
    hashed_name, hashed_version = keccak(NAME), keccak(VERSION)
    return {
        "_cachedDomainSeparator": keccak(_TYPEHASH + hashed_name + hashed_version + chain + this),
        "_cachedChainId": chain,
        "_cachedThis": this,
        "_hashedName": hashed_name,
        "_hashedVersion": hashed_version,
        "_name": _short_string(NAME),
        "_version": _short_string(VERSION),
    }


def masked_hash(code: bytes, immutables: dict[str, tuple[int, ...]]) -> bytes:
    """keccak256 of ``code`` with every immutable slot (32 bytes at each offset) zeroed."""
    out = bytearray(code)
    for offsets in immutables.values():
        for at in offsets:
            out[at : at + 32] = bytes(32)
    return keccak(bytes(out))


def known_builds() -> tuple[KnownBuild, ...]:
    """This release's registry (from the shipped artifact) and the previous release's (pinned)."""
    art = artifact()
    code = hexbytes(art["deployedBytecode"])
    immutables = {name: tuple(offsets) for name, offsets in art["immutables"].items()}
    current = KnownBuild("BrainRegistry of this release", len(code), masked_hash(code, immutables), immutables)
    return (current, _V1_8)


def check_registry_code(client: Any, address: str, chain_id: int, block: Any = "latest") -> KnownBuild:
    """The known build whose code is at ``address`` (its immutables each hold the one value a deployment
    there on ``chain_id`` gives them); else ChainError saying the contract is not a registry this ledger
    knows.  ``client`` is anything with ``call(method, *params)`` (:class:`ledger.chain.rpc.Rpc`) or a
    :class:`~ledger.chain.registry.Registry` (its ``node``)."""
    node = getattr(client, "node", client)
    tag = block if isinstance(block, str) else hex(int(block))
    try:
        code = hexbytes(node.call("eth_getCode", address, tag))
    except RpcUnreachableError as exc:
        raise RpcUnreachableError(f"cannot read the code at {address}: {exc.message}") from exc
    shown = checksum(address)
    if not code:
        raise ChainError(
            f"there is no contract at {shown} on chain {chain_id}",
            hint="check the registry address; after a chain reset run 'ledger chain deploy' and 'register' again",
        )
    want = expected_immutables(chain_id, shown)
    for build in known_builds():
        if build.size != len(code) or masked_hash(code, build.immutables) != build.masked:
            continue
        for name, offsets in build.immutables.items():
            for at in offsets:
                if code[at : at + 32] != want[name]:
                    raise ChainError(
                        f"the contract at {shown} has the code of the {build.name}, but its immutable {name} is "
                        f"0x{code[at : at + 32].hex()}, not 0x{want[name].hex()} as a registry deployed at this "
                        f"address on chain {chain_id} must have",
                        hint="it was not deployed here as built (a copy, or another chain's code): deploy a "
                        "registry with 'ledger chain deploy'",
                    )
        return build
    raise ChainError(
        f"the contract at {shown} is not a BrainRegistry this ledger knows: code hash 0x{keccak(code).hex()} "
        f"({len(code)} bytes) matches neither this release's registry nor the previous release's; was the "
        "registry address mistyped?",
        hint="check 'registry' in the brain's chain config ('ledger chain status' names it); a registry deployed "
        "with 'ledger chain deploy' is one this ledger knows",
    )
