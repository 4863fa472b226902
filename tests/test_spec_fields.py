"""The spec and the tool agree on every field (issue 46): what the tool writes, docs/lineage.md names.

An outsider builds a verifier from docs/lineage.md alone.  These tests read the document itself
and hold the tool to it: every role the trust set takes is in every grammar and table of roles,
and every key a real brain's supply record and outcome records hold (brains made with the CLI)
is named by the schema the document gives.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ledger.signatures.trust import ROLES
from ledger.store.messages import ACTORS

DOC = Path(__file__).resolve().parent.parent / "docs" / "lineage.md"


def section(heading: str) -> str:
    """The text of the section whose heading line starts with ``heading`` (``### 8.2``), up to the
    next heading of the same or a higher level."""
    text = DOC.read_text(encoding="utf-8")
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
    actor = next(ln for ln in section("#### 12.5.3").splitlines() if ln.startswith("| `actor`"))
    assert set(ROLES) <= set(re.findall(r"`([a-z]+)`", actor)), "§12.5.3's actor"


# ------------------------------------------------------------------ the upstream signer (§1.7)


def test_a_git_signer_is_recorded_only_for_a_good_signature(tmp_path: Path, monkeypatch) -> None:
    """A key id git reads from a bad or unverifiable OpenPGP signature is the signature packet's claim,
    which anyone can write: recorded as the signer, it passed the auto-approval policy (§1.7)."""
    import shutil
    import subprocess

    from ledger.supply.gitsource import signer_of

    gpg = shutil.which("gpg")
    assert gpg is not None, "gpg is part of the test machine (real signatures, never mocked)"
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    env = {**os.environ, "GNUPGHOME": str(home), "GIT_AUTHOR_NAME": "up", "GIT_AUTHOR_EMAIL": "up@example.invalid",
           "GIT_COMMITTER_NAME": "up", "GIT_COMMITTER_EMAIL": "up@example.invalid"}  # fmt: skip
    subprocess.run([gpg, "--batch", "--quiet", "--passphrase", "", "--quick-gen-key", "up <up@example.invalid>",
                    "ed25519", "sign"], env=env, check=True, capture_output=True)  # fmt: skip
    repo = tmp_path / "up"

    def git(*args: str, data: bytes | None = None) -> str:
        return subprocess.run(["git", *args], cwd=repo, env=env, input=data, check=True,
                              capture_output=True).stdout.decode().strip()  # fmt: skip

    repo.mkdir()
    git("init", "-q", "-b", "main")
    git("-c", "gpg.format=openpgp", "-c", "user.signingkey=up <up@example.invalid>", "commit", "-q",
        "--allow-empty", "-S", "-m", "signed")  # fmt: skip
    good = git("rev-parse", "HEAD")
    forged = git("hash-object", "-t", "commit", "-w", "--stdin",
                 data=git("cat-file", "commit", good).replace("signed", "altered").encode() + b"\n")  # fmt: skip
    monkeypatch.setenv("GNUPGHOME", str(home))
    key = signer_of(repo / ".git", good)
    assert key is not None and re.fullmatch(r"[0-9A-F]{16}", key), key
    assert signer_of(repo / ".git", forged) is None, "a bad signature's key id was recorded as the signer"
    empty = tmp_path / "no-keys"
    empty.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(empty))
    assert signer_of(repo / ".git", good) is None, "a signature this machine cannot verify named a signer"
