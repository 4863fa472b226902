"""The snapshot store: git objects and refs, packs, the fanned-out skills tree, bundle digests of
stored trees, inclusion proofs, the stat cache and diffs.  It reads and writes git; it
knows nothing of a brain's working tree or its writer.
"""
