"""The tamper corpus (tests/harness/tamper.py, docs/lineage.md §11) through `ledger audit`: every class fails,
naming the snapshot; the honest brain passes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ledger.brain.signers import allowed_signers
from ledger.errors import StoreError
from ledger.store.gitstore import GitStore
from tests.cli.test_plain_words import problems
from tests.harness import tamper, tamper_outcomes, tamper_supply
from tests.harness.cli import run_ledger
from tests.harness.spec import spec_text

CHAIN: list[str] = []  # --rpc, --registry, --agent of the honest brain's registry (set by the fixture)


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory, node) -> tuple[Path, dict[str, int]]:
    """The honest brain, its lineage committed on a real anvil in batches of three, so that every class is
    audited from a clone alone and from a clone plus the chain."""
    root = tmp_path_factory.mktemp("tamper")
    brain, idx = tamper.build_honest(root)
    env = {"LEDGER_KEYS": str(root / "keys")}
    b = ("--brain", str(brain))
    run_ledger(*b, "chain", "use", node.url, env=env, check=True)
    run_ledger(*b, "chain", "deploy", env=env, check=True)
    run_ledger(*b, "chain", "register", env=env, check=True)  # authorizes the (rotated) agent key
    run_ledger(*b, "chain", "anchor", "--batch", "3", env=env, check=True)
    cfg = json.loads((brain / ".ledger" / "config.json").read_text())["chain"]
    CHAIN[:] = ["--rpc", node.url, "--registry", cfg["registry"], "--agent", cfg["agent_id"]]
    return brain, idx


def _tampered(honest: tuple[Path, dict[str, int]], case: tamper.Case, tmp_path: Path) -> tuple[Path, str]:
    """A bare copy of the honest brain's store with ``case`` applied, and the snapshot it names."""
    brain, idx = honest
    copy = tmp_path / "copy.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(brain / ".git"), str(copy)], check=True)
    return copy, case.apply(copy, idx)


def _audit(repo: Path, *args: str) -> tuple[int, dict]:
    proc = run_ledger("audit", str(repo), "--json", *args)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("with_chain", [False, True], ids=["clone", "clone+chain"])
def test_the_honest_brain_passes(honest, with_chain: bool) -> None:
    brain, _ = honest
    code, report = _audit(brain, "--require-signatures", *(CHAIN if with_chain else ()))
    assert code == 0 and report["ok"], {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}
    assert "signed by keys the brain trusted" in report["checks"]["signatures"]["summary"]
    if with_chain:
        signers = report["checks"]["chain.signers"]["summary"]
        assert signers.startswith("2 agent-signed snapshot(s)")  # agent-patch-c, and sync-a (a runtime's edit)
        assert report["checks"]["chain.roots"]["ok"] and not report["pending"]


@pytest.mark.parametrize("case", tamper.cases(), ids=lambda c: c.name)
def test_every_tamper_class_fails_the_audit_naming_the_snapshot(honest, case: tamper.Case, tmp_path: Path) -> None:
    copy, named = _tampered(honest, case, tmp_path)
    for chain in ((), tuple(CHAIN)):  # a clone alone, then a clone and the chain
        code, report = _audit(copy, *case.audit_args, *chain)
        chk = report["checks"][case.check]
        assert code == 1 and not chk["ok"], (case.name, chain, {k: v["summary"] for k, v in report["checks"].items()})
        if named:
            assert chk["snapshot"] == named, (case.name, chk)
        assert re.search(tamper.REASONS.get(case.name, ""), chk["summary"]), (case.name, chk["summary"])
        shown = [str(c[k]) for c in report["checks"].values() for k in ("summary", "expected", "computed") if c[k]]
        assert not problems("\n".join(shown)), (case.name, problems("\n".join(shown)))  # plain words, as printed
    cited = spec_text()
    assert f"`{case.name}`" in cited, f"docs/lineage.md §11 does not list {case.name}"


