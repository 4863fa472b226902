"""The mixed-surface harness: every write surface at once on ONE skill, readers alongside.

Writers each run a random mix of: CLI ``skill patch`` and ``write-file``; MCP ``skill_manage``
patch (one match, and ``replace_all``), ``edit`` and ``write_file`` through the official SDK
client against a running ``ledger mcp``; ``ledger apply`` payloads; ``ledger import``;
``ledger revert``; and in-process API calls (``Brain.patch``, with and without
``replace_all``) and the function-calling dispatcher (``SkillTools``) from threads sharing one
open brain.

What it proves, from plain git (nothing of ours is trusted to check itself):

- every acknowledged write is a version of the skill, at the commit its receipt names;
- versions run 1..N with none repeated or skipped;
- **each acknowledged write was applied to its true base**: the skill at version v is
  exactly the operation applied to the skill at version v-1 (version counters aside).
  A read outside the writer lock shows up here as a write applied to a stale base;
- no surface printed a traceback, and ``ledger verify`` is OK.

``tests/reliability/test_stress.py`` runs it reduced; ``scripts/stress mixed`` at full size.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

LEDGER = str(Path(sys.executable).with_name("ledger"))
SKILL = "shared"
END, TAIL = "<!-- end -->", "<!-- tail -->"
KINDS = (
    "cli-patch",
    "cli-write-file",
    "mcp-patch",
    "mcp-patch-all",
    "mcp-edit",
    "mcp-write-file",
    "apply",
    "import",
    "revert",
    "api-patch",
    "api-patch-all",
    "tools-patch-all",
)
_COUNTER = re.compile(r"^(\s*version: )'?\d+'?$", re.M)


def _skill_md(body: str) -> str:
    return (
        f"---\nname: {SKILL}\ndescription: one skill, every surface\nmetadata:\n  version: '1'\n---\n"
        f"# {SKILL}\n{TAIL} first\n{body}{END}\n{TAIL} second\n"
    )


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    env["LEDGER_LOCK_TIMEOUT"] = "300"
    return env


def _cli(brain: Path, *args: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [LEDGER, "--brain", str(brain), *args], capture_output=True, text=True, env=_env(), timeout=600
    )
    return proc.returncode, proc.stdout, proc.stderr


class _Mcp:
    """One ``ledger mcp`` server and the official client's session to it, on the caller's event loop."""

    def __init__(self, brain: Path) -> None:
        from mcp import StdioServerParameters

        self.params = StdioServerParameters(command=LEDGER, args=["--brain", str(brain), "mcp"], env=_env())

    async def run(self, body: Any, errfile: Path) -> Any:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        with open(errfile, "w") as err:
            async with stdio_client(self.params, errlog=err) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                self.session = s
                return await body()

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await self.session.call_tool(tool, args)
        return result.structured_content or {"success": False, "error": "no structured content"}


def mixed_run(
    workdir: Path, writers: int, ops: int, seed: int = 1, readers: int = 2, kinds: tuple[str, ...] = KINDS
) -> dict[str, Any]:
    from ledger.brain import Brain

    brain = workdir / "brain"
    subprocess.run([LEDGER, "init", str(brain)], check=True, capture_output=True, env=_env())
    seed_md = workdir / "seed.md"
    seed_md.write_text(_skill_md("seed\n"))
    rc, _, err = _cli(brain, "skill", "upsert", "--file", str(seed_md))
    assert rc == 0, err
    api = Brain.open(brain)  # one open brain shared by the API writers' threads
    log: list[dict[str, Any]] = []
    lock = threading.Lock()
    done = threading.Event()

    def record(entry: dict[str, Any]) -> None:
        with lock:
            log.append(entry)

    async def one(w: int, i: int, rng: random.Random, mcp: _Mcp) -> None:
        kind = rng.choice(kinds)
        m = f"w{w}-{i}"
        entry: dict[str, Any] = {"kind": kind, "marker": m}
        out: dict[str, Any] | None = None
        tmp = workdir / f"in-{m}"
        try:
            if kind.startswith("cli-") or kind in ("apply", "import", "revert"):
                if kind == "cli-patch":
                    entry["args"] = {"old": END, "new": f"{m}\n{END}"}
                    args = ["skill", "patch", SKILL, "--old", END, "--new", f"{m}\n{END}", "--json"]
                elif kind == "cli-write-file":
                    tmp.write_text(f"{m}\n")
                    entry["args"] = {"rel": f"references/{m}.md", "data": f"{m}\n"}
                    args = ["skill", "write-file", SKILL, f"references/{m}.md", "--from", str(tmp), "--json"]
                elif kind == "apply":
                    rel = f"templates/{m}.md"
                    tmp.write_text(
                        json.dumps(
                            {"summary": m, "operation_type": "revise", "upsert_files": {f"{SKILL}/{rel}": f"{m}\n"}}
                        )
                    )
                    entry["args"] = {"rel": rel, "data": f"{m}\n"}
                    args = ["skill", "apply", str(tmp), "--json"]
                elif kind == "import":
                    (tmp / SKILL).mkdir(parents=True)
                    text = _skill_md(f"imported {m}\n")
                    (tmp / SKILL / "SKILL.md").write_text(text)
                    (tmp / SKILL / "references").mkdir()
                    (tmp / SKILL / "references" / "imported.md").write_text(f"{m}\n")
                    entry["args"] = {"files": {"SKILL.md": text, "references/imported.md": f"{m}\n"}}
                    args = ["import", str(tmp), "--layout", "agentskills", "--json"]
                else:  # revert
                    with lock:
                        top = max([e["version"] for e in log if "version" in e] or [1])
                    to = rng.randint(1, top)
                    entry["args"] = {"to": to}
                    args = ["skill", "revert", SKILL, "--to", str(to), "--json"]
                rc, stdout, stderr = await asyncio.to_thread(_cli, brain, *args)
                entry["rc"], entry["stderr"] = rc, stderr[-400:]
                if rc == 0:
                    doc = json.loads(stdout)
                    out = doc.get("snapshot", doc) if kind in ("apply", "import") else doc
                    if doc.get("changed") is False:  # "nothing to do" (a revert to the content it has): no version
                        out = None
            elif kind.startswith("mcp-"):
                if kind == "mcp-patch":
                    entry["args"] = {"old": END, "new": f"{m}\n{END}"}
                    res = await mcp.call(
                        "skill_manage",
                        {"action": "patch", "name": SKILL, "old_string": END, "new_string": f"{m}\n{END}"},
                    )
                elif kind == "mcp-patch-all":
                    entry["args"] = {"old": TAIL, "new": f"{m} {TAIL}", "all": True}
                    res = await mcp.call(
                        "skill_manage",
                        {
                            "action": "patch",
                            "name": SKILL,
                            "old_string": TAIL,
                            "new_string": f"{m} {TAIL}",
                            "replace_all": True,
                        },
                    )
                elif kind == "mcp-write-file":
                    entry["args"] = {"rel": f"references/{m}.md", "data": f"{m}\n"}
                    res = await mcp.call(
                        "skill_manage",
                        {
                            "action": "write_file",
                            "name": SKILL,
                            "file_path": f"references/{m}.md",
                            "file_content": f"{m}\n",
                        },
                    )
                else:  # edit: a whole new SKILL.md, written from what the agent last viewed
                    view = await mcp.call("skill_view", {"name": SKILL})
                    text = view["content"].replace(END, f"edited {m}\n{END}")
                    entry["args"] = {"content": text}
                    res = await mcp.call("skill_manage", {"action": "edit", "name": SKILL, "content": text})
                entry["rc"] = 0 if res.get("success") else 1
                entry["stderr"] = "" if res.get("success") else json.dumps(res)[:400]
                if res.get("internal"):
                    entry["traceback"] = True
                out = res.get("receipt") if res.get("success") else None
            elif kind == "tools-patch-all":  # the function-calling dispatcher, in process, on the shared brain
                from ledger.agent.tools import SkillTools

                entry["args"] = {"old": TAIL, "new": f"{m} {TAIL}", "all": True}
                res = await asyncio.to_thread(
                    SkillTools(api).call,
                    "skill_manage",
                    {
                        "action": "patch",
                        "name": SKILL,
                        "old_string": TAIL,
                        "new_string": f"{m} {TAIL}",
                        "replace_all": True,
                    },
                )
                entry["rc"] = 0 if res.get("success") else 1
                entry["stderr"] = "" if res.get("success") else json.dumps(res)[:400]
                out = res.get("receipt") if res.get("success") else None
            else:  # api-patch, api-patch-all
                every = kind == "api-patch-all"
                old, new = (TAIL, f"{m} {TAIL}") if every else (END, f"{m}\n{END}")
                entry["args"] = {"old": old, "new": new, "all": every}

                def call() -> Any:
                    with api.acting("agent", task=m):
                        return api.patch(SKILL, old, new, replace_all=every)

                try:
                    receipt = await asyncio.to_thread(call)
                    entry["rc"], out = 0, {"version": receipt.version, "commit": receipt.commit}
                except Exception as exc:  # a LedgerError is a refusal; anything else is a bug
                    from ledger.errors import LedgerError

                    entry["rc"], entry["stderr"] = 1, f"{type(exc).__name__}: {exc}"[:400]
                    if not isinstance(exc, LedgerError):
                        entry["traceback"] = True
        except Exception as exc:  # the harness's own failure to drive a surface counts as a traceback
            entry["rc"], entry["stderr"], entry["traceback"] = 1, f"harness: {type(exc).__name__}: {exc}", True
        if "Traceback" in entry.get("stderr", ""):
            entry["traceback"] = True
        if out is not None:
            entry["version"], entry["commit"] = int(out["version"]), out["commit"]
        record(entry)

    def writer(w: int) -> None:
        rng = random.Random(seed * 1000 + w)
        mcp = _Mcp(brain)

        async def body() -> None:
            for i in range(ops):
                await one(w, i, rng, mcp)

        try:
            asyncio.run(mcp.run(body, workdir / f"mcp-{w}.err"))
        except Exception as exc:
            record({"kind": "mcp-session", "marker": f"w{w}", "rc": 1, "traceback": True, "stderr": repr(exc)})

    reader_runs, reader_failures = 0, []

    def reader(r: int) -> None:
        nonlocal reader_runs
        cmds = [["skill", "view", SKILL], ["skill", "list"], ["status"], ["index"], ["skill", "show", f"{SKILL}@1"]]
        i = r
        while not done.is_set():
            rc, _, stderr = _cli(brain, *cmds[i % len(cmds)])
            with lock:
                reader_runs += 1
                if rc != 0 or "Traceback" in stderr:
                    reader_failures.append(f"{cmds[i % len(cmds)]}: {stderr.strip()[-200:]}")
            i += 1

    from tests.harness.stress import run_together

    try:
        elapsed = run_together(writer, writers, reader, readers, done)
    finally:
        done.set()  # readers stop even when a writer thread could not be joined
        api.close()
    server_tracebacks = sum(p.read_text(errors="replace").count("Traceback") for p in workdir.glob("mcp-*.err"))
    return {
        **_judge(brain, log),
        "writers": writers,
        "ops": ops,
        "reader_runs": reader_runs,
        "reader_failures": reader_failures[:10],
        "server_tracebacks": server_tracebacks,
        "seconds": round(elapsed, 1),
    }


# --------------------------------------------------------------------------- judging, from plain git


def _git(brain: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(brain), *args], capture_output=True, text=True, check=True).stdout


def _versions(brain: Path) -> dict[int, str]:
    """version → commit of the skill, from the trailers of the first-parent lineage."""
    out: dict[int, str] = {}
    raw = _git(brain, "log", "--first-parent", "--format=%H%x00%B%x01", "main")
    for chunk in raw.split("\x01"):
        if "\x00" not in chunk:
            continue
        commit, body = chunk.strip().split("\x00", 1)
        for line in body.splitlines():
            parts = line.split()
            if line.startswith("Ledger-Change: ") and len(parts) == 4 and parts[2] == SKILL:
                version = int(parts[3])
                if version in out:
                    out[-version] = commit  # a repeated version: recorded apart, to be reported
                else:
                    out[version] = commit
    return out


class _Blobs:
    """The skill's files at a commit, read through one ``git cat-file --batch``."""

    def __init__(self, brain: Path) -> None:
        self.brain = brain
        self.proc = subprocess.Popen(
            ["git", "-C", str(brain), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def blob(self, sha: str) -> bytes:
        self.proc.stdin.write(sha.encode() + b"\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        header = self.proc.stdout.readline().split()  # type: ignore[union-attr]
        data = self.proc.stdout.read(int(header[2]))  # type: ignore[union-attr]
        self.proc.stdout.read(1)  # type: ignore[union-attr]
        return data

    def files(self, commit: str) -> dict[str, str]:
        out = {}
        for line in _git(self.brain, "ls-tree", "-r", commit, f"skills/{SKILL}/").splitlines():
            meta, path = line.split("\t", 1)
            text = self.blob(meta.split()[2]).decode()
            rel = path[len(f"skills/{SKILL}/") :]
            out[rel] = _COUNTER.sub(r"\1N", text) if rel == "SKILL.md" else text
        return out

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait()


def _expected(entry: dict[str, Any], prev: dict[str, str], at: Any) -> dict[str, str]:
    """The skill after ``entry``'s operation on ``prev`` (``at(version)``: the skill at another version)."""
    kind, args = entry["kind"], entry["args"]
    files = dict(prev)
    if kind in ("cli-patch", "mcp-patch", "api-patch", "mcp-patch-all", "api-patch-all", "tools-patch-all"):
        text = files["SKILL.md"]
        if args.get("all"):
            files["SKILL.md"] = text.replace(args["old"], args["new"])
        else:
            assert text.count(args["old"]) == 1, "a one-match patch was acknowledged on a base with other matches"
            files["SKILL.md"] = text.replace(args["old"], args["new"], 1)
    elif kind in ("cli-write-file", "mcp-write-file", "apply"):
        files[args["rel"]] = args["data"]
    elif kind == "mcp-edit":
        files["SKILL.md"] = _COUNTER.sub(r"\1N", args["content"])
    elif kind == "import":
        files = {rel: _COUNTER.sub(r"\1N", t) if rel == "SKILL.md" else t for rel, t in args["files"].items()}
    elif kind == "revert":
        files = at(args["to"])
    return files


def _judge(brain: Path, log: list[dict[str, Any]]) -> dict[str, Any]:
    versions = _versions(brain)
    repeated = sorted(-v for v in versions if v < 0)
    top = max((v for v in versions if v > 0), default=0)
    contiguous = sorted(v for v in versions if v > 0) == list(range(1, top + 1))
    acked = [e for e in log if e.get("rc") == 0 and "version" in e]
    ack_versions = [e["version"] for e in acked]
    duplicates = len(ack_versions) - len(set(ack_versions))
    blobs = _Blobs(brain)
    memo: dict[int, dict[str, str]] = {}

    def at(version: int) -> dict[str, str]:
        if version not in memo:
            memo[version] = blobs.files(versions[version])
        return memo[version]

    lost, stale = [], []
    try:
        for e in acked:
            if versions.get(e["version"]) != e["commit"]:
                lost.append(
                    f"{e['marker']} ({e['kind']}): acknowledged as v{e['version']} {e['commit'][:12]}, "
                    f"which the lineage does not hold"
                )
                continue
            if e["version"] < 2:
                continue
            try:
                want = _expected(e, at(e["version"] - 1), at)
            except AssertionError as exc:
                stale.append(f"{e['marker']} ({e['kind']}) v{e['version']}: {exc}")
                continue
            if want != at(e["version"]):
                diff = sorted(k for k in set(want) | set(at(e["version"])) if want.get(k) != at(e["version"]).get(k))
                stale.append(
                    f"{e['marker']} ({e['kind']}) v{e['version']}: not its operation on v{e['version'] - 1}"
                    f" (differs in {diff[:3]})"
                )
    finally:
        blobs.close()
    verify = subprocess.run([LEDGER, "--brain", str(brain), "verify"], capture_output=True, text=True, env=_env())
    by_kind: dict[str, list[int]] = {}
    for e in log:
        by_kind.setdefault(e["kind"], [0, 0])[0 if e.get("rc") == 0 else 1] += 1
    return {
        "operations": len(log),
        "acked": len(acked),
        "by_surface": {k: {"acked": v[0], "refused": v[1]} for k, v in sorted(by_kind.items())},
        "refusals": [f"{e['marker']} ({e['kind']}): {e.get('stderr', '')[:200]}" for e in log if e.get("rc")][:10],
        "lost": lost[:10],
        "lost_count": len(lost),
        "stale_base": stale[:10],
        "stale_count": len(stale),
        "duplicate_versions": duplicates + len(repeated),
        "versions_contiguous": contiguous,
        "versions": top,
        "tracebacks": sum(1 for e in log if e.get("traceback")),
        "traceback_examples": [e.get("stderr", "")[:300] for e in log if e.get("traceback")][:3],
        "verify_ok": verify.returncode == 0,
    }


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description="Every write surface on one skill (docs/RELIABILITY.md)")
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--ops", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(KINDS), help="the surfaces to mix (default: all)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ledger-mixed-") as d:
        kinds = tuple(args.kinds.split(","))
        print(json.dumps(mixed_run(Path(d), args.writers, args.ops, args.seed, kinds=kinds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
