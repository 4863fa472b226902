"""Install, approve, revoke and update skills from elsewhere, each one signed snapshot (docs/supply-chain.md).

Every step reads the source first, outside the writer lock, then takes the lock, checks the
head's ``supply`` record again (an approval or a revocation may have landed meanwhile) and
hands one write to the writer: an ``install`` snapshot (skills and their pins, in quarantine
unless the brain's policy approves them and a user or a curator installs), an ``approve`` or a
``revoke`` snapshot (the record alone).  A skill of a request that is refused (its scan failed, its
digest is revoked, the brain holds a skill of its name, its SKILL.md cannot carry the counter) is
reported with why, and the rest are installed; only ``install --frozen`` is all or nothing, since a
lock names a set.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.bundle import frontmatter
from ledger.bundle.skill import SKILL_MD
from ledger.errors import LedgerError, SkillError, SupplyError
from ledger.scanner import calibration, cisco, sandbox
from ledger.scanner import static as scanner
from ledger.sources import origins, resolve
from ledger.store import gitstore as gs
from ledger.store import supply as sp
from ledger.supply import pins
from ledger.supply.review import Files, installed_files, review, upstream_digests

if TYPE_CHECKING:
    from ledger.brain import Brain
    from ledger.brain.writing import Writing
    from ledger.write.records import Receipt

__all__ = ["Installer", "external", "scanner_spec"]

CLEAN = ("clean", "low")  # a verdict the auto-approval policy may pass (docs/supply-chain.md §5)
HELD = (
    "auto-approval needs a user's or curator's key; approve with ledger approve "
    "(see docs/lineage.md, 'The supply record', rule 6)"
)  # why an agent's install the policy would pass is held
# The one source whose signer's word on a skill can be checked: a brain, whose whole lineage is audited and
# whose signed supply record shows the skill is served, not held (docs/sources.md §3.1, lineage/anchor.md §5).
VOUCHING = ("brain",)
UNVOUCHED = (
    "auto-approval trusts a signer only for a skill from its brain, whose audited lineage shows it "
    "serves the skill: an anchor or a signed commit proves the bytes are in what the key signed, not that "
    "it approves them; approve with ledger approve"
)


def _links(c: resolve.Candidate) -> dict[str, str | None]:
    """A candidate's symlinks mapped to their targets (``None`` where its source did not say)."""
    return {rel: c.link_targets.get(rel) for rel in c.symlinks}


def _relative(entry: resolve.LockEntry, lock_dir: Path) -> resolve.LockEntry:
    """A ``local`` entry named relative to the lock's folder when it lies inside it: a lock's line may name
    only such a path (docs/sources.md §1.1); one outside stays as it is, and is refused where it is read."""
    fields = dict(entry.fields)
    if fields.get("sourceType") != "local" or not isinstance(fields.get("source"), str):
        return entry
    where = Path(fields["source"]).resolve()
    if not where.is_relative_to(lock_dir.resolve()):
        return entry
    fields["source"] = where.relative_to(lock_dir.resolve()).as_posix() or "."
    return replace(entry, fields=tuple(fields.items()))


def _run_policy(policy: dict[str, Any]) -> tuple[bool, float]:
    """``supply.scan_run`` (true: every install also runs the skill in the sandbox) and
    ``supply.scan_run_timeout`` (seconds per script), checked."""
    run, timeout = policy.get("scan_run", False), policy.get("scan_run_timeout", sandbox.TIMEOUT)
    if not isinstance(run, bool):
        raise SupplyError("config: supply.scan_run must be true or false", hint="edit .ledger/config.json")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
        raise SupplyError(
            "config: supply.scan_run_timeout must be a number of seconds in (0, 600]", hint="edit .ledger/config.json"
        )
    return run, float(timeout)


