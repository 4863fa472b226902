"""The ``ledger`` command line: thin shells over the Python API, one module per command family.

Exit codes: 0 ok, 1 refused or failed (message on stderr, nothing changed),
2 usage.  Chain commands import web3 lazily, so local commands start fast.
"""

from ledger.cli import brain, chain, history, layouts, skills  # noqa: F401  (each registers its commands on main)
from ledger.cli._common import main

__all__ = ["main"]
