"""A brain on a git remote: push, pull, clone, the fleet's sync, the receiving guard, and the join of two
lineages that diverged.
"""
