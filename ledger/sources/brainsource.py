"""Skills from another brain: audited, proven against its signed root, and checked on chain.

A brain is a git repository whose ``main`` holds ledger snapshots (commits with a
``Ledger-Root`` trailer, docs/lineage.md).  It is fetched exactly as ``ledger pull`` fetches
one (:func:`ledger.remotes.sharing.fetched`: ``main`` and the chain receipts, into a
temporary quarantine), and nothing is taken unless:

1. the whole lineage passes ``ledger audit`` (:func:`ledger.audit.lineage.audit_repo`):
   every root recomputed, every signature checked under the lineage's policy;
2. every file of every skill taken has an inclusion proof against the signed root of
   the pinned snapshot (:func:`ledger.store.proofs.prove_at`), verified with the file's
   own bytes (:func:`ledger.bundle.merkle.verify_proof`); a second line behind the audit;
3. with ``rpc``, and when the brain carries receipts (:mod:`ledger.chain.receipts`), the
   last anchored snapshot at or before the pin has its root on chain at its sequence,
   read with the light JSON-RPC client (:class:`ledger.chain.registry.Registry`).

The pin is ``{"commit", "root", "seq"}`` (``seq`` when the pinned snapshot itself is
anchored); the signer is the address that signed the pinned snapshot; ``revoked`` holds the
digests that snapshot's ``supply`` record revokes (:mod:`ledger.store.supply`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ledger.audit.lineage import audit_repo
from ledger.bundle.merkle import RootIndex, format_root, verify_proof
from ledger.chain.receipts import read_receipts
from ledger.chain.registry import Registry
from ledger.errors import ChainError, LedgerError, SourceError, StoreError
from ledger.protocol import signing
from ledger.remotes.sharing import fetched
from ledger.sources.candidates import Candidate, candidate, pick, source_doc
from ledger.store import gitstore as gs
from ledger.store import supply as sp
from ledger.store import treehash as th
from ledger.store.proofs import prove_at
from ledger.store.skilltree import skills_of

__all__ = ["brain_candidates", "is_brain", "pinned", "read_brain", "supply_at", "supply_of"]

_HEX40 = re.compile(r"[0-9a-f]{40}\Z")


def is_brain(repo: Path) -> bool:
    """Whether a fetched repository's ``main`` head is a ledger snapshot."""
    try:
        with gs.GitStore(repo) as store:
            head = store.head()
            return head is not None and store.snapshot(head) is not None
    except (StoreError, ValueError):
        return False


def brain_candidates(
    url: str, names: Sequence[str] = (), pin: str | None = None, rpc: str | None = None
) -> list[Candidate]:
    """The skills of the brain at ``url`` at ``pin`` (a commit id, ``main~N`` or a root; default: its head)."""
    with _fetched(url) as repo:
        return read_brain(repo, url, names, pin, rpc)


def pinned(source: dict[str, Any], pin: dict[str, Any], name: str, rpc: str | None = None) -> Candidate:
    """Exactly the recorded snapshot of a brain source: its commit, with the root recorded."""
    with _fetched(source["url"]) as repo:
        (found,) = read_brain(repo, source["url"], [name], pin["commit"], rpc, ref=source.get("ref"))
    if found.pin["root"] != pin.get("root", found.pin["root"]):
        raise SourceError(f"{source['url']} no longer serves root {pin['root']} at {pin['commit'][:12]}")
    return found


@contextlib.contextmanager
def _fetched(url: str) -> Iterator[Path]:
    """:func:`~ledger.remotes.sharing.fetched`, its refusals as :class:`SourceError`."""
    with contextlib.ExitStack() as stack:
        try:
            repo = stack.enter_context(fetched(url))
        except StoreError as exc:
            raise SourceError(f"cannot fetch the brain {url}: {exc.message}", hint=exc.hint) from exc
        yield repo


