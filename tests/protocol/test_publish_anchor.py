"""The skill anchor (docs/lineage/anchor.md; issue 50): every entry a brain serves verifies offline, with the
stand-alone scripts/verify-entry.py (no ledger code) and with ``ledger verify-proof``, and every tamper of
tests/harness/anchor_cases.py is refused by both; :class:`ledger.publish.entries.Entries` serves what a runtime may
see and nothing else (withheld skills, the evaluation gate), from the store, frontmatter verbatim."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger.brain import Brain
from ledger.errors import LedgerError, ProofError, SkillNotFoundError
from ledger.publish import anchor as an
from ledger.publish.entries import Entries
from tests.harness.anchor_cases import VECTOR, files_of, tampers
from tests.harness.cli import run_ledger
from tests.harness.spec import EXTENSIONS

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "verify-entry.py"
NESTED = b"---\nname: forms\ndescription: Fill PDF forms\n---\nSee templates/.\n"
NOT_A_SKILL = b"---\nname: something-else\ndescription: its folder is not its name\n---\n"


def _write(tmp: Path, name: str, entry: dict[str, Any], files: dict[str, bytes]) -> tuple[Path, Path]:
    """The entry as a host saves it, and its files laid out from the skill's root."""
    doc, folder = tmp / f"{name}.json", tmp / f"{name}.files"
    doc.write_text(json.dumps(entry))
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    folder.mkdir(exist_ok=True)
    return doc, folder


def _trust(trust: dict[str, str]) -> list[str]:
    return ["--signer", trust["signer"]] if "signer" in trust else ["--root", trust["root"]]


