"""The fleet harness (issue 23): M machines on one host share one brain through a bare git remote and one anvil.

Each machine is its own brain, in its own directory, with its own signing keys
(``LEDGER_KEYS``) and its own committer keystore (``LEDGER_KEYSTORE``, an anvil account
the owner authorized).  Each runs:

- **writers**: half through the CLI (``ledger skill write-file``), half through the
  official MCP client against ``ledger mcp`` (``skill_manage``).  Most writes append a
  line to the writer's own file in one of the shared skills (they merge cleanly); every
  tenth rewrites the one shared line of a **hot** skill (they conflict when two machines
  write it at once).  A write is acknowledged when the call returns success.
- a **sync loop**: ``ledger sync --watch`` with the shared remote set (``--commit``: it
  anchors too).

Faults, at random: the remote is unreachable for a while (the path every machine syncs with is a
symbolic link, pointed at nothing and back, each time in one ``rename``: see :func:`_point`);
a sync loop is SIGKILLed (in a push, a merge or a commit: wherever it is) and restarted
later; two machines run a one-shot ``ledger sync`` at once, and half of those are
SIGKILLed at a random moment; one machine's loop stays down for the first half of the
run while its writers go on, then it rejoins with everything they wrote.

Once the writers are done the fleet goes quiet (no faults, every loop up), and the
harness waits until every machine's head is the remote's and the chain's head is the
remote mainline's last root.  Then it checks: every acknowledged write is in the remote's
lineage (an appended line in the remote's head; a hot value in some snapshot reachable
from it, or in a recorded conflict); no (skill, version) names two contents on the
mainline; ``ledger audit URL`` with the chain passes with ``--require-signatures``.

Whatever happens, a run stops every process it started before it returns or raises (issue 46):
each child is started in its own process group through one :class:`tests.harness.procs.Children` and
killed whole, and every child carries ``LEDGERTEST_RUN`` in its environment, so anything started
further down (an MCP server, git's ``receive-pack``) is found in ``/proc`` and killed too.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.harness import procs
from tests.harness.brains import skill_md
from tests.harness.stress import LEDGER, _env

SHARED = ("s0", "s1", "s2", "s3")
HOT = "hot"
LINK = "remote-link"  # what the machines sync with: a symbolic link to remote.git (not "remote": git would try
# "remote.git" when "remote" is not a repository, and find the repository through the outage)
OUTAGE = "remote.offline"  # where the link points during an outage: nothing is there
PASSWORD = "fleet-harness"  # the committer keystores' password, given to children in their environment


@dataclass
class Machine:
    k: int
    root: Path
    url: str
    env: dict[str, str] = field(default_factory=dict)
    children: procs.Children = field(default_factory=procs.Children)  # shared by a run's machines
    loop: subprocess.Popen[bytes] | None = None
    down_until: float = 0.0
    acks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def brain(self) -> Path:
        return self.root / "brain"

    def ledger(self, *args: str, timeout: float = 300, check: bool = False) -> subprocess.CompletedProcess[str]:
        return self.cli("--brain", str(self.brain), *args, timeout=timeout, check=check)

    def cli(
        self,
        *args: str,
        timeout: float = 300,
        check: bool = False,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``ledger ARGS`` on this machine (its keys, keystore and home), in its own process group."""
        proc = self.children.run([LEDGER, *args], env=self.env, timeout=timeout, input=input)
        if check and proc.returncode != 0:
            raise AssertionError(f"machine {self.k}: ledger {' '.join(args)}: {proc.stderr}")
        return proc

    def start_loop(self) -> None:
        if self.loop is None or self.loop.poll() is not None:
            with open(self.root / "loop.log", "ab") as log:  # the child has its own copy of the descriptor
                self.loop = self.children.popen(
                    [LEDGER, "--brain", str(self.brain), "sync", "--watch", "--poll", "1"],
                    stdout=log,
                    stderr=log,
                    env=self.env,
                )

    def kill_loop(self) -> None:
        """SIGKILL the loop wherever it is, with every git process it started (its whole group)."""
        if self.loop is not None:
            procs.kill(self.loop)
            self.children.forget(self.loop)


