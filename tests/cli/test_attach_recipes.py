"""Every attach recipe in the README, followed verbatim, yields signed versions (issue 34, item 1).

Each recipe (Claude Code, Hermes, Codex, a generic ``mcpServers`` client) is read from the README,
its placeholder brain path replaced by a real brain, and started by the official MCP SDK client
with its default, minimal environment (``HOME``, ``PATH``, ``SHELL``, ``TERM``: no ``LEDGER_KEYS``),
as those runtimes start a stdio server.  The brain was made under ``LEDGER_KEYS`` pointing
elsewhere, so only the key directory the brain recorded can sign.  The write must come back
``signed``, by the agent key the brain trusts, and the server must have said so at start-up.
A brain whose agent key is missing refuses the write, and the server says that at start-up too.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import anyio
import pytest
import yaml

from ledger.signatures import identity
from tests.harness.cli import LEDGER, run_ledger

README = Path(__file__).resolve().parents[2] / "README.md"
RECIPES = README.parent / "docs" / "guides" / "agent-runtime.md"  # the page that holds the recipes
INSTALLED = "/home/me/brain-ledger/.venv/bin/ledger"  # the README's example of what `command -v ledger` prints
SKILL = "---\nname: review\ndescription: Review a change before it ships\n---\nRead the diff.\n"


def _recipes() -> dict[str, tuple[str, str]]:
    text = RECIPES.read_text()
    found = re.findall(r"<!-- recipe: ([\w-]+) -->\n\s*```(\w+)\n(.*?)```", text, re.S)
    return {name: (lang, re.sub(r"(?m)^  ", "", body)) for name, lang, body in found}


def _server(name: str, brain: Path) -> tuple[str, list[str], dict[str, str] | None]:
    """(command, args, env) as the runtime would read them from the recipe, for ``brain``."""
    lang, body = _recipes()[name]
    if name == "claude-code":  # the shell expands "$(command -v ledger)" where `ledger` is on PATH: the README says so
        body = body.replace('"$(command -v ledger)"', shlex.quote(LEDGER))
        words = shlex.split(body.replace('"$PWD/brain"', shlex.quote(str(brain))))
        command, *args = words[words.index("--") + 1 :]
        return command, args, None
    doc = {"yaml": yaml.safe_load, "toml": tomllib.loads, "json": json.loads}[lang](body)
    servers = doc.get("mcp_servers") or doc.get("mcpServers")
    entry = servers["brain-ledger"]
    assert entry["command"] == INSTALLED, entry  # the placeholder the README tells the reader to replace
    args = [str(brain) if a == "/home/me/brain" else a for a in entry["args"]]
    return LEDGER, args, entry.get("env")


def test_the_readme_has_the_four_recipes() -> None:
    assert sorted(_recipes()) == ["claude-code", "codex", "generic", "hermes"]


def test_each_recipe_names_ledger_by_its_absolute_path_and_says_how_to_find_it(tmp_path: Path) -> None:
    """A runtime's PATH seldom holds .venv/bin: a bare `ledger` fails to start there."""
    text = RECIPES.read_text()
    assert "`command -v ledger`" in text
    for name in sorted(_recipes()):
        command, _, _ = _server(name, tmp_path / "brain")
        assert Path(command).is_absolute(), (name, command)
    assert "-- ledger " not in text  # no bare `ledger` in a `claude mcp add` / `codex mcp add` line


def test_no_doc_names_a_command_that_is_not_installed() -> None:
    """The package installs one console script, `ledger`: no page tells a reader to run another."""
    root = README.parent
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert sorted(scripts) == ["ledger"]
    for page in [README, *sorted((root / "docs").rglob("*.md"))]:
        assert "ledger-mcp" not in page.read_text(), page


def _session(command: str, args: list[str], env: dict[str, str] | None, log: Path) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    out: dict = {}

    async def run() -> None:
        params = StdioServerParameters(command=command, args=args, env=env)
        with log.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                result = await s.call_tool("skill_manage", {"action": "create", "name": "review", "content": SKILL})
                text = result.content[0].text
                out.update(json.loads(text[text.index("{") :]))

    anyio.run(run)
    return out


@pytest.mark.parametrize("recipe", ["claude-code", "hermes", "codex", "generic"])
def test_each_recipe_signs_with_the_brains_agent_key(
    recipe: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = tmp_path / "made-with-keys"
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), env={"LEDGER_KEYS": str(keys)}, check=True)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # a runtime's PATH, without .venv/bin: the recipe names the path
    monkeypatch.delenv("LEDGER_KEYS", raising=False)  # not even in this process: the default env has none
    command, args, env = _server(recipe, brain)
    log = tmp_path / "server.err"
    result = _session(command, args, env, log)
    agent = identity.KeyDir(keys).peek("agent")
    assert result["success"] and result["signed"] is True and result["signer"] == agent, result
    assert f"signing as agent {agent}" in log.read_text(), log.read_text()
    message = subprocess.run(
        ["git", "-C", str(brain), "log", "-1", "--format=%B"], capture_output=True, text=True, check=True
    ).stdout
    assert "Ledger-Actor: agent" in message and "Ledger-Signature: 0x" in message
    audit = run_ledger("audit", str(brain), "--require-signatures")
    assert audit.returncode == 0, audit.stdout


def test_without_the_agent_key_the_server_refuses_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = tmp_path / "keys"
    brain = tmp_path / "brain"
    run_ledger("init", str(brain), env={"LEDGER_KEYS": str(keys)}, check=True)
    (keys / "agent.key").unlink()  # the runtime's key is not on this machine
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("LEDGER_KEYS", raising=False)
    command, args, env = _server("generic", brain)
    log = tmp_path / "server.err"
    before = subprocess.run(["git", "-C", str(brain), "rev-parse", "main"], capture_output=True, text=True).stdout
    result = _session(command, args, env, log)
    assert result["success"] is False and "requires every snapshot to be signed" in result["error"], result
    assert "ledger keys generate agent" in result["hint"], result
    assert "writes will be REFUSED" in log.read_text() and "there is no agent key" in log.read_text()
    after = subprocess.run(["git", "-C", str(brain), "rev-parse", "main"], capture_output=True, text=True).stdout
    assert after == before and not (brain / "skills" / "review").exists()
