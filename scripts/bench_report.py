"""Write docs/BENCHMARKS.md and docs/benchmarks.png from the JSON that scripts/bench measured.

Nothing here is hand-written: every number comes from ``bench-out/core.json``,
``bench-out/lifetime.json`` and ``bench-out/reads.json`` of one run; every target is a ratio
against an anchor measured in that same run, or (issue 20's agent reads) a p50/p99 on this machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path


def _ms(s: float) -> str:
    return f"{s * 1000:,.0f} ms" if s >= 0.1 else f"{s * 1000:,.1f} ms"


def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB"


def rows(
    core: dict, life: dict, reads: dict | None = None, sync: dict | None = None
) -> list[tuple[str, str, str, float, float]]:
    """(figure, measured, anchor, ratio, target) for every target of issues 2, 12, 20 and 22."""
    c, L = core.get("results", {}), life
    out = []

    def add(figure: str, value: float, anchor: float, target: float, fmt=_ms, anchor_name: str = "") -> None:
        out.append((figure, fmt(value), f"{anchor_name} {fmt(anchor)}".strip(), value / anchor, target))

    if c:
        n = c.get("skills", 10_000)
        add(f"full `ledger hash`, {n:,} skills", c["ledger_hash_s"], c["b3sum_s"], 1.0, anchor_name="b3sum")
        add(
            f"in-process upsert, {n:,} skills",
            c["upsert_big_s"],
            c["git_add_commit_s"],
            0.25,
            anchor_name="git add -A && commit",
        )
        add(
            f"CLI `skill patch`, {n:,} skills, signing on",
            c["cli_patch_s"],
            c["git_add_commit_s"],
            0.8,
            anchor_name="git add -A && commit",
        )
    add(
        f"`.git` after {L['upserts']:,} upserts on {L['skills']:,} skills",
        L["git_bytes"],
        L["aggressive_bytes"],
        2.0,
        _mb,
        "git gc --aggressive",
    )
    add(f"p99 upsert latency during those {L['upserts']:,}", L["p99_s"], L["p50_s"], 3.0, anchor_name="p50")
    add(
        "`ledger status`, chain configured, RPC down",
        L["status_rpc_down_s"],
        L["status_no_chain_s"],
        1.2,
        anchor_name="no chain",
    )
    add(
        "`ledger chain anchor`, nothing to commit",
        L["commit_nothing_s"],
        L["git_status_s"],
        5.0,
        anchor_name="git status",
    )
    add(
        f"`ledger status`, {L['skills']:,} skills, clean",
        L["status_s"],
        L["git_status_s"],
        1.5,
        anchor_name="git status",
    )
    add(f"`ledger skill list`, {L['skills']:,} skills", L["list_s"], L["git_status_s"], 1.5, anchor_name="git status")
    add(f"`ledger index`, {L['skills']:,} skills", L["index_s"], L["git_status_s"], 1.5, anchor_name="git status")
    add(
        f"first snapshot of {L['bulk_skills']:,} skills",
        L["first_snapshot_s"],
        L["git_add_commit_bulk_s"],
        1.0,
        anchor_name="git add -A && commit",
    )
    if "cp_git_add_commit_bulk_s" in L:  # the issue-35 anchor: an import copies the files in, too
        add(
            f"import of {L['bulk_skills']:,} skills",
            L["import_s"],
            L["cp_git_add_commit_bulk_s"],
            1.0,
            anchor_name="cp -r && git add -A && commit",
        )
    else:
        add(
            f"import of {L['bulk_skills']:,} skills",
            L["import_s"],
            L["git_add_commit_bulk_s"],
            1.0,
            anchor_name="git add -A && commit",
        )
    add(
        f"in-process upsert at {L['scale_big']:,} skills",
        L["upsert_big_s"],
        L["upsert_small_s"],
        3.0,
        anchor_name=f"at {L['scale_small']}",
    )
    out.append(
        (
            f"peak RSS, CLI upsert at {L['scale_big']:,} skills",
            f"{L['cli_upsert_rss_mb']:.0f} MB",
            "300 MB",
            L["cli_upsert_rss_mb"] / 300,
            1.0,
        )
    )
    add(
        f"`ledger verify`, {L['verify_snapshots']:,} snapshots × {L['verify_skills']:,} skills, after gc",
        L["verify_after_gc_s"],
        L["verify_before_gc_s"],
        1.2,
        anchor_name="before gc",
    )
    if reads:
        out += read_rows(reads)
    if sync:
        out += sync_rows(sync)
    return out


def sync_rows(s: dict) -> list[tuple[str, str, str, float, float]]:
    """Issue 22: ``ledger sync`` against git status and cp -r, and the watcher's latency."""
    n, w, f = s["noop"], s["watch"], s["first"]
    no_remote = (
        [
            (
                f"no-op `ledger sync --no-remote`, {n['targets']} targets × {n['skills']:,} skills",
                _ms(n["sync_no_remote_s"]),
                f"`ledger sync` {_ms(n['sync_s'])}",
                n["no_remote_ratio"],
                n["no_remote_target_ratio"],
            )
        ]
        if "sync_no_remote_s" in n
        else []
    )
    return [
        (
            f"no-op `ledger sync`, {n['targets']} targets × {n['skills']:,} skills",
            _ms(n["sync_s"]),
            f"git status {_ms(n['git_status_s'])}",
            n["ratio"],
            n["target_ratio"],
        ),
        *no_remote,
        (
            f"`sync --watch`: an edit in a target to its version, p50 ({w['edits']} edits)",
            _ms(w["p50_s"]),
            "target 1 s",
            w["p50_s"] / w["target_p50_s"],
            1.0,
        ),
        (
            f"first projection of {f['skills']:,} skills ({f['files']:,} files)",
            _ms(f["sync_s"]),
            f"cp -r {_ms(f['cp_r_s'])}",
            f["ratio"],
            f["target_ratio"],
        ),
    ]


