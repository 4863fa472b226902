"""A model-based test of the edge (Hypothesis stateful) against the real Hermes runtime.

One brain, linked to a Hermes home and a Claude-layout folder. Random short sequences mix Hermes's own
``skill_manage`` (PyPI ``hermes-agent`` in its venv, as tests/interop/test_hermes_compare.py) create, patch, write_file,
delete, and category moves (``mv``: Hermes has no move); hand edits in the Claude folder (temp file, ``os.replace``);
CLI and MCP (official SDK client → ``ledger mcp``) writes at once, some with a sync running meanwhile; syncs; and
``ledger resolve NAME --take ledger|TARGET``. Each write carries a unique token (``@t<n>@``). The model, checked from
plain git after each sync and at teardown (after syncing until quiet): an acknowledged ledger write is in the head
unless a later acknowledged write removed it on purpose (a Hermes delete of the copy holding it, a resolve taking the
other side); an acknowledged runtime write is in the head, in a kept conflict (its target's copy, listed by ``ledger
status --json``) or in a rescue copy it names; ``ledger verify`` passes; no traceback.
tests/reliability/test_edge_model.py runs it at CI size; ``python -m tests.harness.edgemodel --examples 200
[--seed N]`` prints a long run's counts (exit 1 on failure).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hseed
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test, rule

from ledger.bundle.skill import slugify
from tests.harness.mixed import _Mcp
from tests.harness.stress import LEDGER, _head_state
from tests.interop.test_sync_hermes import DRIVER

ANCHOR = {"ledger": "<!-- ledger -->", "hermes": "<!-- hermes -->", "claude": "<!-- claude -->"}
SHARED = "<!-- shared -->"  # any side may write here too: two sides at once make a conflict
START = {"alpha": "tools", "beta": "research", "gamma": "tools", "delta": "ops"}
POOL = ("echo", "fox_trot", "golf.v2", "hotel")  # Hermes creates these: names Hermes takes, keyed by their slug
CATEGORIES = ("tools", "research", "ops", "misc")
TOKEN = re.compile(r"@t\d+@")
DEBRIS = re.compile(r"\..*\.tmp\..*")  # a write in flight (Hermes's, and the hand edits')
SIDES = ("cli", "mcp", "hermes", "claude")
INDEX = st.integers(0, 11)  # Hypothesis draws indexes only: what exists varies run to run (syncs race the writes)


def _body(name: str, token: str = "") -> str:
    notes = "".join(f"\n{side} notes:\n{anchor}\n" for side, anchor in [*ANCHOR.items(), ("shared", SHARED)])
    return f"# {name}\n\nWhat {name} does{f', {token}' if token else ''}.\n{notes}"


def _anchor(side: str) -> st.SearchStrategy[str]:  # where a patch inserts its line; "" for a new file instead
    return st.sampled_from(["", ANCHOR[side], SHARED])


def _pick(keys: Iterable[str], i: int) -> str | None:
    """The ``i``-th skill, the first when ``i`` < 4 (two sides on one skill between syncs: conflicts); None if none."""
    ordered = sorted(keys)
    return (ordered[0] if i < 4 else ordered[i % len(ordered)]) if ordered else None


def _files(folder: Path | None) -> dict[str, bytes]:
    """A skill folder's files (rel → bytes), writes in flight left out."""
    out: dict[str, bytes] = {}
    for path in folder.rglob("*") if folder is not None and folder.is_dir() else ():
        if path.is_file() and not path.is_symlink() and not DEBRIS.fullmatch(path.name):
            with suppress(OSError):
                out[path.relative_to(folder).as_posix()] = path.read_bytes()
    return out


def _tokens(files: dict[str, bytes]) -> set[str]:
    return {t for data in files.values() for t in TOKEN.findall(data.decode(errors="replace"))}


def _folders(root: Path, *patterns: str) -> dict[str, Path]:
    """key → folder of each skill in a target (``*/*/SKILL.md`` in a Hermes home, ``*/SKILL.md`` in Claude's)."""
    mds = sorted(md for pattern in patterns for md in root.glob(pattern))
    return {
        slugify(md.parent.name): md.parent
        for md in mds
        if not any(p.startswith(".") for p in md.parent.relative_to(root).parts)
    }


