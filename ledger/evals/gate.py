"""The gate (issue 47; docs/layouts.md, "The gate"): which version of each gated skill runtimes get.

With ``"eval": {"gate": true}`` in ``.ledger/config.json``, a skill whose version at the head has
``evals/evals.json``, or that has a plan in the evidence log, is **gated**: runtimes get its newest
**released** version, not the head's.  A version is released when

- it is from before the skill first had ``evals/evals.json`` (nothing to hold it to), or
- it holds the newest released version's files, the version counter aside (a revert), or
- a user or curator key approved it (an approval entry of the evidence log naming its digest), or
- an evaluation under the skill's plan, signed by a verifier, user or curator key, shows it does not make
  the agent worse: its paired lift's 95 % interval is not wholly below zero, not wholly below its
  predecessor's (the released version before it, under the same plan), and no case regressed (passed
  in every baseline run, or in every run of the predecessor, and failed in some run of this version).

An agent's own evaluation never releases a version (ADR 49, "who may release a version"): the tier it
would sit in is *self-reported*, and the key that wrote the version may not also be the one that lets
it out.  Nor does its plan count (:func:`trusted_plans`): a plan names the commands the evaluating key
runs.  The evaluations that count are those under the skill's newest trusted plan, and those under an
older one recorded before the newest was made (a release is never taken back by a new plan; evidence
under a superseded plan recorded after it counts for nothing).  A version that changed its own eval
set (``evals/`` is not the released predecessor's) needs a user's or curator's plan of the new set;
with a ``previous`` baseline only pairs against the released predecessor count.  A skill's versions
are its name's since version 1: a delete and a create again do not start it afresh.

Everything here is a pure decision over plain dicts in the shapes of docs/lineage/evaluations.md (records,
plans, approvals, each with its ``index`` in the log), the head's trust roles and each version's digest;
:func:`read` gathers them from a brain; :func:`paired_lift` counts the pairs for
:func:`ledger.evals.lift.newcombe_paired`, the one place the interval is computed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ledger.bundle.skill import counter_zeroed
from ledger.errors import LedgerError
from ledger.evals.lift import TRUSTED, newcombe_paired, passed
from ledger.protocol.bundlehash import format_root
from ledger.store import outcomes as oc
from ledger.store.skilltree import skills_of
from ledger.store.supply import Supply
from ledger.store.supply import parse_record as parse_supply

if TYPE_CHECKING:
    from ledger.brain import Brain

__all__ = [
    "APPROVERS",
    "RELEASERS",
    "Release",
    "SkillGate",
    "Verdict",
    "decide",
    "enabled",
    "paired_lift",
    "read",
    "releases",
    "revoked_version",
    "trusted_plans",
]

EVALS_JSON = "evals/evals.json"
RELEASERS = TRUSTED  # roles whose evaluation can release a version, and whose plans count
APPROVERS = frozenset({"user", "curator"})  # roles whose approval releases a version


def enabled(config: Mapping[str, Any]) -> bool:
    """Whether ``.ledger/config.json`` turns the gate on (``"eval": {"gate": true}``)."""
    section = config.get("eval")
    return isinstance(section, dict) and section.get("gate") is True


@dataclass(frozen=True)
class Verdict:
    """One version's: released or held, and why, in words a person acts on."""

    version: int
    released: bool
    why: str
    by: str | None = None  # "approval", "evaluation", "no evals"
    lift: dict[str, Any] | None = None
    regressed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "released": self.released,
            "why": self.why,
            "by": self.by,
            "lift": self.lift,
            "regressed": list(self.regressed),
        }


@dataclass
class SkillGate:
    """One gated skill: its head version, its newest released version, and each version's verdict."""

    skill: str
    head: int
    released: int | None
    verdicts: dict[int, Verdict] = field(default_factory=dict)

    def held(self) -> list[Verdict]:
        """The versions newer than the released one that are not released, oldest first."""
        floor = self.released or 0
        return [v for n, v in sorted(self.verdicts.items()) if n > floor and not v.released]

    def to_json(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "head": self.head,
            "released": self.released,
            "held": [v.to_json() for v in self.held()],
            "revert": f"ledger eval revert {self.skill}" if self.released is not None else None,
        }


