// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title IBrainRegistry
/// @notice Anchors an AI agent's brain lineage on chain: each agent has a head (the latest
///         bundle root, `blake3-tree-v1`, 32 raw bytes) that only moves by compare-and-swap,
///         and every move is an event, so the events alone replay the lineage, in log order.
/// @dev The agent id doubles as the ERC-1155 token id of the agent's shares.
interface IBrainRegistry {
    /*//////////////////////////////////////////////////////////////
                                 ERRORS
    //////////////////////////////////////////////////////////////*/

    /// @dev `register` with a salt this owner already used.
    error AgentAlreadyRegistered(uint256 agentId);
    /// @dev The agent id was never registered.
    error UnknownAgent(uint256 agentId);
    /// @dev Only the agent's owner may do this.
    error NotAgentOwner(uint256 agentId, address caller);
    /// @dev `committer` is neither the owner nor an authorized committer of the agent.
    error UnauthorizedCommitter(uint256 agentId, address committer);
    /// @dev Compare-and-swap failed: the head moved on (a fork or a replay).
    error StaleParent(uint256 agentId, bytes32 head, bytes32 parent);
    /// @dev A root must be non-zero (zero means "no head yet") and differ from its parent.
    error InvalidRoot(uint256 agentId, bytes32 parent, bytes32 root);
    /// @dev A batch must hold at least one root.
    error EmptyBatch(uint256 agentId);
    /// @dev Registration must mint at least one share.
    error ZeroShares();
    /// @dev A delegated commit arrived after its deadline.
    error SignatureExpired(uint256 deadline, uint256 timestamp);
    /// @dev The signature is not `committer`'s over this commit and nonce.
    error InvalidSignature(address committer);
    /// @dev An epoch must add entries to the operator's log (`size` above the last) and have a non-zero root.
    error InvalidEpoch(address operator, uint64 lastSize, uint64 size, bytes32 root);
    /// @dev The consistency proof does not show the operator's last epoch is a prefix of the new one
    ///      (RFC 9162 §2.1.4.2): an earlier entry was rewritten, or the proof is wrong.
    error InconsistentEpoch(address operator, uint64 epoch);
    /// @dev An evidence root must grow the agent's evidence log (`size` above the last anchored
    ///      size) and be non-zero.
    error InvalidEvidence(uint256 agentId, uint64 lastSize, uint64 size, bytes32 root);
    /// @dev The consistency proof does not show the agent's last anchored evidence log is a prefix
    ///      of this one (RFC 9162 §2.1.4.2): an anchored outcome was rewritten or dropped, or the proof is wrong.
    error InconsistentEvidence(uint256 agentId, uint64 size);
    /// @dev A location is 0 to 256 bytes of printable ASCII (0x21-0x7E) without `"`, `\`, `{` or `}`.
    error InvalidLocation();

    /*//////////////////////////////////////////////////////////////
                                 EVENTS
    //////////////////////////////////////////////////////////////*/

    /// @notice A new agent, owned by `owner`, with `shares` minted to the owner.
    event AgentRegistered(uint256 indexed agentId, address indexed owner, bytes32 salt, uint256 shares);
    /// @notice The owner granted (`authorized` true) or revoked a committer key.
    event CommitterSet(uint256 indexed agentId, address indexed committer, bool authorized);
    /// @notice The head of `agentId` moved to `root`, by `committer` (the owner or an authorized key).
    /// @dev The event carries only what the log order cannot: the agent's events, ordered by (block,
    ///      log index), are its lineage. The k-th is sequence k (`sequenceOf` counts them) and its
    ///      parent is the (k-1)-th's root (zero for the first): `commit` enforces both, so neither is
    ///      repeated here (each 32-byte word of log data costs 256 gas, each topic 375).
    event RootCommitted(uint256 indexed agentId, bytes32 indexed root, address committer);
    /// @notice `operator` anchored epoch `epoch` of its log: the RFC 9162 Merkle tree hash `root`
    ///         (SHA-256) of the log's first `size` entries, each one agent's head (docs/lineage.md).
    event EpochAnchored(address indexed operator, uint64 indexed epoch, uint64 size, bytes32 root);
    /// @notice The agent's evidence log (its signed outcome records) now has `size` entries whose
    ///         RFC 9162 (SHA-256) tree hash is `root`, as recorded by a snapshot whose bundle root is
    ///         `head`: the agent's head when this event was emitted (docs/lineage.md).
    event EvidenceCommitted(uint256 indexed agentId, bytes32 indexed head, uint64 size, bytes32 root);
    /// @notice The owner published where the brain can be fetched (`location` empty: cleared).
    event LocationSet(uint256 indexed agentId, string location);

    /*//////////////////////////////////////////////////////////////
                               FUNCTIONS
    //////////////////////////////////////////////////////////////*/

