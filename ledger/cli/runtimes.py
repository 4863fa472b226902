"""Runtimes' folders as targets: ``ledger runtimes``, ``link``, ``unlink`` and ``sync`` (with ``--watch``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from ledger.cli.common import emit, json_flag, main, open_brain
from ledger.errors import LedgerError, UsageError

_LAYOUTS = ("agentskills", "claude", "hermes")


@main.command()
@json_flag
@click.pass_context
def runtimes(ctx: click.Context, as_json: bool) -> None:
    """The runtimes' skills folders on this machine, and which are linked to the brain."""
    from dataclasses import asdict

    from ledger.brain import find_brain
    from ledger.exchange.targets import Targets
    from ledger.exchange.targets import runtimes as known

    linked: dict[str, str] = {}
    try:
        root = find_brain(ctx.obj["brain"], search_up=ctx.obj["brain"] is None)
        linked = {t.path: t.name for t in Targets(root / ".ledger").all()}
    except LedgerError:
        pass  # outside a brain: the runtimes alone
    from ledger.exchange.targetfs import TargetFS

    rows = []
    for rt in known():
        path = Path(rt.path)
        count = None
        if path.is_dir():
            try:  # counted as sync reads it: through descriptors, no link followed
                with TargetFS(os.path.realpath(path), rt.layout, 1) as fs:
                    count = len(fs.scan().skills)
            except (LedgerError, OSError):
                count = None
        rows.append({**asdict(rt), "exists": path.is_dir(), "skills": count,
                     "linked": linked.get(os.path.realpath(path))})  # fmt: skip
    if as_json:
        emit(rows)
        return
    for r in rows:
        state = f"{r['skills']} skill(s)" if r["exists"] else "absent"
        flags = ("installed" if r["installed"] else "not installed") + (f", linked as {r['linked']}" if r["linked"]
                                                                         else "")  # fmt: skip
        click.echo(f"{r['name']:15} {r['path']:44} {r['layout']:12} {state:14} {flags}")


@main.command()
@click.argument("where")
@click.option("--layout", type=click.Choice(_LAYOUTS),
              help="The folder's layout (default: the runtime's, or agentskills).")  # fmt: skip
@click.option("--skills", "pattern", help="Only skills whose key matches this glob (the rest are left alone).")
@click.option("--committed", is_flag=True, help="Project the root last committed on chain, not the head.")
@click.option("--name", help="The target's name (default: the runtime's, or the folder's).")
@click.option("--actor", type=click.Choice(["agent", "curator", "user"]), default="agent", show_default=True,
              help="Who is recorded as making the changes found there.")  # fmt: skip
@click.option("--runtime", "runtime_name", help="Recorded as Ledger-Runtime (default: the runtime, or the name).")
@json_flag
@click.pass_context
def link(ctx: click.Context, where: str, layout: str | None, pattern: str | None, committed: bool, name: str | None,
         actor: str, runtime_name: str | None, as_json: bool) -> None:  # fmt: skip
    """Add a target: WHERE is a runtime from 'ledger runtimes' (claude, hermes, agents, …) or a folder.

    The folder is made if missing.  Nothing is written until 'ledger sync', which adopts the
    skills already there and projects the brain's.
    """
    from ledger.exchange.targets import Target, Targets
    from ledger.exchange.targets import runtimes as known

    by_name = {rt.name: rt for rt in known()}
    if where in by_name:
        rt = by_name[where]
        path, layout, runtime_name = rt.path, layout or rt.layout, runtime_name or rt.runtime
        name = name or rt.name
    else:
        if os.sep not in where and not os.path.exists(where):
            raise UsageError(f"{where!r} is neither a runtime nor a folder", hint="see 'ledger runtimes'")
        path, layout = where, layout or "agentskills"
        name = name or Path(os.path.abspath(where)).name.lstrip(".").lower() or "target"
    with open_brain(ctx) as brain:
        real = Path(os.path.realpath(path))
        if real == brain.root or brain.root in real.parents or real in brain.root.parents:
            raise LedgerError(f"{real} overlaps the brain at {brain.root}", hint="a target is another folder")
        real.mkdir(parents=True, exist_ok=True)
        target = Target(name, str(real), "hermes" if layout == "hermes" else layout, runtime_name or name, actor,
                        pattern, committed)  # fmt: skip
        Targets(brain.control).add(target)
    if as_json:
        from dataclasses import asdict

        emit(asdict(target))
    else:
        click.echo(f"linked {target.name}: {target.path} ({target.layout}); run 'ledger sync' to project the brain")


