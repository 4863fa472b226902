"""The gate's commands: ``ledger eval gate on|off``, ``ledger eval approve NAME@V``, ``ledger eval revert NAME``
(docs/layouts.md, "The gate"; the decisions are :mod:`ledger.evals.gate`)."""

from __future__ import annotations

from typing import Any

import click

from ledger.cli.common import (
    commit_flag,
    emit,
    json_flag,
    mutate,
    mutation,
    note_flag,
    open_brain,
    print_receipt,
    returns,
    want_commit,
)
from ledger.cli.evals import eval_group
from ledger.cli.outcomes import receipt_of, split_ref
from ledger.errors import UsageError
from ledger.reports import NoChange

_APPROVERS = click.Choice(["user", "curator", "agent"])


@returns("ledger.evals.reports:GateReport")
@eval_group.command("gate")
@click.argument("state", type=click.Choice(["on", "off"]))
@click.option(
    "--actor",
    type=click.Choice(["user", "curator"]),
    default="user",
    show_default=True,
    help="Whose key turns the gate off (on takes none): a user's or a curator's.",
)
@json_flag
@click.pass_context
def eval_gate(ctx: click.Context, state: str, actor: str, as_json: bool) -> None:
    """Turn the gate on or off ("eval": {"gate": ...} in .ledger/config.json).

    With the gate on, a skill whose version at the head has evals/evals.json reaches runtimes at its
    newest released version: evaluated under the skill's plan by a verifier, user or curator key
    without making the agent worse, or approved by a user or curator ('ledger eval approve').
    Turning it off takes a user's or curator's key on this machine: the gate holds back what an
    agent wrote, so an agent's key may not lift it."""
    from ledger.evals import decisions

    with open_brain(ctx) as brain:
        done = decisions.switch(brain, state == "on", actor)
    if as_json:
        emit(done)
    else:
        click.echo(f"gate {state}" + ("" if done.changed else " (it already was)"))


@returns("ledger.evals.reports:EvalApprovalReport")
@eval_group.command("approve")
@click.argument("ref", metavar="NAME@VERSION")
@click.option("--reason", required=True, help="Why this version may reach runtimes (1 to 512 characters).")
@click.option(
    "--actor",
    type=_APPROVERS,
    default="user",
    show_default=True,
    help="Whose key signs the approval: a user's or a curator's (an agent's is refused).",
)
@note_flag
@commit_flag
@json_flag
@click.pass_context
def eval_approve(
    ctx: click.Context, ref: str, reason: str, actor: str, note: str, chain_commit: bool | None, as_json: bool
) -> None:
    """Release NAME at VERSION through the gate with a signed approval (an entry of the evidence log)."""
    name, version = split_ref(ref)
    if version is None:
        raise UsageError(f"name the version to approve: {name}@VERSION (see 'ledger status' for held versions)")
    from ledger.evals import decisions

    want_commit(ctx, chain_commit)
    with open_brain(ctx) as brain:
        done = decisions.approve(brain, actor, name, version, reason)
    if not as_json:
        click.echo(f"approved {name} v{version}: {reason}")
    print_receipt(ctx, receipt_of(done), as_json, done.extra_json())


@returns("ledger.evals.reports:ReceiptReport", NoChange)
@eval_group.command("revert")
@click.argument("name")
@mutation
@click.pass_context
def eval_revert(ctx: click.Context, name: str, **kw: Any) -> None:
    """Restore NAME as it was at its newest released version ('ledger skill revert NAME --to V'): undoes a
    version the gate holds back, as a new version that holds the released one's files."""
    from ledger.evals import decisions

    mutate(ctx, kw, lambda brain: decisions.revert(brain, name, kw["note"]))
