"""What the behaviour analysers read: a :class:`Unit` of code in one language, cut from a file.

A unit is a shell command line, a fenced block, a script, a ``python -c`` argument, a decoded
payload, a hook command in a settings file: anything that a host or an agent could run.  The
analysers never see files, only units, so a payload found inside another (``bash -c "$(echo …|
base64 -d)"``) is judged by the same code as one written out.

The registry breaks what would be an import cycle: the shell analyser hands a ``python -c``
argument to :func:`analyse`, which finds the Python analyser in :data:`ANALYSERS`, filled in by
the package's ``__init__``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ledger.scanner.rules import Finding
from ledger.scanner.text import detail

__all__ = ["ANALYSERS", "BEHAVIOURS", "MAX_DEPTH", "Unit", "analyse", "finding"]

# rule id -> (behaviour, the most it reports); docs/scanner.md "Behaviours" says when it reports less
BEHAVIOURS: dict[str, tuple[str, str]] = {
    "LS311": ("fetch-then-execute", "critical"),
    "LS312": ("network-shell", "critical"),
    "LS313": ("decoded-execute", "critical"),
    "LS411": ("credential-read", "high"),
    "LS412": ("credential-exfiltration", "critical"),
    "LS705": ("symlink-escape", "critical"),
    "LS911": ("persistence", "critical"),
    "LS912": ("safety-off", "critical"),
}

MAX_DEPTH = 4  # nested payloads (a decoded string that holds another) followed at most this deep


@dataclass(frozen=True)
class Unit:
    """One piece of code to judge.

    ``lang``: ``sh``, ``python``, ``js``, ``powershell``, ``ruby``, ``perl``, ``php`` or
    ``config:<kind>`` (``config:settings``, ``config:crontab``, ``config:rc``, ``config:systemd``,
    ``config:plist``).  ``path`` is the file it came from, ``line`` the 1-based line of
    ``text``'s first line in that file.  ``where`` is the file's role: ``instructions``
    (SKILL.md), ``script`` (runs unread) or ``document``; ``context`` how it sits there:
    ``prose`` (a command written in a sentence), ``inline`` (an inline code span), ``fenced``
    (a fenced block), ``file`` (the whole file is code), ``decoded`` (a payload decoded from
    another unit), ``argument`` (``bash -c``, ``python -c`` and the like).  ``discussed`` is
    true when the text around it talks about the attack rather than asks for it (see
    ``scanrules._discussed``).  ``depth`` counts the nesting.  ``documented`` holds the agent
    safety flags the skill's own documents explain (:func:`ledger.scanner.meaning.places.documented_flags`).
    """

    lang: str
    text: str
    path: str
    line: int
    where: str
    context: str
    discussed: bool = False
    depth: int = 0
    documented: frozenset[str] = frozenset()

    def inner(self, lang: str, text: str, *, line_offset: int = 0, context: str = "argument") -> Unit:
        """A unit found inside this one: same file and role, one level deeper."""
        return replace(self, lang=lang, text=text, line=self.line + line_offset, context=context, depth=self.depth + 1)


ANALYSERS: dict[str, Callable[[Unit], list[Finding]]] = {}


def finding(rule: str, severity: str, path: str, line: int | None, evidence: str) -> Finding:
    """The one way an analyser reports a behaviour: its detail is ``EVIDENCE (behaviour)``, the
    evidence (what was seen, whitespace folded) shortened with ``…`` so the whole fits 80
    characters, the behaviour :data:`BEHAVIOURS`\\ ``[rule][0]``."""
    label = BEHAVIOURS[rule][0]
    room = 80 - len(label) - 3
    ev = " ".join(evidence.split())
    ev = ev if len(ev) <= room else ev[: room - 1] + "…"
    return Finding(rule, severity, path, line, detail(f"{ev} ({label})"))


def analyse(unit: Unit) -> list[Finding]:
    """The findings of the analyser for ``unit.lang``; none past :data:`MAX_DEPTH` or for a language
    no analyser reads (a ``config:`` kind falls back to its prefix's analyser)."""
    if unit.depth > MAX_DEPTH:
        return []
    fn = ANALYSERS.get(unit.lang) or ANALYSERS.get(unit.lang.split(":", 1)[0])
    return fn(unit) if fn else []
