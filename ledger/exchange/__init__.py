"""How a brain meets the outside: runtimes' skill folders (layouts, import, export), git
remotes (push, pull, clone), and the chain (deploy, register, commit).  Services that take
a brain; the brain never imports them.
"""
