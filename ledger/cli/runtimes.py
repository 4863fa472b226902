"""Runtimes' folders as targets: ``ledger runtimes``, ``link``, ``unlink`` and ``sync`` (with ``--watch``)."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import click

from ledger.cli.common import emit, json_flag, main, open_brain, renamed_option, say_refused_refs
from ledger.errors import LedgerError, UsageError

_LAYOUTS = ("agentskills", "claude", "hermes")


@main.command()
@json_flag
@click.pass_context
def runtimes(ctx: click.Context, as_json: bool) -> None:
    """The runtimes' skills folders on this machine, and which are linked to the brain."""
    from dataclasses import asdict

    from ledger._paths import find_brain
    from ledger.sync.targets import Targets
    from ledger.sync.targets import runtimes as known

    linked: dict[str, str] = {}
    try:
        root = find_brain(ctx.obj["brain"], search_up=ctx.obj["brain"] is None)
        linked = {t.path: t.name for t in Targets(root / ".ledger").all()}
    except LedgerError:
        pass  # outside a brain: the runtimes alone
    from ledger.folders.folder import TargetFS

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
@renamed_option("--anchored", "--committed", "committed", is_flag=True,
                help="Project the root last anchored on chain, not the head.")
@click.option("--best-verified", is_flag=True, help="Project each skill's version with the best verified outcomes "
              "(highest lower Wilson bound), not the head's; skills with none verified: the head's.")  # fmt: skip
@click.option("--name", help="The target's name (default: the runtime's, or the folder's).")
@click.option("--actor", type=click.Choice(["agent", "curator", "user"]), default="agent", show_default=True,
              help="Who is recorded as making the changes found there.")  # fmt: skip
@click.option("--runtime", "runtime_name", help="Recorded as Ledger-Runtime (default: the runtime, or the name).")
@json_flag
@click.pass_context
def link(ctx: click.Context, where: str, layout: str | None, pattern: str | None, committed: bool,
         best_verified: bool, name: str | None, actor: str, runtime_name: str | None,
         as_json: bool) -> None:  # fmt: skip
    """Add a target: WHERE is a runtime from 'ledger runtimes' (claude, hermes, agents, …) or a folder.

    The folder is made if missing.  Nothing is written until 'ledger sync', which adopts the
    skills already there and projects the brain's.
    """
    from ledger.sync.targets import Target, Targets
    from ledger.sync.targets import runtimes as known

    if committed and best_verified:
        raise UsageError("--committed and --best-verified are two pins; choose one")

    by_name = {rt.name: rt for rt in known()}
    if where in by_name:
        rt = by_name[where]
        path, layout, runtime_name = rt.path, layout or rt.layout, runtime_name or rt.runtime
        name = name or rt.name
    else:
        if os.sep not in where and not os.path.exists(where):
            raise UsageError(f"{where!r} is neither a runtime nor a folder", hint="see 'ledger runtimes'")
        real = os.path.realpath(where)
        rt = next((r for r in by_name.values() if os.path.realpath(r.path) == real), None)
        if rt is not None:  # a runtime's own folder, given by path: named and laid out as that runtime
            path, layout, runtime_name, name = where, layout or rt.layout, runtime_name or rt.runtime, name or rt.name
        else:
            path, layout = where, layout or "agentskills"
            name = name or _folder_name(Path(os.path.abspath(where)))

    with open_brain(ctx) as brain:
        real = Path(os.path.realpath(path))
        if real == brain.root or brain.root in real.parents or real in brain.root.parents:
            raise LedgerError(f"{real} overlaps the brain at {brain.root}", hint="a target is another folder")
        real.mkdir(parents=True, exist_ok=True)
        target = Target(name, str(real), "hermes" if layout == "hermes" else layout, runtime_name or name, actor,
                        pattern, committed, best_verified)  # fmt: skip
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
    from ledger.sync.targets import Targets

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
@click.option("--restore", multiple=True, metavar="TARGET",
              help="TARGET lost its files (wiped, or a new disk): put the brain's skills back, recording no deletion.")
@click.option("--watch", is_flag=True, help="Keep syncing as files change (Ctrl-C stops).")
@click.option("--debounce", type=float, default=0.2, show_default=True, help="Seconds of quiet before a watch sync.")
@click.option("--poll", type=float, default=2.0, show_default=True,
              help="With --watch and a remote: seconds between looks at the remote.")  # fmt: skip
