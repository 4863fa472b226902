"""The write path: the one way a brain changes (objects, journal, working tree, branch), the
writer lock, the head snapshot in memory, versions and the sealer that signs each snapshot.
"""
