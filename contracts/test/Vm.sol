// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @dev The few Foundry cheatcodes these tests use (npm's forge-std is an old unofficial copy).
interface Vm {
    struct Log {
        bytes32[] topics;
        bytes data;
        address emitter;
    }

    function prank(address) external;
    function startPrank(address) external;
    function stopPrank() external;
    function expectRevert(bytes calldata) external;
    function expectEmit(bool, bool, bool, bool, address) external;
    function addr(uint256) external returns (address);
    function sign(uint256, bytes32) external returns (uint8, bytes32, bytes32);
    function warp(uint256) external;
    function assume(bool) external;
    function snapshotGasLastCall(string calldata) external returns (uint256);
    function store(address, bytes32, bytes32) external;
    function load(address, bytes32) external view returns (bytes32);
    function snapshotState() external returns (uint256);
    function revertToState(uint256) external returns (bool);
    function recordLogs() external;
    function getRecordedLogs() external returns (Log[] memory);
}

abstract contract Test {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    function assertEq(uint256 a, uint256 b, string memory what) internal pure {
        if (a != b) revert(string.concat(what, ": values differ"));
    }

    function assertEq(bytes32 a, bytes32 b, string memory what) internal pure {
        if (a != b) revert(string.concat(what, ": values differ"));
    }

    function assertTrue(bool ok, string memory what) internal pure {
        if (!ok) revert(what);
    }

    function bound(uint256 x, uint256 lo, uint256 hi) internal pure returns (uint256) {
        return lo + (x % (hi - lo + 1));
    }
}
