"""The supply use cases: install, approve, revoke, outdated, update, the record, and scan
(``ledger supply install|approve|revoke|outdated|update|scan|supply …``; docs/supply-chain.md, docs/scanner.md).

Each takes an open brain acting as its actor (``brain.acting(...)``) — a scan takes none — and returns a
report of :mod:`ledger.supply.reports` / :mod:`ledger.scanner.reports`.  Refusals raise as the installer
does; a skill refused within an install is a row of its report (the CLI exits 1 on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger.errors import UsageError
from ledger.scanner import sandbox
from ledger.scanner.files import load, skill_dirs
from ledger.scanner.reports import FindingReport, ScanReport, VerdictReport
from ledger.scanner.static import merge
from ledger.scanner.static import scan as scan_files
from ledger.supply.installer import Installer, external
from ledger.supply.reports import (
    ApproveReport,
    InstallReport,
    InstallRow,
    OutdatedReport,
    OutdatedRow,
    RevokeReport,
    SignerChange,
    SupplyEntryReport,
    SupplyListReport,
    UpdateReport,
)

__all__ = ["approve", "entry", "install", "outdated", "record", "revoke", "scan", "update"]


def _installer(brain: Any) -> Installer:
    return Installer(brain)


def _install_report(out: dict[str, Any]) -> InstallReport:
    return InstallReport(**{**out, "skills": tuple(InstallRow(**row) for row in out["skills"])})


def install(
    brain: Any,
    source: str | None,
    names: Sequence[str] = (),
    *,
    pin: str | None = None,
    rpc: str | None = None,
    frozen: str | None = None,
    note: str = "",
    strip_credentials: bool = False,
) -> InstallReport:
    """Install skills from ``source`` (all of them, or ``names``), pinned, scanned and quarantined; or, with
    ``frozen``, exactly what that lock pins, or nothing."""
    if (source is None) == (frozen is None):
        raise UsageError("give a SOURCE, or --frozen LOCK (not both)")
    inst = _installer(brain)
    out = (
        inst.install_frozen(frozen, rpc=rpc)
        if frozen
        else inst.install(source or "", names, pin=pin, rpc=rpc, note=note, strip_credentials=strip_credentials)
    )
    return _install_report(out)


def approve(brain: Any, names: Sequence[str], *, override: str | None = None, note: str = "") -> ApproveReport:
    """Approve installed skills out of quarantine (a user's or curator's signed decision)."""
    return ApproveReport.from_receipt(_installer(brain).approve(list(names), override=override, note=note))


def revoke(brain: Any, target: str, reason: str, *, note: str = "") -> RevokeReport:
    """Revoke ``SOURCE@PIN`` or a digest: its skills leave every runtime on the next sync."""
    return RevokeReport(**_installer(brain).revoke(target, reason, note=note))


def outdated(brain: Any) -> OutdatedReport:
    """Each installed skill whose source now serves other bytes than its pin (or cannot be read)."""
    return OutdatedReport(tuple(OutdatedRow(**row) for row in _installer(brain).outdated()))


def _update_report(out: dict[str, Any]) -> UpdateReport:
    doc = dict(out)
    doc["from_"] = doc.pop("from")
    doc["verdict"] = VerdictReport(
        doc["verdict"]["scanner"], doc["verdict"]["worst"], tuple(_finding(f) for f in doc["verdict"]["findings"])
    )
    if "signer" in doc:
        doc["signer"] = SignerChange(doc["signer"]["from"], doc["signer"]["to"])
    return UpdateReport(**doc)


def _finding(f: dict[str, Any]) -> FindingReport:
    return FindingReport(**f)


def update(brain: Any, name: str, *, pin: str | None = None, apply: bool = False) -> UpdateReport:
    """Review ``name``'s newer upstream version against the vetted one; with ``apply``, install it into
    quarantine.  A review of the version already pinned says ``unchanged``."""
    return _update_report(_installer(brain).update(name, pin=pin, apply=apply))


def record(brain: Any) -> SupplyListReport:
    """The supply record: every installed skill and every revoked digest."""
    return SupplyListReport.of(_installer(brain).record())


def entry(brain: Any, name: str) -> SupplyEntryReport:
    """One installed skill's entry of the supply record."""
    return SupplyEntryReport.of(_installer(brain).entry(name))


def scan(
    paths: Sequence[Path],
    *,
    vetted: Path | None = None,
    run: bool = False,
    run_timeout: float = 10.0,
    also: Sequence[str] = (),
) -> ScanReport:
    """Scan every skill folder under ``paths`` as an install would (``vetted``: the approved version of the one
    skill scanned; ``run``: each script in the sandbox too; ``also``: external scanners).  Writes nothing."""
    found = [d for p in paths for d in skill_dirs(p)]
    if not found:
        raise UsageError(f"no SKILL.md under {', '.join(map(str, paths))}", hint="point at a skill or a folder of them")
    if vetted is not None and len(found) != 1:
        raise UsageError("--vetted compares one skill with its approved version: scan one skill")
    before = load(vetted)[0] if vetted is not None else None
    if run:
        sandbox.available()  # off where the sandbox cannot be built: said before anything is scanned
    verdicts = {}
    for skill in found:
        files, links = load(skill)
        verdict = scan_files(files, vetted=before, symlinks=links)
        if run:
            verdict = merge(verdict, sandbox.run_verdict(files, timeout=run_timeout))
        if also:
            verdict = merge(verdict, *(external(name, skill) for name in also))
        verdicts[str(skill)] = VerdictReport.of(verdict)
    return ScanReport(verdicts)
