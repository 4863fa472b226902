"""Snapshot signatures: EIP-712 typed data, the trust set, and this machine's signing keys
(docs/lineage.md §8).  Above the bundle; knows nothing of git.
"""
