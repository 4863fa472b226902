"""Skills published to hosts with their proof attached: the MCP Skills extension's entries and discovery sites.

A host that takes a skill from elsewhere gets files and, at best, unsigned digests. The brain already holds
the trust anchor they lack: every file is in a signed, possibly anchored, bundle root. This package turns the
brain's head into the spec's ``Skill`` entries (:mod:`~ledger.publish.entries`), each carrying that anchor under
``_meta`` (:mod:`~ledger.publish.anchor`, pure code, docs/lineage/anchor.md), and writes a static discovery site
(:mod:`~ledger.publish.site`). The MCP server (:mod:`ledger.agent.skills_ext`) and ``ledger export --discovery``
are thin shells over it.
"""