@pytest.fixture(scope="module")
def honest_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    return tamper.build_honest_store(tmp_path_factory.mktemp("tamper-store"))


def test_the_honest_store_counted_brain_passes(honest_store) -> None:
    """Versions in the store (lineage.md §4.2): no SKILL.md carries a counter, yet the lineage audits."""
    brain, _ = honest_store
    code, report = _audit(brain, "--require-signatures")
    assert code == 0 and report["ok"], {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}
    assert report["skills"]["c"][0]["version"] == 1  # the file's own metadata.version '7' is the author's
    show = subprocess.run(["git", "-C", str(brain), "show", "HEAD:skills/a/SKILL.md"], capture_output=True, text=True)
    assert "version" not in show.stdout


@pytest.mark.parametrize("case", tamper.store_cases(), ids=lambda c: c.name)
def test_every_store_tamper_class_fails_the_audit(honest_store, case: tamper.Case, tmp_path: Path) -> None:
    copy, named = _tampered(honest_store, case, tmp_path)
    code, report = _audit(copy)
    chk = report["checks"][case.check]
    assert code == 1 and not chk["ok"], (case.name, {k: v["summary"] for k, v in report["checks"].items()})
    assert chk["snapshot"] == named, (case.name, chk)
    assert re.search(tamper.REASONS[case.name], chk["summary"]), (case.name, chk["summary"])
    assert f"`{case.name}`" in spec_text()


@pytest.fixture(scope="module")
def honest_merged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    return tamper.build_honest_merged(tmp_path_factory.mktemp("tamper-merged"))


def test_the_honest_merged_brain_passes(honest_merged) -> None:
    """Two signed copies published to one remote: a merge with a skill taken, one created and a conflict."""
    brain, _ = honest_merged
    code, report = _audit(brain, "--require-signatures")
    assert code == 0 and report["ok"], {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}
    tip = subprocess.run(["git", "-C", str(brain), "cat-file", "-p", "HEAD"], capture_output=True, text=True).stdout
    assert tip.count("\nparent ") == 2 and "Ledger-Operation: merge" in tip and "conflict: s:" in tip


@pytest.mark.parametrize("case", tamper.merge_cases(), ids=lambda c: c.name)
def test_every_merge_tamper_class_fails_the_audit(honest_merged, case: tamper.Case, tmp_path: Path) -> None:
    copy, named = _tampered(honest_merged, case, tmp_path)
    code, report = _audit(copy, *case.audit_args)
    chk = report["checks"][case.check]
    assert code == 1 and not chk["ok"], (case.name, {k: v["summary"] for k, v in report["checks"].items()})
    assert chk["snapshot"] == named, (case.name, chk)
    assert f"`{case.name}`" in spec_text()


@pytest.mark.parametrize("case", tamper.sibling_cases(), ids=lambda c: c.name)
def test_every_sibling_tamper_class_fails_the_audit(honest_merged, case: tamper.Case, tmp_path: Path) -> None:
    """A signed snapshot's gpgsig and the siblings it certifies (§8.7, §8.8): only the 'siblings' check fails."""
    copy, named = _tampered(honest_merged, case, tmp_path)
    code, report = _audit(copy, *case.audit_args)
    chk = report["checks"][case.check]
    assert code == 1 and not chk["ok"] and chk["snapshot"] == named, (case.name, chk)
    assert re.search(tamper.REASONS[case.name], chk["summary"]), (case.name, chk["summary"])
    failed = sorted(k for k, v in report["checks"].items() if not v["ok"])
    assert failed == sorted(["siblings", *case.also_fails]), (case.name, failed)  # every other rule holds
    with GitStore(copy) as store:  # the allowed_signers exporter refuses a lineage whose address has two siblings
        if case.name == "sibling-certified-twice":
            with pytest.raises(StoreError, match="certifies two different Ed25519 siblings"):
                allowed_signers(store)
        else:
            assert len(allowed_signers(store)[0]) == 2  # the user and the agent key, each certified once
    assert f"`{case.name}`" in spec_text()


