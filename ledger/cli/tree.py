"""The command tree, once: the sections of ``ledger --help``, the noun groups, and the old spellings.

Each module registers its commands with ``@main.command()`` or ``@GROUP.command()`` where it
always has; :func:`build` then re-homes the ones that moved into their noun group (the
:data:`MOVES` table) and makes the groups that are new (:data:`GROUPS`).  ``ledger --help``
lists the top level in :data:`SECTIONS` (``_Group.format_commands`` in :mod:`ledger.cli.common`),
first what a new user needs, then the noun groups, as ``gh`` and ``cargo`` do.

Every old spelling still runs (ADR 74): ``ledger OLD ARGS`` prints one line on stderr,
``warning: 'ledger OLD' is deprecated; use 'ledger NEW' (the old spelling keeps working)``,
then runs ``ledger NEW ARGS`` as if typed so: the same stdout, the same exit code.  An old
spelling is no click command (``main.commands`` holds the tree as ``--help`` shows it); the
top group resolves it from :data:`MOVES`, and no help lists it.  The renamed options are
:func:`ledger.cli.common.renamed_option`.
"""

from __future__ import annotations

import click

__all__ = ["GROUPS", "MOVES", "NEEDS", "SECTIONS", "build", "moved", "warn"]

# The top level of ``ledger --help``, in order: (section, the commands it lists).
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Start here", ("init", "skill", "status", "log", "sync", "verify")),
    ("Skills and snapshots", ("snapshot", "diff", "import", "export", "hash", "index")),
    ("Runtimes", ("target", "mcp")),
    ("Sharing", ("clone", "push", "pull", "remote")),
    ("Worth", ("eval", "outcome")),
    ("Skills from elsewhere", ("supply",)),
    ("Trust and chain", ("keys", "chain", "audit", "proof")),
    ("Publishing", ("attest", "manifest", "report")),
    ("Maintenance", ("gc", "recover")),
)

# The noun groups this tree makes (the others are registered by their modules).
GROUPS: dict[str, str] = {
    "target": "The runtimes' skills folders this brain projects into ('ledger sync' keeps them in step).",
    "proof": "Inclusion proofs: that a file is in a snapshot's bundle root, made here and checked anywhere.",
}

# old spelling (a top-level command before issue 52) -> where it lives now
MOVES: dict[str, str] = {
    "link": "target add",
    "unlink": "target remove",
    "runtimes": "target list",
    "install": "supply install",
    "update": "supply update",
    "outdated": "supply outdated",
    "approve": "supply approve",
    "revoke": "supply revoke",
    "scan": "supply scan",
    "show": "skill show",
    "revert": "skill revert",
    "resolve": "skill resolve",
    "lint": "skill lint",
    "apply": "skill apply",
    "commit": "chain anchor",
    "anchor": "chain epoch",
    "sign": "keys adopt",
    "prove": "proof make",
    "verify-proof": "proof check",
}

# An old spelling that needed a flag: 'ledger sign' alone was a usage error, and stays one.
NEEDS: dict[str, str] = {"sign": "--adopt"}


def build(main: click.Group) -> None:
    """Re-home every moved command of ``main`` into its group (making the groups in :data:`GROUPS`).

    Run once, after every module has registered; running it again changes nothing.
    """
    for name, doc in GROUPS.items():
        if name not in main.commands:
            main.add_command(click.Group(name, help=doc), name)
    taken = {old: main.commands.pop(old) for old in MOVES if old in main.commands}  # all out first: 'anchor' moves
    for old, cmd in taken.items():
        group_name, leaf = MOVES[old].split()
        group = main.commands[group_name]
        assert isinstance(group, click.Group), group_name
        cmd.name = leaf
        group.add_command(cmd, leaf)


def moved(args: list[str]) -> list[str] | None:
    """The words of ``ledger ARGS`` as the new spelling, when ``ARGS[0]`` is an old one; else None."""
    if not args or args[0] not in MOVES:
        return None
    return [*MOVES[args[0]].split(), *args[1:]]


def warn(old: str, new: str) -> None:
    """The one deprecation line an old spelling prints on stderr."""
    click.secho(
        f"warning: 'ledger {old}' is deprecated; use 'ledger {new}' (the old spelling keeps working)",
        fg="yellow",
        err=True,
    )