def _md(body: str, name: str) -> str:
    return skill_md(name, f"Shared skill {name}.", f"# {name}\n\n{body}\n")


def _point(link: Path, to: str) -> None:
    """Make the symbolic link ``link`` point at ``to`` in one step: a new link renamed over it (rename(2)
    replaces atomically).  This is the harness's outage: the remote repository itself never moves, so a
    push already under way finishes in it (git's receive-pack works in the directory it opened, and makes
    its quarantine there by absolute path) and nothing git does can stop the link from being put back;
    every fetch and push started while the link points at nothing fails, as against a remote that is
    down.  (Renaming the repository away, as this harness did before, raced receive-pack: in a CI run of
    issue 46 it recreated ``objects/tmp_objdir-incoming-*`` at the old path, and the rename back failed.)"""
    tmp = link.with_name(link.name + ".next")
    tmp.unlink(missing_ok=True)
    os.symlink(to, tmp)
    os.replace(tmp, link)


def setup(
    work: Path, machines: int, node_url: str, children: procs.Children | None = None, run: str | None = None
) -> tuple[list[Machine], dict[str, Any]]:
    """Machine 0 founds the brain, deploys and registers; every other machine clones it, and its keys are
    trusted (signing) and authorized (committing) by the founder.

    The machines sync with ``work/remote-link``, a symbolic link to the bare repository ``work/remote.git``
    (see :func:`_point`).  Every child carries ``LEDGERTEST_RUN=run`` in its environment."""
    from ledger.brain import Brain
    from ledger.chain.keys import dev_account

    children = children or procs.Children()
    run = run or procs.new_mark()
    remote = work / "remote.git"
    link = work / LINK
    ms = []
    for k in range(machines):
        root = work / f"m{k}"
        root.mkdir(parents=True)
        env = _env(
            LEDGER_KEYS=str(root / "keys"),
            LEDGER_KEYSTORE=str(root / "keystore"),
            LEDGER_KEY_PASSWORD=PASSWORD,
            HOME=str(root),
            **{procs.RUN: run},
        )
        ms.append(Machine(k, root, str(link), env, children))
    m0 = ms[0]
    m0.cli("init", str(m0.brain), check=True)
    for name in (*SHARED, HOT):
        src = m0.root / f"{name}.md"
        src.write_text(_md("hot: founder" if name == HOT else "Shared notes.", name))
        m0.ledger("skill", "upsert", "--file", str(src), check=True)
    m0.ledger("chain", "use", node_url, check=True)
    m0.ledger("chain", "deploy", "--key", "anvil-dev", check=True)
    m0.ledger("chain", "register", "--key", "anvil-dev", check=True)
    for m in ms[1:]:
        agent = json.loads(m.cli("keys", "generate", "agent", "--json", check=True).stdout)["address"]
        m0.ledger("keys", "trust", "agent", agent, check=True)
        # An agent key that signs snapshots must be able to commit for the agent too (lineage.md §8.5).
        m0.ledger("chain", "authorize", agent, "--key", "anvil-dev", check=True)
        m.cli("keys", "import", f"m{m.k}", input=dev_account(m.k).key.hex() + "\n", check=True)
        m0.ledger("chain", "authorize", dev_account(m.k).address, "--key", "anvil-dev", check=True)
    m0.ledger("remote", "set", "--create", str(remote), "--anchor", "--key", "anvil-dev", check=True)
    first = m0.ledger("sync")
    assert first.returncode == 0, first.stderr
    _point(link, remote.name)
    m0.ledger("remote", "set", str(link), "--anchor", "--key", "anvil-dev", check=True)
    chain = dict(Brain.open(m0.brain).config["chain"])
    chain.pop("key", None)
    for m in ms[1:]:
        m.cli("clone", str(link), str(m.brain), check=True)
        with Brain.open(m.brain) as b:
            b.update_config(chain=chain)
        m.ledger("remote", "set", str(link), "--anchor", "--key", f"m{m.k}", check=True)
    return ms, chain