def read_brain(
    repo: Path, url: str, names: Sequence[str], pin: str | None, rpc: str | None, ref: str | None = None
) -> list[Candidate]:
    """Audit the fetched brain ``repo``, then read, prove and pin its skills."""
    _audited(repo, url)
    with gs.GitStore(repo) as store:
        head = store.head()
        if head is None:
            raise SourceError(f"{url} holds no snapshots")
        commit = _pinned_commit(store, head, pin, url)
        lineage = list(store.lineage(head))
        snap = next(s for s in lineage if s.commit == commit)
        receipts = read_receipts(store)
        older = lineage[[s.commit for s in lineage].index(commit) :]  # the pin and what precedes it
        anchor = next(((s, receipts[s.commit]) for s in older if s.commit in receipts), None)
        if rpc is not None and anchor is not None:
            _on_chain(rpc, url, *anchor)
        derived = {"root": format_root(snap.root)}
        if anchor is not None:
            note = anchor[1]
            derived = {
                "agent": int(note["agent"], 16),
                "chain": note["chain_id"],
                "registry": note["registry"].lower(),
                "root": format_root(snap.root),
            }
        seq = anchor[1]["seq"] if anchor is not None and anchor[0].commit == commit else None
        pin_doc = {"commit": commit, "root": format_root(snap.root), "seq": seq}
        signer = _signer(snap)
        top = store.commit_info(bytes.fromhex(commit))[0]
        record = supply_at(store, top)
        revoked = frozenset(record.revoked)
        _, skills, _ = skills_of(store, top)
        for name in names:  # what the source withholds from its own agent, it does not serve
            held = record.skills.get(name)
            if held is not None and held.state != sp.APPROVED:
                why = record.revoked.get(next((d for d in held.digests() if d in record.revoked), ""), {})
                raise SourceError(
                    f"the brain {url} holds {name} {held.state}"
                    + (f" ({why.get('reason')})" if why else "")
                    + ": it does not serve it",
                    hint="a brain serves only the skills its curator approved",
                )
        served = {n: t for n, t in skills.items() if n not in record.withheld()}
        cache = th.DigestCache(None)
        index = RootIndex({n: th.tree_digest(store, t, cache, n) for n, t in skills.items()})
        out = []
        for name in pick(served, names, f"the brain {url} at {commit[:12]}"):
            files = _proven(store, cache, skills, index, snap.root, name, url)
            out.append(
                candidate(
                    name,
                    files,
                    source_doc("brain", url, f"skills/{name}", ref),
                    dict(pin_doc),
                    signer=signer,
                    derived_from=dict(derived),
                    revoked=revoked,
                )
            )
        return out


def supply_at(store: gs.GitStore, top: bytes) -> sp.Supply:
    """The ``supply`` record of a snapshot's top tree (empty when the brain installed nothing)."""
    _, data = store.supply_record(top)
    return sp.parse_record(data) if data else sp.Supply({}, {})


def supply_of(url: str, rpc: str | None = None) -> sp.Supply:
    """The supply record at the head of the brain at ``url``, once its lineage passes the audit
    (and, with ``rpc``, its last anchored root is on chain): what another brain installed, pinned."""
    with _fetched(url) as repo:
        _audited(repo, url)
        with gs.GitStore(repo) as store:
            head = store.head()
            if head is None:
                raise SourceError(f"{url} holds no snapshots")
            if rpc is not None:
                receipts = read_receipts(store)
                anchor = next(((s, receipts[s.commit]) for s in store.lineage(head) if s.commit in receipts), None)
                if anchor is not None:
                    _on_chain(rpc, url, *anchor)
            return supply_at(store, store.commit_info(head)[0])


