"""Kept only as the import path that guards installed before issue 51 run (their pre-receive hook runs
``python3 -m ledger.exchange.guard``): a shared remote keeps taking pushes after an upgrade.  Nothing
else lives here; new hooks run :mod:`ledger.remotes.guard`.
"""