def read_rows(r: dict) -> list[tuple[str, str, str, float, float]]:
    """Issue 20: the agent's reads (absolute p50/p99 targets), bulk snapshots, gas."""
    out = []
    sizes = r["sizes"]

    def absolute(figure: str, seconds: float, limit_ms: float) -> None:
        out.append((figure, _ms(seconds), f"target {limit_ms:g} ms", seconds * 1000 / limit_ms, 1.0))

    # The targets are set at 10k skills; a --quick run shows its largest size against the same ones.
    at = "10000" if "10000" in sizes else max(sizes, key=int, default=None)
    if at is not None:
        m, k = sizes[at]["mcp"], "10k" if at == "10000" else f"{int(at):,}"
        absolute(f"warm MCP `skill_view` p50, receipt and proof, {k} skills", m["view"]["p50_s"], 5)
        absolute(f"warm MCP `skill_view` p99, receipt and proof, {k} skills", m["view"]["p99_s"], 15)
        absolute(f"warm MCP `skills_list` p50, {k} skills", m["list"]["p50_s"], 25)
        if "skills_ext" in sizes[at]:  # issue 50: the Skills extension's listing, a page with each entry's anchor
            e = sizes[at]["skills_ext"]
            head = (
                f", at the import that made them (its commit {e['head_commit_bytes'] / 1e6:.2f} MB)"
                if "head_commit_bytes" in e
                else ""
            )
            absolute(
                f"warm MCP `skills/list` p50 (Skills extension), a page of {e['page_skills']} entries with "
                f"anchors ({e['page_bytes'] / 1e6:.2f} MB), {k} skills{head}",
                e["page"]["p50_s"],
                25,
            )
        absolute(f"warm MCP index (`ledger://index`) p50, {k} skills", m["index"]["p50_s"], 25)
        if at == "10000" and "100000" in sizes:
            big = sizes["100000"]["mcp"]["view"]["p50_s"]
            out.append(
                (
                    "warm MCP `skill_view` p50, 100k skills",
                    _ms(big),
                    f"10k skills {_ms(m['view']['p50_s'])}",
                    big / m["view"]["p50_s"],
                    2.0,
                )
            )
    n = r.get("bulk_skills")
    for counters in ("no_counters", "counters"):
        for synced in ("sync", "nosync"):
            tag = f"{counters}_{synced}"
            if f"snapshot_{tag}_s" in r:
                what = "without counters" if counters == "no_counters" else "with counters"
                when = "after a `sync`" if synced == "sync" else "no `sync`"
                out.append(
                    (
                        f"first snapshot of {n:,} skills {what}, {when}",
                        _ms(r[f"snapshot_{tag}_s"]),
                        f"git add -A && commit {_ms(r[f'git_{tag}_s'])}",
                        r[f"snapshot_{tag}_s"] / r[f"git_{tag}_s"],
                        1.0,
                    )
                )
    if "commit_gas" in r:
        out.append(
            (
                "steady-state `commit` on chain, transaction gas",
                f"{r['commit_gas']:,} gas",
                "target 35,000 gas",
                r["commit_gas"] / 35_000,
                1.0,
            )
        )
    return out


