"""``ledger keys`` and ``ledger keys adopt``: signing keys and the trust set (docs/lineage.md §8), and the
encrypted committer keystores that pay for chain transactions."""

from __future__ import annotations

import sys
from typing import Any

import click

from ledger.cli.common import emit, json_flag, main, note_flag, open_brain, print_receipt, prompt_passphrase, returns

_ROLE = click.Choice(["user", "agent", "curator", "verifier"])


def _prompt_password(confirm: bool) -> str:
    return str(click.prompt("keystore password", hide_input=True, confirmation_prompt=confirm, err=True))


@main.group()
def keys() -> None:
    """Signing keys (user, agent, curator, verifier; $LEDGER_KEYS) and the brain's trust set; committer keystores.

    Each snapshot is signed by the key of its actor: the user's for commands, the agent
    runtime's for 'ledger mcp' and the API's acting("agent"), the curator's for curation, a
    verifier's for outcomes it judged (counted as verified, never summed with self-reports).
    A brain signs with the keys its trust set names, from its own key directory
    ($LEDGER_KEYS, else the one recorded when it was made).  Under the policy 'signed'
    (the default) a write that cannot be signed is refused.  Passphrases come from
    LEDGER_KEY_PASSPHRASE or a prompt, never from argv.
    """


@returns("ledger.signatures.reports:KeysReport")
@keys.command("show")
@json_flag
@click.pass_context
def keys_show(ctx: click.Context, as_json: bool) -> None:
    """This machine's signing keys and the keys this brain trusts."""
    from ledger.brain.trustset import show

    with open_brain(ctx) as brain:
        report = show(brain)
    if as_json:
        emit(report)
        return
    doc = report.to_json()
    click.echo(f"this machine ({doc['keys_dir']}):")
    for k in doc["local"]:
        state = "none" if k["address"] is None else "signs" if k["trusted"] else "NOT trusted by this brain"
        click.echo(f"  {k['role']:8} {k['address'] or '-':42}  {state}  ({k['path']})")
    click.echo("this brain trusts:" if doc["trusted"] else "this brain has no trust set (ledger sign --adopt)")
    for k in doc["trusted"]:
        click.echo(f"  {k['role']:8} {k['address']}")
    for address in doc["revoked"]:
        click.echo(f"  revoked  {address}")
    if doc["trusted"]:
        rule = (
            "every snapshot must be signed"
            if doc["policy"] == "signed"
            else "unsigned snapshots are allowed ('ledger keys policy signed' requires signatures)"
        )
        click.echo(f"policy: {doc['policy']} ({rule})")


@returns("ledger.signatures.reports:KeyReport")
@keys.command("generate")
@click.argument("role", type=_ROLE)
@click.option("--passphrase", "encrypt", is_flag=True, help="Protect the key with a passphrase (prompted).")
@json_flag
@click.pass_context
def keys_generate(ctx: click.Context, role: str, encrypt: bool, as_json: bool) -> None:
    """Make this machine's ROLE key ($LEDGER_KEYS/ROLE.key, mode 0600).  Re-runnable: when the key
    exists it is left as it is, named, and the command succeeds ('ledger keys rotate' replaces one)."""
    from ledger.brain.trustset import generate

    prompt = prompt_passphrase if sys.stdin.isatty() else None  # no terminal: LEDGER_KEY_PASSPHRASE or refused
    report = generate(_key_dir(ctx), role, prompt, encrypt=encrypt)
    address, path = report.address, report.path
    if as_json:
        emit(report)
    elif report.created:
        click.echo(f"{role} key {address} written to {path}")
    else:
        click.echo(f"{role} key {address} exists at {path}; left as it is ('ledger keys rotate {role}' replaces it)")


def _key_dir(ctx: click.Context) -> Any:
    """The key directory of the brain in scope (--brain, or found upward), else $LEDGER_KEYS or the default."""
    from ledger._paths import find_brain
    from ledger.errors import StoreError
    from ledger.signatures.identity import KeyDir, keys_home

    try:
        import json

        root = find_brain(ctx.obj["brain"], search_up=ctx.obj["brain"] is None)
        return KeyDir(keys_home(json.loads((root / ".ledger" / "config.json").read_text()).get("keys")))
    except StoreError:
        return KeyDir(keys_home())


@returns("ledger.signatures.reports:KeyExportReport")
@keys.command("export")
@click.option(
    "--public",
    "role",
    type=_ROLE,
    help="Print the PEM public key of the sibling the brain's lineage certifies for its trusted ROLE key.",
)
@click.option("--address", help="With --public: which trusted ROLE key, when the brain trusts several.")
@click.option(
    "--scheme",
    type=click.Choice(["p256", "ed25519"]),
    default=None,
    help="With --public: which sibling (default p256, the one model-signing and DSSE take).",
)
@click.option(
    "--allowed-signers",
    "allowed",
    is_flag=True,
    help="Write git's allowed_signers file for the keys this brain's lineage certifies.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to FILE instead of stdout.")