# --------------------------------------------------------------------------- writers


def _cli_writer(m: Machine, w: int, writes: int, rng: random.Random, stop: threading.Event) -> None:
    lines: dict[str, list[str]] = {}
    for i in range(writes):
        if stop.is_set():
            return
        tag = f"m{m.k}-w{w}-{i}"
        if i % 10 == 9:
            src = m.root / f"hot-{w}.md"
            src.write_text(_md(f"hot: {tag}", HOT))
            ok = m.ledger("skill", "upsert", "--file", str(src), "--actor", "agent", "--name", HOT).returncode == 0
            kind, skill, rel = "hot", HOT, "SKILL.md"
        else:
            skill = rng.choice(SHARED)
            rel = f"references/m{m.k}-w{w}.md"
            new = [*lines.get(skill, []), tag]
            src = m.root / f"w{w}.txt"
            src.write_text("".join(x + "\n" for x in new))
            ok = m.ledger("skill", "write-file", skill, rel, "--from", str(src), "--actor", "agent").returncode == 0
            if ok:
                lines[skill] = new
            kind = "append"
        if ok:
            m.acks.append({"kind": kind, "skill": skill, "file": rel, "tag": tag})


def _mcp_writer(m: Machine, w: int, writes: int, rng: random.Random, stop: threading.Event) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=LEDGER, args=["--brain", str(m.brain), "mcp"], env=m.env)

    async def body() -> None:
        lines: dict[str, list[str]] = {}
        with open(m.root / f"mcp-{w}.err", "w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write, read_timeout_seconds=600) as s,
            ):
                await s.initialize()
                for i in range(writes):
                    if stop.is_set():
                        return
                    tag = f"m{m.k}-w{w}-{i}"
                    if i % 10 == 9:
                        args = {"action": "edit", "name": HOT, "content": _md(f"hot: {tag}", HOT)}
                        kind, skill, rel = "hot", HOT, "SKILL.md"
                    else:
                        skill = rng.choice(SHARED)
                        rel = f"references/m{m.k}-w{w}.md"
                        new = [*lines.get(skill, []), tag]
                        args = {
                            "action": "write_file",
                            "name": skill,
                            "file_path": rel,
                            "file_content": "".join(x + "\n" for x in new),
                        }
                        kind = "append"
                    result = await s.call_tool("skill_manage", args)
                    out = result.structured_content or {}
                    if out.get("success"):
                        if kind == "append":
                            lines[skill] = new
                        m.acks.append({"kind": kind, "skill": skill, "file": rel, "tag": tag})

    asyncio.run(body())


# --------------------------------------------------------------------------- the run


def _writer(fn: Any, m: Machine, w: int, writes: int, rng: random.Random, stop: threading.Event) -> None:
    """A writer thread: once the run is stopping, its children are killed under it; that is not its failure."""
    try:
        fn(m, w, writes, rng, stop)
    except Exception:
        if not stop.is_set():
            raise


def fleet_run(
    work: Path,
    node_url: str,
    *,
    machines: int = 8,
    writers: int = 4,
    writes: int = 100,
    seed: int = 1,
    faults: bool = True,
    log: Any = None,
    quiet_timeout: float = 900,
) -> dict[str, Any]:
    """One run; every process it started is stopped before it returns or raises (:func:`_stop`)."""
    children, run, stop = procs.Children(), procs.new_mark(), threading.Event()
    threads: list[threading.Thread] = []
    try:
        return _fleet_run(
            work,
            node_url,
            children,
            run,
            stop,
            threads,
            machines=machines,
            writers=writers,
            writes=writes,
            seed=seed,
            faults=faults,
            log=log,
            quiet_timeout=quiet_timeout,
        )
    finally:
        _stop(children, run, stop, threads)


