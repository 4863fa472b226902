"""Commands on the brain as a whole: init, status, recover, snapshot, log, hash, proofs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

# The reports (light: no store, no git) are named at import, for --json's schema (@returns).
from ledger.cli.common import (
    acting,
    emit,
    get_flag,
    json_flag,
    main,
    mutation,
    nothing_to_do,
    open_brain,
    page,
    print_receipt,
    progress_bar,
    read_input,
    read_text,
    returns,
    want_commit,
)
from ledger.errors import LedgerError, UsageError, printable
from ledger.reports import NoChange


@returns("ledger.brain.reports:InitReport")
@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option("--unsigned", is_flag=True, help="Make a brain whose snapshots carry no signature.")
@click.option("--passphrase", "encrypt", is_flag=True, help="Protect a new user key with a passphrase (prompted).")
@click.option(
    "--versions",
    type=click.Choice(["frontmatter", "store"]),
    default="frontmatter",
    show_default=True,
    help="Where skill versions live: each SKILL.md's metadata.version, or only the store "
    "(every SKILL.md kept byte for byte; fixed for the brain's life).",
)
@json_flag
def init(directory: Path, unsigned: bool, encrypt: bool, versions: str, as_json: bool) -> None:
    """Create an empty brain (skills/, a git store, .ledger/) in DIRECTORY.

    Its first snapshot trusts this machine's user and agent keys ($LEDGER_KEYS), made here
    if there are none, as ssh-keygen would, and is signed by the user key.
    """
    from ledger.brain import usecases
    from ledger.cli.common import prompt_passphrase

    report = usecases.init(
        directory, sign=not unsigned, passphrase=prompt_passphrase, encrypt=encrypt, versions=versions
    )
    if as_json:
        emit(report)
        return
    click.echo(f"initialised brain in {report.brain}")
    click.echo(f"root   {report.root}")
    for k in report.trusted:
        new = f" (new key, {k.new_key})" if k.new_key is not None else ""
        click.echo(f"trusts {k.role:7} {k.address}{new}")
    if report.policy == "signed":
        click.echo("policy signed: every snapshot must be signed by a key it trusts ('ledger keys policy')")
    else:
        click.echo("unsigned: snapshots carry no signature ('ledger sign --adopt' signs the brain later)")
    if report.versions == "store":
        click.echo("versions are kept in the store: no SKILL.md is ever rewritten")


@returns("ledger.brain.reports:IndexReport")
@main.command()
@json_flag
@click.pass_context
def index(ctx: click.Context, as_json: bool) -> None:
    """Print the Level-0 index: one '▸ name: description' line per skill."""
    from ledger.brain import usecases

    with open_brain(ctx) as brain:
        report = usecases.index(brain)
    if as_json:
        emit(report)
    else:
        click.echo(report.text(), nl=False)


@returns("ledger.brain.reports:StatusReport")
@main.command()
@json_flag
@get_flag
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show what differs between the working tree and the head snapshot."""
    from ledger.bundle.render import status_lines
    from ledger.overview import status as status_of

    with open_brain(ctx) as brain:
        report = status_of(brain)
    if as_json:
        emit(report)
        return
    regressions = report.regressions
    held = report.gate.held if report.gate else []
    conflicts, rescued, hidden = report.sync_conflicts or [], report.sync_rescued or [], report.sync_ignored_held or []
    merged = report.merge_conflicts or []
    lines = status_lines(report.head, report.root, report.tree_root, report.changes, report.pending_chain)
    click.echo("".join(line + "\n" for line in lines), nl=False)
    for r in regressions:
        if r.get("kind") == "lift":
            from ledger.cli.outcomes import lift_flag_text

            click.secho(lift_flag_text(r), fg="red")
            continue
        live = f" (live v{r['live']}, not verified yet)" if r["live"] != r["version"] else ""
        click.secho(
            f"regressed {r['skill']} v{r['version']}{live}: verified {r['rate']:.0%} "
            f"[{r['interval'][0]:.0%}, {r['interval'][1]:.0%}] vs v{r['from']} {r['from_rate']:.0%} "
            f"[{r['from_interval'][0]:.0%}, {r['from_interval'][1]:.0%}]; undo: {r['revert']}",
            fg="red",
        )
    for g in held:
        keeps = f"runtimes keep v{g['released']}" if g["released"] is not None else "nothing released yet"
        for v in g["held"]:
            click.secho(
                f"held      {g['skill']} v{v['version']} ({keeps}): {v['why']}; release: ledger eval run "
                f"{g['skill']}, or ledger eval approve {g['skill']}@{v['version']} --reason TEXT"
                + (f"; undo: {g['revert']}" if g["revert"] else ""),
                fg="yellow",
            )
    for c in conflicts:
        click.echo(f"conflict  {c['skill']} in target {c['target']} ({', '.join(c['files'])}): {c['hint']}")
    for r in rescued:
        click.echo(f"rescued   {r['path']}: {r['why']}")
    for h in hidden:
        click.echo(
            f"not ignored {h['target']}/{h['path']}: the brain holds it, so the rule {h['rule']!r} in "
            f"{h['source']} does not hide it (it syncs as any file)"
        )
    for c in merged:
        click.echo(
            f"conflict  {c['skill']} in a merge: kept v{c['kept_version']}, the other side's "
            f"v{c['other_version']} is in the lineage; settle with 'ledger skill resolve {c['skill']} --take "
            "kept|other'"
        )


