"""The spec and the tool agree on every field (issue 46): what the tool writes, docs/lineage.md names.

An outsider builds a verifier from docs/lineage.md alone.  These tests read the document itself
and hold the tool to it: every role the trust set takes is in every grammar and table of roles,
and every key a real brain's supply record and outcome records hold (brains made with the CLI)
is named by the schema the document gives.
"""

from __future__ import annotations

import re
from pathlib import Path

from ledger.signatures.trust import ROLES
from ledger.store.messages import ACTORS

DOC = Path(__file__).resolve().parent.parent / "docs" / "lineage.md"


def section(heading: str) -> str:
    """The text of the section whose heading line starts with ``heading`` (``### 8.2``), up to the
    next heading of the same or a higher level."""
    text = DOC.read_text(encoding="utf-8")
    level = heading.split(" ")[0]
    start = next(m for m in re.finditer(rf"^{re.escape(heading)}\b.*$", text, re.M))
    stop = re.compile(rf"^#{{1,{len(level)}}} ", re.M).search(text, start.end())
    return text[start.end() : stop.start() if stop else len(text)]


# ------------------------------------------------------------------ roles


def test_the_tool_has_one_list_of_roles() -> None:
    assert sorted(ACTORS) == sorted(ROLES)


def test_every_grammar_and_table_of_roles_names_every_role() -> None:
    """A verifier built from §2.1 or the §8.2 grammar alone accepts every role a v1.6 brain's keys carry."""
    abnf = re.search(r"^role\s*=([^;]*)", section("### 8.2"), re.M)
    assert abnf is not None
    assert sorted(re.findall(r'"([a-z]+)"', abnf.group(1))) == sorted(ROLES), "§8.2's role rule"
    actor_row = next(ln for ln in section("### 2.1").splitlines() if ln.startswith("| 9 | `Ledger-Actor`"))
    assert set(ROLES) <= set(re.findall(r"`([a-z]+)`", actor_row.split("|")[4])), "§2.1's Ledger-Actor row"
    rule5 = next(p for p in section("### 8.3").split("\n\n") if "The roles are" in p)
    assert set(ROLES) <= set(re.findall(r"`([a-z]+)`", rule5)), "§8.3 rule 5"
    actor = next(ln for ln in section("#### 12.5.3").splitlines() if ln.startswith("| `actor`"))
    assert set(ROLES) <= set(re.findall(r"`([a-z]+)`", actor)), "§12.5.3's actor"
