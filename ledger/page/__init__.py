"""The shareholder report page (issue 38): a static HTML view of a brain, its evidence and its audit.

It imports only :mod:`ledger.errors` and the standard library, so the collector above it
(the brain, the audit, the chain) decides what is drawn, and this package only how.
"""

from __future__ import annotations

from ledger.page.render import render_page

__all__ = ["render_page"]
