"""The ``ledger`` command line: thin shells over the Python API, one module per command family.

Exit codes: 0 ok or nothing to do, 1 refused or failed (nothing changed), 2 usage,
3 recorded locally but the chain step failed.  Chain commands import web3 lazily.
"""

# each registers its commands on main
from ledger.cli import (  # noqa: F401
    attest,
    brain,
    chain,
    evalgate,
    evals,
    history,
    keys,
    layouts,
    manifests,
    outcomes,
    report,
    runtimes,
    sharing,
    skills,
    supply,
)
from ledger.cli.common import main
from ledger.cli.tree import build

build(main)  # the moved commands into their noun groups: the tree 'ledger --help' shows (ledger/cli/tree.py)

__all__ = ["main"]
