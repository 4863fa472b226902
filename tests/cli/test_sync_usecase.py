"""The sync use cases called from Python (issue 52): ``ledger.sync.run.sync`` and its kin return typed
reports whose documents are what ``ledger sync --json`` (and ``link``, ``unlink``, ``runtimes``,
``remote``, ``resolve``) print for the same brain, and each document validates against its schema.

Each comparison runs the use case on a brain, puts the brain back as it was (the same absolute
paths: targets are recorded by path), runs the installed ``ledger`` on it, and compares.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ledger.brain import Brain
from ledger.cli import main
from ledger.cli.common import reports_of
from ledger.remotes import fleet
from ledger.remotes.fleet import GuardReport, RemoteReport, RemoteSetReport, RemoteUnsetReport
from ledger.reports import Report
from ledger.sync import links, run
from ledger.sync import reports as sr
from ledger.sync.status import status
from tests.harness.brains import make_brain
from tests.harness.cli import run_in_process
from tests.harness.wait import until


def _dump(doc: Any) -> str:
    """What ``emit`` prints for ``doc``."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _valid(report: Report) -> dict[str, Any]:
    doc = report.to_json()
    jsonschema.Draft202012Validator.check_schema(report.schema())
    jsonschema.validate(doc, report.schema(), cls=jsonschema.Draft202012Validator)
    return doc


class _Place:
    """A brain, its home and its targets under one folder, which can be put back as it was."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *skills: str) -> None:
        self.root, self.saved = tmp_path / "w", tmp_path / "saved"
        (self.root / "home").mkdir(parents=True)
        self.env = {"HOME": str(self.root / "home")}
        monkeypatch.setenv("HOME", self.env["HOME"])
        self.brain = self.root / "brain"
        make_brain(self.brain, {name: (f"Do {name}.", f"# {name}\n\nStep one.\n") for name in skills}).close()

    def save(self) -> None:
        shutil.rmtree(self.saved, ignore_errors=True)
        subprocess.run(["cp", "-a", str(self.root), str(self.saved)], check=True)

    def restore(self) -> None:
        shutil.rmtree(self.root)
        subprocess.run(["cp", "-a", str(self.saved), str(self.root)], check=True)

    def cli(self, *args: str, code: int = 0) -> str:
        proc = run_in_process("--brain", str(self.brain), *args, env=self.env)
        assert proc.returncode == code, proc.stdout + proc.stderr
        return proc.stdout

    def both(self, call: Any, *args: str, code: int = 0) -> tuple[Report, str]:
        """``call(brain)`` on the saved state, then the CLI's stdout on the same state."""
        self.save()
        with Brain.open(self.brain) as b:
            report = call(b)
        self.restore()
        return report, self.cli(*args, code=code)


def _settle_times(doc: Any) -> Any:
    """``doc`` with what depends on the clock (a conflict's ``since``, the remote's ``seconds``) left out."""
    if isinstance(doc, dict):
        return {k: _settle_times(v) for k, v in doc.items() if k not in ("since", "seconds")}
    if isinstance(doc, list):
        return [_settle_times(v) for v in doc]
    return doc


def test_the_sync_use_case_prints_what_the_cli_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    place = _Place(tmp_path, monkeypatch, "alpha", "beta")
    with Brain.open(place.brain) as b:
        links.link(b, str(place.root / "rt"))
        links.link(b, "claude")
    report, out = place.both(lambda b: run.sync(b), "sync", "--json")
    assert isinstance(report, sr.SyncReport) and {t.name for t in report.targets} == {"rt", "claude"}
    assert report.targets[0].projected == ("alpha", "beta") and report.ok
    assert _dump(_valid(report)) == out  # the same bytes
    place.cli("sync")

    # A conflict: the target and the brain both changed alpha since the last sync.
    md = place.root / "rt" / "alpha" / "SKILL.md"
    md.write_text(md.read_text() + "\nthe runtime's edit\n")
    with Brain.open(place.brain) as b:
        b.edit("alpha", b.show("alpha", 1) + "\nthe brain's edit\n")
    report, out = place.both(lambda b: run.sync(b), "sync", "--json", code=1)
    assert report.conflicts == 1 and not report.ok
    assert _settle_times(_valid(report)) == _settle_times(json.loads(out))
    assert [c["skill"] for t in report.targets for c in t.conflicts] == ["alpha"]

    # Settled from Python as 'ledger resolve alpha --take ledger' settles it.
    place.cli("sync", code=1)
    settled, out = place.both(
        lambda b: run.settle(b, "alpha", "ledger"), "resolve", "alpha", "--take", "ledger", "--json"
    )
    assert settled.conflicts == 0 and "merge_conflicts" not in settled.to_json()
    doc = json.loads(out)
    for t in doc["targets"]:  # a copy kept aside is named at random
        for r in t["rescued"]:
            r["kept"] = "…"
    mine = _valid(settled)
    for t in mine["targets"]:
        for r in t["rescued"]:
            r["kept"] = "…"
    assert mine == doc


