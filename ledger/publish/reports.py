"""What ``ledger manifest`` and ``ledger export --discovery`` print with ``--json`` (ADR 73).

Light (the standard library and :mod:`ledger.reports`), so the command line loads them at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.reports import Report, key

__all__ = ["DiscoveredSkill", "DiscoveryReport", "ManifestReport", "NotPublished"]


@dataclass(frozen=True)
class ManifestReport(Report):
    """A skill version's ERC-8239 manifest and its manifestHash (docs/interop.md)."""

    skill: str
    version: int
    commit: str  # the snapshot that wrote this version
    manifest_hash: str = key("manifestHash")  # keccak256 of the manifest's exact bytes: 0x and 64 hex
    # The manifest object: the ERC's keys and a publisher's own (docs/interop.md §2.2), open by the ERC.
    manifest: dict[str, Any]


@dataclass(frozen=True)
class DiscoveredSkill(Report):
    """One skill a discovery site serves."""

    name: str
    type: str
    url: str
    digest: str


@dataclass(frozen=True)
class NotPublished(Report):
    """A served skill the site leaves out, and why (never silent)."""

    uri: str
    reason: str


@dataclass(frozen=True)
class DiscoveryReport(Report):
    """The served skills written as a static Agent Skills Discovery site (``ledger export --discovery``)."""

    dest: str
    index: str  # the site's index file
    commit: str  # the head snapshot published
    files: int
    skills: list[DiscoveredSkill]
    refused: list[NotPublished]
