"""An outside review of issue 46 (items 2, 3 and 4 as merged on i46-int): attacks that got through.

Each test is a reproducer of a hole found by attacking what was built, from the issue's words; each is
marked ``xfail(strict=True)`` so the suite stays green until the hole is closed, and then must be
unmarked (all three are closed now: each passes, with added cases).  Real git, a real git daemon, the real CLI.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.brains import fingerprint
from tests.harness.cli import run_ledger
from tests.harness.wait import until
from tests.unit.supply.test_supply_sources import commit, served, skill_md

ID = {"GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@x", "GIT_COMMITTER_NAME": "x", "GIT_COMMITTER_EMAIL": "x@x"}


def _git(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=check, env={**os.environ, **ID})


def _objects(repo: Path) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
    ).stdout


@contextlib.contextmanager
def git_daemon(base: Path) -> Iterator[int]:
    """``git daemon`` serving every repository under ``base`` on a loopback port; always stopped."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--export-all",
            f"--base-path={base}",
            "--listen=127.0.0.1",
            f"--port={port}",
            "--reuseaddr",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        until(
            lambda: _git("ls-remote", f"git://127.0.0.1:{port}/private", check=False).returncode == 0,
            timeout=30,
            what="git daemon to serve",
            alive=proc,
        )
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ------------------------------------------------------------------ item 4: installs stay on the document's origin


@pytest.mark.parametrize(
    "host",
    [
        "127.1",
        "0",
        "2130706433",
        "0x7f000001",
        "127.000.000.001",
        "[::ffff:127.0.0.1]",
        "0177.0.0.1",
        "%31%32%37.0.0.1",
    ],
)
def test_a_marketplace_may_not_name_a_loopback_host_in_another_spelling(host: str, tmp_path: Path) -> None:
    """A marketplace (a third party's document) names git://<loopback>/private: a repository served on the
    installer's own machine (a dev git daemon, an internal mirror).  The issue: loopback hosts are refused."""
    private = tmp_path / "srv" / "private"
    commit(private, {"skills/secret/SKILL.md": skill_md("secret", "PRIVATE-CONTENT\n")})
    brain = tmp_path / "b"
    run_ledger("init", str(brain), check=True)
    with git_daemon(tmp_path / "srv") as port:
        src = {"source": "url", "url": f"git://{host}:{port}/private"}
        doc = {"name": "m", "owner": {"name": "o"}, "plugins": [{"name": "evil", "source": src}]}
        market = tmp_path / "market"
        commit(market, {".claude-plugin/marketplace.json": json.dumps(doc).encode(), "README.md": b"m\n"})
        before = fingerprint(brain)
        proc = run_ledger("--brain", str(brain), "supply", "install", str(market))
    assert b"PRIVATE-CONTENT" not in _objects(brain), "a loopback repository was read into the lineage"
    assert proc.returncode == 1 and "names a source on this machine" in proc.stderr, proc.stdout + proc.stderr
    assert fingerprint(brain) == before


def test_a_token_after_a_semicolon_in_the_query_never_reaches_the_record(tmp_path: Path) -> None:
    site = tmp_path / "site"
    base_dir = site / ".well-known" / "skills"
    (base_dir / "web").mkdir(parents=True)
    (base_dir / "web" / "SKILL.md").write_bytes(skill_md("web"))
    (base_dir / "index.json").write_text(
        json.dumps({"skills": [{"name": "web", "description": "d", "files": ["SKILL.md"]}]})
    )
    brain = tmp_path / "b"
    run_ledger("init", str(brain), check=True)
    with served(site) as base:
        url = f"{base}/.well-known/skills/index.json?v=2;access_token=SECRETTOKEN"
        proc = run_ledger("--brain", str(brain), "supply", "install", url)
    assert b"SECRETTOKEN" not in _objects(brain), "the token is in the signed supply record"
    assert proc.returncode == 1 and "carries credentials" in proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "url",
    [
        "127.1:private",
        "git@0x7f000001:private",
        "localhost.:private",
        "ssh://git@localhost./private",
        "https://a.localhost./private.git",
        "git://[::ffff:7f00:1]/private",
        "ssh://[::127.0.0.1]/private",
        "https://%6c%6f%63%61%6c%68%6f%73%74/x.git",
    ],
)
def test_other_spellings_of_this_machine_are_refused_in_a_marketplace_and_a_lock(url: str, tmp_path: Path) -> None:
    """git's host:path form, a trailing dot, an IPv6 spelling of an IPv4 loopback, percent-escapes (git decodes
    them): refused before anything is fetched, from a marketplace's plugin and from a lock's line alike (one
    rule, origins.remote)."""
    from tests.unit.supply.test_supply_sources import write_lock_json

    brain = tmp_path / "b"
    run_ledger("init", str(brain), check=True)
    before = fingerprint(brain)
    doc = {"name": "m", "owner": {"name": "o"}, "plugins": [{"name": "evil", "source": {"source": "url", "url": url}}]}
    market = tmp_path / "market"
    commit(market, {".claude-plugin/marketplace.json": json.dumps(doc).encode(), "README.md": b"m\n"})
    lock = tmp_path / "proj" / "skills-lock.json"
    lock.parent.mkdir()
    write_lock_json(lock, {"alpha": {"source": url, "sourceUrl": url, "sourceType": "git", "computedHash": "0" * 64}})
    for source in (market, lock):
        proc = run_ledger("--brain", str(brain), "supply", "install", str(source))
        assert proc.returncode == 1 and "names a source on this machine" in proc.stderr, proc.stdout + proc.stderr
    assert fingerprint(brain) == before


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("https://x.invalid/i.json?v=2;access_token=SECRETTOKEN;b=1", "https://x.invalid/i.json?v=2;b=1"),
        ("https://x.invalid/i.json?access_token=SECRETTOKEN;v=2&b=1", "https://x.invalid/i.json?v=2&b=1"),
        ("https://x.invalid/i.json?v=2&hmac=SECRETTOKEN", "https://x.invalid/i.json?v=2"),
        ("https://x.invalid/i.json?pass=SECRETTOKEN;v=%2F", "https://x.invalid/i.json?v=%2F"),
        ("https://x.invalid/i.json?v=1#x-hmac-sha256=SECRETTOKEN", "https://x.invalid/i.json?v=1"),
    ],
)
def test_credentials_are_seen_after_either_separator_and_stripped_keeping_the_rest(url: str, clean: str) -> None:
    """';' separates parameters as '&' does; 'hmac' and 'pass' name secrets.  What is kept keeps its bytes."""
    from ledger.sources import origins

    assert origins.credentials(url) and "SECRETTOKEN" not in origins.redacted(url)
    assert origins.refuse_credentials(url, "the source URL", strip=True) == clean


