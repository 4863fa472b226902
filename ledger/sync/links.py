"""Targets added and removed, and the runtimes' folders listed: the use cases of ``ledger target add``,
``ledger target remove`` and ``ledger target list`` (the CLI parses and prints; these do the work)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.errors import LedgerError, UsageError
from ledger.folders.folder import TargetFS
from ledger.sync.reports import LinkReport, RuntimeRow, RuntimesReport, UnlinkReport
from ledger.sync.targets import Target, Targets
from ledger.sync.targets import runtimes as known

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["add", "folder_name", "link", "plan", "runtimes", "unlink"]


def runtimes(root: Path | None = None) -> RuntimesReport:
    """The runtimes' skills folders on this machine, each with how many skills it holds (counted as
    sync reads it) and the target it is linked as in the brain at ``root`` (None: outside a brain)."""
    linked: dict[str, str] = {}
    with contextlib.suppress(LedgerError):  # targets that cannot be read: the runtimes alone, as outside a brain
        linked = {t.path: t.name for t in Targets(root / ".ledger").all()} if root is not None else {}
    rows = []
    for rt in known():
        path = Path(rt.path)
        count = None
        if path.is_dir():
            try:  # counted as sync reads it: through descriptors, no link followed
                with TargetFS(os.path.realpath(path), rt.layout, 1) as fs:
                    count = len(fs.scan().skills)
            except (LedgerError, OSError):
                count = None
        rows.append(
            RuntimeRow(
                **dataclasses.asdict(rt), exists=path.is_dir(), skills=count, linked=linked.get(os.path.realpath(path))
            )
        )
    return RuntimesReport(tuple(rows))


def link(
    brain: Brain,
    where: str,
    *,
    layout: str | None = None,
    skills: str | None = None,
    committed: bool = False,
    best_verified: bool = False,
    name: str | None = None,
    actor: str = "agent",
    runtime: str | None = None,
) -> LinkReport:
    """Add a target: ``where`` is a runtime's name (:func:`ledger.sync.targets.runtimes`) or a folder,
    made if missing. Nothing is written in it until a sync."""
    return add(
        brain,
        plan(
            where,
            layout=layout,
            skills=skills,
            committed=committed,
            best_verified=best_verified,
            name=name,
            actor=actor,
            runtime=runtime,
        ),
    )


def plan(
    where: str,
    *,
    layout: str | None = None,
    skills: str | None = None,
    committed: bool = False,
    best_verified: bool = False,
    name: str | None = None,
    actor: str = "agent",
    runtime: str | None = None,
) -> Target:
    """The target ``where`` names, before any brain is read (its path as given: :func:`add` resolves it);
    refused when the options contradict or ``where`` is neither a runtime nor a folder."""
    if committed and best_verified:
        raise UsageError("--committed and --best-verified are two pins; choose one")
    by_name = {rt.name: rt for rt in known()}
    if where in by_name:
        rt = by_name[where]
        path, layout, runtime = rt.path, layout or rt.layout, runtime or rt.runtime
        name = name or rt.name
    else:
        if os.sep not in where and not os.path.exists(where):
            raise UsageError(f"{where!r} is neither a runtime nor a folder", hint="see 'ledger target list'")
        real = os.path.realpath(where)
        found = next((r for r in by_name.values() if os.path.realpath(r.path) == real), None)
        if found is not None:  # a runtime's own folder, given by path: named and laid out as that runtime
            path, layout, runtime, name = where, layout or found.layout, runtime or found.runtime, name or found.name
        else:
            path, layout = where, layout or "agentskills"
            name = name or folder_name(Path(os.path.abspath(where)))
    return Target(
        name, path, "hermes" if layout == "hermes" else layout, runtime or name, actor, skills, committed, best_verified
    )


def add(brain: Brain, target: Target) -> LinkReport:
    """``target`` (from :func:`plan`) added to ``brain``, its folder resolved (no link in it) and made if missing."""
    real = Path(os.path.realpath(target.path))
    if real == brain.root or brain.root in real.parents or real in brain.root.parents:
        raise LedgerError(f"{real} overlaps the brain at {brain.root}", hint="a target is another folder")
    real.mkdir(parents=True, exist_ok=True)
    target = dataclasses.replace(target, path=str(real))
    Targets(brain.control).add(target)
    return LinkReport(**dataclasses.asdict(target))


def unlink(brain: Brain, name: str) -> UnlinkReport:
    """Remove the target ``name``; its files are left as they are."""
    gone = Targets(brain.control).remove(name)
    return UnlinkReport(unlinked=gone.name, path=gone.path)


def folder_name(path: Path) -> str:
    """A target's default name: its folder's, or for a ``…/.tool/skills`` folder, the tool's."""
    base = path.name if path.name != "skills" or not path.parent.name else path.parent.name
    return re.sub(r"[^a-z0-9._-]+", "-", base.lstrip(".").lower()).strip("-.") or "target"
