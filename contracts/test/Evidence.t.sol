// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {BrainRegistry} from "../BrainRegistry.sol";
import {IBrainRegistry} from "../IBrainRegistry.sol";
import {Rfc9162} from "./Epochs.t.sol";
import {Test} from "./Vm.sol";

/// @dev `commitEvidence`: an agent's evidence log (size, RFC 9162 root) committed with, and bound
///      to, its lineage head. Proofs come from the recursive RFC 9162 helper of Epochs.t.sol, which
///      shares no code with the registry's iterative verifier; `test_pythonVector` pins one pair of
///      roots and a proof produced by ledger/protocol/tlog.py, so the two implementations agree.
contract EvidenceTest is Test {
    BrainRegistry internal reg;
    address internal owner = address(0xA11CE);
    address internal committer = address(0xB0B);
    address internal stranger = address(0xBAD);
    uint256 internal agent;
    bytes32[] internal none;

    function setUp() public {
        reg = new BrainRegistry();
        vm.prank(owner);
        agent = reg.register(bytes32("evidence"), 1);
        vm.prank(owner);
        reg.setCommitter(agent, committer, true);
    }

    function r(uint256 i) internal pure returns (bytes32) {
        return keccak256(abi.encode("root", i));
    }

    function one(bytes32 x) internal pure returns (bytes32[] memory out) {
        out = new bytes32[](1);
        out[0] = x;
    }

    function commitRoot(bytes32 parent, bytes32 root) internal {
        vm.prank(owner);
        reg.commit(agent, parent, root);
    }

    function evidence(address who, bytes32 parent, bytes32[] memory roots, uint64 size, bytes32[] memory proof)
        internal
        returns (uint64)
    {
        bytes32 root = Rfc9162.mth(0, size);
        vm.prank(who);
        return reg.commitEvidence(agent, parent, roots, size, root, proof);
    }

    // ------------------------------------------------------------------ accepted

    function test_evidenceOnlyBindsTheCurrentHead() public {
        commitRoot(0, r(1));
        bytes32 root = Rfc9162.mth(0, 3);
        vm.expectEmit(true, true, true, true, address(reg));
        emit IBrainRegistry.EvidenceCommitted(agent, r(1), 3, root);
        vm.prank(owner);
        assertEq(reg.commitEvidence(agent, r(1), none, 3, root, none), 1, "seq unchanged");
        (uint64 size, bytes32 got) = reg.evidenceOf(agent);
        assertEq(size, 3, "size");
        assertEq(got, root, "root");
        assertEq(reg.headOf(agent), r(1), "head unchanged");
        assertEq(reg.sequenceOf(agent), 1, "sequence unchanged");
    }

    function test_batchAndEvidenceInOneTransaction() public {
        commitRoot(0, r(1));
        bytes32[] memory roots = new bytes32[](2);
        (roots[0], roots[1]) = (r(2), r(3));
        bytes32 root = Rfc9162.mth(0, 5);
        vm.expectEmit(true, true, true, true, address(reg));
        emit IBrainRegistry.RootCommitted(agent, r(2), committer);
        vm.expectEmit(true, true, true, true, address(reg));
        emit IBrainRegistry.RootCommitted(agent, r(3), committer);
        vm.expectEmit(true, true, true, true, address(reg));
        emit IBrainRegistry.EvidenceCommitted(agent, r(3), 5, root);
        vm.prank(committer);
        assertEq(reg.commitEvidence(agent, r(1), roots, 5, root, none), 3, "seq of the last root");
        assertEq(reg.headOf(agent), r(3), "head moved");
        assertEq(reg.sequenceOf(agent), 3, "sequence");
    }

    function test_firstRootAndFirstEvidenceTogether() public {
        assertEq(evidence(owner, 0, one(r(1)), 1, none), 1, "seq 1");
        assertEq(reg.headOf(agent), r(1), "head");
    }

    function test_growthWithRealConsistencyProofs() public {
        commitRoot(0, r(1));
        evidence(owner, r(1), none, 3, none);
        evidence(owner, r(1), one(r(2)), 7, Rfc9162.consistency(3, 0, 7, true));
        evidence(committer, r(2), none, 8, Rfc9162.consistency(7, 0, 8, true));
        evidence(owner, r(2), one(r(3)), 300, Rfc9162.consistency(8, 0, 300, true));
        (uint64 size, bytes32 root) = reg.evidenceOf(agent);
        assertEq(size, 300, "size");
        assertEq(root, Rfc9162.mth(0, 300), "root");
    }

    /// @dev Roots and proof from ledger/protocol/tlog.py over the entries b"outcome 0" … b"outcome 6":
    ///      Tree([leaf_hash(b"outcome %d" % i) for i in range(n)]), consistency(3) of the 7-leaf tree.
    function test_pythonVector() public {
        bytes32 root3 = 0xbf03ec14fde275a37f45d340d8d1672953f3d1624fea042dfe623f1ad6df4787;
        bytes32 root7 = 0x0b05c586631af889d62c9642d760291eb414be6cc899836842e951405499eac6;
        bytes32[] memory proof = new bytes32[](4);
        proof[0] = 0x2005797e227ec8d0e6d855051037d80fa4dd544e3807def6c5944d3799f4f524;
        proof[1] = 0x3897644bbacfae0a2641741fb6439769b766ceba5882bbbfa8c7892c1db6d065;
        proof[2] = 0x17df51f0f52d628eb30c44fc8e8baa15fab1a888a3d9487fbbbcd7988428dd98;
        proof[3] = 0x7296a80fc92e33766cc09d62763c06cf90673b6c4a1581ee12f75f841d9110d0;
        commitRoot(0, r(1));
        vm.prank(owner);
        reg.commitEvidence(agent, r(1), none, 3, root3, none);
        proof[1] ^= bytes32(uint256(1));
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InconsistentEvidence.selector, agent, 7));
        reg.commitEvidence(agent, r(1), none, 7, root7, proof);
        proof[1] ^= bytes32(uint256(1));
        vm.prank(owner);
        reg.commitEvidence(agent, r(1), none, 7, root7, proof);
        (uint64 size, bytes32 root) = reg.evidenceOf(agent);
        assertEq(size, 7, "size");
        assertEq(root, root7, "root");
    }

    function test_evidenceIsPerAgent() public {
        commitRoot(0, r(1));
        evidence(owner, r(1), none, 4, none);
        vm.prank(owner);
        uint256 other = reg.register(bytes32("other"), 1);
        (uint64 size, bytes32 root) = reg.evidenceOf(other);
        assertEq(size, 0, "other size");
        assertEq(root, bytes32(0), "other root");
    }

    // ------------------------------------------------------------------ refused

    function test_refusesShrinkEqualZeroAndProofOnFirst() public {
        commitRoot(0, r(1));
        (bytes32 two, bytes32 four, bytes32 five) = (Rfc9162.mth(0, 2), Rfc9162.mth(0, 4), Rfc9162.mth(0, 5));
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidEvidence.selector, agent, 0, 0, two));
        reg.commitEvidence(agent, r(1), none, 0, two, none);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidEvidence.selector, agent, 0, 2, bytes32(0)));
        reg.commitEvidence(agent, r(1), none, 2, bytes32(0), none);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InconsistentEvidence.selector, agent, 2));
        reg.commitEvidence(agent, r(1), none, 2, two, one(two));
        vm.prank(owner);
        reg.commitEvidence(agent, r(1), none, 4, four, none);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidEvidence.selector, agent, 4, 4, four));
        reg.commitEvidence(agent, r(1), none, 4, four, none);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidEvidence.selector, agent, 4, 2, two));
        reg.commitEvidence(agent, r(1), none, 2, two, none);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InconsistentEvidence.selector, agent, 5));
        reg.commitEvidence(agent, r(1), none, 5, five, none); // growth needs a proof
    }

    function test_refusesRewrittenEntry() public {
        commitRoot(0, r(1));
        evidence(owner, r(1), none, 4, none);
        // entry 1 of a 6-entry log rewritten: the honest proof with the forged root does not verify
        bytes32 forged = Rfc9162.node(
            Rfc9162.node(Rfc9162.node(Rfc9162.leaf(0), Rfc9162.leaf(99)), Rfc9162.mth(2, 4)), Rfc9162.mth(4, 6)
        );
        bytes32[] memory proof = Rfc9162.consistency(4, 0, 6, true);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InconsistentEvidence.selector, agent, 6));
        reg.commitEvidence(agent, r(1), none, 6, forged, proof);
    }

    function test_refusesStaleParentAndNoHead() public {
        bytes32 root = Rfc9162.mth(0, 1);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidRoot.selector, agent, bytes32(0), bytes32(0)));
        reg.commitEvidence(agent, 0, none, 1, root, none); // no head yet: nothing to bind to
        commitRoot(0, r(1));
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.StaleParent.selector, agent, r(1), r(9)));
        reg.commitEvidence(agent, r(9), none, 1, root, none);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.StaleParent.selector, agent, r(1), bytes32(0)));
        reg.commitEvidence(agent, 0, one(r(2)), 1, root, none);
        bytes32[] memory empty = one(bytes32(0));
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidRoot.selector, agent, r(1), bytes32(0)));
        reg.commitEvidence(agent, r(1), empty, 1, root, none);
    }

    function test_refusesUnauthorizedAndUnknown() public {
        commitRoot(0, r(1));
        bytes32 root = Rfc9162.mth(0, 1);
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnauthorizedCommitter.selector, agent, stranger));
        reg.commitEvidence(agent, r(1), none, 1, root, none);
        vm.prank(stranger);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnauthorizedCommitter.selector, agent, stranger));
        reg.commitEvidence(agent, r(1), one(r(2)), 1, root, none);
        vm.prank(owner);
        reg.setCommitter(agent, committer, false);
        vm.prank(committer);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnauthorizedCommitter.selector, agent, committer));
        reg.commitEvidence(agent, r(1), none, 1, root, none);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnknownAgent.selector, 7));
        reg.commitEvidence(7, r(1), none, 1, root, none);
    }

    /// @dev A refused evidence root undoes the roots of its transaction: nothing half-committed.
    function test_refusedEvidenceRevertsTheBatch() public {
        commitRoot(0, r(1));
        evidence(owner, r(1), none, 4, none);
        bytes32 two = Rfc9162.mth(0, 2);
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidEvidence.selector, agent, 4, 2, two));
        reg.commitEvidence(agent, r(1), one(r(2)), 2, two, none);
        assertEq(reg.headOf(agent), r(1), "head kept");
        assertEq(reg.sequenceOf(agent), 1, "sequence kept");
    }

    /// @dev Every honest proof between any two sizes passes; any flipped bit is refused.
    function testFuzz_growthAndTamper(uint256 a, uint256 b, uint256 which, uint8 bit) public {
        uint64 m = uint64(bound(a, 1, 40));
        uint64 n = uint64(bound(b, m + 1, 70));
        commitRoot(0, r(1));
        evidence(owner, r(1), none, m, none);
        bytes32[] memory proof = Rfc9162.consistency(m, 0, n, true);
        bytes32 root = Rfc9162.mth(0, n);
        uint256 i = bound(which, 0, proof.length);
        bytes32 flip = bytes32(uint256(1) << bit);
        bytes32 badRoot = i == proof.length ? root ^ flip : root;
        bytes32[] memory bad = new bytes32[](proof.length);
        for (uint256 j; j < proof.length; ++j) bad[j] = j == i ? proof[j] ^ flip : proof[j];
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InconsistentEvidence.selector, agent, n));
        reg.commitEvidence(agent, r(1), none, n, badRoot, bad);
        vm.prank(owner);
        reg.commitEvidence(agent, r(1), none, n, root, proof);
        (uint64 size, bytes32 got) = reg.evidenceOf(agent);
        assertEq(size, n, "size");
        assertEq(got, root, "root");
    }
}