def _stop(children: procs.Children, run: str, stop: threading.Event, threads: list[threading.Thread]) -> None:
    """Stop a run, whatever state it is in: writers told to stop, every child's process group killed (and
    nothing new started), then whatever still carries the run's marker (an MCP server the SDK started, a git
    process that left its group), and the writer threads joined."""
    stop.set()
    children.stop()
    procs.reap(procs.RUN, run)
    for t in threads:
        t.join(timeout=60)
    procs.reap(procs.RUN, run)  # anything a writer's last call started meanwhile


def _fleet_run(
    work: Path,
    node_url: str,
    children: procs.Children,
    run: str,
    stop: threading.Event,
    threads: list[threading.Thread],
    *,
    machines: int,
    writers: int,
    writes: int,
    seed: int,
    faults: bool,
    log: Any,
    quiet_timeout: float,
) -> dict[str, Any]:
    say = log or (lambda _m: None)
    rng = random.Random(seed)
    t0 = time.monotonic()
    ms, chain = setup(work, machines, node_url, children, run)
    say(f"fleet: {machines} machines set up in {time.monotonic() - t0:.1f} s")
    remote, link = work / "remote.git", work / LINK
    for m in ms:
        m.start_loop()
        for w in range(writers):
            fn = _mcp_writer if w % 2 else _cli_writer
            t = threading.Thread(
                target=_writer, args=(fn, m, w, writes, random.Random(rng.random()), stop), daemon=True
            )
            threads.append(t)
            t.start()
    counts = {"remote_outages": 0, "loop_kills": 0, "simultaneous_syncs": 0, "oneshot_kills": 0, "long_offline": 0}
    offline_machine = ms[-1] if faults and machines > 1 else None
    t_write = time.monotonic()
    if offline_machine is not None:  # one machine's loop is down for the first half of the run
        offline_machine.kill_loop()
        offline_machine.down_until = float("inf")
        counts["long_offline"] = 1
    outage_until = 0.0
    oneshots: list[tuple[subprocess.Popen[bytes], float]] = []  # one-shot syncs, and when to kill each (inf: never)
    while any(t.is_alive() for t in threads):
        time.sleep(rng.uniform(0.3, 1.0))  # the subject: a random pause between the faults this loop injects
        now = time.monotonic()
        if outage_until and now >= outage_until:
            _point(link, remote.name)
            outage_until = 0.0
        for p, kill_at in oneshots:
            if p.poll() is None and now >= kill_at:
                procs.kill(p)  # with its git children
                counts["oneshot_kills"] += 1
        for p, _ in oneshots:
            if p.poll() is not None:
                children.forget(p)
        oneshots = [(p, k) for p, k in oneshots if p.poll() is None]
        for m in ms:
            if m.down_until and m.down_until != float("inf") and now >= m.down_until:
                m.down_until = 0.0
                m.start_loop()
        if not faults:
            continue
        done = sum(len(m.acks) for m in ms) / (machines * writers * writes)
        if offline_machine is not None and offline_machine.down_until == float("inf") and done > 0.5:
            offline_machine.down_until = 0.0  # rejoins with everything its writers did meanwhile
            offline_machine.start_loop()
        roll = rng.random()
        if roll < 0.1 and not outage_until:
            _point(link, OUTAGE)  # unreachable: every fetch and push that starts fails until it is back
            outage_until = now + rng.uniform(1.0, 4.0)
            counts["remote_outages"] += 1
        elif roll < 0.4:
            m = rng.choice([m for m in ms if m is not offline_machine or m.down_until == 0.0])
            if m.loop is not None and m.loop.poll() is None:
                m.kill_loop()  # wherever it is: a fetch, a merge, a push, a commit
                counts["loop_kills"] += 1
                m.down_until = now + rng.uniform(0.5, 3.0)
        elif roll < 0.5 and len(oneshots) < 4:
            for x in rng.sample(ms, 2):  # two machines sync, push and commit at once
                p = children.popen(
                    [LEDGER, "--brain", str(x.brain), "sync"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=x.env,
                )
                oneshots.append((p, now + rng.uniform(0.2, 3.0) if rng.random() < 0.5 else float("inf")))
            counts["simultaneous_syncs"] += 1
    for p, _ in oneshots:
        p.wait(timeout=600)
        children.forget(p)
    if outage_until:
        _point(link, remote.name)
    write_seconds = time.monotonic() - t_write
    # Quiet: no faults, every loop up; wait until the whole fleet and the chain agree.
    for m in ms:
        m.start_loop()
    t_quiet = time.monotonic()
    converged = _converge(ms, remote, chain, quiet_timeout)
    converge_seconds = time.monotonic() - t_quiet
    for m in ms:
        m.kill_loop()
    say(f"fleet: writes done in {write_seconds:.1f} s; converged={converged} in {converge_seconds:.1f} s")
    result = check(ms, remote, chain)
    logs = "".join((m.root / "loop.log").read_text(errors="replace") for m in ms if (m.root / "loop.log").exists())
    result["busy_syncs"] = logs.count("kept moving")  # a sync whose every compare-and-swap lost (8 rounds)
    result["offline_syncs"] = len(re.findall(r"remote\s+offline", logs))  # "remote    offline: ..."
    result["mainline_per_second"] = round(result["mainline"] / max(write_seconds, 1e-9), 2)
    result.update(
        counts,
        machines=machines,
        writers=writers,
        writes_per_writer=writes,
        seed=seed,
        write_seconds=round(write_seconds, 1),
        converged=converged,
        converge_seconds=round(converge_seconds, 1),
    )
    return result


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={repo}", *args], check=True, capture_output=True, text=True, timeout=600
    ).stdout


