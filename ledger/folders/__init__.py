"""A runtime's skills folder: reached through descriptors and never through a link, read in its layout
(import adapters), and written once (export).  Services that take a brain; the brain never imports them.
"""
