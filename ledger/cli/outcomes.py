"""Outcome evidence: ``ledger outcome record|import|list`` (docs/lineage/evidence.md, docs/reference.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import click

from ledger.cli.common import (
    commit_flag,
    emit,
    json_flag,
    main,
    note_flag,
    open_brain,
    print_receipt,
    returns,
    want_commit,
)
from ledger.errors import UsageError

_VERSION = re.compile(r"[1-9][0-9]*")
_ROLES = click.Choice(["agent", "verifier", "user", "curator"])


def split_ref(ref: str) -> tuple[str, int | None]:
    """``NAME`` or ``NAME@VERSION`` (a version from 1, ASCII digits)."""
    name, sep, version = ref.rpartition("@")
    if not sep:
        return ref, None
    if not name or not _VERSION.fullmatch(version):
        raise UsageError(f"expected NAME or NAME@VERSION (a version from 1, in ASCII digits), got {ref!r}")
    return name, int(version)


@main.group()
def outcome() -> None:
    """Signed outcomes of skill versions: did version N work on a task (see docs/lineage.md, 'Outcome evidence').

    Each outcome is signed by its actor's key: a key the brain trusts as 'verifier' makes it
    verified (ledger keys generate verifier; ledger keys trust verifier ADDRESS), the agent's
    or any other trusted key self-reported.  The two are never summed: see 'ledger skill show NAME
    --stats'.  Outcomes never change a skill or the root; each append is one 'outcome' snapshot.
    """


@returns("ledger.evals.reports:OutcomeReport")
@outcome.command("record")
@click.argument("ref", metavar="NAME[@VERSION]")
@click.option("--task", "task", help="The task's id (one printable line, at most 512 characters).")
@click.option("--task-digest", help="sha256:<64 hex> of the task's text, instead of or beside its id.")
@click.option("--success", is_flag=True, help="The version succeeded on the task.")
@click.option("--failure", is_flag=True, help="The version failed on the task.")
@click.option("--score", type=float, help="A score instead of success or failure, on --scale.")
@click.option("--scale", nargs=2, type=float, default=None, metavar="LOW HIGH", help="The score's scale [0 1].")
@click.option("--threshold", type=float, help="The score at or above which it counts as a success.")
@click.option("--evidence", "evidence_uri", metavar="URI", help="Where the evidence is (a log, a trace, a report).")
@click.option("--evidence-digest", help="sha256:<64 hex> of the evidence's bytes.")
@click.option("--verifier-name", "verifier", help="The verifier's name (its identity is the signing key).")
@click.option("--time", "when", metavar="YYYY-MM-DDTHH:MM:SSZ", help="When it was judged [default: now].")
@click.option(
    "--actor",
    type=_ROLES,
    default="agent",
    show_default=True,
    help="Whose key signs it: 'verifier' for verified outcomes.",
)
@note_flag
@commit_flag
@json_flag
@click.pass_context
def outcome_record(
    ctx: click.Context,
    ref: str,
    task: str | None,
    task_digest: str | None,
    success: bool,
    failure: bool,
    score: float | None,
    scale: tuple[float, float] | None,
    threshold: float | None,
    evidence_uri: str | None,
    evidence_digest: str | None,
    verifier: str | None,
    when: str | None,
    actor: str,
    note: str,
    chain_commit: bool | None,
    as_json: bool,
) -> None:
    """Record one outcome of NAME at VERSION (NAME alone: its version in the head snapshot)."""
    if success + failure + (score is not None) != 1:
        raise UsageError("give exactly one of --success, --failure and --score")
    result = "success" if success else "failure" if failure else None
    if score is None and (scale or threshold is not None):
        raise UsageError("--scale and --threshold go with --score")
    if task is None and task_digest is None:
        raise UsageError("name the task: --task ID, --task-digest sha256:HEX, or both")
    name, version = split_ref(ref)
    want_commit(ctx, chain_commit)
    from ledger.evals import outcomes as uc

    with open_brain(ctx) as brain:
        done = uc.record(
            brain,
            actor,
            name,
            version,
            result=result or "score",
            task=task,
            task_digest=task_digest,
            score=score,
            scale=tuple(scale) if scale else ((0.0, 1.0) if score is not None else None),
            threshold=threshold,
            evidence=evidence_uri,
            evidence_digest=evidence_digest,
            verifier=verifier,
            when=when,
            note=note,
        )
    if not as_json:
        said = {"result": result or "score", "score": score, "scale": tuple(scale) if scale else (0.0, 1.0)}
        click.echo(
            f"outcome {done.outcome[:12]}  {done.skill} v{done.version}  "
            f"{_said({'outcome': said})}  {'verified' if actor == 'verifier' else 'self-reported'}, signed by "
            f"{done.signer} ({actor})"
        )
    print_receipt(ctx, receipt_of(done.receipt), as_json)


def receipt_of(report: Any) -> Any:
    """The ``Receipt`` a report of a write holds (for the chain step and the receipt's text)."""
    from ledger.write.records import Receipt

    return Receipt(**report.receipt_fields())


@returns("ledger.evals.reports:OutcomeImportReport", "ledger.evals.reports:NothingImported")
@outcome.command("import")
@click.argument("source", metavar="FILE|-")
@click.option(
    "--actor",
    type=_ROLES,
    default=None,
    help="Whose key signs the rows: required for rows (verifier: verified; agent: self-reported); "
    "entries already signed are taken as they are, their tier their signer's.",
)
@note_flag
@commit_flag
@json_flag
@click.pass_context
def outcome_import(
    ctx: click.Context, source: str, actor: str | None, note: str, chain_commit: bool | None, as_json: bool
) -> None:
    """Import outcomes from JSONL (docs/reference.md, "Outcome JSONL") as one snapshot.

    Each line is a row (skill, task, success or score, …) signed here by the actor's key (the rows:
    one batch), or an entry signed elsewhere ({"record", "signature"}), taken byte for byte, in
    whole batches (see docs/lineage.md, 'A signer's record is complete: batches').  One bad line refuses
    the whole file, naming the line; so does part of a verifier's batch; nothing is written.  Outcomes
    already in the log are skipped.
    """
    from ledger.evals.reports import NothingImported

    data = sys.stdin.buffer.read() if source == "-" else _read(source)
    if actor is None:
        _no_rows(data.splitlines())
    want_commit(ctx, chain_commit)
    from ledger.evals import outcomes as uc

    with open_brain(ctx) as brain:
        done = uc.import_outcomes(brain, actor, data, note=note)
    if isinstance(done, NothingImported):
        emit(done) if as_json else click.echo("nothing to import: the file holds no line", err=True)
        return
    receipt = receipt_of(done)
    if not as_json:
        from ledger.brain.evidence import signed_elsewhere

        said = ""
        if actor is not None and any(line.strip() and not signed_elsewhere(line) for line in data.splitlines()):
            said = (
                f", the rows signed here by the {actor} key: {'verified' if actor == 'verifier' else 'self-reported'}"
            )
        click.echo(f"imported {done.added} outcome(s) of {done.read} line(s){said}; the log holds {done.log_size}")
        print_receipt(ctx, receipt, False)
        return
    print_receipt(ctx, receipt, True, done.extra_json())


def _no_rows(lines: list[bytes]) -> None:
    """Refuse a file holding a row when ``--actor`` is not given: only a file of entries signed elsewhere needs
    none (each entry's tier is its own signer's); a row is signed here, and whose word it is is never guessed."""
    from ledger.brain.evidence import signed_elsewhere

    rows = [n for n, line in enumerate(lines, 1) if line.strip() and not signed_elsewhere(line)]
    if rows:
        raise UsageError(
            f"line {rows[0]} is a row to sign here, and no --actor says whose word it is",
            hint="add --actor verifier (a verified outcome, signed by the verifier key) or --actor agent "
            "(the agent's own word: self-reported)",
        )


def _read(source: str) -> bytes:
    path = Path(source)
    if not path.is_file():
        raise UsageError(f"no such file: {source}", hint="give a JSONL file, or - for standard input")
    return path.read_bytes()


@returns("ledger.evals.reports:OutcomeListReport")
@outcome.command("list")
@click.argument("ref", metavar="[NAME[@VERSION]]", required=False)
@json_flag
@click.pass_context
def outcome_list(ctx: click.Context, ref: str | None, as_json: bool) -> None:
    """The outcomes in the log, oldest first (of one skill, or one version of it)."""
    from ledger.evals import outcomes as uc

    name, version = split_ref(ref) if ref else (None, None)
    with open_brain(ctx) as brain:
        report = uc.list_outcomes(brain, name, version)
    if as_json:
        emit(report)
        return
    out = report.to_json()
    for o in out:
        if "record" not in o:
            kind = "plan" if "plan" in o else "approval"
            body = o[kind]
            said = (
                f"eval plan ({len(body['cases'])} case(s) x {body['runs']} run(s))"
                if kind == "plan"
                else f"approval v{body['version']}"
            )
            click.echo(f"{o['index']:>6}  {body['time']}  {body['skill']}  {said}  {body['signer'][:10]}…")
            continue
        rec = o["record"]
        task = rec["task"]["id"] or rec["task"]["digest"]
        click.echo(
            f"{o['index']:>6}  {rec['time']}  {rec['skill']} v{rec['version']}  {_said(rec):<16} "
            f"{o['tier']:<9} {rec['signer'][:10]}…  task {task}"
        )


@returns("ledger.evals.reports:BatchesReport")
@outcome.command("batches")
@click.option("--signer", metavar="ADDRESS", help="Only this signer's batches (0x and 40 hex).")
@json_flag
@click.pass_context
def outcome_batches(ctx: click.Context, signer: str | None, as_json: bool) -> None:
    """Each signer's batches in the log, and the newest of each chain (see docs/lineage.md,
    'A signer's record is complete: batches').

    The audit holds every batch whole and every batch a kept one follows; what it cannot see is a
    chain's newest batch left out whole.  A verifier checks that its newest batch (the id and count it
    signed last for this brain) is listed here as a head; an outsider asks the verifier for it.
    """
    if signer is not None and not re.fullmatch(r"0x[0-9a-fA-F]{40}", signer):
        raise UsageError(f"--signer is an address, 0x and 40 hex digits, got {signer!r}")
    from ledger.evals import outcomes as uc

    with open_brain(ctx) as brain:
        report = uc.batches(brain, signer.lower() if signer else None)
    if as_json:
        emit(report)
        return
    found = report.to_json()
    if not found:
        click.echo("no outcome" + (f" signed by {signer}" if signer else ""))
    for s in found:
        heads = [b for b in s["batches"] if b["head"]]
        click.echo(
            f"{s['signer']} ({s['tier']}): {s['outcomes']} outcome(s), {len(s['batches'])} batch(es)"
            + (f", {s['v1']} v1 record(s) in no batch" if s["v1"] else "")
        )
        for b in heads:
            click.echo(f"  newest of a chain: batch {b['id']}  {b['count']} outcome(s) from log index {b['first']}")


def _said(rec: dict[str, Any]) -> str:
    out = rec["outcome"]
    if out["result"] != "score":
        return str(out["result"])
    return f"score {out['score']:g}/{out['scale'][1]:g}"


def print_stats(doc: dict[str, Any]) -> None:
    """One skill's competence per version, as text (``show --stats``, ``log --stats``)."""
    click.echo(f"{doc['skill']}" + (f" (live v{doc['live']})" if doc.get("live") else " (deleted)"))
    click.echo(f"  {'version':>7}  {'verified':<34}  {'self-reported':<34}")
    for v in doc["versions"]:
        click.echo(
            f"  {'v' + str(v['version']):>7}  {_tier(v['verified']):<34}  {_tier(v['self']):<34}"
            + (f"  ({v['withdrawn']} withdrawn)" if v["withdrawn"] else "")
        )
    reg = doc.get("regression")
    if reg:
        click.secho(
            f"  regression: v{reg['version']} {reg['rate']:.0%} vs v{reg['from']} {reg['from_rate']:.0%} "
            f"verified; undo with '{reg['revert']}'",
            fg="red",
        )
    lifted = [
        (v["version"], tier, v["lift"][tier])
        for v in doc["versions"]
        for tier in ("verified", "self")
        if v.get("lift") and v["lift"][tier]
    ]
    if lifted:
        click.echo(
            "  lift: pass rate with the skill minus the baseline's, paired runs, 95% interval (Newcombe 1998, "
            "method 10)"
        )
        for version, tier, lift in lifted:
            click.echo(f"  {'v' + str(version):>7}  {tier:<8}  {lift_text(lift)}")
            for old in lift["earlier"]:
                click.echo(f"  {'':>7}  {'':<8}  earlier: {lift_text(old)}")
    for flag in doc.get("lift_regressions") or ():
        click.secho(f"  {lift_flag_text(flag)}", fg="red")


def lift_text(lift: dict[str, Any]) -> str:
    """One lift on a line: delta and interval in points, both conditions side by side, the flags."""
    lo, hi = lift["interval"]
    base = "without" if lift["baseline"] == "without_skill" else f"v{lift['arm']}"
    out = (
        f"{lift['delta'] * 100:+.1f} pts [{lo * 100:+.1f}, {hi * 100:+.1f}]  {lift['pairs']} pair(s): "
        f"with {lift['with_rate']:.0%} vs {base} {lift['baseline_rate']:.0%}; "
        f"{'pre-registered' if lift['preregistered'] else 'not pre-registered'}"
        f"{', stale' if lift['stale'] else ''}; time {lift['time_delta_ms']:+.0f} ms"
    )
    if lift["tokens_delta"] is not None:
        out += f", tokens {lift['tokens_delta']:+.0f}"
    if lift["regressed"]:
        out += f"; regressed case(s): {', '.join(lift['regressed'])}"
    return out


def lift_flag_text(flag: dict[str, Any]) -> str:
    """A flagged lift (``status``, ``show --stats``): which version, why, and the undo."""
    lo, hi = flag["interval"]
    live = f" (live v{flag['live']})" if flag["live"] != flag["version"] else ""
    why = (
        "below zero"
        if flag["why"] == "below zero"
        else f"below v{flag['from']}'s {flag['from_delta'] * 100:+.1f} pts [{flag['from_interval'][0] * 100:+.1f}, "
        f"{flag['from_interval'][1] * 100:+.1f}] on the same plan"
    )
    undo = f"; undo: {flag['revert']}" if flag["revert"] else ""
    return (
        f"lift regressed {flag['skill']} v{flag['version']}{live}: {flag['tier']} lift {flag['delta'] * 100:+.1f} "
        f"pts [{lo * 100:+.1f}, {hi * 100:+.1f}] is {why}{undo}"
    )


def _tier(t: dict[str, Any]) -> str:
    n = t["successes"] + t["failures"]
    if not n:
        return "—" + (f"  ({t['scored']} scored, mean {t['mean_score']:.2f})" if t["scored"] else "")
    lo, hi = t["interval"]
    return f"{t['successes']}/{n} = {t['rate']:.0%}  [{lo:.0%}, {hi:.0%}]"