    /// @notice Commit a lineage segment (`roots`, possibly empty) and the agent's evidence log
    ///         (`size`, `evidenceRoot`) in one transaction, binding the evidence to the head.
    /// @dev `roots` empty: `parent` must equal the current head and the head must be non-zero
    ///      (`StaleParent` / `InvalidRoot` otherwise); the evidence is bound to the current head.
    ///      `roots` non-empty: exactly `commitBatch`'s rules, then the evidence is bound to the new
    ///      head. The caller must be the owner or an authorized committer. Emits `RootCommitted`
    ///      per root, then `EvidenceCommitted(agentId, head, size, evidenceRoot)`.
    /// @param consistency Empty for the agent's first evidence root, else the RFC 9162 §2.1.4.2
    ///        consistency proof from `evidenceOf(agentId)` to (`size`, `evidenceRoot`), checked here.
    /// @return seq The agent's sequence number after the roots (its head's).
    function commitEvidence(
        uint256 agentId,
        bytes32 parent,
        bytes32[] calldata roots,
        uint64 size,
        bytes32 evidenceRoot,
        bytes32[] calldata consistency
    ) external returns (uint64 seq);

    /// @notice Register an agent owned by the caller and mint `shares` of it to the caller.
    /// @param salt Any value; one owner gets one agent per salt.
    /// @param shares Supply of the agent's ERC-1155 share token, minted to the caller.
    /// @return agentId `uint256(keccak256(abi.encode(block.chainid, address(this), msg.sender, salt)))`.
    function register(bytes32 salt, uint256 shares) external returns (uint256 agentId);

    /// @notice Publish where the brain can be fetched (a URL, say), shown in the share token's
    ///         metadata (`uri`); empty clears it. Owner only.
    /// @dev 0 to 256 bytes of printable ASCII 0x21-0x7E except `"`, `\`, `{` and `}` (`InvalidLocation`
    ///      otherwise): the metadata JSON holds it without escaping, and no `{id}` in it is substituted
    ///      by ERC-1155 clients. Emits `LocationSet`.
    function setLocation(uint256 agentId, string calldata location) external;

    /// @notice The brain's published location ("" if none).
    function locationOf(uint256 agentId) external view returns (string memory);

    /// @notice Authorize (or revoke) `committer` to move the agent's head. Owner only.
    function setCommitter(uint256 agentId, address committer, bool authorized) external;

    /// @notice Move the head from `parent` to `root` (compare-and-swap).
    /// @param parent Must equal the current head (zero for the first root).
    /// @return seq The sequence number of `root`.
    function commit(uint256 agentId, bytes32 parent, bytes32 root) external returns (uint64 seq);

    /// @notice Commit a lineage segment in one transaction: `roots[0]`'s parent is `parent`,
    ///         each next root's parent is the one before it.
    /// @return seq The sequence number of the last root.
    function commitBatch(uint256 agentId, bytes32 parent, bytes32[] calldata roots) external returns (uint64 seq);

    /// @notice Relay a commit signed (EIP-712 `Commit`) by an authorized `committer`.
    /// @param signature An ECDSA signature, or an ERC-1271 one when `committer` is a contract.
    function commitBySig(
        uint256 agentId,
        bytes32 parent,
        bytes32 root,
        address committer,
        uint256 deadline,
        bytes calldata signature
    ) external returns (uint64 seq);

    /// @notice The EIP-712 digest a committer signs for `commitBySig` (uses its current nonce).
    function commitDigest(uint256 agentId, bytes32 parent, bytes32 root, address committer, uint256 deadline)
        external
        view
        returns (bytes32);

    /// @notice Derive the agent id an owner gets for a salt (see `register`).
    function agentIdOf(address owner, bytes32 salt) external view returns (uint256);

    /// @notice The agent's current head (zero before its first root).
    function headOf(uint256 agentId) external view returns (bytes32);

    /// @notice The number of roots committed for the agent: its lineage length.
    function sequenceOf(uint256 agentId) external view returns (uint64);

    /// @notice The agent's owner (zero address if unregistered).
    function ownerOf(uint256 agentId) external view returns (address);

    /// @notice Whether `committer` may move the agent's head now (the owner always may).
    function isCommitter(uint256 agentId, address committer) external view returns (bool);

    /// @notice Anchor the caller's next epoch: its append-only log of heads now has `size` entries
    ///         whose RFC 9162 (SHA-256) tree hash is `root`.
    /// @param consistency The RFC 9162 §2.1.4.2 consistency proof from the caller's last epoch
    ///        (size, root) to this one, checked here, so no anchored entry can be rewritten;
    ///        empty for the first epoch.
    /// @return epoch The epoch's number: 1 for the caller's first, then one more each time.
    function anchorEpoch(uint64 size, bytes32 root, bytes32[] calldata consistency) external returns (uint64 epoch);

    /// @notice The size and root of `operator`'s epoch `epoch` (zeros for one not anchored).
    function epochOf(address operator, uint64 epoch) external view returns (uint64 size, bytes32 root);

    /// @notice `operator`'s last epoch, its size and root (zeros before its first).
    function latestEpoch(address operator) external view returns (uint64 epoch, uint64 size, bytes32 root);

    /// @notice The agent's last anchored evidence log: its size and root (zeros before the first).
    function evidenceOf(uint256 agentId) external view returns (uint64 size, bytes32 root);
}
