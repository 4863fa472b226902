"""What an update changes, said the way a reviewer needs it, and local edits kept as a fork.

An update is reviewed against the *vetted* version (the one installed and approved), never
against the newest local state: a reviewer sees everything the source changed since someone
last looked.  What matters for safety comes first (docs/supply-chain.md §4): new or changed
scripts and executables, widened ``allowed-tools``, new URLs and hosts, changed frontmatter.
Local edits since the vetted version are a fork; the update merges three ways, as ``ledger
sync`` does, with git's own ``merge-file``.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ledger.bundle import frontmatter
from ledger.bundle.skill import SKILL_MD, counter_zeroed
from ledger.errors import LedgerError
from ledger.sources.resolve import folder_sha256
from ledger.store import supply as sp
from ledger.store import treehash as th
from ledger.store.skilltree import skills_of
from ledger.sync.filemerge import merge

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = ["Files", "Plan", "installed_files", "review", "upstream_digests"]

Files = Mapping[str, tuple[bytes, bool]]  # path in the skill → (bytes, executable)

_URL = re.compile(rb"\b(?:https?|ftp|wss?)://([A-Za-z0-9.-]+)", re.IGNORECASE)
_SCRIPTS = ("scripts/",)
MAX_DIFF_LINES = 400  # per file, in a report; the rest is counted, not shown


def upstream_digests(files: Files) -> tuple[str, str, dict[str, str]]:
    """A skill's digests as its source serves it: bundle-hash BLAKE3, the ``skills`` CLI's folder
    sha256, and each file's sha256 (docs/supply-chain.md §3)."""
    per_file = {r: hashlib.sha256(d).hexdigest() for r, (d, _) in files.items()}
    return sp.skill_blake3(files), folder_sha256(files), per_file


def installed_files(brain: Brain, name: str, version: int | None) -> dict[str, tuple[bytes, bool]]:
    """``name``'s files at ``version`` in this brain (None: the head), as bytes; empty when absent."""
    store = brain.store
    if version is None:
        tree = brain.head().skills.get(name)
    else:
        try:
            commit = brain.version_commit(name, version)
        except LedgerError:
            return {}
        tree = skills_of(store, store.commit_info(commit)[0])[1].get(name)
    if tree is None:
        return {}
    return {
        rel: (store.read(sha, b"blob"), gsmode == 0o100755) for rel, (gsmode, sha) in th.files_of(store, tree).items()
    }


@dataclass
class Plan:
    """An update reviewed: the report, local edits (the fork) and the files to install."""

    report: dict[str, Any]
    local: list[str] = field(default_factory=list)  # files edited here since the vetted version
    files: dict[str, tuple[bytes, bool]] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)

    @property
    def forked(self) -> bool:
        return bool(self.local)


def review(vetted: Files, current: Files, new: Files, *, counted: bool) -> Plan:
    """Review ``new`` (the source's) against ``vetted``; with local edits in ``current``, merge three ways."""
    zero = counter_zeroed(counted)
    norm = {
        k: {r: (zero(r, d), x) for r, (d, x) in side.items()}
        for k, side in (("vetted", vetted), ("current", current), ("new", new))
    }
    before, now = norm["vetted"], norm["current"]
    local = sorted(r for r in set(before) | set(now) if before.get(r) != now.get(r))
    plan = Plan(report=_report(norm["vetted"], norm["new"]), local=local)
    if not local:
        plan.files = dict(new)
        return plan
    merged = merge(vetted, current, new, normalize=zero)
    plan.files, plan.conflicts = merged.files, merged.conflicts
    plan.report["fork"] = {"edited_here": local, "conflicts": merged.conflicts}
    return plan


def _report(old: Files, new: Files) -> dict[str, Any]:
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    changed = sorted(r for r in set(old) & set(new) if old[r] != new[r])
    safety: list[dict[str, Any]] = []
    for rel in added + changed:
        _data, exe = new[rel]
        was = old.get(rel)
        if exe and (was is None or not was[1]):
            safety.append(
                {"kind": "executable", "file": rel, "what": "new executable" if was is None else "became executable"}
            )
        elif rel.startswith(_SCRIPTS) or exe:
            safety.append({"kind": "script", "file": rel, "what": "new script" if was is None else "script changed"})
    hosts_old = {h.lower() for _r, (d, _x) in old.items() for h in _hosts(d)}
    for rel in added + changed:
        for host in sorted(set(_hosts(new[rel][0])) - hosts_old):
            safety.append({"kind": "host", "file": rel, "what": f"new host {host}"})
    fm_old, fm_new = _frontmatter(old), _frontmatter(new)
    tools_old, tools_new = _tools(fm_old), _tools(fm_new)
    if tools_new - tools_old:
        safety.append(
            {
                "kind": "allowed-tools",
                "file": SKILL_MD,
                "what": "allowed-tools widened: " + ", ".join(sorted(tools_new - tools_old)),
            }
        )
    for key in sorted(set(fm_old) | set(fm_new)):
        if key != "metadata" and fm_old.get(key) != fm_new.get(key):
            safety.append({"kind": "frontmatter", "file": SKILL_MD, "what": f"frontmatter {key!r} changed"})
    return {
        "added": added,
        "removed": removed,
        "changed": changed,
        "safety": safety,
        "text": {r: _unified(old.get(r), new.get(r), r) for r in added + removed + changed},
    }


def _hosts(data: bytes) -> list[str]:
    return [m.group(1).decode("ascii", "replace").lower() for m in _URL.finditer(data)]


def _frontmatter(files: Files) -> dict[str, Any]:
    if SKILL_MD not in files:
        return {}
    try:
        return dict(frontmatter.load(files[SKILL_MD][0].decode("utf-8"))[0])
    except (LedgerError, UnicodeDecodeError):
        return {}


def _tools(fm: Mapping[str, Any]) -> set[str]:
    raw = fm.get("allowed-tools")
    if isinstance(raw, str):
        return set(raw.split())
    if isinstance(raw, list):
        return {str(t) for t in raw}
    return set()


def _unified(old: tuple[bytes, bool] | None, new: tuple[bytes, bool] | None, rel: str) -> str:
    a, b = (old[0] if old else b""), (new[0] if new else b"")
    if b"\0" in a + b:
        return f"(binary: {len(a)} → {len(b)} bytes)"
    lines = list(
        difflib.unified_diff(
            a.decode("utf-8", "replace").splitlines(),
            b.decode("utf-8", "replace").splitlines(),
            f"vetted/{rel}",
            f"update/{rel}",
            lineterm="",
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more line(s)"]
    return "\n".join(lines)
