"""Skills from elsewhere: installed from a source (:mod:`ledger.sources`) once the scanner
(:mod:`ledger.scanner`) has read them, pinned, quarantined until approved, and revocable
(docs/supply-chain.md).  Services that take a brain, like :mod:`ledger.sync` and
:mod:`ledger.remotes`; the brain never imports them.
"""