def edge_rows(chain: dict | None, edges: dict | None) -> list[tuple[str, str, str, float, float]]:
    """Issue 35: the edges a user waits on: chain commands, `keys new`, MCP start-up."""
    out = []
    if chain:
        web3_ms = chain["chain_status_web3_ms"] if chain["chain_status_imports_web3"] else 0.0
        out.append(
            (
                "`import web3` on a light chain command (`chain status`)",
                f"{web3_ms:,.0f} ms" if web3_ms else "not imported",
                f"`import web3` {_ms(chain['import_web3_s'])}",
                web3_ms / 1000 / chain["import_web3_s"],
                0.0,
            )
        )
        out.append(
            (
                "`ledger chain status` against a running Anvil",
                _ms(chain["chain_status_s"]),
                "target 400 ms",
                chain["chain_status_s"] / 0.4,
                1.0,
            )
        )
    if edges:
        out.append(
            (
                f"`ledger keys new` (scrypt n=2^{edges['kdf_n'].bit_length() - 1} alone: {_ms(edges['kdf_s'])})",
                _ms(edges["keys_new_s"]),
                "target 1 s",
                edges["keys_new_s"],
                1.0,
            )
        )
        for key, size in (("mcp_1", "1 skill"), ("mcp_big", f"{edges['skills']:,} skills")):
            m = edges[key]
            out.append(
                (
                    f"MCP spawn → `initialize` answer, {size}, warm (`tools/list` {_ms(m['tools_s'])})",
                    _ms(m["init_s"]),
                    "target 500 ms",
                    m["init_s"] / 0.5,
                    1.0,
                )
            )
            if m.get("first_init_s"):
                out.append(
                    (
                        f"MCP spawn → `initialize` answer, {size}, first start (page cache dropped)",
                        _ms(m["first_init_s"]),
                        "target 500 ms",
                        m["first_init_s"] / 0.5,
                        1.0,
                    )
                )
    return out


def epoch_rows(ep: dict | None) -> list[tuple[str, str, str, float, float]]:
    """Issue 37: anchoring many agents per epoch, beside a direct commit on the same registry."""
    if not ep:
        return []
    real = f"{ep['real_heads_epoch1']:,} real" + (
        f", {ep['synthetic_heads_epoch1']:,} synthetic" if ep["synthetic_heads_epoch1"] else ""
    )
    worst = ep["max_gas_per_head"]
    return [
        (
            f"gas per anchored head, {ep['heads_per_epoch']:,} heads an epoch ({real} in epoch 1; worst of "
            f"{len(ep['epochs'])} epochs)",
            f"{worst:,.1f} gas",
            f"direct commit {ep['direct_commit_gas']:,} gas",
            worst / 100,
            1.0,
        ),
        (
            "an epoch receipt verified offline (median)",
            f"{ep['verify_receipt_us']:,.0f} µs",
            "target 1 ms",
            ep["verify_receipt_us"] / 1000,
            1.0,
        ),
    ]


