"""The ``ledger`` command line: thin shells over the Python API.

Exit codes: 0 ok, 1 refused or failed (message on stderr, nothing changed),
2 usage.  Chain commands import web3 lazily, so local commands start fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from ledger.errors import LedgerError, UsageError

F = TypeVar("F", bound=Callable[..., Any])


class _Group(click.Group):
    """Turns every :class:`LedgerError` into one stderr message and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            _fail(exc, 2)
        except LedgerError as exc:
            _fail(exc, 1)
        except UnicodeError as exc:
            _fail(LedgerError(f"input is not valid UTF-8 ({exc})", hint="pass UTF-8 text and names"), 1)
        except BrokenPipeError:
            sys.exit(1)


def _fail(exc: LedgerError, code: int) -> None:
    click.secho(f"error: {_printable(exc.message)}", fg="red", err=True)
    if exc.hint:
        click.echo(f"hint: {_printable(exc.hint)}", err=True)
    sys.exit(code)


def _printable(text: str) -> str:
    """Escape control characters and undecodable bytes, so no input can repaint the terminal."""
    return "".join(c if _shown(c) else c.encode("unicode_escape").decode() for c in text)


def _shown(c: str) -> bool:
    return (c.isprintable() or c in "\n\t") and not 0xDC80 <= ord(c) <= 0xDCFF


def read_input(source: str, limit: int, what: str) -> bytes:
    """Read a file argument ('-': stdin) as bytes, refusing devices and anything over ``limit`` bytes."""
    import os
    import stat

    from ledger.writepath import read_limited

    if source == "-":
        return read_limited(sys.stdin.fileno(), limit, f"{what} (stdin)")
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"cannot open {what} {source!r}: {exc.strerror}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise LedgerError(f"{what} {source!r} is not a regular file", hint="pass a file, or '-' for stdin")
        os.set_blocking(fd, True)
        return read_limited(fd, limit, f"{what} {source!r}")
    finally:
        os.close(fd)


def read_text(source: str, limit: int, what: str) -> str:
    data = read_input(source, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LedgerError(f"{what} {source!r} is not valid UTF-8 (byte {exc.start})") from exc


def _emit(doc: Any) -> None:
    click.echo(json.dumps(doc, indent=2, ensure_ascii=False))


def _progress(label: str) -> Callable[[int, int], None] | None:
    """A progress callback drawing on stderr when it is a terminal; otherwise none."""
    if not sys.stderr.isatty():
        return None
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)
        if done >= total:
            bar.__exit__(None, None, None)

    return update


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--brain",
    "brain_dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="LEDGER_BRAIN",
    help="Brain directory (default: $LEDGER_BRAIN, else the current directory or its nearest brain parent).",
)
@click.version_option(package_name="brain-ledger", prog_name="ledger")
@click.pass_context
def main(ctx: click.Context, brain_dir: Path | None) -> None:
    """A content-addressed, git-backed ledger of an agent's skills."""
    ctx.obj = {"brain": brain_dir}


@contextmanager
def _open(ctx: click.Context) -> Iterator[Any]:
    from ledger.brain import Brain

    path = ctx.obj["brain"]
    with Brain.open(path if path is not None else None, search_up=path is None) as brain:
        if brain.pending_recovery is not None and ctx.command_path.split()[-1] != "recover":
            click.secho(f"warning: {_printable(brain.pending_recovery.message)}", fg="yellow", err=True)
            click.echo("warning: showing the last snapshot; run 'ledger recover' to settle the write", err=True)
        yield brain


def _receipt(ctx: click.Context, receipt: Any, as_json: bool) -> None:
    if ctx.obj.get("commit"):
        from ledger.chain import commit_pending

        with _open(ctx) as brain:
            receipt = commit_pending(brain, attach_to=receipt)
    if as_json:
        _emit(receipt.to_json())
        return
    what = f"{receipt.skill} v{receipt.version}" if receipt.skill else "brain"
    click.echo(f"{receipt.operation} {what}")
    click.echo(f"root   {receipt.root}")
    click.echo(f"commit {receipt.commit}")
    if receipt.chain:
        click.echo(f"chain  tx {receipt.chain.get('tx')} block {receipt.chain.get('block')}")


_TEXT_LIMIT = 4 * 100_000  # bytes: SKILL.md is limited to 100,000 characters of at most 4 bytes each

