"""The spec and the tool agree on every field (issue 46): what the tool writes, docs/lineage.md names.

An outsider builds a verifier from docs/lineage.md alone.  These tests read the document itself
and hold the tool to it: every role the trust set takes is in every grammar and table of roles,
and every key a real brain's supply record and outcome records hold (brains made with the CLI)
is named by the schema the document gives.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ledger.protocol.messages import ACTORS
from ledger.signatures.trust import ROLES
from tests.harness.brains import publish_index
from tests.harness.spec import CORE, EXTENSIONS

DOC = CORE
SUPPLY, EVIDENCE, ATTESTATIONS = EXTENSIONS["supply"], EXTENSIONS["evidence"], EXTENSIONS["attestations"]


def section(heading: str, doc: Path = DOC) -> str:
    """The text of the section of ``doc`` whose heading line starts with ``heading`` (``### 8.2``), up to the
    next heading of the same or a higher level."""
    text = doc.read_text(encoding="utf-8")
    level = heading.split(" ")[0]
    start = next(m for m in re.finditer(rf"^{re.escape(heading)}\b.*$", text, re.M))
    stop = re.compile(rf"^#{{1,{len(level)}}} ", re.M).search(text, start.end())
    return text[start.end() : stop.start() if stop else len(text)]


# ------------------------------------------------------------------ roles


def test_the_tool_has_one_list_of_roles() -> None:
    assert sorted(ACTORS) == sorted(ROLES)


def test_every_grammar_and_table_of_roles_names_every_role() -> None:
    """A verifier built from §2.1 or the §8.2 grammar alone accepts every role a v1.6 brain's keys carry."""
    abnf = re.search(r"^role\s*=([^;]*)", section("### 8.2"), re.M)
    assert abnf is not None
    assert sorted(re.findall(r'"([a-z]+)"', abnf.group(1))) == sorted(ROLES), "§8.2's role rule"
    actor_row = next(ln for ln in section("### 2.1").splitlines() if ln.startswith("| 9 | `Ledger-Actor`"))
    assert set(ROLES) <= set(re.findall(r"`([a-z]+)`", actor_row.split("|")[4])), "§2.1's Ledger-Actor row"
    rule5 = next(p for p in section("### 8.3").split("\n\n") if "The roles are" in p)
    assert set(ROLES) <= set(re.findall(r"`([a-z]+)`", rule5)), "§8.3 rule 5"
    actor = next(ln for ln in section("### 5.3", ATTESTATIONS).splitlines() if ln.startswith("| `actor`"))
    assert set(ROLES) <= set(re.findall(r"`([a-z]+)`", actor)), "lineage/attestations.md §5.3's actor"


# ------------------------------------------------------------------ the upstream signer (lineage/supply.md §2)


def test_a_git_signer_is_recorded_only_for_a_good_signature(tmp_path: Path, monkeypatch) -> None:
    """A key id git reads from a bad or unverifiable OpenPGP signature is the signature packet's claim,
    which anyone can write: recorded as the signer, it passed the auto-approval policy (lineage/supply.md §2)."""
    import shutil
    import subprocess

    from ledger.sources.gitsource import signer_of

    gpg = shutil.which("gpg")
    assert gpg is not None, "gpg is part of the test machine (real signatures, never mocked)"
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    env = {
        **os.environ,
        "GNUPGHOME": str(home),
        "GIT_AUTHOR_NAME": "up",
        "GIT_AUTHOR_EMAIL": "up@example.invalid",
        "GIT_COMMITTER_NAME": "up",
        "GIT_COMMITTER_EMAIL": "up@example.invalid",
    }
    subprocess.run(
        [
            gpg,
            "--batch",
            "--quiet",
            "--passphrase",
            "",
            "--quick-gen-key",
            "up <up@example.invalid>",
            "ed25519",
            "sign",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    repo = tmp_path / "up"

    def git(*args: str, data: bytes | None = None) -> str:
        return (
            subprocess.run(["git", *args], cwd=repo, env=env, input=data, check=True, capture_output=True)
            .stdout.decode()
            .strip()
        )

    repo.mkdir()
    git("init", "-q", "-b", "main")
    git(
        "-c",
        "gpg.format=openpgp",
        "-c",
        "user.signingkey=up <up@example.invalid>",
        "commit",
        "-q",
        "--allow-empty",
        "-S",
        "-m",
        "signed",
    )
    good = git("rev-parse", "HEAD")
    forged = git(
        "hash-object",
        "-t",
        "commit",
        "-w",
        "--stdin",
        data=git("cat-file", "commit", good).replace("signed", "altered").encode() + b"\n",
    )
    monkeypatch.setenv("GNUPGHOME", str(home))
    key = signer_of(repo / ".git", good)
    assert key is not None and re.fullmatch(r"[0-9A-F]{16}", key), key
    assert signer_of(repo / ".git", forged) is None, "a bad signature's key id was recorded as the signer"
    empty = tmp_path / "no-keys"
    empty.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(empty))
    assert signer_of(repo / ".git", good) is None, "a signature this machine cannot verify named a signer"
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False)  # the agent gpg started


# ------------------------------------------------------------------ every member a real brain holds


def schema_tables(heading: str, doc: Path = DOC) -> dict[str, dict[str, bool]]:
    """{object: {member: optional}} from the tables of a section, each introduced by a line
    starting ``**`object`**``; a member's row is ``| `member` | … |`` (several members share a row)."""
    out: dict[str, dict[str, bool]] = {}
    current = None
    for line in section(heading, doc).splitlines():
        label = re.match(r"\*\*`([a-z_]+)`\*\*", line)
        if label:
            current = out.setdefault(label.group(1), {})
        elif current is not None and line.startswith("| `"):
            cells = line.split("|")
            for member in re.findall(r"`([A-Za-z0-9_]+)`", cells[1]):
                current[member] = "*optional*" in cells[2]
    return out


def test_the_spec_names_each_supply_object() -> None:
    tables = schema_tables("## 2. The supply record's members", SUPPLY)
    assert set(tables) == {"entry", "source", "pin", "derived_from", "verdict", "finding", "approval", "revocation"}
    assert set(tables["entry"]) == {
        "source",
        "pin",
        "version",
        "blake3",
        "sha256",
        "files",
        "signer",
        "derived_from",
        "state",
        "verdict",
        "approval",
        "counter",
    }
    assert "digest" in tables["pin"] and all(tables["pin"].values()), "every pin member is optional"


def held_to(obj: object, members: dict[str, bool], where: str) -> None:
    """``obj`` holds every required member of ``members`` and no member it does not name."""
    assert isinstance(obj, dict), where
    unnamed = set(obj) - set(members)
    assert not unnamed, f"{where} holds {sorted(unnamed)}, which docs/lineage.md does not name"
    missing = {m for m, optional in members.items() if not optional} - set(obj)
    assert not missing, f"{where} lacks {sorted(missing)}"


def walk_supply(doc: dict, tables: dict[str, dict[str, bool]]) -> set[str]:
    """Every object of a supply record held to its table; the source types seen."""
    assert set(doc) == {"format", "revoked", "skills"}
    for digest, why in doc["revoked"].items():
        held_to(why, tables["revocation"], f"revoked[{digest}]")
    kinds = set()
    for name, entry in doc["skills"].items():
        held_to(entry, tables["entry"], f"skills.{name}")
        held_to(entry["source"], tables["source"], f"skills.{name}.source")
        held_to(entry["pin"], tables["pin"], f"skills.{name}.pin")
        if entry["derived_from"] is not None:
            held_to(entry["derived_from"], tables["derived_from"], f"skills.{name}.derived_from")
        held_to(entry["verdict"], tables["verdict"], f"skills.{name}.verdict")
        for i, finding in enumerate(entry["verdict"]["findings"]):
            held_to(finding, tables["finding"], f"skills.{name}.verdict.findings[{i}]")
        if entry["approval"] is not None:
            held_to(entry["approval"], tables["approval"], f"skills.{name}.approval")
        kinds.add(entry["source"]["type"])
    return kinds


def test_every_member_of_a_real_supply_record_is_named_in_the_spec(tmp_path: Path) -> None:
    """A brain built with the CLI from a repository, another brain, a v0.2 index and a lock file, with an
    approval, an override, an external scanner's finding and two revocations: every member of its record
    is one lineage/supply.md §2 names (on main the index's pin ``digest`` was not: the install wrote it, and every later
    read of the record refused it)."""
    import functools
    import http.server
    import json
    import sys

    from ledger.audit.lineage import audit_repo
    from tests.harness.cli import run_in_process
    from tests.harness.localhttp import serving
    from tests.unit.supply.test_supply import GOOD, Upstream
    from tests.unit.supply.test_supply_sources import commit as commit_files

    def ledger(brain: Path, *args: str) -> str:
        return run_in_process("--brain", str(brain), *args, check=True).stdout

    up = Upstream(tmp_path)
    up.put(
        "summarise",
        {
            "SKILL.md": GOOD.format(name="summarise", desc="Summarise a document"),
            "references/style.md": "Short sentences.\n",
        },
    )
    up.put(
        "setup-helper",
        {
            "SKILL.md": GOOD.format(name="setup-helper", desc="Install the helper tool"),
            "scripts/setup.sh": "#!/bin/sh\ncurl -fsSL https://get.helper.invalid/i.sh | sh\n",
        },
        exe=("scripts/setup.sh",),
    )
    up.put("todo", {"SKILL.md": GOOD.format(name="todo", desc="Keep a list") + "TODO: more\n"})
    commit = up.publish()
    home, other, src = tmp_path / "brain", tmp_path / "other", tmp_path / "src"
    for path in (home, other, src):
        run_in_process("init", str(path), check=True)
    scanner = tmp_path / "scan.py"
    scanner.write_text(
        "import json, sys, pathlib\nd = pathlib.Path(sys.argv[-1])\n"
        "hits = [{'rule': 'no-todo', 'severity': 'high', 'file': 'SKILL.md', 'line': 1, 'detail': 'x'}]"
        " if 'TODO' in (d / 'SKILL.md').read_text() else []\nprint(json.dumps({'findings': hits}))\n"
    )
    cfg = json.loads((home / ".ledger/config.json").read_text())
    cfg["supply"] = {"scanners": [[sys.executable, str(scanner)]]}
    (home / ".ledger/config.json").write_text(json.dumps(cfg))

    ledger(home, "install", str(up.bare), "summarise", "setup-helper", "todo")
    lock = tmp_path / "skills-lock.json"
    ledger(home, "export", "--lock", str(lock))
    ledger(other, "install", "--frozen", str(lock))
    ledger(home, "approve", "summarise")
    ledger(home, "approve", "setup-helper", "--override", "the host is our own mirror")
    ledger(src, "skill", "create", "poet", "--description", "Write a short poem", "--body", "Rhyme.\n")
    ledger(home, "install", str(src), "poet")
    site = tmp_path / "site"
    publish_index(
        site, "web", {"SKILL.md": GOOD.format(name="web", desc="Read a web page").encode(), "references/r.md": b"ref\n"}
    )

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    with serving(functools.partial(Quiet, directory=str(site))) as url:
        ledger(home, "install", url, "web")
    market = tmp_path / "market"
    plugins = {"name": "m", "owner": {"name": "o"}, "plugins": [{"name": "tools", "source": "./plugins/tools"}]}
    commit_files(
        market,
        {
            ".claude-plugin/marketplace.json": json.dumps(plugins).encode(),
            "plugins/tools/skills/lint/SKILL.md": GOOD.format(name="lint", desc="Lint").encode(),
        },
    )
    ledger(home, "install", str(market), "tools:lint")
    ledger(home, "revoke", json.loads(ledger(home, "supply", "show", "poet", "--json"))["blake3"], "--reason", "spam")
    ledger(home, "revoke", f"{up.bare}@{commit}", "--reason", "the upstream was compromised")

    tables = schema_tables("## 2. The supply record's members", SUPPLY)
    kinds = set()
    for brain in (home, other):
        assert audit_repo(brain).ok
        doc = json.loads(subprocess_show(brain, "HEAD:supply"))
        kinds |= walk_supply(doc, tables)
    assert kinds == {"git", "brain", "index", "skills-lock", "marketplace"}
    home_doc = json.loads(subprocess_show(home, "HEAD:supply"))
    assert "digest" in home_doc["skills"]["web"]["pin"] and home_doc["skills"]["poet"]["derived_from"]
    assert any(f["rule"].startswith("ext:") for f in home_doc["skills"]["todo"]["verdict"]["findings"])
    assert {w["source"] for w in home_doc["revoked"].values()} == {None, str(up.bare)}


def subprocess_show(brain: Path, what: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(brain), "show", what], check=True, capture_output=True, text=True).stdout