@returns("ledger.brain.reports:RecoverReport")
@main.command()
@click.option("--move-aside", is_flag=True, help="Keep files changed since the crash in .ledger/rescued/, then finish.")
@json_flag
@click.pass_context
def recover(ctx: click.Context, move_aside: bool, as_json: bool) -> None:
    """Finish a write a crash interrupted; refuses (showing them) if files changed since."""
    from ledger.brain import usecases

    with open_brain(ctx) as brain:
        report = usecases.recover(brain, move_aside=move_aside)
    if as_json:
        emit(report)
    elif not report.pending:
        click.echo("nothing to recover")
    else:
        click.echo(f"finished the interrupted write {report.commit[:12]} ({', '.join(report.skills)})")
        for path in report.moved:
            click.echo(f"kept files changed since the crash in {path}")


@returns("ledger.write.records:Receipt", NoChange)
@main.command()
@mutation
@click.pass_context
def snapshot(ctx: click.Context, as_json: bool, note: str, chain_commit: bool | None, **kw: Any) -> None:
    """Record hand edits in the working tree as one snapshot."""
    from ledger.brain import usecases
    from ledger.write.records import NoChangeError

    want_commit(ctx, chain_commit)
    try:
        with open_brain(ctx) as brain, acting(brain, kw):
            receipt = usecases.snapshot(brain, note, progress_bar("hashing"))
    except NoChangeError as exc:
        nothing_to_do(exc.message, as_json)
        return
    print_receipt(ctx, receipt, as_json)


