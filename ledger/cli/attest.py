"""``ledger attest``: an OpenSSF Model Signing or in-toto attestation of a snapshot's skills."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ledger.cli.common import emit, main, open_brain, returns
from ledger.errors import UsageError


@returns("ledger.attestations.reports:AttestReport")
@main.command()
@click.argument("args", nargs=-1, metavar="[REV] [NAME]")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["oms", "intoto"]),
    required=True,
    help="oms: an OpenSSF Model Signing v1.0 signature (model_signing verify key); intoto: an in-toto "
    "Statement in a DSSE envelope.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the attestation to FILE (default: standard output).",
)
@click.option(
    "--actor",
    type=click.Choice(["user", "agent", "curator"]),
    default="user",
    show_default=True,
    help="Whose key signs: its P-256 sibling, certified by the brain's signed snapshots.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="With -o (stdout holds the attestation otherwise): print what was attested as one JSON document.",
)
@click.pass_context
def attest(ctx: click.Context, args: tuple[str, ...], fmt: str, output: Path | None, actor: str, as_json: bool) -> None:
    """Attest the skills of snapshot REV (default: head) as 'ledger export' writes them, or skill NAME only.

    With -o FILE --json, stdout holds one object:

    \b
    {"format": "oms"|"intoto", "commit": HEX40, "skill": NAME|null, "files": N, "signer": ADDRESS,
     "role": "user"|"agent"|"curator", "keyid": HEX64, "certified_by": HEX40, "withheld": [NAME, ...],
     "output": FILE}
    """
    from ledger.attestations.run import attest as make
    from ledger.attestations.run import rev_and_name

    if len(args) > 2:
        raise UsageError("give at most REV and NAME")
    if as_json and output is None:
        raise UsageError(
            "--json goes with -o FILE: without it, standard output holds the attestation",
            hint="ledger attest ... -o FILE --json",
        )
    with open_brain(ctx) as brain:
        rev, name = rev_and_name(brain, args)
        data, report = make(brain, rev, name, fmt, actor, output)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        what = sys.stderr
    else:
        what = sys.stdout
    if as_json:
        emit(report)
        return
    folder = f"skill {name}" if name else f"{report.files} file(s)"
    click.echo(
        f"attested {folder} of {report.commit[:12]} ({fmt}), signed by {actor} {report.signer}'s "
        f"P-256 sibling {report.keyid[:16]}…" + (f" -> {output}" if output else ""),
        file=what,
    )
