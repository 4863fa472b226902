"""What the listings keep, and that it is never anything but what they would compute again (ADR 28).

- ``skills_list`` as ``ledger mcp`` sends it (``SkillTools.call_json``), kept per listing, is
  byte for byte the JSON a fresh process computes from the store with no memo at all, over
  writes, deletes, moves, platforms, nested SKILL.md files and a linked home's disabled names;
- the on-disk memo (``ObjectMemo``, ``.ledger/cache/``) is a miss, never an error, when its file
  is corrupt, truncated, of another code's tag or holds entries of the wrong shape, and two
  processes saving it at once leave a whole file, never a mixed one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ledger._fs import CATALOG, HERMES_LISTING, cache_name
from ledger.agent.tools import SkillTools, compact_json
from ledger.brain import Brain
from ledger.brain.memo import ObjectMemo
from tests.harness.cli import run_ledger
from tests.interop.test_hermes_listing import _brain

ARGS = (
    {},
    {"all_platforms": True},
    {"category": "devops"},
    {"category": "data/etl"},
    {"category": "nosuch"},
    {"category": "Not A Category"},
    {"all_platforms": "yes"},
)
SOURCES = ("ledger.brain.catalog", "ledger.bundle.skill", "ledger.bundle.frontmatter")


def _memos(brain: Path) -> list[Path]:
    return [brain / ".ledger" / "cache" / cache_name(*entry) for entry in (HERMES_LISTING, CATALOG)]


def _uncached(brain: Path, args: dict) -> dict:
    """The listing a fresh process computes from the store alone (no memo file)."""
    for memo in _memos(brain):
        memo.unlink(missing_ok=True)
    with Brain.open(brain) as b:
        return SkillTools(b).call("skills_list", args)


def _agree(tools: SkillTools, brain: Path) -> None:
    for args in ARGS:
        result, text = tools.call_json("skills_list", args)
        again = tools.call_json("skills_list", args)
        expected = _uncached(brain, args)
        assert text == compact_json(expected), args  # the JSON an uncached process sends, byte for byte
        assert again[1] == text and json.loads(text) == tools.call("skills_list", args)
        if expected["success"]:
            assert result is None and again[0] is None  # sent once, as text
            assert again[1] is text  # the second call is the kept one
        else:
            assert result == expected  # a refusal keeps its structuredContent


def test_a_kept_listing_is_what_a_fresh_process_computes(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    home = tmp_path / "hermes-home"
    env = {"HOME": str(tmp_path / "user"), "HERMES_HOME": str(home)}
    run_ledger(
        "--brain",
        str(brain),
        "target",
        "add",
        str(home / "skills"),
        "--layout",
        "hermes",
        "--name",
        "hermes",
        check=True,
        env=env,
    )
    with Brain.open(brain) as b:
        tools = SkillTools(b)
        _agree(tools, brain)
        steps = [
            {
                "action": "create",
                "name": "win-tool",
                "category": "devops",
                "content": "---\nname: win-tool\ndescription: Windows, later.\n---\nw\n",
            },
            {"action": "edit", "name": "notes", "content": "---\nname: notes\ndescription: Renamed notes.\n---\nn\n"},
            {"action": "patch", "name": "spark", "old_string": "x", "new_string": "y"},
            {
                "action": "write_file",
                "name": "spark",
                "file_path": "references/inner/SKILL.md",
                "file_content": "---\nname: inner\ndescription: Nested.\n---\ni\n",
            },
            {"action": "move", "name": "unix", "category": "data/etl"},
            {"action": "delete", "name": "crlf"},
            {
                "action": "create",
                "name": "redeploy",
                "category": "data",
                "force": True,
                "content": "---\nname: redeploy\ndescription: Deploy it all again.\n---\nd\n",
            },
        ]
        for step in steps:
            made = tools.call("skill_manage", step)
            assert made["success"], made
            _agree(tools, brain)
        # By hand, as an agent may not write them: a platforms gate, and a SKILL.md inside another skill.
        (b.skills_dir / "win-tool" / "SKILL.md").write_text(
            "---\nname: win-tool\ndescription: Windows.\nplatforms: [windows]\n---\nw\n"
        )
        (b.skills_dir / "spark" / "extra").mkdir()
        (b.skills_dir / "spark" / "extra" / "SKILL.md").write_text(
            "---\nname: extra\ndescription: Inside spark.\n---\ne\n"
        )
        (b.skills_dir / "deploy-again").mkdir()  # a third "deploy", at the top level: a duplicate name
        (b.skills_dir / "deploy-again" / "SKILL.md").write_text(
            "---\nname: deploy\ndescription: A third deploy.\n---\nd\n"
        )
        b.snapshot("by hand")
        _agree(tools, brain)
        assert '"in_skill":"spark"' in tools.call_json("skills_list", {})[1]
        (home / "config.yaml").write_text("skills:\n  disabled: [notes, deploy]\n")  # a linked home disables two
        _agree(tools, brain)
        (home / "config.yaml").write_text("skills:\n  disabled: []\n")
        _agree(tools, brain)
        # Another process writes: the kept listing is of the old head, and never served for the new one.
        run_ledger(
            "--brain",
            str(brain),
            "skill",
            "create",
            "cli-made",
            "--description",
            "From the CLI.",
            "--body",
            "c\n",
            check=True,
        )
        _agree(tools, brain)
        assert "cli-made" in tools.call_json("skills_list", {})[1]


def test_a_fresh_process_lists_from_the_memo_what_it_has_seen(tmp_path: Path) -> None:
    """The memo serves a fresh process exactly what the store would: nothing is read again or kept anew."""
    brain = _brain(tmp_path)
    expected = {json.dumps(a): _uncached(brain, a) for a in ARGS}
    _uncached(brain, {})  # the memo files written from the store
    assert all(memo.is_file() for memo in _memos(brain))
    with Brain.open(brain) as b:
        tools = SkillTools(b)
        assert {json.dumps(a): tools.call("skills_list", a) for a in ARGS} == expected
        assert [e.name for e in b.listing()] == sorted(b.head().skills, key=str.encode)
        assert tools._hermes_listing.memo.unsaved == 0 and b._catalog.memo.unsaved == 0  # every entry was kept


def test_a_corrupt_foreign_or_stale_memo_is_a_miss(tmp_path: Path) -> None:
    brain = _brain(tmp_path)
    expected = _uncached(brain, {})
    with Brain.open(brain) as b:
        entries = [(e.name, e.description, e.version, e.platforms) for e in b.listing()]
    listing, cat = _memos(brain)
    good = json.loads(listing.read_text())
    assert good["format"] == 1 and good["entries"]
    shapes = [
        {"d": 7},
        {"d": None},
        {"d": "x", "u": "why"},
        {"d": "x", "b": "why"},
        {"d": "d" * 1025},
        [["SKILL.md", "zz"]],
        [["SKILL.md", "ab" * 20], ["a", "ab" * 20]],
        [7, 1, None],
        ["d", "1", None],
    ]
    foreign = {k: shapes[i % len(shapes)] for i, k in enumerate(good["entries"])}
    cases = [
        b"",
        b"{",
        b"\xff\xfe",
        b"[]",
        b'{"format": 1}',
        b"1e400",
        b'{"format": 1, "tag": NaN}',
        json.dumps({**good, "tag": "another code's"}).encode(),  # the ledger or PyYAML changed
        json.dumps({**good, "format": 2}).encode(),
        json.dumps({**good, "entries": []}).encode(),
        json.dumps({**good, "entries": foreign}).encode(),  # right tag, entries of the wrong shape
        json.dumps(good).encode()[: len(json.dumps(good)) // 2],  # truncated
    ]
    for data in cases:
        listing.write_bytes(data)
        cat.write_bytes(data)
        with Brain.open(brain) as b:
            assert SkillTools(b).call("skills_list", {}) == expected, data[:60]
            assert [(e.name, e.description, e.version, e.platforms) for e in b.listing()] == entries
        assert json.loads(listing.read_text())["entries"], data[:60]  # written again, whole


def test_values_json_does_not_carry_exactly_are_kept_in_memory_only(tmp_path: Path) -> None:
    """A YAML date (or anything JSON would not give back as it is) is never written to the memo."""
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    run_ledger("--brain", str(brain), "skill", "create", "dated", "--description", "D.", "--body", "x\n", check=True)
    md = brain / "skills" / "dated" / "SKILL.md"
    md.write_text(md.read_text().replace("description: D.", "description: D.\nplatforms: 2024-01-01"))
    run_ledger("--brain", str(brain), "snapshot", check=True)
    for _ in range(2):  # the second from a memo file the first left
        with Brain.open(brain) as b:
            (entry,) = b.listing()
            assert repr(entry.platforms) == "datetime.date(2024, 1, 1)"
    memo = ObjectMemo(_memos(brain)[1], SOURCES)
    memo.put(b"\x01" * 20, {"when": entry.platforms})
    memo.put(b"\x02" * 20, float("nan"))
    memo.put(b"\x03" * 20, 1 << 70)
    assert memo.unsaved == 0


def test_memo_round_trip_and_cut_to_what_is_live(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "m.json"
    memo = ObjectMemo(path, SOURCES)
    for i in range(3000):
        memo.put(i.to_bytes(20, "big"), [f"d{i}", i, None])
    memo.save(force=True)
    back = ObjectMemo(path, SOURCES)
    assert back.get((7).to_bytes(20, "big")) == ["d7", 7, None] and len(back) == 3000
    back.put(b"\xff" * 20, ["new", 1, {"a": [True]}])
    back.save([b"\xff" * 20, (7).to_bytes(20, "big")], force=True)  # past twice the live ids: cut to them
    again = ObjectMemo(path, SOURCES)
    assert len(again) == 2 and again.get(b"\xff" * 20) == ["new", 1, {"a": [True]}]
    assert ObjectMemo(path, ("ledger.brain.memo",)).get(b"\xff" * 20) is None  # another code's tag
    assert ObjectMemo(None, SOURCES).get(b"\xff" * 20) is None  # memory only: nothing read, nothing written
    assert sorted(p.name for p in path.parent.iterdir()) == ["m.json"]  # no temporary file left


SAVER = """
import sys
from pathlib import Path
from ledger.brain import catalog  # noqa: F401  (a source of the tag)
from ledger.brain.memo import ObjectMemo
path, who = Path(sys.argv[1]), int(sys.argv[2])
for round in range(40):
    memo = ObjectMemo(path, {sources!r})
    for i in range(200):
        memo.put(bytes([who, round]) + i.to_bytes(18, "big"), [f"{{who}}-{{round}}-{{i}}", i, None])
    memo.save(force=True)
"""


def test_processes_saving_at_once_leave_a_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "m.json"
    script = SAVER.format(sources=SOURCES)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), str(who)]) for who in range(1, 4)]
    seen = 0
    while any(p.poll() is None for p in procs):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        doc = json.loads(data)  # never a mixed or half-written file
        assert doc["format"] == 1 and len(doc["entries"]) >= 200
        owners = {v[0].split("-")[0] for v in doc["entries"].values()}
        assert len(owners) >= 1 and all(isinstance(v, list) and len(v) == 3 for v in doc["entries"].values())
        seen += 1
    assert [p.wait() for p in procs] == [0, 0, 0]
    kept = ObjectMemo(path, SOURCES)
    assert len(kept) >= 200 and kept.get(bytes([1, 0]) + (0).to_bytes(18, "big")) in (None, ["1-0-0", 0, None])
    assert sorted(p.name for p in path.parent.iterdir()) == ["m.json"]  # no temporary file left
