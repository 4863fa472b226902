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
was written in, never put a copy's stale bytes over the new file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

__all__ = ["DEFAULTS", "IGNORE_FILE", "IN_FLIGHT", "Ignore"]

IGNORE_FILE = ".ledgerignore"
DEFAULTS = (
    "*.swp", "*.swo", "*.swn", "*~", ".#*", "#*#",  # vim and emacs
    "4913",  # vim's probe that a folder is writable
    ".DS_Store", "._*", "Thumbs.db", "desktop.ini",  # macOS and Windows
    ".*.tmp.*",  # Hermes's skill_manage writes: a temporary file beside the target, then os.replace
)  # fmt: skip
IN_FLIGHT = re.compile(r"\.[^/]*\.tmp\.[^/]*\Z")  # a write in flight is ignored but never carried: a copy of
# it renamed into place by its writer would put stale (or half-written) bytes over the new file


class Ignore:
    """A matcher over skill-relative paths: :data:`DEFAULTS` then each source's lines, in order."""

    def __init__(self, sources: Iterable[str] = ()) -> None:
        import pathspec  # the only user: kept off the start-up path of every other command

        lines = [*DEFAULTS]
        for text in sources:
            lines += [line for line in text.splitlines() if line.strip()]
        self.lines = tuple(lines)
        self._spec = pathspec.GitIgnoreSpec.from_lines(lines)

    @functools.cache  # noqa: B019 - one matcher per pass, a handful of distinct paths
    def __call__(self, path: str) -> bool:
        return bool(self._spec.match_file(path))

    def then(self, text: str) -> Ignore:
        """These rules, then ``text``'s (a target's own ``.ledgerignore``)."""
        return Ignore(["\n".join(self.lines[len(DEFAULTS) :]), text]) if text.strip() else self


def nothing(_: str) -> bool:
    """The matcher of a folder the ledger writes alone (``ledger export``): nothing is debris."""
    return False


Matcher = Callable[[str], bool]