def test_a_sync_with_a_remote_reports_both_halves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    place = _Place(tmp_path, monkeypatch, "alpha")
    shared = place.root / "shared.git"
    with Brain.open(place.brain) as b:
        links.link(b, str(place.root / "rt"))
        made = fleet.set_remote(b, str(shared), create=True)
    assert _valid(made) == {"url": str(shared), "commit": False, "created": True}
    report, out = place.both(lambda b: run.sync(b), "sync", "--json")
    assert report.remote.status == "ok" and report.remote.pushed and report.merge_conflicts == ()
    assert _settle_times(_valid(report)) == _settle_times(json.loads(out))
    assert (
        list(report.to_json())
        == list(json.loads(out))
        == ["targets", "conflicts", "refused", "remote", "merge_conflicts"]
    )
    # the remote alone: no target named, so no pass
    report, out = place.both(lambda b: run.sync(b, remote=False), "sync", "--no-remote", "--json")
    assert report.remote is None or "remote" not in report.to_json()
    assert _dump(_valid(report)) == out

    shutil.rmtree(shared)  # unreachable: reported, not raised
    report, out = place.both(lambda b: run.sync(b), "sync", "--json", code=1)
    assert report.remote.status == "offline" and not report.ok
    assert _dump(_valid(report)) == out


def test_nothing_to_sync_is_refused_before_anything_moves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ledger.errors import LedgerError

    place = _Place(tmp_path, monkeypatch, "alpha")
    with Brain.open(place.brain) as b, pytest.raises(LedgerError, match="no targets are linked"):
        run.sync(b)
    with Brain.open(place.brain) as b, pytest.raises(LedgerError, match="no conflict on 'alpha'"):
        run.settle(b, "alpha", "ledger")


def test_link_unlink_runtimes_and_remote_print_their_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    place = _Place(tmp_path, monkeypatch, "alpha")
    (place.root / "home" / ".claude" / "skills").mkdir(parents=True)
    linked, out = place.both(
        lambda b: links.link(b, str(place.root / "rt"), actor="user"),
        "link",
        str(place.root / "rt"),
        "--actor",
        "user",
        "--json",
    )
    assert _dump(_valid(linked)) == out and linked.actor == "user"
    with Brain.open(place.brain) as b:
        links.link(b, "claude")
    listed = links.runtimes(place.brain)
    assert isinstance(listed, sr.RuntimesReport) and _dump(_valid(listed)) == place.cli("runtimes", "--json")
    assert {r.name: r.linked for r in listed.runtimes}["claude"] == "claude"
    gone, out = place.both(lambda b: links.unlink(b, "claude"), "unlink", "claude", "--json")
    assert _dump(_valid(gone)) == out and gone.unlinked == "claude"

    shown, out = place.both(fleet.show_remote, "remote", "--json")
    assert shown.remote is None and _valid(shown) is None and out == "null\n"
    made, out = place.both(
        lambda b: fleet.set_remote(b, str(place.root / "s.git"), create=True, commit=True, key="k"),
        "remote",
        "set",
        "--create",
        str(place.root / "s.git"),
        "--commit",
        "--key",
        "k",
        "--json",
    )
    assert _dump(_valid(made)) == out
    assert json.loads(out) == {"url": str(place.root / "s.git"), "commit": True, "key": "k", "created": True}
    place.cli("remote", "set", str(place.root / "s.git"), "--commit", "--key", "k")
    shown, out = place.both(fleet.show_remote, "remote", "--json")
    assert _dump(_valid(shown)) == out and shown.remote == {
        "url": str(place.root / "s.git"),
        "commit": True,
        "key": "k",
    }
    unset, out = place.both(fleet.unset_remote, "remote", "unset", "--json")
    assert _dump(_valid(unset)) == out and unset == RemoteUnsetReport(unset=True, url=str(place.root / "s.git"))
    assert place.cli("remote", "unset") == "remote unset\n"  # the text is as it was
    assert json.loads(place.cli("remote", "unset", "--json")) == {"unset": True, "url": None}  # nothing was set

    guarded = json.loads(run_in_process("remote", "guard", str(place.root / "s.git"), "--json", check=True).stdout)
    assert guarded == {"guarded": str(place.root / "s.git" / "hooks" / "pre-receive")}
    _valid(GuardReport(**guarded))
    assert (
        run_in_process("remote", "guard", str(place.root / "s.git"), check=True).stdout
        == f"guarded: {guarded['guarded']}\n"
    )


