"""`ledger report` end to end (issue 38, item 5): a real brain with outcomes, anchored on a real anvil,
rendered in real headless Chromium; and the same brain tampered with, shown as failing."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ledger.anchoring.commits import commit_pending
from ledger.chain.config import ChainConfig
from ledger.chain.keys import DEV_KEY_NAME, dev_account
from ledger.chain.registry import Registry
from tests.harness.chromium import artifacts, visit
from tests.harness.cli import LEDGER, run_ledger
from tests.unit.page.test_page import GEOMETRY

pytestmark = [pytest.mark.browser, pytest.mark.chain]
ROOT = Path(__file__).resolve().parents[3]

SKILL = "---\nname: s\ndescription: The s skill\n---\n{body}\n"


def _rows(prefix: str, passed: int, failed: int, skill: str = "s") -> str:
    return "".join(
        json.dumps({"skill": skill, "task": f"{prefix}{i}", "success": i < passed}) + "\n"
        for i in range(passed + failed)
    )


def _page(path: Path, out: Path, *args: str) -> tuple[int, dict]:
    proc = run_ledger("--brain", str(path), "report", "-o", str(out), *args)
    assert "Traceback" not in proc.stderr and (out / "index.html").is_file(), proc.stderr
    seen = visit(out / "index.html", GEOMETRY)
    assert seen.problems() == [], seen.problems()  # no console error, no exception, no request off the page
    assert seen.requests == [(out / "index.html").resolve().as_uri()]
    return proc.returncode, seen.value


def test_a_real_brain_renders_checked_and_a_tampered_copy_renders_failing(chained, tmp_path: Path) -> None:
    brain = chained
    b = ("--brain", str(brain.root))
    run_ledger(*b, "skill", "create", "s", "--description", "The s skill", check=True)
    address = json.loads(run_ledger(*b, "keys", "generate", "verifier", "--json", check=True).stdout)["address"]
    run_ledger(*b, "keys", "trust", "verifier", address, check=True)
    run_ledger(*b, "outcome", "import", "-", "--actor", "verifier", input=_rows("a", 19, 1), check=True)
    (tmp_path / "v2.md").write_text(SKILL.format(body="worse"))
    run_ledger(*b, "skill", "edit", "s", "--file", str(tmp_path / "v2.md"), check=True)
    run_ledger(*b, "outcome", "import", "-", "--actor", "verifier", input=_rows("b", 2, 18), check=True)
    run_ledger(*b, "outcome", "record", "s", "--task", "self-1", "--success", check=True)  # the agent's own
    brain._snapshots.current = None
    commit_pending(brain, key=DEV_KEY_NAME)
    rpc = brain.config["chain"]["rpc"]

    code, v = _page(brain.root, tmp_path / "ok", "--rpc", rpc)
    assert code == 0 and v["verdict"]["word"] == "PASSING"
    assert v["nbad"] == 0 and v["perPlot"]["s"] == 3 and v["marks"] > 0  # v1 verified; v2 verified and self
    assert v["claimed"] == 0 and v["checked"] > 0
    html = (tmp_path / "ok" / "index.html").read_text()
    assert "ledger revert s --to 1" in html  # the regression, named with its undo

    run_ledger("clone", str(brain.root / ".git"), str(tmp_path / "tampered"), check=True)
    tampered = tmp_path / "tampered"
    _flip_a_failure(tampered / ".git")  # an outcome rewritten after it was signed: failure → success
    code, v = _page(tampered, tmp_path / "bad")
    assert code == 1 and v["verdict"]["cls"] == "verdict fail" and v["verdict"]["word"] == "FAILING"
    assert v["checked"] == 0 and v["claimed"] > 0 and v["nbad"] == 0


def _flip_a_failure(git_dir: Path) -> None:
    """Replace the tip by a commit whose evidence log has one failure turned into a success (same message)."""
    from tests.harness.tamper import blob_at, edit_tree, git

    tip = git(git_dir, "rev-parse", "main").strip()
    chunk = blob_at(git_dir, tip, "evidence/00000000")
    assert b'"result":"failure"' in chunk
    tree = edit_tree(
        git_dir,
        git(git_dir, "rev-parse", f"{tip}^{{tree}}").strip(),
        "evidence/00000000",
        chunk.replace(b'"result":"failure"', b'"result":"success"', 1),
    )
    message = git(git_dir, "log", "-1", "--format=%B", tip)
    parent = git(git_dir, "rev-parse", f"{tip}^").strip()
    forged = git(git_dir, "commit-tree", tree, "-p", parent, input=message).strip()
    git(git_dir, "update-ref", "refs/heads/main", forged)


# --------------------------------------------------------------------------- a shareholder reads the page

# The questions a shareholder asks, answered from the DOM alone (ids and data attributes of docs/report.md).
SHAREHOLDER = """(() => {
  const q = s => document.querySelector(s), all = s => [...document.querySelectorAll(s)];
  const data = e => e ? Object.assign({}, e.dataset) : null;
  const text = e => e ? e.innerText.replace(/\\s+/g, ' ').trim() : null;
  const checks = q('#checks'), words = [];  // every text node the page shows, but the audit's own words
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode())
    if (!n.parentElement.closest('#checks .d, script, style')) words.push(n.textContent);
  return {
    word: text(q('#verdict .word')), summary: data(q('#summary')),
    canDo: data(q('#can-do')), can: all('#can-do li[data-can]').map(li => [li.dataset.can, text(li)]),
    categories: all('#can-do h4').map(h => h.dataset.category),
    changes: data(q('#changes')), lastChange: text(q('#changes li')),
    howWell: data(q('#how-well')), howWellText: text(q('#how-well')),
    shares: data(q('#shares')), sharesText: text(q('#shares')),
    holders: all('#shares li[data-holder]').map(li => [li.dataset.holder, +li.dataset.balance]),
    anchored: data(q('#anchored')), anchoredText: text(q('#anchored')),
    commands: all('#check-yourself li').map(li => [li.dataset.what, li.querySelector('code').textContent]),
    pendingRows: all('tr[data-index] .pill.st-WARN').length, rows: all('tr[data-index]').length,
    order: ['summary', 'check-yourself', 'checks', 'timeline'].map(id => q('#' + id).getBoundingClientRect().top),
    overflow: document.documentElement.scrollWidth - innerWidth,
    text: words.join(' | '), checks: !!checks,
  };
})()"""

PLAIN = re.compile(r"§|\bissue \d+|\bNone\b|\{'|\['|\bb'")  # project vocabulary and Python reprs


def _read(page: Path, name: str, *, width: int = 1280) -> dict:
    seen = visit(page, SHAREHOLDER, width=width, screenshot=True, timeout=240)
    assert seen.problems() == [], seen.problems()
    assert seen.screenshot and seen.screenshot.startswith(b"\x89PNG")
    (artifacts() / f"{name}-{width}.png").write_bytes(seen.screenshot)  # for a person to look at; not committed
    v = seen.value
    assert not PLAIN.search(v["text"]), PLAIN.search(v["text"])
    assert v["order"] == sorted(v["order"]), "the summary and the commands come above the audit detail"
    assert v["overflow"] <= 1, f"{v['overflow']} px wider than a {width} px screen"
    return v


def _report(path: Path, out: Path, *args: str) -> Path:
    proc = run_ledger("--brain", str(path), "report", "-o", str(out), *args)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return out / "index.html"


def _transfer(brain, amount: int) -> str:
    cfg = ChainConfig.of(brain)
    reg = Registry(cfg.rpc, cfg.registry)
    owner, other = dev_account(0), dev_account(1)
    reg.send(
        owner,
        reg.bound().functions.safeTransferFrom(owner.address, other.address, cfg.agent_id, amount, b""),
        what="a share transfer",
    )
    return other.address


def _cast(command: str, cwd: Path | None = None) -> str:
    """Run one of the page's "check this yourself" commands as a reader would paste it, in the brain's folder
    (cast from Foundry, ledger and git on the PATH)."""
    path = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(Path(LEDGER).parent), os.environ["PATH"]])
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_") or k == "LEDGER_KEYS"}
    return subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        env={**env, "PATH": path},
        cwd=cwd,
        check=True,
        timeout=120,
    ).stdout.strip()


def test_a_shareholder_reads_the_answers_on_a_brain_with_pending_roots(chained, tmp_path: Path) -> None:
    brain = chained
    b = ("--brain", str(brain.root))
    run_ledger(
        *b,
        "skill",
        "create",
        "oracle-manipulation",
        "--category",
        "security",
        "--description",
        "Check oracle freshness and prefer TWAP over spot price",
        "--body",
        "Check staleness.\n",
        check=True,
    )
    run_ledger(
        *b,
        "skill",
        "create",
        "pdf-extraction",
        "--category",
        "documents",
        "--description",
        "Extract text and tables from PDFs",
        "--body",
        "Use pdftotext -layout first.\n",
        check=True,
    )
    run_ledger(
        *b,
        "skill",
        "patch",
        "oracle-manipulation",
        "--old",
        "staleness.",
        "--new",
        "staleness.\nPrefer a TWAP.\nNever a spot read.",
        check=True,
    )
    address = json.loads(run_ledger(*b, "keys", "generate", "verifier", "--json", check=True).stdout)["address"]
    run_ledger(*b, "keys", "trust", "verifier", address, check=True)
    run_ledger(
        *b, "outcome", "import", "-", "--actor", "verifier", input=_rows("a", 3, 1, "oracle-manipulation"), check=True
    )
    brain._snapshots.current = None
    commit_pending(brain, key=DEV_KEY_NAME)
    holder = _transfer(brain, 250)
    # then more work, not yet on chain: a new root, and an outcome recorded on it
    run_ledger(
        *b,
        "skill",
        "patch",
        "pdf-extraction",
        "--old",
        "layout first.",
        "--new",
        "layout first; OCR for scans.",
        check=True,
    )
    run_ledger(*b, "outcome", "record", "pdf-extraction", "--task", "t1", "--success", check=True)
    log = json.loads(run_ledger(*b, "log", "--json", check=True).stdout)
    status = json.loads(run_ledger(*b, "chain", "status", "--json", check=True).stdout)
    rpc = brain.config["chain"]["rpc"]

    for args, name in (((), "pending-norpc"), (("--rpc", rpc), "pending-rpc")):
        page = _report(brain.root, tmp_path / name, *args)
        for width in (1280, 390):
            v = _read(page, name, width=width)
            # what can it do
            assert v["canDo"]["skills"] == "2" and sorted(v["categories"]) == ["documents", "security"]
            assert dict(v["can"])["oracle-manipulation"].endswith(
                "Check oracle freshness and prefer TWAP over spot price"
            )
            # what changed last
            assert "patch" in v["changes"]["lastMessage"] and "pdf-extraction" in v["lastChange"]
            assert "1 file(s) changed; +2 −2 lines" in v["lastChange"]  # the line and the version counter
            # is it verified
            assert v["howWell"]["verifiedN"] == "4" and v["howWell"]["verifiedOk"] == "3"
            assert "75% success over 4 outcome(s) judged by an independent verifier" in v["howWellText"]
            # where is it anchored: one count of pending, the rows agree with it, anchored + pending = snapshots
            a = v["anchored"]
            assert a["chain"] == "local test chain" and a["local"] == "true" and a["chainId"] == "31337"
            assert int(a["pendingSnapshots"]) == v["pendingRows"] == 2 and int(a["anchored"]) + 2 == v["rows"]
            assert a["pending"] == "1" == str(status["pending"])  # one root to commit, as 'ledger chain status' says
            assert int(a["seq"]) >= 1 and "chain sequence" in v["anchoredText"]
            whats = dict(v["commands"])
            assert any("model_signing verify key" in c for c in whats.values())
            if width == 1280:  # the head root and its signature, re-derived by the page's own commands
                assert (
                    _cast(next(c for w, c in v["commands"] if w.startswith("the head root")), brain.root)
                    == log[0]["root"]
                )
                _cast(next(c for w, c in v["commands"] if "verify-commit" in c), brain.root)
            if not args:  # the chain was not checked, and the page says so first
                assert v["word"] == "PASSING — chain not checked" and v["summary"]["verdict"] == (
                    "passing-chain-not-checked"
                )
                assert v["shares"]["shares"] == "unread" and "the chain was not checked" in v["sharesText"]
                assert "chain was not checked" in v["anchoredText"] and a["checked"] == "false"
                continue
            assert v["word"] == "PASSING" and a["checked"] == "true"
            # how many shares, who holds them; the token metadata names the head on chain, this head is newer
            s = v["shares"]
            assert (s["supply"], s["ownerBalance"], s["holders"], s["checked"]) == ("1000", "750", "2", "true")
            assert [[h.lower(), n] for h, n in v["holders"]] == [
                [dev_account(0).address.lower(), 750],
                [holder.lower(), 250],
            ]
            assert s["headMatch"] == "false" and "names the head on chain" in v["sharesText"]
            # the page's own commands, pasted: the head on chain, and the token metadata a wallet reads
            on_chain = _cast(next(c for w, c in v["commands"] if "head on chain" in w)).splitlines()[0]
            assert "blake3-tree-v1:" + on_chain[2:] == s["metadataHead"]
            meta = json.loads(_cast(next(c for w, c in v["commands"] if "token metadata" in w)))
            assert meta["properties"]["head"] == s["metadataHead"] != log[0]["root"]


CATEGORIES = ["research", "documents", "security/audits", "ops"]


def _hermes_tree(src: Path, n: int) -> None:
    """``n`` skills in Hermes's layout (category/name/SKILL.md), four categories: one import, one snapshot."""
    for i in range(n):
        d = src / CATEGORIES[i % 4] / f"skill-{i:04d}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Does task {i} of "
            f"{CATEGORIES[i % 4]} well\n---\nStep one for {i}.\nStep two.\n"
        )
    for c in CATEGORIES:
        (src / c / "DESCRIPTION.md").write_text(f"---\ndescription: {c} skills\n---\n")


