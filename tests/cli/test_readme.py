"""The README's first walkthrough is a script, and so are the guides' walkthroughs that go on from it:
every ``sh`` block marked ``<!-- walkthrough -->`` in README.md and docs/guides/*.md runs as it is
(scripts/readme-walkthrough), and no shell block in them is left unmarked and so unrun."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDES = ("agent-runtime", "operator", "auditor", "shareholder")
# The walkthroughs, in the order they go on from each other: each guide's starts where the one before left off.
WALKTHROUGH = ("README.md", "docs/guides/operator.md", "docs/guides/auditor.md", "docs/guides/shareholder.md")
MARK = "<!-- walkthrough -->"


@pytest.mark.chain
def test_the_readme_cli_section_runs_top_to_bottom() -> None:
    proc = subprocess.run([str(REPO / "scripts" / "readme-walkthrough")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "every step of the README's CLI section ran" in proc.stderr
    for shown in ("pushed", "cloned", "committed on chain at seq", "Verified OK"):
        assert shown in proc.stdout + proc.stderr, shown


@pytest.mark.chain
def test_the_guides_walkthroughs_run_after_the_readmes() -> None:
    """What the README's CLI section walked through before it was cut to a first walkthrough still runs:
    the operator's guide (skills at length, the chain, keys, runtimes' folders, a fleet, skills from
    elsewhere), the auditor's (plain git, attestations, manifests) and the shareholder's (outcomes, the page)."""
    proc = subprocess.run(
        [str(REPO / "scripts" / "readme-walkthrough"), *WALKTHROUGH], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"every step of {' '.join(WALKTHROUGH)} ran" in proc.stderr
    out = proc.stdout + proc.stderr
    for shown in (
        "committed on chain at seq",  # the operator's chain
        "recorded  code-review",  # a runtime's edit recorded by sync
        "merged    1 change(s)",  # the fleet: refused by the remote, merged, pushed
        "quarantined",  # skills from elsewhere
        "frozen  summarise: as pinned",
        'Good "git" signature',  # plain git checks the snapshot's signature
        "Verified OK",
    ):
        assert shown in out, shown


def _sh_blocks(text: str) -> list[tuple[str, str]]:
    """(the line above, the block) for every ```sh block."""
    return re.findall(r"^([^\n]*)\n```sh\n(.*?)^```$", text, re.M | re.S)


def test_every_shell_block_of_the_readme_and_the_guides_is_run() -> None:
    """A shell block a reader is shown is one a test runs: a walkthrough step, an attach recipe
    (tests/cli/test_attach_recipes.py follows those), or one marked with the test that runs it
    (``<!-- run by tests/cli/test_scripts.py -->``: the two commands)."""
    unrun = []
    for page in [REPO / "README.md", *sorted((REPO / "docs" / "guides").glob("*.md"))]:
        for above, block in _sh_blocks(page.read_text()):
            by = re.fullmatch(r"<!-- run by (tests/[\w/]+\.py) -->", above.strip())
            run = (
                above.strip() == MARK or above.strip().startswith("<!-- recipe: ") or (by and (REPO / by[1]).is_file())
            )
            if not run:
                unrun.append(f"{page.relative_to(REPO)}: {block.splitlines()[0]}")
    assert not unrun, "\n".join(unrun)
    marked = [p for p in WALKTHROUGH if MARK in (REPO / p).read_text()]
    assert marked == list(WALKTHROUGH)


def test_the_readme_is_read_in_five_minutes() -> None:
    """At most 250 lines: what it is, the two commands, a first walkthrough, and where to go next,
    one guide per user, each of which exists; every page it or a guide links to exists."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert "./scripts/demo" in readme and "./scripts/test" in readme
    nexts = readme[readme.index("## Where to go next") :]
    for guide in GUIDES:
        assert f"(docs/guides/{guide}.md)" in nexts, guide
        assert (REPO / "docs" / "guides" / f"{guide}.md").is_file(), guide
    broken = []
    for page in [REPO / "README.md", *sorted((REPO / "docs" / "guides").glob("*.md"))]:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            path = page.parent / target if target else page
            if not path.exists() or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
                broken.append(f"{page.relative_to(REPO)}: {target}#{anchor}")
    assert not broken, "\n".join(broken)


def _anchors(page: Path) -> set[str]:
    """The anchors a Markdown viewer gives the page's headings (lower case, punctuation dropped, spaces to hyphens)."""
    heads = re.findall(r"^#+ (.+)$", re.sub(r"(?ms)^```.*?^```$", "", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_the_readme_lists_every_command() -> None:
    from ledger.cli import main

    readme = (REPO / "docs" / "guides" / "operator.md").read_text()  # the command list moved to the operator's guide
    listing = readme[readme.index("Every command") :]
    names = set(main.commands)
    for group in ("skill", "chain", "keys"):
        names |= {f"{group} {sub}" for sub in main.commands[group].commands}  # type: ignore[attr-defined]
    missing = sorted(n for n in names if not re.search(rf"(^|[ |]){re.escape(n.split()[-1])}( |$)", listing, re.M))
    assert not missing, f"README's command list omits: {missing}"
