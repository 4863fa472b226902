"""The bundle format and its hash: SKILL.md and its frontmatter, lint verdicts, names, and
bundle hash v1 (docs/bundle-hash.md).  The bottom layer: it imports nothing of the ledger
but :mod:`ledger.errors`.
"""
