"""The audit: a lineage verified from public material (a clone, and the chain), by the rules of
docs/lineage.md.  It reads the store and the chain; it never imports the writer or the brain,
so what audits a brain cannot share a bug with what wrote it.
"""