def _scripts(runs: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """scripts/verify-entry.py on each argument list, two at a time (its eth-account import is slow)."""
    out: list[subprocess.CompletedProcess[str]] = []
    for i in range(0, len(runs), 2):
        procs = [
            subprocess.Popen(
                [sys.executable, str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for args in runs[i : i + 2]
        ]
        for p, args in zip(procs, runs[i : i + 2], strict=True):
            stdout, stderr = p.communicate(timeout=120)
            out.append(subprocess.CompletedProcess(args, p.returncode, stdout, stderr))
    return out


def _ledger_check(entry: dict[str, Any], files: dict[str, bytes], trust: dict[str, str]) -> Any:
    root = trust.get("root")
    return an.verify_entry(entry, files, root=bytes.fromhex(root[15:]) if root else None, signer=trust.get("signer"))


def _served_brain(brain: Brain) -> dict[str, Any]:
    """A signed brain: a skill with an exec script, nested directories, a nested skill and a SKILL.md that is
    not one; another by the agent. Returns the pdf-tools entry before its last write (another snapshot)."""
    brain.create("pdf-tools", "Work with PDF files", "# PDF tools\n\nRun scripts/extract.py.\n")
    brain.write_file("pdf-tools", "scripts/extract.py", b"#!/usr/bin/env python3\nprint('pdf')\n", executable=True)
    brain.write_file("pdf-tools", "references/deep/er/FORMS.md", b"# Forms\r\nbinary \x00\xff end\n")
    brain.write_file("pdf-tools", "forms/SKILL.md", NESTED)
    brain.write_file("pdf-tools", "forms/templates/invoice.md", b"invoice\n")
    brain.write_file("pdf-tools", "other/SKILL.md", NOT_A_SKILL)
    before = Entries(brain).get("skill://pdf-tools/SKILL.md")
    brain.write_file("pdf-tools", "references/b.md", b"b\n")
    with brain.acting("agent"):
        brain.create("git-flow", "Follow the team's git conventions", "Branch, commit, rebase.\n")
    return before


def test_every_served_entry_verifies_stand_alone_and_by_the_cli_and_every_tamper_is_refused(
    brain: Brain, tmp_path: Path
) -> None:
    before = _served_brain(brain)
    entries = Entries(brain)
    listed = entries.list()
    assert [e["uri"] for e in listed] == [
        "skill://git-flow/SKILL.md",
        "skill://pdf-tools/SKILL.md",
        "skill://pdf-tools/forms/SKILL.md",
    ]
    # the head snapshot's signer (the agent wrote last) vouches for every entry served from it
    assert {e["_meta"][an.KEY]["signer"]["role"] for e in listed} == {"agent"}
    assert before["_meta"][an.KEY]["signer"]["role"] == "user"
    runs, expect, cli = [], [], []
    for n, entry in enumerate(listed):
        a = entry["_meta"][an.KEY]
        files = files_of(entries, entry)
        assert sorted(files) == sorted(r["uri"][len(entry["uri"]) - 8 :] for r in entry["resources"])
        for res in entry["resources"]:  # the spec's digest and size, from the bytes resources/read serves
            data = entries.read(res["uri"])
            assert res["digest"] == "sha256:" + hashlib.sha256(data).hexdigest() and res["size"] == len(data)
        trust = {"signer": a["signer"]["address"]}
        assert _ledger_check(entry, files, trust).bytes_checked
        doc, folder = _write(tmp_path, f"ok{n}", entry, files)
        runs.append([str(doc), *_trust(trust), "--files", str(folder)])
        expect.append(0)
        cli.append(([str(doc), "--root", a["root"], "--files", str(folder)], 0, "OK: " + entry["uri"]))
        if not a["prefix"] and entry["uri"] != "skill://pdf-tools/SKILL.md":
            continue
        # every tamper refused by verify_entry; the nested skill's (its prefix rules) also by the script and the
        # CLI, which the vector test runs on the outer skill's
        for i, (name, e, f, t, refusal) in enumerate(tampers(entry, files, trust["signer"], before)):
            with pytest.raises(ProofError, match="the anchor does not verify") as refused:
                _ledger_check(e, f, t)
            assert refusal in refused.value.message, (name, refused.value.message)
            if a["prefix"]:
                doc, folder = _write(tmp_path, f"t{n}-{i}", e, f)
                runs.append([str(doc), *_trust(t), "--files", str(folder)])
                expect.append(1)
                cli.append(([str(doc), *_trust(t), "--files", str(folder)], 1, "FAIL: "))
    for proc, code in zip(_scripts(runs), expect, strict=True):
        assert proc.returncode == code, (proc.args, proc.stdout, proc.stderr)
        assert proc.stdout.startswith("OK: ") if code == 0 else proc.stderr.startswith("FAIL: "), proc.stderr
    for args, code, said in cli:
        proc = run_ledger("proof", "check", *args)
        assert proc.returncode == code and said in (proc.stdout + proc.stderr), (args, proc.stdout, proc.stderr)


def test_the_vector_verdicts_of_ledger_and_the_stand_alone_script(tmp_path: Path) -> None:
    cases = json.loads(VECTOR.read_text())["cases"]
    assert len(cases) >= 17 and any(c["entry"]["_meta"][an.KEY]["prefix"] for c in cases)
    runs = []
    for i, c in enumerate(cases):
        files = {k: base64.b64decode(v) for k, v in c["files"].items()}
        if c["ok"]:
            check = _ledger_check(c["entry"], files, c["trust"])
            assert check.bytes_checked and check.version_bound == c["version_bound"], c["name"]
        else:
            with pytest.raises(ProofError) as refused:
                _ledger_check(c["entry"], files, c["trust"])
            assert c["refusal"] in refused.value.message, (c["name"], refused.value.message)
        doc, folder = _write(tmp_path, f"v{i}", c["entry"], files)
        runs.append([str(doc), *_trust(c["trust"]), "--files", str(folder)])
    for proc, c in zip(_scripts(runs), cases, strict=True):
        assert proc.returncode == (0 if c["ok"] else 1), (c["name"], proc.stdout, proc.stderr)
        assert not c["ok"] or ("(claimed)" in proc.stdout) == (not c["version_bound"]), (c["name"], proc.stdout)
    assert {c["entry"]["_meta"][an.KEY]["versions"] for c in cases if c["ok"] and "_meta" in c["entry"]} == {
        "skill-md",
        "store",
    }


def test_a_store_brain_s_version_is_a_claim_and_its_author_s_metadata_version_is_no_counter(tmp_path: Path) -> None:
    """lineage/anchor.md §3 step 10, lineage/anchor.md §4: the anchor's ``versions`` says where the brain counted at
    that snapshot. In the store
    the SKILL.md's ``metadata.version`` is the author's (7 here, the ledger's version 2): the entry verifies, its
    version reported as claimed; in SKILL.md the counter (absent: 0) must be ``version``, which is then bound.
    Relabelling only moves a version from bound to claimed, never makes a false one pass as bound."""
    authored = "---\nname: notes\ndescription: Take notes\nmetadata:\n  version: '7'\n---\nv2\n"
    got = {}
    for mode in ("store", "frontmatter"):
        with Brain.init(tmp_path / mode, sign=False, versions=mode) as brain:
            brain.create("notes", "Take notes", "v1\n")
            brain.edit("notes", authored)
            entries = Entries(brain)
            entry = entries.get("skill://notes/SKILL.md")
            got[mode] = (entry, files_of(entries, entry))
    (stored, s_files), (counted, c_files) = got["store"], got["frontmatter"]
    sa, ca = stored["_meta"][an.KEY], counted["_meta"][an.KEY]
    assert (sa["versions"], sa["version"], an.counter_of(stored["frontmatter"])) == ("store", 2, 7)
    assert (ca["versions"], ca["version"], an.counter_of(counted["frontmatter"])) == ("skill-md", 2, 2)
    root = {"store": bytes.fromhex(sa["root"][15:]), "skill-md": bytes.fromhex(ca["root"][15:])}
    check = an.verify_entry(stored, s_files, root=root["store"])
    assert (check.version, check.versions, check.version_bound) == (2, "store", False)
    assert an.verify_entry(counted, c_files, root=root["skill-md"]).version_bound
    assert not an.verify_entry(counted, root=root["skill-md"]).version_bound  # without the bytes, a claim
    down = json.loads(json.dumps(counted))
    down["_meta"][an.KEY]["versions"] = "store"  # relabelled: verifies, its version downgraded to a claim
    assert not an.verify_entry(down, c_files, root=root["skill-md"]).version_bound
    up = json.loads(json.dumps(stored))
    up["_meta"][an.KEY]["versions"] = "skill-md"  # the author's 7 is not the claimed 2: refused, not bound
    with pytest.raises(ProofError, match=r"file 'SKILL\.md' is at version 7, not the anchor's 2"):
        an.verify_entry(up, s_files, root=root["store"])
    for bad in ("frontmatter", None):
        odd = json.loads(json.dumps(counted))
        odd["_meta"][an.KEY]["versions"] = bad
        with pytest.raises(ProofError, match=r"its versions is .*, not 'skill-md' or 'store'"):
            an.verify_entry(odd, c_files, root=root["skill-md"])
    del odd["_meta"][an.KEY]["versions"]
    with pytest.raises(ProofError, match="its members are"):
        an.verify_entry(odd, c_files, root=root["skill-md"])
    runs, said = [], []
    for name, e, f, r in (
        ("stored", stored, s_files, sa["root"]),
        ("counted", counted, c_files, ca["root"]),
        ("down", down, c_files, ca["root"]),
        ("up", up, s_files, sa["root"]),
        ("odd", odd, c_files, ca["root"]),
    ):
        doc, folder = _write(tmp_path, name, e, f)
        runs.append([str(doc), "--root", r, "--files", str(folder)])
        said.append(run_ledger("proof", "check", *runs[-1]))
    out = _scripts(runs)
    assert [p.returncode for p in out] == [p.returncode for p in said] == [0, 0, 0, 1, 1], [p.stderr for p in out]
    for proc in (out, said):
        assert "v2 (claimed) is in" in proc[0].stdout and "v2 is in" in proc[1].stdout, proc[1].stdout
        assert "v2 (claimed) is in" in proc[2].stdout and "is at version 7, not" in proc[3].stderr
    as_json = run_ledger("proof", "check", *runs[0], "--json")
    assert json.loads(as_json.stdout)["version_bound"] is False and json.loads(as_json.stdout)["versions"] == "store"


def test_verify_proof_takes_an_entry_as_it_comes(brain: Brain, tmp_path: Path) -> None:
    """A Skill, a skills/get result and the anchor alone; --json; what the host trusts is required."""
    _served_brain(brain)
    entries = Entries(brain)
    entry = entries.get("skill://pdf-tools/forms/SKILL.md")
    a = entry["_meta"][an.KEY]
    files = files_of(entries, entry)
    assert sorted(files) == ["SKILL.md", "templates/invoice.md"] and a["prefix"] == "forms"
    _, folder = _write(tmp_path, "forms", entry, files)
    forms = {
        "skill": entry,
        "get": {"resultType": "complete", "skill": entry, "ttlMs": 1, "cacheScope": "public"},
        "anchor": a,
    }
    for name, doc in forms.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        out = run_ledger(
            "proof",
            "check",
            str(path),
            "--signer",
            a["signer"]["address"].upper().replace("0X", "0x"),
            "--files",
            str(folder),
            "--json",
        )
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert (got["ok"], got["skill"], got["prefix"], got["files"], got["bytes_checked"], got["trusted"]) == (
            True,
            "pdf-tools",
            "forms",
            ["SKILL.md", "templates/invoice.md"],
            True,
            "signer",
        ), got
        text = run_ledger("proof", "check", str(path), "--root", a["root"])
        assert text.returncode == 0 and "OK: skill://pdf-tools/forms/SKILL.md v" in text.stdout, text.stderr
    path = tmp_path / "skill.json"
    usage = run_ledger("proof", "check", str(path))
    assert usage.returncode == 2 and "--root ROOT, --signer ADDRESS or --chain" in usage.stderr
    (folder / "templates" / "invoice.md").write_bytes(b"INVOICE\n")
    bad = run_ledger("proof", "check", str(path), "--root", a["root"], "--files", str(folder), "--json")
    assert bad.returncode == 1
    assert "'templates/invoice.md' is not the file the root holds" in json.loads(bad.stdout)["error"]
    (folder / "templates" / "invoice.md").write_bytes(b"invoice\n")
    (folder / "SKILL.md").write_bytes(NESTED.replace(b"Fill PDF forms", b"Fill PDF forms!"))
    said = run_ledger("proof", "check", str(path), "--root", a["root"], "--files", str(folder))
    assert said.returncode == 1 and "error: FAIL: the anchor does not verify: file 'SKILL.md'" in said.stderr
    twice = tmp_path / "twice.json"  # a key given twice reads one way in one parser, another in the next
    twice.write_text('{"uri": "skill://x/SKILL.md", ' + json.dumps(entry)[1:])
    dup = run_ledger("proof", "check", str(twice), "--root", a["root"])
    assert dup.returncode == 1 and "is ambiguous JSON: the key 'uri' appears twice" in dup.stderr, dup.stderr
    [script] = _scripts([[str(twice), "--root", a["root"]]])
    assert script.returncode == 1 and "a JSON key given twice" in script.stderr
    proof = run_ledger("--brain", str(brain.root), "proof", "make", "pdf-tools/SKILL.md")  # inclusion proofs as before
    (tmp_path / "p.json").write_text(proof.stdout)
    assert run_ledger("proof", "check", str(tmp_path / "p.json"), "--root", a["root"]).returncode == 0
    mixed = run_ledger("proof", "check", str(tmp_path / "p.json"), "--signer", a["signer"]["address"])
    assert mixed.returncode == 2 and "go with an MCP skill entry" in mixed.stderr


def test_entries_serve_what_a_runtime_may_see_from_the_store(brain: Brain) -> None:
    from ledger.store.supply import QUARANTINED
    from tests.unit.supply.test_quarantine import _mark

    _served_brain(brain)
    brain.create("hidden", "Installed, not approved", "body\n")
    entries = Entries(brain)
    assert "skill://hidden/SKILL.md" in {e["uri"] for e in entries.list()}
    _mark(brain, hidden=QUARANTINED)
    assert "skill://hidden/SKILL.md" not in {e["uri"] for e in entries.list()}  # a new head: listed afresh
    for call, uri in (
        (entries.get, "skill://hidden/SKILL.md"),
        (entries.read, "skill://hidden/SKILL.md"),
        (entries.children, "skill://hidden"),
        (entries.get, "skill://pdf-tools/other/SKILL.md"),
        (entries.get, "skill://pdf-tools/scripts/extract.py"),
        (entries.read, "skill://pdf-tools/nope"),
        (entries.children, "skill://pdf-tools/SKILL.md"),
        (entries.children, "skill://pdf-tools/x"),
        (entries.children, "skill://pdf-tools/"),
        (entries.read, "skill://pdf-tools/../x/SKILL.md"),
        (entries.get, "file:///etc/passwd"),
    ):
        with pytest.raises(SkillNotFoundError):
            call(uri)
    # The store's bytes, not the work tree's: an edit by hand is not served until it is snapshot.
    (brain.skills_dir / "pdf-tools" / "references" / "b.md").write_bytes(b"edited by hand\n")
    assert entries.read("skill://pdf-tools/references/b.md") == b"b\n"
    assert [c["uri"] for c in entries.children("skill://pdf-tools")] == [
        "skill://pdf-tools/SKILL.md",
        "skill://pdf-tools/forms",
        "skill://pdf-tools/other",
        "skill://pdf-tools/references",
        "skill://pdf-tools/scripts",
    ]
    assert entries.children("skill://pdf-tools/scripts") == [
        {"uri": "skill://pdf-tools/scripts/extract.py", "name": "extract.py", "mimeType": "text/x-python"}
    ]
    assert entries.children("skill://pdf-tools/forms")[1]["mimeType"] == "inode/directory"
    nested = entries.get("skill://pdf-tools/forms/SKILL.md")
    outer = entries.get("skill://pdf-tools/SKILL.md")
    assert {r["uri"] for r in nested["resources"]} < {r["uri"] for r in outer["resources"]}  # the outer lists them too
    assert nested["_meta"][an.KEY]["folder"] == outer["_meta"][an.KEY]["folder"]
    first = entries.list()
    assert entries.list() == first and entries.list()[0] is first[0]  # kept for the head: a warm listing is a lookup


def test_frontmatter_is_verbatim_json_and_what_has_no_one_rendering_is_not_served(brain: Brain) -> None:
    odd = (
        "---\nname: odd-yaml\ndescription: >-\n  Folded\n  text\nlicense: Apache-2.0\ncreated: 2024-01-15\n"
        "when: 2001-12-14t21:59:43.10-05:00\nallowed-tools: Bash(git:*) Read\n"
        "flags: [true, False, ~, 1.5, -3, 0x1f, 1.]\n"
        "quoted: '2024-01-15'\nmetadata:\n  author: me\n  tags: a b\n  version: '1'\n---\nbody\n"
    )
    brain.allow_invalid = True  # lint calls these fields unexpected; the spec passes every field through
    brain.create("odd-yaml", "x", "body\n")
    brain.edit("odd-yaml", odd)
    brain.create("bad-key", "x", "body\n")
    brain.edit("bad-key", "---\nname: bad-key\ndescription: a key that is a number\n1: one\n---\n")
    brain.create("two-readings", "x", "body\n")  # YAML 1.1 reads `on` as true, YAML 1.2 as "on"
    brain.edit("two-readings", "---\nname: two-readings\ndescription: two readings\nuser-invocable: on\n---\n")
    brain.create("foo-bar", "x", "body\n")
    brain.edit("foo-bar", "---\nname: Foo Bar\ndescription: a name that is not its folder\n---\n")
    spec = {  # spec-invalid frontmatter, each with its lint message (ledger.bundle.lint.served_errors)
        "meta-int": (
            "metadata:\n  build: 7\n",
            "Field 'metadata.build' must be a string, not 7 (fix: quote it: build: '7')",
        ),
        "meta-list": ("metadata:\n  tags: [a, b]\n", "Field 'metadata.tags' must be a string, not a list"),
        "long-desc": ("", "Description exceeds 1024 character limit (1025 chars)"),
        "compat": ("compatibility: ''\n", "Field 'compatibility' must be a string of 1 to 500 characters"),
        "tools-list": ("allowed-tools: [Read, Bash]\n", "Field 'allowed-tools' must be a string, not list"),
        "proto": ("__proto__: x\n", "'__proto__', which JavaScript hosts refuse"),
    }
    for name, (extra, _) in spec.items():
        brain.create(name, "x", "body\n")
        desc = "d" * 1025 if name == "long-desc" else "a skill"
        brain.edit(name, f"---\nname: {name}\ndescription: {desc}\n{extra}---\n")
    entries = Entries(brain)
    got = entries.get("skill://odd-yaml/SKILL.md")["frontmatter"]
    assert got == {
        "name": "odd-yaml",
        "description": "Folded text",
        "license": "Apache-2.0",
        "created": "2024-01-15",
        "when": "2001-12-14t21:59:43.10-05:00",
        "allowed-tools": "Bash(git:*) Read",
        "flags": [True, False, None, 1.5, -3, 31, 1.0],
        "quoted": "2024-01-15",
        "metadata": {"author": "me", "tags": "a b", "version": "2"},
    }
    assert list(got) == [
        "name",
        "description",
        "license",
        "created",
        "when",
        "allowed-tools",
        "flags",
        "quoted",
        "metadata",
    ]  # the author's order
    refused = entries.refused()
    assert "which YAML reads as a int, not text" in refused["skill://bad-key/SKILL.md"]
    assert "is not its folder 'foo-bar'" in refused["skill://foo-bar/SKILL.md"]
    assert "'on' reads as True in YAML 1.1 but as 'on' in YAML 1.2" in refused["skill://two-readings/SKILL.md"]
    for name, (_, said) in spec.items():
        assert "does not conform to the Agent Skills spec" in refused[f"skill://{name}/SKILL.md"], name
        assert said in refused[f"skill://{name}/SKILL.md"], (name, refused[f"skill://{name}/SKILL.md"])
    with pytest.raises(SkillNotFoundError, match=r"no skill is served at skill://foo-bar/SKILL\.md: its frontmatter"):
        entries.get("skill://foo-bar/SKILL.md")
    assert {e["uri"] for e in entries.list()} == {"skill://odd-yaml/SKILL.md"}
    entry = entries.get("skill://odd-yaml/SKILL.md")
    files = files_of(entries, entry)
    an.verify_entry(entry, files, signer=entry["_meta"][an.KEY]["signer"]["address"])  # frontmatter checked too
    forged = json.loads(json.dumps(entry))
    forged["frontmatter"]["allowed-tools"] = "Bash(*)"
    with pytest.raises(LedgerError, match=r"frontmatter is not file 'SKILL\.md''s"):
        an.verify_entry(forged, files, signer=entry["_meta"][an.KEY]["signer"]["address"])


def test_with_the_gate_on_a_held_skill_is_served_at_its_released_version_from_its_snapshot(tmp_path: Path) -> None:
    from tests.unit.evals.test_eval_gate import EVALS

    env = {"LEDGER_KEYS": str(tmp_path / "keys")}
    path = tmp_path / "brain"

    def ledger(*args: str) -> subprocess.CompletedProcess[str]:
        return run_ledger("--brain", str(path), *args, env=env, check=True)

    run_ledger("init", str(path), env=env, check=True)
    ledger("skill", "create", "csv-sum", "--description", "Sum a CSV column.", "--body", "Step one: read it.\n")
    (tmp_path / "evals.json").write_text(json.dumps(EVALS))
    ledger("skill", "create", "plain", "--description", "No evals.", "--body", "Plain.\n")
    ledger("skill", "write-file", "csv-sum", "evals/evals.json", "--from", str(tmp_path / "evals.json"))
    new = tmp_path / "incoming/word-count"  # evals from its first version: nothing of it is released
    (new / "evals").mkdir(parents=True)
    (new / "SKILL.md").write_text("---\nname: word-count\ndescription: Count words.\n---\nCount them.\n")
    (new / "evals/evals.json").write_text(json.dumps({**EVALS, "skill_name": "word-count"}))
    ledger("import", str(new.parent))
    ledger("eval", "gate", "on")
    with pytest.MonkeyPatch.context() as mp, Brain.open(path) as brain:
        mp.setenv("LEDGER_KEYS", env["LEDGER_KEYS"])
        entries = Entries(brain)
        served = {e["uri"]: e for e in entries.list()}
        assert set(served) == {"skill://csv-sum/SKILL.md", "skill://plain/SKILL.md"}  # word-count: nothing released
        held = served["skill://csv-sum/SKILL.md"]
        a = held["_meta"][an.KEY]
        v1 = next(s for s in brain.store.lineage() if s.skill == "csv-sum" and s.version == 1)
        assert (a["version"], a["commit"]) == (1, v1.commit) and a["commit"] != brain.head().commit.hex()
        assert [r["uri"] for r in held["resources"]] == ["skill://csv-sum/SKILL.md"]  # v1's files: no evals/
        assert served["skill://plain/SKILL.md"]["_meta"][an.KEY]["commit"] == brain.head().commit.hex()
        files = files_of(entries, held)
        assert held["frontmatter"]["metadata"] == {"version": "1"} and b"version: '1'" in files["SKILL.md"]
        an.verify_entry(held, files, signer=a["signer"]["address"])
        with pytest.raises(SkillNotFoundError):
            entries.get("skill://word-count/SKILL.md")
        with pytest.raises(SkillNotFoundError):
            entries.read("skill://csv-sum/evals/evals.json")  # the head's file, not the released version's
    ledger("eval", "gate", "off")
    with Brain.open(path) as brain:
        assert len(Entries(brain).list()) == 3


def test_the_spec_names_every_member_of_a_served_entry_and_anchor(brain: Brain) -> None:
    """docs/lineage/anchor.md §1's two tables name exactly the members a real entry and its anchor have."""
    import re

    _served_brain(brain)
    entry = Entries(brain).get("skill://pdf-tools/forms/SKILL.md")
    text = EXTENSIONS["anchor"].read_text(encoding="utf-8")
    section = text[text.index("## 1. ") : text.index("## 2. ")]
    tables = [re.findall(r"^\| `([^`]+)` \|", t, re.M) for t in section.split("| member | value |")[1:]]
    assert tables == [list(entry), list(entry["_meta"][an.KEY])]
    assert f'`"{an.FORMAT}"`' in section and f"`_meta` key `{an.KEY}`" in text


@pytest.mark.chain
def test_an_anchored_snapshot_s_entry_carries_its_receipt_and_verifies_against_the_chain(
    chained: Brain, tmp_path: Path
) -> None:
    """Real anvil: the anchor's ``chain`` is the commit's receipt; ``verify-proof --chain`` finds its root
    committed by the agent at that seq and tx, and refuses an anchor that states another."""
    from ledger.anchoring.commits import commit_pending
    from ledger.chain.keys import DEV_KEY_NAME
    from ledger.chain.receipts import receipt_of
    from tests.unit.audit.test_audit import chain_args

    chained.create("s", "S skill", "body\n")
    commit_pending(chained, key=DEV_KEY_NAME)
    receipt = receipt_of(chained.store, chained.head().commit.hex())
    entry = Entries(chained).get("skill://s/SKILL.md")
    a = entry["_meta"][an.KEY]
    assert receipt is not None and a["chain"] == {
        "chainId": receipt["chain_id"],
        "registry": receipt["registry"],
        "agent": receipt["agent"],
        "seq": receipt["seq"],
        "block": receipt["block"],
        "tx": receipt["tx"],
    }
    doc = tmp_path / "s.json"
    doc.write_text(json.dumps(entry))
    ok = run_ledger("proof", "check", str(doc), "--chain", "--head", *chain_args(chained), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["onchain"]["seq"] == receipt["seq"]
    a["chain"]["seq"] += 1
    doc.write_text(json.dumps(entry))
    bad = run_ledger("proof", "check", str(doc), "--chain", *chain_args(chained))
    assert bad.returncode == 1 and f"the anchor says seq {receipt['seq'] + 1}" in bad.stderr, bad.stderr
    chained.create("t", "T skill", "body\n")  # a newer snapshot, not on chain: its entries' root is not there
    doc.write_text(json.dumps(Entries(chained).get("skill://t/SKILL.md")))
    late = run_ledger("proof", "check", str(doc), "--chain", *chain_args(chained))
    assert late.returncode == 1 and "was never committed on chain" in late.stderr, late.stderr


def test_an_unsigned_brain_that_keeps_versions_in_the_store_verifies_by_root_only(tmp_path: Path) -> None:
    """``signed`` and ``signer`` are null; a pinned signer is refused; the version is the store's (no counter in
    SKILL.md), a claim the anchor does not bind offline (lineage/anchor.md §4: checked in a clone)."""
    with Brain.init(tmp_path / "brain", sign=False, versions="store") as brain:
        brain.create("notes", "Take notes", "v1\n")
        brain.edit("notes", "---\nname: notes\ndescription: Take notes\n---\nv2\n")
        entries = Entries(brain)
        entry = entries.get("skill://notes/SKILL.md")
        files = files_of(entries, entry)
    a = entry["_meta"][an.KEY]
    assert a["signer"] is None and a["signed"] is None and a["version"] == 2
    assert files["SKILL.md"].endswith(b"---\nv2\n")
    assert entry["frontmatter"] == {"name": "notes", "description": "Take notes"}  # no counter: the store keeps it
    root = bytes.fromhex(a["root"][15:])
    assert an.verify_entry(entry, files, root=root).signer is None
    with pytest.raises(ProofError, match="is unsigned, not by the trusted"):
        an.verify_entry(entry, files, signer="0x" + "11" * 20)
    named = json.loads(json.dumps(entry))
    named["_meta"][an.KEY]["signer"] = {"address": "0x" + "11" * 20, "role": "agent"}
    with pytest.raises(ProofError, match=r"names signer .* but carries no signature"):
        an.verify_entry(named, files, root=root)
    doc, folder = _write(tmp_path, "notes", entry, files)
    lie, _ = _write(tmp_path, "lie", named, files)
    runs = [
        [str(doc), "--root", a["root"], "--files", str(folder)],
        [str(doc), "--signer", "0x" + "11" * 20],
        [str(lie), "--root", a["root"]],
    ]
    assert [p.returncode for p in _scripts(runs)] == [0, 1, 1]


def test_an_anchor_s_size_does_not_grow_with_the_commit_message(brain: Brain) -> None:
    """An import of many skills names each in a Ledger-Change trailer; the anchors it serves carry the signed
    fields (the message as its keccak-256), not the commit, and the entries of one snapshot share them."""
    src = brain.root.parent / "incoming"
    for i in range(300):
        (src / f"skill-{i:03}").mkdir(parents=True)
        (src / f"skill-{i:03}" / "SKILL.md").write_text(f"---\nname: skill-{i:03}\ndescription: Skill {i}\n---\nb\n")
    from ledger.folders.layouts import read

    brain.import_collection(read(src, "auto", 1 << 20))
    message = brain.store.read(brain.head().commit, b"commit")
    assert message.count(b"Ledger-Change: ") == 300 and len(message) > 10_000
    listed = Entries(brain).list()
    assert len(listed) == 300
    sizes = {len(json.dumps(e["_meta"])) for e in listed}
    assert max(sizes) < 2_000, max(sizes)  # about 1 KB each, whatever the message holds
    assert listed[0]["_meta"][an.KEY]["signed"] is listed[-1]["_meta"][an.KEY]["signed"]  # made once per commit
    a = listed[0]["_meta"][an.KEY]
    assert an.verify_entry(listed[0], signer=a["signer"]["address"]).commit == brain.head().commit.hex()


MIME = {
    "SKILL.md": "text/markdown",
    "references/guide.md": "text/markdown",
    "scripts/run.py": "text/x-python",
    "scripts/run.sh": "application/x-sh",
    "assets/logo.png": "image/png",
    "data/x.json": "application/json",
    "notes.txt": "text/plain",
    "page.html": "text/html",
    "a.pdf": "application/pdf",
    "Makefile": "application/octet-stream",
    "x.unknown-ext": "application/octet-stream",
}


def test_a_file_s_mime_type_is_the_same_on_every_machine(tmp_path: Path) -> None:
    """``mime_type`` answers from Python's built-in table, never the machine's: a process whose system tables
    (``mimetypes.knownfiles``, read by the module's own ``init``) say otherwise gets the pinned answers."""
    from ledger.publish.entries import mime_type

    assert {p: mime_type(p) for p in MIME} == MIME
    odd = tmp_path / "mime.types"
    odd.write_text("application/x-odd py sh png json txt html pdf\n")
    code = (
        "import json, mimetypes, sys\nmimetypes.knownfiles[:] = [sys.argv[1]]\nmimetypes.init()\n"
        "assert mimetypes.guess_type('a.py')[0] == 'application/x-odd'  # the machine's table, as read\n"
        "from ledger.publish.entries import mime_type\n"
        "print(json.dumps({p: mime_type(p) for p in json.loads(sys.argv[2])}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(odd), json.dumps(list(MIME))], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == MIME


def test_the_stand_alone_verifier_is_a_page_of_code_that_imports_no_ledger() -> None:
    """Issue 50: "a stand-alone script of at most about 100 lines that imports no ledger code"."""
    import ast

    tree = ast.parse(SCRIPT.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names - set(sys.stdlib_module_names) == {"blake3", "eth_account", "yaml"}, names
    body = SCRIPT.read_text().split('"""', 2)[2].splitlines()  # after the docstring
    code = [ln for ln in body if ln.strip() and not ln.strip().startswith("#")]
    assert len(code) <= 120, len(code)  # 107 before the frontmatter, version and step-count checks (issue 50)
