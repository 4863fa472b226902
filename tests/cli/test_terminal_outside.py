"""A peer's words in the terminal: commit notes and skill descriptions come from whoever wrote the
brain (a clone, a sync), and must not reach the terminal as escapes (OSC 52 writes the clipboard,
OSC 0 the title, CSI repaints) or bidi overrides."""

from __future__ import annotations

from pathlib import Path

from tests.harness.cli import run_in_process

HOSTILE = "a \x1b]52;c;ZWNobyBwd25lZA==\x07 b \x1b[2J c \u202egnp.exe d"


def test_log_and_skill_list_show_a_peers_control_characters_as_escapes(tmp_path: Path) -> None:
    b = ("--brain", str(tmp_path / "b"))
    run_in_process("init", str(tmp_path / "b"), check=True)
    run_in_process(*b, "skill", "create", "evil", "--description", "fine " + HOSTILE, "-m", HOSTILE, check=True)
    for args in (("log", "--no-pager"), ("skill", "list"), ("skill", "view", "evil")):
        out = run_in_process(*b, *args, check=True).stdout
        assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out, (args, out)
    assert "\\x1b]52;c;" in run_in_process(*b, "log", "--no-pager", check=True).stdout  # shown, not obeyed


def test_chain_status_is_not_in_sync_with_roots_pending_after_a_revert(chained) -> None:
    """A snapshot that returns to the anchored root (create, then delete, uncommitted) leaves roots
    to commit: ``chain status`` must not print "in sync" under "pending 2 root(s) to commit"."""
    import json

    b = ("--brain", str(chained.root))
    run_in_process(*b, "skill", "create", "s", "--description", "S skill", check=True)
    run_in_process(*b, "chain", "anchor", check=True)
    run_in_process(*b, "skill", "create", "t", "--description", "T skill", "--no-anchor", check=True)
    run_in_process(*b, "skill", "delete", "t", "--no-anchor", check=True)
    st = json.loads(run_in_process(*b, "chain", "status", "--json", check=True).stdout)
    assert st["pending"] == 2 and st["onchain_head"] == st["local_head"] and st["in_sync"] is False
    human = run_in_process(*b, "chain", "status", check=True).stdout
    assert "in sync" not in human and "2 snapshot(s) to commit" in human, human
