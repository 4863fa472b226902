// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {BrainRegistry} from "../BrainRegistry.sol";
import {Rfc9162} from "./Epochs.t.sol";
import {Test, Vm} from "./Vm.sol";

/// @dev Drives the registry with authorized and unauthorized actors and keeps ghost state.
contract Handler {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));
    BrainRegistry public immutable reg;
    uint256 public immutable agent;
    address public immutable owner;
    address public immutable delegate;
    uint64 public ghostCount;
    bytes32 public ghostHead;
    uint256 public unauthorizedChanges;
    uint64 public ghostEvidence; // the evidence log's size: entries 0 .. ghostEvidence - 1 of Rfc9162

    constructor(BrainRegistry reg_, uint256 agent_, address owner_, address delegate_) {
        reg = reg_;
        agent = agent_;
        owner = owner_;
        delegate = delegate_;
    }

    function commit(uint256 seed) external {
        bytes32 root = keccak256(abi.encode(seed, ghostCount, "c"));
        vm.prank(owner);
        reg.commit(agent, ghostHead, root);
        ghostCount += 1;
        ghostHead = root;
    }

    /// @dev An authorized committer, not the owner: `commit`'s general path, not its fast one.
    function delegateCommit(uint256 seed) external {
        bytes32 root = keccak256(abi.encode(seed, ghostCount, "d"));
        vm.prank(delegate);
        uint64 seq = reg.commit(agent, ghostHead, root);
        ghostCount += 1;
        ghostHead = root;
        if (seq != ghostCount || reg.ownerOf(agent) != owner) unauthorizedChanges += 1;
    }

    /// @dev The owner replays its head, or commits zero: refused, nothing changes.
    function invalidCommit(bool replay) external {
        (bytes32 head, uint64 seq) = (reg.headOf(agent), reg.sequenceOf(agent));
        vm.prank(owner);
        try reg.commit(agent, head, replay ? head : bytes32(0)) {
            unauthorizedChanges += 1;
        } catch {}
        if (reg.headOf(agent) != head || reg.sequenceOf(agent) != seq) unauthorizedChanges += 1;
    }

    function batch(uint256 seed, uint8 n) external {
        n = uint8(1 + (n % 8));
        bytes32[] memory roots = new bytes32[](n);
        for (uint256 i; i < n; ++i) roots[i] = keccak256(abi.encode(seed, ghostCount, i, "b"));
        vm.prank(owner);
        reg.commitBatch(agent, ghostHead, roots);
        ghostCount += n;
        ghostHead = roots[n - 1];
    }

    /// @dev Zero to two roots and one to three new evidence entries, in one `commitEvidence`.
    function evidence(uint256 seed, uint8 n, uint8 grow) external {
        if (ghostHead == bytes32(0)) return; // evidence-only needs a head
        n = uint8(n % 3);
        uint64 size = ghostEvidence + 1 + (grow % 3);
        bytes32[] memory roots = new bytes32[](n);
        for (uint256 i; i < n; ++i) roots[i] = keccak256(abi.encode(seed, ghostCount, i, "e"));
        bytes32[] memory proof =
            ghostEvidence == 0 ? new bytes32[](0) : Rfc9162.consistency(ghostEvidence, 0, size, true);
        bytes32 root = Rfc9162.mth(0, size);
        vm.prank(delegate);
        reg.commitEvidence(agent, ghostHead, roots, size, root, proof);
        ghostCount += n;
        if (n > 0) ghostHead = roots[n - 1];
        ghostEvidence = size;
    }

    function staleCommit(uint256 seed) external {
        bytes32 wrongParent = keccak256(abi.encode(seed, "stale"));
        vm.prank(owner);
        try reg.commit(agent, wrongParent, keccak256(abi.encode(seed))) {
            unauthorizedChanges += 1;
        } catch {}
    }

    function strangerCommit(address stranger, uint256 seed) external {
        if (stranger == owner || stranger == delegate) return;
        (bytes32 head, uint64 seq) = (reg.headOf(agent), reg.sequenceOf(agent));
        vm.prank(stranger);
        try reg.commit(agent, head, keccak256(abi.encode(seed, "x"))) {
            unauthorizedChanges += 1;
        } catch {}
        vm.prank(stranger);
        try reg.setCommitter(agent, stranger, true) {
            unauthorizedChanges += 1;
        } catch {}
        if (reg.headOf(agent) != head || reg.sequenceOf(agent) != seq) unauthorizedChanges += 1;
    }
}

contract BrainRegistryInvariantTest is Test {
    BrainRegistry internal reg;
    Handler internal handler;
    uint256 internal agent;

    function setUp() public {
        reg = new BrainRegistry();
        address owner = vm.addr(0xA11CE);
        vm.prank(owner);
        agent = reg.register(bytes32("inv"), 100);
        address delegate = vm.addr(0xB0B);
        vm.prank(owner);
        reg.setCommitter(agent, delegate, true);
        handler = new Handler(reg, agent, owner, delegate);
    }

    function targetContracts() public view returns (address[] memory out) {
        out = new address[](1);
        out[0] = address(handler);
    }

    function invariant_sequenceGrowsByRootsCommitted() public view {
        assertEq(reg.sequenceOf(agent), handler.ghostCount(), "sequence");
    }

    function invariant_headIsLastCommittedRoot() public view {
        assertEq(reg.headOf(agent), handler.ghostHead(), "head");
    }

    function invariant_evidenceIsTheLastAnchoredLog() public view {
        (uint64 size, bytes32 root) = reg.evidenceOf(agent);
        uint64 ghost = handler.ghostEvidence();
        assertEq(size, ghost, "evidence size");
        assertEq(root, ghost == 0 ? bytes32(0) : Rfc9162.mth(0, ghost), "evidence root");
    }

    function invariant_unauthorizedNeverChangesState() public view {
        assertEq(handler.unauthorizedChanges(), 0, "unauthorized change");
    }
}