def scanner_spec(value: object) -> str | list[str]:
    """One member of ``supply.scanners``: the name of a supported scanner, or an argv list (docs/scanner.md)."""
    if isinstance(value, str):
        if value == cisco.NAME:
            return value
        raise SupplyError(
            f"supply.scanners: {value!r} is not a scanner this ledger knows by name",
            hint=f'name "{cisco.NAME}", or give a command as an argv list such as '
            '["my-scanner", "--json"] (docs/scanner.md, "External scanners")',
        )
    if isinstance(value, list | tuple) and value and all(isinstance(a, str) and a for a in value):
        return list(value)
    raise SupplyError(
        f"supply.scanners: {str(value)[:80]!r} is neither a scanner's name nor an argv list of strings",
        hint=f'"{cisco.NAME}", or ["my-scanner", "--json"]',
    )


def external(spec: str | Sequence[str], skill_dir: Path) -> scanner.Verdict:
    """The verdict of one configured external scanner on ``skill_dir``."""
    if isinstance(spec, str):
        return cisco.run(skill_dir)
    return scanner.run_external(spec, skill_dir)


def _refusal(name: str, exc: LedgerError) -> dict[str, Any]:
    return {"skill": name, "status": "refused", "error": exc.message, "hint": exc.hint or ""}


