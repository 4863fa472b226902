"""The page's release notes count a snapshot's diff as ``git diff --stat`` does, on the real store."""

from __future__ import annotations

import itertools
import subprocess

from ledger.page.collect import collect


def _git_numstat(git_dir: str, old: str, new: str) -> tuple[int, int, int]:
    """Files, lines added and lines removed under skills/, by the git command line itself."""
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", "diff", "--numstat", "--no-renames", old, new, "--", "skills"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split("\t") for line in out.splitlines() if line]
    return len(rows), sum(int(r[0]) for r in rows), sum(int(r[1]) for r in rows)


def test_each_snapshot_counts_its_files_and_lines_as_git_does(brain) -> None:
    body = "---\nnot frontmatter, a rule line\n+++ nor a header\n" + "".join(f"step {i}\n" for i in range(5))
    brain.create("release-a", "First skill", body)
    brain.create("release-b", "Second skill", "one\n")
    brain.patch("release-a", "step 3", "step three")
    brain.delete("release-a")  # a deleted file's lines all count, its frontmatter's '---' lines included
    timeline = collect(brain)["timeline"]
    git_dir = str(brain.store.git_dir)
    checked = 0
    for parent, snap in itertools.pairwise(timeline):
        if parent["root"] == snap["root"]:
            assert snap["files"] == {"added": 0, "changed": 0, "removed": 0}
            continue
        files, plus, minus = _git_numstat(git_dir, parent["commit"], snap["commit"])
        assert sum(snap["files"].values()) == files, snap
        assert (snap["lines"]["added"], snap["lines"]["removed"]) == (plus, minus), snap
        checked += 1
    assert checked >= 4
    last = timeline[-1]
    assert last["files"]["removed"] >= 1 and last["lines"]["removed"] > 8, last  # every line of the deleted skill
