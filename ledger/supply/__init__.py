"""Skills from elsewhere: install from other brains and public sources, pinned, scanned,
quarantined until approved, and revocable (docs/supply-chain.md).  Services that take a
brain, like :mod:`ledger.exchange`; the brain never imports them.
"""