class _LogCommand(click.Command):
    """``log`` takes git's ``-N`` for ``-n N`` (``ledger log -3``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out: list[str] = []
        for i, arg in enumerate(args):
            if arg == "--":
                out += args[i:]
                break
            out += ["-n", arg[1:]] if len(arg) > 1 and arg[0] == "-" and arg[1:].isdigit() else [arg]
        return super().parse_args(ctx, out)


@returns("ledger.brain.reports:LogReport", "ledger.brain.reports:LogStatsReport")
@main.command(cls=_LogCommand)
@json_flag
@click.option("-n", "--max-count", type=click.IntRange(min=1), help="Show at most N snapshots (also -N, as git).")
@click.option(
    "--actor",
    type=click.Choice(["user", "agent", "curator", "verifier", "unsigned"]),
    help="Only snapshots by this actor ('unsigned': those no key signed, whatever they claim).",
)
@click.option("--skill", "skill_name", help="Only snapshots that change this skill.")
@click.option("--oneline", is_flag=True, help="One line per snapshot: number, commit, date, change, actor, full root.")
@click.option(
    "--no-pager",
    is_flag=True,
    help="Never page (by default a terminal pages, as git: $LEDGER_PAGER, $GIT_PAGER, $PAGER or less).",
)
@click.option(
    "--stats",
    is_flag=True,
    help="Competence instead: every skill's (or --skill's) outcomes and lift per "
    "version, verified and self-reported apart (see docs/lineage.md, 'Competence').",
)
@click.pass_context
def log(
    ctx: click.Context,
    as_json: bool,
    max_count: int | None,
    actor: str | None,
    skill_name: str | None,
    oneline: bool,
    no_pager: bool,
    stats: bool,
) -> None:
    """Show the lineage of snapshots, newest first: when, what, who, and the full root.

    On a terminal the text goes through a pager, as git's does; piped or redirected, never."""
    from ledger.brain import usecases

    if stats:
        _log_stats(ctx, as_json, skill_name)
        return

    with open_brain(ctx) as brain:
        report = usecases.log(brain, max_count=max_count, actor=actor, skill=skill_name)
    if as_json:
        emit(report)
        return
    lines = []
    for doc in report.to_json():
        changes = ", ".join(f"{c['action']} {c['skill']} v{c['version']}" for c in doc["changes"]) or "no change"
        attr = doc["attribution"]
        who = printable(attr.get("actor", "-") + "".join(f" {k}={v}" for k, v in attr.items() if k != "actor"))
        if oneline:
            lines.append(
                f"#{doc['number']:<4} {doc['commit'][:12]} {doc['date']} {doc['operation']:11} {changes}  "
                f"[{who}]  {doc['root']}"
            )
            continue
        lines.append(click.style(f"snapshot #{doc['number']} {doc['commit']}", fg="yellow"))
        lines.append(f"date     {doc['date']}")
        lines.append(f"root     {doc['root']}")
        lines.append(f"actor    {who}")
        lines.append(f"{doc['operation']:8} {changes}")
        if doc.get("chain"):
            chain = doc["chain"]
            lines.append(f"anchored chain sequence {chain['seq']}, block {chain['block']}, tx {chain['tx']}")
        if doc["note"]:
            lines += ["", *(f"    {printable(line)}" for line in doc["note"].splitlines())]  # a peer's words
        lines.append("")
    page("".join(f"{line}\n" for line in lines), enabled=not no_pager)


def _log_stats(ctx: click.Context, as_json: bool, skill_name: str | None) -> None:
    """``log --stats``: each skill with outcomes (or --skill), its versions' competence, regressions flagged."""
    from ledger.brain import usecases

    with open_brain(ctx) as brain:
        report = usecases.log_stats(brain, skill_name)
    if as_json:
        emit(report)
        return
    from ledger.cli.outcomes import print_stats

    for doc in report.to_json():
        print_stats(doc)


@returns("ledger.brain.reports:HashReport")
@main.command("hash")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@json_flag
def hash_cmd(directory: Path, as_json: bool) -> None:
    """Print the bundle root of DIRECTORY (of its skills/ when it is a brain)."""
    from ledger.brain.reports import HashReport
    from ledger.bundle.merkle import format_root, hash_path

    # A brain is marked by .ledger/config.json (ledger.brain.CONTROL / CONFIG); spelled out here
    # so that hashing does not import the git layer.
    target = directory / "skills" if (directory / ".ledger" / "config.json").is_file() else directory
    if target != directory and not os.path.lexists(target):
        from ledger.bundle.merkle import EMPTY_ROOT

        root = format_root(EMPTY_ROOT)  # a brain with no skills/ holds the empty bundle (docs/bundle-hash.md §1)
    else:
        root = format_root(hash_path(target))
    emit(HashReport(root)) if as_json else click.echo(root)


@returns("ledger.brain.reports:ProveReport")
@main.command()
@click.argument("rel")
@click.option("--at", "rev", help="A past snapshot: commit id, main~N or a root.")
@json_flag
@click.pass_context
def prove(ctx: click.Context, rel: str, rev: str | None, as_json: bool) -> None:
    """Print the inclusion proof (JSON) of file REL, given as <skill>/<path>.

    The proof is a JSON document with or without --json (which says so for a script)."""
    from ledger.brain import usecases

    with open_brain(ctx) as brain:
        report = usecases.prove(brain, rel, rev)
    emit(report)


