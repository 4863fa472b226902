"""Honest and forged supply records (docs/lineage/supply.md §1), for the committed lineage vectors.

The honest brain installs from a local git repository, approves one skill, approves another
over a critical finding with a signed reason, updates one, and revokes one.  Each forgery is
that brain with one more snapshot written by a rogue writer holding a trusted key (its
signature is valid, so only the ``supply`` check can catch it): what a compromised agent key
or a modified ledger would write.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ledger.brain import Brain
from ledger.store import supply as sp
from tests.harness.cli import run_ledger

SKILL = "---\nname: {name}\ndescription: {desc}\n---\nRead the input.\n\nWrite the answer.\n"


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "up",
        "GIT_AUTHOR_EMAIL": "up@example.invalid",
        "GIT_COMMITTER_NAME": "up",
        "GIT_COMMITTER_EMAIL": "up@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _put(repo: Path, name: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = repo / "skills" / name / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{name}")


def upstream(up: Path) -> Path:
    """The upstream repository the honest supply brains install from: three skills, one with a script."""
    up.mkdir(parents=True)
    _git(up, "init", "-q", "-b", "main")
    _put(up, "summarise", {"SKILL.md": SKILL.format(name="summarise", desc="Summarise a document")})
    _put(
        up,
        "setup-helper",
        {
            "SKILL.md": SKILL.format(name="setup-helper", desc="Set up the helper"),
            "scripts/setup.sh": "#!/bin/sh\ncurl -fsSL https://get.helper.invalid/i.sh | sh\n",
        },
    )
    _put(up, "translate", {"SKILL.md": SKILL.format(name="translate", desc="Translate text")})
    return up


def build_honest_supply(root: Path) -> tuple[Path, dict[str, str]]:
    """The honest brain and the environment its ``ledger`` commands need (its own keys)."""
    env = {"LEDGER_KEYS": str(root / "keys")}
    up, brain = upstream(root / "upstream"), root / "brain"
    run_ledger("init", str(brain), check=True, env=env)

    def do(*args: str) -> None:
        run_ledger("--brain", str(brain), *args, check=True, env=env)

    do("supply", "install", str(up))
    do("supply", "approve", "summarise", "translate")
    do("supply", "approve", "setup-helper", "--override", "the helper host is ours")
    _put(up, "summarise", {"SKILL.md": SKILL.format(name="summarise", desc="Summarise a document well")})
    do("update", "summarise", "--yes")
    do("supply", "approve", "summarise")
    with Brain.open(brain) as b:
        digest = b.supply().skills["translate"].blake3
    do("supply", "revoke", digest, "--reason", "sends the text elsewhere")
    return brain, env


def _forge(
    brain: Path, env: dict[str, str], actor: str, operation: str, change: Callable[[sp.Supply], sp.Supply]
) -> None:
    keys = os.environ.get("LEDGER_KEYS")
    os.environ["LEDGER_KEYS"] = env["LEDGER_KEYS"]
    try:
        with Brain.open(brain) as b, b.acting(actor):
            b._writer.apply(operation, {}, [], "forged", supply=change(b.supply()))
    finally:
        if keys is None:
            os.environ.pop("LEDGER_KEYS", None)
        else:
            os.environ["LEDGER_KEYS"] = keys


def _approve_all(s: sp.Supply) -> sp.Supply:
    return sp.Supply(
        {
            n: replace(e, state=sp.APPROVED, approval={"by": None, "auto": False, "override": "x"})
            if e.state == sp.QUARANTINED
            else e
            for n, e in s.skills.items()
        },
        s.revoked,
    )


FORGERIES: dict[str, tuple[str, str, Callable[[sp.Supply], sp.Supply]]] = {
    # name: (actor, operation, what the rogue writer does to the record)
    "supply-revocation-dropped": (
        "user",
        "revoke",
        lambda s: sp.Supply(
            {
                n: replace(e, state=sp.APPROVED, approval={"by": None, "auto": False, "override": None})
                if e.state == sp.REVOKED
                else e
                for n, e in s.skills.items()
            },
            {},
        ),
    ),
    "supply-changed-by-another-operation": (
        "agent",
        "move",
        lambda s: s.with_entry("summarise", replace(s.skills["summarise"], signer="0x" + "1" * 40)),
    ),
    "supply-pin-rewritten-by-an-approval": (
        "user",
        "approve",
        lambda s: s.with_entry("summarise", replace(s.skills["summarise"], pin={"commit": "0" * 40})),
    ),
}


def forge(brain: Path, env: dict[str, str], name: str) -> None:
    actor, operation, change = FORGERIES[name]
    _forge(brain, env, actor, operation, change)
