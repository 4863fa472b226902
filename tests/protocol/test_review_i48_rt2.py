"""Red-team review of issue 48 (rt2): whose word an imported outcome is, as a new user and a hostile file meet it.

Each test drives the real CLI on a real brain (real git, real keys, real signatures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.brains import make_brain
from tests.harness.cli import run_ledger
from tests.unit.evals.test_evals_engine import FAMILY, _hand_workspace, verifier_brain


def _records(b: Path) -> list[dict]:
    return json.loads(run_ledger("--brain", str(b), "outcome", "list", "--json", check=True).stdout)


def test_eval_import_of_a_workspace_without_actor_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace's grading.json was written by whoever ran it (skill-creator, the agent itself, a hand):
    importing it must not make its runs *verified* by a default, as `outcome import`'s rows (ADR 0053)."""
    b = verifier_brain(tmp_path, monkeypatch, FAMILY)
    cases = json.loads((FAMILY / "csv-sum/evals/evals.json").read_text())["evals"][:2]
    ws = _hand_workspace(tmp_path / "ws", "csv-sum", cases, {"with_skill": True, "without_skill": False})
    head = run_ledger("--brain", str(b), "log", "--json", check=True).stdout
    proc = run_ledger("--brain", str(b), "eval", "import", str(ws), "--skill", "csv-sum")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--actor verifier" in proc.stderr and "--actor agent" in proc.stderr, proc.stderr
    assert run_ledger("--brain", str(b), "log", "--json", check=True).stdout == head and _records(b) == []
    done = run_ledger("--brain", str(b), "eval", "import", str(ws), "--skill", "csv-sum", "--actor", "agent")
    assert done.returncode == 0, done.stderr
    assert {r["tier"] for r in _records(b)} == {"self"}


