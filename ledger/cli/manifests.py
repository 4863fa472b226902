"""ERC-8239 skill manifests: ``ledger manifest NAME[@VERSION]`` (docs/interop.md)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from ledger.cli.common import emit, json_flag, main, open_brain, returns
from ledger.errors import UsageError

_VERSION = re.compile(r"[1-9][0-9]*")  # a ledger version in decimal, as the manifest writes it: no sign, no 0 first


@returns("ledger.publish.reports:ManifestReport")
@main.command()
@click.argument("ref", metavar="NAME[@VERSION]")
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the manifest's exact bytes (what manifestHash is keccak256 of) to this file.",
)
@json_flag
@click.pass_context
def manifest(ctx: click.Context, ref: str, out: Path | None, as_json: bool) -> None:
    """A skill version's ERC-8239 manifest and its manifestHash (NAME alone: the head snapshot's version).

    Without --json: the manifest's exact bytes on the first line (canonical JSON holds no
    newline), then 'manifestHash 0x…'.  --json: skill, version, commit, manifestHash, manifest.
    """
    from ledger.supply.manifesting import manifest as make

    name, sep, version = ref.rpartition("@")
    if not sep:
        name = ref
    elif not name or not _VERSION.fullmatch(version):  # ASCII only: str.isdigit() takes '²' and '١'
        raise UsageError(f"expected NAME or NAME@VERSION (a version from 1, in ASCII digits), got {ref!r}")
    with open_brain(ctx) as brain:
        report = make(brain, name, int(version) if sep else None, out)
        state = brain.withheld().get(report.skill)
    if state is not None:  # a manifest describes a version; whether a runtime may use it is the brain's call
        click.echo(f"note: skill {report.skill!r} is {state} here: no runtime, index or agent sees it", err=True)
    if as_json:
        emit(report)
        return
    from ledger.supply.manifest import canonical_json

    data = canonical_json(report.manifest)  # the exact bytes manifestHash is keccak256 of
    if out is None:
        click.echo(data)  # bytes, as they are hashed, then a newline that is not part of them
    else:
        click.echo(f"{len(data)} bytes written to {out}")
    click.echo(f"manifestHash {report.manifest_hash}")
