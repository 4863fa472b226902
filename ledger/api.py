"""The Python API of the commands: each use case as a function returning a typed report (ADR 73).

``ledger.Brain`` is the skill-level API (``list``, ``view``, ``create``, ``patch``, … each write
returning a ``Receipt``). The functions named here are the commands' jobs: the CLI, the MCP tools
and a program call the same function and get the same report, whose ``to_json()`` is the command's
``--json`` document and whose ``schema()`` is its JSON Schema (docs/json.md)::

    from ledger import Brain, api

    with Brain.open("brain") as brain:
        report = api.sync(brain)              # a SyncReport, as 'ledger sync --json' prints it
        status = api.status(brain)            # a StatusReport
    audit = api.audit(Path("clone"))          # an AuditReport

Names load on first use, so importing this module loads none of them.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# name -> "module:function"; grouped as `ledger --help` groups the commands
USE_CASES: dict[str, str] = {
    # start here
    "init": "ledger.brain.usecases:init",
    "status": "ledger.overview:status",
    "log": "ledger.brain.usecases:log",
    "log_stats": "ledger.brain.usecases:log_stats",
    "sync": "ledger.sync.run:sync",
    "sync_status": "ledger.sync.status:status",
    "settle": "ledger.sync.run:settle",
    "watch": "ledger.sync.run:watch",
    "verify": "ledger.audit.run:verify",
    # skills and snapshots
    "skill_list": "ledger.brain.usecases:skill_list",
    "skill_view": "ledger.brain.usecases:skill_view",
    "skill_stats": "ledger.audit.history:skill_stats",
    "lint": "ledger.folders.collections:lint_skills",
    "snapshot": "ledger.brain.usecases:snapshot",
    "diff": "ledger.audit.history:diff",
    "import_collections": "ledger.folders.collections:import_collections",
    "export": "ledger.folders.collections:export_snapshot",
    "export_discovery": "ledger.folders.collections:export_discovery",
    "index": "ledger.brain.usecases:index",
    "prove": "ledger.brain.usecases:prove",
    # runtimes
    "runtimes": "ledger.sync.links:runtimes",
    "link": "ledger.sync.links:link",
    "unlink": "ledger.sync.links:unlink",
    # sharing
    "push": "ledger.remotes.run:push",
    "pull": "ledger.remotes.run:pull",
    "clone": "ledger.remotes.run:clone",
    "resolve": "ledger.remotes.run:resolve",
    "show_remote": "ledger.remotes.fleet:show_remote",
    "set_remote": "ledger.remotes.fleet:set_remote",
    "unset_remote": "ledger.remotes.fleet:unset_remote",
    # worth
    "eval_plan": "ledger.evals.runs:plan",
    "eval_run": "ledger.evals.runs:run",
    "eval_rerun_stale": "ledger.evals.runs:rerun_stale",
    "eval_import": "ledger.evals.runs:import_workspace",
    "gate_switch": "ledger.evals.decisions:switch",
    "gate_approve": "ledger.evals.decisions:approve",
    "outcome_record": "ledger.evals.outcomes:record",
    "outcome_import": "ledger.evals.outcomes:import_outcomes",
    "outcome_list": "ledger.evals.outcomes:list_outcomes",
    "outcome_batches": "ledger.evals.outcomes:batches",
    # skills from elsewhere
    "install": "ledger.supply.usecases:install",
    "approve": "ledger.supply.usecases:approve",
    "revoke": "ledger.supply.usecases:revoke",
    "outdated": "ledger.supply.usecases:outdated",
    "update": "ledger.supply.usecases:update",
    "supply_record": "ledger.supply.usecases:record",
    "supply_entry": "ledger.supply.usecases:entry",
    "scan": "ledger.supply.usecases:scan",
    # trust, chain and audit
    "keys_show": "ledger.brain.trustset:show",
    "keys_generate": "ledger.brain.trustset:generate",
    "keys_trust": "ledger.brain.trustset:trust",
    "keys_revoke": "ledger.brain.trustset:revoke",
    "keys_rotate": "ledger.brain.trustset:rotate",
    "keys_policy": "ledger.brain.trustset:set_policy",
    "keys_adopt": "ledger.brain.trustset:adopt",
    "committer_new": "ledger.chain.committers:new_committer",
    "committer_import": "ledger.chain.committers:import_committer",
    "committer_list": "ledger.chain.committers:list_committers",
    "chain_up": "ledger.anchoring.run:chain_up",
    "chain_down": "ledger.anchoring.run:chain_down",
    "chain_use": "ledger.anchoring.run:chain_use",
    "chain_status": "ledger.anchoring.run:chain_status",
    "chain_location": "ledger.anchoring.run:location",
    "deploy": "ledger.anchoring.run:deploy",
    "register": "ledger.anchoring.run:register",
    "authorize": "ledger.anchoring.run:authorize",
    "anchor": "ledger.anchoring.run:anchor",
    "epoch": "ledger.anchoring.run:epoch",
    "audit": "ledger.audit.run:audit",
    # publishing
    "attest": "ledger.attestations.run:attest",
    "check_attestation": "ledger.attestations.run:check_attestation",
    "manifest": "ledger.supply.manifesting:manifest",
    "report": "ledger.page.run:write_page",
    # maintenance
    "gc": "ledger.brain.usecases:gc",
    "recover": "ledger.brain.usecases:recover",
}

__all__ = sorted(USE_CASES)


def __getattr__(name: str) -> Any:
    where = USE_CASES.get(name)
    if where is None:
        raise AttributeError(f"module 'ledger.api' has no attribute {name!r}")
    module, _, function = where.partition(":")
    return getattr(importlib.import_module(module), function)


def __dir__() -> list[str]:
    return __all__