def _audited(repo: Path, url: str) -> None:
    """Refuse a brain whose lineage fails the audit (as ``ledger pull`` refuses one)."""
    try:
        report = audit_repo(repo)
    except LedgerError as exc:
        raise SourceError(f"cannot audit the brain {url}: {exc.message}", hint=exc.hint) from exc
    failed = [c for c in report.checks.values() if not c.ok]
    if failed:
        raise SourceError(
            f"the brain {url} fails the audit, so nothing was taken from it:"
            + "".join(f"\n  {c.name}: {c.summary}" for c in failed),
            hint=f"run 'ledger audit {url}' for the full report",
        )


def _pinned_commit(store: gs.GitStore, head: bytes, pin: str | None, url: str) -> str:
    """The snapshot ``pin`` names on ``main``'s first-parent line (the head when None)."""
    if pin is None:
        return head.hex()
    try:
        commit = store.resolve(pin).hex()
    except StoreError:
        if _HEX40.match(pin):
            raise SourceError(
                f"the brain {url} no longer serves snapshot {pin}: its main does not hold that commit",
                hint="its history was rewritten; pick a new pin with 'latest'",
            ) from None
        raise SourceError(
            f"the brain {url} has no snapshot {pin!r}", hint="name a commit id, main~N or a root"
        ) from None
    if commit not in {s.commit for s in store.lineage(head)}:
        raise SourceError(
            f"the brain {url} no longer serves snapshot {commit}: it is not on its main line",
            hint="pin a snapshot of its main",
        )
    return commit


def _proven(
    store: gs.GitStore,
    cache: th.DigestCache,
    skills: dict[str, bytes],
    index: RootIndex,
    root: bytes,
    name: str,
    url: str,
) -> dict[str, tuple[bytes, bool]]:
    """The skill's files, each with an inclusion proof in ``root`` checked against its own bytes."""
    entries = th.files_of(store, skills[name])
    blobs = store.read_blobs([blob for _, blob in entries.values()])
    files = {}
    for (rel, (mode, _)), data in zip(entries.items(), blobs, strict=True):
        try:
            proof = prove_at(store, cache, skills, index, root, f"{name}/{rel}", lambda: index)
            verify_proof(proof, root, data)
        except LedgerError as exc:
            raise SourceError(
                f"the brain {url}: {name}/{rel} does not prove into its signed root {format_root(root)}: {exc.message}",
                hint="its objects do not match what it signed; nothing was taken",
            ) from exc
        files[rel] = (data, mode == gs.MODE_EXEC)
    return files


def _signer(snap: gs.Snapshot) -> str | None:
    """The address that signed ``snap`` (docs/lineage.md §8), recovered as the audit recovers it."""
    if snap.signature is None:
        return None
    text, last = signing.split_signature(snap.message)
    parent = bytes.fromhex(snap.parents[0]) if snap.parents else None
    digest = signing.digest(
        snap.root, snap.parent_root, parent, bytes.fromhex(snap.tree), snap.attribution.get("actor", ""), text
    )
    return signing.recover(digest, last or "").lower()


def _on_chain(rpc: str, url: str, snap: gs.Snapshot, note: dict[str, Any]) -> None:
    """Refuse unless the registry's event at the receipt's sequence records this snapshot's root."""
    want = format_root(snap.root)
    if note["root"] != want:
        raise SourceError(
            f"the brain {url}: the receipt of {snap.commit[:12]} names root {note['root']}, "
            f"but the snapshot's root is {want}"
        )
    try:
        reg = Registry(rpc, note["registry"], expected_chain_id=note["chain_id"])
        events = {ev["seq"]: ev for ev in reg.lineage(int(note["agent"], 16))}
    except ChainError as exc:
        raise SourceError(f"cannot check the brain {url} on chain: {exc.message}", hint=exc.hint) from exc
    event = events.get(note["seq"])
    if event is None or format_root(event["root"]) != want:
        got = "no event" if event is None else f"root {format_root(event['root'])}"
        raise SourceError(
            f"the brain {url}: the chain has {got} at seq {note['seq']} for agent {int(note['agent'], 16)}, not {want}",
            hint="its receipts do not match the registry; nothing was taken",
        )