def outcome_rows(o: dict | None) -> list[tuple[str, str, str, float, float]]:
    """Issue 38: recording outcomes, competence at scale, the report page; each against its floor or neighbour."""
    if not o:
        return []
    r, s, p = o["record"], o["stats"], o["report"]
    return [
        (
            f"bulk import of {r['outcomes']:,} outcomes (each signed, checked, appended)",
            f"{r['bulk_import_s']:.1f} s",
            f"signing {r['outcomes']:,} digests alone {r['sign_floor_s']:.1f} s",
            r["bulk_vs_sign"],
            4.0,
        ),
        (
            f"one `outcome` snapshot on a {r['outcomes']:,}-entry log",
            _ms(r["single_record_s"]),
            f"one `git commit` {_ms(r['single_git_commit_s'])}",
            r["single_vs_git"],
            1.5,
        ),
        (
            f"audit `evidence` of {r['outcomes']:,} outcomes",
            f"{r['audit_evidence_s']:.1f} s",
            f"recovering as many signatures {r['recover_floor_s']:.1f} s",
            r["audit_vs_recover"],
            4.0,
        ),
        (
            f"`ledger log --stats`, {s['skills']:,} skills, {s['outcomes']:,} outcomes",
            _ms(s["log_stats_s"]),
            f"`skill list` {_ms(s['skill_list_s'])}",
            s["log_stats_vs_list"],
            4.0,
        ),
        (
            f"`ledger report`, {p['skills']:,} skills × {p['versions']} versions, {p['outcomes']:,} outcomes",
            f"{p['report_s']:.1f} s",
            f"`ledger verify` {p['verify_s']:.1f} s",
            p["report_vs_verify"],
            1.5,
        ),
    ]


def eval_rows(e: dict | None) -> list[tuple[str, str, str, float, float]]:
    """Issue 47: the ledger's own overhead per eval run, against a bare loop running the same no-op runner."""
    if not e:
        return []
    return [
        (
            f"`ledger eval run`, {e['runs']} runs of a {e['sleep_s']:g} s no-op runner (sandboxes, grading, one "
            f"signed batch); {e['overhead_ms_per_run']:.0f} ms per run",
            f"{e['ledger_s']:.2f} s",
            f"the same commands by a bare loop {e['anchor_s']:.2f} s",
            e["ratio"],
            1.05,
        ),
    ]


def lift_rows(lift: dict | None) -> list[tuple[str, str, str, float, float]]:
    """Issue 47: ``show --stats`` with lift at scale, against ``skill list`` on the same brain."""
    if not lift:
        return []
    return [
        (
            f"`ledger show NAME --stats` with lift, {lift['skills']:,} skills, {lift['runs']:,} eval runs",
            _ms(lift["show_stats_s"]),
            f"`skill list` {_ms(lift['skill_list_s'])}",
            lift["show_vs_plain_list"],
            4.0,
        )
    ]  # the anchor: plain `skill list` (the faster, so the harder)


def sandbox_rows(sb: dict | None) -> list[tuple[str, str, str, float, float]]:
    """Issue 49: one script run in the sandbox (bwrap + strace, canaries, the trace read), against it run bare."""
    if not sb:
        return []
    return [
        (
            f"`ledger scan --run`: one small script in the sandbox (bwrap + strace, {sb['scripts']} scripts)",
            f"{sb['sandbox_ms_per_script']:.0f} ms",
            f"the same script run bare {sb['bare_ms_per_script']:.0f} ms",
            sb["ratio"],
            5.0,
        )
    ]


