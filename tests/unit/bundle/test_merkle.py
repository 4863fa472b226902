"""Bundle hash properties on real files: determinism, sensitivity, refusals, proofs."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.bundle.merkle import (
    InclusionProof,
    hash_path,
    parse_root,
    prove,
    read_tree,
    verify_proof,
)
from ledger.errors import ProofError, TreeError

NAME = (
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_characters="/\x00", exclude_categories=("Cs", "Cn")),
        min_size=1,
        max_size=12,
    )
    .map(lambda s: unicodedata.normalize("NFC", s))
    .filter(lambda s: s not in (".", "..") and len(s.encode()) <= 255 and s.lower() != ".git")
)


@st.composite
def trees(draw: st.DrawFn) -> dict[str, tuple[bytes, bool]]:
    """Random file trees with case-fold-unique names and no file/dir clashes."""
    paths: dict[str, tuple[bytes, bool]] = {}
    for _ in range(draw(st.integers(1, 12))):
        parts = draw(st.lists(NAME, min_size=1, max_size=4))
        path = "/".join(parts)
        folded = path.casefold()
        clash = any(
            (q.casefold() + "/").startswith(folded + "/")
            or (folded + "/").startswith(q.casefold() + "/")
            or _fold_clash(q, path)
            for q in paths
        )
        if not clash:
            paths[path] = (draw(st.binary(max_size=64)), draw(st.booleans()))
    return paths


def _fold_clash(a: str, b: str) -> bool:
    pa, pb = a.split("/"), b.split("/")
    for x, y in zip(pa, pb, strict=False):
        fx, fy = unicodedata.normalize("NFC", x.casefold()), unicodedata.normalize("NFC", y.casefold())
        if x != y:
            return fx == fy
    return False


def write(root: Path, files: dict[str, tuple[bytes, bool]], order: list[str] | None = None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rel in order or list(files):
        data, exe = files[rel]
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.chmod(p, 0o755 if exe else 0o644)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(files=trees(), seed=st.integers(0, 2**32 - 1))
def test_root_independent_of_creation_order_location_and_mtime(files, seed) -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        order = list(files)
        random.Random(seed).shuffle(order)
        write(Path(a) / "x", files)
        write(Path(b) / "deeper" / "y", files, order)
        for p in (Path(b) / "deeper" / "y").rglob("*"):
            os.utime(p, (seed % 10**9, seed % 10**9), follow_symlinks=False)
        assert hash_path(Path(a) / "x") == hash_path(Path(b) / "deeper" / "y")


@SETTINGS
@given(files=trees(), data=st.data())
def test_any_one_byte_change_alters_root(files, data) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        write(root, files)
        before = hash_path(root)
        rel = data.draw(st.sampled_from(sorted(files)))
        content, exe = files[rel]
        action = data.draw(st.sampled_from(["flip", "append", "mode"] + (["truncate"] if content else [])))
        p = root / rel
        if action == "flip" and content:
            i = data.draw(st.integers(0, len(content) - 1))
            p.write_bytes(content[:i] + bytes([content[i] ^ 0x01]) + content[i + 1 :])
        elif action in ("flip", "append"):
            p.write_bytes(content + b"\x00")
        elif action == "truncate":
            p.write_bytes(content[:-1])
        else:
            os.chmod(p, 0o644 if exe else 0o755)
        assert hash_path(root) != before


@SETTINGS
@given(files=trees(), data=st.data(), new=NAME)
def test_any_path_change_alters_root(files, data, new) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        write(root, files)
        before = hash_path(root)
        rel = data.draw(st.sampled_from(sorted(files)))
        target = root / rel.rsplit("/", 1)[0] / new if "/" in rel else root / new
        if target.exists() or any(
            unicodedata.normalize("NFC", c.name.casefold()) == unicodedata.normalize("NFC", new.casefold())
            for c in target.parent.iterdir()
        ):
            return
        (root / rel).rename(target)
        assert hash_path(root) != before


@SETTINGS
@given(files=trees(), data=st.data())
def test_proofs_verify_and_fail_once_tampered(files, data) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        write(root, files)
        tree = read_tree(root)
        rel = data.draw(st.sampled_from(sorted(files)))
        proof = prove(tree, rel)
        verify_proof(proof, tree.digest, files[rel][0])
        doc = InclusionProof.from_json(proof.to_json()).to_json()
        # ``count`` is left out: like RFC 6962, a count that keeps the same left/right
        # pattern still verifies, and the claim (name, kind, content under root) stays true.
        what = data.draw(st.sampled_from(["content", "sibling", "index", "kind", "path", "root"]))
        if what == "content":
            doc["content"] = _flip_hex(doc["content"])
        elif what == "sibling":
            with_sib = [s for s in doc["steps"] if s["siblings"]]
            if not with_sib:
                return
            with_sib[0]["siblings"][0] = _flip_hex(with_sib[0]["siblings"][0])
        elif what == "index":
            step = doc["steps"][-1]
            if step["count"] < 2:
                return
            step["index"] = (step["index"] + 1) % step["count"]
        elif what == "kind":
            doc["kind"] = "exec" if doc["kind"] == "file" else "file"
        elif what == "path":
            doc["path"] = doc["path"] + "x"
        with pytest.raises(ProofError):
            target = tree.digest if what != "root" else parse_root("0x" + _flip_hex(tree.digest.hex()))
            verify_proof(InclusionProof.from_json(doc), target)


def _flip_hex(h: str) -> str:
    return ("1" if h[0] == "0" else "0") + h[1:]


# --------------------------------------------------------------------------- refusals


def test_symlink_refused(tmp_path: Path) -> None:
    (tmp_path / "t" / "a").mkdir(parents=True)
    (tmp_path / "t" / "a" / "f").write_text("x")
    (tmp_path / "t" / "a" / "link").symlink_to("f")
    with pytest.raises(TreeError, match="symbolic link"):
        hash_path(tmp_path / "t")


def test_fifo_refused(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    os.mkfifo(tmp_path / "t" / "pipe")
    with pytest.raises(TreeError, match="special file"):
        hash_path(tmp_path / "t")


def test_non_nfc_name_refused(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / unicodedata.normalize("NFD", "café")).write_text("x")
    with pytest.raises(TreeError, match="NFC"):
        hash_path(tmp_path / "t")


def test_invalid_utf8_name_refused(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    with open(os.path.join(os.fsencode(tmp_path / "t"), b"bad\xff"), "w") as fh:
        fh.write("x")
    with pytest.raises(TreeError, match="UTF-8"):
        hash_path(tmp_path / "t")


def test_case_collision_refused(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "Readme.md").write_text("a")
    (tmp_path / "t" / "README.md").write_text("b")
    with pytest.raises(TreeError, match="case-insensitive"):
        hash_path(tmp_path / "t")


def test_empty_directory_refused(tmp_path: Path) -> None:
    (tmp_path / "t" / "a" / "empty").mkdir(parents=True)
    (tmp_path / "t" / "a" / "f").write_text("x")
    with pytest.raises(TreeError, match="empty directory"):
        hash_path(tmp_path / "t")


def test_umask_does_not_matter_only_exec_bit(tmp_path: Path) -> None:
    write(tmp_path / "a", {"x/f": (b"1", False), "x/g": (b"2", True)})
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    os.chmod(tmp_path / "b" / "x" / "f", 0o600)
    os.chmod(tmp_path / "b" / "x" / "g", 0o700)
    assert hash_path(tmp_path / "a") == hash_path(tmp_path / "b")


def test_locale_does_not_matter(tmp_path: Path) -> None:
    write(tmp_path / "t", {"b": (b"", False), "B2": (b"", False), "é": (b"", False), "a": (b"", False)})
    code = f"from ledger.bundle.merkle import hash_path as h; print(h({str(tmp_path / 't')!r}).hex())"
    roots = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "LC_ALL": loc},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for loc in ("C", "C.UTF-8", "POSIX")
    }
    assert len(roots) == 1


def test_one_pass_hasher_agrees_with_tree_builder(tmp_path: Path) -> None:
    files = {f"s{i}/{'sub/' if i % 3 else ''}f{i}": (os.urandom(i % 300), i % 7 == 0) for i in range(600)}
    write(tmp_path / "t", files)
    assert hash_path(tmp_path / "t") == read_tree(tmp_path / "t").digest


def test_parse_root_rejects_garbage() -> None:
    for bad in ["", "blake3-tree-v1:abc", "sha256:" + "0" * 64, "0x" + "0" * 63, "zz" * 32]:
        with pytest.raises(ProofError):
            parse_root(bad)
    assert parse_root("0x" + "ab" * 32) == bytes.fromhex("ab" * 32)


def test_proofs_and_roots_take_only_the_canonical_hex(tmp_path: Path) -> None:
    """64 lower-case hex digits, as written: upper-case, spaced or broken hex is refused, not read."""
    from ledger.bundle.merkle import InclusionProof, parse_root
    from ledger.errors import ProofError

    good = "ab" * 32
    assert parse_root(f"blake3-tree-v1:{good}") == bytes.fromhex(good) == parse_root(f"0x{good}")
    for bad in (good.upper(), good[:32] + " " + good[32:], good[:32] + "\n" + good[32:], good[:-1]):
        with pytest.raises(ProofError):
            parse_root(f"blake3-tree-v1:{bad}")
    skills = tmp_path / "skills"
    (skills / "a").mkdir(parents=True)
    (skills / "a" / "SKILL.md").write_text("---\nname: a\ndescription: A\n---\n")
    doc = prove(read_tree(skills), "a/SKILL.md").to_json()
    InclusionProof.from_json(doc)  # as written: accepted
    text = json.dumps(doc)
    digest = next(v for v in _hex_values(doc) if len(v) == 64)
    for bad in (digest.upper(), digest[:10] + " " + digest[10:], digest[:10] + "\n" + digest[10:]):
        with pytest.raises(ProofError):
            InclusionProof.from_json(json.loads(text.replace(digest, bad.replace("\n", "\\n"))))


def _hex_values(doc: object) -> list[str]:
    if isinstance(doc, dict):
        return [v for x in doc.values() for v in _hex_values(x)]
    if isinstance(doc, list):
        return [v for x in doc for v in _hex_values(x)]
    return [doc] if isinstance(doc, str) and all(c in "0123456789abcdef" for c in doc) else []


def test_a_brain_with_no_skills_folder_hashes_to_the_empty_root(tmp_path: Path) -> None:
    """docs/bundle-hash.md §1: status, snapshot and hash agree on a brain whose skills/ is gone."""
    from tests.harness.cli import run_ledger

    brain = tmp_path / "brain"
    run_ledger("init", str(brain), check=True)
    (brain / "skills").rmdir()
    empty = json.loads((Path(__file__).parents[2] / "vectors" / "empty.json").read_text())["root"]
    for env in ({}, {"LEDGER_PURE_PYTHON": "1"}):
        got = run_ledger("hash", str(brain), env=env)
        assert got.returncode == 0 and got.stdout.strip() == empty, got.stderr
    (brain / "skills").write_text("not a folder\n")
    assert run_ledger("hash", str(brain)).returncode == 1
