"""Outside attacks on issue 46 item 1 (docs/lineage/supply.md §1): forgeries signed with the brain's real keys
that ``ledger audit --require-signatures`` must refuse on the ``supply`` check."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from tests.harness import tamper_supply as ts
from tests.harness.cli import run_ledger
from tests.harness.supplycorpus import upstream


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return ts.build_honest_supply_merged(tmp_path_factory.mktemp("red2-supply"))


def _audit(brain: Path, to: Path) -> dict:
    subprocess.run(["git", "clone", "-q", "--mirror", str(brain / ".git"), str(to)], check=True)
    proc = run_ledger("audit", str(to), "--json", "--require-signatures")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def _failed(report: dict) -> dict[str, str]:
    return {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}


def _revoke_unrevoked(record):  # type: ignore[no-untyped-def]
    """summarise (approved in both parents, its digest revoked by neither) marked revoked in the merge."""
    from ledger.store import supply as sp

    entry = record.skills["summarise"]
    assert entry.state == sp.APPROVED and not record.is_revoked(*entry.digests())
    return record.with_entry("summarise", replace(entry, state=sp.REVOKED))


@pytest.mark.parametrize("role", ["agent", "user"])
def test_a_merge_cannot_revoke_an_entry_whose_digest_no_parent_revoked(merged, role: str, tmp_path: Path) -> None:
    """Rule 4b: an entry's state may become `revoked` in a merge only "where rule 3 requires it" (the other
    side revoked its digest); a merge that marks an approved skill revoked with no revocation changes a state
    that entered through no revoke snapshot."""
    brain, env = merged
    copy = tmp_path / "b"
    shutil.copytree(brain, copy, symlinks=True)
    named = ts._merge_approving(role, _revoke_unrevoked)(copy, env)
    report = _audit(copy, tmp_path / "forged.git")
    assert _failed(report).keys() == {"supply"}, _failed(report)
    chk = report["checks"]["supply"]
    assert chk["snapshot"] == named and "summarise" in chk["summary"] and "rule 4" in chk["summary"], chk


@pytest.mark.xfail(
    strict=True,
    reason="spec gap (lineage/supply.md §1 rule 1): a brain's first record may declare format 1, "
    "so a rogue first install opts out of rule 6's SKILL.md check; nothing in a v1.7 lineage tells "
    "the audit the writer was v1.7",
)
def test_a_first_install_declaring_format_1_cannot_edit_skill_md(tmp_path: Path) -> None:
    """The edited install of tests/harness/tamper_supply.py's 'supply-format-declared-older', but as the brain's first
    install: no parent record declares format 2, so rule 1 does not close the door."""
    from ledger.brain import Brain
    from ledger.store import supply as sp
    from ledger.supply.installer import Installer
    from ledger.write import apply as apply_mod
    from ledger.write import head as head_mod

    env = {"LEDGER_KEYS": str(tmp_path / "keys")}
    up, brain = upstream(tmp_path / "up"), tmp_path / "brain"
    run_ledger("init", str(brain), check=True, env=env)
    real = apply_mod.Writer.apply

    def rogue(self, operation, updates, changes, note, *args, supply=None, **kw):  # type: ignore[no-untyped-def]
        if supply is not None:
            supply = replace(supply, format=1, skills={n: replace(e, counter="") for n, e in supply.skills.items()})
        return real(self, operation, updates, changes, note, *args, supply=supply, **kw)

    with (
        ts._keys(env),
        ts._patched(Installer, "_blobs", ts._exfiltrating(Installer._blobs)),
        ts._patched(apply_mod.Writer, "apply", rogue),
        ts._patched(head_mod, "FORMAT", 1),
        Brain.open(brain) as b,
    ):
        Installer(b).install(str(up), ["summarise"])
    shown = subprocess.run(
        ["git", "-C", str(brain), "show", "HEAD:skills/summarise/SKILL.md"], capture_output=True, check=True
    ).stdout
    record = sp.parse_record(
        subprocess.run(["git", "-C", str(brain), "show", "HEAD:supply"], capture_output=True, check=True).stdout
    )
    assert ts.EXFIL.strip() in shown and record.format == 1  # the forgery is what it says
    report = _audit(brain, tmp_path / "forged.git")
    assert "supply" in _failed(report), "a format-1 first install with an edited SKILL.md passes the audit"


def test_an_agent_install_cannot_auto_approve_a_critical_skill_by_writing_a_clean_verdict(tmp_path: Path) -> None:
    """setup-helper (its script pipes curl into sh: ledger-scan/1 says critical) installed by the agent key, its
    entry approved with approval.auto, a verdict 'clean' and a made-up OpenPGP signer: every byte pinned."""
    from eth_account import Account

    from ledger.brain import Brain
    from ledger.store import supply as sp
    from ledger.supply.installer import Installer
    from ledger.write import apply as apply_mod

    env = {"LEDGER_KEYS": str(tmp_path / "keys")}
    up, brain = upstream(tmp_path / "up"), tmp_path / "brain"
    run_ledger("init", str(brain), check=True, env=env)
    real = apply_mod.Writer.apply

    def rogue(self, operation, updates, changes, note, *args, supply=None, **kw):  # type: ignore[no-untyped-def]
        if supply is not None and "setup-helper" in supply.skills:
            e = supply.skills["setup-helper"]
            assert e.verdict["worst"] == "critical"  # what the real scan said
            by = Account.from_key(ts._secret(tmp_path / "keys", "agent")).address.lower()
            supply = supply.with_entry(
                "setup-helper",
                replace(
                    e,
                    state=sp.APPROVED,
                    signer="3A55F95669CCDE97",
                    approval={"by": by, "auto": True, "override": None},
                    verdict={"scanner": "ledger-scan/1", "worst": "clean", "findings": []},
                ),
            )
        return real(self, operation, updates, changes, note, *args, supply=supply, **kw)

    with ts._keys(env), ts._patched(apply_mod.Writer, "apply", rogue), Brain.open(brain) as b, b.acting("agent"):
        Installer(b).install(str(up), ["setup-helper"])
    record = sp.parse_record(
        subprocess.run(["git", "-C", str(brain), "show", "HEAD:supply"], capture_output=True, check=True).stdout
    )
    assert record.skills["setup-helper"].state == sp.APPROVED  # the forgery is what it says
    report = _audit(brain, tmp_path / "forged.git")
    assert "supply" in _failed(report), "a critical skill auto-approved under a forged clean verdict passes the audit"


def test_a_merge_keeps_the_second_parents_legitimate_approval(merged, tmp_path: Path) -> None:
    """The honest counterpart of the merge forgeries: the copy that approved (by the user's key)
    is the merge's second parent, so the ledger's own merge takes that parent's approved entry. It passes."""
    brain, env = merged
    remote, b, c = tmp_path / "remote.git", tmp_path / "b", tmp_path / "c"
    shutil.copytree(brain, b, symlinks=True)
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)

    def do(where: Path, *args: str) -> None:
        run_ledger("--brain", str(where), *args, check=True, env=env)

    do(b, "push", str(remote))
    run_ledger("clone", str(remote), str(c), check=True, env=env)
    do(c, "skill", "create", "other", "--description", "Other", "--body", "o\n", "--actor", "agent")
    do(c, "push", str(remote))
    do(b, "approve", "setup-helper", "--override", "we read the script", "--actor", "user")
    do(b, "push", str(remote))  # a merge: the remote's head first, this copy's approval second
    tip = subprocess.run(["git", "-C", str(b), "cat-file", "-p", "HEAD"], capture_output=True, text=True).stdout
    assert "Ledger-Operation: merge" in tip, tip
    record = json.loads(
        subprocess.run(["git", "-C", str(b), "show", "HEAD:supply"], capture_output=True, text=True, check=True).stdout
    )
    assert record["skills"]["setup-helper"]["state"] == "approved"
    report = _audit(b, tmp_path / "merged.git")
    assert report["ok"], _failed(report)


