// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {BrainRegistry} from "../BrainRegistry.sol";
import {IBrainRegistry} from "../IBrainRegistry.sol";
import {Test, Vm} from "./Vm.sol";

contract BrainRegistryTest is Test {
    BrainRegistry internal reg;
    uint256 internal constant OWNER_KEY = 0xA11CE;
    uint256 internal constant COMMITTER_KEY = 0xB0B;
    address internal owner;
    address internal committer;
    uint256 internal agent;

    function setUp() public {
        reg = new BrainRegistry();
        owner = vm.addr(OWNER_KEY);
        committer = vm.addr(COMMITTER_KEY);
        vm.prank(owner);
        agent = reg.register(bytes32("brain"), 1_000_000);
    }

    function r(uint256 i) internal pure returns (bytes32) {
        return keccak256(abi.encode("root", i));
    }

    // ------------------------------------------------------------------ registration

    function test_register_derivesIdAndMintsShares() public view {
        assertEq(agent, uint256(keccak256(abi.encode(block.chainid, address(reg), owner, bytes32("brain")))), "id");
        assertEq(agent, reg.agentIdOf(owner, bytes32("brain")), "agentIdOf");
        assertEq(reg.balanceOf(owner, agent), 1_000_000, "shares");
        assertTrue(reg.ownerOf(agent) == owner, "owner");
        assertEq(reg.sequenceOf(agent), 0, "seq");
        assertEq(reg.headOf(agent), bytes32(0), "head");
    }

    function test_register_revertsOnReuseAndZeroShares() public {
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.AgentAlreadyRegistered.selector, agent));
        reg.register(bytes32("brain"), 1);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.ZeroShares.selector));
        reg.register(bytes32("other"), 0);
    }

    function test_sharesAreTransferableAndReadHead() public {
        vm.prank(owner);
        reg.commit(agent, 0, r(1));
        address holder = address(0xBEEF);
        vm.prank(owner);
        reg.safeTransferFrom(owner, holder, agent, 250, "");
        assertEq(reg.balanceOf(holder, agent), 250, "holder balance");
        // a holder reads the head and lineage length through the token id
        assertEq(reg.headOf(agent), r(1), "head via id");
        assertEq(reg.sequenceOf(agent), 1, "length via id");
    }

    // ------------------------------------------------------------------ commits

    function test_commit_compareAndSwap() public {
        vm.expectEmit(true, true, true, true, address(reg));
        emit IBrainRegistry.RootCommitted(agent, r(1), owner);
        vm.prank(owner);
        assertEq(reg.commit(agent, 0, r(1)), 1, "seq 1");
        vm.prank(owner);
        reg.commit(agent, r(1), r(2));
        assertEq(reg.headOf(agent), r(2), "head");
        assertEq(reg.sequenceOf(agent), 2, "seq");
    }

    function test_commit_revertsOnStaleParent() public {
        vm.prank(owner);
        reg.commit(agent, 0, r(1));
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.StaleParent.selector, agent, r(1), bytes32(0)));
        reg.commit(agent, 0, r(2)); // a fork from genesis
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.StaleParent.selector, agent, r(1), bytes32(0)));
        reg.commit(agent, 0, r(1)); // a replay of the first commit
    }

    function test_commit_revertsOnInvalidRoot() public {
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidRoot.selector, agent, bytes32(0), bytes32(0)));
        reg.commit(agent, 0, 0);
        vm.prank(owner);
        reg.commit(agent, 0, r(1));
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidRoot.selector, agent, r(1), r(1)));
        reg.commit(agent, r(1), r(1));
    }

    function test_commit_revertsOnUnknownAgentAndUnauthorized() public {
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnknownAgent.selector, uint256(7)));
        reg.commit(7, 0, r(1));
        vm.prank(committer);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnauthorizedCommitter.selector, agent, committer));
        reg.commit(agent, 0, r(1));
    }

    function test_commit_byAuthorizedCommitterEmitsTheCommitter() public {
        vm.prank(owner);
        reg.commit(agent, 0, r(1)); // the owner's fast path
        vm.prank(owner);
        reg.setCommitter(agent, committer, true);
        vm.expectEmit(true, true, true, true, address(reg));
        emit IBrainRegistry.RootCommitted(agent, r(2), committer);
        vm.prank(committer);
        assertEq(reg.commit(agent, r(1), r(2)), 2, "seq 2"); // the general path
        vm.prank(owner);
        assertEq(reg.commit(agent, r(2), r(3)), 3, "seq 3");
        assertEq(reg.headOf(agent), r(3), "head");
        assertEq(reg.sequenceOf(agent), 3, "seq");
        assertTrue(reg.ownerOf(agent) == owner, "the owner is kept beside the sequence");
    }

    function test_commit_ownerOfAnotherAgentIsNotAuthorized() public {
        address other = address(0x0DD);
        vm.prank(other);
        uint256 otherAgent = reg.register(bytes32("other"), 1);
        vm.prank(other);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnauthorizedCommitter.selector, agent, other));
        reg.commit(agent, 0, r(1));
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnauthorizedCommitter.selector, otherAgent, owner));
        reg.commit(otherAgent, 0, r(1));
    }

    function test_committerAuthorizeAndRevoke() public {
        vm.prank(owner);
        reg.setCommitter(agent, committer, true);
        assertTrue(reg.isCommitter(agent, committer), "authorized");
        vm.prank(committer);
        reg.commit(agent, 0, r(1));
        vm.prank(owner);
        reg.setCommitter(agent, committer, false);
        vm.prank(committer);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnauthorizedCommitter.selector, agent, committer));
        reg.commit(agent, r(1), r(2));
    }

    function test_setCommitter_revertsForNonOwnerAndUnknownAgent() public {
        vm.prank(committer);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.NotAgentOwner.selector, agent, committer));
        reg.setCommitter(agent, committer, true);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnknownAgent.selector, uint256(9)));
        reg.setCommitter(9, committer, true);
    }

    function test_batch_chainsParents() public {
        bytes32[] memory roots = new bytes32[](3);
        for (uint256 i; i < 3; ++i) roots[i] = r(i + 1);
        vm.expectEmit(true, true, true, true, address(reg));
        emit IBrainRegistry.RootCommitted(agent, r(2), owner);
        vm.prank(owner);
        assertEq(reg.commitBatch(agent, 0, roots), 3, "last seq");
        assertEq(reg.headOf(agent), r(3), "head");
    }

    function test_batch_revertsWhenEmpty() public {
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.EmptyBatch.selector, agent));
        reg.commitBatch(agent, 0, new bytes32[](0));
    }

    // ------------------------------------------------------------------ delegated commits

    function _sign(uint256 key, bytes32 parent, bytes32 root, uint256 deadline) internal returns (bytes memory) {
        bytes32 digest = reg.commitDigest(agent, parent, root, vm.addr(key), deadline);
        (uint8 v, bytes32 rs, bytes32 s) = vm.sign(key, digest);
        return abi.encodePacked(rs, s, v);
    }

    function test_commitBySig_relayedByAnyone() public {
        vm.prank(owner);
        reg.setCommitter(agent, committer, true);
        bytes memory sig = _sign(COMMITTER_KEY, 0, r(1), block.timestamp + 60);
        vm.prank(address(0xdead));
        reg.commitBySig(agent, 0, r(1), committer, block.timestamp + 60, sig);
        assertEq(reg.headOf(agent), r(1), "head");
        assertEq(reg.nonces(committer), 1, "nonce used");
    }

    function test_commitBySig_revertsOnReplayExpiryWrongSignerAndUnauthorized() public {
        vm.prank(owner);
        reg.setCommitter(agent, committer, true);
        uint256 deadline = block.timestamp + 60;
        bytes memory sig = _sign(COMMITTER_KEY, 0, r(1), deadline);
        reg.commitBySig(agent, 0, r(1), committer, deadline, sig);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidSignature.selector, committer));
        reg.commitBySig(agent, 0, r(1), committer, deadline, sig); // nonce moved on: replay fails
        bytes memory late = _sign(COMMITTER_KEY, r(1), r(2), deadline);
        vm.warp(deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.SignatureExpired.selector, deadline, deadline + 1));
        reg.commitBySig(agent, r(1), r(2), committer, deadline, late);
        bytes memory forged = _sign(0xE11E, r(1), r(2), deadline + 100);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidSignature.selector, committer));
        reg.commitBySig(agent, r(1), r(2), committer, deadline + 100, forged);
        address stranger = vm.addr(0xE11E);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnauthorizedCommitter.selector, agent, stranger));
        reg.commitBySig(agent, r(1), r(2), stranger, deadline + 100, forged);
    }

    // ------------------------------------------------------------------ fuzz

    function testFuzz_commit(bytes32 a, bytes32 b) public {
        vm.assume(a != 0 && b != 0 && a != b);
        vm.startPrank(owner);
        reg.commit(agent, 0, a);
        reg.commit(agent, a, b);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.StaleParent.selector, agent, b, a));
        reg.commit(agent, a, keccak256(abi.encode(b)));
        vm.stopPrank();
        assertEq(reg.headOf(agent), b, "head");
        assertEq(reg.sequenceOf(agent), 2, "seq");
    }

    function testFuzz_batch(uint8 n, uint256 seed) public {
        n = uint8(bound(n, 1, 40));
        bytes32[] memory roots = new bytes32[](n);
        for (uint256 i; i < n; ++i) roots[i] = keccak256(abi.encode(seed, i));
        vm.prank(owner);
        reg.commitBatch(agent, 0, roots);
        assertEq(reg.sequenceOf(agent), n, "seq grows by n");
        assertEq(reg.headOf(agent), roots[n - 1], "head is last root");
    }

    /// @dev `commit`'s assembly fast path (the owner) against `commitBatch` of one root (the general
    ///      path: the same checks, stores and event) from the same stored state, the sequence's
    ///      uint64 wrap included: the same return or revert data, the same two slots, the same log.
    function testFuzz_commitFastPathEqualsGeneralPath(uint64 seq, bytes32 head, bytes32 parent, bytes32 root, uint8 pick)
        public
    {
        bytes32 slot = keccak256(abi.encode(agent, uint256(6))); // `_agents` (forge inspect storageLayout)
        vm.prank(owner);
        reg.commit(agent, 0, r(1));
        assertEq(vm.load(address(reg), slot), bytes32(uint256(uint160(owner)) | (uint256(1) << 160)), "layout: slot 0");
        assertEq(vm.load(address(reg), bytes32(uint256(slot) + 1)), r(1), "layout: slot 1");
        if (pick & 3 == 0) seq = type(uint64).max;
        if (pick & 4 == 0) parent = head;
        if (pick & 24 == 8) root = head;
        if (pick & 24 == 16) root = 0;
        vm.store(address(reg), slot, bytes32(uint256(uint160(owner)) | (uint256(seq) << 160)));
        vm.store(address(reg), bytes32(uint256(slot) + 1), head);
        bytes32[] memory roots = new bytes32[](1);
        roots[0] = root;
        uint256 before = vm.snapshotState();
        (bool okFast, bytes memory outFast, bytes32[3] memory stateFast) =
            _committed(abi.encodeCall(reg.commit, (agent, parent, root)), slot);
        vm.revertToState(before);
        (bool okGeneral, bytes memory outGeneral, bytes32[3] memory stateGeneral) =
            _committed(abi.encodeCall(reg.commitBatch, (agent, parent, roots)), slot);
        assertTrue(okFast == okGeneral, "both succeed or both revert");
        assertEq(keccak256(outFast), keccak256(outGeneral), "return or revert data");
        assertEq(stateFast[0], stateGeneral[0], "slot 0");
        assertEq(stateFast[1], stateGeneral[1], "slot 1");
        assertEq(stateFast[2], stateGeneral[2], "the log");
    }

    /// @dev One call by the owner: success, its return data, and (slot 0, slot 1, hash of the logs).
    function _committed(bytes memory call, bytes32 slot) internal returns (bool ok, bytes memory out, bytes32[3] memory state) {
        vm.recordLogs();
        vm.prank(owner);
        (ok, out) = address(reg).call(call);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        state[0] = vm.load(address(reg), slot);
        state[1] = vm.load(address(reg), bytes32(uint256(slot) + 1));
        state[2] = keccak256(abi.encode(logs));
    }

    function testFuzz_authorization(address caller) public {
        vm.assume(caller != owner);
        vm.prank(caller);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnauthorizedCommitter.selector, agent, caller));
        reg.commit(agent, 0, r(1));
        vm.prank(caller);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.NotAgentOwner.selector, agent, caller));
        reg.setCommitter(agent, caller, true);
        assertEq(reg.sequenceOf(agent), 0, "unchanged");
        assertTrue(!reg.isCommitter(agent, caller), "not authorized");
    }
}