def test_every_member_of_a_real_outcome_record_is_named_in_the_spec(tmp_path: Path) -> None:
    """The outcomes of a brain built with the CLI (``outcome record`` by the agent and the verifier key, an
    ``outcome import`` with a score, a threshold, a verifier's name and evidence): every member of every
    record, and of each object in it, is the one lineage/evidence.md §1's table gives, and no other."""
    import json

    from tests.harness.tamper_outcomes import build_honest_outcomes

    members: dict[str, set[str]] = {}
    for line in section("## 1. The outcome record", EVIDENCE).split("**Bytes and id.**")[0].splitlines():
        cells = re.split(r"(?<!\\)\|", line)  # a cell's own pipes are escaped
        name = re.fullmatch(r" `([a-z_]+)` ", cells[1]) if len(cells) > 3 else None
        if name:
            members[name.group(1)] = set(re.findall(r'"([a-z_]+)":', cells[2]))
    assert set(members) == {
        "format",
        "brain",
        "agent",
        "skill",
        "version",
        "digest",
        "receipt",
        "task",
        "outcome",
        "verifier",
        "evidence",
        "time",
        "signer",
        "batch",
        "eval",
    }
    brain, _ = build_honest_outcomes(tmp_path)
    names = subprocess_show(brain, "HEAD:evidence").splitlines()[2:]  # "tree HEAD:evidence", "", then its names
    entries = [ln for n in names for ln in subprocess_show(brain, f"HEAD:evidence/{n}").splitlines()]
    assert len(entries) == 5
    seen_scores = 0
    for raw in entries:
        entry = json.loads(raw)
        assert set(entry) == {"record", "signature"}
        record = entry["record"]
        assert set(record) == set(members), sorted(set(record) ^ set(members))
        for key, inner in members.items():
            if inner:
                assert isinstance(record[key], dict) and set(record[key]) == inner, (key, record[key])
        seen_scores += record["outcome"]["result"] == "score"
    assert seen_scores == 1
    # Every role is one the CLI's filters take: the verifier's two outcome snapshots, by their role.
    from tests.harness.cli import run_in_process

    shown = json.loads(run_in_process("--brain", str(brain), "log", "--actor", "verifier", "--json", check=True).stdout)
    assert [s["operation"] for s in shown] == ["outcome", "outcome"]