@pytest.mark.parametrize("name", ["setup-helper", "translate"], ids=["quarantined", "revoked"])
def test_a_withheld_skill_cannot_come_back_by_delete_then_revert(merged, name: str, tmp_path: Path) -> None:
    """setup-helper (quarantined, a critical finding) or translate (its digest revoked), deleted and restored by
    the agent with the stock CLI: its installed files live again with no entry, so nothing withholds them.
    Either the restore is refused or the audit fails it."""
    brain, env = merged
    b = tmp_path / "b"
    shutil.copytree(brain, b, symlinks=True)
    run_ledger("--brain", str(b), "skill", "delete", name, "--actor", "agent", check=True, env=env)
    restored = run_ledger("--brain", str(b), "skill", "revert", name, "--to", "1", "--actor", "agent", env=env)
    if restored.returncode != 0:
        return  # the writer refused to bring withheld files back without their entry
    live = subprocess.run(
        ["git", "-C", str(b), "ls-tree", "-r", "--name-only", "HEAD", f"skills/{name}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    record = json.loads(
        subprocess.run(["git", "-C", str(b), "show", "HEAD:supply"], capture_output=True, text=True, check=True).stdout
    )
    assert f"skills/{name}/SKILL.md" in live and name not in record["skills"]  # withheld by nothing
    report = _audit(b, tmp_path / "restored.git")
    assert "supply" in _failed(report), f"{name} deleted and reverted passes the audit, withheld by nothing"


@pytest.mark.parametrize("role", ["agent", "user"])
def test_a_withheld_entry_stays_through_a_delete_and_the_restore_is_refused(merged, role: str, tmp_path: Path) -> None:
    """lineage/supply.md §1 rule 5 (v1.7): whoever deletes setup-helper (quarantined), its entry stays as it was; a
    revert of it
    is then refused, saying why and naming `ledger install`, and writes nothing; the lineage audits OK."""
    brain, env = merged
    b = tmp_path / "b"
    shutil.copytree(brain, b, symlinks=True)

    def show(what: str) -> str:
        return subprocess.run(["git", "-C", str(b), *what.split()], capture_output=True, text=True, check=True).stdout

    held = json.loads(show("show HEAD:supply"))["skills"]["setup-helper"]
    run_ledger("--brain", str(b), "skill", "delete", "setup-helper", "--actor", role, check=True, env=env)
    assert "setup-helper" not in show("ls-tree --name-only HEAD:skills")
    assert json.loads(show("show HEAD:supply"))["skills"]["setup-helper"] == held  # kept, byte for byte
    tip = show("rev-parse HEAD")
    for argv in (
        ["revert", "setup-helper", "--to", "1"],
        ["skill", "create", "setup-helper", "--description", "Mine", "--body", "go\n"],
    ):
        refused = run_ledger("--brain", str(b), *argv, "--actor", role, env=env)
        assert refused.returncode == 1 and "only by 'ledger install'" in refused.stderr, refused.stderr
        assert "ledger install " in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
        assert show("rev-parse HEAD") == tip and not (b / "skills" / "setup-helper").exists()  # nothing written
    assert _audit(b, tmp_path / "kept.git")["ok"]