@main.command()
@click.argument("name")
@json_flag
@click.pass_context
def unlink(ctx: click.Context, name: str, as_json: bool) -> None:
    """Remove a target; its files are left as they are."""
    from ledger.exchange.targets import Targets

    with open_brain(ctx) as brain:
        gone = Targets(brain.control).remove(name)
    if as_json:
        emit({"unlinked": gone.name, "path": gone.path})
    else:
        click.echo(f"unlinked {gone.name}; {gone.path} is left as it is")


@main.command()
@click.argument("names", nargs=-1)
@click.option("--take", nargs=2, metavar="SIDE SKILL",
              help="Settle a conflict: SIDE is 'ledger' or the target whose copy wins.")  # fmt: skip
@click.option("--confirm-deletions", "confirm", multiple=True, metavar="TARGET",
              help="Record the skills gone from TARGET as deletions, however many.")  # fmt: skip
@click.option("--watch", is_flag=True, help="Keep syncing as files change (Ctrl-C stops).")
@click.option("--debounce", type=float, default=0.2, show_default=True, help="Seconds of quiet before a watch sync.")
@json_flag
@click.pass_context
def sync(ctx: click.Context, names: tuple[str, ...], take: tuple[str, str] | None, confirm: tuple[str, ...],
         watch: bool, debounce: float, as_json: bool) -> None:  # fmt: skip
    """Project the brain into every linked target and record what changed there.

    Exit 1 while a conflict or a refused target remains (with --json, after printing the report).
    """
    from ledger.exchange.projection import Projection
    from ledger.exchange.targets import Targets

    with open_brain(ctx) as brain:
        targets = Targets(brain.control)
        chosen = [targets.get(n) for n in names] if names else targets.all()
        if not chosen:
            raise LedgerError("no targets are linked", hint="'ledger link claude' (see 'ledger runtimes')")
        committed = _committed(brain) if any(t.committed for t in chosen) else None
        engine = Projection(brain, targets)
        if watch:
            from ledger.exchange.watching import watch as run_watch

            if take or confirm:
                raise UsageError("--watch does not take --take or --confirm-deletions", hint="run them once first")
            run_watch(engine, chosen, debounce=debounce, on_report=lambda r: _say(r, as_json, quiet=True),
                      committed=(lambda: _committed(brain)) if committed is not None else None)  # fmt: skip
            return
        report = engine.sync(names, take=take, confirm_deletions=confirm, committed=committed)
        _say(report, as_json)
    if report["conflicts"] or report["refused"]:
        click.echo(f"error: {report['conflicts']} conflict(s) and {report['refused']} refused target(s) remain "
                   "(see above); nothing was overwritten", err=True)  # fmt: skip
        sys.exit(1)


def _committed(brain: Any) -> bytes:
    from ledger.exchange.anchoring import committed_snapshot

    return committed_snapshot(brain)


def _say(report: dict[str, Any], as_json: bool, quiet: bool = False) -> None:
    if as_json:
        emit(report)
        return
    for t in report["targets"]:
        if t["status"] != "ok":
            click.echo(click.style("refused ", fg="red") + f"{t['name']}: {t['reason']}\n        hint: {t['hint']}")
            continue
        for r in t["recorded"]:
            click.echo(f"recorded  {r['skill']} v{r['version']} ({r['action']}) from {t['name']}")
        for key in t["projected"]:
            click.echo(f"projected {key} → {t['name']}")
        for key in t["removed"]:
            click.echo(f"removed   {key} from {t['name']}")
        for r in t["rescued"]:
            click.echo(click.style("rescued  ", fg="yellow") + f" {r['skill']}: kept in {t['path']}/{r['kept']}")
        for c in t["conflicts"]:
            click.echo(click.style("CONFLICT ", fg="red") + f" {c['skill']} in {t['name']} ({', '.join(c['files'])})"
                       f"\n          settle: {c['hint']}")  # fmt: skip
        if not quiet:
            for a in t["left_alone"]:
                click.echo(f"left alone {t['name']}/{a['dir']}: {a['reason']}")
        busy = t["recorded"] or t["projected"] or t["removed"] or t["conflicts"]
        if not busy and not quiet:
            click.echo(f"{t['name']}: in step")