def scan_rows(scan: dict | None) -> list[tuple[str, str, str, float, float]]:
    """Issue 49: the static scan of the public skills, against the scanner at an earlier revision
    timed in the same run (``scripts/scan-bench --anchor REV --json``, docs/scanner.md)."""
    if not scan or "timing" not in scan:
        return []
    t = scan["timing"]
    return [
        (
            f"static scan (`scripts/scan-corpus`) of {t['skills']} public skills",
            f"{t['seconds']:.1f} s",
            f"the scanner at `{t['anchor']}` {t['anchor_seconds']:.1f} s",
            t["ratio"],
            2.0,
        )
    ]


def _rate_cell(r: dict) -> str:
    return f"{r['k']}/{r['n']} ({100 * r['rate']:.1f}%, {100 * r['low']:.1f}–{100 * r['high']:.1f})" if r["n"] else "–"


def scan_rate_lines(scan: dict | None) -> list[str]:
    """Issue 49: the scanners' error rates on the public corpora (scripts/scan-bench --json)."""
    if not scan:
        return []
    lines = [
        "",
        "Scanner error rates on the public corpora (`scripts/scan-bench`, docs/scanner.md "
        '"Measured error rates"; k/n, rate, 95% Wilson interval):',
        "",
        "| scanner | malicious refused | malicious high or above | benign refused | benign high or above |",
        "|---|---|---|---|---|",
    ]
    for name, block in scan["total"].items():
        label = f"`{name}` {scan['versions'][name]}" if name.startswith("ext:") else f"`{name}`"
        rates = ("recall_critical", "recall_high", "fpr_critical", "fpr_high")
        cells = [_rate_cell(block["figures"][c]) for c in rates]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


# The figures before issue 35, beside the rows it targets: BENCHMARKS.md at 56f4480, and the
# issue's own measurements on main 0b7d61d where that file had no row.
BEFORE = {
    "CLI `skill patch`": "1.18× (0.94–1.18×)",
    "import of": "1.16×",
    "first snapshot of 10,000 skills without counters, after a `sync`": "1.31×",
    "warm MCP `skills_list` p50, 10k": "63.9 ms (2.56×)",
    "steady-state `commit`": "36,448 gas",
    "no-op `ledger sync --no-remote`": "6.15× (418 ms against 68 ms: issue 51)",
    "no-op `ledger sync`": "12.72× (12.7–16.4×)",
    "`import web3`": "1.06 s on every chain command",
    "`ledger chain status`": "0.90 s (1.3–1.5 s for a new user)",
    "`ledger keys new`": "1.36 s (3.3 s for a new user)",
    "MCP spawn → `initialize` answer, 1 skill, warm": "531 ms (0.63 s in the issue)",
    "MCP spawn → `initialize` answer, 10,000 skills, warm": "584 ms",
    "MCP spawn → `initialize` answer, 1 skill, first": "2.2–2.4 s for a new user",
    "gas per anchored head": "36,448 gas (one commit a head)",
}


def before(figure: str) -> str:
    return next((v for k, v in BEFORE.items() if figure.startswith(k)), "")


