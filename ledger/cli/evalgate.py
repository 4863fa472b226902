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
    want_commit,
)
from ledger.cli.evals import eval_group
from ledger.cli.outcomes import split_ref
from ledger.errors import LedgerError, UsageError

_APPROVERS = click.Choice(["user", "curator", "agent"])


@eval_group.command("gate")
@click.argument("state", type=click.Choice(["on", "off"]))
@click.option("--actor", type=click.Choice(["user", "curator"]), default="user", show_default=True,
              help="Whose key turns the gate off (on takes none): a user's or a curator's.")  # fmt: skip
@json_flag
@click.pass_context
def eval_gate(ctx: click.Context, state: str, actor: str, as_json: bool) -> None:
    """Turn the gate on or off ("eval": {"gate": ...} in .ledger/config.json).

    With the gate on, a skill whose version at the head has evals/evals.json reaches runtimes at its
    newest released version: evaluated under the skill's plan by a verifier, user or curator key
    without making the agent worse, or approved by a user or curator ('ledger eval approve').
    Turning it off takes a user's or curator's key on this machine: the gate holds back what an
    agent wrote, so an agent's key may not lift it."""
    on = state == "on"
    with open_brain(ctx) as brain:
        section = dict(brain.config.get("eval") or {})
        changed = bool(section.get("gate")) is not on
        section["gate"] = on
        if changed and not on:
            trust = brain.trust()
            key = brain.key_for(trust, actor) if trust.established else None
            if isinstance(key, tuple):
                raise LedgerError(f"turning the gate off takes a {actor}'s key, and {key[0]}",
                                  hint=f"{key[1]}; then 'ledger eval gate off' (--actor user or curator)")  # fmt: skip
        if changed:
            brain.update_config(eval=section)
    if as_json:
        emit({"gate": on, "changed": changed})
    else:
        click.echo(f"gate {state}" + ("" if changed else " (it already was)"))


@eval_group.command("approve")
@click.argument("ref", metavar="NAME@VERSION")
@click.option("--reason", required=True, help="Why this version may reach runtimes (1 to 512 characters).")
@click.option("--actor", type=_APPROVERS, default="user", show_default=True,
              help="Whose key signs the approval: a user's or a curator's (an agent's is refused).")  # fmt: skip
@note_flag
@commit_flag
@json_flag
@click.pass_context
def eval_approve(ctx: click.Context, ref: str, reason: str, actor: str, note: str, chain_commit: bool | None,
                 as_json: bool) -> None:  # fmt: skip
    """Release NAME at VERSION through the gate with a signed approval (an entry of the evidence log)."""
    name, version = split_ref(ref)
    if version is None:
        raise UsageError(f"name the version to approve: {name}@VERSION (see 'ledger status' for held versions)")
    if actor == "agent":
        raise LedgerError("an agent's key may not approve a version: the gate holds back what an agent wrote "
                          "until a verifier's evaluation or a person releases it",
                          hint=f"approve with your own key: ledger eval approve {ref} --reason TEXT "
                               "(--actor user or curator)")  # fmt: skip
    if not 1 <= len(reason) <= 512:
        raise UsageError(f"--reason is {len(reason)} characters; give 1 to 512")
    want_commit(ctx, chain_commit)
    with open_brain(ctx) as brain, brain.acting(actor):
        receipt, entry = brain.evidence.approve(name, version, reason)
    if not as_json:
        click.echo(f"approved {name} v{version}: {reason}")
    print_receipt(ctx, receipt, as_json, {"approval": entry.id.hex()})


@eval_group.command("revert")
@click.argument("name")
@mutation
@click.pass_context
def eval_revert(ctx: click.Context, name: str, **kw: Any) -> None:
    """Restore NAME as it was at its newest released version ('ledger revert NAME --to V'): undoes a
    version the gate holds back, as a new version that holds the released one's files."""
    from ledger.evals import gate

    def op(brain: Any) -> Any:
        name_ = brain.resolve(name)
        found = gate.read(brain, [name_]).get(name_)
        if found is None:
            why = "the gate is off" if not gate.enabled(brain.config) else f"{name_} has no evals/evals.json at " \
                "the head, so the gate does not hold it"  # fmt: skip
            raise LedgerError(f"nothing to revert: {why}", hint=f"'ledger revert {name_} --to V' restores any version")
        if found.released is None:
            raise LedgerError(f"{name_} has no released version to go back to",
                              hint=f"run 'ledger eval run {name_}', or approve one: ledger eval approve "
                                   f"{name_}@V --reason TEXT")  # fmt: skip
        if found.released == found.head:
            raise LedgerError(f"nothing to revert: {name_} v{found.head} is released",
                              hint=f"'ledger revert {name_} --to V' restores any version")  # fmt: skip
        return brain.revert(name_, found.released, note=kw["note"] or f"eval revert {name_} to v{found.released}, "
                            "its newest released version")  # fmt: skip

    mutate(ctx, kw, op)