json_flag = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
note_flag = click.option("-m", "--message", "note", default="", help="A note for the snapshot's commit message.")
commit_flag = click.option(
    "--commit/--no-commit", "chain_commit", default=None, help="Commit the new root on chain now (default: config)."
)


def _mutation(fn: F) -> F:
    return json_flag(note_flag(commit_flag(fn)))  # type: ignore[return-value]


def _mutate(ctx: click.Context, kw: dict[str, Any], op: Callable[[Any], Any]) -> None:
    """Run one mutation on the brain and print its receipt (anchoring it on chain if asked)."""
    _want_commit(ctx, kw["chain_commit"])
    with _open(ctx) as brain:
        receipt = op(brain)
    _receipt(ctx, receipt, kw["as_json"])


def _want_commit(ctx: click.Context, flag: bool | None) -> None:
    if flag is None:
        from ledger.brain import CONFIG, CONTROL, find_brain

        path = ctx.obj["brain"]
        root = find_brain(path if path is not None else None, search_up=path is None)
        flag = bool(json.loads((root / CONTROL / CONFIG).read_text()).get("auto_commit", False))
    ctx.obj["commit"] = flag


# --------------------------------------------------------------------------- brain


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=".")
def init(directory: Path) -> None:
    """Create an empty brain (skills/, a git store, .ledger/) in DIRECTORY."""
    from ledger.brain import Brain

    with Brain.init(directory) as brain:
        head = brain.head()
        click.echo(f"initialised brain in {brain.root}")
        click.echo(f"root   {head.snap.to_json()['root']}")


@main.command()
@click.pass_context
def index(ctx: click.Context) -> None:
    """Print the Level-0 index: one '▸ name: description' line per skill."""
    with _open(ctx) as brain:
        click.echo(brain.index(), nl=False)


