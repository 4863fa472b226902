"""The skill anchor's tamper corpus (docs/lineage/anchor.md §4), and the vector tests/vectors/anchor/ made from it.

:func:`tampers` turns one verified entry (and its files' bytes) into the cases a host must refuse, each a
self-contained (entry, files, what the host trusts). tests/protocol/test_publish_anchor.py runs them on every entry of
a served brain, through :func:`ledger.publish.anchor.verify_entry`, ``ledger verify-proof`` and the
stand-alone scripts/verify-entry.py; ``python -m tests.harness.anchor_cases`` writes the committed vector from a small
brain (its bytes hold a fresh signing key and timestamps, so it is made once and kept; rewritten only when the
format changes before release).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ledger.bundle.frontmatter import as_json
from ledger.protocol import signing
from ledger.publish import anchor as an

VECTOR = Path(__file__).parents[1] / "vectors" / "anchor" / "vector.json"
OTHER_KEY = bytes.fromhex("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")  # not the brain's

Files = dict[str, bytes]
Case = tuple[str, dict[str, Any], Files, dict[str, str], str]  # name, entry, files, trust, refusal (a substring)


def files_of(entries: Any, entry: dict[str, Any]) -> Files:
    """The bytes of an entry's files, keyed by path from the skill's root, as a host reads them."""
    return {r["uri"][len(entry["uri"]) - len("SKILL.md") :]: entries.read(r["uri"]) for r in entry["resources"]}


def _anchor(entry: dict[str, Any]) -> dict[str, Any]:
    return entry["_meta"][an.KEY]


def resign(anchor: dict[str, Any], key: bytes, *, root: str | None = None) -> None:
    """Re-sign the anchor's EIP-712 fields with ``key`` (over ``root``, when given): a forgery that is a
    well-formed signed snapshot, by another key."""
    if root is not None:
        anchor["root"] = root
    s = anchor["signed"]
    digest = signing.digest_of(
        bytes.fromhex(anchor["root"][15:]),
        bytes.fromhex(s["parentRoot"]),
        bytes.fromhex(s["parentCommit"]),
        bytes.fromhex(s["tree"]),
        s["actor"],
        bytes.fromhex(s["message"]),
    )
    s["signature"] = signing.sign(key, digest)
    anchor["signer"] = {"address": signing.address_of(key), "role": s["actor"]}


def tampers(entry: dict[str, Any], files: Files, signer: str, other: dict[str, Any] | None = None) -> Iterator[Case]:
    """Every way lineage/anchor.md §4 names of making a host take what the brain did not serve; ``other`` is an entry of
    another snapshot of the same skill, when there is one."""
    trust = {"signer": signer}
    a = _anchor(entry)
    rels = sorted(files, key=str.encode)
    pre = a["prefix"] + "/" if a["prefix"] else ""

    def case(
        name: str,
        change: Callable[[dict[str, Any], dict[str, Any], Files], Any],
        refusal: str,
        pinned: dict[str, str] | None = None,
    ) -> Case:
        e, f = copy.deepcopy(entry), dict(files)
        change(e, _anchor(e), f)
        return name, e, f, pinned or trust, refusal

    def change_byte(e: Any, x: Any, f: Files) -> None:
        f[rels[-1]] = bytes([f[rels[-1]][0] ^ 1]) + f[rels[-1]][1:]

    yield case("a changed byte", change_byte, "is not the file the root holds")
    if len(rels) > 1 and files[rels[0]] != files[rels[1]]:

        def swap(e: Any, x: Any, f: Files) -> None:
            f[rels[0]], f[rels[1]] = f[rels[1]], f[rels[0]]

        yield case("two files swapped", swap, "is not the file the root holds")

    def drop(e: Any, x: Any, f: Files) -> None:
        i = next(i for i, g in enumerate(x["files"]) if g["path"] != pre + "SKILL.md")
        path = x["files"].pop(i)["path"]
        e["resources"].pop(i)
        f.pop(path[len(pre) :])

    if len(rels) > 1:
        yield case("a dropped file (from entry, anchor and files alike)", drop, "not the whole")

    def extra_file(e: Any, x: Any, f: Files) -> None:
        f["zz-extra.md"] = b"an extra file\n"

    yield case("an extra file beside the skill's", extra_file, "is not one of the skill's files")

    def extra_listed(e: Any, x: Any, f: Files) -> None:
        data = b"an extra file\n"
        x["files"].append({**x["files"][-1], "path": pre + "zz-extra.md"})
        e["resources"].append(
            {
                "uri": an.skill_uri(x["skill"], x["prefix"], "zz-extra.md"),
                "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                "size": len(data),
            }
        )
        f["zz-extra.md"] = data

    yield case("an extra file listed in entry and anchor", extra_listed, "is not in the skill folder")
    yield case("a wrong trusted root", lambda e, x, f: None, "not the trusted", {"root": "blake3-tree-v1:" + "00" * 32})

    def forged(e: Any, x: Any, f: Files) -> None:
        x["signed"]["tree"] = "00" * 20

    yield case("a forged signed field (the tree), the signature kept", forged, "but its signature is by")

    def forged_root(e: Any, x: Any, f: Files) -> None:
        resign(x, OTHER_KEY, root="blake3-tree-v1:" + "11" * 32)

    yield case("a forged root, re-signed by another key", forged_root, "not by the trusted")
    yield case("a signature by another key", lambda e, x, f: resign(x, OTHER_KEY), "not by the trusted")

    def wrong_signer(e: Any, x: Any, f: Files) -> None:
        x["signer"]["address"] = signing.address_of(OTHER_KEY)

    yield case("a wrong signer named", wrong_signer, "names signer")
    if other is not None:

        def another(e: Any, x: Any, f: Files) -> None:
            o = _anchor(other)
            for k in ("root", "commit", "signed", "signer", "chain", "folder"):
                x[k] = copy.deepcopy(o[k])

        yield case("the proof of another snapshot", another, "")

    def kind(e: Any, x: Any, f: Files) -> None:
        x["files"][0]["kind"] = "exec" if x["files"][0]["kind"] == "file" else "file"

    yield case("a wrong kind", kind, "is not in the skill folder")

    def traversal(e: Any, x: Any, f: Files) -> None:
        x["files"][0]["path"] = pre + "../../etc/passwd"

    yield case("a path traversal", traversal, "not a path in a skill")

    def duplicate(e: Any, x: Any, f: Files) -> None:
        x["files"].insert(0, copy.deepcopy(x["files"][0]))
        e["resources"].insert(0, copy.deepcopy(e["resources"][0]))

    yield case("a duplicate path", duplicate, "twice")

    def non_hex(e: Any, x: Any, f: Files) -> None:
        x["files"][0]["content"] = x["files"][0]["content"].upper()

    yield case("non-hex (upper-case) content", non_hex, "lower-case hex")

    step = next(
        (
            (g, j)
            for g in a["files"]
            for j, st in enumerate(g["steps"][: g["path"].count("/") + 1 - pre.count("/")])
            if st["index"] == 0 and st["count"] % 2 and st["count"] > 1
        ),
        None,
    )
    if step is not None:  # at index 0 of an odd count, count + 1 walks to the same digest: only the count check sees it

        def count(e: Any, x: Any, f: Files) -> None:
            g = next(g for g in x["files"] if g["path"] == step[0]["path"])
            g["steps"][step[1]]["count"] += 1

        yield case("a step's count raised by one (its walk unchanged)", count, "index or count is not its place")
    if a["versions"] == "skill-md" and not a["prefix"]:  # the counter is in its SKILL.md (absent: 0)

        def version(e: Any, x: Any, f: Files) -> None:
            x["version"] += 1

        yield case("a version its SKILL.md's counter contradicts", version, "not the anchor's")
    if a["versions"] == "store" and (an.counter_of(as_json(files["SKILL.md"].decode())) or 0) != a["version"]:
        relabel = "a store entry relabelled skill-md, its SKILL.md's metadata.version the author's"
        yield case(relabel, lambda e, x, f: x.__setitem__("versions", "skill-md"), "not the anchor's")

    def no_versions(e: Any, x: Any, f: Files) -> None:
        del x["versions"]

    yield case("no versions member", no_versions, "its members are")
    yield case(
        "an unknown versions value",
        lambda e, x, f: x.__setitem__("versions", "frontmatter"),
        "not 'skill-md' or 'store'",
    )

    def frontmatter(key: str, value: Any) -> Callable[[Any, Any, Files], None]:
        return lambda e, x, f: e["frontmatter"].__setitem__(key, value)

    yield case("the frontmatter name of another skill", frontmatter("name", "zz-other"), "does not name the skill")
    yield case(
        "a frontmatter description not SKILL.md's",
        frontmatter("description", "Harmless."),
        "frontmatter is not file 'SKILL.md''s",
    )
    yield case(
        "a frontmatter field added (allowed-tools)",
        frontmatter("allowed-tools", "Read"),
        "frontmatter is not file 'SKILL.md''s",
    )
    if a["signer"] is not None:

        def checksummed(e: Any, x: Any, f: Files) -> None:
            x["signer"]["address"] = "0x" + x["signer"]["address"][2:].upper()  # any case but the recovered one

        yield case("a signer address not in lower case", checksummed, "names signer")
    for rel in rels:  # a sub-folder holding a SKILL.md that is not a nested skill: cut an anchor from it
        sub = rel[: -len("/SKILL.md")]
        if (
            rel.endswith("/SKILL.md")
            and an.is_skill_name(sub.rsplit("/", 1)[-1])
            and as_json(files[rel].decode()).get("name") != sub.rsplit("/", 1)[-1]
        ):

            def carve(e: Any, x: Any, f: Files, sub: str = sub) -> None:
                keep = [i for i, g in enumerate(x["files"]) if g["path"].startswith(f"{pre}{sub}/")]
                x["prefix"], x["files"] = pre + sub, [x["files"][i] for i in keep]
                e["resources"], e["uri"] = [e["resources"][i] for i in keep], an.skill_uri(x["skill"], pre + sub)
                e["frontmatter"] = dict(as_json(f[f"{sub}/SKILL.md"].decode()), name=sub.rsplit("/", 1)[-1])
                kept = {k[len(sub) + 1 :]: v for k, v in f.items() if k.startswith(f"{sub}/")}
                f.clear()
                f.update(kept)

            cut = case(
                f"an anchor cut from {sub}/, whose SKILL.md is not a skill of that name",
                carve,
                f"'{pre}{sub}/SKILL.md' names the skill",
            )
            yield cut
            yield (cut[0] + " (the anchor alone)", _anchor(cut[1]), *cut[2:])

    def oversize(e: Any, x: Any, f: Files) -> None:
        x["files"] = [{**x["files"][0], "path": f"{pre}f{i:04}", "steps": []} for i in range(an.MAX_FILES + 1)]

    yield case("oversize: more files than a skill may hold", oversize, "files are not a list of 1 to")


def write_vector() -> None:  # pragma: no cover - run by hand: python -m tests.harness.anchor_cases
    """Make a small signed brain and write tests/vectors/anchor/vector.json from its entries."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LEDGER_KEYS"] = f"{tmp}/keys"
        from ledger.brain import Brain
        from ledger.publish.entries import Entries

        def verdict(refusal: str | None, bound: bool) -> dict[str, Any]:
            return {"ok": True, "version_bound": bound} if refusal is None else {"ok": False, "refusal": refusal}

        with Brain.init(Path(tmp) / "store", versions="store") as store:  # the author's metadata.version is not 2
            store.create("notes", "Take notes", "v1\n")
            store.edit("notes", "---\nname: notes\ndescription: Take notes\nmetadata:\n  version: '7'\n---\nv2\n")
            kept = Entries(store)
            stored = kept.get("skill://notes/SKILL.md")
            stored_files = files_of(kept, stored)
        with Brain.init(Path(tmp) / "brain") as brain:
            brain.create("pdf-tools", "Work with PDF files", "# PDF tools\n\nRun scripts/extract.py.\n")
            brain.write_file(
                "pdf-tools", "scripts/extract.py", b"#!/usr/bin/env python3\nprint('pdf')\n", executable=True
            )
            brain.write_file("pdf-tools", "references/forms/FORMS.md", b"# Forms\r\nbinary \x00\xff end\n")
            brain.write_file(
                "pdf-tools",
                "examples/sample/SKILL.md",
                b"---\nname: a-sample\ndescription: An example; not a skill.\n---\nSample.\n",
            )
            brain.write_file(
                "pdf-tools",
                "forms/SKILL.md",
                b"---\nname: forms\ndescription: Fill PDF forms\ndate: 2024-01-15\n---\nFill them.\n",
            )
            entries = Entries(brain)
            cases: list[dict[str, Any]] = []
            for entry in [*entries.list(), stored]:
                a = _anchor(entry)
                files = stored_files if entry is stored else files_of(entries, entry)
                signer = a["signer"]["address"]
                rows = [(f"valid ({a['versions']}): {entry['uri']}", entry, files, {"signer": signer}, None)]
                if not a["prefix"]:
                    rows.append((f"valid, trusting its root: {entry['uri']}", entry, files, {"root": a["root"]}, None))
                if a["versions"] == "skill-md" and not a["prefix"]:  # relabelled: its version only a claim
                    down = copy.deepcopy(entry)
                    _anchor(down)["versions"] = "store"
                    rows.append(
                        (
                            f"valid, relabelled store (its version claimed): {entry['uri']}",
                            down,
                            files,
                            {"signer": signer},
                            None,
                        )
                    )
                if not a["prefix"]:  # of the store entry, the cases about versions (the others are the same)
                    rows.extend(
                        (f"{n} ({a['versions']})", *rest)
                        for n, *rest in tampers(entry, files, signer)
                        if entry is not stored or "version" in n
                    )
                for name, e, f, trust, refusal in rows:
                    x = an.anchor_of(e)[1]
                    cases.append(
                        {
                            "name": name,
                            "entry": e,
                            "trust": trust,
                            "files": {k: base64.b64encode(v).decode() for k, v in sorted(f.items())},
                            **verdict(refusal, x.get("versions") == "skill-md" and not x["prefix"]),
                        }
                    )
    VECTOR.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "about": "docs/lineage/anchor.md §4: skill anchors, their files (base64) and the verdict a host must reach",
        "cases": cases,
    }
    VECTOR.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {VECTOR}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    write_vector()
