"""Behaviours, not spellings: the scanner's second reading of a skill (docs/scanner.md, "Behaviours").

The text rules of :mod:`ledger.scanner.rules` match how an attack is usually written; this
package judges what a command *does*.  Every place a skill holds code (SKILL.md prose, inline
code and fenced blocks in every Markdown file, the scripts it ships in any language, the
configuration it writes) is cut into :class:`~ledger.scanner.meaning.units.Unit`\\ s; each unit is
parsed (shell with bashlex, Python with ``ast``), normalised (quoting, variables, ``$(…)``,
``eval``, decoders, ``python -c``, ``node -e``, ``powershell -enc``) and judged by behaviour:
fetch-then-execute, a connection that carries a shell, a credential read and sent out,
persistence, safety settings turned off, links out of the skill.

Each finding's ``rule`` names the behaviour (:data:`BEHAVIOURS`) and its ``detail`` starts with
the evidence, so a curator sees what was understood and where.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from ledger.scanner.meaning import config, decode, fetchrun, links, prose, python, script, shell
from ledger.scanner.meaning.extract import steps, units
from ledger.scanner.meaning.places import documented_flags
from ledger.scanner.meaning.units import ANALYSERS, BEHAVIOURS, MAX_DEPTH, Unit, analyse, finding
from ledger.scanner.rules import Finding
from ledger.scanner.text import decoded

__all__ = ["BEHAVIOURS", "Unit", "analyse", "analyse_skill"]


def _sh(unit: Unit) -> list[Finding]:
    """The shell reader, then what it misses as written (:mod:`ledger.scanner.meaning.fetchrun`)."""
    first = shell.analyse(unit)
    return first + fetchrun.analyse(unit, first, shell.analyse)


def _spelled(fn: Callable[[Unit], list[Finding]]) -> Callable[[Unit], list[Finding]]:
    """``fn``, then what a payload spelled past every decoder (character codes, string slices, a
    custom ``tr`` map, ``printf %b`` of a variable: :func:`decode.respelled`) runs once read back:
    when that fetches and runs code, opens a shell or sends secrets, the unit decoded and ran it."""

    def run(unit: Unit) -> list[Finding]:
        found = fn(unit)
        if unit.depth >= MAX_DEPTH or any(f.rule == "LS313" for f in found):
            return found
        for text in decode.respelled(unit.text):
            inner = analyse(unit.inner("sh", text, context="decoded"))
            hit = next((f for f in inner if f.rule in ("LS311", "LS312", "LS412")), None)
            if hit:
                return [*found, finding("LS313", "critical", unit.path, hit.line, f"spelled → {text}")]
        return found

    return run


ANALYSERS.update({"sh": _spelled(_sh), "python": _spelled(python.analyse), "config": config.analyse})
ANALYSERS.update({"prose": prose.analyse})
ANALYSERS.update({lang: _spelled(script.analyse) for lang in script.LANGS})


def analyse_skill(files: Mapping[str, tuple[bytes, bool]], symlinks: Mapping[str, str | None]) -> list[Finding]:
    """Every behaviour finding for one skill: its text files cut into units, each unit judged,
    and its symlinks' targets (``None`` when the source did not say where a link points)."""
    out: list[Finding] = list(links.analyse(symlinks))
    texts: dict[str, tuple[str, bool]] = {}
    for path, (data, executable) in sorted(files.items()):
        text_bad = decoded(data)
        if text_bad is not None:  # None: binary
            texts[path] = (text_bad[0].removeprefix("\ufeff"), executable)
    documented = frozenset().union(*(documented_flags(t) for p, (t, _) in texts.items() if p.lower().endswith(".md")))
    for path, (text, executable) in texts.items():
        found = [replace(u, documented=documented) if documented else u for u in units(path, text, executable)]
        seen: set[tuple[str, int | None]] = set()
        for unit in found:
            for f in analyse(unit):
                seen.add((f.rule, f.line))
                out.append(f)
        for unit in steps(found):  # a download in one step run in a later one
            out.extend(f for f in analyse(unit) if (f.rule, f.line) not in seen)
        recipes = fetchrun.makefile_unit(path, text)
        if recipes is not None:
            out.extend(analyse(recipes))
        if path.lower().endswith(".md") and ("<pre" in text or "<code" in text or "\\|" in text):
            for unit in fetchrun.markup_units(path, text):
                out.extend(f for f in analyse(unit) if (f.rule, f.line) not in seen)
        out.extend(fetchrun.script_sinks(path, text))
    out.extend(fetchrun.cross({p: t for p, (t, _) in texts.items()}))
    return out
