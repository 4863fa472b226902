"""``ledger report``'s use case: collect, audit and render the brain's page, write it, say what it shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger._fs import atomic_write
from ledger.audit.reports import PageReport
from ledger.page.collect import collect
from ledger.page.render import render_page

__all__ = ["PageReport", "write_page"]


def write_page(brain: Any, out: Path, rpc: str | None = None) -> PageReport:
    """Write ``out/index.html`` (``out`` made if missing): one static page, audited first."""
    data = collect(brain, rpc=rpc)
    html = render_page(data)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "index.html"
    atomic_write(target, html.encode("utf-8"))
    ok = bool(data["verdict"]["ok"])
    head = data["brain"]["head"]
    return PageReport(
        output=str(target),
        ok=ok,
        verdict="verified OK" if ok else "verification FAILED",
        chain_checked=bool(data["verdict"]["chain_checked"]),
        commit=head["commit"],
        root=head["root"],
        skills=len(data["skills"]),
        snapshots=len(data["timeline"]),
        outcomes=data["evidence"]["size"],
    )
