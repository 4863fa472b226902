"""Skills the supply record withholds (quarantined or revoked) are stored and versioned, but no runtime,
index, listing or agent sees them (issue 36; docs/layouts.md, "Quarantined and revoked skills").

Every test makes a real brain with the installed ``ledger``, then writes a supply record directly through
the writer (``approve``: the record only), as the install, approve and revoke services will.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from ledger.agent.evolution import apply_payload, render_index, render_skill_turn, synthesis_advice
from ledger.brain import Brain
from ledger.errors import SupplyError
from ledger.folders import instant
from ledger.store.supply import APPROVED, QUARANTINED, REVOKED, Entry, Supply
from tests.harness.brains import make_brain
from tests.harness.cli import LEDGER, run_in_process
from tests.unit.store.test_statcache import _age, _both
from tests.unit.sync.test_sync_instant import _settle

DIGEST = "blake3-tree-v1:" + "ab" * 32
REASON = "it sent the user's tokens to a paste site"


MEDIUM = {
    "scanner": "ledger-scan/1",
    "worst": "medium",
    "findings": [
        {"rule": "LS702", "severity": "medium", "file": "SKILL.md", "line": None, "detail": "executable bit set"}
    ],
}


def _entry(state: str) -> Entry:
    return Entry(
        source={"type": "git", "url": "https://example.com/skills.git", "path": "skills/x", "ref": None},
        pin={"commit": "c" * 40},
        version=1,
        blake3=DIGEST,
        sha256="d" * 64,
        files={"SKILL.md": "e" * 64},
        signer=None,
        derived_from=None,
        state=state,
        verdict=MEDIUM,
        approval={"by": None, "auto": False, "override": None} if state == APPROVED else None,
    )


def _mark(brain: Path | Brain, **states: str) -> None:
    """The head's supply record set to ``states`` (name → quarantined | approved | revoked)."""
    revoked = {DIGEST: {"reason": REASON, "source": None, "pin": None}} if REVOKED in states.values() else {}
    with contextlib.nullcontext(brain) if isinstance(brain, Brain) else Brain.open(brain) as b:
        b._writer.apply(
            "approve",
            {},
            [],
            "supply: " + ", ".join(f"{n} {s}" for n, s in states.items()),
            supply=Supply({n: _entry(s) for n, s in states.items()}, revoked),
        )


def _setup(tmp_path: Path, *skills: str) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "HERMES_HOME": str(tmp_path / "hermes-home")}
    skills_made = {name: (f"Do {name}.", f"# {name}\n\nStep one.\n") for name in skills}
    return make_brain(tmp_path / "brain", skills_made, via="cli", env=env), env