@returns(
    "ledger.brain.reports:ProofCheckReport",
    "ledger.brain.reports:EntryCheckReport",
    "ledger.brain.reports:EntryCheckFailure",
)
@main.command("verify-proof")
@click.argument("proof_file")
@click.option("--root", help="The root to check against (blake3-tree-v1:<hex> or 0x<hex>).")
@click.option("--file", "content", help="Also check that this file is the proven content.")
@click.option("--signer", help="An MCP skill entry: trust snapshots this address signed (0x and 40 hex digits).")
@click.option(
    "--files",
    "files_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="An MCP skill entry: also check the skill's files, laid out in this directory from its root.",
)
@click.option("--chain", is_flag=True, help="Check the root was committed on chain by the agent (needs --rpc etc.).")
@click.option("--head", "at_head", is_flag=True, help="With --chain: the root must be the agent's current head.")
@click.option("--rpc", envvar="LEDGER_RPC", help="RPC URL for --chain.")
@click.option("--registry", help="Registry address for --chain.")
@click.option("--agent", help="Agent id for --chain.")
@click.option("--json", "as_json", is_flag=True)
def verify_proof(
    proof_file: Any,
    root: str | None,
    content: Any,
    signer: str | None,
    files_dir: Path | None,
    chain: bool,
    at_head: bool,
    rpc: str | None,
    registry: str | None,
    agent: str | None,
    as_json: bool,
) -> None:
    """Check an inclusion proof (or a usage receipt holding one) against a root; needs nothing but the proof.

    An MCP skill entry (a Skill object, a skills/get result or its dev.brain-ledger/anchor object alone) is
    checked whole, as docs/lineage.md section 16.3 says: against --root, a --signer you trust, or --chain."""
    from ledger.brain.reports import ChainMatch, ProofCheckReport
    from ledger.bundle.merkle import InclusionProof, format_root, parse_root, verify_proof

    if root is not None and chain:
        raise UsageError("give one of --root ROOT or --chain, not both")
    if at_head and not chain:
        raise UsageError("--head goes with --chain")
    try:
        text = read_text(proof_file, 16 << 20, "proof")
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise LedgerError(f"{proof_file} is not a JSON proof: {type(exc).__name__}") from exc
    if _is_entry(doc):
        from ledger._json import unique_keys

        try:  # the entry is not signed: a key given twice would read one way here and another elsewhere
            doc = json.loads(text, object_pairs_hook=unique_keys)
        except ValueError as exc:
            raise LedgerError(f"FAIL: {proof_file} is ambiguous JSON: {exc}") from exc
        if root is None and not chain and signer is None:
            raise UsageError("say what you trust: --root ROOT, --signer ADDRESS or --chain")
        if content is not None:
            raise UsageError("an entry's files are checked with --files DIR, not --file")
        _verify_entry(doc, root, signer, files_dir, (rpc, registry, agent, at_head) if chain else None, as_json)
        return
    if signer is not None or files_dir is not None:
        raise UsageError(
            "--signer and --files go with an MCP skill entry; this is an inclusion proof",
            hint="check a proof with --root ROOT or --chain",
        )
    if root is None and not chain:
        raise UsageError("give exactly one of --root ROOT or --chain")
    if isinstance(doc, dict) and isinstance(doc.get("receipt"), dict):
        doc = doc["receipt"]  # the whole output of 'skill view --json' or MCP skill_view
    if isinstance(doc, dict) and isinstance(doc.get("proof"), dict):
        doc = doc["proof"]  # a usage receipt carries its proof
    proof = InclusionProof.from_json(doc)
    matched: dict[str, Any] | None = None
    if chain:
        if not (rpc and registry and agent):
            raise UsageError("--chain needs --rpc, --registry and --agent")
        matched = _onchain_match(proof.root, rpc, registry, agent, at_head)
        want = proof.root
    else:
        want = parse_root(root or "")
        if proof.root != want:
            msg = f"the proof is for root {format_root(proof.root)}, not the given {format_root(want)}"
            if as_json:
                emit(ProofCheckReport(ok=False, path=proof.path, root=format_root(want), error=msg))
                sys.exit(1)
            raise LedgerError(f"FAIL: {msg}", hint="prove the file at that snapshot: ledger proof make REL --at ROOT")
    try:
        verify_proof(proof, want, read_input(content, 1 << 31, "--file") if content else None)
    except LedgerError as exc:
        if as_json:
            emit(ProofCheckReport(ok=False, path=proof.path, root=format_root(want), error=exc.message))
            sys.exit(1)
        raise LedgerError(f"FAIL: {exc.message}") from exc
    if as_json:
        emit(
            ProofCheckReport(
                ok=True,
                path=proof.path,
                root=format_root(want),
                chain=ChainMatch(**matched) if matched is not None else None,
            )
        )
    else:
        click.echo(f"OK: {proof.path} is in {format_root(want)}")
        if matched is not None:
            head = "the current on-chain head" if matched["is_head"] else f"the on-chain head is seq {matched['head']}"
            at = f"seq {matched['seq']} of the chain sequence, block {matched['block']}, tx {matched['tx']}"
            click.echo(f"    committed on chain at {at} ({head})")


