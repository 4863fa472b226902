"""The ``ledger`` group and what every command shares: error mapping, input limits, output, receipts.

Exit codes: 0 ok or nothing to do, 1 refused or failed (message on stderr, nothing
changed), 2 usage, 3 recorded locally but the chain step failed (run ``ledger chain anchor``).
Chain commands import web3 lazily, so local commands start fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from ledger.bundle.skill import MAX_SKILL_MD
from ledger.errors import LedgerError, PatchError, UsageError, printable

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
        except OSError as exc:  # a file changed or vanished beside us: a refusal, never a traceback
            where = f" ({exc.filename})" if exc.filename else ""
            _fail(
                LedgerError(
                    f"{exc.strerror or exc}{where}: the brain's files changed while this command ran",
                    hint="run 'ledger status', then the command again",
                ),
                1,
            )

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """A command by its name; an old spelling (:data:`ledger.cli.tree.MOVES`) says it is one
        on stderr, once, and runs as its new spelling would, with the same words after it."""
        from ledger.cli import tree

        words = tree.moved(args)
        if words is not None:
            old, new = args[0], tree.MOVES[args[0]]
            need = tree.NEEDS.get(old)
            if need and not {need, "-h", "--help"} & set(args[1:]):
                raise click.UsageError(f"Missing option '{need}'.", ctx)
            if not ctx.resilient_parsing:
                tree.warn(old, new)
            args = words
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The top level in the sections of :data:`ledger.cli.tree.SECTIONS` (any other visible command last)."""
        from ledger.cli.tree import SECTIONS

        shown = {n: c for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) is not None and not c.hidden}
        if not shown:
            return
        placed = {n for _, names in SECTIONS for n in names}
        sections = [*SECTIONS, ("Other commands", tuple(n for n in shown if n not in placed))]
        limit = formatter.width - 6 - max(len(n) for n in shown)
        for title, names in sections:
            rows = [(n, shown[n].get_short_help_str(limit)) for n in names if n in shown]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _fail(exc: LedgerError, code: int) -> None:
    click.secho(f"error: {printable(exc.message)}", fg="red", err=True)
    if isinstance(exc, PatchError):  # the lines an agent tool returns as data, for a person
        from ledger.bundle.textpatch import shown

        for line in shown(exc.detail):
            click.echo(printable(line), err=True)
    if exc.hint:
        click.echo(f"hint: {printable(exc.hint)}", err=True)
    sys.exit(code)


def read_input(source: str, limit: int, what: str) -> bytes:
    """Read a file argument ('-': stdin) as bytes, refusing devices and anything over ``limit`` bytes."""
    import os
    import stat

    from ledger.write.writepath import read_limited

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


def emit(doc: Any) -> None:
    """Print one JSON document: a :class:`~ledger.reports.Report` (its ``to_json()``) or plain data
    (with ``--get FIELD``, only that field of it: :func:`get_flag`)."""
    if hasattr(doc, "to_json"):
        doc = doc.to_json()
    if _wanted() is not None:
        click.echo(field_of(doc, _wanted()))
        return
    click.echo(json.dumps(doc, indent=2, ensure_ascii=False))


_GET = "ledger.get"  # ctx.meta's key for the --get FIELD of this command line


def _wanted() -> str | None:
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(_GET) if ctx is not None else None