# ------------------------------------------------------------------ what an outsider can check (§10.1)


def test_the_outsider_section_is_there_and_cites_what_exists() -> None:
    """§10.1 lists the checks a clone gives, those the chain adds, and what no check gives, citing the
    "does not give" sections; each of its (and lineage/supply.md §2's and lineage/supply.md §3's) § references names a
    heading here."""

    def heads(doc: Path) -> set[str]:
        return set(re.findall(r"^#+ (\d+(?:\.\d+)*)\b", doc.read_text(encoding="utf-8"), re.M))

    body = " ".join(section("### 10.1").split())
    for part in ("**With a clone alone**", "**With the chain**", "**What no check gives.**"):
        assert part in body
    for cited in (
        "§8.6",
        "§8.8.6",
        "lineage/attestations.md §6",
        "lineage/epochs.md §10.9",
        "lineage/evidence.md §7.6",
        "lineage/evidence.md §8",
        "What v1 cannot catch",
        "What the canonical form does not give",
        "What the `evidence` check cannot catch",
    ):
        assert cited in body, cited
    for doc, heading in (
        (DOC, "### 10.1"),
        (SUPPLY, "## 2. The supply record's members"),
        (SUPPLY, "## 3. The folder"),
    ):
        # a reference into another document or an RFC is that document's
        own = re.findall(r"(?<!\.md )(?<!RFC \d{4} )§(\d+(?:\.\d+)*)", section(heading, doc))
        assert own and not [r for r in own if r not in heads(doc)], (heading, [r for r in own if r not in heads(doc)])