/// @dev One call per test on cold storage, as in a real transaction (`forge snapshot` and snapshots/).
///      These figures exclude the 21,000 intrinsic gas and calldata; tests/test_chain.py reports receipts.
contract BrainRegistryGasTest is Test {
    BrainRegistry internal reg;
    address internal owner = address(0xA11CE);
    uint256 internal agent;

    function r(uint256 i) internal pure returns (bytes32) {
        return keccak256(abi.encode("root", i));
    }

    function setUp() public {
        reg = new BrainRegistry();
        vm.prank(owner);
        agent = reg.register(bytes32("brain"), 1_000_000);
        vm.prank(owner);
        reg.commit(agent, 0, r(1)); // the head slot exists: what follows is steady state
    }

    function test_gas_register() public {
        vm.prank(address(0xB0B));
        reg.register(bytes32("gas"), 1_000_000);
        vm.snapshotGasLastCall("register");
    }

    function test_gas_commitSteadyState() public {
        vm.prank(owner);
        reg.commit(agent, r(1), r(2));
        uint256 gas = vm.snapshotGasLastCall("commit (steady state)");
        // The target is 35,000 gas a transaction. `forge test --isolate` reports the transaction
        // (21,000 intrinsic and the calldata included); a plain run reports the call alone, which
        // then has 35,000 - 21,000 - 1,600 (100 bytes of calldata, at most 16 gas each) to spend.
        assertTrue(gas <= (gas > 21_000 ? 35_000 : 12_400), "steady-state commit within 35,000 gas a transaction");
    }

    function test_gas_batchOf1() public {
        bytes32[] memory roots = new bytes32[](1);
        roots[0] = r(2);
        vm.prank(owner);
        reg.commitBatch(agent, r(1), roots);
        vm.snapshotGasLastCall("commitBatch x1");
    }

    function test_gas_batchOf10() public {
        bytes32[] memory roots = new bytes32[](10);
        for (uint256 i; i < 10; ++i) roots[i] = r(i + 2);
        vm.prank(owner);
        reg.commitBatch(agent, r(1), roots);
        uint256 gas = vm.snapshotGasLastCall("commitBatch x10");
        assertTrue(gas < 4_412 + 9 * 8_000 + 20_000, "batch of 10 within budget");
    }
}