def _converge(ms: list[Machine], remote: Path, chain: dict[str, Any], timeout: float) -> bool:
    from ledger.chain.registry import Registry
    from ledger.store.gitstore import GitStore

    reg = Registry(chain["rpc"], chain["registry"])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # A bounded poll, once a second (each look opens every machine's store and asks the chain), its first look
        # a second after the loops restart, so a fleet that looks settled only because no loop has run yet is not.
        time.sleep(1.0)
        head = _git(remote, "rev-parse", "main").strip()
        heads = set()
        for m in ms:
            with GitStore(m.brain) as s:
                heads.add(s.head().hex())  # type: ignore[union-attr]
        if heads != {head}:
            continue
        with GitStore(remote) as s:
            root = s.snapshot(bytes.fromhex(head)).root
        if reg.head(int(str(chain["agent_id"]), 0)) == root:
            return True
    return False


def check(ms: list[Machine], remote: Path, chain: dict[str, Any]) -> dict[str, Any]:
    """Every acknowledged write against the remote's lineage, versions on the mainline, and the audit."""
    from ledger.store.gitstore import GitStore
    from ledger.store.skilltree import skills_of
    from ledger.store.treehash import files_of

    acks = [a for m in ms for a in m.acks]
    head = _git(remote, "rev-parse", "main").strip()
    lost: list[str] = []
    in_conflict = 0
    with GitStore(remote) as s:
        skills = skills_of(s, s.commit_info(bytes.fromhex(head))[0])[1]
        text: dict[tuple[str, str], str] = {}
        for name, tree in skills.items():
            for rel, (_mode, blob) in files_of(s, tree).items():
                text[(name, rel)] = s.read(blob, b"blob").decode()
        history = _git(remote, "log", "-p", "--full-history", "--format=%B", "main", "--", f"skills/{HOT}/SKILL.md")
        conflicts = _git(remote, "log", "--format=%B", "main").count("\nconflict: ")
        for a in acks:
            if a["kind"] == "append":
                if a["tag"] + "\n" not in text.get((a["skill"], a["file"]), ""):
                    lost.append(a["tag"])
            elif f"hot: {a['tag']}" not in history:
                lost.append(a["tag"])
        repeats = _mainline_repeats(s, bytes.fromhex(head))
    audit = subprocess.run(
        [
            LEDGER,
            "audit",
            f"file://{remote}",
            "--rpc",
            chain["rpc"],
            "--registry",
            chain["registry"],
            "--agent",
            str(chain["agent_id"]),
            "--require-signatures",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=1800,
    )
    report = json.loads(audit.stdout) if audit.stdout.strip().startswith("{") else {"checks": {}}
    failed = {n: c.get("summary") for n, c in report.get("checks", {}).items() if not c.get("ok", True)}
    txs, gas, events = _chain_costs(chain)
    n = len(acks)
    return {
        "acknowledged": n,
        "lost": len(lost),
        "lost_sample": lost[:10],
        "in_conflict": in_conflict,
        "conflicts": conflicts,
        "conflicts_per_1000": round(1000 * conflicts / max(1, n), 1),
        "version_repeats_on_mainline": repeats,
        "audit_ok": audit.returncode == 0,
        "audit_failed": failed,
        "transactions": txs,
        "transactions_per_1000": round(1000 * txs / max(1, n), 1),
        "roots_anchored": events,
        "gas": gas,
        "mainline": int(_git(remote, "rev-list", "--first-parent", "--count", "main")),
        "snapshots": int(_git(remote, "rev-list", "--count", "main")),
        "merges": int(_git(remote, "rev-list", "--merges", "--count", "main")),
    }


def _mainline_repeats(s: Any, head: bytes) -> int:
    """(skill, version) pairs that name two different trees along the first-parent line."""
    seen: dict[tuple[str, int], str] = {}
    repeats = 0
    for snap in s.lineage(head):
        for c in snap.changes:
            if c.action == "delete":
                continue
            key = (c.skill, c.version)
            from ledger.store.skilltree import skills_of

            tree = skills_of(s, bytes.fromhex(snap.tree))[1].get(c.skill)
            tree_hex = tree.hex() if tree else ""
            if key in seen and seen[key] != tree_hex:
                repeats += 1
            seen.setdefault(key, tree_hex)
    return repeats


def _chain_costs(chain: dict[str, Any]) -> tuple[int, int, int]:
    from ledger.chain.registry import Registry

    reg = Registry(chain["rpc"], chain["registry"])
    events = reg.events(int(str(chain["agent_id"]), 0), int(chain.get("deploy_block") or 0))
    txs = sorted({ev["tx"] for ev in events})
    gas = sum(int(reg.w3.eth.get_transaction_receipt(tx)["gasUsed"]) for tx in txs)
    return len(txs), gas, len(events)


def main(argv: list[str]) -> int:
    import argparse
    import sys
    import tempfile

    from ledger.chain import anvil

    ap = argparse.ArgumentParser(description="The fleet harness: M machines x W writers x N writes (issue 23)")
    ap.add_argument("--machines", type=int, default=8)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--writes", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-faults", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ledger-fleet-") as d:
        work = Path(d)
        node = anvil.start(work / "anvil", persist=False, lifetime=7200)
        try:
            t0 = time.monotonic()
            res = fleet_run(
                work / "fleet",
                node.url,
                machines=args.machines,
                writers=args.writers,
                writes=args.writes,
                seed=args.seed,
                faults=not args.no_faults,
                log=lambda msg: print(msg, file=sys.stderr, flush=True),
            )
            res["seconds"] = round(time.monotonic() - t0, 1)
            print(json.dumps({"fleet": res}, indent=2), flush=True)
        finally:
            anvil.stop(work / "anvil")
            shutil.rmtree(work, ignore_errors=True)
    return 0 if res["lost"] == 0 and res["audit_ok"] and res["converged"] else 1


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