def test_the_agent_tool_returns_the_sync_status_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ledger.agent.tools import SkillTools

    place = _Place(tmp_path, monkeypatch, "alpha")
    with Brain.open(place.brain) as b:
        links.link(b, str(place.root / "rt"))
        run.sync(b)
    md = place.root / "rt" / "alpha" / "SKILL.md"
    md.write_text(md.read_text() + "\nthe runtime's edit\n")
    with Brain.open(place.brain) as b:
        b.edit("alpha", b.show("alpha", 1) + "\nthe brain's edit\n")
        run.sync(b)
        report = status(b)
        assert isinstance(report, sr.SyncStatusReport) and [c["skill"] for c in report.conflicts] == ["alpha"]
        assert SkillTools(b).call("skills_sync_status") == {"success": True, **_valid(report)}


def test_a_refused_target_keeps_the_order_its_pass_wrote() -> None:
    """A target refused before it was read says why first; one refused after, last: the bytes stay."""
    lists = {k: [] for k in ("recorded", "projected", "removed", "conflicts", "left_alone", "rescued", "ignored_held")}
    early = {"name": "rt", "path": "/x", "status": "refused", "reason": "gone", "hint": "mount it", **lists}
    late = {"name": "rt", "path": "/x", "status": "refused", **lists, "reason": "gone", "hint": "mount it"}
    for doc in (early, late):
        report = sr.TargetReport.of(doc)
        assert list(report.to_json()) == list(doc) and _valid(report) == doc
    assert sr.TargetReport.of(early) == sr.TargetReport.of(late)  # the same report; only the printing order differs
    tick = sr.RemoteTick(
        sr.RemoteSyncReport.of(
            {
                "remote": "/r",
                "status": "offline",
                "merges": [],
                "pushed": False,
                "committed": 0,
                "transactions": [],
                "conflicts": [],
                "stale_parent": 0,
                "reason": "cannot read the remote",
                "hint": None,
            }
        )
    )
    assert list(_valid(tick)["remote"])[-2:] == ["reason", "hint"]


def test_every_command_of_the_runtimes_module_names_its_report() -> None:
    want = {
        ("target", "list"): sr.RuntimesReport,
        ("target", "add"): sr.LinkReport,
        ("target", "remove"): sr.UnlinkReport,
        ("sync",): sr.SyncReport,
        ("remote",): RemoteReport,
        ("remote", "set"): RemoteSetReport,
        ("remote", "unset"): RemoteUnsetReport,
        ("remote", "guard"): GuardReport,
    }
    for path, report in want.items():
        cmd = main
        for word in path:
            cmd = cmd.commands[word]  # type: ignore[attr-defined]
        assert report in reports_of(cmd), path
        assert any(p.name == "as_json" for p in cmd.params), path  # every one takes --json


def test_the_watch_use_case_hands_each_sync_its_typed_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run.watch`` from Python: the first sync, then one per edit, each a SyncReport; ``stop`` ends it."""
    import threading

    place = _Place(tmp_path, monkeypatch, "alpha")
    seen: list[sr.SyncReport] = []
    stop = threading.Event()
    with Brain.open(place.brain) as b:
        links.link(b, str(place.root / "rt"))
        worker = threading.Thread(
            target=run.watch,
            args=(b,),
            kwargs={"remote": False, "debounce": 0.05, "on_report": seen.append, "stop": stop},
        )
        worker.start()
        try:
            until(lambda: seen, timeout=60, what="the first sync's report")
            assert seen and seen[0].targets[0].projected == ("alpha",)
            md = place.root / "rt" / "alpha" / "SKILL.md"
            md.write_text(md.read_text() + "\nan edit while watched\n")
            until(lambda: len(seen) >= 2, timeout=60, what="the edit's sync report")
        finally:
            stop.set()
            worker.join(30)
        assert not worker.is_alive()
        assert [r.skill for r in seen[1].targets[0].recorded] == ["alpha"]
        assert all(isinstance(r, sr.SyncReport) and "merge_conflicts" not in _valid(r) for r in seen)
