"""``ledger attest``: an OpenSSF Model Signing or in-toto attestation of a snapshot's skills."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ledger._fs import atomic_write
from ledger.cli.common import emit, main, open_brain
from ledger.errors import LedgerError, UsageError


def _rev_and_name(brain: Any, args: tuple[str, ...]) -> tuple[str | None, str | None]:
    """``[REV] [NAME]``: two words are both; one is a revision, or a skill of the head, never both."""
    from ledger.errors import StoreError

    if len(args) == 2:
        return args[0], args[1]
    if not args:
        return None, None
    word = args[0]
    try:
        brain.store.resolve(word)
        is_rev = True
    except StoreError:
        is_rev = False
    is_skill = word in brain.head().skills
    if is_rev and is_skill:
        raise UsageError(f"{word!r} is both a revision and a skill", hint=f"write 'ledger attest HEAD {word}'")
    if not is_rev and not is_skill:
        raise UsageError(f"{word!r} is neither a revision nor a skill of the head",
                          hint="revisions: a commit id, main~N or a root; for a past skill give REV NAME")  # fmt: skip
    return (word, None) if is_rev else (None, word)


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole (a temporary file renamed over it), never half."""
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise LedgerError(f"cannot write {path}: {exc.strerror or exc}") from None


@main.command()
@click.argument("args", nargs=-1, metavar="[REV] [NAME]")
@click.option("--format", "fmt", type=click.Choice(["oms", "intoto"]), required=True,
              help="oms: an OpenSSF Model Signing v1.0 signature (model_signing verify key); intoto: an in-toto "
                   "Statement in a DSSE envelope.")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the attestation to FILE (default: standard output).")
@click.option("--actor", type=click.Choice(["user", "agent", "curator"]), default="user", show_default=True,
              help="Whose key signs: its P-256 sibling, certified by the brain's signed snapshots.")
@click.option("--json", "as_json", is_flag=True, help="With -o (stdout holds the attestation otherwise): print "
              "what was attested as one JSON document.")
@click.pass_context
def attest(ctx: click.Context, args: tuple[str, ...], fmt: str, output: Path | None, actor: str,
           as_json: bool) -> None:  # fmt: skip
    """Attest the skills of snapshot REV (default: head) as 'ledger export' writes them, or skill NAME only.

    With -o FILE --json, stdout holds one object:

    \b
    {"format": "oms"|"intoto", "commit": HEX40, "skill": NAME|null, "files": N, "signer": ADDRESS,
     "role": "user"|"agent"|"curator", "keyid": HEX64, "certified_by": HEX40, "withheld": [NAME, ...],
     "output": FILE}
    """
    from ledger.attestations.attest import attest as make

    if len(args) > 2:
        raise UsageError("give at most REV and NAME")
    if as_json and output is None:
        raise UsageError("--json goes with -o FILE: without it, standard output holds the attestation",
                         hint="ledger attest ... -o FILE --json")  # fmt: skip
    with open_brain(ctx) as brain:
        rev, name = _rev_and_name(brain, args)
        data, summary = make(brain, rev, name, fmt, actor)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        what = sys.stderr
    else:
        _write(output, data)
        summary["output"] = str(output)
        what = sys.stdout
    if as_json:
        emit(summary)
        return
    folder = f"skill {name}" if name else f"{summary['files']} file(s)"
    click.echo(f"attested {folder} of {summary['commit'][:12]} ({fmt}), signed by {actor} {summary['signer']}'s "
               f"P-256 sibling {summary['keyid'][:16]}…" + (f" -> {output}" if output else ""), file=what)  # fmt: skip
