"""The kill harness for ``ledger sync`` and ``ledger sync --watch`` (issue 22).

A brain is linked to two targets.  Each round, while a sync (or a watcher) runs and is
SIGKILLed at a random delay:

- the **ledger** writes ``l*`` skills through the API, each version changing SKILL.md and
  ``references/token.md`` to the same token (acknowledged when the call returns);
- a **runtime** appends lines to ``t*`` skills in one target, as Hermes writes: a temporary
  file in the skill's folder, then ``os.replace`` (acknowledged when the replace returns).

After every kill, each target must hold every ``l*`` skill whole (both files with one
token: a ``torn`` skill otherwise) and every acknowledged runtime line (``lost``
otherwise, unless kept in ``.ledger-rescued/``: ``rescued``); read-only commands must
work (``bricked``).  At the end a clean sync must carry every acknowledged ledger token to
both targets and every acknowledged line into the ledger, and ``verify`` must pass.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.harness import procs
from tests.harness.brains import skill_md
from tests.harness.stress import LEDGER, _env, run

L_SKILLS = ("l0", "l1", "l2")
T_SKILLS = {"t0": "a", "t1": "a", "t2": "b", "t3": "b"}  # each runtime skill is edited in one target only


def _md(name: str, token: str) -> str:
    return skill_md(name, f"Skill {name}.", f"# {name}\n\nToken {token}; see references/token.md.\n")


def _work(brain: Path, target: str) -> Path:
    """A target's work folder: staged and rescued copies, out of the runtime's sight."""
    return brain / ".ledger/sync/work" / target


def _setup(work: Path) -> tuple[Path, dict[str, Path]]:
    from ledger.brain import Brain

    brain = work / "brain"
    subprocess.run([LEDGER, "init", str(brain)], check=True, capture_output=True, env=_env())
    with Brain.open(brain) as b:
        for name in (*L_SKILLS, *T_SKILLS):
            b.upsert(_md(name, "0"), name=name)
            b.write_file(name, "references/token.md", b"0\n")
    targets = {"a": work / "a", "b": work / "b"}
    for name, path in targets.items():
        assert run(brain, "target", "add", str(path), "--name", name).returncode == 0
    first = run(brain, "sync")
    assert first.returncode == 0, first.stderr
    return brain, targets


def _ledger_write(brain: Path, name: str, token: str) -> None:
    from ledger.brain import Brain

    with Brain.open(brain) as b:
        b.rewrite(
            name, lambda files: {"SKILL.md": _md(name, token).encode(), "references/token.md": f"{token}\n".encode()}
        )


def _runtime_edit(skill_dir: Path, line: str) -> bool:
    md = skill_dir / "SKILL.md"
    try:
        text = md.read_text()
    except OSError:
        return False  # between an exchange's two renames (never with renameat2): try again later
    tmp = skill_dir / f".{line}.tmp"
    try:
        tmp.write_text(text + line + "\n")
        os.replace(tmp, md)
    except OSError:
        return False
    return True


def _check_targets(
    brain: Path, targets: dict[str, Path], acked_lines: dict[str, list[str]], stats: dict[str, Any], problems: list[str]
) -> None:
    for tname, root in targets.items():
        for name in L_SKILLS:
            try:
                md = (root / name / "SKILL.md").read_text()
                token = (root / name / "references/token.md").read_text().strip()
            except OSError as exc:
                stats["torn"] += 1
                problems.append(f"{tname}/{name}: {exc}")
                continue
            if f"Token {token};" not in md:
                stats["torn"] += 1
                problems.append(f"{tname}/{name}: SKILL.md and references/token.md from different versions")
        rescued = _texts(_work(brain, tname) / ".ledger-rescued")
        pending = _texts(_work(brain, tname) / ".ledger-staging")  # displaced by a killed exchange: settled next
        for name, where in T_SKILLS.items():
            if where != tname:
                continue
            text = (root / name / "SKILL.md").read_text()
            for line in acked_lines[name]:
                if line + "\n" in text or line + "\n" in pending:
                    continue
                if line + "\n" in rescued:
                    stats["rescued_lines"].add(line)
                elif line not in stats["lost_lines"]:
                    stats["lost_lines"].add(line)
                    problems.append(f"{tname}/{name}: acknowledged line {line!r} is gone")


def _texts(folder: Path) -> str:
    """Every SKILL.md kept under ``folder`` (staged or rescued copies), as one text to search."""
    out = []
    for path in folder.glob("*/SKILL.md"):
        try:
            out.append(path.read_text())
        except OSError:
            continue
    return "".join(out)


def sync_kill_run(work: Path, kills: int, seed: int = 1, watch: bool = False, log: Any = None) -> dict[str, Any]:
    """Kill ``ledger sync`` (or ``--watch``) ``kills`` times at random delays while both sides write."""
    rng = random.Random(seed)
    brain, targets = _setup(work)
    stats: dict[str, Any] = {
        "kills": 0,
        "runs": 0,
        "completed": 0,
        "ledger_acked": 0,
        "runtime_acked": 0,
        "lost": 0,
        "torn": 0,
        "bricked": 0,
        "conflicts": 0,
        "rescued_lines": set(),
        "lost_lines": set(),
    }
    problems: list[str] = []
    acked_tokens: dict[str, str] = dict.fromkeys(L_SKILLS, "0")
    acked_lines: dict[str, list[str]] = {name: [] for name in T_SKILLS}
    durations = [0.6]
    n = 0
    while stats["kills"] < kills:
        n += 1
        argv = [LEDGER, "--brain", str(brain), "sync", "--json"] + (["--watch", "--debounce", "0.05"] if watch else [])
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), start_new_session=True
        )
        stop = threading.Event()

        def runtime(round_: int = n, stop: threading.Event = stop) -> None:
            i = 0
            while not stop.is_set():
                name = rng.choice(sorted(T_SKILLS))
                line = f"edit-{round_}-{i}"
                if _runtime_edit(targets[T_SKILLS[name]] / name, line):
                    acked_lines[name].append(line)
                    stats["runtime_acked"] += 1
                i += 1
                time.sleep(rng.uniform(0, 0.05))  # the subject: the runtime's random pace between edits

        writer = threading.Thread(target=runtime)
        writer.start()
        try:
            if rng.random() < 0.5:
                name, token = rng.choice(L_SKILLS), f"{n}"
                _ledger_write(brain, name, token)
                acked_tokens[name] = token
                stats["ledger_acked"] += 1
            # A sync's life is mostly interpreter start-up: aim most kills at its later part.
            est = statistics.median(durations[-15:])
            delay = (
                rng.uniform(0.5, 3.0)
                if watch
                else est * (rng.uniform(0.3, 1.1) if rng.random() < 0.8 else rng.uniform(0, 0.5))
            )
            began = time.monotonic()
            try:
                out, err = proc.communicate(timeout=delay)
                killed = False
                durations.append(time.monotonic() - began)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
                killed = True
        finally:
            stop.set()
            writer.join()
            procs.kill(proc)  # a round that raised leaves no sync behind (a no-op for one already reaped)
        stats["runs"] += 1
        stats["kills"] += killed
        if not killed:
            if proc.returncode != 0:
                try:  # no skill is changed on both sides here, so any conflict is a false one
                    doc = json.loads(out)
                    why = [(t["name"], c["skill"], c["files"]) for t in doc["targets"] for c in t["conflicts"]]
                    stats["conflicts"] += len(why)
                except ValueError:
                    why = [err.decode(errors="replace")[-300:]]
                    stats["bricked"] += 1
                problems.append(f"round {n}: sync exited {proc.returncode}: {why}")
            stats["completed"] += 1
        _check_targets(brain, targets, acked_lines, stats, problems)
        status = run(brain, "status", "--json")
        if status.returncode not in (0,) and "conflict" not in status.stdout:
            stats["bricked"] += 1
            problems.append(f"round {n}: status: {status.stderr.strip()[-300:]}")
        if log and n % 10 == 0:
            log(
                f"sync{' --watch' if watch else ''} kills {stats['kills']}/{kills}  lost {len(stats['lost_lines'])}  "
                f"torn {stats['torn']}  bricked {stats['bricked']}"
            )
    for _ in range(2):  # a clean sync settles everything: the second must find nothing to do
        final = run(brain, "sync", "--json")
        if final.returncode != 0:
            stats["bricked"] += 1
            problems.append(f"final sync: {final.stdout[-300:]} {final.stderr[-300:]}")
    from ledger.brain import Brain

    with Brain.open(brain) as b:
        for name, token in acked_tokens.items():
            for tname, root in targets.items():
                if (root / name / "references/token.md").read_text().strip() != token:
                    stats["lost"] += 1
                    problems.append(f"{tname}/{name}: the last acknowledged token {token} never arrived")
        for name, lines in acked_lines.items():
            text = b.committed(name)[1].text
            rescued = _texts(_work(brain, T_SKILLS[name]) / ".ledger-rescued")
            missing = [x for x in lines if x + "\n" not in text and x + "\n" not in rescued]
            stats["rescued_lines"] |= {x for x in lines if x + "\n" not in text and x + "\n" in rescued}
            stats["lost_lines"] |= set(missing)
            if missing:
                problems.append(f"ledger {name}: {len(missing)} acknowledged line(s) never recorded: {missing[:3]}")
    report = json.loads(final.stdout) if final.returncode == 0 else {"targets": []}
    stats["final_noop"] = all(not (t["recorded"] or t["projected"]) for t in report["targets"])
    verify = run(brain, "verify")
    stats["verify_ok"] = verify.returncode == 0
    if not stats["verify_ok"]:
        problems.append("verify: " + " | ".join(x for x in verify.stdout.splitlines() if not x.startswith("OK"))[-600:])
    stats["staging_left"] = sum((_work(brain, t) / ".ledger-staging").exists() for t in targets)
    stats["in_target"] = sum(
        (root / n).exists() for root in targets.values() for n in (".ledger-staging", ".ledger-rescued")
    )  # never where a runtime scans
    stats["rescued"] = len(stats.pop("rescued_lines"))  # kept in .ledger-rescued/ and reported, not recorded
    stats["lost"] += len(stats.pop("lost_lines"))
    stats["problems"] = problems[:20]
    return stats
