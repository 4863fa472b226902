"""What ``ledger sync`` never records from a target, nor removes from it: editor and OS debris.

Rules are gitignore patterns, matched by ``pathspec`` (git's own wildmatch semantics,
negation included) against each file's path **inside its skill folder** (``SKILL.md``,
``references/api.md.swp``), so a rule means the same in every target and layout.  They are
read in order, a later rule overriding an earlier one as in git:

1. :data:`DEFAULTS` (vim, emacs, macOS, Windows, and Hermes's own atomic writes in flight);
2. ``.ledger/syncignore`` in the brain (every target);
3. ``.ledgerignore`` at the top of the target (that target only).

An ignored file is neither recorded nor compared; when the ledger replaces a skill folder it
carries the ignored files across, so an editor's swap file is never deleted under it, except
a write in flight (:data:`IN_FLIGHT`): its writer's rename must fail, or land in the folder it
was written in, never put a copy's stale bytes over the new file.  When it takes out a skill the
brain deleted, the files a rule of the brain's or the target's keeps out stay in the folder
(the runtime's, which no version holds); the defaults' debris goes with the folder.

A rule hides only what the brain does not hold (issue 46).  A file the brain holds in a target
(:class:`Held`: one the manifest says the ledger put there or recorded from there, or one of
the head's version of that skill) is read and compared whatever any rule says, so no ignore
file can make a sync record a deletion; each rule that would hide one is reported, with the
path and the file the rule is in (:func:`hidden`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["DEFAULTS", "IGNORE_FILE", "IN_FLIGHT", "Held", "Ignore", "brain_rules", "hidden"]

IGNORE_FILE = ".ledgerignore"
DEFAULTS = (
    "*.swp",
    "*.swo",
    "*.swn",
    "*~",
    ".#*",
    "#*#",  # vim and emacs
    "4913",  # vim's probe that a folder is writable
    ".DS_Store",
    "._*",
    "Thumbs.db",
    "desktop.ini",  # macOS and Windows
    ".*.tmp.*",  # Hermes's skill_manage writes: a temporary file beside the target, then os.replace
)
IN_FLIGHT = re.compile(r"\.[^/]*\.tmp\.[^/]*\Z")  # a write in flight is ignored but never carried: a copy of
# it renamed into place by its writer would put stale (or half-written) bytes over the new file


DEFAULT_SOURCE = "the ledger's defaults"


class Ignore:
    """A matcher over skill-relative paths: :data:`DEFAULTS` then each source's lines, in order.
    A source is its text, or ``(where it is, its text)``, so that a rule can be named with its file."""

    def __init__(self, sources: Iterable[str | tuple[str, str]] = ()) -> None:
        import pathspec  # the only user: kept off the start-up path of every other command

        rules = [(line, DEFAULT_SOURCE) for line in DEFAULTS]
        for source in sources:
            where, text = source if isinstance(source, tuple) else ("", source)
            rules += [(line, where) for line in text.splitlines() if line.strip()]
        self.rules = tuple(rules)
        self.lines = tuple(line for line, _ in rules)
        self._spec = pathspec.GitIgnoreSpec.from_lines(self.lines)  # one pattern per line, in order

    @functools.cache  # noqa: B019 - one matcher per pass, a handful of distinct paths
    def __call__(self, path: str) -> bool:
        return bool(self._spec.match_file(path))

    def then(self, text: str, where: str = "") -> Ignore:
        """These rules, then ``text``'s (a target's own ``.ledgerignore``, at ``where``)."""
        if not text.strip():
            return self
        return Ignore([*((w, line) for line, w in self.rules[len(DEFAULTS) :]), (where, text)])

    def rule(self, path: str) -> tuple[str, str] | None:
        """The rule that ignores ``path`` and the file it is in (the last rule that matches, as in
        git), or None if ``path`` is not ignored."""
        if not self(path):
            return None
        for (line, where), pattern in zip(reversed(self.rules), reversed(self._spec.patterns), strict=True):
            if pattern.include is not None and pattern.match_file(path) is not None:
                return (line, where) if pattern.include else None
        return None

    def hiding(self, folder: str, path: str) -> tuple[str, str] | None:
        """The rule (and its file) that would hide file ``path`` of the skill in folder ``folder``
        (target-relative) from a pass that obeyed the rules alone, or None.  A pass matches each
        folder on the way down by its name (``research/``, ``alpha/``), then the skill's own
        folders and file by their paths in the skill, so the same is done here."""
        parts = path.split("/")
        for inner in (
            [name + "/" for name in folder.split("/")]
            + ["/".join(parts[:i]) + "/" for i in range(1, len(parts))]
            + [path]
        ):
            found = self.rule(inner)
            if found is not None:
                return found
        return None


def brain_rules(control: Path) -> Ignore:
    """The default rules, then the brain's own (``.ledger/syncignore`` in its control folder)."""
    path = control / "syncignore"
    try:
        return Ignore([(str(path), path.read_text(encoding="utf-8", errors="replace"))])
    except FileNotFoundError:
        return Ignore()


def hidden(ignore: Ignore, skills: Mapping[str, Mapping[str, Any]]) -> list[dict[str, str]]:
    """Each held file of a manifest's ``skills`` that a rule would hide: ``{"skill", "path" (in the
    target), "rule", "source" (the file the rule is in)}``, sorted by path."""
    out = []
    for key, entry in skills.items():
        for rel in entry.get("files", ()):
            found = ignore.hiding(entry["dir"], rel)
            if found is not None:
                out.append({"skill": key, "path": f"{entry['dir']}/{rel}", "rule": found[0], "source": found[1]})
    return sorted(out, key=lambda h: h["path"])


class Held:
    """What the brain holds in one target, which no rule hides: the files the manifest says the
    ledger put in a skill folder or recorded from it (``skills``, read live: the manifest of the pass),
    and the files of the head's version of that skill (``head``: a folder's key → its file paths, or
    None).  Asked only of a path a rule matched, so a pass with no such rule never reads a tree."""

    def __init__(
        self,
        skills: Mapping[str, Mapping[str, Any]],
        key_of: Callable[[str], str | None],
        head: Callable[[str], Iterable[str] | None],
    ) -> None:
        self.skills, self.key_of, self.head = skills, key_of, head

    def __call__(self, folder: str, path: str) -> bool:
        """Whether the brain holds file ``path`` of the skill in ``folder`` (target-relative); a
        ``path`` ending in ``/`` asks for anything in that folder of the skill, and ``""`` asks
        whether ``folder`` is (or holds) a skill folder the brain holds."""
        if path == "":
            if any(e["dir"] == folder or e["dir"].startswith(folder + "/") for e in self.skills.values()):
                return True
            key = self.key_of(folder.rpartition("/")[2])
            return key is not None and self.head(key) is not None
        key = self.key_of(folder.rpartition("/")[2])
        if key is None:
            return False
        entry = self.skills.get(key)
        files = [*(entry["files"] if entry is not None and entry["dir"] == folder else ()), *(self.head(key) or ())]
        return path in files if not path.endswith("/") else any(f.startswith(path) for f in files)


def nothing(_: str) -> bool:
    """The matcher of a folder the ledger writes alone (``ledger export``): nothing is debris."""
    return False


Matcher = Callable[[str], bool]