@json_flag
@click.pass_context
def keys_export(
    ctx: click.Context,
    role: str | None,
    address: str | None,
    scheme: str | None,
    allowed: bool,
    output: str | None,
    as_json: bool,
) -> None:
    """Public keys for tools outside the ledger; no secret is read.  --public ROLE: the PEM key of the sibling
    that the lineage certifies (Ledger-Sibling trailers of a snapshot the key signed) for the head's trusted
    ROLE key: the only one, else --address, else the one this machine holds; with no brain in scope, this
    machine's ROLE key's.  --allowed-signers: one line per address the head's trust set trusts or revoked
    (revoked ones with valid-before), its Ed25519 sibling as the lineage certifies it, so that
    'git -c gpg.format=ssh -c gpg.ssh.allowedSignersFile=FILE verify-commit' checks every signed snapshot.
    With --json, stdout is one document saying what was exported and where (the text itself when no -o)."""
    from ledger.errors import KeystoreError, UsageError
    from ledger.signatures.reports import KeyExportReport

    if (role is None) == (not allowed):
        raise UsageError("give exactly one of --public ROLE or --allowed-signers")
    if allowed and (scheme is not None or address is not None):
        raise UsageError("--scheme and --address go with --public (allowed_signers holds every certified key)")
    if role is not None:
        address, pem, said = _sibling_pem(ctx, role, scheme or "p256", address)
        text = pem.decode()
        _write(output, None if as_json and output is None else text)
        if output:
            click.echo(
                f"{role} key {address}: its {scheme or 'p256'} sibling's public key written to {output}", err=True
            )
        if as_json:
            emit(
                KeyExportReport(
                    exported="public",
                    output=output,
                    **({} if output else {"text": text}),
                    role=role,
                    address=address,
                    scheme=scheme or "p256",  # type: ignore[arg-type]
                    notes=(said,) if said else (),
                )
            )
        return
    with open_brain(ctx) as brain:
        entries, notes = brain.allowed_signers()
    if not entries:
        raise KeystoreError(
            "no snapshot certifies a sibling key of a trusted or revoked key yet, so the "
            "allowed_signers file would be empty",
            hint="make one signed change, then export again",
        )
    text = "".join(e.line() + "\n" for e in entries)
    _write(output, None if as_json and output is None else text)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    if output:
        click.echo(f"{len(entries)} signer(s) written to {output}", err=True)
    if as_json:
        emit(
            KeyExportReport(
                exported="allowed-signers",
                output=output,
                **({} if output else {"text": text}),
                signers=len(entries),
                notes=tuple(notes),
            )
        )


def _sibling_pem(ctx: click.Context, role: str, scheme: str, address: str | None) -> tuple[str, bytes, str | None]:
    """The certified sibling of the brain in scope's trusted ROLE key (keyring.sibling_pem), else, with no
    brain in scope, of this machine's current ROLE key, saying on stderr that nothing vouches for it (the
    note, also returned)."""
    from ledger._paths import find_brain
    from ledger.brain.signers import local_sibling
    from ledger.errors import StoreError, UsageError

    try:
        find_brain(ctx.obj["brain"], search_up=ctx.obj["brain"] is None)
    except StoreError:
        if ctx.obj["brain"] is not None:
            raise
        if address is not None:
            raise UsageError(
                "--address picks among a brain's trusted keys, and no brain is in scope", hint="give --brain PATH"
            ) from None
        prompt = prompt_passphrase if sys.stdin.isatty() else None
        address, pem = local_sibling(_key_dir(ctx), role, scheme, None, prompt)
        said = (
            f"no brain here, so no brain vouches for this key: it is this machine's current {role} "
            f"key {address}'s sibling (give --brain to export the one a brain certifies)"
        )
        click.echo(f"note: {said}", err=True)
        return address, pem, said
    with open_brain(ctx) as brain:
        return (*brain.sibling_pem(role, scheme, address), None)


def _write(output: str | None, text: str | None) -> None:
    """``text`` to stdout, or to the file ``output``, replaced whole (never left half-written); None: nothing
    (--json prints the text in its document)."""
    if text is None:
        return
    if output is None:
        click.echo(text, nl=False)
        return
    from ledger._fs import atomic_write
    from ledger.errors import LedgerError

    path = output
    try:
        atomic_write(path, text.encode())
    except OSError as exc:
        raise LedgerError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="give -o a path in a directory that exists and you may write",
        ) from None