@click.option("--no-remote", is_flag=True, help="Leave the shared remote ('ledger remote set') out of this sync.")
@click.option("--full", is_flag=True,
              help="Read every file of every target: trust no record or stat entry (docs/layouts.md, No-op syncs).")
@json_flag
@click.pass_context
def sync(ctx: click.Context, names: tuple[str, ...], take: tuple[str, str] | None, confirm: tuple[str, ...],
         restore: tuple[str, ...], watch: bool, debounce: float, poll: float, no_remote: bool, full: bool,
         as_json: bool) -> None:  # fmt: skip
    """Project the brain into every linked target and record what changed there; then publish it to
    the shared remote (merging what other machines published) and anchor it, when one is set.

    Exit 1 while a conflict or a refused target remains, or the remote cannot be reached (with
    --json, after printing the report).  A target found in step by its last pass is checked by
    its files' metadata alone (lstat); --full reads every file.
    """
    from ledger.remotes.fleet import remote_of
    from ledger.sync.projection import Projection
    from ledger.sync.targets import Targets

    with open_brain(ctx) as brain:
        targets = Targets(brain.control)
        chosen = [targets.get(n) for n in names] if names else targets.all()
        remote = None if no_remote or names else remote_of(brain)
        if not chosen and remote is None:
            raise LedgerError("no targets are linked and no remote is set",
                              hint="'ledger link claude' (see 'ledger runtimes') or 'ledger remote set URL'")
        committed = _committed_or_none(brain) if any(t.committed for t in chosen) else None
        engine = Projection(brain, targets)
        if watch:
            from ledger.sync.watching import watch as run_watch

            if take or confirm or restore or full:
                raise UsageError("--watch does not take --take, --confirm-deletions, --restore or --full",
                                 hint="run them once first")  # fmt: skip
            tick = _remote_tick(brain, remote, poll, as_json) if remote else None
            run_watch(engine, chosen, debounce=debounce, on_report=lambda r: _say(r, as_json, quiet=True),
                      committed=(lambda: _committed_or_none(brain)) if any(t.committed for t in chosen) else None,
                      on_tick=tick)  # fmt: skip
            return
        for name in (*confirm, *restore):
            targets.get(name)  # an unknown target is a mistake, said before anything moves
        report = engine.sync(names, take=take, confirm_deletions=confirm, committed=committed,
                             restore=restore, full=full) if chosen else \
            {"targets": [], "conflicts": 0, "refused": 0}  # fmt: skip
        if remote is not None:
            before = brain.head().commit
            report["remote"] = _sync_remote(brain, remote)
            if chosen and brain.head().commit != before:  # the targets show the merged result, not one behind
                again = _committed_or_none(brain) if any(t.committed for t in chosen) else None
                _fold(report, engine.sync(names, committed=again, full=full))
        from ledger.remotes.lineagemerge import conflicts as merge_conflicts

        report["merge_conflicts"] = sorted(merge_conflicts(brain))
    _say(report, as_json)
    fleet = report.get("remote") or {"status": "ok"}
    merged = len(report["merge_conflicts"])
    alone = sum(len(t.get("left_alone", [])) for t in report["targets"])
    if report["conflicts"] or report["refused"] or merged:
        click.echo(f"error: {report['conflicts'] + merged} conflict(s) and {report['refused']} refused target(s) "
                   "remain (see above and 'ledger status'); nothing was overwritten", err=True)  # fmt: skip
    if alone:
        click.echo(f"error: {alone} entr{'y was' if alone == 1 else 'ies were'} left alone (see above): "
                   "everything else is in step", err=True)  # fmt: skip
    if fleet["status"] != "ok":
        click.echo(f"error: the remote is {fleet['status']}; this brain keeps every write and the next sync "
                   "publishes it", err=True)  # fmt: skip
    if fleet.get("refused_refs"):
        click.echo(f"error: {len(fleet['refused_refs'])} ref(s) of the remote refused (see above); main is in step",
                   err=True)  # fmt: skip
    if report["conflicts"] or report["refused"] or merged or alone or fleet["status"] != "ok" or \
            fleet.get("refused_refs"):
        sys.exit(1)


def _fold(report: dict[str, Any], again: dict[str, Any]) -> None:
    """A second pass's report (after a merge from the remote) into the first: its lists added, its state kept."""
    first = {t["name"]: t for t in report["targets"]}
    for t in again["targets"]:
        into = first.get(t["name"])
        if into is None:
            report["targets"].append(t)
            continue
        for key in ("recorded", "rescued"):
            into[key] = into[key] + t[key]
        for key in ("projected", "removed"):  # a skill projected again after the merge is reported once
            into[key] = list(dict.fromkeys(into[key] + t[key]))
        for key in ("status", "conflicts", "left_alone", "ignored_held", "reason", "hint"):
            if key in t:
                into[key] = t[key]
    report["conflicts"], report["refused"] = again["conflicts"], again["refused"]


