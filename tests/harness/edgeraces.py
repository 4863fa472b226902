"""The edge-race harness: no acknowledged write is ever lost at the edge (a synced target).

One skill ``s`` is linked into a plain folder target (agentskills layout) and synced once.
Then, all at once:

- **CLI writers** (threads, each running ``ledger skill patch`` or ``ledger skill write-file``
  one after the other): a patch puts a unique marker line before ``<!-- end -->`` in SKILL.md,
  a write-file adds ``references/<marker>.md`` holding the marker; acknowledged on exit 0;
- **MCP writers** (each its own ``ledger mcp`` server, driven by the official SDK client):
  ``skill_manage`` ``patch`` or ``write_file``, the same shapes; acknowledged on ``success``;
- a **runtime editor** edits the target's copy of ``s`` the way Hermes writes (a temporary
  file in the skill's folder, then ``os.replace``): it appends a unique line to SKILL.md (after
  ``## runtime``) or adds ``references/rt-<i>.md``; acknowledged when the replace returns;
- a **sync loop** runs ``ledger sync --json`` back to back (its exit status is counted, not
  judged: a conflict makes it exit 1).

Once the writers are done the editor and the loop stop, and ``ledger sync`` runs until it
finds nothing to do.  Judged from plain git (nothing of ours is trusted to check itself):

- every acknowledged CLI/MCP write must be in the head (``present``; ``lost`` otherwise,
  split into ``overwritten``, whose commit is in the first-parent lineage, and ``orphaned``);
- every acknowledged runtime edit must be in the head, or in the target's copy of a skill
  in conflict (``ledger status --json``), or in a rescued copy (``<target>/.ledger-rescued``
  or anything named ``rescued*`` under ``<brain>/.ledger``); ``runtime_lost`` otherwise;
- ``ledger verify`` must pass.

For each lost write the report names the first-parent commit that dropped it (``lost_examples``,
``lost_dropped_by``); every sync's report is kept in ``<workdir>/syncs.jsonl`` with the head it
started from.  ``runtime_crossed_exchange`` counts runtime writes during which the skill's folder
was exchanged, so they may rest on a stale read, as a Hermes write would.

``tests/reliability/test_edge_races.py`` runs it reduced; ``python -m tests.harness.edgeraces --cli 6 --mcp 2
--ops 10 [--mcp-ops 30] [--keep DIR]`` at any size (JSON on stdout; exit 1 on a loss).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import suppress
from pathlib import Path
from typing import Any

from tests.harness.stress import LEDGER, _env, _head_state, run

SKILL = "s"
END = "<!-- end -->"
RUNTIME = "## runtime"  # the runtime appends below this line; writers insert above END: never adjacent


# --------------------------------------------------------------------------- plain git


def _git(brain: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(brain), *args], capture_output=True, text=True, check=True).stdout


def _head_files(brain: Path) -> dict[str, bytes]:
    """The skill's files in the head (rel → bytes), read with plain git."""
    ids = _head_state(brain).get(SKILL, {})
    rels = sorted(ids)
    if not rels:
        return {}
    out = subprocess.run(
        ["git", "-C", str(brain), "cat-file", "--batch"],
        input=b"".join(ids[r].hex().encode() + b"\n" for r in rels),
        capture_output=True,
        check=True,
    ).stdout
    files: dict[str, bytes] = {}
    pos = 0
    for rel in rels:
        nl = out.index(b"\n", pos)
        size = int(out[pos:nl].split()[2])
        files[rel] = out[nl + 1 : nl + 1 + size]
        pos = nl + 1 + size + 1
    return files


def _lines(data: bytes | str | None) -> set[str]:
    if data is None:
        return set()
    return set((data.decode(errors="replace") if isinstance(data, bytes) else data).splitlines())


# --------------------------------------------------------------------------- the sides


def _setup(work: Path) -> tuple[Path, Path]:
    brain, target = work / "brain", work / "target"
    subprocess.run([LEDGER, "init", str(brain)], check=True, capture_output=True, env=_env())
    made = run(
        brain,
        "skill",
        "create",
        SKILL,
        "--description",
        "one skill, edited at the edge",
        "--body",
        f"# {SKILL}\n{END}\n{RUNTIME}\n",
    )
    assert made.returncode == 0, made.stderr
    linked = run(brain, "target", "add", str(target), "--name", "rt")
    assert linked.returncode == 0, linked.stderr
    first = run(brain, "sync")
    assert first.returncode == 0 and (target / SKILL / "SKILL.md").is_file(), first.stdout + first.stderr
    return brain, target