def _is_entry(doc: Any) -> bool:
    """Whether ``doc`` is an MCP skill entry as it comes: a Skill, a skills/get result, or the anchor alone."""
    from ledger.publish.anchor import FORMAT

    return isinstance(doc, dict) and (
        doc.get("format") == FORMAT
        or "_meta" in doc
        or "resources" in doc
        or (isinstance(doc.get("skill"), dict) and "format" not in doc)
    )


def _read_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its ``/``-separated path, refusing links and special files, within the
    MCP Skills extension's limits (one file over them is enough to refuse)."""
    import stat

    from ledger.publish.anchor import MAX_FILES, MAX_TOTAL

    if not folder.is_dir() or folder.is_symlink():
        raise UsageError(f"--files {folder} is not a directory")
    out: dict[str, bytes] = {}
    total = 0
    for base, dirs, names in os.walk(folder):
        for name in sorted(dirs + names):
            path = Path(base) / name
            rel = path.relative_to(folder).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise LedgerError(f"FAIL: {rel!r} in {folder} is a link or a special file, not a skill's file")
            if stat.S_ISREG(mode):
                out[rel] = read_input(str(path), MAX_TOTAL + 1, "a file")
                total += len(out[rel])
                if total > MAX_TOTAL or len(out) > MAX_FILES:
                    raise LedgerError(
                        f"FAIL: {folder} holds more than a skill may ({MAX_FILES} files, {MAX_TOTAL} bytes)"
                    )
    return out