def settle_runtime_conflict(ctx: click.Context, name: str, side: str, as_json: bool) -> None:
    """``ledger resolve NAME --take ledger|TARGET``: one sync of the targets in conflict on NAME."""
    from ledger.sync.projection import Projection
    from ledger.sync.targets import Targets

    with open_brain(ctx) as brain:
        targets = Targets(brain.control)
        where = sorted({c["target"] for c in targets.conflicts() if c["skill"] == name})
        if not where:
            raise LedgerError(f"no conflict on {name!r}", hint="see 'ledger status'")
        if side != "ledger" and side not in where:
            raise UsageError(f"--take must be kept, other, ledger or a target in conflict on {name!r} "
                             f"({', '.join(where)}), not {side!r}")  # fmt: skip
        chosen = where if side == "ledger" else [side]
        report = Projection(brain, targets).sync(chosen, take=(side, name))
    _say(report, as_json)
    left = [c for t in report["targets"] for c in t["conflicts"] if c["skill"] == name]
    if left or report["refused"]:
        click.echo(f"error: {name} is still in conflict or a target was refused (see above)", err=True)
        sys.exit(1)


def _sync_remote(brain: Any, remote: dict[str, Any]) -> dict[str, Any]:
    from ledger.remotes.fleet import sync_remote

    return sync_remote(brain, remote["url"], commit=bool(remote.get("commit")), key=remote.get("key"))


def _remote_tick(brain: Any, remote: dict[str, Any], poll: float, as_json: bool) -> Any:
    """The watch's remote half: after the brain changed, or every ``poll`` seconds (others may have pushed)."""
    last = [0.0]

    def tick(changed: bool) -> None:
        if not changed and time.monotonic() - last[0] < poll:
            return
        last[0] = time.monotonic()
        out = _sync_remote(brain, remote)
        if as_json:
            emit({"remote": out})
        elif out["status"] != "ok":
            click.echo(f"remote {out['status']}: {out.get('reason', '')} (retrying every {poll:g} s)", err=True)
        elif out["merges"] or out["committed"] or out.get("refused_refs"):
            _say_remote(out)

    return tick


def _say_remote(out: dict[str, Any]) -> None:
    for m in out["merges"]:
        if m["action"] == "merge":
            also = f"; conflict(s): {', '.join(m['conflicts'])} (see 'ledger status')" if m["conflicts"] else ""
            click.echo(f"merged    {len(m['changes'])} change(s) from {out['remote']}{also}")
        elif m["action"] == "fast-forward":
            click.echo(f"took      {len(m['skills'])} skill(s) from {out['remote']}")
    if out["status"] != "ok":
        click.echo(click.style("remote   ", fg="red") + f" {out['status']}: {out.get('reason', '')}")
    elif out["pushed"]:
        click.echo(f"pushed    {out['head'][:12]} to {out['remote']}")
    if out["committed"]:
        click.echo(f"anchored  {out['committed']} root(s) in {len(out['transactions'])} transaction(s)")
    if out.get("refused_refs"):
        say_refused_refs(out["remote"], out["refused_refs"])


@main.group(invoke_without_command=True)
@json_flag
@click.pass_context
def remote(ctx: click.Context, as_json: bool) -> None:
    """The shared git remote this brain syncs with (one per brain); shows it."""
    if ctx.invoked_subcommand is not None:
        return
    from ledger.remotes.fleet import remote_of

    with open_brain(ctx) as brain:
        doc = remote_of(brain)
    if as_json:
        emit(doc)
    else:
        click.echo(f"{doc['url']}" + (" (anchors on chain)" if doc.get("commit") else "") if doc else "no remote set")


@remote.command("set")
@click.argument("url")
@click.option("--create", is_flag=True, help="Make URL a new bare repository when it is a path that does not exist.")
@renamed_option("--anchor", "--commit", "commit", is_flag=True,
                help="Anchor on chain after each push (any authorized machine may).")
