// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {BrainRegistry} from "../BrainRegistry.sol";
import {IBrainRegistry} from "../IBrainRegistry.sol";
import {Test} from "./Vm.sol";

/// @dev RFC 9162 §2.1.1 and §2.1.4.1 written the RFC's way (recursive), independent of the
///      registry's iterative verifier: MTH over leaves i = 0.. with leaf data abi.encode(i).
library Rfc9162 {
    function leaf(uint256 i) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x00), abi.encode(i)));
    }

    function node(bytes32 l, bytes32 r) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x01), l, r));
    }

    /// @dev The largest power of two smaller than n (n > 1).
    function split(uint256 n) internal pure returns (uint256 k) {
        k = 1;
        while (k << 1 < n) k <<= 1;
    }

    /// @dev MTH(D[lo:hi]).
    function mth(uint256 lo, uint256 hi) internal pure returns (bytes32) {
        if (hi - lo == 1) return leaf(lo);
        uint256 k = split(hi - lo);
        return node(mth(lo, lo + k), mth(lo + k, hi));
    }

    /// @dev PROOF(m, D[lo:hi]) = SUBPROOF(m, D[lo:hi], true).
    function consistency(uint256 m, uint256 lo, uint256 hi, bool whole) internal pure returns (bytes32[] memory) {
        uint256 n = hi - lo;
        if (m == n) {
            if (whole) return new bytes32[](0);
            bytes32[] memory one = new bytes32[](1);
            one[0] = mth(lo, hi);
            return one;
        }
        uint256 k = split(n);
        bytes32[] memory sub;
        bytes32 extra;
        if (m <= k) {
            sub = consistency(m, lo, lo + k, whole);
            extra = mth(lo + k, hi);
        } else {
            sub = consistency(m - k, lo + k, hi, false);
            extra = mth(lo, lo + k);
        }
        bytes32[] memory out = new bytes32[](sub.length + 1);
        for (uint256 i; i < sub.length; ++i) out[i] = sub[i];
        out[sub.length] = extra;
        return out;
    }
}

