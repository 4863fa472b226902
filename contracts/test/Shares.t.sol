// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {Base64} from "@openzeppelin/contracts/utils/Base64.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";

import {BrainRegistry} from "../BrainRegistry.sol";
import {IBrainRegistry} from "../IBrainRegistry.sol";
import {Test} from "./Vm.sol";

/// @dev The share token's metadata (docs/lineage.md §15) and its location: owner only, the charset,
///      the URI following the head. The exact bytes are pinned by tests/vectors/token/metadata.json,
///      which tests/test_shares.py checks against this contract on anvil.
contract SharesTest is Test {
    BrainRegistry internal reg;
    address internal owner = address(0xA11CE);
    uint256 internal agent;

    event LocationSet(uint256 indexed agentId, string location);

    function setUp() public {
        reg = new BrainRegistry();
        vm.prank(owner);
        agent = reg.register(bytes32("brain"), 1_000_000);
    }

    function r(uint256 i) internal pure returns (bytes32) {
        return keccak256(abi.encode("root", i));
    }

    function prefix() internal pure returns (bytes memory) {
        return bytes("data:application/json;base64,");
    }

    function contains(bytes memory hay, bytes memory needle) internal pure returns (bool) {
        if (needle.length > hay.length) return false;
        for (uint256 i; i <= hay.length - needle.length; ++i) {
            bool all = true;
            for (uint256 j; j < needle.length && all; ++j) {
                all = hay[i + j] == needle[j];
            }
            if (all) return true;
        }
        return false;
    }

    /// @dev The URI's JSON, its base64 checked by re-encoding (no decoder in OpenZeppelin 5.7).
    function json(bytes memory expected) internal view {
        string memory uri = reg.uri(agent);
        assertTrue(
            keccak256(bytes(uri)) == keccak256(bytes(string.concat(string(prefix()), Base64.encode(expected)))),
            "uri is the data URI of the expected JSON"
        );
    }

    function head(bytes32 root) internal pure returns (string memory) {
        bytes memory hex64 = bytes(Strings.toHexString(uint256(root), 32));
        bytes memory digits = new bytes(64);
        for (uint256 i; i < 64; ++i) {
            digits[i] = hex64[i + 2];
        }
        return string.concat("blake3-tree-v1:", string(digits));
    }

    function expected(string memory headField, uint256 seq, string memory tail) internal view returns (bytes memory) {
        bytes memory front = abi.encodePacked(
            '{"name":"Brain ', Strings.toHexString(agent >> 224, 4), '","description":"One share of this AI agent. A '
            "share is a claim on the agent's brain lineage: the head below is the lineage's current root (exactly "
            "which skills) and the evidence root commits to its recorded outcomes. It is not a claim on money, "
            'revenue, keys or control.","decimals":0,"properties":{"agent_id":"', Strings.toHexString(agent, 32)
        );
        bytes memory middle = abi.encodePacked(
            '","chain_id":', Strings.toString(block.chainid), ',"registry":"', Strings.toHexString(address(reg)),
            '","owner":"', Strings.toHexString(owner), '","head":'
        );
        return abi.encodePacked(front, middle, headField, ',"sequence":', Strings.toString(seq), tail);
    }

    // ------------------------------------------------------------------ uri

    function test_uri_followsEveryCommit() public {
        json(expected("null", 0, ',"evidence":null,"location":null}}'));
        vm.prank(owner);
        reg.commit(agent, 0, r(1));
        json(expected(string.concat('"', head(r(1)), '"'), 1, ',"evidence":null,"location":null}}'));
        vm.prank(owner);
        reg.commit(agent, r(1), r(2));
        json(expected(string.concat('"', head(r(2)), '"'), 2, ',"evidence":null,"location":null}}'));
        vm.prank(owner);
        reg.setLocation(agent, "https://example.org/b.git");
        json(expected(string.concat('"', head(r(2)), '"'), 2,
                      ',"evidence":null,"location":"https://example.org/b.git"}}'));
    }

    function test_uri_revertsForAnUnknownAgent() public {
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnknownAgent.selector, agent + 1));
        reg.uri(agent + 1);
    }

    function test_uri_isTheERC1155MetadataExtension() public view {
        assertTrue(reg.supportsInterface(0x0e89341c), "IERC1155MetadataURI");
        assertTrue(contains(bytes(reg.uri(agent)), prefix()), "a data URI");
    }

    // ------------------------------------------------------------------ location

    function test_setLocation_ownerOnlyEmitsAndClears() public {
        vm.prank(address(0xB0B));
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.NotAgentOwner.selector, agent, address(0xB0B)));
        reg.setLocation(agent, "https://example.org");
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.UnknownAgent.selector, agent + 1));
        reg.setLocation(agent + 1, "https://example.org");
        vm.expectEmit(true, false, false, true, address(reg));
        emit LocationSet(agent, "https://example.org");
        vm.prank(owner);
        reg.setLocation(agent, "https://example.org");
        assertTrue(keccak256(bytes(reg.locationOf(agent))) == keccak256("https://example.org"), "set");
        vm.prank(owner);
        reg.setLocation(agent, "");
        assertEq(bytes(reg.locationOf(agent)).length, 0, "cleared");
        json(expected("null", 0, ',"evidence":null,"location":null}}'));
    }

    function test_setLocation_refusesOutsideTheCharset() public {
        bytes memory bad;
        bytes1[9] memory refused = [bytes1(0x20), 0x22, 0x5c, 0x7b, 0x7d, 0x7f, 0x00, 0x0a, 0xc3];
        for (uint256 i; i < refused.length; ++i) {
            bad = abi.encodePacked("https:", refused[i]);
            vm.prank(owner);
            vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidLocation.selector));
            reg.setLocation(agent, string(bad));
        }
        bytes memory longest = new bytes(256);
        for (uint256 i; i < 256; ++i) {
            longest[i] = bytes1(uint8(0x23 + (i % 0x39))); // '#'..'[': none refused
        }
        vm.prank(owner);
        reg.setLocation(agent, string(longest));
        assertEq(bytes(reg.locationOf(agent)).length, 256, "256 bytes allowed");
        vm.prank(owner);
        vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidLocation.selector));
        reg.setLocation(agent, string(abi.encodePacked(longest, "x")));
        assertEq(bytes(reg.locationOf(agent)).length, 256, "a refusal changes nothing");
    }

    function testFuzz_setLocation_acceptsExactlyTheCharset(uint8 c) public {
        bool allowed = c >= 0x21 && c <= 0x7e && c != 0x22 && c != 0x5c && c != 0x7b && c != 0x7d;
        vm.prank(owner);
        if (!allowed) vm.expectRevert(abi.encodeWithSelector(IBrainRegistry.InvalidLocation.selector));
        reg.setLocation(agent, string(abi.encodePacked("a", bytes1(c), "z")));
        assertEq(bytes(reg.locationOf(agent)).length, allowed ? 3 : 0, "stored iff allowed");
    }
}