# ------------------------------------------------------------------ item 3: the guard audits every ref a push updates


@pytest.mark.parametrize("to", ["main~1", "main~2"])
def test_a_raw_force_push_rewinding_main_on_a_guarded_remote_is_refused(to: str, tmp_path: Path) -> None:
    """The notes and epoch refs are refused a non-fast-forward; main, the lineage itself, is not: one raw
    'git push --force' drops the newest snapshots (a later revocation among them) from every fresh clone."""
    env = {"LEDGER_KEYS": str(tmp_path / "keys")}
    a, remote = tmp_path / "a", tmp_path / "shared.git"
    run_ledger("init", str(a), env=env, check=True)
    for name in ("deploy", "later"):
        run_ledger(
            "--brain",
            str(a),
            "skill",
            "create",
            name,
            "--description",
            name.title(),
            "--body",
            "x\n",
            env=env,
            check=True,
        )
    _git("init", "-q", "--bare", str(remote))  # an existing bare repository, guarded by the ledger
    run_ledger("--brain", str(a), "remote", "guard", str(remote), env=env, check=True)
    run_ledger("--brain", str(a), "push", str(remote), env=env, check=True)
    head = _git("-C", str(a), "rev-parse", "main").stdout.strip()
    raw = _git("-C", str(a), "push", str(remote), f"+{to}:refs/heads/main", check=False)
    assert _git(f"--git-dir={remote}", "rev-parse", "main").stdout.strip() == head, "main was rewound"
    assert raw.returncode != 0 and "brain-ledger guard: refused" in raw.stderr, raw.stderr


def test_the_guard_itself_refuses_a_rewind_and_sets_git_s_own_refusal_too(tmp_path: Path) -> None:
    """Defence in depth: 'ledger remote guard' turns on receive.denyNonFastForwards, and with it turned off
    again (a hand-edited config) the hook alone still refuses the rewind, and a deletion of main."""
    env = {"LEDGER_KEYS": str(tmp_path / "keys")}
    a, remote = tmp_path / "a", tmp_path / "shared.git"
    run_ledger("init", str(a), env=env, check=True)
    run_ledger(
        "--brain", str(a), "skill", "create", "deploy", "--description", "D", "--body", "x\n", env=env, check=True
    )
    _git("init", "-q", "--bare", str(remote))
    run_ledger("--brain", str(a), "remote", "guard", str(remote), env=env, check=True)
    assert _git(f"--git-dir={remote}", "config", "receive.denyNonFastForwards").stdout.strip() == "true"
    run_ledger("--brain", str(a), "push", str(remote), env=env, check=True)
    _git(f"--git-dir={remote}", "config", "receive.denyNonFastForwards", "false")
    head = _git("-C", str(a), "rev-parse", "main").stdout.strip()
    for spec in ("+main~1:refs/heads/main", ":refs/heads/main"):
        raw = _git("-C", str(a), "push", str(remote), spec, check=False)
        assert raw.returncode != 0 and "brain-ledger guard: refused" in raw.stderr, (spec, raw.stderr)
        assert _git(f"--git-dir={remote}", "rev-parse", "main").stdout.strip() == head