@main.command()
@json_flag
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show what differs between the working tree and the head snapshot."""
    with _open(ctx) as brain:
        st = brain.status()
        pending = _pending(brain)
        st.pending_chain = pending
    if as_json:
        _emit(st.to_json())
        return
    click.echo(f"head   {st.head_commit}")
    click.echo(f"root   {st.head_root}")
    if pending is not None:
        click.echo(f"chain  {pending} snapshot(s) without a local receipt ('ledger chain status' asks the chain)")
    if st.clean:
        click.echo("working tree clean")
        return
    click.echo(f"tree   {st.tree_root}")
    click.echo("changes not in a snapshot (record them with 'ledger snapshot'):")
    for path, what in st.changes.items():
        click.echo(f"  {what:9} skills/{path}")


@main.command()
@click.option("--move-aside", is_flag=True, help="Keep files changed since the crash in .ledger/rescued/, then finish.")
@json_flag
@click.pass_context
def recover(ctx: click.Context, move_aside: bool, as_json: bool) -> None:
    """Finish a write a crash interrupted; refuses (showing them) if files changed since."""
    with _open(ctx) as brain:
        result = brain.recover(move_aside=move_aside)
    if as_json:
        _emit(result)
    elif not result["pending"]:
        click.echo("nothing to recover")
    else:
        click.echo(f"finished the interrupted write {result['commit'][:12]} ({', '.join(result['skills'])})")
        for path in result["moved"]:
            click.echo(f"kept files changed since the crash in {path}")


def _pending(brain: Any) -> int | None:
    if not brain.config.get("chain"):
        return None
    from ledger.chain import pending_count

    return pending_count(brain)


@main.command()
@_mutation
@click.pass_context
def snapshot(ctx: click.Context, as_json: bool, note: str, chain_commit: bool | None) -> None:
    """Record hand edits in the working tree as one snapshot."""
    _want_commit(ctx, chain_commit)
    with _open(ctx) as brain:
        receipt = brain.snapshot(note, _progress("hashing"))
    _receipt(ctx, receipt, as_json)


@main.command()
@json_flag
@click.option("-n", "--max-count", type=click.IntRange(min=1), help="Show at most N snapshots.")
@click.pass_context
def log(ctx: click.Context, as_json: bool, max_count: int | None) -> None:
    """Show the lineage of snapshots, newest first."""
    with _open(ctx) as brain:
        receipts = _receipts(brain)
        out = []
        for i, snap in enumerate(brain.store.lineage()):
            if max_count is not None and i >= max_count:
                break
            doc = snap.to_json()
            doc["chain"] = receipts.get(snap.commit)
            out.append(doc)
    if as_json:
        _emit(out)
        return
    for doc in out:
        what = f"{doc['skill']} v{doc['version']}" if doc["skill"] else f"{len(doc['changes'])} change(s)"
        chain = f"  [chain block {doc['chain']['block']}]" if doc.get("chain") else ""
        click.echo(f"{doc['commit'][:12]}  {doc['root'][:30]}…  {doc['operation']:11} {what}{chain}")


def _receipts(brain: Any) -> dict[str, Any]:
    if not brain.config.get("chain"):
        return {}
    from ledger.receipts import read_receipts

    return read_receipts(brain.store)


@main.command("hash")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@json_flag
def hash_cmd(directory: Path, as_json: bool) -> None:
    """Print the bundle root of DIRECTORY (of its skills/ when it is a brain)."""
    from ledger.merkle import format_root, hash_path

    # A brain is marked by .ledger/config.json (ledger.brain.CONTROL / CONFIG); spelled out here
    # so that hashing does not import the git layer.
    target = directory / "skills" if (directory / ".ledger" / "config.json").is_file() else directory
    root = format_root(hash_path(target))
    _emit({"root": root}) if as_json else click.echo(root)


@main.command()
@click.argument("rel")
@click.option("--at", "rev", help="A past snapshot: commit id, main~N or a root.")
@click.pass_context
def prove(ctx: click.Context, rel: str, rev: str | None) -> None:
    """Print the inclusion proof (JSON) of file REL, given as <skill>/<path>."""
    with _open(ctx) as brain:
        proof = brain.prove(rel, rev)
    _emit(proof.to_json())


@main.command("verify-proof")
@click.argument("proof_file")
@click.option("--root", help="The root to check against (blake3-tree-v1:<hex> or 0x<hex>).")
@click.option("--file", "content", help="Also check that this file is the proven content.")
@click.option("--chain", is_flag=True, help="Check against the agent's on-chain head (needs --rpc etc.).")
@click.option("--rpc", envvar="LEDGER_RPC", help="RPC URL for --chain.")
@click.option("--registry", help="Registry address for --chain.")
@click.option("--agent", help="Agent id for --chain.")
@click.option("--json", "as_json", is_flag=True)
def verify_proof(
    proof_file: Any,
    root: str | None,
    content: Any,
    chain: bool,
    rpc: str | None,
    registry: str | None,
    agent: str | None,
    as_json: bool,
) -> None:
    """Check an inclusion proof against a root; needs nothing but the proof."""
    from ledger.merkle import InclusionProof, format_root, parse_root, verify_proof

    if (root is None) == (not chain):
        raise UsageError("give exactly one of --root ROOT or --chain")
    try:
        doc = json.loads(read_text(proof_file, 16 << 20, "proof"))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise LedgerError(f"{proof_file} is not a JSON proof: {type(exc).__name__}") from exc
    proof = InclusionProof.from_json(doc)
    if chain:
        from ledger.chain import onchain_roots

        if not (rpc and registry and agent):
            raise UsageError("--chain needs --rpc, --registry and --agent")
        want_roots = onchain_roots(rpc, registry, agent)
        if proof.root not in want_roots:
            raise LedgerError(f"FAIL: {format_root(proof.root)} was never committed on chain by agent {agent}")
        want = proof.root
    else:
        want = parse_root(root or "")
    try:
        verify_proof(proof, want, read_input(content, 1 << 31, "--file") if content else None)
    except LedgerError as exc:
        if as_json:
            _emit({"ok": False, "path": proof.path, "root": format_root(want), "error": exc.message})
            sys.exit(1)
        raise LedgerError(f"FAIL: {exc.message}") from exc
    if as_json:
        _emit({"ok": True, "path": proof.path, "root": format_root(want)})
    else:
        click.echo(f"OK: {proof.path} is in {format_root(want)}")


# --------------------------------------------------------------------------- skills


@main.group()
def skill() -> None:
    """Create, improve and read skills; every write is one snapshot."""


@skill.command("create")
@click.argument("name")
@click.option("--description", required=True, help="The one line an agent sees in the index (≤ 1024 chars).")
@click.option("--body", help="Markdown body.")
@click.option("--body-file", help="Read the body from a file ('-' for stdin).")
@_mutation
@click.pass_context
def skill_create(ctx: click.Context, name: str, description: str, body: str | None, body_file: Any, **kw: Any) -> None:
    """Create skill NAME at version 1 (refuses an existing name)."""
    if body is not None and body_file is not None:
        raise UsageError("give --body or --body-file, not both")
    text = read_text(body_file, _TEXT_LIMIT, "--body-file") if body_file is not None else (body or "")
    _mutate(ctx, kw, lambda brain: brain.create(name, description, text, note=kw["note"]))


@skill.command("upsert")
@click.option("--name", help="Key to write under (slugified); default: the name the frontmatter declares.")
@click.option("--file", "src", required=True, help="SKILL.md text ('-' = stdin).")
@_mutation
@click.pass_context
def skill_upsert(ctx: click.Context, name: str | None, src: Any, **kw: Any) -> None:
    """Write a whole SKILL.md by slug: create it, or bump the existing skill in place."""
    text = read_text(src, _TEXT_LIMIT, "--file")
    _mutate(ctx, kw, lambda brain: brain.upsert(text, name=name, note=kw["note"]))


@skill.command("edit")
@click.argument("name")
@click.option("--file", "src", required=True, help="New SKILL.md ('-' = stdin).")
@_mutation
@click.pass_context
def skill_edit(ctx: click.Context, name: str, src: Any, **kw: Any) -> None:
    """Rewrite NAME's SKILL.md in full (the version is bumped by the ledger)."""
    text = read_text(src, _TEXT_LIMIT, "--file")
    _mutate(ctx, kw, lambda brain: brain.edit(name, text, note=kw["note"]))