def test_an_import_of_entries_signed_elsewhere_needs_no_verifier_key_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of entries signed elsewhere needs no --actor (ADR 0053); on a machine that holds no verifier key
    the import must not ask for one (the key here only signs the snapshot; each entry's tier is its signer's)."""
    from ledger.brain import Brain
    from ledger.signatures.identity import KeyDir
    from ledger.store import outcomes as oc

    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    b = tmp_path / "b"
    run_ledger("init", str(b), check=True)
    run_ledger("--brain", str(b), "skill", "create", "s", "--description", "d", "--body", "x\n", check=True)
    reporter = KeyDir(tmp_path / "agent-machine").generate("agent")  # an agent elsewhere, trusted as agent here
    run_ledger("--brain", str(b), "keys", "trust", "agent", reporter.address, check=True)
    brain = Brain.open(b)
    try:
        served = brain.evidence.served("s")
        record = oc.make_record(
            brain=brain.evidence.genesis,
            agent=None,
            skill="s",
            version=served.version,
            digest=served.digest,
            receipt={"commit": served.commit, "root": served.root},
            task_id="t1",
            task_digest=None,
            result="success",
            verifier="verifier",
            signer=reporter.address,
        )
        line = oc.sign_batch([record], reporter.secret, prev=None)[0].data.decode() + "\n"
    finally:
        brain.close()
    proc = run_ledger("--brain", str(b), "outcome", "import", "-", input=line)
    assert proc.returncode == 0, proc.stderr
    [row] = _records(b)
    assert row["tier"] == "self"  # its signer's role, whatever its 'verifier' field says
    assert run_ledger("--brain", str(b), "verify").returncode == 0


HOSTILE_ROWS = [  # a row's members of the wrong JSON type: each refused plainly, naming the member, nothing written
    ('{"skill": {"a": 1}, "task": "t", "success": true}', "'skill'"),
    ('{"skill": ["s"], "task": "t", "success": true}', "'skill'"),
    ('{"skill": null, "task": "t", "success": true}', "'skill'"),
    ('{"skill": "s", "version": "1", "task": "t", "success": true}', "'version'"),
    ('{"skill": "s", "version": [1], "task": "t", "success": true}', "'version'"),
    ('{"skill": "s", "version": true, "task": "t", "success": true}', "'version'"),
    ('{"skill": "s", "version": 1.0, "task": "t", "success": true}', "'version'"),
    ('{"skill": "s", "receipt": ["x"], "task": "t", "success": true}', "'receipt'"),
    ('{"skill": "s", "receipt": "abc", "task": "t", "success": true}', "'receipt'"),
    ('{"skill": "s", "receipt": {"commit": null}, "task": "t", "success": true}', "receipt commit"),
]


@pytest.mark.parametrize(("row", "named"), HOSTILE_ROWS)
def test_a_row_of_the_wrong_types_is_refused_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: str, named: str
) -> None:
    from tests.cli.test_plain_words import problems

    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    b = tmp_path / "b"
    run_ledger("init", str(b), check=True)
    run_ledger("--brain", str(b), "skill", "create", "s", "--description", "d", "--body", "x\n", check=True)
    head = run_ledger("--brain", str(b), "log", "--json", check=True).stdout
    proc = run_ledger("--brain", str(b), "outcome", "import", "-", "--actor", "agent", input=row + "\n")
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in said, said
    assert "line 1" in proc.stderr and named in proc.stderr and not problems(said), said
    assert run_ledger("--brain", str(b), "log", "--json", check=True).stdout == head


_P = '{"format": "blake3-tree-v1/inclusion", "kind": "file", "path": "a", "content": "' + "a" * 64 + '", '
HOSTILE_PROOFS = [  # a proof file from anyone: each refused as a malformed proof, in words, never a traceback
    '{"format": null}',
    '{"format": ["x"]}',
    "[]",
    "null",
    '"x"',
    '{"format": "blake3-tree-v1/inclusion", "kind": null}',
    _P + '"steps": [{"index": null, "count": 1, "siblings": []}], "root": "r"}',
    _P + '"steps": [], "root": null}',
    _P + '"steps": null, "root": "r"}',
    _P.replace('"a", "content"', '{"x": 1}, "content"') + '"steps": [], "root": "r"}',
    _P.replace('"' + "a" * 64 + '"', '["ab"]') + '"steps": [], "root": "r"}',
]


@pytest.mark.parametrize("doc", HOSTILE_PROOFS)
def test_a_malformed_proof_is_refused_in_plain_words(tmp_path: Path, doc: str) -> None:
    from tests.cli.test_plain_words import problems

    (tmp_path / "p.json").write_text(doc)
    proc = run_ledger("proof", "check", str(tmp_path / "p.json"), "--root", "blake3-tree-v1:" + "a" * 64)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in said and "proof" in proc.stderr, said
    assert not problems(said) and "indices" not in said and "subscriptable" not in said, said


@pytest.mark.parametrize("value", ["~", "[a]", "{a: 1}"])
def test_a_malformed_version_counter_is_shown_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from tests.cli.test_plain_words import problems

    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    run_ledger("init", str(tmp_path / "b"), check=True)
    (tmp_path / "in" / "fm").mkdir(parents=True)
    (tmp_path / "in" / "fm" / "SKILL.md").write_text(
        f"---\nname: fm\ndescription: d\nmetadata:\n  ledger-version: {value}\n---\nbody\n"
    )
    proc = run_ledger("--brain", str(tmp_path / "b"), "import", str(tmp_path / "in"))
    said = proc.stdout + proc.stderr
    assert "refused" in said and "metadata.ledger-version" in said and not problems(said), said


@pytest.mark.parametrize("limits", [{"file": None}, {"skill_md": ["x"]}, ["file"], "x"])
def test_a_malformed_config_limit_is_shown_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: object
) -> None:
    from tests.cli.test_plain_words import problems

    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    b = tmp_path / "b"
    run_ledger("init", str(b), check=True)
    config = b / ".ledger" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "limits": limits}))
    proc = run_ledger("--brain", str(b), "status")
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "limits" in said and "Traceback" not in said and not problems(said), said


HOSTILE_INDEXES = [  # an index.json from a hostile host: each refused naming what is wrong, as JSON writes it
    ('{"version": null, "skills": []}', "version"),
    ('{"version": ["0.1"], "skills": []}', "version"),
    ('{"skills": [{"name": "x", "url": "x"}], "version": "0.2.0"}', "type"),
    ('{"skills": [{"name": "x", "type": "skill-md", "url": "x", "digest": null}], "version": "0.2.0"}', "digest"),
    ('{"skills": [{"name": "x", "files": [5]}], "version": "0.1.0"}', "file entry"),
    ('{"skills": [{"name": "x", "files": [null]}], "version": "0.1.0"}', "file entry"),
    ('{"skills": [{"name": "x", "files": [{"path": "SKILL.md", "digest": ["a"]}]}], "version": "0.1.0"}', "digest"),
]


@pytest.mark.parametrize(("index", "named"), HOSTILE_INDEXES)
def test_a_hostile_index_is_refused_in_plain_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: str, named: str
) -> None:
    import functools
    import http.server

    from tests.cli.test_plain_words import problems
    from tests.harness.localhttp import serving

    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    b = tmp_path / "b"
    run_ledger("init", str(b), check=True)
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.json").write_text(index)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "www"))
    with serving(handler) as base:
        proc = run_ledger("--brain", str(b), "supply", "install", f"{base}/index.json")
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in said and named in proc.stderr, said
    assert not problems(said) and "upgrade" not in said, said


def _install(tmp_path: Path, source: str) -> tuple[int, str, str]:
    b = tmp_path / "b"
    if not b.exists():
        make_brain(b, via="cli")
    before = run_ledger("--brain", str(b), "log", "--json", check=True).stdout
    proc = run_ledger("--brain", str(b), "supply", "install", source, cwd=tmp_path)
    assert run_ledger("--brain", str(b), "log", "--json", check=True).stdout == before  # nothing written
    return proc.returncode, proc.stderr, proc.stdout + proc.stderr


def test_install_from_a_folder_that_is_no_repository_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's 'reading ../upstrem: and the repository exists.' on a path that does exist but is a plain folder."""
    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    (tmp_path / "skills" / "s").mkdir(parents=True)
    (tmp_path / "skills" / "s" / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\nx\n")
    code, err, said = _install(tmp_path, "skills")
    assert code == 1 and err.startswith("error: skills is a folder, but neither a brain nor a git repository"), said
    assert "ledger import skills" in err and "and the repository exists" not in said, said


@pytest.mark.parametrize("url", ["ssh://git@127.0.0.1:1/team/skills.git", "git@127.0.0.1:team/skills.git"])
def test_install_from_an_unreachable_ssh_url_names_it_and_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=5 -p 1")
    code, err, said = _install(tmp_path, url)
    first = err.splitlines()[0]
    assert code == 1 and url in first and "connection refused" in first.lower(), said
    assert "and the repository exists" not in said, said


def test_install_of_an_empty_source_or_a_file_that_is_not_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    code, err, said = _install(tmp_path, "")
    assert code in (1, 2) and "no source" in err and "repository exists" not in said, said
    (tmp_path / "notes.txt").write_text("hello\n")
    code, err, said = _install(tmp_path, "notes.txt")
    assert code == 1 and "neither a skills-lock.json nor a marketplace.json" in err, said
    assert "Expecting value" not in said and "char 0" not in said, said


def test_a_patch_that_matches_twice_hints_an_option_the_cli_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint names how to replace every match; on the command line that option must exist, and work."""
    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    b = ["--brain", str(tmp_path / "b")]
    run_ledger("init", str(tmp_path / "b"), check=True)
    run_ledger(*b, "skill", "create", "pp", "--description", "d", "--body", "first line\nsecond line\n", check=True)
    proc = run_ledger(*b, "skill", "patch", "pp", "--old", "line", "--new", "row")
    assert proc.returncode == 1 and "--replace-all" in proc.stderr, proc.stderr
    assert "--replace-all" in run_ledger(*b, "skill", "patch", "--help", check=True).stdout
    run_ledger(*b, "skill", "patch", "pp", "--old", "line", "--new", "row", "--replace-all", check=True)
    text = (tmp_path / "b" / "skills" / "pp" / "SKILL.md").read_text()
    assert "first row\nsecond row\n" in text and "line" not in text.split("---")[-1], text


def test_the_docs_meant_for_users_speak_plainly() -> None:
    """README, docs/shares.md and docs/report.md name spec sections by title, never by a section sign, and no
    issue number (the spec itself may keep its section numbers)."""
    from tests.cli.test_plain_words import PATTERNS

    root = Path(__file__).parents[2]
    found = [
        f"{doc}:{n}: {line.strip()}"
        for doc in ("README.md", "docs/shares.md", "docs/report.md")
        for n, line in enumerate((root / doc).read_text().splitlines(), 1)
        for what in ("a section sign", "an issue number")
        if PATTERNS[what].search(line)
    ]
    assert not found, "\n".join(found)


def test_the_readmes_trust_step_reruns_on_a_machine_that_has_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: 'ledger keys generate curator && ledger keys trust curator', "'generate' is re-runnable". On a machine
    that already holds a curator key (any earlier brain, the README followed once before), 'init' trusts it, and the
    trust step failed: it is a no-op that says so (exit 0, no snapshot); another role for that key is still refused."""
    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    run_ledger("init", str(tmp_path / "first"), check=True)
    run_ledger("--brain", str(tmp_path / "first"), "keys", "generate", "curator", check=True)
    b = ["--brain", str(tmp_path / "b")]
    run_ledger("init", str(tmp_path / "b"), check=True)  # trusts this machine's curator key already
    before = run_ledger(*b, "log", "--json", check=True).stdout
    run_ledger(*b, "keys", "generate", "curator", check=True)
    proc = run_ledger(*b, "keys", "trust", "curator")
    assert proc.returncode == 0 and "already trusted as a curator key" in proc.stdout + proc.stderr, proc.stderr
    assert run_ledger(*b, "log", "--json", check=True).stdout == before  # nothing written
    done = json.loads(run_ledger(*b, "keys", "trust", "curator", "--json", check=True).stdout)
    assert done["changed"] is False and done["role"] == "curator"
    other = run_ledger(*b, "keys", "trust", "verifier", done["address"])
    assert other.returncode == 1 and "already trusted as a curator key" in other.stderr, other.stderr


def test_a_skillevolbench_payload_of_the_wrong_types_is_shown_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'ledger apply PAYLOAD.json': an operation_type that is null or a list is named as JSON writes it, and a null
    summary never becomes the word 'None' in the snapshot's message ('ledger log' shows it)."""
    from tests.cli.test_plain_words import problems

    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    b = ["--brain", str(tmp_path / "b")]
    run_ledger("init", str(tmp_path / "b"), check=True)
    for op in (None, ["revise"]):
        (tmp_path / "p.json").write_text(json.dumps({"upsert_files": {}, "operation_type": op}))
        proc = run_ledger(*b, "skill", "apply", str(tmp_path / "p.json"))
        assert proc.returncode == 1 and "operation_type" in proc.stderr and not problems(proc.stderr), proc.stderr
    md = "---\nname: a\ndescription: d\n---\nbody\n"
    (tmp_path / "p.json").write_text(
        json.dumps({"upsert_files": {"a/SKILL.md": md}, "operation_type": "create", "summary": None})
    )
    run_ledger(*b, "skill", "apply", str(tmp_path / "p.json"), check=True)
    said = run_ledger(*b, "log", check=True).stdout
    assert not problems(said), said


@pytest.mark.parametrize(
    "chain", ["x", [], {"rpc": ["x"]}, {"agent_id": [1]}, {"agent_id": {"a": 1}}, {"agent_id": "zz"}, {"chain_id": "1"}]
)
def test_a_hand_edited_chain_config_is_refused_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chain: object
) -> None:
    from tests.cli.test_plain_words import problems

    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    b = tmp_path / "b"
    run_ledger("init", str(b), check=True)
    config = b / ".ledger" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "chain": chain}))
    for args in (["chain", "status"], ["skill", "list"]):
        proc = run_ledger("--brain", str(b), *args)
        said = proc.stdout + proc.stderr
        assert proc.returncode == 1 and "config chain" in proc.stderr and "Traceback" not in said, said
        assert not problems(said), said


def test_an_import_of_rows_says_whose_word_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tier is the point of the import's --actor: its report says which one the rows got."""
    monkeypatch.setenv("LEDGER_KEYS", str(tmp_path / "keys"))
    b = ["--brain", str(tmp_path / "b")]
    run_ledger("init", str(tmp_path / "b"), check=True)
    run_ledger(*b, "skill", "create", "s", "--description", "d", "--body", "x\n", check=True)
    row = '{"skill": "s", "task": "t1", "success": true}\n'
    done = run_ledger(*b, "outcome", "import", "-", "--actor", "agent", input=row, check=True)
    assert "self-reported" in done.stdout and "verified" not in done.stdout, done.stdout