# ---------------------------------------------------------------------- the criterion


def paired_lift(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any] | None:
    """The paired lift of ``pairs`` (with-skill pass, baseline pass): the difference of pass rates and its
    95 % interval by :func:`ledger.evals.lift.newcombe_paired` (the one place it is computed)."""
    n = len(pairs)
    if n == 0:
        return None
    a = sum(1 for w, b in pairs if w and b)
    b_ = sum(1 for w, b in pairs if w and not b)
    c = sum(1 for w, b in pairs if not w and b)
    interval = newcombe_paired(a, b_, c, n - a - b_ - c)
    assert interval is not None
    return {"delta": round((b_ - c) / n, 6), "interval": [round(interval[0], 6), round(interval[1], 6)], "pairs": n}


@dataclass
class _Runs:
    """One version's runs under one plan: per pair (batch, case, run) its with and baseline pass, and the version
    its baseline arm ran with (``old_skill``; None without the skill)."""

    cells: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)

    def add(self, record: Mapping[str, Any]) -> None:
        e = record["eval"]
        arm = "with" if e["condition"] == "with_skill" else "base"
        batch = (record.get("batch") or {}).get("id", "")
        cell = self.cells.setdefault((batch, str(e["case"]), int(e["run"])), {})
        cell[arm] = passed(record["outcome"])
        if arm == "base":
            cell["arm"] = e.get("arm")

    def against(self, released: int | None) -> tuple[_Runs, list[int]]:
        """These runs less the pairs whose baseline ran with another version than ``released`` (the released
        predecessor: a held version is no yardstick), and the versions those compared with."""
        kept, other = _Runs(), set()
        for key, cell in self.cells.items():
            if cell.get("arm") is not None and cell["arm"] != released:
                other.add(cell["arm"])
            else:
                kept.cells[key] = cell
        return kept, sorted(other)

    def pairs(self) -> list[tuple[bool, bool]]:
        return [(c["with"], c["base"]) for _, c in sorted(self.cells.items()) if "with" in c and "base" in c]

    def by_case(self, arm: str) -> dict[str, list[bool]]:
        out: dict[str, list[bool]] = {}
        for (_, case, _), cell in sorted(self.cells.items()):
            if arm in cell:
                out.setdefault(case, []).append(cell[arm])
        return out


def _regressed(runs: _Runs, before: _Runs | None) -> list[str]:
    """Cases that passed in every baseline run (or every run of the predecessor) and fail in some run."""
    mine = runs.by_case("with")
    out = set()
    for reference in [runs.by_case("base")] + ([before.by_case("with")] if before is not None else []):
        out |= {
            case
            for case, passes in reference.items()
            if passes and all(passes) and case in mine and not all(mine[case])
        }
    return sorted(out, key=lambda c: (len(c), c))


def _judge(
    version: int, runs: _Runs, before: _Runs | None, before_version: int | None, plan: Mapping[str, Any]
) -> Verdict:
    lift = paired_lift(runs.pairs())
    tag = f"plan {plan['id'][:12]}"
    if lift is None:
        return Verdict(version, False, f"its evaluation under {tag} has no complete pair", "evaluation")
    lo, hi = lift["interval"]
    shown = f"lift {lift['delta']:+.2f} [{lo:+.2f}, {hi:+.2f}] over {lift['pairs']} pairs"
    regressed = _regressed(runs, before)
    if hi < 0:
        return Verdict(
            version, False, f"it makes the agent worse ({shown}, under {tag})", "evaluation", lift, tuple(regressed)
        )
    prior = paired_lift(before.pairs()) if before is not None else None
    if prior is not None and plan.get("baseline") == "none" and hi < prior["interval"][0]:
        return Verdict(
            version,
            False,
            f"its {shown} is below v{before_version}'s ({prior['delta']:+.2f} "
            f"[{prior['interval'][0]:+.2f}, {prior['interval'][1]:+.2f}]) under {tag}",
            "evaluation",
            lift,
            tuple(regressed),
        )
    if regressed:
        return Verdict(
            version,
            False,
            f"case{'s' if len(regressed) > 1 else ''} {', '.join(regressed)} passed "
            f"before and fail{'' if len(regressed) > 1 else 's'} now ({shown}, under {tag})",
            "evaluation",
            lift,
            tuple(regressed),
        )
    return Verdict(version, True, f"evaluated under {tag}: {shown}, no case regressed", "evaluation", lift)


