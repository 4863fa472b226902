"""How skills evolve after a task: update payloads, the synthesis trigger, and cache-stable prompts.

- :func:`apply_payload` applies a SkillEvolBench update (``summary``, ``operation_type``
  revise|narrow|replace|create, ``upsert_files``) atomically, as one snapshot whose
  trailers record the operation type and the summary. It refuses, changing nothing,
  a name that is not the slug, a description over 1,024 characters, a Tier-3 file
  (``scripts/``, ``references/``, ``assets/``) that SKILL.md does not cite, and a path
  that leaves the skill. A verbatim resubmission is a no-op.
- :func:`synthesis_advice` says whether a finished task is worth a skill, and which
  existing skills are closest, so the runtime asks for a patch rather than a duplicate.
- :func:`render_index` and :func:`render_skill_turn` build prompts that keep provider
  caches warm: the Level-0 index is byte-identical while the brain is unchanged, and
  matched skills go into one user-role message, never into the system prompt.
"""

from __future__ import annotations

import difflib
from typing import Any

from ledger._json import shown
from ledger.brain.withholding import refusal
from ledger.bundle.lint import introduced_errors
from ledger.bundle.skill import SKILL_MD, check_name, check_support_path, parse_skill_md
from ledger.errors import SkillError
from ledger.folders.layouts import Collection, Found
from ledger.store import gitstore as gs

__all__ = ["apply_payload", "render_index", "render_skill_turn", "synthesis_advice"]

OPERATIONS = ("revise", "narrow", "replace", "create")
TIER3 = ("scripts", "references", "assets")


def _refuse(message: str, hint: str | None = None) -> SkillError:
    return SkillError(f"payload refused: {message}", hint=hint)


def apply_payload(
    brain: Any, payload: Any, *, actor: str = "agent", evidence: dict[str, str] | None = None
) -> dict[str, Any]:
    """Apply an update payload as one snapshot; return ``{"snapshot": receipt | None, "skills": [...]}``.
    ``evidence`` (task, session, …) lands in the snapshot's attribution beside the payload's own."""
    if not isinstance(payload, dict) or not isinstance(payload.get("upsert_files"), dict):
        raise _refuse("it must be a JSON object with 'upsert_files'", hint="see SkillEvolBench's update format")
    op = payload.get("operation_type")
    if op not in OPERATIONS:
        raise _refuse(f"operation_type {shown(op)} is not one of {', '.join(OPERATIONS)}")
    said = payload.get("summary")
    summary = " ".join(said.split())[:200] if isinstance(said, str) else ""
    summary = summary or op
    grouped: dict[str, dict[str, str]] = {}
    for path, text in payload["upsert_files"].items():
        if not isinstance(path, str) or not isinstance(text, str):
            raise _refuse("upsert_files maps paths to text")
        slug, _, rel = path.partition("/")
        try:
            check_name(slug)
            if rel != SKILL_MD:
                check_support_path(rel)
        except SkillError as exc:
            raise _refuse(f"{path!r}: {exc.message}", hint="paths are <slug>/<file> inside the skill") from None
        grouped.setdefault(slug, {})[rel] = text
    # The merge reads the committed skill: under the writer lock, in the import's critical section,
    # so a write acknowledged meanwhile is the base we merge onto, never overwritten by a stale copy.
    with brain.writing():
        return _apply_locked(brain, op, summary, grouped, actor, evidence or {})


