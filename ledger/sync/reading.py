"""What a target holds, read for one ``ledger sync`` pass: each skill's files, keyed as the ledger
keys skills, and every entry left alone with its path and the reason (docs/layouts.md).

A folder named as a skill the brain withholds (quarantined or revoked, :mod:`ledger.brain.withholding`)
is read only if it is the copy the ledger projected there, unchanged, so that the pass takes it
out; any other is left alone and reported, and never recorded as a version of the withheld skill.

A runtime's folder is somebody else's: one bad entry (a name that is not UTF-8, a link, a fifo,
a file over the agent caps, two folders claiming one skill) is left as it is and reported, and
every other skill still syncs.  A folder that lost its skills is never read as deletions.
"""

from __future__ import annotations

from ledger.bundle.lint import HERMES_FILE, HERMES_SKILL_MD
from ledger.bundle.skill import SKILL_MD, check_name, slugify
from ledger.errors import LedgerError
from ledger.folders.folder import TargetError
from ledger.folders.ignoring import Ignore, hidden
from ledger.folders.instant import Group
from ledger.sync.settling import Pass

__all__ = ["WIPED_MIN", "key_of", "read", "skill_key", "within_caps"]

WIPED_MIN = 4  # from this many managed skills, losing most of them (not only all) is a wiped target


def read(p: Pass, wiped: str | None) -> bool:
    """The target's skills read into the pass; False (and the report says why) if it looks wiped."""
    if isinstance(p.fs.ignore, Ignore):  # a rule that would hide a held file: said, and never obeyed
        p.report["ignored_held"] = hidden(p.fs.ignore, p.manifest.skills)
    scan = p.fs.scan()
    p.categories, p.scan = scan.categories, scan.group
    for rel, why in scan.refused.items():
        p.report["left_alone"].append({"dir": rel, "reason": why})
    claims: dict[str, list[str]] = {}
    for folder, rel in [*scan.skills.items(), *scan.more]:
        try:
            key = skill_key(folder)
        except LedgerError as exc:
            p.report["left_alone"].append({"dir": rel, "reason": exc.message})
            continue
        if p.target.includes(key):
            claims.setdefault(key, []).append(rel)
    for key, rels in sorted(claims.items()):
        managed = p.manifest.skills.get(key, {}).get("dir")
        if key in p.withheld and rels != [managed]:
            _leave_withheld(p, key, rels, managed)
            continue
        if len(rels) > 1:  # two folders, one skill: Hermes would show one and hide the other
            p.dupes[key] = sorted(rels)
            p.dirs[key] = managed if managed in rels else sorted(rels)[0]  # present: never replaced nor deleted
            continue
        rel = rels[0]
        cache = p.manifest.stats.get(key) if managed == rel and not p.full else None
        group = Group()  # its clock starts before the skill is read
        try:
            p.state[key] = p.fs.state(rel, cache, group=group)
            p.groups[key] = group
            p.dirs[key] = rel
            within_caps(p, key, rel)
            if key in p.withheld and p.state[key][0] != p.manifest.files(key):
                del p.state[key], p.groups[key]  # edited there since it was projected: not the ledger's copy
                _leave_withheld(p, key, rels, rel)
        except (TargetError, OSError) as exc:
            p.state.pop(key, None)
            p.groups.pop(key, None)
            why = exc.message if isinstance(exc, LedgerError) else str(exc)
            p.report["left_alone"].append({"dir": rel, "reason": why})
            p.dirs[key] = rel  # present, but not recordable: never replaced or deleted
    managed = set(p.manifest.skills)
    missing = sorted(k for k in managed if k not in p.dirs)
    if not missing or wiped == "confirm":
        return True
    if wiped == "restore":
        for key in missing:  # projected again as new skills; nothing is recorded as deleted
            p.manifest.skills.pop(key)
        p.manifest.dirty = True
        return True
    if len(missing) < len(managed) and (len(managed) < WIPED_MIN or 2 * len(missing) <= len(managed)):
        return True  # some skills deleted there, most still in place: read as deletions
    p.report.update(
        status="refused",
        reason=f"{len(missing)} of the {len(managed)} skill(s) the ledger manages there are gone "
        "(an unmounted disk or a wiped folder is not read as deletions)",
        hint=f"put the brain's skills back: ledger sync --restore {p.target.name}; or, if they were "
        f"deleted on purpose: ledger sync --confirm-deletions {p.target.name}",
    )
    return False


def _leave_withheld(p: Pass, key: str, rels: list[str], managed: str | None) -> None:
    """Folders claiming skill ``key``, which the brain withholds: left as they are (present, so never
    replaced nor deleted), reported, never recorded."""
    state = p.withheld[key]
    fix = f"review it, then 'ledger approve {key}'" if state == "quarantined" else "remove the folder"
    for rel in rels:
        p.report["left_alone"].append(
            {
                "dir": rel,
                "reason": f"skill {key} is {state} in the brain: no runtime "
                f"gets it, and this folder is not recorded as it ({fix})",
            }
        )
    p.dirs[key] = managed if managed in rels else sorted(rels)[0]


def skill_key(folder: str) -> str:
    """The key a folder is recorded under: its own name, or its slug when the runtime's rules allow
    more than the ledger's (Hermes: ``^[a-z0-9][a-z0-9._-]*$``, so ``my_tool.v2`` → ``my-tool-v2``,
    as ``ledger import`` keys it).  A name with no slug is refused with the rule it breaks."""
    try:
        return check_name(folder)
    except LedgerError:
        try:
            return check_name(slugify(folder))
        except LedgerError as exc:
            raise LedgerError(
                f"its folder name {folder!r} cannot be a skill key: {exc.message}",
                hint="rename it with letters a-z, digits and '-' (see docs/lineage.md, 'Names')",
            ) from None


def key_of(folder: str) -> str | None:
    """:func:`skill_key`, or None for a name that can be no skill's."""
    try:
        return skill_key(folder)
    except LedgerError:
        return None


def within_caps(p: Pass, key: str, rel: str) -> None:
    """A runtime's file is held to what an agent may write (Hermes's caps, :class:`Policy`); what
    the ledger itself put there (the base) may be larger, since the brain records skills as they are."""
    files, stats = p.state[key]
    base = p.manifest.files(key) or {}
    for path, (_, blob) in files.items():
        if path in base and base[path][1] == blob:
            continue
        size = stats[path][2]
        if path == SKILL_MD and size > HERMES_SKILL_MD:  # characters: only a file this large can be over
            chars = len(p.fs.read(rel)[SKILL_MD][0].decode("utf-8", "replace"))
            if chars > HERMES_SKILL_MD:
                raise TargetError(
                    f"{rel}/{SKILL_MD} is {chars} characters, over the {HERMES_SKILL_MD} an "
                    "agent may write; the skill is left as it is",
                    hint="move detail into references/ files",
                )
        elif path != SKILL_MD and size > HERMES_FILE:
            raise TargetError(
                f"{rel}/{path} is {size} bytes, over the {HERMES_FILE} an agent may write; the skill is left as it is",
                hint="keep large files out of skills, or import "
                "the skill with 'ledger import' (the brain's own limits)",
            )
