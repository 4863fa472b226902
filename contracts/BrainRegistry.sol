// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {ERC1155} from "@openzeppelin/contracts/token/ERC1155/ERC1155.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";
import {Base64} from "@openzeppelin/contracts/utils/Base64.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";

import {IBrainRegistry} from "./IBrainRegistry.sol";

/// @title BrainRegistry
/// @notice The on-chain half of brain-ledger: per-agent lineage heads, committer keys,
///         EIP-712 delegated commits, and the agent's shares as ERC-1155 tokens (id = agent id).
/// @dev Storage per agent is two adjacent slots: (owner, seq) packed, then the head. A steady-state
///      commit by the owner reads each once, writes each once and emits one three-topic event:
///      21,000 + ~1,600 calldata + 10,000 storage + 1,756 log + ~600 of code, under 35,000 gas.
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

    /// @dev Slot 0: `owner` (bits 0-159) and `seq` (bits 160-223), written whole; slot 1: `head`.
    ///      `commit`'s fast path reads and writes this layout in assembly.
    struct Agent {
        address owner;
        uint64 seq;
        bytes32 head;
    }

    uint256 private constant _OWNER_MASK = 0x00ffffffffffffffffffffffffffffffffffffffff; // type(uint160).max

    mapping(uint256 agentId => Agent agent) private _agents;
    mapping(uint256 agentId => mapping(address committer => bool authorized)) private _committers;

    /// @dev Per operator (an epoch's sender): its epoch count (bits 0-63) and last size (bits 64-127).
    mapping(address operator => uint256 countAndSize) private _logs;
    /// @dev Each epoch's root: the one new slot an epoch costs.
    mapping(address operator => mapping(uint256 epoch => bytes32 root)) private _epochRoots;
    /// @dev Each epoch's size, four uint64 per word (epoch e at word e >> 2, bits 64 * (e & 3)).
    mapping(address operator => mapping(uint256 word => uint256 sizes)) private _epochSizes;

    /// @dev An agent's last anchored evidence log: two slots, each written whole.
    struct Evidence {
        uint256 size;
        bytes32 root;
    }

    mapping(uint256 agentId => Evidence evidence) private _evidence;

    /// @dev Where the brain is published (a URL, say), as its owner set it; read by `uri` only.
    mapping(uint256 agentId => string location) private _locations;

    /// @dev The token metadata's fixed description (docs/lineage.md §15): ASCII, no `"` or `\`.
    string private constant _DESCRIPTION = "One share of this AI agent. A share is a claim on the agent's brain "
        "lineage: the head below is the lineage's current root (exactly which skills) and the evidence root "
        "commits to its recorded outcomes. It is not a claim on money, revenue, keys or control.";

    constructor() ERC1155("") EIP712("BrainRegistry", "1") {}

    /*//////////////////////////////////////////////////////////////
                              REGISTRATION
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IBrainRegistry
    function register(bytes32 salt, uint256 shares) external returns (uint256 agentId) {
        if (shares == 0) revert ZeroShares();
        agentId = agentIdOf(msg.sender, salt);
        if (_agents[agentId].owner != address(0)) revert AgentAlreadyRegistered(agentId);
        _agents[agentId].owner = msg.sender;
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

    /// @inheritdoc IBrainRegistry
    function setLocation(uint256 agentId, string calldata location) external {
        address owner = _agents[agentId].owner;
        if (owner == address(0)) revert UnknownAgent(agentId);
        if (owner != msg.sender) revert NotAgentOwner(agentId, msg.sender);
        bytes calldata raw = bytes(location);
        if (raw.length > 256) revert InvalidLocation();
        for (uint256 i; i < raw.length; ++i) {
            bytes1 c = raw[i];
            if (c < 0x21 || c > 0x7e || c == 0x22 || c == 0x5c || c == 0x7b || c == 0x7d) revert InvalidLocation();
        }
        _locations[agentId] = location;
        emit LocationSet(agentId, location);
    }

    /*//////////////////////////////////////////////////////////////
                                COMMITS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IBrainRegistry
    /// @dev The fast path is the owner committing on the current head: exactly the conditions under
    ///      which `_advance` succeeds for `msg.sender == owner` (a caller is never the zero address,
    ///      so the agent exists), with the same stores and event. Anything else (an authorized
    ///      committer, or any refusal with its error) goes through `_advance`.
    ///      `testFuzz_commitFastPathEqualsGeneralPath` compares the two from the same state.
    function commit(uint256 agentId, bytes32 parent, bytes32 root) external returns (uint64 seq) {
        bytes32 topic = RootCommitted.selector;
        assembly ("memory-safe") {
            mstore(0, agentId)
            mstore(0x20, _agents.slot)
            let slot := keccak256(0, 0x40)
            let word := sload(slot)
            let head := sload(add(slot, 1))
            let owner := and(word, _OWNER_MASK)
            if and(and(eq(owner, caller()), eq(head, parent)), iszero(or(iszero(root), eq(root, head)))) {
                seq := and(add(shr(160, word), 1), 0xffffffffffffffff) // wraps as `_advance`'s uint64 does
                sstore(slot, or(owner, shl(160, seq)))
                sstore(add(slot, 1), root)
                mstore(0, caller())
                log3(0, 0x20, topic, agentId, root)
                mstore(0, seq)
                return(0, 0x20)
            }
        }
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

    /// @dev One root: authorize, compare-and-swap, one event, two stores.
    function _advance(uint256 agentId, bytes32 parent, bytes32 root, address committer) private returns (uint64 seq) {
        Agent storage agent = _agents[agentId];
        (address owner, bytes32 head) = (agent.owner, agent.head);
        _authorize(agentId, owner, committer);
        if (head != parent) revert StaleParent(agentId, head, parent);
        if (root == bytes32(0) || root == head) revert InvalidRoot(agentId, head, root);
        unchecked {
            seq = agent.seq + 1;
        }
        _store(agent, owner, seq, root);
        emit RootCommitted(agentId, root, committer);
    }

    /// @dev Both slots written whole (no read-modify-write of the packed one). `seq` is cleaned:
    ///      Solidity leaves the bits above a uint64 undefined in assembly (a wrapped `++seq` keeps
    ///      its carry), and a carry at bit 224 would be read back by `commit`'s fast path.
    function _store(Agent storage agent, address owner, uint64 seq, bytes32 head) private {
        assembly ("memory-safe") {
            sstore(agent.slot, or(owner, shl(160, and(seq, 0xffffffffffffffff))))
            sstore(add(agent.slot, 1), head)
        }
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
        Agent storage agent = _agents[agentId];
        (address owner, bytes32 head) = (agent.owner, agent.head);
        seq = agent.seq;
        _authorize(agentId, owner, committer);
        if (head != parent) revert StaleParent(agentId, head, parent);
        uint256 n = roots.length;
        if (n == 0) revert EmptyBatch(agentId);
        for (uint256 i; i < n; ++i) {
            bytes32 root = roots[i];
            if (root == bytes32(0) || root == head) revert InvalidRoot(agentId, head, root);
            unchecked {
                ++seq;
            }
            emit RootCommitted(agentId, root, committer);
            head = root;
        }
        _store(agent, owner, seq, head);
    }

    /*//////////////////////////////////////////////////////////////
                                EVIDENCE
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IBrainRegistry
    /// @dev With roots: `_commit` (authorize, compare-and-swap, its events and stores), then two
    ///      slots rewritten; without: the agent's two slots read, nothing written but the evidence.
    ///      The proof costs ~72 gas of sha256 per node.
    function commitEvidence(
        uint256 agentId,
        bytes32 parent,
        bytes32[] calldata roots,
        uint64 size,
        bytes32 evidenceRoot,
        bytes32[] calldata consistency
    ) external returns (uint64 seq) {
        bytes32 head;
        uint256 n = roots.length;
        if (n == 0) {
            Agent storage agent = _agents[agentId];
            address owner;
            (owner, seq, head) = (agent.owner, agent.seq, agent.head);
            _authorize(agentId, owner, msg.sender);
            if (head != parent) revert StaleParent(agentId, head, parent);
            if (head == bytes32(0)) revert InvalidRoot(agentId, parent, head); // no head to bind the evidence to
        } else {
            seq = _commit(agentId, parent, roots, msg.sender);
            head = roots[n - 1];
        }
        Evidence storage evidence = _evidence[agentId];
        uint64 last = uint64(evidence.size);
        if (size <= last || evidenceRoot == bytes32(0)) revert InvalidEvidence(agentId, last, size, evidenceRoot);
        if (last == 0 ? consistency.length != 0 : !_consistent(last, size, evidence.root, evidenceRoot, consistency)) {
            revert InconsistentEvidence(agentId, size);
        }
        (evidence.size, evidence.root) = (size, evidenceRoot);
        emit EvidenceCommitted(agentId, head, size, evidenceRoot);
    }

    /*//////////////////////////////////////////////////////////////
                                 EPOCHS
    //////////////////////////////////////////////////////////////*/

    /// @inheritdoc IBrainRegistry
    /// @dev Three slots touched: the count and size rewritten, the root in a new slot, the sizes
    ///      word (new every fourth epoch); the proof costs ~72 gas of sha256 per node.
    function anchorEpoch(uint64 size, bytes32 root, bytes32[] calldata consistency) external returns (uint64 epoch) {
        uint256 log = _logs[msg.sender];
        uint64 count = uint64(log);
        uint64 last = uint64(log >> 64);
        if (size <= last || root == bytes32(0)) revert InvalidEpoch(msg.sender, last, size, root);
        unchecked {
            epoch = count + 1;
        }
        if (
            count == 0
                ? consistency.length != 0
                : !_consistent(last, size, _epochRoots[msg.sender][count], root, consistency)
        ) revert InconsistentEpoch(msg.sender, epoch);
        _logs[msg.sender] = uint256(epoch) | (uint256(size) << 64);
        _epochRoots[msg.sender][epoch] = root;
        uint256 shift = 64 * (epoch & 3);
        mapping(uint256 => uint256) storage sizes = _epochSizes[msg.sender];
        sizes[epoch >> 2] = (sizes[epoch >> 2] & ~(uint256(type(uint64).max) << shift)) | (uint256(size) << shift);
        emit EpochAnchored(msg.sender, epoch, size, root);
    }

    /// @dev RFC 9162 §2.1.4.2, step by step, for 0 < first < second: the tree of `second` leaves
    ///      hashing to `secondHash` extends the tree of `first` leaves hashing to `firstHash`.
    function _consistent(uint256 first, uint256 second, bytes32 firstHash, bytes32 secondHash, bytes32[] calldata proof)
        private
        view
        returns (bool)
    {
        uint256 i;
        bytes32 fr = firstHash; // a power-of-two `first` is its own first node: the RFC prepends it
        if (first & (first - 1) != 0) {
            if (proof.length == 0) return false;
            fr = proof[0];
            i = 1;
        }
        bytes32 sr = fr;
        uint256 fn = first - 1;
        uint256 sn = second - 1;
        while (fn & 1 == 1) {
            fn >>= 1;
            sn >>= 1;
        }
        for (; i < proof.length; ++i) {
            if (sn == 0) return false;
            bytes32 c = proof[i];
            if (fn & 1 == 1 || fn == sn) {
                fr = _node(c, fr);
                sr = _node(c, sr);
                while (fn & 1 == 0 && fn != 0) {
                    fn >>= 1;
                    sn >>= 1;
                }
            } else {
                sr = _node(sr, c);
            }
            fn >>= 1;
            sn >>= 1;
        }
        return sn == 0 && fr == firstHash && sr == secondHash;
    }

    /// @dev SHA-256(0x01 || left || right) by the precompile, in memory past the free pointer.
    function _node(bytes32 left, bytes32 right) private view returns (bytes32 out) {
        assembly ("memory-safe") {
            let p := mload(0x40)
            mstore8(p, 1)
            mstore(add(p, 1), left)
            mstore(add(p, 33), right)
            if iszero(staticcall(gas(), 2, p, 65, 0, 32)) { revert(0, 0) }
            out := mload(0)
        }
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
        return _agents[agentId].head;
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

    /// @inheritdoc IBrainRegistry
    function epochOf(address operator, uint64 epoch) public view returns (uint64 size, bytes32 root) {
        root = _epochRoots[operator][epoch];
        size = uint64(_epochSizes[operator][epoch >> 2] >> (64 * (epoch & 3)));
        if (root == bytes32(0)) size = 0; // epoch 0, or one not anchored yet
    }

    /// @inheritdoc IBrainRegistry
    function evidenceOf(uint256 agentId) external view returns (uint64 size, bytes32 root) {
        Evidence storage evidence = _evidence[agentId];
        (size, root) = (uint64(evidence.size), evidence.root);
    }

    /// @inheritdoc IBrainRegistry
    function locationOf(uint256 agentId) external view returns (string memory) {
        return _locations[agentId];
    }

    /// @notice The share token's metadata (ERC-1155 metadata JSON), built from the registry's state
    ///         at call time, so it follows every commit: `data:application/json;base64,` and the JSON's
    ///         exact bytes as docs/lineage.md §15 gives them.
    /// @dev A view: `commit` writes nothing for it. Unknown id: `UnknownAgent(id)`.
    function uri(uint256 id) public view override returns (string memory) {
        Agent storage agent = _agents[id];
        address owner = agent.owner;
        if (owner == address(0)) revert UnknownAgent(id);
        bytes memory json = abi.encodePacked(
            '{"name":"Brain ',
            Strings.toHexString(id >> 224, 4),
            '","description":"',
            _DESCRIPTION,
            '","decimals":0,"properties":{"agent_id":"',
            Strings.toHexString(id, 32),
            '","chain_id":',
            Strings.toString(block.chainid),
            ',"registry":"',
            Strings.toHexString(address(this)),
            '","owner":"',
            Strings.toHexString(owner),
            '",',
            _headFields(agent.head, agent.seq),
            _tailFields(id)
        );
        return string.concat("data:application/json;base64,", Base64.encode(json));
    }

    /// @dev `"head":…,"sequence":N,`: the head null iff the sequence is 0 (no root yet).
    function _headFields(bytes32 head, uint64 seq) private pure returns (bytes memory) {
        if (seq == 0) return abi.encodePacked('"head":null,"sequence":0,');
        string memory digits = Strings.toHexString(uint256(head), 32);
        assembly ("memory-safe") {
            // drop the "0x": the two bytes after the length word become the new length's tail
            let len := mload(digits)
            digits := add(digits, 2)
            mstore(digits, sub(len, 2))
        }
        return abi.encodePacked('"head":"blake3-tree-v1:', digits, '","sequence":', Strings.toString(seq), ",");
    }

    /// @dev `"evidence":…,"location":…}}`: evidence null iff its size is 0, location null iff unset.
    function _tailFields(uint256 id) private view returns (bytes memory) {
        Evidence storage evidence = _evidence[id];
        uint256 size = evidence.size;
        bytes memory ev = size == 0
            ? bytes("null")
            : abi.encodePacked(
                '{"size":', Strings.toString(size), ',"root":"', Strings.toHexString(uint256(evidence.root), 32), '"}'
            );
        string memory location = _locations[id];
        bytes memory loc = bytes(location).length == 0 ? bytes("null") : abi.encodePacked('"', location, '"');
        return abi.encodePacked('"evidence":', ev, ',"location":', loc, "}}");
    }

    /// @inheritdoc IBrainRegistry
    function latestEpoch(address operator) external view returns (uint64 epoch, uint64 size, bytes32 root) {
        uint256 log = _logs[operator];
        (epoch, size) = (uint64(log), uint64(log >> 64));
        root = _epochRoots[operator][epoch];
    }
}
