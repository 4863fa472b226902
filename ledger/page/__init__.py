"""The report pages: ``ledger report``'s static HTML view of a brain, its evidence and its audit (issue 38),
and the audit's ``--html`` page (:mod:`ledger.page.audit`), both drawn by one renderer.

The renderer imports only :mod:`ledger.errors` and the standard library, so the collector
(the brain, the audit, the chain) decides what is drawn, and the renderer only how (ADR 67).
"""

from __future__ import annotations

from ledger.page.render import render_page

__all__ = ["render_page"]