def _want_field(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    if not value or any(not part for part in value.split(".")):
        raise click.BadParameter(f"{value!r} is no field path: name keys joined by '.', such as 'root' or 'chain.rpc'")
    ctx.meta[_GET] = value
    ctx.params["as_json"] = True  # --get reads the --json document (a later default --json keeps this)


def field_of(doc: Any, path: str) -> str:
    """The field at dotted ``path`` of a JSON document as ``--get`` prints it: a string as it is,
    anything else as compact JSON; refuses a path the document lacks, naming what it has there."""
    value = doc
    for depth, part in enumerate(path.split(".")):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            where = ".".join(path.split(".")[:depth]) or "the document"
            has = (
                f"its keys: {', '.join(map(str, value))}"
                if isinstance(value, dict) and value
                else f"it is a list of {len(value)}"
                if isinstance(value, list)
                else f"it is {json.dumps(value, ensure_ascii=False)}"
            )
            raise LedgerError(
                f"the JSON document has no field {path!r} ({where}: {has})",
                hint="name a field of the command's --json document",
            )
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def returns(*reports: type | str) -> Callable[[F], F]:
    """Name the reports a command's ``--json`` prints (:class:`~ledger.reports.Report` subclasses;
    more than one when it prints one of several, as a write prints :class:`~ledger.reports.NoChange`).

    Put it above ``@main.command()``/``@group.command()`` (it marks the command) or below
    (it marks the function); ``report_of`` finds it either way. docs/json.md and the tests
    that walk click's tree read it: a command's JSON has one schema, shared with MCP.
    """

    def mark(obj: F) -> F:
        obj.ledger_reports = reports  # type: ignore[attr-defined]
        return obj

    return mark


def reports_of(cmd: click.Command) -> tuple[type, ...]:
    """The reports ``cmd`` prints with ``--json`` (see :func:`returns`); empty when unnamed.

    A report may be named ``"module:Class"``: the command modules name them so, and the report
    modules load only when a command runs (or a walk of the tree asks), not on every start-up.
    """
    import importlib

    found = getattr(cmd, "ledger_reports", ())
    fn = cmd.callback
    while not found and fn is not None:
        found = getattr(fn, "ledger_reports", ())
        fn = getattr(fn, "__wrapped__", None)
    out = []
    for report in found:
        if isinstance(report, str):
            module, _, name = report.partition(":")
            report = getattr(importlib.import_module(module), name)
        out.append(report)
    return tuple(out)


PAGERS = ("LEDGER_PAGER", "GIT_PAGER", "PAGER")  # the first one set is the pager, as git reads GIT_PAGER then PAGER


def page(text: str, enabled: bool = True) -> None:
    """Print ``text`` through a pager when stdout is a terminal, as git does; never when it is not.

    The pager is ``$LEDGER_PAGER``, else ``$GIT_PAGER``, else ``$PAGER``, else ``less`` (with
    ``LESS=FRX`` unless set, as git: output that fits one screen is printed and the pager quits).
    An empty pager or ``cat`` means none.
    """
    import os
    import shutil
    import subprocess

    from ledger._env import child_env

    pager = next((os.environ[k] for k in PAGERS if k in os.environ), "less").strip()
    if not enabled or not sys.stdout.isatty() or pager in ("", "cat") or (pager == "less" and not shutil.which("less")):
        click.echo(text, nl=False)
        return
    env = child_env()
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    sys.stdout.flush()
    try:  # the pager is a command line, run by the shell as git runs it
        proc = subprocess.Popen(pager, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        click.echo(text, nl=False)
        return
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode(sys.stdout.encoding or "utf-8", "replace"))
        proc.stdin.close()
    except BrokenPipeError:  # the reader quit the pager before the end: not an error
        pass
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:  # Ctrl-C belongs to the pager, which decides when to end
            continue


def progress_bar(label: str) -> Callable[[int, int], None] | None:
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
def open_brain(ctx: click.Context) -> Iterator[Any]:
    from ledger.brain import Brain

    path = ctx.obj["brain"]
    with Brain.open(path if path is not None else None, search_up=path is None) as brain:
        if brain.pending_recovery is not None and ctx.command_path.split()[-1] != "recover":
            click.secho(f"warning: {printable(brain.pending_recovery.message)}", fg="yellow", err=True)
            click.echo("warning: showing the last snapshot; run 'ledger recover' to settle the write", err=True)
        if sys.stdin.isatty():
            brain.ask_passphrase(prompt_passphrase)
        yield brain
        if brain.unsigned:
            click.secho(f"warning: the snapshot is unsigned: {brain.unsigned}", fg="yellow", err=True)


def prompt_passphrase(confirm: bool) -> str:
    """A hidden prompt on the terminal: a passphrase never comes from argv."""
    return str(click.prompt("key passphrase", hide_input=True, confirmation_prompt=confirm, err=True))


EXIT_CHAIN_PENDING = 3  # the snapshot is recorded and acknowledged; only its on-chain commit failed


def print_receipt(ctx: click.Context, receipt: Any, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    """Print a mutation's receipt; with --commit, anchor it first.

    A failed chain step does not undo the local snapshot, so it is not exit 1 ("nothing
    changed"): the receipt is printed, then what failed, and the exit code is 3.
    """
    failed: LedgerError | None = None
    if ctx.obj.get("commit"):
        from ledger.anchoring.commits import commit_pending

        try:
            with open_brain(ctx) as brain:
                receipt = commit_pending(brain, attach_to=receipt)
        except LedgerError as exc:
            failed = exc
    if as_json:
        doc = {**receipt.to_json(), **(extra or {})}
        if failed is not None:
            doc["chain"] = {"committed": False, "error": failed.message}
        emit(doc)
    else:
        _print_receipt_text(receipt)
    if failed is not None:
        message = f"error: recorded locally, but the chain step failed: {printable(failed.message)}"
        click.secho(message, fg="red", err=True)
        click.echo(
            f"hint: snapshot {receipt.commit[:12]} stands (root {receipt.root}); it is pending on chain. "
            "Fix the chain (ledger chain status), then run 'ledger commit'. Do not repeat the write.",
            err=True,
        )
        sys.exit(EXIT_CHAIN_PENDING)


def _print_receipt_text(receipt: Any) -> None:
    what = f"{receipt.skill} v{receipt.version}" if receipt.skill else f"{len(receipt.changes)} skill(s)"
    if receipt.keys:
        what = ": trust set changed"
    elif receipt.operation == "move":
        what = ": categories changed (the bundle and its root are as they were)"
    elif receipt.operation in ("approve", "revoke"):
        what = ": the supply record changed (the bundle and its root are as they were)"
    elif receipt.operation == "outcome":
        what = ": outcomes appended to the evidence log (the bundle and its root are as they were)"
    click.echo(f"{receipt.operation}{what if what.startswith(':') else ' ' + what}")
    for change in receipt.keys:
        click.echo(f"  {change}")
    for change in receipt.changes:
        if not receipt.skill:
            click.echo(f"  {change['action']:7} {change['skill']} v{change['version']}")
        for rel, status in change["files"].items():
            click.echo(f"  {'  ' if not receipt.skill else ''}{status:8} {rel}")
    click.echo(f"root   {receipt.root}")
    click.echo(f"commit {receipt.commit}")
    if receipt.signer:
        click.echo(f"signed {receipt.signer}")
    if receipt.chain:
        click.echo(f"chain  tx {receipt.chain.get('tx')} block {receipt.chain.get('block')}")


TEXT_LIMIT = 4 * MAX_SKILL_MD  # bytes: the default SKILL.md limit, in characters of at most 4 bytes

json_flag = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
get_flag = click.option(
    "--get",
    metavar="FIELD",
    expose_value=False,
    callback=_want_field,
    help="Print one field of the --json document (a dotted path such as 'root'): a string as it is, else as JSON.",
)
note_flag = click.option("-m", "--message", "note", default="", help="A note for the snapshot's commit message.")


def _spelled(ctx: click.Context) -> str:
    """The command's words as typed after ``ledger`` (``chain anchor``)."""
    words = []
    while ctx.parent is not None:
        words.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(words))


def renamed_option(new: str, old: str, dest: str, **attrs: Any) -> Callable[[F], F]:
    """Option ``new`` (as ``--a/--no-a`` or ``--a``) and its old spelling ``old``, one parameter ``dest``:
    the old one is hidden and, when used, says so on stderr in one line (ADR 74)."""
    pairs = dict(zip(old.split("/"), new.split("/"), strict=True))

    def said_old(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        from click.core import ParameterSource

        assert param.name is not None
        if ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
            return
        ctx.params[dest] = value  # the new option, given or not, keeps this (click keeps a value set so)
        if not ctx.resilient_parsing:
            from ledger.cli.tree import warn

            spelling = list(pairs)[0 if value or len(pairs) == 1 else 1]
            warn(f"{_spelled(ctx)} {spelling}", f"{_spelled(ctx)} {pairs[spelling]}")

    shown = click.option(new, dest, **attrs)
    hidden = click.option(
        old, f"{dest}_as_was", **{**attrs, "help": None}, hidden=True, expose_value=False, callback=said_old
    )

    def both(fn: F) -> F:
        return shown(hidden(fn))

    return both


commit_flag = renamed_option(
    "--anchor/--no-anchor",
    "--commit/--no-commit",
    "chain_commit",
    default=None,
    help="Anchor the new root on chain now (default: config).",
)


actor_flag = click.option(
    "--actor",
    type=click.Choice(["user", "agent", "curator"]),
    default="user",
    show_default=True,
    help="Who makes this change (recorded in the snapshot's trailers).",
)
evidence_flag = click.option(
    "--evidence",
    multiple=True,
    metavar="KEY=VALUE",
    help="Evidence for the change: task=…, session=…, tool-calls=N, reason=… (repeatable).",
)


allow_invalid_flag = click.option(
    "--allow-invalid",
    is_flag=True,
    help="Record the result even if 'ledger skill lint' calls it invalid "
    "(by default a command may not break the spec).",
)


def mutation(fn: F) -> F:
    return json_flag(note_flag(commit_flag(actor_flag(evidence_flag(fn)))))  # type: ignore[return-value]


def evidence_of(kw: dict[str, Any]) -> dict[str, str]:
    """The ``--evidence KEY=VALUE`` flags as keyword arguments for ``brain.acting``."""
    evidence = {}
    for item in kw.get("evidence") or ():
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--evidence {item!r} is not KEY=VALUE")
        evidence[key.replace("-", "_")] = value
    return evidence


def acting(brain: Any, kw: dict[str, Any]) -> Any:
    """``brain.acting(...)`` for the --actor and --evidence flags of a mutating command."""
    return brain.acting(kw.get("actor") or "user", **evidence_of(kw))


def mutate(ctx: click.Context, kw: dict[str, Any], op: Callable[[Any], Any]) -> None:
    """Run one mutation on the brain and print its receipt (anchoring it on chain if asked).

    A write that would change nothing is not a failure: it says so and exits 0, so a sync
    script re-applying the same content sees success.
    """
    from ledger.write.records import NoChangeError

    want_commit(ctx, kw["chain_commit"])
    try:
        with open_brain(ctx) as brain, acting(brain, kw):
            brain.allow_invalid = bool(kw.get("allow_invalid"))
            receipt = op(brain)
    except NoChangeError as exc:
        nothing_to_do(exc.message, kw["as_json"])
        return
    print_receipt(ctx, receipt, kw["as_json"])


def nothing_to_do(message: str, as_json: bool) -> None:
    if as_json:
        from ledger.reports import NoChange

        emit(NoChange(reason=message))
    else:
        click.echo(f"nothing to do: {message}", err=True)


def want_commit(ctx: click.Context, flag: bool | None) -> None:
    if flag is None:
        from ledger._paths import CONFIG, CONTROL, find_brain

        path = ctx.obj["brain"]
        root = find_brain(path if path is not None else None, search_up=path is None)
        flag = bool(json.loads((root / CONTROL / CONFIG).read_text()).get("auto_commit", False))
    ctx.obj["commit"] = flag


def say_refused_refs(remote: str, refused: dict[str, str]) -> bool:
    """Each ref beside ``main`` that was refused whole, named, with what to do; whether there was one.
    ``main`` and every other ref were taken (or published) as they would have been without it."""
    for ref, why in sorted(refused.items()):
        click.echo(f"error: refused {ref} of {remote}: {why}", err=True)
        click.echo(
            f"hint: main and the other refs went through; {ref} was left as it is on both sides. The "
            f"remote's owner restores it from a copy that holds it whole (on the remote's host: 'git "
            f"update-ref {ref} GOOD', or 'git update-ref -d {ref}' when no copy does); 'ledger audit "
            f"{remote}' names every ref it would refuse, and 'ledger remote guard' keeps a bare remote "
            "from taking one again",
            err=True,
        )
    return bool(refused)