def _head(brain: Path) -> dict[str, dict[str, bytes]]:
    """The head's skills (key → rel → bytes), read with plain git."""
    state = _head_state(brain)
    ids = sorted({i.hex() for files in state.values() for i in files.values()})
    out = subprocess.run(
        ["git", "-C", str(brain), "cat-file", "--batch"],
        input="".join(f"{i}\n" for i in ids).encode(),
        capture_output=True,
        check=True,
    ).stdout
    blobs, pos = {}, 0
    for i in ids:
        nl = out.index(b"\n", pos)
        size = int(out[pos:nl].split()[2])
        blobs[i], pos = out[nl + 1 : nl + 1 + size], nl + 2 + size
    return {skill: {rel: blobs[i.hex()] for rel, i in files.items()} for skill, files in state.items()}


class _McpServer:
    """One ``ledger mcp`` per example; the official SDK client (tests/harness/mixed.py) on a loop any thread calls."""

    def __init__(self, brain: Path, env: dict[str, str], errfile: Path) -> None:
        from mcp import StdioServerParameters

        self.client = _Mcp(brain)
        self.client.params = StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env=env)
        self.loop, self.ready = asyncio.new_event_loop(), concurrent.futures.Future[None]()
        session = self.client.run(self._serve, errfile)  # a server that cannot start: the thread prints why
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(session,), daemon=True)
        self.thread.start()
        self.ready.result(timeout=120)

    async def _serve(self) -> None:
        self.stop = asyncio.Event()
        self.ready.set_result(None)
        await self.stop.wait()

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return asyncio.run_coroutine_threadsafe(self.client.call(tool, args), self.loop).result(timeout=300)
        except Exception as exc:
            return {"success": False, "error": f"Traceback (harness): {exc!r}"}

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(60)
        if not self.thread.is_alive():
            self.loop.close()


STATS: Counter[str] = Counter()  # run() resets these, and SETUP: Hypothesis builds the machine with no arguments
FAILURES: list[dict[str, Any]] = []
SETUP: dict[str, Path] = {}  # "python": the Hermes venv's, "keys": $LEDGER_KEYS


class EdgeModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.work = Path(tempfile.mkdtemp(prefix="edgemodel-"))
        self.brain, self.home, self.claude = self.work / "brain", self.work / "hermes", self.work / "claude"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("LEDGER_", "HERMES_"))}
        self.env.update(
            HOME=str(self.work / "home"),
            LEDGER_KEYS=str(SETUP["keys"]),
            LEDGER_LOCK_TIMEOUT="300",
            HERMES_HOME=str(self.home),
        )
        self.lock = threading.Lock()
        self.acks: list[tuple[str, str, str, int]] = []  # (token, side: cli|mcp|hermes|claude, the skill's key, step)
        self.excused: dict[str, str] = {}  # token → the acknowledged write that removed it on purpose
        self.log: list[str] = []
        self.step, self.counter = 0, itertools.count(1)
        self.mcp: _McpServer | None = None
        self.managed: set[str] = set()  # the Hermes home's skills at the last sync (a wiped target is refused)
        self.conflicted = False  # the last sync kept a conflict
        STATS["examples"] += 1
        self._ledger("init", str(self.brain), brain=False, must=True)
        for name, cat in START.items():
            self._ledger(
                "skill",
                "create",
                name,
                "--description",
                f"Do {name}.",
                "--body",
                _body(name),
                "--category",
                cat,
                must=True,
            )
        self._ledger("target", "add", str(self.home / "skills"), "--layout", "hermes", "--name", "hermes", must=True)
        self._ledger("target", "add", str(self.claude), "--layout", "claude", "--name", "claude", must=True)
        self._sync()

    def _fail(self, what: str) -> None:
        with self.lock, open(self.work / "FAILURES.txt", "a") as out:  # the example's folder is kept
            out.write(f"[step {self.step}] {what}\n")
            FAILURES.append({"failure": what, "workdir": str(self.work), "steps": list(self.log)})
            STATS["invariant_failures"] += 1

    def _token(self) -> str:
        return f"@t{next(self.counter)}@"  # itertools.count: atomic in CPython

    def _ack(self, token: str, side: str, skill: str, ok: bool) -> None:
        with self.lock:
            STATS[f"{'acknowledged' if ok else 'refused'}_{side}"] += 1
            self.acks += [(token, side, skill, self.step)] if ok else []

    def _note(self, line: str) -> None:
        with self.lock:
            self.log.append(f"[{self.step}] {line}")

    def _begin(self, what: str) -> None:
        self.step += 1
        STATS.update(["steps", f"rule_{what}"])

    def _ledger(self, *args: str, brain: bool = True, must: bool = False) -> subprocess.CompletedProcess[str]:
        argv = [LEDGER, *(["--brain", str(self.brain)] if brain else []), *args]
        proc = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=300)
        if "Traceback" in proc.stderr:
            self._fail(f"traceback from ledger {' '.join(args[:3])}: {proc.stderr[-1500:]}")
        if must and proc.returncode != 0:
            raise AssertionError(f"ledger {' '.join(args)} exited {proc.returncode}: {proc.stderr[-1500:]}")
        return proc

    def _hermes(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Hermes's own ``skill_manage``, in its venv, on this example's Hermes home."""
        proc = subprocess.run(
            [str(SETUP["python"]), "-c", DRIVER],
            input=json.dumps(calls),
            text=True,
            capture_output=True,
            env=self.env,
            timeout=300,
        )
        if proc.returncode != 0 or "Traceback" in proc.stderr:
            self._fail(f"the Hermes driver failed ({proc.returncode}): {proc.stderr[-1500:]}")
            return [{"success": False}] * len(calls)
        results = list(json.loads(proc.stdout.strip().splitlines()[-1]))
        self._note(f"hermes skill_manage {json.dumps(calls)} → {[r.get('success') for r in results]}")
        return results

    def _copies(self, target: str) -> dict[str, Path]:
        root, hermes = (self.home / "skills", True) if target == "hermes" else (self.claude, False)
        return _folders(root, "*/SKILL.md", *["*/*/SKILL.md"] * hermes)

    def _json(self, *args: str) -> tuple[int, dict[str, Any]]:
        proc = self._ledger(*args, "--json")
        self._note(f"ledger {' '.join(args)} --json → {proc.returncode}")
        try:
            return proc.returncode, dict(json.loads(proc.stdout))
        except ValueError:
            self._fail(f"ledger {' '.join(args)} exited {proc.returncode}: {(proc.stdout + proc.stderr)[-800:]}")
            return proc.returncode, {}

    def _sync(self) -> dict[str, Any]:
        rc, doc = self._json("sync")
        STATS.update(["syncs", f"sync_exit_{rc}"])
        if rc not in (0, 1):
            self._fail(f"sync exited {rc}")
        for t in doc.get("targets", []):
            if t.get("status") != "ok":
                self._fail(f"target {t.get('name')} {t.get('status')}: {json.dumps(t)[:800]}")
            STATS.update({f"sync_{k}": len(t.get(k) or ()) for k in ("recorded", "conflicts", "rescued", "left_alone")})
        with self.lock:
            self.managed, self.conflicted = set(self._copies("hermes")), bool(doc.get("conflicts"))
        return doc

    def _concurrently(self, jobs: list[Callable[[], object]]) -> None:
        gate = threading.Barrier(len(jobs))  # all start at once; a job's exception is raised here
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
            list(pool.map(lambda job: (gate.wait(30), job()), jobs))

    def _overlapping(self, job: Callable[[], object], runtime: bool) -> None:
        """``job`` with a sync running meanwhile; then the writes acknowledged before this step, checked."""
        STATS[f"syncs_overlapping_{'runtime' if runtime else 'ledger'}_writes"] += 1
        self._concurrently([job, self._sync])
        self._check(before=self.step + (not runtime))  # a runtime write may still be unrecorded: not yet judged

    @rule(data=st.data())
    def hermes_create(self, data: st.DataObject) -> None:
        self._begin("hermes_create")
        i, cat = data.draw(INDEX, label="name"), data.draw(st.sampled_from(CATEGORIES), label="category")
        if not (names := [n for n in (*POOL, *START) if slugify(n) not in self._copies("hermes")]):
            return
        name, token = names[i % len(names)], self._token()
        content = f"---\nname: {name}\ndescription: Do {name}.\n---\n{_body(name, token)}"
        res = self._hermes([{"action": "create", "name": name, "category": cat, "content": content}])[0]
        self._ack(token, "hermes", slugify(name), bool(res.get("success")))

    @rule(data=st.data())
    def hermes_edit(self, data: st.DataObject) -> None:
        """patch and write_file; only writes of new files overlap a sync (a read-modify-write racing the folder's
        replacement writes over a copy it never saw: nothing at the edge can tell that from an edit)."""
        self._begin("hermes_edit")
        key = _pick(folders := self._copies("hermes"), data.draw(INDEX, label="skill"))
        anchors = data.draw(st.lists(_anchor("hermes"), min_size=1, max_size=3), label="patch_at")
        overlap = data.draw(st.booleans(), label="overlap_sync") and not any(anchors)
        if key is None:
            return
        folder = folders[key]
        tokens = [self._token() for _ in anchors]  # a patch at each anchor, a write_file where there is none
        calls = [
            {"action": "patch", "name": folder.name, "old_string": a, "new_string": f"note {t}\n{a}"}
            if a
            else {
                "action": "write_file",
                "name": folder.name,
                "file_path": f"references/{t.strip('@')}.md",
                "file_content": f"{t}\n",
            }
            for t, a in zip(tokens, anchors, strict=True)
        ]
        results: list[dict[str, Any]] = []
        if overlap:
            self._overlapping(lambda: results.extend(self._hermes(calls)), runtime=True)
        else:
            results = self._hermes(calls)
        for token, res in zip(tokens, results, strict=True):
            self._ack(token, "hermes", slugify(folder.name), bool(res.get("success")))

    @rule(data=st.data())
    def hermes_delete(self, data: st.DataObject) -> None:
        self._begin("hermes_delete")
        key = _pick(folders := self._copies("hermes"), data.draw(INDEX, label="skill"))
        kept = len((set(folders) - {key}) & self.managed)  # deleting too many would look wiped: a refused pass
        if key is None or len(folders) < 3 or 2 * (len(self.managed) - kept) > len(self.managed):
            return
        held = _tokens(_files(folders[key]))
        if self._hermes([{"action": "delete", "name": folders[key].name}])[0].get("success"):
            STATS["hermes_deletes"] += 1
            # removed on purpose: Hermes deleted the copy that held them
            self.excused.update({t: f"Hermes deleted {key} at step {self.step}" for t in held - self.excused.keys()})

    @rule(data=st.data())
    def hermes_move(self, data: st.DataObject) -> None:
        self._begin("hermes_move")
        key, i = _pick(folders := self._copies("hermes"), data.draw(INDEX, label="skill")), data.draw(INDEX, label="to")
        if key is None:
            return
        cat = (cats := [c for c in CATEGORIES if c != (src := folders[key]).parent.name])[i % len(cats)]
        (self.home / "skills" / cat).mkdir(parents=True, exist_ok=True)
        src.rename(self.home / "skills" / cat / src.name)
        self._note(f"mv {src} {self.home / 'skills' / cat / src.name}")
        STATS["hermes_moves"] += 1

    @rule(data=st.data())
    def claude_hand_edit(self, data: st.DataObject) -> None:
        self._begin("claude_hand_edit")
        key = _pick(folders := self._copies("claude"), data.draw(INDEX, label="skill"))
        anchor, overlap = data.draw(_anchor("claude"), label="patch_at"), data.draw(st.booleans(), label="overlap_sync")
        if key is None:
            return
        folder, token = folders[key], self._token()

        def edit() -> None:
            name = token.strip("@")
            tmp, dest = folder / f".edit.tmp.{name}", folder / ("SKILL.md" if anchor else f"references/{name}.md")
            try:
                text = (folder / "SKILL.md").read_text() if anchor else ""
                dest.parent.mkdir(exist_ok=True)
                if anchor not in text:
                    raise OSError(f"no {anchor} in SKILL.md")
                tmp.write_text(text.replace(anchor, f"note {token}\n{anchor}", 1) if anchor else f"{token}\n")
                os.replace(tmp, dest)
                ok = True
            except OSError:  # the folder was replaced under the edit (or lost its anchor): not acknowledged
                with suppress(OSError):
                    tmp.unlink()
                ok = False
            self._note(f"claude hand edit: {token} at {anchor or 'a new file'} in {folder} → {ok}")
            self._ack(token, "claude", key, ok)

        if overlap and not anchor:
            self._overlapping(edit, runtime=True)
        else:
            edit()

    @rule(data=st.data())
    def ledger_writes(self, data: st.DataObject) -> None:  # CLI and MCP writes at once, a sync meanwhile or not
        self._begin("ledger_writes")
        op = st.tuples(st.sampled_from(["cli", "mcp"]), INDEX, _anchor("ledger"))
        drawn, overlap = data.draw(st.lists(op, min_size=1, max_size=4), label="writes"), data.draw(st.booleans())
        if not (keys := _head_state(self.brain)):
            return
        ops = [(via, str(_pick(keys, i)), anchor) for via, i, anchor in drawn]
        if any(o[0] == "mcp" for o in ops) and self.mcp is None:
            self.mcp = _McpServer(self.brain, self.env, self.work / "mcp.err")
        jobs: list[Callable[[], object]] = [lambda o=o: self._ledger_write(*o) for o in ops]
        if overlap:
            self._overlapping(lambda: self._concurrently(jobs), runtime=False)
        else:
            self._concurrently(jobs)

    def _ledger_write(self, via: str, key: str, anchor: str) -> None:
        token = self._token()
        rel, line = f"references/{token.strip('@')}.md", f"note {token}\n{anchor}"
        if via == "cli":
            if anchor:
                proc = self._ledger("skill", "patch", key, "--old", anchor, "--new", line, "--json")
            else:
                (src := self.work / "in" / rel).parent.mkdir(parents=True, exist_ok=True)
                src.write_text(f"{token}\n")
                proc = self._ledger("skill", "write-file", key, rel, "--from", str(src), "--json")
            ok, why = proc.returncode == 0, proc.stderr[-300:]
        else:
            assert self.mcp is not None
            args = (
                {"action": "patch", "name": key, "old_string": anchor, "new_string": line}
                if anchor
                else {"action": "write_file", "name": key, "file_path": rel, "file_content": f"{token}\n"}
            )
            res = self.mcp.call("skill_manage", args)
            ok, why = bool(res.get("success")), json.dumps(res)[-300:]
            if "Traceback" in why or res.get("internal"):
                self._fail(f"ledger mcp skill_manage {args}: {why}")
        self._note(f"{via} write {token} on {key} at {anchor or 'a new file'} → {'ok' if ok else why}")
        self._ack(token, via, key, ok)

    @rule(data=st.data())
    def sync(self, data: st.DataObject) -> None:
        self._begin("sync")
        now, i, take_target = data.draw(st.tuples(st.booleans(), INDEX, st.booleans()), label="resolve_now")
        self._sync()
        self._check(before=self.step + 1)
        if now and self.conflicted:
            self._resolve(i, take_target)

    @rule(data=st.data())
    def resolve(self, data: st.DataObject) -> None:
        self._begin("resolve")
        self._resolve(data.draw(INDEX, label="conflict"), data.draw(st.booleans(), label="take_target"))

    def _resolve(self, i: int, take_target: bool) -> None:
        if not (conflicts := self._json("status")[1].get("sync_conflicts")):
            return
        c = conflicts[i % len(conflicts)]
        side, key = c["target"] if take_target else "ledger", c["skill"]
        ours, theirs = _tokens(_head(self.brain).get(key, {})), _tokens(_files(self._copies(c["target"]).get(key)))
        if side != "ledger":  # the ledger's side, not taken: changed on purpose
            self.excused.update(
                {t: f"resolve {key} --take {side} at step {self.step}" for t in ours - theirs if t not in self.excused}
            )
        rc, doc = self._json("skill", "resolve", key, "--take", side)
        STATS[f"resolve_take_{'ledger' if side == 'ledger' else 'target'}_exit_{rc}"] += 1
        if rc != 0:
            return self._fail(f"resolve {key} --take {side} exited {rc}")
        kept = [r["kept"] for t in doc.get("targets", ()) for r in t.get("rescued") or ()]  # the copies kept aside
        aside = set().union(*(_tokens(_files(Path(k))) for k in kept))
        if missing := theirs - ours - aside if side == "ledger" else theirs - _tokens(_head(self.brain).get(key, {})):
            self._fail(f"resolve {key} --take {side}: {sorted(missing)} neither in the head nor kept aside")

    def _check(self, before: int, final: bool = False) -> Counter[str]:
        """Every write acknowledged before step ``before``, against the model."""
        head, status = _head(self.brain), self._json("status")[1]
        in_head = {key: _tokens(files) for key, files in head.items()}
        copies = {t: self._copies(t) for t in ("hermes", "claude")}
        held = set().union(
            *(_tokens(_files(copies.get(c["target"], {}).get(c["skill"]))) for c in status.get("sync_conflicts") or ())
        )
        rescued = set().union(*(_tokens(_files(Path(r["path"]))) for r in status.get("sync_rescued") or ()))
        out: Counter[str] = Counter()
        for token, who, skill, step in (a for a in self.acks if a[3] < before):
            side = "ledger" if who in ("cli", "mcp") else "runtime"
            where = (
                "changed_on_purpose"
                if token in self.excused
                else "in_head"
                if token in in_head.get(skill, ())
                else "lost"
                if side == "ledger"
                else "in_conflict"
                if token in held
                else "rescued"
                if token in rescued
                else "lost"
            )
            if where == "lost":
                self._fail(f"{who} write {token} on {skill} (step {step}) lost{' at teardown' * final}")
            out[f"{side}_{where}"] += 1
        return out

    def teardown(self) -> None:
        try:
            for _ in range(8):  # until quiet: a pass that records, projects, removes and keeps aside nothing
                doc = self._sync()
                if not any(
                    t.get(k) for t in doc.get("targets", ()) for k in ("recorded", "projected", "removed", "rescued")
                ):
                    break
            else:
                self._fail("ledger sync never settles")
            STATS.update(self._check(before=self.step + 1, final=True))
            if (verify := self._ledger("verify")).returncode != 0:
                self._fail(f"ledger verify exited {verify.returncode}: {(verify.stdout + verify.stderr)[-1500:]}")
        finally:
            if self.mcp is not None:
                self.mcp.close()
                if "Traceback" in (err := (self.work / "mcp.err").read_text(errors="replace")):
                    self._fail(f"traceback from ledger mcp: {err[-1500:]}")
            if (self.work / "FAILURES.txt").exists():  # kept, with every step taken
                (self.work / "STEPS.txt").write_text("".join(f"{line}\n" for line in self.log))
            else:
                shutil.rmtree(self.work, ignore_errors=True)


def run(examples: int, steps: int, hermes_python: Path, keys: Path, *, seed: int | None = None) -> dict[str, Any]:
    """``examples`` sequences of up to ``steps`` steps (derandomized unless ``seed``): the counts, and failures."""
    STATS.clear()
    FAILURES.clear()
    SETUP.update(python=hermes_python, keys=keys)
    test = get_state_machine_test(
        EdgeModel,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            derandomize=seed is None,
            phases=(Phase.explicit, Phase.generate),
            suppress_health_check=list(HealthCheck),
        ),
    )
    started = time.monotonic()
    (test if seed is None else hseed(seed)(test))()
    s = STATS

    def group(prefix: str) -> dict[str, int]:
        return {k.removeprefix(prefix): v for k, v in sorted(s.items()) if k.startswith(prefix)}

    ack = {k: s[f"acknowledged_{k}"] for k in SIDES}
    return {
        "examples": s["examples"],
        "steps": s["steps"],
        "seed": seed,
        "seconds": round(time.monotonic() - started, 1),
        "acknowledged": {"ledger": ack["cli"] + ack["mcp"], "runtime": ack["hermes"] + ack["claude"], **ack},
        "not_acknowledged": {k: s[f"refused_{k}"] for k in SIDES},
        "ledger_writes": {k: s[f"ledger_{k}"] for k in ("in_head", "changed_on_purpose", "lost")},
        "runtime_writes": {
            k: s[f"runtime_{k}"] for k in ("in_head", "in_conflict", "rescued", "changed_on_purpose", "lost")
        },
        "rules": group("rule_"),
        "resolves": group("resolve_"),
        "hermes_home": group("hermes_"),
        "syncs": {"runs": s["syncs"], **group("syncs_"), **group("sync_")},
        "invariant_failures": s["invariant_failures"],
        "failures": [{**f, "steps": f["steps"][-30:]} for f in FAILURES[:5]],
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    from tests.interop.test_hermes_compare import VENV

    ap = argparse.ArgumentParser(description="The edge against its model (tests/harness/edgemodel.py)")
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--steps", type=int, default=12, help="steps per example, at most")
    ap.add_argument("--seed", type=int, default=None, help="a random run from this seed (default: derandomized)")
    args = ap.parse_args(argv)
    if not (python := VENV / "bin" / "python").exists():
        sys.exit(f"no Hermes venv at {VENV}: run tests/interop/test_hermes_compare.py once to make it")
    with tempfile.TemporaryDirectory(prefix="edgemodel-keys-") as keys:
        res = run(args.examples, args.steps, python, Path(keys) / "keys", seed=args.seed)
    print(json.dumps(res, indent=1))
    return 1 if res["invariant_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