/// @dev One call per test on cold storage (the state made in setUp), as BrainRegistryGasTest: the
///      figures exclude the 21,000 intrinsic gas and calldata; tests/test_evidence_chain.py reports receipts.
contract EvidenceGasTest is Test {
    BrainRegistry internal reg;
    address internal owner = address(0xA11CE);
    uint256 internal agent;
    bytes32[] internal none;

    function r(uint256 i) internal pure returns (bytes32) {
        return keccak256(abi.encode("root", i));
    }

    function setUp() public {
        reg = new BrainRegistry();
        vm.prank(owner);
        agent = reg.register(bytes32("brain"), 1_000_000);
        vm.prank(owner);
        reg.commit(agent, 0, r(1));
        bytes32 root = Rfc9162.mth(0, 100); // before the prank: the sha256 precompile is a call
        vm.prank(owner);
        reg.commitEvidence(agent, r(1), none, 100, root, none); // steady state: the evidence slots exist
    }

    function test_gas_evidenceOnly() public {
        bytes32[] memory proof = Rfc9162.consistency(100, 0, 101, true);
        bytes32 root = Rfc9162.mth(0, 101);
        vm.prank(owner);
        reg.commitEvidence(agent, r(1), none, 101, root, proof);
        vm.snapshotGasLastCall("commitEvidence, evidence only (100 -> 101)");
    }

    function test_gas_oneRootAndEvidence() public {
        bytes32[] memory proof = Rfc9162.consistency(100, 0, 101, true);
        bytes32 root = Rfc9162.mth(0, 101);
        bytes32[] memory roots = new bytes32[](1);
        roots[0] = r(2);
        vm.prank(owner);
        reg.commitEvidence(agent, r(1), roots, 101, root, proof);
        vm.snapshotGasLastCall("commitEvidence, 1 root + evidence (100 -> 101)");
    }

    function test_gas_commitForComparison() public {
        vm.prank(owner);
        reg.commit(agent, r(1), r(2));
        vm.snapshotGasLastCall("commit (steady state, for comparison)");
    }
}