# ---------------------------------------------------------------------- the decision


def _vetted(
    skill: str,
    v: int,
    versions: Mapping[int, Mapping[str, Any]],
    released: int | None,
    plan: Mapping[str, Any],
    roles: Mapping[str, str],
) -> Verdict | None:
    """A held verdict when ``v`` changed the eval set it is judged by (its ``evals/`` is not the released
    predecessor's) and the plan of the new set is not a user's or curator's: evals/ is part of the skill, so
    the agent that wrote the version may have written its yardstick too; accepting a new one is a person's."""
    mine, theirs = versions[v].get("set"), versions[released].get("set") if released is not None else None
    if mine is None or theirs is None or mine == theirs or roles.get(plan.get("signer") or "") in APPROVERS:
        return None
    return Verdict(
        v,
        False,
        f"its eval set (evals/) is not v{released}'s, and plan {plan['id'][:12]} of the new "
        "set is not a user's or curator's: a changed eval set is released by a user or curator key's "
        f"plan ('ledger eval plan {skill} --actor user', then 'ledger eval run {skill}') or an approval "
        f"(ledger eval approve {skill}@{v} --reason TEXT)",
        None,
    )


def _judge_against(
    skill: str, v: int, mine: _Runs, before: _Runs | None, released: int | None, plan: Mapping[str, Any]
) -> Verdict:
    """:func:`_judge` over the pairs whose baseline is the released predecessor (baseline previous): a run
    against a held version says nothing of whether ``v`` is worse than what runtimes have."""
    kept, other = mine.against(released)
    if other and not kept.cells:
        to = f"the released v{released}" if released is not None else "a released version (there is none yet)"
        return Verdict(
            v,
            False,
            f"its evaluation under plan {plan['id'][:12]} compares with "
            f"{', '.join(f'v{a}' for a in other)}, not with {to}: run 'ledger eval run {skill}@{v} "
            f"--baseline {released if released is not None else 'VERSION'}'",
            "evaluation",
        )
    return _judge(v, kept, before, released, plan)


def trusted_plans(plans: Iterable[Mapping[str, Any]], roles: Mapping[str, str]) -> list[Mapping[str, Any]]:
    """The plans the gate (and a non-agent ``eval run``) goes by, in log order: those signed by a verifier, user or
    curator key.  A plan names the runner and grader commands the evaluating key runs and signs, and the eval set
    a version is judged by: an agent's plan never supersedes a trusted one, and nothing run under it counts."""
    return sorted((p for p in plans if roles.get(p.get("signer") or "") in RELEASERS), key=lambda p: p["index"])