# ----------------------------------------------------------------- the record refuses what lineage/supply.md §2 refuses


def _record_with(change) -> bytes:  # type: ignore[no-untyped-def]
    from ledger.store import supply as sp

    entry = {
        "source": {"type": "brain", "url": "https://example.com/b.git", "path": "skills/x", "ref": None},
        "pin": {"commit": "c" * 40, "root": "blake3-tree-v1:" + "1" * 64, "seq": 1},
        "version": 1,
        "blake3": "blake3-tree-v1:" + "2" * 64,
        "sha256": "3" * 64,
        "files": {"SKILL.md": "4" * 64},
        "signer": "0x" + "5" * 40,
        "derived_from": {"root": "blake3-tree-v1:" + "1" * 64},
        "state": "quarantined",
        "approval": None,
        "verdict": {
            "scanner": "ledger-scan/1+ext:semgrep",
            "worst": "high",
            "findings": [
                {"rule": "LS301", "severity": "high", "file": "SKILL.md", "line": 4, "detail": "curl | sh"},
                {"rule": "ext:x", "severity": "low", "file": "scripts/a.sh", "line": None, "detail": "x"},
            ],
        },
    }
    change(entry)
    doc = {"format": 1, "revoked": {}, "skills": {"x": entry}}
    data = (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=True) + "\n").encode()
    sp.parse_record(data)  # the canonical bytes, so only the member is judged
    return data