@skill.command("patch")
@click.argument("name")
@click.option("--old", required=True, help="Exact text to replace; must occur exactly once.")
@click.option("--new", required=True, help="Replacement text.")
@click.option("--file", "rel", help="A supporting file (e.g. references/x.md) instead of SKILL.md.")
@_mutation
@click.pass_context
def skill_patch(ctx: click.Context, name: str, old: str, new: str, rel: str | None, **kw: Any) -> None:
    """Replace one exact occurrence of --old with --new."""
    _mutate(ctx, kw, lambda brain: brain.patch(name, old, new, file=rel, note=kw["note"]))


@skill.command("delete")
@click.argument("name")
@_mutation
@click.pass_context
def skill_delete(ctx: click.Context, name: str, **kw: Any) -> None:
    """Delete skill NAME (its history stays in the ledger)."""
    _mutate(ctx, kw, lambda brain: brain.delete(name, note=kw["note"]))


@skill.command("write-file")
@click.argument("name")
@click.argument("rel")
@click.option("--from", "src", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--executable/--no-executable", default=None, help="Mode bit (default: as the source file).")
@_mutation
@click.pass_context
def skill_write_file(ctx: click.Context, name: str, rel: str, src: Path, executable: bool | None, **kw: Any) -> None:
    """Add or replace supporting file REL (under references/ templates/ scripts/ assets/)."""
    from ledger.skill import MAX_SUPPORT_FILE

    if src.is_symlink():
        raise LedgerError(f"{src} is a symbolic link", hint="pass the file it points to")
    if executable is None:
        executable = bool(src.stat().st_mode & 0o100)
    data = read_input(str(src), MAX_SUPPORT_FILE, "--from")
    _mutate(ctx, kw, lambda brain: brain.write_file(name, rel, data, executable=executable, note=kw["note"]))


@skill.command("remove-file")
@click.argument("name")
@click.argument("rel")
@_mutation
@click.pass_context
def skill_remove_file(ctx: click.Context, name: str, rel: str, **kw: Any) -> None:
    """Remove supporting file REL from skill NAME."""
    _mutate(ctx, kw, lambda brain: brain.remove_file(name, rel, note=kw["note"]))


@skill.command("list")
@json_flag
@click.pass_context
def skill_list(ctx: click.Context, as_json: bool) -> None:
    """List skills (name, version, description) without reading bodies."""
    with _open(ctx) as brain:
        skills = brain.list()
    if as_json:
        _emit([s.to_json() for s in skills])
        return
    for s in skills:
        click.echo(f"{s.name:32} v{s.version:<4} {s.description}")


@skill.command("view")
@click.argument("name")
@click.option("--file", "rel", help="Show a supporting file instead of the body.")
@json_flag
@click.pass_context
def skill_view(ctx: click.Context, name: str, rel: str | None, as_json: bool) -> None:
    """Show a skill's body and linked files, or one supporting file."""
    with _open(ctx) as brain:
        doc = brain.view(name, rel)
    if as_json:
        _emit(doc)
    elif rel is not None:
        if doc.get("binary"):
            raise LedgerError(f"{rel} is binary ({doc['size']} bytes)", hint="use --json, or read the file directly")
        click.echo(doc["content"], nl=False)
    else:
        click.echo(f"# {doc['name']} (v{doc['version']}): {doc['description']}\n")
        click.echo(doc["body"], nl=False)
        for sub, files in doc["files"].items():
            click.echo(f"\n[{sub}] " + ", ".join(files))


# --------------------------------------------------------------------------- keys


def _prompt_password(confirm: bool) -> str:
    return str(click.prompt("keystore password", hide_input=True, confirmation_prompt=confirm, err=True))


@main.group()
def keys() -> None:
    """Encrypted committer keys ($LEDGER_KEYSTORE); passwords from LEDGER_KEY_PASSWORD or a prompt."""


@keys.command("new")
@click.argument("name")
def keys_new(name: str) -> None:
    """Create a new random key NAME."""
    from ledger.keys import new_key

    click.echo(new_key(name, _prompt_password))


@keys.command("import")
@click.argument("name")
def keys_import(name: str) -> None:
    """Import a private key as NAME, read from stdin or a hidden prompt (never from argv)."""
    from ledger.keys import import_key

    tty = sys.stdin.isatty()
    secret = click.prompt("private key", hide_input=True, err=True) if tty else sys.stdin.readline()
    click.echo(import_key(name, secret, _prompt_password))


@keys.command("list")
@json_flag
def keys_list(as_json: bool) -> None:
    """List keystores with their addresses."""
    from ledger.keys import list_keys

    found = list_keys()
    if as_json:
        _emit(found)
    for k in [] if as_json else found:
        click.echo(f"{k['name']:24} {k['address']}")


# --------------------------------------------------------------------------- chain


@main.group()
def chain() -> None:
    """A local anvil testnet and the on-chain registry."""


def _anvil_dir(brain: Any) -> Path:
    return Path(brain.control) / "anvil"


@chain.command("up")
@click.option("--port", type=click.IntRange(1, 65535), help="Port on 127.0.0.1 (default: a free one).")
@click.option("--chain-id", type=int, default=31337, show_default=True)
@click.pass_context
def chain_up(ctx: click.Context, port: int | None, chain_id: int) -> None:
    """Start a local anvil in the background; its state persists in .ledger/anvil/."""
    from ledger import anvil

    with _open(ctx) as brain:
        node = anvil.start(_anvil_dir(brain), port=port, chain_id=chain_id)
        chain_cfg = dict(brain.config.get("chain") or {})
        if chain_cfg.get("rpc") != node.url:
            chain_cfg["rpc"] = node.url
            brain.update_config(chain=chain_cfg)
    click.echo(node.url)


@chain.command("down")
@click.pass_context
def chain_down(ctx: click.Context) -> None:
    """Stop the local anvil (its state is kept for the next 'chain up')."""
    from ledger import anvil

    with _open(ctx) as brain:
        node = anvil.stop(_anvil_dir(brain))
    click.echo(f"stopped anvil (pid {node.pid})" if node else "anvil was not running")


@chain.command("use")
@click.argument("rpc")
@click.pass_context
def chain_use(ctx: click.Context, rpc: str) -> None:
    """Point the brain at an existing RPC endpoint."""
    with _open(ctx) as brain:
        chain_cfg = dict(brain.config.get("chain") or {})
        chain_cfg["rpc"] = rpc
        brain.update_config(chain=chain_cfg)
    click.echo(rpc)


key_flag = click.option("--key", help="Signing key: a keystore name, or 'anvil-dev' on chain id 31337.")


@chain.command("status")
@json_flag
@click.pass_context
def chain_status(ctx: click.Context, as_json: bool) -> None:
    """Compare the on-chain head of this brain's agent with the local head."""
    from ledger.chain import chain_status as status_of

    with _open(ctx) as brain:
        st = status_of(brain)
    if as_json:
        _emit(st)
        return
    for key in ("rpc", "chain_id", "registry", "agent", "onchain_head", "onchain_seq", "local_head", "pending"):
        click.echo(f"{key:13} {st[key]}")
    if st["stale_receipts"]:
        click.echo(f"warning: {st['stale_receipts']} local receipt(s) are beyond the chain's sequence (reset or reorg)")
    if st["diverged"]:
        click.echo("the on-chain head is not this brain's snapshot at that sequence; run 'ledger verify --chain'")
    else:
        click.echo("in sync" if st["in_sync"] else f"{st['pending']} snapshot(s) to commit ('ledger commit')")


@chain.command("deploy")
@key_flag
@json_flag
@click.pass_context
def chain_deploy(ctx: click.Context, key: str | None, as_json: bool) -> None:
    """Deploy the registry (and its share token) and record the address in the brain's config."""
    from ledger.chain import deploy

    with _open(ctx) as brain:
        cfg = deploy(brain, key=key, password=_prompt_password)
    _emit({"registry": cfg.registry, "chain_id": cfg.chain_id, "block": cfg.deploy_block}) if as_json else click.echo(
        f"registry {cfg.registry} on chain {cfg.chain_id} (block {cfg.deploy_block})"
    )


@chain.command("register")
@click.option("--shares", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@key_flag
@json_flag
@click.pass_context
def chain_register(ctx: click.Context, shares: int, key: str | None, as_json: bool) -> None:
    """Register this brain's agent and mint its shares to the signing key."""
    from ledger.chain import register

    with _open(ctx) as brain:
        cfg = register(brain, shares=shares, key=key, password=_prompt_password)
    agent = f"0x{cfg.agent_id:064x}"
    _emit({"agent": agent, "registry": cfg.registry, "shares": shares}) if as_json else click.echo(f"agent {agent}")


@chain.command("authorize")
@click.argument("address")
@click.option("--revoke", is_flag=True, help="Revoke instead of grant.")
@key_flag
@click.pass_context
def chain_authorize(ctx: click.Context, address: str, revoke: bool, key: str | None) -> None:
    """Let ADDRESS commit roots for this agent (owner only)."""
    from ledger.chain import authorize

    with _open(ctx) as brain:
        authorize(brain, address, not revoke, key=key, password=_prompt_password)
    click.echo(f"{'revoked' if revoke else 'authorized'} {address}")


@main.command("commit")
@key_flag
@click.option("--batch", type=click.IntRange(1, 500), default=32, show_default=True, help="Roots per transaction.")
@json_flag
@click.pass_context
def commit_cmd(ctx: click.Context, key: str | None, batch: int, as_json: bool) -> None:
    """Commit every snapshot not yet on chain, in order and batched; record each receipt."""
    from ledger.chain import as_json as result_json
    from ledger.chain import commit_pending

    with _open(ctx) as brain:
        result = commit_pending(
            brain, key=key, batch=batch, password=_prompt_password, progress=_progress("committing")
        )
    if as_json:
        _emit(result_json(result))
        return
    if not result.committed:
        click.echo("nothing to commit: the on-chain head equals the local head")
    else:
        click.echo(f"committed {result.committed} root(s) in {len(result.transactions)} transaction(s)")
    if result.reconciled:
        click.echo(f"recovered {result.reconciled} receipt(s) from chain events")
    click.echo(f"on-chain head {result.head} (seq {result.seq})")


# --------------------------------------------------------------------------- audit and history


def _print_report(report: Any, as_json: bool, html_file: Path | None) -> None:
    if html_file is not None:
        from ledger.report import render_html

        html_file.write_text(render_html(report), encoding="utf-8")
    if as_json:
        _emit(report.to_json())
    else:
        for chk in report.checks.values():
            tag = click.style("OK  ", fg="green") if chk.ok else click.style("FAIL", fg="red", bold=True)
            click.echo(f"{tag} {chk.name:17} {chk.summary}")
            if not chk.ok:
                for label, value in (
                    ("snapshot", chk.snapshot),
                    ("path", chk.path),
                    ("expected", chk.expected),
                    ("computed", chk.computed),
                ):
                    if value is not None:
                        click.echo(f"     {label:9} {value}")
                if chk.failures > 1:
                    click.echo(f"     (+{chk.failures - 1} more failure(s) of this check)")
        if report.pending:
            click.echo(f"PEND {'chain':17} {len(report.pending)} snapshot(s) newer than the on-chain head")
        if html_file is not None:
            click.echo(f"report written to {html_file}")
        click.echo("Verified OK" if report.ok else "Verification FAILED", err=True)
    if not report.ok:
        sys.exit(1)


def _audit_errors(fn: Callable[[], Any]) -> Any:
    from ledger.errors import AuditError, RpcUnreachableError

    try:
        return fn()
    except (RpcUnreachableError, AuditError) as exc:
        raise UsageError(exc.message, hint=exc.hint) from exc


@main.command()
@click.option("--chain", "with_chain", is_flag=True, help="Also check the registry (from the brain's config).")
@json_flag
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path), help="Write an HTML report.")
@click.pass_context
def verify(ctx: click.Context, with_chain: bool, as_json: bool, html_file: Path | None) -> None:
    """Verify this brain: snapshots, lineage, versions, skills, working tree, fsck (and --chain)."""
    from ledger.audit import audit_repo

    with _open(ctx) as brain:
        root, cfg = brain.root, brain.config.get("chain") or {}
    kwargs: dict[str, Any] = {}
    if with_chain:
        if not (cfg.get("rpc") and cfg.get("registry") and cfg.get("agent_id")):
            raise UsageError("this brain has no registered agent to check", hint="ledger chain deploy / register")
        kwargs = {
            "rpc": cfg["rpc"],
            "registry": cfg["registry"],
            "agent": int(cfg["agent_id"], 16),
            "from_block": int(cfg.get("deploy_block", 0)),
        }
    report = _audit_errors(lambda: audit_repo(root, worktree=True, progress=_progress("verifying"), **kwargs))
    _print_report(report, as_json, html_file)