def decide(
    skill: str,
    versions: Mapping[int, Mapping[str, Any]],
    plans: Iterable[Mapping[str, Any]],
    records: Iterable[Mapping[str, Any]],
    approvals: Iterable[Mapping[str, Any]],
    roles: Mapping[str, str],
) -> SkillGate:
    """``skill``'s gate.  ``versions``: each version number → ``{"digest", "evals", "content", "set"}`` (its
    directory digest, whether it has ``evals/evals.json``, a digest of its files with the version counter aside,
    its ``evals/`` digest or None);
    ``plans``, ``records``, ``approvals``: the log's entries (any skill), each body with its log ``index`` (a
    plan also with its ``id``, a record with its ``batch``); ``roles``: the head's trust set, address → role.
    Pure: the same inputs give the same gate."""
    plans = [p for p in trusted_plans(plans, roles) if p["skill"] == skill]  # an agent's plan: none
    current = plans[-1] if plans else None
    runs: dict[tuple[str, int], _Runs] = {}
    for r in records:
        e = r.get("eval")
        if r["skill"] != skill or not e or e.get("plan") is None or roles.get(r["signer"]) not in RELEASERS:
            continue  # a plain outcome, a run under no plan, or one an agent (or no trusted key) signed
        plan = next((p for p in plans if p["id"] == e["plan"]), None)
        if plan is None or (plan is not current and r["index"] > current["index"]):  # type: ignore[index]
            continue  # under a superseded plan, recorded after the newest plan was made
        runs.setdefault((plan["id"], int(r["version"])), _Runs()).add(r)
    approved: dict[int, Mapping[str, Any]] = {}
    for a in approvals:
        if (
            a["skill"] == skill
            and roles.get(a["signer"]) in APPROVERS
            and a["version"] in versions
            and versions[a["version"]].get("digest") == a["digest"]
        ):
            approved[a["version"]] = a  # the newest approval of a version speaks for it
    verdicts: dict[int, Verdict] = {}
    released: int | None = None
    for v in sorted(versions):
        # a revert: the files of the NEWEST released version (an older one may fail what a later one fixed)
        same = (
            released
            if released is not None
            and versions[v].get("content")
            and versions[v].get("content") == versions[released].get("content")
            else None
        )
        if same is not None:
            verdicts[v] = Verdict(
                v, True, f"it holds v{same}'s files (a revert to the newest released version)", "revert"
            )
        elif not versions[v].get("evals") and not any(versions[u].get("evals") for u in versions if u < v):
            verdicts[v] = Verdict(
                v, True, "it is from before the skill had evals/evals.json: nothing to hold it to", "no evals"
            )
        elif not versions[v].get("evals") and v not in approved:
            verdicts[v] = Verdict(
                v,
                False,
                "it removed evals/evals.json, so no evaluation can release it: put "
                f"the evals back, or approve it (ledger eval approve {skill}@{v} --reason "
                "TEXT)",
                None,
            )
        elif v in approved:
            a = approved[v]
            verdicts[v] = Verdict(v, True, f"approved by {a['signer']}: {a['reason']}", "approval")
        elif current is None:
            verdicts[v] = Verdict(
                v,
                False,
                "no plan yet: run 'ledger eval plan " + skill + "', then 'ledger eval run " + skill + "'",
                None,
            )
        else:
            verdict = None
            for plan in reversed(plans):  # the newest plan first; older ones only for what ran before it
                mine = runs.get((plan["id"], v))
                if mine is None:
                    continue
                verdict = _vetted(skill, v, versions, released, plan, roles) or _judge_against(
                    skill, v, mine, runs.get((plan["id"], released)) if released is not None else None, released, plan
                )
                break
            verdicts[v] = verdict or Verdict(
                v,
                False,
                f"no evaluation under plan {current['id'][:12]} signed by a verifier, user or curator key",
                None,
            )
        if verdicts[v].released:
            released = v
    head = max(versions) if versions else 0
    return SkillGate(skill, head, released, verdicts)


# ---------------------------------------------------------------------- reading a brain


@dataclass(frozen=True)
class Version:
    """A version of a skill as the lineage wrote it: its tree and the snapshot's attribution."""

    version: int
    tree: bytes
    operation: str
    attribution: Mapping[str, str]
    signer: str | None = None  # a sync snapshot's signing address ("" when its signature is malformed)
    commit: str = ""  # the snapshot (40 hex) that holds it: what a runtime served this version reads its files from


