"""The protocol as pure code: bytes in, bytes out; no git, no RPC, no disk.

In the manner of python-tuf's ``api/``: every format docs/lineage.md defines, written and read
here and nowhere else, so an outsider (or the audit) can check every byte with this package and
the standard library.  The store persists what it writes, ``ledger.chain`` carries it to and from
a node, and neither knows its bytes.

- :mod:`~ledger.protocol.jcs`: the one RFC 8785 (JCS) writer;
- :mod:`~ledger.protocol.merkle`: the one RFC 6962-shaped Merkle core, parametrised by its hashes;
- :mod:`~ledger.protocol.bundlehash`: bundle hash v1 in memory (BLAKE3, kind/name leaves);
- :mod:`~ledger.protocol.tlog`: the epoch log's tree (SHA-256) and its 104-byte entries;
- :mod:`~ledger.protocol.refs`: every git ref name the ledger reads or writes;
- :mod:`~ledger.protocol.messages`: the snapshot commit message grammar.
"""