@main.command()
@click.argument("repo", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--rpc", help="RPC endpoint of the chain holding the registry.")
@click.option("--registry", help="Registry contract address.")
@click.option("--agent", help="Agent id (0x… or decimal).")
@click.option("--from-block", type=click.IntRange(min=0), default=0, help="Registry deployment block (faster scans).")
@json_flag
@click.option("--html", "html_file", type=click.Path(dir_okay=False, path_type=Path), help="Write an HTML report.")
def audit(
    repo: Path,
    rpc: str | None,
    registry: str | None,
    agent: str | None,
    from_block: int,
    as_json: bool,
    html_file: Path | None,
) -> None:
    """Audit any clone or path of a brain's store; needs no keys and no brain config."""
    from ledger.audit import audit_repo

    given = [v is not None for v in (rpc, registry, agent)]
    if any(given) and not all(given):
        raise UsageError("--rpc, --registry and --agent go together")
    agent_id = int(agent, 0) if agent else None
    report = _audit_errors(
        lambda: audit_repo(
            repo, rpc=rpc, registry=registry, agent=agent_id, from_block=from_block, progress=_progress("auditing")
        )
    )
    _print_report(report, as_json, html_file)


@main.command()
@click.argument("rev1")
@click.argument("rev2")
@json_flag
@click.pass_context
def diff(ctx: click.Context, rev1: str, rev2: str, as_json: bool) -> None:
    """List the skills and files changed between two snapshots."""
    with _open(ctx) as brain:
        d = brain.diff(rev1, rev2)
    if as_json:
        _emit(d)
        return
    for name, what in d["skills"].items():
        click.echo(f"skill {what:9} {name}")
    for path, what in d["files"].items():
        click.echo(f"  {what:9} skills/{path}")


@main.command()
@click.argument("ref", metavar="NAME@VERSION")
@click.pass_context
def show(ctx: click.Context, ref: str) -> None:
    """Print a skill's SKILL.md as it was at a version."""
    name, sep, version = ref.rpartition("@")
    if not sep or not version.isdigit():
        raise UsageError(f"expected NAME@VERSION, got {ref!r}")
    with _open(ctx) as brain:
        click.echo(brain.show(name, int(version)), nl=False)


@main.command()
@click.argument("name")
@click.option("--to", "version", type=click.IntRange(min=1), required=True, help="The version to restore.")
@_mutation
@click.pass_context
def revert(ctx: click.Context, name: str, version: int, **kw: Any) -> None:
    """Restore a skill as it was at --to VERSION, as a new upsert (history is never rewritten)."""
    _mutate(ctx, kw, lambda brain: brain.revert(name, version, note=kw["note"]))