def gated(brain: Brain) -> dict[str, bytes]:
    """The head's skills that the gate holds to evaluation (name → tree): those whose head version has
    ``evals/evals.json``; none when the gate is off."""
    if not enabled(brain.config):
        return {}
    skills = sorted(brain.head().skills.items())
    store = brain.store
    with_dir = {}  # two pipelined reads, whatever the number of skills: the skills' trees, then their evals/
    for (name, tree), entries in zip(skills, store.read_trees([t for _, t in skills]), strict=True):
        found = [sha for sha, mode, entry in entries if entry == "evals" and mode == 0o40000]
        if found:
            with_dir[name] = (tree, found[0])
    out = {}
    names = sorted(with_dir)
    for name, entries in zip(names, store.read_trees([with_dir[n][1] for n in names]), strict=True):
        if any(entry == "evals.json" and mode in (0o100644, 0o100755) for _, mode, entry in entries):
            out[name] = with_dir[name][0]
    return out


def versions_of(brain: Brain, names: Iterable[str]) -> dict[str, dict[int, Version]]:
    """Each of ``names``' versions (since it was first created: a delete and a create again, which numbers on
    above the deleted version, do not start it afresh, or an agent could shed the gate's history, evals and
    all, with two calls) with the newest snapshot that wrote it: one walk of the lineage, newest first, down to
    the oldest of their first creations (version 1)."""
    want = set(names)
    out: dict[str, dict[int, Version]] = {n: {} for n in want}
    done: set[str] = set()
    store = brain.store
    for snap in store.lineage() if want else ():
        for change in snap.changes:
            name = change.skill
            if name not in want or name in done:
                continue
            if change.action == "delete":
                continue  # the versions before it are this name's too (a create after it numbers on above them)
            if change.version not in out[name]:
                tree = skills_of(store, bytes.fromhex(snap.tree))[1].get(name)
                if tree is not None:
                    out[name][change.version] = Version(
                        change.version, tree, snap.operation, snap.attribution, _sync_signer(snap), snap.commit
                    )
            if change.action == "create" and change.version == 1:
                done.add(name)  # where this skill began: nothing older is its
        if done >= want:
            break
    return out


def _sync_signer(snap: Any) -> str | None:
    """Who signed a sync snapshot (a runtime edit): the machine whose runtime made it (projection's "own edit")."""
    if snap.operation != "sync":
        return None
    from ledger.audit.signatures import signer_of  # a signature recovery, only for a gated skill's sync versions

    try:
        return signer_of(snap)
    except LedgerError:
        return ""  # a malformed signature: nobody's


def read(brain: Brain, names: Iterable[str] | None = None) -> dict[str, SkillGate]:
    """The gate of each gated skill at the head (or of ``names`` among them): a skill whose head version has
    ``evals/evals.json``, or one with a plan in the log (removing its evals does not take it out)."""
    skills = gated(brain)  # {} with the gate off
    if not enabled(brain.config):
        return {}
    plans, records, approvals = entries(brain)
    head = brain.head().skills
    skills.update({p["skill"]: head[p["skill"]] for p in plans if p["skill"] in head})
    if names is not None:
        skills = {n: t for n, t in skills.items() if n in set(names)}
    if not skills:
        return {}
    roles = brain.trust().active
    out = {}
    for name, found in versions_of(brain, skills).items():
        versions = {
            v: {
                "digest": format_root(brain.tree_digest(x.tree, name)),
                "evals": EVALS_JSON in brain.files(x.tree),
                "content": _content(brain, x.tree),
                "set": brain.evals_digest(x.tree),
            }
            for v, x in found.items()
        }
        out[name] = decide(name, versions, plans, records, approvals, roles)
    return out


@dataclass(frozen=True)
class Release:
    """A gated skill whose head version is held: its gate, its versions, and those a runtime may never get
    because the head's supply record revokes their digest (version → why, in words a person acts on)."""

    gate: SkillGate
    versions: Mapping[int, Version]
    revoked: Mapping[int, str]

    @property
    def served(self) -> int | None:
        """The version runtimes get: the newest released one, unless it is revoked (then none)."""
        r = self.gate.released
        return r if r is not None and r not in self.revoked else None

    def refusal(self) -> str:
        """Why no version of the skill is served, and how to fix it."""
        g = self.gate
        if g.released is None:
            return (
                f"the gate holds {g.skill} v{g.head} and no version of it is released (fix: "
                f"'ledger eval run {g.skill}', or 'ledger eval approve {g.skill}@{g.head} --reason TEXT')"
            )
        return (
            f"the gate's released version of {g.skill}, v{g.released}, is revoked ({self.revoked[g.released]}) "
            f"and v{g.head} is held (fix: release v{g.head} with 'ledger eval run {g.skill}' or "
            f"'ledger eval approve {g.skill}@{g.head} --reason TEXT', or delete {g.skill})"
        )