def _runtime_write(skill_dir: Path, kind: str, marker: str) -> tuple[bool, bool]:
    """One Hermes-style write into the target: a temporary file in the skill's folder, then ``os.replace``.
    Returns (acknowledged, crossed): ``crossed`` when the folder was another one (an exchange) by the end, so
    the write may rest on what the runtime read from the folder it replaced (a stale base, as Hermes would)."""
    tmp = skill_dir / f".{marker}.tmp"
    try:
        before = skill_dir.stat().st_ino
        if kind == "line":
            text = (skill_dir / "SKILL.md").read_text()
            tmp.write_text(text + ("" if text.endswith("\n") else "\n") + marker + "\n")
            os.replace(tmp, skill_dir / "SKILL.md")
        else:
            (skill_dir / "references").mkdir(exist_ok=True)
            tmp.write_text(marker + "\n")
            os.replace(tmp, skill_dir / "references" / f"{marker}.md")
    except OSError:  # the folder was exchanged under us: not acknowledged
        with suppress(OSError):
            tmp.unlink()
        return False, False
    try:
        return True, skill_dir.stat().st_ino != before
    except OSError:
        return True, True


class _Log:
    """Every attempt of every side, shared by the threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acks: list[dict[str, Any]] = []
        self.tried: Counter[str] = Counter()
        self.refusals: list[str] = []
        self.tracebacks = 0
        self.crossed = 0
        self.crossed_markers: set[str] = set()  # runtime writes made across an exchange (a stale read)

    def tried_one(self, who: str, kind: str, marker: str, ok: bool, commit: str | None = None, why: str = "") -> None:
        with self.lock:
            self.tried[who] += 1
            if ok:
                self.acks.append({"who": who, "kind": kind, "marker": marker, "commit": commit})
            elif who != "runtime":  # a runtime write fails only when the folder was exchanged under it
                self.refusals.append(f"{marker} ({who} {kind}): {why[-200:]}")
            self.tracebacks += "Traceback" in why


def _cli_writer(brain: Path, work: Path, w: int, ops: int, rng: random.Random, log: _Log) -> None:
    for i in range(ops):
        m = f"cli-{w}-{i}"
        if rng.random() < 0.5:
            kind, args = "line", ["skill", "patch", SKILL, "--old", END, "--new", f"{m}\n{END}", "--json"]
        else:
            src = work / f"in-{m}"
            src.write_text(f"{m}\n")
            kind, args = "file", ["skill", "write-file", SKILL, f"references/{m}.md", "--from", str(src), "--json"]
        proc = run(brain, *args)
        commit = None
        if proc.returncode == 0:
            with suppress(ValueError, AttributeError):
                commit = json.loads(proc.stdout).get("commit")
        log.tried_one("cli", kind, m, proc.returncode == 0, commit, proc.stderr)


def _mcp_writer(brain: Path, work: Path, w: int, ops: int, rng: random.Random, log: _Log) -> None:
    from tests.harness.mixed import _Mcp

    mcp = _Mcp(brain)

    async def body() -> None:
        for i in range(ops):
            m = f"mcp-{w}-{i}"
            if rng.random() < 0.5:
                kind, args = "line", {"action": "patch", "name": SKILL, "old_string": END, "new_string": f"{m}\n{END}"}
            else:
                kind, args = (
                    "file",
                    {
                        "action": "write_file",
                        "name": SKILL,
                        "file_path": f"references/{m}.md",
                        "file_content": f"{m}\n",
                    },
                )
            res = await mcp.call("skill_manage", args)
            ok = bool(res.get("success"))
            commit = (res.get("receipt") or {}).get("commit") if ok else None
            why = "" if ok else json.dumps(res)[:300] + (" Traceback" if res.get("internal") else "")
            log.tried_one("mcp", kind, m, ok, commit, why)

    try:
        asyncio.run(mcp.run(body, work / f"mcp-{w}.err"))
    except Exception as exc:  # the harness failing to drive the server counts as a traceback
        log.tried_one("mcp", "session", f"mcp-{w}", False, why=f"Traceback (harness): {exc!r}")


# --------------------------------------------------------------------------- the run


def edge_run(
    workdir: Path,
    cli_writers: int,
    mcp_writers: int,
    ops: int,
    seed: int = 1,
    *,
    mcp_ops: int | None = None,
    min_syncs: int = 3,
) -> dict[str, Any]:
    """``cli_writers`` × ``ops`` CLI writes and ``mcp_writers`` × ``mcp_ops`` (default ``ops``) MCP writes on
    one skill linked into a target, while a runtime edits the target's copy and ``ledger sync`` loops (at
    least ``min_syncs`` times, however fast the writers finish).  Every thread it starts is stopped and
    joined before it returns, on failure too."""
    workdir.mkdir(parents=True, exist_ok=True)
    brain, target = _setup(workdir)
    log = _Log()
    done, enough = threading.Event(), threading.Event()
    syncs: dict[str, Any] = {
        "runs": 0,
        "exit": Counter(),
        "recorded": 0,
        "projected": 0,
        "conflicts": 0,
        "rescued": 0,
        "tracebacks": 0,
        "unreadable": [],
    }

    def editor() -> None:
        rng = random.Random(seed * 1000 + 999)
        i = 0
        while not done.is_set():
            kind, m = rng.choice(("line", "file")), f"rt-{i}"
            i += 1
            ok, crossed = _runtime_write(target / SKILL, kind, m)
            log.tried_one("runtime", kind, m, ok)
            log.crossed += crossed
            if ok and crossed:
                log.crossed_markers.add(m)
            time.sleep(rng.uniform(0, 0.05))  # the subject: the runtime's random pace between edits

    def syncer() -> None:
        while not done.is_set():
            _sync_once(brain, syncs)
            if syncs["runs"] >= min_syncs:
                enough.set()

    threads = [
        threading.Thread(target=_cli_writer, args=(brain, workdir, w, ops, random.Random(seed * 1000 + w), log))
        for w in range(cli_writers)
    ]
    threads += [
        threading.Thread(
            target=_mcp_writer,
            args=(brain, workdir, w, ops if mcp_ops is None else mcp_ops, random.Random(seed * 1000 + 500 + w), log),
        )
        for w in range(mcp_writers)
    ]
    sides = [threading.Thread(target=editor), threading.Thread(target=syncer)]
    started = time.monotonic()
    try:
        for t in sides + threads:
            t.start()
        for t in threads:
            t.join()
        enough.wait(timeout=600)  # the race is judged only once the sync loop ran beside the writers
    finally:  # the editor and the sync loop stop, whatever happened: nothing this run started outlives it
        done.set()
        for t in sides:
            if t.ident is not None:  # started
                t.join()
    writing = time.monotonic() - started
    settle = []
    for _ in range(6):  # settle: until a sync records and projects nothing
        report = _sync_once(brain, syncs)
        settle.append(report.get("rc"))
        if report.get("quiet"):
            break
    res = _judge(brain, target, log)
    verify = run(brain, "verify")
    server_tracebacks = sum(p.read_text(errors="replace").count("Traceback") for p in workdir.glob("mcp-*.err"))
    return {
        **res,
        "verify_ok": verify.returncode == 0,
        "verify_problems": [x for x in verify.stdout.splitlines() if not x.startswith("OK")][:5],
        "cli_writers": cli_writers,
        "mcp_writers": mcp_writers,
        "ops": ops,
        "mcp_ops": ops if mcp_ops is None else mcp_ops,
        "seed": seed,
        "syncs": {**syncs, "exit": dict(syncs["exit"]), "unreadable": syncs["unreadable"][:3]},
        "settle_exits": settle,
        "settled": bool(settle) and settle[-1] == 0,
        "refusals": log.refusals[:10],
        "refused": len(log.refusals),
        "tracebacks": log.tracebacks,
        "server_tracebacks": server_tracebacks,
        "seconds": round(writing, 1),
    }


def _sync_once(brain: Path, syncs: dict[str, Any]) -> dict[str, Any]:
    head = _git(brain, "rev-parse", "--short", "main").strip()
    proc = run(brain, "sync", "--json")
    with open(brain.parent / "syncs.jsonl", "a") as fh:  # every report, with the head it started from
        fh.write(
            json.dumps(
                {
                    "head_before": head,
                    "rc": proc.returncode,
                    "stdout": proc.stdout[-4000:],
                    "stderr": proc.stderr[-1000:],
                }
            )
            + "\n"
        )
    syncs["runs"] += 1
    syncs["exit"][proc.returncode] += 1
    syncs["tracebacks"] += "Traceback" in proc.stderr
    try:
        doc = json.loads(proc.stdout)
        ts = doc["targets"]
    except (ValueError, KeyError, TypeError):
        syncs["unreadable"].append((proc.stdout + proc.stderr)[-300:])
        return {"rc": proc.returncode, "quiet": False}
    for key in ("recorded", "projected", "conflicts", "rescued"):
        syncs[key] += sum(len(t.get(key) or ()) for t in ts)
    quiet = all(not (t.get("recorded") or t.get("projected") or t.get("rescued")) for t in ts)
    return {"rc": proc.returncode, "quiet": quiet}


def _rescued_lines(brain: Path, target: Path) -> tuple[set[str], set[str]]:
    """Every line (and reference file's name) of every copy kept aside: in the target's work folder
    (``.ledger/sync/work/<target>/.ledger-rescued``), or anything named ``*rescued*`` under ``.ledger`` or in
    the target; split into copies whose note (``<copy>.json``) says a true conflict, and all others."""
    roots = [target / ".ledger-rescued"]
    with suppress(OSError):
        roots += [p for p in (brain / ".ledger").rglob("*rescued*") if p.is_dir()]
    conflict: set[str] = set()
    other: set[str] = set()
    for root in (r for r in roots if r.exists()):
        for copy in [root] if root.is_file() else root.iterdir():
            kind = None
            with suppress(OSError, ValueError, KeyError, TypeError):
                kind = json.loads(copy.with_name(copy.name + ".json").read_text())["kind"]
            into = conflict if kind == "conflict" else other
            for path in [copy] if copy.is_file() else copy.rglob("*"):
                if path.is_file() and not path.is_symlink() and not path.name.endswith(".json"):
                    with suppress(OSError):
                        into |= _lines(path.read_bytes()) | {path.name.removesuffix(".md")}
    return conflict, other


def _dropped_by(brain: Path) -> dict[tuple[str, str], str]:
    """(kind, marker) → the newest first-parent commit that removed it ("<sha> <subject>"), from plain git."""
    out: dict[tuple[str, str], str] = {}
    log = _git(
        brain, "log", "--first-parent", "-p", "--unified=0", "--format=%x01%h %s", "main", "--", f"skills/{SKILL}/"
    )
    for chunk in log.split("\x01")[1:]:
        head, _, patch = chunk.partition("\n")
        gone = None
        for line in patch.splitlines():
            if line.startswith("diff --git "):
                gone = line.rsplit("/", 1)[-1].removesuffix(".md")
            elif line == "deleted file mode 100644" and gone:
                out.setdefault(("file", gone), head)
            elif line.startswith("-") and not line.startswith("---"):
                out.setdefault(("line", line[1:]), head)
    return out


def _judge(brain: Path, target: Path, log: _Log) -> dict[str, Any]:
    files = _head_files(brain)
    md = _lines(files.get("SKILL.md"))

    def in_files(a: dict[str, Any], where: dict[str, bytes], lines: set[str]) -> bool:
        if a["kind"] == "line":
            return a["marker"] in lines
        return where.get(f"references/{a['marker']}.md") == f"{a['marker']}\n".encode()

    lineage = set(_git(brain, "rev-list", "--first-parent", "main").split())
    dropped = _dropped_by(brain)
    out: dict[str, Any] = {}
    lost_examples: list[str] = []
    culprits: Counter[str] = Counter()
    for who in ("cli", "mcp"):
        acks = [a for a in log.acks if a["who"] == who]
        lost = [a for a in acks if not in_files(a, files, md)]
        overwritten = [a for a in lost if a["commit"] in lineage]
        out[who] = {
            "tried": log.tried[who],
            "acknowledged": len(acks),
            "present": len(acks) - len(lost),
            "lost": len(lost),
            "lost_overwritten": len(overwritten),
            "lost_orphaned": len(lost) - len(overwritten),
            "lost_lines": sum(a["kind"] == "line" for a in lost),
            "lost_files": sum(a["kind"] == "file" for a in lost),
        }
        for a in lost:
            by = dropped.get((a["kind"], a["marker"]), "")
            culprits[by.split(" ")[1] if by else "?"] += 1
            lost_examples.append(
                f"{a['marker']} ({who} {a['kind']}) acknowledged in {str(a['commit'])[:12]}"
                f"{'' if a in overwritten else ' (not in the lineage)'}"
                f"{f', dropped by {by}' if by else ''}"
            )
    status = run(brain, "status", "--json")
    try:
        st = json.loads(status.stdout)
    except ValueError:
        st = {}
    conflicted = any(c.get("skill") == SKILL for c in st.get("sync_conflicts") or ())
    t_files: dict[str, bytes] = {}
    for path in (target / SKILL).rglob("*"):
        if path.is_file():
            with suppress(OSError):
                t_files[path.relative_to(target / SKILL).as_posix()] = path.read_bytes()
    t_md = _lines(t_files.get("SKILL.md"))
    rescued_conflict, rescued_other = _rescued_lines(brain, target)
    rt: Counter[str] = Counter()
    rt_lost = []
    for a in (a for a in log.acks if a["who"] == "runtime"):
        if in_files(a, files, md):
            rt["in_head"] += 1
        elif conflicted and in_files(a, t_files, t_md):
            rt["in_conflict"] += 1
        elif a["marker"] in rescued_conflict | rescued_other:
            rt["rescued"] += 1
            rt["rescued_outside_conflict"] += a["marker"] not in rescued_conflict  # target: 0
        else:
            rt["lost"] += 1
            rt["lost_in_target"] += in_files(a, t_files, t_md)  # still in the target, yet never recorded
            rt["lost_crossed"] += a["marker"] in log.crossed_markers  # written across an exchange
            rt_lost.append(f"{a['marker']} (runtime {a['kind']})")
    acked = out["cli"]["acknowledged"] + out["mcp"]["acknowledged"]
    lost_total = out["cli"]["lost"] + out["mcp"]["lost"]
    return {
        "acknowledged": acked,
        "present": acked - lost_total,
        "lost": lost_total,
        "cli": out["cli"],
        "mcp": out["mcp"],
        "lost_examples": lost_examples[:10],
        "lost_dropped_by": dict(culprits),
        "runtime_tried": log.tried["runtime"],
        "runtime_acknowledged": rt["in_head"] + rt["in_conflict"] + rt["rescued"] + rt["lost"],
        "runtime_in_head": rt["in_head"],
        "runtime_in_conflict": rt["in_conflict"],
        "runtime_rescued": rt["rescued"],
        "runtime_rescued_outside_conflict": rt["rescued_outside_conflict"],
        "runtime_lost": rt["lost"],
        "runtime_lost_still_in_target": rt["lost_in_target"],
        "runtime_lost_examples": rt_lost[:10],
        "runtime_crossed_exchange": log.crossed,
        "runtime_lost_crossed": rt["lost_crossed"],
        "conflict_left": conflicted,
        "sync_conflicts": (st.get("sync_conflicts") or [])[:3],
        "stray_tmp_in_head": sorted(r for r in files if r.endswith(".tmp"))[:5],
        "staging_left": (target / ".ledger-staging").exists(),
        "head_commit": _git(brain, "rev-parse", "--short=12", "main").strip(),
    }


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description="No acknowledged write is lost at the edge (tests/harness/edgeraces.py)")
    ap.add_argument("--cli", type=int, default=6, help="CLI writers")
    ap.add_argument("--mcp", type=int, default=2, help="MCP writers (each its own 'ledger mcp')")
    ap.add_argument("--ops", type=int, default=10, help="writes per CLI writer (and per MCP writer)")
    ap.add_argument("--mcp-ops", type=int, default=None, help="writes per MCP writer (default: --ops)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, default=None, help="run in this folder and keep it (default: a temporary one)")
    args = ap.parse_args(argv)
    if args.keep is not None:
        res = edge_run(args.keep, args.cli, args.mcp, args.ops, args.seed, mcp_ops=args.mcp_ops)
    else:
        with tempfile.TemporaryDirectory(prefix="ledger-edge-") as d:
            res = edge_run(Path(d), args.cli, args.mcp, args.ops, args.seed, mcp_ops=args.mcp_ops)
    print(json.dumps(res, indent=2))
    return 0 if (res["lost"], res["runtime_lost"], res["verify_ok"]) == (0, 0, True) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
