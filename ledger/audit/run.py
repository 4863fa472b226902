"""The audit's use cases: ``ledger verify`` (this brain) and ``ledger audit`` (any copy of one).

Each returns an :class:`~ledger.audit.reports.AuditReport`; the caller prints it, writes its page
(:func:`ledger.page.audit.write_audit`) and exits 1 when it is not ok.  A brain is passed in
(anything with ``root`` and ``config``), so the audit stays below the brain (tests/unit/test_layers.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ledger.audit.lineage import audit_repo
from ledger.audit.reports import AuditReport
from ledger.errors import ChainError

__all__ = ["audit", "verify"]

Progress = Callable[[int, int], None]


def verify(
    brain: Any,
    *,
    with_chain: bool = False,
    epoch_logs: Mapping[str, str] | None = None,
    require_signatures: bool = False,
    progress: Progress | None = None,
) -> AuditReport:
    """Audit this brain with its working tree; ``with_chain``: against the registry its config names."""
    root, cfg = brain.root, brain.config.get("chain") or {}
    kwargs: dict[str, Any] = {}
    if with_chain:
        if not (cfg.get("rpc") and cfg.get("registry") and cfg.get("agent_id")):
            raise ChainError("this brain has no registered agent to check", hint="ledger chain deploy / register")
        kwargs = {
            "rpc": cfg["rpc"],
            "registry": cfg["registry"],
            "agent": int(cfg["agent_id"], 16),
            "from_block": int(cfg.get("deploy_block", 0)),
            "epoch_logs": dict(epoch_logs or {}),
        }
    report = audit_repo(
        root,
        worktree=True,
        progress=progress,
        require_signatures=require_signatures,
        without_chain=("no --chain", "run 'ledger verify --chain'"),
        **kwargs,
    )
    return AuditReport.of(report)


def audit(
    path: Path,
    *,
    name: str | None = None,
    rpc: str | None = None,
    registry: str | None = None,
    agent: int | None = None,
    from_block: int = 0,
    epoch_logs: Mapping[str, str] | None = None,
    require_signatures: bool = False,
    founder: str | None = None,
    progress: Progress | None = None,
) -> AuditReport:
    """Audit the git store at ``path`` (a brain, a clone, a bare repository); ``name`` is the report's
    ``repo`` when it is not that path (a URL fetched into ``path``)."""
    report = audit_repo(
        path,
        rpc=rpc,
        registry=registry,
        agent=agent,
        from_block=from_block,
        progress=progress,
        require_signatures=require_signatures,
        founder=founder,
        epoch_logs=dict(epoch_logs or {}),
    )
    return AuditReport.of(report, name)