@returns("ledger.write.records:Receipt", "ledger.signatures.reports:TrustUnchanged")
@keys.command("trust")
@click.argument("role", type=_ROLE)
@click.argument("address", required=False)
@note_flag
@json_flag
@click.pass_context
def keys_trust(ctx: click.Context, role: str, address: str | None, note: str, as_json: bool) -> None:
    """Trust ADDRESS (default: this machine's ROLE key) to sign as ROLE; a snapshot signed by the user key."""
    from ledger.errors import KeystoreError
    from ledger.signatures.reports import TrustUnchanged

    if address is None:
        address = _key_dir(ctx).peek(role)
        if address is None:
            raise KeystoreError(f"this machine has no {role} key", hint=f"ledger keys generate {role}")
    from ledger.brain.trustset import trust

    with open_brain(ctx) as brain:
        receipt = trust(brain, role, address, note=note)
    if isinstance(receipt, TrustUnchanged):  # trusting it again changes nothing: re-runnable, as 'keys generate' is
        if as_json:
            emit(receipt)
        else:
            click.echo(f"{address.lower()} is already trusted as a {role} key; nothing changed")
        return
    print_receipt(ctx, receipt, as_json)


@returns("ledger.write.records:Receipt")
@keys.command("revoke")
@click.argument("address")
@note_flag
@json_flag
@click.pass_context
def keys_revoke(ctx: click.Context, address: str, note: str, as_json: bool) -> None:
    """Stop trusting ADDRESS: snapshots it signs from now on fail the audit; earlier ones stand."""
    from ledger.brain.trustset import revoke

    with open_brain(ctx) as brain:
        receipt = revoke(brain, address, note=note)
    print_receipt(ctx, receipt, as_json)


@returns("ledger.write.records:Receipt")
@keys.command("rotate")
@click.argument("role", type=_ROLE)
@click.option("--passphrase", "encrypt", is_flag=True, help="Protect the new key with a passphrase (prompted).")
@note_flag
@json_flag
@click.pass_context
def keys_rotate(ctx: click.Context, role: str, encrypt: bool, note: str, as_json: bool) -> None:
    """Replace this machine's ROLE key: the new one is trusted and the old revoked, in one signed snapshot."""
    from ledger.brain.trustset import rotate

    with open_brain(ctx) as brain:
        receipt = rotate(brain, role, note=note, encrypt=encrypt)
    print_receipt(ctx, receipt, as_json)


@returns("ledger.write.records:Receipt")
@keys.command("policy")
@click.argument("policy", type=click.Choice(["signed", "open"]))
@note_flag
@json_flag
@click.pass_context
def keys_policy(ctx: click.Context, policy: str, note: str, as_json: bool) -> None:
    """Set the brain's signature policy, in a snapshot signed by the user key: 'signed' refuses every
    unsigned snapshot from now on (writes here, and pulls, syncs and clones of peers'); 'open' allows them."""
    from ledger.brain.trustset import set_policy

    with open_brain(ctx) as brain:
        receipt = set_policy(brain, policy, note=note)
    print_receipt(ctx, receipt, as_json)


@returns("ledger.write.records:Receipt")
@main.command("sign")
@click.option("--adopt", is_flag=True, hidden=True, help="(implied: the old 'ledger sign --adopt' passes it)")
@note_flag
@json_flag
@click.pass_context
def sign_cmd(ctx: click.Context, adopt: bool, note: str, as_json: bool) -> None:
    """Adopt signing for a brain made without it: one 'adopt' snapshot, signed by this machine's user key,
    trusts its user and agent keys and attests the head (and so all history) as it is.  Nothing is rewritten."""
    from ledger.brain.trustset import adopt

    with open_brain(ctx) as brain:
        receipt = adopt(brain, note=note)
    print_receipt(ctx, receipt, as_json)


# --------------------------------------------------------------------------- committer keystores


@returns("ledger.chain.reports:CommitterKeyReport")
@keys.command("new")
@click.argument("name")
@json_flag
def keys_new(name: str, as_json: bool) -> None:
    """Create a new random committer keystore NAME ($LEDGER_KEYSTORE)."""
    from ledger.chain.committers import new_committer

    report = new_committer(name, _prompt_password)
    emit(report) if as_json else click.echo(report.address)


@returns("ledger.chain.reports:CommitterKeyReport")
@keys.command("import")
@click.argument("name")
@json_flag
def keys_import(name: str, as_json: bool) -> None:
    """Import a private key as committer keystore NAME, read from stdin or a hidden prompt (never argv)."""
    from ledger.chain.committers import import_committer

    tty = sys.stdin.isatty()
    secret = click.prompt("private key", hide_input=True, err=True) if tty else sys.stdin.readline()
    report = import_committer(name, secret, _prompt_password)
    emit(report) if as_json else click.echo(report.address)


@returns("ledger.chain.reports:CommitterKeysReport")
@keys.command("list")
@json_flag
def keys_list(as_json: bool) -> None:
    """List committer keystores with their addresses."""
    from ledger.chain.committers import list_committers

    report = list_committers()
    if as_json:
        emit(report)
        return
    for k in report.to_json():
        click.echo(f"{k['name']:24} {k['address']}" + (f"  ({k['note']})" if k.get("note") else ""))
