// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {ERC1155} from "@openzeppelin/contracts/token/ERC1155/ERC1155.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

import {IBrainRegistry} from "./IBrainRegistry.sol";

/// @title BrainRegistry
/// @notice The on-chain half of brain-ledger: per-agent lineage heads, committer keys,
///         EIP-712 delegated commits, and the agent's shares as ERC-1155 tokens (id = agent id).
/// @dev Storage per agent is two slots: the head, and (owner, seq) packed. A steady-state
///      commit by the owner therefore touches exactly those two slots and emits one event.
contract BrainRegistry is IBrainRegistry, ERC1155, EIP712, Nonces {
    /*//////////////////////////////////////////////////////////////
                                CONSTANTS
    //////////////////////////////////////////////////////////////*/

    /// @dev EIP-712 type of a delegated commit.
    bytes32 public constant COMMIT_TYPEHASH =
        keccak256("Commit(uint256 agentId,bytes32 parent,bytes32 root,uint256 nonce,uint256 deadline)");

    /*//////////////////////////////////////////////////////////////
                                 STORAGE
    //////////////////////////////////////////////////////////////*/

    /// @dev `owner` and `seq` share one slot (20 + 8 bytes).
    struct Agent {
        address owner;
        uint64 seq;
    }

    mapping(uint256 agentId => bytes32 head) private _heads;
    mapping(uint256 agentId => Agent agent) private _agents;
    mapping(uint256 agentId => mapping(address committer => bool authorized)) private _committers;

    constructor() ERC1155("") EIP712("BrainRegistry", "1") {}

    /*//////////////////////////////////////////////////////////////
                              REGISTRATION
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IBrainRegistry
    function register(bytes32 salt, uint256 shares) external returns (uint256 agentId) {
        if (shares == 0) revert ZeroShares();
        agentId = agentIdOf(msg.sender, salt);
        if (_agents[agentId].owner != address(0)) revert AgentAlreadyRegistered(agentId);
        _agents[agentId] = Agent({owner: msg.sender, seq: 0});
        emit AgentRegistered(agentId, msg.sender, salt, shares);
        _mint(msg.sender, agentId, shares, "");
    }

    /// @inheritdoc IBrainRegistry
    function setCommitter(uint256 agentId, address committer, bool authorized) external {
        address owner = _agents[agentId].owner;
        if (owner == address(0)) revert UnknownAgent(agentId);
        if (owner != msg.sender) revert NotAgentOwner(agentId, msg.sender);
        _committers[agentId][committer] = authorized;
        emit CommitterSet(agentId, committer, authorized);
    }

    /*//////////////////////////////////////////////////////////////
                                COMMITS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IBrainRegistry
    function commit(uint256 agentId, bytes32 parent, bytes32 root) external returns (uint64 seq) {
        return _advance(agentId, parent, root, msg.sender);
    }

    /// @inheritdoc IBrainRegistry
    function commitBatch(uint256 agentId, bytes32 parent, bytes32[] calldata roots) external returns (uint64 seq) {
        return _commit(agentId, parent, roots, msg.sender);
    }

    /// @inheritdoc IBrainRegistry
    function commitBySig(
        uint256 agentId,
        bytes32 parent,
        bytes32 root,
        address committer,
        uint256 deadline,
        bytes calldata signature
    ) external returns (uint64 seq) {
        if (block.timestamp > deadline) revert SignatureExpired(deadline, block.timestamp);
        bytes32 digest = _commitDigest(agentId, parent, root, _useNonce(committer), deadline);
        if (!SignatureChecker.isValidSignatureNow(committer, digest, signature)) revert InvalidSignature(committer);
        return _advance(agentId, parent, root, committer);
    }

    /// @dev One root: the hot path, kept to two cold slots, two stores and one event.
    function _advance(uint256 agentId, bytes32 parent, bytes32 root, address committer) private returns (uint64 seq) {
        Agent memory agent = _agents[agentId];
        _authorize(agentId, agent.owner, committer);
        bytes32 head = _heads[agentId];
        if (head != parent) revert StaleParent(agentId, head, parent);
        if (root == bytes32(0) || root == head) revert InvalidRoot(agentId, head, root);
        unchecked {
            seq = agent.seq + 1;
        }
        _heads[agentId] = root;
        _agents[agentId] = Agent({owner: agent.owner, seq: seq});
        emit RootCommitted(agentId, seq, root, head, committer);
    }

    function _authorize(uint256 agentId, address owner, address committer) private view {
        if (owner == address(0)) revert UnknownAgent(agentId);
        if (committer != owner && !_committers[agentId][committer]) revert UnauthorizedCommitter(agentId, committer);
    }

    /// @dev A lineage segment: authorize, compare-and-swap, one event per root, two stores in all.
    function _commit(uint256 agentId, bytes32 parent, bytes32[] calldata roots, address committer)
        private
        returns (uint64 seq)
    {
        Agent memory agent = _agents[agentId];
        _authorize(agentId, agent.owner, committer);
        bytes32 head = _heads[agentId];
        if (head != parent) revert StaleParent(agentId, head, parent);
        uint256 n = roots.length;
        if (n == 0) revert EmptyBatch(agentId);
        seq = agent.seq;
        for (uint256 i; i < n; ++i) {
            bytes32 root = roots[i];
            if (root == bytes32(0) || root == head) revert InvalidRoot(agentId, head, root);
            unchecked {
                ++seq;
            }
            emit RootCommitted(agentId, seq, root, head, committer);
            head = root;
        }
        _heads[agentId] = head;
        _agents[agentId] = Agent({owner: agent.owner, seq: seq});
    }

    /*//////////////////////////////////////////////////////////////
                                 VIEWS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IBrainRegistry
    function commitDigest(uint256 agentId, bytes32 parent, bytes32 root, address committer, uint256 deadline)
        external
        view
        returns (bytes32)
    {
        return _commitDigest(agentId, parent, root, nonces(committer), deadline);
    }

    /// @inheritdoc IBrainRegistry
    function agentIdOf(address owner, bytes32 salt) public view returns (uint256) {
        return uint256(keccak256(abi.encode(block.chainid, address(this), owner, salt)));
    }

    /// @inheritdoc IBrainRegistry
    function headOf(uint256 agentId) external view returns (bytes32) {
        return _heads[agentId];
    }

    /// @inheritdoc IBrainRegistry
    function sequenceOf(uint256 agentId) external view returns (uint64) {
        return _agents[agentId].seq;
    }

    /// @inheritdoc IBrainRegistry
    function ownerOf(uint256 agentId) external view returns (address) {
        return _agents[agentId].owner;
    }

    /// @inheritdoc IBrainRegistry
    function isCommitter(uint256 agentId, address committer) public view returns (bool) {
        address owner = _agents[agentId].owner;
        return owner != address(0) && (committer == owner || _committers[agentId][committer]);
    }

    /// @dev The committer is bound by its own nonce and by the signature check against its address.
    function _commitDigest(uint256 agentId, bytes32 parent, bytes32 root, uint256 nonce, uint256 deadline)
        private
        view
        returns (bytes32)
    {
        return _hashTypedDataV4(keccak256(abi.encode(COMMIT_TYPEHASH, agentId, parent, root, nonce, deadline)));
    }
}