def plot(life: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes, lat = zip(*life["curve"], strict=True)
    left.plot(sizes, [t * 1000 for t in lat], marker="o")
    left.set_xscale("log")
    left.set_xlabel("brain size (skills)")
    left.set_ylabel("in-process upsert, median (ms)")
    left.set_title("Upsert latency against brain size")
    left.set_ylim(bottom=0)
    left.grid(True, alpha=0.3)
    snaps, git = zip(*life["size_series"], strict=True)
    right.plot(snaps, [b / 1e6 for b in git], label="`.git` during the burst (the packer waits for a pause)")
    right.plot(
        [snaps[-1]],
        [life["git_bytes"] / 1e6],
        marker="o",
        linestyle="none",
        color="C1",
        label="`.git` once the packer has run",
    )
    right.axhline(life["aggressive_bytes"] / 1e6, color="grey", linestyle="--", label="git gc --aggressive")
    right.set_ylim(bottom=0)
    right.set_xlabel(f"upserts on a {life['skills']:,}-skill brain")
    right.set_ylabel("MB")
    right.set_title("Store size against snapshot count")
    right.legend(loc="upper left")
    right.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--core", default="bench-out/core.json")
    ap.add_argument("--lifetime", default="bench-out/lifetime.json")
    ap.add_argument("--reads", default="bench-out/reads.json")
    ap.add_argument("--sync", default="bench-out/sync.json")
    ap.add_argument("--chain", default="bench-out/chain.json")
    ap.add_argument("--edges", default="bench-out/edges.json")
    ap.add_argument("--epochs", default="bench-out/epochs.json")
    ap.add_argument("--outcomes", default="bench-out/outcomes.json")
    ap.add_argument("--evals", default="bench-out/evals.json")
    ap.add_argument("--lift", default="bench-out/lift.json")
    ap.add_argument("--sandbox", default="bench-out/sandbox.json")
    ap.add_argument("--scan", default="bench-out/scan.json")
    ap.add_argument("--out", default="docs/BENCHMARKS.md")
    ap.add_argument("--plot", default="docs/benchmarks.png", help="'' for none (scripts/bench --quick)")
    args = ap.parse_args()
    core = json.loads(Path(args.core).read_text()) if Path(args.core).exists() else {}
    life = json.loads(Path(args.lifetime).read_text())
    reads = json.loads(Path(args.reads).read_text()) if Path(args.reads).exists() else None
    sync = json.loads(Path(args.sync).read_text()) if Path(args.sync).exists() else None
    chain = json.loads(Path(args.chain).read_text()) if Path(args.chain).exists() else None
    edges = json.loads(Path(args.edges).read_text()) if Path(args.edges).exists() else None
    epochs = json.loads(Path(args.epochs).read_text()) if Path(args.epochs).exists() else None
    outcomes = json.loads(Path(args.outcomes).read_text()) if Path(args.outcomes).exists() else None
    evals = json.loads(Path(args.evals).read_text()) if Path(args.evals).exists() else None
    lift = json.loads(Path(args.lift).read_text()) if Path(args.lift).exists() else None
    sb = json.loads(Path(args.sandbox).read_text()) if Path(args.sandbox).exists() else None
    scan = json.loads(Path(args.scan).read_text()) if Path(args.scan).exists() else None
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    mem = next(ln.split()[1] for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `./scripts/bench` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} at commit "
        f"`{commit}`. Do not edit: run `./scripts/bench` again.",
        "",
        f"Machine: {life['machine']['cpus']} cores ({cpu}), {int(mem) / 1024 / 1024:.0f} GiB, "
        f"Python {life['machine']['python']}, {life['machine']['git']}, {platform.system()} {platform.release()}.",
        "",
        "Every ratio divides the figure by an anchor measured in the same run on the same files; times are medians.",
        "",
        "The *before* column holds the figure before issue 35 (see `BEFORE` in scripts/bench_report.py).",
        "",
        "| figure | measured | anchor | ratio | target | | before |",
        "|---|---|---|---|---|---|---|",
    ]
    table = (
        rows(core, life, reads, sync)
        + edge_rows(chain, edges)
        + epoch_rows(epochs)
        + outcome_rows(outcomes)
        + eval_rows(evals)
        + lift_rows(lift)
        + sandbox_rows(sb)
        + scan_rows(scan)
    )
    for figure, measured, anchor, ratio, target in table:
        verdict = "PASS" if ratio <= target else "**MISS**"
        cells = (figure, measured, anchor, f"{ratio:.2f}×", f"≤ {target:g}×", verdict, before(figure))
        lines.append("| " + " | ".join(cells) + " |")
    lines += scan_rate_lines(scan)
    if args.plot:
        lines += ["", f"![upsert latency and store size]({Path(args.plot).name})", ""]
    lines += [
        "Raw figures: `bench-out/core.json`, `lifetime.json`, `reads.json`, `sync.json`, `chain.json`, "
        "`edges.json`, `epochs.json`, `outcomes.json`, `evals.json`, `lift.json`, `sandbox.json`, "
        "`scan.json` (not committed).",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    if args.plot:
        plot(life, Path(args.plot))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
