"""Skill collections in and out, as use cases (ADR 73): ``ledger import``, ``export``, ``export --discovery``
and ``lint``, each returning its typed report (:mod:`ledger.write.transfers`, :mod:`ledger.publish.reports`).

No printing and no exit codes here: the command line renders the reports; refusals raise as ever.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ledger.folders.export import export, write_tree
from ledger.folders.layouts import Collection, read
from ledger.publish.entries import Entries
from ledger.publish.reports import DiscoveredSkill, DiscoveryReport, NotPublished
from ledger.publish.site import INDEX, is_site, site_files
from ledger.write.transfers import ExportReport, ImportReport, LintReport, SkillVerdict

__all__ = ["export_discovery", "export_snapshot", "import_collections", "lint_skills"]


def import_collections(
    brain: Any,
    sources: Sequence[Path],
    layout: str = "auto",
    *,
    note: str = "",
    dry_run: bool = False,
    all_or_nothing: bool = False,
    versions: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Import the skill collections at ``sources`` (read in ``layout``; ``auto``: detected) as ONE snapshot."""
    parts = [read(src, layout, brain.limits["file"]) for src in sources]
    coll = Collection(parts[0].layout, [])
    for src, part in zip(sources, parts, strict=True):
        coll.add(part, str(src))  # a category file two roots disagree on is refused, not overwritten
    report = brain.import_collection(
        coll, note=note, dry_run=dry_run, all_or_nothing=all_or_nothing, progress=progress, versions=versions
    )
    return ImportReport.of(report, coll.notes, coll.skipped)


def export_snapshot(brain: Any, dest: Path, layout: str = "agentskills", rev: str | None = None) -> ExportReport:
    """Write snapshot ``rev``'s skills (default: the head's) into the new folder ``dest`` in ``layout``."""
    commit = brain.store.resolve(rev) if rev else brain.head().commit
    return ExportReport(**export(brain.store, commit, dest, layout))


def export_discovery(brain: Any, site: Path) -> DiscoveryReport:
    """Write the served skills as a static discovery site into ``site``, as one tree, each with its anchor."""
    entries = Entries(brain)
    files = site_files(entries)
    refused = entries.refused()
    head = brain.head()
    count = write_tree(site, files, is_site, "discovery export")
    skills = json.loads(files[INDEX])["skills"]
    return DiscoveryReport(
        dest=str(site),
        index=str(site / INDEX),
        commit=head.commit.hex(),
        files=count,
        skills=[DiscoveredSkill(**{k: s[k] for k in ("name", "type", "url", "digest")}) for s in skills],
        refused=[NotPublished(uri=uri, reason=why) for uri, why in refused.items()],
    )


def lint_skills(brain: Any, names: Sequence[str] = (), strict: bool = False) -> LintReport:
    """Each skill's verdict (``names``; none: every skill of the working tree)."""
    return LintReport(verdicts=[SkillVerdict.of(v) for v in brain.lint(list(names) or None)], strict=strict)