def _set(path: str, value: object):  # type: ignore[no-untyped-def]
    def change(entry: dict) -> None:
        *parents, last = path.split(".")
        node = entry
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        if value is _DROP:
            del node[last]
        else:
            node[int(last) if last.isdigit() else last] = value

    return change


_DROP = object()
REFUSED = {
    "a finding's rule that is no rule id": _set("verdict.findings.0.rule", "LS99"),
    "a finding's severity unknown": _set("verdict.findings.0.severity", "severe"),
    "a finding's file outside the skill": _set("verdict.findings.0.file", "../etc/passwd"),
    "a finding's line 0": _set("verdict.findings.0.line", 0),
    "a finding's line a boolean": _set("verdict.findings.0.line", True),
    "a finding's detail over 80 characters": _set("verdict.findings.0.detail", "x" * 81),
    "a finding's detail over two lines": _set("verdict.findings.0.detail", "a\nb"),
    "a finding without its line": _set("verdict.findings.0.line", _DROP),
    "findings out of order": _set(
        "verdict.findings",
        [
            {"rule": "ext:x", "severity": "low", "file": "scripts/a.sh", "line": None, "detail": "x"},
            {"rule": "LS301", "severity": "high", "file": "SKILL.md", "line": 4, "detail": "curl | sh"},
        ],
    ),
    "a worst the findings do not give": _set("verdict.worst", "low"),
    "a verdict without its scanner": _set("verdict.scanner", _DROP),
    "an empty scanner name": _set("verdict.scanner", ""),
    "credit with an agent but no chain": _set("derived_from", {"agent": 1, "root": "blake3-tree-v1:" + "1" * 64}),
    "credit with a registry in capitals": _set(
        "derived_from", {"agent": 1, "chain": 1, "registry": "0x" + "A" * 40, "root": "blake3-tree-v1:" + "1" * 64}
    ),
    "credit of another shape": _set("derived_from", {"brain": "x"}),
    "a pin's seq of 0": _set("pin.seq", 0),
    "a pin's digest without its prefix": _set("pin.digest", "6" * 64),
}


def test_the_record_takes_each_member_section_1_7_allows() -> None:
    _record_with(lambda e: None)
    _record_with(_set("pin", {"sha256": "6" * 64, "version": "0.2.0", "digest": "sha256:" + "7" * 64}))
    _record_with(
        _set(
            "derived_from",
            {"agent": 7, "chain": 31337, "registry": "0x" + "a" * 40, "root": "blake3-tree-v1:" + "1" * 64},
        )
    )
    _record_with(_set("verdict", {"scanner": "ledger-scan/1", "worst": "clean", "findings": []}))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_record_refuses_what_section_1_7_refuses(name: str) -> None:
    from ledger.errors import StoreError

    with pytest.raises(StoreError, match="supply"):
        _record_with(REFUSED[name])