def _verify_entry(
    doc: Any, root: str | None, signer: str | None, files_dir: Path | None, chain: tuple[Any, ...] | None, as_json: bool
) -> None:
    """``ledger proof check`` of an MCP skill entry (docs/lineage/anchor.md §3), and with ``chain`` its root on
    chain."""
    from ledger.brain.reports import ChainMatch, EntryCheckFailure, EntryCheckReport
    from ledger.bundle.merkle import parse_root
    from ledger.publish.anchor import anchor_of, verify_entry

    files = _read_files(files_dir) if files_dir is not None else None
    try:
        check = verify_entry(doc, files, root=parse_root(root) if root is not None else None, signer=signer)
        matched = None
        if chain is not None:
            rpc, registry, agent, at_head = chain
            if not (rpc and registry and agent):
                raise UsageError("--chain needs --rpc, --registry and --agent")
            matched = _onchain_match(parse_root(check.root), rpc, registry, agent, at_head)
            stated = anchor_of(doc)[1]["chain"]
            if stated is not None and (stated["seq"], stated["tx"], stated["block"]) != (
                matched["seq"],
                matched["tx"],
                matched["block"],
            ):
                raise LedgerError(
                    f"FAIL: the anchor says seq {stated['seq']} (tx {stated['tx']}), but the chain "
                    f"committed its root at seq {matched['seq']} (tx {matched['tx']})"
                )
    except UsageError:
        raise
    except LedgerError as exc:
        if as_json:
            emit(EntryCheckFailure(ok=False, error=exc.message, hint=exc.hint))
            sys.exit(1)
        raise LedgerError(
            exc.message if exc.message.startswith("FAIL") else f"FAIL: {exc.message}", hint=exc.hint
        ) from exc
    if as_json:
        doc = check.to_json()
        emit(
            EntryCheckReport(
                **{
                    **doc,
                    "files": tuple(doc["files"]),
                    "onchain": ChainMatch(**matched) if matched is not None else None,
                }
            )
        )
        return
    who = f"signed by {check.signer} as {check.role}" if check.signer else "unsigned"
    uri = f"skill://{check.skill}/{check.prefix + '/' if check.prefix else ''}SKILL.md"
    # lineage/anchor.md §3: SKILL.md does not bind it; a clone checks it
    claim = "" if check.version_bound else " (claimed)"
    click.echo(f"OK: {uri} v{check.version}{claim} is in {check.root} (commit {check.commit}, {who})")
    click.echo(
        f"    {len(check.files)} file(s)"
        + (
            ", each checked byte for byte"
            if check.bytes_checked
            else ", proven (give --files DIR to check their bytes)"
        )
    )
    if matched is not None:
        click.echo(f"    committed on chain at seq {matched['seq']}, block {matched['block']}, tx {matched['tx']}")


def _onchain_match(root: bytes, rpc: str, registry: str, agent: str, at_head: bool) -> dict[str, Any]:
    """Which on-chain sequence committed ``root``: any of them, or with ``at_head`` the last."""
    from ledger.bundle.merkle import format_root
    from ledger.chain.registry import onchain_events

    try:
        agent_id = int(agent, 0)
    except ValueError as exc:
        raise UsageError(f"--agent {agent!r} is not a number", hint="pass the id as 0x… or decimal") from exc
    events = onchain_events(rpc, registry, agent_id)
    hits = [e for e in events if e["root"] == root]
    if not hits:
        raise LedgerError(f"FAIL: {format_root(root)} was never committed on chain by agent {hex(agent_id)}")
    ev, head = hits[-1], events[-1]
    if at_head and ev is not head:
        raise LedgerError(
            f"FAIL: {format_root(root)} was committed at seq {ev['seq']} of the chain sequence (block {ev['block']}), "
            f"but the on-chain head is seq {head['seq']} ({format_root(head['root'])})",
            hint="prove the file at the head snapshot, or drop --head to accept any committed root",
        )
    return {"seq": ev["seq"], "block": ev["block"], "tx": ev["tx"], "head": head["seq"], "is_head": ev is head}


@returns("ledger.brain.reports:GcReport")
@main.command()
@click.option("--full", is_flag=True, help="Repack everything into one pack (keeping unreachable objects).")
@json_flag
@click.pass_context
def gc(ctx: click.Context, full: bool, as_json: bool) -> None:
    """Pack the snapshot store now (writes do it in the background every gc.every writes)."""
    from ledger.brain import usecases

    with open_brain(ctx) as brain:
        report = usecases.gc(brain, full=full)
    if as_json:
        emit(report)
        return
    b, a = report.before, report.after
    sizes = f"{_mb(b.bytes)} → {_mb(a.bytes)} ({a.packs} pack(s))"
    click.echo(f"packed {b.loose} loose object(s) in {report.seconds} s: {sizes}; connectivity ok")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


@main.command()
@click.pass_context
def mcp(ctx: click.Context) -> None:
    """Serve the skill tools over MCP on stdio (skills_list, skill_view, skill_manage, history, diff)."""
    from ledger._paths import find_brain
    from ledger.agent.mcp_server import serve

    path = ctx.obj["brain"]
    serve(find_brain(path if path is not None else None, search_up=path is None))