def _ledger(
    brain: Path, env: dict[str, str], *args: str, full: bool = False, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return run_in_process(
        "--brain", str(brain), *args, env={**env, **({"LEDGER_FULL_PATH": "1"} if full else {})}, check=check
    )


def _sync(brain: Path, env: dict[str, str], code: int = 0) -> dict[str, dict]:
    """A sync's report by target; ``code`` 1: an entry is left alone (said, and the exit status says it)."""
    proc = _ledger(brain, env, "sync", "--json", check=False)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return {t["name"]: t for t in json.loads(proc.stdout)["targets"]}


def _quick(brain: Path, *args: str) -> tuple[str, str]:
    """(the path that answered, QUICK or FULL; its output), after checking the full path prints the same."""
    path, out, full = _both(["--brain", str(brain), *args], brain.parent)
    assert out == full
    return path, out


def test_index_and_skill_list_leave_out_or_mark_a_withheld_skill_on_both_paths(tmp_path: Path) -> None:
    brain, env = _setup(tmp_path, "alpha", "beta", "gamma")
    _age(brain / "skills")
    assert _quick(brain, "index")[0] == "FULL" and _quick(brain, "index")[0] == "QUICK"  # the stat cache warmed
    _mark(brain, beta=QUARANTINED, gamma=REVOKED)
    # A new supply record: the quick path cannot know it, so the full path answers, and remembers it for this
    # head; then the quick path leaves them out too.  Either way it is byte for byte the same output.
    for path in ("FULL", "QUICK"):
        assert _quick(brain, "index") == (path, "▸ alpha: Do alpha.\n")
    for _ in range(2):  # the list marks them: always the full path's, which reads the record
        path, listed = _quick(brain, "skill", "list")
        lines = listed.splitlines()
        assert path == "FULL" and [line.split()[0] for line in lines] == ["alpha", "beta", "gamma"]
        assert "[quarantined] Do beta." in lines[1] and "[revoked] Do gamma." in lines[2] and "[" not in lines[0]
    as_json = json.loads(_ledger(brain, env, "skill", "list", "--json").stdout)
    assert [s.get("supply") for s in as_json] == [None, "quarantined", "revoked"]
    assert "working tree clean" in _ledger(brain, env, "status").stdout  # status is unaffected
    viewed = _ledger(brain, env, "skill", "view", "beta")  # the user curates: shown, and said
    assert viewed.stdout.startswith("# beta (v1) [quarantined]: Do beta.") and "ledger approve beta" in viewed.stderr
    shown = _ledger(brain, env, "show", "gamma")
    assert "Step one." in shown.stdout and "revoked" in shown.stderr
    _mark(brain, beta=APPROVED, gamma=REVOKED)  # an approve is seen at once, on either path
    for path in ("FULL", "QUICK"):
        assert _quick(brain, "index") == (path, "▸ alpha: Do alpha.\n▸ beta: Do beta.\n")
    _mark(brain, beta=REVOKED, gamma=REVOKED)  # and a revoke hides it at once
    assert _quick(brain, "index") == ("FULL", "▸ alpha: Do alpha.\n")
    _mark(brain)  # no skill withheld: the list is the quick path's again
    assert _quick(brain, "skill", "list")[0] == "FULL" and _quick(brain, "skill", "list")[0] == "QUICK"


def test_quick_path_falls_back_when_the_head_is_not_known(tmp_path: Path) -> None:
    """A supply cache that names another head, and a top tree that is not loose: the full path answers, and
    remembers the head's withheld names for the quick path (which finds the head in packed-refs too)."""
    brain, env = _setup(tmp_path, "alpha", "beta")
    _age(brain / "skills")
    _ledger(brain, env, "index")
    _mark(brain, beta=QUARANTINED)
    (brain / ".ledger/cache/supply-v1.json").unlink()
    subprocess.run(["git", "-C", str(brain), "repack", "-adq"], check=True)
    subprocess.run(["git", "-C", str(brain), "prune-packed", "-q"], check=True)
    subprocess.run(["git", "-C", str(brain), "pack-refs", "--all"], check=True)  # as a clone's refs are
    assert not (brain / ".git/refs/heads/main").exists()
    assert _quick(brain, "index") == ("FULL", "▸ alpha: Do alpha.\n")
    assert json.loads((brain / ".ledger/cache/supply-v1.json").read_text())["withheld"] == ["beta"]
    assert _quick(brain, "index") == ("QUICK", "▸ alpha: Do alpha.\n")  # from the cache, for this head


def test_mcp_lists_nothing_withheld_and_refuses_reads_and_writes(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    brain, env = _setup(tmp_path, "alpha", "beta", "gamma")
    _mark(brain, beta=QUARANTINED, gamma=REVOKED)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    params = StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env={**full_env, **env})

    def body(result) -> dict:
        text = "".join(getattr(c, "text", "") for c in result.content)
        return json.loads(text[text.index("{") :])

    async def session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            listed = body(await s.call_tool("skills_list", {}))
            assert [x["name"] for x in listed["skills"]] == ["alpha"] and listed["hidden"] == []
            index = (await s.read_resource("ledger://index")).contents[0].text
            assert index == "▸ alpha: Do alpha.\n"
            view = await s.call_tool("skill_view", {"name": "beta"})
            refused = body(view)
            assert view.is_error and refused["state"] == "quarantined" and "quarantined" in refused["error"]
            assert "ledger approve beta" in refused["hint"]
            revoked = body(await s.call_tool("skill_view", {"name": "gamma"}))
            assert revoked["state"] == "revoked" and REASON in revoked["error"] and revoked["reason"] == REASON
            for tool, args in (
                ("skill_history", {"name": "beta"}),
                ("skill_diff", {"name": "beta", "from": 1, "to": 1}),
                (
                    "skill_manage",
                    {"action": "patch", "name": "beta", "old_string": "Step one.", "new_string": "Step two."},
                ),
                ("skill_manage", {"action": "delete", "name": "gamma"}),
            ):
                result = await s.call_tool(tool, args)
                assert result.is_error and body(result)["state"] in ("quarantined", "revoked"), tool
            again = await s.call_tool(
                "skill_manage",
                {"action": "create", "name": "beta", "content": "---\nname: beta\ndescription: Mine.\n---\nGo.\n"},
            )
            assert again.is_error and body(again)["state"] == "quarantined"
            near = await s.call_tool(
                "skill_manage",
                {"action": "create", "name": "betas", "content": "---\nname: betas\ndescription: Do beta.\n---\nGo.\n"},
            )
            assert not near.is_error  # a withheld skill is not a near-duplicate to name either
            _mark(brain, beta=APPROVED, gamma=REVOKED)  # approved beside the running server: listed at once
            listed = body(await s.call_tool("skills_list", {}))
            assert [x["name"] for x in listed["skills"]] == ["alpha", "beta", "betas"]
            assert not (await s.call_tool("skill_view", {"name": "beta"})).is_error

    asyncio.run(asyncio.wait_for(session(), timeout=60))
    log = json.loads(run_in_process("--brain", str(brain), "log", "--json", check=True).stdout)
    assert [d["operation"] for d in log][:2] == ["approve", "create"]  # the refused calls wrote nothing


def test_sync_never_projects_a_withheld_skill_and_takes_one_out_once_revoked(tmp_path: Path) -> None:
    brain, env = _setup(tmp_path, "alpha", "beta")
    claude, hermes = Path(env["HOME"]) / ".claude/skills", Path(env["HERMES_HOME"]) / "skills"
    (Path(env["HOME"]) / ".claude").mkdir()
    _mark(brain, beta=QUARANTINED)
    _ledger(brain, env, "link", "claude")
    _ledger(brain, env, "link", "hermes")
    first = _sync(brain, env)
    for name, home in (("claude", claude), ("hermes", hermes)):
        assert first[name]["projected"] == ["alpha"] and not (home / "beta").exists()
        assert (home / "alpha/SKILL.md").is_file()
    _settle(claude, hermes)  # past the racy window: the next pass, in step, leaves its instant record
    assert _sync(brain, env)["claude"]["projected"] == []
    control, head = brain / ".ledger", (brain / ".git/refs/heads/main").read_text().strip()
    for name, home in (("claude", claude), ("hermes", hermes)):  # a quarantined skill keeps no sync from it
        assert instant.in_step(str(control), name, str(home), head), name
    _mark(brain, beta=APPROVED)  # a new head: the records no longer answer, and the full pass projects it
    head = (brain / ".git/refs/heads/main").read_text().strip()
    assert not any(instant.in_step(str(control), n, str(h), head) for n, h in (("claude", claude), ("hermes", hermes)))
    approved = _sync(brain, env)
    for name, home in (("claude", claude), ("hermes", hermes)):
        assert approved[name]["projected"] == ["beta"] and (home / "beta/SKILL.md").is_file()
    _mark(brain, beta=REVOKED)  # a new head: the no-op record of the approved head no longer answers
    revoked = _sync(brain, env)
    for name, home in (("claude", claude), ("hermes", hermes)):
        assert revoked[name]["removed"] == ["beta"] and not (home / "beta").exists(), revoked[name]
        assert (home / "alpha/SKILL.md").is_file()
    with Brain.open(brain) as b:
        assert "beta" in b.head().skills  # still in the brain, with its history
        assert [v["version"] for v in b.history("beta")] == [1]
    assert _sync(brain, env)["claude"]["removed"] == []
    _mark(brain, beta=APPROVED)
    assert _sync(brain, env)["claude"]["projected"] == ["beta"]
    # An update that puts it back in quarantine (an install of a new upstream version): taken out again.
    _ledger(brain, env, "skill", "patch", "beta", "--old", "Step one.", "--new", "Step one, upstream.")
    _mark(brain, beta=QUARANTINED)
    again = _sync(brain, env)
    assert all(again[n]["removed"] == ["beta"] and again[n]["projected"] == [] for n in ("claude", "hermes"))
    assert not (claude / "beta").exists() and not (hermes / "beta").exists()


def test_a_runtime_folder_named_as_a_withheld_skill_is_left_alone_not_recorded(tmp_path: Path) -> None:
    brain, env = _setup(tmp_path, "alpha", "beta")
    claude = Path(env["HOME"]) / ".claude/skills"
    _ledger(brain, env, "link", "claude")
    _sync(brain, env)
    _mark(brain, beta=QUARANTINED)
    md = claude / "beta/SKILL.md"  # edited in the runtime after it was projected, before the sync takes it out
    md.write_text(md.read_text().replace("Step one.", "Step one, locally."))
    before = json.loads(_ledger(brain, env, "log", "--json").stdout)
    report = _sync(brain, env, 1)["claude"]
    assert report["recorded"] == [] and report["removed"] == []
    assert [e["dir"] for e in report["left_alone"]] == ["beta"]
    assert "quarantined" in report["left_alone"][0]["reason"]
    assert "Step one, locally." in md.read_text()  # left as it is, never deleted
    assert json.loads(_ledger(brain, env, "log", "--json").stdout) == before  # and nothing recorded
    md.parent.rename(claude.parent / "beta-aside")  # gone from the runtime: no deletion recorded either
    _sync(brain, env)
    with Brain.open(brain) as b:
        assert "beta" in b.head().skills and len(b.history("beta")) == 1
    (claude / "beta").mkdir()  # and a new folder of that name, never a version of the quarantined skill
    (claude / "beta/SKILL.md").write_text("---\nname: beta\ndescription: Mine.\n---\nMine.\n")
    report = _sync(brain, env, 1)["claude"]
    assert report["recorded"] == [] and [e["dir"] for e in report["left_alone"]] == ["beta"]
    with Brain.open(brain) as b:
        assert len(b.history("beta")) == 1 and b.committed("beta")[1].description == "Do beta."


def test_export_leaves_withheld_skills_out_and_says_so(tmp_path: Path) -> None:
    brain, env = _setup(tmp_path, "alpha", "beta", "gamma")
    _mark(brain, beta=QUARANTINED, gamma=REVOKED)
    for layout in ("agentskills", "hermes"):
        dest = tmp_path / f"out-{layout}"
        done = json.loads(_ledger(brain, env, "export", str(dest), "--layout", layout, "--json").stdout)
        assert done["skills"] == 1 and done["withheld"] == ["beta", "gamma"]
        assert sorted(p.name for p in dest.iterdir()) == ["alpha"]
    text = _ledger(brain, env, "export", str(tmp_path / "out-text")).stdout
    assert "left out 2 quarantined or revoked skill(s): beta, gamma" in text


def test_evolution_helpers_neither_point_at_nor_change_a_withheld_skill(brain: Brain) -> None:
    brain.create("oracle-check", "Check a price oracle's heartbeat before trusting it", "x\n")
    brain.create("oracle-watch", "Watch a price oracle's heartbeat before trusting it", "y\n")
    _mark(brain, **{"oracle-check": QUARANTINED})
    advice = synthesis_advice(brain, tool_calls=6, task="check the price oracle heartbeat before trusting it")
    assert [c["name"] for c in advice["closest"]] == ["oracle-watch"]
    assert "oracle-check" not in render_index(brain) and "oracle-watch" in render_index(brain)
    with pytest.raises(SupplyError, match="quarantined"):
        render_skill_turn(brain, ["oracle-check"], 400)
    md = "---\nname: oracle-check\ndescription: Mine now.\n---\nz\n"
    with pytest.raises(SupplyError, match="quarantined"):
        apply_payload(brain, {"operation_type": "revise", "upsert_files": {"oracle-check/SKILL.md": md}})
    assert brain.committed("oracle-check")[1].description.startswith("Check")
