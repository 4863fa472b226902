"""Outside review of issue 38's outcome evidence: proofs of concept, one per finding.

Each test states what must hold.  A test marked ``xfail(strict=True)`` demonstrates a bug today:
it fails now (so the suite passes) and turns into an unexpected pass, failing the suite, once the
bug is fixed, when the mark must be removed.  Real brains, real git, the real ``ledger`` CLI and
the real audit; nothing we own is mocked.  Where a PoC writes a log the ledger's own writer would
refuse, it goes through the writer's one write path (``Writer.apply``) just as a hostile copy
(or a peer of a fleet) could write the same git objects.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.audit.lineage import audit_repo
from ledger.brain import Brain
from ledger.errors import LedgerError
from ledger.signatures.identity import KeyDir
from ledger.store import evidence as ev
from ledger.store import outcomes as oc
from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "keys"
    monkeypatch.setenv("LEDGER_KEYS", str(home))
    return home


def _brain(tmp_path: Path) -> tuple[Path, KeyDir]:
    """A brain with skill ``s`` v1 and an independent verifier (its key on another machine) trusted."""
    path = make_brain(tmp_path / "brain", {"s": "The s skill"}, via="cli")
    verifier = KeyDir(tmp_path / "verifier-machine").generate("verifier")
    run_ledger("--brain", str(path), "keys", "trust", "verifier", verifier.address, check=True)
    return path, verifier


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[Brain]:
    brain = Brain.open(path)
    try:
        yield brain
    finally:
        brain.close()


def _record(brain: Brain, signer: str, **over: object) -> dict:
    """A record of ``s`` as served by the head, every field valid unless ``over`` changes it."""
    served = brain.evidence.served("s")
    fields: dict = {
        "brain": brain.evidence.genesis,
        "agent": None,
        "skill": "s",
        "version": served.version,
        "digest": served.digest,
        "receipt": {"commit": served.commit, "root": served.root},
        "task_id": "task-1",
        "task_digest": None,
        "result": "success",
        "signer": signer,
        "when": oc.format_time(served.time + 1),
    }
    fields.update(over)
    return oc.make_record(**fields)


def _signed(records: list[dict], secret: bytes, prev: str | None = None) -> list[bytes]:
    """``records`` signed as one whole batch (docs/lineage/evidence.md §9), as a verifier on its own machine signs."""
    return [e.data for e in oc.sign_batch(records, secret, prev=prev)]


def _evidence_check(path: Path) -> tuple[bool, list[str]]:
    report = audit_repo(path)
    chk = report.checks["evidence"]
    return chk.ok, [chk.summary]


# --------------------------------------------------------------------------------------------------
# Finding 1 (high): the writer appends signed outcomes that the audit then refuses, for ever.
#
# Evidence.append (ledger/brain/evidence.py, append) checks an entry's form, its signer's trust and
# its brain, and Evidence._signed adds the back-dating rule, but neither applies lineage/evidence.md §5 rules 5-7 in
# full: a receipt outside the lineage, a version the receipt's snapshot does not hold, a time more
# than 300 s ahead of the snapshot, an agent other than the lineage's.  Each is written as an
# `outcome` snapshot; the `evidence` check then FAILS the brain, and because the log is append-only
# (and its root may already be anchored) the failure can never be repaired.  One typo in
# `--time`, one buggy verifier feed, or one re-registration under another owner key is enough.
# --------------------------------------------------------------------------------------------------


def _future_dated(path: Path, verifier: KeyDir) -> None:
    """A user's typo: the CLI's own `--time`, a year ahead."""
    ahead = oc.format_time(time.time() + 365 * 86400)
    run_ledger("--brain", str(path), "outcome", "record", "s", "--task", "t1", "--success", "--time", ahead)


def _receipt_outside_lineage(path: Path, verifier: KeyDir) -> None:
    """An entry signed elsewhere whose receipt names no snapshot of this brain."""
    with _opened(path) as brain:
        rec = _record(brain, verifier.address)
        rec["receipt"] = {"commit": "ab" * 20, "root": rec["receipt"]["root"]}
        brain.evidence.append(_signed([rec], verifier.secret), "import")


def _version_never_served(path: Path, verifier: KeyDir) -> None:
    """An entry signed elsewhere crediting v7 of a skill whose receipt snapshot holds v1."""
    with _opened(path) as brain:
        brain.evidence.append(_signed([_record(brain, verifier.address, version=7)], verifier.secret), "x")


def _two_agents(path: Path, verifier: KeyDir) -> None:
    """Two entries signed elsewhere, naming two registry agents (lineage/evidence.md §5 rule 7: one brain, one
    agent)."""
    with _opened(path) as brain:
        one = _record(brain, verifier.address, agent="0x" + "00" * 31 + "01", task_id="a")
        two = _record(brain, verifier.address, agent="0x" + "00" * 31 + "02", task_id="b")
        brain.evidence.append(_signed([one], verifier.secret), "first")
        brain.evidence.append(_signed([two], verifier.secret), "second")


def _re_registered(path: Path, verifier: KeyDir) -> None:
    """The writer's own records after the agent id in the config changes (what `ledger chain register`
    writes when the brain registers again under another owner key: agentIdOf(owner, genesis))."""
    config = path / ".ledger" / "config.json"
    for agent in (1, 2):
        doc = json.loads(config.read_text())
        doc["chain"] = {**(doc.get("chain") or {}), "agent_id": f"0x{agent:064x}"}
        config.write_text(json.dumps(doc, indent=2) + "\n")
        run_ledger("--brain", str(path), "outcome", "record", "s", "--task", f"t{agent}", "--success")


@pytest.mark.parametrize(
    "write",
    [_future_dated, _receipt_outside_lineage, _version_never_served, _two_agents, _re_registered],
    ids=lambda f: f.__name__.strip("_"),
)
def test_whatever_the_writer_accepts_the_audit_passes(tmp_path: Path, keys: Path, write) -> None:
    path, verifier = _brain(tmp_path)
    assert _evidence_check(path)[0]
    with contextlib.suppress(LedgerError):  # a refusal at the door is the fix
        write(path, verifier)
    ok, why = _evidence_check(path)
    assert ok, f"the writer accepted an outcome the audit refuses: {why}"


# --------------------------------------------------------------------------------------------------
# Finding 2 (medium): a hostile entry crashes parse_entry, the import, the audit and the stats with
# a RecursionError instead of a refusal.  json.loads on 8 KB of '[' recurses past Python's limit;
# parse_entry (ledger/store/outcomes.py, parse_entry) catches ValueError and UnicodeDecodeError
# only, Evidence._row likewise, and the audit's _entry catches LedgerError only.
# --------------------------------------------------------------------------------------------------

NESTED = b'{"record":' + b"[" * 5000


def test_a_deeply_nested_entry_is_refused_not_a_crash() -> None:
    with pytest.raises(LedgerError):
        oc.parse_entry(NESTED)


def test_the_audit_fails_a_hostile_entry_instead_of_crashing(tmp_path: Path, keys: Path) -> None:
    path, _ = _brain(tmp_path)
    with _opened(path) as brain, brain.locked():  # what a hostile copy's git objects would hold
        brain._writer.apply("outcome", {}, [], "hostile", evidence=ev.append(brain.store, None, [NESTED]))
    ok, why = _evidence_check(path)
    assert not ok and "outcome 0" in " ".join(why)


def test_the_cli_refuses_a_nested_import_line_naming_it(tmp_path: Path, keys: Path) -> None:
    """Finding 2, at the CLI: exit 1 today, but with a Python traceback, not a refusal naming the line."""
    path, _ = _brain(tmp_path)
    proc = run_ledger("--brain", str(path), "outcome", "import", "-", "--actor", "agent", input="[" * 5000 + "\n")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "line 1:" in proc.stderr, proc.stderr[-300:]


# --------------------------------------------------------------------------------------------------
# Finding 3 (high, protocol): an agent chose which verified outcomes entered its log.  A verifier
# signed each record alone; nothing bound the set of records it signed, so the agent imported the
# successes and dropped the failures before they were ever appended, and the audit passed.
# Fixed by lineage v1.7 (docs/lineage/evidence.md §9, ADR 0038): a verifier signs its outcomes as a batch,
# each record naming the batch's id, its index, the count and the batch before it; a log that holds
# part of a batch fails the audit, and the writer refuses to append one.
# --------------------------------------------------------------------------------------------------


def test_withholding_a_verifiers_failures_is_detected(tmp_path: Path, keys: Path) -> None:
    path, verifier = _brain(tmp_path)
    with _opened(path) as brain:
        signed = _signed(
            [
                _record(brain, verifier.address, task_id=f"held-out-{i}", result="success" if i < 3 else "failure")
                for i in range(10)
            ],
            verifier.secret,
        )
        with pytest.raises(LedgerError, match=r"holds 3 of its 10 outcomes \(index 3, 4, 5, 6, 7 missing\)"):
            brain.evidence.append(signed[:3], "import: only what went well")  # refused at the door
        assert brain.evidence.size() == 0
        with brain.locked():  # what a hostile writer's git objects would hold: the audit must see it
            brain._writer.apply(
                "outcome", {}, [], "import: only what went well", evidence=ev.append(brain.store, None, signed[:3])
            )
    ok, why = _evidence_check(path)
    assert not ok, "the audit passes a log from which 7 of the verifier's 10 judgements were withheld"
    assert "holds 3 of its 10 outcomes" in why[0] and "appended whole" in why[0], why


# --------------------------------------------------------------------------------------------------
# Finding 4 (medium): the figures count entries nothing checked.  competence()
# (ledger/brain/competence.py) reads each entry's `signer` field without parsing or verifying the
# entry ("the writer checked each one"), so on a copy the ledger did not write (a clone handed to
# an auditor, a hostile peer's history) `show --stats`, `status` (regressions) and `outcome list`
# credit a forged record to the trusted verifier.  The report page is safe (a failed audit marks
# every figure claimed), the CLI figures are not.
# --------------------------------------------------------------------------------------------------


def test_stats_never_credit_a_forged_outcome_to_the_verifier(tmp_path: Path, keys: Path) -> None:
    path, verifier = _brain(tmp_path)
    stranger = KeyDir(tmp_path / "stranger").generate("verifier")
    with _opened(path) as brain:
        entry = json.loads(oc.sign_entry(_record(brain, stranger.address), stranger.secret))
        entry["record"]["signer"] = verifier.address  # claims the trusted verifier; the signature is not its
        forged = oc.canonical(entry)
        with brain.locked():
            brain._writer.apply("outcome", {}, [], "forged", evidence=ev.append(brain.store, None, [forged]))
    assert not _evidence_check(path)[0]  # the audit sees it
    shown = run_ledger(
        "--brain", str(path), "skill", "show", "s", "--stats", "--json"
    )  # and the figures refuse to count it
    assert shown.returncode == 1 and "does not verify" in shown.stderr and "ledger verify" in shown.stderr


# --------------------------------------------------------------------------------------------------
# Finding 5 (medium): the audit and the writer are quadratic in the number of outcome snapshots.
# check_evidence (ledger/audit/evidencecheck.py, the loop over walked.order) reads and compares
# every outcome snapshot's whole log (entries_of + `now[:len(before)] != before`), and
# Evidence.append (ledger/brain/evidence.py) reads the whole log to build `seen` on every append.
# Measured (the review's timing script, see the report): 1,000 single-outcome snapshots audit in 2.4 s, 2,000 in
# 8.6 s.  Here: blob bytes the evidence check reads, against the log's size.
# --------------------------------------------------------------------------------------------------


def _entries(path: Path) -> list[bytes]:
    with _opened(path) as brain:
        return brain.evidence.entries()


def test_the_audit_reads_the_log_a_bounded_number_of_times(
    tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.store import gitstore as gs

    path, _ = _brain(tmp_path)
    with _opened(path) as brain, brain.acting("agent"):
        for i in range(300):
            brain.evidence.record("s", result="success", task=f"t{i}")
        log_bytes = sum(len(e) + 1 for e in brain.evidence.entries())
    read = [0]
    real_many, real_one = gs.GitStore.read_blobs, gs.GitStore.read

    def chunk(data: bytes) -> bytes:
        if data.startswith(b'{"record":'):  # an evidence chunk
            read[0] += len(data)
        return data

    # The real reads, the evidence chunks among what they return counted.
    monkeypatch.setattr(gs.GitStore, "read_blobs", lambda self, shas: [chunk(d) for d in real_many(self, shas)])
    monkeypatch.setattr(gs.GitStore, "read", lambda self, *a, **k: chunk(real_one(self, *a, **k)))
    report = audit_repo(path)
    monkeypatch.undo()
    assert report.checks["evidence"].ok and read[0] >= log_bytes
    # Linear in the outcome snapshots: each reads its parent's last chunk and the chunk it wrote, never the
    # whole log (which grew to 300 entries, past one chunk of 256).
    longest = max(len(e) + 1 for e in _entries(path))
    assert read[0] <= 301 * 2 * 256 * longest, f"the audit read {read[0]:,} bytes of chunks"


# --------------------------------------------------------------------------------------------------
# Finding 6 (low): the report page's per-signer outcome counts, drawn as checked, leave out every
# outcome that reached the mainline through a merge.  ledger/page/collect.py, _timeline, counts
# the entries of `outcome` snapshots only (`t["operation"] == "outcome"`); a merge's appended
# entries move `size` on uncounted.  In a fleet most outcomes arrive that way.
# --------------------------------------------------------------------------------------------------


def test_the_pages_outcomes_per_signer_add_up_to_the_log(tmp_path: Path) -> None:
    from ledger.page.collect import collect
    from tests.unit.evals.test_outcomes import copies_with_outcomes

    with copies_with_outcomes(tmp_path) as (_a, b, _remote):  # b's two outcomes reach its mainline by the merge
        page = collect(b)
        assert page["verdict"]["ok"] and page["evidence"]["size"] == 5
        counted = sum(s["outcomes"] for s in page["signers"])
        assert all(s["checked"] for s in page["signers"])
        assert counted == page["evidence"]["size"], f"signers account for {counted} of 5 outcomes, drawn as checked"


# --------------------------------------------------------------------------------------------------
# Finding 7 (low): ±2^53 is accepted, and written by the json.dumps fast path, but it is outside
# the I-JSON safe range the RFC 8785 reference refuses.  check_record allows `version <= 2**53`
# and _number `abs(n) <= 2**53` (ledger/store/outcomes.py, check_record and _number; lineage/evidence.md §1 says
# "beyond 2^53"); _plain sends it to json.dumps.  An outside verifier that canonicalises with
# the rfc8785 library cannot compute such a record's id.  The fast path agrees with the library
# everywhere else the review probed (200,000 floats on [1e-4, 1e16), every BMP code point).
# --------------------------------------------------------------------------------------------------


def test_a_record_the_reference_canonicaliser_refuses_is_refused() -> None:
    import rfc8785

    vector = json.loads((Path(__file__).parents[1] / "vectors" / "outcomes" / "record.json").read_text())
    record = {**vector["record"], "version": 2**53}
    with pytest.raises(rfc8785.IntegerDomainError):
        rfc8785.dumps(record)
    with pytest.raises(LedgerError):
        oc.check_record(record)


# --------------------------------------------------------------------------------------------------
# Finding 8 (medium, protocol): `agent: null` binds an outcome to no agent, even after the brain is
# registered and with the chain in hand.  lineage/evidence.md §5 rule 7 (ledger/audit/evidencecheck.py, _entry, and
# ledger/audit/chainevidence.py, the loop over head_log.entries) checks only records that name an
# agent.  The registry's agent id is agentIdOf(owner, genesis): anyone who clones the brain and
# registers its genesis under their own key is another agent over the same `brain`, and every
# verified outcome with a null agent (all of an outside verifier's that leave it null, every one
# recorded before registration) counts for that agent too.  Shown here: a verified null-agent
# outcome appended after registration passes `evidence` and `chain.evidence` on a real anvil.
# --------------------------------------------------------------------------------------------------


@pytest.mark.chain
def test_an_outcome_appended_after_registration_must_name_the_agent(chained: Brain, tmp_path: Path) -> None:
    from ledger.anchoring.commits import commit_pending
    from ledger.chain.config import ChainConfig
    from ledger.chain.keys import DEV_KEY_NAME

    chained.create("s", "S", "one\n")
    verifier = KeyDir(tmp_path / "verifier-machine").generate("verifier")
    run_ledger("--brain", str(chained.root), "keys", "trust", "verifier", verifier.address, check=True)
    cfg = ChainConfig.of(chained)
    assert cfg.agent_id is not None
    record = _record(chained, verifier.address, agent=None)
    with pytest.raises(LedgerError, match="names agent None, but this brain is registered"):
        chained.evidence.append(_signed([record], verifier.secret), "a verifier's outcome, agent left null")
    bound = _record(chained, verifier.address, agent=f"0x{cfg.agent_id:064x}")
    chained.evidence.append(_signed([bound], verifier.secret), "the same, naming the agent")
    commit_pending(chained, key=DEV_KEY_NAME)
    report = audit_repo(
        chained.root, rpc=cfg.rpc, registry=cfg.registry, agent=cfg.agent_id, from_block=cfg.deploy_block or 0
    )
    assert report.checks["evidence"].ok and report.checks["chain.evidence"].ok


# --------------------------------------------------------------------------------------------------
# Finding 9 (medium, design): a regression is cleared by a version nobody has judged.  regression()
# (ledger/brain/competence.py) returns None when the live version has no verified outcome, so an
# agent whose live v2 is flagged makes v3 (one byte changed) and `ledger status` shows nothing to
# revert, for as long as it keeps v3 away from its verifier.  lineage/evidence.md §6 specifies exactly this; the
# flag a shareholder relies on should stay until the live version has verified evidence of its own.
# --------------------------------------------------------------------------------------------------


def test_an_untested_new_version_does_not_hide_a_regression(tmp_path: Path, keys: Path) -> None:
    path, verifier = _brain(tmp_path)
    with _opened(path) as brain:

        def judged(prefix: str, passed: int, failed: int) -> list[bytes]:
            return _signed(
                [
                    _record(
                        brain, verifier.address, task_id=f"{prefix}{i}", result="success" if i < passed else "failure"
                    )
                    for i in range(passed + failed)
                ],
                verifier.secret,
            )

        brain.evidence.append(judged("a", 18, 2), "v1 judged")
        (tmp_path / "v2.md").write_text("---\nname: s\ndescription: The s skill\n---\na worse body\n")
        run_ledger("--brain", str(path), "skill", "edit", "s", "--file", str(tmp_path / "v2.md"), check=True)
        brain.evidence.append(judged("b", 3, 17), "v2 judged")
    flagged = json.loads(run_ledger("--brain", str(path), "status", "--json", check=True).stdout)["regressions"]
    assert [(r["version"], r["from"]) for r in flagged] == [(2, 1)]
    (tmp_path / "v3.md").write_text("---\nname: s\ndescription: The s skill\n---\na worse body.\n")
    run_ledger("--brain", str(path), "skill", "edit", "s", "--file", str(tmp_path / "v3.md"), check=True)
    after = json.loads(run_ledger("--brain", str(path), "status", "--json", check=True).stdout)["regressions"]
    assert after, "v2's regression vanished behind an untested v3"