@click.option("--key", help="The keystore key that commits (see 'ledger keys list').")
@click.pass_context
def remote_set(ctx: click.Context, url: str, create: bool, commit: bool, key: str | None) -> None:
    """Sync with URL (a bare git repository over ssh, a git host, or a path) on every 'ledger sync'.

    A relative path is the brain directory's (as git reads one against its repository) and is
    recorded absolute, so a sync from anywhere finds it; URLs (ssh://, https://, host:path,
    file://) are kept as given.  A path that does not exist is refused: --create makes it a new
    bare repository.  Later a missing remote is an unreachable one, never made again."""
    from ledger.remotes.fleet import remote_location

    with open_brain(ctx) as brain:
        stored, made = remote_location(url, brain.root, create=create)
        brain.update_config(remote={"url": stored, "commit": commit, **({"key": key} if key else {})})
    click.echo(f"remote set: {stored}" + (" (a new bare repository)" if made else "")
               + (" (anchors on chain)" if commit else ""))  # fmt: skip


@remote.command("unset")
@click.pass_context
def remote_unset(ctx: click.Context) -> None:
    """Stop syncing with the remote; nothing on it changes."""
    with open_brain(ctx) as brain:
        brain.update_config(remote=None)
    click.echo("remote unset")


@remote.command("guard")
@click.argument("path", type=click.Path(file_okay=False, exists=True, path_type=Path))
def remote_guard(path: Path) -> None:
    """Guard the bare repository PATH: git's pre-receive hook audits every update of main before
    git takes it, so a plain 'git push' of snapshots the brain would refuse is refused there (ADR 27).
    A remote the ledger creates is guarded already."""
    from ledger.remotes.guard import install
    from ledger.store.gitstore import GitStore

    GitStore(path).close()  # refuses what is not a git repository
    click.echo(f"guarded: {install(path.absolute())}")


def _committed_or_none(brain: Any) -> bytes | None:
    """The committed root's snapshot, or None when the chain can't say: only the targets that show
    it are refused (one failing target fails only itself)."""
    try:
        return _committed(brain)
    except LedgerError:
        return None


def _committed(brain: Any) -> bytes:
    from ledger.anchoring.commits import committed_snapshot

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
            version = f" v{r['version']}" if r["version"] is not None else ""
            click.echo(f"recorded  {r['skill']}{version} ({r['action']}) from {t['name']}")
        for key in t["projected"]:
            click.echo(f"projected {key} → {t['name']}")
        for key in t["removed"]:
            click.echo(f"removed   {key} from {t['name']}")
        for r in t["rescued"]:
            click.echo(click.style("rescued  ", fg="yellow") + f" {r['skill']}: kept in {r['kept']}")
        for c in t["conflicts"]:
            click.echo(click.style("CONFLICT ", fg="red") + f" {c['skill']} in {t['name']} ({', '.join(c['files'])})"
                       f"\n          settle: {c['hint']}")  # fmt: skip
        for h in t.get("held", ()):
            shows = f"it keeps v{h['shows']}" if h["shows"] is not None else "it keeps what it has" if h["kept"] \
                else "not projected"  # fmt: skip
            click.echo(click.style("held     ", fg="yellow") + f" {h['skill']} v{h['version']} from {t['name']} "
                       f"({shows}): {h['why']}")  # fmt: skip
        if not quiet:
            for a in t["left_alone"]:
                click.echo(f"left alone {t['name']}/{a['dir']}: {a['reason']}")
            for h in t.get("ignored_held", ()):
                click.echo(click.style("not ignored", fg="yellow") + f" {t['name']}/{h['path']}: the brain holds it, "
                           f"so the rule {h['rule']!r} in {h['source']} does not hide it (it syncs as any "
                           "file: remove the rule, or delete the file to record its deletion)")  # fmt: skip
        busy = t["recorded"] or t["projected"] or t["removed"] or t["conflicts"]
        if not busy and not quiet:
            alone = len(t["left_alone"])
            click.echo(f"{t['name']}: in step" if not alone else
                       f"{t['name']}: in step but for {alone} entr{'y' if alone == 1 else 'ies'} left alone")
    if report.get("remote"):
        _say_remote(report["remote"])
        if report["remote"]["status"] == "ok" and not (report["remote"]["pushed"] or report["remote"]["merges"]):
            click.echo(f"{report['remote']['remote']}: in step")


def _folder_name(path: Path) -> str:
    """A target's default name: its folder's, or for a ``…/.tool/skills`` folder, the tool's."""
    base = path.name if path.name != "skills" or not path.parent.name else path.parent.name
    return re.sub(r"[^a-z0-9._-]+", "-", base.lstrip(".").lower()).strip("-.") or "target"
