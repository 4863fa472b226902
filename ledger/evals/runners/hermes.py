"""An eval runner that runs the Hermes agent (the PyPI ``hermes-agent``) headless on one eval case.

    python -m ledger.evals.runners.hermes [--hermes PATH] [--base-url URL] [--model NAME] [--provider NAME]
                                          [--toolsets LIST] [--max-turns N] [--timeout S]

It follows the eval runner contract (docs/reference.md, "Eval runner contract"): the current directory
is ``$EVAL_INPUTS``; the task is ``$EVAL_PROMPT``; files the run produces go to ``$EVAL_OUTPUTS``;
``$EVAL_TIMING`` receives ``{"total_tokens": N, "duration_ms": MS}``; ``$EVAL_SKILL``, when set, is the
skill folder under test.  Each run gets a fresh ``HERMES_HOME`` (a temporary folder, removed after):
its ``config.yaml`` names the model, and with ``$EVAL_SKILL`` set the skill is copied into its
``skills/NAME/`` (NAME from SKILL.md's ``name:``, without the skill's ``evals/`` folder, so the agent
cannot read the expected answers), where Hermes lists it in its skill index and loads it with its own
``skill_view`` tool.  Without ``$EVAL_SKILL`` the skills folder is empty.

Hermes runs as ``hermes -z PROMPT --usage-file F --toolsets LIST`` (its one-shot mode: no banner, no
prompts, approvals bypassed).  ``total_tokens`` is the sum Hermes read from the endpoint's ``usage``
(its usage file); ``duration_ms`` is the wall time of the Hermes process.  The exit status is 0 when
Hermes completed, 1 when it failed, timed out or reported no usage (the engine records a failed run),
2 on a usage error (a missing contract variable, no ``hermes`` program).  The final answer is printed
on stdout.  No secret is taken in argv or written to the home: ``--base-url`` is for a keyless endpoint
(a local server); a hosted provider (``--provider``) takes its key from the environment variable Hermes
reads for it (e.g. ``OPENROUTER_API_KEY``), which the runner passes through.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ledger._env import child_env

NAME = re.compile(r"^name:\s*['\"]?([A-Za-z0-9][A-Za-z0-9._-]*)['\"]?\s*$", re.MULTILINE)
IGNORED = ("evals", ".git")  # never installed: the eval set (answers) and any repository metadata


class Refused(Exception):
    """A usage error: exit 2 with this message."""


def _need(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise Refused(
            f"{name} is not set: run this under `ledger eval run` (or set the eval runner contract's "
            f"variables: EVAL_PROMPT, EVAL_OUTPUTS, EVAL_TIMING)"
        )
    return value


def skill_name(folder: Path) -> str:
    """The skill's name: SKILL.md front matter's ``name:``, else the folder's name."""
    md = folder / "SKILL.md"
    if not md.is_file():
        raise Refused(f"EVAL_SKILL={folder} has no SKILL.md: it must be a skill folder")
    text = md.read_text(encoding="utf-8", errors="replace")
    front = text.split("---", 2)[1] if text.startswith("---") and text.count("---") >= 2 else ""
    found = NAME.search(front)
    return found.group(1) if found else folder.name


def make_home(root: Path, args: argparse.Namespace, skill: Path | None) -> Path:
    """A fresh Hermes home: config.yaml (model, turn limit) and, with a skill, ``skills/NAME/``."""
    home = root / "hermes-home"
    (home / "skills").mkdir(parents=True)
    model: dict[str, str] = {}
    if args.base_url:
        model = {"provider": "custom", "base_url": args.base_url}
    elif args.provider:
        model = {"provider": args.provider}
    if args.model:
        model["default"] = args.model
    lines = ["model:"] + [f"  {k}: {json.dumps(v)}" for k, v in model.items()] if model else []
    lines += ["agent:", f"  max_turns: {args.max_turns}"]
    (home / "config.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if skill is not None:
        shutil.copytree(
            skill,
            home / "skills" / skill_name(skill),
            symlinks=True,
            ignore=lambda d, names: [n for n in names if Path(d) == skill and n in IGNORED],
        )
    return home


def prompt_text(prompt: str, outputs: str) -> str:
    return (
        f"{prompt}\n\nThe files of this task are in the current directory. Save every file you produce "
        f"in {outputs} (it is also in the environment variable EVAL_OUTPUTS)."
    )


def run(args: argparse.Namespace) -> int:
    prompt, outputs, timing = _need("EVAL_PROMPT"), _need("EVAL_OUTPUTS"), _need("EVAL_TIMING")
    hermes = shutil.which(args.hermes)
    if hermes is None:
        raise Refused(
            f"no Hermes program {args.hermes!r}: install hermes-agent (pip install hermes-agent) "
            f"and pass --hermes PATH/TO/bin/hermes"
        )
    skill = Path(os.environ["EVAL_SKILL"]) if os.environ.get("EVAL_SKILL") else None
    if skill is not None and not skill.is_dir():
        raise Refused(f"EVAL_SKILL={skill} is not a folder")
    Path(outputs).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ledger-hermes-") as tmp:
        root = Path(tmp)
        home = make_home(root, args, skill)
        usage = root / "usage.json"
        env = {**child_env(), "HERMES_HOME": str(home), "EVAL_OUTPUTS": outputs}
        command = [hermes, "-z", prompt_text(prompt, outputs), "--usage-file", str(usage), "--toolsets", args.toolsets]
        if args.model and not args.base_url:
            command += ["--model", args.model] + (["--provider", args.provider] if args.provider else [])
        started = time.monotonic()
        proc = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        stop = lambda *_: _kill(proc)  # noqa: E731 (a signal handler)
        signal.signal(signal.SIGTERM, lambda *_: (stop(), sys.exit(1)))
        try:
            out, err = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, err = proc.communicate()
            _timing(timing, None, started)
            print(f"hermes runner: Hermes did not finish in {args.timeout:g} s; stopped", file=sys.stderr)
            return 1
        report = json.loads(usage.read_text()) if usage.is_file() else {}
        _timing(timing, report.get("total_tokens"), started)
    sys.stdout.write(out)
    if proc.returncode != 0 or report.get("failed") or not report.get("completed"):
        why = report.get("failure") or (out.strip() or err.strip())[-1000:] or f"exit status {proc.returncode}"
        print(f"hermes runner: Hermes failed (exit {proc.returncode}): {why}", file=sys.stderr)
        return 1
    return 0


def _timing(path: str, tokens: object, started: float) -> None:
    record = {
        "total_tokens": tokens if isinstance(tokens, int) and tokens >= 0 else None,
        "duration_ms": int((time.monotonic() - started) * 1000),
    }
    Path(path).write_text(json.dumps(record) + "\n", encoding="utf-8")


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ledger.evals.runners.hermes", description=__doc__.split("\n")[0])
    parser.add_argument("--hermes", default="hermes", help="the hermes program (default: hermes on PATH)")
    parser.add_argument("--base-url", help="a keyless OpenAI-compatible endpoint (Hermes's custom provider)")
    parser.add_argument("--model", help="the model name (default: Hermes's own default)")
    parser.add_argument("--provider", help="without --base-url: a Hermes provider name (needs --model)")
    parser.add_argument("--toolsets", default="terminal,file,skills", help="Hermes toolsets (default: %(default)s)")
    parser.add_argument("--max-turns", type=int, default=30, help="tool-calling turns at most (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds before Hermes is stopped (default: 900)")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except Refused as exc:
        print(f"hermes runner: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