def releases(brain: Brain) -> dict[str, Release]:
    """Each gated skill whose head version the gate holds (none with the gate off), with the versions a
    runtime may get in its stead.  The one rule for every surface that serves a gated skill's older version
    (``ledger sync``, the MCP Skills extension, discovery sites): a version whose digest the head's supply
    record revokes is never served.  A version's digests are its stored tree's (``blake3-tree-v1``) and
    those its supply entry recorded when it was installed (the source's bytes, the ledger's counter aside),
    read from the snapshot that holds it."""
    held = {n: g for n, g in read(brain).items() if g.released != g.head}
    if not held:
        return {}
    versions = versions_of(brain, held)
    supply = head_supply_record(brain)
    out = {}
    for name, g in held.items():
        revoked = {
            v: why
            for v, x in versions[name].items()
            if (why := revoked_version(brain, supply, name, x.tree, x.commit)) is not None
        }
        out[name] = Release(g, versions[name], revoked)
    return out


def head_supply_record(brain: Brain) -> Supply:
    """The head's supply record (what it revokes)."""
    return _supply_at(brain.store, bytes.fromhex(brain.head().snap.tree)) if brain.head().snap.tree else Supply()


def revoked_version(brain: Brain, supply: Supply, name: str, tree: bytes, commit: str | None) -> str | None:
    """Why a runtime may not get skill ``name`` as stored in ``tree`` (held by snapshot ``commit``, 40 hex,
    if known), or None: ``supply`` (the head's record) revokes the tree's digest (``blake3-tree-v1``), or a
    digest the supply entry of ``name`` in that snapshot recorded (the installed version it is, or was edited
    from: the source's bytes, the ledger's counter aside), as the head's record withholds a revoked skill."""
    if not supply.revoked:
        return None
    store = brain.store
    digests = [format_root(brain.tree_digest(tree, name))]
    if commit:
        entry = _supply_at(store, store.commit_info(bytes.fromhex(commit))[0]).skills.get(name)
        if entry is not None:
            digests += entry.digests()
    hit = supply.is_revoked(*digests)
    return None if hit is None else f"its digest {hit} is revoked: {supply.revoked[hit].get('reason')}"


def _supply_at(store: Any, tree: bytes) -> Supply:
    sha, data = store.supply_record(tree)
    return parse_supply(data) if sha is not None else Supply()


def _content(brain: Brain, tree: bytes) -> str:
    """A digest of a skill's files with the ledger's version counter set aside: a revert to a released
    version holds that version's content under a new number, and is released with it."""
    zero, store = counter_zeroed(True), brain.store
    files = {
        rel: [mode, hashlib.sha256(zero(rel, store.read(sha, b"blob"))).hexdigest()]
        for rel, (mode, sha) in brain.files(tree).items()
    }
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def entries(brain: Brain) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The head's evidence log as the gate reads it: (plans, eval records, approvals), each body with its
    ``index`` in the log; a plan with its ``id``, a record with its ``batch``.  Signatures are checked
    (``brain.evidence.checked``) before anything is read."""
    plans, records, approvals = [], [], []
    for i, data in enumerate(brain.evidence.checked()):  # each signature checked once, and remembered
        kind = oc.kind_of(data)
        body = oc.loads(data)[kind]
        if kind == "plan":
            # SHA-256(JCS(plan)), lineage/evaluations.md
            plans.append({**body, "index": i, "id": oc.outcome_id(body).hex()})
        elif kind == "approval":
            approvals.append({**body, "index": i})
        elif body.get("eval"):
            records.append({**body, "index": i})
    return plans, records, approvals