contract EpochsTest is Test {
    BrainRegistry internal reg;
    address internal constant OPERATOR = address(0x0BE7);

    function setUp() public {
        reg = new BrainRegistry();
    }

    function anchor(uint64 size, bytes32 root, bytes32[] memory proof) internal returns (uint64) {
        vm.prank(OPERATOR);
        return reg.anchorEpoch(size, root, proof);
    }

    function test_firstEpochThenConsistentGrowth() public {
        vm.expectEmit(true, true, true, true, address(reg));
        emit IBrainRegistry.EpochAnchored(OPERATOR, 1, 3, Rfc9162.mth(0, 3));
        assertEq(anchor(3, Rfc9162.mth(0, 3), new bytes32[](0)), 1, "epoch 1");
        assertEq(anchor(7, Rfc9162.mth(0, 7), Rfc9162.consistency(3, 0, 7, true)), 2, "epoch 2");
        assertEq(anchor(8, Rfc9162.mth(0, 8), Rfc9162.consistency(7, 0, 8, true)), 3, "epoch 3");
        (uint64 size, bytes32 root) = reg.epochOf(OPERATOR, 2);
        assertEq(size, 7, "size 2");
        assertEq(root, Rfc9162.mth(0, 7), "root 2");
        (uint64 epoch, uint64 lastSize, bytes32 lastRoot) = reg.latestEpoch(OPERATOR);
        assertEq(epoch, 3, "latest");
        assertEq(lastSize, 8, "latest size");
        assertEq(lastRoot, Rfc9162.mth(0, 8), "latest root");
        (size, root) = reg.epochOf(OPERATOR, 4);
        assertEq(size, 0, "no epoch 4");
        assertEq(root, bytes32(0), "no root 4");
        (epoch,,) = reg.latestEpoch(address(this));
        assertEq(epoch, 0, "another operator has none");
    }

    function test_logsArePerOperator() public {
        anchor(2, Rfc9162.mth(0, 2), new bytes32[](0));
        // another sender starts its own log: no proof against the first operator's epoch
        assertEq(reg.anchorEpoch(1, Rfc9162.mth(0, 1), new bytes32[](0)), 1, "own epoch 1");
    }

    function test_refusesRewrittenEntry() public {
        anchor(4, Rfc9162.mth(0, 4), new bytes32[](0));
        // a 6-entry tree whose entry 1 differs: the proof from the true tree to it cannot exist,
        // so the operator tries the honest proof with the forged root.
        bytes32 forged = Rfc9162.node(
            Rfc9162.node(Rfc9162.node(Rfc9162.leaf(0), Rfc9162.leaf(99)), Rfc9162.mth(2, 4)), Rfc9162.mth(4, 6)
        );
        bytes32[] memory proof = Rfc9162.consistency(4, 0, 6, true);
        vm.prank(OPERATOR);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InconsistentEpoch.selector, OPERATOR, uint64(2)));
        reg.anchorEpoch(6, forged, proof);
        assertEq(anchor(6, Rfc9162.mth(0, 6), proof), 2, "the honest root passes");
    }

    function test_refusesShrinkingEmptyZeroAndProofOnFirst() public {
        // roots computed first: the sha256 precompile is a call, and expectRevert watches the next one
        (bytes32 one, bytes32 four, bytes32 five) = (Rfc9162.mth(0, 1), Rfc9162.mth(0, 4), Rfc9162.mth(0, 5));
        bytes32[] memory none = new bytes32[](0);
        vm.prank(OPERATOR);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidEpoch.selector, OPERATOR, 0, 0, one));
        reg.anchorEpoch(0, one, none);
        vm.prank(OPERATOR);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidEpoch.selector, OPERATOR, 0, 1, bytes32(0)));
        reg.anchorEpoch(1, bytes32(0), none);
        bytes32[] memory junk = new bytes32[](1);
        vm.prank(OPERATOR);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InconsistentEpoch.selector, OPERATOR, 1));
        reg.anchorEpoch(1, one, junk);
        anchor(5, five, none);
        vm.prank(OPERATOR);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidEpoch.selector, OPERATOR, 5, 5, five));
        reg.anchorEpoch(5, five, none);
        vm.prank(OPERATOR);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidEpoch.selector, OPERATOR, 5, 4, four));
        reg.anchorEpoch(4, four, none);
    }

    /// @dev Every honest proof between any two sizes passes, and stays readable afterwards.
    function testFuzz_consistentGrowthAccepted(uint256 a, uint256 b) public {
        uint64 m = uint64(bound(a, 1, 40));
        uint64 n = uint64(bound(b, m + 1, 70));
        anchor(m, Rfc9162.mth(0, m), new bytes32[](0));
        assertEq(anchor(n, Rfc9162.mth(0, n), Rfc9162.consistency(m, 0, n, true)), 2, "epoch 2");
        (uint64 size, bytes32 root) = reg.epochOf(OPERATOR, 1);
        assertEq(size, m, "size 1 kept");
        assertEq(root, Rfc9162.mth(0, m), "root 1 kept");
    }

    /// @dev Flipping any bit of any proof node, or of the new root, is refused.
    function testFuzz_tamperedProofRefused(uint256 a, uint256 b, uint256 which, uint8 bit) public {
        uint64 m = uint64(bound(a, 1, 40));
        uint64 n = uint64(bound(b, m + 1, 70));
        anchor(m, Rfc9162.mth(0, m), new bytes32[](0));
        bytes32[] memory proof = Rfc9162.consistency(m, 0, n, true);
        bytes32 root = Rfc9162.mth(0, n);
        uint256 i = bound(which, 0, proof.length); // proof.length: the root itself
        bytes32 flip = bytes32(uint256(1) << bit);
        if (i == proof.length) root ^= flip;
        else proof[i] ^= flip;
        vm.prank(OPERATOR);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InconsistentEpoch.selector, OPERATOR, uint64(2)));
        reg.anchorEpoch(n, root, proof);
    }

    /// @dev A proof with a node dropped or one appended is refused.
    function testFuzz_wrongLengthRefused(uint256 a, uint256 b, bool drop) public {
        uint64 m = uint64(bound(a, 1, 40));
        uint64 n = uint64(bound(b, m + 1, 70));
        anchor(m, Rfc9162.mth(0, m), new bytes32[](0));
        bytes32[] memory proof = Rfc9162.consistency(m, 0, n, true);
        bytes32[] memory bad = new bytes32[](drop ? proof.length - 1 : proof.length + 1);
        for (uint256 i; i < bad.length && i < proof.length; ++i) bad[i] = proof[i];
        if (!drop) bad[proof.length] = Rfc9162.leaf(7);
        bytes32 root = Rfc9162.mth(0, n);
        vm.prank(OPERATOR);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InconsistentEpoch.selector, OPERATOR, uint64(2)));
        reg.anchorEpoch(n, root, bad);
    }

    /// @dev Epoch sizes packed four to a word never overwrite each other.
    function test_manyEpochsKeepTheirSizes() public {
        bytes32[] memory none = new bytes32[](0);
        anchor(1, Rfc9162.mth(0, 1), none);
        for (uint64 n = 2; n <= 10; ++n) anchor(n, Rfc9162.mth(0, n), Rfc9162.consistency(n - 1, 0, n, true));
        for (uint64 e = 1; e <= 10; ++e) {
            (uint64 size, bytes32 root) = reg.epochOf(OPERATOR, e);
            assertEq(size, e, "size");
            assertEq(root, Rfc9162.mth(0, e), "root");
        }
    }

    // ------------------------------------------------------------------ gas: 1,000 heads per epoch

    function test_gas_firstEpochOf1000() public {
        bytes32 root = keccak256("a 1000-entry root");
        vm.prank(OPERATOR);
        reg.anchorEpoch(1000, root, new bytes32[](0));
        uint256 gas = vm.snapshotGasLastCall("anchorEpoch first, 1000 heads");
        assertTrue(gas < 100_000, "first epoch of 1000 heads under 100 gas a head");
    }

    function test_gas_nextEpochOf1000() public {
        anchor(1000, Rfc9162.mth(0, 1000), new bytes32[](0));
        bytes32[] memory proof = Rfc9162.consistency(1000, 0, 2000, true);
        bytes32 root = Rfc9162.mth(0, 2000);
        vm.prank(OPERATOR);
        reg.anchorEpoch(2000, root, proof);
        uint256 gas = vm.snapshotGasLastCall("anchorEpoch 1000 -> 2000 heads");
        assertTrue(gas < 100_000, "next epoch of 1000 heads under 100 gas a head");
    }
}