def test_a_shareholder_reads_a_thousand_skill_brain(chained, tmp_path: Path) -> None:
    brain = chained
    b = ("--brain", str(brain.root))
    _hermes_tree(tmp_path / "src", 1000)
    run_ledger(*b, "import", str(tmp_path / "src"), check=True)  # the bulk path: every object in one pack
    brain._snapshots.current = None
    commit_pending(brain, key=DEV_KEY_NAME)
    rpc = brain.config["chain"]["rpc"]
    for args, name in (((), "big-norpc"), (("--rpc", rpc), "big-rpc")):
        page = _report(brain.root, tmp_path / name, *args)
        for width in (1280, 390):
            v = _read(page, name, width=width)
            assert v["canDo"]["skills"] == "1000" and len(v["can"]) == 1000  # 40 open, the rest one click away
            assert sorted(v["categories"]) == sorted(CATEGORIES)
            assert dict(v["can"])["skill-0002"].endswith("Does task 2 of security/audits well")
            assert v["changes"]["lastMessage"].startswith("import") and "1,000 file(s) added" in v["lastChange"]
            assert (
                v["howWell"]["measure"] == "rates"
                and "no outcome judged by an independent verifier yet" in (v["howWellText"])
            )
            a = v["anchored"]
            assert (a["chain"], a["anchored"], a["pending"], v["pendingRows"]) == ("local test chain", "2", "0", 0)
            if args:
                assert v["word"] == "PASSING" and v["shares"]["supply"] == "1000"
                assert v["shares"]["headMatch"] == "true" and "names this page's head" in v["sharesText"]
            else:
                assert v["word"] == "PASSING — chain not checked" and v["shares"]["shares"] == "unread"