@pytest.fixture(scope="module")
def honest_hermes_sync(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    return tamper.build_honest_hermes_sync(tmp_path_factory.mktemp("tamper-hermes-sync"))


def test_the_honest_hermes_sync_brain_passes(honest_hermes_sync) -> None:
    """A Hermes home's category move and category-file edit: two signed syncs of no change (lineage v1.2)."""
    brain, _ = honest_hermes_sync
    code, report = _audit(brain, "--require-signatures")
    assert code == 0 and report["ok"], {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}
    ops = subprocess.run(
        ["git", "-C", str(brain), "log", "--format=%s", "main"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert ops[:3] == ["sync a v2", "sync: 0 skill(s)", "sync: 0 skill(s)"], ops


@pytest.mark.parametrize("case", tamper.sync_cases(), ids=lambda c: c.name)
def test_every_sync_tamper_class_fails_the_audit(honest_hermes_sync, case: tamper.Case, tmp_path: Path) -> None:
    copy, named = _tampered(honest_hermes_sync, case, tmp_path)
    code, report = _audit(copy, *case.audit_args)
    chk = report["checks"][case.check]
    assert code == 1 and not chk["ok"], (case.name, {k: v["summary"] for k, v in report["checks"].items()})
    assert chk["snapshot"] == named and "changes nothing" in chk["summary"], (case.name, chk)
    assert f"`{case.name}`" in spec_text()


@pytest.fixture(scope="module")
def honest_outcomes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    return tamper_outcomes.build_honest_outcomes(tmp_path_factory.mktemp("tamper-outcomes"))


def test_the_honest_outcomes_brain_passes(honest_outcomes) -> None:
    """Outcomes by the agent key, the verifier key and a verifier's import, then an edit: all signed, all audited."""
    brain, idx = honest_outcomes
    code, report = _audit(brain, "--require-signatures")
    assert code == 0 and report["ok"], {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}
    summary = report["checks"]["evidence"]["summary"]
    assert summary == "5 outcome(s), append-only; 5 checked as added: 4 verified, 1 self-reported", summary
    ops = subprocess.run(
        ["git", "-C", str(brain), "log", "--format=%(trailers:key=Ledger-Operation,valueonly)", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert ops == ["edit", "outcome", "outcome", "keys", "patch", "outcome", "create", "init"], ops
    assert idx["tip"] == idx["edit-a"] == len(ops) - 1


def test_a_key_holders_valid_rewrite_passes(honest_outcomes, tmp_path: Path) -> None:
    """The control for the corpus below: the same rewrite (the log changed from the import on, every snapshot
    re-signed) slipping in an outcome that breaks no rule passes the whole audit, so each case fails for its
    one defect, not for the way it was made.  (It is also §8.6's limit: whoever holds the keys can rewrite.)"""
    brain, idx = honest_outcomes
    copy = tmp_path / "copy.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(brain / ".git"), str(copy)], check=True)
    valid = tamper_outcomes._entry(
        copy, idx, tamper_outcomes.KEYS["verifier"], version=2, served="patch-a", recorded="outcome-import"
    )
    new = tamper_outcomes.rewrite_logs(copy, idx["outcome-import"], lambda log: [*log, valid])
    assert new != tamper.lineage(brain / ".git")[idx["outcome-import"]]
    code, report = _audit(copy, "--require-signatures")
    assert code == 0 and report["ok"], {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}
    assert report["checks"]["evidence"]["summary"].startswith("6 outcome(s)")
    # The limit, pinned (lineage/evidence.md §9): a signer's newest batch dropped whole where it was appended (and
    # after), no later batch naming it, is not seen from a clone; the verifier's own word on its newest batch
    # (ledger outcome batches), or an anchored evidence root, shows it.  Here the verifier's import batch of
    # three goes, the slipped-in outcome staying so that the import still appends one.
    tamper_outcomes.rewrite_logs(
        copy, idx["outcome-import"], lambda log: [e for e in log if e == valid or b'"count":3' not in e]
    )
    code, report = _audit(copy, "--require-signatures")
    assert code == 0 and report["checks"]["evidence"]["summary"].startswith("3 outcome(s)"), report["checks"]


@pytest.mark.parametrize("case", tamper_outcomes.outcome_cases(), ids=lambda c: c.name)
def test_every_outcome_tamper_class_fails_the_evidence_check(
    honest_outcomes, case: tamper.Case, tmp_path: Path
) -> None:
    """An attacker holding every key rewrites the evidence log and re-signs each snapshot (EIP-712 and git
    signature): only the 'evidence' check fails, on the snapshot altered, for the reason of its class."""
    copy, named = _tampered(honest_outcomes, case, tmp_path)
    for args in ((), ("--require-signatures",)):
        code, report = _audit(copy, *case.audit_args, *args)
        chk = report["checks"][case.check]
        failed = sorted(k for k, v in report["checks"].items() if not v["ok"])
        assert code == 1 and failed == [case.check], (
            case.name,
            args,
            {k: report["checks"][k]["summary"] for k in failed},
        )
        assert chk["snapshot"] == named, (case.name, chk)
        assert re.search(tamper_outcomes.REASONS[case.name], chk["summary"]), (case.name, chk["summary"])
    assert f"`{case.name}`" in spec_text()


@pytest.mark.chain
def test_a_forked_operator_fails_the_audit(tmp_path: Path, chained: Any) -> None:
    """Epochs: the forked operator (tamper.fork_operator) fails every audited brain's chain.epochs."""
    from tests.unit.chain.test_epochs import anchor, audit, member

    operator = chained
    a, b = member(tmp_path, operator, "a"), member(tmp_path, operator, "b")
    assert anchor(operator, a, b)[0] == 0
    assert audit(a)[0] == 0
    tamper.fork_operator(operator, a)
    for victim in (a, b):  # b's receipts are honest, but the operator's log is forked
        code, report = audit(victim)
        chk = report["checks"]["chain.epochs"]
        assert code == 1 and not chk["ok"] and "forked operator" in chk["summary"], chk


def test_a_sibling_claimed_by_a_second_address_fails_the_audit(tmp_path: Path) -> None:
    """lineage.md §8.7 rule 3: a trusted agent key certifies the *user's* P-256 sibling as its own (nothing
    proves possession of a P-256 sibling), git-signing properly with its own Ed25519 one. Without the rule
    the audit passes and every user attestation becomes ambiguous for ever."""
    from ledger.signatures import siblings, sshsig
    from ledger.store import commitsig

    keys = tmp_path / "keys"
    env = {"LEDGER_KEYS": str(keys)}
    brain = tmp_path / "b"
    run_ledger("init", str(brain), env=env, check=True)
    run_ledger(
        "--brain", str(brain), "skill", "create", "a", "--description", "A", "--body", "one", env=env, check=True
    )
    run_ledger(
        "--brain",
        str(brain),
        "skill",
        "patch",
        "a",
        "--old",
        "one",
        "--new",
        "two",
        "--actor",
        "agent",
        env=env,
        check=True,
    )
    secret = {
        r: bytes.fromhex(json.loads((keys / f"{r}.key").read_text())["private_key"][2:]) for r in ("user", "agent")
    }
    user_p256 = siblings.public_lines(secret["user"])[1]

    def claim(raw: bytes) -> bytes:
        payload = commitsig.split(raw)[0]
        head, _, msg = payload.decode().partition("\n\n")
        tree = re.search(r"^tree (\S+)$", head, re.M).group(1)
        parent = re.search(r"^parent (\S+)$", head, re.M).group(1)
        msg = re.sub(
            r"^Ledger-Sibling: ecdsa-sha2-nistp256 .*$", f"Ledger-Sibling: {user_p256}", msg, count=1, flags=re.M
        )
        payload = f"{head}\n\n{tamper.resign(msg, secret['agent'], parent, tree)}".encode()
        return commitsig.insert(payload, sshsig.sign(siblings.ed25519_key(secret["agent"]), payload))

    tamper.retip(brain / ".git", claim)
    proc = run_ledger("audit", str(brain), "--require-signatures", env=env)
    assert proc.returncode == 1, proc.stdout
    failed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert failed == ["siblings"], proc.stdout
    assert "a sibling key belongs to one address" in proc.stdout


@pytest.fixture(scope="module")
def honest_supply_merged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return tamper_supply.build_honest_supply_merged(tmp_path_factory.mktemp("tamper-supply"))


def _mirror(brain: Path, to: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--mirror", str(brain / ".git"), str(to)], check=True)
    return to


def test_the_honest_supply_merged_brain_passes(honest_supply_merged, tmp_path: Path) -> None:
    """Two signed copies that installed skills, approved, revoked and published to one remote: the ledger's own
    merge writes the record derived from its parents (docs/lineage/supply.md §1 rule 4), in format 3, and audits OK."""
    brain, _ = honest_supply_merged
    code, report = _audit(_mirror(brain, tmp_path / "honest.git"), "--require-signatures")
    assert code == 0 and report["ok"], {k: v["summary"] for k, v in report["checks"].items() if not v["ok"]}
    tip = subprocess.run(["git", "-C", str(brain), "cat-file", "-p", "HEAD"], capture_output=True, text=True).stdout
    assert tip.count("\nparent ") == 2 and "Ledger-Operation: merge" in tip, tip
    record = json.loads(
        subprocess.run(
            ["git", "-C", str(brain), "show", "HEAD:supply"], capture_output=True, text=True, check=True
        ).stdout
    )
    first = json.loads(
        subprocess.run(
            ["git", "-C", str(brain), "show", "HEAD^1:supply"], capture_output=True, text=True, check=True
        ).stdout
    )
    assert record == first and record["format"] == 3  # the first parent's, as it holds it (format 3 from v1.10)
    assert {n: e["state"] for n, e in record["skills"].items()} == {
        "setup-helper": "quarantined",
        "summarise": "approved",
        "translate": "revoked",
    }
    assert all(e["counter"] is None for e in record["skills"].values())  # the sources' SKILL.md had no counter


@pytest.mark.parametrize("case", tamper_supply.CLASSES, ids=lambda c: c.name)
def test_every_supply_tamper_class_fails_the_supply_check(
    honest_supply_merged, case: tamper_supply.SupplyCase, tmp_path: Path
) -> None:
    """docs/lineage/supply.md §1 (v1.7): a merge that approves (by the agent key, by the user key), an installed
    SKILL.md edited, an install recorded as 'update' writing what its pin does not, a revocation's reason
    rewritten by a later approval, and a record declaring an older format than its parent's: each signed by a
    trusted key, so 'supply' is the only check that fails, on the snapshot forged, naming the skill and rule."""
    brain, env = honest_supply_merged
    copy = tmp_path / "b"
    shutil.copytree(brain, copy, symlinks=True)
    named = case.forge(copy, env)
    for args in ((), ("--require-signatures",)):
        code, report = _audit(_mirror(copy, tmp_path / f"forged{len(args)}.git"), *args)
        failed = sorted(k for k, v in report["checks"].items() if not v["ok"])
        assert code == 1 and failed == ["supply"], (case.name, {k: report["checks"][k]["summary"] for k in failed})
        chk = report["checks"]["supply"]
        assert chk["snapshot"] == named, (case.name, chk)
        assert re.search(case.reason, chk["summary"]), (case.name, chk["summary"])
    assert f"`{case.name}`" in spec_text()
