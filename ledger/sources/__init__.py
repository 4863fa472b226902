"""Where skills from elsewhere come from: another brain, a git repository, a discovery index, a
``skills-lock.json``, a plugin marketplace; each read into pinned candidates, and where a source may be.
"""