class Installer:
    """The supply services of one brain: what ``ledger supply install``, ``approve``, ``revoke``, ``outdated``,
    ``update`` and ``verify --frozen`` run.  ``scanners`` are external scanner commands
    (docs/scanner.md); ``auto_approve`` the upstream signers whose clean skills need no curator, when a
    user or a curator installs them (an agent's install writes every skill quarantined, lineage/supply.md §1 rule 6)."""

    def __init__(
        self,
        brain: Brain,
        *,
        scanners: Sequence[str | Sequence[str]] | None = None,
        auto_approve: Iterable[str] | None = None,
    ) -> None:
        self.brain = brain
        policy = brain.config.get("supply") or {}
        # each a supported scanner's name or an argv list; checked where a scan runs (scanner_spec)
        self.scanners = list(scanners if scanners is not None else policy.get("scanners") or [])
        self.scan_run, self.run_timeout = _run_policy(policy)
        self.auto_approve = {
            a.lower() for a in (auto_approve if auto_approve is not None else policy.get("auto_approve") or [])
        }

    # ------------------------------------------------------------------ reading

    def record(self) -> sp.Supply:
        """The head's supply record."""
        return self.brain.supply()

    def entry(self, name: str) -> sp.Entry:
        entry = self.record().skills.get(name)
        if entry is None:
            raise SupplyError(
                f"{name!r} was not installed from elsewhere (it has no pin)",
                hint="'ledger install SOURCE NAME' installs it; 'ledger skill list' shows what is here",
            )
        return entry

    # ------------------------------------------------------------------ install

    def install(
        self,
        source: str,
        names: Sequence[str] = (),
        *,
        pin: str | None = None,
        rpc: str | None = None,
        note: str = "",
        strip_credentials: bool = False,
    ) -> dict[str, Any]:
        """Install the named skills (every skill when none is named) from ``source``, pinned and scanned.

        A source that carries credentials is refused; with ``strip_credentials`` it is read, recorded and
        named without them, and ``stripped`` in the result names what was removed (never a value)."""
        clean = origins.refuse_credentials(source, "the source URL", strip=strip_credentials)
        stripped = origins.credentials(source) if clean != source else []
        found = resolve.resolve(clean, names, pin=pin, rpc=rpc)
        if not found:
            raise SupplyError(
                f"{clean} holds no skill",
                hint="point at a brain, a repository with skills/*/SKILL.md, "
                "a marketplace.json, a skills-lock.json or an index",
            )
        return {**self._write(found, note or f"installed from {clean}"), "stripped": stripped}

    def install_frozen(self, lock: str, *, rpc: str | None = None) -> dict[str, Any]:
        """Install exactly the pins of ``lock`` (a skills-lock.json, or another brain's supply record),
        each checked byte for byte against its recorded digests, or nothing at all."""
        wanted = pins.locked(lock, rpc=rpc)
        found = []
        for want in wanted:
            cand = resolve.fetch_pinned(want.source, want.pin, want.name)
            blake3, sha256, _ = upstream_digests(cand.files)
            if (want.sha256 and want.sha256 != sha256) or (want.blake3 and want.blake3 != blake3):
                raise SupplyError(
                    f"{want.name}: the source serves other bytes at the locked pin "
                    f"({sha256[:12]}…, locked {(want.sha256 or want.blake3 or '')[:12]}…); nothing "
                    "was installed",
                    hint="the source was rewritten: find out why before trusting it",
                )
            found.append(cand)
        head = self.brain.head()
        for cand in found:
            entry = self.record().skills.get(cand.name)
            if cand.name in head.skills and (entry is None or entry.sha256 != upstream_digests(cand.files)[1]):
                raise SupplyError(
                    f"{cand.name}: this brain holds another version than the lock; nothing was installed",
                    hint="install --frozen reproduces a set into a brain that does not hold it yet",
                )
        return self._write(found, f"installed exactly {lock}", frozen=True)

    def _write(self, found: Sequence[resolve.Candidate], note: str, *, frozen: bool = False) -> dict[str, Any]:
        """One ``install`` snapshot of every candidate that is not refused.  Each refusal (a scan that
        failed, a revoked digest, a name the brain holds, a SKILL.md that cannot carry the counter) is
        that skill's own outcome, ``{"skill", "status": "refused", "error", "hint"}``, and the rest are
        installed; with ``frozen`` (a lock names a set) any refusal refuses them all."""
        brain = self.brain
        refused: dict[str, LedgerError] = {}
        verdicts: dict[str, scanner.Verdict] = {}
        for c in found:
            try:
                verdicts[c.name] = self._scan(c.files, _links(c), None)
            except LedgerError as exc:
                refused[c.name] = exc
        if frozen and refused:
            name, exc = next(iter(refused.items()))
            raise SupplyError(
                f"{name}: {exc.message}; nothing was installed (install --frozen is all or nothing)", hint=exc.hint
            )
        report: list[dict[str, Any]] = []
        with brain.writing() as w:
            head = brain.head()
            record = self.record()
            updates: dict[str, gs.FileMap] = {}
            changes: list[gs.Change] = []
            for cand in found:
                if cand.name in refused:
                    report.append(_refusal(cand.name, refused[cand.name]))
                    continue
                try:
                    row, record = self._one(w, cand, head, record, verdicts[cand.name], updates, changes)
                except LedgerError as exc:
                    if frozen:
                        raise
                    refused[cand.name] = exc
                    row = _refusal(cand.name, exc)
                report.append(row)
            out = {
                "installed": [c.skill for c in changes],
                "skills": report,
                "frozen": frozen,
                "refused": [r["skill"] for r in report if r["status"] == "refused"],
            }
            if not changes:
                return out
            receipt = w.apply("install", updates, changes, note, supply=record)
        return {**out, "commit": receipt.commit, "root": receipt.root, "signer": receipt.signer}

    def _one(
        self,
        w: Writing,
        cand: resolve.Candidate,
        head: Any,
        record: sp.Supply,
        verdict: scanner.Verdict,
        updates: dict[str, gs.FileMap],
        changes: list[gs.Change],
    ) -> tuple[dict[str, Any], sp.Supply]:
        """One candidate's row and the record with its entry; ``updates`` and ``changes`` gain its write.
        Raises (changing nothing) when this skill is refused."""
        brain = self.brain
        blake3, sha256, per_file = upstream_digests(cand.files)
        self._refuse_revoked(record, cand, blake3, sha256)
        old = record.skills.get(cand.name)
        if old is not None and old.sha256 == sha256 and old.source == cand.source:
            return {"skill": cand.name, "status": "unchanged", "state": old.state}, record
        if cand.name in head.skills:
            why = ("it was installed from " + old.source["url"]) if old else "it is this brain's own skill"
            raise SupplyError(
                f"{cand.name!r} is already in this brain ({why}); it was not installed",
                hint=f"'ledger supply update {cand.name}' reviews a newer upstream version"
                if old
                else "rename or delete the brain's own skill first",
            )
        version = brain.first_version(cand.name, head)
        blobs, counter = self._blobs(w, head, cand.name, cand.files, version)
        listed = (cand.signer or "").lower() in self.auto_approve and verdict.worst in CLEAN
        trusted = listed and cand.source.get("type") in VOUCHING
        # lineage/supply.md §1 rule 6: a user's or a curator's
        auto = trusted and brain.attribution["actor"] in sp.APPROVERS
        entry = sp.Entry(
            cand.source,
            cand.pin,
            version,
            blake3,
            sha256,
            per_file,
            cand.signer,
            cand.derived_from,
            sp.APPROVED if auto else sp.QUARANTINED,
            calibration.attach(verdict.to_json()),
            {"by": self._address(), "auto": True, "override": None} if auto else None,
            counter,
        )
        updates[cand.name] = blobs
        changes.append(gs.Change("create", cand.name, version))
        row = {
            "skill": cand.name,
            "status": "installed",
            "version": version,
            "state": entry.state,
            "verdict": verdict.worst,
            "scanner": verdict.scanner,
            "findings": len(verdict.findings),
            "pin": cand.pin,
            "blake3": blake3,
            "sha256": sha256,
            **({"held": HELD} if trusted and not auto else {"held": UNVOUCHED} if listed and not trusted else {}),
        }
        return row, record.with_entry(cand.name, entry)

    def _refuse_revoked(self, record: sp.Supply, cand: resolve.Candidate, blake3: str, sha256: str) -> None:
        digests = (blake3, "sha256:" + sha256)
        hit = record.is_revoked(*digests) or next((d for d in digests if d in cand.revoked), None)
        if hit is not None:
            why = record.revoked.get(hit, {}).get("reason") or "revoked by its source"
            raise SupplyError(
                f"{cand.name}: {hit} is revoked ({why}); it was not installed",
                hint="a revoked digest is never installed again: ask its author for a fixed version",
            )

    def _blobs(
        self, w: Writing, head: Any, name: str, files: Files, version: int, served: bool = True
    ) -> tuple[gs.FileMap, str | None]:
        """The skill's blobs as this brain stores them: byte for byte, with the ledger's counter where
        the brain keeps versions in SKILL.md (docs/lineage.md §4.2); and the served SKILL.md's counter
        line (None: it had none), which the entry records so that the audit can set the installed
        counter aside and hold SKILL.md to its pin (lineage/supply.md §1 rule 6).  A SKILL.md whose counter could not
        be set aside exactly is refused: nothing is installed that the audit could not check."""
        brain = self.brain
        writes = dict(files)
        if SKILL_MD not in writes:
            raise SkillError(f"{name} has no {SKILL_MD}")
        try:
            text = writes[SKILL_MD][0].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillError(f"{name}/{SKILL_MD} is not valid UTF-8") from exc
        doc = brain.version_doc(head, text, limit=brain.limits["skill_md"])
        installed = doc.with_counter(version)
        counter = None
        if served and brain.version_record(head) is None:  # the counter lives in SKILL.md
            try:  # the source's own counter, if it has one, in a spelling the audit can restore
                found = frontmatter.counter_line(text)
            except SkillError as exc:
                raise SupplyError(f"{name}: {exc.message}; it was not installed", hint=exc.hint) from exc
            counter = found[1] if found is not None else None
            try:  # and ours, written so that it is the only line that differs (lineage/supply.md §1)
                exact = frontmatter.set_aside(installed, counter) == text
            except SkillError:
                exact = False
            if not exact:
                raise SupplyError(
                    f"{name}: the ledger cannot write its version counter into this SKILL.md so that "
                    "only the counter's line differs from the source's (its 'metadata:' is empty or a "
                    "flow mapping such as {...}); it was not installed",
                    hint="ask its author to write 'metadata:' as a block mapping with at least one key, "
                    "or no 'metadata:' at all; or install into a brain that keeps versions in the store "
                    "('ledger init --versions store',"
                    " see docs/lineage.md, 'The supply record' and 'Where versions live')",
                )
        writes[SKILL_MD] = (installed.encode(), writes[SKILL_MD][1])
        return w.blobs(writes), counter

    def _scan(self, files: Files, symlinks: Mapping[str, str | None], vetted: Files | None) -> scanner.Verdict:
        verdict = scanner.scan(files, vetted=vetted, symlinks=symlinks)
        if self.scan_run:  # the sandboxed run (docs/scanner.md); off where it cannot run: the install refuses
            verdict = scanner.merge(verdict, sandbox.run_verdict(files, timeout=self.run_timeout))
        if not self.scanners:
            return verdict
        with tempfile.TemporaryDirectory(prefix="ledger-scan-") as tmp:
            root = Path(tmp) / "skill"
            for rel, (data, exe) in files.items():
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                path.chmod(0o755 if exe else 0o644)
            specs = [scanner_spec(s) for s in self.scanners]
            return scanner.merge(verdict, *(external(spec, root) for spec in specs))

    def _address(self) -> str | None:
        """The address that will sign the next snapshot, or None when it will be unsigned."""
        return self.brain.signing_address(self.brain.head())

    # ------------------------------------------------------------------ approve and revoke

    def approve(self, names: Sequence[str], *, override: str | None = None, note: str = "") -> Receipt:
        """A curator's signed approval: the skills leave quarantine.  A critical verdict needs ``override``."""
        if self.brain.attribution["actor"] == "agent":
            raise SupplyError(
                "an agent cannot approve skills from elsewhere",
                hint="a user or curator approves: run 'ledger supply approve' as the user",
            )
        if override is not None and not override.strip():
            raise SupplyError("--override needs a reason", hint='--override "why this finding is acceptable"')
        with self.brain.writing() as w:
            record = self.record()
            for name in names:
                entry = self.entry(name)
                if entry.state != sp.QUARANTINED:
                    raise SupplyError(
                        f"{name} is {entry.state}, not quarantined; nothing was approved",
                        hint="a revoked skill is never approved" if entry.state == sp.REVOKED else "",
                    )
                if entry.blocking and override is None:
                    rules = sorted(
                        {f["rule"] for f in entry.verdict.get("findings", []) if f.get("severity") == "critical"}
                    )
                    raise SupplyError(
                        f"{name} has critical findings ({', '.join(rules)}); nothing was approved",
                        hint=f"read them with 'ledger supply show {name}'; approving anyway needs "
                        '--override "REASON", which is recorded and signed',
                    )
                approval = {"by": self._address(), "auto": False, "override": override if entry.blocking else None}
                record = record.with_entry(name, replace(entry, state=sp.APPROVED, approval=approval))
            actor = self.brain.attribution["actor"]
            with self.brain.acting(actor, reason=override[:200]) if override else contextlib.nullcontext():
                return w.apply("approve", {}, [], note or "approved " + ", ".join(names), supply=record)

    def revoke(self, target: str, reason: str, *, note: str = "") -> dict[str, Any]:
        """Revoke a digest (``blake3-tree-v1:…`` or ``sha256:…``), or every skill of ``SOURCE@PIN``."""
        if not reason.strip():
            raise SupplyError("a revocation needs a reason", hint='--reason "why"')
        digests: dict[str, dict[str, Any]] = {}
        record = self.record()
        if sp.is_digest(target):
            digests[target] = {"reason": reason, "source": None, "pin": None}
        else:
            url, _, pin = target.rpartition("@")
            if not url or not pin:
                raise SupplyError(
                    f"{target!r} is neither a digest nor SOURCE@PIN",
                    hint="blake3-tree-v1:<64 hex>, sha256:<64 hex>, or SOURCE@COMMIT",
                )
            origins.refuse_credentials(url, "the source URL")  # it is recorded with the revocation
            found = [
                e.digests()
                for e in record.skills.values()
                if e.source["url"] == url and pin in (e.pin.get("commit"), e.pin.get("root"), e.pin.get("sha256"))
            ]
            if not found:  # nothing of it installed here: revoke what the source serves at that pin
                for cand in resolve.resolve(url, (), pin=pin):
                    blake3, sha256, _ = upstream_digests(cand.files)
                    found.append((blake3, "sha256:" + sha256))
            for pair in found:
                for digest in pair:
                    digests[digest] = {"reason": reason, "source": url, "pin": pin}
        with self.brain.writing(self.brain.attribution["actor"], reason=reason[:200]) as w:
            record = self.record()
            fresh = {d: why for d, why in digests.items() if d not in record.revoked}
            if not fresh:  # a revocation never changes once written (docs/lineage/supply.md §1 rule 2)
                raise SupplyError(
                    f"{target} is already revoked ({record.revoked[next(iter(digests))]['reason']}); nothing changed",
                    hint="a revocation is kept as it was first written",
                )
            revoked = {**record.revoked, **fresh}
            hit = [n for n, e in record.skills.items() if any(d in revoked for d in e.digests())]
            skills = {n: replace(e, state=sp.REVOKED) if n in hit else e for n, e in record.skills.items()}
            receipt = w.apply("revoke", {}, [], note or f"revoked {target}", supply=sp.Supply(skills, revoked))
        return {"revoked": sorted(digests), "skills": hit, "commit": receipt.commit, "signer": receipt.signer}

    # ------------------------------------------------------------------ updates

    def outdated(self) -> list[dict[str, Any]]:
        """Each installed skill whose source now serves other bytes than its pin."""
        out = []
        for name, entry in sorted(self.record().skills.items()):
            try:
                cand = resolve.latest(entry.source, name, entry.pin)
                pins.require_held(entry.source, name, entry.pin, entry.signer, cand)  # what update would refuse
            except LedgerError as exc:
                out.append({"skill": name, "pin": entry.pin, "error": exc.message})
                continue
            sha256 = upstream_digests(cand.files)[1]
            if sha256 != entry.sha256:
                out.append({"skill": name, "pin": entry.pin, "latest": cand.pin, "state": entry.state})
        return out

    def update(self, name: str, *, pin: str | None = None, apply: bool = False) -> dict[str, Any]:
        """Review (and with ``apply``, install into quarantine) the source's newer version of ``name``.

        The diff is against the *vetted* version; local edits are kept as a fork and merged three
        ways.  A source whose history no longer holds the pinned commit is refused."""
        entry = self.entry(name)
        if entry.state == sp.REVOKED:
            raise SupplyError(f"{name} is revoked; it is not updated", hint="delete it, or install another skill")
        cand = (
            resolve.resolve(entry.source["url"], [name], pin=pin)[0]
            if pin
            else resolve.latest(entry.source, name, entry.pin)
        )
        pins.require_descends(entry.source, entry.pin, cand.pin)
        pins.require_held(entry.source, name, entry.pin, entry.signer, cand)
        blake3, sha256, per_file = upstream_digests(cand.files)
        self._refuse_revoked(self.record(), cand, blake3, sha256)
        vetted = installed_files(self.brain, name, entry.version)
        current = installed_files(self.brain, name, None)
        counted = self.brain.version_record(self.brain.head()) is None
        plan = review(vetted, current, cand.files, counted=counted)
        verdict = self._scan(cand.files, _links(cand), vetted)
        out = {
            "skill": name,
            "from": entry.pin,
            "to": cand.pin,
            "diff": plan.report,
            "forked": plan.forked,
            "verdict": verdict.to_json(),
            "applied": False,
        }
        if (entry.signer or "").lower() != (cand.signer or "").lower():  # said for every kind, held for an anchor's
            out["signer"] = {"from": entry.signer, "to": cand.signer}
        if sha256 == entry.sha256:
            return {**out, "unchanged": True}
        if plan.conflicts:
            raise SupplyError(
                f"{name}: local edits conflict with the update in {', '.join(plan.conflicts)}; nothing changed",
                hint=f"edit {name} to settle them, or 'ledger skill revert' the local edits, then update again",
            )
        if not apply:
            return out
        with self.brain.writing() as w:
            head = self.brain.head()
            now = self.record().skills.get(name)
            if now != entry:
                raise SupplyError(
                    f"{name}'s pin changed while the update was reviewed; nothing changed", hint="run the update again"
                )
            version = (
                self.brain.committed(name)[1].version + 1
                if counted
                else (self.brain.version_record(head) or {}).get(name, 0) + 1
            )
            # The install writes exactly what the source serves (lineage/supply.md §1 rule 6); local edits kept as a
            # fork
            # follow as an edit of their own, so the lineage shows both and the pin holds.
            blobs, counter = self._blobs(w, head, name, cand.files, version)
            new = replace(
                entry,
                source=cand.source,
                pin=cand.pin,
                version=version,
                blake3=blake3,
                sha256=sha256,
                files=per_file,
                signer=cand.signer,
                derived_from=cand.derived_from,
                state=sp.QUARANTINED,
                verdict=calibration.attach(verdict.to_json()),
                approval=None,
                counter=counter,
            )
            receipt = w.apply(
                "install",
                {name: blobs},
                [gs.Change("update", name, version)],
                f"updated {name} from {entry.source['url']}",
                supply=self.record().with_entry(name, new),
            )
            if plan.forked and dict(plan.files) != dict(cand.files):
                version += 1
                forked = self._blobs(w, self.brain.head(), name, plan.files, version, served=False)[0]
                receipt = w.apply(
                    "edit",
                    {name: forked},
                    [gs.Change("update", name, version)],
                    f"kept the local edits of {name} ({', '.join(plan.local)}) over the update, merged three ways",
                )
        return {**out, "applied": True, "version": version, "commit": receipt.commit, "state": sp.QUARANTINED}

    # ------------------------------------------------------------------ frozen

    def verify_frozen(self, *, sources_too: bool = True) -> dict[str, Any]:
        """Every installed skill against its pin: local drift (files named) and whether the source still
        serves the pin byte for byte.  ``ok`` is False on any difference."""
        counted = self.brain.version_record(self.brain.head()) is None
        skills = []
        for name, entry in sorted(self.record().skills.items()):
            row: dict[str, Any] = {
                "skill": name,
                "state": entry.state,
                "pin": entry.pin,
                "drift": [],
                "source": "not checked",
            }
            vetted, current = installed_files(self.brain, name, entry.version), installed_files(self.brain, name, None)
            row["drift"] = review(vetted, current, current, counted=counted).local
            if entry.state == sp.REVOKED:
                row["problem"] = "revoked"
            if sources_too:
                try:
                    cand = resolve.fetch_pinned(entry.source, entry.pin, name)
                    served = upstream_digests(cand.files)
                    row["source"] = "serves the pin" if served[1] == entry.sha256 else "serves other bytes"
                    if served[1] != entry.sha256:
                        row["source_drift"] = sorted(
                            r for r in set(served[2]) | set(entry.files) if served[2].get(r) != entry.files.get(r)
                        )
                except LedgerError as exc:
                    row["source"] = "no longer serves the pin"
                    row["source_error"] = exc.message
            row["ok"] = not row["drift"] and row["source"] in ("serves the pin", "not checked") and "problem" not in row
            skills.append(row)
        return {"ok": all(r["ok"] for r in skills), "skills": skills}

    def export_lock(self, path: Path) -> dict[str, Any]:
        """This brain's installed set as the ``skills`` CLI's ``skills-lock.json``."""
        entries = [_relative(e, Path(path).absolute().parent) for e in pins.lock_entries(self.record().skills)]
        resolve.write_lock(entries, path)
        return {"path": str(path), "skills": sorted(self.record().skills)}