def _apply_locked(
    brain: Any, op: str, summary: str, grouped: dict[str, dict[str, str]], actor: str, evidence: dict[str, str]
) -> dict[str, Any]:
    head = brain.head()
    found, supply = [], brain.supply(head)
    for slug, files in sorted(grouped.items()):
        if (refused := refusal(supply, slug)) is not None:
            raise refused  # quarantined or revoked: an agent's payload may not change it
        if op == "create" and slug in head.skills:
            if _resubmitted(brain, slug, files):
                op_note = "revise"  # the same create again: every file is as committed, so nothing changes
            else:
                raise _refuse(f"create of {slug!r}, which exists", hint="use operation_type revise")
        else:
            op_note = op
        if op != "create" and slug not in head.skills:
            raise _refuse(f"{op} of {slug!r}, which does not exist", hint="use operation_type create")
        current: dict[str, tuple[bytes, bool]] = {}
        if slug in head.skills and op_note != "replace":
            committed, _ = brain.committed(slug)
            current = {
                r: (brain.store.read(sha, b"blob"), mode == gs.MODE_EXEC) for r, (mode, sha) in committed.items()
            }
        skill_md = files.get(SKILL_MD, current.get(SKILL_MD, (b"", False))[0].decode("utf-8") if current else None)
        if skill_md is None:
            raise _refuse(f"{slug!r} has no SKILL.md", hint=f"include '{slug}/SKILL.md'")
        doc = parse_skill_md(skill_md)
        if doc.name != slug:
            raise _refuse(f"SKILL.md of {slug!r} declares name {doc.name!r}; the name must equal the slug")
        if len(doc.description) > 1024:
            raise _refuse(f"the description of {slug!r} is {len(doc.description)} characters; the limit is 1,024")
        for rel in files:
            if rel.split("/", 1)[0] in TIER3 and rel not in skill_md:
                raise _refuse(f"{slug}/{rel} is not cited from SKILL.md", hint=f"reference '{rel}' in SKILL.md")
        if SKILL_MD in files and not getattr(brain, "allow_invalid", False):
            old_md = current[SKILL_MD][0].decode("utf-8", "replace") if SKILL_MD in current else None
            broken = introduced_errors(slug, old_md, files[SKILL_MD])
            if broken:
                raise _refuse(
                    f"{slug}/SKILL.md is not a valid skill: {'; '.join(broken)}",
                    hint="fix it ('ledger skill lint' says why), or apply with --allow-invalid",
                )
        merged = {**current, **{r: (t.encode("utf-8"), current.get(r, (b"", False))[1]) for r, t in files.items()}}
        found.append(Found(slug, slug, f"payload:{slug}", merged))
    with brain.writing(actor, **{**evidence, "evolution": op, "summary": summary}) as w:
        report = w.import_collection(Collection("payload", found), note=summary, all_or_nothing=True, operation="apply")
    return {"operation_type": op, "summary": summary, "snapshot": report["snapshot"], "skills": report["skills"]}


def _resubmitted(brain: Any, slug: str, files: dict[str, str]) -> bool:
    """Whether ``files`` are exactly skill ``slug`` as committed (SKILL.md up to the version counter)."""
    committed, doc = brain.committed(slug)
    for rel, text in files.items():
        if rel not in committed:
            return False
        data = brain.store.read(committed[rel][1], b"blob")
        if rel == SKILL_MD:
            if (parse_skill_md(text).with_counter(doc.version) if doc.counted else text) != doc.text:
                return False
        elif data != text.encode("utf-8"):
            return False
    return True


def synthesis_advice(
    brain: Any,
    *,
    tool_calls: int,
    recovered_from_error: bool = False,
    task: str = "",
    min_tool_calls: int | None = None,
    top: int = 3,
) -> dict[str, Any]:
    """Whether a finished task is skill-worthy (5+ tool calls, or an error then a recovery), and the closest skills."""
    threshold = (
        min_tool_calls
        if min_tool_calls is not None
        else int((brain.config.get("synthesis") or {}).get("min_tool_calls", 5))
    )
    reasons = []
    if tool_calls >= threshold:
        reasons.append(f"{tool_calls} tool calls (threshold {threshold})")
    if recovered_from_error:
        reasons.append("an error was followed by a recovery")
    words = task.lower()
    hidden = brain.withheld()  # quarantined or revoked: no agent is pointed at them
    scored = sorted(
        (difflib.SequenceMatcher(None, words, f"{s.name} {s.description}".lower()).ratio(), s.name)
        for s in brain.list()
        if s.name not in hidden
    )[::-1]
    closest = [{"name": n, "similarity": round(r, 2)} for r, n in scored[:top] if r > 0.2]
    advice = "patch the closest skill" if closest and closest[0]["similarity"] >= 0.5 else "create a skill"
    return {"skill_worthy": bool(reasons), "why": reasons, "closest": closest, "advice": advice if reasons else None}


def render_index(brain: Any) -> str:
    """The Level-0 block for the system prompt: byte-identical while the brain's skills are unchanged."""
    return "<skills>\n" + brain.index() + "</skills>\n"


def render_skill_turn(brain: Any, names: list[str], token_budget: int) -> dict[str, str]:
    """One user-role message carrying the matched skills in ``<skill name="…">`` envelopes, within the budget.

    Tokens are estimated at four characters each. Skills are added in the order given;
    one that no longer fits is cut at a line boundary and marked, and the rest are left out. A skill the
    supply record withholds (quarantined or revoked) is refused (ledger.brain.withholding).
    """
    budget = max(token_budget, 0) * 4
    parts: list[str] = []
    supply = brain.supply()
    for name in names:
        if (refused := refusal(supply, brain.resolve(name))) is not None:
            raise refused
        body = brain.view(name)["body"].strip("\n")
        head, tail = f'<skill name="{name}">\n', "\n</skill>\n"
        room = budget - sum(map(len, parts)) - len(head) - len(tail)
        if room <= 0:
            break
        if len(body) > room:
            cut = body[: max(room - 40, 0)].rsplit("\n", 1)[0]
            parts.append(f"{head}{cut}\n[… truncated to fit the token budget]{tail}")
            break
        parts.append(head + body + tail)
    return {"role": "user", "content": "".join(parts)}
