"""Stress harnesses for the write path, run the way attackers and real load would.

- :func:`kill_run`: every mutating command, SIGKILLed at random delays;
- :func:`writers_run`: N writer processes × M operations on one skill (or one each), readers alongside;
- :func:`symlink_race`: a directory atomically swapped with a symlink (``renameat2``) while writes run;
- :func:`hostile_corpus`: paths, names, YAML, proofs and argv that must be refused cleanly.

``tests/reliability/test_stress.py`` runs each reduced; ``scripts/stress`` runs them at full size and
prints the figures that docs/RELIABILITY.md records.  Everything is real: the installed
``ledger`` console script, real git, real files.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.harness import procs

LEDGER = str(Path(sys.executable).with_name("ledger"))
END = "<!-- end -->"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    env["LEDGER_LOCK_TIMEOUT"] = "300"
    env.update(extra)
    return env


def run(brain: Path, *args: str | bytes, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([LEDGER, "--brain", str(brain), *args], capture_output=True, timeout=timeout, env=_env())
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    )


def _init(brain: Path, skills: list[str]) -> None:
    subprocess.run([LEDGER, "init", str(brain)], check=True, capture_output=True, env=_env())
    for name in skills:
        proc = run(brain, "skill", "create", name, "--description", f"skill {name}", "--body", f"# {name}\n{END}\n")
        assert proc.returncode == 0, proc.stderr


def _head_state(brain: Path) -> dict[str, dict[str, bytes]]:
    """HEAD's skills → {rel: blob id}, read with plain git (the harness trusts nothing of ours)."""
    out = subprocess.run(
        ["git", "-C", str(brain), "ls-tree", "-r", "--full-tree", "main", "skills/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    top = subprocess.run(
        ["git", "-C", str(brain), "ls-tree", "--name-only", "main"], capture_output=True, text=True, check=True
    ).stdout.split()
    fanned = "layout" in top  # skills/<xx>/<name>/… (ledger.store.skilltree)
    state: dict[str, dict[str, bytes]] = {}
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        parts = path.split("/", 3 if fanned else 2)
        skill, rel = parts[-2], parts[-1]
        state.setdefault(skill, {})[rel] = bytes.fromhex(meta.split()[2])
    return state


def _fill(brain: Path, tmp: Path, count: int) -> None:
    """``count`` more skills in one import: past ledger.store.skilltree.FANOUT_AT, skills/ is fanned out."""
    src = tmp / "filler"
    for i in range(count):
        (src / f"f{i:05d}").mkdir(parents=True)
        (src / f"f{i:05d}" / "SKILL.md").write_text(f"---\nname: f{i:05d}\ndescription: filler {i}\n---\n{END}\n")
    proc = run(brain, "import", str(src))
    assert proc.returncode == 0, proc.stderr


def _lineage(brain: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(brain), "rev-list", "--first-parent", "main"], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def _skill_versions(brain: Path, skill: str) -> list[int]:
    """Every version a snapshot recorded for ``skill``, oldest first (from the Ledger-Change trailers)."""
    out = subprocess.run(
        ["git", "-C", str(brain), "log", "--first-parent", "--reverse", "--format=%B%x00", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    versions = []
    for msg in out.split("\x00"):
        for line in msg.splitlines():
            parts = line.split()
            if line.startswith("Ledger-Change: ") and parts[2] == skill and parts[1] != "delete":
                versions.append(int(parts[3]))
    return versions


# --------------------------------------------------------------------------- random kills

OPS = (
    "create",
    "upsert",
    "edit",
    "patch",
    "write-file",
    "remove-file",
    "delete",
    "revert",
    "snapshot",
    "import",
    "bulk-snapshot",
    "outcome",
    "outcome-import",
)
BULK = 40  # hand-copied skills with no version counter per bulk-snapshot: the snapshot writes each SKILL.md back


def _plan(op: str, n: int, state: dict[str, dict[str, bytes]], rng: random.Random, tmp: Path, brain: Path) -> list[str]:
    """The argv of one mutating command that is valid for HEAD's state (it may still be refused)."""
    names = sorted(state)
    pick = rng.choice(names)
    doc = tmp / f"in-{n}.md"
    if op == "create":
        return ["skill", "create", f"h{n}", "--description", f"made by op {n}", "--body", f"m{n}\n{END}\n"]
    if op == "upsert":
        name = rng.choice([pick, f"u{n}"])
        doc.write_text(f"---\nname: {name}\ndescription: upsert {n}\n---\nm{n}\n{END}\n")
        return ["skill", "upsert", "--file", str(doc)]
    if op == "edit":
        doc.write_text(f"---\nname: {pick}\ndescription: edit {n}\n---\nm{n}\n{END}\n")
        return ["skill", "edit", pick, "--file", str(doc)]
    if op == "patch":
        return ["skill", "patch", pick, "--old", END, "--new", f"m{n}\n{END}"]
    if op == "write-file":
        doc.write_bytes(os.urandom(rng.choice([10, 3000, 200_000])))
        return ["skill", "write-file", pick, f"references/w{n}.bin", "--from", str(doc)]
    if op == "remove-file":
        files = [r for r in state[pick] if r != "SKILL.md"]
        if not files:
            return _plan("write-file", n, state, rng, tmp, brain)
        return ["skill", "remove-file", pick, rng.choice(files)]
    if op == "delete":
        victims = [s for s in names if s[0] in "hu"]
        return ["skill", "delete", rng.choice(victims)] if victims else _plan("create", n, state, rng, tmp, brain)
    if op == "revert":
        return ["skill", "revert", pick, "--to", "1"]
    if op == "import":  # the bulk path: every object in one pack (ledger.store.packwrite)
        src = tmp / f"import-{n}"
        for name in {pick, f"i{n}", f"i{n}b"}:
            (src / name / "references").mkdir(parents=True)
            (src / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: import {n}\n---\nm{n}\n{END}\n")
            (src / name / "references" / "r.md").write_bytes(os.urandom(rng.choice([10, 3000])).hex().encode())
        return ["import", str(src)]
    if op == "outcome":  # an outcome: the evidence log beside the bundle (ledger.brain.evidence)
        return ["outcome", "record", pick, "--task", f"k{n}", "--success" if n % 3 else "--failure"]
    if op == "outcome-import":  # many outcomes, one snapshot
        doc.write_text(
            "".join(json.dumps({"skill": pick, "task": f"k{n}-{i}", "success": i % 2 == 0}) + "\n" for i in range(300))
        )
        return ["outcome", "import", str(doc), "--actor", "agent"]
    if op == "bulk-snapshot":  # skills copied in by hand, no counter: one snapshot inserts one into each
        for k in range(BULK):
            d = brain / "skills" / f"hb{n}-{k}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "SKILL.md").write_text(f"---\nname: hb{n}-{k}\ndescription: copied {n}\n---\nm{n}\n{END}\n")
        return ["snapshot"]
    # snapshot: a hand edit first, then record it
    ref = brain / "skills" / pick / "references"
    ref.mkdir(exist_ok=True)
    (ref / f"hand-{n}.md").write_text(f"hand edit {n}\n")
    return ["snapshot"]


def kill_run(
    workdir: Path, kills: int, seed: int = 1, verify_every: int = 25, log: Any = None, fill: int = 0
) -> dict[str, Any]:
    """Run random mutating commands, SIGKILL most of them at a random delay, and check after each.

    Counted: ``acked`` (exit 0 before the kill), ``lost`` (an acked snapshot missing from main's
    lineage), ``bricked`` (a read-only command or the next write fails), ``torn`` (verify fails, or
    the working tree is neither old nor new after a write that was not a snapshot).
    """
    rng = random.Random(seed)
    brain = workdir / "brain"
    tmp = workdir / "inputs"
    tmp.mkdir(parents=True, exist_ok=True)
    _init(brain, ["k0", "k1", "k2"])
    if fill:
        _fill(brain, tmp, fill)
    stats: dict[str, Any] = {"kills": 0, "runs": 0, "acked": 0, "refused": 0, "lost": 0, "bricked": 0, "torn": 0}
    left: Counter[str] = Counter()  # what kills left behind for the next command to settle
    killed_by_op: Counter[str] = Counter()
    problems: list[str] = []
    acked: list[str] = []
    durations: dict[str, list[float]] = {op: [0.3] for op in OPS}
    n = 0
    while stats["kills"] < kills:
        n += 1
        op = rng.choice(OPS)
        argv = _plan(op, n, _head_state(brain), rng, tmp, brain)
        est = statistics.median(durations[op][-15:])
        # Most of a command's life is interpreter start-up; aim most kills at its last third,
        # where objects, the journal, the working tree and the ref are written.
        delay = est * (rng.uniform(0, 1.2) if rng.random() < 0.3 else rng.uniform(0.6, 1.1))
        if n % 4 == 0:  # every fourth command runs to its end: it measures how long each op takes here and now,
            delay = 300  # so the kills stay aimed at a command's last part on a loaded machine, where every
            # command could outlast a fixed first guess and none would ever be acknowledged (issue 46)
        start = time.monotonic()
        proc = subprocess.Popen(
            [LEDGER, "--brain", str(brain), *argv, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=delay)
            killed = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            killed = proc.returncode == -signal.SIGKILL
        except BaseException:  # the harness itself stopped (^C, a bug): the command goes with it
            procs.kill(proc)
            raise
        stats["runs"] += 1
        if killed:
            stats["kills"] += 1
            killed_by_op[op] += 1
            left["journal"] += (brain / ".ledger" / "journal.json").exists()
            left["ref lock"] += any(
                (brain / ".git" / r).exists() for r in ("refs/heads/main.lock", "refs/notes/ledger-chain.lock")
            )
            left["temp files"] += any((brain / ".ledger" / "tmp").glob("*"))
        elif proc.returncode == 0:
            durations[op].append(time.monotonic() - start)
            receipt = json.loads(out)
            if "commit" in receipt:  # else a no-op ({"changed": false}): nothing was written
                stats["acked"] += 1
                acked.append(receipt["commit"])
            else:
                stats["refused"] += 1
        else:
            stats["refused"] += 1
            text = err.decode(errors="replace")
            if "Traceback" in text or "recover" in text or "lock" in text:
                stats["bricked"] += 1
                problems.append(f"op {n} {op}: {text.strip()[-300:]}")
        status = run(brain, "status", "--json")
        if status.returncode != 0:
            stats["bricked"] += 1
            problems.append(f"after op {n} {op} (killed={killed}): status: {status.stderr.strip()[-300:]}")
            run(brain, "recover", "--move-aside")
            continue
        if not json.loads(status.stdout)["clean"]:
            if op not in ("snapshot", "bulk-snapshot"):  # a killed snapshot leaves the hand edits it was recording
                stats["torn"] += 1
                problems.append(f"after op {n} {op}: working tree neither old nor new: {status.stdout[-300:]}")
            settle = run(brain, "snapshot")
            if settle.returncode != 0:
                stats["bricked"] += 1
                problems.append(f"after op {n} {op}: snapshot to settle failed: {settle.stderr.strip()[-300:]}")
        if n % verify_every == 0 or stats["kills"] >= kills:
            verify = run(brain, "verify")
            if verify.returncode != 0:
                stats["torn"] += 1
                problems.append(f"after op {n}: verify failed: {verify.stdout[-400:]}")
            lineage = set(_lineage(brain))
            lost = [c for c in acked if c not in lineage]
            stats["lost"] = len(lost)
            if log:
                log(
                    f"kills {stats['kills']}/{kills}  acked {stats['acked']}  lost {stats['lost']}  "
                    f"bricked {stats['bricked']}  torn {stats['torn']}"
                )
    stats["killed_by_op"] = dict(sorted(killed_by_op.items()))
    stats["kills_that_left"] = dict(left)
    stats["snapshots"] = len(_lineage(brain))
    stats["problems"] = problems[:20]
    return stats


# --------------------------------------------------------------------------- concurrent writers


def run_together(writer: Any, writers: int, reader: Any, readers: int, done: threading.Event) -> float:
    """``writers`` writer threads and ``readers`` reader threads; readers stop once every writer is done.
    Returns the seconds it took."""
    started = time.monotonic()
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    watchers = [threading.Thread(target=reader, args=(r,)) for r in range(readers)]
    for t in threads + watchers:
        t.start()
    for t in threads:
        t.join()
    done.set()
    for t in watchers:
        t.join()
    return time.monotonic() - started


def writers_run(
    workdir: Path, writers: int, ops: int, kind: str, *, same_skill: bool = True, readers: int = 2
) -> dict[str, Any]:
    """``writers`` processes × ``ops`` CLI writes of ``kind`` (patch | write-file), readers alongside."""
    brain = workdir / "brain"
    skills = ["shared"] if same_skill else [f"own{w}" for w in range(writers)]
    _init(brain, skills)
    src = workdir / "src"
    src.mkdir(exist_ok=True)
    results: list[tuple[str, str, int, dict[str, Any] | None, str]] = []  # (skill, marker, rc, receipt, err)
    lock = threading.Lock()
    done = threading.Event()

    def writer(w: int) -> None:
        skill = skills[0] if same_skill else skills[w]
        for i in range(ops):
            marker = f"w{w}-{i}"
            if kind == "patch":
                proc = run(brain, "skill", "patch", skill, "--old", END, "--new", f"{marker}\n{END}", "--json")
            else:
                f = src / f"{marker}.md"
                f.write_text(f"{marker}\n")
                proc = run(brain, "skill", "write-file", skill, f"references/{marker}.md", "--from", str(f), "--json")
            receipt = json.loads(proc.stdout) if proc.returncode == 0 else None
            with lock:
                results.append((skill, marker, proc.returncode, receipt, proc.stderr[-300:]))

    reader_runs, reader_failures = Counter(), []

    def reader(r: int) -> None:
        cmds = [["skill", "view", skills[0]], ["skill", "list"], ["status"], ["index"], ["log", "-n", "3"]]
        i = r
        while not done.is_set():
            cmd = cmds[i % len(cmds)]
            proc = run(brain, *cmd)
            with lock:
                reader_runs[cmd[0]] += 1
                if proc.returncode != 0:
                    reader_failures.append(f"{' '.join(cmd)}: {proc.stderr.strip()[-200:]}")
            i += 1

    elapsed = run_together(writer, writers, reader, readers, done)
    state = _head_state(brain)
    lost = []
    for skill, marker, rc, _, _ in results:
        if rc != 0:
            continue
        if kind == "patch":
            text = subprocess.run(
                ["git", "-C", str(brain), "show", f"main:skills/{skill}/SKILL.md"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            present = f"{marker}\n" in text
        else:
            present = f"references/{marker}.md" in state.get(skill, {})
        if not present:
            lost.append(marker)
    versions_ok = True
    duplicates = 0
    for skill in skills:
        acked_versions = [r["version"] for s, _, rc, r, _ in results if rc == 0 and s == skill and r]
        duplicates += len(acked_versions) - len(set(acked_versions))
        recorded = _skill_versions(brain, skill)
        versions_ok = versions_ok and recorded == list(range(1, len(recorded) + 1))
    verify = run(brain, "verify")
    return {
        "writers": writers,
        "ops": ops,
        "kind": kind,
        "same_skill": same_skill,
        "acked": sum(1 for r in results if r[2] == 0),
        "failed": [f"{r[1]}: {r[4]}" for r in results if r[2] != 0][:10],
        "lost": len(lost),
        "duplicate_versions": duplicates,
        "versions_contiguous": versions_ok,
        "verify_ok": verify.returncode == 0,
        "reader_runs": sum(reader_runs.values()),
        "reader_failures": reader_failures[:10],
        "seconds": round(elapsed, 1),
    }


# --------------------------------------------------------------------------- symlink swap race

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
    """Atomically swap two paths (``renameat2(RENAME_EXCHANGE)``): no moment where neither exists."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


_SWAPPER = """
import ctypes, os, random, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = (os.fsencode(p) for p in sys.argv[1:4])
rng = random.Random(int(sys.argv[4]))
swaps = 0
lost = 0
while not os.path.exists(stop):
    if libc.renameat2(-100, a, -100, b, 2) == 0:
        swaps += 1
        time.sleep(rng.uniform(0, 0.002))  # the subject: how long the swapped paths stay swapped
        for _ in range(10000):  # swap back; the writer may have removed the link meanwhile
            if libc.renameat2(-100, a, -100, b, 2) == 0:
                break
            time.sleep(0.0001)
        else:
            lost += 1
            break
    time.sleep(rng.uniform(0, 0.002))  # the subject: a random pace between swaps
print(swaps, lost)
"""


def _checksum(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    count = 0
    for p in sorted(path.rglob("*")):
        count += 1
        h.update(p.relative_to(path).as_posix().encode() + b"\0")
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest(), count


def symlink_race(workdir: Path, attempts: int, seed: int = 1) -> dict[str, Any]:
    """Writes into ``references/x/`` while a swapper atomically exchanges ``x`` with a symlink to a sentinel.

    The sentinel directory lies outside the brain; its checksum (names and bytes) must not change.
    """
    from ledger.brain import Brain
    from ledger.errors import LedgerError

    brain_dir = workdir / "brain"
    _init(brain_dir, ["victim"])
    sentinel = workdir / "sentinel"
    (sentinel / "deep").mkdir(parents=True)
    (sentinel / "keep.txt").write_text("outside the brain\n")
    (sentinel / "deep" / "keep.md").write_text("also outside\n")
    before = _checksum(sentinel)
    target = brain_dir / "skills" / "victim" / "references" / "x"
    with Brain.open(brain_dir) as brain:
        brain.write_file("victim", "references/x/seed.md", b"seed\n")
    link = workdir / "swap-link"
    os.symlink(sentinel, link)
    stop = workdir / "stop"
    swapper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(target), str(link), str(stop), str(seed)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    outcomes: Counter[str] = Counter()
    try:
        with Brain.open(brain_dir) as brain:
            for i in range(attempts):
                try:
                    brain.write_file("victim", f"references/x/f{i}.md", f"attempt {i}\n".encode())
                    outcomes["written"] += 1
                except LedgerError as exc:
                    outcomes["refused: " + exc.message.split(":")[0][:60].split(" is ")[-1]] += 1
    finally:
        stop.touch()
        try:
            report = swapper.communicate(timeout=60)[0]
        finally:
            procs.kill(swapper)  # a no-op once it has exited; else it would go on swapping a folder of ours
        swaps, stuck = (int(x) for x in report.split())
    after = _checksum(sentinel)
    status = run(brain_dir, "status", "--json")
    return {
        "attempts": attempts,
        "swaps": swaps,
        "swap_back_failed": stuck,
        "outcomes": dict(outcomes),
        "sentinel_unchanged": after == before,
        "sentinel_entries": after[1],
        "outside_writes": 0 if after == before else abs(after[1] - before[1]) or 1,
        "status_ok": status.returncode == 0,
    }


# --------------------------------------------------------------------------- hostile input

DEEP_YAML = "---\nname: x\ndescription: " + "[" * 40_000 + "\n---\n"


def hostile_corpus(workdir: Path) -> dict[str, Any]:
    """Feed the CLI hostile paths, names, YAML, proofs and argv; each must be refused with nothing changed."""
    from tests.harness.brains import fingerprint

    brain = workdir / "brain"
    _init(brain, ["s"])
    good = run(brain, "proof", "make", "s/SKILL.md")
    root = json.loads(good.stdout)["root"]
    inputs = workdir / "hostile"
    inputs.mkdir()

    def f(name: str, data: bytes | str) -> str:
        p = inputs / name
        p.write_bytes(data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data)
        return str(p)

    yaml_cases = {
        "deep-flow": DEEP_YAML,
        "deep-block": "---\nname: x\ndescription: d\nmetadata:\n"
        + "".join("  " * i + f"k{i}:\n" for i in range(1, 200))
        + "---\n",
        "deep-dash": "---\nname: x\ndescription: " + "- " * 30_000 + "x\n---\n",
        "alias": "---\nname: x\ndescription: &a d\nlicense: *a\n---\n",
        "laughs": "---\nname: x\ndescription: d\nmetadata: {a: &a [x,x], b: &b [*a,*a], c: [*b,*b]}\n---\n",
        "complex-key": "---\n? [a]\n: b\nname: x\ndescription: d\n---\n",
        "dup-key": "---\nname: x\nname: y\ndescription: d\n---\n",
        "not-mapping": "---\n- a\n- b\n---\n",
        "tag": "---\nname: !!python/object:os.system x\ndescription: d\n---\n",
        "unterminated": "---\nname: x\ndescription: 'd\n---\n",
        "binary": b"---\nname: x\ndescription: \x00\xff\n---\n",
        "huge": "---\nname: x\ndescription: d\n---\n" + "a" * 5_000_000,
    }
    cases: list[tuple[str, list[str | bytes]]] = []
    for label, text in yaml_cases.items():
        cases.append((f"yaml {label}", ["skill", "upsert", "--file", f(f"{label}.md", text), "--name", "x"]))
        cases.append((f"yaml {label} (edit)", ["skill", "edit", "s", "--file", f(f"{label}-e.md", text)]))
    payload = f("payload.bin", b"data")
    for rel in [
        "../escape",
        "/etc/passwd",
        "references/../../x",
        "references//x",
        "references/./x",
        ".git/x",
        "references/con",
        "references/aux.md",
        "references/x.",
        "references/x ",
        "references/.git/config",
        "references/.GiT/hooks/x",
        "references/git~1",
        "references/\x1b]0;pwn\x07",
        "references/a\nb",
        "references/" + "d/" * 2000 + "f",
        "references/" + "n" * 256,
        "SKILL.md",
        "references/a\\b",
        "references/C:x",
        "references/a\udcff",
    ]:
        cases.append((f"path {rel[:40]!r}", ["skill", "write-file", "s", rel, "--from", payload]))
    for name in ["con", "NUL", "Com1", "x" * 65, "-x", "x--y", "café", "a/b", "..", "", "\x1b[31m", "a b"]:
        cases.append((f"name {name[:20]!r}", ["skill", "create", name, "--description", "d"]))
    cases += [
        ("argv non-utf8 name", ["skill", "create", b"\xff\xfe", "--description", "d"]),
        ("argv non-utf8 text", ["skill", "patch", "s", "--old", b"\xc3\x28", "--new", "y"]),
        ("argv huge", ["skill", "patch", "s", "--old", "z" * 100_000, "--new", "y"]),
        ("from /dev/zero", ["skill", "write-file", "s", "references/z", "--from", "/dev/zero"]),
        ("file /dev/zero", ["skill", "upsert", "--file", "/dev/zero"]),
        ("from fifo-like dir", ["skill", "write-file", "s", "references/z", "--from", str(inputs)]),
        ("prove dir", ["proof", "make", "s"]),
        ("prove missing", ["proof", "make", "s/nope.md"]),
        ("prove traversal", ["proof", "make", "../../etc/passwd"]),
        ("show bad", ["skill", "show", "s@x"]),
        ("revert missing", ["skill", "revert", "s", "--to", "99"]),
    ]
    proof_cases = {
        "deep": "[" * 200_000,
        "binary": b"\xff\xfe\x00",
        "dir-kind": json.dumps({**json.loads(good.stdout), "kind": "dir"}),
        "bignum": json.dumps({**json.loads(good.stdout), "steps": [{"index": 10**400, "count": 1, "siblings": []}]}),
        "neg": json.dumps({**json.loads(good.stdout), "steps": [{"index": -1, "count": 1, "siblings": []}]}),
        "long-path": json.dumps({**json.loads(good.stdout), "steps": [], "path": "a/" * 10_000 + "b"}),
        "wrong-types": json.dumps({"format": 5, "root": [], "path": {}, "kind": None, "content": 1, "steps": "x"}),
        "null": "null",
        "huge": "[" + "1," * 10_000_000 + "1]",
    }
    for label, text in proof_cases.items():
        cases.append((f"proof {label}", ["proof", "check", f(f"proof-{label}.json", text), "--root", root]))
    before = fingerprint(brain)
    failures = []
    for label, argv in cases:
        proc = subprocess.run([LEDGER, "--brain", str(brain), *argv], capture_output=True, timeout=120, env=_env())
        err = proc.stderr.decode(errors="replace")
        # ledger's own refusal, or a usage error from click (exit 2, told in click's words, not matched here)
        clean = (err.startswith("error:") or (proc.returncode == 2 and err.strip() != "")) and "Traceback" not in err
        if proc.returncode not in (1, 2) or not clean:
            failures.append(f"{label}: exit {proc.returncode}: {err.strip()[-200:]}")
    changed = fingerprint(brain) != before
    verify = run(brain, "verify")
    return {
        "cases": len(cases),
        "failures": failures,
        "brain_changed": changed,
        "verify_ok": verify.returncode == 0,
    }


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description="Full-size reliability harnesses (see docs/RELIABILITY.md)")
    ap.add_argument(
        "harness",
        choices=["kills", "writers", "mixed", "symlinks", "hostile", "sync", "sync-watch", "edge", "fleet", "all"],
    )
    ap.add_argument("--mcp", type=int, default=2, help="edge: MCP writers beside --writers CLI writers")
    ap.add_argument("--kills", type=int, default=1000)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--ops", type=int, default=25)
    ap.add_argument("--attempts", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fill", type=int, default=0, help="kills: import this many more skills first (1100: fanned out)")
    ap.add_argument("--machines", type=int, default=8, help="fleet: machines (each with --writers writers x --ops)")
    args = ap.parse_args(argv)
    if args.harness == "fleet":  # its own anvil and temporary tree; not part of 'all' (about a quarter hour)
        from tests.harness.fleet import main as fleet_main

        ops = args.ops if args.ops != 25 else 100
        writers = args.writers if args.writers != 8 else 4
        return fleet_main(
            [
                "--machines",
                str(args.machines),
                "--writers",
                str(writers),
                "--writes",
                str(ops),
                "--seed",
                str(args.seed),
            ]
        )
    out: dict[str, Any] = {}
    todo = (
        ["hostile", "symlinks", "writers", "mixed", "kills", "sync", "sync-watch", "edge"]
        if args.harness == "all"
        else [args.harness]
    )
    for name in todo:
        with tempfile.TemporaryDirectory(prefix=f"ledger-stress-{name}-") as d:
            work = Path(d)
            t0 = time.monotonic()
            if name == "kills":
                res: Any = kill_run(
                    work, args.kills, args.seed, log=lambda m: print(m, file=sys.stderr), fill=args.fill
                )
            elif name == "writers":
                res = {}
                for kind in ("patch", "write-file"):
                    for same in (True, False):
                        sub = work / f"{kind}-{same}"
                        sub.mkdir()
                        res[f"{kind} {'same skill' if same else 'own skills'}"] = writers_run(
                            sub, args.writers, args.ops, kind, same_skill=same
                        )
            elif name == "mixed":
                from tests.harness.mixed import mixed_run

                ops = args.ops if args.ops != 25 else 50  # the mixed harness's full size is 8 x 50
                res = mixed_run(work, args.writers, ops, args.seed)
            elif name in ("sync", "sync-watch"):
                from tests.harness.synckills import sync_kill_run

                res = sync_kill_run(
                    work,
                    args.kills if args.kills != 1000 else 200,
                    args.seed,
                    watch=name == "sync-watch",
                    log=lambda m: print(m, file=sys.stderr),
                )
            elif name == "edge":  # N CLI + M MCP writers on one linked skill, a sync loop, a runtime editor
                from tests.harness.edgeraces import edge_run

                writers = args.writers if args.writers != 8 else 6
                res = edge_run(work, writers, args.mcp, args.ops, args.seed)
            elif name == "symlinks":
                res = symlink_race(work, args.attempts, args.seed)
            else:
                res = hostile_corpus(work)
            out[name] = res
            print(json.dumps({name: res, "seconds": round(time.monotonic() - t0, 1)}, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
